"""`fleetopt run --slo KEY=MS` sets campaign_slo for the playbook (the role checks it before anything starts)."""
import pytest

from fleetopt.cli import build_parser
from fleetopt.run import campaign_vars


def test_slos_on_the_command_line_become_campaign_slo():
    args = build_parser().parse_args(["run", "--tier", "1", "--campaign-id", "c", "--slo", "p99_ttft_ms=2000",
                                      "--slo", "p99_itl_ms=50"])
    assert campaign_vars(args)["campaign_slo"] == {"p99_ttft_ms": 2000.0, "p99_itl_ms": 50.0}
    plain = build_parser().parse_args(["run", "--tier", "1", "--campaign-id", "c"])
    assert "campaign_slo" not in campaign_vars(plain)


def test_a_bad_slo_on_the_command_line_is_a_usage_error():
    args = build_parser().parse_args(["run", "--tier", "1", "--campaign-id", "c", "--slo", "p50_ttft_ms=10"])
    with pytest.raises(SystemExit, match="unknown SLO 'p50_ttft_ms'"):
        campaign_vars(args)
