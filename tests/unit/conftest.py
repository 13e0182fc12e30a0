import json
import pathlib
import stat
import sys

import pytest
import yaml

import helpers
from helpers import ROOT, free_port

# A test module may import a sibling's constants or fixtures (from test_server_module import READY).
# pytest puts a test module's folder on sys.path as it imports it; ansible-test imports test modules
# as packages of the collection instead, so the folders of the plugins' tests are put there here.
for _folder in sorted(path for path in (pathlib.Path(__file__).parent / "plugins").iterdir() if path.is_dir()):
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))


@pytest.fixture
def port():
    return free_port()


@pytest.fixture
def vllm_spec():
    return yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())


@pytest.fixture
def scripted_python(tmp_path):
    """An 'engine interpreter' that runs a scenario instead of the engine (helpers.scripted_python)."""
    def make(scenario, name="python"):
        return helpers.scripted_python(tmp_path, scenario, name)
    return make


@pytest.fixture
def server_args(tmp_path, port, vllm_spec):
    def make(python, **extra):
        args = dict(name="t", engine="vllm", python=python, model=str(tmp_path), served_model_name="m",
                    port=port, engine_spec=vllm_spec, log_path=str(tmp_path / "logs" / "server.log"),
                    run_dir=str(tmp_path / "run"), startup_timeout=20, stop_timeout=2, release_timeout=5)
        args.update(extra)
        return args
    return make


@pytest.fixture
def fake_nvidia_smi(tmp_path):
    """An executable nvidia-smi stand-in (tests/fake_nvidia_smi.py) that answers power queries in the
    real format; FLEETOPT_FAKE_WATTS sets the GPUs' watts, FLEETOPT_FAKE_NO_INSTANT refuses
    power.draw.instant."""
    path = tmp_path / "nvidia-smi"
    path.write_text("#!/bin/sh\nexec %s %s \"$@\"\n" % (sys.executable, ROOT / "tests" / "fake_nvidia_smi.py"))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)
