"""Which prefill (piecewise) CUDA graphs SGLang runs for a launch, by each release's own rules.

A model of SGLang's code, written from the released wheels 0.5.4 to 0.5.23 (PyPI), independently of the
adapter it checks (plugins/module_utils/fleetopt_sglang.py):

- 0.5.4-0.5.9: opt-in `--enable-piecewise-cuda-graph`; model_runner.py `can_run_piecewise_cuda_graph` (torch.compile,
  pipeline parallelism, `disable_cuda_graph` up to 0.5.5, a DeepEP/Mooncake all-to-all from 0.5.7) and the attention
  layers it collects (`self_attn.attn` only up to 0.5.5: "some layers do not apply Standard GQA" for MLA models;
  0.5.6 adds `attn_mqa`).
- 0.5.10-0.5.13: on by default; server_args.py `_handle_piecewise_cuda_graph` (skipped by
  `--enforce-piecewise-cuda-graph`): the model-arch list of configs/model_config.py (GLM-5's and DeepSeek-V3.2's
  classes on 0.5.10-0.5.12), speculative decoding (0.5.10), DP attention, torch.compile, pipeline parallelism, an MoE
  all-to-all backend, LoRA, multimodal models, EPLB; and the flashinfer_trtllm/mxfp4 MoE runners (0.5.10-0.5.12).
- 0.5.14-0.5.23: `cuda_graph_config`; the prefill default is tc_piecewise on 0.5.14 and breakable on CUDA from 0.5.15
  (model_executor/cuda_graph_config.py); an explicit backend is locked and skips `_apply_cuda_graph_compatibility`;
  otherwise `_disable_breakable_cudagraph_if_incompatible` (MLA attention on 0.5.14-0.5.16, MLA without DSA on 0.5.17,
  none from 0.5.18; an MoE all-to-all backend, DP attention and LoRA on 0.5.15-0.5.16; two-batch overlap and
  unvalidated all-to-all backends from 0.5.17; DeepSeek-V4; multimodal models) or
  `_disable_tc_piecewise_cudagraph_if_incompatible` (silent: the model-arch list, DP attention, torch.compile, pipeline
  parallelism, an MoE all-to-all backend, LoRA, multimodal, EPLB, ...). From 0.5.19 breakable is off by default under
  pipeline parallelism.

`prefill_graph(version, flags, model)` -> (backend or "disabled", the reason when a rule switched it off).
`model`: {"architecture", "mla", "dsa", "multimodal"}.
"""


def _v(version):
    return tuple(int(part) for part in version.split(".")[:3])


def _on(flags, name):
    value = flags.get(name)
    return value is not None and value is not False


def _int(flags, name, default=1):
    try:
        return int(flags.get(name, default))
    except (TypeError, ValueError):
        return default


ARCH_LIST_0_5_10 = ("DeepseekV32ForCausalLM", "Qwen3NextForCausalLM", "GlmMoeDsaForCausalLM",
                    "BailingMoeV2_5ForCausalLM", "LLaDAModelLM")
ARCH_LIST_0_5_12 = ARCH_LIST_0_5_10 + ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN")
ARCH_LIST_0_5_13 = ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "Qwen3NextForCausalLM",
                    "BailingMoeV2_5ForCausalLM", "LLaDAModelLM", "DeepseekV4ForCausalLMDSpark")


def _arch_list(v):
    if v < (0, 5, 12):
        return ARCH_LIST_0_5_10
    if v < (0, 5, 13):
        return ARCH_LIST_0_5_12
    return ARCH_LIST_0_5_13


def _common_rules(v, flags, model):
    """Rules shared by 0.5.10-0.5.13's switch and tc_piecewise: the first that holds, or None."""
    rules = [
        (model.get("architecture") in _arch_list(v), "model-arch blacklist"),
        (v < (0, 5, 11) and _on(flags, "--speculative-algorithm"), "speculative decoding"),
        (_on(flags, "--enable-dp-attention"), "DP attention"),
        (_on(flags, "--enable-torch-compile"), "full torch.compile mode"),
        (_int(flags, "--pp-size") > 1, "pipeline parallelism (pp_size > 1)"),
        (flags.get("--moe-a2a-backend", "none") != "none", "MoE A2A backend"),
        (_on(flags, "--enable-lora") or _on(flags, "--lora-paths"), "LoRA"),
        (bool(model.get("multimodal")), "multimodal model"),
        (_on(flags, "--enable-eplb"), "expert distribution recorder"),
    ]
    return next((why for holds, why in rules if holds), None)


def _before_0_5_10(v, flags, model):
    if not _on(flags, "--enable-piecewise-cuda-graph"):
        return "disabled", None
    if v < (0, 5, 6) and _on(flags, "--disable-cuda-graph"):
        return "disabled", "disable_cuda_graph is set"
    if _on(flags, "--enable-torch-compile"):
        return "disabled", "piecewise_cuda_graph has conflict with torch compile"
    if _int(flags, "--pp-size") > 1:
        return "disabled", "piecewise_cuda_graph does not support PP"
    if v >= (0, 5, 7) and flags.get("--moe-a2a-backend") in ("deepep", "mooncake"):
        return "disabled", "existing compilation errors"
    if v < (0, 5, 6) and model.get("mla"):
        return "disabled", "some layers do not apply Standard GQA"
    return "piecewise", None


def _before_0_5_14(v, flags, model):
    if _on(flags, "--enforce-piecewise-cuda-graph"):
        return "piecewise", None
    if _on(flags, "--disable-piecewise-cuda-graph"):
        return "disabled", None
    why = _common_rules(v, flags, model)
    if why is None and v < (0, 5, 13) and flags.get("--moe-runner-backend") in ("flashinfer_trtllm", "flashinfer_mxfp4"):
        why = "MoE runner backend %s" % flags["--moe-runner-backend"]
    return ("disabled", why) if why else ("piecewise", None)


def _breakable_rule(v, flags, model):
    mla_rule = (v < (0, 5, 17) and model.get("mla")) or (v < (0, 5, 18) and model.get("mla") and not model.get("dsa"))
    rules = [
        (bool(mla_rule), "MLA attention"),
        (model.get("architecture", "").startswith("DeepseekV4"), "DeepSeek-V4"),
        ((0, 5, 15) <= v < (0, 5, 17) and flags.get("--moe-a2a-backend", "none") != "none", "MoE A2A backend"),
        ((0, 5, 15) <= v < (0, 5, 17) and _on(flags, "--enable-dp-attention"), "DP attention"),
        ((0, 5, 15) <= v < (0, 5, 17) and (_on(flags, "--enable-lora") or _on(flags, "--lora-paths")), "LoRA"),
        (v >= (0, 5, 17) and _on(flags, "--enable-two-batch-overlap"), "two-batch overlap"),
        (v >= (0, 5, 17) and flags.get("--moe-a2a-backend", "none") not in ("none", "deepep", "megamoe", "flashinfer"),
         "unvalidated a2a backend"),
        (bool(model.get("multimodal")), "multimodal model"),
    ]
    return next((why for holds, why in rules if holds), None)


def _from_0_5_14(v, flags, model):
    if _on(flags, "--disable-cuda-graph") or _on(flags, "--disable-prefill-cuda-graph"):
        return "disabled", None
    explicit = flags.get("--cuda-graph-backend-prefill")
    if explicit:
        return explicit, None
    if v < (0, 5, 20) and _on(flags, "--enforce-piecewise-cuda-graph"):
        return "tc_piecewise", None
    if v < (0, 5, 20) and _on(flags, "--disable-piecewise-cuda-graph"):
        return "disabled", None
    default = "tc_piecewise" if v < (0, 5, 15) else "breakable"
    if default == "breakable":
        if v >= (0, 5, 19) and _int(flags, "--pp-size") > 1:
            return "disabled", "pipeline parallelism"
        why = _breakable_rule(v, flags, model)
        return ("disabled", why) if why else (default, None)
    why = _common_rules(v, flags, model)
    return ("disabled", why) if why else (default, None)


def prefill_graph(version, flags, model):
    v = _v(version)
    if v < (0, 5, 10):
        return _before_0_5_10(v, flags, model)
    if v < (0, 5, 14):
        return _before_0_5_14(v, flags, model)
    return _from_0_5_14(v, flags, model)


def backend_rule(version, backend, flags, model):
    """The rule by which `version` switches a prefill backend off when it is not named (0.5.14 on), or None."""
    v = _v(version)
    if backend == "breakable":
        return _breakable_rule(v, flags, model)
    if backend == "tc_piecewise":
        return _common_rules(v, flags, model)
    return None


def backends(version):
    """The prefill backends a release accepts by name (argparse choices), none before 0.5.14."""
    v = _v(version)
    if v < (0, 5, 14):
        return ()
    return ("full", "breakable", "tc_piecewise") if v < (0, 5, 22) else ("full", "breakable")
