#!/usr/bin/env python3
"""Wall time of one tier-1 campaign on one fleet host, then on two, on the real local engine.

Both "hosts" are local engines on this machine (tests/e2e/inventories/), so they share its
cores: the figure shows what spreading the variants buys when the engine does not use every
core itself. Prints both wall times and their ratio.

    .venv/bin/python tests/benchmarks/fleet_parallelism.py [--trials N] [--concurrency 1,4]
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
INVENTORIES = ROOT / "tests" / "e2e" / "inventories"


def campaign(inventory, trials, concurrency, workdir):
    started = time.time()
    proc = subprocess.run(
        [str(pathlib.Path(sys.executable).parent / "fleetopt"), "run", "--tier", "1", "-i", str(inventory),
         "--campaign-id", inventory.stem, "--results", str(workdir / "results"),
         "--artifacts", str(workdir / "artifacts"), "--quiet",
         "-e", "campaign_state_dir=%s" % (workdir / "state"),
         "-e", json.dumps({"campaign_bench_trials": trials, "campaign_bench_concurrency": concurrency})],
        cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    wall = time.time() - started
    if proc.returncode != 0:
        sys.exit("campaign on %s failed:\n%s" % (inventory.name, proc.stdout.decode()[-3000:]))
    summary = json.loads((workdir / "results" / inventory.stem / "summary.json").read_text())
    return wall, summary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--concurrency", default="1,4")
    args = parser.parse_args()
    concurrency = [int(c) for c in args.concurrency.split(",")]
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-fleet-"))
    rows = []
    for inventory in (INVENTORIES / "one_host.yml", INVENTORIES / "two_hosts.yml"):
        wall, summary = campaign(inventory, args.trials, concurrency, workdir)
        per_host = {}
        for variant in summary["variants"]:
            per_host.setdefault(variant["host"], []).append(variant["variant"])
        rows.append((inventory.stem, wall, per_host))
        print("%-10s wall %6.1f s  %s" % (inventory.stem, wall,
                                          "; ".join("%s: %s" % (h, ", ".join(v)) for h, v in sorted(per_host.items()))))
    print("two hosts / one host: %.2f of the wall time" % (rows[1][1] / rows[0][1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
