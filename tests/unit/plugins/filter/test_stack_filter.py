"""What a stage of the stack stage measures: the filters fleetopt_stacked_variants and fleetopt_stack_skip
(plugins/filter/fleetopt_stack.py), which roles/campaign/tasks/stacked.yml applies on the controller to the
recommendation and to the hosts' records. tests/unit/playbooks/test_stacked_variants.py runs them through that
task file, with the files read and asserted there."""
import importlib.util

import pytest
from ansible.errors import AnsibleFilterError

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_stack_filter", ROOT / "plugins" / "filter" / "fleetopt_stack.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
stacked_variants = plugin.FilterModule().filters()["fleetopt_stacked_variants"]
stack_skip = plugin.FilterModule().filters()["fleetopt_stack_skip"]

STACK = {"id": "stack", "title": "Stack: a + b", "flags": {"--max-num-seqs": 4}, "env": {},
         "stacked": {"composes": ["a", "b"], "proposed_by": "c1", "baseline": "baseline_stack"}}
VERIFY = dict(STACK, title="Recommended by campaign c0: a + b", stacked={"composes": ["a", "b"], "verifies": "c0"})
STEP = dict(STACK, id="stack_3", stacked={"composes": ["a", "c"], "search": "greedy", "step": 3})


def test_the_first_stage_measures_the_proposed_stack():
    proposal = {"status": "proposed, not yet measured as a stack", "outcome": "proposed", "stacked_variant": STACK,
                "verify_variant": VERIFY}
    assert stacked_variants(proposal, 1, False) == [STACK]
    # The step as -e and a `when` leave it: a string.
    assert stacked_variants(proposal, "1", "false") == [STACK]


def test_a_later_stage_measures_the_greedy_searchs_next_step_only_while_it_searches():
    searching = {"status": "measured: ...; searching greedily", "outcome": "searching", "stacked_variant": STEP}
    assert stacked_variants(searching, 2, False) == [STEP]
    assert stacked_variants(searching, "4", False) == [STEP]
    for outcome in ("stack", "inconclusive", "proposed", None):
        done = {"status": "measured as a stack", "outcome": outcome, "stacked_variant": STACK}
        assert stacked_variants(done, 2, False) == [], outcome
    assert stacked_variants({"status": "measured as a stack", "stacked_variant": STACK}, 3, False) == []


def test_nothing_is_measured_without_a_stack_to_measure():
    assert stacked_variants({"status": "measured: a single optimization, nothing to stack", "stacked_variant": None,
                             "verify_variant": VERIFY}, 1, False) == []
    assert stacked_variants({"status": "searching", "outcome": "searching"}, 2, False) == []
    # No stack was asked for, or the file was empty or not a mapping.
    assert stacked_variants({}, 1, False) == []
    assert stacked_variants(None, 1, False) == []
    assert stacked_variants(["a", "list"], 1, False) == []


def test_a_verifying_campaign_measures_the_recommended_configuration_in_its_first_stage_only():
    earlier = {"status": "measured as a stack", "outcome": "searching", "stacked_variant": STEP,
               "verify_variant": VERIFY}
    assert stacked_variants(earlier, 1, True) == [VERIFY]
    assert stacked_variants(earlier, "1", "true") == [VERIFY]
    # An earlier campaign's search is not this one's to go on with.
    assert stacked_variants(earlier, 2, True) == []
    assert stacked_variants({"status": "nothing to recommend", "verify_variant": None}, 2, True) == []


def test_a_recommendation_with_nothing_to_verify_is_refused():
    with pytest.raises(AnsibleFilterError, match="keep the baseline"):
        stacked_variants({"status": "nothing to recommend: keep the baseline", "verify_variant": None}, 1, True)
    with pytest.raises(AnsibleFilterError, match="no verify_variant"):
        stacked_variants({"status": "measured as a stack", "stacked_variant": STACK}, 1, True)


def test_a_step_that_is_not_a_number_is_refused():
    with pytest.raises(AnsibleFilterError, match="whole number"):
        stacked_variants({"stacked_variant": STACK}, "second", False)


def test_the_hosts_that_did_not_finish_the_matrix_are_skipped_in_the_records_order():
    records = [{"host": "gpu-a", "status": "planned"}, {"host": "gpu-d", "status": "failed"},
               {"host": "gpu-b", "status": "unhealthy"}, {"host": "gpu-e", "status": "finished"},
               {"host": "gpu-c", "status": "unreachable"}, {"host": "gpu-f"}]
    assert stack_skip(records) == ["gpu-d", "gpu-b", "gpu-c"]
    assert stack_skip([]) == [] and stack_skip(None) == []


def test_a_record_that_names_no_host_is_refused():
    with pytest.raises(AnsibleFilterError, match="failed names no host"):
        stack_skip([{"status": "failed"}])
