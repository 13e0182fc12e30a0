"""Build this checkout's collection tarball and install it into an empty folder, as a user would
(`ansible-galaxy collection build` / `install`); the tests then run Ansible outside the checkout."""
import os
import pathlib
import subprocess
import sys

from helpers import ROOT

BIN = pathlib.Path(sys.executable).parent
NAMESPACE, NAME = "fleetopt", "campaign"


def galaxy(*args, cwd):
    proc = subprocess.run([str(BIN / "ansible-galaxy")] + list(args), cwd=str(cwd), env=outside_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout.decode()
    return proc.stdout.decode()


def build_and_install(folder):
    """{'tarball', 'collections' (the collections path), 'installed' (the collection's folder)}."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    galaxy("collection", "build", "--output-path", str(folder / "dist"), str(ROOT), cwd=folder)
    tarball = next((folder / "dist").glob("%s-%s-*.tar.gz" % (NAMESPACE, NAME)))
    collections = folder / "collections"
    # The dependencies (ansible.posix, community.proxmox) come with PyPI's `ansible`, never from Galaxy.
    galaxy("collection", "install", "--no-deps", "-p", str(collections), str(tarball), cwd=folder)
    return {"tarball": tarball, "collections": collections,
            "installed": collections / "ansible_collections" / NAMESPACE / NAME}


def outside_env(collections=None):
    """An environment in which nothing of the checkout is configured: no ansible.cfg of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PATH="%s:%s" % (BIN, env.get("PATH", "")), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    if collections is not None:
        env["ANSIBLE_COLLECTIONS_PATH"] = str(collections)
    return env
