"""The recommendation from a finished single-optimization matrix (fleetopt/recommend/proposal.py), on constructed
campaigns: the candidates that improved and do not conflict are stacked in order of measured effect; every
other variant is left out with the reason."""
import pytest
import yaml

from fleetopt.recommend import STATUS_PROPOSED
from fleetopt.recommend.proposal import recommend, write_recommendation
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, trials

BASE = {1: (100.0, 101.0, 99.0), 4: (300.0, 303.0, 297.0), 8: (500.0, 505.0, 495.0)}
PREFIX = ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--served-model-name", "tiny",
          "--host", "127.0.0.1", "--port", "8700"]
BASE_FLAGS = {"--enforce-eager": True, "--max-model-len": 1024}
BASE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


def argv(flags):
    rendered = []
    for name, value in flags.items():
        rendered += [name] if value is True else [name, str(value)]
    return PREFIX + rendered


def launch(flags, env):
    return {"argv": argv(flags), "env": env, "flags": flags, "config_hash": "h"}


def levels(factor, noisy=False):
    spread = (0.6, 1.0, 1.4) if noisy else (1.0, 1.0, 1.0)
    return [lv for c, outs in BASE.items() for lv in trials(c, *(o * factor * s for o, s in zip(outs, spread)))]


def variant(name, factor, flags=None, env=None, conflicts=None, noisy=False, **extra):
    merged = dict(BASE_FLAGS)
    for key, value in (flags or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return cell(name, levels=levels(factor, noisy), launch=launch(merged, dict(BASE_ENV, **(env or {}))),
                provenance={"engine_version": "0.32.0", "conflicts": conflicts or []}, **extra)


def campaign():
    return [
        cell("baseline", levels=levels(1.0), launch=launch(BASE_FLAGS, BASE_ENV), provenance={"engine_version": "0.32.0"}),
        variant("helps", 1.30, flags={"--enforce-eager": None}),
        variant("declared", 1.20, flags={"--dtype": "float32"},
                conflicts=[{"id": "helps", "why": "one stack takes one of the two ways"}]),
        variant("seqs3", 1.15, flags={"--max-num-seqs": 3}),
        variant("helps_less", 1.10, env={"OMP_BIND": "nobind"}),
        variant("seqs2", 1.07, flags={"--max-num-seqs": 2}),
        variant("hurts", 0.70, flags={"--max-num-seqs": 1}),
        variant("same", 1.0, flags={"--async-scheduling": True}),
        variant("noisy", 1.02, flags={"--block-size": 32}, noisy=True),
        cell("broken", status="crashed", reason="CUDA out of memory", failure={"failure_class": "cuda_oom"}),
    ]


def summarize(tmp_path, cells):
    # Three trials with a CV of 1 % show equivalence within +-5 %, not within +-3 %.
    return build_summary(tmp_path / "c1", cells, min_effect_pct=5.0)


@pytest.fixture()
def proposal(tmp_path):
    cells = campaign()
    return recommend(summarize(tmp_path, cells), cells)


def test_helping_candidates_are_stacked_in_order_of_measured_effect(proposal):
    assert proposal["status"] == STATUS_PROPOSED == "proposed, not yet measured as a stack"
    assert [c["id"] for c in proposal["candidates"]] == ["helps", "seqs3", "helps_less"]
    gain = proposal["candidates"][0]["gain"]
    assert gain["metric"] == "output_throughput" and gain["change_pct"] == pytest.approx(30.0)
    assert 0 < gain["ci_low_pct"] <= gain["change_pct"] <= gain["ci_high_pct"]
    assert [lv["concurrency"] for lv in proposal["candidates"][0]["levels"]] == [1, 4, 8]


def test_the_stack_is_exact_inventory_variables_and_a_launch_command(proposal):
    inventory = proposal["inventory"]
    assert inventory["campaign_server_flags"] == {"--max-model-len": 1024, "--enforce-eager": None, "--max-num-seqs": 3}
    assert inventory["campaign_server_env"] == {"VLLM_CPU_KVCACHE_SPACE": "1", "OMP_BIND": "nobind"}
    assert proposal["launch"]["argv"] == PREFIX + ["--max-model-len", "1024", "--max-num-seqs", "3"]
    assert proposal["launch"]["command"].startswith("/venv/bin/python -m vllm.entrypoints.openai.api_server")
    assert proposal["launch"]["env"] == inventory["campaign_server_env"]


def test_hurting_conflicting_and_unproven_variants_are_left_out_with_the_right_reason(proposal):
    out = {entry["id"]: entry for entry in proposal["left_out"]}
    assert out["hurts"]["why"] == "regressed"
    assert out["declared"]["why"] == "conflicting" and "helps" in out["declared"]["reason"] \
        and "one stack takes one of the two ways" in out["declared"]["reason"]
    assert out["seqs2"]["why"] == "conflicting" and "--max-num-seqs" in out["seqs2"]["reason"] \
        and "seqs3" in out["seqs2"]["reason"]
    assert out["same"]["why"] == "not_significant"
    assert out["noisy"]["why"] == "inconclusive"
    assert out["broken"]["why"] == "crashed" and "CUDA out of memory" in out["broken"]["reason"]
    assert "baseline" not in out and "baseline_aa" not in out


def test_a_conflict_declared_on_either_side_counts(tmp_path):
    cells = [c for c in campaign() if c["variant"] in ("baseline", "helps", "declared")]
    cells[1]["provenance"]["conflicts"] = [{"id": "declared", "why": "declared by the stronger one"}]
    cells[2]["provenance"]["conflicts"] = []
    proposal = recommend(summarize(tmp_path, cells), cells)
    assert [c["id"] for c in proposal["candidates"]] == ["helps"]
    assert proposal["left_out"][0]["why"] == "conflicting" and "declared by the stronger one" in proposal["left_out"][0]["reason"]


def test_with_nothing_improved_the_baseline_stays(tmp_path):
    cells = [c for c in campaign() if c["variant"] in ("baseline", "hurts", "same")]
    proposal = recommend(summarize(tmp_path, cells), cells)
    assert proposal["candidates"] == [] and proposal["status"].startswith("nothing to recommend")
    assert proposal["inventory"]["campaign_server_flags"] == BASE_FLAGS
    assert {e["id"] for e in proposal["left_out"]} == {"hurts", "same"}


def test_a_single_candidate_is_what_was_measured(tmp_path):
    cells = [c for c in campaign() if c["variant"] in ("baseline", "helps", "hurts")]
    proposal = recommend(summarize(tmp_path, cells), cells)
    assert proposal["status"] == "measured: a single optimization, nothing to stack"


def test_capacity_under_the_slos_comes_with_each_candidate_and_the_baseline(tmp_path):
    cells = campaign()
    for c in cells:
        c["benchmark"] = dict(c["benchmark"], slo={"p99_ttft_ms": 100.0})
    proposal = recommend(summarize(tmp_path, cells), cells)
    assert proposal["slo"] == {"p99_ttft_ms": 100.0}
    # Every level's p99 TTFT is 20 ms in the constructed cells: capacity is at least the top level.
    assert proposal["candidates"][0]["capacity"]["capacity"] == 8 and proposal["candidates"][0]["capacity"]["at_least"]
    assert proposal["baseline"]["capacity"]["capacity"] == 8


def test_the_recommendation_is_written_as_yaml_that_says_what_it_is(tmp_path, proposal):
    path = write_recommendation(tmp_path, proposal)
    assert path == tmp_path / "recommended.yml"
    text = path.read_text()
    assert text.startswith("# ") and "not yet measured as a stack" in text.splitlines()[0]
    loaded = yaml.safe_load(text)
    assert loaded["status"] == STATUS_PROPOSED and loaded["inventory"]["campaign_server_flags"]["--enforce-eager"] is None
