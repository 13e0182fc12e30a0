"""optimize.yml refuses, on the host and before any server starts, a CPU placement that host cannot give."""
import os
import pathlib
import subprocess
import sys

import pytest

from helpers import ROOT, free_port


def run_campaign(tmp_path, placement):
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0",
               PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", "")))
    args = ["optimize.yml", "-e", "tier=1", "-e", "campaign_id=placement", "-e", "campaign_port=%d" % free_port(),
            "-e", "campaign_results_dir=%s" % (tmp_path / "results"), "-e", "campaign_state_dir=%s" % (tmp_path / "state"),
            "-e", placement]
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook")] + args, cwd=str(ROOT), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


@pytest.mark.parametrize("placement, message", [
    ('{"campaign_server_cpus": [4096], "campaign_client_cpus": null}', "server_cpus: CPU 4096 not available on this host"),
    ('{"campaign_server_cpus": "0", "campaign_client_cpus": [0]}', "server_cpus and client_cpus share CPU 0"),
    ('{"campaign_server_cpus": null, "campaign_client_cpus": "one"}', "client_cpus: 'one' is not a CPU number"),
    ('{"campaign_server_cpus": "rest", "campaign_client_cpus": null}',
     "server_cpus: 'rest' means the CPUs client_cpus leaves, and client_cpus is not set"),
])
def test_a_placement_the_host_cannot_give_fails_the_campaign_before_anything_starts(tmp_path, placement, message):
    rc, output = run_campaign(tmp_path, placement)
    assert rc != 0
    assert message in output, output[-3000:]
    assert "Check on the host the CPUs given to the server and the benchmark client" in output
    assert not list((tmp_path / "state").rglob("*.log")), "a server was launched"
    assert not (tmp_path / "state" / "run").exists()
