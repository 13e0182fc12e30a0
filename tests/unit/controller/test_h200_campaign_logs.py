"""The reference campaign of docs/campaigns/h200-sglang-0.5.16/ (SGLang 0.5.16 on one H200, driven by
optimize.yml) replayed: each server log it kept, read again by the watcher, gives what the live module
recorded in that launch's cell: the start-up phases in order, ready or not, and a crash's class and phase.
The prefill-graph lines say what each variant ran: the baseline's prefill graphs switched off, the
piecewise variant's captured with SGLang 0.5.16's default backend."""
import json
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt.classify import feed_whole

ROOT = pathlib.Path(__file__).resolve().parents[3]
CAMPAIGN = ROOT / "docs" / "campaigns" / "h200-sglang-0.5.16"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
LAUNCHED = sorted(path for path in (CAMPAIGN / "cells" / "localhost").glob("*.json")
                  if json.loads(path.read_text())["startup"]["log_on_controller"])


def replay(cell):
    with open(CAMPAIGN / cell["startup"]["log_on_controller"], encoding="utf-8", newline="") as handle:
        return feed_whole(LogWatcher(SPEC), handle.read())


def cell_of(path):
    return json.loads(path.read_text())


def test_the_campaign_launched_every_variant_that_applies_twice():
    assert sorted(p.stem for p in LAUNCHED) == sorted(
        name + launch for name in ("baseline", "baseline_aa", "piecewise_cuda_graph", "planted_one_request",
                                   "planned_oom") for launch in ("", ".launch2"))


@pytest.mark.parametrize("path", LAUNCHED, ids=lambda p: p.stem)
def test_a_replayed_log_gives_the_phases_and_outcome_the_live_module_recorded(path):
    cell = cell_of(path)
    watcher = replay(cell)
    assert list(watcher.phases) == list(cell["startup"]["phases"])
    assert watcher.ready == (cell["startup"]["status"] == "ready")
    if cell["failure"]:
        verdict = watcher.classify()
        assert (verdict["failure_class"], verdict["phase"]) == (cell["failure"]["failure_class"], cell["failure"]["phase"])
    else:
        assert not watcher.failed


def test_the_planned_failure_is_a_cuda_oom_while_the_kv_pool_is_set_up():
    for name in ("planned_oom", "planned_oom.launch2"):
        cell = cell_of(CAMPAIGN / "cells" / "localhost" / (name + ".json"))
        assert cell["status"] == "crashed"
        assert (cell["failure"]["failure_class"], cell["failure"]["phase"]) == ("cuda_oom", "kv_cache")


@pytest.mark.parametrize("name", ["baseline", "baseline.launch2", "baseline_aa", "baseline_aa.launch2"])
def test_the_baselines_ran_without_prefill_graphs(name):
    phases = replay(cell_of(CAMPAIGN / "cells" / "localhost" / (name + ".json"))).phases
    assert "prefill.backend='disabled'" in phases["cuda_graph"]["info"]["piecewise_skipped_because"]
    assert "piecewise_cuda_graph" not in phases


@pytest.mark.parametrize("name", ["piecewise_cuda_graph", "piecewise_cuda_graph.launch2"])
def test_the_piecewise_variant_captured_prefill_graphs_with_the_release_default(name):
    phases = replay(cell_of(CAMPAIGN / "cells" / "localhost" / (name + ".json"))).phases
    assert phases["piecewise_cuda_graph"]["info"]["prefill_backend"] == "breakable"
