"""Paths and small utilities shared by the tests."""
import json
import os
import pathlib
import socket
import stat
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_gone(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(")")[-1].split()[0] in ("Z", "X")
    except OSError:
        return True


def live_processes(argv_matches):
    """PIDs of live processes whose command line (as a list) satisfies `argv_matches`."""
    import os
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or pid_gone(int(name)):
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if argv_matches(argv):
            found.append(int(name))
    return found


def bench_clients_under(folder):
    """Live kept benchmark clients (fleetopt_bench_client.py) whose program lies under `folder`."""
    return live_processes(lambda argv: any(a.endswith("fleetopt_bench_client.py") and a.startswith(str(folder))
                                           for a in argv))


def processes_listening_as(port):
    """PIDs of live processes whose command line names `--port <port>` (a server we started)."""
    return live_processes(lambda argv: any(a == "--port" and i + 1 < len(argv) and argv[i + 1] == str(port)
                                           for i, a in enumerate(argv)))


class ForeignListener:
    """A process fleetopt did not start, holding `port` (context manager); `alive()` says it survived."""

    def __init__(self, port):
        self.port = port

    def __enter__(self):
        import subprocess
        import sys
        import time
        self.process = subprocess.Popen([sys.executable, "-m", "http.server", str(self.port), "--bind", "127.0.0.1"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.1)
        raise AssertionError("the stand-in listener never bound port %d" % self.port)

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def __exit__(self, *exc):
        self.process.terminate()
        self.process.wait()


def run_local_playbook(playbook, timeout=300):
    """`ansible-playbook` of this venv on `playbook` against localhost (local connection, this interpreter), with the
    project's ansible.cfg; returns (exit code, its output)."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                           "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook)],
                          cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)
    return proc.returncode, proc.stdout



def render_cells(playbook, folder):
    """Run `playbook`, the text of a play of stand-in launches whose tasks write their cells with
    tests/playbooks/tasks/write_cell.yml (`%(root)s` the project, `%(out)s` the folder), from `folder`; returns
    run_local_playbook's (exit code, output), the cells being in `folder`."""
    path = pathlib.Path(folder) / "cells.yml"
    path.write_text(playbook % {"root": ROOT, "out": folder})
    return run_local_playbook(path)

# The engines' client modules that a scripted interpreter answers with tests/scripted_process.py.
CLIENT_MODULES = ("vllm.entrypoints.cli.main", "vllm.entrypoints.cli.benchmark.main", "vllm.entrypoints.cli.serve",
                  "vllm.benchmarks.serve", "sglang.bench_serving", "sglang.benchmark.serving")


def scripted_python(folder, scenario, name="python"):
    """Write `folder/name`, an 'engine interpreter' that runs a scenario instead of the engine (see
    scripted_process.py), and return its path.

    Asked to run fleetopt's kept benchmark client, it runs the real client program, which then
    finds the engines' client modules as stand-ins that play the scenario.
    """
    folder = pathlib.Path(folder)
    modules = folder / (name + "-client-modules")
    for module in CLIENT_MODULES:
        parts = module.split(".")
        for depth in range(1, len(parts)):
            package = modules.joinpath(*parts[:depth])
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").touch()
        modules.joinpath(*parts[:-1], parts[-1] + ".py").write_text(
            "import sys\nimport scripted_process\n\nscripted_process.imported(%r, __name__)\n"
            "if __name__ == '__main__':\n    scripted_process.run(%r, sys.argv[1:])\n" % (scenario, scenario))
    path = folder / name
    path.write_text(
        "#!/bin/sh\n"
        "case \"$1\" in *fleetopt_bench_client.py) PYTHONPATH=%s:%s exec %s \"$@\";; esac\n"
        "exec %s %s %s \"$@\"\n" % (
            modules, ROOT / "tests", sys.executable,
            sys.executable, ROOT / "tests" / "scripted_process.py", _shell_quote(json.dumps(scenario))))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _shell_quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def module_documentation(module):
    """A module's DOCUMENTATION as ansible-doc shows it: its options with those of the doc fragments it
    extends (plugins/doc_fragments; a fragment `name.var` is the fragment's VAR text), its own keys of an option
    winning over the fragment's, as Ansible merges them (an option's `required: true` keeps its description)."""
    import importlib
    import yaml
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = {}
    for slug in doc.pop("extends_documentation_fragment", []):
        assert slug.startswith("fleetopt.campaign."), slug
        name, _, var = slug[len("fleetopt.campaign."):].partition(".")
        fragment = importlib.import_module("ansible_collections.fleetopt.campaign.plugins.doc_fragments." + name)
        options.update(yaml.safe_load(getattr(fragment.ModuleDocFragment, (var or "documentation").upper()))["options"])
    for name, own in (doc.get("options") or {}).items():
        options[name] = dict(options.get(name) or {}, **own)
    doc["options"] = options
    return doc
