# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's own benchmark client, kept alive between runs (stdlib only).

Importing a benchmark client (`vllm bench serve`, `sglang.bench_serving`) costs about 10 s
on a small host, far more than many runs measure. `fleetopt_bench` starts this file once per
cell, with the engine's Python and in a session of its own, and hands it one run at a time.
Each run executes the client's own module as `__main__` (runpy), with the run's arguments,
exactly as `python -m <module> <args>` would; its imports are paid once, the code that
measures is the engine's, unchanged, and its result files keep their formats.

Requests and answers are files in this client's folder, each written whole (rename):

- `request-<n>.json` (from the module): {"module", "args", "output"} for a run, or {"preload": [modules]};
- `done-<n>.json` (from here): {"exit_code", "started_at", "ended_at", "cpu_s", "host_steal_share"} for a
  run; {"preloaded", "failed", "started_at", "ended_at", "priority", "raised_for_run"} for a preload;
- `client.json` (from here): {"pid", "started_at", "runs"}.

A preload imports the client's modules under their own names, as `import` does (their `__main__`
code does not run): a client started ahead of its first run, while a server starts, pays its imports
there instead of in that run. It imports in a thread of its own at the lowest priority (Linux SCHED_IDLE,
else nice 19): it may share its CPUs with the starting server (a container of one CPU), whose start it
must not slow. A run that comes before the preload ended raises that thread back to normal priority
where the host allows it and starts once the preload ended; the preload's answer says which.

The client exits when the file `stop` appears or when no request came for `idle_s` seconds, so a
controller that went away leaves nothing behind for long; `fleetopt_bench` kills its
session outright on a time-out, a dead server, an interrupt or a lost parent.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import json
import os
import resource
import runpy
import sys
import threading
import time
import traceback

POLL_S = 0.05
# The host's CPU time since boot, in clock ticks: the first line of /proc/stat (Linux).
PROC_STAT = "/proc/stat"


def write_json(path, data):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def cpu_seconds():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def host_cpu_ticks(path=PROC_STAT):
    """(steal, total) clock ticks of the host's CPUs since boot, or None where the kernel does not say.

    Steal is the time a virtual machine's CPUs wanted to run while its hypervisor ran something
    else (other guests): on a shared VM it slows a run as much as a noisy neighbour process."""
    try:
        with open(path) as handle:
            fields = handle.readline().split()
    except (IOError, OSError):
        return None
    # cpu user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is already in user.
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    try:
        ticks = [int(value) for value in fields[1:9]]
    except ValueError:
        return None
    return ticks[7], sum(ticks)


def steal_share(before, after):
    """The share of the host's CPU time stolen between two host_cpu_ticks() readings, or None."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return round(float(after[0] - before[0]) / (after[1] - before[1]), 4)


def exit_code(exc):
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def run_once(request):
    """Run the client module as `python -m` would, its output going to the run's file."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    sys.argv = [request["module"]] + list(request["args"])
    # A preloaded client module runs anew as __main__, its own imports kept (runpy warns of one left in sys.modules).
    sys.modules.pop(request["module"], None)
    started, cpu, host = time.time(), cpu_seconds(), host_cpu_ticks()
    code = 0
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exit_code(exc)
    except Exception:  # the client's own failure is its run's result, not this program's end
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    return {"exit_code": code, "started_at": started, "ended_at": time.time(), "cpu_s": cpu_seconds() - cpu,
            "host_steal_share": steal_share(host, host_cpu_ticks())}


def preload(modules):
    """Import the client's modules; one that fails is named with its error and left to the run to report."""
    started, done, failed = time.time(), [], {}
    for name in modules:
        try:
            importlib.import_module(name)
            done.append(name)
        except (Exception, SystemExit) as exc:  # the run reports it; this program serves on
            failed[name] = "%s: %s" % (type(exc).__name__, exc)
    return {"preloaded": done, "failed": failed, "started_at": started, "ended_at": time.time()}


def lower_own_priority():
    """Give the calling thread only CPU time nothing else wants; returns the priority it got.

    On Linux both calls act on the calling thread alone: the thread that runs the benchmark keeps its priority."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        return "idle"
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 19)
        return "nice 19"
    except (AttributeError, OSError):
        return "normal"


def raise_priority(tid):
    """Put thread `tid` back to normal priority; False where the host does not let this user (no CAP_SYS_NICE)."""
    try:
        os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, 0)
        return True
    except (AttributeError, OSError):
        return False


class Preload(threading.Thread):
    """A preload in its own low-priority thread (daemon: an exiting client does not wait for its imports)."""

    def __init__(self, number, modules):
        threading.Thread.__init__(self, name="fleetopt-preload")
        self.daemon = True
        self.number = number  # its request's
        self.modules = modules
        self.lock = threading.Lock()
        self.tid = None
        self.priority = "normal"
        self.run_waits = False
        self.raised_for_run = False
        self.answer = None

    def run(self):
        with self.lock:
            # Without the thread's id its priority could not be raised for a run: it keeps the normal one.
            self.tid = getattr(threading, "get_native_id", lambda: None)()
            if self.tid is not None and not self.run_waits:
                self.priority = lower_own_priority()
        self.answer = preload(self.modules)

    def raise_for_run(self):
        with self.lock:
            self.run_waits = True
            if self.priority != "normal" and self.is_alive():
                self.raised_for_run = raise_priority(self.tid)

    def result(self):
        return dict(self.answer or preload([]), priority=self.priority, raised_for_run=self.raised_for_run)


def next_request(folder, number):
    path = os.path.join(folder, "request-%d.json" % number)
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def serve(folder, idle_s):
    status = {"pid": os.getpid(), "started_at": time.time(), "runs": 0}
    write_json(os.path.join(folder, "client.json"), status)

    def answered(number, answer):
        write_json(os.path.join(folder, "done-%d.json" % number), answer)
        status["runs"] = max(status["runs"], number)
        write_json(os.path.join(folder, "client.json"), status)

    number, idle_since, preloading = 1, time.time(), None
    while not os.path.exists(os.path.join(folder, "stop")):
        if preloading is not None and not preloading.is_alive():
            answered(preloading.number, preloading.result())
            preloading, idle_since = None, time.time()
        request = next_request(folder, number)
        if request is None:
            if preloading is None and time.time() - idle_since > idle_s:
                return
            time.sleep(POLL_S)
            continue
        if "preload" in request:
            preloading = Preload(number, request["preload"])
            preloading.start()
        else:
            if preloading is not None:
                preloading.raise_for_run()
                preloading.join()
                answered(preloading.number, preloading.result())
                preloading = None
            answered(number, run_once(request))
        number += 1
        idle_since = time.time()


if __name__ == "__main__":
    serve(sys.argv[1], float(sys.argv[2]))
