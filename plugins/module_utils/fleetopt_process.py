# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Process, port and GPU-memory helpers for server lifecycle (Linux, stdlib only).

Servers are started in a session of their own, so every process they spawn,
including SGLang schedulers that leave the launcher's process tree, can be
found again by session id and stopped together.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import socket
import subprocess
import time

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_placement import pinning

TCP_LISTEN = "0A"


def _read(path):
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _stat_fields(pid):
    raw = _read("/proc/%d/stat" % pid)
    if raw is None:
        return None
    # The command name may hold spaces and parentheses; fields resume after the last ')'.
    return raw[raw.rfind(")") + 2:].split()


def proc_stat(pid):
    """(state, ppid, pgid, sid) of a process, or None when it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return None
    return fields[0], int(fields[1]), int(fields[2]), int(fields[3])


def start_ticks(pid):
    """When the process started, in clock ticks since boot; None when it is gone.

    A PID alone is no identity: after the process ends the number is handed out again.
    PID plus start time plus boot id names one process for good.
    """
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def boot_id():
    return (_read("/proc/sys/kernel/random/boot_id") or "").strip() or None


def process_identity(pid):
    return {"pid": pid, "start_ticks": start_ticks(pid), "boot_id": boot_id()}


def same_process(identity):
    """True while the process recorded in `identity` is still the one running under its PID."""
    if not identity or identity.get("boot_id") != boot_id():
        return False
    return pid_alive(identity["pid"]) and start_ticks(identity["pid"]) == identity.get("start_ticks")


def pid_alive(pid):
    stat = proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def cmdline(pid):
    raw = _read("/proc/%d/cmdline" % pid)
    return raw.replace("\0", " ").strip() if raw else ""


def all_pids():
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def session_pids(sid):
    """Live processes of session `sid` (the server and everything it spawned)."""
    found = []
    for pid in all_pids():
        stat = proc_stat(pid)
        if stat and stat[3] == sid and stat[0] not in ("Z", "X"):
            found.append(pid)
    return found


def session_schedstat(pid):
    """Every thread of the session that process `pid` belongs to: {(pid, tid): (cpu_ns, runqueue_wait_ns)}.

    From /proc/<pid>/task/<tid>/schedstat: the time each thread ran and the time it was ready to run but waited
    for a CPU. A server's work is spread over processes that leave its process tree (SGLang's schedulers), so its
    whole session is read. Empty when the process is gone or the kernel keeps no schedstat.
    """
    stat = proc_stat(pid)
    if stat is None:
        return {}
    found = {}
    for member in session_pids(stat[3]):
        try:
            tids = os.listdir("/proc/%d/task" % member)
        except (IOError, OSError):
            continue
        for tid in tids:
            fields = (_read("/proc/%d/task/%s/schedstat" % (member, tid)) or "").split()
            if len(fields) >= 2 and tid.isdigit():
                found[(member, int(tid))] = (int(fields[0]), int(fields[1]))
    return found


def schedstat_delta(before, after):
    """{cpu_s, runqueue_wait_s, threads} spent between two session_schedstat readings, over the threads of the
    second (a thread started since the first counts from zero; one that ended before the second is not counted).
    None when the second found no thread."""
    if not after:
        return None
    cpu = wait = 0
    for key, (cpu_ns, wait_ns) in after.items():
        was_cpu, was_wait = before.get(key, (0, 0))
        cpu += max(cpu_ns - was_cpu, 0)
        wait += max(wait_ns - was_wait, 0)
    return {"cpu_s": cpu / 1e9, "runqueue_wait_s": wait / 1e9, "threads": len(after)}


def _listening_inodes(port):
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        raw = _read(table)
        if not raw:
            continue
        for row in raw.splitlines()[1:]:
            cols = row.split()
            if len(cols) < 10 or cols[3] != TCP_LISTEN:
                continue
            if int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    return inodes


def port_listeners(port):
    """PIDs with a listening socket on `port` (any address).

    An empty list with the port still refused by bind() means the holder is in
    another PID namespace; `port_in_use` reports that case.
    """
    inodes = _listening_inodes(port)
    if not inodes:
        return []
    holders = []
    for pid in all_pids():
        fd_dir = "/proc/%d/fd" % pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(os.path.join(fd_dir, fd))
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                holders.append(pid)
                break
    return holders


def port_in_use(port, host="127.0.0.1"):
    if _listening_inodes(port):
        return True
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind((host if host not in ("0.0.0.0", "") else "127.0.0.1", port))
        return False
    except OSError:
        return True
    finally:
        probe.close()


def start_session(argv, stdin_data, output_path, cpus=None):
    """Start `argv` as the leader of a session of its own (so it and all it starts can be found and
    stopped by session id, and it outlives the module), with stdout and stderr going to
    `output_path` (truncated, mode 0600) and `stdin_data` (bytes) as its input; returns the Popen.
    With `cpus`, it runs on those CPUs only, and so does everything it starts."""
    fd = os.open(output_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=fd, stderr=fd, start_new_session=True, close_fds=True,
                                preexec_fn=pinning(cpus))
    finally:
        os.close(fd)
    proc.stdin.write(stdin_data)
    proc.stdin.close()
    return proc


def signal_session(sid, signum):
    """Signal every process of a session; returns the pids signalled."""
    pids = session_pids(sid)
    for pid in pids:
        try:
            os.kill(pid, signum)
        except OSError:
            pass
    return pids


def wait_until(predicate, timeout, interval=0.1):
    deadline = time.time() + timeout
    while True:
        if predicate():
            return True
        if time.time() >= deadline:
            return False
        time.sleep(interval)


def stop_session(sid, port, term_timeout=15.0, kill_timeout=10.0, release_timeout=120.0,
                 gpu_release=None):
    """SIGTERM the session, wait, SIGKILL what is left, then wait for the port and GPU memory.

    `gpu_release` is a callable(deadline) -> dict or None that waits until the GPUs are
    back to their memory before the launch (see fleetopt_gpu.GpuMemoryWatch). It is only
    called once every process of the session is gone: memory that a live process holds
    will not come back.

    Returns a dict describing what happened, for the module's result. `complete` is False
    when a process or the port outlived the stop, or GPU memory was not released in time.
    """
    started = time.time()
    report = {"signalled": [], "killed": [], "port_free": None, "gpu_released": None, "gpu_memory": None}
    report["signalled"] = signal_session(sid, signal.SIGTERM)
    if not wait_until(lambda: not session_pids(sid), term_timeout):
        report["killed"] = signal_session(sid, signal.SIGKILL)
        wait_until(lambda: not session_pids(sid), kill_timeout)
    remaining = session_pids(sid)
    report["remaining"] = remaining
    report["port_free"] = wait_until(lambda: not port_in_use(port), release_timeout, 0.2)
    if gpu_release is not None and not remaining:
        memory = gpu_release(time.time() + release_timeout)
        if memory is not None:
            report["gpu_memory"] = memory
            report["gpu_released"] = memory["released"]
    report["complete"] = not remaining and report["port_free"] and report["gpu_released"] is not False
    report["elapsed_s"] = round(time.time() - started, 3)
    return report
