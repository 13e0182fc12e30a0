#!/usr/bin/env python3
"""Where a campaign's time went, cell by cell, and the figures of a GPU campaign, from its folder.

    python3 tests/device/h200/timeline.py results/<campaign-id> [--play-started EPOCH]

Per cell, in the order measured: status, start-up seconds (and whether the compile caches were empty),
the phase that took longest, how late readiness was noticed, the benchmark's client time and what it
measured, and the stop: SIGTERM until every process of the server's session was gone and GPU memory was
back. Then the totals and these figures: readiness noticed after the ready line was written (max);
stop to memory released, per variant; warm start against cold start of the same variant; the A/A's
resolves_pct (summary.json); the client overhead (tests/benchmarks/benchmark_cost.py's definition); where
each launch ran, when the campaign places the server and the client (campaign_server_cpus, campaign_client_cpus):
the CPUs asked for the server, those each process of its session was allowed, and those of every client run.
"""
import argparse
import calendar
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

from benchmark_cost import cost  # noqa: E402


def cells(campaign):
    found = []
    for path in pathlib.Path(campaign, "cells").glob("*/*.json"):
        cell = json.loads(path.read_text())
        if cell.get("schema") == "fleetopt.cell/1":
            found.append(cell)
    return sorted(found, key=lambda c: c.get("measured_at") or "")


def longest_phase(phases):
    timed = [(p.get("duration_s") or 0.0, name) for name, p in (phases or {}).items()]
    return "%s %.1f s" % (max(timed)[1], max(timed)[0]) if timed else "-"


def start_kind(cell):
    cache = (cell.get("startup") or {}).get("cache") or {}
    if "entries_before" not in cache:
        return "-"
    start = cache.get("start") or ("warm" if cache["entries_before"] else "cold")
    return start if start == "cold" else "warm (%d files)" % cache["entries_before"]


def stop_figures(cell):
    stop = cell.get("stop") or {}
    if not isinstance(stop, dict):
        return "-", None
    text = "%s s%s%s" % (stop.get("elapsed_s"), "" if stop.get("complete") else " INCOMPLETE",
                         "" if not stop.get("remaining") else " left %s" % stop["remaining"])
    return text, stop.get("elapsed_s") if stop.get("complete") else None


def placement_text(cell):
    """The server's CPUs asked for, the distinct CPU lists its processes were allowed, the client's; None unplaced."""
    placement = (cell.get("launch") or {}).get("placement") or {}
    runs = cell.get("levels") or []
    client = sorted({run.get("client_cpus") for run in runs if run.get("client_cpus")})
    if not placement.get("requested") and not client:
        return None
    processes = placement.get("processes") or []
    allowed = sorted({p.get("cpus") for p in processes if p.get("cpus")})
    return "server asked %s, its %d processes allowed %s; client runs allowed %s" % (
        placement.get("requested"), len(processes), " / ".join(allowed) or "-", " / ".join(client) or "-")


def fmt(value, pattern="%.1f"):
    return "-" if value is None else pattern % value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("campaign")
    parser.add_argument("--play-started", type=float, help="when the playbook started (epoch seconds)")
    args = parser.parse_args()
    rows = cells(args.campaign)
    print("%-28s %-9s %8s %-16s %-28s %8s %8s %8s %s" % (
        "cell", "status", "start s", "caches", "longest phase", "ready+s", "client s", "measured", "stop"))
    totals = {"start-up": 0.0, "benchmark client": 0.0, "stop": 0.0}
    stops, starts, noticed, placed = {}, {}, [], []
    for cell in rows:
        startup = cell.get("startup") or {}
        bench = cell.get("benchmark") or {}
        stop_text, stop_s = stop_figures(cell)
        print("%-28s %-9s %8s %-16s %-28s %8s %8s %8s %s" % (
            "%s.%s" % (cell["variant"], cell.get("launch_number")), cell.get("status"), fmt(startup.get("startup_s")),
            start_kind(cell), longest_phase(startup.get("phases")), fmt(startup.get("ready_noticed_after_s"), "%.3f"),
            fmt(bench.get("client_wall_s")), fmt(bench.get("measured_s")), stop_text))
        if placement_text(cell):
            placed.append("%s.%s: %s" % (cell["variant"], cell.get("launch_number"), placement_text(cell)))
        totals["start-up"] += startup.get("startup_s") or 0.0
        totals["benchmark client"] += bench.get("client_wall_s") or 0.0
        totals["stop"] += stop_s or 0.0
        if stop_s is not None:
            stops.setdefault(cell["variant"], []).append(stop_s)
        if startup.get("ready_noticed_after_s") is not None:
            noticed.append(startup["ready_noticed_after_s"])
        if startup.get("status") == "ready" and start_kind(cell) != "-":
            starts.setdefault(cell["variant"], []).append((start_kind(cell) == "cold", startup["startup_s"]))
    print()
    for line in placed:
        print("placement " + line)
    if rows and args.play_started:
        last = max(calendar.timegm(time.strptime(c["measured_at"], "%Y-%m-%dT%H:%M:%SZ")) for c in rows)
        wall = last - args.play_started
        totals["other (plan, module calls, report)"] = max(wall - sum(totals.values()), 0.0)
        print("playbook start to the last cell: %.0f s" % wall)
    print("where the time went: " + ", ".join("%s %.0f s" % item for item in totals.items()))
    print("readiness noticed after the ready line was written: max %s s over %d launches" % (
        fmt(max(noticed) if noticed else None, "%.3f"), len(noticed)))
    for variant, values in sorted(stops.items()):
        print("stop to every process gone and GPU memory back, %s: %s s" % (variant, ", ".join("%.1f" % v for v in values)))
    for variant, values in sorted(starts.items()):
        cold = [s for is_cold, s in values if is_cold]
        warm = [s for is_cold, s in values if not is_cold]
        if cold and warm:
            print("warm / cold start of %s: %.2f (%.1f s against %.1f s)" % (
                variant, min(warm) / max(cold), min(warm), max(cold)))
    summary_path = pathlib.Path(args.campaign, "summary.json")
    if summary_path.exists():
        summary = json.loads(summary_path.read_text())
        for aa in summary.get("aa") or []:
            print("A/A on %s: %s, resolves %s %% (minimum effect %s %%)" % (
                aa.get("host"), aa.get("verdict"), aa.get("resolves_pct"), summary["settings"]["min_effect_pct"]))
        for row in summary.get("variants") or []:
            why = row.get("failure_class") or (row.get("verdict_reason") or "")[:100]
            print("%-12s %-22s %-14s %s" % (row["host"], row["variant"], row.get("verdict"), why))
    cost_rows, wall, measured = cost(args.campaign)
    if cost_rows and wall:
        print("client overhead: %.1f %% (client wall %.1f s, measured %.1f s)" % ((wall - measured) / wall * 100, wall, measured))


if __name__ == "__main__":
    main()
