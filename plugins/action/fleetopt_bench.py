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

Warm-ups: each call after the first passes on the highest concurrency the server has completed a run
at (`served_concurrency`, warm-up runs included, as the call before returned it), so the module warms
up only a level new to the server, and makes warm-up runs until the server has settled only for a
newly launched one (see its docs). The warm-up runs are shown as they were made, and their wall time
is returned as `warmup_s`: client time that measured nothing, inside `client_wall_s` and outside
`measured_s`.

Every call keeps the engine's client alive on the host, so its imports are paid once per cell; a
last call releases it. With a `client_dir` of its own, the client is left alive for the next cell
(the campaign releases it after a host's last cell), so its imports are paid once per host and
campaign.

The first run whose server died or that timed out ends the benchmark; the module skips the rest of
its level, and the levels left are reported as skipped here, with the module's record of a skipped
run (module_utils/fleetopt_bench_end.py).

Capacity search: with SLOs and `capacity_search_levels`, after the planned levels it measures each
level the search (module_utils/fleetopt_capacity_search.py) names, up to that many more, each
marked `searched`, and returns what the search did as `capacity_search`.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import signal
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_bench_end import skipped_run
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_capacity_search import CapacitySearch

display = Display()


def t_quantiles(max_trials):
    """Student's t 97.5 % quantiles for 1 .. max_trials - 1 degrees of freedom, from scipy."""
    stats = import_scipy_stats()
    return [float(stats.t.ppf(0.975, df)) for df in range(1, max_trials)]


def import_scipy_stats():
    """scipy.stats (the controller's statistics come from scipy, as the report's do), its math libraries' threads
    started with the termination signals blocked.

    Ansible's worker waits for the module in poll() and is stopped by a SIGINT or SIGTERM from ansible-playbook. The
    kernel may hand such a signal to any thread that does not block it; one of BLAS's never wakes the worker, which
    then waits out the module's whole benchmark before it acts on Ctrl-C."""
    stopping = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    try:
        from scipy import stats
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
    return stats


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        # A call for given runs, or one that only starts or releases the kept client, goes to the module as it is.
        if self._play_context.check_mode or args.get("runs") or args.get("state", "measured") != "measured":
            result.update(self._execute_module(module_name="fleetopt.campaign.fleetopt_bench", module_args=args, task_vars=task_vars))
            return result
        self._host = task_vars.get("inventory_hostname", "?") if task_vars else "?"
        self._args = args
        self._task_vars = task_vars
        self._trials = int(args.get("trials") or 1)
        self._max_trials = max(int(args.get("max_trials") or 0), self._trials)
        self._quantiles = t_quantiles(self._max_trials)
        self._levels, self._precision, self._client, self._power, self._warmup = [], [], [], None, []
        self._wall = 0.0
        self._ended = None  # (server_died, timed_out) once a run ended the benchmark
        self._started = time.time()
        self._served = 0
        concurrencies = [int(c) for c in args.get("concurrency") or []]
        for position, concurrency in enumerate(concurrencies):
            failed = self._measure(concurrency)
            if failed:
                result.update(failed)
                return result
            if self._ended:
                self._levels.extend(self._skipped(concurrencies[position + 1:], self._trials))
                break
        search, failed = self._search_capacity()
        if failed:
            result.update(failed)
            return result
        died, timed_out = self._ended or (False, False)
        measured = sum((lv.get("metrics") or {}).get("duration_s") or 0.0 for lv in self._levels if lv.get("status") == "ok")
        self._release_client()
        warmup_s = sum(record.get("duration_s") or 0.0 for record in self._warmup)
        result.update(changed=True, levels=self._levels, server_died=died, timed_out=timed_out, client=self._client,
                      served_concurrency=self._served,
                      precision=self._precision, power=self._power, capacity_search=search, warmup=self._warmup,
                      client_wall_s=round(self._wall, 3), measured_s=round(measured, 3), warmup_s=round(warmup_s, 3))
        return result

    def _measure(self, concurrency, searched=False):
        """One level, its runs shown as they were made; the failed module result, if it failed."""
        before = time.time() - self._started
        step = self._level(concurrency, self._quantiles, self._served)
        if step.get("failed") or step.get("unreachable"):
            step["levels"] = self._levels + step.get("levels", [])
            return step
        self._client = self._client or step.get("client") or []
        self._power = self._power or step.get("power")
        self._precision.extend(step.get("precision") or [])
        ran = [lv for lv in step.get("levels") or [] if lv.get("status") != "skipped"]
        done = 0.0
        # The module counts what the server has served; the next level's call is given what it returned.
        self._served = step.get("served_concurrency", self._served)
        for record in step.get("warmup") or []:
            self._warmup.append(record)
            for run in record.get("runs") or []:
                done += run.get("duration_s") or 0.0
                display.display("  [%s] %s: c=%d warm-up run %d/%d: %s (%.1f s elapsed)" % (
                    self._host, self._args.get("name"), concurrency, int(run.get("warmup_run") or 0),
                    int(record.get("max_runs") or 0), self._outcome(run), before + done))
            display.display("  [%s] %s: c=%d warm-up %s: %s; %.1f s" % (
                self._host, self._args.get("name"), concurrency, "settled" if record.get("settled") else "not settled",
                record.get("reason"), record.get("duration_s") or 0.0))
        for level in step.get("levels") or []:
            if searched:
                level["searched"] = True
            self._levels.append(level)
        for number, level in enumerate(ran, 1):
            # A run's own duration places its line in time; the level's last ends with the call.
            warmup = level.get("warmup_run")
            if warmup:
                done += warmup.get("duration_s") or 0.0
                display.display("  [%s] %s: c=%d warm-up: %d requests of %d output tokens, %s (%.1f s elapsed)" % (
                    self._host, self._args.get("name"), concurrency, int(warmup.get("num_prompts") or 0),
                    int(warmup.get("output_len") or 0), warmup.get("status") if warmup.get("status") == "ok"
                    else "failed (%s); the trial warms up itself" % warmup.get("reason"), before + done))
            done += level.get("duration_s") or 0.0
            trial = int(level.get("trial") or 0)
            display.display("  [%s] %s: c=%d%s trial %d/%d: %s (%.1f s elapsed)" % (
                self._host, self._args.get("name"), concurrency, " (capacity search)" if searched else "", trial,
                self._trials if trial <= self._trials else self._max_trials, self._outcome(level),
                time.time() - self._started if number == len(ran) else before + done))
        return None

    def _search_capacity(self):
        """The capacity search (fleetopt_capacity_search) after the planned levels, each level it names measured
        here; the search's record, and a failed module result."""
        search = CapacitySearch.from_args(self._args)
        if not search.enabled:
            return None, None
        while True:
            concurrency = search.next_level(self._levels, ended=bool(self._ended))
            if concurrency is None:
                return search.record(), None
            failed = self._measure(concurrency, searched=True)
            if failed:
                return None, failed

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
                                 module_args=dict(self._args, state="client_released"))

    def _skipped(self, concurrencies, trials):
        return [skipped_run(c, t, self._ended[0]) for c in concurrencies for t in range(1, trials + 1)]

    @staticmethod
    def _outcome(level):
        if level.get("status") == "ok":
            # A warm-up run records its throughput itself; a trial, among its metrics.
            return "%.1f output tok/s" % ((level.get("metrics") or level).get("output_throughput") or 0.0)
        return "%s (%s)" % (level.get("status"), level.get("reason"))
