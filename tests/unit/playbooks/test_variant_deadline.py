"""Each launch waits for its start-up as long as its own variant's deadline (fleetopt_plan's `startup_timeout`): the
plan is given the campaign's deadline (roles/campaign/tasks/plan.yml) and the server of each variant the variant's
(roles/campaign/tasks/measure.yml), so a torch.compile variant is not stopped mid-compile at the campaign's deadline
and a hung baseline is not waited on for as long as torch.compile needs."""
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from helpers import ROOT

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
