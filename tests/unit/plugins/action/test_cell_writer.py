"""Atomic writes exist once, in module_utils/fleetopt_files.py: the fleetopt_cell action plugin
and the controller package (fleetopt.files) both use it."""
import importlib.util
import json
import os

import pytest

import fleetopt.files
from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_files
from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_cell_action", ROOT / "plugins" / "action" / "fleetopt_cell.py")
action = importlib.util.module_from_spec(spec)
spec.loader.exec_module(action)


def test_the_action_plugin_and_the_controller_package_share_one_writer():
    assert action.write_json_atomically is fleetopt_files.write_json_atomically
    assert fleetopt.files.write_json_atomically is fleetopt_files.write_json_atomically
    assert fleetopt.files.write_atomically is fleetopt_files.write_atomically


def test_cell_is_written_whole_with_parents_and_no_temporary_left(tmp_path):
    dest = tmp_path / "c1" / "cells" / "host" / "baseline.json"
    cell = {"schema": "fleetopt.cell/1", "cell_key": None, "campaign": "c1", "host": "host", "engine": "vllm",
            "variant": "baseline", "title": "Baseline", "order": 0, "status": "skipped", "reason": "not run: first",
            "failure": None, "levels": [], "startup": {}, "launch": {}, "benchmark": {}, "provenance": {}}
    fleetopt_files.write_json_atomically(str(dest), cell)
    assert json.loads(dest.read_text()) == cell
    fleetopt_files.write_json_atomically(dest, dict(cell, reason="not run: second"))
    assert json.loads(dest.read_text())["reason"] == "not run: second"
    assert [p.name for p in dest.parent.iterdir()] == ["baseline.json"]
    assert oct(os.stat(dest).st_mode & 0o777) == "0o644"


def test_a_failed_write_leaves_the_previous_cell_intact(tmp_path):
    dest = tmp_path / "cell.json"
    fleetopt_files.write_json_atomically(str(dest), {"ok": True})
    with pytest.raises(TypeError):
        fleetopt_files.write_json_atomically(str(dest), {"bad": object()})
    assert json.loads(dest.read_text()) == {"ok": True}
    assert [p.name for p in tmp_path.iterdir()] == ["cell.json"]
