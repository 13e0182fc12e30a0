"""`pip install .` alone gives a working `fleetopt`: every package the controller code imports is
declared in pyproject.toml (issue 14)."""
import ast
import importlib.metadata
import pathlib
import re
import sys
import tomllib

from helpers import ROOT

# The project's own collection (this checkout, through collections/), not a distribution.
OWN_COLLECTION = "ansible_collections.fleetopt.campaign."
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def declared():
    return {canonical(re.split(r"[\s<>=!~;\[]", requirement, 1)[0]) for requirement in PYPROJECT["project"]["dependencies"]}


def imported_top_level(package_dir):
    names = set()
    for path in package_dir.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if not node.module.startswith(OWN_COLLECTION):
                    names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"fleetopt", "__future__"}


def test_every_import_of_the_controller_package_is_a_declared_dependency():
    distributions = importlib.metadata.packages_distributions()
    missing = {}
    for name in sorted(imported_top_level(ROOT / "fleetopt")):
        owners = {canonical(d) for d in distributions.get(name, [])}
        assert owners, "%s is imported by fleetopt/ but no installed distribution provides it" % name
        if not owners & declared():
            missing[name] = sorted(owners)
    assert not missing, "imported by fleetopt/ but not in pyproject.toml's dependencies: %s" % missing


def test_declared_dependencies_are_the_pinned_ones():
    pinned = {canonical(line.split("==")[0].split("[")[0]) for line in (ROOT / "requirements.txt").read_text().splitlines()
              if "==" in line and not line.startswith("#")}
    assert declared() <= pinned, declared() - pinned
