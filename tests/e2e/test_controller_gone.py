"""Nothing keeps holding the engine when the controller goes away: Ctrl-C stops the benchmark
client at once and says what still runs; a SIGKILLed ansible-playbook leaves the server to its
lease, which stops it, and the same campaign id run again records which cell the lease stopped
(summary and reports), keeps the finished cells and measures that one; and a lease renewed by a
running campaign never stops a healthy server, even when one benchmark run lasts longer than the lease.

On the scripted engine (tests/scripted_engine): its servers are started, leased and stopped by fleetopt as the real
engine's are, and its per-token time makes a benchmark run last as long as the test needs."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

from e2e.conftest import FEW_PROMPTS, SINGLE_LAUNCH, fast_start_settings
from helpers import ROOT, bench_clients_under, free_port, processes_listening_as

# Long enough for the step from the server's start to its benchmark, which nothing renews in between (Ansible's tasks
# between the two modules: a loaded machine took more than 6 s there).
LEASE_S = 12
# The scripted engine's time per output token: a request of 64 tokens (FEW_PROMPTS) takes 2.5 s, the 8 requests of a
# run at concurrency 1 take 20 s, 1.7 leases: only the renewal keeps its server.
PER_TOKEN_S = 0.04
LONGER_THAN_THE_LEASE = dict(campaign_bench_output_len=64)


def playbook(tmp_path, port, campaign_id, engine_python, **bench):
    settings = {**SINGLE_LAUNCH, **FEW_PROMPTS, **fast_start_settings(), "campaign_bench_concurrency": [1], "campaign_bench_trials": 1, "campaign_lease_s": LEASE_S,
                "campaign_results_dir": str(tmp_path / "results"), "campaign_state_dir": str(tmp_path / "state"),
                "campaign_port": port, "campaign_id": campaign_id, "campaign_engine_python": engine_python}
    settings.update(bench)
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ["PATH"]))
    # A session of its own, as a terminal gives a foreground job: Ctrl-C reaches its whole group.
    return subprocess.Popen([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "optimize.yml",
                             "-e", "only=float32_compute", "-e", json.dumps(settings)],
                            cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def clients(tmp_path):
    """Live benchmark clients of this test's campaign (one per host, under its state folder)."""
    return bench_clients_under(tmp_path)


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return time.time()
        time.sleep(0.2)
    raise AssertionError("timed out waiting for %s" % what)


def test_ctrl_c_during_a_benchmark_stops_the_client_says_what_runs_and_the_lease_stops_the_server(
        tmp_path, scripted_engine):
    port = free_port()
    campaign = playbook(tmp_path, port, "gone-sigint", scripted_engine(per_token_s=PER_TOKEN_S), campaign_bench_trials=3)
    try:
        # The host's client starts ahead of the first server: the baseline's run has begun once its output exists.
        bench_dir = tmp_path / "state" / "campaigns" / "gone-sigint" / "localhost" / "bench"
        wait_for(lambda: clients(tmp_path) and any(bench_dir.glob("baseline-c1-t1.out")), 300,
                 "the baseline's benchmark run")
        os.killpg(campaign.pid, signal.SIGINT)
        try:
            output = campaign.communicate(timeout=60)[0].decode()
        except subprocess.TimeoutExpired as late:
            # What still ran a minute after Ctrl-C, and where the play was, for the failure to say.
            still = subprocess.run(["ps", "-o", "pid,stat,etime,args", "-s", str(campaign.pid)],
                                   stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout
            raise AssertionError("the play outlived Ctrl-C by 60 s; its session:\n%s\nits output:\n%s" % (
                still, (late.output or b"").decode("utf-8", "replace")[-4000:])) from None
        interrupted_at = time.time()
    finally:
        if campaign.poll() is None:
            os.killpg(campaign.pid, signal.SIGKILL)
    assert "fleetopt: interrupted; these servers are still running:" in output, output[-3000:]
    assert "localhost: vllm-%d" % port in output and "playbooks/stop_servers.yml" in output
    wait_for(lambda: not clients(tmp_path), 5, "the benchmark client to stop")
    stopped_at = wait_for(lambda: not processes_listening_as(port), LEASE_S + 30, "the lease to stop the server")
    assert stopped_at - interrupted_at < LEASE_S + 30
    status = json.loads((tmp_path / "state" / "run" / ("vllm-%d.status" % port)).read_text())
    assert status["stopped_by"] == "lease"


def test_a_killed_controller_leaves_the_server_to_its_lease_and_a_renewed_lease_never_stops_it(
        tmp_path, scripted_engine):
    port = free_port()
    engine = scripted_engine(per_token_s=PER_TOKEN_S)
    # One run lasts longer than the lease: the baseline is only measured because the benchmark renews the lease while
    # it runs.
    campaign = playbook(tmp_path, port, "gone-sigkill", engine, **LONGER_THAN_THE_LEASE)
    cells = tmp_path / "results" / "gone-sigkill" / "cells" / "localhost"
    try:
        wait_for(lambda: (cells / "baseline.json").exists(), 400, "the baseline cell")
        baseline = json.loads((cells / "baseline.json").read_text())
        # The host's one client measures every cell: the next variant's run has begun once its output exists.
        bench_dir = tmp_path / "state" / "campaigns" / "gone-sigkill" / "localhost" / "bench"
        wait_for(lambda: clients(tmp_path) and any(bench_dir.glob("float32_compute-c1-t1.out")), 300,
                 "the next variant's benchmark run")
        campaign.send_signal(signal.SIGKILL)  # ansible-playbook alone: no handler sees this
        campaign.wait()
        killed_at = time.time()
    finally:
        if campaign.poll() is None:
            os.killpg(campaign.pid, signal.SIGKILL)
    assert baseline["status"] == "ok", baseline.get("reason")
    assert baseline["levels"][0]["duration_s"] > LEASE_S, "the run must outlast the lease to show the renewal"
    # The orphaned benchmark module stops its client; then nothing renews the lease.
    stopped_at = wait_for(lambda: not processes_listening_as(port), LEASE_S + 60, "the lease to stop the server")
    assert stopped_at - killed_at < LEASE_S + 60
    status = json.loads((tmp_path / "state" / "run" / ("vllm-%d.status" % port)).read_text())
    assert status["stopped_by"] == "lease"

    # The same campaign id again: it records what the lease stopped (the cell it served), keeps the
    # finished baseline and measures the interrupted cell.
    rerun = playbook(tmp_path, port, "gone-sigkill", engine, **LONGER_THAN_THE_LEASE)
    try:
        output = rerun.communicate(timeout=600)[0].decode()
    finally:
        if rerun.poll() is None:
            os.killpg(rerun.pid, signal.SIGKILL)
    assert rerun.returncode == 0, output[-3000:]
    assert "baseline: ok, already measured in this campaign" in output
    results = tmp_path / "results" / "gone-sigkill"
    summary = json.loads((results / "summary.json").read_text())
    [note] = summary["leftover_servers"]
    assert (note["host"], note["cell"], note["campaign"], note["stopped_by"]) == (
        "localhost", "float32_compute", "gone-sigkill", "lease")
    assert note["failure_class"] == "lease_expired" and note["measured_again"] is True, note
    assert note["text"].startswith("float32_compute on localhost: stopped by its lease at "), note["text"]
    assert note["text"].endswith("measured again when this campaign resumed (ok)"), note["text"]
    assert "- %s" % note["text"] in (results / "report.md").read_text()
    assert 'data-cell="float32_compute"' in (results / "report.html").read_text()
    kept = json.loads((cells / "baseline.json").read_text())
    assert (kept["measured_at"], kept["levels"]) == (baseline["measured_at"], baseline["levels"])
    remeasured = json.loads((cells / "float32_compute.json").read_text())
    assert remeasured["status"] == "ok" and remeasured["measured_at"] >= note["found_at"]
