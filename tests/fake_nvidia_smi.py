#!/usr/bin/env python3
"""A stand-in nvidia-smi for the two queries fleetopt makes, in the real output format.

- `--query-gpu=index,memory.used --format=csv,noheader,nounits`: from the file
  FLEETOPT_FAKE_GPU_FILE, {"index": used MiB}; scripted_process.py fills it while it "holds GPU
  memory". The real query is exercised on an H200 by tests/device/gpu_release_check.py.
- `--query-gpu=index,power.draw.instant` (or `power.draw`) `--format=csv,noheader,nounits`, once or
  every `-lms` milliseconds: FLEETOPT_FAKE_WATTS, the GPUs' watts comma-separated ('300,100' by
  default), one line per GPU as an H200 with driver 580 prints them ('0, 712.34').
  FLEETOPT_FAKE_NO_INSTANT makes it refuse power.draw.instant, as drivers without it do. The real
  sampler is exercised on an H200 by tests/device/gpu_power_check.py.

Anything else exits 6, as nvidia-smi does for an unknown query.
"""
import json
import os
import sys
import time

MEMORY = ["--query-gpu=index,memory.used", "--format=csv,noheader,nounits"]
POWER_FIELDS = ("power.draw.instant", "power.draw")


def memory():
    try:
        with open(os.environ["FLEETOPT_FAKE_GPU_FILE"]) as handle:
            used = json.load(handle)
    except (OSError, KeyError, ValueError):
        used = {"0": 0}
    for index in sorted(used):
        print("%s, %d" % (index, used[index]))


def power(args):
    field = args[0].split(",", 1)[1]
    if os.environ.get("FLEETOPT_FAKE_NO_INSTANT") and field == "power.draw.instant":
        print('Field "power.draw.instant" is not a valid field to query.')
        sys.exit(2)
    watts = [float(w) for w in os.environ.get("FLEETOPT_FAKE_WATTS", "300,100").split(",")]
    interval = int(args[args.index("-lms") + 1]) / 1000.0 if "-lms" in args else None
    while True:
        sys.stdout.write("".join("%d, %.2f\n" % (index, w) for index, w in enumerate(watts)))
        sys.stdout.flush()
        if interval is None:
            return
        time.sleep(interval)


def main(args):
    if args == MEMORY:
        memory()
    elif args[:2] in (["--query-gpu=index," + f, "--format=csv,noheader,nounits"] for f in POWER_FIELDS):
        power(args)
    else:
        sys.exit(6)


if __name__ == "__main__":
    main(sys.argv[1:])
