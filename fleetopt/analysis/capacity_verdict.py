"""The verdict taken on capacity (campaign_verdict_metric: capacity): a variant's capacity against its baseline's.

Capacity (fleetopt.analysis.capacity) is a level, not a sample: the highest measured concurrency up to which every SLO
holds on the mean of the runs' p99 figures. There is no interval of a change to read a verdict from, so the
comparison is one of level judgements, the ones that decide it:

- improved: the variant holds every SLO at a level where the baseline broke one (or, not measured there, at a
  level above it within its own capacity), the two sides judged firmly. Each level the baseline broke gives such a
  pair of judgements, the lowest first; the first pair judged firmly decides, every judgement at the confidence
  adjusted for the number of pairs (Bonferroni), since taking the first firm one of several is a union of tests;
- regressed: the same with the two sides exchanged;
- neutral: both hold every SLO at the same level and both break one at the next level up, its neighbour (c+1),
  the four judgements firm: the same capacity to the unit;
- inconclusive otherwise, with the reason: a deciding judgement that is not firm (runs that failed, one run,
  trials on both sides of a limit, an interval of the mean that reaches over it), no SLO, no capacity on either
  side, a side that held every level it measured (its search stopped at its budget or ceiling before a failing
  level) where that leaves the comparison open, the same capacity with levels between it and the broken one
  never measured, or levels measured apart.

A level's judgement is firm (level_support) when at least two runs succeeded there and none failed, every run is
on the judged side of the limit (for a level that holds: every SLO; for one that breaks: the same SLO in every
run), and the t interval of the mean of that p99 figure at the campaign's confidence lies on that side too. A
level that breaks can break any of the k SLOs, so those intervals are at 1 - (1 - confidence) / k (Bonferroni);
a level that holds must hold all of them, and a verdict must have all of its judgements firm (intersection-union
tests), so those need no adjustment.
"""
from fleetopt.analysis import stats
from fleetopt.analysis.capacity import LABELS
from fleetopt.formatting import fmt_capacity_with_trials, fmt_confidence
from fleetopt.analysis.verdict_metrics import CAPACITY

METRIC = CAPACITY
NAMES = ("the variant", "the baseline")

RULES = (
    "On capacity under the SLOs (campaign_verdict_metric: capacity): each variant's capacity against its own "
    "baseline's on the same host (a stack measured after the matrix against the baseline measured again beside it in "
    "its stage). A capacity is a level, not a sample, so the verdict rests on the level judgements that decide it. "
    "improved / regressed: the variant holds every SLO at a level where the baseline broke one (or at a level above it "
    "within its capacity), or the reverse; where the baseline broke several levels, the first such pair of judgements "
    "that is firm decides, each judgement at the confidence adjusted for the pairs (Bonferroni); neutral: both hold "
    "every SLO at the same level and both break one at the next level up, its neighbour (the same capacity to the "
    "unit). Each of those judgements must be firm: two "
    "or more runs there, none failed, every run on the judged side of the limit, and the t interval of the mean of "
    "that p99 figure at %d %% confidence on that side too (for a level that breaks an SLO, simultaneous over the SLOs: "
    "Bonferroni). Otherwise inconclusive, with the reason: a judgement on the mean only (trials on both sides of a "
    "limit, too few runs, an interval reaching over it), failed runs, no SLO, no capacity on either side, a side that "
    "held every level it measured (its search stopped at its budget or ceiling), the same capacity with the levels "
    "between it and the one broken never measured, or levels measured apart.")


def capacity_rules(confidence=stats.DEFAULT_CONFIDENCE):
    """The rule of the verdicts on capacity, in words, for the reports."""
    return RULES % round(confidence * 100)


def _limit_text(key, slo, sign):
    return "%s %s %g ms" % (LABELS[key], sign, float(slo[key]))


def _figure(key, values, described, slo, sign, confidence):
    return "%s %.1f ms, %s %% interval [%.1f, %.1f], all %d runs %s %g ms" % (
        LABELS[key], described["mean"], fmt_confidence(confidence), described["ci_low"], described["ci_high"],
        len(values), sign, float(slo[key]))


def _key_support(key, values, slo, confidence, holds):
    """(firm, text) of one SLO's judgement at one level: held (<= the limit) or broken (> the limit)."""
    limit = float(slo[key])
    if not values or None in values:
        return False, "%s was not recorded in every run" % LABELS[key]
    if len(values) < 2:
        return False, "one run (%s %.1f ms): no interval of the mean" % (LABELS[key], values[0])
    met = sum(1 for v in values if v <= limit)
    if met not in (0, len(values)):
        return False, "the trials straddle the limit: %d of %d runs met %s" % (
            met, len(values), _limit_text(key, slo, "<="))
    described = stats.describe(values, confidence)
    if holds and described["ci_high"] > limit:
        return False, "the interval of the mean of %s, [%.1f, %.1f] ms at %s %% confidence, reaches above the limit " \
            "%g ms" % (LABELS[key], described["ci_low"], described["ci_high"], fmt_confidence(confidence), limit)
    if not holds and described["ci_low"] <= limit:
        return False, "the interval of the mean of %s, [%.1f, %.1f] ms at %s %% confidence, reaches below the limit " \
            "%g ms" % (LABELS[key], described["ci_low"], described["ci_high"], fmt_confidence(confidence), limit)
    return True, _figure(key, values, described, slo, "<=" if holds else ">", confidence)


def level_support(level, slo, confidence=stats.DEFAULT_CONFIDENCE):
    """Whether a level's judgement (fleetopt.analysis.capacity's `holds`, on the means) is firm, and why.

    Returns {"concurrency", "judged" ("holds" or "breaks"), "firm", "why", "confidence"}."""
    holds = bool(level["holds"])
    keys = [key for key in LABELS if (slo or {}).get(key) is not None]
    result = {"concurrency": level["concurrency"], "judged": "holds" if holds else "breaks", "firm": False,
              "why": None, "confidence": confidence}
    if level.get("failed"):
        result["why"] = "%d of %d runs failed at c=%s: a failed run is not a measurement against the SLOs" % (
            level["failed"], level["trials"], level["concurrency"])
        return result
    samples = level.get("samples") or {}
    if holds:
        judged = [_key_support(key, samples.get(key) or [], slo, confidence, True) for key in keys]
        result["firm"] = all(firm for firm, _text in judged)
        result["why"] = "; ".join(text for firm, text in judged if firm == result["firm"])
        return result
    level_confidence = stats.bonferroni(confidence, len(keys))
    means = level.get("means") or {}
    broken = [key for key in keys if means.get(key) is None or means[key] > float(slo[key])]
    judged = [_key_support(key, samples.get(key) or [], slo, level_confidence, False) for key in broken]
    result["confidence"] = level_confidence
    result["firm"] = any(firm for firm, _text in judged)
    result["why"] = "; ".join(text for firm, text in judged if firm == result["firm"]) or "no SLO was broken"
    return result


def _broken_level(found):
    return next((lv for lv in found.get("levels") or [] if not lv["holds"]), None)


def _held_from(found, lowest):
    """The lowest level within `found`'s capacity (below its first broken level) at or above `lowest`, or None."""
    broken = _broken_level(found)
    return next((lv for lv in found.get("levels") or []
                 if lv["holds"] and lv["concurrency"] >= lowest and (broken is None or lv["concurrency"] < broken["concurrency"])),
                None)


def _brief(found):
    broken = _broken_level(found)
    return dict({k: found.get(k) for k in ("capacity", "at_least", "low", "high", "high_at_least", "per_trial", "reason")},
                broken_at=broken["concurrency"] if broken else None, slo=found.get("slo") or {})


def _bracket(found, name):
    """What `found`'s levels say of its capacity, in words."""
    broken = _broken_level(found)
    if broken is None:
        return "%s held every level it measured, up to c=%s" % (name, found["capacity"])
    if found.get("capacity") is None:
        return "%s breaks the SLOs already at its lowest level measured, c=%s" % (name, broken["concurrency"])
    return "%s holds up to c=%s and breaks at c=%s" % (name, found["capacity"], broken["concurrency"])


def _levels_between(low, high):
    if high - low == 2:
        return "c=%s was not measured" % (low + 1)
    return "c=%s to c=%s were not measured" % (low + 1, high - 1)


SEARCH_HINT = ("more campaign_capacity_search_levels (or a higher campaign_capacity_max_concurrency) measure further, "
               "or `fleetopt report --slo` judges the levels measured under other SLOs")


def _open(variant, baseline, names):
    """Why the two capacities cannot be compared when neither holds a level the other broke."""
    v_broken, b_broken = _broken_level(variant), _broken_level(baseline)
    if variant["capacity"] == baseline["capacity"]:
        if variant["capacity"] is None:
            v_low, b_low = variant["levels"][0]["concurrency"], baseline["levels"][0]["concurrency"]
            where = "c=%s" % v_low if v_low == b_low else "c=%s for %s and c=%s for %s" % (v_low, names[0], b_low, names[1])
            return "neither holds the SLOs at the lowest level measured, %s: no capacity on either side" % where
        if v_broken is None and b_broken is None:
            return "neither capacity was found: both held every level they measured, up to c=%s (%s)" % (
                variant["capacity"], SEARCH_HINT)
        for found, broken, name, other in ((variant, b_broken, names[0], names[1]),
                                           (baseline, v_broken, names[1], names[0])):
            if _broken_level(found) is None:
                return "%s, and was not measured at c=%s, where %s broke the SLOs: its search stopped before a level " \
                       "that breaks them (%s)" % (_bracket(found, name), broken["concurrency"], other, SEARCH_HINT)
        if v_broken["concurrency"] != b_broken["concurrency"]:
            return "both hold up to c=%s, but %s broke the SLOs at c=%s and %s at c=%s, and neither was measured at " \
                   "the other's" % (variant["capacity"], names[0], v_broken["concurrency"], names[1],
                                    b_broken["concurrency"])
        return "both hold up to c=%s and break at c=%s, but %s: a difference of capacity between them would not " \
               "show (more campaign_capacity_search_levels bisect the gap)" % (
                   variant["capacity"], v_broken["concurrency"],
                   _levels_between(variant["capacity"], v_broken["concurrency"]))
    text = "%s; %s; neither holds a level the other broke" % (_bracket(variant, names[0]), _bracket(baseline, names[1]))
    if v_broken is None or b_broken is None:
        text += " (%s)" % SEARCH_HINT
    return text


def _plans(variant, baseline):
    """(verdict on the means, [[(side, level)], ...]): each plan a set of judgements that would decide it, the tightest
    first; (None, []) when none can. Improved: for each level where the baseline broke the SLOs, from the lowest up,
    the variant holding a level at or above it within its own capacity; regressed the same, exchanged."""
    for verdict, breaker, holder in (("improved", baseline, variant), ("regressed", variant, baseline)):
        plans = []
        for broken in [lv for lv in breaker.get("levels") or [] if not lv["holds"]]:
            held = _held_from(holder, broken["concurrency"])
            if held is not None:
                plans.append([(0, held), (1, broken)] if holder is variant else [(0, broken), (1, held)])
        if plans:
            return verdict, plans
    v_broken, b_broken = _broken_level(variant), _broken_level(baseline)
    same = variant["capacity"] is not None and variant["capacity"] == baseline["capacity"]
    if same and v_broken is not None and b_broken is not None and \
            v_broken["concurrency"] == b_broken["concurrency"] == variant["capacity"] + 1:
        at = {side: {lv["concurrency"]: lv for lv in found["levels"]} for side, found in enumerate((variant, baseline))}
        return "neutral", [[(0, at[0][variant["capacity"]]), (1, at[1][variant["capacity"]]), (0, v_broken),
                            (1, b_broken)]]
    return None, []


def _decided(verdict, deciding, names, found_v, found_b):
    """The reason of a firm improved / regressed / neutral."""
    sides = "capacity %s against %s's %s" % (fmt_capacity_with_trials(found_v), names[1], fmt_capacity_with_trials(found_b))
    if verdict == "neutral":
        held, broken = deciding[0], deciding[2]
        return "%s: the same capacity, c=%s: both hold every SLO at c=%s (%s: %s; %s: %s) and both break one at " \
               "c=%s, its neighbour (%s: %s; %s: %s)" % (
                   sides, held["concurrency"], held["concurrency"], names[0], deciding[0]["why"], names[1],
                   deciding[1]["why"], broken["concurrency"], names[0], deciding[2]["why"], names[1], deciding[3]["why"])
    holder, breaker = (deciding[0], deciding[1]) if verdict == "improved" else (deciding[1], deciding[0])
    if holder["concurrency"] == breaker["concurrency"]:
        where = "at c=%s %s holds every SLO (%s) and %s breaks them (%s)" % (
            holder["concurrency"], holder["name"], holder["why"], breaker["name"], breaker["why"])
    else:
        where = "%s holds every SLO at c=%s (%s), above c=%s, where %s breaks them (%s)" % (
            holder["name"], holder["concurrency"], holder["why"], breaker["concurrency"], breaker["name"], breaker["why"])
    return "%s: %s" % (sides, where)


def compare_capacity(variant, baseline, confidence=stats.DEFAULT_CONFIDENCE, baseline_variant="baseline", names=NAMES):
    """A variant's capacity (a fleetopt.analysis.capacity result) against its baseline's on the same host: the verdict, its
    reason, the judgements that decide it (`deciding`: side, concurrency, judged, firm, why) and the change of
    capacity in percent where both have one."""
    slo = variant.get("slo") or baseline.get("slo") or {}
    result = {"metric": METRIC, "verdict": "inconclusive", "reason": None, "baseline_variant": baseline_variant,
              "variant": _brief(variant), "baseline": _brief(baseline), "deciding": [], "change_pct": None,
              "confidence": confidence}
    if variant.get("capacity") is not None and baseline.get("capacity"):
        result["change_pct"] = (float(variant["capacity"]) / float(baseline["capacity"]) - 1.0) * 100.0
    if not slo:
        result["reason"] = "no SLO was set (campaign_slo): there is no capacity to compare"
        return result
    for found, name in ((variant, names[0]), (baseline, names[1])):
        if not found.get("levels"):
            result["reason"] = "%s has no capacity: %s" % (name, found.get("reason") or "nothing was measured")
            return result
    verdict, plans = _plans(variant, baseline)
    if verdict is None:
        result["reason"] = _open(variant, baseline, names)
        return result
    # Several pairs of levels could each decide it: the one taken is the first whose judgements are all firm, so each
    # is judged at the confidence adjusted for the pairs tried (Bonferroni).
    level_confidence = stats.bonferroni(confidence, len(plans))
    sides = ("variant", "baseline")
    judged = [[dict(level_support(level, slo, level_confidence), side=sides[side], name=names[side])
               for side, level in plan] for plan in plans]
    deciding = next((plan for plan in judged if all(d["firm"] for d in plan)), judged[0])
    result["deciding"] = [{k: v for k, v in d.items() if k != "name"} for d in deciding]
    if all(d["firm"] for d in deciding):
        result["verdict"] = verdict
        result["reason"] = _decided(verdict, deciding, names, variant, baseline)
        return result
    weak = [d for d in deciding if not d["firm"]]
    result["reason"] = "on the means it would be %s (%s; %s), but %s not firm: %s" % (
        verdict, _bracket(variant, names[0]), _bracket(baseline, names[1]),
        "the judgement that decides it is" if len(weak) == 1 else "the judgements that decide it are",
        "; ".join("%s at c=%s (%s): %s" % (d["name"], d["concurrency"], d["judged"], d["why"]) for d in weak))
    if len(plans) > 1:
        result["reason"] += " (nor were those of the %d other pair(s) of levels that could decide it, each judged at " \
                            "%s %% confidence)" % (len(plans) - 1, fmt_confidence(level_confidence))
    return result
