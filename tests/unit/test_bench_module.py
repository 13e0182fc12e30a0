import json
import subprocess
import sys

from helpers import FIXTURES
from module_runner import run_module

RESULT = str(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json")


def bench(python, tmp_path, **extra):
    args = dict(engine="vllm", python=python, base_url="http://127.0.0.1:9", served_model_name="m",
                tokenizer=str(tmp_path), concurrency=[1, 4], result_dir=str(tmp_path / "bench"), name="v")
    args.update(extra)
    return run_module("fleetopt_bench", args)


def test_each_level_is_run_and_normalized(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0.1, "bench"]], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, trials=2)
    assert [(lv["concurrency"], lv["trial"], lv["status"]) for lv in result["levels"]] == [
        (1, 1, "ok"), (1, 2, "ok"), (4, 1, "ok"), (4, 2, "ok")]
    metrics = result["levels"][0]["metrics"]
    recorded = json.load(open(RESULT))
    assert metrics["output_throughput"] == recorded["output_throughput"]
    assert metrics["total_throughput"] == recorded["total_token_throughput"]
    assert metrics["mean_e2e_latency_ms"] == recorded["mean_e2el_ms"]
    assert result["levels"][2]["num_prompts"] == 40  # 10 per unit of concurrency, at least 32
    assert [lv["warmups"] for lv in result["levels"]] == [8, 8, 8, 8]  # 2 per unit of concurrency, at least 8
    assert "--max-concurrency" in result["client"] and result["server_died"] is False


def test_zero_completed_requests_is_a_failure_with_a_reason(scripted_python, tmp_path):
    empty = tmp_path / "empty.json"
    data = json.load(open(RESULT))
    data.update(completed=0, failed=40)
    empty.write_text(json.dumps(data))
    python = scripted_python({"lines": [], "client_result": str(empty), "exit_code": 0})
    level = bench(python, tmp_path, concurrency=[4])["levels"][0]
    assert level["status"] == "failed" and "completed no request" in level["reason"]
    assert level["metrics"] is None


def test_a_failing_client_fails_its_level_with_its_output(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0, "ConnectionRefusedError: [Errno 111]"]], "exit_code": 1})
    level = bench(python, tmp_path, concurrency=[1])["levels"][0]
    assert level["status"] == "failed"
    assert "exited with code 1" in level["reason"] and "ConnectionRefusedError" in level["reason"]


def test_server_dying_mid_run_fails_that_level_and_skips_the_rest(scripted_python, tmp_path):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"], start_new_session=True)
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1, 4, 16], server_pid=server.pid)
    server.wait()
    assert not result.get("failed"), "a dead server fails the level, not the module"
    assert result["server_died"] is True
    assert [lv["status"] for lv in result["levels"]] == ["failed", "skipped", "skipped"]
    assert result["levels"][0]["reason"] == "the server exited during the benchmark"


def test_check_mode_runs_nothing(tmp_path):
    checked = run_module("fleetopt_bench", dict(engine="vllm", python="/x", base_url="u", served_model_name="m",
                                                tokenizer="/t", concurrency=[1], result_dir=str(tmp_path / "c"), name="v"),
                         check_mode=True)
    assert checked["levels"] == [] and not (tmp_path / "c").exists()
