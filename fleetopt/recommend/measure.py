"""What a stack's cells measured: against the baseline of its own stage and against the configuration it is to
improve on (the best single candidate, or the greedy search's kept stack), level by level on the same host, or
through their effects when the two were measured in different stages."""
from fleetopt.analysis import stats
from fleetopt.analysis.capacity_verdict import METRIC as CAPACITY, compare_capacity
from fleetopt.analysis.summary import BASELINE, COMPARED_METRICS, launch_sides, pooled_launch_variances
from fleetopt.analysis.verdicts import apply_aa_gate, overall_verdict
from fleetopt.recommend.candidates import FAILED
from fleetopt.recommend.gains import capacity_brief, capacity_gain, effect, gain_of, headline, level_gains, rounded


def stack_verdict(found):
    """One verdict of a stack measured on one or more hosts: improved only when improved on every one."""
    seen = [v["verdict"] for v in found]
    if all(v == "improved" for v in seen):
        return "improved"
    if any(v in FAILED for v in seen):
        return "crashed"
    if any(v == "skipped" for v in seen):
        return "not_measured"
    if any(v in ("regressed", "mixed") for v in seen):
        return "regressed"
    if all(v == "neutral" for v in seen):
        return "neutral"
    return "inconclusive"


def reference_baseline(summary, host, variant):
    """The baseline `variant` was compared with on `host`: its stage's own (a stack measured after the matrix), or
    the campaign's."""
    return next((v.get("baseline_variant") or BASELINE for v in summary["variants"]
                 if v["host"] == host and v["variant"] == variant), BASELINE)


def _baseline_text(name, matrix_ran):
    """Which baseline a measured stack was compared with, in words for recommended.yml and the report."""
    if name != BASELINE:
        return "the baseline measured again beside it in the stack stage (%s)" % name
    if not matrix_ran:
        return "the baseline measured beside it in this campaign, which ran no matrix (%s)" % name
    return ("the matrix's baseline (%s), measured in another stage: a drift of the host since then is not told apart "
            "from its effect" % name)


def _comparison_text(variant, mine, other, theirs):
    if mine == theirs:
        return "directly, level by level on the same host (both were compared with %s)" % mine
    return ("as effects, each against the baseline of its own stage: %s against %s, %s against %s (the ratio of the "
            "two gains, its interval from all four measurements, so a drift of the host between the stages cancels "
            "as far as it scales a configuration and the baseline beside it alike)" % (variant, mine, other, theirs))


def versus(summary, host, variant, other, metric):
    """`variant` against `other` on `host`, level by level (simultaneous over the levels), and its verdict: directly
    when both were compared with the same baseline, else through their effects, each against the baseline of its
    own stage (stats.compare_effects), never one stage's measurement against another's. The launch is the unit
    where the summary's was (some configuration of the host launched twice at the level), else the trial."""
    settings = summary.get("settings") or {}
    mine, theirs = reference_baseline(summary, host, variant), reference_baseline(summary, host, other)
    needed = [variant, other] if mine == theirs else [variant, mine, other, theirs]
    rows = {(r["variant"], r["concurrency"]): r for r in summary["cells"]
            if r["host"] == host and r["status"] == "ok" and r["variant"] in needed}
    shared = sorted(set.intersection(*({c for v, c in rows if v == name} for name in needed)))
    rule = {"higher_is_better": stats.HIGHER_IS_BETTER.get(metric, True),
            "confidence": settings.get("confidence", stats.DEFAULT_CONFIDENCE),
            "min_effect_pct": settings.get("min_effect_pct", stats.DEFAULT_MIN_EFFECT_PCT), "family_size": len(shared)}
    compare = stats.compare if mine == theirs else stats.compare_effects
    by_launch = stats.compare_launches if mine == theirs else stats.compare_effects_launches
    pooled = pooled_launch_variances([r for r in summary["cells"] if r["host"] == host], by_round=True)
    levels = []
    for concurrency in shared:
        samples = [(rows[(name, concurrency)].get("samples") or {}).get(metric) for name in needed]
        sides = launch_sides(pooled, [rows[(name, concurrency)] for name in needed], metric)
        if sides is not None and all(samples):
            found = by_launch(*sides["means"], sides["spread"], floors=sides["floors"], rounds=sides["rounds"], **rule)
        else:
            found = compare(*samples, **rule) if all(samples) else None
        if found is None:
            levels.append({"concurrency": concurrency, "verdict": None, "change_pct": 0.0, "ci_low_pct": None,
                           "ci_high_pct": None, "confidence": None,
                           "reason": "no %s samples to compare (the summary keeps samples of %s)" % (
                               metric, ", ".join(COMPARED_METRICS))})
            continue
        levels.append({"concurrency": concurrency, "verdict": found["verdict"], "reason": found["reason"],
                       "change_pct": rounded(found["change_pct"]), "ci_low_pct": rounded(found["ci_low_pct"]),
                       "ci_high_pct": rounded(found["ci_high_pct"]), "confidence": rounded(found["confidence"], 4)})
    verdict, reason = overall_verdict(levels)
    result = {"host": host, "verdict": verdict, "reason": reason, "levels": levels, "gain": headline(levels, metric),
              "compared": _comparison_text(variant, mine, other, theirs)}
    gate = next((h.get("gate") for h in summary.get("aa") or [] if h.get("host") == host), None)
    return apply_aa_gate(result, gate, reason_key="reason")


def versus_capacity(summary, host, variant, other):
    """`variant`'s capacity against `other`'s on `host`: directly when both were compared with the same baseline, or
    when each stage's own baseline had the matrix's baseline's capacity (neutral on capacity); else inconclusive."""
    entries = {v["variant"]: v for v in summary["variants"] if v["host"] == host}
    mine, theirs = reference_baseline(summary, host, variant), reference_baseline(summary, host, other)
    drifted = [(name, entries.get(name)) for name in sorted({mine, theirs} - {BASELINE})
               if (entries.get(name) or {}).get("verdict") != "neutral"]
    compared = None
    if mine == theirs:
        how = "directly, on capacity (both were compared with %s)" % mine
    else:
        how = ("on capacity, directly: the baseline of each stage (%s) had the same capacity as the matrix's"
               % ", ".join(sorted({mine, theirs})))
    if mine != theirs and drifted:
        verdict = "inconclusive"
        reason = ("%s and %s were measured in different stages, and capacities (levels, with no ratio of gains to cancel "
                  "a drift through) are compared directly only where each stage's baseline had the matrix's baseline's "
                  "capacity: %s" % (variant, other, "; ".join(
                      "%s was %s against %s on capacity (%s)" % (name, (e or {}).get("verdict") or "not measured", BASELINE,
                                                                 (e or {}).get("verdict_reason") or "no reason recorded")
                      for name, e in drifted)))
        how = "not compared: the stages' baselines differ in capacity"
    elif variant not in entries or other not in entries:
        verdict, reason = "inconclusive", "%s and %s were not both measured on %s" % (variant, other, host)
    else:
        settings = summary.get("settings") or {}
        compared = compare_capacity(entries[variant]["capacity"], entries[other]["capacity"],
                                    settings.get("confidence", stats.DEFAULT_CONFIDENCE), baseline_variant=other,
                                    names=(variant, other))
        verdict, reason = compared["verdict"], compared["reason"]
    result = {"host": host, "verdict": verdict, "reason": reason, "levels": [], "gain": capacity_gain(compared),
              "compared": how}
    gate = next((h.get("gate") for h in summary.get("aa") or [] if h.get("host") == host), None)
    return apply_aa_gate(result, gate, reason_key="reason")


def _drift(summary, host, reference, metric):
    """The stage's baseline against the matrix's on `host` (the level of largest change), or None."""
    if reference == BASELINE:
        return None
    if metric == CAPACITY:
        entry = next((v for v in summary["variants"] if v["host"] == host and v["variant"] == reference), None)
        if not entry or not entry.get("capacity_comparison"):
            return None
        return dict(capacity_gain(entry["capacity_comparison"]), baseline=reference, against=BASELINE,
                    verdict=entry["verdict"])
    levels = level_gains(summary, host, reference, metric)
    if not levels:
        return None
    largest = max(levels, key=lambda lv: abs(lv["change_pct"] or 0.0))
    return dict({"metric": metric, "baseline": reference, "against": BASELINE}, **largest)


def measure_stack(summary, found, metric, best, matrix_ran=True):
    """What the stack's cells measured: against the baseline of its own stage and, where it was measured, against the
    best single candidate (through their effects when the two were measured in different stages)."""
    per_host = []
    for v in found:
        levels, gain = gain_of(summary, v, metric)
        reference = reference_baseline(summary, v["host"], v["variant"])
        per_host.append({"host": v["host"], "verdict": v["verdict"],
                         "reason": v.get("verdict_reason") or v.get("root_cause") or v.get("reason"),
                         "levels": levels, "gain": gain,
                         "capacity": capacity_brief(v.get("capacity")), "baseline": reference,
                         "baseline_drift": _drift(summary, v["host"], reference, metric)})
    weakest = min(per_host, key=lambda h: effect(h["gain"]))
    measured = {"variant": found[0]["variant"], "composes": list((found[0].get("stacked") or {}).get("composes") or []),
                "hosts": [h["host"] for h in per_host], "verdict": stack_verdict(found),
                "reason": "; ".join("%s on %s: %s" % (h["verdict"], h["host"], h["reason"] or "") for h in per_host),
                "baseline": weakest["baseline"], "against": _baseline_text(weakest["baseline"], matrix_ran),
                "baseline_drift": weakest["baseline_drift"],
                "gain": weakest["gain"], "levels": weakest["levels"], "capacity": weakest["capacity"],
                "per_host": per_host, "vs_best_single": None}
    if best is not None:
        against = [versus_capacity(summary, h["host"], measured["variant"], best["id"]) if metric == CAPACITY else
                   versus(summary, h["host"], measured["variant"], best["id"], metric)
                   for h in per_host if h["host"] in best["hosts"] and (h["levels"] or metric == CAPACITY)]
        if against:
            worst = min(against, key=lambda a: effect(a["gain"]))
            measured["vs_best_single"] = {"id": best["id"], "verdict": stack_verdict(against),
                                          "reason": "; ".join("%s on %s: %s" % (a["verdict"], a["host"], a["reason"])
                                                              for a in against),
                                          "compared": worst["compared"], "gain": worst["gain"], "levels": worst["levels"]}
        else:
            measured["vs_best_single"] = {"id": best["id"], "verdict": "not_compared", "gain": None, "levels": [],
                                          "compared": None,
                                          "reason": "the stack and %s were not both measured on one host" % best["id"]}
    return measured
