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
