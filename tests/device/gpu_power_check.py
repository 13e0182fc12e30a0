#!/usr/bin/env python3
"""Does the power sampler read real figures under load? A device check on a GPU host (issue 13).

Runs fleetopt_power.PowerSampler (what fleetopt_bench samples during every measured run) over
three windows on GPU 0: idle, a load of bf16 matrix products through PyTorch, and idle again.
Prints each window's mean board power, its sample count, and the load's power over the idle
power measured in the same run; then a window that straddles the load's start, to show the
sampler follows the change within a sample or two.

    python3 tests/device/gpu_power_check.py [--seconds 6] [--interval-ms 200]

Needs nvidia-smi and PyTorch with a GPU (run on the device machine; not part of CI). Exits 1 if
the load does not read at least 1.5x the idle power, or a window has too few samples.
"""
import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_power import PowerSampler  # noqa: E402


def load_gpu(seconds):
    import torch

    matrix = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    products = 0
    ended = time.time() + seconds
    while time.time() < ended:
        for _ in range(10):
            matrix @ matrix
        torch.cuda.synchronize()
        products += 10
    return products * 2 * 8192 ** 3


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--interval-ms", type=int, default=200)
    args = parser.parse_args()
    import torch

    torch.zeros(1, device="cuda")  # the CUDA context first: its start is not part of any window
    sampler = PowerSampler(interval_ms=args.interval_ms)
    if not sampler.start():
        print("no power readings: %s" % sampler.why_not)
        return 1
    try:
        time.sleep(1.0)
        idle_start = time.time()
        time.sleep(args.seconds)
        load_start = time.time()
        flops = load_gpu(args.seconds)
        load_end = time.time()
        time.sleep(1.0)
        idle_start_after = time.time()
        time.sleep(args.seconds)
        idle_end = time.time()
    finally:
        sampler.stop()
    windows = [("idle before", idle_start, load_start), ("load", load_start, load_end),
               ("idle after", idle_start_after, idle_end),
               ("straddling the load's start", load_start - args.seconds / 2, load_start + args.seconds / 2)]
    print("sampler: %s" % sampler.description())
    print("load: %.0f TFLOP/s of bf16 matrix products" % (flops / (load_end - load_start) / 1e12))
    found = {}
    for name, start, end in windows:
        found[name] = sampler.window(start, end)
        print("%-28s %6.2f s  %s" % (name, end - start, found[name]))
    bad = [name for name, power in found.items() if power["status"] != "ok"]
    if bad:
        print("too few samples in: %s" % ", ".join(bad))
        return 1
    idle = (found["idle before"]["board_power_w"] + found["idle after"]["board_power_w"]) / 2
    ratio = found["load"]["board_power_w"] / idle
    print("load / idle board power: %.2f (%.1f W against %.1f W)" % (ratio, found["load"]["board_power_w"], idle))
    return 0 if ratio >= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
