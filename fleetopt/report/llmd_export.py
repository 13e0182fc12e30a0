"""Export a campaign as llm-d-benchmark benchmark reports (format v0.2), for its dashboards.

Schema: llm-d/llm-d-benchmark, llmdbenchmark/analysis/benchmark_report/schema_v0_2.py
(pydantic models; components as in br_v0_2_1_json_schema.json, which v0.2 shares), see
tests/fixtures/llmd/benchmark_report_v0_2.schema.json for the commits read.

A v0.2 report describes one load point of one stack, so each measured summary row (host,
variant, concurrency) becomes one report; its trials are aggregated as summary.json does:
`mean` is the mean of the trial means, p50/p99 the mean of the trials' medians and 99th
percentiles, throughput `stddev` the standard deviation across trials. Request counts are
summed over the trials. Files are named like llm-d-benchmark's own
(`benchmark_report_v0.2,_<native name>.yaml`) so its tools' globs find them.

Not filled, because fleetopt does not record them: run.time (cells carry no timestamps),
run.pid and run.user; per-request standard deviations and the other percentiles (the
benchmark client's result keeps only mean, median and p99 in the cell);
requests.input_length/output_length as measured (the configured lengths are in
scenario.load). Unmeasured rows (not applicable, blocked, crashed, timed out) have no
results to report and are left out; summary.json and report.html explain them.
"""
import hashlib
import json
import pathlib
import re
import uuid

import yaml

# makes the collection's module_utils importable
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import EngineAdapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter
from fleetopt.files import write_atomically
from fleetopt.formatting import fmt_confidence
from fleetopt.analysis.launches import launch_details

VERSION = "0.2"
FOLDER = "llm-d"


def config_hash(data):
    """sha256 of the canonical JSON, as llm-d-benchmark's own cfg_id."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def argv_to_args(argv):
    """[python, -m, mod, '--a', '1', '--flag'] -> {'a': '1', 'flag': None}: llm-d-benchmark's native.args.

    Everything before the first long option (interpreter, module, sub-commands) is left out.
    """
    argv = [str(a) for a in argv or []]
    first = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    args, key = {}, None
    for token in argv[first:]:
        if token.startswith("-") and not re.fullmatch(r"-\d.*", token):
            key = token.lstrip("-")
            if "=" in key:
                key, value = key.split("=", 1)
                args[key] = value
                key = None
            else:
                args[key] = None
        elif key is not None:
            args[key] = token if args[key] is None else "%s %s" % (args[key], token)
    return args


def statistics(units, mean, **extra):
    if mean is None:
        return None
    stats = {"units": units, "mean": float(mean)}
    stats.update({k: float(v) for k, v in extra.items() if v is not None})
    return stats


def without_none(mapping):
    return {k: v for k, v in mapping.items() if v is not None and v != {}}


def adapter(engine):
    """The engine's adapter, which knows its flags and client; None for an engine this controller lacks."""
    try:
        return get_adapter(engine)
    except ValueError:
        return None


def parallelism(flags, engine):
    known = adapter(engine)
    return known.parallelism(flags) if known else {"tp": 1, "dp": 1, "pp": 1, "ep": 1}


def launch_flags(cell):
    launch = launch_details(cell)
    if launch.get("flags"):
        return dict(launch["flags"])
    return {"--" + k: (True if v is None else v) for k, v in argv_to_args(launch.get("argv")).items()}


def engine_component(summary, cell):
    launch = launch_details(cell)
    provenance = cell.get("provenance") or {}
    host = provenance.get("host") or {}
    model = provenance.get("model") or {}
    gpus = host.get("gpus") or []
    split = parallelism(launch_flags(cell), cell.get("engine") or summary.get("engine"))
    per_instance = split["tp"] * split["pp"] * split["dp"]
    native = without_none({"args": argv_to_args(launch.get("argv")) or None,
                           "envars": launch.get("env") or None,
                           "config": without_none({"argv": launch.get("argv"), "flags": launch.get("flags"),
                                                   "catalog_flags": launch.get("catalog_flags"),
                                                   "patches": provenance.get("patches") or None}) or None})
    return {
        "metadata": {
            "schema_version": "0.0.1",
            "label": "%s-%s" % (cell.get("engine") or summary.get("engine"), cell["variant"]),
            "cfg_id": launch.get("config_hash") or config_hash(native),
            "description": "fleetopt variant %s (%s) on %s" % (cell["variant"], cell.get("title") or "",
                                                               cell.get("host")),
        },
        "standardized": {
            "kind": "inference_engine",
            "tool": cell.get("engine") or summary.get("engine") or "unknown",
            "tool_version": str(provenance.get("engine_version") or summary.get("engine_version") or "unknown"),
            "role": "replica",
            "replicas": 1,
            "model": {"name": str(model.get("served_name") or model.get("path") or "unknown")},
            "accelerator": {
                "model": (gpus[0].get("name") or "unknown") if gpus else "cpu (%s)" % (host.get("cpu_model") or "?"),
                "count": min(per_instance, len(gpus)) if gpus else 0,
                "parallelism": split,
            },
        },
        "native": native,
    }


def client_tool(client_argv, engine):
    known = adapter(engine)
    return known.benchmark_tool(client_argv) if known else "%s-benchmark" % engine


def client_args(client_argv, engine):
    """The client's native args without those that name a run's files or differ per level."""
    args = argv_to_args(client_argv)
    known = adapter(engine) or EngineAdapter()
    for flag in known.per_run_client_flags:
        args.pop(flag, None)
    return args


def load_section(summary, cell, row):
    benchmark = cell.get("benchmark") or (summary.get("settings") or {}).get("benchmark") or {}
    args = client_args(benchmark.get("client"), cell.get("engine") or summary.get("engine"))
    args["max-concurrency"] = str(row["concurrency"])
    prompts = sorted({lv.get("num_prompts") for lv in cell.get("levels") or []
                      if lv.get("concurrency") == row["concurrency"] and lv.get("num_prompts")})
    if prompts:
        args["num-prompts"] = str(prompts[-1])
    config = without_none({"trials": row["trials"], "planned_trials": benchmark.get("trials"),
                           "warmup_per_concurrency": benchmark.get("warmup_per_concurrency"),
                           "warmup_output_len": benchmark.get("warmup_output_len") or None,
                           "max_warmup_runs": benchmark.get("max_warmup_runs"),
                           "warmup_settle_pct": benchmark.get("warmup_settle_pct"),
                           "seed": benchmark.get("seed"), "aggregation": "mean over trials"})
    native = {"args": args, "config": config}
    dataset = args.get("dataset-name") or "random"
    output_len = benchmark.get("output_len")
    return {
        "metadata": {"schema_version": "0.0.1", "cfg_id": config_hash(native),
                     "description": "%s dataset, %s input / %s output tokens, concurrency %s, %d trial(s)" % (
                         dataset, benchmark.get("input_len"), output_len, row["concurrency"], row["trials"])},
        "standardized": without_none({
            "tool": client_tool(benchmark.get("client"), cell.get("engine") or summary.get("engine")),
            "tool_version": str((cell.get("provenance") or {}).get("engine_version") or "unknown"),
            "source": "random" if dataset == "random" else "sampled",
            "stage": 0,
            "input_seq_len": {"distribution": "fixed", "value": benchmark.get("input_len") or 1},
            "output_seq_len": {"distribution": "fixed", "value": output_len} if output_len else None,
            "concurrency": int(row["concurrency"]),
        }),
        "native": native,
    }


def results_section(row):
    m = row.get("metrics") or {}
    spread = {k: (v or {}).get("std") for k, v in (row.get("stats") or {}).items()}
    trials = row["trials"]
    requests = without_none({
        "total": int(round(trials * ((m.get("completed") or 0) + (m.get("failed") or 0)))),
        "failures": int(round(trials * m["failed"])) if m.get("failed") is not None else None,
    })
    latency = without_none({
        "time_to_first_token": statistics("ms", m.get("mean_ttft_ms"), p50=m.get("median_ttft_ms"),
                                          p99=m.get("p99_ttft_ms")),
        "time_per_output_token": statistics("ms/token", m.get("mean_tpot_ms")),
        "inter_token_latency": statistics("ms/token", m.get("mean_itl_ms"), p50=m.get("median_itl_ms"),
                                          p99=m.get("p99_itl_ms")),
        "request_latency": statistics("ms", m.get("mean_e2e_latency_ms"), p99=m.get("p99_e2e_latency_ms")),
    })
    throughput = without_none({
        "output_token_rate": statistics("tokens/s", m.get("output_throughput"), stddev=spread.get("output_throughput")),
        "total_token_rate": statistics("tokens/s", m.get("total_throughput"), stddev=spread.get("total_throughput")),
        "request_rate": statistics("queries/s", m.get("request_throughput")),
    })
    aggregate = without_none({"requests": requests, "latency": latency or None, "throughput": throughput or None})
    return {"request_performance": {"aggregate": aggregate}}


def describe_row(summary, row):
    metric = summary["settings"]["verdict_metric"]
    comparison = (row.get("vs_baseline") or {}).get(metric) or {}
    text = "fleetopt campaign %s: variant %s on %s at concurrency %s, mean of %d trial(s)" % (
        summary["campaign"], row["variant"], row["host"], row["concurrency"], row["trials"])
    if comparison.get("change_pct") is not None:
        text += "; %s %+.1f %% vs %s" % (metric, comparison["change_pct"], row.get("baseline_variant") or "baseline")
        if comparison.get("ci_low_pct") is not None:
            text += " [%+.1f, %+.1f] (%s %% CI)" % (
                comparison["ci_low_pct"], comparison["ci_high_pct"], fmt_confidence(comparison.get("confidence", 0.95)))
    if row.get("verdict"):
        text += ", %s" % row["verdict"]
    return text


def report_uid(summary, row, cell):
    """The same for the same measurement, so writing the reports again does not make new runs."""
    identity = {"campaign": summary["campaign"], "host": row["host"], "variant": row["variant"],
                "concurrency": row["concurrency"], "config": launch_details(cell).get("config_hash"),
                "samples": row.get("samples")}
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "fleetopt:" + config_hash(identity)))


def report_for_row(summary, row, cell):
    keywords = ["fleetopt", "campaign=%s" % summary["campaign"], "variant=%s" % row["variant"],
                "host=%s" % row["host"], "engine=%s" % (cell.get("engine") or summary.get("engine"))]
    if row.get("verdict"):
        keywords.append("verdict=%s" % row["verdict"])
    return {
        "version": VERSION,
        "run": {
            "uid": report_uid(summary, row, cell),
            "eid": summary["campaign"],
            "cid": str(row["host"]),
            "description": describe_row(summary, row),
            "keywords": keywords,
        },
        "scenario": {"stack": [engine_component(summary, cell)], "load": load_section(summary, cell, row)},
        "results": results_section(row),
    }


def safe_name(text):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", str(text))


def report_name(row):
    return "benchmark_report_v0.2,_%s_%s_c%s.yaml" % (safe_name(row["host"]), safe_name(row["variant"]),
                                                      row["concurrency"])


def llmd_reports(summary, cells):
    """[(file name, report)] for every measured row of the summary."""
    by_key = {(c.get("host"), c["variant"]): c for c in cells}
    reports = []
    for row in summary["cells"]:
        cell = by_key.get((row["host"], row["variant"]))
        if row["status"] != "ok" or row.get("concurrency") is None or cell is None or not row.get("metrics"):
            continue
        reports.append((report_name(row), report_for_row(summary, row, cell)))
    return reports


def write_llmd_reports(campaign_dir, summary, cells):
    """Write results/<campaign>/llm-d/*.yaml (stale ones removed) and return their paths."""
    folder = pathlib.Path(campaign_dir) / FOLDER
    folder.mkdir(exist_ok=True)
    reports = llmd_reports(summary, cells)
    names = {name for name, _ in reports}
    for old in folder.glob("benchmark_report_v0.2,_*.yaml"):
        if old.name not in names:
            old.unlink()
    paths = []
    for name, report in reports:
        write_atomically(folder / name, yaml.safe_dump(report, sort_keys=False, allow_unicode=True))
        paths.append(folder / name)
    return paths
