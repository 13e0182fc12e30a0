"""The JSON Schemas of the cell (fleetopt.cell/1) and summary.json formats (fleetopt/schemas): the kept
campaigns and the tests' own cells and summaries match them, a broken file is refused with its path and
the schema's error, and the tests' conftest fails a test that leaves a broken cell behind."""
import copy
import json
import pathlib
import subprocess
import sys
import tempfile

import pytest

from fleetopt import schemas
from fleetopt.analysis.summary import build_summary
from helpers import ROOT
from schema_complete import complete_summary
from summary_cells import cell, trials
from browser.synthetic_campaign import synthetic_cells

KEPT = sorted(path for path in (ROOT / "docs" / "campaigns").iterdir() if path.is_dir())
KEPT_CELL = KEPT[0] / "cells" / "localhost" / "baseline.json"


def kept_cell():
    return json.loads(KEPT_CELL.read_text())


def test_both_schemas_are_draft_2020_12_and_ship_with_the_package():
    for name in ("cell", "summary"):
        schema = schemas.load_schema(name)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        schemas.validator(name)  # checks the schema itself
    # Package data: pyproject.toml names the folder and its files, which sit beside the module.
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"fleetopt.schemas" = ["*.schema.json"]' in pyproject and '"fleetopt.schemas"' in pyproject
    assert sorted(p.name for p in schemas.FOLDER.glob("*.schema.json")) == ["cell.schema.json", "summary.schema.json"]


@pytest.mark.parametrize("campaign", KEPT, ids=[path.name for path in KEPT])
def test_every_kept_campaign_matches_the_schemas(campaign):
    checked, problems = schemas.validate_folder(campaign)
    assert problems == []
    assert checked == len(list(campaign.glob("cells/*/*.json"))) + 1 > 1


def test_the_synthetic_campaign_of_the_report_tests_and_its_summary_match():
    cells = synthetic_cells()
    for made in cells:
        assert schemas.errors("cell", made) == [], made["variant"]
    summary = build_summary(pathlib.Path("synthetic"), cells)
    summary.update(recommendation=complete_summary({})["recommendation"])
    summary["settings"]["verdict_settings_from"] = "cells"
    assert schemas.errors("summary", summary) == []


def test_the_summary_tests_cells_match():
    assert schemas.errors("cell", cell("baseline", levels=trials(1, 100.0, 101.0))) == []


@pytest.mark.parametrize("break_it, where, says", [
    (lambda c: c.update(status="finished"), "/status", "'finished' is not one of"),
    (lambda c: c.pop("host"), "/", "'host' is a required property"),
    (lambda c: c.update(schema="fleetopt.cell/2"), "/schema", "'fleetopt.cell/1' was expected"),
    (lambda c: c["levels"][0].update(concurrency="1"), "/levels/0/concurrency", "is not of type 'integer'"),
    (lambda c: c["levels"][0].update(status="done"), "/levels/0/status", "is not one of"),
    (lambda c: c["levels"][0]["metrics"].update(output_throughput="fast"), "/levels/0/metrics/output_throughput",
     "is not of type"),
    (lambda c: c.update(failure={"failure_class": "cuda_oom", "root_cause": "x", "remedy": "y"}), "/failure",
     "'verdict' is a required property"),
    (lambda c: c["benchmark"].pop("trials"), "/benchmark", "'trials' is a required property"),
    (lambda c: c["startup"].update(phases={"weights": {"start_s": "soon"}}), "/startup/phases/weights/start_s",
     "is not of type"),
    (lambda c: c.update(surprise=1), "/", "Additional properties are not allowed ('surprise' was unexpected)"),
])
def test_a_broken_cell_is_refused_naming_where_and_why(break_it, where, says):
    broken = kept_cell()
    assert schemas.errors("cell", broken) == []
    break_it(broken)
    found = schemas.errors("cell", broken)
    assert any(line.startswith(where + ": ") and says in line for line in found), found


def test_a_broken_summary_is_refused_naming_where_and_why():
    summary = json.loads((KEPT[0] / "summary.json").read_text())
    broken = copy.deepcopy(summary)
    broken["variants"][0]["verdict"] = "better"
    del broken["cells"][1]["vs_baseline"]
    broken["recommendation"]["outcome"] = "ship it"
    found = schemas.errors("summary", broken)
    assert any(line.startswith("/variants/0/verdict: ") for line in found), found
    assert "/cells/1: 'vs_baseline' is a required property" in found
    assert any(line.startswith("/recommendation/outcome: ") for line in found), found


def write_campaign(folder, cells):
    for made in cells:
        path = folder / "c1" / "cells" / made["host"] / ("%s.json" % made["variant"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(made))
    return folder / "c1"


def validate(folder):
    return subprocess.run([sys.executable, "-m", "fleetopt.cli", "validate", folder], capture_output=True, text=True)


def test_fleetopt_validate_names_each_broken_file_and_exits_1():
    # Outside tmp_path: the conftest would rightly fail this test for the broken cell it leaves.
    with tempfile.TemporaryDirectory() as folder:
        broken = dict(kept_cell(), status="finished")
        campaign = write_campaign(pathlib.Path(folder), [kept_cell(), dict(broken, variant="other")])
        (campaign / "summary.json").write_text((KEPT[0] / "summary.json").read_text())
        proc = validate(folder)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        broken_path = campaign / "cells" / "localhost" / "other.json"
        assert "%s: /status: 'finished' is not one of" % broken_path in proc.stdout
        assert "3 file(s) checked, 1 error(s)" in proc.stdout
        broken_path.write_text(json.dumps(kept_cell()))
        proc = validate(folder)
        assert proc.returncode == 0 and "3 file(s) checked, 0 error(s)" in proc.stdout, proc.stdout


INNER_TEST = '''
import json


def test_writes_a_cell(tmp_path):
    cell = json.loads(open(%r).read())
    cell["status"] = %r
    path = tmp_path / "c1" / "cells" / "localhost" / "baseline.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(cell))
'''


@pytest.mark.parametrize("status, fails", [("finished", True), ("ok", False)])
def test_the_tests_conftest_fails_a_test_that_leaves_a_broken_cell(status, fails):
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        (folder / "tests").mkdir()
        (folder / "tests" / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text())
        (folder / "tests" / "test_inner.py").write_text(INNER_TEST % (str(KEPT_CELL), status))
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                               "--basetemp", str(folder / "tmp"), str(folder / "tests")],
                              cwd=str(folder), capture_output=True, text=True)
        if fails:
            assert proc.returncode == 1, proc.stdout
            assert "1 failed" in proc.stdout
            assert "baseline.json: /status: 'finished' is not one of" in proc.stdout, proc.stdout
        else:
            assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout


def test_the_enums_hold_the_values_the_code_names():
    from fleetopt.analysis import launches, verdicts
    from fleetopt.recommend import candidates
    cell_schema, summary_schema = schemas.load_schema("cell"), schemas.load_schema("summary")
    statuses = set(cell_schema["$defs"]["cell_status"]["enum"])
    assert set(launches.FAILED) | {"ok", "not_applicable", "no_effect", "skipped", "blocked"} <= statuses
    assert statuses == set(summary_schema["$defs"]["cell_status"]["enum"])
    assert set(verdicts.GATED) | {"baseline"} | statuses - {"ok"} <= set(summary_schema["$defs"]["verdict"]["enum"])
    why = summary_schema["$defs"]["recommendation"]["properties"]["left_out"]["items"]["properties"]["why"]["enum"]
    assert set(candidates.WHY_ORDER) <= set(why)
