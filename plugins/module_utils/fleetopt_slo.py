# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a concurrency level holds the SLOs, and which level a capacity search measures next.

One rule, used by the benchmark's action plugin while it searches and by the report
(fleetopt.analysis.capacity) when it reads capacity: a level holds when every one of its runs succeeded
and the mean over its runs of each p99 figure is within its limit (campaign_slo, milliseconds).
Capacity is the last level before the first one that does not hold.

The search (step up, then bisect) starts from the levels measured: while every level holds, it
doubles the top one (up to a ceiling); once one fails, it measures the middle of the gap between
the last level that held below it and that level, until the two are neighbours. Standard library
only: the action plugin runs it on the controller, and the collection may be used without
fleetopt's own package.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

SLO_LABELS = (("p99_ttft_ms", "p99 TTFT"), ("p99_tpot_ms", "p99 TPOT"), ("p99_itl_ms", "p99 ITL"))


def slo_violations(metrics, slo):
    """Each SLO that `metrics` breaks, as text, in SLO_LABELS order (an SLO whose metric is missing counts)."""
    broken = []
    for key, label in SLO_LABELS:
        if (slo or {}).get(key) is None:
            continue
        value = (metrics or {}).get(key)
        if value is None:
            broken.append("%s not recorded" % label)
        elif float(value) > float(slo[key]):
            broken.append("%s %.1f ms > %g ms" % (label, float(value), float(slo[key])))
    return broken


def level_judgement(runs, slo):
    """(means, violations) of one level's runs ([{status, metrics}], skipped ones left out): the mean over
    its successful runs of each p99 figure they recorded (None where none did), and each SLO those means
    break, with the runs that failed."""
    runs = [r for r in runs if r.get("status") != "skipped"]
    ok = [r["metrics"] for r in runs if r.get("status") == "ok" and r.get("metrics")]
    means = {}
    for key, _label in SLO_LABELS:
        values = [float(m[key]) for m in ok if m.get(key) is not None and math.isfinite(float(m[key]))]
        means[key] = sum(values) / len(values) if values else None
    broken = slo_violations(means, slo) if ok else []
    failed = len(runs) - len(ok)
    if failed:
        broken.append("%d of %d runs failed" % (failed, len(runs)))
    return means, broken


def level_holds(runs, slo):
    """Whether a level's runs hold every SLO: every run succeeded and the means are within the limits."""
    if not [r for r in runs if r.get("status") != "skipped"]:
        return False
    return not level_judgement(runs, slo)[1]


def next_search_level(holds_by_level, ceiling):
    """The next concurrency a capacity search measures, or None when capacity is found.

    `holds_by_level` is [(concurrency, holds)]. With every level holding, twice the top one (at most
    `ceiling`; None at the ceiling); else the middle of the gap between the last level that held
    below the first failing one (0 when none held) and that failing level, None when no level lies
    between them.
    """
    ladder = sorted(holds_by_level)
    if not ladder:
        return None
    failing = [c for c, holds in ladder if not holds]
    if not failing:
        top = ladder[-1][0]
        return min(top * 2, ceiling) if top < ceiling else None
    first_failing = failing[0]
    held_below = [c for c, holds in ladder if holds and c < first_failing]
    low = held_below[-1] if held_below else 0
    if first_failing - low <= 1:
        return None
    return (low + first_failing) // 2
