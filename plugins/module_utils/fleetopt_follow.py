# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Following a server's start-up until it is ready, has failed, ran out of time, or (for a
module call that follows in slices) has something new to show.

What it watches comes in as callables (the log, the process, the health endpoint, the clock),
so tests drive it without processes; fleetopt_server gives it the real ones.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

# What follow_startup ends with.
READY, DIED, FAILED, TIMEOUT, PROGRESS = "ready", "died", "failed", "timeout", "progress"
LEASE_RENEW_S = 1.0
# A slice reports a new phase once it has lasted this long. Shorter phases (vLLM's KV cache and
# HTTP start, a second or two each) are shown with the next: a slice that ended at each would put
# a module round trip (seconds over SSH) between the ready line and the moment it is noticed.
PHASE_REPORT_S = 5.0


def follow_startup(watcher, read, process_gone, healthy, deadline, slice_end=None, ready_line=True,
                   renew=None, clock=time.time, sleep=time.sleep, poll_interval=0.1, crash_settle_s=0.4):
    """Feed the log to `watcher` until the start-up ends; return one of READY, DIED, FAILED,
    TIMEOUT or PROGRESS.

    `read()` returns the log text written since the last call; `process_gone()` whether the
    server is gone; `healthy(wait)` whether its health endpoint answers within `wait` seconds, asked
    only once the ready line was logged (or, with `ready_line` false, once a first phase was). The
    wait is the time left before the deadline (or the slice's end): an endpoint that accepts and
    never answers cannot hold the start-up past either. A fatal line ends the
    start-up `crash_settle_s` after it was seen, so the rest of the traceback (often the root
    cause) is read first. With `slice_end`, that time, or a new phase once it has lasted
    PHASE_REPORT_S, ends it as PROGRESS.
    """
    phase_before = watcher.phase
    renewed = None
    while True:
        now = clock()
        gone = process_gone()
        watcher.feed(read(), now=now)
        if gone:
            watcher.feed(read(), now=now, final=True)
            return DIED
        if watcher.failed and now - watcher.first_fatal_at >= crash_settle_s:
            return FAILED
        if watcher.ready or (not ready_line and watcher.phase is not None):
            ends = deadline if slice_end is None else min(deadline, slice_end)
            if healthy(max(ends - now, poll_interval)):
                return READY
            now = clock()  # the request may have waited until the deadline
        if now >= deadline:
            return TIMEOUT
        if slice_end is not None and (now >= slice_end or _new_phase_to_report(watcher, phase_before, now)):
            return PROGRESS
        if renew is not None and (renewed is None or now - renewed >= LEASE_RENEW_S):
            renew()
            renewed = now
        sleep(poll_interval)


def _new_phase_to_report(watcher, phase_before, now):
    if watcher.phase is None or watcher.phase == phase_before:
        return False
    started = watcher.phases[watcher.phase]["start"]
    return started is not None and now - started >= PHASE_REPORT_S
