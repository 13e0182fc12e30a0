"""The recommendation measured, on the embedded default with planted candidates of known effect
(`fleetopt run --recommend`). The baseline is weakened to one sequence per step (`--max-num-seqs 1` through
campaign_server_flags) and measured at concurrency 4, where vLLM would batch all four requests:

- restore_seqs (`--max-num-seqs 4`) clearly helps: four sequences per step again (issue 12 measured the
  opposite change at about -50 %);
- tiny_prefill_chunks (`--max-num-batched-tokens 2`) clearly hurts: each 64-token prompt is prefilled in 32
  chunks, so a request takes about 96 engine steps instead of 65, and on a model this small a step costs about
  the same whatever it holds (about -30 %);
- two_seqs (`--max-num-seqs 2`) helps too (+49 % measured here), but changes the helper's flag to another
  value: it conflicts with the helper, which has the larger effect. Only an improved optimization is a
  candidate, so when the host's noise leaves its own verdict short of improved (seen once here:
  +48.9 % [-7.5, +105.2], CV 16.5 % over 3 trials on two loaded cores) it is left out for that verdict instead,
  and the test checks that reason.

The recommendation holds the helper alone, leaves out the hurting one as regressed and the conflicting one as
conflicting, and the stack stage measures it again in a launch of its own (the stacked variant, composing
restore_seqs), whose gain over the baseline has an interval that excludes 0. Running the campaign again
resumes it: nothing is measured again, the stack included.

Cost: 5 engine launches (baseline, the 3 candidates, the stack), one level (concurrency 4) each, 3 trials,
no A/A, few prompts (SINGLE_LAUNCH, FEW_PROMPTS); the resumed run launches nothing, only Ansible's pass over
the kept cells. Run once on two cores shared with a CI run: 16 minutes, a launch starting in 65-90 s, 5 of
the minutes spent on an earlier planted loss (PYTHONTRACEMALLOC=1) that never started within the 300 s
start-up limit and was left out as crashed; the stack was measured at +79.5 % [+66.3, +92.7]. The
tiny_prefill_chunks loss that replaced it has not been run yet."""
import json

import pytest
import yaml

from e2e.conftest import isolated, run_fleetopt
from helpers import free_port

CAMPAIGN = "e2e-recommend"
PLANTED = [
    {"id": "restore_seqs", "title": "Planted helper: four sequences per step again", "tier": 9,
     "flags": {"--max-num-seqs": 4}},
    {"id": "tiny_prefill_chunks", "title": "Planted loss: prompts prefilled two tokens at a time", "tier": 9,
     "flags": {"--max-num-batched-tokens": 2}},
    {"id": "two_seqs", "title": "Planted conflict: two sequences per step", "tier": 9, "flags": {"--max-num-seqs": 2}},
]
WEAKENED = {"campaign_server_flags": {"--max-model-len": 1024, "--max-num-seqs": 1},
            "campaign_extra_optimizations": PLANTED}


def campaign(base, port):
    return run_fleetopt("run", "--only", ",".join(p["id"] for p in PLANTED), "--recommend",
                        *isolated(base, port, CAMPAIGN, trials=3, concurrency=(4,)), "-e", json.dumps(WEAKENED))


@pytest.fixture(scope="module")
def measured(tmp_path_factory, local_engine):
    base = tmp_path_factory.mktemp("recommend")
    port = free_port()
    rc, output = campaign(base, port)
    assert rc == 0, output[-6000:]
    folder = base / "results" / CAMPAIGN
    return {"base": base, "port": port, "folder": folder, "output": output,
            "recommendation": yaml.safe_load((folder / "recommended.yml").read_text())}


def test_the_recommendation_holds_the_helper_and_leaves_out_the_others_with_the_right_reasons(measured):
    recommendation = measured["recommendation"]
    assert recommendation["stack"] == ["restore_seqs"], recommendation
    assert recommendation["inventory"]["campaign_server_flags"]["--max-num-seqs"] == 4
    out = {entry["id"]: entry for entry in recommendation["left_out"]}
    assert out["tiny_prefill_chunks"]["why"] == "regressed", out
    verdict = next(v["verdict"] for v in json.loads((measured["folder"] / "summary.json").read_text())["variants"]
                   if v["variant"] == "two_seqs")
    if verdict == "improved":
        assert out["two_seqs"]["why"] == "conflicting" and "restore_seqs" in out["two_seqs"]["reason"] \
            and "--max-num-seqs" in out["two_seqs"]["reason"], out
    else:  # the noise left it short of a candidate: left out for its own verdict, never stacked
        assert verdict in ("inconclusive", "neutral") and out["two_seqs"]["why"] in ("inconclusive", "not_significant"), \
            (verdict, out)


def test_the_stack_was_measured_and_its_gain_interval_excludes_zero(measured):
    recommendation = measured["recommendation"]
    assert recommendation["status"] == "measured as a stack" and recommendation["outcome"] == "stack", recommendation
    stack = recommendation["measured"]
    assert stack["composes"] == ["restore_seqs"] and stack["verdict"] == "improved", stack
    assert stack["gain"]["ci_low_pct"] > 0, stack["gain"]
    cell = json.loads((measured["folder"] / "cells" / "localhost" / "stack.json").read_text())
    assert cell["status"] == "ok" and cell["stacked"]["composes"] == ["restore_seqs"]
    assert cell["launch"]["flags"]["--max-num-seqs"] == 4
    markdown = (measured["folder"] / "report.md").read_text()
    assert "**Status: measured as a stack.**" in markdown.split("## Campaign")[0]


def test_a_resumed_campaign_measures_nothing_again_the_stack_included(measured):
    cells = measured["folder"] / "cells" / "localhost"
    before = {path.stem: json.loads(path.read_text())["measured_at"] for path in cells.glob("*.json")}
    assert set(before) == {"baseline", "restore_seqs", "tiny_prefill_chunks", "two_seqs", "stack"}, before
    rc, output = campaign(measured["base"], measured["port"])
    assert rc == 0, output[-6000:]
    after = {path.stem: json.loads(path.read_text())["measured_at"] for path in cells.glob("*.json")}
    assert after == before, "a resumed campaign measured again: %s" % sorted(k for k in after if after[k] != before.get(k))
    assert yaml.safe_load((measured["folder"] / "recommended.yml").read_text())["status"] == "measured as a stack"
