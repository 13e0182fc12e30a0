"""The stacked variants a campaign measures after its matrix (roles/campaign/tasks/stacked.yml, on the
controller): with -e recommend=true the stack the report proposed (recommended.yml's stacked_variant), with
-e recommended=<file> the configuration an earlier campaign recommended (its verify_variant); hosts that did
not finish their share of the matrix are left out; a file that is not a recommendation fails clearly."""
import json
import os
import pathlib
import subprocess
import sys

import yaml

from helpers import ROOT

STACKED = {"id": "stack", "title": "Stack: a + b", "tier": 0, "flags": {"--enforce-eager": None, "--max-num-seqs": 4},
           "env": {}, "stacked": {"composes": ["a", "b"], "proposed_by": "c1"}}
VERIFY = dict(STACKED, title="Recommended by campaign c1: a + b", stacked={"composes": ["a", "b"], "verifies": "c1"})


def choose(tmp_path, recommendation=None, records=(), extra=()):
    campaign = tmp_path / "results" / "c1"
    (campaign / "hosts").mkdir(parents=True, exist_ok=True)
    if recommendation is not None:
        (campaign / "recommended.yml").write_text("# fleetopt recommendation\n" + yaml.safe_dump(recommendation))
    for host, status in records:
        (campaign / "hosts" / ("%s.json" % host)).write_text(json.dumps({"host": host, "status": status}))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"),
                           "tests/playbooks/stacked_variants.yml", "-e", "campaign_id=c1",
                           "-e", "campaign_results_dir=%s" % (tmp_path / "results")] + list(extra),
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=120)
    tasks = json.loads(proc.stdout)["plays"][0]["tasks"]
    shown = tasks[-1]["hosts"]["localhost"].get("msg") if proc.returncode == 0 else None
    return proc.returncode, shown, json.dumps(tasks)


def test_recommend_measures_the_proposed_stack(tmp_path):
    rc, shown, out = choose(tmp_path, {"status": "proposed, not yet measured as a stack", "stacked_variant": STACKED,
                                       "verify_variant": VERIFY}, extra=["-e", "recommend=true"])
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == [STACKED] and shown["fleetopt_stack_skip"] == []


def test_recommend_with_nothing_to_stack_measures_nothing_more(tmp_path):
    rc, shown, out = choose(tmp_path, {"status": "measured: a single optimization, nothing to stack",
                                       "stacked_variant": None, "verify_variant": VERIFY}, extra=["-e", "recommend=true"])
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == []


def test_without_recommend_nothing_is_stacked(tmp_path):
    rc, shown, out = choose(tmp_path, {"status": "proposed, not yet measured as a stack", "stacked_variant": STACKED})
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == []


def test_hosts_that_did_not_finish_the_matrix_are_left_out(tmp_path):
    rc, shown, out = choose(tmp_path, {"status": "proposed", "stacked_variant": STACKED},
                            records=[("gpu-a", "planned"), ("gpu-b", "unhealthy"), ("gpu-c", "unreachable")],
                            extra=["-e", "recommend=true"])
    assert rc == 0, out
    assert sorted(shown["fleetopt_stack_skip"]) == ["gpu-b", "gpu-c"]


def test_an_earlier_recommendation_is_verified_with_its_recommended_configuration(tmp_path):
    earlier = tmp_path / "earlier.yml"
    earlier.write_text(yaml.safe_dump({"status": "measured as a stack", "stacked_variant": STACKED,
                                       "verify_variant": VERIFY}))
    rc, shown, out = choose(tmp_path, extra=["-e", "recommended=%s" % earlier])
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == [VERIFY]


def test_a_recommendation_that_recommends_nothing_cannot_be_verified(tmp_path):
    earlier = tmp_path / "earlier.yml"
    earlier.write_text(yaml.safe_dump({"status": "nothing to recommend: no optimization improved; keep the baseline",
                                       "stacked_variant": None, "verify_variant": None}))
    rc, _, out = choose(tmp_path, extra=["-e", "recommended=%s" % earlier])
    assert rc != 0 and "nothing to verify" in out and "keep the baseline" in out, out


def test_a_missing_or_foreign_file_fails_clearly(tmp_path):
    rc, _, out = choose(tmp_path, extra=["-e", "recommended=%s" % (tmp_path / "nope.yml")])
    assert rc != 0 and "nope.yml" in out and "no such recommendation" in out, out
    other = tmp_path / "other.yml"
    other.write_text("- just\n- a list\n")
    rc, _, out = choose(tmp_path, extra=["-e", "recommended=%s" % other])
    assert rc != 0 and "not a fleetopt recommendation" in out, out


def test_recommend_and_recommended_together_are_refused(tmp_path):
    earlier = tmp_path / "earlier.yml"
    earlier.write_text(yaml.safe_dump({"status": "measured as a stack", "verify_variant": VERIFY}))
    rc, _, out = choose(tmp_path, extra=["-e", "recommended=%s" % earlier, "-e", "recommend=true"])
    assert rc != 0 and "not both" in out, out


def test_a_later_stage_measures_only_the_greedy_searchs_next_step(tmp_path):
    step = dict(STACKED, id="stack_3", stacked={"composes": ["a", "c"], "search": "greedy", "step": 3})
    rc, shown, out = choose(tmp_path, {"status": "measured: ...; searching greedily", "outcome": "searching",
                                       "stacked_variant": step}, extra=["-e", "recommend=true", "-e", "campaign_stack_step=2"])
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == [step]
    rc, shown, out = choose(tmp_path, {"status": "measured as a stack", "outcome": "stack", "stacked_variant": STACKED},
                            extra=["-e", "recommend=true", "-e", "campaign_stack_step=2"])
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == [], "the search is over: a later stage measures nothing"


def test_a_verifying_campaign_measures_in_its_first_stage_only(tmp_path):
    earlier = tmp_path / "earlier.yml"
    earlier.write_text(yaml.safe_dump({"status": "measured as a stack", "verify_variant": VERIFY}))
    rc, shown, out = choose(tmp_path, extra=["-e", "recommended=%s" % earlier, "-e", "campaign_stack_step=2"])
    assert rc == 0, out
    assert shown["fleetopt_stacked"] == []
