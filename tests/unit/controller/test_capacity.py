"""Capacity under the SLOs: the highest measured concurrency at which every SLO holds, per trial and over
the trials, with the reason when none holds or all hold. Known answers on constructed levels."""
import pytest

from fleetopt.analysis.capacity import capacity, level_violations

SLO = {"p99_ttft_ms": 1000.0, "p99_itl_ms": 50.0}


def run(c, ttft, itl=10.0, trial=1, launch=1, status="ok"):
    return {"concurrency": c, "trial": trial, "launch": launch, "status": status,
            "metrics": {"p99_ttft_ms": ttft, "p99_itl_ms": itl, "p99_tpot_ms": 5.0} if status == "ok" else None,
            "reason": None if status == "ok" else "the benchmark client exited with code 1"}


def test_a_level_names_every_slo_it_breaks_and_one_it_cannot_check():
    assert level_violations({"p99_ttft_ms": 900.0, "p99_itl_ms": 20.0}, SLO) == []
    assert level_violations({"p99_ttft_ms": 1200.0, "p99_itl_ms": 60.0}, SLO) == [
        "p99 TTFT 1200.0 ms > 1000 ms", "p99 ITL 60.0 ms > 50 ms"]
    assert level_violations({"p99_ttft_ms": 1000.0}, SLO) == ["p99 ITL not recorded"]


def test_capacity_is_the_last_level_before_the_first_that_breaks_an_slo():
    levels = [run(1, 100, trial=t) for t in (1, 2)] + [run(4, 400, trial=t) for t in (1, 2)] \
        + [run(16, 3000, trial=1), run(16, 2500, trial=2)]
    found = capacity(levels, SLO)
    assert found["capacity"] == 4 and found["at_least"] is False
    assert [(t["trial"], t["capacity"]) for t in found["per_trial"]] == [(1, 4), (2, 4)]
    assert (found["low"], found["high"]) == (4, 4)
    assert "hold up to c=4" in found["reason"] and "c=16" in found["reason"] and "p99 TTFT 2750.0 ms > 1000 ms" in found["reason"]
    top = found["levels"][-1]
    assert (top["concurrency"], top["holds_in"], top["trials"], top["holds"]) == (16, 0, 2, False)


def test_the_interval_over_trials_spans_the_trials_capacities():
    # Trial 2 breaks the TTFT SLO at c=4 already; on the means c=4 holds (700 ms).
    levels = [run(1, 100, trial=1), run(1, 120, trial=2), run(4, 300, trial=1), run(4, 1100, trial=2),
              run(16, 5000, trial=1), run(16, 6000, trial=2)]
    found = capacity(levels, SLO)
    assert found["capacity"] == 4
    assert [t["capacity"] for t in found["per_trial"]] == [4, 1]
    assert (found["low"], found["high"]) == (1, 4)
    assert found["levels"][1]["holds_in"] == 1 and 0 < found["levels"][1]["share_ci"][0] < 0.5


def test_trials_pair_by_launch_and_trial_and_a_failed_run_breaks_its_level():
    levels = [run(1, 100, launch=1), run(1, 100, launch=2), run(4, 200, launch=1), run(4, 0, launch=2, status="failed")]
    found = capacity(levels, SLO)
    assert [(t["launch"], t["trial"], t["capacity"], t["at_least"]) for t in found["per_trial"]] == [
        (1, 1, 4, True), (2, 1, 1, False)]
    # On the means c=4 holds (the one run that measured), but a failed run is never a pass.
    assert found["capacity"] == 1 and "c=4" in found["reason"] and "failed" in found["reason"]


def test_when_every_level_holds_capacity_is_at_least_the_top_level():
    found = capacity([run(1, 100), run(4, 200), run(16, 300)], SLO)
    assert (found["capacity"], found["at_least"], found["high_at_least"]) == (16, True, True)
    assert "at least c=16" in found["reason"] and "higher levels" in found["reason"]


def test_when_no_level_holds_there_is_no_capacity_and_the_reason_says_so():
    found = capacity([run(1, 1500), run(4, 3000)], SLO)
    assert found["capacity"] is None and found["low"] is None and found["high"] is None
    assert "already at the lowest level measured, c=1" in found["reason"]
    assert "p99 TTFT 1500.0 ms > 1000 ms" in found["reason"]


def test_without_slos_or_measurements_there_is_nothing_to_find():
    assert capacity([run(1, 100)], {})["reason"] == "no SLO was set (campaign_slo)"
    assert capacity([run(1, 100)], {})["capacity"] is None
    none = capacity([run(1, 0, status="failed")], SLO)
    assert none["capacity"] is None and "no level was measured" in none["reason"]


def test_a_level_that_holds_above_a_broken_one_is_noted_not_counted():
    found = capacity([run(1, 100), run(4, 1200), run(16, 900)], SLO)
    assert found["capacity"] == 1
    assert "holds again at c=16" in found["reason"]


def test_levels_the_capacity_search_measured_are_named_and_its_stop_is_explained():
    searched = dict(run(32, 400), searched=True)
    found = capacity([run(1, 100), run(16, 300), searched], SLO)
    assert found["capacity"] == 32 and found["at_least"] and found["searched"] == [32]
    assert "the capacity search stopped there" in found["reason"]
    assert found["reason"].endswith("measured by the capacity search: c=32")
    broken = capacity([run(1, 100), run(16, 3000), dict(run(8, 300), searched=True)], SLO)
    assert broken["capacity"] == 8 and "hold up to c=8 and fail at c=16" in broken["reason"]
    assert broken["searched"] == [8]
