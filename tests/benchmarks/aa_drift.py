#!/usr/bin/env python3
"""Would a drift of the host in time explain a campaign's launch-to-launch spread? (issue 32)

The verdicts take each round's shift out of the launch spread (rounds as blocks). If the host drifted steadily, a
configuration's two launches would differ by more the further apart they stood in the ABBA order, and a linear
drift in time, fitted beside the rounds, would leave a much smaller spread. For each level that every configuration
launched twice measured, this prints the A/A's widest 90 % equivalence bound (what `resolves_pct` reads) from the
launch means two ways, by least squares on the log scale: configuration + round (the verdicts' layout), and
configuration + round + minutes since the campaign's first cell (one degree of freedom less). Beside them, the
launch spread left and the drift fitted, then the campaign's own `aa.resolves_pct` from summary.json (its intervals
also let a noisy side take its own spread, so it can differ from the first column).

    .venv/bin/python tests/benchmarks/aa_drift.py results/<campaign-id> [more campaign folders]
"""
import argparse
import datetime
import json
import math
import pathlib

import numpy as np
from scipy import stats

METRIC = "output_throughput"


def launch_means(campaign_dir):
    """{host: {(variant, launch): (minutes since the host's first cell, {concurrency: log of the geometric mean})}}."""
    found = {}
    for path in sorted(pathlib.Path(campaign_dir, "cells").glob("*/*.json")):
        cell = json.loads(path.read_text())
        if cell.get("status") != "ok" or cell.get("stacked") or not cell.get("measured_at"):
            continue
        values = {}
        for level in cell.get("levels") or []:
            value = (level.get("metrics") or {}).get(METRIC)
            if level.get("status") == "ok" and value:
                values.setdefault(level["concurrency"], []).append(math.log(value))
        at = datetime.datetime.fromisoformat(cell["measured_at"].replace("Z", "+00:00")).timestamp()
        found.setdefault(cell["host"], {})[(cell["variant"], cell.get("launch_number") or 1)] = (
            at, {c: float(np.mean(v)) for c, v in values.items()})
    for cells in found.values():
        first = min(at for at, _ in cells.values())
        for key, (at, values) in cells.items():
            cells[key] = ((at - first) / 60.0, values)
    return found


def aa_bound(rows, variants, with_drift):
    """(widest 90 % equivalence bound of the A/A in %, degrees of freedom, launch CV in %, drift in % a minute)."""
    y = np.array([r[3] for r in rows])
    columns = [[float(r[0] == v) for r in rows] for v in variants] + [[float(r[1] == 2) for r in rows]]
    if with_drift:
        columns.append([r[2] for r in rows])
    design = np.array(columns).T
    beta = np.linalg.lstsq(design, y, rcond=None)[0]
    df = len(y) - design.shape[1]
    if df < 1:
        return None
    residual = y - design @ beta
    s2 = float(residual @ residual) / df
    contrast = np.zeros(design.shape[1])
    contrast[variants.index("baseline_aa")], contrast[variants.index("baseline")] = 1.0, -1.0
    se = math.sqrt(s2 * float(contrast @ np.linalg.pinv(design.T @ design) @ contrast))
    diff, q = float(contrast @ beta), float(stats.t.ppf(0.95, df))
    bound = max(abs(math.expm1(diff - q * se)), abs(math.expm1(diff + q * se))) * 100
    drift = math.expm1(beta[-1]) * 100 if with_drift else None
    return bound, df, math.sqrt(s2) * 100, drift


def report(campaign_dir):
    summary_path = pathlib.Path(campaign_dir, "summary.json")
    resolves = {}
    if summary_path.exists():
        resolves = {a["host"]: a.get("resolves_pct") for a in json.loads(summary_path.read_text()).get("aa") or []}
    for host, cells in sorted(launch_means(campaign_dir).items()):
        variants = sorted({v for v, n in cells if n == 2 and (v, 1) in cells})
        if "baseline" not in variants or "baseline_aa" not in variants:
            print("%s %s: no baseline and A/A launched twice each" % (campaign_dir, host))
            continue
        levels = sorted(set.intersection(*[set(cells[(v, n)][1]) for v in variants for n in (1, 2)]))
        widest = {False: 0.0, True: 0.0}
        for c in levels:
            rows = [(v, n, cells[(v, n)][0], cells[(v, n)][1][c]) for v in variants for n in (1, 2)]
            parts = []
            for with_drift in (False, True):
                found = aa_bound(rows, variants, with_drift)
                if found is None:
                    parts.append("too few launches")
                    widest[with_drift] = math.inf
                    continue
                bound, df, cv, drift = found
                widest[with_drift] = max(widest[with_drift], bound)
                parts.append("%s %.1f %% (df %d, launch CV %.1f %%%s)" % (
                    "rounds + drift" if with_drift else "rounds", bound, df, cv,
                    ", drift %+.2f %%/min" % drift if with_drift else ""))
            print("%s %s c=%s: %s" % (campaign_dir, host, c, "; ".join(parts)))
        print("%s %s: the A/A resolves %.1f %% with rounds as blocks, %.1f %% with a drift too; summary.json: %s" % (
            campaign_dir, host, widest[False], widest[True],
            "%.1f %%" % resolves[host] if resolves.get(host) is not None else "-"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("campaign_dirs", nargs="+")
    for campaign_dir in parser.parse_args().campaign_dirs:
        report(campaign_dir)


if __name__ == "__main__":
    main()
