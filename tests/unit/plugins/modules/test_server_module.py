import json
import os
import pathlib
import re
import time

from module_runner import run_module
from helpers import ForeignListener, pid_gone

READY = [[0.1, "(EngineCore pid=1) INFO 11-29 09:05:20 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: "
               "model='/m', dtype=torch.bfloat16, tensor_parallel_size=1, enforce_eager=False, "
               "compilation_config={'mode': <CompilationMode.DYNAMO_TRACE_ONCE: 2>, 'backend': 'inductor'}"],
         [0.2, "(Worker pid=2) INFO Starting to load model /m..."],
         [0.2, "(EngineCore pid=1) INFO CPU KV cache size: 1,024 tokens"],
         [0.1, "@serve"],
         [0.2, "(APIServer pid=3) INFO Starting vLLM server on http://127.0.0.1:1"],
         [0.1, "INFO:     Application startup complete."]]


def stamp_of(path, text):
    for row in open(path):
        at, line = row.split(" ", 1)
        if line.strip() == text:
            return float(at)
    raise AssertionError("%s never written" % text)


def test_ready_server_reports_phases_and_is_no_change_the_second_time(scripted_python, server_args, port):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    first = run_module("fleetopt_server", server_args(python))
    try:
        assert first["changed"] is True
        server = first["server"]
        assert server["status"] == "ready"
        assert list(server["phases"]) == ["launch", "engine_init", "weights", "kv_cache", "http"]
        assert server["phases"]["kv_cache"]["info"]["kv_tokens"] == "1,024"
        # Noticed from the log, not at the deadline; how soon on a given host is a figure, not a test.
        assert 0 <= server["ready_noticed_after_s"] < 10
        # What the server stated it runs, read back from its own configuration line.
        assert server["effective"]["settings"] == {
            "dtype": "torch.bfloat16", "tensor_parallel_size": 1, "enforce_eager": False,
            "compilation_mode": "CompilationMode.DYNAMO_TRACE_ONCE", "compile_backend": "inductor"}
        assert server["effective"]["source"] == "log line 1"
        again = run_module("fleetopt_server", server_args(python))
        assert again["changed"] is False and again["server"]["pid"] == server["pid"]
    finally:
        stopped = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert stopped["changed"] is True
    assert stopped["server"]["stop"]["port_free"] is True
    assert pid_gone(server["pid"])


def test_changed_configuration_restarts_the_server(scripted_python, server_args, port):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    first = run_module("fleetopt_server", server_args(python))
    try:
        second = run_module("fleetopt_server", server_args(python, flags={"--enforce-eager": True}))
        assert second["changed"] is True
        assert second["server"]["pid"] != first["server"]["pid"]
        assert pid_gone(first["server"]["pid"])
        assert second["server"]["argv"][-1] == "--enforce-eager"
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))


def test_crash_line_is_classified_from_the_log_while_the_process_lives_on(scripted_python, server_args, tmp_path):
    stamp = str(tmp_path / "stamps")
    crash_line = "(APIServer pid=3) api_server.py: error: unrecognized arguments: --bogus"
    python = scripted_python({"lines": READY[:2] + [[1.0, crash_line], [30.0, "still alive"]], "stamp_file": stamp})
    result = run_module("fleetopt_server", server_args(python))
    returned = time.time()
    assert result["failed"] is True
    server = result["server"]
    assert server["status"] == "crashed"
    assert server["failure"]["failure_class"] == "invalid_server_args"
    assert server["failure"]["evidence"][0]["line"] == 3
    # The line ended the wait: the module returned long before the process would have gone on, and stopped it.
    assert returned - stamp_of(stamp, crash_line) < 15
    assert "still alive" not in pathlib.Path(stamp).read_text()
    assert pid_gone(server["pid"])


def test_process_death_without_a_known_line_is_reported_at_once(scripted_python, server_args):
    python = scripted_python({"lines": [[0.1, "starting"], [0.5, "bye"]], "exit_code": 3})
    started = time.time()
    result = run_module("fleetopt_server", server_args(python, startup_timeout=60))
    # At once: long before the start-up deadline, however busy the host.
    assert time.time() - started < 30
    assert result["server"]["status"] == "crashed"
    assert result["server"]["failure"]["failure_class"] == "process_exited"
    assert result["server"]["exit_code"] == 3


def test_startup_timeout_stops_the_server_and_its_children(scripted_python, server_args):
    python = scripted_python({"lines": [[0.1, "(EngineCore pid=1) INFO Initializing a V1 LLM engine (v0.32.0)"]],
                              "spawn_child": True, "ignore_sigterm": True})
    result = run_module("fleetopt_server", server_args(python, startup_timeout=2, stop_timeout=1))
    server = result["server"]
    assert result["failed"] is True and server["status"] == "timeout"
    assert server["phase"] == "engine_init"
    assert server["stop"]["killed"], "SIGTERM was ignored, so SIGKILL must have been sent"
    assert server["stop"]["remaining"] == []
    assert pid_gone(server["pid"])


def test_a_start_up_stopped_at_its_deadline_says_when_its_log_last_grew(scripted_python, server_args):
    """Whether the server was still writing when its deadline came (raise the deadline) or had been silent for
    long (look for a hang) is the first thing a timed-out start-up's reader needs."""
    python = scripted_python({"lines": [[0.1, "(EngineCore pid=1) INFO Initializing a V1 LLM engine (v0.32.0)"],
                                        [0.1, "(Worker pid=2) INFO Starting to load model /m..."]]})
    result = run_module("fleetopt_server", server_args(python, startup_timeout=3))
    returned = time.time()
    server = result["server"]
    assert server["status"] == "timeout"
    written = os.stat(server["log_path"]).st_mtime
    assert server["log_written_at"] == round(written, 3)
    quiet = re.search(r"last phase: weights; its log last written (\d+) s before\)", result["msg"])
    assert quiet, result["msg"]
    assert 0 <= int(quiet.group(1)) <= returned - written + 1


def test_a_start_up_that_wrote_nothing_by_its_deadline_says_so(scripted_python, server_args):
    result = run_module("fleetopt_server", server_args(scripted_python({"lines": [[30.0, "late"]]}), startup_timeout=2))
    assert result["server"]["status"] == "timeout"
    assert "(last phase: launch; its log still empty)" in result["msg"], result["msg"]
    assert result["server"]["log_written_at"] is None


def test_port_held_by_a_foreign_process_is_an_error_and_that_process_is_left_alone(scripted_python, server_args, port):
    with ForeignListener(port) as holder:
        result = run_module("fleetopt_server", server_args(scripted_python({"lines": READY})))
        assert result["failed"] is True
        assert "already in use" in result["msg"] and "left alone" in result["msg"]
        assert result["holders"][0]["pid"] == holder.pid
        assert holder.alive()


def test_check_mode_launches_nothing(scripted_python, server_args, tmp_path):
    result = run_module("fleetopt_server", server_args(scripted_python({"lines": READY})), check_mode=True)
    assert result["changed"] is True and "would launch" in result["msg"]
    assert not (tmp_path / "logs" / "server.log").exists()


def test_stopping_nothing_is_no_change(server_args, tmp_path):
    result = run_module("fleetopt_server", server_args("/nonexistent", state="stopped"))
    assert result["changed"] is False and result["server"]["status"] == "stopped"


def test_a_server_that_died_on_its_own_is_explained_when_stopped(scripted_python, server_args, port, tmp_path):
    go = tmp_path / "go"
    python = scripted_python({"lines": READY + [[0, "@await"],
                                                [0, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"]],
                              "go_file": str(go), "serve_health_on": port, "exit_code": 1})
    started = run_module("fleetopt_server", server_args(python))
    assert started["server"]["status"] == "ready"
    go.write_text("")  # the crash comes once the start has been reported ready
    deadline = time.time() + 20
    while not pid_gone(started["server"]["pid"]) and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)  # the supervisor's poll records the exit code
    result = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert result["died"] is True
    assert result["server"]["failure"]["failure_class"] == "cuda_oom"
    assert not os.path.exists(os.path.join(str(tmp_path / "run"), "t.json"))


def test_secrets_never_reach_the_result_or_the_state_file(scripted_python, server_args, port, tmp_path):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    result = run_module("fleetopt_server", server_args(python, api_key="sk-VERYSECRET", secret_env={"HF_TOKEN": "hf-SECRET2"}))
    try:
        blob = json.dumps(result) + (tmp_path / "run" / "t.json").read_text()
        assert result["server"]["status"] == "ready"
        assert "VERYSECRET" not in blob and "hf-SECRET2" not in blob
        # vLLM echoes its arguments into its log, so the key travels in its environment instead.
        assert "--api-key" not in result["server"]["argv"]
        environ = open("/proc/%d/environ" % result["server"]["pid"], "rb").read().split(b"\0")
        assert b"VLLM_API_KEY=sk-VERYSECRET" in environ and b"HF_TOKEN=hf-SECRET2" in environ
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))
