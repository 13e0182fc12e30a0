"""Paths and small utilities shared by the tests."""
import pathlib
import socket

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] in ("Z", "X")
    except OSError:
        return True


def processes_listening_as(port):
    """PIDs of live processes whose command line names `--port <port>` (a server we started)."""
    import os
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or pid_gone(int(name)):
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(a == "--port" and i + 1 < len(argv) and argv[i + 1] == str(port) for i, a in enumerate(argv)):
            found.append(int(name))
    return found
