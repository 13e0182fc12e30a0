#!/usr/bin/env python3
"""The first run a new user makes, measured (issue 32): the main job on the embedded default, set-up excluded.

Runs `ansible-playbook optimize.yml -e tier=1` as the README's first command does (the local inventory's design),
into a folder of its own, and prints per campaign: its wall time, how long until the play said what the A/A's first
launches tell (the early A/A line), what the A/A resolved (`aa.resolves_pct`), each optimization's verdict (and the
one before the A/A gate), and torch_compile's at c=1. With --reference the same run also measures the design before
issue 32 (c=1 / 4 / 16 with 20 / 20 / 32 prompts, up to 4 trials, one searched level), campaign for campaign, and
prints the wall-time ratio against it: a figure of this host, measured in the same run.

    .venv/bin/python tests/benchmarks/first_run.py [--campaigns 3] [--reference]     # about 10 minutes a campaign

Too long for CI; nothing here asserts a time.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))
from verdicts_hold import verdicts_of  # noqa: E402  pylint: disable=wrong-import-position
from fleetopt.analysis.early_aa import HEADING  # noqa: E402  pylint: disable=wrong-import-position

# The start of the heading, which the play's wrapped line keeps on its first line.
EARLY_LINE = HEADING[:HEADING.index("(") + 1]
# The local inventory's design before issue 32 (inventory/local/group_vars/fleet/campaign.yml at 9e59762).
REFERENCE_DESIGN = {"campaign_bench_concurrency": [1, 4, 16], "campaign_bench_prompts_per_concurrency": 2,
                    "campaign_bench_min_prompts": 20, "campaign_bench_max_trials": 4,
                    "campaign_capacity_search_levels": 1}


def run_campaign(workdir, campaign_id, port, extra=None):
    """(wall seconds, seconds until the early A/A line, exit code, summary.json) of one main job."""
    command = [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "optimize.yml", "-e", "tier=1",
               "-e", "campaign_id=%s" % campaign_id, "-e", "campaign_results_dir=%s" % (workdir / "results"),
               "-e", "campaign_state_dir=%s" % (workdir / "state"), "-e", "campaign_port=%d" % port]
    if extra:
        command += ["-e", json.dumps(extra)]
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PATH="%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", "")))
    started, early = time.time(), None
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True) as play:
        for line in play.stdout:
            if early is None and EARLY_LINE in line:
                early = time.time() - started
    wall = time.time() - started
    summary = json.loads((workdir / "results" / campaign_id / "summary.json").read_text())
    return wall, early, play.returncode, summary


def verdicts(summary):
    """verdicts_hold.py's verdicts_of, for the variants measured against the baseline."""
    measured = {v["variant"] for v in summary["variants"] if v["variant"] != "baseline" and v["status"] == "ok"}
    return {variant: verdict for variant, verdict in verdicts_of(summary).items() if variant in measured}


def at_c1(summary, variant):
    entry = next((v for v in summary["variants"] if v["variant"] == variant), None)
    level = next((lv for lv in (entry or {}).get("levels") or [] if lv["concurrency"] == 1), None)
    if level is None:
        return "-"
    change = "%+.1f %%" % level["change"]["change_pct"] if level.get("change") else ""
    return "%s %s" % (level.get("verdict_before_aa") or level["verdict"], change)


def describe(label, wall, early, rc, summary):
    resolves = "; ".join("%s %s %%" % (h["host"], h["resolves_pct"]) for h in summary["aa"])
    print("%s: %.0f s (exit %d), early A/A after %s, A/A resolves %s" % (
        label, wall, rc, "-" if early is None else "%.0f s" % early, resolves))
    print("  verdicts: " + ", ".join("%s=%s%s" % (v, verdict, "" if before is None else " (before the gate: %s)" % before)
                                     for v, (verdict, before) in sorted(verdicts(summary).items())))
    print("  torch_compile at c=1 (before the gate): %s" % at_c1(summary, "torch_compile"), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaigns", type=int, default=1)
    parser.add_argument("--reference", action="store_true", help="also run the design before issue 32, alternating")
    parser.add_argument("--port", type=int, default=8796)
    args = parser.parse_args()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-first-run-"))
    walls = {"design": [], "reference": []}
    for index in range(1, args.campaigns + 1):
        runs = [("design", None), ("reference", REFERENCE_DESIGN)] if args.reference else [("design", None)]
        for label, extra in (runs if index % 2 else list(reversed(runs))):
            wall, early, rc, summary = run_campaign(workdir, "%s-%d" % (label, index), args.port, extra)
            walls[label].append(wall)
            describe("campaign %d, %s" % (index, label), wall, early, rc, summary)
    print("\nmain job wall time, set-up excluded: median %.0f s over %d campaign(s) (results in %s)" % (
        statistics.median(walls["design"]), len(walls["design"]), workdir))
    if walls["reference"]:
        print("the design before issue 32: median %.0f s; ratio %.2f" % (
            statistics.median(walls["reference"]),
            statistics.median(walls["design"]) / statistics.median(walls["reference"])))


if __name__ == "__main__":
    main()
