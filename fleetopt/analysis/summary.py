"""Turn a campaign's cells into summary.json: trials aggregated, intervals, verdicts.

A row is one (host, variant, concurrency). Each variant is compared with the baseline
measured on the same host at the same concurrency, so a fleet of unlike hosts still gives
fair comparisons. A stack measured after the matrix (the recommendation's stack stage) is compared
with the baseline its stage measured again beside it (its cell's `stacked.baseline`; that cell's
`baseline_of` names the stack), not with the matrix's, which may be hours older: a drift of the host
between the stages would pose as the stack's effect. The baseline measured again is compared with
the matrix's like any variant, and that comparison is the drift. The cells of one (host, variant)
from several server launches are merged first (fleetopt.analysis.launches); the intervals of a variant's
levels are simultaneous over those levels (Bonferroni); the A/A comparison gates each host's
verdicts (fleetopt.analysis.verdicts).

Under SLOs (the cells record the campaign_slo they were measured under; the report may give its
own) each row carries goodput beside throughput (the client's request_goodput, and its share of
the requests per second) and each variant its capacity (fleetopt.analysis.capacity). With a price per
host-hour, each variant gets its cost per million output tokens at that capacity (fleetopt.analysis.cost);
where the GPUs' board power was sampled, rows carry it and the output tokens per joule.

With the verdict metric `capacity` (campaign_verdict_metric), each variant's verdict is its capacity
against its own baseline's on the same host (fleetopt.analysis.capacity_verdict, kept as `capacity_comparison`);
the levels keep their comparisons of the metrics but carry no verdict of their own, and the A/A
comparison, the noise floor, is the baseline's capacity against itself.

A variant whose server stated its baseline's configuration on every setting the variant set out to
change is `no_effect`, with the server's reason, and is not compared (fleetopt.analysis.effective).
"""
import datetime
import json
import math
import pathlib

from fleetopt.analysis import stats, verdicts
from fleetopt.analysis.capacity import capacity
from fleetopt.analysis.capacity_verdict import compare_capacity
from fleetopt.analysis.cost import attach_costs
from fleetopt.analysis.effective import mark_no_effect
from fleetopt.analysis.launches import campaign_design, launch_number, merge_launches
from fleetopt.analysis.leftovers import leftover_notes
from fleetopt.analysis.verdict_metrics import CAPACITY, COMPARED_METRICS

SUMMARY_METRICS = (
    "output_throughput", "total_throughput", "request_throughput",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_itl_ms", "median_itl_ms", "p99_itl_ms",
    "mean_tpot_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
    "completed", "failed", "duration_s", "request_goodput",
    "board_power_w", "output_tokens_per_joule",
)
BASELINE = "baseline"
AA_VARIANT = "baseline_aa"


def load_cells(campaign_dir):
    cells = []
    for path in sorted(pathlib.Path(campaign_dir, "cells").glob("*/*.json")):
        try:
            cells.append(json.loads(path.read_text()))
        except ValueError as exc:
            raise SystemExit("fleetopt: %s is not valid JSON (%s)" % (path, exc))
    return sorted(cells, key=lambda c: (c.get("order", 0), c["variant"], c["host"], launch_number(c)))


def own_baseline(cell):
    """The variant a cell is compared with: the baseline its stage measured beside it, else the campaign's."""
    return (cell.get("stacked") or {}).get("baseline") or BASELINE


def _base_row(cell):
    failure = cell.get("failure") or {}
    return {
        "variant": cell["variant"], "title": cell.get("title"), "host": cell.get("host"),
        "failure_class": failure.get("failure_class"), "reason": cell.get("reason"),
        "baseline_variant": own_baseline(cell),
    }


def _levels_by_concurrency(cell):
    grouped = {}
    for level in cell.get("levels") or []:
        grouped.setdefault(level["concurrency"], []).append(level)
    return grouped


def cell_rows(cell, confidence):
    """One row per concurrency level (trials of every launch aggregated), or one row for an unmeasured cell."""
    base = _base_row(cell)
    if cell["status"] != "ok" or not cell.get("levels"):
        return [dict(base, status=cell["status"], concurrency=None, trials=0, launches=0, metrics={}, stats={},
                     samples={}, verdict=cell["status"], verdict_reason=cell.get("reason"))]
    rows = []
    for concurrency, levels in sorted(_levels_by_concurrency(cell).items()):
        ok = [lv for lv in levels if lv.get("status") == "ok" and lv.get("metrics")]
        if not ok:
            reasons = sorted({lv.get("reason") or "" for lv in levels})
            reason = "; ".join(r for r in reasons if r)
            rows.append(dict(base, status="crashed", concurrency=concurrency, trials=0, launches=0, metrics={},
                             stats={}, samples={}, verdict="crashed", verdict_reason=reason or None,
                             failure_class=base["failure_class"] or "benchmark_failed", reason=reason,
                             failed_trials=len(levels)))
            continue
        measured = [lv["metrics"] for lv in ok]
        samples = {k: [m.get(k) for m in measured] for k in SUMMARY_METRICS}
        described = {k: stats.describe(v, confidence) for k, v in samples.items()}
        means = {k: d["mean"] for k, d in described.items()}
        rows.append(dict(
            base, status="ok", concurrency=concurrency, trials=len(measured),
            launches=len({lv.get("launch", 1) for lv in ok}),
            metrics=means, goodput_share=goodput_share(means),
            goodput_slo=((cell.get("benchmark") or {}).get("slo") or None) if means.get("request_goodput") is not None else None,
            stats={k: described[k] for k in COMPARED_METRICS},
            samples={k: samples[k] for k in COMPARED_METRICS},
            sample_launches=[lv.get("launch", 1) for lv in ok],
            failed_trials=len(levels) - len(measured),
        ))
    return rows


def goodput_share(means):
    """Goodput as a share of the requests per second (both over the same runs), or None."""
    good, total = means.get("request_goodput"), means.get("request_throughput")
    return None if good is None or not total else good / total


def _baseline_first(cells, recorded):
    """The value `recorded` finds in the baseline's cell, else in the first cell where it finds one; {} where none."""
    found = sorted((c for c in cells if recorded(c)), key=lambda c: c.get("variant") != BASELINE)
    return dict(recorded(found[0])) if found else {}


def campaign_verdict_settings(cells):
    """The verdict settings the campaign ran with ({"metric", "confidence", "min_effect_pct"}): the baseline's cell's,
    else the first cell's that records them; {} for cells written before they were recorded."""
    return _baseline_first(cells, lambda c: c.get("verdicts"))


def campaign_slo(cells):
    """The SLOs the cells were measured under: the baseline's, else the first cell's that records any."""
    return _baseline_first(cells, lambda c: (c.get("benchmark") or {}).get("slo"))


def variant_capacity(cell, slo, confidence):
    if cell["status"] != "ok":
        found = capacity([], slo, confidence)
        found["reason"] = "not measured: %s%s" % (cell["status"], " (%s)" % cell["reason"] if cell.get("reason") else "")
        return found
    return capacity(cell.get("levels") or [], slo, confidence)


def _no_reference(row):
    if row["baseline_variant"] == BASELINE:
        return "the baseline measured nothing at this concurrency on this host"
    return ("its stage's own baseline (%s, measured beside it) measured nothing at this concurrency on this host; "
            "the matrix's baseline is not taken instead" % row["baseline_variant"])


def trials_by_launch(row, metric):
    """{launch number: the trials of `metric`} of a measured row."""
    by_launch = {}
    for launch, value in zip(row.get("sample_launches") or [], (row.get("samples") or {}).get(metric) or []):
        if value is not None:
            by_launch.setdefault(launch, []).append(value)
    return by_launch


def means_by_launch(row, metric):
    """{launch number: the mean of `metric` over that launch's trials} of a measured row."""
    return dict((launch, sum(trials) / len(trials)) for launch, trials in trials_by_launch(row, metric).items())


def in_launch_order(by_launch):
    """The values of a {launch number: value} mapping, in launch order."""
    return [by_launch[launch] for launch in sorted(by_launch)]


def launch_floor(row, metric):
    """The least variance of one of the row's launch means, from its own trials (stats.launch_mean_floor)."""
    return stats.launch_mean_floor(in_launch_order(trials_by_launch(row, metric)))


def pooled_launch_variances(rows, by_round=False):
    """Per (host, concurrency, metric): the launch variance pooled over every configuration measured there
    (stats.pooled_launch_variance); absent where no configuration was launched twice at that level. With `by_round`
    (rows of one campaign, whose launch k of every variant ran in round k), also per (host, concurrency, metric,
    "rounds"): the variance with each round's shift taken out (stats.round_blocked_launch_variance), where the
    configurations launched more than once were all launched in the same rounds."""
    groups = {}
    for row in rows:
        if row["status"] == "ok":
            for metric in row.get("samples") or {}:
                groups.setdefault((row["host"], row["concurrency"], metric), []).append(means_by_launch(row, metric))
    pooled = {}
    for key, means in groups.items():
        pooled[key] = stats.pooled_launch_variance([[m[launch] for launch in sorted(m)] for m in means])
        if by_round:
            pooled[key + ("rounds",)] = stats.round_blocked_launch_variance(means)
    return {key: value for key, value in pooled.items() if value is not None}


def launch_sides(pooled, rows, metric):
    """What stats.compare_launches and stats.compare_effects_launches judge `rows` (two or four, at one host and
    level) with: their launch means, the spread ((variance, degrees of freedom): the round-blocked one where every
    row was launched in exactly its rounds, so that a shift of a round cancels from the comparison, else the pooled
    one), each row's own floor, and whether the rounds were blocks. None where no configuration was launched twice
    there: the trials are then the unit."""
    key = (rows[0]["host"], rows[0]["concurrency"], metric)
    blocked = pooled.get(key + ("rounds",))
    rounds = blocked is not None and all(tuple(sorted(trials_by_launch(row, metric))) == blocked[2] for row in rows)
    spread = blocked[:2] if rounds else pooled.get(key)
    if spread is None:
        return None
    return {"means": [in_launch_order(means_by_launch(row, metric)) for row in rows], "spread": spread,
            "floors": [launch_floor(row, metric) for row in rows], "rounds": rounds}


def trial_samples(row, metric):
    """A measured row's trials of `metric`; a row without them (an older summary) stands for one trial, its mean."""
    return (row.get("samples") or {}).get(metric) or [(row.get("metrics") or {}).get(metric)]


def compare_rows(row, reference, metric, pooled, confidence, min_effect_pct, family_size):
    """The row against its reference on one metric: launch means where the host's configurations were launched more
    than once at this level (`pooled`: pooled_launch_variances; the launch is the unit), else the trials. The
    summary compares rows with their baseline this way, the CI gate with a reference campaign's."""
    sides = launch_sides(pooled, [row, reference], metric)
    if sides is not None:
        return stats.compare_launches(*sides["means"], sides["spread"], stats.HIGHER_IS_BETTER[metric], confidence,
                                      min_effect_pct, family_size, floors=sides["floors"], rounds=sides["rounds"])
    return stats.compare(trial_samples(row, metric), trial_samples(reference, metric), stats.HIGHER_IS_BETTER[metric],
                         confidence, min_effect_pct, family_size=family_size)


# How a level's interval is made, by unit of replication, for the reports' statement of the rule.
COMPARISON_METHODS = {
    "launch": "over launch means, their spread pooled over the host's configurations at that level (each round's "
              "shift taken out where they were all launched in the same rounds; a configuration whose own trials "
              "spread more takes its own)",
    "trial": "Welch, over trials",
}
UNITS_OF_REPLICATION = {
    "launch": "the server launch: each level's interval from launch means, their spread pooled over the host's "
              "configurations measured at that level, with each round of the order as a block where they were all "
              "launched in the same rounds (a configuration whose own trials spread more takes its own)",
    "trial": "the trial: one server launch per configuration, so the spread between launches is not in the intervals",
}


def comparison_method(settings):
    """How the summary with these settings made its intervals, in words (COMPARISON_METHODS): over trials unless it
    says the launch was the unit (a summary written before units were recorded compared trials)."""
    return COMPARISON_METHODS["launch" if settings.get("unit_of_replication") == "launch" else "trial"]


def unit_of_replication(rows):
    """Which unit the comparisons of `rows` replicated over (UNITS_OF_REPLICATION), None with no comparison."""
    compared = [c for r in rows for c in (r.get("vs_baseline") or {}).values() if c]
    if not compared:
        return None
    return "launch" if any(c.get("compared") == "launches" for c in compared) else "trial"


def attach_comparisons(rows, verdict_metric, confidence, min_effect_pct):
    """vs_baseline, verdict and verdict_reason of every measured row, against its own baseline (baseline_variant);
    each variant's levels on a host form one family (Bonferroni over the m levels it was compared at)."""
    measured = {(r["host"], r["variant"], r["concurrency"]): r for r in rows if r["status"] == "ok"}
    pooled = pooled_launch_variances(rows, by_round=True)

    def reference_of(row):
        return measured.get((row["host"], row["baseline_variant"], row["concurrency"]))

    family = {}
    for row in rows:
        if row["status"] == "ok" and row["variant"] != BASELINE and reference_of(row) is not None:
            family[(row["host"], row["variant"])] = family.get((row["host"], row["variant"]), 0) + 1
    for row in rows:
        if row["status"] != "ok":
            row["vs_baseline"] = None
            continue
        if row["variant"] == BASELINE:
            row.update(vs_baseline=None, verdict="baseline", verdict_reason=None)
            continue
        reference = reference_of(row)
        if reference is None:
            row.update(vs_baseline=None, verdict="inconclusive", verdict_reason=_no_reference(row))
            continue
        m = family[(row["host"], row["variant"])]
        row["vs_baseline"] = {metric: compare_rows(row, reference, metric, pooled, confidence, min_effect_pct, m)
                              for metric in COMPARED_METRICS}
        row["family_size"] = m
        if verdict_metric == CAPACITY:
            row.update(verdict=None, verdict_reason="the verdict is taken on capacity, per variant and host "
                                                    "(campaign_verdict_metric: capacity), not per level")
            continue
        chosen = row["vs_baseline"].get(verdict_metric) or {}
        row["verdict"] = chosen.get("verdict") or "inconclusive"
        row["verdict_reason"] = chosen.get("reason") or "no %s to compare" % verdict_metric
    return rows


def level_verdicts(own, baseline_levels, planned=None):
    """The per-level verdicts an overall verdict is made of: a level the variant failed while the
    baseline measured there is `failed`; a level outside the `planned` ones that the baseline never measured
    (only a capacity search went there) is `searched_only`, with no verdict."""
    levels = []
    for r in own:
        if r["concurrency"] is None:
            continue
        searched = planned is not None and r["concurrency"] not in planned
        if r["status"] == "ok" and searched and r.get("vs_baseline") is None and r["variant"] != BASELINE:
            levels.append({"concurrency": r["concurrency"], "verdict": None, "searched_only": True,
                           "reason": r.get("verdict_reason")})
        elif r["status"] == "ok":
            levels.append({"concurrency": r["concurrency"], "verdict": r.get("verdict"),
                           "reason": r.get("verdict_reason")})
        elif r["concurrency"] in baseline_levels:
            levels.append({"concurrency": r["concurrency"], "verdict": "failed", "reason": r.get("reason")})
        else:
            levels.append({"concurrency": r["concurrency"], "verdict": None,
                           "reason": "neither the variant nor the baseline measured this level"})
    return levels


def capacity_comparison(cell, capacities, slo, confidence):
    """A measured variant's capacity against its own baseline's on the same host (fleetopt.analysis.capacity_verdict)."""
    reference = own_baseline(cell)
    found = capacities.get((cell["host"], reference)) or dict(
        capacity([], slo, confidence), reason="not measured on this host (no %s cell)" % reference)
    names = ("the variant", "the baseline" if reference == BASELINE else "its stage's baseline (%s)" % reference)
    return compare_capacity(capacities[(cell["host"], cell["variant"])], found, confidence, baseline_variant=reference,
                            names=names)


def variant_summaries(cells, rows, slo=None, confidence=stats.DEFAULT_CONFIDENCE, verdict_metric=None):
    measured_levels = {}
    for r in rows:
        if r["status"] == "ok":
            measured_levels.setdefault((r["host"], r["variant"]), set()).add(r["concurrency"])
    capacities = {(cell["host"], cell["variant"]): variant_capacity(cell, slo or {}, confidence) for cell in cells}
    summaries = []
    for cell in cells:
        own = [r for r in rows if r["variant"] == cell["variant"] and r["host"] == cell["host"]]
        levels = level_verdicts(own, measured_levels.get((cell["host"], own_baseline(cell)), set()),
                                (cell.get("benchmark") or {}).get("concurrency"))
        compared = None
        if cell["status"] != "ok":
            verdict, why = cell["status"], cell.get("reason")
        elif cell["variant"] == BASELINE:
            verdict, why = "baseline", None
        elif verdict_metric == CAPACITY:
            compared = capacity_comparison(cell, capacities, slo or {}, confidence)
            verdict, why = compared["verdict"], compared["reason"]
        else:
            verdict, why = verdicts.overall_verdict(levels)
        by_level = {lv["concurrency"]: lv for lv in levels}
        failure = cell.get("failure") or {}
        summaries.append({
            "variant": cell["variant"], "title": cell.get("title"), "host": cell["host"], "status": cell["status"],
            "verdict": verdict, "verdict_reason": why, "failure_class": failure.get("failure_class"),
            "baseline_variant": own_baseline(cell), "baseline_of": cell.get("baseline_of"),
            "root_cause": failure.get("root_cause"), "remedy": failure.get("remedy"), "reason": cell.get("reason"),
            "startup_s": (cell.get("startup") or {}).get("startup_s"),
            "launches": len({lv.get("launch", 1) for lv in cell.get("levels") or [] if lv.get("status") == "ok"}),
            "launches_planned": cell.get("launches") or 1, "launch_statuses": cell.get("launch_statuses") or [],
            "capacity": capacities[(cell["host"], cell["variant"])], "capacity_comparison": compared,
            # What the server stated against its baseline's: the settings changed, and what else differs.
            "effective_comparison": cell.get("effective_comparison"),
            "levels": [
                dict({"concurrency": r["concurrency"], "verdict": by_level[r["concurrency"]]["verdict"]
                      if r["variant"] != BASELINE else r.get("verdict"),
                      "reason": r.get("verdict_reason"), "trials": r["trials"], "launches": r.get("launches", 0),
                      "failed_trials": r.get("failed_trials", 0),
                      "change": (r.get("vs_baseline") or {}).get("output_throughput")},
                     **({"searched_only": True} if by_level[r["concurrency"]].get("searched_only") else {}))
                for r in own if r["concurrency"] is not None
            ],
        })
    return summaries


def resolves_pct(floor, aa):
    """The smallest minimum effect at which the host's A/A comparison (`aa`, its variant summary) would be neutral (the
    next 0.1 % above the widest bound of its equivalence intervals over the levels): the smallest change its noise
    lets this campaign's design resolve. None where no minimum effect would make it neutral: a compared level without
    an equivalence interval (one trial, a failed level, capacity), or an A/A that did not run. A level only a capacity
    search took the A/A to, which the baseline never measured, was not compared and does not count."""
    intervals = {f["concurrency"]: (f.get("eq_low_pct"), f.get("eq_high_pct")) for f in floor if f["host"] == aa["host"]}
    bounds = [intervals.get(level["concurrency"], (None, None)) for level in aa.get("levels") or []
              if not level.get("searched_only")]
    if aa["status"] != "ok" or not bounds or any(low is None or high is None for low, high in bounds):
        return None
    widest = max(max(-low, high) for low, high in bounds)
    return round(math.floor(widest * 10.0) / 10.0 + 0.1, 1)


def aa_hosts(summaries, hosts, floor=()):
    """Per host: its A/A verdict and reason, the reason that gates its verdicts (None: they stand), and the smallest
    effect it resolves (resolves_pct)."""
    found = {v["host"]: v for v in summaries if v["variant"] == AA_VARIANT}
    result = []
    for host in hosts:
        aa = found.get(host)
        if aa is None:
            result.append({"host": host, "aa": False, "verdict": None, "reason": "A/A was off on this host",
                           "gate": None, "resolves_pct": None})
        else:
            reason = aa.get("verdict_reason") or aa.get("reason")
            result.append({"host": host, "aa": True, "verdict": aa["verdict"], "reason": reason,
                           "gate": verdicts.aa_gate(aa["verdict"], reason), "resolves_pct": resolves_pct(floor, aa)})
    return result


def gate_on_aa(summaries, rows, hosts):
    gates = {h["host"]: h["gate"] for h in hosts}
    for entry in summaries + rows:
        if entry["variant"] in (BASELINE, AA_VARIANT):
            continue
        verdicts.apply_aa_gate(entry, gates.get(entry["host"]))
        for level in entry.get("levels") if entry in summaries else ():
            verdicts.apply_aa_gate(level, gates.get(entry["host"]), reason_key="reason")


def noise_floor(rows, verdict_metric, summaries=()):
    """What the baseline measured against itself (an A/A run) says about each host's noise, per level (on capacity:
    per host, its capacity against itself)."""
    floor = []
    if verdict_metric == CAPACITY:
        for entry in summaries:
            compared = entry.get("capacity_comparison") if entry["variant"] == AA_VARIANT else None
            if compared:
                floor.append({"host": entry["host"], "concurrency": None, "metric": CAPACITY,
                              "change_pct": compared["change_pct"], "ci_low_pct": None, "ci_high_pct": None,
                              "eq_low_pct": None, "eq_high_pct": None, "eq_confidence": None,
                              "confidence": compared["confidence"], "verdict": compared["verdict"],
                              "reason": compared["reason"]})
        return floor
    for row in rows:
        if row["variant"] == AA_VARIANT and row.get("vs_baseline"):
            comparison = row["vs_baseline"].get(verdict_metric) or {}
            floor.append({"host": row["host"], "concurrency": row["concurrency"], "metric": verdict_metric,
                          "change_pct": comparison.get("change_pct"), "ci_low_pct": comparison.get("ci_low_pct"),
                          "ci_high_pct": comparison.get("ci_high_pct"), "confidence": comparison.get("confidence"),
                          "eq_low_pct": comparison.get("eq_low_pct"), "eq_high_pct": comparison.get("eq_high_pct"),
                          "eq_confidence": comparison.get("eq_confidence"),
                          "verdict": comparison.get("verdict"), "reason": comparison.get("reason")})
    return floor


def host_gpus(cells):
    """{host: its GPU count as its cells' provenance recorded it}; a host none recorded it for is left out."""
    found = {}
    for cell in cells:
        count = ((cell.get("provenance") or {}).get("host") or {}).get("gpu_count")
        if count is not None:
            found.setdefault(cell["host"], count)
    return found


def build_summary(campaign_dir, cells, verdict_metric="output_throughput", confidence=stats.DEFAULT_CONFIDENCE,
                  min_effect_pct=stats.DEFAULT_MIN_EFFECT_PCT, slo=None, cost_per_host_hour=None):
    """`slo` None: the SLOs the cells were measured under (campaign_slo); a mapping judges capacity under it.
    `cost_per_host_hour` None: each host's price as its cells recorded it (campaign_cost_per_host_hour)."""
    slo_source = "cells" if slo is None else "report"
    slo = campaign_slo(cells) if slo is None else dict(slo)
    # A variant whose server ran its baseline's configuration is no comparison (fleetopt.analysis.effective).
    merged = mark_no_effect(merge_launches(cells))
    rows = [row for cell in merged for row in cell_rows(cell, confidence)]
    rows = attach_comparisons(rows, verdict_metric, confidence, min_effect_pct)
    engines = sorted({c["engine"] for c in cells if c.get("engine")})
    provenance = (cells[0].get("provenance") or {}) if cells else {}
    hosts = sorted({c["host"] for c in cells})
    summaries = attach_costs(variant_summaries(merged, rows, slo, confidence, verdict_metric), rows, merged, slo,
                             cost_per_host_hour)
    floor = noise_floor(rows, verdict_metric, summaries)
    aa = aa_hosts(summaries, hosts, floor)
    gate_on_aa(summaries, rows, aa)
    return {
        "campaign": pathlib.Path(campaign_dir).name,
        "engine": engines[0] if len(engines) == 1 else ",".join(engines),
        "engine_version": provenance.get("engine_version"),
        "fleetopt_revision": provenance.get("fleetopt_revision"),
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hosts": hosts,
        "host_gpus": host_gpus(cells),
        "settings": {"verdict_metric": verdict_metric, "confidence": confidence, "min_effect_pct": min_effect_pct,
                     "multiple_comparisons": "bonferroni", "design": campaign_design(cells),
                     "unit_of_replication": unit_of_replication(rows),
                     "benchmark": (cells[0].get("benchmark") if cells else None),
                     "slo": slo, "slo_source": slo_source,
                     "cost_source": "cells" if cost_per_host_hour is None else "report"},
        "variants": summaries,
        "noise_floor": floor,
        "aa": aa,
        "leftover_servers": leftover_notes(campaign_dir, cells),
        "cells": rows,
    }
