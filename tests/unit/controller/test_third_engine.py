"""A third engine is an adapter, its engine spec and its catalog, registered in one place
(module_utils/fleetopt_engines.py): with nothing else edited, the plan module plans it and the
report (summary, Markdown, HTML, llm-d export) reports it with the adapter's own knowledge."""
import json
import shutil
import stat
import subprocess
import sys

import yaml

from helpers import ROOT, free_port
from module_runner import run_module
from schema_complete import complete_cell

ADAPTER = '''
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import EngineAdapter, render_flags


class TinyAdapter(EngineAdapter):
    name = "tiny"
    distributions = ("tiny-engine",)
    parallelism_flags = {"tp": ("--shards",)}
    per_run_client_flags = ("concurrency", "report")

    def server_command(self, python, model, served_model_name, host, port, flags):
        return [python, "-m", "tiny.serve", model, "--port", str(port)] + render_flags(flags)

    def bench_command(self, python, base_url, served_model_name, tokenizer, concurrency, num_prompts,
                      input_len, output_len, seed, result_path, extra_args=None, warmups=0):
        return [python, "-m", "tiny.bench", base_url, "--concurrency", str(concurrency), "--report", result_path]

    def benchmark_tool(self, client_argv):
        return "tiny-bench"
'''
SPEC = {"engine": "tiny", "phases": [{"name": "load", "pattern": "loading"}, {"name": "serve", "pattern": "serving"}],
        "ready": {"pattern": "ready"}, "failures": []}
CATALOG = {"engine": "tiny", "baseline": {"flags": {}}, "optimizations": [
    {"id": "two_shards", "tier": 1, "title": "Two shards", "flags": {"--shards": 2}},
    {"id": "next_release", "tier": 1, "title": "Needs 2.0", "flags": {"--fast": True},
     "requires": {"engine_version": ">=2.0"}},
]}


def project_with_a_third_engine(tmp_path):
    project = tmp_path / "project"
    for folder in ("plugins", "library", "fleetopt"):
        shutil.copytree(ROOT / folder, project / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "collections" / "ansible_collections" / "fleetopt").mkdir(parents=True)
    (project / "collections" / "ansible_collections" / "fleetopt" / "campaign").symlink_to(project)
    (project / "plugins" / "module_utils" / "fleetopt_tiny.py").write_text(ADAPTER)
    (project / "library" / "engines" / "tiny.yml").write_text(yaml.safe_dump(SPEC))
    (project / "library" / "catalog" / "tiny.yml").write_text(yaml.safe_dump(CATALOG))
    registry = project / "plugins" / "module_utils" / "fleetopt_engines.py"
    text = registry.read_text()
    registered = text.replace(
        "from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_vllm import VllmAdapter\n",
        "from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_vllm import VllmAdapter\nfrom ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_tiny import TinyAdapter\n",
    ).replace("(SglangAdapter, VllmAdapter)", "(SglangAdapter, VllmAdapter, TinyAdapter)")
    assert registered.count("TinyAdapter") == 2
    registry.write_text(registered)
    return project


def tiny_python(tmp_path, version="1.2.0"):
    site = tmp_path / "site" / ("tiny_engine-%s.dist-info" % version)
    site.mkdir(parents=True)
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-engine\nVersion: %s\n" % version)
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nPYTHONPATH=%s exec %s \"$@\"\n" % (site.parent, sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    return str(python)


def cell(variant, order, outputs, flags):
    levels = [{"concurrency": 2, "trial": i + 1, "status": "ok", "reason": None, "num_prompts": 8,
               "metrics": {"output_throughput": out, "total_throughput": 2 * out, "request_throughput": 1.0,
                           "mean_ttft_ms": 10.0, "median_ttft_ms": 9.0, "p99_ttft_ms": 20.0, "mean_itl_ms": 1.0,
                           "completed": 8.0, "failed": 0.0}}
              for i, out in enumerate(outputs)]
    return complete_cell({"schema": "fleetopt.cell/1", "variant": variant, "order": order, "title": variant, "host": "h1",
            "engine": "tiny", "status": "ok", "levels": levels, "failure": None, "reason": None,
            "launch": {"argv": ["python", "-m", "tiny.serve", "/m"], "flags": flags, "config_hash": variant},
            "provenance": {"engine_version": "1.2.0", "host": {"gpus": [], "cpu_model": "test"}},
            "benchmark": {"concurrency": [2], "trials": 3, "input_len": 8, "output_len": 8,
                          "client": ["python", "-m", "tiny.bench", "http://h1", "--concurrency", "2",
                                     "--report", "/tmp/r.json", "--seed", "0"]}})


def test_a_third_engine_is_planned_and_reported_with_only_its_adapter_and_data_added(tmp_path):
    project = project_with_a_third_engine(tmp_path)
    model = tmp_path / "model"
    model.mkdir()
    planned = run_module("fleetopt_plan", dict(
        engine="tiny", python=tiny_python(tmp_path), model=str(model), catalog=CATALOG, tier=1,
        port=free_port(), run_dir=str(tmp_path / "run")), root=project)
    assert planned.get("failed") is not True, planned
    assert planned["engine_version"] == "1.2.0"
    variants = {v["id"]: v for v in planned["variants"]}
    assert list(variants) == ["baseline", "two_shards", "next_release"]
    assert variants["two_shards"]["applicable"] and variants["two_shards"]["flags"] == {"--shards": 2}
    assert variants["next_release"]["reason"] == "needs engine version >=2.0, installed is 1.2.0"

    campaign = tmp_path / "results" / "c1"
    for name, order, outputs, flags in (("baseline", 0, (100, 101, 99), {}),
                                        ("two_shards", 1, (150, 152, 149), {"--shards": 2})):
        path = campaign / "cells" / "h1" / ("%s.json" % name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cell(name, order, outputs, flags)))
    proc = subprocess.run([sys.executable, "-m", "fleetopt.cli", "report", str(campaign)], cwd=str(project),
                          env={"PYTHONPATH": str(project), "PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg"},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode()
    summary = json.loads((campaign / "summary.json").read_text())
    assert summary["engine"] == "tiny"
    assert {v["variant"]: v["verdict"] for v in summary["variants"]}["two_shards"] == "improved"
    assert "two_shards" in (campaign / "report.md").read_text() and (campaign / "report.html").exists()
    exported = yaml.safe_load((campaign / "llm-d" / "benchmark_report_v0.2,_h1_two_shards_c2.yaml").read_text())
    stack = exported["scenario"]["stack"][0]["standardized"]
    assert stack["tool"] == "tiny" and stack["accelerator"]["parallelism"]["tp"] == 2
    load = exported["scenario"]["load"]
    assert load["standardized"]["tool"] == "tiny-bench"
    assert "report" not in load["native"]["args"] and load["native"]["args"]["seed"] == "0"
