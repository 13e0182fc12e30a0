"""Statistics behind the verdicts: trial means, intervals, Welch comparisons, one verdict per level.

A level's verdict is read from the interval of the relative change (variant against
baseline, in percent of the baseline mean; Welch's interval, which does not assume equal
variances) and the minimum effect:

- improved / regressed: the interval excludes 0 and the point change is at least the
  minimum effect in the better / worse direction;
- neutral: equivalence is shown by two one-sided tests (Schuirmann's TOST) at 1 - confidence each:
  the equivalence interval, at 1 - 2 (1 - confidence) (90 % for 95 %), lies inside
  [-min effect, +min effect];
- inconclusive otherwise (and with fewer than two trials on a side), with a reason that names
  the interval, the minimum effect, each side's coefficient of variation and trial count.

The confidence of the interval of an effect is adjusted for the family of levels it is judged
with (Bonferroni: 1 - (1 - confidence) / m), so that m levels together keep the stated confidence:
an optimization improves or regresses where any one level does. The equivalence interval is not
adjusted: an optimization (and a host's A/A) is neutral only where every level is, and a claim
that needs every test of the family to reject keeps the family's error rate with each test at the
stated level (intersection-union). Bonferroni there would hold back the A/A of a quiet host: three
trials 1 % apart over three levels cannot show equivalence within 3 % at 98.3 %.

Where some configuration of a host was launched more than once at a level, the launch is the unit
of replication (compare_launches): trials of one launch share that launch's offset (memory layout,
KV pool, clocks, the host's drift between launches), so pooling them as independent would make the
interval too narrow. Each side is the mean of its launch means, and the spread of a launch mean, on
the log scale, is pooled over every configuration measured at that level on that host
(pooled_launch_variance), so that two launches per configuration still give an interval with
several degrees of freedom. Where every configuration launched more than once was launched in the
same rounds (the ABBA order's launch k of each variant runs in round k), each round's shift, common
to all of them (the host's drift from one round to the next), is taken out first: rounds are blocks
of a two-way layout (round_blocked_launch_variance), and the shift cancels from a comparison of two
configurations launched in the same rounds. Pooling assumes the configurations are about equally noisy; a side whose
own trials spread more than the pool allows (oversubscribed threads, say) takes its own spread
instead (launch_mean_floor), with Welch-Satterthwaite's degrees of freedom, so that quiet neighbours
never make a noisy variant look resolved. With one launch everywhere, the trials are the unit (compare).

Two configurations measured in different stages of a campaign, each beside a baseline of its own
(the recommendation's stack stage), are compared through their effects (compare_effects): the ratio
of the two gains, so that a drift of the host between the stages cancels as far as it scales a
configuration and the baseline beside it alike, with an interval from all four measurements.
"""
import math

import numpy as np
from scipy import stats

from fleetopt.formatting import fmt_confidence, fmt_unsigned_pct

# Direction of "better" for each metric the verdicts can be based on.
HIGHER_IS_BETTER = {
    "output_throughput": True, "total_throughput": True, "request_throughput": True,
    "mean_ttft_ms": False, "median_ttft_ms": False, "p99_ttft_ms": False,
    "mean_itl_ms": False, "median_itl_ms": False, "p99_itl_ms": False,
    "mean_tpot_ms": False, "mean_e2e_latency_ms": False, "p99_e2e_latency_ms": False,
    "request_goodput": True, "p99_tpot_ms": False,
}
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MIN_EFFECT_PCT = 3.0
LEVEL_VERDICTS = ("improved", "regressed", "neutral", "inconclusive")


def _finite(values):
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def bonferroni(confidence, family_size):
    """The confidence of each of `family_size` intervals that hold together at `confidence`."""
    return 1.0 - (1.0 - confidence) / max(int(family_size), 1)


def equivalence_level(confidence):
    """The confidence of the interval whose lying inside the band is two one-sided tests, each at 1 - `confidence`."""
    return 1.0 - 2.0 * (1.0 - confidence)


def cv_pct(values):
    """Coefficient of variation (sample std / |mean|) in percent; None with fewer than 2 values."""
    data = np.asarray(_finite(values))
    if data.size < 2 or data.mean() == 0:
        return None
    return float(data.std(ddof=1) / abs(data.mean()) * 100.0)


def describe(values, confidence=DEFAULT_CONFIDENCE):
    """Mean, sample standard deviation and the t-interval of the mean (None where n < 2)."""
    data = np.asarray(_finite(values))
    n = int(data.size)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci_low": None, "ci_high": None}
    mean = float(data.mean())
    if n < 2:
        return {"n": 1, "mean": mean, "std": None, "ci_low": None, "ci_high": None}
    std = float(data.std(ddof=1))
    if std == 0.0:
        return {"n": n, "mean": mean, "std": 0.0, "ci_low": mean, "ci_high": mean}
    low, high = stats.t.interval(confidence, n - 1, loc=mean, scale=std / math.sqrt(n))
    return {"n": n, "mean": mean, "std": std, "ci_low": float(low), "ci_high": float(high)}


def _spread(result, n_variant, n_baseline):
    return "CV variant %s over %d trial(s), baseline %s over %d trial(s)" % (
        fmt_unsigned_pct(result["cv_variant_pct"]), n_variant, fmt_unsigned_pct(result["cv_baseline_pct"]), n_baseline)


def _judge(result, higher_is_better, min_effect_pct, spread):
    """(verdict, reason) from the interval already in `result`; `spread` describes the samples behind it."""
    change, low, high = result["change_pct"], result["ci_low_pct"], result["ci_high_pct"]
    eq_low, eq_high = result["eq_low_pct"], result["eq_high_pct"]
    shown = "%+.1f %% [%+.1f, %+.1f] at %s %% confidence" % (change, low, high, fmt_confidence(result["confidence"]))
    eq_shown = "[%+.1f, %+.1f] at %s %% confidence" % (eq_low, eq_high, fmt_confidence(result["eq_confidence"]))
    excludes_zero = low > 0 or high < 0
    if excludes_zero and abs(change) >= min_effect_pct:
        better = change > 0 if higher_is_better else change < 0
        return ("improved" if better else "regressed",
                "%s: the interval excludes 0 and the change is at least %.1f %%" % (shown, min_effect_pct))
    if -min_effect_pct <= eq_low and eq_high <= min_effect_pct:
        return "neutral", "%s: the equivalence interval %s lies inside ±%.1f %% (equivalent: two one-sided tests)" % (
            shown, eq_shown, min_effect_pct)
    if excludes_zero:
        why = "the change is real but smaller than %.1f %%, and the equivalence interval %s reaches beyond ±%.1f %%" % (
            min_effect_pct, eq_shown, min_effect_pct)
    else:
        why = "the interval contains 0 and the equivalence interval %s reaches beyond ±%.1f %%" % (
            eq_shown, min_effect_pct)
    return "inconclusive", "%s: %s (interval width %.1f points against a band of %.1f); %s" % (
        shown, why, high - low, 2 * min_effect_pct, spread)


def compare(variant, baseline, higher_is_better=True, confidence=DEFAULT_CONFIDENCE,
            min_effect_pct=DEFAULT_MIN_EFFECT_PCT, family_size=1):
    """Relative change of `variant` against `baseline` with its interval, verdict and reason.

    The interval is Welch's interval of the difference of means, in percent of the baseline
    mean, at `confidence` adjusted for `family_size` intervals (Bonferroni); `confidence` in
    the result is the adjusted level. With fewer than two trials on a side nothing can be
    tested: `tested` is False and the verdict is inconclusive. None when a side has no value.
    """
    a, b = _finite(variant), _finite(baseline)
    if not a or not b or np.mean(b) == 0:
        return None
    base_mean = float(np.mean(b))
    change = (float(np.mean(a)) - base_mean) / abs(base_mean) * 100.0
    level = bonferroni(confidence, family_size)
    result = {"change_pct": change, "ci_low_pct": None, "ci_high_pct": None, "p_value": None,
              "significant": False, "tested": False, "verdict": "inconclusive", "reason": None,
              "cv_variant_pct": cv_pct(a), "cv_baseline_pct": cv_pct(b), "confidence": level,
              "eq_low_pct": None, "eq_high_pct": None, "eq_confidence": equivalence_level(confidence)}
    if len(a) < 2 or len(b) < 2:
        result["reason"] = "fewer than two trials on a side (variant %d, baseline %d): no interval, change %+.1f %%" % (
            len(a), len(b), change)
        return result
    if np.std(a) == 0 and np.std(b) == 0:
        result.update(ci_low_pct=change, ci_high_pct=change, eq_low_pct=change, eq_high_pct=change,
                      p_value=0.0 if change != 0 else 1.0, tested=True)
    else:
        test = stats.ttest_ind(a, b, equal_var=False)
        interval, eq_interval = test.confidence_interval(level), test.confidence_interval(result["eq_confidence"])
        result.update(ci_low_pct=float(interval.low) / abs(base_mean) * 100.0,
                      ci_high_pct=float(interval.high) / abs(base_mean) * 100.0,
                      eq_low_pct=float(eq_interval.low) / abs(base_mean) * 100.0,
                      eq_high_pct=float(eq_interval.high) / abs(base_mean) * 100.0,
                      p_value=float(test.pvalue), tested=True)
    result["significant"] = bool(result["ci_low_pct"] > 0 or result["ci_high_pct"] < 0)
    result["verdict"], result["reason"] = _judge(result, higher_is_better, min_effect_pct, _spread(result, len(a), len(b)))
    return result


def pooled_launch_variance(groups):
    """The variance of one launch's mean on the log scale, pooled over configurations, and its degrees of
    freedom: `groups` holds, per configuration, the means of its launches; a configuration with fewer than two
    positive means adds nothing. None when none had two. On the log scale, configurations of different speeds pool
    their relative spread."""
    squares, df = 0.0, 0
    for means in groups:
        logs = np.log([m for m in _finite(means) if m > 0])
        if logs.size >= 2:
            squares += float(((logs - logs.mean()) ** 2).sum())
            df += int(logs.size) - 1
    return None if df == 0 else (squares / df, df)


def round_blocked_launch_variance(groups):
    """The variance of one launch's mean on the log scale once each round's shift is taken out, its degrees of
    freedom, and the rounds: `groups` holds, per configuration, {round (launch number): launch mean}.

    In the ABBA order every configuration's launch k runs in round k, so a drift of the host that moves a whole
    round (every second launch faster, say) is common to all configurations. It is no launch-to-launch noise, and it
    cancels from a comparison of two configurations launched in the same rounds; as a two-way layout (configuration
    x round, rounds as blocks) the residual mean square measures the rest, with (C - 1)(R - 1) degrees of freedom.
    Only configurations launched at least twice take part, and all of them in the same rounds; None otherwise, or
    with fewer than two such configurations."""
    complete = [dict((r, m) for r, m in group.items() if m is not None and m > 0) for group in groups]
    complete = [group for group in complete if len(group) >= 2]
    if len(complete) < 2:
        return None
    rounds = tuple(sorted(complete[0]))
    if any(tuple(sorted(group)) != rounds for group in complete):
        return None
    logs = np.log([[group[r] for r in rounds] for group in complete])
    residuals = logs - logs.mean(axis=1, keepdims=True) - logs.mean(axis=0, keepdims=True) + logs.mean()
    df = (logs.shape[0] - 1) * (logs.shape[1] - 1)
    return float((residuals ** 2).sum()) / df, df, rounds


def launch_mean_floor(launches):
    """The least variance a launch mean of one configuration has on the log scale, and its degrees of freedom:
    `launches` holds, per launch, its trials; their spread within launches (pooled over the launches) over the
    trials a launch (harmonic mean). A launch mean varies by at least its own trials' noise, however quiet the
    host's other configurations are. None when no launch had two positive trials."""
    squares, df, counts = 0.0, 0, []
    for trials in launches:
        logs = np.log(_positive(trials))
        if logs.size:
            counts.append(int(logs.size))
        if logs.size >= 2:
            squares += float(((logs - logs.mean()) ** 2).sum())
            df += int(logs.size) - 1
    if df == 0:
        return None
    per_launch = len(counts) / sum(1.0 / n for n in counts)
    return squares / df / per_launch, df


def _launch_error(launches, pooled, floors):
    """(squared standard error, degrees of freedom, sides judged with their own spread) of a difference of side means
    of launch means: each side's launch mean with the pooled variance, or with its own floor where that is larger
    (launch_mean_floor); one estimate shared by sides keeps its degrees of freedom, several are combined by
    Welch-Satterthwaite, never to more than the pool's: a floor only bounds a launch mean's variance from below
    (it misses the launches' own offsets), so it must not make the interval narrower than the pool alone would."""
    variance, df = pooled
    shared, own, terms = 0.0, [], []
    for index, (count, floor) in enumerate(zip(launches, floors or [None] * len(launches))):
        if floor is not None and floor[0] > variance:
            own.append(index)
            terms.append((floor[0] / count, floor[1]))
        else:
            shared += variance / count
    if shared > 0:
        terms.append((shared, df))
    squared = sum(term for term, term_df in terms)
    if not own or squared == 0.0:
        return squared, df, []
    satterthwaite = squared ** 2 / sum(term ** 2 / term_df for term, term_df in terms)
    return squared, min(df, satterthwaite), own


def _launch_result(log_ratio, launches, pooled, higher_is_better, confidence, min_effect_pct, family_size, spread,
                   floors, names, rounds=False):
    """compare()'s keys and verdict for a change of `log_ratio` measured through sides of `launches` launches each,
    each launch mean with the pooled variance `pooled` (variance, degrees of freedom) on the log scale, or with the
    side's own floor (`floors`, launch_mean_floor per side, named by `names`) where that is larger; `rounds`: the
    variance is round_blocked_launch_variance's."""
    variance, df = pooled
    level = bonferroni(confidence, family_size)
    change = math.expm1(log_ratio) * 100.0
    launch_cv = math.sqrt(math.expm1(variance)) * 100.0
    squared, interval_df, own = _launch_error(launches, pooled, floors)
    result = {"change_pct": change, "ci_low_pct": change, "ci_high_pct": change, "p_value": 0.0 if change else 1.0,
              "significant": False, "tested": True, "verdict": "inconclusive", "reason": None, "confidence": level,
              "eq_low_pct": change, "eq_high_pct": change, "eq_confidence": equivalence_level(confidence),
              "compared": "launches", "launch_cv_pct": launch_cv, "launch_df": df, "interval_df": interval_df,
              "rounds_blocked": bool(rounds),
              "own_spread_sides": [names[index] for index in own]}
    se = math.sqrt(squared)
    if se > 0:
        half = float(stats.t.ppf(1 - (1 - level) / 2, interval_df)) * se
        eq_half = float(stats.t.ppf(1 - (1 - result["eq_confidence"]) / 2, interval_df)) * se
        result.update(ci_low_pct=math.expm1(log_ratio - half) * 100.0, ci_high_pct=math.expm1(log_ratio + half) * 100.0,
                      eq_low_pct=math.expm1(log_ratio - eq_half) * 100.0,
                      eq_high_pct=math.expm1(log_ratio + eq_half) * 100.0,
                      p_value=float(2 * stats.t.sf(abs(log_ratio) / se, interval_df)))
    result["significant"] = bool(result["ci_low_pct"] > 0 or result["ci_high_pct"] < 0)
    if rounds:
        spread += "; launch-to-launch CV %.1f %% once each round's shift, common to the host's configurations, is " \
                  "taken out (the order's rounds as blocks, %d degree(s) of freedom)" % (launch_cv, df)
    else:
        spread += "; launch-to-launch CV %.1f %%, pooled over this host's configurations at this level (%d degree(s) " \
                  "of freedom)" % (launch_cv, df)
    for index in own:
        floor = floors[index]
        spread += "; the %s's own trials spread more (a launch mean's CV at least %.1f %%, %d degree(s) of freedom), " \
                  "so its launch means are taken as that noisy" % (
                      names[index], math.sqrt(math.expm1(floor[0])) * 100.0, floor[1])
    if own:
        spread += " (Welch-Satterthwaite, at most the pool's: %.1f degrees of freedom)" % interval_df
    result["verdict"], result["reason"] = _judge(result, higher_is_better, min_effect_pct, spread)
    return result


def _positive(values):
    return [m for m in _finite(values) if m > 0]


def compare_launches(variant, baseline, pooled, higher_is_better=True, confidence=DEFAULT_CONFIDENCE,
                     min_effect_pct=DEFAULT_MIN_EFFECT_PCT, family_size=1, floors=None, rounds=False):
    """Relative change of `variant` against `baseline`, given as their launch means, with the launch as the unit.

    The change is the ratio of the geometric means of the launch means (the scale the spread is pooled on); its
    interval is a t interval on the log scale whose standard error is the pooled launch variance (`pooled`:
    pooled_launch_variance's result) over each side's launches, with the pooled degrees of freedom, at `confidence`
    adjusted for `family_size` intervals. With the two sides as the only configurations pooled, this is Student's
    pooled two-sample interval on the logs. `floors` (launch_mean_floor of each side's trials) keeps a side whose own
    trials spread more than the pool from being judged as quiet: that side's launch means take its own spread, and
    the interval is Welch-Satterthwaite's. `rounds`: `pooled` is round_blocked_launch_variance's, for two sides
    launched in the same rounds. The result has compare()'s keys and verdict rule; None when a side has no value.
    """
    a, b = _positive(variant), _positive(baseline)
    if not a or not b:
        return None
    log_ratio = float(np.mean(np.log(a)) - np.mean(np.log(b)))
    result = _launch_result(log_ratio, (len(a), len(b)), pooled, higher_is_better, confidence, min_effect_pct,
                            family_size, "launch means: variant %d launch(es), baseline %d" % (len(a), len(b)),
                            floors, ("variant", "baseline"), rounds)
    result.update(cv_variant_pct=cv_pct(a), cv_baseline_pct=cv_pct(b), launches_variant=len(a),
                  launches_baseline=len(b))
    return result


def compare_effects_launches(variant, variant_baseline, other, other_baseline, pooled, higher_is_better=True,
                             confidence=DEFAULT_CONFIDENCE, min_effect_pct=DEFAULT_MIN_EFFECT_PCT, family_size=1,
                             floors=None, rounds=False):
    """compare_effects with the launch as the unit: each side given as its launch means, the ratio of the two gains
    (geometric means) with a t interval on the log scale from the pooled launch variance over all four sides'
    launches (or a side's own, larger spread: `floors`, as in compare_launches). None when a side has no value."""
    sides = [_positive(side) for side in (variant, variant_baseline, other, other_baseline)]
    if not all(sides):
        return None
    logs = [float(np.mean(np.log(side))) for side in sides]
    result = _launch_result((logs[0] - logs[1]) - (logs[2] - logs[3]), [len(side) for side in sides], pooled,
                            higher_is_better, confidence, min_effect_pct, family_size,
                            "launch means: %s launch(es) (variant, its baseline, the other, its baseline)"
                            % ", ".join(str(len(side)) for side in sides),
                            floors, ("variant", "variant's baseline", "other", "other's baseline"), rounds)
    result.update(cv_variant_pct=cv_pct(sides[0]), cv_baseline_pct=cv_pct(sides[2]),
                  cv_stage_baselines_pct=[cv_pct(sides[1]), cv_pct(sides[3])], compared="effects of launches")
    return result


def _log_interval(sides, level):
    """(log of the ratio of the two gains, half width of its t interval, p value) by the delta method: each mean's
    squared standard error over its squared mean, Welch-Satterthwaite degrees of freedom."""
    means = [float(np.mean(side)) for side in sides]
    log_ratio = math.log(means[0] / means[1]) - math.log(means[2] / means[3])
    terms = [float(np.var(side, ddof=1)) / (len(side) * mean ** 2) for side, mean in zip(sides, means)]
    if sum(terms) == 0.0:
        return log_ratio, 0.0, 0.0 if log_ratio != 0 else 1.0
    se = math.sqrt(sum(terms))
    df = sum(terms) ** 2 / sum(term ** 2 / (len(side) - 1) for term, side in zip(terms, sides))
    p_value = float(2 * stats.t.sf(abs(log_ratio) / se, df))
    return log_ratio, float(stats.t.ppf(1 - (1 - level) / 2, df)) * se, p_value


def compare_effects(variant, variant_baseline, other, other_baseline, higher_is_better=True,
                    confidence=DEFAULT_CONFIDENCE, min_effect_pct=DEFAULT_MIN_EFFECT_PCT, family_size=1):
    """`variant`'s gain over its own baseline against `other`'s gain over its own, for two configurations measured
    in different stages, each beside a baseline of its own: the change is the ratio of the two ratios, in percent;
    its interval a t interval on the log scale (_log_interval), wider than a comparison within one stage since all
    four measurements are noisy. The result has compare()'s keys and verdict rule; None when a side has no value."""
    sides = [_finite(side) for side in (variant, variant_baseline, other, other_baseline)]
    if not all(sides) or any(np.mean(side) <= 0 for side in sides):
        return None
    level = bonferroni(confidence, family_size)
    means = [float(np.mean(side)) for side in sides]
    change = ((means[0] / means[1]) / (means[2] / means[3]) - 1.0) * 100.0
    cvs = [cv_pct(side) for side in sides]
    result = {"change_pct": change, "ci_low_pct": None, "ci_high_pct": None, "p_value": None,
              "significant": False, "tested": False, "verdict": "inconclusive", "reason": None,
              "cv_variant_pct": cvs[0], "cv_baseline_pct": cvs[2], "cv_stage_baselines_pct": [cvs[1], cvs[3]],
              "confidence": level, "compared": "effects", "eq_low_pct": None, "eq_high_pct": None,
              "eq_confidence": equivalence_level(confidence)}
    if min(len(side) for side in sides) < 2:
        result["reason"] = "fewer than two trials on a side (%s): no interval, change %+.1f %%" % (
            ", ".join(str(len(side)) for side in sides), change)
        return result
    log_ratio, half, p_value = _log_interval(sides, level)
    eq_half = _log_interval(sides, result["eq_confidence"])[1]
    result.update(ci_low_pct=(math.exp(log_ratio - half) - 1.0) * 100.0,
                  ci_high_pct=(math.exp(log_ratio + half) - 1.0) * 100.0,
                  eq_low_pct=(math.exp(log_ratio - eq_half) - 1.0) * 100.0,
                  eq_high_pct=(math.exp(log_ratio + eq_half) - 1.0) * 100.0, p_value=p_value, tested=True)
    result["significant"] = bool(result["ci_low_pct"] > 0 or result["ci_high_pct"] < 0)
    spread = ("CV %s over %d trial(s) against its baseline's %s over %d, the other %s over %d against its baseline's "
              "%s over %d" % tuple(x for cv, side in zip(cvs, sides) for x in (fmt_unsigned_pct(cv), len(side))))
    result["verdict"], result["reason"] = _judge(result, higher_is_better, min_effect_pct, spread)
    return result
