# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang adapter: `python -m sglang.launch_server` and `sglang.bench_serving`.

Built to the facts in shared/reference/sglang-facts.md. The benchmark runs
offline: `--dataset-name random-ids` with a local tokenizer and HF_HUB_OFFLINE=1
(`random` and `sharegpt` try to download ShareGPT).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.fleetopt_engine import BenchmarkFailed, EngineAdapter, render_flags


class SglangAdapter(EngineAdapter):
    name = "sglang"
    distributions = ("sglang",)
    health_path = "/health_generate"

    def server_command(self, python, model, served_model_name, host, port, flags):
        return [
            python, "-m", "sglang.launch_server",
            "--model-path", model,
            "--served-model-name", served_model_name,
            "--host", host,
            "--port", str(port),
        ] + render_flags(flags)

    def bench_command(self, python, base_url, served_model_name, tokenizer, concurrency,
                      num_prompts, input_len, output_len, seed, result_path, extra_args=None):
        return [
            python, "-m", "sglang.bench_serving",
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
            "--disable-tqdm",
        ] + list(extra_args or [])

    def bench_env(self):
        return {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}

    def parse_bench_result(self, path):
        """Last record of the JSONL file (bench_serving appends one per run)."""
        with open(path) as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        if not records:
            raise BenchmarkFailed("bench_serving wrote no result record to %s" % path)
        return self.normalized(records[-1], {
            "duration_s": "duration",
            "p99_e2e_latency_ms": "p99_e2e_latency_ms",
        })
