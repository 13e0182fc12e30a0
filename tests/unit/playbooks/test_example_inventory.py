"""The production example inventory works as written: an SGLang GLM-5 campaign's every variable
is there, sized for GPUs, and the launch command it renders is accepted by the real parser."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import merge_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_sglang import SglangAdapter
from helpers import ROOT
from test_sglang_adapter import CATALOG, TIER1, SNAPSHOTS, rejected_by_parser


@pytest.fixture(scope="module")
def resolved():
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"),
                           "-i", "inventory/example-proxmox", "tests/playbooks/show_campaign_vars.yml"],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    task = result["plays"][0]["tasks"][0]["hosts"]
    return task["gpu-lxc-200"]["msg"]["fleetopt_vars"]


def test_the_campaign_is_sized_for_a_gpu_fleet(resolved):
    assert resolved["engine"] == "sglang"
    assert resolved["python"] == "/opt/sglang/venv/bin/python"
    assert resolved["flags"]["--tp-size"] == 8 and resolved["flags"]["--quantization"] == "modelopt_fp4"
    assert resolved["concurrency"] == [1, 64, 256, 1024]
    assert int(resolved["startup_timeout"]) >= 1800, "first JIT and piecewise compile take tens of minutes"
    assert int(resolved["input_len"]) >= 512 and int(resolved["output_len"]) >= 512


def test_the_server_gets_the_cuda_toolkit_without_a_login_shell(resolved):
    env = resolved["env"]
    assert env["CUDA_HOME"] == "/usr/local/cuda-12.8"
    assert env["PATH"].startswith("/usr/local/cuda-12.8/bin:")
    assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda-12.8/lib64"


@pytest.mark.parametrize("variant", [None] + [entry["id"] for entry in TIER1])
def test_every_launch_command_from_the_inventory_is_accepted_by_the_real_parser(resolved, variant):
    version = resolved["profile"].split("-", 1)[1]
    assert version in SNAPSHOTS, "the profile's release must have a parser snapshot"
    adapter = SglangAdapter(version)
    layers = [resolved["flags"], CATALOG["baseline"]["flags"]]
    if variant:
        entry = next(e for e in TIER1 if e["id"] == variant)
        layers.append(entry.get("flags") or {})
    flags, unsupported = adapter.launch_flags(*layers)
    if unsupported:
        pytest.skip("not applicable on %s: %s" % (version, unsupported))
    argv = adapter.server_command(resolved["python"], resolved["model"], resolved["served"], "127.0.0.1",
                                  int(resolved["port"]), merge_flags(flags))
    assert rejected_by_parser(argv[3:], SNAPSHOTS[version]) == []
    assert "--tp-size" in argv and argv[argv.index("--tp-size") + 1] == "8"
