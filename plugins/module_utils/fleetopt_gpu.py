# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU facts from nvidia-smi, recorded with every result (stdlib only).

Parsers take text so they can be tested on real output; `gpu_facts` runs the tools.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import subprocess
import time

# Richest query first; older drivers refuse unknown fields, so fall back to the basics.
GPU_QUERIES = (
    "index,name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit,"
    "persistence_mode,pci.bus_id,compute_cap",
    "index,name,driver_version,memory.total",
)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
UNIT_SUFFIX = re.compile(r"\s+(MiB|MHz|W|%)$")


def _key(header):
    return header.split(" [")[0].strip().replace(".", "_")


def parse_query_csv(text):
    """`nvidia-smi --query-gpu=... --format=csv` (with its header) -> list of dicts.

    Units are dropped from values ("143771 MiB" -> "143771"); keys are the query fields
    with dots as underscores, as nvidia-smi names them in the header.
    """
    rows = [r for r in text.strip().splitlines() if r.strip()]
    if len(rows) < 2:
        return []
    headers = [_key(h) for h in rows[0].split(",")]
    gpus = []
    for row in rows[1:]:
        values = [UNIT_SUFFIX.sub("", v.strip()) for v in row.split(",")]
        if len(values) == len(headers):
            gpus.append(dict(zip(headers, values)))
    return gpus


def parse_cuda_version(nvidia_smi_text):
    match = re.search(r"CUDA Version:\s*([\d.]+)", nvidia_smi_text or "")
    return match.group(1) if match else None


def parse_driver_version(proc_version_text):
    """`/proc/driver/nvidia/version` -> '580.159.04' (what a container's user-space driver must match)."""
    match = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", proc_version_text or "")
    return match.group(1) if match else None


def clean_topology(topo_text):
    return ANSI_ESCAPE.sub("", topo_text or "").rstrip()


def _run(argv, timeout=60):
    try:
        out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode("utf-8", "replace") if out.returncode == 0 else None


def gpu_facts(nvidia_smi="nvidia-smi"):
    """{'gpus': [...], 'cuda_version', 'topology'}; empty when there is no nvidia-smi or GPU."""
    gpus = []
    for query in GPU_QUERIES:
        text = _run([nvidia_smi, "--query-gpu=" + query, "--format=csv"])
        if text is not None:
            gpus = parse_query_csv(text)
            break
    if not gpus:
        return {"gpus": [], "cuda_version": None, "topology": None}
    return {
        "gpus": gpus,
        "cuda_version": parse_cuda_version(_run([nvidia_smi])),
        "topology": clean_topology(_run([nvidia_smi, "topo", "-m"])),
    }


# Memory a GPU may hold above its level before the launch and still count as released
# (the driver's own bookkeeping moves by a few MiB between queries).
RELEASE_TOLERANCE_MIB = 256
# A GPU with more than this in use before a launch is held by another process.
BUSY_THRESHOLD_MIB = 1024
MEMORY_QUERY = ["--query-gpu=index,memory.used", "--format=csv,noheader,nounits"]


def parse_memory_used(text):
    """`nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits` -> {index: MiB}."""
    used = {}
    for row in (text or "").splitlines():
        cols = [c.strip() for c in row.split(",")]
        if len(cols) >= 2 and cols[0].isdigit():
            try:
                used[cols[0]] = int(float(cols[1]))
            except ValueError:
                continue
    return used


def memory_used(nvidia_smi="nvidia-smi"):
    """Per-GPU used memory in MiB, or None where there is no nvidia-smi (or no GPU).

    Used memory per GPU, not per process: inside an LXC guest or any PID namespace NVML
    reports host PIDs, which the guest cannot match against its own, but a GPU's used
    memory means the same on both sides.
    """
    text = _run([nvidia_smi] + MEMORY_QUERY, timeout=30)
    used = parse_memory_used(text)
    return used or None


def busy_gpus(used, threshold_mib=BUSY_THRESHOLD_MIB):
    """[(index, MiB)] of GPUs that hold more than the threshold."""
    return sorted((index, mib) for index, mib in (used or {}).items() if mib > threshold_mib)


def unreleased(before, now, tolerance_mib=RELEASE_TOLERANCE_MIB):
    """GPUs whose used memory is still above its level before the launch."""
    return sorted(i for i, mib in (now or {}).items() if mib > (before or {}).get(i, 0) + tolerance_mib)


class GpuMemoryWatch:
    """Waits until every GPU is back to the memory it had before a server launched."""

    def __init__(self, before, nvidia_smi="nvidia-smi", tolerance_mib=RELEASE_TOLERANCE_MIB, interval=0.2):
        self.before = before
        self.nvidia_smi = nvidia_smi
        self.tolerance_mib = tolerance_mib
        self.interval = interval

    def __call__(self, deadline):
        """Waits until `deadline` at most; None when there was no reading before the launch."""
        if not self.before:
            return None
        started = time.time()
        while True:
            now = memory_used(self.nvidia_smi) or {}
            pending = unreleased(self.before, now, self.tolerance_mib)
            if not pending or time.time() >= deadline:
                break
            time.sleep(self.interval)
        return {
            "before_mib": self.before, "after_mib": now, "tolerance_mib": self.tolerance_mib,
            "released": not pending, "still_held": pending, "waited_s": round(time.time() - started, 3),
        }
