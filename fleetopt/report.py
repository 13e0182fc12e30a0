"""Merge a campaign's cells into summary.json and a Markdown matrix report.

Cells are written one file per (host, variant) by the playbook as soon as each is
measured; this step only reads them, so it can run again at any time, including on a
campaign that was interrupted.
"""
import datetime
import json
import os
import pathlib
import sys
import tempfile

from tabulate import tabulate

SUMMARY_METRICS = (
    "output_throughput", "total_throughput", "request_throughput",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_itl_ms", "median_itl_ms", "p99_itl_ms",
    "mean_tpot_ms", "mean_e2e_latency_ms", "p99_e2e_latency_ms",
    "completed", "failed", "duration_s",
)


def load_cells(campaign_dir):
    cells = []
    for path in sorted(pathlib.Path(campaign_dir, "cells").glob("*/*.json")):
        try:
            cells.append(json.loads(path.read_text()))
        except ValueError as exc:
            raise SystemExit("fleetopt report: %s is not valid JSON (%s)" % (path, exc))
    return sorted(cells, key=lambda c: (c.get("order", 0), c["variant"], c["host"]))


def write_atomically(path, text):
    path = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def level_rows(cell):
    """Summary rows of one cell: one per measured concurrency level, or one without."""
    base = {
        "variant": cell["variant"],
        "title": cell.get("title"),
        "host": cell.get("host"),
        "failure_class": (cell.get("failure") or {}).get("failure_class"),
        "reason": cell.get("reason"),
    }
    if cell["status"] != "ok" or not cell.get("levels"):
        return [dict(base, status=cell["status"], concurrency=None, metrics={})]
    rows = []
    for level in cell["levels"]:
        if level.get("status") == "ok":
            metrics = {k: level["metrics"].get(k) for k in SUMMARY_METRICS}
            rows.append(dict(base, status="ok", concurrency=level["concurrency"], metrics=metrics))
        else:
            rows.append(dict(base, status="crashed", concurrency=level["concurrency"], metrics={},
                             failure_class=base["failure_class"] or "benchmark_failed",
                             reason=level.get("reason")))
    return rows


def relative_change(value, reference):
    if value is None or not reference:
        return None
    return (value - reference) / reference * 100.0


def add_baseline_deltas(rows):
    baseline = {
        (r["host"], r["concurrency"]): r["metrics"]
        for r in rows if r["variant"] == "baseline" and r["status"] == "ok"
    }
    for row in rows:
        reference = baseline.get((row["host"], row["concurrency"]))
        if row["status"] != "ok" or reference is None:
            row["vs_baseline"] = None
            continue
        row["vs_baseline"] = {
            key: relative_change(row["metrics"].get(key), reference.get(key))
            for key in ("output_throughput", "total_throughput", "mean_ttft_ms", "mean_itl_ms")
        }
    return rows


def build_summary(campaign_dir, cells):
    rows = add_baseline_deltas([row for cell in cells for row in level_rows(cell)])
    engines = sorted({c["engine"] for c in cells})
    first = cells[0] if cells else {}
    return {
        "campaign": pathlib.Path(campaign_dir).name,
        "engine": engines[0] if len(engines) == 1 else ",".join(engines),
        "engine_version": (first.get("provenance") or {}).get("engine_version"),
        "fleetopt_revision": (first.get("provenance") or {}).get("fleetopt_revision"),
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hosts": sorted({c["host"] for c in cells}),
        "cells": rows,
    }


def fmt(value, digits=1):
    return "" if value is None else "%.*f" % (digits, value)


def fmt_pct(value):
    return "" if value is None else "%+.1f %%" % value


def matrix_table(rows):
    table = []
    for r in rows:
        m = r["metrics"]
        delta = r.get("vs_baseline") or {}
        table.append([
            r["variant"], r["host"], r["concurrency"] if r["concurrency"] is not None else "",
            r["status"], fmt(m.get("output_throughput")), fmt(m.get("total_throughput")),
            fmt(m.get("mean_ttft_ms"), 2), fmt(m.get("p99_ttft_ms"), 2), fmt(m.get("mean_itl_ms"), 3),
            fmt_pct(delta.get("output_throughput")),
        ])
    headers = ["variant", "host", "conc.", "status", "output tok/s", "total tok/s",
               "TTFT mean ms", "TTFT p99 ms", "ITL mean ms", "output vs baseline"]
    return tabulate(table, headers=headers, tablefmt="github")


def problems_table(cells):
    table = []
    for cell in cells:
        if cell["status"] == "ok":
            continue
        failure = cell.get("failure") or {}
        table.append([
            cell["variant"], cell["host"], cell["status"], failure.get("failure_class") or "",
            failure.get("root_cause") or cell.get("reason") or "", failure.get("remedy") or "",
        ])
    if not table:
        return "None."
    return tabulate(table, headers=["variant", "host", "status", "class", "root cause / reason", "remedy"],
                    tablefmt="github")


def startup_table(cells):
    table = []
    for cell in cells:
        startup = cell.get("startup") or {}
        phases = startup.get("phases") or {}
        if not phases:
            continue
        parts = ", ".join("%s %s s" % (name, fmt(p.get("duration_s"))) for name, p in phases.items())
        table.append([cell["variant"], cell["host"], fmt(startup.get("startup_s")), parts])
    if not table:
        return "No server was started."
    return tabulate(table, headers=["variant", "host", "ready after s", "phases"], tablefmt="github")


def render_markdown(summary, cells):
    first = cells[0] if cells else {}
    bench = first.get("benchmark") or {}
    host = ((first.get("provenance") or {}).get("host") or {})
    lines = [
        "# fleetopt campaign %s" % summary["campaign"],
        "",
        "- engine: %s %s" % (summary["engine"], summary.get("engine_version") or ""),
        "- hosts: %s (%s, %s CPUs, %s GPUs)" % (
            ", ".join(summary["hosts"]), host.get("cpu_model"), host.get("cpu_count"), host.get("gpu_count")),
        "- benchmark: concurrency %s, %s trial(s), %s input / %s output tokens" % (
            bench.get("concurrency"), bench.get("trials"), bench.get("input_len"), bench.get("output_len")),
        "- fleetopt revision: %s; generated %s" % (summary.get("fleetopt_revision"), summary["generated_at"]),
        "",
        "## Matrix",
        "",
        matrix_table(summary["cells"]),
        "",
        "## Not measured",
        "",
        problems_table(cells),
        "",
        "## Start-up",
        "",
        startup_table(cells),
        "",
    ]
    return "\n".join(lines)


def update_latest_link(link, target):
    link = pathlib.Path(link)
    tmp = link.with_name("." + link.name + ".new")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(os.path.relpath(target, link.parent))
    os.replace(tmp, link)


def main(args):
    campaign_dir = pathlib.Path(args.campaign_dir)
    if not campaign_dir.is_dir():
        print("fleetopt report: no campaign folder %s" % campaign_dir, file=sys.stderr)
        return 2
    cells = load_cells(campaign_dir)
    if not cells:
        print("fleetopt report: %s holds no cells yet" % campaign_dir, file=sys.stderr)
        return 2
    summary = build_summary(campaign_dir, cells)
    write_atomically(campaign_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    markdown = render_markdown(summary, cells)
    write_atomically(campaign_dir / "report.md", markdown)
    if args.latest_link:
        update_latest_link(args.latest_link, campaign_dir)
    print(matrix_table(summary["cells"]))
    print("\nreport: %s" % (campaign_dir / "report.md"))
    return 0
