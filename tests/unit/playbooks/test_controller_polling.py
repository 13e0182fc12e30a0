"""ansible-playbook must not spin on the measured host: on the embedded default the controller is the host
whose engine and client are measured, and under the free strategy (optimize.yml's fleet play) Ansible's
default internal_poll_interval (0.001 s) keeps about a fifth of a core busy for the whole campaign.
tests/benchmarks/controller_poll_cpu.py measures both the CPU and the latency a longer interval adds."""
import os
import subprocess
import sys
import pathlib

from helpers import ROOT


def effective(setting):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    out = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-config"), "dump", "--only-changed"],
                         cwd=str(ROOT), env=env, capture_output=True, text=True, check=True).stdout
    line = next((line for line in out.splitlines() if line.startswith(setting + "(")), None)
    return line.split(" = ", 1)[1] if line else None


def test_the_controller_polls_its_workers_without_spinning():
    value = effective("DEFAULT_INTERNAL_POLL_INTERVAL")
    assert value is not None and float(value) >= 0.01, value
