"""The `fleetopt` command: campaign reports and log post-mortems on the controller."""
import argparse
import sys

from fleetopt.paths import ROOT
from fleetopt.analysis.verdict_metrics import VERDICT_METRICS
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import ADAPTERS  # importable once fleetopt.paths ran


def build_parser():
    parser = argparse.ArgumentParser(prog="fleetopt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    report = sub.add_parser("report", help="merge a campaign's cells into summary.json and report.md")
    report.add_argument("campaign_dir")
    report.add_argument("--latest-link", help="symlink to point at this campaign (e.g. results/latest)")
    # The three verdict settings default to what the campaign ran with, as its cells record it, so that a report run
    # again by hand gives the campaign's verdicts; cells from before that was recorded get the defaults named here.
    report.add_argument("--verdict-metric", choices=VERDICT_METRICS,
                        help="metric the verdicts are based on (default: the campaign's, else output_throughput), or "
                             "capacity: each variant's capacity under the SLOs against its baseline's (needs SLOs, "
                             "from the cells or --slo)")
    report.add_argument("--confidence", type=float,
                        help="confidence level (default: the campaign's, else 0.95)")
    report.add_argument("--min-effect", type=float,
                        help="smallest change in percent that counts as improved or regressed (default: the "
                             "campaign's, else 3)")
    report.add_argument("--slo", action="append", metavar="KEY=MS",
                        help="judge capacity under this SLO instead of the ones the cells were measured under "
                             "(p99_ttft_ms, p99_tpot_ms, p99_itl_ms; repeat for several); goodput stays as measured")
    report.add_argument("--cost-per-host-hour", type=float, metavar="PRICE",
                        help="what one host costs per hour, for every host: the cost per million output tokens at "
                             "each variant's capacity (default: the price each host's cells recorded, if any)")
    report.add_argument("--fail-on-host-trouble", action="store_true",
                        help="exit 4, after writing the report, when a host was unreachable, unhealthy or failed")
    report.set_defaults(handler="fleetopt.report.write:main")

    run = sub.add_parser("run", help="run a campaign through ansible-runner (CI); exit codes in `fleetopt run -h`",
                         description=__import__("fleetopt.run", fromlist=["x"]).__doc__,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    what = run.add_mutually_exclusive_group()
    what.add_argument("--tier", type=int, help="run every optimization of this tier")
    what.add_argument("--only", help="run these optimization ids (comma-separated)")
    what.add_argument("--verify", metavar="RECOMMENDED_YML",
                      help="verify an earlier recommendation (results/<id>/recommended.yml): measure its recommended "
                           "configuration against the baseline in a new campaign, without a matrix")
    run.add_argument("--recommend", action="store_true",
                     help="after the matrix and its report, measure the proposed stack (the baseline with every "
                          "improved, non-conflicting candidate) against the baseline, and report it as measured")
    run.add_argument("--inventory", "-i", default=str(ROOT / "inventory" / "local"), help="inventory (default: local)")
    run.add_argument("--campaign-id", help="campaign id; an existing one is resumed (default: the time)")
    run.add_argument("--aa", action=argparse.BooleanOptionalAction, default=None,
                     help="measure the baseline twice (A/A), the host's noise floor; on unless the inventory "
                          "says otherwise (--no-aa turns it off)")
    run.add_argument("--fresh", action="store_true", help="measure every cell again when resuming")
    run.add_argument("--slo", action="append", metavar="KEY=MS",
                     help="an SLO, a p99 limit in ms (p99_ttft_ms, p99_tpot_ms, p99_itl_ms; repeat for several): sets "
                          "campaign_slo, under which capacity is found and the client counts goodput")
    run.add_argument("--extra-vars", "-e", action="append", help="KEY=VALUE or JSON, passed to the playbook")
    run.add_argument("--results", help="results directory (default: results/ in the project)")
    run.add_argument("--artifacts", default=str(ROOT / "artifacts"),
                     help="ansible-runner artifacts; each campaign under its id (default: artifacts/)")
    run.add_argument("--gate-reference", help="summary.json (or campaign folder) of a reference campaign")
    run.add_argument("--gate-threshold", type=float, default=5.0,
                     help="regression in percent that fails the gate (default: 5)")
    run.add_argument("--fail-on-inconclusive", action="store_true",
                     help="exit 5 when a gate comparison is inconclusive (too few trials or too much noise to "
                          "show a regression or rule one out); by default these are printed and the gate passes")
    run.add_argument("--gate-host-map", action="append", metavar="OLD=NEW",
                     help="compare the reference's host OLD with this campaign's host NEW (hosts are matched "
                          "by inventory name; repeat or comma-separate for several)")
    run.add_argument("--quiet", action="store_true", help="do not stream the playbook's output")
    run.set_defaults(handler="fleetopt.run:main")

    classify = sub.add_parser("classify-log", help="post-mortem of a server log: phase, failure class, root cause")
    classify.add_argument("--engine", required=True, choices=sorted(ADAPTERS))
    classify.add_argument("log_file")
    classify.set_defaults(handler="fleetopt.classify:main")

    early = sub.add_parser("early-aa", help="what a host's A/A says after the first launch of each side (the "
                                            "least its campaign will resolve), while the campaign goes on")
    early.add_argument("campaign_dir")
    early.add_argument("--host", required=True, help="the host, by inventory name")
    early.add_argument("--verdict-metric", choices=VERDICT_METRICS, default="output_throughput",
                       help="the campaign's verdict metric (on capacity, output throughput is read)")
    early.add_argument("--confidence", type=float, default=0.95, help="the campaign's confidence level")
    early.add_argument("--min-effect", type=float, default=5.0, help="the campaign's minimum effect in percent")
    early.set_defaults(handler="fleetopt.analysis.early_aa:main")

    validate = sub.add_parser("validate", help="check every cell and summary.json under campaign folders against "
                                               "their JSON Schemas (fleetopt/schemas); exit 1 on an invalid file")
    validate.add_argument("folders", nargs="+", metavar="FOLDER", help="a campaign folder, or one that holds several")
    validate.set_defaults(handler="fleetopt.schemas:main")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    module_name, func = args.handler.split(":")
    module = __import__(module_name, fromlist=[func])
    return getattr(module, func)(args)


if __name__ == "__main__":
    sys.exit(main())
