"""The capacity search (fleetopt_capacity_search): the levels it names after the planned ones, what stops
it, and its record, with levels whose p99 TTFT is 10 ms per unit of concurrency under a 100 ms SLO."""
import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_capacity_search import CapacitySearch

SLO = {"p99_ttft_ms": 100.0, "p99_itl_ms": None}


def level(concurrency, status="ok"):
    return {"concurrency": concurrency, "status": status,
            "metrics": {"p99_ttft_ms": 10.0 * concurrency} if status == "ok" else None}


def drive(search, planned):
    """Measure every level the search names (each level's runs made at once), as the action plugin does."""
    levels = [level(c) for c in planned]
    while True:
        concurrency = search.next_level(levels)
        if concurrency is None:
            return search.record()
        levels.append(level(concurrency))


def test_it_steps_up_then_bisects_until_its_budget_is_spent_or_the_capacity_is_found():
    assert drive(CapacitySearch(4, SLO), [1, 4]) == {
        "levels": [8, 16, 12, 10], "budget": 4, "ceiling": 256, "stopped_by": "budget"}
    assert drive(CapacitySearch(6, SLO), [1, 4]) == {
        "levels": [8, 16, 12, 10, 11], "budget": 6, "ceiling": 256, "stopped_by": "found"}


def test_it_stops_at_the_ceiling_when_every_level_holds():
    slo = {"p99_ttft_ms": 10000.0}
    assert drive(CapacitySearch(5, slo, ceiling=16), [1, 4]) == {
        "levels": [8, 16], "budget": 5, "ceiling": 16, "stopped_by": "ceiling"}


def test_a_failed_run_fails_its_level():
    search = CapacitySearch(3, SLO)
    assert search.next_level([level(1), level(4, status="failed")]) == 2


def test_a_run_that_ended_the_benchmark_ends_the_search():
    search = CapacitySearch(3, SLO)
    assert search.next_level([level(1)]) == 2
    assert search.next_level([level(1), level(2)], ended=True) is None
    assert search.record() == {"levels": [2], "budget": 3, "ceiling": 256, "stopped_by": "ended"}


@pytest.mark.parametrize("args,enabled", [
    ({"capacity_search_levels": 3, "slo": SLO}, True),
    ({"capacity_search_levels": 0, "slo": SLO}, False),
    ({"capacity_search_levels": 3, "slo": {"p99_ttft_ms": None}}, False),  # an SLO without a limit is none
    ({"capacity_search_levels": 3}, False),
])
def test_it_runs_only_with_a_budget_and_an_slo(args, enabled):
    assert CapacitySearch.from_args(args).enabled is enabled


def test_the_ceiling_is_capacity_max_concurrency_or_256():
    assert CapacitySearch.from_args({"capacity_max_concurrency": 64}).ceiling == 64
    assert CapacitySearch.from_args({"capacity_max_concurrency": None}).ceiling == 256
