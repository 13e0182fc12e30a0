"""The verdict taken on capacity (campaign_verdict_metric: capacity): a variant against its baseline's capacity on
the same host, improved / regressed / neutral only where the level judgements that decide it are firm (every run
on the same side of the limit, and the interval of the mean of each p99 figure too), inconclusive with the reason
otherwise. Known answers on constructed levels."""
import pytest

from fleetopt.analysis.capacity import capacity
from fleetopt.analysis.capacity_verdict import compare_capacity, level_support
from fleetopt.analysis.summary import build_summary
from summary_cells import cell

SLO = {"p99_ttft_ms": 1000.0}
FAST, SLOW = (400.0, 420.0, 410.0), (3000.0, 3100.0, 2900.0)


def run(c, ttft, trial=1, status="ok", searched=False):
    found = {"concurrency": c, "trial": trial, "launch": 1, "status": status,
             "metrics": {"output_throughput": 100.0, "total_throughput": 200.0, "mean_ttft_ms": ttft / 2,
                         "p99_ttft_ms": ttft, "mean_itl_ms": 1.0} if status == "ok" else None,
             "reason": None if status == "ok" else "the benchmark client exited with code 1"}
    return dict(found, searched=True) if searched else found


def ladder(*levels):
    """[(concurrency, p99 TTFTs of its trials)] -> runs."""
    return [run(c, ttft, trial=t) for c, ttfts in levels for t, ttft in enumerate(ttfts, 1)]


def cap(*levels, slo=SLO):
    return capacity(ladder(*levels), slo)


def test_improved_where_the_variant_holds_every_slo_at_the_level_the_baseline_broke_them():
    base = cap((1, FAST), (4, SLOW))
    variant = cap((1, FAST), (4, FAST))
    found = compare_capacity(variant, base)
    assert found["verdict"] == "improved", found["reason"]
    assert (found["variant"]["capacity"], found["variant"]["at_least"], found["baseline"]["capacity"]) == (4, True, 1)
    assert [(d["side"], d["concurrency"], d["judged"], d["firm"]) for d in found["deciding"]] == [
        ("variant", 4, "holds", True), ("baseline", 4, "breaks", True)]
    assert "at c=4 the variant holds every SLO" in found["reason"] and "the baseline breaks" in found["reason"]
    assert found["change_pct"] == pytest.approx(300.0)


def test_regressed_is_the_mirror_image():
    found = compare_capacity(cap((1, FAST), (4, SLOW)), cap((1, FAST), (4, FAST)))
    assert found["verdict"] == "regressed", found["reason"]
    assert "at c=4 the baseline holds every SLO" in found["reason"] and "the variant breaks" in found["reason"]
    assert found["change_pct"] == pytest.approx(-75.0)


def test_a_variant_holding_a_level_above_the_baselines_failing_one_is_improved_too():
    # The variant was not measured at c=6, where the baseline broke, but held at c=8.
    found = compare_capacity(cap((4, FAST), (8, FAST), (16, SLOW)), cap((4, FAST), (6, SLOW), (8, SLOW)))
    assert found["verdict"] == "improved", found["reason"]
    assert [(d["side"], d["concurrency"]) for d in found["deciding"]] == [("variant", 8), ("baseline", 6)]


def test_neutral_needs_the_same_capacity_and_the_same_next_level_broken_both_firmly():
    found = compare_capacity(cap((4, FAST), (5, SLOW)), cap((4, FAST), (5, SLOW)))
    assert found["verdict"] == "neutral", found["reason"]
    assert len(found["deciding"]) == 4 and all(d["firm"] for d in found["deciding"])
    assert "the same capacity, c=4" in found["reason"]


def test_the_same_capacity_with_levels_between_unmeasured_is_inconclusive_not_neutral():
    found = compare_capacity(cap((4, FAST), (8, SLOW)), cap((4, FAST), (8, SLOW)))
    assert found["verdict"] == "inconclusive"
    assert "c=5 to c=7 were not measured" in found["reason"] and "campaign_capacity_search_levels" in found["reason"]


def test_trials_straddling_the_slo_leave_the_level_judged_on_the_mean_only():
    # The baseline breaks the TTFT SLO at c=4 on the mean (1133 ms), but one of its runs met it.
    found = compare_capacity(cap((1, FAST), (4, FAST)), cap((1, FAST), (4, (900.0, 1200.0, 1300.0))))
    assert found["verdict"] == "inconclusive"
    assert "on the means it would be improved" in found["reason"]
    assert "the trials straddle the limit" in found["reason"] and "1 of 3 runs" in found["reason"]


def test_a_straddled_first_break_gives_way_to_a_higher_level_both_sides_judge_firmly():
    # The baseline's search measured c=3 between its c=2 (held) and c=4 (broken): its runs at c=3 straddle the SLO,
    # but it breaks c=4 in every run, where the variant holds it in every run. Two pairs of levels could decide:
    # (variant c=4, baseline c=3) and (variant c=4, baseline c=4), each judged at 97.5 % (Bonferroni over the two).
    base = cap((2, FAST), (3, (900.0, 1200.0, 1300.0)), (4, SLOW))
    found = compare_capacity(cap((4, FAST)), base)
    assert found["verdict"] == "improved", found["reason"]
    assert [(d["side"], d["concurrency"], d["judged"], d["firm"]) for d in found["deciding"]] == [
        ("variant", 4, "holds", True), ("baseline", 4, "breaks", True)]
    assert all(d["confidence"] == pytest.approx(0.975) for d in found["deciding"])
    assert found["baseline"]["capacity"] == 2


def test_no_firm_pair_among_several_reports_the_tightest_and_counts_the_others():
    base = cap((2, FAST), (3, (900.0, 1200.0, 1300.0)), (4, (950.0, 1500.0, 1600.0)))
    found = compare_capacity(cap((4, FAST)), base)
    assert found["verdict"] == "inconclusive"
    assert "the baseline at c=3 (breaks): the trials straddle the limit: 1 of 3 runs" in found["reason"], found["reason"]
    assert "nor were those of the 1 other pair(s) of levels that could decide it, each judged at 97.5 % confidence" \
        in found["reason"], found["reason"]


def test_an_interval_of_the_mean_that_reaches_over_the_limit_is_not_firm():
    # Both runs break the SLO, but two runs this far apart give an interval of the mean that reaches below it.
    support = level_support(cap((4, (1100.0, 1900.0)))["levels"][0], SLO, 0.95)
    assert support["judged"] == "breaks" and not support["firm"]
    assert "reaches below the limit" in support["why"]
    firm = level_support(cap((4, (2900.0, 3100.0)))["levels"][0], SLO, 0.95)
    assert firm["firm"], firm["why"]
    held = level_support(cap((4, (500.0, 900.0)))["levels"][0], SLO, 0.95)
    assert held["judged"] == "holds" and not held["firm"] and "reaches above the limit" in held["why"]


def test_a_broken_level_may_break_any_of_the_slos_so_its_intervals_are_simultaneous_over_them():
    two = {"p99_ttft_ms": 1000.0, "p99_itl_ms": 50.0}
    levels = [dict(r, metrics=dict(r["metrics"], p99_itl_ms=10.0)) for r in ladder((4, SLOW))]
    support = level_support(capacity(levels, two)["levels"][0], two, 0.95)
    assert support["firm"] and support["confidence"] == pytest.approx(0.975)
    assert "p99 TTFT 3000.0 ms, 97.5 % interval" in support["why"]
    held = level_support(capacity([dict(r, metrics=dict(r["metrics"], p99_itl_ms=10.0)) for r in ladder((4, FAST))],
                                  two)["levels"][0], two, 0.95)
    assert held["firm"] and held["confidence"] == 0.95 and "p99 ITL 10.0 ms" in held["why"]


def test_a_single_run_gives_no_interval():
    found = compare_capacity(cap((1, (400.0,)), (4, (420.0,))), cap((1, (400.0,)), (4, (3000.0,))))
    assert found["verdict"] == "inconclusive" and "one run" in found["reason"]


def test_without_slos_there_is_no_capacity_to_compare():
    found = compare_capacity(cap((1, FAST), slo={}), cap((1, FAST), slo={}))
    assert found["verdict"] == "inconclusive" and "no SLO was set (campaign_slo)" in found["reason"]


def test_no_capacity_found_on_either_side_is_inconclusive():
    found = compare_capacity(cap((1, SLOW), (4, SLOW)), cap((1, SLOW), (4, SLOW)))
    assert found["verdict"] == "inconclusive"
    assert "neither holds the SLOs at the lowest level measured, c=1" in found["reason"]


def test_a_search_that_stopped_before_a_failing_level_leaves_it_open():
    # The variant held every level it measured (its search's budget ran out at c=4); the baseline broke at c=8.
    variant = capacity(ladder((1, FAST)) + [run(4, t, trial=i, searched=True) for i, t in enumerate(FAST, 1)], SLO)
    found = compare_capacity(variant, cap((1, FAST), (4, FAST), (8, SLOW)))
    assert found["verdict"] == "inconclusive"
    assert "the variant held every level it measured, up to c=4" in found["reason"]
    assert "not measured at c=8, where the baseline broke" in found["reason"]
    both = compare_capacity(cap((1, FAST), (4, FAST)), cap((1, FAST), (4, FAST)))
    assert both["verdict"] == "inconclusive" and "neither capacity was found" in both["reason"]


def test_failed_runs_at_a_deciding_level_are_not_an_slo_measurement():
    base = capacity(ladder((1, FAST)) + [run(4, 0.0, trial=t, status="failed") for t in (1, 2, 3)], SLO)
    found = compare_capacity(cap((1, FAST), (4, FAST)), base)
    assert found["verdict"] == "inconclusive" and "3 of 3 runs failed at c=4" in found["reason"]


def test_levels_measured_apart_leave_the_capacities_uncompared():
    # The variant holds at c=4 and breaks at c=8; the baseline holds at c=6 and breaks at c=7.
    found = compare_capacity(cap((4, FAST), (8, SLOW)), cap((6, FAST), (7, SLOW)))
    assert found["verdict"] == "inconclusive" and "neither holds a level the other broke" in found["reason"]


def test_a_variant_without_any_measured_level_has_no_capacity_to_compare():
    found = compare_capacity(capacity([run(1, 0.0, status="failed")], SLO), cap((1, FAST), (4, SLOW)))
    assert found["verdict"] == "inconclusive" and "the variant has no capacity: no level was measured" in found["reason"]


# Through summary.json: verdict_metric="capacity".

def slo_cell(variant, *levels, **extra):
    return cell(variant, levels=ladder(*levels), benchmark={"concurrency": [1, 4], "trials": 3, "slo": SLO}, **extra)


def verdicts_of(summary):
    return {v["variant"]: v for v in summary["variants"]}


def test_the_summary_takes_each_variants_verdict_on_capacity(tmp_path):
    cells = [slo_cell("baseline", (1, FAST), (4, SLOW)), slo_cell("fast", (1, FAST), (4, FAST)),
             slo_cell("same", (1, FAST), (4, SLOW))]
    summary = build_summary(tmp_path / "c1", cells, verdict_metric="capacity")
    found = verdicts_of(summary)
    assert found["fast"]["verdict"] == "improved" and found["fast"]["capacity_comparison"]["verdict"] == "improved"
    assert found["fast"]["verdict_reason"] == found["fast"]["capacity_comparison"]["reason"]
    # The same capacity (c=1) and the same level broken (c=4), but c=2 and c=3 between them were never measured.
    assert found["same"]["verdict"] == "inconclusive" and "c=2 to c=3 were not measured" in found["same"]["verdict_reason"]
    # The levels keep their comparisons of the metrics, but no per-level verdict: the verdict is the variant's.
    row = next(r for r in summary["cells"] if r["variant"] == "fast" and r["concurrency"] == 4)
    assert row["verdict"] is None and "capacity" in row["verdict_reason"] and row["vs_baseline"]["output_throughput"]
    assert summary["settings"]["verdict_metric"] == "capacity"


def test_a_stack_is_compared_with_the_capacity_of_the_baseline_measured_beside_it(tmp_path):
    cells = [slo_cell("baseline", (1, FAST), (4, FAST)),
             slo_cell("baseline_stack", (1, FAST), (4, SLOW), baseline_of="stack", order=5),
             slo_cell("stack", (1, FAST), (4, FAST), stacked={"composes": ["a"], "baseline": "baseline_stack"}, order=6)]
    found = verdicts_of(build_summary(tmp_path / "c1", cells, verdict_metric="capacity"))
    assert found["stack"]["capacity_comparison"]["baseline_variant"] == "baseline_stack"
    assert found["stack"]["verdict"] == "improved"
    assert "its stage's baseline (baseline_stack) breaks them" in found["stack"]["verdict_reason"]
    assert found["baseline_stack"]["verdict"] == "regressed"  # the drift, against the matrix's baseline


def test_a_crashed_baseline_leaves_every_capacity_verdict_inconclusive(tmp_path):
    cells = [cell("baseline", status="crashed", reason="CUDA out of memory", benchmark={"slo": SLO}),
             slo_cell("fast", (1, FAST), (4, FAST))]
    fast = verdicts_of(build_summary(tmp_path / "c1", cells, verdict_metric="capacity"))["fast"]
    assert fast["verdict"] == "inconclusive" and "the baseline has no capacity: not measured: crashed" in fast["verdict_reason"]


@pytest.mark.parametrize("aa_levels,gated", [
    (((1, FAST), (2, FAST), (4, SLOW)), True),   # the baseline measured again held at c=2, a level it broke before
    (((1, FAST), (2, SLOW), (4, SLOW)), False),  # the same capacity, c=1, and the same next level broken: neutral
])
def test_the_aa_gate_holds_for_capacity_verdicts(tmp_path, aa_levels, gated):
    cells = [slo_cell("baseline", (1, FAST), (2, SLOW), (4, SLOW)), slo_cell("fast", (1, FAST), (2, FAST), (4, FAST)),
             slo_cell("baseline_aa", *aa_levels)]
    summary = build_summary(tmp_path / "c1", cells, verdict_metric="capacity")
    found = verdicts_of(summary)
    floor = summary["noise_floor"]
    assert [(f["host"], f["metric"], f["verdict"]) for f in floor] == [
        ("h1", "capacity", "improved" if gated else "neutral")]
    if gated:
        assert found["fast"]["verdict"] == "inconclusive" and found["fast"]["verdict_before_aa"] == "improved"
        assert "A/A comparison (baseline vs itself) was improved" in found["fast"]["verdict_reason"]
    else:
        assert found["fast"]["verdict"] == "improved" and summary["aa"][0]["gate"] is None


def test_a_figure_a_run_did_not_record_leaves_its_level_unsupported():
    levels = ladder((4, FAST))
    levels[1]["metrics"]["p99_ttft_ms"] = float("nan")
    found = capacity(levels, SLO)
    assert found["levels"][0]["samples"]["p99_ttft_ms"] == [400.0, None, 410.0]
    support = level_support(found["levels"][0], SLO)
    assert found["levels"][0]["holds"] and not support["firm"] and "not recorded in every run" in support["why"]
