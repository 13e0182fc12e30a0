"""The kept benchmark client's preload (fleetopt_bench_client): the client's modules imported ahead of its
first run, under their own names; one that fails to import is named with its error and the client serves on."""
import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_bench_client
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_bench_client import preload

SCHED_OTHER, SCHED_IDLE = 0, 5


def test_a_preload_imports_each_module_and_names_those_that_failed(tmp_path, monkeypatch):
    (tmp_path / "preload_ok_mod.py").write_text("VALUE = 1\nif __name__ == '__main__':\n    raise SystemExit(3)\n")
    (tmp_path / "preload_broken_mod.py").write_text("raise RuntimeError('needs a GPU')\n")
    (tmp_path / "preload_exiting_mod.py").write_text("raise SystemExit(2)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    answer = preload(["preload_ok_mod", "preload_broken_mod", "no_such_module_anywhere", "preload_exiting_mod"])
    assert answer["preloaded"] == ["preload_ok_mod"] and "preload_ok_mod" in sys.modules
    assert answer["failed"] == {"preload_broken_mod": "RuntimeError: needs a GPU",
                                "no_such_module_anywhere": "ModuleNotFoundError: No module named 'no_such_module_anywhere'",
                                "preload_exiting_mod": "SystemExit: 2"}
    assert answer["ended_at"] >= answer["started_at"]


def thread_policy(pid, tid):
    """The scheduling policy /proc states for one thread (0 SCHED_OTHER, 5 SCHED_IDLE), or None once it is gone."""
    try:
        stat = open("/proc/%d/task/%d/stat" % (pid, tid)).read()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[38])


def wait_until(predicate, timeout_s=20):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out")


# A client module whose import takes as long as the test wants: it names its thread, then waits for `go`.
SLOW_IMPORT = """
import os, threading, time
folder = %r
with open(os.path.join(folder, "slow.tid.tmp"), "w") as handle:
    handle.write(str(threading.get_native_id()))
os.replace(os.path.join(folder, "slow.tid.tmp"), os.path.join(folder, "slow.tid"))
while not os.path.exists(os.path.join(folder, "go")):
    time.sleep(0.01)
"""


@pytest.fixture()
def client(tmp_path):
    """The client program, started as fleetopt_bench starts it, with a slow-importing module on its path."""
    (tmp_path / "slow_import_mod.py").write_text(SLOW_IMPORT % str(tmp_path))
    (tmp_path / "quick_run_mod.py").write_text("print('ran')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    proc = subprocess.Popen([sys.executable, fleetopt_bench_client.__file__, str(tmp_path), "60"], env=env,
                            cwd=str(tmp_path), start_new_session=True)
    yield proc
    (tmp_path / "stop").write_text("")
    (tmp_path / "go").write_text("")
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def request(folder, number, payload):
    fleetopt_bench_client.write_json(str(folder / ("request-%d.json" % number)), payload)


def answer(folder, number):
    return wait_until(lambda: (folder / ("done-%d.json" % number)).exists()
                      and json.loads((folder / ("done-%d.json" % number)).read_text()))


def test_a_preload_only_takes_cpu_time_nothing_else_wants(tmp_path, client):
    # The client starts ahead of its server and may share its CPUs: its imports must not slow the server's start.
    request(tmp_path, 1, {"preload": ["slow_import_mod"]})
    tid = int(wait_until(lambda: (tmp_path / "slow.tid").exists() and (tmp_path / "slow.tid").read_text()))
    assert thread_policy(client.pid, tid) == SCHED_IDLE
    assert thread_policy(client.pid, client.pid) == SCHED_OTHER, "the thread that runs the benchmark keeps its priority"
    (tmp_path / "go").write_text("")
    done = answer(tmp_path, 1)
    assert done["preloaded"] == ["slow_import_mod"] and done["priority"] == "idle" and done["raised_for_run"] is False


def test_a_run_that_comes_during_a_preload_raises_it_back_and_starts_once_it_ended(tmp_path, client):
    request(tmp_path, 1, {"preload": ["slow_import_mod"]})
    tid = int(wait_until(lambda: (tmp_path / "slow.tid").exists() and (tmp_path / "slow.tid").read_text()))
    request(tmp_path, 2, {"module": "quick_run_mod", "args": [], "output": str(tmp_path / "run.out")})
    # The run waits for the imports it needs, which now go at the benchmark's own priority.
    wait_until(lambda: thread_policy(client.pid, tid) == SCHED_OTHER)
    assert not (tmp_path / "done-2.json").exists()
    (tmp_path / "go").write_text("")
    ran, preloaded = answer(tmp_path, 2), answer(tmp_path, 1)
    assert ran["exit_code"] == 0 and (tmp_path / "run.out").read_text() == "ran\n"
    assert preloaded["raised_for_run"] is True and preloaded["ended_at"] <= ran["started_at"]
    assert json.loads((tmp_path / "client.json").read_text())["runs"] == 2
