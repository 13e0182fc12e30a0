import json

import yaml

from helpers import FIXTURES, ROOT
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher, clean_segments

SPEC = {
    "phases": [
        {"name": "weights", "pattern": r"Load weight begin"},
        {"name": "weights", "event": "info", "pattern": r"Load weight end\. elapsed=(?P<elapsed>[\d.]+) s"},
        {"name": "graphs", "pattern": r"Capture cuda graph begin"},
    ],
    "ready": {"pattern": r"ready to roll"},
    "structure": {"process_ending": [r"hit an exception:"], "secondary": [r"other ranks"]},
    "failures": [
        {"class": "symptom_dead", "priority": 10, "banner": True, "symptom": True, "patterns": [r"scheduler is dead"],
         "root_cause": "s", "remedy": "r"},
        {"class": "root_oom", "priority": 80, "patterns": [r"CUDA out of memory"], "root_cause": "oom", "remedy": "less"},
        {"class": "needs_context", "priority": 90, "patterns": [r"Unsupported"], "requires": [r"fp4_quantize"],
         "root_cause": "ctx", "remedy": "r"},
        {"class": "traceback", "priority": 1, "fatal": False, "patterns": [r"^Traceback"], "root_cause": "t", "remedy": "r"},
    ],
}


def test_phases_are_recorded_in_order_with_values_from_named_groups():
    w = LogWatcher(SPEC)
    w.feed("[x] Load weight begin. avail mem=79 GB\n", now=10.0)
    w.feed("[x] Load weight end. elapsed=41.20 s\n", now=51.0)
    w.feed("[x] Capture cuda graph begin.\n", now=52.0)
    w.feed("[x] The server is fired up and ready to roll!\n", now=90.0)
    assert w.ready and w.phase == "graphs"
    times = w.phase_times(origin=5.0)
    assert list(times) == ["launch", "weights", "graphs"]
    assert times["launch"]["duration_s"] == 5.0
    assert times["weights"]["duration_s"] == 42.0
    assert times["weights"]["info"] == {"elapsed": "41.20"}
    assert times["graphs"]["duration_s"] == 38.0


def test_partial_lines_wait_for_their_newline():
    w = LogWatcher(SPEC)
    w.feed("[x] Load wei", now=1.0)
    assert w.phase is None
    w.feed("ght begin\n", now=2.0)
    assert w.phase == "weights" and w.line_no == 1


def test_ansi_codes_and_tqdm_carriage_returns_are_split_but_share_a_line_number():
    raw = "\x1b[32mCapturing 1/3\rCapturing 2/3\r\x1b[0mCapture cuda graph begin"
    assert clean_segments(raw) == ["Capturing 1/3", "Capturing 2/3", "Capture cuda graph begin"]
    w = LogWatcher(SPEC)
    w.feed(raw + "\nnext\n", now=1.0)
    assert w.phases["graphs"]["line"] == 1 and w.line_no == 2


def test_root_cause_wins_over_later_symptoms():
    w = LogWatcher(SPEC)
    w.feed("Traceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory. Tried\n"
           "Rank 0 scheduler is dead. Please check\n", now=1.0)
    result = w.classify()
    assert result["failure_class"] == "root_oom"
    assert result["line"] == 2
    assert "symptom_dead" in result["also_seen"]
    assert w.failed


def test_symptom_alone_is_reported_when_nothing_better_is_known():
    w = LogWatcher(SPEC)
    w.feed("Rank 0 scheduler is dead.\n", now=1.0)
    assert w.classify()["failure_class"] == "symptom_dead"


def test_requires_gates_a_signature_on_context_elsewhere_in_the_log():
    w = LogWatcher(SPEC)
    w.feed("[2026-03-02 10:20:01 TP0] Scheduler hit an exception: torch._dynamo.exc.Unsupported: something\n", now=1.0)
    assert w.failed
    assert w.classify()["failure_class"] == "unknown_crash"  # the only match lacks its required context
    w.feed('  File "flashinfer/fp4_quantization.py", line 1, in fp4_quantize\n', now=2.0)
    assert w.classify()["failure_class"] == "needs_context"


def test_a_traceback_nothing_says_ended_a_process_decides_nothing_while_the_process_lives():
    w = LogWatcher(SPEC)
    w.feed("Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nRuntimeError: CUDA out of memory\n", now=1.0)
    assert not w.failed and w.classify() is None
    w.feed("[x] Capture cuda graph begin\n", now=2.0)  # it went on: the traceback was handled
    w.feed("", now=3.0, final=True)
    assert not w.failed


def test_a_traceback_that_is_the_last_thing_a_dead_process_wrote_decides():
    w = LogWatcher(SPEC)
    w.feed("[x] Load weight begin\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
           "RuntimeError: CUDA out of memory\n", now=1.0)
    assert not w.failed
    w.feed("", now=2.0, final=True)  # the writer is gone
    assert w.failed and w.classify()["failure_class"] == "root_oom"


def test_non_fatal_matches_do_not_mark_a_crash():
    w = LogWatcher(SPEC)
    w.feed("x\nTraceback (most recent call last):\n", now=1.0)
    assert not w.failed and w.classify() is None
    w = LogWatcher(SPEC)
    w.feed("x\n[x] Scheduler hit an exception: Traceback (most recent call last):\n", now=1.0)
    assert w.failed  # the banner says a process ended, though its traceback was cut at once
    assert w.first_fatal_line == 2
    result = w.classify()
    assert result["failure_class"] == "unknown_crash" and result["confidence"] == "structure"
    assert "cut before its exception line" in result["root_cause"]


def test_warnings_and_plain_lines_never_decide_but_error_lines_do():
    w = LogWatcher(SPEC)
    w.feed("WARNING 03-02 10:20:01 [x.py:1] CUDA out of memory on a probe\n"
           "[W302 10:20:01.000 x.cpp:1] CUDA out of memory on a probe\n"
           "/x/y.py:3: UserWarning: CUDA out of memory on a probe\n"
           "[2026-03-02 10:20:01 TP0] CUDA out of memory on a probe, retrying smaller\n", now=1.0)
    assert not w.failed and w.classify() is None
    w.feed("ERROR 03-02 10:20:02 [x.py:1] CUDA out of memory\n", now=2.0)
    assert w.failed and w.classify()["failure_class"] == "root_oom"


def test_the_rank_that_failed_first_wins_over_ranks_that_died_of_it():
    w = LogWatcher(SPEC)
    w.feed("[2026-03-02 10:20:01 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "loader.py", line 9, in load\n'
           "ValueError: TP rank 1 finished, but other ranks did not: CUDA out of memory\n"
           "[2026-03-02 10:20:02 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "loader.py", line 9, in load\n'
           "torch._dynamo.exc.Unsupported: real cause\n", now=1.0)
    result = w.classify()
    assert result["traceback"]["rank"] == "TP0"
    assert result["failure_class"] == "unknown_crash"  # no signature for that one; the secondary OOM loses
    assert "real cause" in result["root_cause"] and result["confidence"] == "structure"


def test_confidence_says_whether_a_pattern_or_the_frames_picked_the_class():
    w = LogWatcher(SPEC)
    w.feed("[x] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "runner.py", line 9, in capture\n'
           "torch.OutOfMemoryError: CUDA out of memory\n", now=1.0)
    assert w.classify()["confidence"] == "frames"
    w = LogWatcher(SPEC)
    w.feed("ERROR 03-02 10:20:02 [x.py:1] CUDA out of memory\n", now=2.0)
    assert w.classify()["confidence"] == "pattern"


def test_snapshot_restores_a_watcher_that_continues_where_it_stopped():
    w = LogWatcher(SPEC)
    w.feed("Load weight begin\n[x] Scheduler hit an exception: Traceback (most recent call last):\n"
           "RuntimeError: CUDA out of memory\nhalf a li", now=3.0)
    state = json.loads(json.dumps(w.snapshot()))
    again = LogWatcher(SPEC).restore(state)
    again.feed("ne\nCapture cuda graph begin\n", now=4.0)
    assert again.line_no == 5
    assert again.phase == "graphs"
    assert again.classify()["failure_class"] == "root_oom"


def test_real_vllm_log_yields_its_start_up_phases():
    spec = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())
    w = LogWatcher(spec).feed_file(FIXTURES / "vllm" / "startup-compiled-0.32.0.log")
    assert w.phase_order == ["engine_init", "weights", "compile", "kv_cache", "http"]
    assert w.ready
    assert w.phases["kv_cache"]["info"]["kv_tokens"] == "2,097,152"
    assert w.classify() is None


def test_a_phase_whose_info_line_comes_before_its_start_line_is_the_current_phase_from_its_start():
    spec = dict(SPEC, phases=SPEC["phases"] + [
        {"name": "graphs", "event": "info", "pattern": r"Disable prefill CUDA graph because (?P<why>.+)"}])
    w = LogWatcher(spec)
    w.feed("[x] Load weight begin. avail mem=79 GB\n", now=10.0)
    w.feed("[x] Disable prefill CUDA graph because it is off\n", now=20.0)
    assert w.phase == "weights"
    w.feed("[x] Capture cuda graph begin.\n", now=21.0)
    assert w.phase == "graphs"
    times = w.phase_times()
    assert list(times) == ["weights", "graphs"]
    assert times["graphs"]["start_s"] == 11.0 and times["graphs"]["info"] == {"why": "it is off"}
    assert times["weights"]["duration_s"] == 11.0


def test_an_engine_phase_named_launch_spans_the_time_from_the_launch_not_from_its_line():
    """SGLang's first phase, `launch`, is its server_args line, which it prints after its imports (25 s on the H100):
    the time before that line is the launch phase's too, not lost to it."""
    spec = dict(SPEC, phases=[{"name": "launch", "pattern": r"server_args="}] + SPEC["phases"])
    w = LogWatcher(spec)
    w.feed("[x] server_args=ServerArgs(model_path='m')\n", now=125.0)
    w.feed("[x] Load weight begin. avail mem=79 GB\n", now=150.0)
    times = w.phase_times(end=160.0, origin=100.0)
    assert list(times) == ["launch", "weights"]
    assert (times["launch"]["start_s"], times["launch"]["duration_s"], times["launch"]["line"]) == (0.0, 50.0, 1)
    assert times["weights"]["start_s"] == 50.0


def test_a_real_sglang_start_up_on_a_gpu_is_in_cuda_graph_capture_while_it_captures():
    """SGLang 0.5.16 on the H200 logs why it disables prefill graphs just before the decode capture begins."""
    spec = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
    log = FIXTURES / "sglang" / "logs" / "h200" / "mla-default-ready.log"
    w = LogWatcher(spec)
    for number, line in enumerate(log.read_text(errors="replace").splitlines(keepends=True), start=1):
        w.feed(line, now=float(number))
        if "Capture target decode CUDA graph begin" in line:
            break
    assert w.phase == "cuda_graph", w.phase_order
    assert w.phase_order[-2:] == ["kv_cache", "cuda_graph"]


def test_an_exception_class_without_error_in_its_name_is_still_the_exception_line():
    """Triton's `OutOfResources` (triton/runtime/errors.py) ends in neither Error nor Exception."""
    spec = dict(SPEC, failures=SPEC["failures"] + [
        {"class": "triton_resources", "priority": 70, "patterns": [r"OutOfResources: out of resource"],
         "root_cause": "r", "remedy": "r"}])
    w = LogWatcher(spec)
    w.feed("[x] Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "/x/triton/compiler/compiler.py", line 483, in _init_handles\n'
           '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")\n'
           "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, "
           "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n", now=1.0)
    assert w.failed
    failure = w.classify()
    assert failure["failure_class"] == "triton_resources"
    assert failure["traceback"]["exceptions"][0].startswith("triton.runtime.errors.OutOfResources: out of resource")
