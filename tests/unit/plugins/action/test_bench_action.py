"""The fleetopt_bench action plugin on the controller: one module call per level, carrying the
level's planned trials, its sequential rule and the t quantiles from scipy; progress per trial."""
import time
from unittest import mock

import pytest
from scipy import stats

from ansible.plugins.action import ActionBase
from ansible_collections.fleetopt.campaign.plugins.action import fleetopt_bench as action_plugin

ARGS = dict(engine="vllm", python="/py", base_url="http://127.0.0.1:9", served_model_name="m", tokenizer="/t",
            concurrency=[1, 4], result_dir="/r", name="baseline", trials=2, max_trials=4, target_halfwidth_pct=3.0)


def level_answer(args, throughputs=(100.0, 101.0), ended=None):
    """What the module answers for one level: its runs, their precision, whether the benchmark ended."""
    concurrency = args["concurrency"][0]
    levels = [{"concurrency": concurrency, "trial": t, "status": "ok", "client_started": t == 1 and concurrency == 1,
               "metrics": {"output_throughput": v, "duration_s": 2.0}} for t, v in enumerate(throughputs, 1)]
    if ended:
        levels[-1].update(status="failed", metrics=None, reason="the server exited during the benchmark")
    return {"changed": True, "levels": levels, "client": ["/py", "-m", "vllm"], "server_died": ended == "died",
            "timed_out": False, "served_concurrency": max(args.get("served_concurrency") or 0, concurrency),
            "precision": [{"concurrency": concurrency, "trials": len(levels), "ok_trials": len(levels) - bool(ended),
                           "halfwidth_pct": 1.0, "target_halfwidth_pct": 3.0,
                           "stopped_by": "ended" if ended else "target"}]}


@pytest.fixture
def run_action(monkeypatch):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    shown = []
    monkeypatch.setattr(action_plugin.display, "display", lambda msg, *a, **k: shown.append(msg))

    def run(args, answers):
        task = mock.MagicMock()
        task.args = dict(args)
        context = mock.MagicMock(check_mode=False)
        plugin = action_plugin.ActionModule(task, mock.MagicMock(), context, mock.MagicMock(), mock.MagicMock(),
                                            mock.MagicMock())
        calls = []

        def execute(module_name=None, module_args=None, task_vars=None, **_):
            calls.append(dict(module_args))
            if module_args.get("state") == "client_released":
                return {"changed": True}
            return answers(module_args)
        plugin._execute_module = execute
        return plugin.run(task_vars={"inventory_hostname": "h1"}), calls, shown
    return run


def test_one_module_call_per_level_carries_its_trials_its_rule_and_scipys_t_quantiles(run_action):
    result, calls, shown = run_action(ARGS, level_answer)
    measuring = [c for c in calls if c.get("state") != "client_released"]
    assert [c["concurrency"] for c in measuring] == [[1], [4]], "one call per level"
    quantiles = [float(stats.t.ppf(0.975, df)) for df in range(1, 4)]
    for call in measuring:
        assert not call.get("runs") and call["trials"] == 2 and call["max_trials"] == 4
        assert call["target_halfwidth_pct"] == 3.0 and call["t_quantiles"] == pytest.approx(quantiles)
        assert call["keep_client"] is True
    # The next level is told what the server has served, as the call before returned it (the module counts
    # it), so it warms up only where it is new.
    assert [c["served_concurrency"] for c in measuring] == [0, 1]
    assert result["served_concurrency"] == 4
    assert calls[-1].get("state") == "client_released", "a cell without a client folder of its own releases its client"
    assert [(lv["concurrency"], lv["trial"]) for lv in result["levels"]] == [(1, 1), (1, 2), (4, 1), (4, 2)]
    assert [p["concurrency"] for p in result["precision"]] == [1, 4]
    assert result["measured_s"] == 8.0 and result["client_wall_s"] >= 0
    progress = [line for line in shown if "trial" in line]
    assert len(progress) == 4, shown
    assert "[h1] baseline: c=1 trial 1/2: 100.0 output tok/s" in progress[0]
    assert "c=4 trial 2/2: 101.0 output tok/s" in progress[3]


def test_trials_beyond_the_plan_are_shown_against_the_budget(run_action):
    result, _, shown = run_action(dict(ARGS, concurrency=[4]), lambda a: level_answer(a, (100.0, 130.0, 90.0)))
    assert "c=4 trial 3/4" in [line for line in shown if "trial" in line][2]


def test_a_level_that_ends_the_benchmark_skips_the_levels_left(run_action):
    result, calls, _ = run_action(dict(ARGS, concurrency=[1, 4, 16]),
                                  lambda a: level_answer(a, (100.0, 100.0), ended="died"))
    assert [c["concurrency"] for c in calls if c.get("state") != "client_released"] == [[1]]
    assert not any(c.get("state") == "client_released" for c in calls), "a client the ended run stopped is not released"
    assert result["server_died"] is True
    assert [(lv["concurrency"], lv["status"]) for lv in result["levels"]] == [
        (1, "ok"), (1, "failed"), (4, "skipped"), (4, "skipped"), (16, "skipped"), (16, "skipped")]


def test_a_call_for_given_runs_goes_to_the_module_as_it_is(run_action):
    result, calls, _ = run_action(dict(ARGS, runs=[[4, 2]]), lambda a: {"levels": [], "passed": True})
    assert calls == [dict(ARGS, runs=[[4, 2]])] and result["passed"] is True


def warmup_answer(args, seconds=0.15):
    """A level whose call first made warm-up runs (a new server's), each `seconds` long, as the module does."""
    answer = level_answer(args)
    if args["served_concurrency"] == 0:
        time.sleep(2 * seconds)  # the module call lasts as long as its warm-up runs
        runs = [{"concurrency": args["concurrency"][0], "warmup_run": n, "status": "ok", "output_throughput": v,
                 "duration_s": seconds, "num_prompts": 8} for n, v in ((1, 90.0), (2, 99.0))]
        answer["warmup"] = [{"concurrency": args["concurrency"][0], "runs": runs, "settled": True,
                             "stopped_by": "settled", "reason": "the last two runs were 9.5 % apart, within 10 %",
                             "settle_pct": 10.0, "max_runs": 4, "duration_s": 2 * seconds}]
    return answer


def test_warm_up_runs_are_client_overhead_shown_and_returned_never_measured_time(run_action):
    result, calls, shown = run_action(ARGS, warmup_answer)
    assert [w["concurrency"] for w in result["warmup"]] == [1]
    assert result["warmup_s"] == pytest.approx(0.3)
    # Only the trials' own measured durations count as measured; the warm-up's time is in the client wall.
    assert result["measured_s"] == 8.0
    assert result["client_wall_s"] >= result["warmup_s"]
    warmups = [line for line in shown if "warm-up" in line]
    assert "[h1] baseline: c=1 warm-up run 1/4: 90.0 output tok/s" in warmups[0]
    assert "c=1 warm-up settled: the last two runs were 9.5 % apart" in warmups[2] and "0.3 s" in warmups[2]
    # A server that has made warm-up runs has served, whatever its trials did.
    assert [c["served_concurrency"] for c in calls if c.get("state") != "client_released"] == [0, 1]


def test_what_the_server_has_served_is_the_modules_count_passed_on_as_it_returned_it(run_action):
    """The module counts it (warm-up runs and short warm-ups included: tests/unit/plugins/modules/
    test_bench_module.py); the action neither counts nor second-guesses it."""
    def answers(args):
        answer = warmup_answer(args, seconds=0.0)
        if args["concurrency"] == [1]:  # trials that all failed after a warm-up that served
            for level in answer["levels"]:
                level.update(status="failed", metrics=None, reason="the benchmark client exited with code 1")
        answer["served_concurrency"] = {1: 3, 4: 5, 16: 16}[args["concurrency"][0]]
        return answer
    result, calls, _ = run_action(dict(ARGS, concurrency=[1, 4, 16]), answers)
    assert [c["served_concurrency"] for c in calls if c.get("state") != "client_released"] == [0, 3, 5]
    assert result["served_concurrency"] == 16 and len(result["warmup"]) == 1


def test_a_short_warm_up_is_shown_before_its_trial(run_action):
    def answers(args):
        answer = level_answer(args)
        answer["levels"][0]["warmup_run"] = {"concurrency": args["concurrency"][0], "status": "ok", "num_prompts": 8,
                                             "output_len": 8, "duration_s": 0.4}
        return answer
    _, _, shown = run_action(ARGS, answers)
    lines = [line for line in shown if "c=4" in line]
    assert "[h1] baseline: c=4 warm-up: 8 requests of 8 output tokens, ok" in lines[0] and "trial 1/2" in lines[1]


# Run in a process of its own: there scipy is not imported yet, and its math libraries start their threads.
SIGNAL_MASKS = r"""
import os, signal, sys
from ansible_collections.fleetopt.campaign.plugins.action import fleetopt_bench
quantiles = fleetopt_bench.t_quantiles(4)
tasks = os.listdir("/proc/self/task")
blocked = {}
for tid in tasks:
    mask = [l.split()[1] for l in open("/proc/self/task/%s/status" % tid) if l.startswith("SigBlk:")][0]
    blocked[int(tid)] = [int(s) for s in (signal.SIGINT, signal.SIGTERM) if int(mask, 16) >> (s - 1) & 1]
print(len(quantiles), len(tasks), blocked.pop(os.getpid()), sorted(set(map(tuple, blocked.values()))))
"""


def test_the_quantiles_leave_no_thread_that_takes_the_workers_interrupt():
    # Ansible's worker waits for the module in poll(); a SIGINT the kernel hands to a math library's thread instead
    # never wakes it, and Ctrl-C waited out the rest of the benchmark. Only the worker's own thread may take it.
    import os
    import subprocess
    import sys
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", SIGNAL_MASKS], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, check=False, env=env).stdout
    count, threads, main_blocked, others_blocked = out.split(" ", 3)
    assert count == "3" and int(threads) > 1, out  # threads started, so the test tells something
    assert main_blocked == "[]", out
    assert others_blocked.strip() == "[(2, 15)]", out
