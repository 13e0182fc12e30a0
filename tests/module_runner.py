"""Run one of the project's Ansible modules as its own process, the way Ansible does.

The module reads {"ANSIBLE_MODULE_ARGS": ...} from stdin and prints its JSON result.
Processes it launches (servers) outlive it, exactly as on a target host.
"""
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOOTSTRAP = (
    "import sys, runpy, ansible.module_utils as mu;"
    "mu.__path__.append(sys.argv[1]);"
    "sys.argv = [sys.argv[2]];"
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)


def run_module(name, args, check_mode=False, timeout=600, root=ROOT):
    """`root`: the project whose plugins/ to run (a copy, for tests that add to it)."""
    payload = dict(args)
    if check_mode:
        payload["_ansible_check_mode"] = True
    proc = subprocess.run(
        [sys.executable, "-c", BOOTSTRAP, str(root / "plugins" / "module_utils"),
         str(root / "plugins" / "modules" / ("%s.py" % name))],
        input=json.dumps({"ANSIBLE_MODULE_ARGS": payload}).encode(),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
    )
    out = proc.stdout.decode()
    try:
        return json.loads(out[out.index("{"):])
    except ValueError:
        raise AssertionError("module %s printed no JSON (rc=%s):\n%s\n%s" % (name, proc.returncode, out, proc.stderr.decode()))
