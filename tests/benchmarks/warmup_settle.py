#!/usr/bin/env python3
"""Does a warm-up until the server has settled take the first trial's deficit away? On the real local engine (issue 12).

Launches the embedded default's baseline (vLLM CPU, the catalog's baseline flags with the local
inventory's server flags and environment) through the fleetopt_server module and benchmarks it
with the fleetopt_bench module at one concurrency (4, as tests/fixtures/planted_effects.yml), the
embedded default's benchmark design (prompts, input and output lengths, warm-up per concurrency):

1. `fixed` (the fresh server): N trials after the old fixed warm-up (max_warmup_runs 0: at least
   min_warmups requests inside the first trial's run);
2. `settled` (the same server): warm-up runs until two consecutive ones agree within
   --settle-pct (at most --max-warmup-runs), then N trials with seeds of their own;
3. with --launches 2, `cold-settled`: a second launch, the warm-up runs on the fresh server, then
   N trials: the settled warm-up where it matters, against `fixed`.

Prints per phase each warm-up run's and each trial's output throughput, the first trial's deficit
against the mean of the others, the trials' spread, and the warm-up's cost in seconds (the runs'
wall time; the old warm-up's, estimated as its requests' share of the first trial's measured
time) beside the client time and measured time (client overhead: the issue's goal is <= 10 %).
The machine may be shared: the load average is printed beside the figures. Exits 1 if a launch fails.

    .venv/bin/python tests/benchmarks/warmup_settle.py [--trials 6] [--launches 2] [--port 8794]
"""
import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

from compile_cache import ENGINE_PYTHON, MODEL_DIR, load, variant_launch  # noqa: E402
from module_runner import run_module  # noqa: E402


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def design(args):
    """The embedded default's benchmark settings, as its inventory sets them."""
    inventory = load("inventory/local/group_vars/fleet/campaign.yml")
    return dict(input_len=inventory["campaign_bench_input_len"], output_len=inventory["campaign_bench_output_len"],
                prompts_per_concurrency=inventory["campaign_bench_prompts_per_concurrency"],
                min_prompts=inventory["campaign_bench_min_prompts"],
                warmup_per_concurrency=inventory["campaign_bench_warmup_per_concurrency"])


def start(args, workdir, label, env=None, name="warmup-settle", cpus=None, python=None):
    """The embedded default's baseline launched through fleetopt_server (env: added to its environment; cpus: the
    CPUs it is placed on; python: another interpreter command for the engine, e.g. a wrapper)."""
    flags, base_env = variant_launch(None)
    started = dict(name=name, port=args.port, run_dir=str(workdir / "run"), stop_timeout=15, engine="vllm",
                   python=str(python or ENGINE_PYTHON), model=str(MODEL_DIR), served_model_name="tiny", flags=flags,
                   env=dict(base_env, **(env or {})), engine_spec=load("library/engines/vllm.yml"),
                   log_path=str(workdir / ("%s.log" % label)), startup_timeout=args.startup_timeout,
                   **({"cpus": cpus} if cpus else {}))
    result = run_module("fleetopt_server", started, timeout=args.startup_timeout + 120)
    server = result.get("server") or {}
    if server.get("status") != "ready":
        stop(args, workdir, name)
        raise SystemExit("%s launch failed: %s (log: %s)" % (label, result.get("msg"), started["log_path"]))
    return server


def stop(args, workdir, name="warmup-settle"):
    stopped = run_module("fleetopt_server", dict(name=name, port=args.port, run_dir=str(workdir / "run"),
                                                 stop_timeout=15, state="stopped"))
    if stopped.get("failed"):
        print("the server could not be stopped: %s" % stopped.get("msg"), file=sys.stderr)


def phase(args, workdir, server, label, seed, warmup_runs):
    """One fleetopt_bench call at --concurrency: the trials and the warm-up runs (max_warmup_runs)."""
    began = time.time()
    result = run_module("fleetopt_bench", dict(
        design(args), engine="vllm", python=str(ENGINE_PYTHON), base_url=server["base_url"], served_model_name="tiny",
        tokenizer=str(MODEL_DIR), concurrency=[args.concurrency], trials=args.trials, seed=seed,
        max_warmup_runs=warmup_runs, warmup_settle_pct=args.settle_pct, served_concurrency=0,
        result_dir=str(workdir / "bench"), name=label, server_pid=server["pid"], keep_client=True,
        client_dir=str(workdir / "client")), timeout=1800)
    if result.get("failed"):
        raise SystemExit("%s: the benchmark failed: %s" % (label, result.get("msg")))
    return result, time.time() - began


def report(label, result, call_s):
    """Print a phase's figures; return its row for the summary."""
    trials = [lv for lv in result["levels"] if lv["status"] == "ok"]
    values = [lv["metrics"]["output_throughput"] for lv in trials]
    print("\n%s (load average %s):" % (label, loadavg()))
    warmup_s = 0.0
    for record in result.get("warmup") or []:
        for run in record["runs"]:
            print("  warm-up run %d: %s%s, %.1f s" % (
                run["warmup_run"], "%.1f output tok/s" % run["output_throughput"] if run["status"] == "ok"
                else "%s (%s)" % (run["status"], run["reason"]),
                "" if run.get("change_pct") is None else " (%.1f %% from the run before)" % run["change_pct"],
                run["duration_s"]))
        outcome = "settled" if record["settled"] else "not settled"
        print("  warm-up %s: %s; %.1f s" % (outcome, record["reason"], record["duration_s"]))
        warmup_s += record["duration_s"]
    for lv in result["levels"]:
        print("  trial %d: %s (%d warm-up requests before it; run %.1f s, measured %.1f s)" % (
            lv["trial"], "%.1f output tok/s" % lv["metrics"]["output_throughput"] if lv["status"] == "ok"
            else "%s (%s)" % (lv["status"], lv.get("reason")), lv.get("warmups") or 0, lv.get("duration_s") or 0.0,
            (lv.get("metrics") or {}).get("duration_s") or 0.0))
    if not result.get("warmup") and trials and trials[0].get("warmups"):
        # The old warm-up's requests were sent in the first trial's run: their share of its measured time.
        warmup_s = trials[0]["metrics"]["duration_s"] * trials[0]["warmups"] / trials[0]["num_prompts"]
        print("  fixed warm-up: %d requests inside trial 1's run, about %.1f s" % (trials[0]["warmups"], warmup_s))
    if len(values) < 2:
        print("  too few trials succeeded for the figures")
        return None
    rest = statistics.mean(values[1:])
    deficit = (values[0] / rest - 1) * 100
    spread = statistics.stdev(values) / statistics.mean(values) * 100
    measured = sum(lv["metrics"]["duration_s"] for lv in trials)
    client = sum(lv.get("duration_s") or 0.0 for lv in result["levels"]) + sum(
        r["duration_s"] for w in result.get("warmup") or [] for r in w["runs"])
    started = [lv for lv in result["levels"] if lv.get("client_started")] + [
        r for w in result.get("warmup") or [] for r in w["runs"] if r.get("client_started")]
    print("  first trial %+.1f %% against the mean of the others (%.1f); trials' spread (CV) %.1f %%; warm-up %.1f s; "
          "client %.1f s for %.1f s measured: overhead %.0f %%%s; module call %.1f s" % (
              deficit, rest, spread, warmup_s, client, measured, (client - measured) / client * 100,
              " (the client's start included)" if started else "", call_s))
    return label, values, deficit, spread, warmup_s


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--launches", type=int, choices=(1, 2), default=1)
    parser.add_argument("--settle-pct", type=float, default=10.0)
    parser.add_argument("--max-warmup-runs", type=int, default=6)
    parser.add_argument("--port", type=int, default=8794)
    parser.add_argument("--startup-timeout", type=float, default=600)
    parser.add_argument("--keep", action="store_true", help="keep the logs and raw results")
    args = parser.parse_args()
    missing = [str(p) for p in (ENGINE_PYTHON, MODEL_DIR / "config.json") if not p.exists()]
    if missing:
        print("the local engine is not installed (missing %s); run playbooks/setup_local.yml" % ", ".join(missing))
        return 1
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-warmup-settle-"))
    print("design %s, concurrency %d, %d trials per phase; settle within %g %%, at most %d warm-up runs; load average %s"
          % (design(args), args.concurrency, args.trials, args.settle_pct, args.max_warmup_runs, loadavg()), flush=True)
    began = time.time()
    rows = []
    try:
        server = start(args, workdir, "launch1")
        print("launch 1 ready in %.1f s" % server["startup_s"], flush=True)
        try:
            rows.append(report("fixed (fresh server, old fixed warm-up)", *phase(args, workdir, server, "fixed", 0, 0)))
            rows.append(report("settled (same server, warm-up runs first)",
                               *phase(args, workdir, server, "settled", 100, args.max_warmup_runs)))
        finally:
            stop(args, workdir)
        if args.launches == 2:
            server = start(args, workdir, "launch2")
            print("\nlaunch 2 ready in %.1f s" % server["startup_s"], flush=True)
            try:
                rows.append(report("cold-settled (fresh server, warm-up runs first)",
                                   *phase(args, workdir, server, "cold", 200, args.max_warmup_runs)))
            finally:
                stop(args, workdir)
    finally:
        run_module("fleetopt_bench", dict(engine="vllm", client_dir=str(workdir / "client"), state="client_released"))
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n%-50s %9s %8s %10s  %s" % ("phase", "1st trial", "CV", "warm-up s", "trials (output tok/s)"))
    for row in rows:
        if row:
            label, values, deficit, spread, warmup_s = row
            trials = " ".join("%.1f" % v for v in values)
            print("%-50s %+8.1f%% %7.1f%% %10.1f  %s" % (label, deficit, spread, warmup_s, trials))
    print("wall time %.0f s; load average after measuring: %s" % (time.time() - began, loadavg()))
    if args.keep:
        print("logs and raw results kept in %s" % workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
