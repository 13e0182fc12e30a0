"""The kept benchmark client's preload on the real engine: the SGLang adapter's client modules imported by
fleetopt_bench_client in its low-priority thread, then a run of the client's module (`--help`, which needs no
server) in the same client, beside a run of the same module in a client that preloaded nothing.

Usage (the engine's Python, on the device, after campaign.sh's set-up): client_preload.py ENGINE_PYTHON FOLDER
Prints one JSON object: the preload's answer (modules, failures, priority, seconds) and both runs' seconds."""
import inspect
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_bench_client  # noqa: E402
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_sglang import SglangAdapter  # noqa: E402


def client(python, folder):
    os.makedirs(folder)
    program = os.path.join(folder, "fleetopt_bench_client.py")
    with open(program, "w") as handle:
        handle.write(inspect.getsource(fleetopt_bench_client))
    log = open(os.path.join(folder, "client.log"), "ab")
    return subprocess.Popen([python, program, folder, "120"], cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def ask(folder, number, payload, timeout_s=300):
    fleetopt_bench_client.write_json(os.path.join(folder, "request-%d.json" % number), payload)
    done, deadline = os.path.join(folder, "done-%d.json" % number), time.time() + timeout_s
    while not os.path.exists(done):
        if time.time() > deadline:
            raise SystemExit("no answer to request %d in %d s" % (number, timeout_s))
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
    procs = []
    try:
        cold = os.path.join(folder, "cold")
        procs.append(client(python, cold))
        run = ask(cold, 1, {"module": module, "args": ["--help"], "output": os.path.join(cold, "help.out")})
        figures["run_without_preload_s"] = round(run["ended_at"] - run["started_at"], 2)
        figures["run_without_preload_exit"] = run["exit_code"]
        kept = os.path.join(folder, "preloaded")
        procs.append(client(python, kept))
        started = time.time()
        preload = ask(kept, 1, {"preload": list(adapter.bench_preload_modules())})
        figures["preload"] = dict(preload, seconds=round(preload["ended_at"] - preload["started_at"], 2),
                                  waited_s=round(time.time() - started, 2))
        run = ask(kept, 2, {"module": module, "args": ["--help"], "output": os.path.join(kept, "help.out")})
        figures["run_after_preload_s"] = round(run["ended_at"] - run["started_at"], 2)
        figures["run_after_preload_exit"] = run["exit_code"]
    finally:
        for proc in procs:
            proc.kill()
    print(json.dumps(figures, indent=1, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
