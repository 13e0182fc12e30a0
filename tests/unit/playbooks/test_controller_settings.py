"""The controller's plays (the results folder, the report's verdict settings) use the settings the
fleet's inventory gives, not the role's defaults: on a real fleet localhost is not in `fleet`, so
group_vars/fleet reaches its hosts only. Hosts that disagree are refused before anything starts."""
import json
import os
import pathlib
import subprocess
import sys

import yaml

from helpers import ROOT


def resolve(tmp_path, fleet_vars, host_vars=None, extra=()):
    inventory = tmp_path / "inventory"
    (inventory / "group_vars").mkdir(parents=True)
    (inventory / "host_vars").mkdir()
    hosts = {"all": {"children": {"fleet": {"hosts": {"gpu-a": None, "gpu-b": None}}}}}
    (inventory / "hosts.yml").write_text(yaml.safe_dump(hosts))
    (inventory / "group_vars" / "fleet.yml").write_text(yaml.safe_dump(fleet_vars))
    for host, values in (host_vars or {}).items():
        (inventory / "host_vars" / ("%s.yml" % host)).write_text(yaml.safe_dump(values))
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           "tests/playbooks/controller_settings.yml"] + list(extra),
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=120)
    result = json.loads(proc.stdout)
    tasks = result["plays"][0]["tasks"]
    return proc.returncode, tasks


def shown(tasks):
    return tasks[-1]["hosts"]["localhost"]["msg"]["controller_settings"]


def test_the_fleets_group_vars_reach_the_controllers_plays(tmp_path):
    rc, tasks = resolve(tmp_path, {"campaign_results_dir": "/srv/fleetopt/results", "campaign_min_effect_pct": 7.5,
                                   "campaign_verdict_metric": "p99_ttft_ms", "campaign_confidence": 0.99})
    assert rc == 0, tasks
    settings = shown(tasks)
    assert settings["results_dir"] == "/srv/fleetopt/results"
    assert float(settings["min_effect_pct"]) == 7.5 and float(settings["confidence"]) == 0.99
    assert settings["verdict_metric"] == "p99_ttft_ms"
    assert int(settings["min_free_mb"]) > 0, "a setting the fleet leaves out keeps the role's default"


def test_extra_vars_still_win(tmp_path):
    rc, tasks = resolve(tmp_path, {"campaign_results_dir": "/srv/fleetopt/results"},
                        extra=["-e", "campaign_results_dir=/tmp/elsewhere"])
    assert rc == 0, tasks
    assert shown(tasks)["results_dir"] == "/tmp/elsewhere"


def test_hosts_that_disagree_are_refused(tmp_path):
    rc, tasks = resolve(tmp_path, {"campaign_min_effect_pct": 3.0}, host_vars={"gpu-b": {"campaign_min_effect_pct": 5.0}})
    assert rc != 0
    failed = [t for t in tasks if t["hosts"].get("localhost", {}).get("failed")]
    message = json.dumps(failed)
    assert "campaign_min_effect_pct" in message and "gpu-a" in message and "gpu-b" in message, message
