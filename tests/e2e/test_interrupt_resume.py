"""An interrupted campaign stops its server, keeps every finished cell, and a second run with the
same id measures only what is missing."""
import json
import signal
import subprocess
import time

from e2e.conftest import fleetopt_command, isolated, run_fleetopt
from helpers import ROOT, free_port, processes_listening_as


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting for %s" % what)


def interrupted(args, signum, *milestones):
    """Run `fleetopt <args>`, wait for each (predicate, timeout, what) in turn, then send `signum`.

    Returns the exit code and the output.
    """
    campaign = subprocess.Popen(fleetopt_command() + args, cwd=str(ROOT), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    try:
        for predicate, timeout, what in milestones:
            wait_for(predicate, timeout, what)
        time.sleep(2)  # well inside the start-up that follows the last milestone
        campaign.send_signal(signum)
        output = campaign.communicate(timeout=180)[0].decode()
    finally:
        if campaign.poll() is None:
            campaign.kill()
    return campaign.returncode, output


def test_sigint_stops_the_server_keeps_finished_cells_and_the_rerun_measures_only_the_rest(tmp_path, local_engine):
    port = free_port()
    args = ["run", "--only", "float32_compute,async_scheduling"] + isolated(tmp_path, port, "e2e-resume")
    cells = tmp_path / "results" / "e2e-resume" / "cells" / "localhost"
    logs = tmp_path / "state" / "campaigns" / "e2e-resume" / "localhost"
    rc, output = interrupted(
        args, signal.SIGINT,
        (lambda: (cells / "baseline.json").exists(), 240, "the baseline cell"),
        # Variants run in catalog order: async_scheduling comes next.
        (lambda: (logs / "async_scheduling.log").exists(), 120, "the next server"),
    )
    assert rc == 130, output[-3000:]
    assert "interrupted; servers stopped; 1 finished cell(s) kept" in output
    assert processes_listening_as(port) == []
    baseline = (cells / "baseline.json").read_text()
    assert json.loads(baseline)["status"] == "ok"
    assert not (cells / "async_scheduling.json").exists()

    rc, output = run_fleetopt(*args)
    assert rc == 0, output[-3000:]
    assert "baseline: ok, already measured in this campaign" in output
    assert (cells / "baseline.json").read_text() == baseline
    assert json.loads((cells / "float32_compute.json").read_text())["status"] == "ok"
    assert json.loads((cells / "async_scheduling.json").read_text())["status"] == "ok"


def test_sigterm_during_start_up_leaves_no_server(tmp_path, local_engine):
    port = free_port()
    logs = tmp_path / "state" / "campaigns" / "e2e-sigterm" / "localhost"
    rc, output = interrupted(["run", "--only", "float32_compute"] + isolated(tmp_path, port, "e2e-sigterm"),
                             signal.SIGTERM, (lambda: (logs / "baseline.log").exists(), 120, "the baseline server"))
    assert rc == 143, output[-3000:]
    assert processes_listening_as(port) == []
    assert not list((tmp_path / "state" / "run").glob("*.json"))
