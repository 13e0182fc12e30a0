"""summary.json under SLOs: goodput beside throughput per level, capacity per variant, the SLOs the cells
were measured under (or the report's own)."""
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, level

SLO = {"p99_ttft_ms": 100.0}


def runs(c, ttfts, out=100.0, goodput=None):
    made = []
    for i, ttft in enumerate(ttfts):
        lv = level(c, out, trial=i + 1)
        lv["metrics"].update(p99_ttft_ms=ttft, request_throughput=10.0, request_goodput=goodput)
        made.append(lv)
    return made


def slo_cell(variant, ladder, slo=SLO, **extra):
    levels = [lv for c, ttfts, goodput in ladder for lv in runs(c, ttfts, goodput=goodput)]
    return cell(variant, levels=levels, benchmark={"concurrency": [1, 4, 8], "trials": 2, "slo": slo}, **extra)


def test_goodput_stands_beside_throughput_and_capacity_per_variant(tmp_path):
    cells = [slo_cell("baseline", [(1, (50, 60), 10.0), (4, (90, 95), 9.0), (8, (300, 400), 2.0)]),
             slo_cell("fast", [(1, (40, 45), 10.0), (4, (50, 60), 10.0), (8, (80, 90), 9.5)])]
    summary = build_summary(tmp_path / "c1", cells)
    assert summary["settings"]["slo"] == SLO and summary["settings"]["slo_source"] == "cells"
    row = next(r for r in summary["cells"] if r["variant"] == "baseline" and r["concurrency"] == 8)
    assert row["metrics"]["request_goodput"] == 2.0 and row["metrics"]["request_throughput"] == 10.0
    assert row["goodput_share"] == 0.2 and row["goodput_slo"] == SLO
    base = next(v for v in summary["variants"] if v["variant"] == "baseline")
    fast = next(v for v in summary["variants"] if v["variant"] == "fast")
    assert base["capacity"]["capacity"] == 4 and base["capacity"]["at_least"] is False
    assert fast["capacity"]["capacity"] == 8 and fast["capacity"]["at_least"] is True


def test_the_report_may_judge_capacity_under_other_slos_than_the_cells_were_measured_under(tmp_path):
    cells = [slo_cell("baseline", [(1, (50, 60), None), (4, (90, 95), None)])]
    summary = build_summary(tmp_path / "c1", cells, slo={"p99_ttft_ms": 70.0})
    assert summary["settings"]["slo"] == {"p99_ttft_ms": 70.0} and summary["settings"]["slo_source"] == "report"
    assert summary["variants"][0]["capacity"]["capacity"] == 1


def test_without_slos_there_is_no_capacity_and_no_goodput(tmp_path):
    summary = build_summary(tmp_path / "c1", [cell("baseline", levels=[level(1, 100.0)])])
    assert summary["settings"]["slo"] == {}
    assert summary["variants"][0]["capacity"]["capacity"] is None
    assert summary["cells"][0]["goodput_share"] is None


def test_an_unmeasured_variant_has_no_capacity_and_says_why(tmp_path):
    cells = [slo_cell("baseline", [(1, (50, 60), 10.0)]),
             cell("broken", status="crashed", reason="CUDA out of memory", benchmark={"slo": SLO})]
    summary = build_summary(tmp_path / "c1", cells)
    broken = next(v for v in summary["variants"] if v["variant"] == "broken")
    assert broken["capacity"]["capacity"] is None and "crashed" in broken["capacity"]["reason"]
