"""The report opens with the recommendation (report.md and report.html), shows capacity under the SLOs and
goodput beside throughput, and writes results/<id>/recommended.yml."""
import argparse
import json

import yaml

from fleetopt.report import write
from test_report import cell, trials, write_campaign

PREFIX = ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"]
SLO = {"p99_ttft_ms": 30.0}


def with_launch(c, flags, slo=SLO, goodput=None):
    c["launch"] = {"argv": PREFIX + [k for k in flags], "flags": {k: True for k in flags}, "env": {"A": "1"}}
    c["benchmark"] = dict(c["benchmark"], slo=slo)
    c["provenance"]["conflicts"] = []
    for lv in c["levels"]:
        lv["metrics"].update(request_throughput=10.0, request_goodput=goodput)
    return c


def campaign(tmp_path, slo=SLO):
    cells = [with_launch(cell("baseline", 0, levels=trials(1, 100, 101, 99) + trials(4, 300, 303, 297)),
                         ["--enforce-eager"], slo, goodput=9.0),
             with_launch(cell("helps", 1, levels=trials(1, 130, 131, 129) + trials(4, 390, 393, 387)),
                         ["--enforce-eager", "--fast"], slo, goodput=9.5),
             with_launch(cell("hurts", 2, levels=trials(1, 70, 71, 69) + trials(4, 210, 213, 207)),
                         ["--enforce-eager", "--slow"], slo)]
    return write_campaign(tmp_path, cells)


def run(folder, slo=None):
    return write.main(argparse.Namespace(campaign_dir=str(folder), latest_link=None, verdict_metric="output_throughput",
                                          confidence=0.95, min_effect=3.0, slo=slo))


def test_the_recommendation_is_written_and_opens_both_reports(tmp_path):
    folder = campaign(tmp_path)
    assert run(folder) == 0
    proposal = yaml.safe_load((folder / "recommended.yml").read_text())
    assert proposal["stack"] == ["helps"] and proposal["inventory"]["campaign_server_flags"]["--fast"] is True
    assert proposal["launch"]["argv"] == PREFIX + ["--enforce-eager", "--fast"]
    assert [(e["id"], e["why"]) for e in proposal["left_out"]] == [("hurts", "regressed")]
    markdown = (folder / "report.md").read_text()
    sections = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Recommendation"
    assert "Status: measured: a single optimization, nothing to stack" in markdown
    assert "--enforce-eager --fast" in markdown and "| hurts" in markdown and "regressed" in markdown
    html = (folder / "report.html").read_text()
    assert html.index('id="recommendation"') < html.index('id="verdicts"') < html.index('id="matrix"')
    assert "recommended.yml" in html and "--fast" in html
    assert json.loads((folder / "summary.json").read_text())["recommendation"]["stack"] == ["helps"]


def test_capacity_and_goodput_are_reported_under_the_slos(tmp_path):
    folder = campaign(tmp_path)
    run(folder)
    markdown = (folder / "report.md").read_text()
    assert "## Capacity under the SLOs" in markdown and "p99_ttft_ms <= 30 ms" in markdown
    # Each level's p99 TTFT is 20 ms in test_report's cells: every SLO holds at both levels.
    assert "≥ c=4" in markdown and "measure higher levels" in markdown
    assert "9.50 (95 %)" in markdown  # goodput req/s beside throughput, with its share of requests/s
    html = (folder / "report.html").read_text()
    assert 'id="capacity"' in html and "9.50 (95 %)" in html


def test_the_report_can_judge_capacity_under_its_own_slos(tmp_path):
    folder = campaign(tmp_path)
    run(folder, slo=["p99_ttft_ms=10"])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["settings"]["slo"] == {"p99_ttft_ms": 10.0} and summary["settings"]["slo_source"] == "report"
    assert "the SLOs fail already at the lowest level measured, c=1" in (folder / "report.md").read_text()


def test_without_slos_the_report_says_there_is_no_capacity(tmp_path):
    folder = campaign(tmp_path, slo={})
    run(folder)
    assert "No SLO was set (campaign_slo)" in (folder / "report.md").read_text()


def stacked_campaign(tmp_path, stack_outputs, drift=1.0):
    """baseline, two candidates that stack (--fast, --lean), and the stack of both measured after the matrix beside
    the baseline measured again, on a host whose throughput changed by `drift` since the matrix."""
    again = [[round(out * drift, 1) for out in outs] for outs in ((100, 101, 99), (300, 303, 297))]
    cells = [with_launch(cell("baseline", 0, levels=trials(1, 100, 101, 99) + trials(4, 300, 303, 297)),
                         ["--enforce-eager"]),
             with_launch(cell("helps", 1, levels=trials(1, 130, 131, 129) + trials(4, 390, 393, 387)),
                         ["--enforce-eager", "--fast"]),
             with_launch(cell("lean", 2, levels=trials(1, 110, 111, 109) + trials(4, 330, 333, 327)),
                         ["--enforce-eager", "--lean"]),
             with_launch(cell("baseline_stack", 3, levels=trials(1, *again[0]) + trials(4, *again[1])),
                         ["--enforce-eager"]),
             with_launch(cell("stack", 4, levels=trials(1, *stack_outputs[0]) + trials(4, *stack_outputs[1])),
                         ["--enforce-eager", "--fast", "--lean"])]
    cells[-2]["baseline_of"] = "stack"
    cells[-1]["stacked"] = {"composes": ["helps", "lean"], "proposed_by": "c1", "baseline": "baseline_stack"}
    return write_campaign(tmp_path, cells)


def test_a_measured_stack_opens_the_report_with_its_gain_and_its_lead_over_the_best_single_candidate(tmp_path):
    folder = stacked_campaign(tmp_path, [(150, 151, 149), (450, 453, 447)])
    assert run(folder) == 0
    recommendation = yaml.safe_load((folder / "recommended.yml").read_text())
    assert recommendation["status"] == "measured as a stack" and recommendation["stack"] == ["helps", "lean"]
    markdown = (folder / "report.md").read_text()
    section = markdown.split("## Campaign")[0]
    assert "Status: measured as a stack" in section
    assert "Measured as one launch (helps + lean, on h1) against the baseline measured again beside it" in section
    assert "+50.0 %" in section
    assert "against helps alone" in section and "improved" in section
    html = (folder / "report.html").read_text()
    assert 'id="recommendation-measured"' in html and "+50.0 %" in html


def test_a_stack_no_better_than_the_best_single_candidate_says_so_in_the_report(tmp_path):
    folder = stacked_campaign(tmp_path, [(130, 131, 129), (390, 393, 387)])
    assert run(folder) == 0
    recommendation = yaml.safe_load((folder / "recommended.yml").read_text())
    assert recommendation["outcome"] == "best_single" and recommendation["stack"] == ["helps"]
    section = (folder / "report.md").read_text().split("## Campaign")[0]
    assert "not better than the best single candidate helps" in section and "stack_not_better" in section


def test_the_greedy_search_is_listed_step_by_step(tmp_path):
    from fleetopt.report.markdown import recommendation_text
    proposal = {"status": "measured as a stack, found greedily", "stack": ["a", "b"], "candidates": [], "slo": {},
                "verdict_metric": "output_throughput", "inventory": {}, "launch": {"command": None}, "left_out": [],
                "measured": None, "search": {"kind": "greedy", "kept": ["a", "b"], "next": None, "steps": [
                    {"composes": ["a", "b"], "against": "a", "verdict": "improved", "reason": "+9 %", "kept": True,
                     "compared": "as effects, each against the baseline of its own stage: stack_2 against "
                                 "baseline_stack_2, a against baseline"},
                    {"composes": ["a", "b", "c"], "against": "stack_2", "verdict": "neutral", "reason": "+0 %",
                     "kept": False}]}}
    text = recommendation_text(proposal)
    assert "Greedy search" in text and "a + b + c" in text and "kept" in text and "not kept" in text
    assert "stack_2 against baseline_stack_2, a against baseline" in text


def test_the_report_names_the_baseline_the_stack_was_compared_with_and_the_drift_since_the_matrix(tmp_path):
    # The host is 10 % faster in the stack stage; the stack gains 50 % beside the baseline measured there.
    folder = stacked_campaign(tmp_path, [(165, 166.1, 163.9), (495, 498.3, 491.7)], drift=1.1)
    assert run(folder) == 0
    section = (folder / "report.md").read_text().split("## Campaign")[0]
    assert "against the baseline measured again beside it in the stack stage (baseline_stack)" in section, section
    assert "+50.0 %" in section and "+10.0 %" in section and "drift" in section
    assert "compared as effects, each against the baseline of its own stage: stack against baseline_stack, helps " \
           "against baseline" in section, section
    verdicts = (folder / "report.md").read_text().split("## Verdicts")[1].split("## Capacity")[0]
    row = next(line for line in verdicts.splitlines() if line.startswith("| baseline_stack"))
    assert "the baseline measured again beside stack, against the matrix's: the drift between the stages" in row, row
    matrix = (folder / "report.md").read_text().split("## Matrix")[1]
    assert "vs baseline_stack" in matrix, "a row compared with its stage's baseline says so in the matrix"
    header = (folder / "recommended.yml").read_text().splitlines()[1]
    assert header.startswith("# The stack was measured against the baseline measured again beside it"), header
    html = (folder / "report.html").read_text()
    assert "baseline_stack" in html.split('id="recommendation-measured"')[1].split("</p>")[0]
