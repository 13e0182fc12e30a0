"""Write a campaign's summary.json, summary.csv, report.md, report.html and llm-d reports from its cells.

Cells are written one file per (host, variant) by the playbook as soon as each is
measured; this step only reads them, so it can run again at any time, including on a
campaign that was interrupted.
"""
import json
import os
import pathlib
import sys

from fleetopt.analysis.conclusion import conclusion_text
from fleetopt.files import write_atomically
from fleetopt.formatting import TERMINAL_WIDTH
from fleetopt.analysis.hosts import fill_missing_cells, troubled_hosts
from fleetopt.analysis import stats
from fleetopt.analysis.summary import build_summary, campaign_verdict_settings, load_cells
from fleetopt.recommend.proposal import recommend, write_recommendation
from fleetopt.report.html_report import write_html_report
from fleetopt.report.llmd_export import write_llmd_reports
from fleetopt.report.markdown import render_markdown, verdict_table
from fleetopt.report.summary_csv import csv_text
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import SLO_KEYS  # fleetopt.recommend set the path

VERDICT_DEFAULTS = {"metric": "output_throughput", "confidence": stats.DEFAULT_CONFIDENCE,
                    "min_effect_pct": stats.DEFAULT_MIN_EFFECT_PCT}


def parse_slo(pairs):
    """{'p99_ttft_ms': 2000.0} from ['p99_ttft_ms=2000']; None when no pair is given (the cells' SLOs count)."""
    if not pairs:
        return None
    slo = {}
    for pair in pairs:
        key, _sep, value = pair.partition("=")
        if key not in SLO_KEYS:
            raise ValueError("unknown SLO %r in --slo %s; known: %s" % (key, pair, ", ".join(SLO_KEYS)))
        try:
            slo[key] = float(value)
        except ValueError:
            slo[key] = -1.0
        if not slo[key] > 0:
            raise ValueError("--slo %s: the limit must be a positive number of milliseconds" % pair)
    return slo


def update_latest_link(link, target):
    link = pathlib.Path(link)
    tmp = link.with_name("." + link.name + ".new")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(os.path.relpath(target, link.parent))
    os.replace(tmp, link)


def verdict_settings(args, cells):
    """(metric, confidence, min effect, where they came from): each option given, else the campaign's as its cells
    record it, else the defaults; the source is `report` when any option was given."""
    given = {"metric": args.verdict_metric, "confidence": args.confidence, "min_effect_pct": args.min_effect}
    recorded = campaign_verdict_settings(cells)
    chosen = {key: value if value is not None else recorded.get(key, VERDICT_DEFAULTS[key]) for key, value in given.items()}
    source = "report" if any(v is not None for v in given.values()) else "cells" if recorded else "defaults"
    return chosen["metric"], float(chosen["confidence"]), float(chosen["min_effect_pct"]), source


def main(args):
    campaign_dir = pathlib.Path(args.campaign_dir)
    if not campaign_dir.is_dir():
        print("fleetopt report: no campaign folder %s" % campaign_dir, file=sys.stderr)
        return 2
    cells = load_cells(campaign_dir)
    if fill_missing_cells(campaign_dir, cells):
        cells = load_cells(campaign_dir)
    if not cells:
        print("fleetopt report: %s holds no cells yet" % campaign_dir, file=sys.stderr)
        return 2
    try:
        slo = parse_slo(getattr(args, "slo", None))
    except ValueError as exc:
        print("fleetopt report: %s" % exc, file=sys.stderr)
        return 2
    price = getattr(args, "cost_per_host_hour", None)
    if price is not None and not price > 0:
        print("fleetopt report: --cost-per-host-hour must be a positive number, got %s" % price, file=sys.stderr)
        return 2
    metric, confidence, min_effect, source = verdict_settings(args, cells)
    summary = build_summary(campaign_dir, cells, metric, confidence, min_effect, slo=slo, cost_per_host_hour=price)
    summary["settings"]["verdict_settings_from"] = source
    summary["recommendation"] = recommend(summary, cells)
    write_recommendation(campaign_dir, summary["recommendation"])
    write_atomically(campaign_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    write_atomically(campaign_dir / "summary.csv", csv_text(summary["cells"]))
    write_atomically(campaign_dir / "report.md", render_markdown(summary, cells))
    write_html_report(campaign_dir, summary, cells)
    write_llmd_reports(campaign_dir, summary, cells)
    if args.latest_link:
        update_latest_link(args.latest_link, campaign_dir)
    print(verdict_table(summary["variants"], summary["settings"]["verdict_metric"]))
    proposal = summary["recommendation"]
    print("\nrecommendation (%s): %s" % (proposal["status"], ", ".join(proposal["stack"]) or "the baseline"))
    print("  %s" % (campaign_dir / "recommended.yml"))
    print("\nreport: %s" % (campaign_dir / "report.md"))
    print("\n" + conclusion_text(summary, width=TERMINAL_WIDTH, folder=str(campaign_dir)))
    troubled = troubled_hosts(campaign_dir)
    for host, status, reason in troubled:
        print("fleetopt: host %s is %s: %s" % (host, status, reason), file=sys.stderr)
    if troubled and args.fail_on_host_trouble:
        print("fleetopt: the report is written; %d host(s) did not finish their share (stop what is left: "
              "ansible-playbook playbooks/stop_servers.yml)" % len(troubled), file=sys.stderr)
        return 4
    return 0
