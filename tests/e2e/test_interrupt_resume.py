"""SIGTERM to `fleetopt run` during a start-up leaves no server (on the scripted engine, whose start-up lasts
as long as the test says).

SIGINT during a campaign (servers stopped, finished cells kept, the second run with the same id
measuring only what is missing) runs in tests/e2e/test_container_fleet.py, on a fleet of two
hosts; a resume after a killed controller on the local connection in test_controller_gone.py."""
import signal
import subprocess
import time

from e2e.conftest import fleetopt_command, isolated
from helpers import ROOT, free_port, pid_gone, processes_listening_as
from scripted_engine import launches


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


def test_sigterm_during_start_up_leaves_no_server(tmp_path, scripted_engine):
    port = free_port()
    logs = tmp_path / "state" / "campaigns" / "e2e-sigterm" / "localhost"
    # A start-up of 60 s: the signal, 2 s after the server's log appears, comes while it starts.
    python = scripted_engine(startup_s=60)
    rc, output = interrupted(["run", "--only", "float32_compute"]
                             + isolated(tmp_path, port, "e2e-sigterm", fast_start=True, engine_python=python),
                             signal.SIGTERM, (lambda: (logs / "baseline.log").exists(), 120, "the baseline server"))
    assert rc == 143, output[-3000:]
    [(pid, _flags)] = launches(scripted_engine.scenarios[0])
    assert "Application startup complete" not in (logs / "baseline.log").read_text(), "it was no longer starting"
    assert pid_gone(pid)
    assert processes_listening_as(port) == []
    assert not list((tmp_path / "state" / "run").glob("*.json"))
