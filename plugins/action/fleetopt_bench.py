# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for fleetopt_bench: one module call per run, with progress between them.

A whole benchmark (levels x trials) can take an hour on a GPU fleet. Run as one module
call it would print nothing for that long and leave the connection idle. Here each run is
its own call (`runs: [[concurrency, trial]]`); after each the level, trial, result and
elapsed time are printed, and the module's lease renewal keeps the server's lease fresh.
The first run whose server died or that timed out ends the benchmark; the runs left are
reported as skipped, as the module itself would.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        if self._play_context.check_mode or args.get("runs"):
            result.update(self._execute_module(module_name="fleetopt_bench", module_args=args, task_vars=task_vars))
            return result
        host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        trials = int(args.get("trials") or 1)
        runs = [(int(c), t) for c in args.get("concurrency") or [] for t in range(1, trials + 1)]
        levels, client = [], []
        died = timed_out = False
        started = time.time()
        for index, (concurrency, trial) in enumerate(runs):
            if died or timed_out:
                levels.append({"concurrency": concurrency, "trial": trial, "status": "skipped", "metrics": None,
                               "reason": "the server had exited" if died else "an earlier run timed out"})
                continue
            step = self._execute_module(module_name="fleetopt_bench",
                                        module_args=dict(args, runs=[[concurrency, trial]]), task_vars=task_vars)
            if step.get("failed") or step.get("unreachable"):
                step["levels"] = levels + step.get("levels", [])
                result.update(step)
                return result
            level = step["levels"][0]
            levels.append(level)
            client = client or step.get("client") or []
            died, timed_out = step.get("server_died", False), step.get("timed_out", False)
            display.display("  [%s] %s: c=%d trial %d/%d (run %d/%d): %s (%.1f s elapsed)" % (
                host, args.get("name"), concurrency, trial, trials, index + 1, len(runs),
                self._outcome(level), time.time() - started))
        result.update(changed=True, levels=levels, server_died=died, timed_out=timed_out, client=client)
        return result

    @staticmethod
    def _outcome(level):
        if level.get("status") == "ok":
            return "%.1f output tok/s" % (level["metrics"].get("output_throughput") or 0.0)
        return "%s (%s)" % (level.get("status"), level.get("reason"))
