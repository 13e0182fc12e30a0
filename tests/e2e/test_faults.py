"""Faults a real fleet meets, each with its expected outcome, on the scripted engine (tests/scripted_engine): a real
server process on a real port, started and stopped by fleetopt as the real engine is, whose start-up and request
times the test sets, so that each fault lands where the test means it to on any host."""
import json
import os
import re
import signal
import subprocess
import threading
import time

import pytest
import yaml

from e2e.conftest import SINGLE_LAUNCH, isolated, local_server_env, run_fleetopt
from helpers import ROOT, free_port, pid_gone, processes_listening_as
from module_runner import run_module
from scripted_engine import launches

SECRET = "sk-fleetopt-e2e-7f3a9c"


def read_cell(base, campaign_id, variant, host="localhost"):
    return json.loads((base / "results" / campaign_id / "cells" / host / ("%s.json" % variant)).read_text())


@pytest.fixture(scope="module")
def killed(tmp_path_factory, local_engine):
    """One campaign for three faults: a stale server holds the port when it starts, the server
    has an API key, and the variant's server is SIGKILLed during its benchmark."""
    import scripted_engine

    base = tmp_path_factory.mktemp("killed")
    # Requests of 128 tokens at 10 ms a token: a run of 8 of them one at a time lasts about 10 s, long enough to be
    # killed in. The scripted server refuses a request without the API key, as vLLM does.
    scenario = {"per_token_s": 0.01, "launches_file": str(base / "launches")}
    python = scripted_engine.engine_python(base / "engine", scenario, local_engine["real_python"])
    port = free_port()
    bench_dir = base / "state" / "campaigns" / "e2e-killed" / "localhost" / "bench"
    state_file = base / "state" / "run" / ("vllm-%d.json" % port)
    spec = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())
    stale = run_module("fleetopt_server", dict(
        name="vllm-%d" % port, engine="vllm", python=python, model=local_engine["model"],
        served_model_name="tiny-llama", port=port, flags={"--enforce-eager": True, "--max-model-len": 256},
        env=local_server_env(fast_start=True), engine_spec=spec, log_path=str(base / "stale.log"),
        run_dir=str(base / "state" / "run")))
    assert stale["server"]["status"] == "ready"

    def kill_during_the_variant_benchmark():
        deadline = time.time() + 600
        while time.time() < deadline and not (bench_dir / "float32_compute-c1-t1.out").exists():
            time.sleep(0.2)
        time.sleep(2)
        os.killpg(json.loads(state_file.read_text())["sid"], signal.SIGKILL)

    killer = threading.Thread(target=kill_during_the_variant_benchmark, daemon=True)
    killer.start()
    rc, output = run_fleetopt("run", "--only", "float32_compute",
                              # The level after the killed one is skipped, with the reason.
                              *isolated(base, port, "e2e-killed", concurrency=(1, 2), fast_start=True,
                                        engine_python=python),
                              "-e", "campaign_bench_output_len=128",
                              env={"FLEETOPT_API_KEY": SECRET})
    killer.join(timeout=5)
    return {"rc": rc, "output": output, "base": base, "stale_pid": stale["server"]["pid"], "launches": launches(scenario)}


def test_server_killed_during_the_benchmark_is_a_crashed_cell_and_the_campaign_goes_on(killed):
    assert killed["rc"] == 0, killed["output"][-3000:]
    cell = read_cell(killed["base"], "e2e-killed", "float32_compute")
    assert cell["status"] == "crashed"
    assert cell["failure"]["failure_class"] == "process_exited"
    assert cell["levels"][0]["reason"] == "the server exited during the benchmark"
    assert [(lv["concurrency"], lv["status"], lv["reason"]) for lv in cell["levels"][1:]] == [
        (2, "skipped", "the server had exited")], cell["levels"]
    assert read_cell(killed["base"], "e2e-killed", "baseline")["status"] == "ok"
    # The stale server, the baseline's and the variant's: the killed server was not started again.
    assert [flags.get("--dtype") for _, flags in killed["launches"]] == [None, None, "float32"], killed["launches"]


def test_a_stale_server_on_the_port_is_stopped_before_the_campaign_starts(killed):
    assert pid_gone(killed["stale_pid"])
    assert read_cell(killed["base"], "e2e-killed", "baseline")["status"] == "ok"


def test_secrets_reach_no_artifact_log_or_report_even_from_a_crash(killed):
    assert SECRET not in killed["output"]
    scanned = 0
    for root in ("artifacts", "results", "state"):
        for path in (killed["base"] / root).rglob("*"):
            if path.is_file():
                scanned += 1
                assert SECRET.encode() not in path.read_bytes(), path
    assert scanned > 50


def test_start_up_past_the_timeout_is_a_timeout_cell_with_nothing_left_running(tmp_path, scripted_engine):
    port = free_port()
    # A start-up of 60 s against a time-out of 6 s.
    python = scripted_engine(startup_s=60)
    rc, output = run_fleetopt("run", "--only", "float32_compute",
                              *isolated(tmp_path, port, "e2e-timeout", fast_start=True, engine_python=python),
                              "-e", "campaign_startup_timeout=6")
    assert rc == 0, output[-3000:]
    for variant in ("baseline", "float32_compute"):
        cell = read_cell(tmp_path, "e2e-timeout", variant)
        assert cell["status"] == "timeout" and "not ready after 6 s" in cell["reason"]
        # ... and whether the server was still writing its log when it was stopped.
        assert re.search(r"; its log (last written \d+ s before|still empty)\); stopped it", cell["reason"]), \
            cell["reason"]
        assert "log_written_at" in cell["startup"]
    started = launches(scripted_engine.scenarios[0])
    assert len(started) == 2 and all(pid_gone(pid) for pid, _ in started), started
    assert processes_listening_as(port) == [], "a server process survived"


@pytest.fixture
def mounted(tmp_path):
    mounts = []

    def mount(options):
        target = tmp_path / ("mnt%d" % len(mounts))
        target.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], check=True)
        mounts.append(target)
        return target
    yield mount
    for target in mounts:
        subprocess.run(["umount", str(target)], check=False)


def test_a_read_only_results_folder_is_refused_before_anything_starts(tmp_path, local_engine, mounted):
    results = mounted("size=1m,ro")
    rc, output = run_fleetopt("run", "--only", "float32_compute", *isolated(tmp_path, free_port(), "e2e-ro"),
                              "--results", str(results))
    assert rc == 1
    assert "cannot take the campaign's results" in output and "Read-only file system" in output
    assert not (tmp_path / "state").exists()


def test_a_full_disk_is_refused_before_anything_starts(tmp_path, local_engine, mounted):
    results = mounted("size=256k")
    (results / "filler").write_bytes(b"\0" * 200 * 1024)
    rc, output = run_fleetopt("run", "--only", "float32_compute", *isolated(tmp_path, free_port(), "e2e-full"),
                              "--results", str(results))
    assert rc == 1
    assert "MiB free under" in output and "campaign_min_free_mb" in output
    assert not (tmp_path / "state").exists()


def test_a_stop_that_cannot_free_the_gpu_makes_the_host_unhealthy_and_the_report_is_still_written(tmp_path,
                                                                                                  scripted_engine):
    # An nvidia-smi whose GPU is free before the first launch and never again after it: the
    # memory a stopped server held does not come back, as when a process escaped the stop.
    calls = tmp_path / "smi-calls"
    smi = tmp_path / "nvidia-smi"
    smi.write_text('#!/bin/sh\n[ "$1" = "--query-gpu=index,memory.used" ] || exit 6\n'
                   'n=$(cat %s 2>/dev/null || echo 0); echo $((n + 1)) > %s\n'
                   'if [ "$n" -eq 0 ]; then echo "0, 3"; else echo "0, 8000"; fi\n' % (calls, calls))
    smi.chmod(0o755)
    port = free_port()
    rc, output = run_fleetopt("run", "--only", "float32_compute",
                              *isolated(tmp_path, port, "e2e-unhealthy", fast_start=True, engine_python=scripted_engine()),
                              "-e", "campaign_nvidia_smi=%s" % smi, "-e", "campaign_release_timeout=2")
    assert rc == 1, output[-3000:]
    assert "localhost is unhealthy" in output
    baseline = read_cell(tmp_path, "e2e-unhealthy", "baseline")
    assert baseline["status"] == "ok", "what was measured is kept"
    assert baseline["stop"]["gpu_memory"]["still_held"] == ["0"]
    skipped = read_cell(tmp_path, "e2e-unhealthy", "float32_compute")
    assert skipped["status"] == "skipped"
    assert "GPU memory on GPU 0" in skipped["reason"]
    assert (tmp_path / "results" / "e2e-unhealthy" / "report.md").exists()
    assert processes_listening_as(port) == []
    # The server log and the raw benchmark output are on the controller, beside the cells.
    logs = tmp_path / "results" / "e2e-unhealthy" / "logs" / "localhost"
    assert "Application startup complete" in (logs / "baseline.log").read_text()
    assert json.loads((logs / "baseline-c1-t1.json").read_text())["completed"] > 0
    assert baseline["startup"]["log_on_controller"] == "logs/localhost/baseline.log"
