"""The report needs only what the playbook's controller needs: `python -m fleetopt.cli report` runs where
ansible-runner is not installed (a GPU host that is its own controller, like the H200 machine, has
ansible-core and the report's libraries but not ansible-runner, which only `fleetopt run` uses)."""
import json
import subprocess
import sys

from helpers import ROOT
from summary_cells import cell, trials

WITHOUT_RUNNER = ("import sys; sys.modules['ansible_runner'] = None; "
                  "from fleetopt.cli import main; sys.exit(main(sys.argv[1:]))")


def test_the_report_is_written_where_ansible_runner_cannot_be_imported(tmp_path):
    cells = tmp_path / "campaign" / "cells" / "h1"
    cells.mkdir(parents=True)
    for made in (cell("baseline", levels=trials(1, 100, 101, 99)), cell("faster", levels=trials(1, 150, 151, 149))):
        (cells / (made["variant"] + ".json")).write_text(json.dumps(made))
    done = subprocess.run([sys.executable, "-c", WITHOUT_RUNNER, "report", str(tmp_path / "campaign")], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert done.returncode == 0, done.stdout
    summary = json.loads((tmp_path / "campaign" / "summary.json").read_text())
    assert {v["variant"]: v["verdict"] for v in summary["variants"]}["faster"] == "improved"


def test_fleetopt_run_without_ansible_runner_says_what_is_missing(tmp_path):
    done = subprocess.run([sys.executable, "-c", WITHOUT_RUNNER, "run", "--tier", "1", "--results", str(tmp_path)],
                          cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
    assert done.returncode != 0
    assert "ansible_runner" in done.stdout or "ansible-runner" in done.stdout
