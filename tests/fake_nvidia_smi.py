#!/usr/bin/env python3
"""Answers `nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits` from a file.

The file (FLEETOPT_FAKE_GPU_FILE) holds {"index": used MiB}; scripted_process.py fills it
while it "holds GPU memory". Only this one query is answered; anything else exits 6, as
nvidia-smi does for an unknown query. The real query is exercised on an H200 by
tests/device/gpu_release_check.py.
"""
import json
import os
import sys

if sys.argv[1:] != ["--query-gpu=index,memory.used", "--format=csv,noheader,nounits"]:
    sys.exit(6)
try:
    with open(os.environ["FLEETOPT_FAKE_GPU_FILE"]) as handle:
        used = json.load(handle)
except (OSError, ValueError):
    used = {"0": 0}
for index in sorted(used):
    print("%s, %d" % (index, used[index]))
