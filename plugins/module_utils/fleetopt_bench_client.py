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
  run; {"preloaded", "failed", "started_at", "ended_at"} for a preload;
- `client.json` (from here): {"pid", "started_at", "runs"}.

A preload imports the client's modules under their own names, as `import` does (their `__main__`
code does not run): a client started ahead of its first run, while a server starts, pays its imports
there instead of in that run. It exits when the file `stop` appears or when no request came for `idle_s` seconds, so a
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
    number, idle_since = 1, time.time()
    while not os.path.exists(os.path.join(folder, "stop")):
        request = next_request(folder, number)
        if request is None:
            if time.time() - idle_since > idle_s:
                return
            time.sleep(POLL_S)
            continue
        answer = preload(request["preload"]) if "preload" in request else run_once(request)
        write_json(os.path.join(folder, "done-%d.json" % number), answer)
        status["runs"] = number
        write_json(os.path.join(folder, "client.json"), status)
        number += 1
        idle_since = time.time()


if __name__ == "__main__":
    serve(sys.argv[1], float(sys.argv[2]))
