"""The recommendation once its stack is measured (fleetopt/recommend/proposal.py), on constructed campaigns: the proposal
names the stacked variant to measure and the baseline its stage measures again beside it; a measured stack is
compared with that baseline and, through their effects each against its own stage's baseline, with the best
single candidate, and the status says what was measured; a stack measured in a new campaign verifies an earlier
recommendation. Nothing is claimed without a measurement, and a drift of the host between the matrix and the
stack stage never poses as an effect."""
import math

import pytest
from scipy import stats as sps
import yaml

from fleetopt.recommend import STATUS_PROPOSED, STATUS_STACKED
from fleetopt.recommend.proposal import recommend, write_recommendation
from fleetopt.analysis.summary import build_summary
from summary_cells import cell
from test_recommend import BASE_ENV, BASE_FLAGS, PREFIX, launch, levels, variant

COMPOSES = ["helps", "seqs3", "helps_less"]
STACK_FLAGS = {"--enforce-eager": None, "--max-num-seqs": 3}
STACK_ENV = {"OMP_BIND": "nobind"}


def singles():
    return [
        cell("baseline", levels=levels(1.0), launch=launch(BASE_FLAGS, BASE_ENV), provenance={"engine_version": "0.32.0"}),
        variant("helps", 1.30, flags={"--enforce-eager": None}),
        variant("seqs3", 1.15, flags={"--max-num-seqs": 3}),
        variant("helps_less", 1.10, env={"OMP_BIND": "nobind"}),
        variant("hurts", 0.70, flags={"--max-num-seqs": 1}),
    ]


def stack_cell(factor, composes=COMPOSES, noisy=False, verifies=None, flags=STACK_FLAGS, env=STACK_ENV, name="stack",
               **extra):
    found = variant(name, factor, flags=flags, env=env, noisy=noisy, order=50, **extra)
    found["stacked"] = {"composes": list(composes), "verifies": verifies}
    return found


def staged(factor, drift=1.0, **extra):
    """A stack as the stack stage measures it after the matrix, beside the baseline measured again: `factor` is its
    effect, `drift` how the host changed since the matrix (it scales both)."""
    stack = stack_cell(factor * drift, **extra)
    again = "baseline_%s" % stack["variant"]
    stack["stacked"]["baseline"] = again
    return [cell(again, levels=levels(drift), launch=launch(BASE_FLAGS, BASE_ENV), order=49, baseline_of=stack["variant"],
                 provenance={"engine_version": "0.32.0"}), stack]


def proposal_of(tmp_path, cells):
    return recommend(build_summary(tmp_path / "c1", cells, min_effect_pct=5.0), cells)


def test_the_proposal_names_the_stacked_variant_to_measure(tmp_path):
    proposal = proposal_of(tmp_path, singles())
    assert proposal["status"] == STATUS_PROPOSED and proposal["outcome"] == "proposed"
    stacked = proposal["stacked_variant"]
    assert stacked["id"] == "stack" and stacked["stacked"]["composes"] == COMPOSES
    # The changes against the baseline, as a catalog entry: a removed flag is null, so the plan removes it.
    assert stacked["flags"] == STACK_FLAGS and stacked["env"] == STACK_ENV
    assert proposal["verify_variant"]["flags"] == STACK_FLAGS and proposal["measured"] is None


def test_a_stack_better_than_the_best_single_candidate_is_recommended_as_measured(tmp_path):
    proposal = proposal_of(tmp_path, singles() + staged(1.60))
    assert proposal["status"] == STATUS_STACKED == "measured as a stack" and proposal["outcome"] == "stack"
    assert proposal["stack"] == COMPOSES
    measured = proposal["measured"]
    assert measured["variant"] == "stack" and measured["verdict"] == "improved"
    assert measured["gain"]["change_pct"] == pytest.approx(60.0) and measured["gain"]["ci_low_pct"] > 0
    best = measured["vs_best_single"]
    assert best["id"] == "helps" and best["verdict"] == "improved"
    assert best["gain"]["change_pct"] == pytest.approx((1.6 / 1.3 - 1) * 100, abs=0.1) and best["gain"]["ci_low_pct"] > 0
    assert proposal["inventory"]["campaign_server_flags"] == {"--max-model-len": 1024, "--enforce-eager": None,
                                                              "--max-num-seqs": 3}
    assert proposal["verify_variant"]["stacked"]["composes"] == COMPOSES
    assert proposal["verify_variant"]["stacked"]["verifies"] == "c1"


def two_candidates():
    return [c for c in singles() if c["variant"] != "helps_less"]


def pair(factor, **extra):
    return staged(factor, composes=["helps", "seqs3"], env={}, **extra)


def test_a_stack_no_better_than_the_best_single_candidate_gives_way_to_it(tmp_path):
    proposal = proposal_of(tmp_path, two_candidates() + pair(1.30))
    assert proposal["outcome"] == "best_single" and "not better than the best single candidate" in proposal["status"]
    assert "helps" in proposal["status"]
    assert proposal["stack"] == ["helps"] and [c["id"] for c in proposal["candidates"]] == ["helps"]
    assert proposal["inventory"]["campaign_server_flags"] == {"--max-model-len": 1024, "--enforce-eager": None}
    assert proposal["measured"]["verdict"] == "improved" and proposal["measured"]["vs_best_single"]["verdict"] == "neutral"
    out = {e["id"]: e for e in proposal["left_out"]}
    assert out["seqs3"]["why"] == "stack_not_better" and "helps" in out["seqs3"]["reason"]
    assert proposal["verify_variant"]["flags"] == {"--enforce-eager": None}
    assert proposal["verify_variant"]["stacked"]["composes"] == ["helps"]
    # Two candidates: the stack of both was the only step; there is nothing to search.
    assert proposal["search"] is None


def step_cells(factor, composes, flags, env=None, step=2, drift=1.0):
    found = staged(factor, drift, composes=composes, flags=flags, env=env or {}, name="stack_%d" % step)
    found[1]["stacked"]["search"] = "greedy"
    return found


def test_a_stack_no_better_than_the_best_single_candidate_starts_a_greedy_search(tmp_path):
    proposal = proposal_of(tmp_path, singles() + staged(1.30))
    assert proposal["outcome"] == "searching" and "searching greedily" in proposal["status"]
    # Meanwhile the best measured configuration is recommended: the best single candidate.
    assert proposal["stack"] == ["helps"]
    step = proposal["stacked_variant"]
    assert step["id"] == "stack_2" and step["stacked"]["composes"] == ["helps", "seqs3"]
    assert step["flags"] == {"--enforce-eager": None, "--max-num-seqs": 3} and step["env"] == {}
    assert proposal["search"]["next"] == ["helps", "seqs3"] and proposal["search"]["steps"] == []
    assert {e["id"]: e["why"] for e in proposal["left_out"]}["helps_less"] == "not_yet_searched"


def test_the_greedy_search_ends_with_the_steps_that_improved_significantly(tmp_path):
    kept = step_cells(1.50, ["helps", "seqs3"], {"--enforce-eager": None, "--max-num-seqs": 3})
    proposal = proposal_of(tmp_path, singles() + staged(1.30) + kept)
    # helps + seqs3 + helps_less is the full stack, measured at 1.30: not better than helps + seqs3.
    assert proposal["outcome"] == "stack" and proposal["status"].startswith("measured as a stack")
    assert "greedily" in proposal["status"]
    assert proposal["stack"] == ["helps", "seqs3"] and proposal["search"]["next"] is None
    assert proposal["measured"]["variant"] == "stack_2" and proposal["measured"]["gain"]["ci_low_pct"] > 0
    assert [(s["composes"], s["kept"]) for s in proposal["search"]["steps"]] == [
        (["helps", "seqs3"], True), (["helps", "seqs3", "helps_less"], False)]
    out = {e["id"]: e for e in proposal["left_out"]}
    assert out["helps_less"]["why"] == "stack_not_better" and "helps + seqs3" in out["helps_less"]["reason"]
    assert proposal["inventory"]["campaign_server_flags"] == {"--max-model-len": 1024, "--enforce-eager": None,
                                                              "--max-num-seqs": 3}
    assert proposal["stacked_variant"] is None


def test_the_greedy_search_that_keeps_nothing_recommends_the_best_single_candidate(tmp_path):
    rejected = step_cells(1.30, ["helps", "seqs3"], {"--enforce-eager": None, "--max-num-seqs": 3})
    waiting = proposal_of(tmp_path, singles() + staged(1.30) + rejected)
    assert waiting["outcome"] == "searching" and waiting["search"]["next"] == ["helps", "helps_less"]
    assert waiting["stacked_variant"]["id"] == "stack_3"
    last = step_cells(1.31, ["helps", "helps_less"], {"--enforce-eager": None}, env={"OMP_BIND": "nobind"}, step=3)
    done = proposal_of(tmp_path, singles() + staged(1.30) + rejected + last)
    assert done["outcome"] == "best_single" and done["stack"] == ["helps"] and done["search"]["next"] is None
    assert "the greedy search kept nothing more" in done["status"]
    assert {e["id"]: e["why"] for e in done["left_out"]} == {"hurts": "regressed", "seqs3": "stack_not_better",
                                                             "helps_less": "stack_not_better"}


def test_a_stack_that_regressed_gives_way_to_the_best_single_candidate(tmp_path):
    proposal = proposal_of(tmp_path, two_candidates() + pair(0.80))
    assert proposal["outcome"] == "best_single" and proposal["stack"] == ["helps"]
    assert proposal["measured"]["verdict"] == "regressed" and "regressed" in proposal["status"]


def test_a_crashed_stack_gives_way_to_the_best_single_candidate_and_says_why(tmp_path):
    crashed = cell("stack", status="crashed", reason="out of memory", failure={"failure_class": "cpu_oom"}, order=50)
    crashed["stacked"] = {"composes": ["helps", "seqs3"]}
    proposal = proposal_of(tmp_path, two_candidates() + [crashed])
    assert proposal["outcome"] == "best_single" and proposal["stack"] == ["helps"]
    assert proposal["measured"]["verdict"] == "crashed" and "out of memory" in proposal["status"]


def test_a_stack_that_cannot_be_told_from_the_baseline_is_inconclusive(tmp_path):
    proposal = proposal_of(tmp_path, two_candidates() + pair(1.05, noisy=True))
    assert proposal["outcome"] == "inconclusive" and proposal["status"].startswith("inconclusive")
    assert proposal["measured"]["verdict"] == "inconclusive"
    # Only what was measured is recommended: the best single candidate, measured alone.
    assert proposal["stack"] == ["helps"]


def test_a_stack_of_other_candidates_is_not_taken_for_this_proposal(tmp_path):
    stale = stack_cell(1.60, composes=["helps", "seqs3"], env={})
    proposal = proposal_of(tmp_path, singles() + [stale])
    assert proposal["status"] == STATUS_PROPOSED and proposal["measured"] is None
    assert any("helps, seqs3" in note and "measure" in note for note in proposal["notes"]), proposal["notes"]
    assert "stack" not in {e["id"] for e in proposal["left_out"]}


def test_a_stack_measured_in_a_new_campaign_verifies_the_earlier_recommendation(tmp_path):
    base = singles()[0]
    proposal = proposal_of(tmp_path, [base, stack_cell(1.50, verifies="c0")])
    assert proposal["outcome"] == "stack" and proposal["status"] == STATUS_STACKED
    assert proposal["verifies"] == "c0" and proposal["stack"] == COMPOSES
    assert proposal["measured"]["gain"]["ci_low_pct"] > 0 and proposal["measured"]["vs_best_single"] is None
    assert proposal["inventory"]["campaign_server_flags"] == {"--max-model-len": 1024, "--enforce-eager": None,
                                                              "--max-num-seqs": 3}
    assert proposal["inventory"]["campaign_server_env"] == dict(BASE_ENV, **STACK_ENV)
    assert proposal["launch"]["argv"] == PREFIX + ["--max-model-len", "1024", "--max-num-seqs", "3"]


def test_a_verified_stack_that_does_not_improve_is_not_confirmed(tmp_path):
    base = singles()[0]
    neutral = proposal_of(tmp_path, [base, stack_cell(1.0, verifies="c0")])
    assert neutral["outcome"] == "baseline" and "not confirmed" in neutral["status"]
    assert neutral["stack"] == [] and neutral["inventory"]["campaign_server_flags"] == BASE_FLAGS
    unclear = proposal_of(tmp_path, [base, stack_cell(1.05, verifies="c0", noisy=True)])
    assert unclear["outcome"] == "inconclusive" and unclear["status"].startswith("inconclusive")


def test_the_measured_recommendation_is_written_as_what_it_is(tmp_path):
    proposal = proposal_of(tmp_path, singles() + staged(1.60))
    text = write_recommendation(tmp_path, proposal).read_text()
    assert "measured as a stack" in text.splitlines()[0] and "not yet measured" not in text
    loaded = yaml.safe_load(text)
    assert loaded["measured"]["gain"]["ci_low_pct"] > 0


def test_a_single_candidate_is_measured_again_in_a_launch_of_its_own(tmp_path):
    # The best of several variants overstates its own gain (it was chosen for it): the recommendation's gain
    # comes from a measurement that did not choose it.
    cells = [c for c in singles() if c["variant"] in ("baseline", "helps", "hurts")]
    proposal = proposal_of(tmp_path, cells)
    assert proposal["status"] == "measured: a single optimization, nothing to stack"
    assert proposal["stacked_variant"]["stacked"]["composes"] == ["helps"]
    assert proposal["stacked_variant"]["flags"] == {"--enforce-eager": None}
    again = proposal_of(tmp_path, cells + staged(1.28, composes=["helps"], flags={"--enforce-eager": None}, env={}))
    assert again["status"] == STATUS_STACKED and again["outcome"] == "stack" and again["stack"] == ["helps"]
    assert again["measured"]["gain"]["ci_low_pct"] > 0 and again["measured"]["vs_best_single"] is None


def test_a_single_candidate_that_does_not_improve_when_measured_again_is_not_confirmed(tmp_path):
    cells = [c for c in singles() if c["variant"] in ("baseline", "helps", "hurts")]
    proposal = proposal_of(tmp_path, cells + staged(1.0, composes=["helps"], flags={"--enforce-eager": None}, env={}))
    assert proposal["outcome"] == "inconclusive" and proposal["status"].startswith("inconclusive")
    assert "measured again" in proposal["status"] and proposal["stack"] == []
    assert proposal["inventory"]["campaign_server_flags"] == BASE_FLAGS


def test_the_proposal_names_the_baseline_its_stage_measures_again_beside_the_stack(tmp_path):
    proposal = proposal_of(tmp_path, singles())
    assert proposal["stacked_variant"]["stacked"]["baseline"] == "baseline_stack"
    # A verifying campaign runs no matrix: its baseline is measured in the stack stage itself.
    assert "baseline" not in proposal["verify_variant"]["stacked"]
    step = proposal_of(tmp_path, singles() + staged(1.30))["stacked_variant"]
    assert step["id"] == "stack_2" and step["stacked"]["baseline"] == "baseline_stack_2"


def test_the_baseline_measured_again_is_no_candidate_and_no_left_out_optimization(tmp_path):
    proposal = proposal_of(tmp_path, singles() + staged(1.60, drift=1.2))
    named = {c["id"] for c in proposal["candidates"]} | {e["id"] for e in proposal["left_out"]}
    assert "baseline_stack" not in named, proposal["left_out"]


def test_a_drift_since_the_matrix_does_not_pose_as_the_gain_of_a_candidate_measured_again(tmp_path):
    # The host is 30 % faster in the stack stage; helps, measured again there, gains nothing beside its baseline.
    cells = [c for c in singles() if c["variant"] in ("baseline", "helps", "hurts")]
    proposal = proposal_of(tmp_path, cells + staged(1.0, drift=1.3, composes=["helps"], flags={"--enforce-eager": None},
                                                  env={}))
    assert proposal["outcome"] == "inconclusive" and proposal["stack"] == [], proposal["status"]
    measured = proposal["measured"]
    assert measured["baseline"] == "baseline_stack" and measured["verdict"] == "neutral"
    assert measured["against"] == "the baseline measured again beside it in the stack stage (baseline_stack)"
    assert "baseline_stack" in proposal["status"]
    # The drift itself is on record: the stage's baseline against the matrix's.
    assert measured["baseline_drift"]["change_pct"] == pytest.approx(30.0) and measured["baseline_drift"]["verdict"] == "improved"


def test_a_stack_is_compared_with_the_best_single_candidate_through_their_effects_not_across_stages(tmp_path):
    # The host is 20 % slower in the stack stage: the stack (+60 % beside its own baseline) measures less than helps
    # did in the matrix (+30 %), yet it is better than helps by 1.6 / 1.3.
    proposal = proposal_of(tmp_path, two_candidates() + pair(1.60, drift=0.8))
    assert proposal["outcome"] == "stack" and proposal["status"] == STATUS_STACKED, proposal["status"]
    versus = proposal["measured"]["vs_best_single"]
    assert versus["verdict"] == "improved" and versus["gain"]["change_pct"] == pytest.approx((1.6 / 1.3 - 1) * 100, abs=0.1)
    assert versus["compared"].startswith("as effects, each against the baseline of its own stage: stack against "
                                         "baseline_stack, helps against baseline"), versus["compared"]


def test_a_drift_that_makes_the_stack_measure_more_than_the_best_single_candidate_is_no_gain_over_it(tmp_path):
    # The host is 30 % faster in the stack stage; the stack gains what helps gained, no more.
    proposal = proposal_of(tmp_path, two_candidates() + pair(1.30, drift=1.3))
    assert proposal["outcome"] == "best_single" and proposal["stack"] == ["helps"], proposal["status"]
    assert proposal["measured"]["verdict"] == "improved"
    assert proposal["measured"]["vs_best_single"]["verdict"] == "neutral"


def test_each_greedy_step_is_compared_with_the_kept_configuration_through_their_effects(tmp_path):
    # Step 2's stage ran on a host 20 % slower: helps + seqs3 measured 1.2 times the matrix's baseline, less than
    # helps did (1.3), but 1.5 times the baseline measured beside it.
    kept = step_cells(1.50, ["helps", "seqs3"], {"--enforce-eager": None, "--max-num-seqs": 3}, drift=0.8)
    proposal = proposal_of(tmp_path, singles() + staged(1.30) + kept)
    first, last = proposal["search"]["steps"]
    assert first["kept"] and first["against"] == "helps" and first["verdict"] == "improved", first
    assert "stack_2 against baseline_stack_2, helps against baseline" in first["compared"]
    # The full stack (stage 1) is the last step, compared with stack_2 (stage 2): again each beside its own baseline.
    assert not last["kept"] and "stack against baseline_stack, stack_2 against baseline_stack_2" in last["compared"]
    assert proposal["outcome"] == "stack" and proposal["measured"]["variant"] == "stack_2"
    assert proposal["measured"]["baseline"] == "baseline_stack_2" and proposal["measured"]["gain"]["change_pct"] == \
        pytest.approx(50.0)


def test_a_verifying_campaign_says_its_baseline_was_measured_beside_the_stack(tmp_path):
    proposal = proposal_of(tmp_path, [singles()[0], stack_cell(1.50, verifies="c0")])
    assert proposal["measured"]["baseline"] == "baseline" and proposal["measured"]["baseline_drift"] is None
    assert proposal["measured"]["against"].startswith("the baseline measured beside it in this campaign")


def test_a_stack_measured_without_a_baseline_of_its_stage_says_the_comparison_spans_stages(tmp_path):
    # A stack cell measured before the stack stage measured its own baseline (an older campaign, resumed).
    proposal = proposal_of(tmp_path, two_candidates() + [stack_cell(1.60, composes=["helps", "seqs3"], env={})])
    assert proposal["measured"]["baseline"] == "baseline"
    assert "another stage" in proposal["measured"]["against"] and "drift" in proposal["measured"]["against"]


def test_a_stage_baseline_the_report_synthesized_as_skipped_is_no_left_out_optimization(tmp_path):
    # An interrupted stack stage: the host's plan named the baseline measured again and the stack, and the report
    # wrote skipped cells for both (fleetopt.analysis.hosts), which carry neither baseline_of nor stacked.
    skipped = [cell(name, status="skipped", reason="not run: the campaign ended before this variant", order=50)
               for name in ("baseline_stack", "stack")]
    proposal = proposal_of(tmp_path, singles() + skipped)
    assert "baseline_stack" not in {e["id"] for e in proposal["left_out"]}, proposal["left_out"]


def test_with_the_matrix_launched_twice_the_stack_is_weighed_against_the_best_single_with_the_launch_spread(tmp_path):
    # Trials agree exactly within each launch, launches differ by 1 %: a comparison over trials would have an interval
    # of no width. The stack (one launch, beside its stage's baseline) against helps (two launches, beside the
    # matrix's baseline) is judged from launch means, with the spread of the configurations launched twice.
    twice = [dict(found, levels=levels(factor), launch_number=number, launches=2)
             for found in two_candidates() if found["variant"] != "hurts"
             for number, factor in enumerate((MATRIX[found["variant"]], MATRIX[found["variant"]] * 1.01), start=1)]
    cells = twice + [c for c in two_candidates() if c["variant"] == "hurts"] + pair(1.60)
    versus = proposal_of(tmp_path, cells)["measured"]["vs_best_single"]
    variance, df = math.log(1.01) ** 2 / 2, 3
    gain = math.log(1.60) - math.log(1.30)
    for level in versus["levels"]:
        half = sps.t.ppf(1 - 0.05 / (2 * len(versus["levels"])), df) * math.sqrt(variance * (1 + 1 + 0.5 + 0.5))
        assert level["change_pct"] == pytest.approx(math.expm1(gain) * 100, abs=0.01)
        assert level["ci_low_pct"] == pytest.approx(math.expm1(gain - half) * 100, abs=0.01)
        assert level["ci_high_pct"] == pytest.approx(math.expm1(gain + half) * 100, abs=0.01)
    assert versus["verdict"] == "improved"


MATRIX = {"baseline": 1.0, "helps": 1.30, "seqs3": 1.15}
