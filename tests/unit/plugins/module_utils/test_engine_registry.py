"""The engines fleetopt knows are the adapters registered in module_utils/fleetopt_engines.py;
every list of engine names elsewhere derives from that registry (the modules' argument specs, through
module_utils/fleetopt_common.py), or, where it must stay static text (the doc fragment fleetopt_common that
documents every module's `engine`, the campaign role's argument spec), is checked against it here (the
CLI's: tests/unit/controller/test_classify_cli.py)."""
import importlib
import importlib.util

import pytest
import yaml

import fleetopt.paths  # noqa: F401  (makes the collection's module_utils importable)
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import ADAPTERS
from helpers import ROOT, module_documentation

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
def test_modules_document_engine_only_through_the_fragment_that_lists_the_registry(name):
    """No module writes its own list of engines: `engine` comes from the doc fragment fleetopt_common."""
    module = load_module(name)
    own = yaml.safe_load(module.DOCUMENTATION)
    assert set((own["options"].get("engine") or {})) <= {"required"}
    assert "fleetopt.campaign.fleetopt_common.engine" in own["extends_documentation_fragment"]
    assert sorted(module_documentation(module)["options"]["engine"]["choices"]) == ENGINES


@pytest.mark.parametrize("name", MODULES_WITH_ENGINE)
def test_engine_is_documented_as_required_where_the_argument_spec_requires_it(name):
    module = load_module(name)
    documented = module_documentation(module)["options"]["engine"]
    assert documented.get("required", False) == module.module_args()["engine"].get("required", False)
    assert documented["description"] and documented["type"] == "str"


def test_the_fragments_engine_text_lists_the_registered_engines():
    """The fragment's text is static (ansible-test reads it without running the file): checked here."""
    fragment = importlib.import_module("ansible_collections.fleetopt.campaign.plugins.doc_fragments.fleetopt_common")
    assert yaml.safe_load(fragment.ModuleDocFragment.ENGINE)["options"]["engine"]["choices"] == ENGINES


@pytest.mark.parametrize("name", MODULES_WITH_ENGINE)
def test_module_argument_spec_takes_engine_from_the_registry(name, monkeypatch):
    assert sorted(load_module(name).module_args()["engine"]["choices"]) == ENGINES
    # The spec is built from the registry when it is asked for (module_utils/fleetopt_common.py), not copied.
    monkeypatch.setitem(ADAPTERS, "llamacpp", object)
    assert "llamacpp" in load_module(name).module_args()["engine"]["choices"]


def test_role_argument_specs_list_the_registered_engines():
    specs = yaml.safe_load((ROOT / "roles" / "campaign" / "meta" / "argument_specs.yml").read_text())
    assert sorted(specs["argument_specs"]["main"]["options"]["campaign_engine"]["choices"]) == ENGINES
