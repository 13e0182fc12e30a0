#!/usr/bin/env python3
"""Where a campaign's noise comes from, from its cells (issue 12): within a launch or between launches.

For each host, variant and concurrency level with trials, prints the trials of each launch in
order and three figures of the verdict metric:

- within: the coefficient of variation of the trials inside a launch (pooled over launches);
- between: the coefficient of variation of the launch means (two or more launches);
- first trial: the first trial of each launch against the mean of that launch's other trials, in
  percent, averaged over launches: negative when the first trial is slower (a deficit a warm-up
  should remove). A warm-up that settles the server leaves it near 0.

Then, over the campaign, the mean of each figure. A between-launch spread well above what the
within-launch spread explains (within / sqrt(trials)) says the launch, not the trial, is the unit
that varies, and trials pooled across launches make intervals too narrow.

Last, where the runs recorded it (`host_steal_share`), whether the CPU that the host's hypervisor
took from the runs explains their speed: each trial's deviation from its variant's mean at its
level against its steal (Spearman's rank correlation, scipy), and the mean deviation of the runs
that lost 5 % or more against the others.

And where the runs recorded the server's own CPU (`server_cpu_s`, `server_runqueue_wait_s`), what differs between
a fast and a slow launch of one configuration: for each launch, its mean throughput, the server's CPU milliseconds
per output token, how many CPUs its session kept busy (of those its placement allowed) and the share of the run its
threads waited for a CPU, each as a deviation from the mean of its variant's launches at that level; then
Spearman's rank correlation of the throughput's deviation with each. Where the server kept every CPU it was allowed
busy, its CPU per token is the inverse of its throughput and adds nothing: the slow launch had the same CPU time and
made fewer tokens of it, from slower code or a slower CPU, which schedstat cannot tell apart. Where it had CPUs to
spare, a slow launch that spent more CPU per token ran more or slower code, and one whose threads waited longer
shared its CPUs with something else.

    .venv/bin/python tests/benchmarks/variance_components.py results/<campaign-id> [--metric output_throughput]
"""
import argparse
import json
import math
import pathlib

import numpy as np
from scipy import stats


def ok_runs(campaign_dir, metric):
    """[(cell, level, value of `metric`)] over the campaign's ok runs that recorded it, read once."""
    runs = []
    for path in sorted(pathlib.Path(campaign_dir, "cells").glob("*/*.json")):
        cell = json.loads(path.read_text())
        for level in cell.get("levels") or []:
            value = (level.get("metrics") or {}).get(metric)
            if level.get("status") == "ok" and value is not None:
                runs.append((cell, level, float(value)))
    return runs


def trials_by_launch(runs):
    """{(host, variant, concurrency): {launch: [value, ...] in run order}} over ok_runs()."""
    found = {}
    for cell, level, value in runs:
        key = (cell.get("host"), cell["variant"], level.get("concurrency"))
        found.setdefault(key, {}).setdefault(cell.get("launch_number") or 1, []).append(value)
    return found


def steal_and_speed(runs):
    """[(steal share, deviation of the run from its variant's mean at its level, in %)] over those of ok_runs() that
    recorded their steal."""
    groups = {}
    for cell, level, value in runs:
        if level.get("host_steal_share") is not None:
            key = (cell.get("host"), cell["variant"], level.get("concurrency"))
            groups.setdefault(key, []).append((level["host_steal_share"], value))
    return [(steal, (value / np.mean([v for _, v in group]) - 1) * 100)
            for group in groups.values() if len(group) >= 2 for steal, value in group]


def print_steal(pairs, threshold=0.05):
    if len(pairs) < 3:
        print("steal: recorded by %d runs, too few to compare" % len(pairs))
        return
    steal, deviation = np.array(pairs).T
    rho, p_value = stats.spearmanr(steal, deviation)
    hit = deviation[steal >= threshold]
    print("steal: %d runs, median %.1f %%, most %.1f %%; against the run's deviation from its variant's mean: "
          "Spearman rho %.2f (p %.3f); runs at >= %.0f %% steal: %d, mean deviation %s %%, the others %s %%" % (
              len(pairs), np.median(steal) * 100, steal.max() * 100, rho, p_value, threshold * 100, len(hit),
              fmt(float(hit.mean())) if len(hit) else "-", fmt(float(deviation[steal < threshold].mean()))))


def cpu_count(cpu_list):
    """How many CPUs a Cpus_allowed_list such as "0-14,16" names; None without one."""
    if not cpu_list:
        return None
    count = 0
    for part in str(cpu_list).split(","):
        low, _, high = part.strip().partition("-")
        count += int(high or low) - int(low) + 1
    return count


def server_cpu_by_launch(runs):
    """{(host, variant, concurrency): {launch: [(value, CPU ms per output token, CPUs busy, runqueue wait share),
    ...]}} over those of ok_runs() that recorded the server's CPU, and {(host, variant, concurrency): CPUs the
    server's placement allowed (None unplaced)}."""
    found, allowed = {}, {}
    for cell, level, value in runs:
        metrics = level.get("metrics") or {}
        tokens = (metrics.get("output_throughput") or 0) * (metrics.get("duration_s") or 0)
        run_s = level.get("client_run_s")
        if level.get("server_cpu_s") is None or not tokens or not run_s:
            continue
        key = (cell.get("host"), cell["variant"], level.get("concurrency"))
        allowed[key] = cpu_count(((cell.get("launch") or {}).get("placement") or {}).get("server"))
        found.setdefault(key, {}).setdefault(cell.get("launch_number") or 1, []).append(
            (value, level["server_cpu_s"] / tokens * 1000, level["server_cpu_s"] / run_s,
             level["server_runqueue_wait_s"] / run_s))
    return found, allowed


def print_server_cpu(found, allowed, saturated_share=0.9):
    """Each launch's throughput, CPU per token, CPUs busy and wait share against its configuration's launches, then
    the correlations over every launch of the campaign, and how many launches kept every CPU they were allowed busy
    (`saturated_share` of them or more), for which CPU per token is only the inverse of throughput."""
    deviations, saturated = [], 0
    for key, launches in sorted(found.items(), key=lambda kv: tuple(map(str, kv[0]))):
        if len(launches) < 2:
            continue
        means = {n: np.mean(np.array(rows), axis=0) for n, rows in launches.items()}
        centre = np.mean(list(means.values()), axis=0)
        for number, (value, cpu_ms, busy, wait) in sorted(means.items()):
            deviation = (np.array([value, cpu_ms, wait]) / centre[[0, 1, 3]] - 1) * 100
            deviations.append(deviation)
            saturated += bool(allowed.get(key) and busy >= saturated_share * allowed[key])
            print("%s %s c=%s L%d: %.1f (%s %%), server CPU %.3f ms/token (%s %%), %.2f CPUs busy of %s, waited "
                  "%.1f %% of the run" % (key[0], key[1], key[2], number, value, fmt(deviation[0]), cpu_ms,
                                          fmt(deviation[1]), busy, allowed.get(key) or "any", wait * 100))
    if len(deviations) < 3:
        print("server CPU: recorded by %d launches of configurations launched twice or more, too few" % len(deviations))
        return
    deviations = np.array(deviations)
    for column, name in ((1, "CPU per token"), (2, "runqueue wait share")):
        rho, p_value = stats.spearmanr(deviations[:, 0], deviations[:, column])
        print("launch throughput against its %s: Spearman rho %.2f (p %.3f) over %d launches" % (
            name, rho, p_value, len(deviations)))
    print("launches whose server kept at least %d %% of its allowed CPUs busy: %d of %d (for those, CPU per token "
          "is the inverse of throughput: the same CPU time, fewer tokens)"
          % (saturated_share * 100, saturated, len(deviations)))


def cv_pct(values):
    values = np.asarray(values, dtype=float)
    if len(values) < 2 or values.mean() == 0:
        return None
    return float(values.std(ddof=1) / values.mean() * 100)


def components(launches):
    """within (pooled CV), between (CV of launch means), first trial against the rest, all in percent or None."""
    within = [cv_pct(t) for t in launches.values()]
    within = [w for w in within if w is not None]
    means = [float(np.mean(t)) for t in launches.values()]
    firsts = [(t[0] / np.mean(t[1:]) - 1) * 100 for t in launches.values() if len(t) >= 2]
    return {"within": math.sqrt(np.mean(np.square(within))) if within else None,
            "between": cv_pct(means) if len(means) >= 2 else None,
            "first_trial": float(np.mean(firsts)) if firsts else None,
            "trials": round(float(np.mean([len(t) for t in launches.values()])), 1)}


def fmt(value):
    return "-" if value is None else "%+.1f" % value if value < 0 else "%.1f" % value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("campaign_dir")
    parser.add_argument("--metric", default="output_throughput")
    args = parser.parse_args()
    measured = ok_runs(args.campaign_dir, args.metric)
    found = trials_by_launch(measured)
    if not found:
        raise SystemExit("no ok runs with %s under %s/cells" % (args.metric, args.campaign_dir))
    print("%s, per host / variant / concurrency (CV in %%; first trial against the rest in %%, negative: slower)"
          % args.metric)
    totals = {"within": [], "between": [], "first_trial": []}
    for (host, variant, concurrency), launches in sorted(found.items(), key=lambda kv: tuple(map(str, kv[0]))):
        parts = components(launches)
        for name in totals:
            if parts[name] is not None:
                totals[name].append(parts[name])
        runs = "  ".join("L%d: %s" % (n, ", ".join("%.1f" % v for v in t)) for n, t in sorted(launches.items()))
        print("%s %s c=%s: within %s, between %s, first trial %s (%s trials a launch)  %s" % (
            host, variant, concurrency, fmt(parts["within"]), fmt(parts["between"]), fmt(parts["first_trial"]),
            parts["trials"], runs))
    print("campaign means: within %s, between %s, first trial %s" % tuple(
        fmt(float(np.mean(totals[k])) if totals[k] else None) for k in ("within", "between", "first_trial")))
    print_steal(steal_and_speed(measured))
    print_server_cpu(*server_cpu_by_launch(measured))


if __name__ == "__main__":
    main()
