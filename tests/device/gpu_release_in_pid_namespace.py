#!/usr/bin/env python3
"""Run on a machine with NVIDIA GPUs (not in CI): inside a PID namespace, as in an LXC guest,
fleetopt's stop waits for each GPU's memory to come back, not for PIDs that NVML cannot show.

The script re-runs itself under `unshare --pid --fork --mount-proc`. Inside, it starts a
process holding GPU memory in a session of its own (the server stand-in), records whether
nvidia-smi lists it under the namespace's PID (on an LXC guest NVML reports host PIDs; under
the device machine's gVisor on 2026-12-01 it reported the namespace's own), stops it with
fleetopt's own stop_session and GpuMemoryWatch, and prints JSON: the PIDs on both sides,
per-GPU used memory before, while held and after, when the stand-in's processes were gone,
and when its memory was back. The release check reads only per-GPU used memory, so it does
not depend on which PIDs NVML reports.

    python3 tests/device/gpu_release_in_pid_namespace.py [--gib 8]
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "plugins", "module_utils"))

import fleetopt_gpu  # noqa: E402
import fleetopt_process  # noqa: E402

HOLDER = ("import torch, time; x = torch.empty(int({gib} * 2**30), dtype=torch.uint8, device='cuda'); "
          "torch.cuda.synchronize(); print('held', flush=True); time.sleep(3600)")


def compute_app_pids():
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False).stdout.decode()
    return [int(row.split(",")[0]) for row in out.splitlines() if row.split(",")[0].strip().isdigit()]


def inside(gib):
    before = fleetopt_gpu.memory_used()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER.format(gib=gib)], stdout=subprocess.PIPE,
                              start_new_session=True)
    holder.stdout.readline()
    held = fleetopt_gpu.memory_used()
    nvml_pids = compute_app_pids()
    watch = fleetopt_gpu.GpuMemoryWatch(before, interval=0.05)
    requested = time.time()
    gone_at = {}

    def released_when_processes_gone(deadline):
        gone_at["t"] = time.time()
        return watch(deadline)

    stop = fleetopt_process.stop_session(holder.pid, port=1, term_timeout=15, release_timeout=120,
                                         gpu_release=released_when_processes_gone)
    holder.wait()
    return {
        "namespace_pid_of_holder": holder.pid,
        "nvml_pids": nvml_pids,
        "pid_matching_would_see_it": holder.pid in nvml_pids,
        "memory_mib": {"before": before, "held": held, "after": (stop["gpu_memory"] or {}).get("after_mib")},
        "processes_gone_after_s": round(gone_at["t"] - requested, 3),
        "memory_released_after_s": round(time.time() - requested, 3),
        "waited_for_memory_s": (stop["gpu_memory"] or {}).get("waited_s"),
        "released": stop["gpu_released"],
        "stop_complete": stop["complete"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gib", type=float, default=8)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        print(json.dumps(inside(args.gib), indent=2))
        return 0
    return subprocess.call(["unshare", "--pid", "--fork", "--mount-proc", sys.executable, os.path.abspath(__file__),
                            "--inside", "--gib", str(args.gib)])


if __name__ == "__main__":
    sys.exit(main())
