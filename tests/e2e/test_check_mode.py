"""`optimize.yml --check` runs through and says what it would do, starting nothing; a role
variable the campaign cannot do without fails the play when the inventory lacks it."""
import pytest

from e2e.conftest import run_playbook



def test_check_mode_says_what_it_would_do_and_starts_nothing(tmp_path, local_engine):
    rc, output = run_playbook("optimize.yml", "--check", "-e", "only=float32_compute", "-e", "campaign_id=chk",
                              "-e", "campaign_launches=1",
                              "-e", "campaign_results_dir=%s" % (tmp_path / "results"),
                              "-e", "campaign_state_dir=%s" % (tmp_path / "state"))
    assert rc == 0, output[-3000:]
    assert "Check mode: baseline: would launch %s" % local_engine["real_python"] in output
    assert "Check mode: float32_compute: would launch" in output and "--dtype float32" in output
    assert "Check mode: would write the report" in output
    assert not (tmp_path / "state").exists(), "check mode touched the host"
    assert not list((tmp_path / "results").rglob("*.json")), "check mode wrote results"


def test_a_missing_required_variable_fails_before_anything_starts(tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    fleet:\n      hosts:\n        localhost:\n"
                         "          ansible_connection: local\n"
                         "          ansible_python_interpreter: '{{ ansible_playbook_python }}'\n")
    rc, output = run_playbook("-i", str(inventory), "optimize.yml", "-e", "tier=1",
                              "-e", "campaign_results_dir=%s" % (tmp_path / "results"),
                              "-e", "campaign_state_dir=%s" % (tmp_path / "state"))
    assert rc != 0
    assert "campaign_engine_python" in output and "campaign_model_path" in output, output[-3000:]
    assert not (tmp_path / "state").exists()
