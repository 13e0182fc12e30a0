"""The regression gate: it fails on a regression, and it fails when it could not compare what the
reference holds (a cell that was ok is not ok now, a row or host is missing), naming each."""
import json
import types

import pytest

from fleetopt.analysis import gate
from fleetopt import run
from schema_complete import complete_summary

THROUGHPUT = [100.0, 101.0, 99.0]


def ok_row(host, variant, concurrency, throughput=THROUGHPUT):
    """A measured row as fleetopt.analysis.summary.cell_rows writes it."""
    mean = sum(throughput) / len(throughput)
    return {"variant": variant, "title": variant, "host": host, "failure_class": None, "reason": None,
            "status": "ok", "concurrency": concurrency, "trials": len(throughput),
            "metrics": {"output_throughput": mean}, "stats": {},
            "samples": {"output_throughput": list(throughput)}, "failed_trials": 0, "verdict": None}


def failed_cell_row(host, variant, status="crashed", reason="server exited with code 1"):
    """The single row summary.cell_rows writes for a cell that measured nothing."""
    return {"variant": variant, "title": variant, "host": host, "failure_class": "oom", "reason": reason,
            "status": status, "concurrency": None, "trials": 0, "metrics": {}, "stats": {}, "samples": {},
            "verdict": status}


def failed_level_row(host, variant, concurrency):
    """A row of an ok cell whose every trial at this level failed."""
    return {"variant": variant, "title": variant, "host": host, "failure_class": "benchmark_failed",
            "reason": "timeout", "status": "crashed", "concurrency": concurrency, "trials": 0, "metrics": {},
            "stats": {}, "samples": {}, "verdict": "crashed"}


def summary(rows):
    return complete_summary({"campaign": "c", "hosts": sorted({r["host"] for r in rows}), "variants": [], "cells": rows})


REFERENCE = summary([ok_row("gpu-a", "baseline", 1), ok_row("gpu-a", "baseline", 8),
                     ok_row("gpu-a", "torch_compile", 1), ok_row("gpu-a", "torch_compile", 8),
                     failed_cell_row("gpu-a", "fp8_kv")])


def test_the_same_campaign_passes_with_every_reference_row_compared():
    result = gate.evaluate(REFERENCE, REFERENCE, 5.0)
    assert result["regressions"] == []
    assert result["uncompared"] == []
    assert result["compared"] == 4
    assert result["reference_rows"] == 4
    assert gate.verdict(result) == "pass"


def test_a_reference_cell_that_was_not_ok_is_not_required():
    current = summary([r for r in REFERENCE["cells"] if r["variant"] != "fp8_kv"])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert result["uncompared"] == [] and gate.verdict(result) == "pass"


def test_every_current_cell_crashed_fails_the_gate_naming_each_cell():
    current = summary([failed_cell_row("gpu-a", "baseline"), failed_cell_row("gpu-a", "torch_compile", "timeout",
                                                                           "no ready line in 600 s")])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert result["compared"] == 0
    assert gate.verdict(result) == "incomplete"
    messages = gate.describe(result, 5.0, "ref.json")
    assert any("baseline on gpu-a was ok in the reference and is crashed now (server exited with code 1)" in m
               for m in messages), messages
    assert any("torch_compile on gpu-a was ok in the reference and is timeout now (no ready line in 600 s)" in m
               for m in messages), messages
    assert any("compared 0 of 4 reference rows" in m for m in messages), messages


def test_different_host_names_compare_nothing_and_fail():
    current = summary([dict(r, host="gpu-b") for r in REFERENCE["cells"]])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert result["compared"] == 0
    assert gate.verdict(result) == "incomplete"
    messages = gate.describe(result, 5.0, "ref.json")
    assert any("host gpu-a of the reference is not in this campaign" in m and "--gate-host-map gpu-a=gpu-b" in m
               for m in messages), messages


def test_a_host_map_matches_renamed_hosts():
    current = summary([dict(r, host="gpu-b") for r in REFERENCE["cells"]])
    result = gate.evaluate(current, REFERENCE, 5.0, host_map={"gpu-a": "gpu-b"})
    assert result["compared"] == 4
    assert gate.verdict(result) == "pass"


def test_a_host_map_still_finds_regressions_under_the_current_name():
    current = summary([dict(r, host="gpu-b") for r in REFERENCE["cells"] if r["concurrency"] != 8 or
                       r["variant"] != "torch_compile"] + [ok_row("gpu-b", "torch_compile", 8, [50.0, 51.0, 49.0])])
    result = gate.evaluate(current, REFERENCE, 5.0, host_map={"gpu-a": "gpu-b"})
    assert [(r["host"], r["variant"], r["concurrency"]) for r in result["regressions"]] == [
        ("gpu-b", "torch_compile", 8)]
    assert gate.verdict(result) == "regression"


def test_a_missing_concurrency_level_and_a_failed_level_are_named():
    current = summary([ok_row("gpu-a", "baseline", 1), failed_level_row("gpu-a", "baseline", 8),
                       ok_row("gpu-a", "torch_compile", 1)])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert result["compared"] == 2
    messages = gate.describe(result, 5.0, "ref.json")
    assert any("baseline on gpu-a at concurrency 8 was ok in the reference and is crashed now (timeout)" in m
               for m in messages), messages
    assert any("torch_compile on gpu-a at concurrency 8 is not in this campaign" in m for m in messages), messages
    assert gate.verdict(result) == "incomplete"


def test_a_cell_absent_from_the_current_campaign_is_named():
    current = summary([r for r in REFERENCE["cells"] if r["variant"] == "baseline"])
    result = gate.evaluate(current, REFERENCE, 5.0)
    messages = gate.describe(result, 5.0, "ref.json")
    assert any("torch_compile on gpu-a is not in this campaign" in m for m in messages), messages
    assert gate.verdict(result) == "incomplete"


def test_a_reference_with_nothing_to_compare_fails():
    reference = summary([failed_cell_row("gpu-a", "baseline")])
    result = gate.evaluate(summary([ok_row("gpu-a", "baseline", 1)]), reference, 5.0)
    assert gate.verdict(result) == "incomplete"
    assert any("holds no ok row" in m for m in gate.describe(result, 5.0, "ref.json"))


def test_a_regression_is_still_reported_beside_uncompared_rows():
    current = summary([ok_row("gpu-a", "baseline", 1, [50.0, 51.0, 49.0])])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert len(result["regressions"]) == 1
    assert len(result["uncompared"]) == 2  # baseline at 8 and the torch_compile cell
    assert gate.verdict(result) == "regression"


def test_parse_host_map():
    assert gate.parse_host_map(["a=b", "c=d,e=f"]) == {"a": "b", "c": "d", "e": "f"}
    assert gate.parse_host_map(None) == {}
    with pytest.raises(SystemExit):
        gate.parse_host_map(["a"])
    with pytest.raises(SystemExit):
        gate.parse_host_map(["a=b", "a=c"])


# `fleetopt run`'s gate step: its exit code and what it prints.

def _gate_args(tmp_path, reference, host_map=None):
    (tmp_path / "ref.json").write_text(json.dumps(reference))
    return types.SimpleNamespace(gate_reference=str(tmp_path / "ref.json"), gate_threshold=5.0,
                                 gate_host_map=host_map)


def _campaign(tmp_path, current):
    campaign = tmp_path / "campaign"
    campaign.mkdir()
    (campaign / "summary.json").write_text(json.dumps(current))
    return campaign


def test_run_exits_with_its_own_code_when_every_cell_crashed(tmp_path, capsys):
    current = summary([failed_cell_row("gpu-a", "baseline"), failed_cell_row("gpu-a", "torch_compile")])
    rc = run.check_gate(_gate_args(tmp_path, REFERENCE), _campaign(tmp_path, current))
    assert rc == run.EXIT_GATE_INCOMPLETE
    assert rc not in (run.EXIT_OK, run.EXIT_CAMPAIGN_ERROR, 2, run.EXIT_REGRESSION)
    err = capsys.readouterr().err
    assert "baseline on gpu-a was ok in the reference and is crashed now" in err
    assert "torch_compile on gpu-a was ok in the reference and is crashed now" in err
    assert "compared 0 of 4 reference rows" in err


def test_run_exit_codes_for_renamed_hosts_with_and_without_a_map(tmp_path, capsys):
    current = summary([dict(r, host="gpu-b") for r in REFERENCE["cells"]])
    campaign = _campaign(tmp_path, current)
    assert run.check_gate(_gate_args(tmp_path, REFERENCE), campaign) == run.EXIT_GATE_INCOMPLETE
    assert "host gpu-a of the reference is not in this campaign" in capsys.readouterr().err
    assert run.check_gate(_gate_args(tmp_path, REFERENCE, ["gpu-a=gpu-b"]), campaign) == run.EXIT_OK
    assert "compared 4 of 4 reference rows" in capsys.readouterr().out


def test_run_exit_code_for_a_regression_is_unchanged(tmp_path, capsys):
    current = summary([ok_row("gpu-a", "baseline", 1, [50.0, 51.0, 49.0])] + REFERENCE["cells"][1:])
    rc = run.check_gate(_gate_args(tmp_path, REFERENCE), _campaign(tmp_path, current))
    assert rc == run.EXIT_REGRESSION
    assert "baseline on gpu-a at concurrency 1: output_throughput -50.0 %" in capsys.readouterr().err


def test_run_documents_the_gate_exit_code():
    assert "\n  %d  " % run.EXIT_GATE_INCOMPLETE in run.__doc__


def test_cli_takes_a_host_map():
    from fleetopt import cli
    args = cli.build_parser().parse_args(["run", "--tier", "1", "--gate-reference", "r.json",
                                          "--gate-host-map", "old=new", "--gate-host-map", "a=b"])
    assert gate.parse_host_map(args.gate_host_map) == {"old": "new", "a": "b"}


# Inconclusive comparisons: reported, failing only when asked.

NOISY = [100.0, 80.0, 120.0]


def test_an_inconclusive_row_is_reported_and_passes_by_default():
    current = summary([ok_row("gpu-a", "baseline", 1, NOISY)] + REFERENCE["cells"][1:])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert result["regressions"] == []
    assert [(r["variant"], r["concurrency"]) for r in result["inconclusive"]] == [("baseline", 1)]
    assert "interval width" in result["inconclusive"][0]["reason"]
    assert gate.verdict(result) == "pass"
    assert gate.verdict(result, fail_on_inconclusive=True) == "inconclusive"
    assert any("baseline on gpu-a at concurrency 1: output_throughput inconclusive against the reference" in m
               for m in gate.describe(result, 5.0, "ref.json"))


def test_a_regression_still_fails_beside_inconclusive_rows():
    current = summary([ok_row("gpu-a", "baseline", 1, NOISY), ok_row("gpu-a", "baseline", 8, [50.0, 51.0, 49.0])]
                      + REFERENCE["cells"][2:])
    result = gate.evaluate(current, REFERENCE, 5.0)
    assert len(result["regressions"]) == 1 and len(result["inconclusive"]) == 1
    assert gate.verdict(result, fail_on_inconclusive=True) == "regression"


def test_gate_intervals_are_simultaneous_over_a_variants_levels():
    # -6 %, standard error 1.9 points (df 4): excludes 0 at 95 % (half 5.3), not at 97.5 % (half 6.6).
    ref = [97.67, 100.0, 102.33]
    now = [91.67, 94.0, 96.33]
    single = gate.evaluate(summary([ok_row("a", "v", 1, now)]), summary([ok_row("a", "v", 1, ref)]), 5.0)
    double = gate.evaluate(summary([ok_row("a", "v", 1, now), ok_row("a", "v", 8, ref)]),
                           summary([ok_row("a", "v", 1, ref), ok_row("a", "v", 8, ref)]), 5.0)
    assert single["regressions"] and not double["regressions"]
    first = double["inconclusive"][0]
    assert first["concurrency"] == 1 and first["ci_low_pct"] < single["regressions"][0]["ci_low_pct"]
    assert first["ci_high_pct"] > 0 > single["regressions"][0]["ci_high_pct"]


def test_run_exits_5_on_inconclusive_only_when_asked(tmp_path, capsys):
    current = summary([ok_row("gpu-a", "baseline", 1, NOISY)] + REFERENCE["cells"][1:])
    campaign = _campaign(tmp_path, current)
    args = _gate_args(tmp_path, REFERENCE)
    assert run.check_gate(args, campaign) == run.EXIT_OK
    assert "inconclusive against the reference" in capsys.readouterr().err
    args.fail_on_inconclusive = True
    assert run.check_gate(args, campaign) == run.EXIT_GATE_INCONCLUSIVE == 5
    assert "1 inconclusive comparison(s)" in capsys.readouterr().err
    assert "\n  5  gate inconclusive" in run.__doc__


def test_cli_takes_fail_on_inconclusive():
    from fleetopt import cli
    assert cli.build_parser().parse_args(["run", "--tier", "1", "--fail-on-inconclusive"]).fail_on_inconclusive
    assert not cli.build_parser().parse_args(["run", "--tier", "1"]).fail_on_inconclusive


def launched_twice(host, variant, concurrency, first, second):
    """A row of a campaign that launched the configuration twice: three trials per launch, tight around each mean."""
    row = ok_row(host, variant, concurrency, [first - 0.2, first, first + 0.2, second - 0.2, second, second + 0.2])
    row["sample_launches"] = [1, 1, 1, 2, 2, 2]
    return row


def test_campaigns_that_launched_twice_are_compared_over_launch_means_not_trials():
    # The reference's launches read 100 and 104, today's 95 and 99 (each about 4 % apart, trials 0.2 apart): a 5 %
    # drop that the launch-to-launch spread cannot tell from noise. Over trials it would be a significant regression.
    reference = summary([launched_twice("h", "baseline", 4, 100.0, 104.0)])
    current = summary([launched_twice("h", "baseline", 4, 95.0, 99.0)])
    result = gate.evaluate(current, reference, 3.0)
    assert result["regressions"] == [] and len(result["inconclusive"]) == 1, result
    assert "launch-to-launch CV" in json.dumps(result["inconclusive"]), result["inconclusive"]
    from fleetopt.analysis import stats
    assert stats.compare(current["cells"][0]["samples"]["output_throughput"],
                         reference["cells"][0]["samples"]["output_throughput"], min_effect_pct=3.0)["verdict"] == "regressed"
