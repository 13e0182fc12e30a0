"""The greedy search after a measured stack that was not better than its best single candidate: one more candidate
at a time on top of what the search kept, each step a stacked variant measured in a stage of its own."""
from fleetopt.analysis.capacity_verdict import METRIC as CAPACITY
from fleetopt.recommend import STATUS_STACKED
from fleetopt.recommend.candidates import FAILED, STACK_VARIANT
from fleetopt.recommend.measure import measure_stack, stack_verdict, versus, versus_capacity
from fleetopt.recommend.variants import stage_variant, union


def greedy_search(summary, stacks, stack, metric):
    """The greedy search after a stack that was not better than its best single candidate: starting from that
    candidate, add the others one at a time in order of measured effect; a step (the kept ones plus the next
    candidate, a stacked variant of its own) is kept when it improves significantly over the kept configuration,
    level by level on the same host. Returns the steps measured, the kept candidates, the cells of the kept
    stack (None while it is the single candidate), and the next step to measure (None when the search is done)."""
    by_composes = {}
    for v in stacks:
        if v["verdict"] != "skipped":
            by_composes.setdefault(tuple((v.get("stacked") or {}).get("composes") or []), []).append(v)
    kept, current, kept_found, steps = [stack[0]], stack[0]["id"], None, []
    for number, candidate in enumerate(stack[1:], start=2):
        composes = [c["id"] for c in kept] + [candidate["id"]]
        found = by_composes.get(tuple(composes))
        if not found:
            return {"kind": "greedy", "steps": steps, "kept_candidates": kept, "kept_found": kept_found,
                    "kept": [c["id"] for c in kept], "next": composes, "next_step": number,
                    "next_id": "%s_%d" % (STACK_VARIANT, number)}
        against = [versus_capacity(summary, v["host"], v["variant"], current) if metric == CAPACITY else
                   versus(summary, v["host"], v["variant"], current, metric) for v in found if v["verdict"] not in FAILED]
        verdict = stack_verdict(against) if against else "crashed"
        reason = "; ".join("%s on %s: %s" % (a["verdict"], a["host"], a["reason"]) for a in against) or "; ".join(
            "%s on %s: %s" % (v["verdict"], v["host"], v.get("verdict_reason") or v.get("reason") or "") for v in found)
        steps.append({"composes": composes, "candidate": candidate["id"], "variant": found[0]["variant"],
                      "against": current, "compared": against[0]["compared"] if against else None,
                      "verdict": verdict, "reason": reason, "kept": verdict == "improved"})
        if verdict == "improved":
            kept, current, kept_found = kept + [candidate], found[0]["variant"], found
    return {"kind": "greedy", "steps": steps, "kept_candidates": kept, "kept_found": kept_found,
            "kept": [c["id"] for c in kept], "next": None, "next_step": None, "next_id": None}


def next_greedy_step(summary, stacks, stack, metric, decision, left_out):
    """The candidates the search keeps after the full stack (decision["measured"]) was not better than its best single
    candidate. Sets decision's search, status, outcome and stacked variant (the next step to measure, or none once
    the search is done; a kept stack measured improved is what is recommended), and leaves out every candidate the
    search did not keep."""
    best = stack[0]
    search = greedy_search(summary, stacks, stack, metric)
    search["full_stack"] = decision["measured"]
    kept = search.pop("kept_candidates")
    tried = {step["candidate"]: step for step in search["steps"]}
    if search["next"]:
        decision["outcome"] = "searching"
        decision["status"] += "; searching greedily, next step: %s (-e recommend=true measures it)" % (
            " + ".join(search["next"]))
        by_id = {c["id"]: c for c in stack}
        decision["stacked_variant"] = stage_variant(search["next"], union([by_id[i] for i in search["next"]]),
                                                    "Greedy step: %s" % " + ".join(search["next"]),
                                                    {"proposed_by": summary.get("campaign"), "search": "greedy",
                                                     "step": search["next_step"]}, search["next_id"])
    else:
        decision["stacked_variant"] = None
        if len(kept) > 1 and search["kept_found"]:
            chosen = measure_stack(summary, search["kept_found"], metric, None)
            if chosen["verdict"] == "improved":
                decision.update(measured=chosen, outcome="stack",
                                status="%s, found greedily: the full stack was not better than %s alone; the search "
                                       "kept %s" % (STATUS_STACKED, best["id"], " + ".join(c["id"] for c in kept)))
            else:
                kept = [best]
        if decision["outcome"] != "stack":
            decision["status"] += "; the greedy search kept nothing more"
    for other in stack[1:]:
        if other in kept:
            continue
        step = tried.get(other["id"])
        if step:
            left_out.append({"id": other["id"], "title": other["title"], "why": "stack_not_better",
                             "hosts": other["hosts"],
                             "reason": "improved alone, but the greedy step %s was %s against %s "
                                       "(%s)" % (" + ".join(step["composes"]), step["verdict"],
                                                 " + ".join(step["composes"][:-1]), step["reason"])})
        else:
            left_out.append({"id": other["id"], "title": other["title"], "why": "not_yet_searched",
                             "hosts": other["hosts"],
                             "reason": "improved alone; the greedy search has not tried it on top of "
                                       "%s yet" % " + ".join(c["id"] for c in kept)})
    decision["search"] = search
    return kept
