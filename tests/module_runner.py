"""Run one of the project's Ansible modules as its own process, the way Ansible does.

The module reads {"ANSIBLE_MODULE_ARGS": ...} from stdin and prints its JSON result.
Processes it launches (servers) outlive it, exactly as on a target host.
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# argv[1]: the folder holding ansible_collections/fleetopt/campaign, so that the module imports
# its module_utils as ansible_collections.fleetopt.campaign.plugins.module_utils.* as on a host.
BOOTSTRAP = (
    "import sys, runpy;"
    "sys.path.append(sys.argv[1]);"
    "sys.argv = [sys.argv[2]];"
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def module_command(name, root=ROOT):
    """argv that runs the module `name` of the project at `root` as Ansible would on a host."""
    from fleetopt.paths import collections_dir

    return [sys.executable, "-c", BOOTSTRAP, str(collections_dir(root)), str(root / "plugins" / "modules" / ("%s.py" % name))]


def run_module(name, args, check_mode=False, timeout=600, root=ROOT):
    """`root`: the project whose plugins/ to run (a copy, for tests that add to it)."""
    payload = dict(args)
    if check_mode:
        payload["_ansible_check_mode"] = True
    proc = subprocess.run(
        module_command(name, root),
        input=json.dumps({"ANSIBLE_MODULE_ARGS": payload}).encode(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
    )
    out = proc.stdout.decode()
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        raise AssertionError("module %s printed no JSON (rc=%s):\n%s\n%s" % (name, proc.returncode, out, proc.stderr.decode()))
