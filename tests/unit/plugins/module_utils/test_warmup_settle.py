"""The warm-up's settle rule (fleetopt_warmup): warm-up runs go on until two consecutive ones agree
within the tolerance, a run fails, the benchmark ends, or the cap is spent."""
import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_warmup import (
    change_pct, warmup_record, why_warmup_stops)


def runs(*values):
    """Warm-up runs that succeeded with these throughputs (None: a failed run)."""
    return [{"status": "ok", "output_throughput": v} if v is not None
            else {"status": "failed", "output_throughput": None, "reason": "the benchmark client exited with code 1"}
            for v in values]


def test_the_change_between_two_runs_is_in_percent_of_their_mean_whichever_comes_first():
    assert change_pct(100.0, 110.0) == pytest.approx(10.0 / 105.0 * 100)
    assert change_pct(110.0, 100.0) == change_pct(100.0, 110.0)
    assert change_pct(100.0, 100.0) == 0.0


@pytest.mark.parametrize("values, settle_pct, max_runs, expected", [
    ((), 5.0, 4, None),                              # nothing run yet: run one
    ((100.0,), 5.0, 4, None),                        # one run agrees with nothing
    ((100.0, 104.0), 5.0, 4, "settled"),             # 3.9 % apart
    ((100.0, 120.0), 5.0, 4, None),                  # 18 % apart: another run
    ((100.0, 120.0, 135.0, 138.0), 5.0, 4, "settled"),  # a rising server that levels off on the last run allowed
    ((100.0, 120.0, 100.0, 120.0), 5.0, 4, "cap"),   # never two alike: the cap ends it
    ((100.0,), 5.0, 1, "cap"),                       # a cap of one run can never see two agree
    ((100.0, 110.0), change_pct(100.0, 110.0), 4, "settled"),  # exactly at the tolerance agrees
    ((100.0, None), 5.0, 4, "failed"),               # a failed run ends the warm-up at once
    ((None,), 5.0, 4, "failed"),
])
def test_the_warm_up_stops_when_two_consecutive_runs_agree_a_run_fails_or_the_cap_is_spent(
        values, settle_pct, max_runs, expected):
    assert why_warmup_stops(runs(*values), settle_pct, max_runs) == expected


def test_a_run_that_succeeded_without_a_throughput_figure_counts_as_failed():
    assert why_warmup_stops([{"status": "ok", "output_throughput": None}], 5.0, 4) == "failed"
    assert why_warmup_stops([{"status": "ok", "output_throughput": 0.0}], 5.0, 4) == "failed"


def test_a_benchmark_that_ended_during_the_warm_up_ends_it_whatever_the_runs_say():
    assert why_warmup_stops(runs(100.0, 101.0), 5.0, 4, ended=True) == "ended"


def test_the_record_says_what_was_run_whether_it_settled_and_why_it_stopped():
    made = runs(100.0, 120.0, 123.0)
    for run, seconds in zip(made, (4.0, 3.5, 3.4)):
        run["duration_s"] = seconds
    record = warmup_record(4, made, "settled", settle_pct=5.0, max_runs=4)
    assert record["concurrency"] == 4 and record["settled"] is True and record["stopped_by"] == "settled"
    changes = [run["change_pct"] for run in record["runs"]]
    assert changes == [None, pytest.approx(18.18, abs=0.01), pytest.approx(2.47, abs=0.01)]
    assert record["duration_s"] == pytest.approx(10.9)
    assert record["settle_pct"] == 5.0 and record["max_runs"] == 4
    capped = warmup_record(4, runs(100.0, 130.0), "cap", settle_pct=5.0, max_runs=2)
    assert capped["settled"] is False and capped["stopped_by"] == "cap"
    failed = warmup_record(4, runs(None), "failed", settle_pct=5.0, max_runs=4)
    assert failed["settled"] is False and "exited with code 1" in failed["reason"]


def test_each_outcome_says_why_in_words():
    assert "3.9 % apart, within 5 %" in warmup_record(4, runs(100.0, 104.0), "settled", 5.0, 4)["reason"]
    assert "2 runs made, the most allowed" in warmup_record(4, runs(100.0, 130.0), "cap", 5.0, 2)["reason"]
    assert "no two consecutive ones" in warmup_record(4, runs(100.0), "cap", 5.0, 1)["reason"]
    assert warmup_record(4, runs(100.0), "ended", 5.0, 4, ended_reason="the server exited")["reason"] == "the server exited"
