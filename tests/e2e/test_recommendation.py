"""The recommendation measured (`fleetopt run --recommend`) with planted candidates of known effect, on the
scripted engine (tests/scripted_engine), which serves at most --max-num-seqs requests at once at a set time per
token. The baseline is weakened to one sequence per step (`--max-num-seqs 1` through campaign_server_flags) and
measured at concurrency 4:

- restore_seqs (`--max-num-seqs 4`) serves all four requests at once: four times the baseline's output throughput;
- two_seqs (`--max-num-seqs 2`) serves two: twice. It changes the same flag to another value: the two conflict, and
  only one of them can be in the stack.

So the recommendation must hold restore_seqs, the improved candidate of larger measured effect, and leave out
two_seqs as conflicting, naming the one kept and the flag. The stack stage measures the kept helper again in a launch
of its own (the stacked variant) beside the baseline measured again after the matrix (baseline_stack), and the
stack's gain is against that baseline, not the matrix's: its change is the ratio of the two cells' means, and its
interval excludes 0. Running the campaign again resumes it: nothing is measured again, the stack and the baseline
beside it included.

The same campaign searches capacity under a TTFT SLO (issue 13), with no launch of its own. A request of the weakened
baseline takes r = 0.64 s (32 tokens, 20 ms each); at concurrency c it waits behind the c - 1 requests before it, so
its TTFT is about (c - 1) r. The SLO of 500 ms sits where a loaded host cannot move a level across it: c=1 holds it by
the whole SLO less one token's time (a busy host only adds its delay to that), and c=2 (0.64 s) and above break it
by at least r, which a busy host can only lengthen. Its search from the planned c=4 bisects to c=2, which breaks,
then c=1, which holds: capacity c=1. restore_seqs holds the SLO at c=4, the search's ceiling (TTFT one token's
time). The report's verdict taken on capacity (`fleetopt report --verdict-metric capacity`, on a copy) finds
restore_seqs improved.

A loss left out for its own verdict is measured on the real engine by tests/e2e/test_campaign.py (tier 1) and judged
by the unit tests (tests/unit/test_recommend*.py)."""
import json
import shutil

import pytest
import yaml

from e2e.conftest import isolated, run_fleetopt
from helpers import free_port
from scripted_engine import engine_python, launches

CAMPAIGN = "e2e-recommend"
PLANTED = [
    {"id": "restore_seqs", "title": "Planted helper: four sequences per step again", "tier": 9,
     "flags": {"--max-num-seqs": 4}},
    {"id": "two_seqs", "title": "Planted conflict: two sequences per step", "tier": 9, "flags": {"--max-num-seqs": 2}},
]
HELPERS = {p["id"]: p["flags"]["--max-num-seqs"] for p in PLANTED}
WEAKENED = {"campaign_server_flags": {"--max-model-len": 1024, "--max-num-seqs": 1},
            "campaign_extra_optimizations": PLANTED}
# The capacity search, folded into this campaign so that it costs no launch of its own (see the docstring for where
# the weakened baseline breaks this SLO). A ceiling at the planned level: a variant that holds at c=4 stops there.
SLO = {"p99_ttft_ms": 500}
SEARCH_LEVELS = 2
CAPACITY_SEARCH = {"campaign_slo": SLO, "campaign_capacity_search_levels": SEARCH_LEVELS,
                   "campaign_capacity_max_concurrency": 4}
OUTPUT_LEN = {"campaign_bench_output_len": 32}
SCENARIO = {"ttft_s": 0.02, "per_token_s": 0.02}
# Sequential trials where a level's three trials spread (the interval of its mean wider than 15 %).
TRIALS = {"campaign_bench_max_trials": 5, "campaign_bench_target_halfwidth_pct": 15}


def campaign(base, port, python):
    return run_fleetopt("run", "--only", ",".join(p["id"] for p in PLANTED), "--recommend",
                        *isolated(base, port, CAMPAIGN, trials=3, concurrency=(4,), engine_python=python),
                        "-e", json.dumps(dict(WEAKENED, **CAPACITY_SEARCH, **OUTPUT_LEN, **TRIALS)))


@pytest.fixture(scope="module")
def measured(tmp_path_factory, local_engine):
    base = tmp_path_factory.mktemp("recommend")
    port = free_port()
    scenario = dict(SCENARIO, launches_file=str(base / "launches"))
    python = engine_python(base / "engine", scenario, local_engine["real_python"])
    rc, output = campaign(base, port, python)
    assert rc == 0, output[-6000:]
    folder = base / "results" / CAMPAIGN
    return {"base": base, "port": port, "folder": folder, "output": output, "python": python, "scenario": scenario,
            "recommendation": yaml.safe_load((folder / "recommended.yml").read_text())}


def test_the_recommendation_holds_the_helper_of_larger_effect_and_leaves_out_the_conflict_with_the_right_reason(
        measured):
    recommendation, variants = measured["recommendation"], summary_of(measured["folder"])
    assert recommendation["stack"] == ["restore_seqs"], recommendation
    assert variants["restore_seqs"]["verdict"] == "improved" and variants["two_seqs"]["verdict"] == "improved", variants
    assert recommendation["inventory"]["campaign_server_flags"]["--max-num-seqs"] == 4
    out = {entry["id"]: entry for entry in recommendation["left_out"]}
    assert set(out) == {"two_seqs"}, out
    assert out["two_seqs"]["why"] == "conflicting" and "restore_seqs" in out["two_seqs"]["reason"] \
        and "--max-num-seqs" in out["two_seqs"]["reason"], out
    summary = json.loads((measured["folder"] / "summary.json").read_text())
    metric = recommendation["verdict_metric"]
    # Four requests at once against one (+300 %) and two against one (+100 %), less the client's time between requests.
    assert measured_effect(summary, "restore_seqs", metric) > 250, summary["cells"]
    assert 80 < measured_effect(summary, "two_seqs", metric) < 110, summary["cells"]


def measured_effect(summary, variant, metric):
    """A candidate's measured effect, as the recommendation orders them: its largest change at a level whose verdict
    is improved."""
    rows = [row for row in summary["cells"] if row["variant"] == variant and row["status"] == "ok"
            and (row.get("vs_baseline") or {}).get(metric)]
    return max(row["vs_baseline"][metric]["change_pct"] for row in rows if row["verdict"] == "improved")


def cells_of(measured):
    return {path.stem: json.loads(path.read_text()) for path in (measured["folder"] / "cells" / "localhost").glob("*.json")}


def mean_output(cell, concurrency=4):
    runs = [lv["metrics"]["output_throughput"] for lv in cell["levels"]
            if lv["status"] == "ok" and lv.get("metrics") and lv["concurrency"] == concurrency]
    return sum(runs) / len(runs)


def test_the_stack_was_measured_beside_the_baseline_measured_again_after_the_matrix(measured):
    recommendation = measured["recommendation"]
    assert recommendation["status"] == "measured as a stack" and recommendation["outcome"] == "stack", recommendation
    stack = recommendation["measured"]
    assert stack["composes"] == recommendation["stack"] and stack["verdict"] == "improved", stack
    assert stack["gain"]["ci_low_pct"] > 0, stack["gain"]
    assert stack["baseline"] == "baseline_stack", stack
    assert stack["against"] == "the baseline measured again beside it in the stack stage (baseline_stack)"
    cells = cells_of(measured)
    cell, again = cells["stack"], cells["baseline_stack"]
    assert cell["status"] == "ok" and cell["stacked"]["composes"] == recommendation["stack"]
    assert cell["stacked"]["baseline"] == "baseline_stack"
    assert cell["launch"]["flags"]["--max-num-seqs"] == HELPERS[recommendation["stack"][0]]
    assert again["status"] == "ok" and again["baseline_of"] == "stack" and again["launch"]["flags"]["--max-num-seqs"] == 1
    # Launched after the matrix, just before the stack (one launch each: baseline again, then stack).
    matrix = [c["measured_at"] for name, c in cells.items() if name in ("baseline", "restore_seqs", "two_seqs")]
    assert max(matrix) < again["measured_at"] < cell["measured_at"], (matrix, again["measured_at"], cell["measured_at"])
    # The gain is the stack against that baseline: the ratio of the two cells' means, not of the matrix's baseline.
    expected = (mean_output(cell) / mean_output(again) - 1) * 100
    assert stack["gain"]["change_pct"] == pytest.approx(expected, abs=0.01), (stack["gain"], expected)
    markdown = (measured["folder"] / "report.md").read_text()
    section = markdown.split("## Campaign")[0]
    assert "**Status: measured as a stack.**" in section
    assert "against the baseline measured again beside it in the stack stage (baseline_stack)" in section


def summary_of(folder):
    return {v["variant"]: v for v in json.loads((folder / "summary.json").read_text())["variants"]}


def test_capacity_is_found_within_the_level_budget_and_the_slower_baseline_has_less(measured):
    cells, variants = cells_of(measured), summary_of(measured["folder"])
    for name, cell in cells.items():
        search = cell["benchmark"]["capacity_search"]
        assert search["budget"] == SEARCH_LEVELS and len(search["levels"]) <= SEARCH_LEVELS, (name, search)
        assert cell["benchmark"]["slo"] == SLO
        assert variants[name]["capacity"]["capacity"] is not None, (name, variants[name]["capacity"]["reason"])
    base, helper = variants["baseline"]["capacity"], variants["restore_seqs"]["capacity"]
    # restore_seqs holds the SLO at c=4, the search's ceiling here: at least c=4.
    assert cells["restore_seqs"]["benchmark"]["capacity_search"]["stopped_by"] == "ceiling"
    assert (helper["capacity"], helper["at_least"]) == (4, True), helper
    # The baseline, and the baseline measured again, break it at c=4 and bisect below it within the budget: c=2, which
    # breaks, then c=1, which holds. Capacity c=1.
    for name in ("baseline", "baseline_stack"):
        levels, found = cells[name]["benchmark"]["capacity_search"]["levels"], variants[name]["capacity"]
        assert levels == [2, 1], (name, cells[name]["benchmark"]["capacity_search"])
        assert found["capacity"] == 1 and not found["at_least"], (name, found)
        assert found["searched"] == sorted(levels), (name, found)
    assert base["capacity"] < helper["capacity"]


def test_the_verdict_taken_on_capacity_finds_the_helper_improved(measured, tmp_path):
    # The report again on a copy of the campaign, its verdicts on capacity: nothing measured again.
    copy = tmp_path / CAMPAIGN
    shutil.copytree(measured["folder"], copy)
    rc, output = run_fleetopt("report", str(copy), "--verdict-metric", "capacity")
    assert rc == 0, output[-3000:]
    helper = summary_of(copy)["restore_seqs"]
    assert "On capacity under the SLOs" in (copy / "report.md").read_text()
    assert helper["verdict"] == "improved", helper["verdict_reason"]
    # Decided where the variant holds c=4 and the baseline breaks the SLO: at c=4, or at c=2 where its search
    # bisected and its runs all broke it.
    deciding = [(d["side"], d["concurrency"], d["judged"]) for d in helper["capacity_comparison"]["deciding"]]
    assert deciding in ([("variant", 4, "holds"), ("baseline", 4, "breaks")],
                        [("variant", 4, "holds"), ("baseline", 2, "breaks")]), deciding


def test_a_resumed_campaign_measures_nothing_again_the_stack_included(measured):
    cells = measured["folder"] / "cells" / "localhost"
    before = {path.stem: json.loads(path.read_text())["measured_at"] for path in cells.glob("*.json")}
    assert set(before) == {"baseline", "restore_seqs", "two_seqs", "baseline_stack", "stack"}, before
    started = len(launches(measured["scenario"]))
    rc, output = campaign(measured["base"], measured["port"], measured["python"])
    assert rc == 0, output[-6000:]
    assert len(launches(measured["scenario"])) == started, "the resumed campaign launched a server"
    after = {path.stem: json.loads(path.read_text())["measured_at"] for path in cells.glob("*.json")}
    assert after == before, "a resumed campaign measured again: %s" % sorted(k for k in after if after[k] != before.get(k))
    assert yaml.safe_load((measured["folder"] / "recommended.yml").read_text())["status"] == "measured as a stack"
