"""Every module documents itself fully, and its documented options are its real options."""
import ast
import importlib.util

import pytest
import yaml

from helpers import ROOT, module_documentation

MODULES = sorted((ROOT / "plugins" / "modules").glob("*.py"))


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_documentation_examples_and_return_are_valid_and_match_the_argument_spec(path):
    module = load(path)
    doc = module_documentation(module)
    assert doc["module"] == path.stem
    assert doc["short_description"] and doc["description"]
    examples = yaml.safe_load(module.EXAMPLES)
    assert examples and all("fleetopt.campaign.%s" % path.stem in task for task in examples)
    assert yaml.safe_load(module.RETURN)
    spec = module.module_args()
    assert set(doc["options"]) == set(spec)
    for name, option in doc["options"].items():
        assert option.get("description"), name
        assert option.get("type", "str") == spec[name].get("type", "str"), name
        assert option.get("required", False) == spec[name].get("required", False), name
        assert option.get("choices") == spec[name].get("choices"), name
        if "default" in spec[name]:
            assert option.get("default") == spec[name]["default"], name


@pytest.mark.parametrize("path", MODULES + sorted((ROOT / "plugins" / "module_utils").glob("*.py")),
                         ids=lambda p: p.stem)
def test_modules_and_module_utils_import_only_the_standard_library_and_ansible(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for name in names:
            top = name.split(".")[0]
            own = name.startswith("ansible_collections.fleetopt.campaign.plugins.module_utils")
            assert own or top in ("ansible", "__future__") or top in __import__("sys").stdlib_module_names, name


def return_keys(spec, prefix=""):
    for key, value in spec.items():
        yield prefix + key, value
        yield from return_keys(value.get("contains") or {}, prefix + key + ".")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.stem)
def test_documentation_states_attributes_and_when_each_value_is_returned(path):
    module = load(path)
    attributes = yaml.safe_load(module.DOCUMENTATION)["attributes"]
    for name in ("check_mode", "diff_mode"):
        assert attributes[name]["support"] in ("full", "partial", "none"), name
        assert attributes[name]["description"], name
    missing = [key for key, value in return_keys(yaml.safe_load(module.RETURN)) if not value.get("returned")]
    assert missing == []
