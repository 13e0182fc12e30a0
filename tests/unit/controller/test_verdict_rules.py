"""One verdict per optimization and host from its levels; the A/A gate."""
import pytest

from fleetopt.analysis import verdicts


def levels(*pairs):
    return [{"concurrency": c, "verdict": v, "reason": "why %s" % c} for c, v in pairs]


@pytest.mark.parametrize("given,expected", [
    ([(1, "improved"), (8, "neutral")], "improved"),
    ([(1, "improved"), (8, "inconclusive")], "improved"),
    ([(1, "regressed"), (8, "neutral")], "regressed"),
    ([(1, "improved"), (8, "regressed")], "mixed"),
    ([(1, "improved"), (8, "failed")], "mixed"),
    ([(1, "neutral"), (8, "failed")], "regressed"),
    ([(1, "neutral"), (8, "neutral")], "neutral"),
    ([(1, "neutral"), (8, "inconclusive")], "inconclusive"),
    ([(1, "neutral"), (8, None)], "inconclusive"),
    ([], "inconclusive"),
])
def test_overall_verdict(given, expected):
    assert verdicts.overall_verdict(levels(*given))[0] == expected


def test_a_failed_level_is_named_and_never_dropped():
    verdict, reason = verdicts.overall_verdict(levels((1, "neutral"), (4, "neutral"), (8, "failed")))
    assert verdict == "regressed" and "failed at c=8" in reason and "why 8" in reason


def test_improved_names_its_inconclusive_levels():
    verdict, reason = verdicts.overall_verdict(levels((1, "improved"), (8, "inconclusive")))
    assert verdict == "improved" and "inconclusive at c=8" in reason


def test_inconclusive_carries_the_levels_reasons():
    verdict, reason = verdicts.overall_verdict(levels((1, "neutral"), (8, "inconclusive")))
    assert verdict == "inconclusive" and "c=8: why 8" in reason


def test_a_neutral_aa_gates_nothing():
    assert verdicts.aa_gate("neutral", "fine") is None
    entry = {"verdict": "improved", "verdict_reason": "r"}
    assert verdicts.apply_aa_gate(dict(entry), None) == entry


@pytest.mark.parametrize("aa", ["improved", "inconclusive", "regressed", "crashed"])
def test_a_host_whose_aa_is_not_neutral_makes_verdicts_inconclusive_keeping_the_old_one(aa):
    gate = verdicts.aa_gate(aa, "+4.0 % [+1.0, +7.0]")
    assert gate == "the host's A/A comparison (baseline vs itself) was %s: +4.0 %% [+1.0, +7.0]" % aa
    entry = verdicts.apply_aa_gate({"verdict": "improved", "verdict_reason": "big win"}, gate)
    assert entry["verdict"] == "inconclusive" and entry["verdict_before_aa"] == "improved"
    assert entry["verdict_reason"].startswith(gate) and "big win" in entry["verdict_reason"]


def test_the_aa_gate_leaves_failures_and_statuses_alone():
    gate = verdicts.aa_gate("improved", "x")
    for status in ("crashed", "blocked", "failed", "baseline", None):
        assert verdicts.apply_aa_gate({"verdict": status}, gate) == {"verdict": status}


def test_a_level_only_a_capacity_search_reached_does_not_decide():
    searched = {"concurrency": 2, "verdict": None, "searched_only": True, "reason": "the baseline measured nothing"}
    assert verdicts.overall_verdict(levels((1, "neutral")) + [searched]) == (
        "neutral", "neutral at c=1; not compared at c=2 (searched only here)")
    assert verdicts.overall_verdict([searched])[0] == "inconclusive"
