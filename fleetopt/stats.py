"""Statistics behind the verdicts: trial means, 95 % intervals, Welch comparisons.

A variant beats the baseline only when the difference is both statistically significant
(Welch's t-test, which does not assume equal variances) and at least a minimum effect; a
"win" smaller than the host's noise is reported as neutral.
"""
import math

import numpy as np
from scipy import stats

# Direction of "better" for each metric the verdicts can be based on.
HIGHER_IS_BETTER = {
    "output_throughput": True, "total_throughput": True, "request_throughput": True,
    "mean_ttft_ms": False, "median_ttft_ms": False, "p99_ttft_ms": False,
    "mean_itl_ms": False, "median_itl_ms": False, "p99_itl_ms": False,
    "mean_tpot_ms": False, "mean_e2e_latency_ms": False, "p99_e2e_latency_ms": False,
}
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MIN_EFFECT_PCT = 3.0


def _finite(values):
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


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


def compare(variant, baseline, higher_is_better=True, confidence=DEFAULT_CONFIDENCE,
            min_effect_pct=DEFAULT_MIN_EFFECT_PCT):
    """Relative change of `variant` against `baseline` with its interval, and the verdict.

    The interval is Welch's interval of the difference of means, expressed in percent of
    the baseline mean. With fewer than two trials on either side nothing can be tested:
    the verdict is None and `tested` is False.
    """
    a, b = _finite(variant), _finite(baseline)
    if not a or not b or np.mean(b) == 0:
        return None
    base_mean = float(np.mean(b))
    change = (float(np.mean(a)) - base_mean) / abs(base_mean) * 100.0
    result = {"change_pct": change, "ci_low_pct": None, "ci_high_pct": None, "p_value": None,
              "significant": False, "tested": False, "verdict": None}
    if len(a) < 2 or len(b) < 2:
        return result
    if np.std(a) == 0 and np.std(b) == 0:
        significant = change != 0
        result.update(ci_low_pct=change, ci_high_pct=change, p_value=0.0 if significant else 1.0,
                      significant=significant, tested=True)
    else:
        test = stats.ttest_ind(a, b, equal_var=False)
        interval = test.confidence_interval(confidence)
        result.update(
            ci_low_pct=float(interval.low) / abs(base_mean) * 100.0,
            ci_high_pct=float(interval.high) / abs(base_mean) * 100.0,
            p_value=float(test.pvalue),
            significant=bool(test.pvalue < 1.0 - confidence),
            tested=True,
        )
    better = change > 0 if higher_is_better else change < 0
    if result["significant"] and abs(change) >= min_effect_pct:
        result["verdict"] = "improved" if better else "regressed"
    else:
        result["verdict"] = "neutral"
    return result


def overall_verdict(level_verdicts):
    """One word for a variant from its per-level verdicts (None entries were not testable)."""
    tested = [v for v in level_verdicts if v]
    if not tested:
        return None
    improved, regressed = "improved" in tested, "regressed" in tested
    if improved and regressed:
        return "mixed"
    if improved:
        return "improved"
    if regressed:
        return "regressed"
    return "neutral"
