import json

import yaml

from helpers import FIXTURES, ROOT
from ansible.module_utils.fleetopt_logwatch import LogWatcher, clean_segments

SPEC = {
    "phases": [
        {"name": "weights", "pattern": r"Load weight begin"},
        {"name": "weights", "event": "info", "pattern": r"Load weight end\. elapsed=(?P<elapsed>[\d.]+) s"},
        {"name": "graphs", "pattern": r"Capture cuda graph begin"},
    ],
    "ready": {"pattern": r"ready to roll"},
    "failures": [
        {"class": "symptom_dead", "priority": 10, "patterns": [r"scheduler is dead"], "root_cause": "s", "remedy": "r"},
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
    w.feed("torch._dynamo.exc.Unsupported: something\n", now=1.0)
    assert w.classify() is None  # the only match lacks its required context
    w.feed('  File "flashinfer/fp4_quantization.py", line 1, in fp4_quantize\n', now=2.0)
    assert w.classify()["failure_class"] == "needs_context"


def test_non_fatal_matches_do_not_mark_a_crash():
    w = LogWatcher(SPEC)
    w.feed("Traceback (most recent call last):\n", now=1.0)
    assert not w.failed
    assert w.classify()["failure_class"] == "traceback"


def test_snapshot_restores_a_watcher_that_continues_where_it_stopped():
    w = LogWatcher(SPEC)
    w.feed("Load weight begin\nCUDA out of memory\nhalf a li", now=3.0)
    state = json.loads(json.dumps(w.snapshot()))
    again = LogWatcher(SPEC).restore(state)
    again.feed("ne\nCapture cuda graph begin\n", now=4.0)
    assert again.line_no == 4
    assert again.phase == "graphs"
    assert again.classify()["failure_class"] == "root_oom"


def test_real_vllm_log_yields_its_start_up_phases():
    spec = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())
    w = LogWatcher(spec).feed_file(FIXTURES / "vllm" / "startup-compiled-0.32.0.log")
    assert w.phase_order == ["engine_init", "weights", "compile", "kv_cache", "http"]
    assert w.ready
    assert w.phases["kv_cache"]["info"]["kv_tokens"] == "2,097,152"
    assert w.classify() is None
