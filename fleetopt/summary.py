"""Turn a campaign's cells into summary.json: trials aggregated, intervals, verdicts.

A row is one (host, variant, concurrency). Each variant is compared with the baseline
measured on the same host at the same concurrency, so a fleet of unlike hosts still gives
fair comparisons.
"""
import datetime
import json
import pathlib

from fleetopt import stats

SUMMARY_METRICS = (
    "output_throughput", "total_throughput", "request_throughput",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_itl_ms", "median_itl_ms", "p99_itl_ms",
    "mean_tpot_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
    "completed", "failed", "duration_s",
)
COMPARED_METRICS = ("output_throughput", "total_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_itl_ms")
BASELINE = "baseline"
AA_VARIANT = "baseline_aa"


def load_cells(campaign_dir):
    cells = []
    for path in sorted(pathlib.Path(campaign_dir, "cells").glob("*/*.json")):
        try:
            cells.append(json.loads(path.read_text()))
        except ValueError as exc:
            raise SystemExit("fleetopt: %s is not valid JSON (%s)" % (path, exc))
    return sorted(cells, key=lambda c: (c.get("order", 0), c["variant"], c["host"]))


def _base_row(cell):
    failure = cell.get("failure") or {}
    return {
        "variant": cell["variant"], "title": cell.get("title"), "host": cell.get("host"),
        "failure_class": failure.get("failure_class"), "reason": cell.get("reason"),
    }


def _levels_by_concurrency(cell):
    grouped = {}
    for level in cell.get("levels") or []:
        grouped.setdefault(level["concurrency"], []).append(level)
    return grouped


def cell_rows(cell, confidence):
    """One row per concurrency level (trials aggregated), or one row for an unmeasured cell."""
    base = _base_row(cell)
    if cell["status"] != "ok" or not cell.get("levels"):
        return [dict(base, status=cell["status"], concurrency=None, trials=0, metrics={}, stats={}, samples={},
                     verdict=cell["status"])]
    rows = []
    for concurrency, levels in sorted(_levels_by_concurrency(cell).items()):
        measured = [lv["metrics"] for lv in levels if lv.get("status") == "ok" and lv.get("metrics")]
        if not measured:
            reasons = sorted({lv.get("reason") or "" for lv in levels})
            rows.append(dict(base, status="crashed", concurrency=concurrency, trials=0, metrics={}, stats={},
                             samples={}, verdict="crashed", failure_class=base["failure_class"] or "benchmark_failed",
                             reason="; ".join(r for r in reasons if r)))
            continue
        samples = {k: [m.get(k) for m in measured] for k in SUMMARY_METRICS}
        described = {k: stats.describe(v, confidence) for k, v in samples.items()}
        rows.append(dict(
            base, status="ok", concurrency=concurrency, trials=len(measured),
            metrics={k: d["mean"] for k, d in described.items()},
            stats={k: described[k] for k in COMPARED_METRICS},
            samples={k: samples[k] for k in COMPARED_METRICS},
            failed_trials=len(levels) - len(measured),
        ))
    return rows


def attach_comparisons(rows, verdict_metric, confidence, min_effect_pct):
    baselines = {(r["host"], r["concurrency"]): r for r in rows if r["variant"] == BASELINE and r["status"] == "ok"}
    for row in rows:
        if row["status"] != "ok":
            row["vs_baseline"] = None
            continue
        if row["variant"] == BASELINE:
            row["vs_baseline"] = None
            row["verdict"] = "baseline"
            continue
        reference = baselines.get((row["host"], row["concurrency"]))
        if reference is None:
            row["vs_baseline"] = None
            row["verdict"] = None
            continue
        row["vs_baseline"] = {
            metric: stats.compare(row["samples"][metric], reference["samples"][metric],
                                  stats.HIGHER_IS_BETTER[metric], confidence, min_effect_pct)
            for metric in COMPARED_METRICS
        }
        row["verdict"] = (row["vs_baseline"].get(verdict_metric) or {}).get("verdict")
    return rows


def variant_summaries(cells, rows):
    summaries = []
    for cell in cells:
        own = [r for r in rows if r["variant"] == cell["variant"] and r["host"] == cell["host"]]
        if cell["status"] != "ok":
            verdict = cell["status"]
        elif cell["variant"] == BASELINE:
            verdict = "baseline"
        else:
            verdict = stats.overall_verdict([r.get("verdict") for r in own if r["status"] == "ok"])
        failure = cell.get("failure") or {}
        summaries.append({
            "variant": cell["variant"], "title": cell.get("title"), "host": cell["host"], "status": cell["status"],
            "verdict": verdict, "failure_class": failure.get("failure_class"),
            "root_cause": failure.get("root_cause"), "remedy": failure.get("remedy"), "reason": cell.get("reason"),
            "startup_s": (cell.get("startup") or {}).get("startup_s"),
            "levels": [
                {"concurrency": r["concurrency"], "verdict": r.get("verdict"), "trials": r["trials"],
                 "change": (r.get("vs_baseline") or {}).get("output_throughput")}
                for r in own if r["concurrency"] is not None
            ],
        })
    return summaries


def noise_floor(rows, verdict_metric):
    """What the baseline measured against itself (an A/A run) says about this host's noise."""
    floor = []
    for row in rows:
        if row["variant"] == AA_VARIANT and row.get("vs_baseline"):
            comparison = row["vs_baseline"].get(verdict_metric) or {}
            floor.append({"host": row["host"], "concurrency": row["concurrency"], "metric": verdict_metric,
                          "change_pct": comparison.get("change_pct"), "ci_low_pct": comparison.get("ci_low_pct"),
                          "ci_high_pct": comparison.get("ci_high_pct"), "verdict": comparison.get("verdict")})
    return floor


def build_summary(campaign_dir, cells, verdict_metric="output_throughput", confidence=stats.DEFAULT_CONFIDENCE,
                  min_effect_pct=stats.DEFAULT_MIN_EFFECT_PCT):
    rows = [row for cell in cells for row in cell_rows(cell, confidence)]
    rows = attach_comparisons(rows, verdict_metric, confidence, min_effect_pct)
    engines = sorted({c["engine"] for c in cells})
    provenance = (cells[0].get("provenance") or {}) if cells else {}
    return {
        "campaign": pathlib.Path(campaign_dir).name,
        "engine": engines[0] if len(engines) == 1 else ",".join(engines),
        "engine_version": provenance.get("engine_version"),
        "fleetopt_revision": provenance.get("fleetopt_revision"),
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hosts": sorted({c["host"] for c in cells}),
        "settings": {"verdict_metric": verdict_metric, "confidence": confidence, "min_effect_pct": min_effect_pct,
                     "benchmark": (cells[0].get("benchmark") if cells else None)},
        "variants": variant_summaries(cells, rows),
        "noise_floor": noise_floor(rows, verdict_metric),
        "cells": rows,
    }
