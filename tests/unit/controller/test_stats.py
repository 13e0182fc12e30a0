"""Per-level verdicts from the interval of the relative change, checked against scipy."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from fleetopt.analysis import stats


def test_describe_gives_the_t_interval_of_the_mean():
    d = stats.describe([10.0, 12.0, 14.0])
    assert d["n"] == 3 and d["mean"] == 12.0 and d["std"] == 2.0
    half = 4.302652729911275 * 2.0 / math.sqrt(3)  # t(0.975, 2) * s / sqrt(n)
    assert d["ci_low"] == pytest.approx(12.0 - half) and d["ci_high"] == pytest.approx(12.0 + half)


def test_describe_of_one_or_no_value_has_no_interval():
    assert stats.describe([5.0]) == {"n": 1, "mean": 5.0, "std": None, "ci_low": None, "ci_high": None}
    assert stats.describe([None])["n"] == 0


def scipy_interval_pct(variant, baseline, confidence):
    interval = sps.ttest_ind(variant, baseline, equal_var=False).confidence_interval(confidence)
    base = np.mean(baseline)
    return interval.low / base * 100.0, interval.high / base * 100.0


@pytest.mark.parametrize("variant,baseline", [
    ([130.0, 131.0, 129.0], [100.0, 101.0, 99.0]),
    ([150.0, 60.0, 140.0, 120.0], [100.0, 130.0, 70.0]),
    ([99.0, 101.5, 100.2, 98.7, 100.9], [100.4, 99.1, 101.0]),
])
def test_the_interval_is_welchs_from_scipy_in_percent_of_the_baseline(variant, baseline):
    result = stats.compare(variant, baseline)
    low, high = scipy_interval_pct(variant, baseline, 0.95)
    assert result["ci_low_pct"] == pytest.approx(low) and result["ci_high_pct"] == pytest.approx(high)
    assert result["confidence"] == 0.95 and result["tested"]
    assert result["p_value"] == pytest.approx(sps.ttest_ind(variant, baseline, equal_var=False).pvalue)


def test_a_known_interval_by_hand():
    # Equal n = 3 and equal variances (s = 1): Welch's df = 4, standard error sqrt(2/3).
    result = stats.compare([130.0, 131.0, 129.0], [100.0, 101.0, 99.0])
    half = sps.t.ppf(0.975, 4) * math.sqrt(2.0 / 3.0)
    assert result["change_pct"] == pytest.approx(30.0)
    assert result["ci_low_pct"] == pytest.approx(30.0 - half) and result["ci_high_pct"] == pytest.approx(30.0 + half)
    assert result["verdict"] == "improved" and result["significant"]
    assert result["cv_variant_pct"] == pytest.approx(100.0 / 130.0) and result["cv_baseline_pct"] == pytest.approx(1.0)


def test_lower_is_better_metrics_regress_when_they_grow():
    result = stats.compare([13.0, 13.1, 12.9], [10.0, 10.1, 9.9], higher_is_better=False)
    assert result["verdict"] == "regressed" and "excludes 0" in result["reason"]
    assert stats.compare([13.0, 13.1, 12.9], [10.0, 10.1, 9.9])["verdict"] == "improved"


def test_equivalence_within_the_minimum_effect_is_neutral():
    result = stats.compare([101.0, 101.01, 100.99], [100.0, 100.01, 99.99], min_effect_pct=3.0)
    assert result["significant"]  # a real change, but inside the band
    assert -3.0 <= result["ci_low_pct"] and result["ci_high_pct"] <= 3.0
    assert result["verdict"] == "neutral" and "equivalent" in result["reason"]


def test_equivalence_is_two_one_sided_tests_at_the_stated_confidence_each_level_on_its_own():
    # Bonferroni over 3 levels widens the interval of an effect to 98.3 % and past the band here; equivalence is
    # shown by Schuirmann's two one-sided tests at 5 % each (the 90 % interval inside the band), unadjusted: an
    # optimization is neutral only where every level is (intersection-union), which keeps the family's 5 %.
    variant, baseline = [100.5, 101.5, 99.5], [100.0, 101.0, 99.0]
    result = stats.compare(variant, baseline, min_effect_pct=3.0, family_size=3)
    assert result["ci_low_pct"] < -2.5 and result["ci_high_pct"] > 3.0  # the effect's interval, at 98.3 %
    low, high = scipy_interval_pct(variant, baseline, 0.90)
    assert result["eq_low_pct"] == pytest.approx(low) and result["eq_high_pct"] == pytest.approx(high)
    assert result["eq_confidence"] == pytest.approx(0.90)
    bound = 0.03 * np.mean(baseline)
    above = sps.ttest_ind(np.add(variant, bound), baseline, equal_var=False, alternative="greater").pvalue
    below = sps.ttest_ind(np.subtract(variant, bound), baseline, equal_var=False, alternative="less").pvalue
    assert max(above, below) < 0.05  # scipy's own two one-sided tests reject non-equivalence
    assert result["verdict"] == "neutral" and "two one-sided tests" in result["reason"]
    assert "at 90 % confidence" in result["reason"]
    # Just past the band the same tests keep it open: inconclusive.
    wide = stats.compare([101.5, 102.5, 100.5], baseline, min_effect_pct=3.0, family_size=3)
    bound_hi = sps.ttest_ind(np.subtract([101.5, 102.5, 100.5], bound), baseline, equal_var=False,
                             alternative="less").pvalue
    assert bound_hi > 0.05 and wide["eq_high_pct"] > 3.0 and wide["verdict"] == "inconclusive"


def test_an_interval_straddling_zero_and_the_band_is_inconclusive_never_neutral():
    result = stats.compare([150.0, 60.0, 140.0], [100.0, 130.0, 70.0])
    assert not result["significant"] and result["ci_low_pct"] < -3.0 and result["ci_high_pct"] > 3.0
    assert result["verdict"] == "inconclusive"
    reason = result["reason"]
    assert "interval width %.1f points" % (result["ci_high_pct"] - result["ci_low_pct"]) in reason
    assert "band of 6.0" in reason and "3 trial(s)" in reason
    assert "CV variant %.1f %%" % result["cv_variant_pct"] in reason
    assert "baseline %.1f %%" % result["cv_baseline_pct"] in reason


def test_a_small_real_change_that_cannot_be_bounded_below_the_minimum_is_inconclusive():
    # Interval excludes 0 but reaches past +3 % while the point change is under 3 %.
    result = stats.compare([102.0, 104.0, 100.5, 103.5], [100.0, 100.5, 99.5, 100.0])
    assert result["significant"] and abs(result["change_pct"]) < 3.0 and result["ci_high_pct"] > 3.0
    assert result["verdict"] == "inconclusive" and "smaller than 3.0 %" in result["reason"]


def test_one_trial_on_a_side_is_inconclusive_not_neutral():
    for variant, baseline in (([130.0], [100.0, 101.0]), ([130.0, 131.0], [100.0])):
        result = stats.compare(variant, baseline)
        assert result["tested"] is False and result["verdict"] == "inconclusive"
        assert result["reason"].startswith("fewer than two trials") and result["ci_low_pct"] is None
    assert stats.compare([130.0], [100.0])["change_pct"] == pytest.approx(30.0)


def test_no_value_on_a_side_gives_nothing():
    assert stats.compare([], [100.0, 101.0]) is None and stats.compare([1.0, 2.0], [None]) is None


def test_zero_variance_on_both_sides_is_a_degenerate_interval_judged_the_same_way():
    better = stats.compare([110.0, 110.0, 110.0], [100.0, 100.0])
    assert better["ci_low_pct"] == better["ci_high_pct"] == pytest.approx(10.0)
    assert better["verdict"] == "improved" and better["cv_variant_pct"] == 0.0
    same = stats.compare([100.0, 100.0], [100.0, 100.0])
    assert same["ci_low_pct"] == same["ci_high_pct"] == 0.0 and same["verdict"] == "neutral"
    small = stats.compare([101.0, 101.0], [100.0, 100.0])
    assert small["verdict"] == "neutral"  # +1 % exactly, inside ±3 %
    worse = stats.compare([90.0, 90.0], [100.0, 100.0])
    assert worse["verdict"] == "regressed"


def test_bonferroni_widens_each_interval_with_the_number_of_levels():
    variant, baseline = [104.0, 106.0, 105.0, 103.5], [100.0, 101.0, 99.0, 100.5]
    one = stats.compare(variant, baseline, family_size=1)
    three = stats.compare(variant, baseline, family_size=3)
    assert three["confidence"] == pytest.approx(1 - 0.05 / 3) and one["confidence"] == 0.95
    assert "at 98.33 % confidence" in three["reason"] and "at 95 % confidence" in one["reason"]
    assert three["ci_low_pct"] < one["ci_low_pct"] and three["ci_high_pct"] > one["ci_high_pct"]
    low, high = scipy_interval_pct(variant, baseline, 1 - 0.05 / 3)
    assert three["ci_low_pct"] == pytest.approx(low) and three["ci_high_pct"] == pytest.approx(high)
    assert stats.bonferroni(0.95, 0) == 0.95 and stats.bonferroni(0.9, 4) == pytest.approx(0.975)


def test_bonferroni_can_turn_a_verdict_inconclusive():
    variant, baseline = [104.0, 107.0, 103.0], [100.0, 101.0, 99.0]
    assert stats.compare(variant, baseline, family_size=1)["verdict"] == "improved"
    assert stats.compare(variant, baseline, family_size=20)["verdict"] == "inconclusive"


def test_cv_pct():
    assert stats.cv_pct([10.0, 12.0, 14.0]) == pytest.approx(2.0 / 12.0 * 100)
    assert stats.cv_pct([5.0]) is None


TIGHT = (0.99, 1.0, 1.01)


def around(mean):
    return [mean * s for s in TIGHT]


def test_effects_are_compared_as_the_ratio_of_the_two_gains():
    # +30 % against one baseline, +50 % against another: the first is 13.3 % below the second.
    result = stats.compare_effects(around(130.0), around(100.0), around(120.0), around(80.0), min_effect_pct=5.0)
    assert result["change_pct"] == pytest.approx((1.3 / 1.5 - 1) * 100)
    assert result["verdict"] == "regressed" and result["tested"] and result["ci_high_pct"] < 0


def test_a_drift_that_scales_one_stage_cancels_out_of_the_comparison_of_effects():
    # The host is 30 % slower in the second stage: the configuration and its stage's baseline both measure less.
    result = stats.compare_effects(around(91.0), around(70.0), around(130.0), around(100.0), min_effect_pct=5.0)
    assert result["change_pct"] == pytest.approx(0.0, abs=1e-9) and result["verdict"] == "neutral"


def test_the_interval_of_effects_is_a_t_interval_on_the_log_scale_from_all_four_measurements():
    sides = ([130.0, 126.0, 135.0], [100.0, 97.0, 104.0, 99.0], [120.0, 118.0, 125.0], [80.0, 83.0, 79.0])
    result = stats.compare_effects(*sides, confidence=0.95, family_size=2)
    terms = [np.var(s, ddof=1) / (len(s) * np.mean(s) ** 2) for s in sides]
    se = math.sqrt(sum(terms))
    df = sum(terms) ** 2 / sum(t ** 2 / (len(s) - 1) for t, s in zip(terms, sides))
    log_ratio = math.log(np.mean(sides[0]) / np.mean(sides[1]) / (np.mean(sides[2]) / np.mean(sides[3])))
    half = sps.t.ppf(1 - 0.05 / 2 / 2, df) * se
    assert result["confidence"] == pytest.approx(0.975)
    assert result["ci_low_pct"] == pytest.approx((math.exp(log_ratio - half) - 1) * 100)
    assert result["ci_high_pct"] == pytest.approx((math.exp(log_ratio + half) - 1) * 100)
    assert result["p_value"] == pytest.approx(2 * sps.t.sf(abs(log_ratio) / se, df))
    eq_half = sps.t.ppf(0.95, df) * se  # two one-sided tests at 5 %: not adjusted for the family
    assert result["eq_low_pct"] == pytest.approx((math.exp(log_ratio - eq_half) - 1) * 100)
    assert result["eq_high_pct"] == pytest.approx((math.exp(log_ratio + eq_half) - 1) * 100)


def test_effects_with_one_trial_on_a_side_are_not_tested_and_without_values_not_compared():
    result = stats.compare_effects([130.0], around(100.0), around(120.0), around(80.0))
    assert result["verdict"] == "inconclusive" and not result["tested"] and "fewer than two trials" in result["reason"]
    assert stats.compare_effects([], around(100.0), around(120.0), around(80.0)) is None


def test_the_launch_variance_pools_the_spread_of_launch_means_on_the_log_scale():
    # Two configurations of different speeds, each with two launches 10 % apart, pool the same relative spread:
    # each pair adds (log 1.1)^2 / 2 with one degree of freedom; a configuration launched once adds nothing.
    variance, df = stats.pooled_launch_variance([[100.0, 110.0], [200.0, 220.0], [50.0]])
    assert df == 2 and variance == pytest.approx(math.log(1.1) ** 2 / 2)
    three, two = np.log([101.0, 97.0, 104.0]), np.log([55.0, 58.0])
    expected = (np.var(three, ddof=1) * 2 + np.var(two, ddof=1)) / 3
    assert stats.pooled_launch_variance([[101.0, 97.0, 104.0], [55.0, 58.0]]) == (pytest.approx(expected), 3)
    assert stats.pooled_launch_variance([[100.0], [None, 120.0], []]) is None


@pytest.mark.parametrize("variant,baseline", [
    ([110.0, 118.0, 113.0], [100.0, 104.0]),
    ([52.0, 49.0], [100.0, 96.0, 103.0, 99.0]),
])
def test_launches_pooled_only_with_each_other_give_students_interval_on_the_logs(variant, baseline):
    pooled = stats.pooled_launch_variance([variant, baseline])
    result = stats.compare_launches(variant, baseline, pooled)
    test = sps.ttest_ind(np.log(variant), np.log(baseline), equal_var=True)
    interval = test.confidence_interval(0.95)
    assert result["compared"] == "launches" and result["tested"] and result["launch_df"] == len(variant) + len(baseline) - 2
    assert result["ci_low_pct"] == pytest.approx(math.expm1(interval.low) * 100.0)
    assert result["ci_high_pct"] == pytest.approx(math.expm1(interval.high) * 100.0)
    assert result["p_value"] == pytest.approx(test.pvalue)
    equivalence = test.confidence_interval(0.90)
    assert result["eq_low_pct"] == pytest.approx(math.expm1(equivalence.low) * 100.0)
    assert result["eq_high_pct"] == pytest.approx(math.expm1(equivalence.high) * 100.0)
    geometric = math.exp(np.mean(np.log(variant)) - np.mean(np.log(baseline)))
    assert result["change_pct"] == pytest.approx((geometric - 1.0) * 100.0)


def test_one_launch_a_side_is_judged_with_the_spread_pooled_from_other_configurations():
    pooled = (math.log(1.02) ** 2, 6)  # launch means about 2 % apart, six degrees of freedom
    result = stats.compare_launches([130.0], [100.0], pooled, family_size=2)
    half = sps.t.ppf(1 - 0.05 / 4, 6) * math.log(1.02) * math.sqrt(2.0)
    assert result["confidence"] == pytest.approx(0.975)
    assert result["ci_low_pct"] == pytest.approx(math.expm1(math.log(1.3) - half) * 100.0)
    assert result["verdict"] == "improved" and (result["launches_variant"], result["launches_baseline"]) == (1, 1)
    eq_half = sps.t.ppf(0.95, 6) * math.log(1.02) * math.sqrt(2.0)
    assert result["eq_low_pct"] == pytest.approx(math.expm1(math.log(1.3) - eq_half) * 100.0)
    same = stats.compare_launches([100.0], [100.0], pooled, family_size=2, min_effect_pct=6.0)
    assert same["ci_high_pct"] > 6.0 and same["eq_high_pct"] < 6.0 and same["verdict"] == "neutral", same  # 98.75 %, 90 %
    assert result["launch_cv_pct"] == pytest.approx(math.sqrt(math.expm1(math.log(1.02) ** 2)) * 100.0)
    wide = stats.compare_launches([104.0], [100.0], pooled)
    assert wide["verdict"] == "inconclusive" and "variant 1 launch(es), baseline 1" in wide["reason"]
    assert "launch-to-launch CV 2.0 %, pooled over this host's configurations at this level (6 degree(s) of " \
        "freedom)" in wide["reason"], wide["reason"]


def test_launches_that_agree_exactly_give_a_degenerate_interval_and_no_value_gives_nothing():
    result = stats.compare_launches([110.0, 110.0], [100.0, 100.0], (0.0, 2))
    assert (result["ci_low_pct"], result["ci_high_pct"]) == (pytest.approx(10.0), pytest.approx(10.0))
    assert result["verdict"] == "improved"
    assert stats.compare_launches([None], [100.0], (0.01, 2)) is None
    assert stats.compare_launches([110.0], [], (0.01, 2)) is None


def test_effects_of_launch_means_are_the_ratio_of_geometric_gains_with_every_sides_launches_in_the_error():
    pooled = (0.0004, 5)
    result = stats.compare_effects_launches([160.0], [100.0], [128.0, 132.0], [99.0, 101.0], pooled)
    gain = math.log(160.0 / 100.0) - (np.mean(np.log([128.0, 132.0])) - np.mean(np.log([99.0, 101.0])))
    half = sps.t.ppf(0.975, 5) * math.sqrt(0.0004 * (1 + 1 + 0.5 + 0.5))
    assert result["change_pct"] == pytest.approx(math.expm1(gain) * 100.0)
    assert result["ci_low_pct"] == pytest.approx(math.expm1(gain - half) * 100.0)
    assert result["ci_high_pct"] == pytest.approx(math.expm1(gain + half) * 100.0)
    assert result["verdict"] == "improved" and result["compared"] == "effects of launches"
    assert stats.compare_effects_launches([160.0], [], [128.0], [99.0], pooled) is None


def test_a_launch_mean_is_at_least_as_noisy_as_its_own_trials_make_it():
    # Within-launch spread of the logs, pooled over the launches, over the trials a launch (harmonic mean).
    launches = [[100.0, 120.0, 90.0], [110.0, 95.0], [105.0]]
    first, second = np.log(launches[0]), np.log(launches[1])
    within = (np.var(first, ddof=1) * 2 + np.var(second, ddof=1)) / 3
    per_launch = 3 / (1 / 3 + 1 / 2 + 1 / 1)
    assert stats.launch_mean_floor(launches) == (pytest.approx(within / per_launch), 3)
    assert stats.launch_mean_floor([[100.0], [110.0]]) is None


def test_a_side_whose_own_trials_spread_more_than_the_pooled_launches_is_judged_with_its_own_spread():
    # The matrix's launches agree within about 1 %, but this variant's trials spread by 20 %: with the pooled
    # spread alone its -15 % would be `regressed`; with its own, the interval is Welch-Satterthwaite's.
    pooled = (math.log(1.01) ** 2, 5)
    noisy = [[80.0, 110.0, 70.0, 100.0], [75.0, 105.0, 65.0, 90.0]]
    quiet = [[100.0, 101.0, 99.0], [100.5, 99.5, 100.0]]
    variant, baseline = [float(np.mean(t)) for t in noisy], [float(np.mean(t)) for t in quiet]
    floors = [stats.launch_mean_floor(noisy), stats.launch_mean_floor(quiet)]
    assert floors[0][0] > pooled[0] > floors[1][0]
    before = stats.compare_launches(variant, baseline, pooled)
    assert before["verdict"] == "regressed"
    result = stats.compare_launches(variant, baseline, pooled, floors=floors)
    own, shared = floors[0][0] / 2, pooled[0] / 2
    se = math.sqrt(own + shared)
    df = min(pooled[1], (own + shared) ** 2 / (own ** 2 / floors[0][1] + shared ** 2 / pooled[1]))
    log_ratio = np.mean(np.log(variant)) - np.mean(np.log(baseline))
    assert result["ci_low_pct"] == pytest.approx(math.expm1(log_ratio - sps.t.ppf(0.975, df) * se) * 100.0)
    assert result["eq_high_pct"] == pytest.approx(math.expm1(log_ratio + sps.t.ppf(0.95, df) * se) * 100.0)
    assert result["interval_df"] == pytest.approx(df) and result["own_spread_sides"] == ["variant"]
    assert result["verdict"] == "inconclusive", result
    assert "the variant's own trials spread more" in result["reason"], result["reason"]
    # A floor just above the pool, with many degrees of freedom, never narrows the interval below the pool's.
    near = stats.compare_launches(variant, baseline, pooled, floors=[(pooled[0] * 1.01, 40), None])
    assert near["interval_df"] == 5 and near["ci_low_pct"] <= before["ci_low_pct"]
    # Quiet sides change nothing: Student's interval on the pooled spread, as before.
    assert stats.compare_launches(baseline, variant, (floors[0][0] * 2, 5), floors=floors)["interval_df"] == 5


def test_effects_of_launches_take_each_noisy_sides_own_spread_too():
    pooled = (0.0004, 5)
    plain = stats.compare_effects_launches([160.0], [100.0], [128.0, 132.0], [99.0, 101.0], pooled)
    floors = [(0.01, 3), None, (0.0001, 2), None]
    result = stats.compare_effects_launches([160.0], [100.0], [128.0, 132.0], [99.0, 101.0], pooled, floors=floors)
    terms = [(0.01 / 1, 3), (0.0004 * (1 + 0.5 + 0.5), 5)]
    se2 = sum(t for t, _ in terms)
    df = min(5, se2 ** 2 / sum(t ** 2 / d for t, d in terms))
    assert result["interval_df"] == pytest.approx(df) and result["own_spread_sides"] == ["variant"]
    assert result["ci_high_pct"] - result["ci_low_pct"] > plain["ci_high_pct"] - plain["ci_low_pct"]
    gain = math.log(160.0 / 100.0) - (np.mean(np.log([128.0, 132.0])) - np.mean(np.log([99.0, 101.0])))
    assert result["ci_low_pct"] == pytest.approx(math.expm1(gain - sps.t.ppf(0.975, df) * math.sqrt(se2)) * 100.0)


def _dummy_regression_residual_variance(table):
    """Residual variance of log y = configuration + round, fitted by least squares over dummy variables."""
    logs = np.log(np.array(table, dtype=float))
    configs, rounds = logs.shape
    rows, y = [], []
    for c in range(configs):
        for r in range(rounds):
            rows.append([1.0] + [float(c == k) for k in range(1, configs)] + [float(r == k) for k in range(1, rounds)])
            y.append(logs[c, r])
    x, y = np.array(rows), np.array(y)
    fitted = x @ np.linalg.lstsq(x, y, rcond=None)[0]
    df = configs * rounds - x.shape[1]
    return float(((y - fitted) ** 2).sum() / df), df


def test_a_shift_common_to_a_round_is_taken_out_of_the_launch_variance():
    # Every configuration's second launch (the ABBA order's second round) ran about 15 % faster: a drift of the host,
    # not launch-to-launch noise. With the rounds as blocks the variance is what is left, as a regression on
    # configuration and round finds it.
    table = [[149.0, 172.0], [214.0, 236.0], [117.0, 129.0], [197.0, 189.0], [170.0, 163.0]]
    groups = [{1: a, 2: b} for a, b in table]
    variance, df, rounds = stats.round_blocked_launch_variance(groups)
    expected, expected_df = _dummy_regression_residual_variance(table)
    assert (variance, df, rounds) == (pytest.approx(expected), expected_df, (1, 2))
    plain = stats.pooled_launch_variance([list(g.values()) for g in groups])
    assert plain[1] == 5 and variance < plain[0]
    shifted = [[m * 1.15 if r == 1 else m for r, m in enumerate(launches)] for launches in [[100.0, 101.0], [50.0, 49.0]]]
    assert stats.round_blocked_launch_variance([{1: a, 2: b} for a, b in shifted])[0] == pytest.approx(
        _dummy_regression_residual_variance(shifted)[0])


def test_rounds_block_only_configurations_launched_in_the_same_rounds():
    # A configuration launched once (the stack stage) takes no part; configurations whose rounds differ give none.
    assert stats.round_blocked_launch_variance([{1: 100.0, 2: 110.0}, {1: 50.0, 2: 54.0}, {1: 80.0}])[1:] == (1, (1, 2))
    assert stats.round_blocked_launch_variance([{1: 100.0, 2: 110.0}, {1: 50.0, 3: 54.0}]) is None
    assert stats.round_blocked_launch_variance([{1: 100.0, 2: 110.0}]) is None
    three = [[100.0, 104.0, 98.0], [50.0, 53.0, 49.5], [70.0, 71.0, 69.0]]
    variance, df, rounds = stats.round_blocked_launch_variance([dict(zip((1, 2, 3), t)) for t in three])
    assert (variance, df) == (pytest.approx(_dummy_regression_residual_variance(three)[0]), 4) and rounds == (1, 2, 3)


def test_a_comparison_over_rounds_says_the_rounds_were_blocks():
    result = stats.compare_launches([104.0, 101.0], [100.0, 100.0], (0.0004, 4), rounds=True)
    assert result["verdict"] == "inconclusive" and result["rounds_blocked"] is True
    assert "each round's shift" in result["reason"] and "blocks, 4 degree(s)" in result["reason"], result["reason"]
    assert stats.compare_launches([110.0, 121.0], [100.0, 110.0], (0.0004, 4))["rounds_blocked"] is False
