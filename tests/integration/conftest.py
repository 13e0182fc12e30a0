"""Drive the real fleetopt_server module against tests/sglang_replay.py.

The module launches `<python> -m sglang.launch_server ... --port N`; `python` here is a small
wrapper made in tmp_path that execs the replayer, which replays the fixture named in the
module's `env` and binds the port the module chose.
"""
import json
import pathlib
import sys
import time

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import free_port  # noqa: E402
from module_runner import run_module  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "sglang" / "logs"
REPLAYER = ROOT / "tests" / "sglang_replay.py"
REPLAY_SECONDS = 1.2  # what one start-up takes once the log's own timing is compressed

WRAPPER = """#!/bin/sh
# Stands in for the engine's python: the module runs `$0 -m sglang.launch_server ...`.
FLEETOPT_REPLAY_LAUNCHED_AT="$(date +%%s.%%N)"
export FLEETOPT_REPLAY_LAUNCHED_AT
exec "%s" "%s" "$@"
"""


@pytest.fixture(scope="session")
def sglang_spec():
    return yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())


def speed_for(fixture):
    """Speed factor that replays the fixture's start-up in about REPLAY_SECONDS."""
    from sglang_replay import log_times

    lines = (FIXTURES / fixture).read_text(encoding="utf-8").split("\n")
    times = log_times(lines)
    span = (max(times) - min(times)) if times else 0.0
    return max(span / REPLAY_SECONDS, 1.0)


class ReplayedServer:
    """One launch of the replayer through fleetopt_server, and what it recorded."""

    def __init__(self, tmp_path, spec):
        self.tmp_path = tmp_path
        self.tmp_path.mkdir(parents=True, exist_ok=True)
        self.spec = spec
        self.port = free_port()
        self.python = tmp_path / "python"
        self.python.write_text(WRAPPER % (sys.executable, REPLAYER))
        self.python.chmod(0o755)
        self.times_path = tmp_path / "replay-times.json"
        self.log_path = tmp_path / "server.log"
        self.result = None
        self.returned_at = None

    def args(self, state="started", **extra):
        args = {
            "name": "sglang-%d" % self.port, "state": state, "engine": "sglang",
            "python": str(self.python), "model": "/models/GLM-5-NVFP4", "served_model_name": "glm-5",
            "port": self.port, "engine_spec": self.spec, "log_path": str(self.log_path),
            "run_dir": str(self.tmp_path / "run"), "startup_timeout": 60, "stop_timeout": 10,
            "release_timeout": 10,
        }
        args.update(extra)
        return args

    def start(self, fixture, after, flags=None, **extra):
        env = {
            "FLEETOPT_REPLAY_FIXTURE": str(FIXTURES / fixture),
            "FLEETOPT_REPLAY_SPEED": "%.3f" % speed_for(fixture),
            "FLEETOPT_REPLAY_AFTER": after,
            "FLEETOPT_REPLAY_TIMES": str(self.times_path),
        }
        self.result = run_module("fleetopt_server", self.args(flags=flags or {}, env=env, **extra), timeout=60)
        self.returned_at = time.time()
        return self.result

    def stop(self):
        return run_module("fleetopt_server", self.args(state="stopped"), timeout=60)

    def record(self, timeout=5.0):
        """What the replayer wrote at exit (it is written when the process ends)."""
        deadline = time.time() + timeout
        while not self.times_path.exists() and time.time() < deadline:
            time.sleep(0.05)
        return json.loads(self.times_path.read_text())


@pytest.fixture
def replayed(tmp_path, sglang_spec):
    servers = []

    def make():
        server = ReplayedServer(tmp_path / ("s%d" % len(servers)), sglang_spec)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()
