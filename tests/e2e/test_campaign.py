"""The main job, for real: a tier-1 campaign on the local CPU engine, driven by `fleetopt run`
(ansible-runner) exactly as CI would; plus the regression gate on its results."""
import json
import os

import pytest

from e2e.conftest import isolated, run_fleetopt
from helpers import free_port


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, local_engine):
    base = tmp_path_factory.mktemp("campaign")
    port = free_port()
    # The main job's capacity search (one level past the planned ones) and a price per host-hour.
    args = ["run", "--tier", "1"] + isolated(base, port, "e2e-tier1", concurrency=(1, 4)) + [
        "-e", json.dumps({"campaign_capacity_search_levels": 1, "campaign_cost_per_host_hour": 3.6})]
    rc, output = run_fleetopt(*args)
    return {"rc": rc, "output": output, "dir": base / "results" / "e2e-tier1", "base": base, "port": port, "args": args}


def test_fleetopt_run_succeeds_streams_progress_and_keeps_artifacts(campaign):
    assert campaign["rc"] == 0, campaign["output"][-4000:]
    assert "vllm vllm-%d:%d: engine_init (" % (campaign["port"], campaign["port"]) in campaign["output"]
    artifacts = campaign["base"] / "artifacts" / "e2e-tier1"
    assert (artifacts / "status").read_text() == "successful"
    assert (artifacts / "rc").read_text() == "0"
    assert len(list((artifacts / "job_events").glob("*.json"))) > 50


def test_summary_holds_baseline_and_three_measured_variants(campaign):
    summary = json.loads((campaign["dir"] / "summary.json").read_text())
    assert summary["campaign"] == "e2e-tier1" and summary["engine"] == "vllm"
    ok = {}
    for row in summary["cells"]:
        assert row["status"] in ("ok", "crashed", "blocked", "timeout", "not_applicable")
        if row["status"] == "ok":
            assert row["metrics"]["output_throughput"] > 0 and row["metrics"]["total_throughput"] > 0
            assert row["metrics"]["mean_ttft_ms"] > 0
            ok.setdefault(row["variant"], set()).add(row["concurrency"])
    measured = [v for v, levels in ok.items() if len(levels) >= 2]
    assert "baseline" in measured
    assert len([v for v in measured if v != "baseline"]) >= 3, summary["cells"]
    not_applicable = {r["variant"]: r["reason"] for r in summary["cells"] if r["status"] == "not_applicable"}
    assert sorted(not_applicable) == ["async_scheduling", "tensor_parallel_2"], not_applicable
    assert "needs 2 GPU(s)" in not_applicable["tensor_parallel_2"]
    assert "needs platform cuda, host is cpu" in not_applicable["async_scheduling"]


def test_report_and_latest_link(campaign):
    markdown = (campaign["dir"] / "report.md").read_text()
    for section in ("## Verdicts", "## Matrix", "## Not measured", "## Start-up", "| torch_compile", "tensor_parallel_2",
                    "## Cost and energy", "localhost: not sampled (no power reading from nvidia-smi"):
        assert section in markdown
    assert (campaign["dir"] / "summary.csv").read_text().startswith("variant,host,concurrency")
    assert (campaign["base"] / "results" / "latest").resolve() == campaign["dir"].resolve()


def test_every_cell_records_what_produced_it(campaign):
    cell = json.loads((campaign["dir"] / "cells" / "localhost" / "torch_compile.json").read_text())
    provenance = cell["provenance"]
    assert provenance["engine_version"] == "0.32.0+cpu"
    assert provenance["host"]["cpu_count"] >= 1 and provenance["host"]["platform"] == "cpu"
    assert provenance["model"]["architecture"] == "LlamaForCausalLM"
    assert provenance["fleetopt_revision"] and provenance["ansible_version"].startswith("2.19")
    assert "--enforce-eager" not in cell["launch"]["argv"] and cell["launch"]["catalog_flags"] == {"--enforce-eager": None}
    assert cell["startup"]["phases"]["compile"]["duration_s"] > 0
    # How soon readiness is noticed is a figure of tests/benchmarks/campaign_overhead.py; here, that it is recorded.
    assert 0 <= cell["startup"]["ready_noticed_after_s"] < cell["startup"]["startup_s"]
    assert os.path.exists(cell["startup"]["log_path"])
    assert len(cell["cell_key"]) == 64
    # The new server's cold start: the embedded default's 8 warm-up requests, 8 tokens each, in a run of their own
    # that the real client made before the first trial.
    first = cell["levels"][0]
    assert cell["benchmark"]["warmup_output_len"] == 8 and first["warmups"] == 8, first
    warmup = first["warmup_run"]
    assert (warmup["status"], warmup["num_prompts"], warmup["output_len"]) == ("ok", 8, 8), warmup
    assert json.loads(open(warmup["result_file"]).read())["total_output_tokens"] == 64
    # The controller keeps every client run, its warm-up runs included, beside the server log.
    kept = campaign["dir"] / "logs" / "localhost"
    for path in (warmup["result_file"], first["result_file"]):
        assert (kept / os.path.basename(path)).read_bytes() == open(path, "rb").read()
        assert (kept / os.path.basename(path)).with_suffix(".out").exists()


def test_each_launch_searches_one_level_past_the_planned_ones_for_its_capacity(campaign):
    from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_slo import level_holds, next_search_level
    summary = json.loads((campaign["dir"] / "summary.json").read_text())
    capacities = {v["variant"]: v for v in summary["variants"]}
    measured = [v for v, row in capacities.items() if row["status"] == "ok"]
    assert len(measured) >= 4, capacities
    for variant in measured:
        cell = json.loads((campaign["dir"] / "cells" / "localhost" / ("%s.json" % variant)).read_text())
        search, slo = cell["benchmark"]["capacity_search"], cell["benchmark"]["slo"]
        assert slo and search["budget"] == 1, cell["benchmark"]
        planned = {}
        for level in cell["levels"]:
            if not level.get("searched"):
                planned.setdefault(level["concurrency"], []).append(level)
        assert sorted(planned) == [1, 4]
        expected = next_search_level([(c, level_holds(runs, slo)) for c, runs in planned.items()], 256)
        assert search["levels"] == ([] if expected is None else [expected]), (variant, search, cell["levels"])
        if expected is not None:
            assert {lv["concurrency"] for lv in cell["levels"] if lv.get("searched")} == {expected}
            assert expected in [lv["concurrency"] for lv in capacities[variant]["capacity"]["levels"]]
        cost = capacities[variant]["cost"]
        assert cost["price_per_host_hour"] == 3.6 and cost["basis"], cost
        if cost["concurrency"] is not None:  # 3.6 per hour is 1 per 3.6 million tokens: 1e6 / (tok/s x 3600) x 3.6
            row = next(r for r in summary["cells"] if (r["variant"], r["concurrency"]) == (variant, cost["concurrency"]))
            assert abs(cost["per_million_output_tokens"] - 1e6 / row["metrics"]["output_throughput"] / 1000.0) < 1e-6


def test_no_server_is_left_behind(campaign):
    from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import port_in_use
    assert not port_in_use(campaign["port"])
    assert not list((campaign["base"] / "state" / "run").glob("*.json"))


def test_regression_gate_fails_on_a_planted_regression_and_passes_otherwise(campaign, tmp_path):
    summary = json.loads((campaign["dir"] / "summary.json").read_text())
    planted = json.loads(json.dumps(summary))
    for row in planted["cells"]:
        if row["variant"] == "baseline" and row["concurrency"] == 1:
            row["metrics"]["output_throughput"] *= 2
            row["samples"]["output_throughput"] = [v * 2 for v in row["samples"]["output_throughput"]]
    (tmp_path / "planted.json").write_text(json.dumps(planted))
    (tmp_path / "same.json").write_text(json.dumps(summary))

    # Re-running the same campaign id measures nothing again: every cell is complete for its configuration.
    rc, output = run_fleetopt(*(campaign["args"] + ["--gate-reference", str(tmp_path / "planted.json")]))
    assert rc == 3, output[-3000:]
    assert "baseline on localhost at concurrency 1: output_throughput -50.0 %" in output
    assert "already measured in this campaign" in output
    rc, output = run_fleetopt(*(campaign["args"] + ["--gate-reference", str(tmp_path / "same.json")]))
    assert rc == 0, output[-3000:]
    assert "no regression beyond 5.0 %" in output
