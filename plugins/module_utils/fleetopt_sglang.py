# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang adapter: `python -m sglang.launch_server` and SGLang's serving benchmark.

Built to the facts in shared/reference/sglang-facts.md and to what the released wheels
contain (their argument parsers were snapshotted for 0.5.9, 0.5.10 and 0.5.23 under
tests/fixtures/sglang/args/; the other boundaries below were read off the wheels' source).

Catalog flags are written once, in the 0.5.9 spelling (`--enable-piecewise-cuda-graph`,
`--cuda-graph-max-bs`, ...). `normalize_flags` rewrites the merged flag mapping into the
installed release's spelling, and `unsupported_flags` names whatever that release cannot
accept, so that such a variant is reported not_applicable instead of dying in argparse.

How piecewise (prefill/extend) CUDA graphs are switched, release by release:

    0.5.4  - 0.5.9    off by default; `--enable-piecewise-cuda-graph` turns them on
    0.5.10 - 0.5.13   on by default; `--disable-piecewise-cuda-graph` turns them off
                      (`--enable-...` is then a deprecated no-op). 0.5.10-0.5.12 keep
                      GLM-5's class (GlmMoeDsaForCausalLM) on their auto-disable list, so
                      a variant that asks for them with `--enforce-piecewise-cuda-graph`
                      keeps that flag there (elsewhere the default or the opt-in suffices)
    0.5.14 and later  `--cuda-graph-backend-prefill full|breakable|disabled` (and
                      `tc_piecewise`, the torch.compile runner, up to 0.5.21); the old
                      piecewise flags stay as deprecated aliases up to 0.5.19. The
                      prefill default is `tc_piecewise` on 0.5.14 and `breakable` from
                      0.5.15. A variant that asks for prefill graphs without naming a
                      backend gets the release's default where SGLang keeps it for the
                      model: forcing a backend skips SGLang's auto-disable rules.

Where the default would be switched off for the model or the launch, the variant names what
runs instead, and where nothing can run without skipping SGLang's own auto-disable rules it is
not_applicable with the reason (`prefill_choice`, `prefill_rules`; model facts from
fleetopt_plan: `mla`, `dsa`, `multimodal`, `architecture`). With the seeds' flags:

    release         dense model        MLA model (DeepSeek-V3)   MLA + DSA (GLM-5)
    0.5.4 - 0.5.5   --enable-piecewise not_applicable: the piecewise runner collects only
                                       standard GQA attention layers ("Disable piecewise CUDA graph
                                       because some layers do not apply Standard GQA")
    0.5.6 - 0.5.9   --enable-piecewise --enable-piecewise        --enable-piecewise
    0.5.10 - 0.5.12 default            default                   --enforce-piecewise-cuda-graph
                                                                 (GLM-5's class is on the list)
    0.5.13          default            default                   default
    0.5.14          default (tc_piecewise)
    0.5.15 - 0.5.16 default (breakable) tc_piecewise: breakable is off for MLA attention
    0.5.17          default (breakable) tc_piecewise             default (DSA is exempt)
    0.5.18 - 0.5.23 default (breakable) for every model (the MLA rule is gone; tc_piecewise
                                       is removed in 0.5.22)

A backend is named only where none of its own rules holds for the flags and the model (DP
attention, torch.compile, an MoE all-to-all backend, LoRA, pipeline parallelism, two-batch
overlap, multimodal models, the model-arch list, ...); --enforce-piecewise-cuda-graph only where
the model-arch list is all that holds. Without model facts the release's default is kept (and
the catalog's enforce on 0.5.10-0.5.12). What the server then ran is read back from its own
statements (`effective_config` in library/engines/sglang.yml, `effective_config()` here).

The benchmark runs offline: `--dataset-name random-ids` with a local tokenizer and
HF_HUB_OFFLINE=1 (`random` and `sharegpt` try to download ShareGPT).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import BenchmarkFailed, EngineAdapter, merge_flags, render_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_versions import version_in_range

PIECEWISE_DEFAULT_ON = ">=0.5.10,<0.5.14"
# The piecewise runner of these releases collects only `self_attn.attn` layers: an MLA model's
# (`attn_mqa`) are missed and it logs "Disable piecewise CUDA graph because some layers do not apply
# Standard GQA" (model_runner.py of 0.5.4 and 0.5.5; 0.5.6 collects attn_mqa).
PIECEWISE_GQA_ONLY = ">=0.5.4,<0.5.6"
TC_PIECEWISE = ">=0.5.14,<0.5.22"
# tc_piecewise's auto-disable rules (server_args.py `_disable_tc_piecewise_cudagraph_if_incompatible`,
# 0.5.14-0.5.21; `_handle_piecewise_cuda_graph` of 0.5.10-0.5.13 has most of them) that a launch's flags show.
COMPILE_RULE_FLAGS = (
    ("--enable-dp-attention", "DP attention"),
    ("--enable-torch-compile", "full torch.compile mode"),
    ("--enable-lora", "LoRA"),
    ("--lora-paths", "LoRA"),
    ("--enable-hierarchical-cache", "CPU offload / hierarchical cache"),
    ("--enable-deterministic-inference", "deterministic inference"),
    ("--enable-symm-mem", "symmetric memory"),
    ("--enable-eplb", "expert distribution recorder"),
    ("--debug-cuda-graph", "CUDA graph debug mode"),
    ("--enable-dsa-prefill-context-parallel", "DSA prefill context parallelism"),
)
# configs/model_config.py `piecewise_cuda_graph_disabled_model_archs`, by release.
DISABLED_ARCHS = [
    (">=0.5.10,<0.5.12", ("DeepseekV32ForCausalLM", "Qwen3NextForCausalLM", "GlmMoeDsaForCausalLM",
                          "BailingMoeV2_5ForCausalLM", "LLaDAModelLM")),
    (">=0.5.12,<0.5.13", ("DeepseekV32ForCausalLM", "DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN",
                          "Qwen3NextForCausalLM", "GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM", "LLaDAModelLM")),
    (">=0.5.13", ("DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark",
                  "Qwen3NextForCausalLM", "BailingMoeV2_5ForCausalLM", "LLaDAModelLM")),
]
ARCH_RULE = "model-arch blacklist"
# MoE all-to-all backends breakable is validated with (0.5.17 on).
BREAKABLE_A2A = ("none", "deepep", "megamoe", "flashinfer")
BREAKABLE_BACKEND = "breakable"
TC_PIECEWISE_BACKEND = "tc_piecewise"
# Releases that auto-disable piecewise graphs for GlmMoeDsaForCausalLM (GLM-5) unless enforced.
PIECEWISE_ENFORCE_NEEDED = ">=0.5.10,<0.5.13"
CUDA_GRAPH_BACKENDS = ">=0.5.14"
# `sglang.bench_serving` is a deprecated shim of `sglang.benchmark.serving` from 0.5.15.
BENCHMARK_PACKAGE = ">=0.5.15"
# The client's `--goodput ttft:MS tpot:MS e2el:MS` (sglang.benchmark.goodput; `request_goodput` and
# `slo_attainment` in the record): present in 0.5.23's client, absent from 0.5.9's bench_serving,
# the two clients fleetopt has run. Releases between were not checked, so it is passed from 0.5.23 on.
GOODPUT_OPTION = ">=0.5.23"

# Flags whose presence depends on the release: flag -> (releases that accept it, why not).
FLAG_RELEASES = {
    "--enable-piecewise-cuda-graph": (
        ">=0.5.4,<0.5.14",
        "piecewise CUDA graphs arrived in 0.5.4; from 0.5.14 they are chosen with "
        "--cuda-graph-backend-prefill",
    ),
    "--disable-piecewise-cuda-graph": (
        ">=0.5.10,<0.5.20",
        "exists from 0.5.10 (when piecewise CUDA graphs became the default) to 0.5.19; "
        "later releases use --cuda-graph-backend-prefill disabled",
    ),
    "--enforce-piecewise-cuda-graph": (
        ">=0.5.10,<0.5.20",
        "exists from 0.5.10 to 0.5.19 only",
    ),
    "--piecewise-cuda-graph-compiler": (
        ">=0.5.4,<0.5.20",
        "the torch.compile piecewise runner and its compiler choice were removed",
    ),
    "--piecewise-cuda-graph-tokens": (">=0.5.4,<0.5.20", "replaced by --cuda-graph-bs-prefill"),
    "--piecewise-cuda-graph-max-tokens": (">=0.5.4,<0.5.20", "replaced by --cuda-graph-max-bs-prefill"),
    "--cuda-graph-max-bs": ("<0.5.20", "replaced by --cuda-graph-max-bs-decode (0.5.14)"),
    "--cuda-graph-bs": ("<0.5.20", "replaced by --cuda-graph-bs-decode (0.5.14)"),
    "--cuda-graph-backend-decode": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph backends arrived in 0.5.14"),
    "--cuda-graph-backend-prefill": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph backends arrived in 0.5.14"),
    "--cuda-graph-max-bs-decode": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph sizes arrived in 0.5.14"),
    "--cuda-graph-max-bs-prefill": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph sizes arrived in 0.5.14"),
    "--cuda-graph-bs-decode": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph sizes arrived in 0.5.14"),
    "--cuda-graph-bs-prefill": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph sizes arrived in 0.5.14"),
    "--disable-prefill-cuda-graph": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph switches arrived in 0.5.14"),
    "--disable-decode-cuda-graph": (CUDA_GRAPH_BACKENDS, "per-phase CUDA graph switches arrived in 0.5.14"),
    "--flashinfer-allreduce-fusion-backend": (
        ">=0.5.14",
        "arrived in 0.5.14, when --enable-flashinfer-allreduce-fusion was deprecated",
    ),
}

# Values a choice flag accepts, per release range: flag -> [(range, allowed values)].
FLAG_CHOICES = {
    "--cuda-graph-backend-prefill": [
        (">=0.5.14,<0.5.22", ("full", "breakable", "tc_piecewise", "disabled")),
        (">=0.5.22", ("full", "breakable", "disabled")),
    ],
    "--cuda-graph-backend-decode": [
        (">=0.5.14,<0.5.22", ("full", "breakable", "tc_piecewise", "disabled")),
        (">=0.5.22", ("full", "breakable", "disabled")),
    ],
}

# Old spelling -> spelling from 0.5.14 on (both directions are translated).
RENAMED_AT_0_5_14 = {
    "--cuda-graph-max-bs": "--cuda-graph-max-bs-decode",
    "--cuda-graph-bs": "--cuda-graph-bs-decode",
    "--piecewise-cuda-graph-max-tokens": "--cuda-graph-max-bs-prefill",
    "--piecewise-cuda-graph-tokens": "--cuda-graph-bs-prefill",
}

# Aliases every release accepts; one spelling avoids a flag given twice.
ALIASES = {
    "--expert-parallel-size": "--ep-size",
    "--ep": "--ep-size",
    "--tp": "--tp-size",  # only an argparse prefix, ambiguous where other --tp-* flags exist
    "--tensor-parallel-size": "--tp-size",
}

PIECEWISE_FLAGS = (
    "--enable-piecewise-cuda-graph", "--disable-piecewise-cuda-graph",
    "--enforce-piecewise-cuda-graph", "--disable-prefill-cuda-graph",
    "--cuda-graph-backend-prefill",
)
PREFILL_GRAPH_OFF = "disabled"
DECODE_GRAPH_FLAGS = ("--cuda-graph-backend-decode", "--disable-decode-cuda-graph", "--disable-cuda-graph")

# Metric keys of bench_serving's JSONL record that differ from fleetopt's names.
BENCH_KEY_MAP = {"duration_s": "duration"}


def _present(value):
    return value is not None and value is not False


def _int(value, default=1):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class SglangAdapter(EngineAdapter):
    name = "sglang"
    distributions = ("sglang",)
    # The ready line follows SGLang's own warm-up generation; confirming it needs only an endpoint that answers at
    # once. /health and /health_generate generate a token and look for its answer after a fixed one-second sleep.
    health_path = "/v1/models"
    parallelism_flags = {
        "tp": ("--tp-size", "--tensor-parallel-size", "--tp"),
        "dp": ("--dp-size", "--data-parallel-size", "--dp"),
        "pp": ("--pp-size", "--pipeline-parallel-size"),
        "ep": ("--ep-size", "--expert-parallel-size", "--ep"),
    }
    per_run_client_flags = ("max-concurrency", "num-prompts", "output-file")
    goodput_keys = {"p99_ttft_ms": "ttft", "p99_tpot_ms": "tpot"}

    # -- release checks ------------------------------------------------------
    def _is(self, spec):
        return self.version is not None and version_in_range(self.version, spec)

    def goodput_supported(self):
        return self._is(GOODPUT_OPTION)

    def baseline_flags(self):
        """Piecewise CUDA graphs off, explicitly where the release turns them on by default."""
        if self._is(PIECEWISE_DEFAULT_ON):
            return {"--disable-piecewise-cuda-graph": True}
        if self._is(CUDA_GRAPH_BACKENDS):
            return {"--cuda-graph-backend-prefill": PREFILL_GRAPH_OFF}
        return {}

    # -- flag spelling -------------------------------------------------------
    def normalize_flags(self, flags):
        """The merged flag mapping (model + baseline + variant), spelled for this release.

        Idempotent. Values of None/False are dropped (they mean "leave out"). When both
        an opt-in and an opt-out of piecewise CUDA graphs are present, the opt-in wins:
        only a variant asks for them, the opt-out comes from the baseline.
        """
        flags = dict((ALIASES.get(k, k), v) for k, v in flags.items() if _present(v))
        if self.version is None:
            return flags
        flags = self._rename_graph_sizes(flags)
        return self._spell_piecewise(flags)

    def _rename_graph_sizes(self, flags):
        new_names = self._is(CUDA_GRAPH_BACKENDS)
        renamed = {}
        for flag, value in flags.items():
            if new_names:
                flag = RENAMED_AT_0_5_14.get(flag, flag)
            else:
                flag = next((old for old, new in RENAMED_AT_0_5_14.items() if new == flag), flag)
            renamed[flag] = value
        return renamed

    def _piecewise_wanted(self, flags):
        """True (on), False (off) or None (not mentioned) for prefill/piecewise graphs."""
        backend = flags.get("--cuda-graph-backend-prefill")
        if flags.get("--enable-piecewise-cuda-graph") or flags.get("--enforce-piecewise-cuda-graph"):
            return True
        if backend not in (None, PREFILL_GRAPH_OFF):
            return True
        if (flags.get("--disable-piecewise-cuda-graph") or flags.get("--disable-prefill-cuda-graph")
                or backend == PREFILL_GRAPH_OFF):
            return False
        return None

    def _spell_piecewise(self, flags):
        wanted = self._piecewise_wanted(flags)
        if wanted is None:
            return flags
        explicit_backend = flags.get("--cuda-graph-backend-prefill")
        out = dict((k, v) for k, v in flags.items() if k not in PIECEWISE_FLAGS)
        if not wanted:
            if self._is(CUDA_GRAPH_BACKENDS):
                out["--cuda-graph-backend-prefill"] = PREFILL_GRAPH_OFF
            elif self._is(PIECEWISE_DEFAULT_ON):
                out["--disable-piecewise-cuda-graph"] = True
            return out
        if self._is(CUDA_GRAPH_BACKENDS) and explicit_backend not in (None, PREFILL_GRAPH_OFF):
            out["--cuda-graph-backend-prefill"] = explicit_backend
            return out
        if self._is(PIECEWISE_DEFAULT_ON) and not self.model:
            # The model is not known: the catalog's enforce stays where GLM-5's class needs it.
            if flags.get("--enforce-piecewise-cuda-graph") and self._is(PIECEWISE_ENFORCE_NEEDED):
                out["--enforce-piecewise-cuda-graph"] = True
            return out
        out.update(self.prefill_choice(out)[0])
        return out

    # -- prefill graphs for this model ---------------------------------------------
    def _model_is(self, fact):
        return bool(self.model.get(fact))

    def prefill_rules(self, backend, flags, default=True):
        """Why this release switches prefill graphs of `backend` (`piecewise` before 0.5.14) off for these flags
        and this model: the auto-disable rules they show, [] where none holds. `default`: the backend was not
        named (0.5.14 on, a named backend skips the rules; pipeline parallelism only stops the default)."""
        if backend == "piecewise" and not self._is(PIECEWISE_DEFAULT_ON):
            return self._runner_rules(flags)
        if backend == BREAKABLE_BACKEND:
            return self._breakable_rules(flags, default)
        return self._compile_rules(flags)

    def _runner_rules(self, flags):
        """0.5.4-0.5.9: model_runner.py `can_run_piecewise_cuda_graph` and the attention layers it collects."""
        held = []
        if self._is("<0.5.6") and _present(flags.get("--disable-cuda-graph")):
            held.append("disable_cuda_graph is set")
        if _present(flags.get("--enable-torch-compile")):
            held.append("piecewise_cuda_graph has conflict with torch compile")
        if _int(flags.get("--pp-size")) > 1:
            held.append("piecewise_cuda_graph does not support PP")
        if self._is(">=0.5.7") and flags.get("--moe-a2a-backend") in ("deepep", "mooncake"):
            held.append("existing compilation errors (MoE all-to-all backend)")
        if self._is(PIECEWISE_GQA_ONLY) and self._model_is("mla"):
            held.append("some layers do not apply Standard GQA")
        return held

    def _compile_rules(self, flags):
        """The torch.compile runner's rules: piecewise on 0.5.10-0.5.13, tc_piecewise on 0.5.14-0.5.21."""
        held = [why for flag, why in COMPILE_RULE_FLAGS if _present(flags.get(flag))]
        if flags.get("--moe-a2a-backend", "none") != "none":
            held.append("MoE A2A backend")
        if _int(flags.get("--pp-size")) > 1:
            held.append("pipeline parallelism (pp_size > 1)")
        if self._is("<0.5.11") and _present(flags.get("--speculative-algorithm")):
            held.append("speculative decoding")
        if self._is("<0.5.13") and flags.get("--moe-runner-backend") in ("flashinfer_trtllm", "flashinfer_mxfp4"):
            held.append("MoE runner backend %s (bypassed topk is incompatible with torch.compile)"
                        % flags["--moe-runner-backend"])
        if any(self._is(spec) and self.model.get("architecture") in archs for spec, archs in DISABLED_ARCHS):
            held.append(ARCH_RULE)
        if self._model_is("multimodal"):
            held.append("multimodal model")
        return sorted(set(held), key=held.index)

    def _breakable_rules(self, flags, default):
        """server_args.py `_disable_breakable_cudagraph_if_incompatible` (arg_groups/cuda_graph_hook.py from 0.5.19)."""
        held = []
        a2a = flags.get("--moe-a2a-backend", "none")
        if self._model_is("mla") and (self._is("<0.5.17") or (self._is("<0.5.18") and not self._model_is("dsa"))):
            held.append("MLA attention" if self._is("<0.5.17") else "MLA attention (non-DSA)")
        if self._is(">=0.5.15") and str(self.model.get("architecture") or "").startswith("DeepseekV4"):
            held.append("DeepSeek-V4 (heavy capture-pool memory pressure)")
        if self._is(">=0.5.15,<0.5.17"):
            if _present(flags.get("--enable-lora")) or _present(flags.get("--lora-paths")):
                held.append("LoRA")
            if a2a != "none":
                held.append("MoE A2A backend")
            if _present(flags.get("--enable-dp-attention")):
                held.append("DP attention")
        if self._is(">=0.5.17"):
            if _present(flags.get("--enable-two-batch-overlap")):
                held.append("two-batch overlap")
            if a2a not in BREAKABLE_A2A:
                held.append("unvalidated a2a backend")
        if self._is(">=0.5.15") and self._model_is("multimodal"):
            held.append("multimodal model")
        if default and self._is(">=0.5.19") and _int(flags.get("--pp-size")) > 1:
            held.append("pipeline parallelism (breakable is opt-in there)")
        return held

    def prefill_choice(self, flags):
        """({flag: value} that asks this release for prefill graphs for this model, reasons none can run).

        The release's default where SGLang keeps it; where its rules would switch the default off, the other
        backend whose rules hold nothing (named, which skips the rules: only where none holds); none where every
        way is switched off, with the reasons.
        """
        if not self._is(PIECEWISE_DEFAULT_ON) and not self._is(CUDA_GRAPH_BACKENDS):
            held = self.prefill_rules("piecewise", flags)
            return {"--enable-piecewise-cuda-graph": True}, [
                'piecewise CUDA graphs off ("Disable piecewise CUDA graph because %s")' % why for why in held]
        if self._is(PIECEWISE_DEFAULT_ON):
            held = self.prefill_rules("piecewise", flags)
            if held == [ARCH_RULE] and self._is(PIECEWISE_ENFORCE_NEEDED):
                return {"--enforce-piecewise-cuda-graph": True}, []
            return {}, ["its default piecewise CUDA graphs off for %s" % ", ".join(held)] if held else []
        default = TC_PIECEWISE_BACKEND if self._is("<0.5.15") else BREAKABLE_BACKEND
        held = self.prefill_rules(default, flags)
        if not held:
            return {}, []
        reasons = ["its default (%s) off for %s" % (default, ", ".join(held))]
        # The default itself comes first: a policy of the default alone (breakable under pipeline parallelism is
        # opt-in from 0.5.19) is no rule against naming it.
        for other in (default,) + tuple(b for b in (TC_PIECEWISE_BACKEND, BREAKABLE_BACKEND) if b != default):
            if other == TC_PIECEWISE_BACKEND and not self._is(TC_PIECEWISE):
                continue
            other_held = self.prefill_rules(other, flags, default=False)
            if not other_held:
                return {"--cuda-graph-backend-prefill": other}, []
            if other != default:
                reasons.append("%s off for %s" % (other, ", ".join(other_held)))
        return {}, reasons

    def unsupported_flags(self, flags):
        """[(flag, reason)] for what the installed release would refuse, or switch off for the model.

        Give the flags as merged (before normalize_flags), so that a variant asking for prefill graphs on a release
        where the default gives them is still known to ask.
        """
        if self.version is None:
            return []
        wanted = self._piecewise_wanted(dict((ALIASES.get(k, k), v) for k, v in flags.items() if _present(v)))
        flags = self.normalize_flags(flags)
        problems = []
        for flag, value in flags.items():
            reason = self._flag_problem(flag, value)
            if reason:
                problems.append((flag, reason))
        problems.extend(self._combination_problems(flags))
        problems.extend(self._prefill_graph_problems(flags, wanted))
        return problems

    def _prefill_graph_problems(self, flags, wanted):
        if not wanted or (self._is(PIECEWISE_DEFAULT_ON) and not self.model):
            return []
        if self._is(CUDA_GRAPH_BACKENDS) and flags.get("--cuda-graph-backend-prefill") not in (None, PREFILL_GRAPH_OFF):
            return []  # named: by the catalog (its choice) or by prefill_choice (nothing holds against it)
        named, reasons = self.prefill_choice(dict((k, v) for k, v in flags.items() if k not in PIECEWISE_FLAGS))
        if not reasons:
            return []
        flag = next(iter(named), "--cuda-graph-backend-prefill" if self._is(CUDA_GRAPH_BACKENDS)
                    else "--enable-piecewise-cuda-graph")
        skipped = " (forcing them on would skip those rules)" if self._is(">=0.5.10") else ""
        return [(flag, "no prefill CUDA graph backend runs here: SGLang %s switches %s%s"
                 % (self.version, ", and ".join(reasons), skipped))]

    def _flag_problem(self, flag, value):
        releases = FLAG_RELEASES.get(flag)
        if releases and not version_in_range(self.version, releases[0]):
            return "SGLang %s has no %s (accepted by releases %s: %s)" % (
                self.version, flag, releases[0], releases[1])
        for spec, allowed in FLAG_CHOICES.get(flag, ()):
            if version_in_range(self.version, spec) and str(value) not in allowed:
                return "SGLang %s accepts %s only as one of %s, not %r" % (
                    self.version, flag, "|".join(allowed), value)
        return None

    def _combination_problems(self, flags):
        if flags.get("--enable-two-batch-overlap") and flags.get("--moe-a2a-backend", "none") == "none":
            return [("--enable-two-batch-overlap",
                     "two-batch overlap needs --moe-a2a-backend other than none "
                     "(SGLang refuses it with a ValueError)")]
        return []

    def launch_flags(self, *layers):
        """Merge flag layers over this release's baseline and spell them for it.

        Returns (flags, unsupported): a variant with any unsupported flag is
        not_applicable, with those reasons.
        """
        merged = merge_flags(self.baseline_flags(), *layers)
        return self.normalize_flags(merged), self.unsupported_flags(merged)

    # -- the configuration the server states it runs ---------------------------
    def server_info_path(self):
        """Every resolved server argument: `GET /server_info` from 0.5.6, `/get_server_info` before (kept, deprecated)."""
        return "/get_server_info" if self._is("<0.5.6") else "/server_info"

    def effective_key(self, flag):
        """Every switch of prefill (piecewise) graphs sets `prefill_graph`, of decode graphs `decode_graph`."""
        flag = ALIASES.get(flag, flag)
        if flag in PIECEWISE_FLAGS:
            return "prefill_graph"
        if flag in DECODE_GRAPH_FLAGS:
            return "decode_graph"
        if flag in ("--cuda-graph-tc-compiler", "--piecewise-cuda-graph-compiler"):
            return "tc_compiler"
        return super(SglangAdapter, self).effective_key(flag)

    def derive_effective(self, settings):
        """Before 0.5.14 the arguments state graphs as booleans; they become `prefill_graph` (`piecewise` or
        `disabled`) and `decode_graph` (`full` or `disabled`), the names 0.5.14 and later state."""
        settings = dict(settings)
        enabled = settings.pop("enable_piecewise_cuda_graph", None)
        disabled = settings.pop("disable_piecewise_cuda_graph", None)
        settings.pop("enforce_piecewise_cuda_graph", None)
        no_graphs = settings.pop("disable_cuda_graph", None)
        if "prefill_graph" not in settings:
            if disabled is not None and self._is(PIECEWISE_DEFAULT_ON):
                settings["prefill_graph"] = PREFILL_GRAPH_OFF if disabled else "piecewise"
            elif enabled is not None:
                settings["prefill_graph"] = "piecewise" if enabled else PREFILL_GRAPH_OFF
        if "decode_graph" not in settings and no_graphs is not None:
            settings["decode_graph"] = PREFILL_GRAPH_OFF if no_graphs else "full"
        return settings

    # -- commands --------------------------------------------------------------
    def server_command(self, python, model, served_model_name, host, port, flags):
        return [
            python, "-m", "sglang.launch_server",
            "--model-path", model,
            "--served-model-name", served_model_name,
            "--host", host,
            "--port", str(port),
        ] + render_flags(self.normalize_flags(flags))

    def bench_module(self):
        """`sglang.bench_serving` became a deprecated shim of `sglang.benchmark.serving` in 0.5.15."""
        return "sglang.benchmark.serving" if self._is(BENCHMARK_PACKAGE) else "sglang.bench_serving"

    def bench_command(self, python, base_url, served_model_name, tokenizer, concurrency,
                      num_prompts, input_len, output_len, seed, result_path, extra_args=None, warmups=0):
        # bench_serving sends its warm-up requests all at once; capping them at the concurrency
        # keeps the warm-up within the limit the measurement uses.
        return [
            python, "-m", self.bench_module(),
            "--backend", "sglang",
            "--base-url", base_url,
            "--model", served_model_name,
            "--tokenizer", tokenizer,
            "--dataset-name", "random-ids",
            "--random-input-len", str(input_len),
            "--random-output-len", str(output_len),
            "--random-range-ratio", "1.0",
            "--num-prompts", str(num_prompts),
            "--max-concurrency", str(concurrency),
            "--seed", str(seed),
            "--output-file", result_path,
            "--output-details",
            "--disable-tqdm",
            # One at least: the client's own default, and what its first-request check expects.
            "--warmup-requests", str(max(1, min(warmups, concurrency))),
        ] + list(extra_args or [])

    def bench_env(self):
        return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def bench_preload_modules(self):
        return (self.bench_module(),)

    def parse_bench_result(self, path):
        """Metrics of the last record of bench_serving's JSONL file (it appends one per run).

        Key sets differ by release (0.5.6 has no p90_e2e_latency_ms; 0.5.23 adds p90/p95
        of every latency and goodput); the keys fleetopt reports exist in all of them.
        """
        record = self._last_record(path)
        completed = record.get("completed")
        if not completed:
            raise BenchmarkFailed(self._no_completion_reason(record, path))
        metrics = self.normalized(record, BENCH_KEY_MAP)
        metrics["failed"] = self._failed_count(record)
        return metrics

    @staticmethod
    def _last_record(path):
        try:
            with open(path) as handle:
                lines = [line for line in handle if line.strip()]
        except (IOError, OSError) as err:
            raise BenchmarkFailed("bench_serving wrote no result file %s (%s)" % (path, err))
        if not lines:
            raise BenchmarkFailed("bench_serving wrote no result record to %s" % path)
        try:
            return json.loads(lines[-1])
        except ValueError as err:
            raise BenchmarkFailed("the last record of %s is not JSON (%s); truncated run?" % (path, err))

    @staticmethod
    def _errors(record):
        return [e for e in record.get("errors") or [] if e]

    def _failed_count(self, record):
        """Requests that failed, where the record lists them (--output-details)."""
        if "errors" not in record:
            return None
        return float(len(self._errors(record)))

    def _no_completion_reason(self, record, path):
        errors = self._errors(record)
        if "completed" not in record:
            return "the record in %s has no `completed` key; not a bench_serving result" % path
        if errors:
            # An error is often a whole traceback; its last line says what happened.
            last_line = [line for line in str(errors[0]).splitlines() if line.strip()][-1]
            return "all %d requests failed; first error: %s" % (len(errors), last_line.strip()[:300])
        return "bench_serving completed 0 requests (it writes zeros, not an error, when every request fails)"
