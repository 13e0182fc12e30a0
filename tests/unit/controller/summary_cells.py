"""Cells for summary tests, in the shape roles/campaign/templates/cell.json.j2 writes."""
from schema_complete import complete_cell


def level(c, out, status="ok", trial=1):
    metrics = {"output_throughput": out, "total_throughput": out * 2, "mean_ttft_ms": 10.0, "p99_ttft_ms": 20.0,
               "mean_itl_ms": 1.0, "completed": 32.0}
    return {"concurrency": c, "trial": trial, "status": status, "metrics": metrics if status == "ok" else None,
            "reason": None if status == "ok" else "the server exited during the benchmark"}


def trials(c, *outputs):
    return [level(c, out, trial=i + 1) for i, out in enumerate(outputs)]


def cell(variant, status="ok", levels=(), host="h1", order=None, failure=None, reason=None, **extra):
    order = {"baseline": 0, "baseline_aa": 99}.get(variant, 1) if order is None else order
    return complete_cell(dict({"variant": variant, "order": order, "title": variant, "host": host, "engine": "vllm",
                 "status": status, "levels": list(levels), "failure": failure, "reason": reason,
                 "launch": {"argv": ["vllm", "serve"], "config_hash": "abc"},
                 "benchmark": {"concurrency": [1, 4, 8], "trials": 3}}, **extra))
