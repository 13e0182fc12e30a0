"""The capacity search: which level it measures next (fleetopt_slo), and the fleetopt_bench action
plugin running it after the planned levels, against module answers whose p99 TTFT grows with
concurrency."""
import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_slo import level_holds, next_search_level
from test_bench_action import ARGS, run_action  # noqa: F401  (the fixture)

SLO = {"p99_ttft_ms": 100.0}


def run(ttft, status="ok"):
    return {"status": status, "metrics": {"p99_ttft_ms": ttft} if status == "ok" else None}


def test_a_level_holds_on_the_mean_of_its_runs_and_only_when_every_run_succeeded():
    assert level_holds([run(90.0), run(105.0)], SLO)  # mean 97.5
    assert not level_holds([run(90.0), run(115.0)], SLO)
    assert not level_holds([run(50.0), run(None, status="failed")], SLO)
    assert not level_holds([{"status": "ok", "metrics": {}}], SLO), "an SLO whose metric is missing is not met"
    assert level_holds([run(50.0), {"status": "skipped", "metrics": None}], SLO)
    assert not level_holds([], SLO)


@pytest.mark.parametrize("ladder,ceiling,expected", [
    ([(1, True), (4, True)], 256, 8),            # every level holds: double the top one
    ([(1, True), (4, True), (200, True)], 256, 256),  # up to the ceiling
    ([(1, True), (256, True)], 256, None),       # at the ceiling: nothing higher to measure
    ([(1, True), (4, True), (16, False)], 256, 10),  # bisect between the last held and the first failing
    ([(1, True), (4, True), (5, False)], 256, None),  # neighbours: capacity is 4
    ([(4, False)], 256, 2),                      # none held: bisect below the lowest
    ([(1, False)], 256, None),                   # nothing below 1
    ([(1, True), (4, False), (8, True)], 256, 2),  # a level that holds above a failing one does not count
    ([], 256, None),
])
def test_the_search_steps_up_while_every_level_holds_then_bisects(ladder, ceiling, expected):
    assert next_search_level(ladder, ceiling) == expected


def ttft_answer(limit_at):
    """Module answers whose runs' p99 TTFT is 10 ms per unit of concurrency (so c=10 is 100 ms)."""
    def answer(args):
        c = args["concurrency"][0]
        levels = [{"concurrency": c, "trial": t, "status": "ok",
                   "metrics": {"output_throughput": 10.0 * c, "duration_s": 1.0, "p99_ttft_ms": limit_at * c}}
                  for t in (1, 2)]
        return {"changed": True, "levels": levels, "client": ["py"], "server_died": False, "timed_out": False,
                "served_concurrency": max(args["served_concurrency"], c),
                "precision": [{"concurrency": c, "trials": 2, "ok_trials": 2}]}
    return answer


def searched(result):
    return [lv["concurrency"] for lv in result["levels"] if lv.get("searched") and lv["trial"] == 1]


def test_the_action_steps_up_then_bisects_to_the_capacity_within_its_budget(run_action):  # noqa: F811
    args = dict(ARGS, concurrency=[1, 4], slo=SLO, capacity_search_levels=4, target_halfwidth_pct=0.0)
    result, calls, shown = run_action(args, ttft_answer(10.0))
    # c=4 holds (40 ms): 8 holds (80 ms), 16 fails (160 ms), then 12 fails, 10 holds (100 ms); the budget is spent.
    assert searched(result) == [8, 16, 12, 10]
    assert result["capacity_search"] == {"levels": [8, 16, 12, 10], "budget": 4, "ceiling": 256, "stopped_by": "budget"}
    assert [c["served_concurrency"] for c in calls if c.get("state") != "client_released"] == [0, 1, 4, 8, 16, 16]
    assert any("c=16 (capacity search) trial 1/2" in line for line in shown), shown
    # One level more: 11 fails, and 10 and 11 are neighbours: the capacity is found.
    again, _, _ = run_action(dict(args, capacity_search_levels=6), ttft_answer(10.0))
    assert searched(again) == [8, 16, 12, 10, 11] and again["capacity_search"]["stopped_by"] == "found"


def test_a_slower_variant_gets_a_lower_capacity_from_the_same_search(run_action):  # noqa: F811
    args = dict(ARGS, concurrency=[1, 4], slo=SLO, capacity_search_levels=4, target_halfwidth_pct=0.0)
    slow, _, _ = run_action(args, ttft_answer(40.0))  # c=4 is 160 ms: bisect below it
    assert searched(slow) == [2, 3] and slow["capacity_search"]["stopped_by"] == "found"


def test_without_slos_or_budget_there_is_no_search(run_action):  # noqa: F811
    plain, calls, _ = run_action(dict(ARGS, concurrency=[1, 4], capacity_search_levels=3, target_halfwidth_pct=0.0),
                                 ttft_answer(10.0))
    assert searched(plain) == [] and plain["capacity_search"] is None
    off, _, _ = run_action(dict(ARGS, concurrency=[1, 4], slo=SLO, target_halfwidth_pct=0.0), ttft_answer(10.0))
    assert off["capacity_search"] is None and len(off["levels"]) == 4
