"""Start-up failures of the stack around SGLang: each family names its root cause
and remedy, and a more specific cause wins over the capture or weight-loading code it was raised in.

Fixtures: tests/fixtures/sglang/logs/families/ (make_family_fixtures.py, the issue-30 section),
written to the shapes of the threads in each family's `references`; the H200 logs of our own runs
are replayed by test_classification_h200.py.
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
FAMILIES = ROOT / "tests" / "fixtures" / "sglang" / "logs" / "families"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
NEW_CLASSES = {"transformers_incompatible", "model_config_failed", "weight_loading_failed", "kernel_build_failed",
               "triton_compile_failed"}


def analyse(name):
    return classify.analyse(str(FAMILIES / name), engine_spec("sglang"))


# fixture -> class, phase, verdict, a word of the root cause, a word of the remedy, also seen
CASES = {
    "capture_exception_no_banner_0.5.16_tp2.log":
        ("cuda_graph_capture_failed", "cuda_graph", "crashed", "inside the capture", "attention backend", "cuda_error"),
    "triton_fp8e4nv_sm86_0.5.9_tp2.log":
        ("triton_compile_failed", "cuda_graph", "blocked", "8.9", "not_applicable", "cuda_graph_capture_failed"),
    "triton_out_of_resources_0.5.16.log":
        ("triton_compile_failed", "cuda_graph", "blocked", "shared memory", "--moe-runner-backend", None),
    "model_path_without_config.log":
        ("model_config_failed", None, "crashed", "config.json", "--model-path", None),
    "main_module_unknown.log":
        ("model_config_failed", None, "blocked", "model type", "--trust-remote-code", None),
    "model_architecture_unsupported_tp4.log":
        ("model_config_failed", "weights", "blocked", "architecture", "SGLang release", None),
    "weights_key_error_tp4.log":
        ("weight_loading_failed", "weights", "crashed", "KeyError", "--quantization", None),
    "weights_safetensors_header.log":
        ("weight_loading_failed", "weights", "crashed", "safetensors", "checksums", None),
    "flashinfer_jit_build_in_capture_0.5.9_tp2.log":
        ("kernel_build_failed", "cuda_graph", "blocked", "ninja output", "flashinfer-jit-cache",
         "cuda_graph_capture_failed"),
    "torch_extension_build_0.5.6.log":
        ("kernel_build_failed", "cuda_graph", "blocked", "cuda_fp8.h", "CUDA_HOME", None),
    "tvm_ffi_build_0.5.16.log":
        ("kernel_build_failed", "cuda_graph", "blocked", "tvm-ffi", "TVM_FFI_CACHE_DIR", None),
    "transformers_import_error.log":
        ("transformers_incompatible", None, "blocked", "imports a name", "pins", None),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_family_names_its_root_cause_and_remedy(name):
    failure_class, phase, verdict, cause, remedy, also = CASES[name]
    result = analyse(name)
    assert (result["failure_class"], result["phase"], result["verdict"]) == (failure_class, phase, verdict)
    assert cause in result["root_cause"], result["root_cause"]
    assert remedy in result["remedy"], result["remedy"]
    if also is not None:
        assert also in result["also_seen"]


def test_a_triton_kernel_too_big_for_the_gpu_is_read_as_its_exception_line():
    """`OutOfResources` ends in neither Error nor Exception: the watcher still reads it as the
    exception line of its traceback, so the message (the resource, its limit) is the evidence."""
    result = analyse("triton_out_of_resources_0.5.16.log")
    assert result["traceback"]["exceptions"] == [
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 147456, Hardware limit: "
        "101376. Reducing block sizes or `num_stages` may help."]
    assert result["evidence"][0]["text"].startswith("triton.runtime.errors.OutOfResources: out of resource")


def test_a_kernel_build_inside_capture_is_the_build_not_the_capture():
    result = analyse("flashinfer_jit_build_in_capture_0.5.9_tp2.log")
    assert result["failure_class"] == "kernel_build_failed"
    assert "nvcc fatal   : Unsupported gpu architecture 'compute_120a'" in (FAMILIES / (
        "flashinfer_jit_build_in_capture_0.5.9_tp2.log")).read_text(encoding="utf-8")
    assert result["traceback"]["exceptions"][-1].startswith("Exception: Capture cuda graph failed: Ninja build failed.")


def test_an_oom_while_loading_weights_stays_an_oom():
    """The weight-loading frames pick a class only when nothing more specific explains the traceback."""
    text = "\n".join([
        "[2026-03-02 10:15:03 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-03-02 10:15:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_loader/loader.py", line 620, in load_weights_and_postprocess',
        "    model.load_weights(weights)",
        '  File "/x/sglang/srt/models/qwen3.py", line 560, in load_weights',
        "    param.data.copy_(loaded_weight)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
        "[2026-03-02 10:15:09] Received sigquit from a child process. It usually means the child failed.",
    ])
    assert feed_whole(LogWatcher(SPEC), text).classify()["failure_class"] == "cuda_oom"


def test_capture_frames_do_not_claim_a_crash_after_ready():
    """A CUDA error while replaying graphs for traffic is not a capture failure."""
    text = "\n".join([
        "[2026-03-02 10:20:00] The server is fired up and ready to roll!",
        "[2026-03-02 10:25:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 801, in replay',
        "    self.graphs[graph_key].replay()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "[2026-03-02 10:25:00] Received sigquit from a child process. It usually means the child failed.",
    ])
    assert feed_whole(LogWatcher(SPEC), text).classify()["failure_class"] == "cuda_error"


def test_every_new_family_is_complete_and_cites_threads():
    for failure_class in NEW_CLASSES:
        entries = [sig for sig in SPEC["failures"] if sig["class"] == failure_class]
        assert entries, failure_class
        assert not any(sig.get("broad") or sig.get("banner") for sig in entries), failure_class
        assert sum(len(sig.get("references", [])) for sig in entries) >= 3, failure_class


# -- vLLM: the same families, in vLLM's line format ---------------------------------------------
# (EngineCore_DP0 pid=N) ERROR MM-DD HH:MM:SS [core.py:N] before every traceback line, the shape of
# vllm-project/vllm#40260, #36077, #15445, #15336 and #12498.
VLLM_SPEC = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())
VLLM_LOG = ROOT / "tests" / "fixtures" / "vllm" / "startup-compiled-0.32.0.log"
VLLM_FAILURES = {
    "transformers_incompatible": [
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/transformers_utils/configs/ovis.py", line 75, in <module>',
        '    AutoConfig.register("aimv2", AIMv2Config)',
        "ValueError: 'aimv2' is already used by a Transformers config, pick another name.",
    ],
    "model_config_failed": [
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/registry.py", line 620, in '
        "_raise_for_unsupported",
        "    raise ValueError(",
        "ValueError: Model architectures ['Glm5NextForCausalLM'] are not supported for now. Supported architectures: "
        "dict_keys(['LlamaForCausalLM'])",
    ],
    "weight_loading_failed": [
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/model_loader/weight_utils.py", line 520, '
        "in safetensors_weights_iterator",
        '    with safe_open(st_file, framework="pt") as f:',
        "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer",
    ],
    "kernel_build_failed": [
        '  File "/usr/local/lib/python3.12/dist-packages/flashinfer/jit/cpp_ext.py", line 382, in run_ninja',
        "    raise RuntimeError(msg) from e",
        "RuntimeError: Ninja build failed. Ninja output:",
        "FAILED: batch_prefill_jit_binding.cuda.o",
        "ninja: build stopped: subcommand failed.",
    ],
    "triton_compile_failed": [
        '  File "/usr/local/lib/python3.12/dist-packages/triton/compiler/compiler.py", line 300, in compile',
        "    module = src.make_ir(target, options, codegen_fns, module_map, context)",
        "triton.compiler.errors.CompilationError: at 152:12:",
        "            acc += tl.dot(p.to(v.dtype), v)",
        "            ^",
        "ValueError('Cannot make_shape_compatible: incompatible dimensions at index 1: 64 and 128')",
    ],
}


@pytest.mark.parametrize("failure_class", sorted(VLLM_FAILURES))
def test_vllm_names_the_same_families(failure_class):
    prefix = "(EngineCore_DP0 pid=150) ERROR 02-23 02:23:19 [core.py:948] "
    lines = VLLM_LOG.read_text(encoding="utf-8").split("\n")[:12]
    lines += [prefix + "EngineCore failed to start.", prefix + "Traceback (most recent call last):"]
    lines += [prefix + line for line in VLLM_FAILURES[failure_class]]
    result = feed_whole(LogWatcher(VLLM_SPEC), "\n".join(lines)).classify()
    assert result["failure_class"] == failure_class
    assert result["root_cause"] and result["remedy"]


def test_a_kernel_cut_off_in_the_compile_cache_is_named_with_its_file():
    """tests/fixtures/vllm/compile-cache-cut-off-0.32.0.log: fleetopt's own end-to-end torch_compile launch on vLLM
    0.32.0 (CPU), 2026-12-07, after an earlier start-up timed out while inductor linked the kernel and left it
    0 bytes long."""
    result = classify.analyse(str(ROOT / "tests" / "fixtures" / "vllm" / "compile-cache-cut-off-0.32.0.log"),
                              engine_spec("vllm"))
    assert (result["failure_class"], result["phase"], result["verdict"]) == ("compile_cache_corrupt", "compile",
                                                                             "crashed")
    assert ".main.so: file too short" in result["evidence"][0]["text"]
    assert "campaign_compile_cache=cold" in result["remedy"]
    assert "engine_core_failed" in result["also_seen"]


def test_sglang_names_a_kernel_cut_off_in_the_compile_cache_too():
    text = "\n".join([
        "[2026-03-02 10:15:03 TP0] Load weight begin. avail mem=78.50 GB",
        "[2026-03-02 10:15:09 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/torch/_inductor/codecache.py", line 2650, in load_pybinding_async',
        "    result = get_result()",
        "torch._inductor.exc.InductorError: ImportError: /root/.cache/sglang/inductor/ab/cabcdef.main.so: file too short",
    ])
    result = feed_whole(LogWatcher(SPEC), text).classify()
    assert result["failure_class"] == "compile_cache_corrupt"
