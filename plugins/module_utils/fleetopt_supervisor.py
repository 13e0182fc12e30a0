# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The process that stands between fleetopt and a server on the target host (stdlib only).

`fleetopt_server` starts this file as its own program, in a session of its own, and the
server as its child. It outlives the module call that launched it, and it:

- writes the server's output to the log, with every secret replaced, so engines that
  print their arguments (SGLang logs `server_args=...` with `api_key`) never put a key on
  disk; the log is readable by its owner only;
- records when the engine's ready line was written, so readiness latency is measured from
  the write and not from when a module happened to read it;
- records the server's exit code, which no later module call could learn otherwise;
- stops the server when its lease runs out. The campaign renews the lease on every module
  call; a controller that is gone (Ctrl-C, a killed CI runner, a dropped connection) stops
  renewing, and the server does not hold the GPUs for longer than one lease.

Its configuration arrives as JSON on stdin, so secrets appear in no command line.
The status file it keeps (JSON, replaced atomically) is read by `fleetopt_server`.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import select
import signal
import subprocess
import sys
import time

REDACTED = "<redacted>"
READ_CHUNK = 65536
POLL_S = 0.2
# Output without a line end is written after this long, so a bar that never ends its line shows.
PARTIAL_FLUSH_S = 1.0


def read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


def write_json(path, data):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def lease_expiry(path):
    """Epoch seconds at which the lease ends, or None when there is no lease."""
    lease = read_json(path) if path else None
    return float(lease["expires_at"]) if lease and lease.get("expires_at") is not None else None


def write_lease(path, seconds, holder):
    write_json(path, {"expires_at": time.time() + seconds, "renewed_at": time.time(),
                      "seconds": seconds, "renewed_by": holder})


class Redactor:
    """Turns output into log text without secrets, one complete piece at a time.

    A piece ends at a newline or a carriage return (progress bars). Output without a line
    end is held back for at most PARTIAL_FLUSH_S, minus the last few characters that could
    be the start of a secret.
    """

    def __init__(self, secrets):
        self.secrets = sorted({s for s in secrets if s}, key=len, reverse=True)
        self.keep = max([len(s) for s in self.secrets] or [1]) - 1
        self.pending = ""
        self.pending_since = None

    def scrub(self, text):
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def feed(self, text, now):
        """Complete pieces, scrubbed, ready to be written."""
        if not self.pending:
            self.pending_since = now
        self.pending += text
        cut = max(self.pending.rfind("\n"), self.pending.rfind("\r")) + 1
        if cut == 0 and now - self.pending_since >= PARTIAL_FLUSH_S:
            cut = max(len(self.pending) - self.keep, 0)
        ready, self.pending = self.pending[:cut], self.pending[cut:]
        if self.pending and ready:
            self.pending_since = now
        return self.scrub(ready)

    def flush(self):
        out, self.pending = self.scrub(self.pending), ""
        return out


class Supervisor:
    def __init__(self, config):
        self.config = config
        self.status_path = config["status_path"]
        self.status = {"supervisor_pid": os.getpid(), "server_pid": None, "exit_code": None,
                       "ended_at": None, "ready_written_at": None, "stopped_by": None}
        self.ready = re.compile(config["ready_pattern"]) if config.get("ready_pattern") else None
        self.redactor = Redactor(config.get("secrets") or [])
        self.line_tail = ""
        self.lease_stop_at = None

    def save(self):
        write_json(self.status_path, self.status)

    def open_log(self):
        fd = os.open(self.config["log_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)
        return fd

    def start(self):
        # The session is the supervisor's: a stop signals every process in it, the
        # supervisor included, which waits for its server to record the exit code.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        self.log = self.open_log()
        env = dict(os.environ)
        env.update(self.config.get("env") or {})
        self.server = subprocess.Popen(
            self.config["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=env, cwd=self.config.get("cwd") or None, close_fds=True,
            preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)],
        )
        self.status["server_pid"] = self.server.pid
        self.status["started_at"] = time.time()
        self.save()

    def write(self, text, now):
        if not text:
            return
        os.write(self.log, text.encode("utf-8", "replace"))
        if self.ready is not None and self.status["ready_written_at"] is None:
            lines = (self.line_tail + text).replace("\r", "\n").split("\n")
            self.line_tail = lines.pop()[-4096:]
            if any(self.ready.search(line) for line in lines):
                self.status["ready_written_at"] = now
                self.save()

    def check_lease(self, now):
        expiry = lease_expiry(self.config.get("lease_path"))
        if self.lease_stop_at is None and expiry is not None and now > expiry:
            self.lease_stop_at = now
            self.status["stopped_by"] = "lease"
            self.status["lease_expired_at"] = expiry
            self.status["stop_requested_at"] = now
            self.save()
            self.signal_others(signal.SIGTERM)
        elif self.lease_stop_at is not None and now - self.lease_stop_at > self.config.get("stop_timeout", 15.0):
            self.signal_others(signal.SIGKILL)

    def signal_others(self, signum):
        """Every process of this session but the supervisor itself."""
        me = os.getpid()
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open("/proc/%s/stat" % name) as handle:
                    raw = handle.read()
                if int(raw[raw.rfind(")") + 2:].split()[3]) == me:
                    os.kill(int(name), signum)
            except (IOError, OSError, ValueError, IndexError):
                continue

    def run(self):
        self.start()
        stream = self.server.stdout.fileno()
        open_stream = True
        while open_stream or self.status["exit_code"] is None:
            if open_stream:
                readable = select.select([stream], [], [], POLL_S)[0]
                now = time.time()
                if readable:
                    chunk = os.read(stream, READ_CHUNK)
                    if chunk:
                        self.write(self.redactor.feed(chunk.decode("utf-8", "replace"), now), now)
                    else:
                        open_stream = False
                        self.write(self.redactor.flush(), now)
                else:
                    self.write(self.redactor.feed("", now), now)
            else:
                time.sleep(POLL_S)
            code = self.server.poll()
            if code is not None and self.status["exit_code"] is None:
                self.status["exit_code"] = code
                self.status["ended_at"] = time.time()
                self.save()
            self.check_lease(time.time())
        os.close(self.log)


def main():
    config = json.loads(sys.stdin.read())
    sys.stdin.close()
    Supervisor(config).run()


if __name__ == "__main__":
    main()
