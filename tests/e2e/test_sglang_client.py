"""SGLang's own benchmark client, for real, on the CPU (issue 11).

Both releases' clients (0.5.9: `python -m sglang.bench_serving`; 0.5.23: `python -m
sglang.benchmark.serving`) are installed in venvs of their own from pinned requirements
(tests/fixtures/sglang/client/provision.py, cached under ~/.cache/fleetopt/sglang-client) and run
through the real `fleetopt_bench` module with engine sglang, i.e. with the adapter's bench_command,
bench_env and parse_bench_result, against one local vLLM CPU server shared by the module. Each
run is checked against what the server did: its Prometheus counters (finished requests, generated
tokens) read before and after the run must have grown by exactly the requests and output tokens
the client reports, warm-up requests included.

Against this server the client uses the OpenAI-compatible backend: the adapter passes
`--backend sglang` (SGLang's native /generate, which a SGLang server has and vLLM has not), and the
test appends `--backend sglang-oai` through the module's extra_args (argparse keeps the last one;
both are accepted choices, which the client checks for each occurrence).

What had to give on a CPU, with the exact errors:
- 0.5.9 pins transformers 4.57.1, which cannot read the tiny model's tokenizer (saved by
  transformers 5): `ValueError: Tokenizer class TokenizersBackend does not exist or is not
  currently imported.` The test gives that client a copy of the tokenizer whose config names the
  class transformers 4 uses for the same tokenizer.json (PreTrainedTokenizerFast).
- 0.5.23's client imports torchvision (through the server's model configurations); PyPI's
  torchvision wheels need the CUDA build of torch (`RuntimeError: operator torchvision::nms does
  not exist` with the CPU build), so its venv has an unusable stand-in for it
  (tests/fixtures/sglang/client/fleetopt_standins.py); nothing the benchmark runs calls it.

FLEETOPT_RECORD_SGLANG_BENCH=1 copies each release's one-shot result file (the client's real
JSONL) to tests/fixtures/sglang/bench/bench_<version>.jsonl, the parser's fixtures.
"""
import ast
import importlib.util
import json
import os
import re
import shutil
import urllib.request

import pytest

from e2e.conftest import local_server_args
from helpers import FIXTURES, free_port
from module_runner import run_module


_spec = importlib.util.spec_from_file_location("sglang_client_provision", FIXTURES / "sglang" / "client" / "provision.py")
provision = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(provision)

MODULES = {"0.5.9": "sglang.bench_serving", "0.5.23": "sglang.benchmark.serving"}
CONCURRENCY = 2
PROMPTS = 8
INPUT_LEN = 32
OUTPUT_LEN = 16
OPENAI_BACKEND = ["--backend", "sglang-oai"]
RECORD = os.environ.get("FLEETOPT_RECORD_SGLANG_BENCH") == "1"


def server_args(engine, folder, port, **extra):
    return local_server_args(engine, folder, port, "sglang-client", **extra)


@pytest.fixture(scope="module")
def server(local_engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm")
    port = free_port()
    started = run_module("fleetopt_server", server_args(local_engine, folder, port))
    try:
        assert started["server"]["status"] == "ready", started
        yield dict(started["server"], folder=folder)
    finally:
        stopped = run_module("fleetopt_server", server_args(local_engine, folder, port, state="stopped"))
        assert stopped["server"]["stop"]["port_free"] is True, stopped


@pytest.fixture(scope="module")
def clients():
    """Each release's client interpreter (built once, then found in the cache in under a second)."""
    return {version: provision.provision(version) for version in MODULES}


@pytest.fixture(scope="module")
def tokenizers(local_engine, tmp_path_factory):
    """The model's tokenizer for each release; 0.5.9's transformers 4 needs the class named its way."""
    model = local_engine["model"]
    legacy = tmp_path_factory.mktemp("tokenizer-transformers4")
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(os.path.join(model, name), str(legacy / name))
    config = json.load(open(os.path.join(model, "tokenizer_config.json")))
    config.pop("backend", None)
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    (legacy / "tokenizer_config.json").write_text(json.dumps(config))
    return {"0.5.9": str(legacy), "0.5.23": model}


def counters(base_url):
    """The server's totals: finished requests (any reason) and generated tokens."""
    text = urllib.request.urlopen(base_url + "/metrics", timeout=10).read().decode()
    totals = {"requests": 0.0, "generation_tokens": 0.0, "errors": 0.0}
    for line in text.splitlines():
        match = re.match(r'^vllm:(request_success_total|generation_tokens_total)(\{[^}]*\})? ([0-9.e+]+)$', line)
        if not match:
            continue
        if match.group(1) == "generation_tokens_total":
            totals["generation_tokens"] += float(match.group(3))
        else:
            totals["requests"] += float(match.group(3))
            if 'finished_reason="error"' in (match.group(2) or "") or 'finished_reason="abort"' in (match.group(2) or ""):
                totals["errors"] += float(match.group(3))
    return totals


def bench(server, clients, tokenizers, version, folder, **extra):
    args = dict(engine="sglang", engine_version=version, python=clients[version], base_url=server["base_url"],
                served_model_name="tiny", tokenizer=tokenizers[version], concurrency=[CONCURRENCY],
                prompts_per_concurrency=PROMPTS // CONCURRENCY, min_prompts=PROMPTS, min_warmups=1,
                # The fixed warm-up requests the adapter sends inside a run, without warm-up runs before it.
                max_warmup_runs=0,
                input_len=INPUT_LEN, output_len=OUTPUT_LEN, result_dir=str(folder), name="sg",
                server_pid=server["pid"], level_timeout=180, extra_args=OPENAI_BACKEND)
    args.update(extra)
    before = counters(server["base_url"])
    result = run_module("fleetopt_bench", args)
    after = counters(server["base_url"])
    return result, {key: after[key] - before[key] for key in before}


def parsed_namespace(output_path):
    """The arguments the client parsed, from the Namespace(...) line it prints first."""
    text = open(output_path).read()
    line = next(l for l in text.splitlines() if l.startswith(("Namespace(", "benchmark_args=Namespace(")))
    call = ast.parse(line.split("=", 1)[1] if line.startswith("benchmark_args=") else line, mode="eval").body
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords
            if not isinstance(kw.value, ast.Name)}  # inf and nan print as bare names


def warmups_sent(level):
    """The adapter caps a run's warm-ups at its concurrency, and sends one at least (the client's default)."""
    return max(1, min(level["warmups"], CONCURRENCY))


def check_run(level, delta, version):
    """One measured run: parsed, complete, and what the server counted."""
    assert level["status"] == "ok", level
    metrics = level["metrics"]
    record = json.loads([l for l in open(level["result_file"]) if l.strip()][-1])
    # The adapter's parse of the client's own record.
    assert metrics["completed"] == record["completed"] == PROMPTS, (metrics, record)
    assert metrics["failed"] == 0 and not [e for e in record["errors"] if e], record["errors"]
    assert metrics["duration_s"] == record["duration"] and metrics["output_throughput"] == record["output_throughput"]
    assert record["total_output_tokens"] == PROMPTS * OUTPUT_LEN
    assert record["output_lens"] == [OUTPUT_LEN] * PROMPTS
    # What the server did: the measured requests plus the warm-ups, every output token of them.
    requests = PROMPTS + warmups_sent(level)
    assert delta == {"requests": requests, "generation_tokens": requests * OUTPUT_LEN, "errors": 0}, (version, delta)
    # Durations: within the run's wall time, and consistent with the latencies measured.
    assert 0 < metrics["duration_s"] < level["client_run_s"], level
    assert metrics["output_throughput"] == pytest.approx(PROMPTS * OUTPUT_LEN / metrics["duration_s"], rel=0.01)
    # At most CONCURRENCY requests in flight: the latencies add up to no more than that many durations.
    busy_s = metrics["mean_e2e_latency_ms"] / 1000.0 * PROMPTS
    assert busy_s <= CONCURRENCY * metrics["duration_s"] * 1.02, (busy_s, metrics["duration_s"])
    assert 0 < metrics["mean_ttft_ms"] < metrics["mean_e2e_latency_ms"]
    assert metrics["mean_itl_ms"] > 0 and metrics["p99_itl_ms"] >= metrics["median_itl_ms"]


def check_flags(level, argv, version):
    """Every flag the adapter passed was accepted and parsed to the value it meant."""
    assert argv[1:3] == ["-m", MODULES[version]]
    parsed = parsed_namespace(level["result_file"][:-len(".json")] + ".out")
    expected = {"base_url": argv[argv.index("--base-url") + 1], "model": "tiny",
                "dataset_name": "random-ids", "random_input_len": INPUT_LEN, "random_output_len": OUTPUT_LEN,
                "random_range_ratio": 1.0, "num_prompts": PROMPTS, "max_concurrency": CONCURRENCY,
                "seed": 0 + level["trial"] - 1, "output_file": level["result_file"], "output_details": True,
                "disable_tqdm": True, "warmup_requests": warmups_sent(level), "backend": "sglang-oai"}
    assert {key: parsed.get(key) for key in expected} == expected
    # --backend sglang (the adapter's own) was accepted as a choice before extra_args replaced it.
    assert argv[argv.index("--backend") + 1] == "sglang"


@pytest.mark.parametrize("version", sorted(MODULES))
def test_one_shot_client(server, clients, tokenizers, version, tmp_path):
    result, delta = bench(server, clients, tokenizers, version, tmp_path)
    assert not result.get("failed"), result
    assert result["server_died"] is False and result["timed_out"] is False
    [level] = result["levels"]
    assert level["client_started"] is True and warmups_sent(level) == CONCURRENCY
    check_run(level, delta, version)
    check_flags(level, result["client"], version)
    if RECORD:
        shutil.copy(level["result_file"], str(FIXTURES / "sglang" / "bench" / ("bench_%s.jsonl" % version)))


@pytest.mark.parametrize("version", sorted(MODULES))
def test_kept_client_runs_the_module_again_in_the_same_process(server, clients, tokenizers, version, tmp_path):
    """keep_client: the second call's run is SGLang's module run again by runpy in the same process."""
    first, delta_first = bench(server, clients, tokenizers, version, tmp_path, runs=[[CONCURRENCY, 1]],
                               keep_client=True)
    second, delta_second = bench(server, clients, tokenizers, version, tmp_path, runs=[[CONCURRENCY, 2]],
                                 keep_client=True)
    folder = tmp_path / ".client-sg"
    status = json.load(open(str(folder / "client.json")))
    released = run_module("fleetopt_bench", dict(
        engine="sglang", engine_version=version, python=clients[version], base_url=server["base_url"],
        served_model_name="tiny", tokenizer=tokenizers[version], concurrency=[CONCURRENCY],
        result_dir=str(tmp_path), name="sg", state="client_released"))
    [one], [two] = first["levels"], second["levels"]
    assert one["client_started"] is True and two["client_started"] is False, (one, two)
    assert status["runs"] == 2, status
    assert released["changed"] is True
    assert warmups_sent(one) == CONCURRENCY and two["warmups"] == 0 and warmups_sent(two) == 1
    check_run(one, delta_first, version)
    check_run(two, delta_second, version)
    check_flags(two, second["client"], version)
