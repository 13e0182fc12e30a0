# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleetopt_interrupt
type: aggregate
short_description: On Ctrl-C, say which fleetopt servers are still running and how to stop them
description:
  - Follows the results of C(fleetopt_server) tasks to know which servers run on which host.
  - When C(ansible-playbook) is interrupted (SIGINT, as Ctrl-C sends it), prints each server still
    running, when its lease will stop it, and the command that stops them all now, before Ansible
    exits with "User interrupted execution".
requirements:
  - enabled in ansible.cfg (callbacks_enabled)
"""

import os
import signal
import time

from ansible import context
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleetopt_interrupt"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.running = {}
        self.leases = {}
        self.main_pid = os.getpid()
        self.previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self.interrupted)

    # -- following servers ---------------------------------------------------------
    def _follow(self, result):
        if result._task.action.split(".")[-1] != "fleetopt_server":
            return
        args = result._task.args or {}
        server = result._result.get("server") or {}
        key = (result._host.get_name(), args.get("name"))
        lease_s = float(args.get("lease_s") or 0)
        if args.get("state", "started") == "stopped" or server.get("status") not in ("starting", "ready"):
            if server.get("status") != "unhealthy":
                self.running.pop(key, None)
                return
        self.running[key] = server
        if lease_s > 0:
            self.leases[key] = time.time() + lease_s

    def v2_runner_on_ok(self, result):
        self._follow(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._follow(result)

    # -- the interrupt -------------------------------------------------------------
    def interrupted(self, signum, frame):
        if os.getpid() == self.main_pid and self.running:
            self._display.display(self.message(), stderr=True)
        handler = self.previous if callable(self.previous) else signal.default_int_handler
        handler(signum, frame)

    def message(self):
        lines = ["", "fleetopt: interrupted; these servers are still running:"]
        for (host, name), server in sorted(self.running.items()):
            lease = self.leases.get((host, name))
            until = (" (its lease stops it by %s if nothing renews it)" % time.strftime("%H:%M:%S", time.localtime(lease))
                     if lease else " (no lease: it runs until stopped)")
            lines.append("  %s: %s, pid %s, port %s%s" % (host, name, server.get("pid"), server.get("port"), until))
        inventory = " ".join("-i %s" % i for i in (context.CLIARGS.get("inventory") or []))
        lines.append("Stop them now: ansible-playbook %s playbooks/stop_servers.yml" % inventory)
        lines.append("Finished cells are kept; the same -e campaign_id=... resumes the campaign.")
        return "\n".join(lines)
