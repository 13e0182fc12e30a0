"""optimize.yml provisions only when asked (-e provision=true): otherwise the provisioning plays match no
host, so they are skipped whole instead of task by task; playbooks/provision.yml alone still provisions."""
import os
import pathlib
import re
import subprocess
import sys

from helpers import ROOT

EXAMPLE = str(ROOT / "inventory" / "example-proxmox")
PROVISION_PLAYS = ("Create the GPU containers on the Proxmox hosts", "Install the driver, CUDA and SGLang in the GPU containers")


def hosts_per_play(playbook, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", EXAMPLE, playbook,
                           "--list-hosts"] + list(extra), cwd=str(ROOT), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120, check=False)
    output = proc.stdout.decode()
    assert proc.returncode == 0, output
    plays = {}
    for block in re.split(r"\n\s*play #\d+ ", output)[1:]:
        name = re.match(r"\((?:[^)]*)\): (.+?)\tTAGS", block).group(1)
        count = int(re.search(r"pattern: .*\n\s*hosts \((\d+)\):", block).group(1))
        plays[name] = count
    return plays


def test_a_campaign_without_provision_matches_no_host_in_the_provisioning_plays():
    plays = hosts_per_play("optimize.yml")
    assert all(plays[name] == 0 for name in PROVISION_PLAYS), plays
    assert plays["Run the baseline and every variant"] > 0, plays


def test_a_campaign_with_provision_and_the_provisioning_playbook_alone_reach_their_hosts():
    for plays in (hosts_per_play("optimize.yml", "-e", "provision=true"), hosts_per_play("playbooks/provision.yml")):
        assert all(plays[name] > 0 for name in PROVISION_PLAYS), plays
