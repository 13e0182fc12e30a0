"""The metrics a verdict can be taken on (campaign_verdict_metric, `fleetopt report --verdict-metric`).

Kept apart from the statistics so that the CLI can offer them without importing scipy.
"""
# Compared per level, each from the interval of its change against the baseline (fleetopt/analysis/summary.py).
COMPARED_METRICS = ("output_throughput", "total_throughput", "mean_ttft_ms", "p99_ttft_ms", "mean_itl_ms")
# Each variant's capacity under the SLOs against its baseline's (fleetopt/analysis/capacity_verdict.py).
CAPACITY = "capacity"
VERDICT_METRICS = COMPARED_METRICS + (CAPACITY,)
