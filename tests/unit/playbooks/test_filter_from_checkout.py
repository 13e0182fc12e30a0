"""The checkout's own set-ups find the collection's filter `fleetopt_version_in_range`: Ansible through
the project's ansible.cfg, and the sglang_stack role's molecule scenario through its collections path.
The filter itself is tested in tests/unit/plugins/filter/test_version_filter.py."""
import os
import subprocess
import sys

import yaml

from helpers import ROOT


def test_ansible_finds_the_filter_through_the_project_config(tmp_path):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    out = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-c", "local", "-i", "localhost,",
         "-m", "ansible.builtin.debug", "-a",
         "msg={{ ['0.5.10rc1', '0.5.10'] | map('fleetopt.campaign.fleetopt_version_in_range', '>=0.5.10') | list }}"],
        cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False)
    text = out.stdout.decode()
    assert out.returncode == 0, text
    assert "- false\n" in text and "- true\n" in text, text


def test_the_sglang_stack_molecule_scenario_finds_the_collection():
    """Molecule writes its own ansible.cfg, so the scenario names the checkout's collections folder."""
    scenario = yaml.safe_load((ROOT / "roles" / "sglang_stack" / "molecule" / "default" / "molecule.yml").read_text())
    path = scenario["provisioner"]["env"]["ANSIBLE_COLLECTIONS_PATH"].replace(
        "${MOLECULE_PROJECT_DIRECTORY}", str(ROOT / "roles" / "sglang_stack"))
    assert os.path.samefile(os.path.join(path, "ansible_collections", "fleetopt", "campaign"), ROOT)
