"""The recommendation of a campaign, recommended.yml: the candidates it stacks (candidates, gains), how a measured
stack is judged (measure, judge), the greedy search after a stack that was not better (greedy), the variants it hands
to the next campaign (variants), and the proposal that puts them together (proposal.recommend)."""

# How recommended.yml's status opens: the judgement of the stack (judge, greedy) and the proposal set it.
STATUS_PROPOSED = "proposed, not yet measured as a stack"
STATUS_STACKED = "measured as a stack"
STATUS_SINGLE = "measured: a single optimization, nothing to stack"
STATUS_NONE = "nothing to recommend: no optimization improved; keep the baseline"
