"""Shared test setup: tests/ on sys.path, and the collection's module_utils importable as
ansible_collections.fleetopt.campaign.plugins.module_utils.* (the files modules ship to hosts)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import fleetopt.paths  # noqa: E402,F401

import pytest  # noqa: E402

# Every cell and summary.json a test leaves in its temporary folders must match the shipped schemas
# (fleetopt/schemas): after each test for its own tmp_path, at the end of the session for the folders
# that module- or session-scoped fixtures made with tmp_path_factory.
_VALIDATED = set()


def schema_errors(folder):
    """Every schema error of the cells and summary.json files under `folder`, one line each (naming the file)."""
    folder = pathlib.Path(folder)
    if not any(folder.glob("**/cells/*/*.json")) and not any(folder.glob("**/summary.json")):
        return []
    from fleetopt.schemas import validate_folder  # jsonschema only where there is something to check
    return validate_folder(folder)[1]


def _fail_on_schema_errors(folder, what):
    found = schema_errors(folder)
    if found:
        pytest.fail("%s wrote cells or a summary.json that do not match their schema (fleetopt/schemas), "
                    "%d error(s):\n%s" % (what, len(found), "\n".join(found[:20])), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    result = yield
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if folder is not None:
        _VALIDATED.add(pathlib.Path(folder).resolve())
        _fail_on_schema_errors(folder, "the test")
    return result


@pytest.fixture(scope="session", autouse=True)
def _results_of_shared_folders_match_their_schemas(tmp_path_factory):
    yield
    base = tmp_path_factory.getbasetemp().resolve()
    for folder in sorted(base.iterdir()):
        if folder.is_dir() and folder.resolve() not in _VALIDATED:
            _fail_on_schema_errors(folder, "a fixture's folder %s" % folder.name)
