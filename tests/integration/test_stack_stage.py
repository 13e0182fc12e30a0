"""optimize.yml's stack stage, in check mode on a stand-in engine (a `vllm` distribution that only reports its
version) so that no server starts: -e recommended=<file> plans the baseline and the earlier recommendation's
stacked variant instead of a matrix, and says the stack would launch with the recommended changes merged over
this inventory's baseline; -e recommend=true plans the matrix first, then the proposed stack beside the baseline
measured again, in counterbalanced order. Check mode keeps no cell, so the matrix's baseline and A/A copy are
planned again in the stage too (a real stage keeps them)."""
import json
import os
import pathlib
import re
import stat
import subprocess
import sys

import yaml

from helpers import ROOT, free_port

VERIFY = {"id": "stack", "title": "Recommended by campaign c0: restore + unbind", "tier": 0,
          "flags": {"--enforce-eager": None, "--max-num-seqs": 4}, "env": {"OMP_BIND": "nobind"},
          "stacked": {"composes": ["restore", "unbind"], "verifies": "c0"}}


def stand_in(tmp_path, launches=1):
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
        "campaign_launches": launches}}}}}}))
    return inventory


def run(inventory, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json",  # one line per message
               PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", "")))
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           "optimize.yml", "--check"] + list(extra), cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


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


def launched(output):
    return re.findall(r"Check mode: (\S+): would launch", output)


def test_the_stack_stage_measures_the_baseline_again_beside_the_stack_in_counterbalanced_order(tmp_path):
    folder = tmp_path / "results" / "rec2"
    folder.mkdir(parents=True)
    proposed = dict(VERIFY, title="Stack: restore + unbind",
                    stacked={"composes": ["restore", "unbind"], "proposed_by": "rec2", "baseline": "baseline_stack"})
    (folder / "recommended.yml").write_text(yaml.safe_dump({"status": "proposed, not yet measured as a stack",
                                                            "outcome": "proposed", "stacked_variant": proposed}))
    rc, output = run(stand_in(tmp_path, launches=2), "-e", "recommend=true", "-e", "only=float32_compute",
                     "-e", "campaign_id=rec2")
    assert rc == 0, output[-4000:]
    order = launched(output)
    matrix = ["baseline", "baseline_aa", "float32_compute", "float32_compute.launch2", "baseline_aa.launch2",
              "baseline.launch2"]
    assert order[:6] == matrix, order
    # ABBA within the stage: the baseline measured again, the stack, the stack, the baseline measured again.
    assert [cell for cell in order[6:] if cell.split(".")[0] in ("baseline_stack", "stack")] == [
        "baseline_stack", "stack", "stack.launch2", "baseline_stack.launch2"], order
    assert "against the baseline measured again beside it on each host" in output


def test_a_verifying_campaign_measures_the_recommended_changes_beside_its_baseline_in_counterbalanced_order(tmp_path):
    earlier = tmp_path / "recommended.yml"
    earlier.write_text(yaml.safe_dump({"status": "measured as a stack", "verify_variant": VERIFY}))
    rc, output = run(stand_in(tmp_path, launches=2), "-e", "recommended=%s" % earlier, "-e", "campaign_id=verify2")
    assert rc == 0, output[-4000:]
    # No matrix: the baseline itself is measured beside the stack, with the A/A copy next to it; no other copy.
    assert launched(output) == ["baseline", "baseline_aa", "stack", "stack.launch2", "baseline_aa.launch2",
                                "baseline.launch2"], launched(output)
    assert "measuring Recommended by campaign c0: restore + unbind against each host's baseline" in output
    # The recommended changes over this inventory's baseline: --enforce-eager removed, --max-num-seqs 4.
    for launch in (line for line in output.splitlines() if re.search(r"Check mode: stack(\.launch2)?: would launch", line)):
        assert "--max-num-seqs 4" in launch and "--enforce-eager" not in launch, launch
