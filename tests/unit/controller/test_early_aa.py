"""What a host's A/A says after the first launch of each side (fleetopt.analysis.early_aa, `fleetopt early-aa`), said
while the campaign goes on."""
import argparse
import json

from fleetopt.analysis.early_aa import early_aa, early_aa_text, main
from summary_cells import cell, trials


def write_cells(folder, *cells):
    hosts = folder / "cells"
    for one in cells:
        name = one["variant"] + ("" if one.get("launch_number", 1) == 1 else ".launch%d" % one["launch_number"])
        (hosts / one["host"]).mkdir(parents=True, exist_ok=True)
        (hosts / one["host"] / (name + ".json")).write_text(json.dumps(one))
    return folder


def pair(folder, aa_trials, base_trials=(100.0, 101.0, 99.0), host="h1"):
    return write_cells(folder, cell("baseline", levels=trials(1, *base_trials), host=host, launch_number=1),
                       cell("baseline_aa", levels=trials(1, *aa_trials), host=host, launch_number=1))


def test_a_quiet_pair_resolves_less_than_the_minimum_effect_and_says_the_end_decides(tmp_path):
    result = early_aa(pair(tmp_path, (100.5, 99.5, 100.0)), "h1", min_effect_pct=5.0)
    assert result["status"] == "ok"
    assert [lv["concurrency"] for lv in result["levels"]] == [1]
    assert result["resolves_pct"] < 5.0
    level = result["levels"][0]
    assert level["eq_low_pct"] < level["change_pct"] < level["eq_high_pct"]
    text = early_aa_text(result)
    assert "whether its A/A resolves that is known at the end" in text
    assert "hold the verdicts back" not in text


def test_a_noisy_pair_says_the_gate_will_hold_the_verdicts_back(tmp_path):
    result = early_aa(pair(tmp_path, (70.0, 130.0, 100.0)), "h1", min_effect_pct=5.0)
    assert result["resolves_pct"] > 5.0
    assert "expect the A/A gate to hold the verdicts back" in early_aa_text(result)


def test_only_the_first_launch_of_each_side_and_only_this_host_count(tmp_path):
    folder = pair(tmp_path, (100.5, 99.5, 100.0))
    quiet = early_aa(folder, "h1")["resolves_pct"]
    write_cells(folder, cell("baseline", levels=trials(1, 10.0, 300.0), host="h1", launch_number=2),
                cell("baseline_aa", levels=trials(1, 50.0, 500.0), host="h2", launch_number=1))
    assert early_aa(folder, "h1")["resolves_pct"] == quiet
    assert early_aa(folder, "h2")["status"] == "missing"


def test_a_side_that_did_not_measure_is_said_and_nothing_is_judged(tmp_path):
    folder = write_cells(tmp_path, cell("baseline", levels=trials(1, 100.0, 101.0), launch_number=1),
                         cell("baseline_aa", status="crashed", reason="cuda out of memory", launch_number=1))
    result = early_aa(folder, "h1")
    assert result["status"] == "failed" and result["resolves_pct"] is None
    assert early_aa_text(result) == "h1: no early A/A: baseline_aa: cuda out of memory."


def test_the_command_prints_wrapped_lines(tmp_path, capsys):
    folder = pair(tmp_path, (70.0, 130.0, 100.0))
    assert main(argparse.Namespace(campaign_dir=str(folder), host="h1", verdict_metric="capacity", confidence=0.95,
                                   min_effect=5.0)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 1 and all(len(line) <= 100 for line in lines)
    assert lines[0].startswith("h1, early A/A")
