"""The scripted engine (tests/scripted_engine) is what the orchestration tests take it for: started, read and
stopped by fleetopt_server as the real engine is, it states the configuration its real command line asks for (the
effective configuration fleetopt reads from the captured log it replays), it replays SGLang's captured start-ups as
well as vLLM's, a planted crash is classified from the captured crash log it prints, and its planted timing is what
vLLM's own benchmark client measures."""
import json

import pytest
import yaml

from helpers import ROOT, free_port, pid_gone, processes_listening_as
from module_runner import run_module
from scripted_engine import launches

pytestmark = pytest.mark.timed

SGLANG_LOGS = ROOT / "tests" / "fixtures" / "sglang" / "logs"


def server_args(python, engine, model, folder, port, flags, **extra):
    args = dict(name="scripted-%s" % engine, engine=engine, python=python, model=model, served_model_name="tiny",
                port=port, flags=flags,
                engine_spec=yaml.safe_load((ROOT / "library" / "engines" / ("%s.yml" % engine)).read_text()),
                log_path=str(folder / "server.log"), run_dir=str(folder / "run"), startup_timeout=60)
    args.update(extra)
    return args


def test_a_vllm_start_states_the_flags_it_was_given_and_a_stop_ends_it(scripted_engine, local_engine, tmp_path):
    python, port = scripted_engine(), free_port()
    args = server_args(python, "vllm", local_engine["model"], tmp_path, port,
                       {"--enforce-eager": True, "--dtype": "float32", "--max-model-len": 512, "--max-num-seqs": 3})
    started = run_module("fleetopt_server", args)
    server = started["server"]
    assert server["status"] == "ready", started
    assert {"launch", "engine_init", "weights", "kv_cache", "http"} <= set(server["phases"])
    settings = server["effective"]["settings"]
    assert (settings["dtype"], settings["enforce_eager"], settings["max_seq_len"], settings["compilation_mode"]) == (
        "torch.float32", True, 512, "CompilationMode.NONE"), settings
    log = (tmp_path / "server.log").read_text()
    assert "'max_num_seqs': 3" in log and "Starting vLLM server on http://127.0.0.1:%d" % port in log
    [(pid, flags)] = launches(scripted_engine.scenarios[0])
    assert pid == server["pid"] and flags["--max-num-seqs"] == "3"
    stopped = run_module("fleetopt_server", dict(args, state="stopped"))
    assert stopped["server"]["status"] == "stopped", stopped
    assert pid_gone(pid) and processes_listening_as(port) == []


@pytest.mark.parametrize("log", ["healthy_0.5.10_1gpu_piecewise.log", "h200/call2-main.log"])
def test_an_sglang_start_up_replays_to_ready(scripted_engine, local_engine, tmp_path, log):
    healthy = scripted_engine(log=str(SGLANG_LOGS / log))
    args = server_args(healthy, "sglang", local_engine["model"], tmp_path, free_port(), {})
    started = run_module("fleetopt_server", args)
    assert started["server"]["status"] == "ready", started
    # What the captured log states the server runs is read from it, as from the real server.
    assert started["server"]["effective"]["settings"], started["server"]["effective"]
    run_module("fleetopt_server", dict(args, state="stopped"))
    assert pid_gone(started["server"]["pid"])


def test_a_planted_sglang_crash_is_classified_from_the_captured_crash_log(scripted_engine, local_engine, tmp_path):
    # The captured CUDA-graph capture OOM, printed where the healthy log starts its capture.
    crashing = scripted_engine(log=str(SGLANG_LOGS / "healthy_0.5.10_1gpu_piecewise.log"),
                               fail={"kind": "crash", "at": "Capture cuda graph begin",
                                     "lines_from": str(SGLANG_LOGS / "cuda_oom_capture.log"), "exit_code": 1})
    result = run_module("fleetopt_server", server_args(crashing, "sglang", local_engine["model"], tmp_path / "crash",
                                                       free_port(), {}))
    assert result["failed"] is True and result["server"]["status"] == "crashed", result
    assert result["server"]["failure"]["failure_class"] == "cuda_oom", result["server"]["failure"]


def test_the_planted_timing_is_what_vllms_client_measures(scripted_engine, local_engine, tmp_path):
    python, port = scripted_engine(ttft_s=0.05, per_token_s=0.02), free_port()
    args = server_args(python, "vllm", local_engine["model"], tmp_path, port, {"--max-num-seqs": 1})
    assert run_module("fleetopt_server", args)["server"]["status"] == "ready"
    try:
        bench = run_module("fleetopt_bench", dict(
            engine="vllm", python=python, base_url="http://127.0.0.1:%d" % port, served_model_name="tiny",
            tokenizer=local_engine["model"], concurrency=[2], trials=1, input_len=16, output_len=11,
            prompts_per_concurrency=2, min_prompts=4, result_dir=str(tmp_path / "bench"), name="timing"))
    finally:
        run_module("fleetopt_server", dict(args, state="stopped"))
    [level] = bench["levels"]
    metrics = level["metrics"]
    assert level["status"] == "ok" and metrics["completed"] == 4, level
    # 10 gaps of 20 ms after a first token at 50 ms; one sequence at a time, so at c=2 a request waits for the other.
    assert 19 < metrics["mean_tpot_ms"] < 26, metrics
    assert 250 < metrics["p99_ttft_ms"] < 400, metrics
    raw = json.loads(next((tmp_path / "bench").glob("*.json")).read_text())
    assert raw["failed"] == 0
