"""The `fleetopt` command: campaign reports and log post-mortems on the controller."""
import argparse
import sys


def build_parser():
    parser = argparse.ArgumentParser(prog="fleetopt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    report = sub.add_parser("report", help="merge a campaign's cells into summary.json and report.md")
    report.add_argument("campaign_dir")
    report.add_argument("--latest-link", help="symlink to point at this campaign (e.g. results/latest)")
    report.add_argument("--verdict-metric", default="output_throughput",
                        help="metric the verdicts are based on (default: output_throughput)")
    report.add_argument("--confidence", type=float, default=0.95, help="confidence level (default: 0.95)")
    report.add_argument("--min-effect", type=float, default=3.0,
                        help="smallest change in percent that counts as improved or regressed (default: 3)")
    report.set_defaults(handler="fleetopt.report:main")

    classify = sub.add_parser("classify-log", help="post-mortem of a server log: phase, failure class, root cause")
    classify.add_argument("--engine", required=True, choices=["sglang", "vllm"])
    classify.add_argument("log_file")
    classify.set_defaults(handler="fleetopt.classify:main")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    module_name, func = args.handler.split(":")
    module = __import__(module_name, fromlist=[func])
    return getattr(module, func)(args)


if __name__ == "__main__":
    sys.exit(main())
