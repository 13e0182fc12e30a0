"""SGLang 0.5.16 logs of our own H200 runs (tests/fixtures/sglang/logs/h200/, copied unchanged from
shared/reference/sglang-h200-logs/): each crash names its root cause and the phase it died in,
and each healthy start-up, warnings and all, names none.
"""
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt import classify
from fleetopt.classify import feed_whole
from fleetopt.paths import engine_spec

ROOT = pathlib.Path(__file__).resolve().parents[3]
H200 = ROOT / "tests" / "fixtures" / "sglang" / "logs" / "h200"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())

# log -> class, phase the watcher reports (None: it died before the first phase line), verdict
CRASHES = {
    # transformers 5.17.0 registers `qwen3_asr` itself; SGLang 0.5.16 registers it again at import
    "call1-main-transformers-5.17.0.log": ("transformers_incompatible", None, "blocked"),
    # --mem-fraction-static 0.999: torch.OutOfMemoryError while the KV pool's allocator is built
    "call2-crash_mem0999.log": ("cuda_oom", "kv_cache", "crashed"),
    # kv_lora_rank=64: the Triton MLA decode kernel does not compile, in decode-graph capture
    "mla-tc_piecewise-triton-crash.log": ("triton_compile_failed", "cuda_graph", "blocked"),
}
HEALTHY = ["call2-main.log", "call3-piecewise.log", "call3-torch_compile.log", "mla-default-ready.log"]


def read(name):
    with open(H200 / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def test_every_h200_log_is_a_case():
    assert sorted(p.name for p in H200.glob("*.log")) == sorted(list(CRASHES) + HEALTHY)


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_each_h200_crash_names_its_root_cause_and_phase(name):
    failure_class, phase, verdict = CRASHES[name]
    result = classify.analyse(str(H200 / name), engine_spec("sglang"))
    assert result["status"] == "crashed"
    assert (result["failure_class"], result["phase"], result["verdict"]) == (failure_class, phase, verdict)
    assert result["root_cause"] and result["remedy"] and result["evidence"]
    watcher = feed_whole(LogWatcher(SPEC), read(name))
    assert watcher.failed and not watcher.ready
    assert (watcher.classify()["failure_class"], watcher.classify()["phase"]) == (failure_class, phase)


@pytest.mark.parametrize("name", sorted(CRASHES))
def test_each_h200_crash_is_named_while_the_server_still_runs(name):
    """The live module reads the log as it grows: the class is known before the log ends."""
    watcher = LogWatcher(SPEC)
    for number, line in enumerate(read(name).split("\n")):
        watcher.feed(line + "\n", now=float(number))
    assert watcher.failed
    assert watcher.classify()["failure_class"] == CRASHES[name][0]


def test_the_transformers_clash_names_the_registered_type_and_the_pin():
    result = classify.analyse(str(H200 / "call1-main-transformers-5.17.0.log"), engine_spec("sglang"))
    assert "'qwen3_asr' is already used by a Transformers config" in result["evidence"][0]["text"]
    assert result["confidence"] == "frames"
    assert "pins" in result["remedy"]


def test_the_triton_crash_is_the_compile_error_not_the_capture_around_it():
    result = classify.analyse(str(H200 / "mla-tc_piecewise-triton-crash.log"), engine_spec("sglang"))
    assert result["failure_class"] == "triton_compile_failed" and "Triton" in result["root_cause"]
    assert result["traceback"]["exceptions"][0].startswith("triton.compiler.errors.CompilationError: at 194:12:")
    assert any("triton/compiler/compiler.py" in frame for frame in result["traceback"]["deepest_frames"])


@pytest.mark.parametrize("name", HEALTHY)
def test_each_h200_healthy_start_up_names_no_failure(name):
    result = classify.analyse(str(H200 / name), engine_spec("sglang"))
    assert result["status"] == "ready"
    assert result["failure_class"] is None and result["evidence_lines"] == []
    watcher = feed_whole(LogWatcher(SPEC), read(name))
    assert watcher.ready and not watcher.failed and watcher.classify() is None


@pytest.mark.parametrize("name", HEALTHY)
def test_each_h200_healthy_start_up_is_healthy_line_by_line(name):
    watcher = LogWatcher(SPEC)
    for number, line in enumerate(read(name).split("\n")):
        watcher.feed(line + "\n", now=float(number))
        assert not watcher.failed, line
    assert watcher.ready


# Lines a healthy server prints that look like the new families' texts (SGLang's own INFO
# lines and warnings): none may decide, as plain lines or relayed by a wrapper.
NEAR_MISSES = [
    "[2026-12-04 16:06:04] Failed to load generation config for /tmp/tiny: /tmp/tiny does not appear to have a "
    "file named generation_config.json. Checkout 'https://huggingface.co//tmp/tiny/tree/None' for available "
    "files.. Proceeding without generation config.",
    "[2026-12-04 16:06:04] Ignore import error when loading sglang.srt.models.glm4v_moe: No module named "
    "'transformers.models.glm4v_moe'",
    "[2026-12-04 16:06:05] Ignore import error when loading sglang.srt.models.qwen3_asr: cannot import name "
    "'Qwen3ASRConfig' from 'transformers'",
    "/opt/torch/.venv/lib/python3.12/site-packages/torch/utils/cpp_extension.py:2355: UserWarning: "
    "TORCH_CUDA_ARCH_LIST is not set, all archs for visible cards are included for compilation.",
    "2026-12-04 16:06:06,001 - INFO - flashinfer.jit: Loading JIT ops: sampling",
    "[2026-12-04 16:06:07] Triton kernel compile took 1.20 s; ninja: no work to do.",
]


def test_lines_that_look_like_the_new_families_leave_a_healthy_start_up_healthy():
    lines = read("call2-main.log").split("\n")
    text = "\n".join(lines[:9] + NEAR_MISSES + lines[9:])
    watcher = feed_whole(LogWatcher(SPEC), text)
    assert watcher.ready and not watcher.failed and watcher.classify() is None
