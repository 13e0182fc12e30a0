"""`pip install .` alone gives a working `fleetopt`: every package the controller code imports is
declared in pyproject.toml, and the installed package finds the project it works in."""
import ast
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

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


@pytest.fixture(scope="module")
def installed_alone(tmp_path_factory):
    """`pip install .` copies the package alone (no playbooks, roles, library or module_utils): built
    from a copy of pyproject.toml and fleetopt/, so the checkout gets no build folders; the
    dependencies are the project venv's (--no-deps)."""
    work = tmp_path_factory.mktemp("pip-install")
    source = work / "source"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copytree(ROOT / "fleetopt", source / "fleetopt", ignore=shutil.ignore_patterns("__pycache__"))
    target = work / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--target", str(target), str(source)], check=True, capture_output=True, timeout=300)
    assert (target / "fleetopt" / "cli.py").exists() and not (target / "library").exists()
    return target


def fleetopt_alone(site, cwd, **env):
    log = ROOT / "tests" / "fixtures" / "sglang" / "logs" / "cuda_oom_capture.log"
    environ = {k: v for k, v in os.environ.items() if k not in ("FLEETOPT_HOME", "PYTHONPATH")}
    environ.update(PYTHONPATH=str(site), **env)
    return subprocess.run([sys.executable, "-m", "fleetopt.cli", "classify-log", str(log), "--engine", "sglang"],
                          cwd=str(cwd), env=environ, capture_output=True, text=True, timeout=120)


def test_pip_install_alone_works_inside_a_checkout(installed_alone):
    proc = fleetopt_alone(installed_alone, ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    assert "cuda_oom" in proc.stdout, proc.stdout + proc.stderr


def test_pip_install_alone_finds_the_project_named_by_fleetopt_home(installed_alone, tmp_path):
    proc = fleetopt_alone(installed_alone, tmp_path, FLEETOPT_HOME=str(ROOT))
    assert "cuda_oom" in proc.stdout, proc.stdout + proc.stderr


def test_pip_install_alone_outside_a_project_says_so(installed_alone, tmp_path):
    proc = fleetopt_alone(installed_alone, tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "FLEETOPT_HOME" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
