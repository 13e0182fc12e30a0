#!/usr/bin/env python3
"""What ansible-playbook itself burns while a module runs, and what a task costs in latency.

While a task runs, ansible-playbook's main process waits for its worker by polling, sleeping
`internal_poll_interval` between checks. Under the free strategy that optimize.yml's fleet play uses,
each check walks the hosts (ansible/plugins/strategy/free.py); at Ansible's default, 0.001 s, that keeps
about a fifth of a core busy for the whole wait (py-spy on a campaign's ansible-playbook: 21 %). On the
embedded default the controller is the measured host, so during every benchmark run that CPU is taken
from the engine and its client.

Runs, under the checkout's ansible.cfg and under the same file with Ansible's default interval (the
reference, measured in the same run):
- a play whose one task sleeps --seconds: the CPU seconds of ansible-playbook's processes per second
  of waiting (the same play with a task that returns at once is subtracted: start-up and teardown);
- a play of --tasks tasks that return at once: wall time per task, which a longer interval raises
  (each task's result is noticed up to one interval later).

    .venv/bin/python tests/benchmarks/controller_poll_cpu.py [--seconds 20] [--tasks 60] [--repeat 2]
"""
import argparse
import configparser
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
ANSIBLE_DEFAULT = 0.001

PLAY = """- name: Wait on one task, then run quick ones
  hosts: localhost
  connection: local
  gather_facts: false
  strategy: ansible.builtin.free
  tasks:
    - name: Sleep
      ansible.builtin.command: sleep {{ seconds }}
      changed_when: false
%s"""
QUICK_TASK = """    - name: Quick task %d
      ansible.builtin.debug:
        msg: quick
        verbosity: 3
"""


def write_play(folder, tasks):
    path = folder / ("play-%d.yml" % tasks)
    path.write_text(PLAY % "".join(QUICK_TASK % i for i in range(tasks)))
    return path


def checkout_config():
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ROOT / "ansible.cfg")
    return parser


def config_with(interval, folder):
    """The checkout's ansible.cfg with internal_poll_interval set (None: Ansible's default)."""
    parser = checkout_config()
    if interval is None:
        parser.remove_option("defaults", "internal_poll_interval")
    else:
        parser.set("defaults", "internal_poll_interval", str(interval))
    # Paths in the file are relative to the checkout: keep them so.
    for key in ("inventory", "roles_path", "collections_path"):
        if parser.has_option("defaults", key):
            parser.set("defaults", key, ":".join(
                p if p.startswith(("/", "~")) else str(ROOT / p) for p in parser.get("defaults", key).split(":")))
    path = folder / ("ansible-%s.cfg" % ("default" if interval is None else interval))
    with path.open("w") as handle:
        parser.write(handle)
    return path


def run(config, playbook, **extra):
    """CPU seconds of ansible-playbook and its children, and wall seconds, for one run."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(config))
    args = [str(pathlib.Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", str(playbook),
            "-e", "ansible_python_interpreter=%s" % sys.executable]
    for key, value in extra.items():
        args += ["-e", "%s=%s" % (key, value)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    subprocess.run(args, cwd=str(ROOT), env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def measure(config, folder, seconds, tasks, repeat):
    bare, many = write_play(folder, 0), write_play(folder, tasks)
    waiting, per_task = [], []
    for _ in range(repeat):
        cpu_wait, _ = run(config, bare, seconds=seconds)
        cpu_none, wall_none = run(config, bare, seconds=0)
        waiting.append((cpu_wait - cpu_none) / seconds)
        _, wall_many = run(config, many, seconds=0)
        per_task.append((wall_many - wall_none) / tasks)
    return statistics.median(waiting), statistics.median(per_task)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=20, help="how long the waited-on task sleeps")
    parser.add_argument("--tasks", type=int, default=60, help="quick tasks in the latency play")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement (medians are printed)")
    args = parser.parse_args()
    folder = pathlib.Path(tempfile.mkdtemp(prefix="fleetopt-poll-"))
    ours = checkout_config().getfloat("defaults", "internal_poll_interval", fallback=ANSIBLE_DEFAULT)
    print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    results = {}
    for name, interval in (("Ansible's default", None), ("this checkout", ours)):
        cpu, latency = measure(config_with(interval, folder), folder, args.seconds, args.tasks, args.repeat)
        results[name] = (cpu, latency)
        print("%-18s internal_poll_interval %-6s: %.3f CPU s per s waited, %.1f ms per quick task" % (
            name, ANSIBLE_DEFAULT if interval is None else interval, cpu, latency * 1000), flush=True)
    (ref_cpu, ref_latency), (cpu, latency) = results["Ansible's default"], results["this checkout"]
    print("CPU while waiting: %.2fx Ansible's default; time per quick task: %+.1f ms" % (
        cpu / ref_cpu if ref_cpu > 0 else float("nan"), (latency - ref_latency) * 1000))
    print("load average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
