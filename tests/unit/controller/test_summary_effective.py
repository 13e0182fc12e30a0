"""No silent no-ops: a variant whose server ran its baseline's configuration is `no_effect`, not `neutral`.

The effective configurations are the ones SGLang 0.5.16 stated on the H200 (tests/fixtures/sglang/logs/h200/): the
tiny MLA model's baseline (`--cuda-graph-backend-prefill disabled`) and its variant on the release default, which
SGLang switched off ("Breakable CUDA graph is incompatible with MLA attention; disabling prefill CUDA graph.").
"""
import pathlib

import yaml

from fleetopt.recommend.proposal import recommend
from fleetopt.analysis.summary import build_summary
from summary_cells import cell, trials
import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter

ROOT = pathlib.Path(__file__).resolve().parents[3]
H200 = ROOT / "tests" / "fixtures" / "sglang" / "logs" / "h200"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
LEVELS = trials(1, 100.0, 101.0, 99.0) + trials(4, 300.0, 303.0, 297.0)


def stated(log, version="0.5.16"):
    with open(H200 / log, newline="") as handle:
        effective = get_adapter("sglang", version).effective_config(handle.read(), SPEC)
    return dict(effective, release=version)


def with_effective(variant, effective, changes, **extra):
    found = cell(variant, levels=LEVELS, **extra)
    found["engine"] = "sglang"
    found["launch"] = dict(found["launch"], effective=effective, changes=changes)
    return found


def mla_baseline():
    effective = stated("mla-default-ready.log")
    # The baseline asked for no prefill graphs: the same statement, without the rule's warning.
    effective["statements"] = [s for s in effective["statements"] if not s["overrides"]]
    return with_effective("baseline", effective, [])


def summary_of(cells, tmp_path):
    return build_summary(tmp_path / "c1", cells)


def entry(summary, name):
    return next(v for v in summary["variants"] if v["variant"] == name)


def test_a_variant_whose_server_switched_its_change_off_is_no_effect_with_the_servers_reason(tmp_path):
    variant = with_effective("piecewise_cuda_graph", stated("mla-default-ready.log"), ["prefill_graph"])
    summary = summary_of([mla_baseline(), variant], tmp_path)
    found = entry(summary, "piecewise_cuda_graph")
    assert found["status"] == "no_effect" and found["verdict"] == "no_effect"
    assert found["verdict_reason"] == (
        "the server ran its baseline's setting (prefill_graph=disabled); sglang 0.5.16 said: "
        "\"[2026-12-04 17:26:29] Breakable CUDA graph is incompatible with MLA attention; disabling prefill CUDA "
        "graph.\" (log line 4)")
    # Its measurements are not compared with the baseline's: the same configuration twice is no result.
    rows = [r for r in summary["cells"] if r["variant"] == "piecewise_cuda_graph"]
    assert [(r["status"], r.get("vs_baseline")) for r in rows] == [("no_effect", None)]
    assert found["effective_comparison"]["same"] == ["prefill_graph"]


def test_a_variant_whose_server_ran_the_change_is_compared_and_says_what_else_differed(tmp_path):
    variant = with_effective("piecewise_cuda_graph", stated("call3-piecewise.log"), ["prefill_graph"])
    summary = summary_of([mla_baseline(), variant], tmp_path)
    found = entry(summary, "piecewise_cuda_graph")
    assert found["status"] == "ok" and found["verdict"] != "no_effect"
    comparison = found["effective_comparison"]
    assert (comparison["state"], comparison["differ"]) == ("changed", ["prefill_graph"])
    # The dense model's server was launched with the default memory fraction: the cell says so.
    assert comparison["others"]["mem_fraction_static"] == [0.6, 0.903]


def test_without_a_stated_configuration_nothing_is_decided(tmp_path):
    variant = with_effective("piecewise_cuda_graph", None, ["prefill_graph"])
    summary = summary_of([mla_baseline(), variant], tmp_path)
    found = entry(summary, "piecewise_cuda_graph")
    assert found["status"] == "ok"
    assert found["effective_comparison"]["state"] == "unknown"


def test_the_recommendation_leaves_a_no_effect_variant_out_as_such(tmp_path):
    variant = with_effective("piecewise_cuda_graph", stated("mla-default-ready.log"), ["prefill_graph"])
    proposal = recommend(summary_of([mla_baseline(), variant], tmp_path), [mla_baseline(), variant])
    left_out = {item["id"]: item["why"] for item in proposal["left_out"]}
    assert left_out == {"piecewise_cuda_graph": "no_effect"}


def test_the_report_shows_no_effect_with_the_servers_reason(tmp_path):
    from fleetopt.report.markdown import verdict_table
    variant = with_effective("piecewise_cuda_graph", stated("mla-default-ready.log"), ["prefill_graph"])
    table = verdict_table(summary_of([mla_baseline(), variant], tmp_path)["variants"])
    line = next(row for row in table.splitlines() if row.startswith("| piecewise_cuda_graph"))
    assert "| no_effect " in line
    assert "Breakable CUDA graph is incompatible with MLA attention; disabling prefill CUDA graph." in line
