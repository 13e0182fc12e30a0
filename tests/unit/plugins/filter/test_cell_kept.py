"""Which finished cell a resumed campaign keeps: the filter fleetopt_cell_kept (plugins/filter/fleetopt_cell.py),
which roles/campaign/tasks/variant.yml asks before measuring a cell. A cell is kept when it is complete for the
same configuration; a stack and the baseline its stage measures again beside it are a pair, kept only together,
so a resumed stack stage never compares a stack with a baseline measured in another session."""
import importlib.util

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_cell_filter", ROOT / "plugins" / "filter" / "fleetopt_cell.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)
kept = plugin.FilterModule().filters()["fleetopt_cell_kept"]

OK = {"cell_key": "k", "status": "ok", "levels": [{"concurrency": 4, "status": "ok"}]}


def test_a_complete_cell_of_the_same_configuration_is_kept():
    assert kept(OK, "k") is True
    assert kept(dict(OK, status="not_applicable", levels=[]), "k") is True


def test_a_cell_of_another_configuration_or_one_that_did_not_finish_is_measured_again():
    assert kept(OK, "other") is False
    assert kept(dict(OK, status="crashed"), "k") is False
    assert kept(dict(OK, levels=[{"concurrency": 4, "status": "crashed"}]), "k") is False
    assert kept({}, "k") is False and kept(None, "k") is False


def test_one_of_a_pair_is_kept_only_when_the_other_of_the_same_launch_is_complete_too():
    assert kept(OK, "k", partner=dict(OK, cell_key="p")) is True
    # The stack crashed or was never reached: the baseline beside it is measured again with it.
    assert kept(OK, "k", partner=dict(OK, status="crashed")) is False
    assert kept(OK, "k", partner={}) is False
