"""A warning never kills a healthy server (issue 9), through LogWatcher and classify-log.

The fixtures (tests/fixtures/sglang/logs/warnings/, written by make_warning_fixtures.py) are
healthy start-ups with warning lines of every kind that a broad signature could match:
torch's C++ warnings (`[W...]`), Python's `warnings` (`...: UserWarning: ...`), NCCL's
`NCCL WARN`, and SGLang's own warnings, which carry no level at all.
"""
import pathlib

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes ansible.module_utils.fleetopt_* importable)
from ansible.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt import classify
from fleetopt.classify import feed_whole
from fleetopt.paths import engine_spec

ROOT = pathlib.Path(__file__).resolve().parents[2]
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
