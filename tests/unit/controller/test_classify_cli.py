"""`fleetopt classify-log --engine sglang FILE`: one JSON object per log, exit 0; 2 for no file."""
import json
import pathlib
import subprocess
import sys
import time

import pytest

from fleetopt import classify
from fleetopt.paths import engine_spec

ROOT = pathlib.Path(__file__).resolve().parents[3]
LOGS = ROOT / "tests" / "fixtures" / "sglang" / "logs"
SEED_STEPS = ["seed_step1_nvcc_subprocess.log", "seed_step2_posix_stat.log", "seed_step3_fullgraph_disable.log"]


def cli(*args):
    started = time.time()
    proc = subprocess.run([sys.executable, "-m", "fleetopt.cli", "classify-log", *args],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    return proc, time.time() - started


def test_seed_incident_verdict_from_the_command_line():
    proc, _ = cli("--engine", "sglang", str(LOGS / "seed_step3_fullgraph_disable.log"))
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "crashed"
    assert result["phase"] == "piecewise_compile"
    assert result["failure_class"] == "dynamo_fullgraph_graph_break"
    assert result["verdict"] == "blocked"
    assert "fullgraph=True" in result["root_cause"] and "PR 23745" in result["remedy"]
    lines = (LOGS / "seed_step3_fullgraph_disable.log").read_bytes().split(b"\n")
    for number in result["evidence_lines"]:
        assert b"Skip calling" in lines[number - 1]  # line numbers are the file's own


@pytest.mark.parametrize("name", SEED_STEPS)
def test_each_seed_step_is_analysed(name):
    # Its speed is a figure of tests/benchmarks/classify_log_timing.py, not a timed unit test.
    result = classify.analyse(str(LOGS / name), engine_spec("sglang"))
    assert result["status"] == "crashed" and result["verdict"] == "blocked"
    assert result["failure_class"] == ("dynamo_fullgraph_graph_break" if "step3" in name else "dynamo_untraceable_jit")


@pytest.mark.parametrize("name,status,phase", [
    ("healthy_0.5.9_tp8.log", "ready", "warmup"),
    ("healthy_0.5.9_long_colour.log", "ready", "warmup"),
    ("truncated_in_capture.log", "starting", "cuda_graph"),
    ("invalid_server_args.log", "crashed", None),
])
def test_status_of_healthy_truncated_and_crashed_logs(name, status, phase):
    result = classify.analyse(str(LOGS / name), engine_spec("sglang"))
    assert result["status"] == status
    assert result["phase"] == phase
    if status != "crashed":
        assert result["failure_class"] is None and result["evidence_lines"] == []


def test_phase_times_come_from_the_log_timestamps():
    result = classify.analyse(str(LOGS / "healthy_0.5.9_tp8.log"), engine_spec("sglang"))
    phases = result["phases"]
    assert phases["launch"]["start_s"] == 0.0
    assert phases["weights"]["duration_s"] == pytest.approx(98.0, abs=3)  # 95 s of shards + spread
    assert phases["cuda_graph"]["duration_s"] == pytest.approx(210.0, abs=3)
    assert phases["cuda_graph"]["info"]["cuda_graph_s"] == "208.40"


def test_a_log_cut_in_the_middle_of_a_traceback_still_names_the_cause(tmp_path):
    text = (LOGS / "seed_step1_nvcc_subprocess.log").read_bytes()
    cut = text[: text.index(b"Developer debug context") + 40]  # the first rank's traceback, cut short
    path = tmp_path / "cut.log"
    path.write_bytes(cut)
    result = classify.analyse(str(path), engine_spec("sglang"))
    assert result["status"] == "crashed"
    assert result["failure_class"] == "dynamo_untraceable_jit"


def test_interleaved_ranks_and_colour_codes(tmp_path):
    healthy = (LOGS / "healthy_0.5.9_long_colour.log").read_bytes().decode("utf-8")
    assert "\x1b[32m" in healthy
    crash = "\n".join([
        "[2026-03-02 14:20:00 TP5] Scheduler hit an exception: Traceback (most recent call last):",
        "\x1b[31mtorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\x1b[0m",
        "[2026-03-02 14:20:00 TP2] Decode batch, #running-req: 64, #token: 57600, token usage: 0.64, cuda graph: True, gen throughput (token/s): 1544.00, #queue-req: 0",
        "[2026-03-02 14:20:01] Received sigquit from a child process. It usually means the child failed.",
    ])
    path = tmp_path / "long.log"
    path.write_bytes((healthy + crash + "\n").encode("utf-8"))
    result = classify.analyse(str(path), engine_spec("sglang"))
    assert result["status"] == "crashed" and result["failure_class"] == "cuda_oom"
    assert result["evidence_lines"] == [healthy.count("\n") + 2]


def test_missing_file_is_a_clear_error_with_exit_2(tmp_path):
    proc, _ = cli("--engine", "sglang", str(tmp_path / "absent.log"))
    assert proc.returncode == 2
    assert "cannot read" in proc.stderr.decode() and proc.stdout == b""


def test_classify_log_accepts_the_registered_engines():
    from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import ADAPTERS
    from fleetopt.cli import build_parser

    classify = build_parser()._subparsers._group_actions[0].choices["classify-log"]
    engine = next(a for a in classify._actions if a.dest == "engine")
    assert sorted(engine.choices) == sorted(ADAPTERS)
