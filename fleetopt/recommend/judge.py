"""The judgement of a measured stack: the proposal's stack (or single candidate) measured again in a launch of its
own, or, in a campaign that ran no matrix, the earlier recommendation it verifies. Each returns what it decides for
the proposal: its status, outcome, measurement, and the stack and changes recommended."""
from fleetopt.analysis.launches import launch_details
from fleetopt.analysis.summary import BASELINE
from fleetopt.recommend import STATUS_STACKED
from fleetopt.recommend.candidates import changes_against
from fleetopt.recommend.greedy import next_greedy_step
from fleetopt.recommend.measure import measure_stack
from fleetopt.recommend.variants import union


def judge_single(summary, found, metric, candidate):
    """A single candidate measured again in a launch of its own: a gain that did not choose it (the winner's
    curse); anything but improved keeps the baseline."""
    measured = measure_stack(summary, found, metric, None)
    if measured["verdict"] == "improved":
        return {"measured": measured, "status": STATUS_STACKED, "outcome": "stack"}
    return {"measured": measured, "outcome": "inconclusive",
            "status": ("inconclusive: %s improved alone, but measured again in a launch of its own it was %s against "
                       "%s (%s); the two measurements disagree, keep the baseline until another one settles it" % (
                           candidate["id"], measured["verdict"].replace("_", " "), measured["against"],
                           measured["reason"])),
            "stack": [], "ids": [], "changes": union([])}


def judge_stack(summary, stacks, found, metric, stack, left_out):
    """The stack of two or more candidates, measured: recommended when improved against its baseline and against
    the best single candidate; else the best single candidate (or, with three or more, what the greedy search
    keeps), and the others are left out (appended to `left_out`)."""
    best = stack[0]
    measured = measure_stack(summary, found, metric, best)
    versus = measured["vs_best_single"] or {}
    if measured["verdict"] == "improved" and versus.get("verdict") == "improved":
        return {"measured": measured, "status": STATUS_STACKED, "outcome": "stack"}
    if measured["verdict"] == "inconclusive":
        decision = {"outcome": "inconclusive",
                    "status": ("inconclusive: the stack's gain over %s was not shown (%s); recommending the best single "
                               "candidate %s, measured alone" % (measured["against"], measured["reason"], best["id"]))}
    else:
        why = ("against %s alone it was %s (%s)" % (best["id"], versus.get("verdict"), versus.get("reason"))
               if measured["verdict"] == "improved" else
               "against %s it %s (%s)" % (measured["against"],
                                          "crashed" if measured["verdict"] == "crashed" else "was " + measured["verdict"],
                                          measured["reason"]))
        decision = {"outcome": "best_single",
                    "status": ("measured: the stack was not better than the best single candidate %s: %s; recommending "
                               "%s, measured alone" % (best["id"], why, best["id"]))}
    decision["measured"] = measured
    if len(stack) > 2:
        kept = next_greedy_step(summary, stacks, stack, metric, decision, left_out)
    else:
        kept = [best]
        for other in stack[1:]:
            left_out.append({"id": other["id"], "title": other["title"], "why": "stack_not_better",
                             "hosts": other["hosts"],
                             "reason": "improved alone, but the measured stack of %s was not better than %s "
                                       "alone" % (", ".join(c["id"] for c in stack), best["id"])})
    decision.update(stack=kept, ids=[c["id"] for c in kept], changes=union(kept))
    return decision


def verify_stack(summary, stacks, merged, metric):
    """A campaign with no single optimization verifies an earlier recommendation's stack, measured beside its own
    baseline: improved confirms it; anything else keeps the baseline."""
    measured = measure_stack(summary, stacks, metric, None, matrix_ran=False)
    decision = {"measured": measured, "verifies": (stacks[0].get("stacked") or {}).get("verifies")}
    if measured["verdict"] == "improved":
        host = measured["hosts"][0]
        base_launch = launch_details(merged.get((host, BASELINE)) or {})
        own = launch_details(merged.get((host, stacks[0]["variant"])) or {})
        decision.update(status=STATUS_STACKED, outcome="stack", ids=measured["composes"],
                        changes={"flags": changes_against(base_launch.get("flags"), own.get("flags")),
                                 "env": changes_against(base_launch.get("env"), own.get("env"))})
    elif measured["verdict"] == "inconclusive":
        decision.update(outcome="inconclusive",
                        status=("inconclusive: the stack's gain over %s was not shown (%s); nothing is confirmed, keep "
                                "the baseline until a measurement shows it" % (measured["against"], measured["reason"])))
    else:
        decision.update(outcome="baseline",
                        status="not confirmed: the stack was %s against %s (%s); keep the baseline" % (
                            measured["verdict"].replace("_", " "), measured["against"], measured["reason"]))
    return decision


def unmeasured_notes(stacks, found, search, proposed):
    """A note for each stack measured or planned that is neither this proposal's nor a step of its greedy search."""
    searched = {tuple(step["composes"]) for step in (search or {}).get("steps", [])}
    notes = []
    for other in stacks:
        composes = tuple((other.get("stacked") or {}).get("composes") or [])
        if other not in found and composes not in searched:
            notes.append("a stack of %s was %s on %s, but this proposal is %s: measure it (-e recommend=true)" % (
                ", ".join(composes or ["unknown candidates"]),
                "measured" if other["verdict"] != "skipped" else "planned and not measured", other["host"],
                ", ".join(proposed) or "the baseline"))
    return notes
