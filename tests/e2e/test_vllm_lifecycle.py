"""The lifecycle and benchmark modules against the real vLLM server."""
import os
import signal
import threading
import time


from e2e.conftest import local_server_args
from helpers import free_port, pid_gone
from module_runner import run_module



def server_args(engine, tmp_path, port, **extra):
    return local_server_args(engine, tmp_path, port, "e2e", max_model_len=512, **extra)


def test_start_is_idempotent_and_stop_frees_the_port_quickly(local_engine, tmp_path):
    port = free_port()
    started = run_module("fleetopt_server", server_args(local_engine, tmp_path, port))
    try:
        server = started["server"]
        assert started["changed"] and server["status"] == "ready", started
        assert server["ready_noticed_after_s"] < 0.5
        assert {"launch", "engine_init", "weights", "kv_cache", "http"} <= set(server["phases"])
        again = run_module("fleetopt_server", server_args(local_engine, tmp_path, port))
        assert again["changed"] is False and again["server"]["pid"] == server["pid"]
    finally:
        requested = time.time()
        stopped = run_module("fleetopt_server", server_args(local_engine, tmp_path, port, state="stopped"))
    assert stopped["server"]["stop"]["port_free"] is True
    assert time.time() - requested < 10
    assert pid_gone(server["pid"])


def test_an_unknown_flag_is_classified_when_the_engine_refuses_it(local_engine, tmp_path):
    result = run_module("fleetopt_server", server_args(local_engine, tmp_path, free_port(), flags={"--warp-drive": True}))
    assert result["failed"] is True
    assert result["server"]["status"] == "crashed"
    assert result["server"]["failure"]["failure_class"] == "invalid_server_args"
    assert "--warp-drive" in result["server"]["failure"]["evidence"][0]["text"]


def test_a_server_killed_during_the_benchmark_fails_that_level_and_is_explained(local_engine, tmp_path):
    port = free_port()
    started = run_module("fleetopt_server", server_args(local_engine, tmp_path, port))
    assert started["server"]["status"] == "ready", started
    pid = started["server"]["pid"]
    # The engine dies on its own (the supervisor, which owns the session, stays to record it).
    killer = threading.Timer(8.0, lambda: os.kill(pid, signal.SIGKILL))
    killer.start()
    try:
        bench = run_module("fleetopt_bench", dict(
            engine="vllm", python=local_engine["python"], base_url=started["server"]["base_url"],
            served_model_name="tiny", tokenizer=local_engine["model"], concurrency=[1, 2, 4],
            prompts_per_concurrency=200, output_len=128, result_dir=str(tmp_path / "bench"), name="killed",
            server_pid=pid))
    finally:
        killer.join()
    assert bench["server_died"] is True
    statuses = [lv["status"] for lv in bench["levels"]]
    assert "failed" in statuses and statuses[-1] == "skipped", bench["levels"]
    assert any(lv.get("reason") == "the server exited during the benchmark" for lv in bench["levels"])
    after = run_module("fleetopt_server", server_args(local_engine, tmp_path, port, state="stopped"))
    assert after["died"] is True and after["server"]["status"] == "crashed"
