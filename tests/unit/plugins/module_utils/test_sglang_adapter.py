"""SglangAdapter: launch commands per release, checked against the real argument parsers.

tests/fixtures/sglang/args/<version>.txt hold the option strings that SGLang's own parser
accepts in 0.5.9, 0.5.10, 0.5.16 and 0.5.23 (made by snapshot_args.py from the released wheels);
<version>-client.txt the same for the benchmark client where one was made.
"""
import json
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import BenchmarkFailed, merge_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_versions import version_in_range
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_sglang import FLAG_CHOICES, FLAG_RELEASES, SglangAdapter

ROOT = pathlib.Path(__file__).resolve().parents[4]
ARGS = ROOT / "tests" / "fixtures" / "sglang" / "args"
BENCH = ROOT / "tests" / "fixtures" / "sglang" / "bench"
SNAPSHOT_VERSIONS = ("0.5.9", "0.5.10", "0.5.16", "0.5.23")
# The inventory's model flags: the community recipe for GLM-5-NVFP4 on 8x RTX PRO 6000.
GLM5_FLAGS = {
    "--tp-size": 8, "--quantization": "modelopt_fp4", "--kv-cache-dtype": "bf16",
    "--trust-remote-code": True, "--cuda-graph-max-bs": 32, "--max-running-requests": 64,
    "--mem-fraction-static": 0.85, "--chunked-prefill-size": 16384,
    "--disable-custom-all-reduce": True, "--enable-flashinfer-allreduce-fusion": True,
    "--attention-backend": "flashinfer",
}


def load_snapshot(version, client=False):
    """{option: choices or None} that `version`'s server parser (or benchmark client's) accepts."""
    options = {}
    lines = (ARGS / ("%s%s.txt" % (version, "-client" if client else ""))).read_text().splitlines()
    assert lines[0].startswith("# sglang==%s" % version)
    for line in lines[1:]:
        option, _, extra = line.partition("\t")
        options[option] = extra[len("choices="):].split(",") if extra else None
    return options


SNAPSHOTS = {version: load_snapshot(version) for version in SNAPSHOT_VERSIONS}
CATALOG = yaml.safe_load((ROOT / "library" / "catalog" / "sglang.yml").read_text())
TIER1 = [entry for entry in CATALOG["optimizations"] if entry["tier"] == 1]


def rejected_by_parser(argv, snapshot):
    """Options in argv the release's parser would refuse, or whose value is not a choice."""
    refused = []
    for index, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        if token not in snapshot:
            refused.append(token)
            continue
        choices = snapshot[token]
        value = argv[index + 1] if index + 1 < len(argv) else None
        if choices and value not in choices:
            refused.append("%s %s" % (token, value))
    return refused


def command(version, *layers):
    adapter = SglangAdapter(version)
    flags, unsupported = adapter.launch_flags(GLM5_FLAGS, CATALOG["baseline"]["flags"], *layers)
    argv = adapter.server_command("/venv/bin/python", "/models/GLM-5-NVFP4", "glm-5", "127.0.0.1", 30000, flags)
    return argv, unsupported


# -- launch commands against the real parsers ------------------------------------------------

@pytest.mark.parametrize("version", SNAPSHOT_VERSIONS)
def test_baseline_command_uses_only_options_the_release_accepts(version):
    argv, unsupported = command(version)
    assert unsupported == []
    assert argv[1:3] == ["-m", "sglang.launch_server"]
    assert rejected_by_parser(argv, SNAPSHOTS[version]) == []


@pytest.mark.parametrize("version", SNAPSHOT_VERSIONS)
@pytest.mark.parametrize("entry", TIER1, ids=[e["id"] for e in TIER1])
def test_tier1_variant_command_uses_only_options_the_release_accepts(version, entry):
    argv, unsupported = command(version, entry["flags"])
    if version_in_range(version, entry["requires"].get("engine_version")):
        assert unsupported == []
        assert rejected_by_parser(argv, SNAPSHOTS[version]) == []
    else:
        assert unsupported


@pytest.mark.parametrize("version", SNAPSHOT_VERSIONS)
def test_piecewise_variant_differs_from_the_baseline_on_every_release(version):
    baseline, _ = command(version)
    variant, _ = command(version, TIER1[0]["flags"])
    assert TIER1[0]["id"] == "piecewise_cuda_graph"
    assert baseline != variant


@pytest.mark.parametrize("version,baseline,variant", [
    ("0.5.9", {}, {"--enable-piecewise-cuda-graph": True}),
    # 0.5.10-0.5.12 keep GLM-5's class (GlmMoeDsaForCausalLM) on their piecewise auto-disable
    # list: without --enforce-piecewise-cuda-graph the variant would measure the baseline again.
    ("0.5.10", {"--disable-piecewise-cuda-graph": True}, {"--enforce-piecewise-cuda-graph": True}),
    ("0.5.12", {"--disable-piecewise-cuda-graph": True}, {"--enforce-piecewise-cuda-graph": True}),
    # 0.5.13 no longer auto-disables it: the default (on) is the variant.
    ("0.5.13", {"--disable-piecewise-cuda-graph": True}, {}),
    # 0.5.14 on: the release's own prefill default (tc_piecewise on 0.5.14, breakable from 0.5.15,
    # which SGLang turns off for MLA models such as GLM-5); forcing breakable would skip that rule.
    ("0.5.14", {"--cuda-graph-backend-prefill": "disabled"}, {}),
    ("0.5.15", {"--cuda-graph-backend-prefill": "disabled"}, {}),
    ("0.5.23", {"--cuda-graph-backend-prefill": "disabled"}, {}),
])
def test_piecewise_switch_is_spelled_for_each_release(version, baseline, variant):
    adapter = SglangAdapter(version)
    assert adapter.baseline_flags() == baseline
    flags, unsupported = adapter.launch_flags(TIER1[0]["flags"])
    assert flags == variant
    assert unsupported == []


@pytest.mark.parametrize("version,expected", [
    ("0.5.9", {"--cuda-graph-max-bs": 32, "--piecewise-cuda-graph-max-tokens": 4096}),
    ("0.5.23", {"--cuda-graph-max-bs-decode": 32, "--cuda-graph-max-bs-prefill": 4096}),
])
def test_graph_sizes_are_renamed_both_ways(version, expected):
    adapter = SglangAdapter(version)
    for spelling in ({"--cuda-graph-max-bs": 32, "--piecewise-cuda-graph-max-tokens": 4096},
                     {"--cuda-graph-max-bs-decode": 32, "--cuda-graph-max-bs-prefill": 4096}):
        assert adapter.normalize_flags(spelling) == expected


def test_normalize_is_idempotent_and_drops_removed_flags():
    adapter = SglangAdapter("0.5.10")
    flags = {"--expert-parallel-size": 8, "--tp": 8, "--enable-mscclpp": True, "--foo": None, "--bar": False}
    once = adapter.normalize_flags(flags)
    assert once == {"--ep-size": 8, "--tp-size": 8, "--enable-mscclpp": True}
    assert adapter.normalize_flags(once) == once


def test_enforce_survives_on_the_releases_that_have_it():
    flags = {"--enable-piecewise-cuda-graph": True, "--enforce-piecewise-cuda-graph": True}
    assert SglangAdapter("0.5.11").normalize_flags(flags) == {"--enforce-piecewise-cuda-graph": True}
    assert SglangAdapter("0.5.9").normalize_flags(flags) == {"--enable-piecewise-cuda-graph": True}


@pytest.mark.parametrize("version,flags,flag", [
    ("0.5.3", {"--enable-piecewise-cuda-graph": True}, "--enable-piecewise-cuda-graph"),
    ("0.5.23", {"--piecewise-cuda-graph-compiler": "inductor"}, "--piecewise-cuda-graph-compiler"),
    ("0.5.23", {"--cuda-graph-backend-prefill": "tc_piecewise"}, "--cuda-graph-backend-prefill"),
    ("0.5.9", {"--flashinfer-allreduce-fusion-backend": "trtllm"}, "--flashinfer-allreduce-fusion-backend"),
    ("0.5.13", {"--flashinfer-allreduce-fusion-backend": "trtllm"}, "--flashinfer-allreduce-fusion-backend"),
    ("0.5.9", {"--enable-two-batch-overlap": True}, "--enable-two-batch-overlap"),
])
def test_flags_a_release_refuses_make_the_variant_not_applicable(version, flags, flag):
    problems = SglangAdapter(version).unsupported_flags(flags)
    assert [name for name, _ in problems] == [flag]
    assert version in problems[0][1] or "moe-a2a-backend" in problems[0][1]


def test_flashinfer_allreduce_fusion_backend_exists_from_0_5_14():
    assert SglangAdapter("0.5.14").unsupported_flags({"--flashinfer-allreduce-fusion-backend": "trtllm"}) == []


def test_a_backend_the_variant_names_itself_is_kept_and_breakable_is_never_added():
    assert SglangAdapter("0.5.16").launch_flags(
        {"--enable-piecewise-cuda-graph": True, "--cuda-graph-backend-prefill": "tc_piecewise"})[0] == {
        "--cuda-graph-backend-prefill": "tc_piecewise"}
    for version in ("0.5.14", "0.5.15", "0.5.21", "0.5.23"):
        flags, _ = SglangAdapter(version).launch_flags(TIER1[0]["flags"])
        assert "breakable" not in flags.values(), version


@pytest.mark.parametrize("version,module", [
    ("0.5.9", "sglang.bench_serving"),
    ("0.5.14", "sglang.bench_serving"),
    ("0.5.15", "sglang.benchmark.serving"),  # bench_serving is a deprecated shim from here
    ("0.5.23", "sglang.benchmark.serving"),
])
def test_benchmark_module_per_release(version, module):
    assert SglangAdapter(version).bench_module() == module
    assert SglangAdapter(version).bench_command("py", "http://h:1", "m", "/tok", 4, 20, 8, 8, 1, "/r.jsonl")[2] == module
    # A client started ahead imports the module its runs execute, not the deprecated shim's target by way of the shim.
    assert SglangAdapter(version).bench_preload_modules() == (module,)


def test_tc_piecewise_is_still_accepted_where_it_exists():
    assert SglangAdapter("0.5.16").unsupported_flags({"--cuda-graph-backend-prefill": "tc_piecewise"}) == []


@pytest.mark.parametrize("version", SNAPSHOT_VERSIONS)
def test_release_table_agrees_with_the_real_parsers(version):
    """Every flag the adapter knows a range for is accepted exactly where it says."""
    for flag, (releases, _) in FLAG_RELEASES.items():
        assert version_in_range(version, releases) == (flag in SNAPSHOTS[version]), flag
    for flag, ranges in FLAG_CHOICES.items():
        for releases, allowed in ranges:
            if version_in_range(version, releases):
                assert sorted(allowed) == sorted(SNAPSHOTS[version][flag]), flag


@pytest.mark.parametrize("version", SNAPSHOT_VERSIONS)
def test_every_unsupported_report_is_true_for_the_real_parser(version):
    """Anything the adapter calls unsupported is really refused (no false not_applicable)."""
    adapter = SglangAdapter(version)
    for flag in list(FLAG_RELEASES) + ["--enable-two-batch-overlap"]:
        value = "disabled" if flag in FLAG_CHOICES else True
        for name, _ in adapter.unsupported_flags({flag: value}):
            if name != "--enable-two-batch-overlap":
                assert name not in SNAPSHOTS[version] or SNAPSHOTS[version][name]


def test_unknown_version_changes_nothing():
    adapter = SglangAdapter(None)
    assert adapter.baseline_flags() == {}
    assert adapter.normalize_flags({"--enable-piecewise-cuda-graph": True}) == {"--enable-piecewise-cuda-graph": True}
    assert adapter.unsupported_flags({"--enable-piecewise-cuda-graph": True}) == []


def test_registry_and_health_path():
    adapter = get_adapter("sglang", "0.5.9")
    assert isinstance(adapter, SglangAdapter) and adapter.version == "0.5.9"
    assert adapter.health_path == "/v1/models"


def test_catalog_shape():
    assert CATALOG["baseline"]["flags"] == {}
    assert [e["id"] for e in TIER1] == [
        "piecewise_cuda_graph", "torch_compile", "mscclpp_allreduce", "single_batch_overlap", "expert_parallelism"]
    for entry in CATALOG["optimizations"]:
        assert entry["rationale"] and entry["expected"]
        assert entry["requires"]["platform"] == ["cuda"]
        assert entry["tier"] in (1, 2, 3)
        if entry["tier"] == 3:
            assert entry["requires"].get("patch")
    assert {e["tier"] for e in CATALOG["optimizations"]} == {1, 2, 3}
    assert any("PR 23745" in issue for issue in TIER1[0]["known_issues"])


# -- benchmark -----------------------------------------------------------------------------------

@pytest.mark.parametrize("version,module", [
    ("0.5.9", "sglang.bench_serving"), ("0.5.10", "sglang.bench_serving"),
    ("0.5.23", "sglang.benchmark.serving"),
])
def test_bench_command_is_offline_and_version_aware(version, module):
    adapter = SglangAdapter(version)
    argv = adapter.bench_command("/venv/bin/python", "http://127.0.0.1:30000", "glm-5", "/models/tok",
                                 64, 320, 1024, 1024, 0, "/tmp/r.jsonl")
    assert argv[:3] == ["/venv/bin/python", "-m", module]
    assert argv[argv.index("--dataset-name") + 1] == "random-ids"
    assert argv[argv.index("--tokenizer") + 1] == "/models/tok"
    assert argv[argv.index("--output-file") + 1] == "/tmp/r.jsonl"
    assert adapter.bench_env()["HF_HUB_OFFLINE"] == "1"


def test_bench_results_of_each_release_parse():
    """0.5.6's record is written to the key list of its source; 0.5.9's and 0.5.23's were written by the
    real clients, run with the adapter's flags against the local vLLM server (tests/e2e/test_sglang_client.py
    with FLEETOPT_RECORD_SGLANG_BENCH=1): 8 prompts of 16 output tokens at concurrency 2."""
    old = SglangAdapter("0.5.6").parse_bench_result(str(BENCH / "bench_0.5.6.jsonl"))
    assert old["output_throughput"] == pytest.approx(1520.21)  # the last of its two records
    assert old["completed"] == 2048 and old["duration_s"] == pytest.approx(1379.52)
    assert old["p99_e2e_latency_ms"] and old["mean_ttft_ms"] and old["p99_itl_ms"]
    assert old["failed"] is None  # written without --output-details: no per-request errors to count
    for version in ("0.5.9", "0.5.23"):
        record = json.loads((BENCH / ("bench_%s.jsonl" % version)).read_text().splitlines()[-1])
        metrics = SglangAdapter(version).parse_bench_result(str(BENCH / ("bench_%s.jsonl" % version)))
        assert metrics["completed"] == 8 and metrics["failed"] == 0, version
        assert metrics["duration_s"] == record["duration"] > 0
        assert metrics["output_throughput"] == pytest.approx(8 * 16 / record["duration"], rel=0.01)
        for key in ("mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "mean_itl_ms", "p99_itl_ms",
                    "mean_e2e_latency_ms", "p99_e2e_latency_ms", "request_throughput", "total_throughput"):
            assert metrics[key] == record[key] and metrics[key] > 0, (version, key)


def test_zero_completed_is_a_failure_with_the_first_error():
    with pytest.raises(BenchmarkFailed, match=r"all 4 requests failed; first error: .*503"):
        SglangAdapter("0.5.9").parse_bench_result(str(BENCH / "bench_0.5.9_zero_completed.jsonl"))
    with pytest.raises(BenchmarkFailed, match="completed 0 requests"):
        SglangAdapter("0.5.9").parse_bench_result(str(BENCH / "bench_0.5.9_zero_no_details.jsonl"))


def test_missing_empty_and_truncated_results_are_failures(tmp_path):
    adapter = SglangAdapter("0.5.9")
    with pytest.raises(BenchmarkFailed, match="no result file"):
        adapter.parse_bench_result(str(tmp_path / "absent.jsonl"))
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(BenchmarkFailed, match="no result record"):
        adapter.parse_bench_result(str(tmp_path / "empty.jsonl"))
    good = (BENCH / "bench_0.5.9.jsonl").read_text()
    (tmp_path / "cut.jsonl").write_text(good + good[:200])
    with pytest.raises(BenchmarkFailed, match="not JSON"):
        adapter.parse_bench_result(str(tmp_path / "cut.jsonl"))


def test_merge_then_normalize_matches_launch_flags():
    adapter = SglangAdapter("0.5.10")
    merged = merge_flags(adapter.baseline_flags(), GLM5_FLAGS, TIER1[0]["flags"])
    assert adapter.launch_flags(GLM5_FLAGS, TIER1[0]["flags"])[0] == adapter.normalize_flags(merged)


def test_the_parser_check_has_teeth():
    """Without the adapter's translation, 0.5.9 spellings are refused by 0.5.23's parser."""
    raw = ["--enable-piecewise-cuda-graph", "--cuda-graph-max-bs", "32", "--cuda-graph-backend-prefill", "tc_piecewise"]
    assert rejected_by_parser(raw, SNAPSHOTS["0.5.23"]) == [
        "--enable-piecewise-cuda-graph", "--cuda-graph-max-bs", "--cuda-graph-backend-prefill tc_piecewise"]
    assert rejected_by_parser(["--cuda-graph-backend-prefill", "disabled"], SNAPSHOTS["0.5.9"]) == [
        "--cuda-graph-backend-prefill"]


def test_tier2_piecewise_entry_names_patches_the_stack_role_knows():
    patches = yaml.safe_load((ROOT / "library" / "patches" / "sglang_stack.yml").read_text())
    known = {patch["id"] for patch in patches["patches"]}
    entry = next(e for e in CATALOG["optimizations"] if e["id"] == "piecewise_cuda_graph_fp4_patched")
    assert set(entry["requires"]["patch"]) <= known


def test_patch_set_claims_only_what_the_released_sources_support():
    """FlashInfer 0.6.12 alone does not fix SGLang <= 0.5.11 (it calls the plain function), and
    the FP4 patches cannot apply from FlashInfer 0.6.7 (the code moved to flashinfer/quantization/)."""
    patches = yaml.safe_load((ROOT / "library" / "patches" / "sglang_stack.yml").read_text())
    for patch in patches["patches"]:
        for fix in patch.get("unnecessary_since") or []:
            assert fix["package"] != "flashinfer-python", patch["id"]
        if "flashinfer/fp4_quantization.py" in patch["files"]:
            assert version_in_range("0.6.6", patch["releases"])
            assert not version_in_range("0.6.7", patch["releases"]), patch["id"]
            assert not version_in_range("0.6.11.post1", patch["releases"]), patch["id"]
    entry = next(e for e in CATALOG["optimizations"] if e["id"] == "piecewise_cuda_graph_fp4_patched")
    assert "flashinfer-fp4-quantize-custom-op" in entry["requires"]["patch"]


@pytest.mark.parametrize("version,args", [
    # 0.5.23's client (sglang.benchmark.serving, _goodput_slo) takes --goodput ttft:MS tpot:MS e2el:MS and writes
    # request_goodput; 0.5.9's bench_serving has no such option. Releases between are not checked: not passed.
    ("0.5.23", ["--goodput", "ttft:2000", "tpot:50"]), ("0.5.30", ["--goodput", "ttft:2000", "tpot:50"]),
    ("0.5.9", []), ("0.5.22", []), (None, []),
])
def test_goodput_option_only_where_the_client_has_it(version, args):
    adapter = SglangAdapter(version)
    slo = {"p99_ttft_ms": 2000.0, "p99_tpot_ms": 50.0, "p99_itl_ms": 30.0}
    assert adapter.goodput_args(slo) == args
    assert adapter.goodput_covers(slo) == (["p99_ttft_ms", "p99_tpot_ms"] if args else [])


def test_goodput_of_a_record_is_read(tmp_path):
    record = json.loads((BENCH / "bench_0.5.23.jsonl").read_text().splitlines()[-1])
    assert SglangAdapter("0.5.23").parse_bench_result(str(BENCH / "bench_0.5.23.jsonl"))["request_goodput"] is None
    record.update(goodput_slos_ms={"ttft": 2000.0}, request_goodput=7.5, slo_attainment=1.0)
    (tmp_path / "r.jsonl").write_text(json.dumps(record) + "\n")
    assert SglangAdapter("0.5.23").parse_bench_result(str(tmp_path / "r.jsonl"))["request_goodput"] == 7.5


# -- prefill graphs for the seeds' model, release by release ---------------------------------

from sglang_prefill_rules import backend_rule, backends, prefill_graph  # noqa: E402

RELEASES = ["0.5.%d" % minor for minor in range(4, 24)]
# GLM-5 (GlmMoeDsaForCausalLM: MLA with DeepSeek's sparse indexer), a DeepSeek-V3-like MLA model without DSA,
# and a dense model. GLM-5's own class exists from 0.5.9; the MLA rules hold for its attention on every release.
MODELS = {
    "glm5": {"architecture": "GlmMoeDsaForCausalLM", "mla": True, "dsa": True, "multimodal": False, "moe": True},
    "mla": {"architecture": "DeepseekV3ForCausalLM", "mla": True, "dsa": False, "multimodal": False, "moe": True},
    "dense": {"architecture": "LlamaForCausalLM", "mla": False, "dsa": False, "multimodal": False, "moe": False},
}
PIECEWISE = next(entry for entry in TIER1 if entry["id"] == "piecewise_cuda_graph")


def planned(version, model, *layers):
    adapter = SglangAdapter(version, MODELS[model])
    return adapter.launch_flags(GLM5_FLAGS, CATALOG["baseline"]["flags"], *layers)


# Launches whose flags meet SGLang's auto-disable rules of some release.
EXTRA = {
    "seeds": {},
    "dp_attention": {"--enable-dp-attention": True},
    "torch_compile": {"--enable-torch-compile": True},
    "deepep": {"--moe-a2a-backend": "deepep"},
    "lora": {"--enable-lora": True},
    "pp2": {"--pp-size": 2},
    "two_batch_overlap": {"--enable-two-batch-overlap": True, "--moe-a2a-backend": "deepep"},
}


@pytest.mark.parametrize("extra", sorted(EXTRA))
@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("version", RELEASES)
def test_piecewise_cuda_graph_runs_prefill_graphs_where_any_can_run_and_is_not_applicable_elsewhere(version, model,
                                                                                                     extra):
    baseline, unsupported = planned(version, model, EXTRA[extra])
    assert prefill_graph(version, baseline, MODELS[model]) == ("disabled", None)
    variant, unsupported = planned(version, model, EXTRA[extra], PIECEWISE["flags"])
    unsupported = [(flag, why) for flag, why in unsupported if "prefill CUDA graph" in why]
    ran, why = prefill_graph(version, variant, MODELS[model])
    if unsupported:
        # Not applicable only where no way to ask for prefill graphs gets them without skipping SGLang's own rules:
        # the catalog's opt-in is switched off, and so is every backend the release could name (full, experimental,
        # has no rules and is never named).
        assert ran == "disabled" and why
        flags = dict(GLM5_FLAGS, **EXTRA[extra])
        assert prefill_graph(version, dict(flags, **{"--enable-piecewise-cuda-graph": True}), MODELS[model])[0] == \
            "disabled"
        for name in backends(version):
            assert name == "full" or backend_rule(version, name, flags, MODELS[model]), name
    else:
        assert ran != "disabled", "%s on %s (%s) would run without prefill graphs: %s" % (model, version, extra, why)
        # A named backend skips SGLang's rules: fleetopt names one only where none of its rules holds.
        named = variant.get("--cuda-graph-backend-prefill")
        if named and named != "disabled":
            assert backend_rule(version, named, variant, MODELS[model]) is None


@pytest.mark.parametrize("version, model, prefill_flags", [
    ("0.5.5", "dense", {"--enable-piecewise-cuda-graph": True}),
    ("0.5.6", "glm5", {"--enable-piecewise-cuda-graph": True}),
    ("0.5.13", "glm5", {}),
    ("0.5.14", "glm5", {}),
    # breakable, the default, is switched off for MLA attention: tc_piecewise runs instead.
    ("0.5.15", "glm5", {"--cuda-graph-backend-prefill": "tc_piecewise"}),
    ("0.5.16", "glm5", {"--cuda-graph-backend-prefill": "tc_piecewise"}),
    ("0.5.16", "dense", {}),
    # 0.5.17 exempts DSA models (GLM-5) from the MLA rule, not other MLA models.
    ("0.5.17", "glm5", {}),
    ("0.5.17", "mla", {"--cuda-graph-backend-prefill": "tc_piecewise"}),
    ("0.5.18", "mla", {}),
    ("0.5.23", "glm5", {}),
])
def test_an_explicit_backend_is_named_only_where_the_default_would_be_switched_off(version, model, prefill_flags):
    variant, unsupported = planned(version, model, PIECEWISE["flags"])
    assert unsupported == []
    named = dict((flag, value) for flag, value in variant.items()
                 if flag in ("--enable-piecewise-cuda-graph", "--cuda-graph-backend-prefill"))
    assert named == prefill_flags


def test_mla_models_have_no_piecewise_graphs_before_0_5_6_and_say_why():
    _, unsupported = planned("0.5.5", "glm5", PIECEWISE["flags"])
    assert [flag for flag, _ in unsupported] == ["--enable-piecewise-cuda-graph"]
    assert "some layers do not apply Standard GQA" in unsupported[0][1]


def test_where_tc_piecewise_is_also_switched_off_no_prefill_backend_runs_and_the_variant_says_so():
    _, unsupported = planned("0.5.16", "glm5", {"--enable-dp-attention": True}, PIECEWISE["flags"])
    assert unsupported == [("--cuda-graph-backend-prefill",
                            "no prefill CUDA graph backend runs here: SGLang 0.5.16 switches its default (breakable) "
                            "off for MLA attention, DP attention, and tc_piecewise off for DP attention (forcing them "
                            "on would skip those rules)")]


def test_without_model_facts_the_release_default_is_kept():
    adapter = SglangAdapter("0.5.16")
    flags, unsupported = adapter.launch_flags(GLM5_FLAGS, CATALOG["baseline"]["flags"], PIECEWISE["flags"])
    assert "--cuda-graph-backend-prefill" not in flags and unsupported == []


def test_every_switch_of_prefill_graphs_is_one_effective_setting():
    adapter = SglangAdapter("0.5.16", MODELS["glm5"])
    baseline, _ = planned("0.5.16", "glm5")
    variant, _ = planned("0.5.16", "glm5", PIECEWISE["flags"])
    assert adapter.changed_keys(variant, baseline) == ["prefill_graph"]
    old = SglangAdapter("0.5.11", MODELS["glm5"])
    assert old.changed_keys(*[planned("0.5.11", "glm5", *layers)[0] for layers in ([PIECEWISE["flags"]], [])]) == [
        "prefill_graph"]
