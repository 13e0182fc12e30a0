#!/usr/bin/env python3
"""The container fleet (inventory/containers) against one container and against the local connection.

Runs three tier-1 campaigns through ansible-runner on the real engine and prints:
- the wall time of the tier on one container (fleetopt-host-1, core 0) and on two (one core each),
  and their ratio (goal <= 0.6; each host measures its own baseline, so with n variants the ratio
  cannot go below (1 + n/2) / (1 + n), 0.6 for tier 1's four variants on this engine);
- per variant, fleetopt's orchestration overhead (the variant's task time minus engine start-up,
  benchmark client time and the stop) over the podman connection (the one-container campaign)
  and over the local connection (inventory/local, the same engine on this machine), and their ratio.

Sets up podman and the fleet first (tests/molecule/prepare_podman.sh, playbooks/containers.yml)
and leaves the fleet running. Takes 10 to 20 minutes on a 2-core machine.

    .venv/bin/python tests/benchmarks/container_fleet.py [--tier 1] [--trials 1] [--concurrency 1,4]
    .venv/bin/python tests/benchmarks/container_fleet.py --overhead-only --only float32_compute,small_prefill_chunks

--overhead-only runs the one-container and the local campaign only (the overhead figure);
--only measures the given variants instead of the tier.
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
sys.path.insert(0, str(ROOT / "tests"))

from containers import container_fleet  # noqa: E402

LOCAL_PORT = 8792


def campaign(name, inventory, args, workdir, limit=None, extravars=None):
    os.environ["PATH"] = "%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", ""))
    # One launch per variant and no A/A run in all three campaigns, so they run the same cells
    # (the local inventory's own design would launch every variant twice).
    variables = {"campaign_id": name, "campaign_results_dir": str(workdir / "results"),
                 "campaign_bench_concurrency": args.concurrency, "campaign_bench_trials": args.trials,
                 "campaign_aa": False, "campaign_launches": 1, "campaign_bench_max_trials": 0}
    variables.update({"only": args.only} if args.only else {"tier": args.tier})
    variables.update(extravars or {})
    (workdir / name).mkdir()
    started = time.time()
    result = ansible_runner.run(private_data_dir=str(workdir / name), project_dir=str(ROOT),
                                playbook=str(ROOT / "optimize.yml"), inventory=str(inventory), limit=limit,
                                extravars=variables, quiet=True,
                                envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg")})
    wall = time.time() - started
    print("campaign %s: rc %s, wall %.1f s" % (name, result.rc, wall), flush=True)
    if result.rc != 0:
        sys.exit("campaign %s failed (rc=%s); see %s" % (name, result.rc, workdir / name))
    summary = json.loads((workdir / "results" / name / "summary.json").read_text())
    bad = [(row["host"], row["variant"], row["status"]) for row in summary["cells"]
           if row["status"] not in ("ok", "not_applicable")]
    if bad:
        print("campaign %s: cells not measured (their time is in the wall time, not in the overheads): %s"
              % (name, bad), flush=True)
    return result, wall, summary


def overheads(result, cells_dir):
    """Per variant: its tasks' total duration minus start-up, benchmark and stop (seconds)."""
    variants = {path.stem for path in cells_dir.glob("*.json")}
    task_time = collections.defaultdict(float)
    stops = {}
    for event in result.events:
        data = event.get("event_data", {})
        if event.get("event") not in ("runner_on_ok", "runner_on_failed", "runner_on_skipped"):
            continue
        words = data.get("task", "").split()
        if not words or words[-1] not in variants:
            continue
        task_time[words[-1]] += float(data.get("duration") or 0.0)
        stop = ((data.get("res") or {}).get("server") or {}).get("stop")
        if data.get("task", "").startswith("Stop the server") and stop:
            stops[words[-1]] = stop.get("elapsed_s") or 0.0
    found = {}
    for path in cells_dir.glob("*.json"):
        cell = json.loads(path.read_text())
        if cell["status"] != "ok":
            continue
        engine = ((cell["startup"]["startup_s"] or 0.0) + sum(level.get("duration_s") or 0.0 for level in cell["levels"])
                  + stops.get(cell["variant"], 0.0))
        found[cell["variant"]] = task_time[cell["variant"]] - engine
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tier", type=int, default=1)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--concurrency", default="1,4")
    parser.add_argument("--only", help="comma-separated variant ids instead of the tier")
    parser.add_argument("--overhead-only", action="store_true", help="skip the two-container campaign")
    args = parser.parse_args()
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    container_fleet.prepare_podman()
    container_fleet.up()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-container-fleet-"))
    one_host = container_fleet.HOSTS[0]

    one, one_wall, _ = campaign("one-container", container_fleet.INVENTORY, args, workdir,
                                limit="%s,localhost" % one_host)
    if not args.overhead_only:
        _, two_wall, two_summary = campaign("two-containers", container_fleet.INVENTORY, args, workdir)
    local, local_wall, _ = campaign("local", ROOT / "inventory" / "local", args, workdir,
                                    extravars={"campaign_port": LOCAL_PORT, "campaign_state_dir": str(workdir / "state")})

    print("%s, concurrency %s, %d trial(s); results under %s" % (
        args.only or "tier %d" % args.tier, args.concurrency, args.trials, workdir))
    print("one container  (%s): wall %6.1f s" % (one_host, one_wall))
    if not args.overhead_only:
        per_host = collections.defaultdict(list)
        for variant in two_summary["variants"]:
            per_host[variant["host"]].append(variant["variant"])
        print("two containers        : wall %6.1f s  (%s)" % (two_wall, "; ".join(
            "%s: %s" % (host, ", ".join(variants)) for host, variants in sorted(per_host.items()))))
        print("two containers / one container: %.2f of the wall time (goal <= 0.6)" % (two_wall / one_wall))

    over_podman = overheads(one, workdir / "results" / "one-container" / "cells" / one_host)
    over_local = overheads(local, workdir / "results" / "local" / "cells" / "localhost")
    print("local connection campaign: wall %.1f s" % local_wall)
    print("%-22s %12s %12s %8s" % ("variant", "podman s", "local s", "ratio"))
    for variant in sorted(set(over_podman) & set(over_local)):
        print("%-22s %12.2f %12.2f %8.2f" % (variant, over_podman[variant], over_local[variant],
                                            over_podman[variant] / over_local[variant] if over_local[variant] else
                                            float("nan")))
    common = sorted(set(over_podman) & set(over_local))
    if common:
        mean_podman = sum(over_podman[v] for v in common) / len(common)
        mean_local = sum(over_local[v] for v in common) / len(common)
        print("mean orchestration overhead per variant: podman %.2f s, local %.2f s, ratio %.2f"
              % (mean_podman, mean_local, mean_podman / mean_local if mean_local else float("nan")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
