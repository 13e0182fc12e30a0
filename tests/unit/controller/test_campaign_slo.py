"""SLOs are campaign settings: none by default, sensible values on the embedded default, bad input refused
with a clear message before anything starts (roles/campaign/tasks/slo.yml, run by preflight.yml), verdicts on
capacity without SLOs included."""
import json
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT


def check(slo, **settings):
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                           "tests/playbooks/check_slo.yml", "-e", json.dumps(dict(settings, campaign_slo=slo))],
                          cwd=str(ROOT), env=env, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def shown(output):
    tasks = json.loads(output[:output.rindex("}") + 1])["plays"][0]["tasks"]
    return tasks[-1]["hosts"]["localhost"]["msg"]["fleetopt_slo"]


def test_none_by_default_and_local_values_on_the_embedded_default():
    defaults = yaml.safe_load((ROOT / "roles/campaign/defaults/main.yml").read_text())
    assert defaults["campaign_slo"] == {}
    local = yaml.safe_load((ROOT / "inventory/local/group_vars/fleet/campaign.yml").read_text())["campaign_slo"]
    assert set(local) == {"p99_ttft_ms", "p99_tpot_ms", "p99_itl_ms"} and all(v > 0 for v in local.values())
    spec = yaml.safe_load((ROOT / "roles/campaign/meta/argument_specs.yml").read_text())["argument_specs"]
    options = spec["main"]["options"]["campaign_slo"]
    assert options["type"] == "dict" and set(options["options"]) == set(local)


def test_good_slos_are_normalized_to_milliseconds_as_floats():
    rc, output = check({"p99_ttft_ms": 2000, "p99_itl_ms": "50.5"})
    assert rc == 0, output[-2000:]
    assert shown(output) == {"p99_ttft_ms": 2000.0, "p99_itl_ms": 50.5}
    rc, output = check({})
    assert rc == 0 and shown(output) == {}


@pytest.mark.parametrize("slo,message", [
    ({"p50_ttft_ms": 100}, "unknown SLO(s) p50_ttft_ms; known: p99_ttft_ms, p99_tpot_ms, p99_itl_ms"),
    ({"p99_ttft_ms": 0}, "p99_ttft_ms=0"),
    ({"p99_tpot_ms": -5}, "p99_tpot_ms=-5"),
    ({"p99_itl_ms": "fast"}, "p99_itl_ms=fast"),
    ([2000], "campaign_slo must be a mapping"),
])
def test_bad_slos_are_refused_with_a_clear_message(slo, message):
    rc, output = check(slo)
    assert rc != 0 and message in output, output[-2000:]


def test_verdicts_on_capacity_without_slos_are_refused_with_a_clear_message():
    rc, output = check({}, campaign_verdict_metric="capacity")
    assert rc != 0 and "campaign_verdict_metric: capacity takes each verdict on the variant's capacity under the " \
        "SLOs, and campaign_slo sets none: set SLOs" in output, output[-2000:]
    rc, output = check({"p99_ttft_ms": 500}, campaign_verdict_metric="capacity")
    assert rc == 0 and shown(output) == {"p99_ttft_ms": 500.0}, output[-2000:]


def test_the_role_knows_the_slos_the_modules_know():
    import fleetopt.paths  # noqa: F401
    from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import SLO_KEYS
    role_vars = yaml.safe_load((ROOT / "roles/campaign/vars/main.yml").read_text())
    assert tuple(role_vars["_campaign_slo_keys"]) == SLO_KEYS


def test_an_unknown_verdict_metric_is_refused_with_the_known_ones():
    rc, output = check({}, campaign_verdict_metric="mean_tpot_ms")
    assert rc != 0 and "campaign_verdict_metric mean_tpot_ms is not a metric fleetopt judges; known: " \
        "output_throughput, total_throughput, mean_ttft_ms, p99_ttft_ms, mean_itl_ms, capacity" in output, output[-2000:]
    rc, output = check({}, campaign_verdict_metric="p99_ttft_ms")
    assert rc == 0, output[-2000:]


def test_the_role_knows_the_metrics_the_summary_judges():
    from fleetopt.analysis.summary import CAPACITY, COMPARED_METRICS
    from fleetopt.analysis.verdict_metrics import VERDICT_METRICS
    known = yaml.safe_load((ROOT / "roles/campaign/vars/main.yml").read_text())["_campaign_verdict_metrics"]
    assert known == list(COMPARED_METRICS) + [CAPACITY] == list(VERDICT_METRICS)
    spec = yaml.safe_load((ROOT / "roles/campaign/meta/argument_specs.yml").read_text())["argument_specs"]
    for entry in ("main", "report"):
        assert spec[entry]["options"]["campaign_verdict_metric"]["choices"] == known
