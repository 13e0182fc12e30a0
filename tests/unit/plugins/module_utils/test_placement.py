"""fleetopt_placement: CPU lists as settings give them, checked against each other and the host, and the
placement applied to a real child (and its child) and read back from /proc."""
import os
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_placement import (
    allowed_cpus, check, format_cpu_list, parse_cpu_list, pinning)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import session_pids, signal_session, start_session


@pytest.mark.parametrize("value, cpus", [
    ("0", [0]), ("1-3", [1, 2, 3]), ("0,2-3", [0, 2, 3]), (" 3 , 1 ", [1, 3]), ("2-2", [2]),
    ([0, 1], [0, 1]), (["0", "2-3"], [0, 2, 3]), ([3, "1", 1], [1, 3]), (1, [1]), (["0,4"], [0, 4]),
    (None, None), ("", None), ([], None), ("  ", None),
])
def test_cpu_lists_parse_as_linux_writes_them(value, cpus):
    assert parse_cpu_list(value) == cpus


@pytest.mark.parametrize("value, words", [
    ("a", "'a' is not a CPU number"), ("1-", "'1-' is not a CPU number"), ("-1", "'-1' is not"),
    ("3-1", "runs backwards"), ("0,,1", "'' is not a CPU number"), ([0, 1.5], "1.5"), (True, "not a CPU list"),
    ({"cpu": 0}, "not a CPU list"), ([None], "None"),
])
def test_a_malformed_cpu_list_is_refused_by_name(value, words):
    with pytest.raises(ValueError) as failure:
        parse_cpu_list(value, "server_cpus")
    assert str(failure.value).startswith("server_cpus: ")
    assert words in str(failure.value)


@pytest.mark.parametrize("cpus, text", [([0], "0"), ([0, 1, 2, 5], "0-2,5"), ([7, 3, 4], "3-4,7"), ([1, 3], "1,3")])
def test_cpu_lists_are_written_as_linux_writes_them(cpus, text):
    assert format_cpu_list(cpus) == text
    assert parse_cpu_list(text) == sorted(cpus)


def test_separate_lists_of_cpus_the_host_has_pass():
    assert check("0", [1], usable=[0, 1]) == ([0], [1])
    assert check(None, "1", usable=[0, 1]) == (None, [1])
    assert check(None, None, usable=[0]) == (None, None)


def test_a_cpu_the_host_lacks_is_named():
    with pytest.raises(ValueError) as failure:
        check("0-3", None, usable=[0, 1])
    assert str(failure.value) == "server_cpus: CPU 2-3 not available on this host (usable: 0-1)"


def test_server_and_client_sharing_a_cpu_are_refused():
    with pytest.raises(ValueError) as failure:
        check("0-1", "1", usable=[0, 1])
    assert "share CPU 1" in str(failure.value)


def test_every_problem_is_said_at_once():
    with pytest.raises(ValueError) as failure:
        check("x", "5", usable=[0, 1])
    assert "server_cpus: 'x' is not a CPU number" in str(failure.value)
    assert "client_cpus: CPU 5 not available" in str(failure.value)


@pytest.mark.parametrize("usable, server, client", [
    ([0, 1], [0], [1]), ([0, 1, 2, 3], [0, 1, 2], [3]), ([4, 5, 7], [4, 5], [7]),
])
def test_the_client_on_the_last_cpu_and_the_server_on_the_rest_fit_any_host(usable, server, client):
    assert check("rest", "last", usable=usable) == (server, client)


def test_the_rest_is_what_a_client_list_leaves():
    assert check("rest", "1-2", usable=[0, 1, 2, 3]) == ([0, 3], [1, 2])
    assert check(None, "last", usable=[0, 1]) == (None, [1])


@pytest.mark.parametrize("server, client, usable, words", [
    ("rest", "last", [0], "'rest' leaves no CPU for the server: client_cpus takes every CPU this host has (0)"),
    ("rest", None, [0, 1], "'rest' means the CPUs client_cpus leaves, and client_cpus is not set"),
    ("rest", "  ", [0, 1], "'rest' means the CPUs client_cpus leaves, and client_cpus is not set"),
    ("last", None, [0, 1], "server_cpus: 'last' is not a CPU number"),
    (None, "rest", [0, 1], "client_cpus: 'rest' is not a CPU number"),
])
def test_a_keyword_that_cannot_place_is_refused_by_name(server, client, usable, words):
    with pytest.raises(ValueError) as failure:
        check(server, client, usable=usable)
    assert words in str(failure.value)


def test_a_rest_beside_a_client_list_that_does_not_parse_names_the_client_list_alone():
    with pytest.raises(ValueError) as failure:
        check("rest", "x", usable=[0, 1])
    assert str(failure.value).startswith("client_cpus: 'x' is not a CPU number") and "server_cpus" not in str(failure.value)


def test_the_host_check_defaults_to_what_this_process_may_use():
    usable = sorted(os.sched_getaffinity(0))
    assert check(format_cpu_list(usable), None) == (usable, None)
    with pytest.raises(ValueError):
        check([max(usable) + 1], None)


# The child starts a child of its own and prints that one's PID; both live until the child's input ends.
FAMILY = ("import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.read()'], "
          "stdin=subprocess.PIPE); print(child.pid, flush=True); sys.stdin.read(); child.stdin.close(); child.wait()")
# As a session's leader: the same family, alive until killed.
SESSION = ("import subprocess, sys, time; child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
           "print(child.pid, flush=True); time.sleep(60)")
several_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a placement shows only on a host of 2 CPUs or more")


@several_cpus
def test_a_placed_child_and_its_own_child_run_only_on_the_given_cpu():
    cpu = max(os.sched_getaffinity(0))
    proc = subprocess.Popen([sys.executable, "-c", FAMILY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            preexec_fn=pinning([cpu]))
    try:
        grandchild = int(proc.stdout.readline())
        assert allowed_cpus(proc.pid) == str(cpu)
        assert allowed_cpus(grandchild) == str(cpu)
        # The placement is the child's: this process keeps its own.
        assert allowed_cpus(os.getpid()) == format_cpu_list(os.sched_getaffinity(0))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


@several_cpus
def test_a_session_started_with_cpus_runs_there_whole(tmp_path):
    cpu = min(os.sched_getaffinity(0))
    log = tmp_path / "out.log"
    proc = start_session([sys.executable, "-c", SESSION], b"", str(log), cpus=[cpu])
    try:
        deadline = time.time() + 30
        while not log.read_text().strip() and time.time() < deadline:
            time.sleep(0.02)
        child = int(log.read_text())
        assert sorted(session_pids(proc.pid)) == sorted([proc.pid, child])
        assert allowed_cpus(proc.pid) == allowed_cpus(child) == str(cpu)
    finally:
        signal_session(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_without_cpus_nothing_is_placed():
    assert pinning(None) is None and pinning([]) is None
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        assert allowed_cpus(proc.pid) == format_cpu_list(os.sched_getaffinity(0))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def test_a_process_that_is_gone_has_no_cpus():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    assert allowed_cpus(proc.pid) is None
