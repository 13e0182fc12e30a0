"""Regression gate: compare a campaign with a stored reference campaign.

A row (host, variant, concurrency) fails the gate when its verdict metric regressed by more
than the threshold against the same row of the reference: significantly so where both
campaigns have two or more trials, or by the plain difference of means otherwise.
"""
import json
import pathlib

from fleetopt import stats


def load_summary(path):
    path = pathlib.Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.exists():
        raise SystemExit("fleetopt: no reference summary at %s" % path)
    return json.loads(path.read_text())


def regressions(current, reference, threshold_pct, metric="output_throughput"):
    """Rows of `current` that regressed beyond `threshold_pct` against `reference`."""
    wanted = {(r["host"], r["variant"], r["concurrency"]): r for r in reference["cells"] if r["status"] == "ok"}
    higher_is_better = stats.HIGHER_IS_BETTER[metric]
    found = []
    for row in current["cells"]:
        ref = wanted.get((row["host"], row["variant"], row["concurrency"]))
        if ref is None or row["status"] != "ok":
            continue
        now_samples = (row.get("samples") or {}).get(metric) or [row["metrics"][metric]]
        ref_samples = (ref.get("samples") or {}).get(metric) or [ref["metrics"][metric]]
        comparison = stats.compare(now_samples, ref_samples, higher_is_better, min_effect_pct=threshold_pct)
        if comparison is None:
            continue
        worse = -comparison["change_pct"] if higher_is_better else comparison["change_pct"]
        failed = comparison["verdict"] == "regressed" if comparison["tested"] else worse > threshold_pct
        if failed:
            found.append({"host": row["host"], "variant": row["variant"], "concurrency": row["concurrency"],
                          "metric": metric, "change_pct": comparison["change_pct"],
                          "ci_low_pct": comparison["ci_low_pct"], "ci_high_pct": comparison["ci_high_pct"]})
    return found
