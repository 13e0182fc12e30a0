"""The lifecycle and benchmark modules against the real vLLM server; and, on the scripted engine, the benchmark of a
server that dies during it (what fleetopt_bench and fleetopt_server make of the death, not the engine's).

The first three tests share one server, in order: its start and a second start that changes
nothing, the per-request token timings it serves, then its stop.

Token timings: the model the set-up generates must make a decode step cost measurable engine time, or ITL and
TPOT mean nothing (with a model too small, the API server falls behind and time to first token is most of a
request). The test runs the engine's own client with --save-detailed. A decode step's time, the run's duration times
its concurrency over the tokens it delivered, is above 1 ms at concurrency 1 and 4 (a tenth of what the default
model gives on a 2-core machine, so a faster host passes; a hundred times the too-small model's); a busy host can
only lengthen it. At concurrency 1 each request's own time per output token after its first (TPOT) is above that
floor too, and time to first token is a minority of a request. Per-token gaps are not asserted: vLLM's API server
sends the tokens it has together whenever another process held the CPU, at any concurrency, so their median can be
microseconds on a host where TPOT is milliseconds.
"""
import json
import os
import signal
import statistics
import subprocess
import threading
import time

import pytest

from e2e.conftest import local_server_args
from helpers import free_port, pid_gone
from module_runner import run_module

pytestmark = pytest.mark.timed

DECODE_FLOOR_S = 0.001
MAX_TTFT_SHARE = 0.5
OUTPUT_LEN = 64


def server_args(engine, folder, port, **extra):
    return local_server_args(engine, folder, port, "e2e", max_model_len=512, **extra)


@pytest.fixture(scope="module")
def served(local_engine, tmp_path_factory):
    """One server for the tests that do not stop it unexpectedly; test_stop_frees_the_port_quickly stops it."""
    folder, port = tmp_path_factory.mktemp("served"), free_port()
    started = run_module("fleetopt_server", server_args(local_engine, folder, port))
    yield {"started": started, "folder": folder, "port": port}
    run_module("fleetopt_server", server_args(local_engine, folder, port, state="stopped"))


def test_start_is_idempotent(local_engine, served):
    started, server = served["started"], served["started"]["server"]
    assert started["changed"] and server["status"] == "ready", started
    assert 0 <= server["ready_noticed_after_s"] < server["startup_s"]
    assert {"launch", "engine_init", "weights", "kv_cache", "http"} <= set(server["phases"])
    again = run_module("fleetopt_server", server_args(local_engine, served["folder"], served["port"]))
    assert again["changed"] is False and again["server"]["pid"] == server["pid"]


def bench(engine, base_url, result_dir, concurrency, prompts, warmups):
    name = "c%d.json" % concurrency
    cmd = [engine["python"], "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "openai",
           "--base-url", base_url, "--model", "tiny", "--tokenizer", engine["model"],
           "--dataset-name", "random", "--random-input-len", "64", "--random-output-len", str(OUTPUT_LEN),
           "--num-prompts", str(prompts), "--max-concurrency", str(concurrency), "--num-warmups", str(warmups),
           "--ignore-eos", "--seed", "0", "--disable-tqdm", "--save-result", "--save-detailed",
           "--result-dir", str(result_dir), "--result-filename", name]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
    assert proc.returncode == 0, proc.stdout.decode("utf-8", "replace")[-3000:]
    result = json.loads((result_dir / name).read_text())
    assert result["completed"] == prompts and result["failed"] == 0, result.get("errors")
    return result


def timings(result):
    return {
        "median_tpot_ms": 1000 * statistics.median(
            (e2e - ttft) / (tokens - 1) for e2e, ttft, tokens in zip(result["latencies"], result["ttfts"],
                                                                    result["output_lens"])),
        "median_itl_ms": 1000 * statistics.median(gap for request in result["itls"] for gap in request),
        "ttft_share": [ttft / e2e for ttft, e2e in zip(result["ttfts"], result["latencies"])],
        "decode_step_ms": 1000 * result["duration"] * result["max_concurrency"] / result["total_output_tokens"],
    }


def test_decode_steps_take_measurable_time_and_ttft_is_a_minority_of_a_request(local_engine, served, tmp_path):
    assert served["started"]["server"]["status"] == "ready", served["started"]
    base_url = served["started"]["server"]["base_url"]
    # One warm-up wave per level, then a few requests: a few seconds of client time in all.
    results = {c: bench(local_engine, base_url, tmp_path / "bench", c, prompts, warmups=c)
               for c, prompts in ((1, 8), (4, 8))}
    seen = {c: timings(r) for c, r in results.items()}
    for concurrency, t in seen.items():
        assert t["decode_step_ms"] > 1000 * DECODE_FLOOR_S, (concurrency, seen)
    assert seen[1]["median_tpot_ms"] > 1000 * DECODE_FLOOR_S, seen
    assert statistics.median(seen[1]["ttft_share"]) < MAX_TTFT_SHARE, seen


def test_stop_frees_the_port_quickly(local_engine, served):
    server = served["started"]["server"]
    requested = time.time()
    stopped = run_module("fleetopt_server", server_args(local_engine, served["folder"], served["port"], state="stopped"))
    assert stopped["server"]["stop"]["port_free"] is True
    assert time.time() - requested < 10
    assert pid_gone(server["pid"])


def test_an_unknown_flag_is_classified_when_the_engine_refuses_it(local_engine, tmp_path):
    result = run_module("fleetopt_server", server_args(local_engine, tmp_path, free_port(), flags={"--warp-drive": True}))
    assert result["failed"] is True
    assert result["server"]["status"] == "crashed"
    assert result["server"]["failure"]["failure_class"] == "invalid_server_args"
    assert "--warp-drive" in result["server"]["failure"]["evidence"][0]["text"]


def test_a_server_killed_during_the_benchmark_fails_that_level_and_is_explained(local_engine, scripted_engine,
                                                                                 tmp_path):
    port = free_port()
    # 128 tokens at 10 ms a token: the first level's 200 requests last minutes, the kill lands in it.
    python = scripted_engine(per_token_s=0.01)
    started = run_module("fleetopt_server", server_args(local_engine, tmp_path, port, python=python))
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
            server_pid=pid, max_warmup_runs=0))  # killed during a measured run, not a warm-up run
    finally:
        killer.join()
    assert bench["server_died"] is True
    statuses = [lv["status"] for lv in bench["levels"]]
    assert "failed" in statuses and statuses[-1] == "skipped", bench["levels"]
    assert any(lv.get("reason") == "the server exited during the benchmark" for lv in bench["levels"])
    after = run_module("fleetopt_server", server_args(local_engine, tmp_path, port, python=python, state="stopped"))
    assert after["died"] is True and after["server"]["status"] == "crashed"
