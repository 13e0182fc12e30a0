# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's benchmark client kept alive on the host, seen from fleetopt_bench.

KeptClient starts the client program (fleetopt_bench_client, written into the client's folder),
recognises it again in a later module call, hands it runs and releases it; ClientGuard stops it
when the module that drives it is interrupted or orphaned. Standard library only.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import inspect
import os
import signal
import subprocess
import sys
import time

from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_bench_client, fleetopt_placement
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import pid_alive, process_identity, same_process, session_pids, signal_session
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_supervisor import read_json, write_json


class KeptClient:
    """The engine's benchmark client, alive across the runs (and module calls) of a cell or a campaign.

    Its folder holds the program, its identity (PID, start time, boot id, interpreter and the
    environment it was given) and the run requests; a client that is gone, or was started for
    another interpreter or environment, is replaced.
    """

    def __init__(self, p, env_facts):
        self.p = p
        self.folder = p["client_dir"] or os.path.join(p["result_dir"], ".client-%s" % p["name"])
        self.identity_path = os.path.join(self.folder, "identity.json")
        # What the client's environment was made of, without the secret itself.
        self.env_facts = env_facts
        self.pid = None
        self.started_now = False
        # While start() has no pid yet: the termination signal that came meanwhile, raised again once it has one.
        self.starting = False
        self.interrupted_by = None
        # The client's Cpus_allowed_list as /proc stated it at its last run.
        self.cpus_seen = None

    def alive(self, for_runs=True):
        """Whether the client of this folder runs (and, for_runs, was started the way this call would)."""
        identity = read_json(self.identity_path) or {}
        if for_runs and (identity.get("python"), identity.get("env")) != (self.p["python"], self.env_facts):
            return False
        if not same_process(identity.get("process") or {}):
            return False
        self.pid = identity["process"]["pid"]
        return True

    def start(self, env):
        if not os.path.isdir(self.folder):
            os.makedirs(self.folder)
        for entry in os.listdir(self.folder):
            if entry.startswith(("request-", "done-", "stop", "client.json")):
                os.remove(os.path.join(self.folder, entry))
        program = os.path.join(self.folder, "fleetopt_bench_client.py")
        with open(program, "w") as handle:
            handle.write(inspect.getsource(fleetopt_bench_client))
        # An interrupt that comes before this object knows the client's pid waits for it (ClientGuard stops the pid
        # it knows); Python runs signal handlers in the main thread whatever thread the signal reached.
        self.starting = True
        try:
            with open(os.path.join(self.folder, "client.log"), "ab") as log:
                proc = subprocess.Popen([self.p["python"], program, self.folder, str(self.p["client_idle_s"])],
                                        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                        cwd=self.folder, start_new_session=True,
                                        preexec_fn=fleetopt_placement.pinning(self.env_facts.get("cpus")))
            self.pid = proc.pid
            self.started_now = True
        finally:
            self.starting = False
            if self.interrupted_by is not None:
                signal.raise_signal(self.interrupted_by)
        write_json(self.identity_path, {"python": self.p["python"], "env": self.env_facts,
                                        "process": process_identity(proc.pid)})

    def ensure(self, env):
        if self.alive():
            return
        if self.alive(for_runs=False):  # started another way: it must not answer this folder's requests
            self.kill()
        self.start(env)

    def submit(self, module, args, output_path):
        return self._request({"module": module, "args": args, "output": output_path})

    def preload(self, modules):
        """Have the client import these modules now; the runs submitted later wait for it."""
        return self._request({"preload": list(modules)})

    def _request(self, payload):
        # After every request made so far: one still running (its module killed outright) is answered first.
        number = len([e for e in os.listdir(self.folder) if e.startswith("request-") and e.endswith(".json")]) + 1
        write_json(os.path.join(self.folder, "request-%d.json" % number), payload)
        return os.path.join(self.folder, "done-%d.json" % number)

    def running(self):
        return self.pid is not None and pid_alive(self.pid)

    def kill(self):
        if self.pid is not None:
            signal_session(self.pid, signal.SIGKILL)
            deadline = time.time() + 10
            while session_pids(self.pid) and time.time() < deadline:
                time.sleep(0.05)
            self.reap()
            self.pid = None

    def reap(self):
        try:
            os.waitpid(self.pid, os.WNOHANG)
        except OSError:
            pass

    def release(self):
        """Let the client exit after its run, or stop it (it also exits on its own when left idle)."""
        if self.pid is not None and os.path.isdir(self.folder):
            with open(os.path.join(self.folder, "stop"), "w"):
                pass
            deadline = time.time() + 5
            while self.running() and time.time() < deadline:
                self.reap()
                time.sleep(0.05)
            if self.running():
                self.kill()


class ClientGuard:
    """Stops the client when this module is interrupted or orphaned.

    The client has a session of its own (so it can be stopped with everything it started),
    which also means a terminal's Ctrl-C or a dropped SSH connection never reaches it.
    """

    def __init__(self):
        self.client = None
        self.parent = os.getppid()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self.interrupted)

    def stop_client(self):
        if self.client is not None:
            self.client.kill()

    def interrupted(self, signum, _frame):
        if self.client is not None and self.client.starting:
            self.client.interrupted_by = signum
            return
        self.stop_client()
        sys.exit(128 + signum)

    def orphaned(self):
        return os.getppid() != self.parent

    def exit_if_orphaned(self):
        """Stop the client and exit when the module's parent (Ansible) is gone: nobody would read a result."""
        if self.orphaned():
            self.stop_client()
            sys.exit(1)
