"""How a candidate's or a stack's gain reads: its per-level comparisons, its measured effect (the level of largest
improvement, or the change of capacity), and the order of measured effect the stack is built in."""
from fleetopt.analysis.capacity_verdict import METRIC as CAPACITY


def rounded(value, digits=2):
    return None if value is None else round(float(value), digits)


def level_gains(summary, host, variant, metric):
    levels = []
    for row in summary["cells"]:
        if row["host"] == host and row["variant"] == variant and row["status"] == "ok":
            comparison = (row.get("vs_baseline") or {}).get(metric)
            if comparison:
                levels.append({"concurrency": row["concurrency"], "verdict": row.get("verdict"),
                               "change_pct": rounded(comparison["change_pct"]),
                               "ci_low_pct": rounded(comparison["ci_low_pct"]),
                               "ci_high_pct": rounded(comparison["ci_high_pct"]),
                               "confidence": rounded(comparison["confidence"], 4)})
    return sorted(levels, key=lambda lv: lv["concurrency"])


def headline(levels, metric):
    """The level with the largest improvement: the candidate's measured effect."""
    if not levels:
        return {"metric": metric, "concurrency": None, "change_pct": 0.0, "ci_low_pct": None, "ci_high_pct": None,
                "confidence": None}
    improved = [lv for lv in levels if lv["verdict"] == "improved"] or levels
    best = max(improved, key=lambda lv: lv["change_pct"])
    return dict({"metric": metric}, **{k: best[k] for k in ("concurrency", "change_pct", "ci_low_pct",
                                                            "ci_high_pct", "confidence")})


def capacity_gain(compared):
    """A gain on capacity, from a capacity comparison (fleetopt.analysis.capacity_verdict): the change of capacity, shown at
    the variant's capacity (the levels that decided the verdict are in its reason)."""
    compared = compared or {}
    return {"metric": CAPACITY, "concurrency": (compared.get("variant") or {}).get("capacity"),
            "change_pct": rounded(compared.get("change_pct")), "ci_low_pct": None, "ci_high_pct": None,
            "confidence": compared.get("confidence"), "verdict": compared.get("verdict"),
            "capacity": (compared.get("variant") or {}).get("capacity"),
            "baseline_capacity": (compared.get("baseline") or {}).get("capacity")}


def gain_of(summary, entry, metric):
    """(levels, gain) of a variant summary entry: its per-level comparisons and its measured effect."""
    if metric == CAPACITY:
        return [], capacity_gain(entry.get("capacity_comparison"))
    levels = level_gains(summary, entry["host"], entry["variant"], metric)
    return levels, headline(levels, metric)


def effect(gain):
    """A gain's change as a number to order by: a capacity gain over a baseline without a capacity (it broke the SLOs
    at its lowest level) has no percentage and comes first; one without a capacity of its own comes last."""
    if gain.get("change_pct") is not None:
        return gain["change_pct"]
    if gain.get("metric") == CAPACITY and gain.get("capacity") != gain.get("baseline_capacity"):
        return float("inf") if gain.get("capacity") is not None else float("-inf")
    return 0.0


def effect_text(gain):
    if gain.get("change_pct") is not None:
        return "%+.1f %%" % gain["change_pct"]
    if gain.get("metric") == CAPACITY:
        return "capacity %s against %s" % tuple("none" if c is None else "c=%s" % c
                                                for c in (gain.get("capacity"), gain.get("baseline_capacity")))
    return "n/a"


def capacity_brief(found):
    if not found:
        return None
    return {k: found.get(k) for k in ("capacity", "at_least", "low", "high", "high_at_least", "reason")}


def shown_pct(value):
    return "n/a" if value is None else "%+.1f" % value
