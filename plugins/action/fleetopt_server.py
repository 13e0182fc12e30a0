# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for fleetopt_server: show start-up progress while the module follows the log.

A module cannot print while it runs, and a start-up with CUDA graph capture can take
minutes. This plugin runs the module in slices (`follow_slice`); each slice returns once a new phase
has lasted a few seconds, or at its end, and the phases seen are printed with their start times
before the next slice resumes where the last one stopped (the module keeps its place in the log
in its state file).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

DEFAULT_SLICE_S = 15.0


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        following = args.get("state", "started") == "started" and not self._play_context.check_mode
        if not following:
            result.update(self._execute_module(module_name="fleetopt.campaign.fleetopt_server", module_args=args, task_vars=task_vars))
            return result

        if args.get("follow_slice") is None:
            args["follow_slice"] = DEFAULT_SLICE_S
        changed = False
        label = "%s %s:%s" % (args.get("engine", "server"), args.get("name"), args.get("port"))
        shown = set()
        while True:
            step = self._execute_module(module_name="fleetopt.campaign.fleetopt_server", module_args=args, task_vars=task_vars)
            changed = changed or bool(step.get("changed"))
            server = step.get("server") or {}
            if step.get("failed") or server.get("status") != "starting":
                step["changed"] = changed
                result.update(step)
                return result
            new = [name for name in phases_in_order(server) if name not in shown]
            for name in new:
                display.display("  [%s] %s: %s (%.1f s)" % (host, label, name, server["phases"][name].get("start_s") or 0.0))
            shown.update(new)
            if not new:
                phase = server.get("phase") or "launch"
                display.display("  [%s] %s: still in %s (%.1f s)" % (host, label, phase, server.get("elapsed_s") or 0.0))


def phases_in_order(server):
    """The phases seen so far, each shown at its start (launch time, seconds after launch): a
    slice returns only once a phase has lasted a while, so shorter ones come back together."""
    phases = server.get("phases") or {}
    return sorted(phases, key=lambda name: phases[name].get("start_s") or 0.0)
