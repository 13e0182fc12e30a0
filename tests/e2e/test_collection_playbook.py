"""A user's own playbook, outside this checkout, calls fleetopt's modules by their fully
qualified names from the collection tarball installed into an empty folder: start an engine,
benchmark it with vLLM's own client, stop it. What is checked is the collection, so the engine's
server is the scripted one (tests/scripted_engine); the real engine's start is test_vllm_lifecycle's."""
import json
import subprocess
import sys

import pytest

from collection_build import BIN, build_and_install, outside_env
from e2e.conftest import local_server_env
from helpers import free_port
from scripted_engine import launches


PLAYBOOK = """
- name: Benchmark the local engine once
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    engine_spec: "{{ lookup('ansible.builtin.file', '%(installed)s/library/engines/vllm.yml') | from_yaml }}"
  tasks:
    - name: Start the engine
      fleetopt.campaign.fleetopt_server:
        name: mine
        engine: vllm
        python: "%(server_python)s"
        model: "%(model)s"
        served_model_name: tiny
        port: %(port)d
        flags: {"--enforce-eager": true, "--max-model-len": 1024}
        env: %(env)s
        engine_spec: "{{ engine_spec }}"
        log_path: "%(work)s/server.log"
        run_dir: "%(work)s/run"
        startup_timeout: 240
      register: started

    - name: Benchmark it
      fleetopt.campaign.fleetopt_bench:
        engine: vllm
        python: "%(python)s"
        base_url: "{{ started.server.base_url }}"
        served_model_name: tiny
        tokenizer: "%(model)s"
        concurrency: [1]
        min_prompts: 8
        prompts_per_concurrency: 4
        min_warmups: 2
        input_len: 16
        output_len: 8
        result_dir: "%(work)s/bench"
        name: mine
        server_pid: "{{ started.server.pid }}"
      register: measured

    - name: Stop it
      fleetopt.campaign.fleetopt_server:
        name: mine
        state: stopped
        port: %(port)d
        run_dir: "%(work)s/run"
      register: stopped

    - name: Keep what each step returned
      ansible.builtin.copy:
        content: "{{ {'started': started, 'measured': measured, 'stopped': stopped} | to_json }}"
        dest: "%(work)s/results.json"
        mode: "0644"
"""


def test_a_users_playbook_runs_the_installed_collection_by_fqcn(local_engine, scripted_engine, tmp_path):
    installed = build_and_install(tmp_path / "collection")
    user = tmp_path / "user"
    user.mkdir()
    port = free_port()
    server_python = scripted_engine()
    (user / "bench.yml").write_text(PLAYBOOK % {"installed": installed["installed"], "python": local_engine["python"],
                                                "server_python": server_python,
                                                "model": local_engine["model"], "port": port, "work": user,
                                                "env": json.dumps(local_server_env(fast_start=True))})
    proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-e",
                           "ansible_python_interpreter=%s" % sys.executable, "bench.yml"], cwd=str(user),
                          env=outside_env(installed["collections"]), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=900, check=False)
    output = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, output[-5000:]
    results = json.loads((user / "results.json").read_text())
    assert results["started"]["server"]["status"] == "ready"
    levels = results["measured"]["levels"]
    assert levels and all(lv["status"] == "ok" and lv["metrics"]["output_throughput"] > 0 for lv in levels), levels
    assert results["stopped"]["server"]["status"] == "stopped"
    assert results["stopped"]["server"]["stop"]["port_free"] is True
    assert len(launches(scripted_engine.scenarios[0])) == 1  # the scripted engine served it, started once
