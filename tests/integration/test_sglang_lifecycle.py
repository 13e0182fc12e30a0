"""The lifecycle module against replayed SGLang start-ups: phases, readiness, crash detection.

Each test runs the real fleetopt_server module (tests/module_runner.py) with a `python`
that execs tests/sglang_replay.py, so the module launches, follows and stops a process
that writes the fixture log with its own timing (compressed) and serves SGLang's health
endpoints. Detection latency is measured against the moment the replayer wrote the first
fatal line: detection = the wrapper's launch time + the module's reported startup_s.
"""
import pathlib

import pytest

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from fleetopt.classify import feed_whole

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "sglang" / "logs"

# The module follows the log every fraction of a second, so on a quiet host a verdict or readiness comes well within
# a second of its line; how soon on a given host is a figure (the printed latencies). What a test asserts is that the
# log ended the wait: far sooner than the 60 s start-up deadline, on any host.
DETECTION_LIMIT_S = 10.0
LATENCIES = {}


def first_fatal_line(fixture, spec):
    """Physical line number of the first line that made the log fatal (a banner, a traceback
    that ended a process, or a fatal signature in error context)."""
    with open(FIXTURES / fixture, encoding="utf-8", newline="") as handle:
        watcher = feed_whole(LogWatcher(spec), handle.read())
    return watcher.first_fatal_line


def detection_latency(server, fixture):
    """(seconds from the first fatal line to the module's verdict, same from process exit)."""
    record = server.record()
    detected_at = record["launched_at"] + server.result["server"]["startup_s"]
    fatal_line = first_fatal_line(fixture, server.spec)
    written_at = record["lines"][fatal_line - 1]
    after_exit = detected_at - record["exited_at"] if "sigterm_at" not in record else None
    return detected_at - written_at, after_exit, record


# fixture, what the launcher does when its log ends, status, class, verdict, phase, exit code
CRASHES = [
    ("seed_step1_nvcc_subprocess.log", "kill", "blocked", "dynamo_untraceable_jit", "blocked", "piecewise_compile", -9),
    ("seed_step2_posix_stat.log", "kill", "blocked", "dynamo_untraceable_jit", "blocked", "piecewise_compile", -9),
    ("seed_step3_fullgraph_disable.log", "kill", "blocked", "dynamo_fullgraph_graph_break", "blocked", "piecewise_compile", -9),
    ("seed_step1_0.5.10_wrapped.log", "kill", "blocked", "dynamo_untraceable_jit", "blocked", "piecewise_compile", -9),
    ("cuda_oom_capture.log", "kill", "crashed", "cuda_oom", "crashed", "cuda_graph", -9),
    ("unsupported_arch_deepgemm.log", "kill", "blocked", "unsupported_arch", "blocked", "cuda_graph", -9),
    ("invalid_server_args.log", "exit:2", "crashed", "invalid_server_args", "crashed", None, 2),
    ("nccl_error.log", "kill", "crashed", "nccl_error", "crashed", "weights", -9),
    ("driver_mismatch.log", "exit:1", "blocked", "driver_mismatch", "blocked", "launch", 1),
    ("port_in_use.log", "exit:3", "crashed", "port_in_use", "crashed", "scheduler", 3),
    ("warmup_failed.log", "kill", "crashed", "warmup_failed", "crashed", "warmup", -9),
]


@pytest.mark.parametrize("fixture,after,status,failure_class,verdict,phase,exit_code", CRASHES,
                         ids=[c[0][:-4] for c in CRASHES])
def test_crash_is_classified_and_detected_from_the_log(replayed, fixture, after, status,
                                                         failure_class, verdict, phase, exit_code):
    server = replayed()
    result = server.start(fixture, after)
    view = result["server"]
    assert result.get("failed") is True
    assert view["status"] == status
    assert view["failure"]["failure_class"] == failure_class
    assert view["failure"]["verdict"] == verdict
    assert view["failure"]["phase"] == phase
    assert view["failure"]["root_cause"] and view["failure"]["remedy"]
    assert view["exit_code"] == exit_code
    latency, after_exit, _ = detection_latency(server, fixture)
    LATENCIES[fixture] = (latency, after_exit)
    print("%s: verdict %.3f s after the first fatal line%s" % (
        fixture, latency, "" if after_exit is None else ", %.3f s after the process died" % after_exit))
    assert 0 <= latency < DETECTION_LIMIT_S


def test_crash_of_a_launcher_that_does_not_exit_is_caught_from_the_log(replayed):
    """The scheduler died but the launcher lives on: the log alone must end the wait."""
    fixture = "seed_step3_fullgraph_disable.log"
    server = replayed()
    result = server.start(fixture, "hang")
    view = result["server"]
    assert view["status"] == "blocked"
    assert view["failure"]["failure_class"] == "dynamo_fullgraph_graph_break"
    latency, _, record = detection_latency(server, fixture)
    # It did not exit on its own: fleetopt's stop ended it, and the supervisor saw how.
    assert record["sigterm_at"] is not None and view["exit_code"] is not None
    sigterm_after = record["sigterm_at"] - record["lines"][first_fatal_line(fixture, server.spec) - 1]
    print("%s (launcher alive): verdict %.3f s after the fatal line, SIGTERM %.3f s after it"
          % (fixture, latency, sigterm_after))
    assert latency < DETECTION_LIMIT_S
    assert sigterm_after < DETECTION_LIMIT_S + 0.5
    assert view["stop"]["signalled"] and not view["stop"]["remaining"]
    assert "SIGTERM received" in server.log_path.read_text()


@pytest.mark.parametrize("fixture,expected_phases", [
    ("healthy_0.5.9_tp8.log",
     ["launch", "distributed_init", "weights", "kv_cache", "cuda_graph", "scheduler", "http", "warmup"]),
    # warnings of every kind a broad signature matches: the live module keeps the server up (issue 9)
    ("warnings/healthy_0.5.9_tp8_warnings.log",
     ["launch", "distributed_init", "weights", "kv_cache", "cuda_graph", "scheduler", "http", "warmup"]),
    ("healthy_0.5.10_1gpu_piecewise.log",
     ["launch", "distributed_init", "weights", "kv_cache", "cuda_graph", "piecewise_cuda_graph",
      "piecewise_compile", "piecewise_capture", "scheduler", "http", "warmup"]),
])
def test_healthy_start_is_ready_with_its_phases_then_stops_like_sglang(replayed, fixture, expected_phases):
    server = replayed()
    result = server.start(fixture, "serve")
    view = result["server"]
    assert not result.get("failed"), result
    assert view["status"] == "ready"
    assert list(view["phases"]) == expected_phases
    assert view["phases"]["kv_cache"]["info"]["kv_tokens"].isdigit()
    assert view["phases"]["cuda_graph"]["info"]["cuda_graph_s"]
    assert view["ready_noticed_after_s"] < DETECTION_LIMIT_S
    record_before = server.times_path.exists()
    stopped = server.stop()
    assert stopped["server"]["status"] == "stopped"
    assert stopped["server"]["stop"]["port_free"] is True
    assert not record_before
    record = server.record()
    assert record["ready_at"] < record["sigterm_at"]
    log = server.log_path.read_text()
    assert "Draining requests and shutting down..." in log
    assert "Gracefully exiting..." in log


def test_piecewise_phase_values_come_from_rank_zero(replayed):
    server = replayed()
    view = server.start("healthy_0.5.10_1gpu_piecewise.log", "serve")["server"]
    info = view["phases"]["piecewise_cuda_graph"]["info"]
    assert info["piecewise_num_tokens"].startswith("4, 8, 12")
    assert float(info["piecewise_s"]) > 0
    assert view["phases"]["piecewise_compile"]["duration_s"] > 0
