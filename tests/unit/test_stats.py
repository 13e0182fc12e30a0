import math

import pytest

from fleetopt import stats


def test_describe_gives_the_t_interval_of_the_mean():
    d = stats.describe([10.0, 12.0, 14.0])
    assert d["n"] == 3 and d["mean"] == 12.0 and d["std"] == 2.0
    half = 4.302652729911275 * 2.0 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n)
    assert d["ci_low"] == pytest.approx(12.0 - half) and d["ci_high"] == pytest.approx(12.0 + half)


def test_describe_of_one_or_no_value_has_no_interval():
    assert stats.describe([5.0]) == {"n": 1, "mean": 5.0, "std": None, "ci_low": None, "ci_high": None}
    assert stats.describe([None])["n"] == 0


def test_clear_improvement_is_improved_with_an_interval_excluding_zero():
    result = stats.compare([130.0, 131.0, 129.0], [100.0, 101.0, 99.0])
    assert result["verdict"] == "improved" and result["significant"]
    assert result["change_pct"] == pytest.approx(30.0)
    assert result["ci_low_pct"] > 0 and result["ci_high_pct"] > result["ci_low_pct"]


def test_lower_is_better_metrics_regress_when_they_grow():
    result = stats.compare([13.0, 13.1, 12.9], [10.0, 10.1, 9.9], higher_is_better=False)
    assert result["verdict"] == "regressed"


def test_significant_but_tiny_difference_is_neutral():
    result = stats.compare([101.0, 101.01, 100.99], [100.0, 100.01, 99.99], min_effect_pct=3.0)
    assert result["significant"] and result["verdict"] == "neutral"


def test_large_but_noisy_difference_is_neutral():
    result = stats.compare([150.0, 60.0, 140.0], [100.0, 130.0, 70.0])
    assert not result["significant"] and result["verdict"] == "neutral"
    assert result["ci_low_pct"] < 0 < result["ci_high_pct"]


def test_single_trials_cannot_be_tested():
    result = stats.compare([130.0], [100.0])
    assert result["tested"] is False and result["verdict"] is None and result["change_pct"] == pytest.approx(30.0)


@pytest.mark.parametrize("levels,expected", [
    (["improved", "neutral"], "improved"),
    (["regressed", "neutral"], "regressed"),
    (["improved", "regressed"], "mixed"),
    (["neutral", None], "neutral"),
    ([None], None),
])
def test_overall_verdict(levels, expected):
    assert stats.overall_verdict(levels) == expected
