"""A warning never kills a healthy server, through LogWatcher and classify-log.

The fixtures (tests/fixtures/sglang/logs/warnings/, written by make_warning_fixtures.py) are
healthy start-ups with warning lines of every kind that a broad signature could match:
torch's C++ warnings (`[W...]`), Python's `warnings` (`...: UserWarning: ...`), NCCL's
`NCCL WARN`, and SGLang's own warnings, which carry no level at all.
"""
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt import classify
from fleetopt.classify import feed_whole
from fleetopt.paths import engine_spec

ROOT = pathlib.Path(__file__).resolve().parents[3]
WARNINGS = ROOT / "tests" / "fixtures" / "sglang" / "logs" / "warnings"
SPEC = yaml.safe_load((ROOT / "library" / "engines" / "sglang.yml").read_text())
HEALTHY_WITH_WARNINGS = sorted(p.name for p in WARNINGS.glob("*.log"))


def read(name):
    with open(WARNINGS / name, encoding="utf-8", newline="") as handle:
        return handle.read()


def test_there_are_healthy_fixtures_with_warnings():
    assert HEALTHY_WITH_WARNINGS


@pytest.mark.parametrize("name", HEALTHY_WITH_WARNINGS)
def test_warnings_leave_a_healthy_start_up_healthy_in_the_watcher(name):
    watcher = feed_whole(LogWatcher(SPEC), read(name))
    assert watcher.ready
    assert not watcher.failed and watcher.first_fatal_at is None
    assert watcher.classify() is None


@pytest.mark.parametrize("name", HEALTHY_WITH_WARNINGS)
def test_warnings_leave_a_healthy_start_up_healthy_line_by_line(name):
    """The live module feeds the log as it grows; no prefix of the log is a crash either."""
    watcher = LogWatcher(SPEC)
    for number, line in enumerate(read(name).split("\n")):
        watcher.feed(line + "\n", now=float(number))
        assert not watcher.failed, line
    assert watcher.ready


@pytest.mark.parametrize("name", HEALTHY_WITH_WARNINGS)
def test_warnings_leave_a_healthy_start_up_healthy_in_classify_log(name):
    result = classify.analyse(str(WARNINGS / name), engine_spec("sglang"))
    assert result["status"] == "ready"
    assert result["failure_class"] is None and result["evidence_lines"] == []


VLLM_WARNINGS = [
    "(APIServer pid=3) WARNING 11-30 10:00:01 [utils.py:120] Port 8000 probe: [Errno 98] Address already in use; "
    "retrying",
    "(EngineCore_DP0 pid=41) WARNING 11-30 10:00:02 [cpu_worker.py:88] insufficient memory for the requested "
    "KV cache space; using 4 GiB",
    "[W1130 10:00:02.123456789 socket.cpp:767] [c10d] The server socket has failed to bind to [::]:29500 "
    "(errno: 98 - Address already in use).",
    "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:63: UserWarning: CUDA out of memory on probe",
]


def test_vllm_warnings_leave_a_healthy_start_up_healthy():
    spec = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())
    text = (ROOT / "tests" / "fixtures" / "vllm" / "startup-compiled-0.32.0.log").read_text(encoding="utf-8")
    lines = text.split("\n")
    text = "\n".join(lines[:3] + VLLM_WARNINGS + lines[3:])
    watcher = feed_whole(LogWatcher(spec), text)
    assert watcher.ready and not watcher.failed
    # the same texts as errors do decide
    error = "(APIServer pid=3) ERROR 11-30 10:00:05 [api_server.py:1] [Errno 98] Address already in use"
    watcher = feed_whole(LogWatcher(spec), "\n".join(lines[:3] + [error]))
    assert watcher.failed and watcher.classify()["failure_class"] == "port_in_use"


def test_a_handled_vllm_traceback_does_not_swallow_the_lines_after_it():
    """vLLM lines carry no bracketed prefix; an INFO line still ends an open traceback."""
    spec = yaml.safe_load((ROOT / "library" / "engines" / "vllm.yml").read_text())
    text = (ROOT / "tests" / "fixtures" / "vllm" / "startup-compiled-0.32.0.log").read_text(encoding="utf-8")
    lines = text.split("\n")
    handled = [
        "Traceback (most recent call last):",
        '  File "/venv/lib/python3.12/site-packages/vllm/utils.py", line 10, in probe',
        "OSError: probe failed",
        "(APIServer pid=3) INFO 11-30 10:00:03 [utils.py:12] Falling back: CUDA out of memory on the probe was handled",
    ]
    watcher = feed_whole(LogWatcher(spec), "\n".join(lines[:3] + handled + lines[3:]))
    assert watcher.ready and not watcher.failed
