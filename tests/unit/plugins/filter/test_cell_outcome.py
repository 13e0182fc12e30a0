"""A cell's status, reason and failure are decided by the filter fleetopt_cell_outcome
(plugins/filter/fleetopt_cell.py) from the registered results of the variant's tasks;
roles/campaign/templates/cell.json.j2 only shapes the cell around it."""
import importlib.util

import pytest

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_cell_filter", ROOT / "plugins" / "filter" / "fleetopt_cell.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
outcome = plugin.FilterModule().filters()["fleetopt_cell_outcome"]

APPLICABLE = {"id": "torch_compile", "applicable": True}
READY = {"changed": True, "server": {"status": "ready", "startup_s": 12.0}}
SKIPPED = {"skipped": True, "changed": False}
LEVELS = {"levels": [{"concurrency": 1}], "client": ["python"]}
CRASH = {"failure_class": "cuda_oom", "verdict": "crashed"}


def test_a_variant_that_does_not_apply_is_not_applicable_and_nothing_else_counts():
    result = outcome({"id": "x", "applicable": False, "reason": "needs 2 GPUs"}, SKIPPED, SKIPPED)
    assert result == {"status": "not_applicable", "reason": "needs 2 GPUs", "failure": None, "host_lost": False}


def test_a_ready_server_whose_benchmark_measured_is_ok():
    assert outcome(APPLICABLE, READY, LEVELS) == {"status": "ok", "reason": None, "failure": None, "host_lost": False}


@pytest.mark.parametrize("lost_at", ["server", "bench", "post_mortem"])
def test_a_host_that_stopped_answering_is_an_error_with_the_reason(lost_at):
    unreachable = {"unreachable": True, "msg": "Failed to connect to the host via ssh"}
    results = {"server": READY, "bench": dict(LEVELS, server_died=True), "post_mortem": None}
    results[lost_at] = unreachable
    result = outcome(APPLICABLE, results["server"], results["bench"], results["post_mortem"])
    assert result["status"] == "error" and result["host_lost"] is True
    assert result["reason"] == "host unreachable: Failed to connect to the host via ssh"
    assert result["failure"]["failure_class"] == "host_unreachable"
    assert result["failure"]["root_cause"] == result["reason"]


def test_a_failed_benchmark_module_is_an_error_that_quotes_it():
    result = outcome(APPLICABLE, READY, {"failed": True, "rc": 137, "msg": "killed"})
    assert result["status"] == "error"
    assert result["reason"] == "the benchmark module failed (rc 137): killed"
    assert result["failure"]["failure_class"] == "benchmark_error"
    # failed_when: false hides the failure; a result without levels is one too.
    assert outcome(APPLICABLE, READY, {"changed": False, "msg": "?"})["reason"] == (
        "the benchmark module failed (rc ?): ?")


def test_a_server_that_died_under_the_benchmark_crashed_with_the_post_mortem_failure():
    result = outcome(APPLICABLE, READY, dict(LEVELS, server_died=True), {"server": {"failure": CRASH}})
    assert result == {"status": "crashed", "reason": None, "failure": CRASH, "host_lost": False}


def test_a_benchmark_run_past_its_time_is_a_timeout_naming_the_setting():
    result = outcome(APPLICABLE, READY, dict(LEVELS, timed_out=True), SKIPPED, 900)
    assert result["status"] == "timeout" and result["failure"] is None
    assert result["reason"].startswith("a benchmark run did not finish within 900 s (campaign_bench_level_timeout)")


def test_a_server_that_never_became_ready_keeps_its_own_status_failure_and_message():
    server = {"failed": True, "msg": "crashed in cuda_graph", "server": {"status": "crashed", "failure": CRASH}}
    assert outcome(APPLICABLE, server, SKIPPED, SKIPPED) == {
        "status": "crashed", "reason": "crashed in cuda_graph", "failure": CRASH, "host_lost": False}
    assert outcome(APPLICABLE, {"failed": True, "msg": "no python"})["status"] == "error"


def test_a_start_up_past_the_deadline_is_a_timeout_naming_the_variants_deadline_and_where_it_comes_from():
    server = {"failed": True, "msg": "sglang not ready after 900 s (last phase: cuda_graph); stopped it",
              "server": {"status": "timeout", "failure": None}}
    compiled = dict(APPLICABLE, startup_timeout=900.0, startup_timeout_from="startup_timeout_s of torch_compile")
    result = outcome(compiled, server, SKIPPED, SKIPPED)
    assert result["status"] == "timeout"
    assert result["reason"] == ("sglang not ready after 900 s (last phase: cuda_graph); stopped it; start-up deadline "
                                "900 s (startup_timeout_s of torch_compile)")
    baseline = {"id": "baseline", "applicable": True, "startup_timeout": 420.0,
                "startup_timeout_from": "campaign_startup_timeout"}
    assert outcome(baseline, dict(server, msg="sglang not ready after 420 s (last phase: weights); stopped it"))[
        "reason"].endswith("; start-up deadline 420 s (campaign_startup_timeout)")


def test_a_crash_says_nothing_of_the_deadline():
    server = {"failed": True, "msg": "crashed in cuda_graph", "server": {"status": "crashed", "failure": CRASH}}
    assert outcome(dict(APPLICABLE, startup_timeout=900.0, startup_timeout_from="startup_timeout_s of torch_compile"),
                   server)["reason"] == "crashed in cuda_graph"


# -- a variant whose server ran its baseline's configuration ------------------------------------

no_effect = plugin.FilterModule().filters()["fleetopt_no_effect"]
PIECEWISE = {"id": "piecewise_cuda_graph", "applicable": True, "changes": ["prefill_graph"]}
MLA_RULE = {"line": 4, "text": "Breakable CUDA graph is incompatible with MLA attention; disabling prefill CUDA graph.",
            "sets": {"prefill_graph": "disabled"}, "reason": "MLA attention", "overrides": True}


def ready_with(settings, statements=()):
    return {"changed": True, "server": {"status": "ready", "effective": {
        "settings": settings, "statements": list(statements), "source": "log line 6", "release": "0.5.16"}}}


def test_a_variant_whose_server_switched_its_change_off_is_no_effect_and_not_benchmarked():
    seen = {"baseline": {"settings": {"prefill_graph": "disabled", "tp_size": 8}}}
    server = ready_with({"prefill_graph": "disabled", "tp_size": 8}, [MLA_RULE])
    reason = no_effect(PIECEWISE, server, seen, "sglang")
    assert reason == ("the server ran its baseline's setting (prefill_graph=disabled); sglang 0.5.16 said: \"Breakable "
                      "CUDA graph is incompatible with MLA attention; disabling prefill CUDA graph.\" (log line 4)")
    assert outcome(PIECEWISE, server, SKIPPED, None, 900, reason) == {
        "status": "no_effect", "reason": reason, "failure": None, "host_lost": False}
    # A resumed campaign keeps it: the same configuration changes nothing again.
    assert plugin.complete({"status": "no_effect", "levels": []})


@pytest.mark.parametrize("variant, server, seen", [
    (PIECEWISE, ready_with({"prefill_graph": "tc_piecewise"}), {"baseline": {"settings": {"prefill_graph": "disabled"}}}),
    (PIECEWISE, ready_with({"prefill_graph": "disabled"}), {}),
    (PIECEWISE, {"changed": True, "server": {"status": "ready"}}, {"baseline": {"settings": {"prefill_graph": "disabled"}}}),
    (dict(PIECEWISE, changes=[]), ready_with({"prefill_graph": "disabled"}), {"baseline": {"settings": {"prefill_graph": "disabled"}}}),
    ({"id": "baseline_aa", "applicable": True, "changes": ["prefill_graph"]}, ready_with({"prefill_graph": "disabled"}),
     {"baseline": {"settings": {"prefill_graph": "disabled"}}}),
])
def test_a_variant_is_benchmarked_unless_both_servers_stated_the_same_values(variant, server, seen):
    assert no_effect(variant, server, seen, "sglang") == ""
    assert outcome(variant, server, LEVELS, None, 900, "")["status"] == "ok"


def test_a_stack_is_compared_with_the_baseline_of_its_stage():
    stack = dict(PIECEWISE, id="stack", stacked={"baseline": "baseline_stack"})
    seen = {"baseline": {"settings": {"prefill_graph": "breakable"}},
            "baseline_stack": {"settings": {"prefill_graph": "disabled"}}}
    assert no_effect(stack, ready_with({"prefill_graph": "disabled"}), seen).startswith("the server ran its baseline's")


def test_the_cell_says_what_else_the_server_ran_differently_from_its_baseline():
    compared = plugin.FilterModule().filters()["fleetopt_effective_comparison"]
    seen = {"baseline": {"settings": {"prefill_graph": "disabled", "mem_fraction_static": 0.9}}}
    found = compared(PIECEWISE, ready_with({"prefill_graph": "tc_piecewise", "mem_fraction_static": 0.85}), seen)
    assert found == {"state": "changed", "same": [], "differ": ["prefill_graph"], "unknown": [],
                     "others": {"mem_fraction_static": [0.9, 0.85]}, "baseline_variant": "baseline"}
    assert compared(PIECEWISE, ready_with({"prefill_graph": "tc_piecewise"}), {}) is None
    assert compared({"id": "baseline", "applicable": True}, ready_with({"prefill_graph": "disabled"}), seen) is None
