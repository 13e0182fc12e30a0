#!/usr/bin/env python3
"""Measure what fleetopt itself costs around the engine, on the real local engine.

Runs a small campaign (baseline plus the variants given, default float32_compute) through
ansible-runner and prints, per variant:
- orchestration overhead: the variant's wall time (sum of its tasks' durations) minus engine
  start-up (launch to ready), benchmark client time and the stop (SIGTERM to port free);
- how long after the engine's ready line readiness was noticed;
- how long the stop took from request to port free.
Targets (issue 2): overhead <= 2 s per variant, readiness noticed within 0.5 s, stop within 10 s.

    .venv/bin/python tests/benchmarks/campaign_overhead.py [--only id1,id2] [--port N]
"""
import argparse
import collections
import json
import os
import pathlib
import sys
import tempfile
import time

import ansible_runner

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run_campaign(only, port, workdir):
    # ansible-runner starts ansible-playbook from PATH: use the one beside this interpreter.
    os.environ["PATH"] = "%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", ""))
    extravars = {
        "only": only, "campaign_id": "overhead", "campaign_port": port,
        "campaign_results_dir": str(workdir / "results"), "campaign_state_dir": str(workdir / "state"),
        "campaign_bench_concurrency": [1, 4],
    }
    (workdir / "runner").mkdir()
    started = time.time()
    result = ansible_runner.run(private_data_dir=str(workdir / "runner"), project_dir=str(ROOT),
                                playbook=str(ROOT / "optimize.yml"), extravars=extravars, quiet=True,
                                envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    return result, time.time() - started


def task_durations(result, variants):
    """Sum the durations of each variant's tasks; their names end with the variant id."""
    per_variant = collections.defaultdict(float)
    stops = {}
    for event in result.events:
        data = event.get("event_data", {})
        if event.get("event") not in ("runner_on_ok", "runner_on_failed", "runner_on_skipped"):
            continue
        words = data.get("task", "").split()
        if not words or words[-1] not in variants:
            continue
        variant = words[-1]
        per_variant[variant] += float(data.get("duration") or 0.0)
        res = data.get("res") or {}
        stop = (res.get("server") or {}).get("stop")
        if data.get("task", "").startswith("Stop the server") and stop:
            stops[variant] = (float(data.get("duration") or 0.0), stop)
    return per_variant, stops


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="float32_compute")
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-overhead-"))
    result, wall = run_campaign(args.only, args.port, workdir)
    if result.rc != 0:
        print("campaign failed (rc=%s); see %s" % (result.rc, workdir), file=sys.stderr)
        return 1
    cells_dir = workdir / "results" / "overhead" / "cells" / "localhost"
    per_variant, stops = task_durations(result, {path.stem for path in cells_dir.glob("*.json")})
    rows = []
    for path in sorted(cells_dir.glob("*.json")):
        cell = json.loads(path.read_text())
        variant = cell["variant"]
        startup = cell["startup"]["startup_s"] or 0.0
        bench = sum(level.get("duration_s") or 0.0 for level in cell["levels"])
        stop_task, stop = stops.get(variant, (0.0, {}))
        engine = startup + bench + (stop.get("elapsed_s") or 0.0)
        rows.append((variant, per_variant[variant], startup, bench, stop.get("elapsed_s"),
                     per_variant[variant] - engine, cell["startup"]["ready_noticed_after_s"]))
    print("campaign wall time %.1f s (includes ansible start-up, planning and the report)" % wall)
    print("%-18s %9s %9s %9s %8s %10s %14s" % ("variant", "wall s", "startup s", "bench s", "stop s",
                                             "overhead s", "ready noticed s"))
    for row in rows:
        print("%-18s %9.2f %9.2f %9.2f %8.2f %10.2f %14.3f" % row)
    worst = max(r[5] for r in rows)
    print("worst overhead per variant: %.2f s (target <= 2 s); slowest readiness notice: %.3f s (target <= 0.5 s); "
          "slowest stop: %.2f s (target <= 10 s)" % (worst, max(r[6] for r in rows), max(r[4] or 0 for r in rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
