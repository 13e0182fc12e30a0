"""Hand-made cells, summary rows and summaries completed with the keys their schemas require
(fleetopt/schemas), each with the value a reader takes for "not recorded", so a test's files match
the formats the campaign and `fleetopt report` write."""

CELL = {"schema": "fleetopt.cell/1", "cell_key": None, "campaign": "c1", "engine": "vllm", "reason": None,
        "failure": None, "levels": [], "startup": {}, "launch": {}, "benchmark": {}, "provenance": {}}

ROW = {"title": None, "failure_class": None, "reason": None, "baseline_variant": "baseline", "launches": 0,
       "metrics": {}, "stats": {}, "samples": {}, "verdict": None, "verdict_reason": None, "vs_baseline": None}

RECOMMENDATION = {"status": "nothing to recommend: no optimization improved; keep the baseline", "outcome": "baseline",
                  "campaign": None, "verifies": None, "engine": None, "engine_version": None,
                  "verdict_metric": "output_throughput", "confidence": 0.95, "min_effect_pct": 3.0, "slo": {},
                  "stack": [], "proposed_stack": [], "host": None,
                  "inventory": {"campaign_server_flags": {}, "campaign_server_env": {}},
                  "launch": {"argv": None, "command": None, "env": {}}, "measured": None,
                  "baseline": {"host": None, "capacity": None}, "candidates": [], "left_out": [], "notes": [],
                  "stacked_variant": None, "verify_variant": None, "search": None}

SETTINGS = {"verdict_metric": "output_throughput", "confidence": 0.95, "min_effect_pct": 3.0,
            "multiple_comparisons": "bonferroni", "design": None, "unit_of_replication": None, "benchmark": None,
            "slo": {}, "slo_source": "cells", "cost_source": "cells", "verdict_settings_from": "defaults"}


def complete_cell(cell):
    """`cell` with every key a fleetopt.cell/1 cell requires (give "variant", "host", "title", "order", "status")."""
    return dict(CELL, **cell)


def complete_row(row):
    """A summary row (summary.json's `cells`) with every key the summary schema requires of one."""
    return dict(ROW, **row)


def complete_summary(summary):
    """A summary.json with every key its schema requires; its rows completed too."""
    found = dict({"campaign": "c1", "engine": "vllm", "engine_version": None, "fleetopt_revision": None,
                  "generated_at": "2026-01-01T00:00:00+00:00", "hosts": [], "settings": SETTINGS, "variants": [],
                  "noise_floor": [], "aa": [], "leftover_servers": [], "cells": [], "recommendation": RECOMMENDATION},
                 **summary)
    found["cells"] = [complete_row(row) for row in found["cells"]]
    return found
