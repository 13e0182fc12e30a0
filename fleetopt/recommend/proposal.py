"""The recommendation of a finished single-optimization matrix: results/<id>/recommended.yml.

Candidates are the optimizations whose verdict is `improved` on every host that measured them.
They are taken in order of measured effect (the largest change of the verdict metric at any of
their levels, the smallest over hosts) and added to the stack one by one, unless one conflicts
with a candidate already in it:

- declared: either catalog entry names the other under `conflicts` (each cell records its
  entry's, so the inventory's own optimizations can declare them too);
- found: both change the same server flag or environment variable to different values
  (setting against removing included), so they cannot both be in one launch.

Every other optimization is left out with the reason: regressed (or mixed), conflicting,
crashed (crashed, blocked, timeout, error), not_significant (neutral: equivalent to the
baseline), inconclusive, no_effect (its server ran the baseline's configuration), not_applicable,
not_measured (skipped).

The stack is a proposal: with two or more candidates it has not been measured as one launch,
and its status says so. The proposal names the variant that measures it (`stacked_variant`: the
baseline with every candidate's changes, a catalog entry whose `stacked.composes` lists them),
which `-e recommend=true` measures as one more cell of the campaign. A single candidate is
measured again too: chosen as the best of several variants, its own measurement overstates its
gain (the winner's curse), and a launch of its own gives the gain that did not choose it (improved:
`measured as a stack`; anything else: `inconclusive`, keep the baseline). The stack stage measures the
baseline again beside the stack (`stacked.baseline`, e.g. `baseline_stack`: planned just before it, so
the ABBA order brackets the stack with it), because the matrix's baseline may be hours older and a
drift of the host would pose as the stack's effect. Once those cells are in, the stack is compared with
that baseline (its gain with the interval; fleetopt.analysis.summary) and, level by level on the same host,
with the best single candidate (the one of largest measured effect), measured in the matrix: through
their effects, each against the baseline of its own stage (stats.compare_effects), never one stage's
measurement against another's:

- improved against the baseline and against the best single candidate: `measured as a stack`;
- improved against the baseline but not shown better than the best single candidate, or
  regressed, neutral or crashed against the baseline: the best single candidate is recommended
  (it was measured alone), the status says why, and the other candidates are left out as
  `stack_not_better`;
- inconclusive against the baseline: the status is `inconclusive`, and what is recommended is
  again the best single candidate, measured alone.

Each step of the greedy search is measured in a stage of its own beside its own baseline
(`baseline_stack_<n>`) and compared with the configuration it builds on in the same way.

A campaign that measured a stack but no single candidate (`-e recommended=<file>`) verifies an
earlier recommendation (it runs no matrix, so its baseline is measured in the stack stage itself):
improved is `measured as a stack`; inconclusive is `inconclusive`; neutral, regressed or crashed is
`not confirmed`, and the baseline stays. `verify_variant` is what such a
campaign measures: the recommended configuration's changes against the baseline. Its inventory variables are the baseline's flags and environment with
each candidate's changes applied (a removed flag stays as null, so the catalog's baseline cannot
put it back); its launch command is the baseline's with those flags, through the engine's adapter.
Each candidate keeps its measured gain with its interval and its capacity under the SLOs.

With the verdicts on capacity (campaign_verdict_metric: capacity), a gain is the change of capacity
against the baseline's (fleetopt.analysis.capacity_verdict; no interval: a capacity is a level), shown at the
level that decided it; the order of measured effect is that change. A stack and the configuration it
is to improve on were measured in different stages, each beside a baseline of its own; capacities are
levels, with no ratio of gains to cancel a drift through, so they are compared directly only where
each stage's baseline had the matrix's baseline's capacity (neutral on capacity, the same to the
unit), and are inconclusive otherwise, with the reason.
"""
import shlex

import yaml

from fleetopt.files import write_atomically
from fleetopt.analysis.launches import launch_details, merge_launches
from fleetopt.analysis import stats
from fleetopt.analysis.capacity_verdict import METRIC as CAPACITY, compare_capacity
from fleetopt.analysis.summary import AA_VARIANT, BASELINE, COMPARED_METRICS, launch_sides, pooled_launch_variances
from fleetopt.analysis.verdicts import apply_aa_gate, overall_verdict

# Makes the collection's module_utils importable.
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import REDACTED, merge_flags, render_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter

STATUS_PROPOSED = "proposed, not yet measured as a stack"
STATUS_STACKED = "measured as a stack"
STATUS_SINGLE = "measured: a single optimization, nothing to stack"
STATUS_NONE = "nothing to recommend: no optimization improved; keep the baseline"
FAILED = ("crashed", "blocked", "timeout", "error")
# Left-out reasons, worst first: the reason of an optimization measured on several hosts is its worst one.
WHY_ORDER = ("crashed", "regressed", "inconclusive", "not_significant", "no_effect", "not_applicable", "not_measured",
             "stack_not_better", "not_yet_searched")
STACK_VARIANT = "stack"


def is_stacked(entry):
    """A variant that measures a stack of optimizations (its cell records `stacked`), not a single one."""
    name = entry.get("variant") or entry.get("id") or ""
    return bool(entry.get("stacked")) or name == STACK_VARIANT or name.startswith(STACK_VARIANT + "_")


def is_stage_baseline(entry):
    """The baseline a stack stage measured again beside a stack (its cell's `baseline_of`; by name for a cell the
    report synthesized for a host that never reached it)."""
    name = entry.get("variant") or ""
    prefix = BASELINE + "_"
    return bool(entry.get("baseline_of")) or (name.startswith(prefix) and is_stacked({"variant": name[len(prefix):]}))


def _why(verdict):
    if verdict in FAILED:
        return "crashed"
    if verdict in ("regressed", "mixed"):
        return "regressed"
    if verdict == "neutral":
        return "not_significant"
    if verdict in ("not_applicable", "no_effect"):
        return verdict
    if verdict == "skipped":
        return "not_measured"
    return "inconclusive"


def _diff(base, other):
    """What `other` changes against `base`: {key: new value}, None for a key it removes."""
    changed = {k: v for k, v in (other or {}).items() if (base or {}).get(k) != v}
    changed.update({k: None for k in base or {} if k not in (other or {})})
    return changed


def _round(value, digits=2):
    return None if value is None else round(float(value), digits)


def _gains(summary, host, variant, metric):
    levels = []
    for row in summary["cells"]:
        if row["host"] == host and row["variant"] == variant and row["status"] == "ok":
            comparison = (row.get("vs_baseline") or {}).get(metric)
            if comparison:
                levels.append({"concurrency": row["concurrency"], "verdict": row.get("verdict"),
                               "change_pct": _round(comparison["change_pct"]),
                               "ci_low_pct": _round(comparison["ci_low_pct"]),
                               "ci_high_pct": _round(comparison["ci_high_pct"]),
                               "confidence": _round(comparison["confidence"], 4)})
    return sorted(levels, key=lambda lv: lv["concurrency"])


def _headline(levels, metric):
    """The level with the largest improvement: the candidate's measured effect."""
    if not levels:
        return {"metric": metric, "concurrency": None, "change_pct": 0.0, "ci_low_pct": None, "ci_high_pct": None,
                "confidence": None}
    improved = [lv for lv in levels if lv["verdict"] == "improved"] or levels
    best = max(improved, key=lambda lv: lv["change_pct"])
    return dict({"metric": metric}, **{k: best[k] for k in ("concurrency", "change_pct", "ci_low_pct",
                                                            "ci_high_pct", "confidence")})


def _capacity_gain(compared):
    """A gain on capacity, from a capacity comparison (fleetopt.analysis.capacity_verdict): the change of capacity, shown at
    the variant's capacity (the levels that decided the verdict are in its reason)."""
    compared = compared or {}
    return {"metric": CAPACITY, "concurrency": (compared.get("variant") or {}).get("capacity"),
            "change_pct": _round(compared.get("change_pct")), "ci_low_pct": None, "ci_high_pct": None,
            "confidence": compared.get("confidence"), "verdict": compared.get("verdict"),
            "capacity": (compared.get("variant") or {}).get("capacity"),
            "baseline_capacity": (compared.get("baseline") or {}).get("capacity")}


def _gain_of(summary, entry, metric):
    """(levels, gain) of a variant summary entry: its per-level comparisons and its measured effect."""
    if metric == CAPACITY:
        return [], _capacity_gain(entry.get("capacity_comparison"))
    levels = _gains(summary, entry["host"], entry["variant"], metric)
    return levels, _headline(levels, metric)


def _effect(gain):
    """A gain's change as a number to order by: a capacity gain over a baseline without a capacity (it broke the SLOs
    at its lowest level) has no percentage and comes first; one without a capacity of its own comes last."""
    if gain.get("change_pct") is not None:
        return gain["change_pct"]
    if gain.get("metric") == CAPACITY and gain.get("capacity") != gain.get("baseline_capacity"):
        return float("inf") if gain.get("capacity") is not None else float("-inf")
    return 0.0


def _effect_text(gain):
    if gain.get("change_pct") is not None:
        return "%+.1f %%" % gain["change_pct"]
    if gain.get("metric") == CAPACITY:
        return "capacity %s against %s" % tuple("none" if c is None else "c=%s" % c
                                                for c in (gain.get("capacity"), gain.get("baseline_capacity")))
    return "n/a"


def _capacity_brief(found):
    if not found:
        return None
    return {k: found.get(k) for k in ("capacity", "at_least", "low", "high", "high_at_least", "reason")}


def _reason_text(entries):
    parts = []
    for v in entries:
        text = v.get("verdict_reason") or v.get("root_cause") or v.get("reason") or v.get("verdict") or ""
        parts.append("%s on %s: %s" % (v.get("verdict"), v["host"], text))
    return "; ".join(parts)


def _clash(candidate, other):
    """Why `candidate` cannot join a stack that holds `other`, or None."""
    for a, b in ((candidate, other), (other, candidate)):
        for declared in a["conflicts"]:
            if declared.get("id") == b["id"]:
                return "declared in the catalog: %s" % (declared.get("why") or "no reason given")
    for kind, key in (("flag", "flags"), ("environment variable", "env")):
        for name in sorted(set(candidate[key]) & set(other[key])):
            if candidate[key][name] != other[key][name]:
                return "both change the %s %s (%s against %s)" % (kind, name, _shown(candidate[key][name]),
                                                                  _shown(other[key][name]))
    return None


def _shown_pct(value):
    return "n/a" if value is None else "%+.1f" % value


def _shown(value):
    return "removed" if value is None else repr(value)


def _conflicts(cell):
    found = ((cell.get("provenance") or {}).get("conflicts")) or []
    return [c if isinstance(c, dict) else {"id": c} for c in found]


def _launch(baseline_cell, flags, engine, engine_version):
    """(argv, None) of the stacked launch: the baseline's command with the stack's flags; (None, why) when the
    baseline's command does not end in its own flags as the adapter renders them."""
    details = launch_details(baseline_cell)
    argv, base_flags = details.get("argv") or [], details.get("flags") or {}
    tail = render_flags(base_flags)
    if not argv or (tail and argv[-len(tail):] != tail):
        return None, "the baseline's recorded command does not end in its flags; build it from the inventory variables"
    try:
        adapter = get_adapter(engine, engine_version)
    except (KeyError, ValueError) as exc:
        return None, "no adapter for engine %r (%s); build the command from the inventory variables" % (engine, exc)
    prefix = argv[:len(argv) - len(tail)] if tail else list(argv)
    return prefix + render_flags(adapter.normalize_flags(merge_flags(flags))), None


def _stack_verdict(found):
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


def _reference(summary, host, variant):
    """The baseline `variant` was compared with on `host`: its stage's own (a stack measured after the matrix), or
    the campaign's."""
    return next((v.get("baseline_variant") or BASELINE for v in summary["variants"]
                 if v["host"] == host and v["variant"] == variant), BASELINE)


def stage_baseline_id(variant_id):
    """The baseline a stack stage measures again beside `variant_id` (fleetopt_plan plans it just before it)."""
    return "%s_%s" % (BASELINE, variant_id)


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


def _versus(summary, host, variant, other, metric):
    """`variant` against `other` on `host`, level by level (simultaneous over the levels), and its verdict: directly
    when both were compared with the same baseline, else through their effects, each against the baseline of its
    own stage (stats.compare_effects), never one stage's measurement against another's. The launch is the unit
    where the summary's was (some configuration of the host launched twice at the level), else the trial."""
    settings = summary.get("settings") or {}
    mine, theirs = _reference(summary, host, variant), _reference(summary, host, other)
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
                       "change_pct": _round(found["change_pct"]), "ci_low_pct": _round(found["ci_low_pct"]),
                       "ci_high_pct": _round(found["ci_high_pct"]), "confidence": _round(found["confidence"], 4)})
    verdict, reason = overall_verdict(levels)
    result = {"host": host, "verdict": verdict, "reason": reason, "levels": levels, "gain": _headline(levels, metric),
              "compared": _comparison_text(variant, mine, other, theirs)}
    gate = next((h.get("gate") for h in summary.get("aa") or [] if h.get("host") == host), None)
    return apply_aa_gate(result, gate, reason_key="reason")


def _versus_capacity(summary, host, variant, other):
    """`variant`'s capacity against `other`'s on `host`: directly when both were compared with the same baseline, or
    when each stage's own baseline had the matrix's baseline's capacity (neutral on capacity); else inconclusive."""
    entries = {v["variant"]: v for v in summary["variants"] if v["host"] == host}
    mine, theirs = _reference(summary, host, variant), _reference(summary, host, other)
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
    result = {"host": host, "verdict": verdict, "reason": reason, "levels": [], "gain": _capacity_gain(compared),
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
        return dict(_capacity_gain(entry["capacity_comparison"]), baseline=reference, against=BASELINE,
                    verdict=entry["verdict"])
    levels = _gains(summary, host, reference, metric)
    if not levels:
        return None
    largest = max(levels, key=lambda lv: abs(lv["change_pct"] or 0.0))
    return dict({"metric": metric, "baseline": reference, "against": BASELINE}, **largest)


def _measure_stack(summary, found, metric, best, matrix_ran=True):
    """What the stack's cells measured: against the baseline of its own stage and, where it was measured, against the
    best single candidate (through their effects when the two were measured in different stages)."""
    per_host = []
    for v in found:
        levels, gain = _gain_of(summary, v, metric)
        reference = _reference(summary, v["host"], v["variant"])
        per_host.append({"host": v["host"], "verdict": v["verdict"],
                         "reason": v.get("verdict_reason") or v.get("root_cause") or v.get("reason"),
                         "levels": levels, "gain": gain,
                         "capacity": _capacity_brief(v.get("capacity")), "baseline": reference,
                         "baseline_drift": _drift(summary, v["host"], reference, metric)})
    weakest = min(per_host, key=lambda h: _effect(h["gain"]))
    measured = {"variant": found[0]["variant"], "composes": list((found[0].get("stacked") or {}).get("composes") or []),
                "hosts": [h["host"] for h in per_host], "verdict": _stack_verdict(found),
                "reason": "; ".join("%s on %s: %s" % (h["verdict"], h["host"], h["reason"] or "") for h in per_host),
                "baseline": weakest["baseline"], "against": _baseline_text(weakest["baseline"], matrix_ran),
                "baseline_drift": weakest["baseline_drift"],
                "gain": weakest["gain"], "levels": weakest["levels"], "capacity": weakest["capacity"],
                "per_host": per_host, "vs_best_single": None}
    if best is not None:
        against = [_versus_capacity(summary, h["host"], measured["variant"], best["id"]) if metric == CAPACITY else
                   _versus(summary, h["host"], measured["variant"], best["id"], metric)
                   for h in per_host if h["host"] in best["hosts"] and (h["levels"] or metric == CAPACITY)]
        if against:
            worst = min(against, key=lambda a: _effect(a["gain"]))
            measured["vs_best_single"] = {"id": best["id"], "verdict": _stack_verdict(against),
                                          "reason": "; ".join("%s on %s: %s" % (a["verdict"], a["host"], a["reason"])
                                                              for a in against),
                                          "compared": worst["compared"], "gain": worst["gain"], "levels": worst["levels"]}
        else:
            measured["vs_best_single"] = {"id": best["id"], "verdict": "not_compared", "gain": None, "levels": [],
                                          "compared": None,
                                          "reason": "the stack and %s were not both measured on one host" % best["id"]}
    return measured


def _greedy(summary, stacks, stack, metric):
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
        against = [_versus_capacity(summary, v["host"], v["variant"], current) if metric == CAPACITY else
                   _versus(summary, v["host"], v["variant"], current, metric) for v in found if v["verdict"] not in FAILED]
        verdict = _stack_verdict(against) if against else "crashed"
        reason = "; ".join("%s on %s: %s" % (a["verdict"], a["host"], a["reason"]) for a in against) or "; ".join(
            "%s on %s: %s" % (v["verdict"], v["host"], v.get("verdict_reason") or v.get("reason") or "") for v in found)
        steps.append({"composes": composes, "candidate": candidate["id"], "variant": found[0]["variant"],
                      "against": current, "compared": against[0]["compared"] if against else None,
                      "verdict": verdict, "reason": reason, "kept": verdict == "improved"})
        if verdict == "improved":
            kept, current, kept_found = kept + [candidate], found[0]["variant"], found
    return {"kind": "greedy", "steps": steps, "kept_candidates": kept, "kept_found": kept_found,
            "kept": [c["id"] for c in kept], "next": None, "next_step": None, "next_id": None}


def _as_variant(ids, changes, title, stacked, variant_id=STACK_VARIANT):
    """A catalog entry (what fleetopt_plan takes) that measures `changes` against the baseline."""
    return {"id": variant_id, "title": title, "tier": 0, "flags": dict(changes["flags"]),
            "env": {k: v for k, v in changes["env"].items() if v != REDACTED},
            "stacked": dict(stacked, composes=list(ids))}


def _stage_variant(ids, changes, title, stacked, variant_id=STACK_VARIANT):
    """A stacked variant measured after the matrix: its stage measures the baseline again beside it, under the name
    `baseline` gives (a verifying campaign has no matrix: its baseline is measured in the same stage)."""
    return _as_variant(ids, changes, title, dict(stacked, baseline=stage_baseline_id(variant_id)), variant_id)


def _union(parts):
    changes = {"flags": {}, "env": {}}
    for part in parts:
        changes["flags"].update(part["flags"])
        changes["env"].update(part["env"])
    return changes


def recommend(summary, cells):
    """The recommendation (a dict, the content of recommended.yml) from a summary and its cells."""
    settings = summary.get("settings") or {}
    metric = settings.get("verdict_metric", "output_throughput")
    merged = {(c["host"], c["variant"]): c for c in merge_launches(cells)}
    entries, stacks = {}, []
    for v in summary["variants"]:
        if v["variant"] in (BASELINE, AA_VARIANT) or is_stage_baseline(v):
            continue
        if is_stacked(dict(v, stacked=(merged.get((v["host"], v["variant"])) or {}).get("stacked"))):
            stacks.append(dict(v, stacked=(merged.get((v["host"], v["variant"])) or {}).get("stacked")))
        else:
            entries.setdefault(v["variant"], []).append(v)
    baselines = {v["host"]: v for v in summary["variants"] if v["variant"] == BASELINE}

    candidates, left_out = [], []
    for name, found in entries.items():
        if all(v["verdict"] == "improved" for v in found):
            per_host = []
            for v in found:
                cell = merged[(v["host"], name)]
                base_cell = merged.get((v["host"], BASELINE)) or {}
                levels, gain = _gain_of(summary, v, metric)
                per_host.append({"host": v["host"], "levels": levels, "gain": gain,
                                 "capacity": _capacity_brief(v.get("capacity")),
                                 "flags": _diff(launch_details(base_cell).get("flags"), launch_details(cell).get("flags")),
                                 "env": _diff(launch_details(base_cell).get("env"), launch_details(cell).get("env")),
                                 "conflicts": _conflicts(cell)})
            weakest = min(per_host, key=lambda h: _effect(h["gain"]))
            candidates.append(dict(weakest, id=name, title=found[0].get("title"), hosts=[h["host"] for h in per_host],
                                   verdict_reason="; ".join(v.get("verdict_reason") or "" for v in found)))
        else:
            why = min((_why(v["verdict"]) for v in found if v["verdict"] != "improved"), key=WHY_ORDER.index)
            left_out.append({"id": name, "title": found[0].get("title"), "why": why, "hosts": [v["host"] for v in found],
                             "reason": _reason_text(found)})

    candidates.sort(key=lambda c: -_effect(c["gain"]))
    stack = []
    for candidate in candidates:
        clash = next(((other, why) for other in stack for why in [_clash(candidate, other)] if why), None)
        if clash:
            other, why = clash
            left_out.append({"id": candidate["id"], "title": candidate["title"], "why": "conflicting",
                             "hosts": candidate["hosts"],
                             "reason": "conflicts with %s, which has the larger measured effect (%s against "
                                       "%s): %s" % (other["id"], _effect_text(other["gain"]),
                                                    _effect_text(candidate["gain"]), why)})
        else:
            stack.append(candidate)

    notes = []
    proposed = [c["id"] for c in stack]
    stacked_variant = _stage_variant(proposed, _union(stack), "Stack: %s" % " + ".join(proposed),
                                     {"proposed_by": summary.get("campaign")}) if stack else None
    status = STATUS_PROPOSED if len(stack) > 1 else STATUS_SINGLE if stack else STATUS_NONE
    outcome = "proposed" if len(stack) > 1 else "single" if stack else "baseline"
    measured, verifies, ids, changes = None, None, proposed, _union(stack)
    search = None
    if entries:
        # The stack of this proposal, when a cell measured it; any other stack is an earlier proposal's
        # (or a step of the greedy search, below).
        found = [v for v in stacks if list((v.get("stacked") or {}).get("composes") or []) == proposed
                 and v["verdict"] != "skipped"]
        if len(stack) == 1 and found:
            # Measured again in a launch of its own: a gain that did not choose the candidate.
            measured = _measure_stack(summary, found, metric, None)
            if measured["verdict"] == "improved":
                status, outcome = STATUS_STACKED, "stack"
            else:
                outcome = "inconclusive"
                status = ("inconclusive: %s improved alone, but measured again in a launch of its own it was %s against "
                          "%s (%s); the two measurements disagree, keep the baseline until another one settles it" % (
                              stack[0]["id"], measured["verdict"].replace("_", " "), measured["against"],
                              measured["reason"]))
                stack, ids, changes = [], [], _union([])
        elif len(stack) > 1 and found:
            best = stack[0]
            measured = _measure_stack(summary, found, metric, best)
            versus = measured["vs_best_single"] or {}
            if measured["verdict"] == "improved" and versus.get("verdict") == "improved":
                status, outcome = STATUS_STACKED, "stack"
            else:
                if measured["verdict"] == "inconclusive":
                    outcome = "inconclusive"
                    status = ("inconclusive: the stack's gain over %s was not shown (%s); recommending the best single "
                              "candidate %s, measured alone" % (measured["against"], measured["reason"], best["id"]))
                else:
                    outcome = "best_single"
                    why = ("against %s alone it was %s (%s)" % (best["id"], versus.get("verdict"), versus.get("reason"))
                           if measured["verdict"] == "improved" else
                           "against %s it %s (%s)" % (
                               measured["against"],
                               "crashed" if measured["verdict"] == "crashed" else "was " + measured["verdict"],
                               measured["reason"]))
                    status = ("measured: the stack was not better than the best single candidate %s: %s; recommending "
                              "%s, measured alone" % (best["id"], why, best["id"]))
                kept = [best]
                if len(stack) > 2:
                    search = _greedy(summary, stacks, stack, metric)
                    search["full_stack"] = measured
                    kept = search.pop("kept_candidates")
                    tried = {step["candidate"]: step for step in search["steps"]}
                    if search["next"]:
                        outcome = "searching"
                        status += "; searching greedily, next step: %s (-e recommend=true measures it)" % (
                            " + ".join(search["next"]))
                        by_id = {c["id"]: c for c in stack}
                        stacked_variant = _stage_variant(search["next"], _union([by_id[i] for i in search["next"]]),
                                                         "Greedy step: %s" % " + ".join(search["next"]),
                                                         {"proposed_by": summary.get("campaign"), "search": "greedy",
                                                          "step": search["next_step"]}, search["next_id"])
                    else:
                        stacked_variant = None
                        if len(kept) > 1 and search["kept_found"]:
                            chosen = _measure_stack(summary, search["kept_found"], metric, None)
                            if chosen["verdict"] == "improved":
                                measured, outcome = chosen, "stack"
                                status = ("%s, found greedily: the full stack was not better than %s alone; the search "
                                          "kept %s" % (STATUS_STACKED, best["id"], " + ".join(c["id"] for c in kept)))
                            else:
                                kept = [best]
                        if outcome != "stack":
                            status += "; the greedy search kept nothing more"
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
                else:
                    for other in stack[1:]:
                        left_out.append({"id": other["id"], "title": other["title"], "why": "stack_not_better",
                                         "hosts": other["hosts"],
                                         "reason": "improved alone, but the measured stack of %s was not better than %s "
                                                   "alone" % (", ".join(proposed), best["id"])})
                stack = kept
                ids, changes = [c["id"] for c in kept], _union(kept)
        searched = {tuple(step["composes"]) for step in (search or {}).get("steps", [])}
        for other in stacks:
            composes = tuple((other.get("stacked") or {}).get("composes") or [])
            if other not in found and composes not in searched:
                notes.append("a stack of %s was %s on %s, but this proposal is %s: measure it (-e recommend=true)" % (
                    ", ".join(composes or ["unknown candidates"]),
                    "measured" if other["verdict"] != "skipped" else "planned and not measured", other["host"],
                    ", ".join(proposed) or "the baseline"))
    elif stacks:
        # No single optimization here: the campaign verifies an earlier recommendation's stack.
        measured = _measure_stack(summary, stacks, metric, None, matrix_ran=False)
        verifies = (stacks[0].get("stacked") or {}).get("verifies")
        host = measured["hosts"][0]
        base_launch = launch_details(merged.get((host, BASELINE)) or {})
        own = launch_details(merged.get((host, stacks[0]["variant"])) or {})
        if measured["verdict"] == "improved":
            status, outcome = STATUS_STACKED, "stack"
            ids = measured["composes"]
            changes = {"flags": _diff(base_launch.get("flags"), own.get("flags")),
                       "env": _diff(base_launch.get("env"), own.get("env"))}
        elif measured["verdict"] == "inconclusive":
            status, outcome = ("inconclusive: the stack's gain over %s was not shown (%s); nothing is confirmed, keep "
                               "the baseline until a measurement shows it" % (measured["against"], measured["reason"]),
                               "inconclusive")
        else:
            status, outcome = ("not confirmed: the stack was %s against %s (%s); keep the baseline" % (
                measured["verdict"].replace("_", " "), measured["against"], measured["reason"]), "baseline")
    left_out.sort(key=lambda e: (WHY_ORDER.index(e["why"]) if e["why"] in WHY_ORDER else -1, e["id"]))

    hosts_of = (measured or {}).get("hosts") if outcome in ("stack",) and measured else None
    host = (hosts_of or [None])[0] or (stack[0]["host"] if stack else (sorted(baselines) or [None])[0])
    base_cell = merged.get((host, BASELINE)) or {}
    base_launch = launch_details(base_cell)
    flags = dict(base_launch.get("flags") or {})
    env = dict(base_launch.get("env") or {})
    if ids:
        flags.update(changes["flags"])
        env.update({k: v for k, v in changes["env"].items() if v is not None})
        for name in [k for k, v in changes["env"].items() if v is None]:
            env.pop(name, None)
    secret = sorted(k for k, v in env.items() if v == REDACTED)
    env = {k: v for k, v in env.items() if v != REDACTED}
    engine = summary.get("engine")
    argv, no_command = _launch(base_cell, flags, engine, summary.get("engine_version")) if base_cell else (
        None, "no baseline was measured")
    if len({h for c in stack for h in c["hosts"]}) > 1:
        notes.append("the candidates were measured on different hosts (%s), each against its own host's baseline; "
                     "the inventory variables and command are those of %s" % (
                         ", ".join(sorted({h for c in stack for h in c["hosts"]})), host))
    if secret:
        notes.append("secret environment left out (set it from your vault): %s" % ", ".join(secret))
    if no_command:
        notes.append(no_command)
    verify_variant = _as_variant(ids, changes, "Recommended by campaign %s: %s" % (
        summary.get("campaign"), " + ".join(ids)), {"verifies": summary.get("campaign")}) if ids else None
    return {
        "status": status,
        "outcome": outcome,
        "campaign": summary.get("campaign"),
        "verifies": verifies,
        "engine": engine,
        "engine_version": summary.get("engine_version"),
        "verdict_metric": metric,
        "confidence": settings.get("confidence"),
        "min_effect_pct": settings.get("min_effect_pct"),
        "slo": settings.get("slo") or {},
        "stack": list(ids),
        "proposed_stack": proposed,
        "host": host,
        "inventory": {"campaign_server_flags": flags, "campaign_server_env": env},
        "launch": {"argv": argv, "command": shlex.join(str(a) for a in argv) if argv else None, "env": dict(env)},
        "measured": measured,
        "baseline": {"host": host, "capacity": _capacity_brief((baselines.get(host) or {}).get("capacity"))},
        "candidates": [{k: c[k] for k in ("id", "title", "hosts", "flags", "env", "gain", "levels", "capacity",
                                          "verdict_reason")} for c in stack],
        "left_out": left_out,
        "notes": notes,
        "stacked_variant": stacked_variant,
        "verify_variant": verify_variant,
        "search": None if search is None else {k: v for k, v in search.items() if k != "kept_found"},
    }


def write_recommendation(campaign_dir, proposal):
    """results/<id>/recommended.yml, opening with what it is; returns its path."""
    path = campaign_dir / "recommended.yml"
    header = "# fleetopt recommendation of campaign %s: %s\n" % (proposal.get("campaign"), proposal["status"])
    if proposal["status"] == STATUS_PROPOSED:
        header += ("# Each candidate was measured alone against the baseline; the stack of them has not been measured "
                   "as one launch (-e recommend=true measures it).\n")
    elif proposal.get("measured"):
        gain = proposal["measured"]["gain"]
        header += "# The stack was measured against %s: %s %s%s%s.\n" % (
            proposal["measured"]["against"], gain["metric"], _effect_text(gain),
            " [%s, %s]" % (_shown_pct(gain["ci_low_pct"]), _shown_pct(gain["ci_high_pct"]))
            if gain.get("ci_low_pct") is not None else "", "" if gain.get("concurrency") is None else " at c=%s" % gain["concurrency"])
    write_atomically(path, header + yaml.safe_dump(proposal, sort_keys=False, default_flow_style=False, width=100))
    return path
