"""optimize.yml's stack stage, in check mode on a stand-in engine (a `vllm` distribution that only reports its
version) so that no server starts: -e recommended=<file> plans the baseline and the earlier recommendation's
stacked variant instead of a matrix, and says the stack would launch with the recommended changes merged over
this inventory's baseline; -e recommend=true plans the matrix first."""
import json
import os
import pathlib
import stat
import subprocess
import sys

import yaml

from helpers import ROOT, free_port

VERIFY = {"id": "stack", "title": "Recommended by campaign c0: restore + unbind", "tier": 0,
          "flags": {"--enforce-eager": None, "--max-num-seqs": 4}, "env": {"OMP_BIND": "nobind"},
          "stacked": {"composes": ["restore", "unbind"], "verifies": "c0"}}


def stand_in(tmp_path):
    site = tmp_path / "site"
    dist = site / "vllm-0.32.0+cpu.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n")
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nPYTHONPATH=%s exec %s \"$@\"\n" % (site, sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"fleet": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "campaign_engine_python": str(python), "campaign_model_path": str(model), "campaign_port": free_port(),
        "campaign_server_flags": {"--enforce-eager": True, "--max-num-seqs": 1},
        "campaign_server_env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
        "campaign_state_dir": str(tmp_path / "state"), "campaign_results_dir": str(tmp_path / "results"),
        "campaign_launches": 1}}}}}}))
    return inventory


def run(inventory, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json",  # one line per message
               PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", "")))
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           "optimize.yml", "--check"] + list(extra), cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def test_an_earlier_recommendation_is_planned_against_the_baseline_without_a_matrix(tmp_path):
    earlier = tmp_path / "recommended.yml"
    earlier.write_text(yaml.safe_dump({"status": "measured as a stack", "verify_variant": VERIFY}))
    rc, output = run(stand_in(tmp_path), "-e", "recommended=%s" % earlier, "-e", "campaign_id=verify1")
    assert rc == 0, output[-4000:]
    assert "measuring Recommended by campaign c0: restore + unbind against each host's baseline" in output
    assert "Check mode: baseline: would launch" in output
    launch = next(line for line in output.splitlines() if "Check mode: stack: would launch" in line)
    # The recommended changes over this inventory's baseline: --enforce-eager removed, --max-num-seqs 4.
    assert "--max-num-seqs 4" in launch and "--enforce-eager" not in launch, launch
    assert output.count("Check mode: baseline: would launch") == 1, "the baseline is planned once, by the stack stage"


def test_recommend_plans_the_matrix_first_and_stacks_nothing_in_check_mode(tmp_path):
    rc, output = run(stand_in(tmp_path), "-e", "recommend=true", "-e", "only=float32_compute", "-e", "campaign_id=rec1")
    assert rc == 0, output[-4000:]
    assert "Check mode: float32_compute: would launch" in output
    # Check mode writes no report, so there is no proposal to measure.
    assert "nothing to stack" in output and "Check mode: stack" not in output


def test_recommend_and_recommended_together_are_refused_before_anything_starts(tmp_path):
    earlier = tmp_path / "recommended.yml"
    earlier.write_text(yaml.safe_dump({"status": "measured as a stack", "verify_variant": VERIFY}))
    rc, output = run(stand_in(tmp_path), "-e", "recommended=%s" % earlier, "-e", "recommend=true",
                     "-e", "campaign_id=both")
    assert rc != 0 and "not both" in output, output[-3000:]
    assert not (tmp_path / "state").exists()
