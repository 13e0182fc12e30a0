"""The reports with the verdicts on capacity (`fleetopt report --verdict-metric capacity`): report.md and report.html
say that the verdicts are on capacity and by which rule, and show each variant's capacity against its baseline's."""
import argparse
import json
import re

import pytest

from fleetopt.report import write
from fleetopt.cli import build_parser
from test_capacity_verdict import FAST, SLO, SLOW, ladder
from test_report import cell, write_campaign


def slo_cell(variant, order, levels, slo=SLO):
    found = cell(variant, order, levels=ladder(*levels))
    found["benchmark"] = dict(found["benchmark"], concurrency=[1, 4], trials=3, slo=slo)
    return found


def run(campaign, metric="capacity", slo=None):
    return write.main(argparse.Namespace(campaign_dir=str(campaign), latest_link=None, verdict_metric=metric,
                                          confidence=0.95, min_effect=3.0, slo=slo))


def campaign_of(tmp_path, slo=SLO, aa=None):
    cells = [slo_cell("baseline", 0, ((1, FAST), (4, SLOW)), slo), slo_cell("fast", 1, ((1, FAST), (4, FAST)), slo),
             slo_cell("slow", 2, ((1, SLOW), (4, SLOW)), slo)]
    if aa:
        cells.append(slo_cell("baseline_aa", 9, aa, slo))
    return write_campaign(tmp_path, cells)


def section(markdown, title):
    return markdown.split("## %s" % title, 1)[1].split("\n## ", 1)[0]


def test_the_cli_takes_capacity_as_the_verdict_metric():
    args = build_parser().parse_args(["report", "results/x", "--verdict-metric", "capacity"])
    assert args.verdict_metric == "capacity"
    assert "capacity" in build_parser()._subparsers._group_actions[0].choices["report"].format_help()


def test_the_cli_refuses_an_unknown_verdict_metric(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["report", "results/x", "--verdict-metric", "mean_tpot_ms"])
    assert "invalid choice: 'mean_tpot_ms'" in capsys.readouterr().err


def test_markdown_states_the_rule_and_each_variants_capacity_against_the_baseline(tmp_path, capsys):
    campaign = campaign_of(tmp_path)
    assert run(campaign) == 0
    summary = json.loads((campaign / "summary.json").read_text())
    verdicts = {v["variant"]: v["verdict"] for v in summary["variants"]}
    assert verdicts == {"baseline": "baseline", "fast": "improved", "slow": "regressed"}
    verdict_section = section((campaign / "report.md").read_text(), "Verdicts")
    assert "On capacity under the SLOs (campaign_verdict_metric: capacity)" in verdict_section
    assert "t interval of the mean of that p99 figure at 95 % confidence" in verdict_section
    assert "capacity against its baseline" in verdict_section and "per concurrency" not in verdict_section
    fast = next(line for line in verdict_section.splitlines() if line.startswith("| fast"))
    assert "improved" in fast and "≥ c=4 against baseline's c=1, +300.0 %" in fast
    assert "at c=4 the variant holds every SLO" in fast
    slow = next(line for line in verdict_section.splitlines() if line.startswith("| slow"))
    assert "| regressed | none against baseline's c=1 " in slow and "at c=1 the baseline holds every SLO" in slow
    assert "The verdicts are taken on these capacities" in section((campaign / "report.md").read_text(),
                                                                     "Capacity under the SLOs")
    assert "capacity against its baseline" in capsys.readouterr().out  # the play's table too


def test_html_states_the_rule_and_each_variants_capacity_against_the_baseline(tmp_path):
    campaign = campaign_of(tmp_path)
    run(campaign)
    html = (campaign / "report.html").read_text()
    settings = re.search(r'<dd id="settings">(.*?)</dd>', html, re.S).group(1)
    assert "On capacity under the SLOs (campaign_verdict_metric: capacity)" in settings and "Welch" not in settings
    assert "<th>capacity against its baseline</th>" in html
    row = re.search(r'<tr class="verdict-row" data-variant="fast" data-verdict="improved">(.*?)</tr>', html, re.S).group(1)
    assert '<div class="capacity-against">≥ c=4 against baseline&#39;s c=1, +300.0 %</div>' in row
    assert "The verdicts are taken on these capacities" in html
    matrix = html.split('<section id="matrix">')[1]
    assert "verdict-untested" not in matrix  # the levels carry no verdict of their own


def test_an_aa_of_another_capacity_gates_the_verdicts_on_capacity(tmp_path):
    campaign = campaign_of(tmp_path, aa=((1, FAST), (4, FAST)))
    run(campaign)
    summary = json.loads((campaign / "summary.json").read_text())
    fast = next(v for v in summary["variants"] if v["variant"] == "fast")
    assert fast["verdict"] == "inconclusive" and fast["verdict_before_aa"] == "improved"
    floor = section((campaign / "report.md").read_text(), "Noise floor")
    assert "the host's A/A comparison (baseline vs itself) was improved" in floor
    assert "| h1     |         | improved" in floor


def test_without_slos_every_verdict_on_capacity_is_inconclusive_and_the_report_says_why(tmp_path):
    campaign = campaign_of(tmp_path, slo={})
    run(campaign)
    summary = json.loads((campaign / "summary.json").read_text())
    fast = next(v for v in summary["variants"] if v["variant"] == "fast")
    assert fast["verdict"] == "inconclusive" and "no SLO was set (campaign_slo)" in fast["verdict_reason"]
    assert "every verdict is inconclusive: set SLOs" in section((campaign / "report.md").read_text(), "Verdicts")
    assert "every verdict is\n      inconclusive: set SLOs" in (campaign / "report.html").read_text()
    # SLOs given to the report judge the same cells: nothing is measured again.
    run(campaign, slo=["p99_ttft_ms=1000"])
    fast = next(v for v in json.loads((campaign / "summary.json").read_text())["variants"] if v["variant"] == "fast")
    assert fast["verdict"] == "improved"
