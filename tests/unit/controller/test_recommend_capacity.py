"""The recommendation with the verdicts on capacity (campaign_verdict_metric: capacity): candidates in order of
their change of capacity, the stack compared with the capacity of the baseline measured beside it, and with the
best single candidate's capacity only where the stages' baselines had the same capacity."""
import pytest
import yaml

from fleetopt.recommend import STATUS_PROPOSED, STATUS_STACKED
from fleetopt.recommend.proposal import recommend, write_recommendation
from fleetopt.analysis.summary import build_summary
from summary_cells import cell
from test_capacity_verdict import FAST, SLO, SLOW, ladder
from test_recommend import BASE_ENV, BASE_FLAGS, launch

BASELINE_LADDER = ((1, FAST), (2, SLOW), (4, SLOW))


def capacity_cell(name, levels, flags=None, **extra):
    merged = dict(BASE_FLAGS, **(flags or {}))
    return cell(name, levels=ladder(*levels), launch=launch(merged, dict(BASE_ENV)),
                benchmark={"concurrency": [1, 2, 4], "trials": 3, "slo": SLO},
                provenance={"engine_version": "0.32.0", "conflicts": []}, **extra)


def matrix():
    return [
        capacity_cell("baseline", BASELINE_LADDER),
        capacity_cell("big", ((1, FAST), (2, FAST), (4, FAST), (8, SLOW)), flags={"--max-num-seqs": 8}),
        capacity_cell("small", ((1, FAST), (2, FAST), (4, SLOW)), flags={"--max-num-seqs": 2}),
        capacity_cell("other", ((1, FAST), (2, FAST), (4, SLOW)), flags={"--block-size": 32}),
        capacity_cell("worse", ((1, SLOW), (2, SLOW), (4, SLOW)), flags={"--dtype": "float32"}),
    ]


def stage(stack_levels, again_levels=BASELINE_LADDER):
    stack = capacity_cell("stack", stack_levels, flags={"--max-num-seqs": 8, "--block-size": 32}, order=50)
    stack["stacked"] = {"composes": ["big", "other"], "baseline": "baseline_stack"}
    return [capacity_cell("baseline_stack", again_levels, order=49, baseline_of="stack"), stack]


def proposal_of(tmp_path, cells):
    return recommend(build_summary(tmp_path / "c1", cells, verdict_metric="capacity"), cells)


def test_candidates_are_ordered_by_their_change_of_capacity(tmp_path):
    proposal = proposal_of(tmp_path, matrix())
    assert proposal["status"] == STATUS_PROPOSED and proposal["verdict_metric"] == "capacity"
    assert proposal["stack"] == ["big", "other"]
    big = proposal["candidates"][0]
    assert big["gain"]["metric"] == "capacity" and big["gain"]["change_pct"] == pytest.approx(300.0)
    assert (big["gain"]["concurrency"], big["gain"]["capacity"], big["gain"]["baseline_capacity"]) == (4, 4, 1)
    out = {e["id"]: e for e in proposal["left_out"]}
    assert out["small"]["why"] == "conflicting" and "(+300.0 % against +100.0 %)" in out["small"]["reason"]
    assert out["worse"]["why"] == "regressed"


def test_a_stack_is_compared_with_the_best_single_candidates_capacity_when_the_stages_baselines_agree(tmp_path):
    proposal = proposal_of(tmp_path, matrix() + stage(((1, FAST), (2, FAST), (4, FAST), (8, FAST), (16, SLOW))))
    assert proposal["status"] == STATUS_STACKED and proposal["outcome"] == "stack", proposal["status"]
    measured = proposal["measured"]
    assert measured["verdict"] == "improved" and measured["gain"]["capacity"] == 8
    assert measured["baseline_drift"]["verdict"] == "neutral" and measured["baseline_drift"]["metric"] == "capacity"
    versus = measured["vs_best_single"]
    assert versus["id"] == "big" and versus["verdict"] == "improved", versus
    assert "had the same capacity as the matrix's" in versus["compared"]
    assert "at c=8 stack holds every SLO" in versus["reason"] and "big breaks them" in versus["reason"]
    header = write_recommendation(tmp_path, proposal).read_text().splitlines()[1]
    assert header == ("# The stack was measured against the baseline measured again beside it in the stack stage "
                      "(baseline_stack): capacity +700.0 % at c=8.")
    assert yaml.safe_load((tmp_path / "recommended.yml").read_text())["measured"]["gain"]["metric"] == "capacity"


def test_a_stage_baseline_of_another_capacity_leaves_the_stack_against_the_best_single_inconclusive(tmp_path):
    drifted = ((1, FAST), (2, FAST), (4, SLOW))
    proposal = proposal_of(tmp_path, matrix() + stage(((1, FAST), (2, FAST), (4, FAST), (8, FAST), (16, SLOW)), drifted))
    measured = proposal["measured"]
    assert measured["verdict"] == "improved" and measured["baseline_drift"]["verdict"] == "improved"
    versus = measured["vs_best_single"]
    assert versus["verdict"] == "inconclusive" and "baseline_stack was improved against baseline on capacity" in \
        versus["reason"]
    assert proposal["outcome"] == "best_single" and proposal["stack"] == ["big"]
    assert "against big alone it was inconclusive" in proposal["status"]
