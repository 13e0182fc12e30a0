"""Classification that generalises: failure families, release eras, broad patterns.

Fixtures: tests/fixtures/sglang/logs/families/ (make_family_fixtures.py), written to the shapes
of public SGLang/FlashInfer/vLLM start-up failures; tests/fixtures/sglang/eras.yml, one entry
per release era for each phase line and failure string whose wording changed;
tests/fixtures/sglang/logs/warnings/, healthy start-ups that print warnings.
"""
import pathlib
import re

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher, clean_segments
from fleetopt import classify
from fleetopt.classify import feed_whole
from fleetopt.paths import engine_spec

ROOT = pathlib.Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "sglang"
FAMILIES = FIXTURES / "logs" / "families"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
ERAS = yaml.safe_load((FIXTURES / "eras.yml").read_text())

# fixture -> status, class, confidence, rank of the deciding traceback
FAMILY_CASES = {
    # a traceback from the launcher's main module that no signature knows
    "main_module_unknown_exception.log": ("crashed", "unknown_crash", "structure", None),
    # the launcher's own traceback: transformers does not know the checkpoint's model type
    "main_module_unknown.log": ("crashed", "model_config_failed", "frames", None),
    # argparse: the usage block alone (the error line lost), and 0.5.23's `sglang serve`
    "usage_block_only.log": ("crashed", "invalid_server_args", "structure", None),
    "usage_0.5.23_sglang_serve.log": ("crashed", "invalid_server_args", "pattern", None),
    # ServerArgs validation: ValueError with the deepest frame in server_args.py
    "server_args_validation.log": ("crashed", "invalid_server_args", "frames", None),
    # FlashInfer refuses the architecture, every rank
    "no_arch_build_tp8.log": ("crashed", "unsupported_arch", "frames", "TP4"),
    # the seeds' failure seen from torch 2.13: datetime.now in FlashInfer's JIT registry
    "dynamo_jit_datetime_torch2.13.log": ("crashed", "dynamo_untraceable_jit", "frames", "TP2"),
    # a dynamo refusal of another kind, in a child process, chained
    "dynamo_other_unsupported_tp2.log": ("crashed", "dynamo_unsupported", "frames", None),
    # TP1 died because another rank did; TP5's OOM is the cause
    "secondary_rank_first_tp8.log": ("crashed", "cuda_oom", "frames", "TP5"),
    # TP8 capture crash cut in the middle of TP3's frames: crashed, class from the frames
    "truncated_multi_rank_capture_tp8.log": ("crashed", "cuda_graph_capture_failed", "frames", "TP3"),
    # 0.5.14's prefill-graph failure wrapping an OOM, log cut right after it
    "prefill_graph_oom_0.5.14.log": ("crashed", "cuda_oom", "pattern", None),
    # SIGKILL (exit code -9) wins over the CLI's own traceback that only says "see above"
    "killed_then_cli_traceback_0.5.6.log": ("crashed", "killed", "pattern", None),
    # the same TP8 crash relayed by a launcher's Python logger and by Ray (prefixes on every line)
    "wrapped_by_a_launcher_logger_tp8.log": ("crashed", "unsupported_arch", "frames", "TP4"),
    # issue 30: the stack around SGLang (test_classification_stack.py checks what each one says)
    # an exception in 0.5.16's decode capture without SGLang's banner; a CUDA error, not cuda_error
    "capture_exception_no_banner_0.5.16_tp2.log": ("crashed", "cuda_graph_capture_failed", "frames", "TP1"),
    # Triton: no fp8e4nv on sm86 (inside 0.5.9's capture banner), a kernel too big for the GPU
    "triton_fp8e4nv_sm86_0.5.9_tp2.log": ("crashed", "triton_compile_failed", "pattern", "TP1"),
    "triton_out_of_resources_0.5.16.log": ("crashed", "triton_compile_failed", "frames", None),
    # the model's directory holds no config.json; SGLang has no class for the architecture
    "model_path_without_config.log": ("crashed", "model_config_failed", "frames", None),
    "model_architecture_unsupported_tp4.log": ("crashed", "model_config_failed", "frames", "TP2"),
    # a checkpoint tensor without a parameter; a truncated safetensors shard
    "weights_key_error_tp4.log": ("crashed", "weight_loading_failed", "frames", "TP3"),
    "weights_safetensors_header.log": ("crashed", "weight_loading_failed", "frames", None),
    # JIT builds: FlashInfer's ninja (inside 0.5.9's capture banner), torch's cpp_extension, tvm-ffi
    "flashinfer_jit_build_in_capture_0.5.9_tp2.log": ("crashed", "kernel_build_failed", "frames", "TP1"),
    "torch_extension_build_0.5.6.log": ("crashed", "kernel_build_failed", "frames", None),
    "tvm_ffi_build_0.5.16.log": ("crashed", "kernel_build_failed", "frames", None),
    # `sglang serve` imports a name this transformers release does not have
    "transformers_import_error.log": ("crashed", "transformers_incompatible", "frames", None),
}


def test_every_family_fixture_has_a_case():
    assert sorted(p.name for p in FAMILIES.glob("*.log")) == sorted(FAMILY_CASES)


@pytest.mark.parametrize("name", sorted(FAMILY_CASES))
def test_each_family_is_classified_from_its_structure(name):
    status, failure_class, confidence, rank = FAMILY_CASES[name]
    result = classify.analyse(str(FAMILIES / name), engine_spec("sglang"))
    assert (result["status"], result["failure_class"], result["confidence"]) == (status, failure_class, confidence)
    assert result["evidence"] and result["root_cause"] and result["remedy"]
    if rank is not None:
        assert result["traceback"]["rank"] == rank
    lines = (FAMILIES / name).read_text(encoding="utf-8").split("\n")
    for item in result["evidence"]:
        assert 1 <= item["line"] <= len(lines)


def test_unknown_crash_names_the_last_exception_line():
    result = classify.analyse(str(FAMILIES / "main_module_unknown_exception.log"), engine_spec("sglang"))
    assert "AttributeError: 'NoneType' object has no attribute 'get'" in result["root_cause"]
    assert result["traceback"]["exceptions"][0] == "KeyError: 'type'"


def test_a_cut_multi_rank_capture_log_is_crashed_not_starting_even_while_the_process_lives():
    with open(FAMILIES / "truncated_multi_rank_capture_tp8.log", encoding="utf-8", newline="") as handle:
        watcher = LogWatcher(SPEC)
        watcher.feed(handle.read())  # not final: the copy may have been taken from a live server
    assert watcher.failed
    assert watcher.classify()["failure_class"] == "cuda_graph_capture_failed"


def test_a_usage_block_decides_only_once_the_log_ended():
    """`--help` prints the same block; while the process lives it is no crash."""
    text = (FAMILIES / "usage_block_only.log").read_text(encoding="utf-8")
    watcher = LogWatcher(SPEC)
    watcher.feed(text)
    assert not watcher.failed
    watcher.feed("", final=True)
    assert watcher.failed


# -- release eras -----------------------------------------------------------------------------

@pytest.mark.parametrize("entry", ERAS["phases"], ids=lambda e: "%s-%s" % (e["phase"], e["era"]))
def test_phase_lines_of_every_release_era(entry):
    watcher = LogWatcher(SPEC)
    for number, line in enumerate(entry["lines"]):
        watcher.feed(line + "\n", now=float(number))
    assert entry["phase"] in watcher.phases, entry["lines"]
    assert watcher.phases[entry["phase"]]["line"] == 1
    for key, value in (entry.get("info") or {}).items():
        assert watcher.phases[entry["phase"]]["info"].get(key) == value, key
    assert not watcher.failed


@pytest.mark.parametrize("entry", ERAS["failures"], ids=lambda e: "%s-%s" % (e["class"], e["era"]))
def test_failure_strings_of_every_release_era_decide_while_the_process_lives(entry):
    watcher = LogWatcher(SPEC)
    for number, line in enumerate(entry["lines"]):
        watcher.feed(line + "\n", now=float(number))
    assert watcher.failed, entry["lines"]
    assert watcher.classify()["failure_class"] == entry["class"]


def test_the_eras_cover_every_phase_and_changed_failure_string():
    phases = {entry["phase"] for entry in ERAS["phases"]}
    assert {"launch", "distributed_init", "weights", "kv_cache", "cuda_graph", "piecewise_cuda_graph"} <= phases
    text = "\n".join(line for entry in ERAS["failures"] for line in entry["lines"])
    for wording in ("scheduler is dead.", "died during initialization (exit code:", "Piecewise CUDA Graph failed with error",
                    "Capture prefill CUDA graph failed:", "Fail when using backend:", "sglang serve: error:"):
        assert wording in text


# -- what the knowledge base may and may not say ---------------------------------------------

def warning_lines():
    lines = []
    for path in sorted((FIXTURES / "logs" / "warnings").glob("*.log")):
        for raw in path.read_text(encoding="utf-8").split("\n"):
            lines.extend(clean_segments(raw))
    return lines


def test_every_broad_pattern_is_matched_by_a_line_of_a_healthy_start_up_with_warnings():
    """A broad signature's text is also printed by healthy servers; each of its patterns needs a
    healthy fixture line (which the warning tests prove stays healthy)."""
    lines = warning_lines()
    broad = [sig for sig in SPEC["failures"] if sig.get("broad")]
    assert {sig["class"] for sig in broad} >= {"unsupported_arch", "cuda_oom", "cuda_error", "port_in_use",
                                                 "nccl_error", "driver_mismatch"}
    for sig in broad:
        assert not sig.get("banner"), sig["class"]  # a broad text can never decide on its own
        for pattern in sig["patterns"]:
            assert any(re.search(pattern, line) for line in lines), (sig["class"], pattern)


def top_level_alternatives(pattern):
    """Split a regular expression at its top-level `|` (not inside groups or classes)."""
    parts, depth, in_class, start, index = [], 0, False, 0, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(pattern[start:index])
            start = index + 1
        index += 1
    return parts + [pattern[start:]]


def test_the_splitter_keeps_groups_whole():
    assert top_level_alternatives(r"a(?:b |c)d|e f ") == [r"a(?:b |c)d", "e f "]


def test_no_pattern_depends_on_whitespace_the_line_reader_strips():
    """The reader strips each line (and each tqdm redraw): a pattern may not need a leading or
    trailing space."""
    for engine in ("sglang", "vllm"):
        spec = yaml.safe_load((ROOT / "library" / "engines" / ("%s.yml" % engine)).read_text())
        patterns = [p["pattern"] for p in spec["phases"]] + [spec["ready"]["pattern"]]
        patterns += [p for sig in spec["failures"] for key in ("patterns", "requires", "frames")
                     for p in sig.get(key, [])]
        patterns += [p for values in (spec.get("structure") or {}).values() if isinstance(values, list)
                     for p in values if not p.startswith("http")]
        for pattern in patterns:
            for alternative in top_level_alternatives(pattern):
                assert not re.search(r"(?:(?<!\\) |\\s\+?)\)*\$?$", alternative), (engine, pattern)
                assert not re.match(r"\^?(?: |\\s)", alternative), (engine, pattern)


def test_texts_that_no_release_prints_are_gone():
    patterns = [p for sig in SPEC["failures"] for p in sig["patterns"]]
    assert not any("graph break.*fullgraph=True" in p for p in patterns)
    assert not any(p in ("^Killed$", "Killed") for p in patterns)
    assert not any(p.startswith("(?i)Failed to initialize NVML") for p in patterns)
    # the OOM-in-capture signature looks for the frame in the traceback's frames, not on the line
    assert not any("cuda_graph_runner" in p for p in patterns)


def test_every_signature_family_cites_real_threads():
    cited = [url for sig in SPEC["failures"] for url in sig.get("references", [])]
    cited += SPEC["structure"].get("references", [])
    urls = set(cited)
    assert all(re.match(r"https://github\.com/[\w.-]+/[\w.-]+/(?:issues|pull)/\d+$", u) for u in urls)
    assert len(urls) >= 30


def test_a_watcher_restored_in_the_middle_of_a_traceback_finishes_reading_it():
    """The live module snapshots the watcher between calls; a traceback may span two calls."""
    import json
    text = (FAMILIES / "no_arch_build_tp8.log").read_text(encoding="utf-8")
    cut = text.index("RuntimeError: Error in function 'TllmGenFmhaRunner'")
    first = LogWatcher(SPEC)
    first.feed(text[:cut], now=1.0)
    state = json.loads(json.dumps(first.snapshot()))
    again = LogWatcher(SPEC).restore(state)
    again.feed(text[cut:], now=2.0, final=True)
    whole = feed_whole(LogWatcher(SPEC), text)
    assert again.classify()["failure_class"] == whole.classify()["failure_class"] == "unsupported_arch"
    assert again.classify()["confidence"] == "frames"
