"""The collection as a user gets it: `ansible-galaxy collection build` makes a tarball of the
collection only, and from the tarball installed into an empty folder `ansible-doc` documents
every module, plugin and role by its fully qualified name."""
import json
import subprocess
import tarfile

import pytest
import yaml

from collection_build import BIN, build_and_install, outside_env
from helpers import ROOT

MODULES = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py"))
ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    return build_and_install(tmp_path_factory.mktemp("collection"))


def test_the_tarball_holds_the_collection_and_nothing_of_the_checkout(installed):
    with tarfile.open(installed["tarball"]) as tar:
        names = tar.getnames()
    tops = {n.split("/")[0] for n in names}
    assert {"plugins", "roles", "library", "meta", "MANIFEST.json", "FILES.json"} <= tops
    for unwanted in ("tests", "collections", ".venv", "results", "artifacts", "inventory", "scripts", ".git",
                     "ansible.cfg"):
        assert unwanted not in tops, unwanted
    assert not [n for n in names if "/molecule/" in n or "__pycache__" in n]
    manifest = json.loads(tarfile.open(installed["tarball"]).extractfile("MANIFEST.json").read())
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    assert manifest["collection_info"]["version"] == galaxy["version"]
    assert manifest["collection_info"]["dependencies"] == galaxy["dependencies"]


def ansible_doc(installed, tmp_path, *args):
    proc = subprocess.run([str(BIN / "ansible-doc"), "--json"] + list(args), cwd=str(tmp_path),
                          env=outside_env(installed["collections"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)


def test_ansible_doc_documents_every_module_from_the_installed_tarball(installed, tmp_path):
    docs = ansible_doc(installed, tmp_path, *["fleetopt.campaign.%s" % m for m in MODULES])
    assert sorted(docs) == ["fleetopt.campaign.%s" % m for m in MODULES]
    for name, doc in docs.items():
        assert str(installed["installed"]) in doc["doc"]["filename"], name
        assert doc["doc"]["attributes"]["check_mode"]["support"] == "full", name
        assert doc["examples"] and doc["return"], name


def test_ansible_doc_documents_every_role_entry_point_from_the_installed_tarball(installed, tmp_path):
    docs = ansible_doc(installed, tmp_path, "-t", "role", *["fleetopt.campaign.%s" % r for r in ROLES])
    assert sorted(docs) == ["fleetopt.campaign.%s" % r for r in ROLES]
    for name, doc in docs.items():
        assert doc["entry_points"]["main"]["short_description"], name


def test_ansible_doc_documents_the_callback_from_the_installed_tarball(installed, tmp_path):
    docs = ansible_doc(installed, tmp_path, "-t", "callback", "fleetopt.campaign.fleetopt_interrupt")
    assert docs["fleetopt.campaign.fleetopt_interrupt"]["doc"]["short_description"]


def test_ansible_doc_documents_the_filters_from_the_installed_tarball(installed, tmp_path):
    names = ["fleetopt.campaign.fleetopt_cell_outcome", "fleetopt.campaign.fleetopt_version_in_range"]
    docs = ansible_doc(installed, tmp_path, "-t", "filter", *names)
    assert sorted(docs) == names
    for name in names:
        assert docs[name]["doc"]["short_description"], name
