import json

import jsonschema
import pytest
import yaml

from browser.synthetic_campaign import synthetic_campaign
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import EngineAdapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import ADAPTERS
from fleetopt.report import llmd_export
from helpers import ROOT

SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "llmd" / "benchmark_report_v0_2.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())


def errors(report):
    return ["%s: %s" % ("/".join(map(str, e.absolute_path)), e.message) for e in VALIDATOR.iter_errors(report)]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    campaign, summary, cells = synthetic_campaign(tmp_path_factory.mktemp("llmd"))
    paths = llmd_export.write_llmd_reports(campaign, summary, cells)
    return campaign, summary, cells, paths


def test_the_transcribed_schema_is_a_valid_json_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_every_measured_row_becomes_one_valid_v0_2_report(exported):
    campaign, summary, _, paths = exported
    measured = [r for r in summary["cells"] if r["status"] == "ok"]
    assert len(paths) == len(measured) == 14
    assert all(p.parent == campaign / "llm-d" for p in paths)
    assert campaign / "llm-d" / "benchmark_report_v0.2,_gpu-a_cuda_graph_max_bs_c8.yaml" in paths
    for path in paths:
        report = yaml.safe_load(path.read_text())
        assert errors(report) == [], path.name
        assert report["version"] == "0.2"
    names = {p.name for p in paths}
    assert not any(v in n for n in names for v in ("piecewise_fp4", "huge_static_mem", "slow_start", "tensor_par"))


def test_values_match_the_summary(exported):
    _, summary, _, paths = exported
    rows = {(r["variant"], r["concurrency"]): r for r in summary["cells"] if r["status"] == "ok"}
    for path in paths:
        report = yaml.safe_load(path.read_text())
        load = report["scenario"]["load"]["standardized"]
        variant = next(k for k in report["run"]["keywords"] if k.startswith("variant=")).split("=", 1)[1]
        row = rows[(variant, load["concurrency"])]
        aggregate = report["results"]["request_performance"]["aggregate"]
        m = row["metrics"]
        assert aggregate["throughput"]["output_token_rate"] == {
            "units": "tokens/s", "mean": m["output_throughput"], "stddev": row["stats"]["output_throughput"]["std"]}
        assert aggregate["throughput"]["total_token_rate"]["mean"] == m["total_throughput"]
        assert aggregate["throughput"]["request_rate"] == {"units": "queries/s", "mean": m["request_throughput"]}
        assert aggregate["latency"]["time_to_first_token"] == {
            "units": "ms", "mean": m["mean_ttft_ms"], "p50": m["median_ttft_ms"], "p99": m["p99_ttft_ms"]}
        assert aggregate["latency"]["inter_token_latency"]["mean"] == m["mean_itl_ms"]
        assert aggregate["latency"]["inter_token_latency"]["units"] == "ms/token"
        assert aggregate["latency"]["request_latency"]["p99"] == m["p99_e2e_latency_ms"]
        assert aggregate["requests"] == {"total": 3 * 64, "failures": 0}
        assert load["input_seq_len"] == {"distribution": "fixed", "value": 1024}
        assert load["output_seq_len"] == {"distribution": "fixed", "value": 256}
        assert load["source"] == "random" and load["tool"] == "sglang.bench_serving"
        args = report["scenario"]["load"]["native"]["args"]
        assert args["max-concurrency"] == str(row["concurrency"]) and "output-file" not in args
        assert report["run"]["eid"] == summary["campaign"] and report["run"]["cid"] == "gpu-a"


def test_the_stack_describes_engine_hardware_and_launch(exported):
    _, _, _, paths = exported
    report = yaml.safe_load(next(p for p in paths if "cuda_graph_max_bs_c1" in p.name).read_text())
    engine = report["scenario"]["stack"][0]
    assert engine["standardized"] == {
        "kind": "inference_engine", "tool": "sglang", "tool_version": "0.5.10", "role": "replica", "replicas": 1,
        "model": {"name": "qwen3-8b"},
        "accelerator": {"model": "NVIDIA H200", "count": 2, "parallelism": {"tp": 2, "dp": 1, "pp": 1, "ep": 1}},
    }
    assert engine["metadata"]["cfg_id"] == "%064x" % 2  # the cell's config hash
    assert engine["native"]["args"]["cuda-graph-max-bs"] == "256"
    assert engine["native"]["config"]["patches"] == [{"id": "sglang-fp4-prewarm", "checksum": "sha256:0123"}]
    assert "+20.0 % vs baseline [+17.1, +22.9] (97.5 % CI), improved" in report["run"]["description"]
    assert "verdict=improved" in report["run"]["keywords"]


def test_reports_are_stable_and_unique_and_stale_ones_go(exported):
    campaign, summary, cells, paths = exported
    first = {p.name: p.read_text() for p in paths}
    uids = {yaml.safe_load(text)["run"]["uid"] for text in first.values()}
    assert len(uids) == len(first)
    stale = campaign / "llm-d" / "benchmark_report_v0.2,_gpu-a_gone_c1.yaml"
    stale.write_text("version: '0.2'\n")
    again = llmd_export.write_llmd_reports(campaign, summary, cells)
    assert {p.name: p.read_text() for p in again} == first and not stale.exists()


def rejected_because(report, change):
    """Every message, nested ones included, the schema gives for `report` after `change`."""
    change(report)
    pending, messages = list(VALIDATOR.iter_errors(report)), []
    while pending:
        error = pending.pop()
        messages.append(error.message)
        pending.extend(error.context)
    return " | ".join(messages)


@pytest.mark.parametrize("change, because", [
    (lambda r: r["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"].update(
        units="tokens/s"), "'tokens/s' is not one of ['ms', 's']"),
    (lambda r: r["run"].pop("uid"), "'uid' is a required property"),
    (lambda r: r["scenario"]["stack"][0]["standardized"].update(replicas=0), "0 is less than the minimum of 1"),
    (lambda r: r["scenario"]["stack"][0]["standardized"].pop("kind"), "'kind' is a required property"),
    (lambda r: r["scenario"]["load"]["standardized"].update(fleetopt=True), "('fleetopt' was unexpected)"),
    (lambda r: r["scenario"]["load"]["standardized"].update(concurrency=2.5), "2.5 is not of type 'integer'"),
])
def test_the_schema_catches_what_llm_d_would_reject(exported, change, because):
    report = yaml.safe_load(exported[3][0].read_text())
    assert because in rejected_because(report, change)


def test_argv_becomes_llm_d_native_args():
    argv = ["python", "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--seed", "0", "--ignore-eos",
            "--model=tiny", "-tp", "2", "--offset", "-1"]
    assert llmd_export.argv_to_args(argv) == {"seed": "0", "ignore-eos": None, "model": "tiny", "tp": "2",
                                              "offset": "-1"}
    assert llmd_export.client_tool(argv, "vllm") == "vllm-benchmark"
    assert llmd_export.parallelism({"--tensor-parallel-size": 4, "--enable-expert-parallel": True}, "vllm") == {
        "tp": 4, "dp": 1, "pp": 1, "ep": 4}
    assert llmd_export.parallelism({"--tp-size": 4, "--enable-expert-parallel": True}, "sglang") == {
        "tp": 4, "dp": 1, "pp": 1, "ep": 1}


class ShardEngine(EngineAdapter):
    name = "shard"
    parallelism_flags = {"tp": ("--shards",)}
    per_run_client_flags = ("max-concurrency", "num-prompts", "report-to")

    def benchmark_tool(self, client_argv):
        return "shard-bench"


def test_engine_flags_and_client_names_come_from_the_engine_adapter(monkeypatch):
    monkeypatch.setitem(ADAPTERS, "shard", ShardEngine)
    assert llmd_export.parallelism({"--shards": 3, "--tp-size": 8}, "shard") == {"tp": 3, "dp": 1, "pp": 1, "ep": 1}
    assert llmd_export.client_tool(["python", "-m", "shard.bench"], "shard") == "shard-bench"
    assert llmd_export.client_args(["shard", "--report-to", "/tmp/x.json", "--seed", "1"], "shard") == {"seed": "1"}
    assert llmd_export.client_tool(["python", "-m", "sglang.bench_serving"], "sglang") == "sglang.bench_serving"
    # An engine without an adapter on this controller still exports, with neutral answers.
    assert llmd_export.parallelism({"--shards": 3}, "gone") == {"tp": 1, "dp": 1, "pp": 1, "ep": 1}
    assert llmd_export.client_tool(["python", "-m", "gone.bench"], "gone") == "gone-benchmark"


def test_the_load_names_short_warm_ups_and_leaves_them_out_where_there_were_none():
    cell = {"engine": "vllm", "benchmark": {"warmup_per_concurrency": 1, "warmup_output_len": 8}, "levels": []}
    row = {"concurrency": 4, "trials": 2}
    assert llmd_export.load_section({}, cell, row)["native"]["config"]["warmup_output_len"] == 8
    cell["benchmark"]["warmup_output_len"] = 0  # sent inside the run: the config of cells kept before the option
    assert "warmup_output_len" not in llmd_export.load_section({}, cell, row)["native"]["config"]
