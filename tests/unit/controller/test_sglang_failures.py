"""library/engines/sglang.yml: start-up phases and the failure knowledge base, on fixtures.

The fixtures (tests/fixtures/sglang/logs, written by make_fixtures.py) follow SGLang's log
formats: ranks TP0..TP7 interleaved, tqdm redraws on one line, tracebacks from every rank.
"""
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt.classify import feed_whole

ROOT = pathlib.Path(__file__).resolve().parents[3]
LOGS = ROOT / "tests" / "fixtures" / "sglang" / "logs"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
REQUIRED_CLASSES = {
    "dynamo_untraceable_jit", "dynamo_fullgraph_graph_break", "cuda_oom", "unsupported_arch",
    "invalid_server_args", "nccl_error", "driver_mismatch", "port_in_use", "warmup_failed",
}
SYMPTOMS = {"scheduler_exception", "child_failed", "scheduler_dead", "init_failed", "killed"}


def watch(name=None, text=None):
    watcher = LogWatcher(SPEC)
    if name:
        with open(LOGS / name, encoding="utf-8", newline="") as handle:
            text = handle.read()
    return feed_whole(watcher, text)


# fixture -> failure class, verdict, phase at the root cause
CRASHES = {
    "seed_step1_nvcc_subprocess.log": ("dynamo_untraceable_jit", "blocked", "piecewise_compile"),
    "seed_step2_posix_stat.log": ("dynamo_untraceable_jit", "blocked", "piecewise_compile"),
    "seed_step3_fullgraph_disable.log": ("dynamo_fullgraph_graph_break", "blocked", "piecewise_compile"),
    "seed_step1_0.5.10_wrapped.log": ("dynamo_untraceable_jit", "blocked", "piecewise_compile"),
    "cuda_oom_capture.log": ("cuda_oom", "crashed", "cuda_graph"),
    "unsupported_arch_deepgemm.log": ("unsupported_arch", "blocked", "cuda_graph"),
    "invalid_server_args.log": ("invalid_server_args", "crashed", None),
    "nccl_error.log": ("nccl_error", "crashed", "weights"),
    "driver_mismatch.log": ("driver_mismatch", "blocked", "launch"),
    "port_in_use.log": ("port_in_use", "crashed", "scheduler"),
    "warmup_failed.log": ("warmup_failed", "crashed", "warmup"),
}


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_every_crash_fixture_names_its_root_cause(name):
    watcher = watch(name)
    assert watcher.failed and not watcher.ready
    failure = watcher.classify()
    assert (failure["failure_class"], failure["verdict"], failure["phase"]) == CRASHES[name]
    assert failure["evidence"] and failure["root_cause"] and failure["remedy"]


def test_every_required_class_is_in_the_knowledge_base_and_covered_by_a_fixture():
    classes = {sig["class"] for sig in SPEC["failures"]}
    assert REQUIRED_CLASSES <= classes
    assert REQUIRED_CLASSES == {cls for cls, _, _ in CRASHES.values()}


def test_seed_steps_tell_apart_subprocess_file_system_and_fullgraph():
    step1 = watch("seed_step1_nvcc_subprocess.log").classify()
    step2 = watch("seed_step2_posix_stat.log").classify()
    step3 = watch("seed_step3_fullgraph_disable.log").classify()
    assert "subprocess" in step1["root_cause"] and "threading.Lock" in step1["root_cause"]
    assert "os.stat" in step2["root_cause"] and "build_and_load" in step2["root_cause"]
    assert "fullgraph=True" in step3["root_cause"]
    for failure in (step1, step2, step3):
        assert "PR 23745" in failure["remedy"] and "PR 3081" in failure["remedy"]
        assert failure["verdict"] == "blocked"
    assert "torch.compiler.disable" in step1["remedy"]


def test_root_cause_wins_over_the_symptoms_that_follow_it():
    failure = watch("seed_step1_nvcc_subprocess.log").classify()
    assert {"scheduler_exception", "child_failed"} <= set(failure["also_seen"])
    text = "\n".join([
        "[2026-03-02 10:20:01 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "[2026-03-02 10:20:02] Received sigquit from a child process. It usually means the child failed.",
        "[2026-03-02 10:20:02] Rank 3 scheduler is dead. Please check if there are relevant logs.",
        "[2026-03-02 10:20:02] Exit code: -9",
    ])
    assert watch(text=text).classify()["failure_class"] == "cuda_oom"


@pytest.mark.parametrize("lines,expected", [
    # up to 0.5.9
    (["[2026-03-02 10:20:02] Rank 3 scheduler is dead. Please check if there are relevant logs.",
      "[2026-03-02 10:20:02] Exit code: -11"], "scheduler_dead"),
    (["[2026-03-02 10:20:02] Rank 3 scheduler is dead. Please check if there are relevant logs.",
      "[2026-03-02 10:20:02] Exit code: -9"], "killed"),
    # from 0.5.10
    (["[2026-03-02 10:20:02] Rank 5 scheduler died during initialization (exit code: -11). "
      "Please check if there are relevant logs."], "scheduler_dead"),
    (["[2026-03-02 10:20:02] Rank 5 scheduler died during initialization (exit code: -9). "
      "Please check if there are relevant logs."], "killed"),
    (["[2026-03-02 10:20:02] Received sigquit from a child process. It usually means the child failed."],
     "child_failed"),
])
def test_symptoms_alone_are_reported_as_their_own_classes(lines, expected):
    failure = watch(text="\n".join(lines)).classify()
    assert failure["failure_class"] == expected and failure["failure_class"] in SYMPTOMS
    assert failure["confidence"] == "pattern"


def test_a_bare_killed_line_is_not_a_server_line():
    """No shell starts the server, so nothing prints `Killed`; SIGKILL shows as exit code -9."""
    assert not watch(text="Killed\n").failed
    assert all("Killed$" not in p for sig in SPEC["failures"] for p in sig["patterns"])


@pytest.mark.parametrize("message", [
    "torch._dynamo.exc.Unsupported: Skip calling `torch.compiler.disable()`d function",
    "torch._dynamo.exc.Unsupported: Skip calling torch.compiler.disable()'d function",
])
def test_graph_break_message_in_either_wording(message):
    text = "\n".join([message, "from user code:",
                      "    x_fp4, x_scale_interleaved = fp4_quantize(x, layer.input_scale_inv)"])
    failure = watch(text=text).classify()
    assert failure["failure_class"] == "dynamo_fullgraph_graph_break"
    assert "fp4_quantize" in failure["root_cause"]


def test_a_skipped_function_elsewhere_still_classifies_generically():
    text = "torch._dynamo.exc.Unsupported: Attempted to call function marked as skipped\n  module: time, qualname: sleep"
    failure = watch(text=text).classify()
    assert failure["failure_class"] == "dynamo_untraceable_jit"
    assert "FlashInfer" not in failure["root_cause"]


def test_informational_port_message_is_not_a_failure():
    watcher = watch(text="[2026-03-02 10:14:06] Port 30001 is already in use, trying port 30002\n")
    assert not watcher.failed


def test_healthy_logs_are_ready_without_any_fatal_match():
    for name in ("healthy_0.5.9_tp8.log", "healthy_0.5.9_piecewise_tp2.log", "healthy_0.5.10_tp8_baseline.log",
                 "healthy_0.5.10_1gpu_piecewise.log", "healthy_0.5.9_long_colour.log"):
        watcher = watch(name)
        assert watcher.ready and not watcher.failed, name


def test_phases_and_their_values_on_a_tp8_start():
    watcher = watch("healthy_0.5.9_tp8.log")
    assert watcher.phase_order == ["launch", "distributed_init", "weights", "kv_cache", "cuda_graph",
                                   "scheduler", "http", "warmup"]
    info = {name: watcher.phases[name]["info"] for name in watcher.phase_order}
    assert info["distributed_init"]["dist_init_s"] == "2.31"  # TP0's value, not the last rank's
    assert info["weights"]["weights_load_s"] == "96.30"
    assert info["weights"]["weights_mem_gb"] == "14.29"
    assert info["weights"]["model_class"] == "GlmMoeDsaForCausalLM"
    assert info["kv_cache"]["kv_tokens"] == "1048576"
    assert info["cuda_graph"]["cuda_graph_bs"].count(",") == 51  # 52 batch sizes
    assert info["cuda_graph"]["cuda_graph_s"] == "208.40"
    assert info["scheduler"]["max_running_requests"] == "64"
    assert info["http"]["url"] == "http://127.0.0.1:30000"


def test_piecewise_phases_record_token_sizes_compile_and_capture():
    watcher = watch("healthy_0.5.9_piecewise_tp2.log")
    assert watcher.phase_order[5:8] == ["piecewise_cuda_graph", "piecewise_compile", "piecewise_capture"]
    info = watcher.phases["piecewise_cuda_graph"]["info"]
    assert info["piecewise_num_tokens"].split(", ")[-1] == "8192"
    assert info["piecewise_s"] == "96.10"
    assert watcher.phases["piecewise_capture"]["info"]["piecewise_last_captured_num_tokens"] == "4"


def test_0_5_10_records_quantization_and_why_piecewise_was_skipped():
    watcher = watch("healthy_0.5.10_tp8_baseline.log")
    assert watcher.phases["weights"]["info"]["quantization"] == "quant=modelopt, quant_algo=NVFP4"
    assert watcher.phases["cuda_graph"]["info"]["piecewise_skipped_because"] == "--disable-piecewise-cuda-graph is set"


def test_single_gpu_lines_have_no_rank_and_still_record_values():
    watcher = watch("healthy_0.5.10_1gpu_piecewise.log")
    assert watcher.phases["kv_cache"]["info"]["kv_tokens"] == "2637824"
    assert watcher.phases["kv_cache"]["info"]["k_size_gb"] == "7.07"


def test_values_come_from_rank_zero_whatever_the_order():
    text = "\n".join([
        "[2026-03-02 10:14:20 TP7] Load weight begin. avail mem=94.31 GB",
        "[2026-03-02 10:14:21 TP0] Load weight begin. avail mem=94.31 GB",
        "[2026-03-02 10:15:55 TP0] Load weight end. elapsed=95.10 s, type=X, dtype=torch.bfloat16, avail mem=80.02 GB, mem usage=14.29 GB.",
        "[2026-03-02 10:15:57 TP7] Load weight end. elapsed=97.90 s, type=X, dtype=torch.bfloat16, avail mem=79.00 GB, mem usage=15.31 GB.",
        "[2026-03-02 10:15:58 DP0 TP10 EP10] Load weight end. elapsed=99.00 s, type=X, dtype=torch.bfloat16, avail mem=79.00 GB, mem usage=15.31 GB.",
    ])
    watcher = watch(text=text)
    assert watcher.phases["weights"]["line"] == 1
    assert watcher.phases["weights"]["info"]["weights_load_s"] == "95.10"


def test_0_5_23_capture_lines_are_recognised():
    text = "\n".join([
        "[2026-03-02 10:20:00 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=12.31 GB",
        "[2026-03-02 10:23:28 TP0] Capture target decode CUDA graph end. bs=[1, 2, 4, 8], elapsed=208.12 s, mem usage=1.23 GB, avail mem=11.08 GB.",
        "[2026-03-02 10:23:29 TP0] Capture target prefill CUDA graph begin. backend=breakable, num_tokens=[4, 8, 16], avail mem=11.08 GB",
        "[2026-03-02 10:24:01 TP0] Capture target prefill CUDA graph end. elapsed=32.50 s, mem usage=0.80 GB, avail mem=10.28 GB.",
    ])
    watcher = watch(text=text)
    assert watcher.phase_order == ["cuda_graph", "piecewise_cuda_graph"]
    assert watcher.phases["cuda_graph"]["info"]["cuda_graph_s"] == "208.12"
    assert watcher.phases["piecewise_cuda_graph"]["info"]["prefill_backend"] == "breakable"
    assert watcher.phases["piecewise_cuda_graph"]["info"]["piecewise_s"] == "32.50"


def test_ansi_colours_and_bars_do_not_hide_lines():
    text = "\x1b[32mINFO\x1b[0m:     x\r\x1b[2K  3%|▎         | 1/32 [00:01<00:31, 1.00s/it]" \
           "[2026-03-02 10:20:00] The server is fired up and ready to roll!\n"
    assert watch(text=text).ready


def test_each_signature_is_complete_and_fatal_ones_have_a_fallback():
    for sig in SPEC["failures"]:
        assert sig["verdict"] in ("blocked", "crashed")
        assert sig["root_cause"].strip() and sig["remedy"].strip() and sig["patterns"]
    # A fatal signature with `requires` needs a sibling of its class without, or a crash
    # whose requirement is out of view would go unclassified.
    unconditional = {sig["class"] for sig in SPEC["failures"] if not sig.get("requires")}
    for sig in SPEC["failures"]:
        if sig.get("requires"):
            assert sig["class"] in unconditional
    symptoms = [sig for sig in SPEC["failures"] if sig["class"] in SYMPTOMS]
    roots = [sig for sig in SPEC["failures"] if sig["class"] in REQUIRED_CLASSES]
    assert max(s["priority"] for s in symptoms) < min(r["priority"] for r in roots)
