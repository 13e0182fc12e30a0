"""The kept benchmark client's preload on the real engine: the SGLang adapter's client modules imported by
fleetopt_bench_client in its low-priority thread, then a run of the client's module (`--help`, which needs no
server) in the same client, beside a run of the same module in a client that preloaded nothing.

Usage (the engine's Python, on the device, after campaign.sh's set-up): client_preload.py ENGINE_PYTHON FOLDER
Prints one JSON object: the preload's answer (modules, failures, priority, seconds) and both runs' seconds."""
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_kept_client import KeptClient  # noqa: E402
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_sglang import SglangAdapter  # noqa: E402


def client(python, folder):
    """A kept client started as fleetopt_bench starts one."""
    kept = KeptClient({"client_dir": folder, "result_dir": folder, "name": "preload", "python": python,
                       "client_idle_s": 120}, {})
    kept.start(dict(os.environ))
    return kept


def answer(done, timeout_s=300):
    deadline = time.time() + timeout_s
    while not os.path.exists(done):
        if time.time() > deadline:
            raise SystemExit("no answer in %s after %d s" % (done, timeout_s))
        time.sleep(0.05)
    with open(done) as handle:
        return json.load(handle)


def main(python, folder):
    version = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('sglang'))"],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout.strip()
    adapter = SglangAdapter(version)
    module = adapter.bench_module()
    figures = {"sglang": version, "modules": list(adapter.bench_preload_modules())}
    # The module's files in the page cache first: neither client pays the disk.
    subprocess.run([python, "-m", module, "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    clients = []
    try:
        cold = os.path.join(folder, "cold")
        clients.append(client(python, cold))
        run = answer(clients[-1].submit(module, ["--help"], os.path.join(cold, "help.out")))
        figures["run_without_preload_s"] = round(run["ended_at"] - run["started_at"], 2)
        figures["run_without_preload_exit"] = run["exit_code"]
        preloaded = os.path.join(folder, "preloaded")
        clients.append(client(python, preloaded))
        started = time.time()
        preload = answer(clients[-1].preload(adapter.bench_preload_modules()))
        figures["preload"] = dict(preload, seconds=round(preload["ended_at"] - preload["started_at"], 2),
                                  waited_s=round(time.time() - started, 2))
        run = answer(clients[-1].submit(module, ["--help"], os.path.join(preloaded, "help.out")))
        figures["run_after_preload_s"] = round(run["ended_at"] - run["started_at"], 2)
        figures["run_after_preload_exit"] = run["exit_code"]
    finally:
        for kept in clients:
            kept.kill()
    print(json.dumps(figures, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
