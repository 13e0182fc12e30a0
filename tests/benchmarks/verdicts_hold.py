#!/usr/bin/env python3
"""Do the verdicts hold when the campaign is run again? Repeats a campaign with planted effects.

Each campaign runs, on the embedded default with its own measurement design (launches, ABBA
order, A/A, sequential trials), the optimizations of tests/fixtures/planted_effects.yml: a large
effect known in direction and a small one the design cannot resolve. It prints each campaign's
verdicts and, at the end, the counts against what each must be (issue 12):

- A/A (the baseline against itself): never `improved` or `regressed`;
- the planted large effect: `regressed` in every campaign;
- the planted small effect: `inconclusive`, never `neutral`.

    .venv/bin/python tests/benchmarks/verdicts_hold.py --campaigns 5     # about 15 minutes each here

`-e` gives every campaign more variables (an environment to try, say).

Each campaign's line also gives the unit of replication and the A/A comparison (the host's noise
floor). `--also-min-effect 10,15,20` judges the same cells again with those minimum effects and
prints their counts too (nothing is measured again): how wide a band this host's noise allows the
A/A to be `neutral` in, which the A/A gate needs before any verdict of the host stands.

Too long for CI, which runs one such campaign as tests/e2e/test_verdicts.py.
"""
import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from fleetopt.analysis.summary import build_summary, load_cells  # noqa: E402  pylint: disable=wrong-import-position
PLANTED = ROOT / "tests" / "fixtures" / "planted_effects.yml"


def planted():
    return yaml.safe_load(PLANTED.read_text())


def campaign_args(spec, workdir, campaign_id, port):
    optimizations = [dict({k: v for k, v in o.items() if k != "expect"}, tier=9) for o in spec["optimizations"]]
    return ["run", "--only", ",".join(o["id"] for o in optimizations), "--aa",
            "--campaign-id", campaign_id, "--results", str(workdir / "results"),
            "--artifacts", str(workdir / "artifacts"),
            "-e", "campaign_state_dir=%s" % (workdir / "state"), "-e", "campaign_port=%d" % port,
            "-e", json.dumps(dict(spec.get("settings") or {}, campaign_extra_optimizations=optimizations))]


def run_one(spec, workdir, index, port, extra_vars=()):
    campaign_id = "hold-%d" % index
    started = time.time()
    extra = [arg for value in extra_vars for arg in ("-e", value)]
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "fleetopt")] + campaign_args(
        spec, workdir, campaign_id, port) + extra + ["--quiet"], cwd=ROOT, check=False)
    summary = json.loads((workdir / "results" / campaign_id / "summary.json").read_text())
    return proc.returncode, time.time() - started, summary


def verdicts_of(summary):
    return {v["variant"]: (v["verdict"], v.get("verdict_before_aa")) for v in summary["variants"]}


def noise_floor(summary):
    return "; ".join("c=%s %+.1f %% [%+.1f, %+.1f] %s" % (f["concurrency"], f["change_pct"], f["ci_low_pct"],
                                                          f["ci_high_pct"], f["verdict"])
                     for f in summary.get("noise_floor") or [] if f.get("ci_low_pct") is not None)


def count(counts, summary):
    for variant, (verdict, _) in verdicts_of(summary).items():
        counts[variant][verdict] += 1


def print_counts(title, counts, expected):
    """The counts against what each must be; the number of wrong verdicts."""
    print(title)
    failures = 0
    for variant, allowed in sorted(expected.items()):
        seen = counts[variant]
        wrong = sum(n for verdict, n in seen.items() if verdict not in allowed)
        failures += wrong
        print("  %-16s %-40s expected %s: %s" % (variant, dict(seen), "/".join(allowed),
                                                 "held" if not wrong else "%d wrong" % wrong))
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--campaigns", type=int, default=5)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("-e", "--extra-vars", action="append", default=[],
                        help="more variables for every campaign, as `fleetopt run -e` takes them (after the design's)")
    parser.add_argument("--also-min-effect", default="",
                        help="comma-separated minimum effects (%%) to judge the same cells with again")
    args = parser.parse_args()
    bands = [float(x) for x in args.also_min_effect.split(",") if x.strip()]
    spec = planted()
    expected = {o["id"]: o["expect"] for o in spec["optimizations"]}
    expected["baseline_aa"] = spec["aa_expect"]
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-hold-"))
    counts = collections.defaultdict(collections.Counter)
    again = {band: collections.defaultdict(collections.Counter) for band in bands}
    for index in range(1, args.campaigns + 1):
        rc, elapsed, summary = run_one(spec, workdir, index, args.port, args.extra_vars)
        print("campaign %d (%.0f s, exit %d, unit of replication: %s): %s" % (
            index, elapsed, rc, summary["settings"].get("unit_of_replication"), ", ".join(
                "%s=%s%s" % (v, verdict, "" if before is None else " (before the A/A gate: %s)" % before)
                for v, (verdict, before) in sorted(verdicts_of(summary).items()))), flush=True)
        print("  A/A at a minimum effect of %s %%: %s; the host resolves %s" % (
            summary["settings"]["min_effect_pct"], noise_floor(summary),
            "; ".join("%s %s %%" % (h["host"], h.get("resolves_pct")) for h in summary.get("aa") or [])))
        count(counts, summary)
        folder = workdir / "results" / ("hold-%d" % index)
        for band in bands:
            judged = build_summary(folder, load_cells(folder), min_effect_pct=band)
            print("  at %s %%: %s; A/A %s" % (band, ", ".join("%s=%s" % (v, verdict) for v, (verdict, _) in sorted(
                verdicts_of(judged).items())), noise_floor(judged)), flush=True)
            count(again[band], judged)
    failures = print_counts("\nover %d campaigns (results in %s):" % (args.campaigns, workdir), counts, expected)
    for band in bands:
        print_counts("judged again at a minimum effect of %s %%:" % band, again[band], expected)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
