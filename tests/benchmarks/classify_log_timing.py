#!/usr/bin/env python3
"""How long `fleetopt classify-log` takes per log (issue 11: under 1 s per log).

Times the analysis itself (`fleetopt.classify.analyse`: read, watch, classify, time the
phases) on every SGLang fixture log and on a stress log (the 4-hour colour log with a TP8
crash appended, repeated to --stress-mb), best of --repeat runs each; then the whole command
line once per fixture family as a subprocess, whose time includes the interpreter and
fleetopt's imports. Prints one line per log (wall and CPU seconds) and a summary; exits 1
if an analysis takes 1 s of CPU or more (CPU, not wall: the machine may be shared, and the
load average is printed beside the figures).

    .venv/bin/python tests/benchmarks/classify_log_timing.py [--repeat 3] [--stress-mb 4]
"""
import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fleetopt import classify  # noqa: E402
from fleetopt.paths import engine_spec  # noqa: E402

LOGS = ROOT / "tests" / "fixtures" / "sglang" / "logs"
LIMIT_S = 1.0


def best_of(path, spec, repeat):
    """Best wall time and best CPU time of `repeat` analyses (CPU time is what the analysis
    costs; wall time also shows how busy the machine was)."""
    walls, cpus = [], []
    result = None
    for _ in range(repeat):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = classify.analyse(str(path), spec)
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
    return min(walls), min(cpus), result


def stress_log(directory, megabytes):
    healthy = (LOGS / "healthy_0.5.9_long_colour.log").read_text(encoding="utf-8")
    crash = (LOGS / "seed_step1_nvcc_subprocess.log").read_text(encoding="utf-8")
    body = healthy
    while len(body.encode("utf-8")) < megabytes * 1024 * 1024:
        body += healthy
    path = pathlib.Path(directory) / "stress.log"
    path.write_text(body + crash, encoding="utf-8", newline="")
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--stress-mb", type=float, default=4.0)
    args = parser.parse_args()
    spec = engine_spec("sglang")
    logs = sorted(LOGS.rglob("*.log"))
    worst = (0.0, None)
    figures = []
    print("%-50s %7s %7s %7s %7s  %s" % ("log", "KiB", "lines", "wall_s", "cpu_s", "status/class"))
    with tempfile.TemporaryDirectory() as tmp:
        for path in logs + [stress_log(tmp, args.stress_mb)]:
            seconds, cpu, result = best_of(path, spec, args.repeat)
            figures.append((seconds, cpu))
            worst = max(worst, (seconds, path.name))
            print("%-50s %7.0f %7d %7.3f %7.3f  %s/%s" % (
                str(path.relative_to(LOGS)) if LOGS in path.parents else path.name,
                path.stat().st_size / 1024, result["lines"], seconds, cpu, result["status"], result["failure_class"]))
        cli = []
        for path in (LOGS / "seed_step3_fullgraph_disable.log", LOGS / "families" / "main_module_unknown.log"):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "fleetopt.cli", "classify-log", "--engine", "sglang", str(path)],
                           cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
            cli.append(time.perf_counter() - started)
    print()
    print("analysis: %d logs, median %.3f s wall, max %.3f s wall (%s), max %.3f s CPU; limit %.1f s per log"
          % (len(figures), statistics.median(f[0] for f in figures), worst[0], worst[1],
             max(f[1] for f in figures), LIMIT_S))
    print("load average while measuring: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    print("whole command line (interpreter + imports + analysis): %s s"
          % ", ".join("%.2f" % c for c in cli))
    return 0 if max(f[1] for f in figures) < LIMIT_S else 1


if __name__ == "__main__":
    sys.exit(main())
