import json

import pytest

from helpers import FIXTURES
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import BenchmarkFailed, METRIC_KEYS
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter


def test_server_command_runs_the_api_server_module_with_rendered_flags():
    argv = get_adapter("vllm").server_command("/venv/bin/python", "/m", "tiny", "127.0.0.1", 8700,
                                              {"--enforce-eager": True, "--max-model-len": 1024})
    assert argv[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--port") + 1] == "8700"
    assert argv[-3:] == ["--enforce-eager", "--max-model-len", "1024"]


def test_bench_command_is_offline_and_writes_where_it_is_told():
    adapter = get_adapter("vllm")
    argv = adapter.bench_command("/p", "http://h:1", "tiny", "/tok", 8, 80, 64, 32, 5, "/out/dir/r.json")
    assert argv[argv.index("--dataset-name") + 1] == "random"
    assert argv[argv.index("--tokenizer") + 1] == "/tok"
    assert argv[argv.index("--max-concurrency") + 1] == "8"
    assert argv[argv.index("--result-dir") + 1] == "/out/dir"
    assert argv[argv.index("--result-filename") + 1] == "r.json"
    assert adapter.bench_env()["HF_HUB_OFFLINE"] == "1"


def test_real_result_file_is_normalized():
    metrics = get_adapter("vllm").parse_bench_result(str(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json"))
    assert set(metrics) == set(METRIC_KEYS)
    raw = json.load(open(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json"))
    assert metrics["completed"] == raw["completed"] > 0
    assert metrics["p99_e2e_latency_ms"] == raw["p99_e2el_ms"]
    assert metrics["duration_s"] == raw["duration"]


def test_zero_completed_is_not_a_zero_measurement(tmp_path):
    raw = json.load(open(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json"))
    raw["completed"] = 0
    path = tmp_path / "r.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(BenchmarkFailed):
        get_adapter("vllm").parse_bench_result(str(path))


def test_unknown_engine_names_the_known_ones():
    with pytest.raises(ValueError, match="sglang, vllm"):
        get_adapter("tgi")
