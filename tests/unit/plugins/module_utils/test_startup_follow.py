"""fleetopt_follow.follow_startup, the loop that follows a server's start-up, driven without
processes: the log, the process, the health check and the clock are stand-ins."""
import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_follow import PHASE_REPORT_S, follow_startup
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher

INIT = "INFO Initializing a V1 LLM engine (v0.32.0) with config\n"
WEIGHTS = "INFO Starting to load model /models/tiny\n"
HTTP = "INFO Starting vLLM server on http://127.0.0.1:8000\n"
READY = "INFO:     Application startup complete.\n"
PORT_TAKEN = "ERROR: [Errno 98] error while attempting to bind on address: address already in use\n"


class Host:
    """A server's log (one chunk per poll), its process, its health endpoint and a clock."""

    def __init__(self, chunks, gone_after=None, healthy_after=0, hangs=False):
        self.chunks = list(chunks)
        self.hangs = hangs  # the endpoint accepts and never answers: each request waits as long as it may
        self.waits = []
        self.polls = 0
        self.gone_after = gone_after
        self.healthy_after = healthy_after
        self.health_asked = 0
        self.renewed = []
        self.now = 1000.0

    def read(self):
        return self.chunks.pop(0) if self.chunks else ""

    def gone(self):
        self.polls += 1
        return self.gone_after is not None and self.polls > self.gone_after

    def healthy(self, wait):
        self.health_asked += 1
        self.waits.append(wait)
        if self.hangs:
            self.now += wait
            return False
        return self.health_asked > self.healthy_after

    def sleep(self, seconds):
        self.now += seconds

    def follow(self, spec, watcher=None, timeout=60.0, slice_s=None):
        watcher = watcher or LogWatcher(spec)
        outcome = follow_startup(
            watcher, self.read, self.gone, self.healthy, deadline=1000.0 + timeout,
            slice_end=None if slice_s is None else 1000.0 + slice_s, ready_line=bool(spec.get("ready")),
            renew=lambda: self.renewed.append(self.now), clock=lambda: self.now, sleep=self.sleep,
            poll_interval=0.1, crash_settle_s=0.4)
        return outcome, watcher


def test_ready_once_the_ready_line_is_logged_and_the_health_check_answers(vllm_spec):
    host = Host([INIT, WEIGHTS, "", HTTP, READY], healthy_after=2)
    outcome, watcher = host.follow(vllm_spec)
    assert outcome == "ready" and watcher.ready and watcher.phase == "http"
    assert host.health_asked == 3  # never before the ready line: twice refused, then answered


def test_a_health_endpoint_that_never_answers_cannot_hold_the_start_up_past_its_deadline(vllm_spec):
    # Something holds the port and accepts without answering: each request may wait only for the time left.
    host = Host([INIT, WEIGHTS, HTTP, READY], hangs=True)
    outcome, _ = host.follow(vllm_spec, timeout=3.0)
    assert outcome == "timeout"
    assert host.now <= 1000.0 + 3.0 + 0.1 + 1e-9, host.now - 1000.0
    assert host.waits and all(wait <= 3.0 for wait in host.waits), host.waits
    # Nor past the end of a follow slice: the next slice asks again.
    sliced = Host([INIT, WEIGHTS, HTTP, READY], hangs=True)
    assert sliced.follow(vllm_spec, timeout=60.0, slice_s=2.0)[0] == "progress" and sliced.now <= 1000.0 + 2.1 + 1e-9


def test_without_a_ready_pattern_the_first_phase_and_a_healthy_endpoint_suffice(vllm_spec):
    spec = dict(vllm_spec, ready=None)
    assert Host([INIT]).follow(spec)[0] == "ready"


def test_a_process_that_ended_is_a_death_with_the_rest_of_its_log_read(vllm_spec):
    host = Host([INIT, WEIGHTS, PORT_TAKEN], gone_after=2)
    outcome, watcher = host.follow(vllm_spec)
    assert outcome == "died" and watcher.phase == "weights"
    assert watcher.classify()["failure_class"] == "port_in_use"


def test_a_fatal_line_stops_the_start_up_only_after_the_settle_time(vllm_spec):
    host = Host([INIT, PORT_TAKEN])
    outcome, watcher = host.follow(vllm_spec)
    assert outcome == "failed" and watcher.failed
    assert host.now - watcher.first_fatal_at >= 0.4
    assert host.now - watcher.first_fatal_at < 0.4 + 0.1 + 1e-9


def test_past_the_deadline_the_start_up_timed_out(vllm_spec):
    host = Host([INIT, WEIGHTS])
    outcome, watcher = host.follow(vllm_spec, timeout=5.0)
    assert outcome == "timeout" and watcher.phase == "weights"
    assert host.now == pytest.approx(1005.0)


def test_a_slice_ends_once_a_new_phase_has_lasted_the_report_time_or_at_its_end(vllm_spec):
    host = Host(["", INIT, WEIGHTS])
    outcome, watcher = host.follow(vllm_spec, slice_s=30.0)
    assert outcome == "progress" and watcher.phase == "weights"
    assert host.now - watcher.phases["weights"]["start"] == pytest.approx(PHASE_REPORT_S, abs=0.1 + 1e-9)
    quiet = Host([])
    assert quiet.follow(vllm_spec, slice_s=2.0)[0] == "progress" and quiet.now == pytest.approx(1002.0)


def test_short_phases_before_the_ready_line_do_not_end_the_slice(vllm_spec):
    # vLLM's last phases (KV cache, HTTP) take a second or two. A slice that ended at each
    # would put a module round trip (seconds over SSH) between the ready line and its notice.
    short = [""] * int(PHASE_REPORT_S / 0.1 / 2)
    host = Host(["", INIT] + short + [WEIGHTS] + short + [HTTP] + short + [READY])
    outcome, watcher = host.follow(vllm_spec, slice_s=60.0)
    assert outcome == "ready" and watcher.phase_order == ["engine_init", "weights", "http"]
    assert host.now - watcher.ready_at < 0.1 + 1e-9


def test_the_lease_is_renewed_about_once_a_second_while_it_waits(vllm_spec):
    host = Host([INIT])
    host.follow(vllm_spec, timeout=3.05)
    assert len(host.renewed) == 4
    assert all(b - a >= 1.0 - 1e-9 for a, b in zip(host.renewed, host.renewed[1:]))
