"""A stack measured after the matrix is compared with the baseline its own stage measured beside it
(fleetopt/analysis/summary.py), never with the matrix's, which may be hours older: a drift of the host between the two
stages would pose as the stack's effect. The baseline measured again is itself compared with the matrix's
baseline, and that comparison is the drift."""
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, trials


def levels(factor):
    return trials(4, *(100.0 * factor * spread for spread in (0.99, 1.0, 1.01)))


def campaign(stage_baseline, stack):
    return [cell("baseline", levels=levels(1.0)),
            cell("baseline_stack", levels=levels(stage_baseline), order=1, baseline_of="stack"),
            cell("stack", levels=levels(stack), order=2, stacked={"composes": ["a", "b"], "baseline": "baseline_stack"})]


def summarize(tmp_path, cells):
    return build_summary(tmp_path / "c1", cells, min_effect_pct=5.0)


def variant(summary, name):
    return next(v for v in summary["variants"] if v["variant"] == name)


def test_a_stack_is_compared_with_the_baseline_measured_beside_it(tmp_path):
    # The host got 30 % faster since the matrix: the stack measures 1.3 times the matrix's baseline, and exactly
    # what its own stage's baseline measured. Against the matrix's baseline the drift would be its "gain".
    summary = summarize(tmp_path, campaign(1.3, 1.3))
    stack = variant(summary, "stack")
    assert stack["verdict"] == "neutral" and stack["baseline_variant"] == "baseline_stack", stack
    row = next(r for r in summary["cells"] if r["variant"] == "stack")
    assert row["baseline_variant"] == "baseline_stack"
    assert abs(row["vs_baseline"]["output_throughput"]["change_pct"]) < 1.0
    drift = variant(summary, "baseline_stack")
    assert drift["baseline_of"] == "stack" and drift["baseline_variant"] == "baseline"
    assert drift["verdict"] == "improved", "the stage's baseline against the matrix's is the drift, shown as measured"


def test_a_stack_whose_stage_baseline_measured_nothing_is_not_compared_with_the_matrix_baseline(tmp_path):
    cells = campaign(1.0, 1.3)
    cells[1] = cell("baseline_stack", status="crashed", reason="out of memory", order=1, baseline_of="stack")
    stack = variant(summarize(tmp_path, cells), "stack")
    assert stack["verdict"] == "inconclusive" and "baseline_stack" in stack["verdict_reason"], stack


def test_every_other_variant_is_still_compared_with_the_matrix_baseline(tmp_path):
    summary = summarize(tmp_path, campaign(1.0, 1.3) + [cell("helps", levels=levels(1.2), order=3)])
    helps = variant(summary, "helps")
    assert helps["verdict"] == "improved" and helps["baseline_variant"] == "baseline"
    assert variant(summary, "baseline")["verdict"] == "baseline"


def test_the_html_verdict_table_and_the_llmd_description_name_a_stage_baseline(tmp_path):
    from fleetopt.report.html_report import verdict_rows
    from fleetopt.report.llmd_export import describe_row
    summary = summarize(tmp_path, campaign(1.0, 1.3))
    stack = next(v for v in verdict_rows(summary) if v["variant"] == "stack")
    assert stack["levels"][0]["change"].endswith("vs baseline_stack"), stack["levels"]
    row = next(r for r in summary["cells"] if r["variant"] == "stack")
    assert "vs baseline_stack" in describe_row(summary, row)
    helps = next(r for r in summarize(tmp_path, campaign(1.0, 1.3) + [cell("helps", levels=levels(1.2), order=3)])["cells"]
                 if r["variant"] == "helps")
    assert "vs baseline [" in describe_row(summary, helps)
