import importlib.util
import json

import pytest

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_cell_action", ROOT / "plugins" / "action" / "fleetopt_cell.py")
action = importlib.util.module_from_spec(spec)
spec.loader.exec_module(action)


def test_cell_is_written_whole_with_parents_and_no_temporary_left(tmp_path):
    dest = tmp_path / "c1" / "cells" / "host" / "baseline.json"
    action.write_json_atomically(str(dest), {"variant": "baseline", "levels": [1, 2]})
    assert json.loads(dest.read_text()) == {"variant": "baseline", "levels": [1, 2]}
    action.write_json_atomically(str(dest), {"variant": "baseline", "levels": []})
    assert json.loads(dest.read_text())["levels"] == []
    assert [p.name for p in dest.parent.iterdir()] == ["baseline.json"]


def test_a_failed_write_leaves_the_previous_cell_intact(tmp_path):
    dest = tmp_path / "cell.json"
    action.write_json_atomically(str(dest), {"ok": True})
    with pytest.raises(TypeError):
        action.write_json_atomically(str(dest), {"bad": object()})
    assert json.loads(dest.read_text()) == {"ok": True}
    assert [p.name for p in tmp_path.iterdir()] == ["cell.json"]
