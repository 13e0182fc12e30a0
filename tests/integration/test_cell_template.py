"""roles/campaign/templates/cell.json.j2 rendered by Ansible itself, with results registered by
real tasks (a skipped task's result included): the status comes from fleetopt_cell_outcome."""
import json

from helpers import render_cells

PLAYBOOK = """
- name: Render cells
  hosts: localhost
  gather_facts: false
  vars_files: ["%(root)s/roles/campaign/defaults/main.yml", "%(root)s/tests/playbooks/vars/cell_vars.yml"]
  vars:
    _campaign_slo: {p99_ttft_ms: 1000.0}
    _campaign_plan: {engine_version: "0.1.0", host: {}, model_info: {}, stack: {}}
    _campaign_variant: {id: baseline, title: Baseline, tier: 0, order: 0, launch_number: 1, launches: 1,
                        applicable: true, flags: {}, catalog_flags: {}, cell_name: baseline,
                        conflicts: [{id: other, why: planted}], stacked: {composes: [a, b], verifies: c0},
                        baseline_of: stack}
  tasks:
    - name: Stand in for a server that became ready
      ansible.builtin.set_fact:
        _campaign_server: {changed: true, server: {status: ready, startup_s: 3.5, log_path: /run/server.log,
                                                   placement: {requested: "0", server: "0", read_at: ready}}}
    - name: Skip the post-mortem, as the campaign does when the server lived
      ansible.builtin.debug:
        msg: never
      register: _campaign_post_mortem
      when: false
    - name: Stand in for a benchmark that measured
      ansible.builtin.set_fact:
        _campaign_bench: {changed: true, levels: [{concurrency: 1}], client: [python, -m, bench], warmup_s: 7.5,
                          warmup: [{concurrency: 1, settled: true, stopped_by: settled, runs: [{warmup_run: 1}]}]}
    - name: Write the measured cell
      ansible.builtin.include_tasks: %(root)s/tests/playbooks/tasks/write_cell.yml
      vars: {cell_dest: "%(out)s/ok.json"}
    - name: Stand in for a benchmark under which the server died
      ansible.builtin.set_fact:
        _campaign_bench: {changed: true, levels: [], server_died: true}
        _campaign_post_mortem: {changed: true, server: {exit_code: -9, failure: {failure_class: cuda_oom}}}
    - name: Write the crashed cell
      ansible.builtin.include_tasks: %(root)s/tests/playbooks/tasks/write_cell.yml
      vars: {cell_dest: "%(out)s/crashed.json"}
"""


def test_the_cell_template_takes_status_reason_and_failure_from_the_filter(tmp_path):
    rc, output = render_cells(PLAYBOOK, tmp_path)
    assert rc == 0, output
    ok = json.loads((tmp_path / "ok.json").read_text())
    assert (ok["status"], ok["reason"], ok["failure"], ok["host_lost"]) == ("ok", None, None, False)
    assert ok["startup"]["startup_s"] == 3.5 and ok["startup"]["log_on_controller"] == "logs/localhost/server.log"
    # Where the server ran, as it read that back from /proc, is the launch's.
    assert ok["launch"]["placement"] == {"requested": "0", "server": "0", "read_at": "ready"}
    assert ok["levels"] == [{"concurrency": 1}] and ok["benchmark"]["client"] == ["python", "-m", "bench"]
    assert ok["benchmark"]["slo"] == {"p99_ttft_ms": 1000.0}
    # The verdict settings it ran with, for a report run again by hand (the role's defaults here).
    assert ok["verdicts"] == {"metric": "output_throughput", "confidence": 0.95, "min_effect_pct": 3.0}
    # The warm-up runs of a new server, its settings and its cost are the cell's.
    assert ok["benchmark"]["warmup"][0]["stopped_by"] == "settled" and ok["benchmark"]["warmup_s"] == 7.5
    assert (ok["benchmark"]["max_warmup_runs"], ok["benchmark"]["warmup_settle_pct"]) == (3, 10.0)
    assert ok["provenance"]["conflicts"] == [{"id": "other", "why": "planted"}]
    # A stacked variant's cell says what it composes (the recommendation reads it there).
    assert ok["stacked"] == {"composes": ["a", "b"], "verifies": "c0"}
    # The baseline measured again in a stack stage says whose baseline it is (the summary compares the stack with it).
    assert ok["baseline_of"] == "stack"
    crashed = json.loads((tmp_path / "crashed.json").read_text())
    assert crashed["status"] == "crashed" and crashed["failure"] == {"failure_class": "cuda_oom"}
    assert crashed["startup"]["exit_code"] == -9
