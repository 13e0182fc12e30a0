"""The recommendation of a campaign: recommended.yml (proposal.recommend), the candidates it stacks, how a measured
stack is judged, and the greedy search."""
