"""The key that identifies a cell's configuration (roles/campaign/tasks/variant.yml), rendered by Ansible itself:
a campaign resumes a cell only when its key is the same, so a setting added to the key must not change the key of
a configuration that leaves it at its default, or every campaign kept before it would measure its cells again."""
import json
import os
import pathlib
import subprocess
import sys

import yaml

from helpers import ROOT

# The key of the configuration below, as fleetopt rendered it before campaign_bench_min_warmups existed (5692d11).
KEY_BEFORE_MIN_WARMUPS = "478de1644881940b2b04c35f4328df6e99212c24becab1dda4f0a44fb7af0734"

PLAYBOOK = """
- name: Render a cell key
  hosts: localhost
  gather_facts: false
  vars_files: ["%(root)s/roles/campaign/defaults/main.yml"]
  vars:
    campaign_model_path: /models/tiny
    _campaign_patches: []
    _campaign_engine_spec: {name: vllm, ready: ["Application startup complete"]}
    _campaign_plan: {engine_version: "0.32.0", model_info: {architecture: LlamaForCausalLM},
                     host: {gpus: [], cuda_version: null}}
    _campaign_variant: {id: baseline, flags: {"--enforce-eager": true}, env: {}, cell_name: baseline}
    _campaign_partner: null
    _campaign_partner_plan: {}
  tasks:
    - name: Identify the configuration
      ansible.builtin.set_fact:
        _campaign_cell_key: %(key)s
    - name: Write it
      ansible.builtin.copy:
        content: "{{ _campaign_cell_key }}"
        dest: "%(out)s"
        mode: "0644"
"""


def key_template():
    tasks = yaml.safe_load((ROOT / "roles" / "campaign" / "tasks" / "variant.yml").read_text())
    block = next(t for t in tasks if "block" in t)["block"]
    task = next(t for t in block if t["name"].startswith("Identify the configuration"))
    return task["ansible.builtin.set_fact"]["_campaign_cell_key"]


def cell_key(tmp_path, **extra):
    out = tmp_path / ("key-%d" % len(list(tmp_path.glob("key-*"))))
    playbook = tmp_path / "key.yml"
    playbook.write_text(PLAYBOOK % {"root": ROOT, "out": out, "key": json.dumps(key_template())})
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", "")))
    command = [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), str(playbook)]
    if extra:
        command += ["-e", json.dumps(extra)]
    proc = subprocess.run(command, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:]
    return out.read_text()


def test_the_min_warmups_setting_keeps_earlier_keys_at_its_default_and_changes_the_key_otherwise(tmp_path):
    assert cell_key(tmp_path) == KEY_BEFORE_MIN_WARMUPS
    assert cell_key(tmp_path, campaign_bench_min_warmups=8) == KEY_BEFORE_MIN_WARMUPS
    assert cell_key(tmp_path, campaign_bench_min_warmups=0) != KEY_BEFORE_MIN_WARMUPS


def test_short_warm_ups_keep_earlier_keys_when_off_and_change_the_key_when_on(tmp_path):
    assert cell_key(tmp_path, campaign_bench_warmup_output_len=0) == KEY_BEFORE_MIN_WARMUPS
    short = cell_key(tmp_path, campaign_bench_warmup_output_len=8)
    assert short != KEY_BEFORE_MIN_WARMUPS and short != cell_key(tmp_path, campaign_bench_warmup_output_len=16)


def test_a_cpu_placement_keeps_earlier_keys_when_unset_and_changes_the_key_when_set(tmp_path):
    assert cell_key(tmp_path, campaign_server_cpus=None, campaign_client_cpus=None) == KEY_BEFORE_MIN_WARMUPS
    server = cell_key(tmp_path, campaign_server_cpus="0")
    client = cell_key(tmp_path, campaign_client_cpus="1")
    both = cell_key(tmp_path, campaign_server_cpus="0", campaign_client_cpus="1")
    assert len({KEY_BEFORE_MIN_WARMUPS, server, client, both}) == 4


# A baseline measured again beside a stack, with a later setting and a placement set, as the role's Jinja expression
# rendered it before the key moved into the fleetopt_cell_key filter.
KEY_OF_A_BASELINE_BESIDE_A_STACK = "465b4430d8cd619a45606090342f9ba84a902d316fd8a0e04b2818bce74882eb"


def test_a_baseline_beside_a_stack_keeps_the_key_it_had(tmp_path):
    assert cell_key(tmp_path, _campaign_variant={"id": "baseline", "flags": {"--enforce-eager": True}, "env": {},
                                                 "cell_name": "baseline.stage2", "baseline_of": "stack_2"},
                    _campaign_partner="stack_2",
                    _campaign_partner_plan={"flags": {"--async-scheduling": True}, "env": {"A": "1"}},
                    campaign_bench_min_warmups=3, campaign_server_cpus="0",
                    _campaign_engine_spec={"name": "vllm", "compile_cache": {"X": "y"}, "ready": ["r"]}) \
        == KEY_OF_A_BASELINE_BESIDE_A_STACK
