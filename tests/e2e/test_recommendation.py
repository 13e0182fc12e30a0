"""The recommendation measured, on the embedded default with planted candidates of known direction
(`fleetopt run --recommend`). The baseline is weakened to one sequence per step (`--max-num-seqs 1` through
campaign_server_flags) and measured at concurrency 4, where vLLM would batch all four requests:

- restore_seqs (`--max-num-seqs 4`) helps: four sequences per step again (issue 12 measured the opposite change at
  about -50 %);
- two_seqs (`--max-num-seqs 2`) helps too (+49 % measured here), and changes the same flag to another value: the two
  conflict, and only one of them can be in the stack.

Which of the two has the larger measured effect is the host's to say. On two idle cores here restore_seqs did (the
stack +144 %), but CI once kept two_seqs, its measured effect +43.6 % [+20.7, +66.6] at c=3 (a level its capacity
search added, which restore_seqs never measured). So the test does not name the winner: it checks that the
recommendation holds the improved one of larger measured effect (the order the recommendation documents: the largest
change at any of its levels) and leaves out the other as conflicting, naming the one kept and the flag; or, when the
host's noise left the other short of improved (seen once here: +48.9 % [-7.5, +105.2], CV 16.5 % over 3 trials on two
loaded cores), for its own verdict, never stacked.

The stack stage measures the kept helper again in a launch of its own (the stacked variant) beside the baseline
measured again after the matrix (baseline_stack), and the stack's gain is against that baseline, not the matrix's:
its change is the ratio of the two cells' means, and its interval excludes 0. Running the campaign again resumes it:
nothing is measured again, the stack and the baseline beside it included. A loss left out for its own verdict is
measured on the real engine by tests/e2e/test_campaign.py (omp_threads_unbound, tier 1) and judged by the unit tests
(tests/unit/test_recommend*.py); this campaign no longer carries one, which saved a launch and three levels of CI's
time.

The same campaign searches capacity under a tight TTFT SLO (issue 13), with no launch of its own: the slower
baseline's capacity is found within the search's budget, below restore_seqs', and the report's verdict taken on
capacity (`fleetopt report --verdict-metric capacity`, on a copy) finds restore_seqs improved.

Cost: 5 engine launches (baseline, the 2 candidates, the baseline again, the stack), one planned level (c=4) each, 3
trials (up to 5 where they spread), no A/A, few prompts (SINGLE_LAUNCH, FEW_PROMPTS) of 96 output tokens (OUTPUT_LEN
below; FEW_PROMPTS has 64), and two searched levels for each cell that breaks the SLO at c=4 (the baseline and the
baseline measured again); the resumed run launches nothing, only Ansible's pass over the kept cells. With the planted
loss as well (6 launches), measured on two otherwise idle cores: 661 s, when this host ran about twice as fast as in
the earlier runs (the baseline's p99 TTFT at c=4 1.49-2.06 s against 2.63-3.42 s), and 698 s in CI's quiet phase of a
later run; capacities then: the baseline and the baseline measured again c=2 (c=3 straddled the SLO, 1 and 2 of 5
runs met it), restore_seqs, two_seqs and the stack at least c=4. Earlier, with one searched level and an 1800 ms SLO:
793, 646 and 661 s; the stack measured +144.0 % [+124.2, +163.8] against baseline_stack."""
import json
import shutil

import pytest
import yaml

from e2e.conftest import isolated, run_fleetopt
from helpers import free_port

CAMPAIGN = "e2e-recommend"
PLANTED = [
    {"id": "restore_seqs", "title": "Planted helper: four sequences per step again", "tier": 9,
     "flags": {"--max-num-seqs": 4}},
    {"id": "two_seqs", "title": "Planted conflict: two sequences per step", "tier": 9, "flags": {"--max-num-seqs": 2}},
]
HELPERS = {p["id"]: p["flags"]["--max-num-seqs"] for p in PLANTED}
WEAKENED = {"campaign_server_flags": {"--max-model-len": 1024, "--max-num-seqs": 1},
            "campaign_extra_optimizations": PLANTED}
# The capacity search, folded into this campaign so that it costs no launch of its own: a tight TTFT SLO that the
# weakened baseline (one sequence per step: at c=4 a request waits for the three before it, about 3 requests' time)
# breaks at c=4 and that restore_seqs (four sequences per step: a request waits for about one step) holds there.
# The SLO has to hold on hosts of different speeds: CI once ran this test on a host fast enough for the baseline to
# hold 1800 ms at c=4, so it sits between the two variants' p99 TTFT at c=4, the widest gap the design has. Two levels
# of search per launch find the baseline's capacity below c=4: c=2, then c=1 where c=2 breaks or c=3 where it holds.
# A ceiling at the planned level: a variant that holds at c=4 stops there (c=8 would cost 32 prompts a trial).
SLO = {"p99_ttft_ms": 1000}
# Where that SLO falls is set by the time r of one request of the weakened baseline, which grows with the output's
# length. Its TTFT at c=4 is the wait behind the requests queued before it: the mean of its runs' p99 was 3-7 r.
# At c=1 it waits for none, but in most runs one request's tokens reached the client in one burst at its end (the
# API server short of CPU beside the engine and the client on two cores): a p99 of about r, the mean of the runs
# 0.95-1.0 r. restore_seqs' TTFT at c=4 is one step's, whatever the length: 36-93 ms, with one run in four or five
# near a stall of 0.3-2.1 s. So the test holds for r between about a third of the SLO (3 r above it at c=4) and the
# SLO itself (r at c=1), 0.33-1 s. With 64-token outputs r was 0.26-0.29 s on one host (its baseline measured again
# held 1000 ms at c=4 on the mean, 945 ms: the failure that set this) and about 0.35 s on a later one; 96-token outputs
# put r at 0.4-0.5 s on them, inside the range with a margin either way.
OUTPUT_LEN = {"campaign_bench_output_len": 96}
SEARCH_LEVELS = 2
CAPACITY_SEARCH = {"campaign_slo": SLO, "campaign_capacity_search_levels": SEARCH_LEVELS,
                   "campaign_capacity_max_concurrency": 4}
# Sequential trials for a cell whose three trials spread: CI once measured the stack at CV 20 % over 3 trials, and
# its +55 % against the baseline measured again stayed inconclusive ([-20, +131]). Up to 5 trials narrow that; a
# level whose 3 trials agree (the interval of its mean within 15 %) gets none.
TRIALS = {"campaign_bench_max_trials": 5, "campaign_bench_target_halfwidth_pct": 15}


def campaign(base, port):
    return run_fleetopt("run", "--only", ",".join(p["id"] for p in PLANTED), "--recommend",
                        *isolated(base, port, CAMPAIGN, trials=3, concurrency=(4,)),
                        "-e", json.dumps(dict(WEAKENED, **CAPACITY_SEARCH, **OUTPUT_LEN, **TRIALS)))


@pytest.fixture(scope="module")
def measured(tmp_path_factory, local_engine):
    base = tmp_path_factory.mktemp("recommend")
    port = free_port()
    rc, output = campaign(base, port)
    assert rc == 0, output[-6000:]
    folder = base / "results" / CAMPAIGN
    return {"base": base, "port": port, "folder": folder, "output": output,
            "recommendation": yaml.safe_load((folder / "recommended.yml").read_text())}


def test_the_recommendation_holds_the_helper_of_larger_effect_and_leaves_out_the_conflict_with_the_right_reason(
        measured):
    recommendation, variants = measured["recommendation"], summary_of(measured["folder"])
    stack = recommendation["stack"]
    assert len(stack) == 1 and stack[0] in HELPERS, recommendation
    [kept], [other] = stack, set(HELPERS) - set(stack)
    assert variants[kept]["verdict"] == "improved", variants[kept]
    assert recommendation["inventory"]["campaign_server_flags"]["--max-num-seqs"] == HELPERS[kept]
    out = {entry["id"]: entry for entry in recommendation["left_out"]}
    assert set(out) == {other}, out
    verdict = variants[other]["verdict"]
    if verdict == "improved":
        assert out[other]["why"] == "conflicting" and kept in out[other]["reason"] \
            and "--max-num-seqs" in out[other]["reason"], out
        summary = json.loads((measured["folder"] / "summary.json").read_text())
        metric = recommendation["verdict_metric"]
        assert measured_effect(summary, kept, metric) >= measured_effect(summary, other, metric), (out, summary["cells"])
    else:  # the noise left it short of a candidate: left out for its own verdict, never stacked
        assert verdict in ("inconclusive", "neutral") and out[other]["why"] in ("inconclusive", "not_significant"), \
            (verdict, out)


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
    # The baseline, and the baseline measured again, break it at c=4 and bisect below it within the budget: c=2,
    # then c=1 (c=2 broke) or c=3 (c=2 held). Capacity found below c=4, whatever the host's speed.
    for name in ("baseline", "baseline_stack"):
        levels, found = cells[name]["benchmark"]["capacity_search"]["levels"], variants[name]["capacity"]
        assert levels in ([2, 1], [2, 3]), (name, cells[name]["benchmark"]["capacity_search"])
        assert found["capacity"] in (1, 2, 3) and not found["at_least"], (name, found)
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
    if helper["verdict"] == "inconclusive":
        # p99 TTFT near the SLO where the verdict is decided, on either side: the baseline's trials straddling it at
        # every level it broke, or restore_seqs' at c=4 (seen here once: 3 of 5 runs met it, the others took up to
        # 1.06 s). The rule then takes no judgement that decides the verdict, says what the means alone would give,
        # and names each judgement that is not firm, with why.
        reason = helper["verdict_reason"]
        weak = [d for d in helper["capacity_comparison"]["deciding"] if not d["firm"]]
        assert reason.startswith("on the means it would be improved") and weak, reason
        for judgement in weak:
            assert "the %(side)s at c=%(concurrency)s (%(judged)s): %(why)s" % judgement in reason, (judgement, reason)
        return
    assert helper["verdict"] == "improved", helper["verdict_reason"]
    # Decided where the variant holds c=4 and the baseline breaks the SLO: at c=4, or at c=3 where its search
    # bisected and its runs all broke it.
    deciding = [(d["side"], d["concurrency"], d["judged"]) for d in helper["capacity_comparison"]["deciding"]]
    assert deciding in ([("variant", 4, "holds"), ("baseline", 4, "breaks")],
                        [("variant", 4, "holds"), ("baseline", 3, "breaks")]), deciding


def test_a_resumed_campaign_measures_nothing_again_the_stack_included(measured):
    cells = measured["folder"] / "cells" / "localhost"
    before = {path.stem: json.loads(path.read_text())["measured_at"] for path in cells.glob("*.json")}
    assert set(before) == {"baseline", "restore_seqs", "two_seqs", "baseline_stack", "stack"}, before
    rc, output = campaign(measured["base"], measured["port"])
    assert rc == 0, output[-6000:]
    after = {path.stem: json.loads(path.read_text())["measured_at"] for path in cells.glob("*.json")}
    assert after == before, "a resumed campaign measured again: %s" % sorted(k for k in after if after[k] != before.get(k))
    assert yaml.safe_load((measured["folder"] / "recommended.yml").read_text())["status"] == "measured as a stack"
