#!/usr/bin/env python3
"""Launch-to-launch variance on the embedded default: is it the launch, or the host's speed? (issue 32, item 1)

Launches the embedded default's baseline (the local inventory's vLLM CPU server, flags and environment) several times,
one after another, and measures each launch's trials at one concurrency through fleetopt_bench. Right before every
trial it times a fixed CPU workload in this process (the host probe: a pure-Python loop and small numpy matrix
products, the two kinds of work a tiny model's engine does), so a host that slows down for minutes shows in the probe
as it does in the trials; then the memory probe, a copy of a buffer far larger than the caches, which the CPU probe
never leaves (another guest that takes the host's memory bandwidth slows this one and not the other). Last, the rank
correlation over every trial of its throughput with each probe before it.

Prints each launch's trials and probes, with what the host did during each trial (the hypervisor's steal share,
the machine's major faults and page-cache refaults), then, for the throughput, the probe and the throughput over the
probe:
- within: the coefficient of variation of the values inside a launch (pooled);
- between: the coefficient of variation of the launch means.
Where the throughput's between-launch spread is far above the probe's, the host's speed does not explain it: the
launch does (where its processes and memory land). Where the throughput over the probe spreads as little between
launches as within them, the host does.

    .venv/bin/python tests/benchmarks/launch_or_host.py [--launches 4] [--trials 5] [--env VAR=VALUE ...]
        [--placement SERVER_CPUS:CLIENT_CPUS] [--try VAR=VALUE ...] [--try-placement SERVER_CPUS:CLIENT_CPUS]
        [--try-fixed-layout]

--env adds to the server's environment (e.g. PYTHONHASHSEED=0), to try a control. With --try, the launches
alternate in ABBA order between the server as it is (with --env) and the server with the tried environment too,
--launches of each, and the figures are printed for both, with the ratio of their mean throughputs: a control
and its reference measured in the same run, under the same drift of the host. --try-placement does the same with
the tried arm's server and client placed on CPUs of their own (fleetopt_server's `cpus`, fleetopt_bench's `cpus`;
e.g. 0:1), as campaign_server_cpus and campaign_client_cpus place them; --placement places both arms so.
--try-fixed-layout runs the tried arm's server with the same memory layout at every launch: Python's string hashes
seeded alike (PYTHONHASHSEED=0) and the kernel's address randomization off for its processes (setarch -R). Where
its launches then agree far better than the reference's, where a launch's memory and hash tables land is what
makes it fast or slow.

A probe right after a trial measures that trial's tail, not the host: on a 2-core development machine (2026-12-06)
it took 1.04 s right after a trial and 0.18-0.19 s five seconds later, with the idle server at 0.02-0.03 cores (0.20
in the seconds after the trial). So each probe waits SETTLE_S after the trial before it.
"""
import argparse
import math
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import warmup_settle  # noqa: E402
from warmup_settle import ENGINE_PYTHON, MODEL_DIR, design, loadavg  # noqa: E402
from module_runner import run_module  # noqa: E402

NAME = "launch-or-host"
SETTLE_S = 5.0


def probe():
    """Work per second of a fixed CPU workload (higher: a faster host right now)."""
    started = time.perf_counter()
    total = 0
    for i in range(1_500_000):
        total += i % 7
    matrix = np.random.default_rng(0).standard_normal((256, 256)).astype(np.float32)
    for _ in range(400):
        matrix = np.tanh(matrix @ matrix.T * 0.01)
    return 1.0 / (time.perf_counter() - started)


def memory_probe(mib=256, copies=4):
    """Bytes per second of copying a buffer far larger than the CPU's caches (higher: more memory bandwidth now).
    The CPU probe stays in cache; this one slows where other guests take the host's memory bandwidth."""
    source = np.ones(mib * 1024 * 1024 // 8)
    target = np.empty_like(source)
    started = time.perf_counter()
    for _ in range(copies):
        np.copyto(target, source)
    return copies * source.nbytes / (time.perf_counter() - started)


def rank_correlation(throughput, probes):
    """Spearman's rho (and p) over every trial of the throughput's deviation from its arm's mean against the
    probe's."""
    from scipy import stats
    xs, ys = [], []
    for arm in throughput:
        values = [v for launch in throughput[arm] for v in launch]
        speeds = [p for launch in probes[arm] for p in launch]
        xs += [v / statistics.mean(values) for v in values]
        ys += [p / statistics.mean(speeds) for p in speeds]
    return stats.spearmanr(xs, ys)


def start(args, workdir, label, arm):
    return warmup_settle.start(args, workdir, label, arm["env"], name=NAME, cpus=arm.get("server_cpus"),
                               python=arm.get("python"))


def fixed_layout_python(workdir):
    """An interpreter command for the engine that starts it, and every process it starts, without address
    randomization (the personality is inherited across fork and exec)."""
    wrapper = workdir / "python-fixed-layout"
    wrapper.write_text('#!/bin/sh\nexec setarch "$(uname -m)" -R %s "$@"\n' % ENGINE_PYTHON)
    wrapper.chmod(0o755)
    return wrapper


def stop(args, workdir):
    warmup_settle.stop(args, workdir, name=NAME)


def vmstat(*names):
    values = dict(line.split() for line in pathlib.Path("/proc/vmstat").read_text().splitlines())
    return [int(values.get(name, 0)) for name in names]


PAGING = ("pgmajfault", "workingset_refault_file")


def client_dir(workdir, client_cpus):
    """The kept client's folder: one per placement, since a kept client stays where it was started."""
    return str(workdir / ("client-%s" % client_cpus if client_cpus else "client"))


def trial(args, workdir, server, label, index, client_cpus=None):
    """The trial's output tok/s, and what the host did meanwhile: the hypervisor's steal share and the major
    faults and page-cache refaults of the whole machine."""
    paged = vmstat(*PAGING)
    result = run_module("fleetopt_bench", dict(
        design(args), engine="vllm", python=str(ENGINE_PYTHON), base_url=server["base_url"], served_model_name="tiny",
        tokenizer=str(MODEL_DIR), concurrency=[args.concurrency], trials=1, seed=index,
        served_concurrency=args.concurrency if index else 0, result_dir=str(workdir / "bench"),
        name="%s-t%d" % (label, index), server_pid=server["pid"], keep_client=True,
        client_dir=client_dir(workdir, client_cpus),
        **({"cpus": client_cpus} if client_cpus else {})), timeout=900)
    [level] = result.get("levels") or [{}]
    if result.get("failed") or level.get("status") != "ok":
        raise SystemExit("%s trial %d failed: %s" % (label, index + 1, result.get("msg") or level.get("reason")))
    faults, refaults = (after - before for after, before in zip(vmstat(*PAGING), paged))
    return level["metrics"]["output_throughput"], "steal %.1f %%, %d major faults, %d refaults" % (
        100 * (level.get("host_steal_share") or 0), faults, refaults)


def cv(values):
    return statistics.stdev(values) / statistics.mean(values) * 100 if len(values) > 1 else math.nan


def spreads(launches):
    """Pooled within-launch CV and the CV of the launch means, in percent."""
    within = math.sqrt(statistics.mean([cv(values) ** 2 for values in launches]))
    return within, cv([statistics.mean(values) for values in launches])


def abba(arms, launches):
    """Each arm `launches` times, in rounds of A B then B A, so a drift of the host falls on both alike."""
    order = []
    for round_number in range(launches):
        order += arms if round_number % 2 == 0 else arms[::-1]
    return order


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launches", type=int, default=4)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--port", type=int, default=8795)
    parser.add_argument("--startup-timeout", type=float, default=600)
    parser.add_argument("--env", action="append", default=[], metavar="VAR=VALUE")
    parser.add_argument("--try", dest="tried", action="append", default=[], metavar="VAR=VALUE")
    parser.add_argument("--try-placement", metavar="SERVER_CPUS:CLIENT_CPUS")
    parser.add_argument("--placement", metavar="SERVER_CPUS:CLIENT_CPUS")
    parser.add_argument("--try-fixed-layout", action="store_true")
    args = parser.parse_args()
    if args.launches < 2 or args.trials < 2:
        parser.error("--launches and --trials must be 2 or more: the figures compare launches and their trials")
    bad = [item for item in args.env + args.tried if "=" not in item]
    if bad:
        parser.error("--env and --try take VAR=VALUE, not %s" % ", ".join(bad))
    for option, value in (("--try-placement", args.try_placement), ("--placement", args.placement)):
        if value and value.count(":") != 1:
            parser.error("%s takes SERVER_CPUS:CLIENT_CPUS (e.g. 0:1), not %s" % (option, value))
    env = dict(item.split("=", 1) for item in args.env)
    arms = {"as it is": {"env": env}}
    if args.tried or args.try_placement or args.try_fixed_layout:
        arms["tried"] = {"env": dict(env, **dict(item.split("=", 1) for item in args.tried))}
    if args.placement:
        for arm in arms.values():
            arm["server_cpus"], arm["client_cpus"] = args.placement.split(":")
    if args.try_placement:
        arms["tried"]["server_cpus"], arms["tried"]["client_cpus"] = args.try_placement.split(":")
    if args.try_fixed_layout:
        arms["tried"]["env"]["PYTHONHASHSEED"] = "0"
    missing = [str(p) for p in (ENGINE_PYTHON, MODEL_DIR / "config.json") if not p.exists()]
    if missing:
        print("the local engine is not installed (missing %s); run playbooks/setup_local.yml" % ", ".join(missing))
        return 1
    order = abba(list(arms), args.launches)
    throughput, probes = {arm: [] for arm in arms}, {arm: [] for arm in arms}
    memory = {arm: [] for arm in arms}
    probe()  # numpy's first products set up its threads and caches; that one is not the host's speed
    memory_probe()
    with tempfile.TemporaryDirectory(prefix="fleetopt-launch-or-host-") as tmp:
        workdir = pathlib.Path(tmp)
        if args.try_fixed_layout:
            arms["tried"]["python"] = str(fixed_layout_python(workdir))
        try:
            for launch, arm in enumerate(order):
                label = "launch%d" % (launch + 1)
                server = start(args, workdir, label, arms[arm])
                values, speeds, bandwidths, hosts = [], [], [], []
                for index in range(args.trials):
                    time.sleep(SETTLE_S)
                    speeds.append(probe())
                    bandwidths.append(memory_probe())
                    value, host = trial(args, workdir, server, label, index, arms[arm].get("client_cpus"))
                    values.append(value)
                    hosts.append(host)
                stop(args, workdir)
                throughput[arm].append(values)
                probes[arm].append(speeds)
                memory[arm].append(bandwidths)
                print("%s%s (load average %s): output tok/s %s; probe %s; memory GB/s %s" % (
                    label, " (%s)" % arm if len(arms) > 1 else "", loadavg(), ", ".join("%.1f" % v for v in values),
                    ", ".join("%.3f" % s for s in speeds), ", ".join("%.2f" % (b / 1e9) for b in bandwidths)),
                    flush=True)
                print("  meanwhile: %s" % "; ".join(hosts), flush=True)
        finally:
            stop(args, workdir)
            for arm in arms.values():
                run_module("fleetopt_bench", dict(engine="vllm", client_dir=client_dir(workdir, arm.get("client_cpus")),
                                                  state="client_released"))
    for arm in arms:
        ratio = [[v / s for v, s in zip(values, speeds)] for values, speeds in zip(throughput[arm], probes[arm])]
        print("\n%d launches of %d trials at c=%d (%s: %s); CV in %%:" % (
            args.launches, args.trials, args.concurrency, arm, arms[arm]))
        for name, data in (("output tok/s", throughput[arm]), ("host probe", probes[arm]),
                           ("memory probe", memory[arm]), ("output tok/s / probe", ratio)):
            within, between = spreads(data)
            print("  %-22s within a launch %5.1f   between launches %5.1f" % (name, within, between))
    for name, data in (("host probe", probes), ("memory probe", memory)):
        rho, p_value = rank_correlation(throughput, data)
        print("each trial's throughput against the %s before it (both as a share of their arm's mean): Spearman rho "
              "%.2f (p %.3f)" % (name, rho, p_value))
    if len(arms) > 1:
        means = {arm: statistics.mean(statistics.mean(values) for values in throughput[arm]) for arm in arms}
        print("\nmean output tok/s: tried %.1f, as it is %.1f; ratio %.3f" % (
            means["tried"], means["as it is"], means["tried"] / means["as it is"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
