"""The H200 inventory's tier-1 campaign, planned as fleetopt_plan plans it on that machine (one H200, SGLang 0.5.16,
a Llama-8B-shaped model with dummy weights), launches its servers and its benchmark client with only options SGLang 0.5.16 accepts.

What 0.5.16 accepts is its own parsers' option list: tests/fixtures/sglang/args/0.5.16.txt (ServerArgs) and
0.5.16-client.txt (sglang.benchmark.serving), made by snapshot_args.py from the released wheel on a CPU.
0.5.16-help-excerpt.txt is part of the `--help` the installed 0.5.16 printed on the H200 itself.
"""
import json
import re

import jinja2
import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter
from ansible_collections.fleetopt.campaign.plugins.modules.fleetopt_plan import (model_facts, plan_variants,
                                                                          select_entries)
from helpers import ROOT
from test_sglang_adapter import ARGS, CATALOG, SNAPSHOTS, load_snapshot, rejected_by_parser

VERSION = "0.5.16"
GROUP_VARS = ROOT / "inventory" / "h200" / "group_vars" / "fleet" / "main.yml"
HOST = {"platform": "cuda", "gpu_count": 1}
SERVER = SNAPSHOTS[VERSION]
CLIENT = load_snapshot(VERSION, client=True)


@pytest.fixture(scope="module")
def inventory(tmp_path_factory):
    """The group's variables with their Jinja resolved: h200_root is the one value from outside the inventory."""
    root = tmp_path_factory.mktemp("h200")
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    raw = yaml.safe_load(GROUP_VARS.read_text())
    values = dict((name, env.from_string(value).render(h200_root=str(root)) if isinstance(value, str) else value)
                  for name, value in raw.items() if name != "h200_root")
    # tests/device/h200/campaign.sh's model: make_shaped_model.py writes a LlamaConfig, whose config.json says this.
    model = root / "models" / "llama-8b-shape"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"}))
    assert values["campaign_model_path"] == str(model)
    return values


@pytest.fixture(scope="module")
def variants(inventory):
    """What fleetopt_plan returns for `-e tier=1` on the H200, as roles/campaign/tasks/{preflight,plan}.yml call it."""
    catalog = dict(CATALOG, optimizations=CATALOG["optimizations"]
                   + [dict(entry, source="inventory") for entry in inventory["campaign_extra_optimizations"]])
    adapter = get_adapter(inventory["campaign_engine"], VERSION)
    model = model_facts(inventory["campaign_model_path"])
    adapter.model = model
    baseline_flags = dict(catalog["baseline"].get("flags") or {})
    baseline_flags.update(inventory["campaign_server_flags"])
    planned = plan_variants(adapter, select_entries(catalog, 1, []), baseline_flags, {}, HOST, model, VERSION,
                            aa=True, startup_timeout=float(inventory["campaign_startup_timeout"]),
                            catalog_entries=catalog["optimizations"])
    return adapter, planned


def test_the_plan_has_the_variants_the_h200_campaign_runs(variants):
    _, planned = variants
    assert [(v["id"], v["applicable"]) for v in planned] == [
        ("baseline", True), ("piecewise_cuda_graph", True), ("torch_compile", True), ("mscclpp_allreduce", False),
        ("single_batch_overlap", False), ("expert_parallelism", False),
        ("planted_running_cap", True), ("planned_oom", True), ("baseline_aa", True)]


def test_torch_compile_alone_gets_a_start_up_deadline_that_fits_its_cold_compile(inventory, variants):
    """On the H200 probe --enable-torch-compile was ready after 379.5 s with cold caches: the inventory's 420 s would
    leave no margin (nor room for a larger model), and raising it for every variant would make a hung baseline wait
    as long."""
    _, planned = variants
    deadlines = dict((v["id"], (v["startup_timeout"], v["startup_timeout_from"])) for v in planned)
    assert inventory["campaign_startup_timeout"] == 420
    assert deadlines.pop("torch_compile") == (900, "startup_timeout_s of torch_compile")
    assert deadlines == dict((variant, (420, "campaign_startup_timeout")) for variant in deadlines)


def test_every_server_command_of_the_campaign_is_accepted_by_0_5_16s_parser(inventory, variants):
    adapter, planned = variants
    refused, rendered = {}, {}
    for variant in planned:
        if not variant["applicable"]:
            continue
        argv = adapter.server_command(inventory["campaign_engine_python"], inventory["campaign_model_path"],
                                      inventory["campaign_served_model_name"], "127.0.0.1",
                                      inventory["campaign_port"], variant["flags"])
        assert argv[1:3] == ["-m", "sglang.launch_server"]
        rendered[variant["id"]] = argv
        refused[variant["id"]] = rejected_by_parser(argv[3:], SERVER)
    assert refused == dict((name, []) for name in rendered)
    # The check saw the inventory's own flags and each variant's change, spelled for 0.5.16.
    for argv in rendered.values():
        assert argv[argv.index("--attention-backend") + 1] == "triton"
        assert argv[argv.index("--load-format") + 1] == "dummy"
    assert "--cuda-graph-backend-prefill" in rendered["baseline"]
    assert "--cuda-graph-backend-prefill" not in rendered["piecewise_cuda_graph"]
    assert rendered["planted_running_cap"][rendered["planted_running_cap"].index("--max-running-requests") + 1] == "16"
    assert rendered["planned_oom"][rendered["planned_oom"].index("--mem-fraction-static") + 1] == "0.999"
    assert "--enable-torch-compile" in rendered["torch_compile"] and "--enable-torch-compile" not in rendered["baseline"]


@pytest.mark.parametrize("slo", [{}, {"p99_ttft_ms": 2000.0, "p99_tpot_ms": 50.0}])
def test_every_benchmark_command_is_accepted_by_0_5_16s_client(inventory, variants, slo):
    adapter, _ = variants
    for concurrency in inventory["campaign_bench_concurrency"]:
        prompts = max(inventory["campaign_bench_min_prompts"],
                      inventory["campaign_bench_prompts_per_concurrency"] * concurrency)
        for output_len in (inventory["campaign_bench_output_len"], inventory["campaign_bench_warmup_output_len"]):
            argv = adapter.bench_command(
                inventory["campaign_engine_python"], "http://127.0.0.1:%d" % inventory["campaign_port"],
                inventory["campaign_served_model_name"], inventory["campaign_model_path"], concurrency, prompts,
                inventory["campaign_bench_input_len"], output_len, 0, "/results/r.json",
                warmups=inventory["campaign_bench_warmup_per_concurrency"]) + adapter.goodput_args(slo)
            assert argv[1:3] == ["-m", "sglang.benchmark.serving"]
            assert rejected_by_parser(argv[3:], CLIENT) == [], argv


def test_the_check_refuses_what_0_5_16_does_not_take():
    assert rejected_by_parser(["--enable-piecewise-cuda-graph", "--attention-backend", "fa9",
                               "--cuda-graph-backend-prefill", "disabled"], SERVER) == [
        "--enable-piecewise-cuda-graph", "--attention-backend fa9"]
    assert rejected_by_parser(["--goodput", "ttft:2000", "--backend", "sglang"], CLIENT) == ["--goodput"]


def test_the_snapshot_agrees_with_the_help_0_5_16_printed_on_the_h200():
    """Every option (and its choices) in the excerpt of the real `--help` is in the snapshot made on a CPU."""
    seen = {}
    for line in (ARGS / "0.5.16-help-excerpt.txt").read_text().splitlines():
        # grep -n's prefix, then argparse's usage (`[--opt {a,b}]`) or option list (`  --opt {a,b}`).
        body = re.sub(r"^\d+[:-]", "", line)
        for match in re.finditer(r"(?:\[|^  )(--[a-z0-9-]+)(?: \{([^}]*)\})?", body):
            seen[match.group(1)] = sorted(match.group(2).split(",")) if match.group(2) else None
    assert len(seen) == 20
    assert dict((option, SERVER.get(option, "absent")) for option in seen) == seen
