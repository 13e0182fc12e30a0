# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which CPUs the engine server and the benchmark client run on (Linux, stdlib only).

A placement is a set of CPU numbers, given as a list (``[0, 1]``, ``["0", "2-3"]``) or as a
Linux cpu-list string (``"0"``, ``"1-3"``, ``"0,2-3"``, as taskset and /proc write them). The
client's may also be ``"last"``, the host's last usable CPU, and the server's ``"rest"``, every usable
CPU the client's placement leaves: one inventory that keeps them apart on hosts of any size. It is
applied in the child before it executes its program, so the whole process tree that program
starts inherits it, and it is read back from /proc/<pid>/status so that a result says what it
actually ran on.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
LAST = "last"
REST = "rest"


def parse_cpu_list(value, name="cpus"):
    """The sorted CPU numbers `value` names, or None when it names none (None, "", []).

    Raises ValueError, naming the setting, for anything that is not a cpu list.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("%s: %r is not a CPU list (give CPU numbers, as [0, 1] or \"0-1\")" % (name, value))
    if isinstance(value, int):
        parts = [str(value)]
    elif isinstance(value, str):
        parts = value.split(",") if value.strip() else []
    elif isinstance(value, (list, tuple)):
        parts = []
        for item in value:
            if isinstance(item, bool) or not isinstance(item, (int, str)):
                raise ValueError("%s: %r in %r is not a CPU number or range" % (name, item, list(value)))
            parts.extend(str(item).split(","))
    else:
        raise ValueError("%s: %r is not a CPU list (give CPU numbers, as [0, 1] or \"0-1\")" % (name, value))
    cpus = set()
    for part in parts:
        match = _RANGE.match(part.strip())
        if not match:
            raise ValueError("%s: %r is not a CPU number or range (as 0, 2-3; the client's may be \"last\", the server's "
                             "\"rest\") in %r" % (name, part.strip(), value))
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError("%s: the range %r runs backwards in %r" % (name, part.strip(), value))
        cpus.update(range(first, last + 1))
    return sorted(cpus) or None


def format_cpu_list(cpus):
    """The Linux cpu-list string of a set of CPU numbers ([0, 1, 2, 5] -> "0-2,5")."""
    ranges = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


def usable_cpus():
    """The CPUs this host lets the calling process run on (its affinity: online CPUs within its cpuset)."""
    return sorted(os.sched_getaffinity(0))


def rest(usable, client):
    """The server's "rest": the usable CPUs the client's (parsed) placement leaves."""
    if not client:
        raise ValueError("server_cpus: %r means the CPUs client_cpus leaves, and client_cpus is not set" % REST)
    left = sorted(usable - set(client))
    if not left:
        raise ValueError("server_cpus: %r leaves no CPU for the server: client_cpus takes every CPU this host has "
                         "(%s)" % (REST, format_cpu_list(usable)))
    return left


def check(server=None, client=None, usable=None):
    """The server's and the client's CPU lists, checked against each other and the host.

    Raises ValueError with every problem found: a list that does not parse, a CPU the host does
    not let this user run on, a CPU both lists name, a server's "rest" that leaves it nothing.
    Returns (server, client), each a sorted list or None (no placement), the keywords resolved.
    """
    usable = set(usable_cpus() if usable is None else usable)
    problems = []
    parsed = {}
    # The client first: the server's "rest" is what the client's placement leaves.
    for name, value in (("client_cpus", [max(usable)] if client == LAST else client), ("server_cpus", server)):
        try:
            if name == "server_cpus" and value == REST:
                # A client placement with a problem is named already; the server's is not worked out from it.
                parsed[name] = rest(usable, parsed["client_cpus"]) if not problems else None
            else:
                parsed[name] = parse_cpu_list(value, name)
        except ValueError as exc:
            problems.append(str(exc))
            parsed[name] = None
            continue
        missing = sorted(set(parsed[name] or []) - usable)
        if missing:
            problems.append("%s: CPU %s not available on this host (usable: %s)"
                            % (name, format_cpu_list(missing), format_cpu_list(usable)))
    shared = sorted(set(parsed["server_cpus"] or []) & set(parsed["client_cpus"] or []))
    if shared:
        problems.append("server_cpus and client_cpus share CPU %s; the client must not compete with the server "
                        "for a core" % format_cpu_list(shared))
    if problems:
        raise ValueError("; ".join(problems))
    return parsed["server_cpus"], parsed["client_cpus"]


def pin_self(cpus):
    """Restrict the calling process to `cpus` (a no-op for None); its later children inherit it."""
    if cpus:
        os.sched_setaffinity(0, cpus)


def pinning(cpus):
    """A function for subprocess's preexec_fn that pins the child before it executes its program, or None."""
    if not cpus:
        return None
    cpus = list(cpus)
    return lambda: os.sched_setaffinity(0, cpus)


def allowed_cpus(pid):
    """Cpus_allowed_list of a process as /proc/<pid>/status states it ("0-1"), or None when it is gone."""
    try:
        with open("/proc/%d/status" % pid) as handle:
            for line in handle:
                if line.startswith("Cpus_allowed_list:"):
                    return line.split(":", 1)[1].strip()
    except (IOError, OSError):
        return None
    return None


def process_name(pid):
    try:
        with open("/proc/%d/comm" % pid) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None
