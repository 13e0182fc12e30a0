#!/usr/bin/env python3
"""What the benchmark client costs beside what it measures, from a campaign's cells.

Each cell records `benchmark.client_wall_s` (wall time of the benchmark's module calls: client
start-up, warm-ups, runs) and `benchmark.measured_s` (the sum of the durations the client
measured; a new server's warm-up runs are not, their wall time is `benchmark.warmup_s`). The
client overhead is (client wall - measured) / client wall over the campaign; issue 12's
reference: 73 % when every trial started a new client (526 s for 144 s measured).

    .venv/bin/python tests/benchmarks/benchmark_cost.py results/<campaign-id>
    .venv/bin/python tests/benchmarks/benchmark_cost.py --run --tier 1   # runs a tier-1 campaign first

With --run the campaign's wall time is printed too, so the tier-1 figure before and after a change
is one command on each revision.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
REFERENCE_OVERHEAD = 0.73


def cost(campaign_dir):
    wall = measured = 0.0
    rows = []
    for path in sorted(pathlib.Path(campaign_dir, "cells").glob("*/*.json")):
        cell = json.loads(path.read_text())
        bench = cell.get("benchmark") or {}
        if bench.get("client_wall_s") is None:
            continue
        cpu = [lv.get("client_cpu_share") for lv in cell.get("levels") or [] if lv.get("client_cpu_share") is not None]
        bound = sum(1 for lv in cell.get("levels") or [] if lv.get("client_bound"))
        rows.append((path.parent.name, path.stem, bench["client_wall_s"], bench["measured_s"] or 0.0,
                     max(cpu) if cpu else None, bound))
        wall += bench["client_wall_s"]
        measured += bench["measured_s"] or 0.0
    return rows, wall, measured


def breakdown(campaign_dir):
    """Where the client's time went that it did not measure, summed over the campaign's runs.

    - module calls: the cell's client wall time beyond its client's runs (Ansible shipping and
      starting the module once per level - once per run before the level became one call -,
      watching the server, releasing the client);
    - warm-ups: the requests sent before a level's measured ones (only where the level is new to
      the server): inside the run, estimated as the measured duration times warm-ups per measured
      prompt (same prompts, same concurrency); in a short run of their own (warmup_output_len), the
      duration that run measured, its set-up counted as any run's;
    - warm-up runs: a new server's whole runs until it settled (benchmark.warmup), their client
      time, less the client's start where one of them started it;
    - client start: a run that started the client, beyond its warm-ups, set-up and measurement
      (the set-up estimated as the median of the campaign's other runs);
    - per-run set-up: the rest of each run (dataset, tokenizer, result file).
    """
    runs, warmup_runs, module = [], [], 0.0
    for path in pathlib.Path(campaign_dir, "cells").glob("*/*.json"):
        cell = json.loads(path.read_text())
        if (cell.get("benchmark") or {}).get("client_wall_s") is None:
            continue
        module += cell["benchmark"]["client_wall_s"]
        for level in cell.get("levels") or []:
            module -= level.get("client_run_s") or 0.0
            metrics = level.get("metrics") or {}
            short = level.get("warmup_run") or {}
            if short.get("client_run_s") is not None:
                module -= short["client_run_s"]
                runs.append({"warmup": short.get("measured_s") or 0.0,
                             "rest": short["client_run_s"] - (short.get("measured_s") or 0.0),
                             "started": short.get("client_started")})
            if level.get("status") == "ok" and level.get("client_run_s") is not None and metrics.get("duration_s"):
                measured = metrics["duration_s"]
                in_run = 0 if short.get("status") == "ok" else level.get("warmups") or 0
                warmup = measured * in_run / max(level.get("num_prompts") or 1, 1)
                runs.append({"warmup": warmup, "rest": level["client_run_s"] - measured - warmup,
                             "started": level.get("client_started")})
        for record in cell["benchmark"].get("warmup") or []:
            for run in record.get("runs") or []:
                module -= run.get("client_run_s") or 0.0
                warmup_runs.append(run)
    if not runs:
        return None
    setups = sorted(r["rest"] for r in runs if not r["started"]) or [0.0]
    setup = setups[len(setups) // 2]
    # A warm-up run that started the client paid its start: beyond its measured time and a run's set-up.
    started = [r for r in warmup_runs if r.get("client_started") and r.get("client_run_s") is not None]
    warmup_start = sum(r["client_run_s"] - (r.get("measured_s") or 0.0) - setup for r in started)
    parts = {"module calls": module, "warm-ups": sum(r["warmup"] for r in runs),
             "warm-up runs": sum(r.get("client_run_s") or 0.0 for r in warmup_runs) - warmup_start,
             "client start": sum(r["rest"] - setup for r in runs if r["started"]) + warmup_start,
             "per-run set-up": sum(r["rest"] for r in runs if not r["started"]) + setup * sum(1 for r in runs if r["started"])}
    parts["client starts (count)"] = sum(1 for r in runs if r["started"]) + len(started)
    return parts


def run_campaign(args, workdir):
    command = [str(pathlib.Path(sys.executable).parent / "fleetopt"), "run", "--campaign-id", "cost",
               "--results", str(workdir / "results"), "--artifacts", str(workdir / "artifacts"),
               "-e", "campaign_state_dir=%s" % (workdir / "state"), "-e", "campaign_port=%d" % args.port, "--quiet"]
    command += ["--tier", str(args.tier)] if args.only is None else ["--only", args.only]
    started = time.time()
    subprocess.run(command, cwd=ROOT, check=False)
    return workdir / "results" / "cost", time.time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("campaign", nargs="?", help="a campaign folder (results/<id>)")
    parser.add_argument("--run", action="store_true", help="run a campaign on the embedded default first")
    parser.add_argument("--tier", type=int, default=1)
    parser.add_argument("--only")
    parser.add_argument("--port", type=int, default=8790)
    args = parser.parse_args()
    elapsed = None
    if args.run:
        campaign, elapsed = run_campaign(args, pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-cost-")))
    elif args.campaign:
        campaign = pathlib.Path(args.campaign)
    else:
        parser.error("give a campaign folder or --run")
    rows, wall, measured = cost(campaign)
    if not rows:
        raise SystemExit("no cell in %s records client_wall_s (campaigns before the kept client do not)" % campaign)
    print("%-12s %-28s %10s %10s %9s %8s" % ("host", "cell", "client s", "measured", "max cpu", "bound"))
    for host, name, cell_wall, cell_measured, cpu, bound in rows:
        print("%-12s %-28s %10.1f %10.1f %9s %8d" % (host, name, cell_wall, cell_measured,
                                                     "-" if cpu is None else "%.2f" % cpu, bound))
    overhead = (wall - measured) / wall if wall else 0.0
    print("\nclient wall %.1f s, measured %.1f s: client overhead %.0f %% (reference, one client per trial: %.0f %%; "
          "goal <= 10 %%)" % (wall, measured, overhead * 100, REFERENCE_OVERHEAD * 100))
    parts = breakdown(campaign)
    if parts:
        print("not measured, by cause: " + ", ".join(
            "%s %.1f s (%.0f %% of client wall)" % (k, v, v / wall * 100) if "count" not in k else "%s %d" % (k, v)
            for k, v in parts.items()))
        print("client overhead without the warm-ups the design sends on purpose: %.0f %%"
              % ((wall - measured - parts["warm-ups"] - parts["warm-up runs"]) / wall * 100))
    if elapsed is not None:
        print("campaign wall time: %.0f s (%s)" % (elapsed, campaign))


if __name__ == "__main__":
    main()
