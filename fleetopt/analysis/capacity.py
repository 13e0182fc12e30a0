"""Capacity under the SLOs: the highest measured concurrency at which every SLO holds.

The SLOs (campaign_slo) are p99 limits in milliseconds on fleetopt's metrics (SLO_KEYS of the
engine adapters' module_utils). A level holds when every one of its runs succeeded and the mean
over its runs of each p99 figure is within its limit. Capacity is the last level before the
first one that does not hold, so a level that holds again above a broken one is noted but never
counted (a pass above a failure is noise or a measurement that did not load the server).

Per trial: the runs of one (launch, trial) pair across the levels form one ladder, and its
capacity is read the same way from that trial's own p99 figures; the capacities of the trials
give the interval [low, high]. When every level holds, capacity is "at least" the top level
(`at_least`); when none holds, there is none, and the reason names what broke at the lowest
level. Per level, the share of runs that met every SLO comes with its exact (Clopper-Pearson)
interval.
"""
import math

from scipy import stats

from fleetopt.analysis.stats import DEFAULT_CONFIDENCE

# The collection's module_utils are importable once fleetopt.paths ran.
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_slo import SLO_LABELS, level_judgement, slo_violations

LABELS = dict(SLO_LABELS)
# The rule the benchmark's capacity search judged the levels by (level_judgement), so the report reads
# capacity the same way; level_violations judges one run's figures.
level_violations = slo_violations


def _run_holds(run, slo):
    return run.get("status") == "ok" and bool(run.get("metrics")) and not level_violations(run["metrics"], slo)


def _figure(value):
    """A run's figure as a float; None where it recorded none, or none that is finite."""
    return float(value) if value is not None and math.isfinite(float(value)) else None


def _ladder(holds_by_level):
    """(capacity, at_least, first broken level or None) from [(concurrency, holds)] in ascending order."""
    last = None
    for concurrency, holds in holds_by_level:
        if not holds:
            return last, False, concurrency
        last = concurrency
    return last, True, None


def _describe_level(concurrency, runs, slo, confidence):
    means, broken = level_judgement(runs, slo)
    holds_in = sum(1 for r in runs if _run_holds(r, slo))
    share_ci = stats.binomtest(holds_in, len(runs)).proportion_ci(confidence_level=confidence)
    judged = [key for key in LABELS if (slo or {}).get(key) is not None]
    ok = [r["metrics"] for r in runs if r.get("status") == "ok" and r.get("metrics")]
    return {"concurrency": concurrency, "trials": len(runs), "holds_in": holds_in,
            "share_ci": [float(share_ci.low), float(share_ci.high)],
            "means": {key: means[key] for key in judged},
            # Each successful run's p99 figure per SLO (None where it recorded none), and the runs that failed:
            # what fleetopt.analysis.capacity_verdict reads a level's judgement's support from.
            "samples": {key: [_figure(m.get(key)) for m in ok] for key in judged},
            "failed": len(runs) - len(ok),
            "holds": not broken, "violations": broken}


def _per_trial(by_level, slo):
    keys = sorted({(r.get("launch", 1), r.get("trial", 1)) for runs in by_level.values() for r in runs})
    ladders, excluded = [], 0
    for key in keys:
        found = {c: [r for r in runs if (r.get("launch", 1), r.get("trial", 1)) == key] for c, runs in by_level.items()}
        if any(not runs for runs in found.values()):
            excluded += 1  # not run at every level (sequential trials): its ladder is incomplete
            continue
        value, at_least, _reason = _ladder([(c, all(_run_holds(r, slo) for r in found[c])) for c in sorted(found)])
        ladders.append({"launch": key[0], "trial": key[1], "capacity": value, "at_least": at_least})
    return ladders, excluded


def capacity(levels, slo, confidence=DEFAULT_CONFIDENCE):
    """Capacity of one variant on one host from its runs ([{concurrency, trial, launch, status, metrics}])."""
    result = {"slo": dict(slo or {}), "capacity": None, "at_least": False, "low": None, "high": None,
              "high_at_least": False, "per_trial": [], "trials_excluded": 0, "levels": [], "reason": None,
              "searched": sorted({r["concurrency"] for r in levels or [] if r.get("searched")})}
    if not slo:
        result["reason"] = "no SLO was set (campaign_slo)"
        return result
    by_level = {}
    for run in levels or []:
        if run.get("concurrency") is not None and run.get("status") != "skipped":
            by_level.setdefault(run["concurrency"], []).append(run)
    if not any(r.get("status") == "ok" and r.get("metrics") for runs in by_level.values() for r in runs):
        result["reason"] = "no level was measured"
        return result
    described = [_describe_level(c, by_level[c], slo, confidence) for c in sorted(by_level)]
    value, at_least, broken_at = _ladder([(lv["concurrency"], lv["holds"]) for lv in described])
    per_trial, excluded = _per_trial(by_level, slo)
    result.update(capacity=value, at_least=at_least, levels=described, per_trial=per_trial, trials_excluded=excluded)
    if per_trial:
        values = [t["capacity"] for t in per_trial]
        result["low"] = None if None in values else min(values)
        reached = [t for t in per_trial if t["capacity"] is not None]
        if reached:
            top = max(reached, key=lambda t: t["capacity"])
            result["high"], result["high_at_least"] = top["capacity"], top["at_least"]
    by_c = {lv["concurrency"]: lv for lv in described}
    if at_least:
        result["reason"] = ("every SLO holds at every level measured; capacity is at least c=%s, the top level (%s)"
                            % (value, "the capacity search stopped there: more campaign_capacity_search_levels look higher"
                               if result["searched"] else "measure higher levels to find it"))
    elif value is None:
        result["reason"] = "the SLOs fail already at the lowest level measured, c=%s (%s)" % (
            broken_at, "; ".join(by_c[broken_at]["violations"]))
    else:
        result["reason"] = "the SLOs hold up to c=%s and fail at c=%s (%s)" % (
            value, broken_at, "; ".join(by_c[broken_at]["violations"]))
    again = [lv["concurrency"] for lv in described if lv["holds"] and broken_at is not None and lv["concurrency"] > broken_at]
    if again:
        result["reason"] += "; every SLO holds again at %s, above a level that broke them: not counted" % ", ".join(
            "c=%s" % c for c in again)
    if result["searched"]:
        result["reason"] += "; measured by the capacity search: %s" % ", ".join("c=%s" % c for c in result["searched"])
    return result
