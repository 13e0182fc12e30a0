"""fleetopt_process.session_schedstat / schedstat_delta: the CPU time a server's whole session (every process and
thread it started) spent during a benchmark run, and how long its threads waited for a CPU."""
import os
import sys
import time

import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import (
    schedstat_delta, session_schedstat, start_session)

# The leader only waits; a child it starts burns BURN_S of CPU once told to, so whatever CPU time is counted
# can only come from a process other than the one whose pid is given.
BURN_S = 0.3
PROGRAM = r"""
import os, subprocess, sys, time
folder = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", '''
import os, sys, time
folder = sys.argv[1]
open(os.path.join(folder, "child"), "w").close()
while not os.path.exists(os.path.join(folder, "go")):
    time.sleep(0.01)
start = time.process_time()
while time.process_time() - start < %s:
    pass
open(os.path.join(folder, "done"), "w").close()
time.sleep(60)
''', folder])
child.wait()
"""


def wait_for(path, timeout=30.0):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert time.time() < deadline, "%s never appeared" % path
        time.sleep(0.01)


def test_the_cpu_of_every_process_of_the_session_is_counted_not_only_the_pid_given(tmp_path):
    proc = start_session([sys.executable, "-c", PROGRAM % BURN_S, str(tmp_path)], b"", str(tmp_path / "log"))
    try:
        wait_for(str(tmp_path / "child"))
        before = session_schedstat(proc.pid)
        assert len({pid for pid, _ in before}) == 2, before
        (tmp_path / "go").touch()
        wait_for(str(tmp_path / "done"))
        delta = schedstat_delta(before, session_schedstat(proc.pid))
        assert delta["cpu_s"] >= BURN_S - 0.01
        assert delta["runqueue_wait_s"] >= 0.0
        assert delta["threads"] >= 2
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_a_pid_that_is_gone_has_no_threads():
    assert session_schedstat(2 ** 22 + 7) == {}


def test_a_thread_new_since_the_first_reading_counts_from_zero_and_one_gone_counts_no_more():
    before = {(10, 10): (1000000000, 500000000), (10, 11): (2000000000, 0), (12, 12): (7000000000, 1000000000)}
    after = {(10, 10): (1250000000, 600000000), (10, 11): (2500000000, 100000000), (13, 13): (300000000, 50000000)}
    delta = schedstat_delta(before, after)
    assert delta == {"cpu_s": pytest.approx(1.05), "runqueue_wait_s": pytest.approx(0.25), "threads": 3}


def test_nothing_read_is_no_figure():
    assert schedstat_delta({}, {}) is None
