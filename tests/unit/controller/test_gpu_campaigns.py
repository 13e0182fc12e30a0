"""The reference campaigns that SGLang 0.5.16 ran on a GPU, driven by optimize.yml (docs/campaigns/):
- h200-sglang-0.5.16: a tiny random-weight Llama on one H200, every tier-1 variant that applies;
- h100-sglang-0.5.16-8b: an 8B-shaped Llama on one H100, the baseline, its A/A and a planted effect.
- h100-sglang-0.5.16-8b-run2: the same design run again on another H100;
- h100-sglang-0.5.16-8b-run4: and a third time, with the A/A's first launch next to the baseline's.
- h100-sglang-0.5.16-8b-placed: the same three configurations launched once, three trials each, the server and the
  benchmark client on CPUs of their own.

Each server log they kept, read again by the watcher, gives what the live module recorded in that
launch's cell: the start-up phases in order, ready or not, and a crash's class and phase. The report
built again from each campaign's cells gives the summary.json the campaign wrote, so a change to the
analysis that moves a verdict or a figure of a real GPU campaign fails here."""
import json
import math
import pathlib
import shutil

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt.classify import feed_whole
from fleetopt.cli import main as fleetopt_cli

ROOT = pathlib.Path(__file__).resolve().parents[3]
KEPT = ROOT / "docs" / "campaigns"
TINY = KEPT / "h200-sglang-0.5.16"
SHAPED = KEPT / "h100-sglang-0.5.16-8b"
# The 8B-shaped design, run again unchanged on another machine: its verdicts must hold in each campaign.
SHAPED_RUNS = [SHAPED, KEPT / "h100-sglang-0.5.16-8b-run2", KEPT / "h100-sglang-0.5.16-8b-run4"]
PLACED = KEPT / "h100-sglang-0.5.16-8b-placed"
# Every campaign kept there, so a campaign added later is replayed and its summary rebuilt too.
CAMPAIGNS = sorted(path.parent for path in KEPT.glob("*/summary.json"))
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
LAUNCHED = sorted(path for campaign in CAMPAIGNS for path in (campaign / "cells" / "localhost").glob("*.json")
                  if json.loads(path.read_text())["startup"]["log_on_controller"])


def campaign_of(path):
    return path.parents[2]


def replay(campaign, cell):
    with open(campaign / cell["startup"]["log_on_controller"], encoding="utf-8", newline="") as handle:
        return feed_whole(LogWatcher(SPEC), handle.read())


def cell_of(campaign, name):
    return json.loads((campaign / "cells" / "localhost" / (name + ".json")).read_text())


def launched(campaign):
    return sorted(p.stem for p in LAUNCHED if campaign_of(p) == campaign)


def twice(*names):
    return sorted(name + launch for name in names for launch in ("", ".launch2"))


def test_every_kept_campaign_folder_is_rebuilt():
    assert sorted(path for path in KEPT.iterdir() if path.is_dir()) == CAMPAIGNS
    assert {TINY, *SHAPED_RUNS, PLACED} <= set(CAMPAIGNS)


def test_each_campaign_launched_every_variant_it_ran_twice():
    assert launched(TINY) == twice("baseline", "baseline_aa", "piecewise_cuda_graph", "planted_one_request", "planned_oom")
    for shaped in SHAPED_RUNS:
        assert launched(shaped) == twice("baseline", "baseline_aa", "planted_running_cap")
    assert launched(PLACED) == ["baseline", "baseline_aa", "planted_running_cap"]


@pytest.mark.parametrize("path", LAUNCHED, ids=lambda p: "%s/%s" % (campaign_of(p).name, p.stem))
def test_a_replayed_log_gives_the_phases_and_outcome_the_live_module_recorded(path):
    cell = json.loads(path.read_text())
    watcher = replay(campaign_of(path), cell)
    assert list(watcher.phases) == list(cell["startup"]["phases"])
    assert watcher.ready == (cell["startup"]["status"] == "ready")
    if cell["failure"]:
        verdict = watcher.classify()
        assert (verdict["failure_class"], verdict["phase"]) == (cell["failure"]["failure_class"], cell["failure"]["phase"])
    else:
        assert not watcher.failed


def test_the_planned_failure_is_a_cuda_oom_while_the_kv_pool_is_set_up():
    for name in ("planned_oom", "planned_oom.launch2"):
        cell = cell_of(TINY, name)
        assert cell["status"] == "crashed"
        assert (cell["failure"]["failure_class"], cell["failure"]["phase"]) == ("cuda_oom", "kv_cache")


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda c: c.name)
def test_the_baselines_ran_without_prefill_graphs(campaign):
    for name in [name for name in launched(campaign) if name.split(".")[0] in ("baseline", "baseline_aa")]:
        phases = replay(campaign, cell_of(campaign, name)).phases
        assert "prefill.backend='disabled'" in phases["cuda_graph"]["info"]["piecewise_skipped_because"]
        assert "piecewise_cuda_graph" not in phases


@pytest.mark.parametrize("name", ["piecewise_cuda_graph", "piecewise_cuda_graph.launch2"])
def test_the_piecewise_variant_captured_prefill_graphs_with_the_release_default(name):
    phases = replay(TINY, cell_of(TINY, name)).phases
    assert phases["piecewise_cuda_graph"]["info"]["prefill_backend"] == "breakable"


@pytest.mark.parametrize("shaped", SHAPED_RUNS, ids=lambda c: c.name)
def test_on_the_8b_shaped_model_the_first_launch_is_cold_and_every_later_one_warm(shaped):
    starts = {name: cell_of(shaped, name)["startup"] for name in launched(shaped)}
    measured_first = min(starts, key=lambda name: cell_of(shaped, name)["measured_at"])
    assert measured_first == "baseline"
    assert {name: start["cache"]["start"] for name, start in starts.items()} == {
        name: "cold" if name == "baseline" else "warm" for name in starts}


def same(kept, built, where=""):
    """Where two summaries differ, beyond the last bits of a float summed in another order."""
    if isinstance(kept, dict) and isinstance(built, dict):
        return [d for key in sorted(set(kept) | set(built), key=str)
                for d in same(kept.get(key, "<absent>"), built.get(key, "<absent>"), "%s/%s" % (where, key))]
    if isinstance(kept, list) and isinstance(built, list) and len(kept) == len(built):
        return [d for i, pair in enumerate(zip(kept, built)) for d in same(*pair, where="%s/%d" % (where, i))]
    if isinstance(kept, float) and isinstance(built, (int, float)) and math.isclose(kept, built, rel_tol=1e-9, abs_tol=1e-12):
        return []
    return [] if kept == built else ["%s: kept %r, built %r" % (where, kept, built)]


def built_again(campaign, tmp_path):
    """The summary `fleetopt report` builds from a kept campaign's cells, in a copy of its folder."""
    kept = json.loads((campaign / "summary.json").read_text())
    copy = tmp_path / campaign.name
    for folder in ("cells", "hosts", "leftovers"):
        if (campaign / folder).exists():
            shutil.copytree(campaign / folder, copy / folder)
    assert fleetopt_cli(["report", str(copy), "--min-effect", str(kept["settings"]["min_effect_pct"])]) == 0
    return json.loads((copy / "summary.json").read_text())


@pytest.mark.parametrize("campaign", CAMPAIGNS, ids=lambda c: c.name)
def test_the_report_built_again_from_the_cells_gives_the_summary_the_campaign_kept(campaign, tmp_path):
    kept = json.loads((campaign / "summary.json").read_text())
    built = built_again(campaign, tmp_path)
    # What names the run, not what it measured: when the summary was written, and the folder's name (a
    # campaign kept under a name other than its id).
    built["generated_at"] = kept["generated_at"]
    for named in (built, built["recommendation"]):
        if named.get("campaign") == campaign.name:
            named["campaign"] = kept["campaign"]
    assert same(kept, built) == []


@pytest.mark.parametrize("shaped", SHAPED_RUNS + [PLACED], ids=lambda c: c.name)
def test_on_the_8b_shaped_model_the_planted_effect_regressed_and_the_aa_resolves_the_minimum_effect(shaped, tmp_path):
    summary = built_again(shaped, tmp_path)
    verdicts = {row["variant"]: row["verdict"] for row in summary["variants"]}
    assert verdicts == {"baseline": "baseline", "planted_running_cap": "regressed", "baseline_aa": "neutral"}
    [aa] = summary["aa"]
    assert aa["verdict"] == "neutral" and aa["resolves_pct"] < summary["settings"]["min_effect_pct"]


def test_placed_the_server_ran_on_the_cpus_it_asked_and_every_client_run_on_the_last():
    for name in launched(PLACED):
        cell = cell_of(PLACED, name)
        placement = cell["launch"]["placement"]
        assert placement["requested"] == "0-14"
        assert placement["processes"] and {p["cpus"] for p in placement["processes"]} == {"0-14"}
        assert {level["client_cpus"] for level in cell["levels"]} == {"15"}
