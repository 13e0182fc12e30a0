"""Cost per million output tokens at each variant's capacity, and the report's cost and energy
section, from cells in the shape the campaign writes."""
import argparse

import pytest

from fleetopt.report import write
from fleetopt.analysis.cost import per_million
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, level
from test_report import write_campaign

SLO = {"p99_ttft_ms": 100.0}


def runs(c, outputs, ttft, power=None):
    made = []
    for i, out in enumerate(outputs):
        lv = level(c, out, trial=i + 1)
        lv["metrics"]["p99_ttft_ms"] = ttft
        if power:
            lv["metrics"].update(board_power_w=power, output_tokens_per_joule=out / power)
        made.append(lv)
    return made


def priced(variant, ladder, price=2.0, slo=SLO, power=None):
    levels = [lv for c, outputs, ttft in ladder for lv in runs(c, outputs, ttft, power)]
    return cell(variant, levels=levels, benchmark={"concurrency": [1, 4, 8], "trials": 3, "slo": slo,
                                                   "cost_per_host_hour": price})


def by_variant(summary, name):
    return next(v for v in summary["variants"] if v["variant"] == name)


def test_a_million_tokens_cost_the_hourly_price_over_the_tokens_of_an_hour():
    assert per_million(2.0, 1000.0) == pytest.approx(2.0 / 3.6)  # 3.6 million tokens an hour
    assert per_million(2.0, 0.0) is None and per_million(2.0, None) is None


def test_the_cost_is_read_at_the_capacity_under_the_slos_with_its_interval(tmp_path):
    cells = [priced("baseline", [(1, (900, 1000, 1100), 50), (4, (1900, 2000, 2100), 90), (8, (2500, 2600, 2700), 300)],
                    power=500.0)]
    cost = by_variant(build_summary(tmp_path / "c", cells), "baseline")["cost"]
    assert cost["concurrency"] == 4 and cost["basis"] == "at its capacity under the SLOs"
    assert cost["per_million_output_tokens"] == pytest.approx(per_million(2.0, 2000.0))
    # The faster end of the throughput interval is the cheaper end of the cost's.
    assert cost["low"] < cost["per_million_output_tokens"] < cost["high"]
    assert cost["output_tokens_per_joule"] == pytest.approx(4.0)


def test_without_slos_the_cost_is_read_at_the_highest_measured_level_and_says_so(tmp_path):
    cells = [priced("baseline", [(1, (1000, 1000), 50), (8, (3000, 3000), 300)], slo={})]
    cost = by_variant(build_summary(tmp_path / "c", cells), "baseline")["cost"]
    assert cost["concurrency"] == 8 and cost["basis"].startswith("no SLO was set")
    assert cost["per_million_output_tokens"] == pytest.approx(per_million(2.0, 3000.0))
    assert cost["low"] == cost["high"] == pytest.approx(per_million(2.0, 3000.0))  # no spread, no width


def test_no_capacity_is_no_cost_with_the_reason_and_no_price_is_no_cost(tmp_path):
    cells = [priced("baseline", [(1, (1000, 1000), 500)]), cell("other", levels=[level(1, 10.0)], host="h2")]
    summary = build_summary(tmp_path / "c", cells)
    cost = by_variant(summary, "baseline")["cost"]
    assert cost["per_million_output_tokens"] is None and cost["basis"].startswith("no capacity under the SLOs")
    assert by_variant(summary, "other")["cost"] is None


def test_an_empty_price_from_the_command_line_is_no_price(tmp_path):
    cells = [priced("baseline", [(1, (1000, 1000), 50)], price="")]
    assert by_variant(build_summary(tmp_path / "c", cells), "baseline")["cost"] is None
    assert by_variant(build_summary(tmp_path / "c", [priced("baseline", [(1, (1000, 1000), 50)], price="3.6")]),
                      "baseline")["cost"]["per_million_output_tokens"] == pytest.approx(1.0)


def test_a_price_given_to_the_report_prices_every_host(tmp_path):
    cells = [priced("baseline", [(1, (1000, 1000), 50)], price=None)]
    assert by_variant(build_summary(tmp_path / "c", cells), "baseline")["cost"] is None
    summary = build_summary(tmp_path / "c", cells, cost_per_host_hour=3.6)
    assert by_variant(summary, "baseline")["cost"]["per_million_output_tokens"] == pytest.approx(1.0)
    assert summary["settings"]["cost_source"] == "report"


def run_report(campaign, price=None):
    return write.main(argparse.Namespace(campaign_dir=str(campaign), latest_link=None, verdict_metric="output_throughput",
                                          confidence=0.95, min_effect=3.0, cost_per_host_hour=price))


def test_the_report_gives_cost_and_energy_and_how_power_was_sampled(tmp_path):
    sampled = priced("baseline", [(1, (1000, 1000), 50)], power=250.0)
    sampled["benchmark"]["power"] = {"sampled": True, "tool": "nvidia-smi", "field": "power.draw.instant",
                                     "interval_ms": 200, "gpus": [0]}
    campaign = write_campaign(tmp_path, [sampled])
    assert run_report(campaign) == 0
    markdown = (campaign / "report.md").read_text()
    section = markdown.split("## Cost and energy", 1)[1].split("\n## ", 1)[0]
    assert "h1: power.draw.instant every 200 ms on GPU(s) 0" in section
    row = next(line for line in section.splitlines() if line.startswith("| baseline"))
    assert [c.strip() for c in row.strip("|").split("|")] == [
        "baseline", "h1", "2", "c=1", "0.5556", "[0.5556, 0.5556]", "4", "at its capacity under the SLOs"]
    html = (campaign / "report.html").read_text()
    table = html.split('id="cost-table"', 1)[1].split("</table>", 1)[0]
    assert "<td>0.5556</td>" in table and "[0.5556, 0.5556]" in table and "at its capacity under the SLOs" in table
    assert "power.draw.instant every 200 ms on GPU(s) 0" in html.split('id="cost"', 1)[1]


def test_a_host_without_power_readings_and_a_campaign_without_price_say_so(tmp_path):
    unpriced = cell("baseline", levels=[level(1, 100.0)],
                    benchmark={"concurrency": [1], "trials": 1, "power": {"sampled": False, "reason": "no power reading"}})
    campaign = write_campaign(tmp_path, [unpriced])
    assert run_report(campaign) == 0
    section = (campaign / "report.md").read_text().split("## Cost and energy", 1)[1]
    assert "h1: not sampled (no power reading)" in section
    assert "No price per host-hour was given (campaign_cost_per_host_hour)" in section


def test_a_price_that_is_not_positive_is_refused(tmp_path, capsys):
    campaign = write_campaign(tmp_path, [cell("baseline", levels=[level(1, 100.0)])])
    assert run_report(campaign, price=0.0) == 2
    assert "--cost-per-host-hour must be a positive number" in capsys.readouterr().err
