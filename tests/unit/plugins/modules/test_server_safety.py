"""fleetopt_server on the things a real fleet hits: stops that cannot finish, GPU memory that
comes back late, secrets in engines that echo their arguments, exit codes after the module
returned, readiness measured from the ready line's write, leases, and stale state files."""
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time

import pytest

from helpers import ROOT, pid_gone
from module_runner import run_module
from test_server_module import READY, stamp_of

SECRET = "sk-LIVE-4f9a8b7c6d5e"


@pytest.fixture
def fake_gpu(tmp_path):
    """An nvidia-smi that reports the memory scripted_process.py holds in a file."""
    memory = tmp_path / "gpu.json"
    memory.write_text(json.dumps({"0": 3}))
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nFLEETOPT_FAKE_GPU_FILE=%s exec %s %s \"$@\"\n"
                   % (memory, sys.executable, ROOT / "tests" / "fake_nvidia_smi.py"))
    smi.chmod(0o755)
    return {"file": str(memory), "smi": str(smi)}


def session_alive(sid):
    for name in os.listdir("/proc"):
        try:
            fields = open("/proc/%s/stat" % name).read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            return True
    return False


def kill(pid):
    try:
        os.kill(pid, 9)
    except OSError:
        pass


def test_gpu_release_waits_for_each_gpus_memory_not_for_pids(scripted_python, server_args, port, fake_gpu):
    python = scripted_python({"lines": READY, "serve_health_on": port, "gpu_file": fake_gpu["file"],
                              "gpu_hold_mib": 8000, "gpu_release_delay_s": 1.5})
    started = run_module("fleetopt_server", server_args(python, nvidia_smi=fake_gpu["smi"]))
    assert started["server"]["status"] == "ready"
    assert started["server"]["gpu_before_mib"] == {"0": 3}
    stopped = run_module("fleetopt_server", server_args(python, state="stopped", nvidia_smi=fake_gpu["smi"]))
    memory = stopped["server"]["stop"]["gpu_memory"]
    # Every process was gone at once; the memory came back 1.5 s after the last one ended, and the stop waited for it
    # (how long it saw itself wait depends on how soon it saw the processes gone).
    assert memory["released"] is True and memory["after_mib"] == {"0": 0}
    assert memory["waited_s"] > 0
    assert stopped["server"]["stop"]["gpu_released"] is True


def test_memory_that_never_comes_back_keeps_the_server_and_marks_the_host_unhealthy(
        scripted_python, server_args, port, fake_gpu, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port, "gpu_file": fake_gpu["file"],
                              "gpu_hold_mib": 8000, "gpu_release_delay_s": None})
    args = dict(nvidia_smi=fake_gpu["smi"], release_timeout=1)
    assert run_module("fleetopt_server", server_args(python, **args))["server"]["status"] == "ready"
    stopped = run_module("fleetopt_server", server_args(python, state="stopped", **args))
    assert stopped["failed"] is True and stopped["unhealthy"] is True
    assert "GPU memory on GPU 0" in stopped["msg"]
    assert (tmp_path / "run" / "t.json").exists(), "a server that still holds resources is never forgotten"
    again = run_module("fleetopt_server", server_args(python, **args))
    assert again["failed"] is True and again["unhealthy"] is True
    assert "already in use" not in again["msg"]


def test_a_gpu_held_by_another_process_is_a_launch_error_not_a_crash(scripted_python, server_args, fake_gpu, tmp_path):
    with open(fake_gpu["file"], "w") as handle:
        json.dump({"0": 3, "1": 40000}, handle)
    result = run_module("fleetopt_server", server_args(scripted_python({"lines": READY}), nvidia_smi=fake_gpu["smi"]))
    assert result["failed"] is True
    assert result["server"]["status"] == "error"
    assert result["server"]["failure"]["failure_class"] == "launch_failed"
    assert "GPU 1" in result["msg"] and "40000 MiB" in result["msg"]
    assert not (tmp_path / "logs" / "server.log").exists(), "nothing was launched"


def test_a_missing_interpreter_is_a_launch_error_with_a_failure(server_args):
    result = run_module("fleetopt_server", server_args("/nonexistent/python"))
    assert result["server"]["status"] == "error"
    assert result["server"]["failure"]["failure_class"] == "launch_failed"
    assert "does not exist" in result["server"]["failure"]["root_cause"]


def test_a_process_that_escaped_the_session_with_the_port_is_never_forgotten(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port + 1 if port < 65000 else port - 1,
                              "escape_holding_port": port})
    first = run_module("fleetopt_server", server_args(python, startup_timeout=3, release_timeout=1))
    escaped = []
    try:
        # Readiness never comes on the port the module asks (the escapee holds it): time-out, stop.
        assert first["server"]["status"] == "timeout"
        assert first["unhealthy"] is True and first["server"]["stop"]["port_free"] is False
        escaped = [int(p) for p in subprocess.run(["sh", "-c", "ss -ltnpH 'sport = :%d' | grep -o 'pid=[0-9]*' | cut -d= -f2"
                                                          % port], capture_output=True, text=True).stdout.split()]
        second = run_module("fleetopt_server", server_args(python, release_timeout=1))
        assert second["failed"] is True and second["unhealthy"] is True
        assert "port %d" % port in second["msg"]
        assert (tmp_path / "run" / "t.json").exists()
    finally:
        for pid in escaped:
            kill(pid)
        subprocess.run(["pkill", "-9", "-f", "s.bind\\(\\('127.0.0.1', %d\\)" % port])
    time.sleep(0.3)
    cleared = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert not cleared.get("failed") and not (tmp_path / "run" / "t.json").exists()


def test_sglang_echoing_its_arguments_never_puts_the_key_on_disk(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port, "echo_args": True})
    args = server_args(python, engine="sglang", api_key=SECRET, secret_env={"HF_TOKEN": "hf-SECRET-2"})
    result = run_module("fleetopt_server", args)
    try:
        log = tmp_path / "logs" / "server.log"
        text = log.read_text()
        assert "server_args=ServerArgs" in text and "<redacted>" in text
        assert SECRET not in text and SECRET not in json.dumps(result)
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        for path in (tmp_path / "run").iterdir():
            assert SECRET not in path.read_text(errors="replace"), path
            assert "hf-SECRET-2" not in path.read_text(errors="replace"), path
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))


def test_the_configuration_hash_holds_no_secret(scripted_python, server_args, port):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    hashes = []
    for key in ("sk-one", "sk-two"):
        result = run_module("fleetopt_server", server_args(python, engine="sglang", api_key=key))
        hashes.append(result["server"]["config_hash"])
        run_module("fleetopt_server", server_args(python, state="stopped"))
    assert hashes[0] == hashes[1], "the hash must not depend on (and so reveal) the key"


def test_exit_code_is_known_after_the_launching_call_returned(scripted_python, server_args, port):
    python = scripted_python({"lines": READY + [[0.8, "bye"]], "serve_health_on": port, "exit_code": 7})
    assert run_module("fleetopt_server", server_args(python))["server"]["status"] == "ready"
    time.sleep(1.5)
    result = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert result["died"] is True and result["server"]["exit_code"] == 7


def test_readiness_latency_is_measured_from_the_ready_lines_write(scripted_python, server_args, port, tmp_path):
    stamps = str(tmp_path / "stamps")
    python = scripted_python({"lines": READY, "serve_health_on": port, "stamp_file": stamps})
    result = run_module("fleetopt_server", server_args(python))
    returned = time.time()
    try:
        server = result["server"]
        written = stamp_of(stamps, READY[-1][1])
        noticed = server["ready_written_at"] + server["ready_noticed_after_s"]
        # The supervisor records the write as the line passes through it, not when the module reads the log (how
        # soon the module notices is a figure of tests/benchmarks/campaign_overhead.py, not a bound here).
        assert written <= server["ready_written_at"] <= noticed <= returned
        assert server["ready_written_at"] - written < 2.0
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))


def test_a_lease_that_is_not_renewed_stops_the_server_and_says_so(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port, "spawn_child": True})
    label = {"campaign": "nightly", "cell": "float32_compute", "variant": "float32_compute", "launch": 1}
    started = run_module("fleetopt_server", server_args(python, lease_s=2, label=label))
    assert started["server"]["label"] == label
    sid = started["server"]["sid"]
    deadline = time.time() + 15
    while session_alive(sid) and time.time() < deadline:
        time.sleep(0.2)
    assert not session_alive(sid), "the lease ran out and nobody stopped the server and its child"
    # Check mode says what it found and keeps the state file for the real run.
    looked = run_module("fleetopt_server", server_args(python, state="stopped"), check_mode=True)
    assert looked["died"] is True and looked["server"]["label"] == label
    assert (tmp_path / "run" / "t.json").exists()
    result = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert result["died"] is True
    assert result["server"]["failure"]["failure_class"] == "lease_expired"
    assert "Stopped by its lease at" in result["server"]["failure"]["root_cause"]
    # Whoever finds it knows which cell of which campaign it served, and when the lease ended.
    assert result["server"]["label"] == label
    assert result["server"]["stopped_by"] == "lease"
    assert started["server"]["lease_path"] and time.time() - 15 < result["server"]["lease_expired_at"] < time.time()
    assert not (tmp_path / "run" / "t.json").exists()


def test_the_label_is_kept_in_the_state_and_follows_the_running_server(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    first = run_module("fleetopt_server", server_args(python, label={"campaign": "c1", "cell": "baseline"}))
    try:
        assert json.loads((tmp_path / "run" / "t.json").read_text())["label"] == {"campaign": "c1", "cell": "baseline"}
        # The same configuration for another cell keeps the server (no change) and takes the new label.
        again = run_module("fleetopt_server", server_args(python, label={"campaign": "c1", "cell": "baseline_aa"}))
        assert again["changed"] is False and again["server"]["pid"] == first["server"]["pid"]
        assert again["server"]["label"] == {"campaign": "c1", "cell": "baseline_aa"}
        looked = run_module("fleetopt_server", server_args(python, label={"campaign": "c1", "cell": "x"}), check_mode=True)
        assert looked["changed"] is False
        assert json.loads((tmp_path / "run" / "t.json").read_text())["label"]["cell"] == "baseline_aa"
    finally:
        stopped = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert stopped["server"]["status"] == "stopped" and stopped["server"]["label"]["cell"] == "baseline_aa"
    assert stopped["server"]["stopped_by"] is None


def test_a_renewed_lease_never_stops_a_healthy_server(scripted_python, server_args, port):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    # Renewed every 2 s for 12 s and more, past the 8 s lease: a renewal may take up to 6 s on a busy host.
    started = run_module("fleetopt_server", server_args(python, lease_s=8))
    try:
        for _ in range(6):
            time.sleep(2)
            again = run_module("fleetopt_server", server_args(python, lease_s=8))
            assert again["changed"] is False, again
        assert not pid_gone(started["server"]["pid"])
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))


def test_a_stale_state_file_never_signals_an_unrelated_process(server_args, tmp_path):
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        (tmp_path / "run").mkdir()
        boot_id = open("/proc/sys/kernel/random/boot_id").read().strip()
        state = {"pid": stranger.pid, "sid": stranger.pid, "port": 1, "config_hash": "x", "status": "ready",
                 "identity": {"pid": stranger.pid, "start_ticks": 1, "boot_id": boot_id}, "log_path": None}
        (tmp_path / "run" / "t.json").write_text(json.dumps(state))
        run_module("fleetopt_server", server_args("/bin/true", state="stopped"))
        time.sleep(0.3)
        assert stranger.poll() is None, "fleetopt signalled a process it did not start"
    finally:
        stranger.kill()
        stranger.wait()


def continue_once_created(pid, path, done):
    """Let the stopped process `pid` go on once `path` exists (or `done` is set)."""
    while not os.path.exists(path) and not done.wait(0.02):
        pass
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass


@pytest.mark.parametrize("recorded", [True, False], ids=["exit_recorded", "stop_before_the_exit_is_recorded"])
def test_a_server_that_died_while_its_children_live_on_is_reported_dead_and_cleaned_up(
        scripted_python, server_args, port, tmp_path, recorded):
    # As vLLM's API server killed mid-benchmark, or SGLang's launcher whose schedulers linger: its
    # engine processes outlive it for a while. Its supervisor records the exit at its next look (every
    # POLL_S, later on a busy host), so the stop may come before the exit is recorded or after.
    go, child_got_sigterm = tmp_path / "go", tmp_path / "child-got-sigterm"
    python = scripted_python({"lines": READY + [[0, "@await"], [0, "bye"]], "go_file": str(go),
                              "serve_health_on": port, "spawn_child": True,
                              "child_sigterm_file": str(child_got_sigterm), "exit_code": 1})
    started = run_module("fleetopt_server", server_args(python))
    assert started["server"]["status"] == "ready"
    sid = started["server"]["sid"]
    done = threading.Event()
    resume = None
    if not recorded:
        # The supervisor is held before its server exits and goes on only once the stop has begun
        # (the child got its SIGTERM): the stop decides before the exit is recorded.
        os.kill(sid, signal.SIGSTOP)
        resume = threading.Thread(target=continue_once_created, args=(sid, str(child_got_sigterm), done))
        resume.start()
    try:
        go.touch()
        deadline = time.time() + 15
        while not pid_gone(started["server"]["pid"]) and time.time() < deadline:
            time.sleep(0.05)
        assert pid_gone(started["server"]["pid"]), "the server never exited"
        if recorded:
            status = tmp_path / "run" / "t.status"
            while json.loads(status.read_text()).get("exit_code") is None and time.time() < deadline:
                time.sleep(0.05)
            assert json.loads(status.read_text())["exit_code"] == 1, "the supervisor never recorded the exit"
        assert session_alive(sid), "the server's child lives on"
        after = run_module("fleetopt_server", server_args(python, state="stopped"))
    finally:
        done.set()
        if resume is not None:
            resume.join()
    assert after.get("died") is True, after
    assert after["server"]["status"] == "crashed"
    assert after["server"]["exit_code"] == 1
    assert after["server"]["stop"]["complete"] is True, "what the dead server left must be stopped"
    assert not session_alive(sid)
