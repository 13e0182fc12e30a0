#!/usr/bin/env python3
"""Run on a machine with NVIDIA GPUs (not in CI): GPU facts through fleetopt's own parser, and
how long fleetopt's stop waits until a stopped process no longer holds GPU memory.

Prints JSON: the facts fleetopt_plan records, and for a process holding GPU memory in a
session of its own: seconds from the stop request until nvidia-smi no longer lists it.

    python3 tests/device/gpu_release_check.py [--gib 20]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "plugins", "module_utils"))

import fleetopt_gpu  # noqa: E402
import fleetopt_process  # noqa: E402

HOLDER_TORCH = "import torch, time; x = torch.empty(int({gib} * 2**30), dtype=torch.uint8, device='cuda'); print('held', flush=True); time.sleep(3600)"
HOLDER_CU = r"""
#include <cuda_runtime.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) { void *p; size_t n = (size_t)atof(argv[1]) * (1ull << 30);
  if (cudaMalloc(&p, n) != cudaSuccess) return 1; printf("held\n"); fflush(stdout); sleep(3600); return 0; }
"""


def holder_command(gib):
    try:
        subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return [sys.executable, "-c", HOLDER_TORCH.format(gib=gib)], "torch"
    except (subprocess.CalledProcessError, OSError):
        pass
    workdir = tempfile.mkdtemp()
    source = os.path.join(workdir, "hold.cu")
    with open(source, "w") as handle:
        handle.write("#include <stdlib.h>\n" + HOLDER_CU)
    subprocess.run(["nvcc", "-o", os.path.join(workdir, "hold"), source], check=True)
    return [os.path.join(workdir, "hold"), str(gib)], "cuda"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--gib", type=float, default=20)
    args = parser.parse_args()
    report = {"facts": fleetopt_gpu.gpu_facts()}
    argv, kind = holder_command(args.gib)
    holder = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
    holder.stdout.readline()
    listed = fleetopt_process.wait_until(lambda: holder.pid in (fleetopt_process.gpu_compute_pids() or []), 60, 0.05)
    requested = time.time()
    stop = fleetopt_process.stop_session(holder.pid, port=1, term_timeout=15, release_timeout=120)
    holder.wait()
    report["release"] = {"holder": kind, "gib": args.gib, "listed_before_stop": listed,
                         "stop": stop, "request_to_released_s": round(time.time() - requested, 3),
                         "listed_after": holder.pid in (fleetopt_process.gpu_compute_pids() or [])}
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
