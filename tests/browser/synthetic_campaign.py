"""A synthetic campaign with every verdict, failure and start-up shape the reports must show.

Shared by the HTML report, llm-d export and browser tests; cells have the shape that
roles/campaign/templates/cell.json.j2 writes.
"""
import json

from fleetopt.analysis.summary import build_summary

HOST = "gpu-a"
EVIL = '<script>alert("x")</script> & \'quotes\''
SGLANG_PHASES = ("launch", "distributed_init", "weights", "kv_cache", "cuda_graph", "piecewise_cuda_graph",
                 "scheduler", "http", "warmup")
PHASE_SECONDS = (12.0, 2.0, 30.0, 3.0, 25.0, 40.0, 1.0, 0.5, 2.0)


def phases(until=None, scale=1.0):
    """Start-up phases as the log watcher times them; `until` is the phase a server died in (no end)."""
    result, start = {}, 0.0
    for name, seconds in zip(SGLANG_PHASES, PHASE_SECONDS):
        last = name == until
        result[name] = {"start_s": round(start, 3), "duration_s": None if last else seconds * scale,
                        "line": None, "info": {}}
        start += seconds * scale
        if last:
            break
    return result


def trials(concurrency, *outputs, ttft=50.0, itl=5.0):
    levels = []
    for index, out in enumerate(outputs):
        metrics = {
            "completed": 64.0, "failed": 0.0, "duration_s": 10.0, "request_throughput": out / 128.0,
            "output_throughput": out, "total_throughput": out * 2, "mean_ttft_ms": ttft + index,
            "median_ttft_ms": ttft, "p99_ttft_ms": ttft * 3, "mean_tpot_ms": itl, "mean_itl_ms": itl + index * 0.1,
            "median_itl_ms": itl, "p99_itl_ms": itl * 4, "mean_e2e_latency_ms": 900.0 + index,
            "p99_e2e_latency_ms": 1500.0,
        }
        levels.append({"concurrency": concurrency, "trial": index + 1, "num_prompts": 64, "status": "ok",
                       "reason": None, "metrics": metrics, "host_steal_share": 0.002 * index})
    return levels


def cell(variant, order, status="ok", levels=(), failure=None, reason=None, startup_phases=None, flags=None,
         title=None, env=None):
    flags = dict({"--tp-size": 2}, **(flags or {}))
    argv = ["/opt/sglang/bin/python", "-m", "sglang.launch_server", "--model-path", "/models/qwen", "--port", "30000"]
    for flag, value in flags.items():
        argv += [flag] if value is True else [flag, str(value)]
    started = startup_phases if startup_phases is not None else phases()
    ready = status == "ok"
    return {
        "schema": "fleetopt.cell/1", "cell_key": None, "campaign": "synthetic", "host": HOST, "engine": "sglang", "variant": variant,
        "title": title or variant.replace("_", " "), "tier": 1, "order": order, "status": status, "reason": reason,
        "failure": failure, "levels": list(levels),
        # A variant that does not apply launches nothing: its start-up has no status.
        "startup": {"status": "ready" if ready else None if status == "not_applicable" else status,
                    "startup_s": round(sum(p["duration_s"] or 0 for p in started.values()), 3) if ready else None,
                    "ready_noticed_after_s": 0.05, "phases": started,
                    "log_path": None if status == "not_applicable" else "/var/log/fleetopt/%s.log" % variant},
        "launch": {"argv": argv if status != "not_applicable" else None, "env": env or {"SGLANG_X": "1"},
                   "flags": flags, "catalog_flags": {k: v for k, v in flags.items() if k != "--tp-size"},
                   "config_hash": None if status == "not_applicable" else "%064x" % (order + 1)},
        "benchmark": {"client": ["/opt/sglang/bin/python", "-m", "sglang.bench_serving", "--backend", "sglang",
                                 "--dataset-name", "random", "--random-input-len", "1024", "--random-output-len",
                                 "256", "--num-prompts", "64", "--max-concurrency", "1", "--output-file",
                                 "/tmp/x.jsonl"],
                      "concurrency": [1, 8], "trials": 3, "warmup_per_concurrency": 2, "input_len": 1024,
                      "output_len": 256, "seed": 0},
        "provenance": {
            "engine_version": "0.5.10", "fleetopt_revision": "abc123def456",
            "host": {"hostname": "gpu-a.example", "platform": "cuda", "cpu_model": "AMD EPYC 9654", "cpu_count": 192,
                     "memory_gib": 1511.6, "gpu_count": 2, "kernel": "6.8.0", "cuda_version": "12.8",
                     "gpus": [{"name": "NVIDIA H200", "driver_version": "580.159.04"}] * 2},
            "model": {"path": "/models/qwen", "served_name": "qwen3-8b", "architecture": "Qwen3ForCausalLM"},
            "ansible_version": "2.19.14", "patches": [{"id": "sglang-fp4-prewarm", "checksum": "sha256:0123"}],
            "rationale": "why %s" % variant, "known_issues": [],
        },
    }


def synthetic_cells():
    blocked = {"failure_class": "dynamo_fullgraph_graph_break", "verdict": "blocked", "phase": "piecewise_cuda_graph",
               "root_cause": "FlashInfer's fp4_quantize makes a graph break under fullgraph=True.",
               "remedy": "Register fp4_quantize as a custom op, or upgrade to SGLang 0.5.12."}
    crashed = {"failure_class": "cuda_oom", "verdict": "crashed", "phase": "weights",
               "root_cause": "CUDA out of memory while loading weights: " + EVIL, "remedy": "Lower --mem-fraction-static."}
    return [
        cell("baseline", 0, levels=trials(1, 100.0, 101.0, 99.0) + trials(8, 400.0, 402.0, 398.0)),
        cell("cuda_graph_max_bs", 1, flags={"--cuda-graph-max-bs": 256}, startup_phases=phases(scale=1.2),
             levels=trials(1, 120.0, 121.0, 119.0, ttft=40.0) + trials(8, 480.0, 482.0, 478.0, ttft=45.0)),
        cell("neutral_flag", 2, flags={"--neutral": True},
             levels=trials(1, 100.5, 99.5, 100.0) + trials(8, 401.0, 399.0, 400.0)),
        cell("slower_kernel", 3, flags={"--slow": True},
             levels=trials(1, 80.0, 81.0, 79.0, ttft=70.0) + trials(8, 300.0, 301.0, 299.0, ttft=90.0)),
        cell("mixed_bag", 4, flags={"--mixed": True},
             levels=trials(1, 130.0, 131.0, 129.0) + trials(8, 300.0, 302.0, 298.0)),
        cell("piecewise_fp4", 5, status="blocked", failure=blocked, startup_phases=phases("piecewise_cuda_graph"),
             reason="server crashed during start-up", flags={"--enable-piecewise-cuda-graph": True}),
        cell("huge_static_mem", 6, status="crashed", failure=crashed, startup_phases=phases("weights"),
             reason="server exited", flags={"--mem-fraction-static": 0.99}, title="Huge static memory " + EVIL,
             env={"EVIL": EVIL}),
        cell("slow_start", 7, status="timeout", startup_phases=phases("cuda_graph"),
             failure={"failure_class": "startup_timeout", "verdict": "error", "phase": "cuda_graph", "root_cause": "not ready in 600 s",
                      "remedy": "Raise the start-up timeout."}, reason="not ready after 600 s"),
        cell("tensor_parallel_8", 8, status="not_applicable", startup_phases={},
             reason="needs 8 GPU(s), host has 2", flags={"--tp-size": 8}),
        cell("baseline_aa", 9, levels=trials(1, 100.2, 100.8, 99.4) + trials(8, 401.0, 399.5, 400.5)),
        cell("noisy_flag", 10, flags={"--noisy": True},
             levels=trials(1, 150.0, 60.0, 140.0) + trials(8, 401.0, 399.0, 400.0)),
    ]


EXPECTED_VERDICTS = {
    "baseline": "baseline", "cuda_graph_max_bs": "improved", "neutral_flag": "neutral", "slower_kernel": "regressed",
    "mixed_bag": "mixed", "piecewise_fp4": "blocked", "huge_static_mem": "crashed", "slow_start": "timeout",
    "tensor_parallel_8": "not_applicable", "baseline_aa": "neutral", "noisy_flag": "inconclusive",
}


def synthetic_campaign(tmp_path):
    """(campaign folder with cells written, summary, cells), as `fleetopt report` would see them."""
    campaign = tmp_path / "results" / "synthetic"
    cells = synthetic_cells()
    for c in cells:
        path = campaign / "cells" / c["host"] / ("%s.json" % c["variant"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(c))
    return campaign, build_summary(campaign, cells), cells
