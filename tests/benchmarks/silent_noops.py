#!/usr/bin/env python3
"""How many variants of the SGLang tier-1 catalog are silent no-ops for GLM-5 on some release 0.5.4-0.5.23 (issue 34).

A silent no-op is a variant planned as applicable whose server would run its baseline's configuration on what the
variant sets out to change: measured, it would come out `neutral` although the optimization was never tried. Each
tier-1 entry is planned as fleetopt_plan plans it (GLM-5's flags, a host of 8 GPUs, CUDA) on every release, twice:

- before: the adapter without the model's facts (what fleetopt did before it read `mla`/`dsa` from config.json);
- after: with them (GLM-5: MLA attention with DeepSeek's sparse indexer).

What the server would run for prefill graphs comes from each release's own rules (tests/sglang_prefill_rules.py, read
off the wheels). The other tier-1 entries change settings no release switches off by itself (no auto-disable rule for
enable_mscclpp, enable_single_batch_overlap or ep_size in any release's server_args.py); they are listed as such, and the
runtime check (fleetopt.analysis.effective, on the configuration each server states) is their safety net.

    .venv/bin/python tests/benchmarks/silent_noops.py
"""
import pathlib
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
import fleetopt.paths  # noqa: E402,F401  pylint: disable=wrong-import-position
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_sglang import SglangAdapter  # noqa: E402
from ansible_collections.fleetopt.campaign.plugins.modules.fleetopt_plan import plan_variants  # noqa: E402
from sglang_prefill_rules import prefill_graph  # noqa: E402

RELEASES = ["0.5.%d" % minor for minor in range(4, 24)]
GLM5 = {"architecture": "GlmMoeDsaForCausalLM", "model_type": "glm_moe_dsa", "moe": True, "num_experts": 256,
        "mla": True, "dsa": True, "multimodal": False, "config_found": True}
# The inventory's model flags: the community recipe for GLM-5-NVFP4 on 8x RTX PRO 6000.
GLM5_FLAGS = {
    "--tp-size": 8, "--quantization": "modelopt_fp4", "--kv-cache-dtype": "bf16", "--trust-remote-code": True,
    "--cuda-graph-max-bs": 32, "--max-running-requests": 64, "--mem-fraction-static": 0.85,
    "--chunked-prefill-size": 16384, "--disable-custom-all-reduce": True, "--enable-flashinfer-allreduce-fusion": True,
    "--attention-backend": "flashinfer",
}
HOST = {"gpu_count": 8, "platform": "cuda"}


def outcomes(with_model_facts):
    """{(entry id, release): "measured" | "silent no-op: <rule>" | "not_applicable: <reason>" | "no rule known"}."""
    catalog = yaml.safe_load((ROOT / "library" / "catalog" / "sglang.yml").read_text())
    entries = [entry for entry in catalog["optimizations"] if entry["tier"] == 1]
    found = {}
    for release in RELEASES:
        adapter = SglangAdapter(release, GLM5 if with_model_facts else None)
        variants = plan_variants(adapter, entries, dict(GLM5_FLAGS, **catalog["baseline"]["flags"]), {}, HOST, GLM5,
                                 release)
        baseline = variants[0]
        for variant in variants[1:]:
            key = (variant["id"], release)
            if not variant["applicable"]:
                found[key] = "not_applicable: %s" % variant["reason"]
            elif "prefill_graph" not in variant["changes"]:
                found[key] = "no rule known"
            else:
                ran, why = prefill_graph(release, variant["flags"], GLM5)
                same = ran == prefill_graph(release, baseline["flags"], GLM5)[0]
                found[key] = "silent no-op: %s" % why if same else "measured (%s)" % ran
    return found


def report(name, found):
    silent = sorted((key for key, outcome in found.items() if outcome.startswith("silent no-op")),
                    key=lambda key: (key[0], RELEASES.index(key[1])))
    print("%s: %d variant(s) silent no-ops on some release; %d (variant, release) pair(s)" % (
        name, len({variant for variant, _ in silent}), len(silent)))
    for variant, release in silent:
        print("  %s on %s: %s" % (variant, release, found[(variant, release)]))
    return silent


def main():
    before = report("before (no model facts)", outcomes(False))
    after_outcomes = outcomes(True)
    after = report("after (GLM-5 is MLA + DSA)", after_outcomes)
    print("piecewise_cuda_graph for GLM-5, per release, after:")
    for release in RELEASES:
        print("  %-7s %s" % (release, after_outcomes[("piecewise_cuda_graph", release)]))
    return 0 if before and not after else 1


if __name__ == "__main__":
    sys.exit(main())
