"""Bad input fails with a clear message before any server starts."""

import re

import pytest

from e2e.conftest import run_playbook
from helpers import ForeignListener, free_port



def campaign_args(tmp_path, port, *extra):
    return ["optimize.yml", "-e", "campaign_id=bad", "-e", "campaign_results_dir=%s" % (tmp_path / "results"),
            "-e", "campaign_state_dir=%s" % (tmp_path / "state"), "-e", "campaign_port=%d" % port] + list(extra)


def assert_nothing_started(tmp_path):
    assert not list((tmp_path / "state").rglob("*.log")), "a server was launched"


@pytest.mark.parametrize("extra,message", [
    (["-e", "tier=9"], 'unknown tier "9" for vllm; known tiers: 1, 2'),
    (["-e", "tier=one"], 'unknown tier "one"'),
    (["-e", "only=torch_compile,warp_drive"], "unknown optimization id(s) warp_drive"),
    (["-e", "tier=1", "-e", "only=torch_compile"], "give either -e tier=N or -e only=id1,id2"),
    ([], "give either -e tier=N or -e only=id1,id2"),
    (["-e", "tier=1", "-e", "campaign_model_path=/nonexistent/model"], "model path /nonexistent/model does not exist"),
    (["-e", "tier=1", "-e", "campaign_engine_python=/nonexistent/bin/python"], "install the vllm engine first"),
    (["-e", "tier=1", "-e", "campaign_id=../escape"], "must be letters, digits"),
    (["-e", "tier=1", "-e", '{"campaign_slo": {"p50_ttft_ms": 100}}'], "unknown SLO(s) p50_ttft_ms"),
    (["-e", "tier=1", "-e", '{"campaign_slo": {"p99_ttft_ms": 0}}'], "positive numbers of milliseconds: p99_ttft_ms=0"),
    (["-e", "tier=1", "-e", "campaign_cost_per_host_hour=cheap"], "campaign_cost_per_host_hour must be a positive number"),
    (["-e", "tier=1", "-e", '{"campaign_verdict_metric": "capacity", "campaign_slo": {}}'],
     "campaign_verdict_metric: capacity takes each verdict on the variant's capacity under the SLOs"),
    (["-e", "tier=1", "-e", '{"campaign_launches": 0, "campaign_bench_warmup_output_len": -8, '
      '"campaign_bench_concurrency": [4, 0], "campaign_confidence": 95}'],
     "campaign_launches=0 (at least 1), campaign_bench_concurrency=[4, 0] (levels of at least 1), "
     "campaign_bench_warmup_output_len=-8 (0 or more), campaign_confidence=95 (between 0 and 1, as 0.95)"),
])
def test_bad_input_is_refused_before_anything_starts(tmp_path, local_engine, extra, message):
    rc, output = run_playbook(*campaign_args(tmp_path, free_port(), *extra))
    assert rc != 0
    assert message in output, output[-3000:]
    assert_nothing_started(tmp_path)


def test_port_held_by_another_process_is_refused_and_that_process_left_alone(tmp_path, local_engine):
    port = free_port()
    with ForeignListener(port) as holder:
        rc, output = run_playbook(*campaign_args(tmp_path, port, "-e", "tier=1"))
        assert rc != 0 and "port %d is held by a process fleetopt did not start" % port in output
        assert holder.alive()
        assert_nothing_started(tmp_path)


def test_without_a_campaign_id_one_is_made_from_the_time(tmp_path, local_engine):
    rc, output = run_playbook("optimize.yml", "-e", "tier=9", "-e", "campaign_results_dir=%s" % (tmp_path / "results"),
                              "-e", "campaign_state_dir=%s" % (tmp_path / "state"))
    assert rc != 0 and 'unknown tier "9"' in output, output[-3000:]
    made = [p.name for p in (tmp_path / "results").iterdir()]
    assert len(made) == 1 and re.match(r"^20\d{6}T\d{6}Z$", made[0]), made
