"""Each launch waits for its start-up as long as its own variant's deadline (fleetopt_plan's `startup_timeout`): the
plan is given the campaign's deadline (roles/campaign/tasks/plan.yml) and the server of each variant the variant's
(roles/campaign/tasks/measure.yml), so a torch.compile variant is not stopped mid-compile at the campaign's deadline
and a hung baseline is not waited on for as long as torch.compile needs."""
import json

import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from helpers import ROOT, render_cells

TASKS = ROOT / "roles" / "campaign" / "tasks"


def module_args(task_file, module):
    tasks = yaml.safe_load((TASKS / task_file).read_text())
    found = [t[module] for t in tasks if module in t and (t[module].get("state") or "started") == "started"]
    assert len(found) == 1, (task_file, module, found)
    return found[0]


def render(template, **variables):
    """As Ansible renders a task's argument (a task file's text is trusted as a template)."""
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(template))


def test_the_plan_is_given_the_campaigns_deadline():
    args = module_args("plan.yml", "fleetopt.campaign.fleetopt_plan")
    assert render(args["startup_timeout"], campaign_startup_timeout=420) == 420


def test_each_server_is_started_with_its_variants_deadline_not_the_campaigns():
    template = module_args("measure.yml", "fleetopt.campaign.fleetopt_server")["startup_timeout"]
    compile_variant = {"id": "torch_compile", "startup_timeout": 900.0, "startup_timeout_from": "startup_timeout_s of torch_compile"}
    baseline = {"id": "baseline", "startup_timeout": 420.0, "startup_timeout_from": "campaign_startup_timeout"}
    assert float(render(template, _campaign_variant=compile_variant, campaign_startup_timeout=420)) == 900.0
    assert float(render(template, _campaign_variant=baseline, campaign_startup_timeout=420)) == 420.0


CELLS = """
- name: Render the cells of a launch that ran out of time and of one that was never launched
  hosts: localhost
  gather_facts: false
  vars_files: ["%(root)s/roles/campaign/defaults/main.yml", "%(root)s/tests/playbooks/vars/cell_vars.yml"]
  vars:
    campaign_startup_timeout: 420
    _campaign_plan: {engine_version: "0.5.16", host: {}, model_info: {}, stack: {}}
    _campaign_bench: {skipped: true, changed: false}
    _campaign_post_mortem: {skipped: true, changed: false}
  tasks:
    - name: Stand in for a torch.compile server stopped at its deadline
      ansible.builtin.set_fact:
        _campaign_variant: {id: torch_compile, title: torch.compile, tier: 1, order: 2, launch_number: 1, launches: 1,
                            applicable: true, flags: {}, catalog_flags: {}, cell_name: torch_compile,
                            startup_timeout: 900.0, startup_timeout_from: startup_timeout_s of torch_compile}
        _campaign_server: {failed: true, changed: true,
                           msg: "sglang not ready after 900 s (last phase: cuda_graph; its log last written 2 s
                                 before); stopped it",
                           server: {status: timeout, startup_s: 900.2, phase: cuda_graph,
                                    log_written_at: 1796658265.955}}
    - name: Write the timed-out cell
      ansible.builtin.include_tasks: %(root)s/tests/playbooks/tasks/write_cell.yml
      vars: {cell_dest: "%(out)s/timeout.json"}
    - name: Stand in for a variant this host cannot run
      ansible.builtin.set_fact:
        _campaign_variant: {id: tp2, title: TP2, tier: 1, order: 3, launch_number: 1, launches: 1, applicable: false,
                            reason: needs 2 GPUs, flags: {}, catalog_flags: {}, cell_name: tp2,
                            startup_timeout: 420.0, startup_timeout_from: campaign_startup_timeout}
        _campaign_server: {skipped: true, changed: false}
    - name: Write the not-applicable cell
      ansible.builtin.include_tasks: %(root)s/tests/playbooks/tasks/write_cell.yml
      vars: {cell_dest: "%(out)s/not_applicable.json"}
"""


def test_a_cell_records_the_deadline_its_launch_had_and_a_timeouts_reason_names_it(tmp_path):
    rc, output = render_cells(CELLS, tmp_path)
    assert rc == 0, output[-6000:]
    timed_out = json.loads((tmp_path / "timeout.json").read_text())
    assert timed_out["status"] == "timeout"
    assert timed_out["reason"] == ("sglang not ready after 900 s (last phase: cuda_graph; its log last written 2 s "
                                   "before); stopped it; start-up deadline 900 s (startup_timeout_s of torch_compile)")
    assert timed_out["startup"]["log_written_at"] == 1796658265.955
    assert (timed_out["startup"]["startup_timeout_s"], timed_out["startup"]["startup_timeout_from"]) == (
        900.0, "startup_timeout_s of torch_compile")
    # Nothing was launched: no deadline ran.
    skipped = json.loads((tmp_path / "not_applicable.json").read_text())
    assert skipped["status"] == "not_applicable"
    assert (skipped["startup"]["startup_timeout_s"], skipped["startup"]["startup_timeout_from"]) == (None, None)
