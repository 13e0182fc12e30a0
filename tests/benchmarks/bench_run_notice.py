#!/usr/bin/env python3
"""How soon fleetopt_bench notices that a run of its kept client has finished.

The module watches the client's done file every 10 ms between its checks of the server and the
client (every 0.2 s). Against a scripted client (tests/scripted_process.py) that answers at once,
it prints the module's time around each run beyond the client's own (duration_s - client_run_s),
median and slowest, and the median as a share of the interval between the server checks: well
under 0.5 means a finished run is noticed at once, not at the next check (target: <= 0.4).

    .venv/bin/python tests/benchmarks/bench_run_notice.py [--runs 12]
"""
import argparse
import ast
import pathlib
import statistics
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import FIXTURES, scripted_python  # noqa: E402
from module_runner import run_module  # noqa: E402



def module_constant(name):
    tree = ast.parse((ROOT / "plugins" / "modules" / "fleetopt_bench.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return ast.literal_eval(node.value)
    raise SystemExit("fleetopt_bench.py has no %s" % name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    watch_interval_s = module_constant("WATCH_INTERVAL_S")
    with tempfile.TemporaryDirectory() as folder:
        result_file = str(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json")
        python = scripted_python(folder, {"lines": [], "client_result": result_file, "exit_code": 0})
        result = run_module("fleetopt_bench", dict(
            engine="vllm", python=python, base_url="http://127.0.0.1:9", served_model_name="m", tokenizer=folder,
            concurrency=[1], trials=args.runs, result_dir=folder + "/bench", name="v", max_warmup_runs=0))
    if result.get("failed"):
        sys.exit("the benchmark module failed: %s" % result.get("msg"))
    # The first run starts the kept client; the others reuse it.
    gaps = [lv["duration_s"] - lv["client_run_s"] for lv in result["levels"][1:]]
    median = statistics.median(gaps)
    print("runs: %d (after the one that starts the client)" % len(gaps))
    print("module time around a run beyond the client's: median %.1f ms, slowest %.1f ms"
          % (median * 1000, max(gaps) * 1000))
    print("median / interval between server checks (%.1f s): %.2f (target <= 0.4)" % (watch_interval_s, median / watch_interval_s))


if __name__ == "__main__":
    main()
