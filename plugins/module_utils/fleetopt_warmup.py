# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The warm-up that runs until the server has settled: its stop rule and its record.

Before a newly launched server's first measured run, `fleetopt_bench` makes warm-up runs (whole
runs of the engine's client, a few requests each, not trials) until two consecutive ones agree in
output throughput within `settle_pct` percent of their mean - the server has settled -, or
`max_runs` were made (the cap), or a run failed, or the benchmark ended (the server died, a run
timed out). A failed warm-up run ends the warm-up at once: more would cost time and say nothing
the measured runs will not; the measured runs go ahead and record their own outcome. Standard
library only: the rule runs on the host.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Warm-up run k sends the prompts of seed + WARMUP_SEED_OFFSET + k - 1: none a trial sends (trial t has
# seed + t - 1), so a prefix cache cannot hand a trial what a warm-up left in it.
WARMUP_SEED_OFFSET = 1000000

# Why a warm-up stopped (`stopped_by`); only `settled` means the server settled.
STOPPED_BY = ("settled", "cap", "failed", "ended")


def change_pct(previous, latest):
    """How far two throughputs are apart, in percent of their mean (the same whichever came first)."""
    mean = (float(previous) + float(latest)) / 2.0
    return abs(float(latest) - float(previous)) / mean * 100.0 if mean else 0.0


def throughput(run):
    """A warm-up run's output throughput, or None when it failed or recorded none."""
    value = run.get("output_throughput") if run.get("status") == "ok" else None
    return float(value) if value else None


def why_warmup_stops(runs, settle_pct, max_runs, ended=False):
    """Why the warm-up stops after `runs` (one of STOPPED_BY), or None: make another run."""
    if ended:
        return "ended"
    if not runs:
        return None if max_runs > 0 else "cap"
    if throughput(runs[-1]) is None:
        return "failed"
    if len(runs) >= 2 and change_pct(throughput(runs[-2]), throughput(runs[-1])) <= settle_pct:
        return "settled"
    if len(runs) >= max_runs:
        return "cap"
    return None


def warmup_record(concurrency, runs, stopped_by, settle_pct, max_runs, ended_reason=None):
    """What a level's warm-up did: its runs (each with its change against the one before), whether
    the server settled, why it stopped, in words, and the runs' wall time."""
    previous = None
    for run in runs:
        value = throughput(run)
        run["change_pct"] = round(change_pct(previous, value), 2) if previous and value else None
        previous = value
    last = runs[-1] if runs else {}
    if stopped_by == "settled":
        reason = "the last two runs were %.1f %% apart, within %g %%" % (last["change_pct"], settle_pct)
    elif stopped_by == "cap" and last.get("change_pct") is None:
        reason = "%d run(s) made, the most allowed, and no two consecutive ones to compare" % len(runs)
    elif stopped_by == "cap":
        reason = ("%d runs made, the most allowed, and the last two were %.1f %% apart, more than %g %%"
                  % (len(runs), last["change_pct"], settle_pct))
    elif stopped_by == "failed":
        reason = "warm-up run %d failed: %s" % (len(runs), last.get("reason") or "it recorded no output throughput")
    else:
        reason = ended_reason or "the benchmark ended"
    return {"concurrency": concurrency, "runs": runs, "settled": stopped_by == "settled", "stopped_by": stopped_by,
            "reason": reason, "settle_pct": settle_pct, "max_runs": max_runs,
            "duration_s": round(sum(run.get("duration_s") or 0.0 for run in runs), 3)}
