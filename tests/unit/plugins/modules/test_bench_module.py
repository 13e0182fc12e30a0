import json
import os
import signal
import subprocess
import sys
import time

import pytest

from helpers import FIXTURES, pid_gone
from module_runner import module_command, run_module

RESULT = str(FIXTURES / "vllm" / "bench-serve-0.32.0-c4.json")


def bench(python, tmp_path, **extra):
    """A benchmark call; without warm-up runs (max_warmup_runs 0) unless the test asks for them."""
    args = dict(engine="vllm", python=python, base_url="http://127.0.0.1:9", served_model_name="m",
                tokenizer=str(tmp_path), concurrency=[1, 4], result_dir=str(tmp_path / "bench"), name="v",
                max_warmup_runs=0)
    args.update(extra)
    return run_module("fleetopt_bench", args)


def test_each_level_is_run_and_normalized(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0.1, "bench"]], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, trials=2)
    assert [(lv["concurrency"], lv["trial"], lv["status"]) for lv in result["levels"]] == [
        (1, 1, "ok"), (1, 2, "ok"), (4, 1, "ok"), (4, 2, "ok")]
    metrics = result["levels"][0]["metrics"]
    recorded = json.load(open(RESULT))
    assert metrics["output_throughput"] == recorded["output_throughput"]
    assert metrics["total_throughput"] == recorded["total_token_throughput"]
    assert metrics["mean_e2e_latency_ms"] == recorded["mean_e2el_ms"]
    assert result["levels"][2]["num_prompts"] == 40  # 10 per unit of concurrency, at least 32
    # 2 per unit of concurrency, at least 8, before a level's first trial only (the next follows it at once)
    assert [lv["warmups"] for lv in result["levels"]] == [8, 0, 8, 0]
    every = bench(python, tmp_path, trials=2, concurrency=[1], warmup_every_trial=True, name="every")
    assert [lv["warmups"] for lv in every["levels"]] == [8, 8]
    assert "--max-concurrency" in result["client"] and result["server_died"] is False


def test_each_run_records_the_board_power_of_its_measured_window_and_tokens_per_joule(
        scripted_python, fake_nvidia_smi, tmp_path):
    python = scripted_python({"lines": [[0.6, "bench"]], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[4], nvidia_smi=fake_nvidia_smi, power_interval_ms=20)
    level = result["levels"][0]
    assert level["status"] == "ok" and level["power"]["status"] == "ok", level
    assert level["power"]["gpu_mean_w"] == {"0": 300.0, "1": 100.0} and level["power"]["field"] == "power.draw.instant"
    assert level["metrics"]["board_power_w"] == 400.0
    recorded = json.load(open(RESULT))
    assert level["metrics"]["output_tokens_per_joule"] == round(recorded["output_throughput"] / 400.0, 4)
    assert result["power"]["sampled"] is True and result["power"]["gpus"] == [0, 1]


def test_a_host_without_nvidia_smi_is_benchmarked_without_power_and_says_why(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0.1, "bench"]], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[4], nvidia_smi=str(tmp_path / "no-nvidia-smi"))
    level = result["levels"][0]
    assert level["status"] == "ok" and "power" not in level and "board_power_w" not in level["metrics"]
    assert result["power"]["sampled"] is False and "no-nvidia-smi" in result["power"]["reason"]


def test_zero_completed_requests_is_a_failure_with_a_reason(scripted_python, tmp_path):
    empty = tmp_path / "empty.json"
    data = json.load(open(RESULT))
    data.update(completed=0, failed=40)
    empty.write_text(json.dumps(data))
    python = scripted_python({"lines": [], "client_result": str(empty), "exit_code": 0})
    level = bench(python, tmp_path, concurrency=[4])["levels"][0]
    assert level["status"] == "failed" and "completed no request" in level["reason"]
    assert level["metrics"] is None


def test_a_failing_client_fails_its_level_with_its_output(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0, "ConnectionRefusedError: [Errno 111]"]], "exit_code": 1})
    level = bench(python, tmp_path, concurrency=[1])["levels"][0]
    assert level["status"] == "failed"
    assert "exited with code 1" in level["reason"] and "ConnectionRefusedError" in level["reason"]


def test_server_dying_mid_run_fails_that_level_and_skips_the_rest(scripted_python, tmp_path):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"], start_new_session=True)
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1, 4, 16], server_pid=server.pid)
    server.wait()
    assert not result.get("failed"), "a dead server fails the level, not the module"
    assert result["server_died"] is True
    assert [lv["status"] for lv in result["levels"]] == ["failed", "skipped", "skipped"]
    assert result["levels"][0]["reason"] == "the server exited during the benchmark"


def test_check_mode_runs_nothing(tmp_path):
    checked = run_module("fleetopt_bench", dict(engine="vllm", python="/x", base_url="u", served_model_name="m",
                                                tokenizer="/t", concurrency=[1], result_dir=str(tmp_path / "c"), name="v"),
                         check_mode=True)
    assert checked["levels"] == [] and not (tmp_path / "c").exists()
    # The action plugin hands check mode to the module as it is: no quantiles, and none needed.
    sequential = run_module("fleetopt_bench", dict(engine="vllm", python="/x", base_url="u", served_model_name="m",
                                                   tokenizer="/t", concurrency=[1], result_dir=str(tmp_path / "c"), name="v",
                                                   trials=2, max_trials=4, target_halfwidth_pct=3.0), check_mode=True)
    assert not sequential.get("failed") and sequential["levels"] == [], sequential


def test_a_run_that_times_out_ends_the_benchmark(scripted_python, tmp_path):
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    started = time.time()
    result = bench(python, tmp_path, concurrency=[1, 4, 16], trials=2, level_timeout=1)
    assert time.time() - started < 10, "one time-out, not one per run"
    assert result["timed_out"] is True
    assert [lv["status"] for lv in result["levels"]] == ["failed"] + ["skipped"] * 5
    assert result["levels"][1]["reason"] == "an earlier run timed out"


def client_pids(tmp_path):
    """Live processes of the scripted client (its folder is under this test's tmp_path)."""
    found = []
    for name in os.listdir("/proc"):
        try:
            argv = open("/proc/%s/cmdline" % name, "rb").read().decode(errors="replace")
            state = open("/proc/%s/stat" % name).read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "fleetopt_bench_client.py" in argv and str(tmp_path) in argv and state not in ("Z", "X"):
            found.append(int(name))
    return found


def start_bench_process(python, tmp_path, parent_shell=False, **extra):
    args = dict(engine="vllm", python=python, base_url="http://127.0.0.1:9", served_model_name="m",
                tokenizer=str(tmp_path), concurrency=[1], result_dir=str(tmp_path / "bench"), name="v",
                lease_path=str(tmp_path / "lease"), lease_s=60, **extra)
    payload = json.dumps({"ANSIBLE_MODULE_ARGS": args})
    argv = module_command("fleetopt_bench")
    if parent_shell:
        # A parent that goes away without a word, as Ansible does when it is SIGKILLed.
        argv = [sys.executable, "-c", "import subprocess, sys; subprocess.Popen(sys.argv[1:]).wait()"] + argv
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    proc.stdin.write(payload.encode())
    proc.stdin.close()
    deadline = time.time() + 20
    while not client_pids(tmp_path) and time.time() < deadline:
        time.sleep(0.1)
    assert client_pids(tmp_path), "the client never started"
    return proc


def wait_gone(tmp_path, timeout=5.0):
    deadline = time.time() + timeout
    while client_pids(tmp_path) and time.time() < deadline:
        time.sleep(0.1)
    return not client_pids(tmp_path)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupted_benchmark_stops_its_client(scripted_python, tmp_path, signum):
    proc = start_bench_process(scripted_python({"lines": [[60, "never"]], "exit_code": 0}), tmp_path)
    assert (tmp_path / "lease").exists(), "the lease is renewed when the benchmark starts"
    os.killpg(proc.pid, signum)  # as a terminal sends Ctrl-C: to the whole foreground group
    proc.wait(timeout=10)
    assert wait_gone(tmp_path), "the client outlived the module that owned it"


def test_a_benchmark_whose_parent_died_stops_its_client(scripted_python, tmp_path):
    shell = start_bench_process(scripted_python({"lines": [[60, "never"]], "exit_code": 0}), tmp_path, parent_shell=True)
    os.kill(shell.pid, signal.SIGKILL)  # the module's parent only; nothing else is signalled
    shell.wait()
    assert wait_gone(tmp_path), "the client outlived the Ansible that started it"


def test_the_client_is_called_the_way_the_installed_release_expects(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "exit_code": 1})
    old = run_module("fleetopt_bench", dict(engine="sglang", engine_version="0.5.9", python=python,
                                            base_url="http://127.0.0.1:9", served_model_name="m", tokenizer=str(tmp_path),
                                            concurrency=[1], result_dir=str(tmp_path / "a"), name="v"))
    new = run_module("fleetopt_bench", dict(engine="sglang", engine_version="0.5.23", python=python,
                                            base_url="http://127.0.0.1:9", served_model_name="m", tokenizer=str(tmp_path),
                                            concurrency=[1], result_dir=str(tmp_path / "b"), name="v"))
    assert old["client"][1:3] == ["-m", "sglang.bench_serving"]
    assert new["client"][1:3] == ["-m", "sglang.benchmark.serving"]


def client_pid(folder):
    """The PID the kept client of `folder` recorded in its identity."""
    return json.loads((folder / "identity.json").read_text())["process"]["pid"]


def client_identity(tmp_path, name="v"):
    return client_pid(tmp_path / "bench" / (".client-" + name))


def shared_identity(tmp_path):
    return client_pid(tmp_path / "client")


def test_one_client_process_serves_every_run_of_a_cell(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    first = bench(python, tmp_path, runs=[[1, 1]], keep_client=True)
    pid = client_identity(tmp_path)
    second = bench(python, tmp_path, runs=[[1, 2]], keep_client=True)
    assert client_identity(tmp_path) == pid, "the second run started a new client"
    assert [first["levels"][0]["client_started"], second["levels"][0]["client_started"]] == [True, False]
    assert first["levels"][0]["status"] == second["levels"][0]["status"] == "ok"
    last = bench(python, tmp_path, runs=[[4, 1]])
    assert last["levels"][0]["client_started"] is False and last["levels"][0]["status"] == "ok"
    assert pid_gone(pid), "the client outlived the cell's last run"


def test_cells_that_give_one_client_folder_share_its_process_until_it_is_released(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    first = bench(python, tmp_path, runs=[[1, 1]], keep_client=True, name="baseline", client_dir=str(tmp_path / "client"))
    pid = shared_identity(tmp_path)
    second = bench(python, tmp_path, runs=[[1, 1]], keep_client=True, name="torch_compile", client_dir=str(tmp_path / "client"))
    assert shared_identity(tmp_path) == pid, "the next cell started a client of its own"
    assert [first["levels"][0]["client_started"], second["levels"][0]["client_started"]] == [True, False]
    assert (tmp_path / "bench" / "torch_compile-c1-t1.json").exists(), "the next cell's result went elsewhere"
    # Only what the release needs: no server, no cell.
    released = run_module("fleetopt_bench", dict(engine="vllm", python=python, result_dir=str(tmp_path / "bench"),
                                                 client_dir=str(tmp_path / "client"), state="client_released"))
    assert released["changed"] is True and pid_gone(pid), "the released client is still running"
    again = run_module("fleetopt_bench", dict(engine="vllm", python=python, result_dir=str(tmp_path / "bench"),
                                              client_dir=str(tmp_path / "client"), state="client_released"))
    assert again["changed"] is False


def test_a_client_started_ahead_imports_the_engines_client_meanwhile_and_serves_the_first_run(scripted_python, tmp_path):
    imports, go = tmp_path / "imports", tmp_path / "import-go"
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0,
                              "imports_file": str(imports), "import_go_file": str(go)})
    start = dict(engine="vllm", python=python, client_dir=str(tmp_path / "client"), state="client_started")
    started = run_module("fleetopt_bench", start)
    pid = shared_identity(tmp_path)
    assert started["changed"] is True and started["client_pid"] == pid and not pid_gone(pid)
    assert started["preloading"][0] == "vllm.entrypoints.cli.main", started
    # It returned while the client's imports go on (as a server's start-up would go on meanwhile).
    deadline = time.time() + 10
    while not imports.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert imports.read_text().split() == ["vllm.entrypoints.cli.main"], "the import did not start, or did not wait"
    assert run_module("fleetopt_bench", start)["changed"] is False, "a running client was started again"
    go.touch()
    first = bench(python, tmp_path, runs=[[1, 1]], keep_client=True, client_dir=str(tmp_path / "client"))
    assert first["levels"][0]["status"] == "ok" and first["levels"][0]["client_started"] is False
    assert shared_identity(tmp_path) == pid
    # Each module imported once under its own name, then the run executed the client's module as `python -m` does.
    assert imports.read_text().split() == list(started["preloading"]) + ["__main__"]
    run_module("fleetopt_bench", dict(engine="vllm", client_dir=str(tmp_path / "client"), state="client_released"))
    assert pid_gone(pid)


def test_a_release_stops_a_client_still_busy_with_a_run(scripted_python, tmp_path):
    # A benchmark module killed outright (SIGKILL reaches no handler) leaves its client mid-run.
    python = scripted_python({"lines": [[60, "never"]], "exit_code": 0})
    module = start_bench_process(python, tmp_path, client_dir=str(tmp_path / "client"))
    os.killpg(module.pid, signal.SIGKILL)
    module.wait()
    pid = shared_identity(tmp_path)
    assert not pid_gone(pid)
    started = time.time()
    # All a release needs, as stop_servers.yml has it: no interpreter, no server, no cell.
    released = run_module("fleetopt_bench", dict(engine="vllm", client_dir=str(tmp_path / "client"), state="client_released"))
    assert released["changed"] is True and pid_gone(pid), "a busy client outlived its release"
    assert time.time() - started < 10 and wait_gone(tmp_path)


def test_a_client_started_with_another_environment_is_replaced_not_shared(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    bench(python, tmp_path, runs=[[1, 1]], keep_client=True, name="a", client_dir=str(tmp_path / "client"))
    pid = shared_identity(tmp_path)
    keyed = bench(python, tmp_path, runs=[[1, 1]], keep_client=True, name="b", client_dir=str(tmp_path / "client"), api_key="sk-test")
    assert keyed["levels"][0]["client_started"] is True and keyed["levels"][0]["status"] == "ok"
    assert pid_gone(pid), "the client without the key still answers this folder's requests"
    identity = (tmp_path / "client" / "identity.json").read_text()
    assert "sk-test" not in identity
    bench(python, tmp_path, runs=[[1, 1]], name="c", client_dir=str(tmp_path / "client"), api_key="sk-test")


def test_a_kept_client_left_alone_exits_after_its_idle_time(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    bench(python, tmp_path, runs=[[1, 1]], keep_client=True, client_dir=str(tmp_path / "client"), client_idle_s=1)
    pid = shared_identity(tmp_path)
    assert not pid_gone(pid), "the kept client did not wait for a next run"
    assert wait_gone(tmp_path, timeout=10) and pid_gone(pid), "an idle client outlived its idle time by far"


@pytest.mark.parametrize("args, message", [
    (dict(state="client_released", result_dir="/tmp"), "state=client_released needs client_dir, or result_dir and name"),
    (dict(state="client_started", name="v"), "state=client_started needs client_dir, or result_dir and name"),
    (dict(name="v"), "state is measured but all of the following are missing: base_url"),
])
def test_a_call_missing_what_it_needs_is_refused(args, message):
    result = run_module("fleetopt_bench", dict(engine="vllm", python=sys.executable, **args))
    assert result.get("failed") and message in result["msg"], result


def test_a_client_that_dies_mid_run_fails_that_run_and_is_replaced(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0.2, "Fatal Python error: Segmentation fault"]], "exit_code": None})
    started = time.time()
    # Killed once it has written its last words, as a crashing interpreter would.
    killer = subprocess.Popen([sys.executable, "-c", "import sys,time,os,signal,json\n"
                               "p, out = sys.argv[1:3]\n"
                               "while not (os.path.exists(out) and b'Segmentation' in open(out, 'rb').read()):\n"
                               "    time.sleep(0.05)\n"
                               "os.kill(json.load(open(p))['process']['pid'], signal.SIGKILL)",
                               str(tmp_path / "bench" / ".client-v" / "identity.json"),
                               str(tmp_path / "bench" / "v-c1-t1.out")])
    crashed = bench(python, tmp_path, runs=[[1, 1]], keep_client=True, level_timeout=30)
    killer.wait()
    level = crashed["levels"][0]
    assert time.time() - started < 15, "a dead client is noticed, not waited out"
    assert level["status"] == "failed" and "exited without finishing the run" in level["reason"]
    assert "Segmentation fault" in level["reason"]
    again = bench(scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0}, name="python2"),
                  tmp_path, runs=[[1, 2]])
    assert again["levels"][0]["client_started"] is True and again["levels"][0]["status"] == "ok"


def test_the_clients_cpu_use_is_recorded_and_a_busy_client_flagged(scripted_python, tmp_path):
    idle = bench(scripted_python({"lines": [[1.0, "waiting"]], "client_result": RESULT, "exit_code": 0}),
                 tmp_path, runs=[[1, 1]], name="idle")["levels"][0]
    busy = bench(scripted_python({"lines": [], "busy_s": 1.0, "client_result": RESULT, "exit_code": 0}, name="p2"),
                 tmp_path, runs=[[1, 1]], name="busy")["levels"][0]
    # CPU seconds are the client's own on any host; its share of the run's wall time is what a loaded host changes.
    assert busy["client_cpu_s"] >= 0.95 and idle["client_cpu_s"] < busy["client_cpu_s"] - 0.5, (idle, busy)
    for level in (idle, busy):
        assert level["client_cpu_share"] == pytest.approx(level["client_cpu_s"] / level["client_run_s"], abs=0.01)
        # Flagged when its share of one core reaches the module's threshold.
        assert level["client_bound"] is (level["client_cpu_share"] >= 0.9), level
    assert idle["client_bound"] is False, idle
    # And what the host's hypervisor took from it meanwhile, read from this Linux host's /proc/stat.
    for level in (idle, busy):
        assert isinstance(level["host_steal_share"], float) and 0 <= level["host_steal_share"] <= 1, level


def test_the_slos_reach_the_client_as_its_goodput_option(scripted_python, tmp_path):
    python = scripted_python({"lines": [[0.1, "bench"]], "client_result": RESULT, "exit_code": 0})
    slo = {"p99_ttft_ms": 2000.0, "p99_tpot_ms": 50.0, "p99_itl_ms": 30.0}
    result = bench(python, tmp_path, concurrency=[1], slo=slo)
    assert result["client"][-3:] == ["--goodput", "ttft:2000", "tpot:50"]
    assert result["levels"][0]["status"] == "ok" and "request_goodput" in result["levels"][0]["metrics"]
    assert "--goodput" not in bench(python, tmp_path, concurrency=[1], name="plain")["client"]


def test_an_slo_fleetopt_does_not_know_is_refused(tmp_path):
    result = bench(sys.executable, tmp_path, concurrency=[1], slo={"p50_ttft_ms": 10.0})
    assert result.get("failed") and "p50_ttft_ms" in result["msg"]


def results_with_throughputs(tmp_path, values):
    """Recorded client results that differ only in output throughput, one per run's seed."""
    paths = []
    for number, value in enumerate(values):
        data = json.load(open(RESULT))
        data["output_throughput"] = value
        path = tmp_path / ("result-%d.json" % number)
        path.write_text(json.dumps(data))
        paths.append(str(path))
    return paths


def t_quantiles(max_trials):
    from scipy import stats
    return [float(stats.t.ppf(0.975, df)) for df in range(1, max_trials)]


def test_a_level_gets_more_trials_until_its_interval_is_narrow_enough(scripted_python, tmp_path):
    # Equal throughputs: after the planned trial and one more, the interval has no width.
    python = scripted_python({"lines": [], "client_results": results_with_throughputs(tmp_path, [100.0]), "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1, 4], trials=1, max_trials=4, target_halfwidth_pct=3.0,
                   t_quantiles=t_quantiles(4))
    assert [(lv["concurrency"], lv["trial"]) for lv in result["levels"]] == [(1, 1), (1, 2), (4, 1), (4, 2)]
    assert [(pr["concurrency"], pr["trials"], pr["ok_trials"], pr["stopped_by"]) for pr in result["precision"]] == [
        (1, 2, 2, "target"), (4, 2, 2, "target")]
    assert result["precision"][0]["halfwidth_pct"] == 0.0


def test_a_level_that_stays_noisy_stops_at_the_trial_budget_with_scipys_interval(scripted_python, tmp_path):
    values = [100.0, 200.0, 100.0, 200.0]
    python = scripted_python({"lines": [], "client_results": results_with_throughputs(tmp_path, values), "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[4], trials=2, max_trials=3, target_halfwidth_pct=3.0,
                   t_quantiles=t_quantiles(3))
    assert [lv["trial"] for lv in result["levels"]] == [1, 2, 3]
    precision = result["precision"][0]
    from scipy import stats
    measured = values[:3]
    mean = sum(measured) / 3
    expected = stats.t.ppf(0.975, 2) * stats.sem(measured) / mean * 100
    assert precision["stopped_by"] == "budget" and precision["trials"] == 3
    assert abs(precision["halfwidth_pct"] - expected) < 1e-9, precision


def test_without_a_target_a_level_gets_its_planned_trials(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[4], trials=2, max_trials=4)
    assert [lv["trial"] for lv in result["levels"]] == [1, 2]
    assert result["precision"][0]["stopped_by"] == "off"


def test_sequential_trials_need_the_controllers_t_quantiles(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[4], trials=2, max_trials=4, target_halfwidth_pct=3.0,
                   t_quantiles=[12.7])
    assert result.get("failed") and "needs t_quantiles" in result["msg"], result


def test_a_run_that_ends_the_benchmark_mid_level_skips_the_rest_of_the_plan(scripted_python, tmp_path):
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1, 4], trials=2, max_trials=4, target_halfwidth_pct=3.0,
                   t_quantiles=t_quantiles(4), level_timeout=1)
    assert result["timed_out"] is True
    assert [(lv["concurrency"], lv["trial"], lv["status"]) for lv in result["levels"]] == [
        (1, 1, "failed"), (1, 2, "skipped"), (4, 1, "skipped"), (4, 2, "skipped")]
    assert result["precision"][0]["stopped_by"] == "ended"


def test_a_level_warms_up_only_above_every_concurrency_the_server_has_served(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0})
    # A fresh server: its first level gets at least min_warmups; a later, higher level one wave
    # of warmup_per_concurrency * c; a level no higher than one already served, none.
    fresh = bench(python, tmp_path, concurrency=[4, 1, 16], warmup_per_concurrency=1, name="fresh")
    assert [lv["warmups"] for lv in fresh["levels"]] == [8, 0, 16]
    assert fresh["served_concurrency"] == 16
    # A call that continues a benchmark (the action plugin's next level) says what was served.
    later = bench(python, tmp_path, concurrency=[4, 6], warmup_per_concurrency=1, served_concurrency=4, name="later")
    assert [lv["warmups"] for lv in later["levels"]] == [0, 6]
    assert later["served_concurrency"] == 6
    higher = bench(python, tmp_path, concurrency=[2], served_concurrency=8, name="higher")
    assert higher["served_concurrency"] == 8, "what earlier calls served still counts"


WARMUP_SEED = 1000000  # fleetopt_warmup.WARMUP_SEED_OFFSET: warm-up run k has seed + WARMUP_SEED + k - 1


def warmup_scenario(tmp_path, warmup_throughputs, **extra):
    """A client whose warm-up runs (by their seeds) record these throughputs (None: a run that completed
    no request), and whose trials record RESULT."""
    by_seed = {}
    for number, value in enumerate(warmup_throughputs):
        data = json.load(open(RESULT))
        if value is None:
            data.update(completed=0, failed=data["completed"])
        else:
            data["output_throughput"] = value
        path = tmp_path / ("warmup-%d.json" % number)
        path.write_text(json.dumps(data))
        by_seed[str(WARMUP_SEED + number)] = str(path)
    return dict({"lines": [], "client_result": RESULT, "client_results_by_seed": by_seed, "exit_code": 0}, **extra)


def test_a_new_server_warms_up_until_two_consecutive_runs_agree(scripted_python, tmp_path):
    python = scripted_python(warmup_scenario(tmp_path, [100.0, 150.0, 160.0, 161.0]))
    result = bench(python, tmp_path, concurrency=[4, 16], trials=2, max_warmup_runs=5, warmup_settle_pct=10.0)
    warmup = result["warmup"]
    assert len(warmup) == 1 and warmup[0]["concurrency"] == 4, "only the new server's first level warms up so"
    record = warmup[0]
    assert [run["output_throughput"] for run in record["runs"]] == [100.0, 150.0, 160.0]
    assert record["settled"] is True and record["stopped_by"] == "settled" and "within 10 %" in record["reason"]
    assert [run["change_pct"] for run in record["runs"]] == [None, 40.0, 6.45]
    # Whole runs of their own: one wave at least (min_warmups 8 here), their own seeds and files, not trials.
    assert [run["num_prompts"] for run in record["runs"]] == [8, 8, 8]
    assert [run["seed"] for run in record["runs"]] == [WARMUP_SEED, WARMUP_SEED + 1, WARMUP_SEED + 2]
    assert record["runs"][0]["result_file"].endswith("v-c4-w1.json") and record["runs"][0]["client_started"] is True
    assert record["duration_s"] == pytest.approx(sum(run["duration_s"] for run in record["runs"]), abs=1e-3)
    assert [(lv["concurrency"], lv["trial"]) for lv in result["levels"]] == [(4, 1), (4, 2), (16, 1), (16, 2)]
    # After the warm-up the first trial is no longer a new server's: no requests of the old fixed warm-up
    # before it; a higher level still gets its one wave.
    assert [lv["warmups"] for lv in result["levels"]] == [0, 0, 32, 0]
    assert result["levels"][0]["client_started"] is False


def test_a_warm_up_that_never_settles_stops_at_its_cap(scripted_python, tmp_path):
    python = scripted_python(warmup_scenario(tmp_path, [100.0, 130.0, 100.0, 130.0]))
    result = bench(python, tmp_path, concurrency=[1], max_warmup_runs=3, warmup_settle_pct=5.0)
    record = result["warmup"][0]
    assert len(record["runs"]) == 3 and record["settled"] is False and record["stopped_by"] == "cap"
    assert "3 runs made, the most allowed" in record["reason"]
    assert [lv["status"] for lv in result["levels"]] == ["ok"] and result["levels"][0]["warmups"] == 0


def test_a_failed_warm_up_run_ends_the_warm_up_and_the_trials_warm_up_as_before(scripted_python, tmp_path):
    python = scripted_python(warmup_scenario(tmp_path, [100.0, None, 100.0]))
    result = bench(python, tmp_path, concurrency=[1], trials=2, max_warmup_runs=4, warmup_settle_pct=10.0)
    record = result["warmup"][0]
    assert [run["status"] for run in record["runs"]] == ["ok", "failed"]
    assert record["settled"] is False and record["stopped_by"] == "failed"
    assert "warm-up run 2 failed" in record["reason"] and "completed no request" in record["reason"]
    assert [lv["status"] for lv in result["levels"]] == ["ok", "ok"] and not result.get("failed")
    # The first run succeeded, so the server has served: the trials follow it without more warm-up.
    assert [lv["warmups"] for lv in result["levels"]] == [0, 0]
    # A server whose every warm-up run failed is still new: its first trial gets the fixed warm-up.
    failing = bench(scripted_python(warmup_scenario(tmp_path, [None]), name="p2"), tmp_path, concurrency=[1],
                    max_warmup_runs=4, name="failing")
    assert failing["warmup"][0]["stopped_by"] == "failed" and failing["levels"][0]["warmups"] == 8


def test_a_server_that_dies_during_the_warm_up_ends_the_benchmark(scripted_python, tmp_path):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"], start_new_session=True)
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1, 4], server_pid=server.pid, max_warmup_runs=4)
    server.wait()
    assert not result.get("failed") and result["server_died"] is True
    record = result["warmup"][0]
    assert record["stopped_by"] == "ended" and record["settled"] is False
    assert record["reason"] == "the server had exited"
    assert record["runs"][0]["reason"] == "the server exited during the benchmark"
    assert [lv["status"] for lv in result["levels"]] == ["skipped", "skipped"]


def test_a_warm_up_run_that_times_out_ends_the_benchmark_once(scripted_python, tmp_path):
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    started = time.time()
    result = bench(python, tmp_path, concurrency=[1, 4], trials=2, level_timeout=1, max_warmup_runs=4)
    assert time.time() - started < 10
    assert result["timed_out"] is True and result["warmup"][0]["stopped_by"] == "ended"
    assert len(result["warmup"][0]["runs"]) == 1
    assert [lv["status"] for lv in result["levels"]] == ["skipped"] * 4
    assert result["levels"][0]["reason"] == "an earlier run timed out"


def test_a_server_that_has_served_and_given_runs_warm_up_as_their_call_says(scripted_python, tmp_path):
    python = scripted_python(warmup_scenario(tmp_path, [100.0, 100.0]))
    served = bench(python, tmp_path, concurrency=[4], served_concurrency=1, max_warmup_runs=4, name="served")
    assert served["warmup"] == [] and served["levels"][0]["warmups"] == 8  # one wave of 2 x 4 above c=1
    given = bench(python, tmp_path, runs=[[4, 1], [4, 2]], max_warmup_runs=4, name="given")
    assert [len(w["runs"]) for w in given["warmup"]] == [2] and given["warmup"][0]["settled"] is True
    assert [lv["warmups"] for lv in given["levels"]] == [0, 0]
    off = bench(python, tmp_path, concurrency=[4], max_warmup_runs=0, name="off")
    assert off["warmup"] == [] and off["levels"][0]["warmups"] == 8


def test_by_default_a_new_server_warms_up_until_it_settles(scripted_python, tmp_path):
    python = scripted_python(warmup_scenario(tmp_path, [100.0, 100.0]))
    result = run_module("fleetopt_bench", dict(engine="vllm", python=python, base_url="http://127.0.0.1:9",
                                               served_model_name="m", tokenizer=str(tmp_path), concurrency=[4],
                                               result_dir=str(tmp_path / "bench"), name="v"))
    assert result["warmup"][0]["settled"] is True and len(result["warmup"][0]["runs"]) == 2


def test_negative_warm_up_settings_are_refused(tmp_path):
    result = bench(sys.executable, tmp_path, concurrency=[1], max_warmup_runs=-1)
    assert result.get("failed") and "cannot be negative" in result["msg"]
    result = bench(sys.executable, tmp_path, concurrency=[1], warmup_output_len=-8)
    assert result.get("failed") and "cannot be negative" in result["msg"]


def test_short_warm_ups_are_a_run_of_their_own_with_their_own_prompts_and_output_length(scripted_python, tmp_path):
    python = scripted_python({"lines": [], "client_result": RESULT, "exit_code": 0, "echo_args": True})
    result = bench(python, tmp_path, concurrency=[1, 4], trials=2, warmup_per_concurrency=1, warmup_output_len=8,
                   output_len=64, seed=5)
    # The same warm-up requests as before (8 for the new server's first level, one wave above it, none after a
    # level's first trial), each sent with 8 output tokens in a run of its own just before the trial.
    assert [lv["warmups"] for lv in result["levels"]] == [8, 0, 4, 0]
    first, _, higher, _ = result["levels"]
    assert [(w["num_prompts"], w["output_len"], w["seed"], w["status"]) for w in (first["warmup_run"], higher["warmup_run"])] \
        == [(8, 8, 5 + WARMUP_SEED, "ok"), (4, 8, 5 + WARMUP_SEED, "ok")]
    assert "warmup_run" not in result["levels"][1] and "warmup_run" not in result["levels"][3]
    warmup_args = open(first["warmup_run"]["result_file"][:-len(".json")] + ".out").read()
    assert "'--random-output-len', '8'" in warmup_args and "'--num-prompts', '8'" in warmup_args, warmup_args
    trial_args = open(first["result_file"][:-len(".json")] + ".out").read()
    assert "'--num-warmups', '0'" in trial_args and "'--random-output-len', '64'" in trial_args, trial_args
    # The client started for the warm-up run, so the trial did not start it; the client's command line is a trial's.
    assert first["warmup_run"]["client_started"] is True and first["client_started"] is False
    assert first["warmup_run"]["client_run_s"] > 0 and "--random-output-len 64" in " ".join(result["client"])


def test_a_failed_short_warm_up_sends_the_warm_ups_inside_the_trial_instead(scripted_python, tmp_path):
    python = scripted_python(warmup_scenario(tmp_path, [None]))
    result = bench(python, tmp_path, concurrency=[1], warmup_output_len=8)
    level = result["levels"][0]
    assert level["warmup_run"]["status"] == "failed" and "completed no request" in level["warmup_run"]["reason"]
    assert level["status"] == "ok" and level["warmups"] == 8


def test_a_server_that_dies_during_a_short_warm_up_ends_the_benchmark(scripted_python, tmp_path):
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.0)"], start_new_session=True)
    python = scripted_python({"lines": [[30, "never"]], "exit_code": 0})
    result = bench(python, tmp_path, concurrency=[1, 4], server_pid=server.pid, warmup_output_len=8)
    server.wait()
    assert result["server_died"] is True and not result.get("failed")
    assert [lv["status"] for lv in result["levels"]] == ["skipped", "skipped"]
    assert result["levels"][0]["warmup_run"]["reason"] == "the server exited during the benchmark"


def failing_trials(tmp_path, warmup_throughputs):
    """A client whose warm-up runs succeed (fleetopt_warmup's seeds) and whose trials complete no request."""
    failed = json.load(open(RESULT))
    failed.update(completed=0, failed=failed["completed"])
    path = tmp_path / "failed-trial.json"
    path.write_text(json.dumps(failed))
    return dict(warmup_scenario(tmp_path, warmup_throughputs), client_result=str(path))


def test_a_server_that_completed_warm_up_runs_has_served_whatever_its_trials_did(scripted_python, tmp_path):
    python = scripted_python(failing_trials(tmp_path, [100.0, 101.0]))
    result = bench(python, tmp_path, concurrency=[4], max_warmup_runs=2)
    assert [lv["status"] for lv in result["levels"]] == ["failed"]
    assert result["served_concurrency"] == 4


def test_a_server_that_completed_a_short_warm_up_has_served_whatever_its_trial_did(scripted_python, tmp_path):
    python = scripted_python(failing_trials(tmp_path, [100.0]))
    result = bench(python, tmp_path, concurrency=[2], warmup_output_len=8)
    level = result["levels"][0]
    assert level["warmup_run"]["status"] == "ok" and level["status"] == "failed"
    assert result["served_concurrency"] == 2
    nothing = bench(scripted_python(failing_trials(tmp_path, [None]), name="p2"), tmp_path, concurrency=[2],
                    warmup_output_len=8, name="nothing")
    assert nothing["served_concurrency"] == 0, "a server that completed no run has served nothing"


def test_each_run_records_the_cpu_the_servers_session_spent_and_waited_for(scripted_python, tmp_path):
    # A server whose session burns CPU in a child process the whole time, and one that only sleeps.
    busy_server = subprocess.Popen([sys.executable, "-c", "import subprocess, sys; subprocess.run([sys.executable, '-c', "
                                    "'while True: pass'])"], start_new_session=True)
    idle_server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        python = scripted_python({"lines": [[1.0, "bench"]], "client_result": RESULT, "exit_code": 0})
        busy = bench(python, tmp_path, runs=[[1, 1]], name="busy", server_pid=busy_server.pid)["levels"][0]
        idle = bench(python, tmp_path, runs=[[1, 1]], name="idle", server_pid=idle_server.pid)["levels"][0]
    finally:
        for server in (busy_server, idle_server):
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
    assert busy["status"] == idle["status"] == "ok"
    # Over a run of at least 1 s the busy session's child ran, or waited for a CPU, most of the time.
    assert busy["server_cpu_s"] + busy["server_runqueue_wait_s"] >= 0.8 * busy["client_run_s"], busy
    assert idle["server_cpu_s"] < 0.1, idle
    no_server = bench(python, tmp_path, runs=[[1, 1]], name="none")["levels"][0]
    assert no_server["server_cpu_s"] is None and no_server["server_runqueue_wait_s"] is None
