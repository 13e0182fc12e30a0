"""fleetopt_bench's CPU placement: the kept client runs on the given CPUs, each run records the CPUs /proc says
its client was allowed, a client placed elsewhere is replaced, and a bad placement fails before anything runs."""
import os

import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_placement import allowed_cpus, format_cpu_list
from helpers import pid_gone
from module_runner import run_module
from test_bench_module import RESULT, bench, shared_identity

several_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a placement shows only on a host of 2 CPUs or more")


@several_cpus
def test_the_kept_client_runs_on_its_cpus_and_every_run_says_so(scripted_python, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    client_dir = str(tmp_path / "client")
    placed = bench(python, tmp_path, trials=2, concurrency=[1], keep_client=True, client_dir=client_dir,
                   cpus=str(cpus[-1]), max_warmup_runs=2, warmup_settle_pct=1000)
    pid = shared_identity(tmp_path)
    assert allowed_cpus(pid) == str(cpus[-1])
    runs = placed["warmup"][0]["runs"] + placed["levels"]
    assert len(runs) == 4 and [run["status"] for run in runs] == ["ok"] * 4
    assert [run["client_cpus"] for run in runs] == [str(cpus[-1])] * 4
    # The same folder asked for another CPU: that client is replaced by one placed there.
    moved = bench(python, tmp_path, runs=[[1, 1]], keep_client=True, client_dir=client_dir, cpus=[cpus[0]])
    assert moved["levels"][0]["client_started"] is True and pid_gone(pid)
    assert moved["levels"][0]["client_cpus"] == allowed_cpus(shared_identity(tmp_path)) == str(cpus[0])
    # And without a placement, a client the operating system places, recorded as such.
    free = bench(python, tmp_path, runs=[[1, 1]], client_dir=client_dir)
    assert free["levels"][0]["client_started"] is True
    assert free["levels"][0]["client_cpus"] == format_cpu_list(cpus)
    run_module("fleetopt_bench", dict(engine="vllm", client_dir=client_dir, state="client_released"))


@pytest.mark.parametrize("cpus, words", [
    ("1-0", "client_cpus: the range '1-0' runs backwards"),
    ([4096], "client_cpus: CPU 4096 not available on this host"),
])
def test_a_placement_the_host_cannot_give_fails_before_anything_runs(scripted_python, tmp_path, cpus, words):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1], cpus=cpus)
    assert result["failed"] is True and words in result["msg"]
    assert not (tmp_path / "bench").exists()
