"""summary.json's verdicts: Bonferroni over a variant's levels, failed levels, the A/A gate."""
import pytest

from fleetopt.analysis import stats
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, level, trials

BASE = {1: (100.0, 101.0, 99.0), 4: (300.0, 303.0, 297.0), 8: (500.0, 505.0, 495.0)}


def baseline(host="h1"):
    return cell("baseline", host=host, levels=[lv for c, outs in BASE.items() for lv in trials(c, *outs)])


def scaled(factor, concurrencies=(1, 4, 8)):
    return [lv for c in concurrencies for lv in trials(c, *(o * factor for o in BASE[c]))]


def summarize(cells, tmp_path):
    return build_summary(tmp_path / "c1", cells)


def rows_of(summary, variant, host="h1"):
    return {r["concurrency"]: r for r in summary["cells"] if r["variant"] == variant and r["host"] == host}


def variant(summary, name, host="h1"):
    return next(v for v in summary["variants"] if v["variant"] == name and v["host"] == host)


def test_each_level_is_judged_at_the_bonferroni_confidence_of_its_variant(tmp_path):
    summary = summarize([baseline(), cell("v", levels=scaled(1.2)), cell("w", levels=scaled(1.2, (1,)))], tmp_path)
    v1, w1 = rows_of(summary, "v")[1], rows_of(summary, "w")[1]
    assert v1["family_size"] == 3 and w1["family_size"] == 1
    comparison = v1["vs_baseline"]["output_throughput"]
    assert comparison["confidence"] == pytest.approx(1 - 0.05 / 3)
    assert w1["vs_baseline"]["output_throughput"]["confidence"] == 0.95
    assert comparison["ci_high_pct"] - comparison["ci_low_pct"] > \
        w1["vs_baseline"]["output_throughput"]["ci_high_pct"] - w1["vs_baseline"]["output_throughput"]["ci_low_pct"]
    expected = stats.compare([o * 1.2 for o in BASE[1]], BASE[1], family_size=3)
    assert comparison["ci_low_pct"] == pytest.approx(expected["ci_low_pct"])
    assert variant(summary, "v")["verdict"] == "improved" and v1["verdict_reason"] == comparison["reason"]


def test_a_level_where_the_variant_failed_counts_as_failed_not_dropped(tmp_path):
    levels = scaled(1.2, (1, 4)) + [level(8, 0, status="failed", trial=t) for t in (1, 2, 3)]
    summary = summarize([baseline(), cell("v", levels=levels), cell("w", levels=scaled(1.0, (1, 4)) +
                                                                 [level(8, 0, status="failed")])], tmp_path)
    v = variant(summary, "v")
    assert v["verdict"] == "mixed" and "failed at c=8" in v["verdict_reason"]
    assert [lv["verdict"] for lv in v["levels"]] == ["improved", "improved", "failed"]
    w = variant(summary, "w")
    assert w["verdict"] == "regressed" and "failed at c=8" in w["verdict_reason"]
    assert rows_of(summary, "v")[8]["status"] == "crashed" and rows_of(summary, "v")[8]["failed_trials"] == 3


def test_one_failed_trial_among_several_still_compares_the_ok_ones(tmp_path):
    levels = trials(1, 120.0, 121.0, 119.0) + [level(1, 0, status="failed", trial=4)]
    summary = summarize([baseline(), cell("v", levels=levels)], tmp_path)
    row = rows_of(summary, "v")[1]
    assert row["status"] == "ok" and row["trials"] == 3 and row["failed_trials"] == 1
    assert row["vs_baseline"]["output_throughput"]["change_pct"] == pytest.approx(20.0)
    assert row["verdict"] == "improved"


def test_a_single_trial_level_is_inconclusive_and_so_is_the_variant(tmp_path):
    summary = summarize([cell("baseline", levels=trials(1, 100.0)), cell("v", levels=trials(1, 130.0))], tmp_path)
    row = rows_of(summary, "v")[1]
    assert row["verdict"] == "inconclusive" and row["verdict_reason"].startswith("fewer than two trials")
    assert variant(summary, "v")["verdict"] == "inconclusive"


def test_a_level_without_a_baseline_is_inconclusive_not_neutral(tmp_path):
    summary = summarize([cell("baseline", levels=trials(1, *BASE[1])), cell("v", levels=scaled(1.0, (1, 4)))],
                        tmp_path)
    assert rows_of(summary, "v")[4]["verdict"] == "inconclusive"
    assert variant(summary, "v")["verdict"] == "inconclusive"
    assert rows_of(summary, "v")[1]["family_size"] == 1  # only c=1 was compared


def test_a_noisy_aa_makes_the_hosts_verdicts_inconclusive_and_keeps_them(tmp_path):
    noisy_aa = cell("baseline_aa", levels=trials(1, 104.0, 106.0, 105.0) + trials(4, *BASE[4]) +
                    trials(8, *BASE[8]))
    cells = [baseline(), cell("v", levels=scaled(1.2)), noisy_aa,
             baseline("h2"), cell("v", host="h2", levels=scaled(1.2)), cell("crashy", host="h1", status="crashed")]
    summary = summarize(cells, tmp_path)
    aa = {h["host"]: h for h in summary["aa"]}
    assert aa["h1"]["verdict"] == "improved" and aa["h1"]["gate"].startswith(
        "the host's A/A comparison (baseline vs itself) was improved: ")
    assert aa["h2"] == {"host": "h2", "aa": False, "verdict": None, "reason": "A/A was off on this host",
                        "gate": None, "resolves_pct": None}
    v1 = variant(summary, "v", "h1")
    assert v1["verdict"] == "inconclusive" and v1["verdict_before_aa"] == "improved"
    assert v1["verdict_reason"].startswith("the host's A/A comparison (baseline vs itself) was improved")
    assert all(lv["verdict"] == "inconclusive" and lv["verdict_before_aa"] == "improved" for lv in v1["levels"])
    row = rows_of(summary, "v")
    assert row[1]["verdict"] == "inconclusive" and row[1]["verdict_before_aa"] == "improved"
    assert row[1]["vs_baseline"]["output_throughput"]["verdict"] == "improved"  # the numbers are kept
    assert variant(summary, "v", "h2")["verdict"] == "improved"  # another host's verdicts stand
    assert variant(summary, "crashy")["verdict"] == "crashed"
    assert variant(summary, "baseline_aa")["verdict"] == "improved"
    floor = [f for f in summary["noise_floor"] if f["concurrency"] == 1]
    assert floor[0]["verdict"] == "improved" and "excludes 0" in floor[0]["reason"]


def quiet(variant, factor=1.0):
    return cell(variant, levels=[lv for c in BASE for lv in trials(c, *(BASE[c][0] * factor * f
                                                                         for f in (1.0, 1.003, 0.997)))])


def test_a_1_percent_spread_with_3_trials_shows_equivalence_over_3_levels_each_level_on_its_own(tmp_path):
    # A quiet GPU host (trials 1 % apart, the role's 3 trials and 3 % band): the A/A must be neutral, or every
    # verdict of a quiet fleet is held back. Bonferroni's 98.3 % interval reaches past 3 %; equivalence takes each
    # level's 90 % interval (two one-sided tests at 5 %), since neutral needs every level to be equivalent.
    summary = summarize([baseline(), cell("baseline_aa", levels=scaled(1.0)), cell("v", levels=scaled(1.2))], tmp_path)
    assert variant(summary, "baseline_aa")["verdict"] == "neutral"
    for floor in summary["noise_floor"]:
        assert floor["verdict"] == "neutral" and floor["ci_high_pct"] > 3.0, floor
        assert -3.0 < floor["eq_low_pct"] and floor["eq_high_pct"] < 3.0 and floor["eq_confidence"] == pytest.approx(0.9), floor
    assert summary["aa"][0]["gate"] is None and variant(summary, "v")["verdict"] == "improved"


def test_a_neutral_aa_lets_verdicts_stand(tmp_path):
    summary = summarize([quiet("baseline"), quiet("v", 1.2), quiet("baseline_aa")], tmp_path)
    assert variant(summary, "baseline_aa")["verdict"] == "neutral"
    assert variant(summary, "v")["verdict"] == "improved" and "verdict_before_aa" not in variant(summary, "v")
    assert [f["verdict"] for f in summary["noise_floor"]] == ["neutral"] * 3
    assert summary["aa"][0]["gate"] is None and summary["settings"]["multiple_comparisons"] == "bonferroni"


def test_the_smallest_effect_a_host_resolves_is_where_its_aa_would_be_neutral(tmp_path):
    # The baseline measured again 5 % faster at c=1 (trials 1 % apart): not neutral within 3 %. The host resolves
    # changes as large as the widest bound of its A/A's equivalence intervals, over every level: judged again there,
    # its A/A is neutral and its verdicts stand; a little below, they are held back again.
    noisy_aa = cell("baseline_aa", levels=trials(1, 104.0, 106.0, 105.0) + trials(4, *BASE[4]) + trials(8, *BASE[8]))
    cells = [baseline(), cell("v", levels=scaled(1.3)), noisy_aa]
    summary = summarize(cells, tmp_path)
    resolves = summary["aa"][0]["resolves_pct"]
    bounds = [max(-f["eq_low_pct"], f["eq_high_pct"]) for f in summary["noise_floor"]]
    assert max(bounds) < resolves <= max(bounds) + 0.1
    assert 5.0 < resolves < 8.0 and summary["aa"][0]["gate"]
    again = build_summary(tmp_path / "c1", cells, min_effect_pct=resolves)
    assert again["aa"][0]["verdict"] == "neutral" and again["aa"][0]["gate"] is None
    assert variant(again, "v")["verdict"] == "improved"
    below = build_summary(tmp_path / "c1", cells, min_effect_pct=resolves - 0.2)
    assert below["aa"][0]["gate"] and variant(below, "v")["verdict_before_aa"] == "improved"


def test_a_quiet_host_resolves_less_than_its_minimum_effect(tmp_path):
    summary = summarize([quiet("baseline"), quiet("v", 1.2), quiet("baseline_aa")], tmp_path)
    assert 0 < summary["aa"][0]["resolves_pct"] < 3.0


def test_an_aa_without_an_equivalence_interval_at_some_level_resolves_nothing_it_can_name(tmp_path):
    one_trial = cell("baseline_aa", levels=trials(1, 100.0) + trials(4, *BASE[4]) + trials(8, *BASE[8]))
    summary = summarize([baseline(), one_trial], tmp_path)
    assert summary["aa"][0]["verdict"] == "inconclusive" and summary["aa"][0]["resolves_pct"] is None


def test_an_aa_with_a_planned_level_the_baseline_never_measured_resolves_nothing_it_can_name(tmp_path):
    # At its planned c=16 the A/A has no baseline to be compared with, so it is inconclusive there at any minimum
    # effect: no effect size would make it neutral, and the report must not name one.
    extra = cell("baseline_aa", levels=scaled(1.0) + trials(16, 900.0, 905.0, 895.0),
                 benchmark={"concurrency": [1, 4, 8, 16], "trials": 3})
    summary = summarize([baseline(), extra], tmp_path)
    assert summary["aa"][0]["verdict"] == "inconclusive" and summary["aa"][0]["resolves_pct"] is None
