"""The engines fleetopt knows are the adapters registered in module_utils/fleetopt_engines.py;
every list of engine names elsewhere derives from that registry or is checked against it here
(the CLI's: tests/unit/controller/test_classify_cli.py)."""
import importlib.util

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import ADAPTERS
from helpers import ROOT

ENGINES = sorted(ADAPTERS)
MODULES_WITH_ENGINE = ("fleetopt_bench", "fleetopt_plan", "fleetopt_server")


def load_module(name):
    path = ROOT / "plugins" / "modules" / ("%s.py" % name)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_engine_has_a_spec_and_a_catalog():
    for engine in ENGINES:
        assert yaml.safe_load((ROOT / "library" / "engines" / ("%s.yml" % engine)).read_text())["engine"] == engine
        assert yaml.safe_load((ROOT / "library" / "catalog" / ("%s.yml" % engine)).read_text())["engine"] == engine


@pytest.mark.parametrize("name", MODULES_WITH_ENGINE)
def test_module_documentation_lists_the_registered_engines(name):
    """DOCUMENTATION is static text (ansible-doc reads it without running the module)."""
    doc = yaml.safe_load(load_module(name).DOCUMENTATION)
    assert sorted(doc["options"]["engine"]["choices"]) == ENGINES


@pytest.mark.parametrize("name", MODULES_WITH_ENGINE)
def test_module_argument_spec_accepts_the_registered_engines(name):
    assert sorted(load_module(name).module_args()["engine"]["choices"]) == ENGINES


def test_role_argument_specs_list_the_registered_engines():
    specs = yaml.safe_load((ROOT / "roles" / "campaign" / "meta" / "argument_specs.yml").read_text())
    assert sorted(specs["argument_specs"]["main"]["options"]["campaign_engine"]["choices"]) == ENGINES
