"""Replicates over server launches: the cells of one (host, variant) merge before rows are made."""
import math

import pytest

from fleetopt.analysis.launches import launch_details, merge_launches
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, level, trials

DESIGN = {"launches": 2, "order": "counterbalanced (ABBA)"}


def launches(variant, *per_launch, statuses=None, **extra):
    statuses = statuses or ["ok"] * len(per_launch)
    return [cell(variant, status=s, levels=lv, launch_number=i + 1, launches=len(per_launch), design=DESIGN, **extra)
            for i, (lv, s) in enumerate(zip(per_launch, statuses))]


def test_levels_of_every_launch_are_concatenated_and_tagged():
    merged = merge_launches(launches("v", trials(1, 100.0, 101.0), trials(1, 102.0, 99.0)))
    assert len(merged) == 1 and merged[0]["status"] == "ok" and merged[0]["launches"] == 2
    assert [(lv["launch"], lv["metrics"]["output_throughput"]) for lv in merged[0]["levels"]] == [
        (1, 100.0), (1, 101.0), (2, 102.0), (2, 99.0)]


def test_a_cell_without_launch_is_launch_1_of_1_and_keeps_its_launch_description():
    merged = merge_launches([cell("v", levels=trials(1, 100.0))])
    assert merged[0]["launches"] == 1 and merged[0]["levels"][0]["launch"] == 1
    assert launch_details(merged[0])["config_hash"] == "abc"
    assert launch_details({"launch_number": 2}) == {}


@pytest.mark.parametrize("statuses,expected", [
    (["ok", "crashed", "timeout"], "crashed"),
    (["timeout", "ok", "crashed"], "timeout"),
    (["ok", "ok", "error"], "error"),
    (["skipped", "ok", "ok"], "ok"),
    (["blocked", "skipped", "blocked"], "blocked"),
    (["not_applicable", "not_applicable", "not_applicable"], "not_applicable"),
])
def test_merged_status(statuses, expected):
    cells = launches("v", [], [], [], statuses=statuses)
    for index, c in enumerate(cells):
        c["failure"] = {"failure_class": "class%d" % (index + 1)}
        c["reason"] = "reason %d" % (index + 1)
    merged = merge_launches(list(reversed(cells)))[0]  # in any order, launch order decides
    assert merged["status"] == expected
    first = statuses.index(expected) + 1
    assert merged["failure"] == {"failure_class": "class%d" % first} and merged["reason"] == "reason %d" % first
    assert [s["launch"] for s in merged["launch_statuses"]] == [1, 2, 3]


def test_rows_count_trials_and_launches_of_all_launches(tmp_path):
    cells = (launches("baseline", trials(1, 100.0, 101.0, 99.0), trials(1, 100.5, 99.5, 100.0)) +
             launches("v", trials(1, 120.0, 121.0, 119.0) + trials(4, 50.0, 51.0),
                      trials(1, 120.5, 119.5) + [level(1, 0, status="failed", trial=3)] +
                      [level(4, 0, status="failed")]))
    summary = build_summary(tmp_path / "c", cells)
    rows = {(r["variant"], r["concurrency"]): r for r in summary["cells"]}
    assert rows[("v", 1)]["trials"] == 5 and rows[("v", 1)]["launches"] == 2 and rows[("v", 1)]["failed_trials"] == 1
    assert rows[("v", 4)]["trials"] == 2 and rows[("v", 4)]["launches"] == 1
    assert rows[("baseline", 1)]["trials"] == 6 and rows[("baseline", 1)]["launches"] == 2
    assert rows[("v", 1)]["vs_baseline"]["output_throughput"]["change_pct"] == pytest.approx(20.0)
    assert len(summary["variants"]) == 2 and summary["variants"][1]["launches"] == 2
    assert summary["settings"]["design"] == DESIGN


def test_a_crashed_launch_makes_the_variant_crashed(tmp_path):
    cells = (launches("baseline", trials(1, 100.0, 101.0, 99.0)) +
             launches("v", trials(1, 120.0, 121.0), [], statuses=["ok", "crashed"]))
    summary = build_summary(tmp_path / "c", cells)
    v = next(s for s in summary["variants"] if s["variant"] == "v")
    assert v["verdict"] == "crashed" and [s["status"] for s in v["launch_statuses"]] == ["ok", "crashed"]
    assert v["launches_planned"] == 2 and v["launches"] == 1


def test_old_campaigns_have_no_design(tmp_path):
    summary = build_summary(tmp_path / "c", [cell("baseline", levels=trials(1, 100.0, 101.0))])
    assert summary["settings"]["design"] is None and summary["cells"][0]["launches"] == 1


def tight(c, *centres):
    """Three trials around each centre, 0.2 apart: a launch's trials agree closely."""
    return [trials(c, x - 0.2, x, x + 0.2) for x in centres]


def test_the_launch_is_the_unit_so_launch_offsets_are_not_taken_for_an_effect(tmp_path):
    # Each configuration's two launches differ by about 4 %, one up and one down, while their trials agree within
    # 0.2 %: the variant's +6 % is inside the launch-to-launch spread. Taken as six independent trials a side it
    # would be `improved`.
    cells = launches("baseline", *tight(1, 102.0, 98.0)) + launches("v", *tight(1, 104.0, 108.0))
    summary = build_summary(tmp_path / "c", cells)
    row = next(r for r in summary["cells"] if r["variant"] == "v")
    compared = row["vs_baseline"]["output_throughput"]
    assert compared["compared"] == "launches" and compared["launch_df"] == 1 and compared["rounds_blocked"]
    assert (compared["launches_variant"], compared["launches_baseline"]) == (2, 2)
    assert row["verdict"] == "inconclusive" and "launch-to-launch CV" in row["verdict_reason"], row["verdict_reason"]
    assert summary["settings"]["unit_of_replication"] == "launch"
    from fleetopt.analysis import stats
    assert stats.compare(row["samples"]["output_throughput"],
                         next(r for r in summary["cells"] if r["variant"] == "baseline")["samples"]["output_throughput"]
                         )["verdict"] == "improved"


def test_a_configuration_launched_once_is_judged_with_the_launch_spread_of_the_others(tmp_path):
    # The stack stage launches the stack and the baseline again once each; the matrix launched every configuration
    # twice, so their spread is what a single launch of the stack is judged with.
    cells = (launches("baseline", *tight(1, 99.0, 101.0)) + launches("v", *tight(1, 119.0, 121.0))
             + [cell("baseline_stack", levels=tight(1, 100.0)[0], order=50, baseline_of="stack"),
                cell("stack", levels=tight(1, 160.0)[0], order=51, stacked={"baseline": "baseline_stack"})])
    summary = build_summary(tmp_path / "c", cells)
    stack = next(r for r in summary["cells"] if r["variant"] == "stack")
    compared = stack["vs_baseline"]["output_throughput"]
    assert stack["baseline_variant"] == "baseline_stack"
    assert compared["compared"] == "launches" and compared["launch_df"] == 2
    assert (compared["launches_variant"], compared["launches_baseline"]) == (1, 1)
    assert compared["change_pct"] == pytest.approx(60.0, abs=0.01) and stack["verdict"] == "improved"


def test_with_one_launch_everywhere_the_trials_are_the_unit(tmp_path):
    cells = [cell("baseline", levels=trials(1, 100.0, 101.0, 99.0)), cell("v", levels=trials(1, 120.0, 121.0, 119.0))]
    summary = build_summary(tmp_path / "c", cells)
    compared = next(r for r in summary["cells"] if r["variant"] == "v")["vs_baseline"]["output_throughput"]
    assert "compared" not in compared and compared["verdict"] == "improved"
    assert summary["settings"]["unit_of_replication"] == "trial"


def test_a_variant_whose_trials_scatter_is_not_judged_with_the_quiet_launches_of_the_others(tmp_path):
    # The baseline and the A/A launch within 0.5 % of each other; the variant's launch means are 10 % below, but its
    # own trials scatter by 20 % (oversubscribed threads): judged with the pooled spread alone it would be `regressed`.
    noisy = [trials(1, 75.0, 105.0, 80.0, 100.0), trials(1, 70.0, 102.0, 84.0, 104.0)]
    cells = (launches("baseline", *tight(1, 100.0, 100.5)) + launches("baseline_aa", *tight(1, 100.2, 99.8))
             + launches("v", *noisy))
    summary = build_summary(tmp_path / "c", cells)
    row = next(r for r in summary["cells"] if r["variant"] == "v")
    compared = row["vs_baseline"]["output_throughput"]
    assert compared["own_spread_sides"] == ["variant"] and compared["interval_df"] <= compared["launch_df"]
    assert row["verdict"] == "inconclusive", row["verdict_reason"]
    assert "the variant's own trials spread more" in row["verdict_reason"]
    from fleetopt.analysis import stats
    pooled = (compared["launch_cv_pct"], compared["launch_df"])
    assert stats.compare_launches([90.0, 90.0], [100.25, 100.0],
                                  (math.log1p((pooled[0] / 100) ** 2), pooled[1]))["verdict"] == "regressed"
    aa = next(r for r in summary["cells"] if r["variant"] == "baseline_aa")["vs_baseline"]["output_throughput"]
    assert aa["own_spread_sides"] == []


def test_a_drift_that_moves_every_configuration_of_a_round_alike_is_not_taken_for_launch_noise(tmp_path):
    # The host ran about 15 % faster in the second round for every configuration (the ABBA order's rounds). Pooled
    # as launch-to-launch spread that drift hides the variant's +8 %; with the rounds as blocks it cancels.
    cells = (launches("baseline", *tight(1, 100.0, 115.0)) + launches("baseline_aa", *tight(1, 100.5, 114.5))
             + launches("v", *tight(1, 108.0, 124.5)))
    summary = build_summary(tmp_path / "c", cells)
    row = next(r for r in summary["cells"] if r["variant"] == "v")
    compared = row["vs_baseline"]["output_throughput"]
    assert compared["rounds_blocked"] and compared["launch_df"] == 2 and row["verdict"] == "improved", row
    from fleetopt.analysis import stats
    plain = stats.pooled_launch_variance([[100.0, 115.0], [100.5, 114.5], [108.0, 124.5]])
    assert stats.compare_launches([108.0, 124.5], [100.0, 115.0], plain)["verdict"] == "inconclusive"
    # A configuration launched in other rounds (once, here) is judged with the plain pool, where no shift cancels.
    cells.append(cell("stack", levels=tight(1, 130.0)[0], order=51))
    stack = next(r for r in build_summary(tmp_path / "d", cells)["cells"] if r["variant"] == "stack")
    assert stack["vs_baseline"]["output_throughput"]["rounds_blocked"] is False


def test_a_level_only_the_aa_measured_is_not_compared_and_leaves_the_aa_neutral_and_resolving(tmp_path):
    # A capacity search can take the A/A to a level the baseline never measured (its SLO broke at c=4 in one launch):
    # that level has nothing to be compared with, so it neither blocks the A/A's neutrality nor what it resolves.
    quiet = (trials(1, 100.0, 101.0, 99.0), trials(1, 100.5, 99.5, 100.0))
    cells = (launches("baseline", *quiet) + launches("baseline_aa", quiet[0], quiet[1] + trials(2, 180.0, 181.0))
             + launches("v", trials(1, 100.2, 100.8, 99.4), trials(1, 99.8, 100.1, 100.3)))
    summary = build_summary(tmp_path / "c", cells, min_effect_pct=5.0)
    aa = next(v for v in summary["variants"] if v["variant"] == "baseline_aa")
    assert aa["verdict"] == "neutral", aa["verdict_reason"]
    levels = {lv["concurrency"]: lv for lv in aa["levels"]}
    assert levels[2]["verdict"] is None and "measured nothing at this concurrency" in levels[2]["reason"]
    assert levels[2]["searched_only"] is True and "searched_only" not in levels[1]
    assert summary["aa"][0]["resolves_pct"] is not None and summary["aa"][0]["resolves_pct"] < 5.0
