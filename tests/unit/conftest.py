import json
import stat
import sys

import pytest
import yaml

from helpers import ROOT, free_port


@pytest.fixture
def port():
    return free_port()


@pytest.fixture
def vllm_spec():
    return yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())


@pytest.fixture
def scripted_python(tmp_path):
    """An 'engine interpreter' that runs a scenario instead of the engine (see scripted_process.py)."""
    def make(scenario, name="python"):
        path = tmp_path / name
        path.write_text("#!/bin/sh\nexec %s %s %s \"$@\"\n" % (
            sys.executable, ROOT / "tests" / "scripted_process.py", _shell_quote(json.dumps(scenario))))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
        return str(path)
    return make


def _shell_quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


@pytest.fixture
def server_args(tmp_path, port, vllm_spec):
    def make(python, **extra):
        args = dict(name="t", engine="vllm", python=python, model=str(tmp_path), served_model_name="m",
                    port=port, engine_spec=vllm_spec, log_path=str(tmp_path / "logs" / "server.log"),
                    run_dir=str(tmp_path / "run"), startup_timeout=20, stop_timeout=2, release_timeout=5)
        args.update(extra)
        return args
    return make

