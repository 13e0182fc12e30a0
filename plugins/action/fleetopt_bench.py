# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for fleetopt_bench: one module call per concurrency level, with progress between them.

A whole benchmark (levels x trials) can take an hour on a GPU fleet. Run as one module call it
would print nothing for that long and leave the connection idle; run as one call per trial, as it
once was, Ansible's shipping and starting of the module (about 1 s on a small host) was paid for
every run of a few seconds. Here each level is one call: it carries the level's planned trials and
its sequential rule, and the module runs trials until the rule stops it. After each call the
level's trials are printed (result and elapsed time), and the module's lease renewal keeps the
server's lease fresh while it runs.

Sequential trials: with `target_halfwidth_pct`, a level gets more trials after its planned ones
until the 95 % interval of its mean output throughput is within that many percent of the mean, or
`max_trials` runs were made; the level records which of the two stopped it. The interval's t
quantiles come from scipy, here on the controller, and travel to the module as `t_quantiles`
(the host has the standard library only).

Warm-ups: each call after the first says the highest concurrency the server has completed a run at
(`served_concurrency`), so the module warms up only a level new to the server (see its docs).

Every call keeps the engine's client alive on the host, so its imports are paid once per cell; a
last call releases it. With a `client_dir` of its own, the client is left alive for the next cell
(the campaign releases it after a host's last cell), so its imports are paid once per host and
campaign.

The first run whose server died or that timed out ends the benchmark; the module skips the rest of
its level, and the levels left are reported as skipped here, as the module itself would.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()


def t_quantiles(max_trials):
    """Student's t 97.5 % quantiles for 1 .. max_trials - 1 degrees of freedom, from scipy."""
    from scipy import stats  # the controller's statistics come from scipy, as the report's do
    return [float(stats.t.ppf(0.975, df)) for df in range(1, max_trials)]


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        # A call for given runs, or one that only releases the kept client, goes to the module as it is.
        if self._play_context.check_mode or args.get("runs") or args.get("release_client"):
            result.update(self._execute_module(module_name="fleetopt.campaign.fleetopt_bench", module_args=args, task_vars=task_vars))
            return result
        self._host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        self._args = args
        self._task_vars = task_vars
        trials = int(args.get("trials") or 1)
        max_trials = max(int(args.get("max_trials") or 0), trials)
        quantiles = t_quantiles(max_trials)
        levels, client, precision = [], [], []
        self._wall = 0.0
        self._ended = None  # (server_died, timed_out) once a run ended the benchmark
        started = time.time()
        served = 0
        concurrencies = [int(c) for c in args.get("concurrency") or []]
        for position, concurrency in enumerate(concurrencies):
            before = time.time() - started
            step = self._level(concurrency, quantiles, served)
            if step.get("failed") or step.get("unreachable"):
                step["levels"] = levels + step.get("levels", [])
                result.update(step)
                return result
            client = client or step.get("client") or []
            precision.extend(step.get("precision") or [])
            ran = [lv for lv in step.get("levels") or [] if lv.get("status") != "skipped"]
            done = 0.0
            for level in step.get("levels") or []:
                levels.append(level)
                if level.get("status") == "ok":
                    served = max(served, int(level["concurrency"]))
            for number, level in enumerate(ran, 1):
                # A run's own duration places its line in time; the level's last ends with the call.
                done += level.get("duration_s") or 0.0
                trial = int(level.get("trial") or 0)
                display.display("  [%s] %s: c=%d trial %d/%d: %s (%.1f s elapsed)" % (
                    self._host, args.get("name"), concurrency, trial, trials if trial <= trials else max_trials,
                    self._outcome(level), time.time() - started if number == len(ran) else before + done))
            if self._ended:
                levels.extend(self._skipped(concurrencies[position + 1:], trials))
                break
        died, timed_out = self._ended or (False, False)
        measured = sum((lv.get("metrics") or {}).get("duration_s") or 0.0 for lv in levels if lv.get("status") == "ok")
        self._release_client()
        result.update(changed=True, levels=levels, server_died=died, timed_out=timed_out, client=client,
                      precision=precision, client_wall_s=round(self._wall, 3), measured_s=round(measured, 3))
        return result

    def _level(self, concurrency, quantiles, served):
        """One module call for one level: its planned trials, the sequential rule and its quantiles."""
        began = time.time()
        step = self._execute_module(module_name="fleetopt.campaign.fleetopt_bench", task_vars=self._task_vars,
                                    module_args=dict(self._args, concurrency=[concurrency], t_quantiles=quantiles,
                                                     served_concurrency=served, keep_client=True))
        self._wall += time.time() - began
        if step.get("server_died") or step.get("timed_out"):
            self._ended = (bool(step.get("server_died")), bool(step.get("timed_out")))
        return step

    def _release_client(self):
        """Tell the kept client that the cell is done (a run that ended the benchmark stopped it already).

        A client with a folder of its own (client_dir) serves the next cells too; whoever chose it releases it.
        """
        if not self._ended and not self._args.get("client_dir"):
            self._execute_module(module_name="fleetopt.campaign.fleetopt_bench", task_vars=self._task_vars,
                                 module_args=dict(self._args, release_client=True))

    def _skipped(self, concurrencies, trials):
        died = self._ended[0]
        return [{"concurrency": c, "trial": t, "status": "skipped", "metrics": None,
                 "reason": "the server had exited" if died else "an earlier run timed out"}
                for c in concurrencies for t in range(1, trials + 1)]

    @staticmethod
    def _outcome(level):
        if level.get("status") == "ok":
            return "%.1f output tok/s" % (level["metrics"].get("output_throughput") or 0.0)
        return "%s (%s)" % (level.get("status"), level.get("reason"))
