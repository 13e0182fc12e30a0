"""A fleet over real connections: the two podman containers of inventory/containers as fleet
hosts, reached through containers.podman.podman, each running its own real engine on the same
port in its own network namespace, the modules on the image's own Python.

The tests share one fleet (set up here from scratch: podman, the base image, the containers;
removed at the end) and one short campaign; the fault tests run their own short campaigns.
What runs inside a container is checked from inside it, through `podman exec`.
"""
import importlib
import json
import os
import re
import signal
import subprocess
import time

import pytest

from containers import container_fleet as fleet_
from containers.container_fleet import CORES, HOSTS, INVENTORY, PORT, STATE_DIR, host_dir
from e2e.conftest import fleetopt_command
from helpers import ROOT

ONLY = "float32_compute"  # the cheapest variant: no compilation
SHORT = {"campaign_bench_concurrency": [1], "campaign_bench_trials": 1}
STATE_FILE = "%s/run/vllm-%d.json" % (STATE_DIR, PORT)
# A host lost, or never there: the reason its cells give.
HOST_GONE = re.compile(r"unreachable|lost|connection|not running|container", re.I)


@pytest.fixture(scope="module")
def fleet(local_engine):
    fleet_.prepare_podman()
    fleet_.down()  # no state left from an earlier run
    output = fleet_.up()
    yield output
    fleet_.down()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("container-fleet")


@pytest.fixture(scope="module")
def campaign(fleet, workdir):
    """One short campaign over the fleet with `ansible-playbook`, verbose enough (-vvv) to show
    how each module reached its host."""
    started = time.time()
    rc, output = fleet_.ansible_playbook(
        "-i", INVENTORY, "optimize.yml", "-vvv", "-e", "only=%s" % ONLY, "-e", "campaign_id=ct-fleet",
        "-e", "campaign_results_dir=%s" % (workdir / "results"), "-e", json.dumps(SHORT))
    return {"rc": rc, "output": output, "dir": workdir / "results" / "ct-fleet", "wall_s": time.time() - started}


def fleetopt_run(workdir, campaign_id, *args):
    return fleetopt_command() + ["run", "-i", str(INVENTORY), "--campaign-id", campaign_id,
                                 "--results", str(workdir / "results"), "--artifacts", str(workdir / "artifacts"),
                                 "-e", json.dumps(SHORT)] + list(args)


def cell(workdir, campaign_id, host, variant):
    return json.loads((workdir / "results" / campaign_id / "cells" / host / ("%s.json" % variant)).read_text())


def no_server_in(host):
    return fleet_.engine_processes(host) == [] and fleet_.listening(host) == []


def test_the_fleet_is_idempotent_pinned_and_isolated(fleet):
    assert "changed=0" in fleet_.up().split("PLAY RECAP")[-1]  # a second run changes nothing
    namespaces = set()
    for host in HOSTS:
        assert fleet_.podman("inspect", "--format", "{{.HostConfig.CpusetCpus}}", host).strip() == CORES[host]
        affinity = fleet_.in_host(host, "/usr/bin/python3", "-c", "import os; print(sorted(os.sched_getaffinity(0)))")
        assert affinity.strip() == "[%s]" % CORES[host]
        namespaces.add(fleet_.in_host(host, "readlink", "/proc/self/ns/net").strip())
        # The engine is mounted read-only: a host cannot change the controller's copy.
        denied = subprocess.run(["podman", "exec", host, "touch", str(fleet_.ENGINE_PYTHON.parent / "x")],
                                stderr=subprocess.PIPE)
        assert denied.returncode != 0 and b"Read-only file system" in denied.stderr
    namespaces.add(os.readlink("/proc/self/ns/net"))
    assert len(namespaces) == 3, "each container has a network namespace of its own"


def test_modules_run_with_the_containers_own_python(fleet):
    env = fleet_.command_env()
    env.update(ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    proc = subprocess.run([str(fleet_.venv_bin() / "ansible"), "fleet", "-i", str(INVENTORY),
                           "-M", str(ROOT / "tests" / "containers" / "library"), "-m", "fleetopt_probe"],
                          cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    assert proc.returncode == 0, proc.stdout.decode()[-3000:] + proc.stderr.decode()[-2000:]
    results = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]
    assert set(results) == set(HOSTS)
    for host, probe in results.items():
        assert probe["executable"] == "/usr/bin/python3", probe
        assert probe["prefix"] == "/usr" and probe["version"][:2] == [3, 11]
        assert probe["hostname"] == host
        for name in ("ansible_runner", "yaml", "fleetopt"):
            assert probe["imports"][name].startswith("ModuleNotFoundError"), (host, name, probe["imports"][name])
            importlib.import_module(name)  # ... while the controller's venv has it
    for host in HOSTS:  # and the image's Python has no Ansible: modules arrive as self-contained payloads
        assert subprocess.run(["podman", "exec", host, "/usr/bin/python3", "-c", "import ansible"],
                              stderr=subprocess.DEVNULL).returncode != 0


def test_the_campaign_runs_on_the_containers_and_merges_into_one_matrix(campaign):
    assert campaign["rc"] == 0, campaign["output"][-5000:]
    output = campaign["output"]
    # Every fleetopt module ran inside its container, through `podman exec`, with the image's Python.
    for host in HOSTS:
        for module in ("fleetopt_plan", "fleetopt_server", "fleetopt_bench"):
            shipped = r"RUN \[b'\S*podman', b'exec', b'%s', .*/usr/bin/python3 \S*/AnsiballZ_%s\.py" % (host, module)
            assert re.search(shipped, output), "%s did not run through podman exec on %s" % (module, host)
    summary = json.loads((campaign["dir"] / "summary.json").read_text())
    measured = {(row["host"], row["variant"]): row for row in summary["cells"]}
    assert set(measured) == {("fleetopt-host-1", "baseline"), ("fleetopt-host-1", ONLY),
                             ("fleetopt-host-2", "baseline")}, sorted(measured)
    assert all(row["status"] == "ok" for row in measured.values()), measured
    assert (campaign["dir"] / "report.md").exists()
    for host, variant in measured:
        result = json.loads((campaign["dir"] / "cells" / host / ("%s.json" % variant)).read_text())
        assert result["provenance"]["host"]["hostname"] == host  # measured inside that container
        argv = result["launch"]["argv"]
        assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--port") + 1] == str(PORT)
        assert result["launch"]["env"]["VLLM_CPU_OMP_THREADS_BIND"] == CORES[host]
        # The server log and the raw benchmark output stay on the host that made them.
        logs = host_dir("ct-fleet", host)
        assert result["startup"]["log_path"] == "%s/%s.log" % (logs, variant)
        assert fleet_.exists(host, result["startup"]["log_path"])
        raw = fleet_.in_host(host, "ls", logs + "/bench").split()
        assert "%s-c1-t1.out" % variant in raw, raw
    for host in HOSTS:
        assert no_server_in(host), fleet_.engine_processes(host)
        assert not fleet_.exists(host, STATE_FILE)


def test_stop_servers_stops_servers_left_in_the_containers(fleet, workdir):
    # The controller dies (ansible-playbook and all it started, at once): a server starting in
    # each container is left behind.
    playbook = subprocess.Popen(
        [str(fleet_.venv_bin() / "ansible-playbook"), "-i", str(INVENTORY), "optimize.yml", "-e", "only=%s" % ONLY,
         "-e", "campaign_id=ct-left", "-e", "campaign_results_dir=%s" % (workdir / "results"), "-e", json.dumps(SHORT)],
        cwd=str(ROOT), env=fleet_.command_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        for host in HOSTS:
            fleet_.wait_for(lambda h=host: fleet_.exists(h, STATE_FILE), 600, "a server on %s" % host)
    finally:
        fleet_.kill_tree(playbook.pid)
        playbook.wait()
    for host in HOSTS:
        # A module run already inside the container goes on to its end (`podman exec` sends no
        # hang-up): at most one 15 s slice of following the start-up.
        fleet_.wait_for(lambda h=host: not fleet_.modules_in_flight(h), 120, "the module runs on %s to end" % host)
        assert fleet_.engine_processes(host), "no server was left on %s" % host

    rc, output = fleet_.ansible_playbook("-i", INVENTORY, "playbooks/stop_servers.yml")
    assert rc == 0, output[-3000:]
    for host in HOSTS:
        assert no_server_in(host), fleet_.engine_processes(host)
        assert not fleet_.exists(host, STATE_FILE)


def test_sigint_stops_every_server_in_every_container_and_keeps_finished_cells(fleet, workdir):
    cells = workdir / "results" / "ct-sigint" / "cells"
    # In catalog order: host 1 gets the baseline and async_scheduling, host 2 the baseline and float32_compute.
    campaign = subprocess.Popen(fleetopt_run(workdir, "ct-sigint", "--only", "float32_compute,async_scheduling"),
                                cwd=str(ROOT), env=fleet_.command_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    try:
        for host in HOSTS:
            fleet_.wait_for(lambda h=host: (cells / h / "baseline.json").exists(), 900, "the baseline of %s" % host)
        for host, variant in (("fleetopt-host-1", "async_scheduling"), ("fleetopt-host-2", "float32_compute")):
            fleet_.wait_for(lambda h=host, v=variant: fleet_.exists(h, "%s/%s.log" % (host_dir("ct-sigint", h), v))
                            and fleet_.engine_processes(h), 600, "the %s server on %s" % (variant, host))
        time.sleep(2)
        campaign.send_signal(signal.SIGINT)
        output = campaign.communicate(timeout=300)[0].decode("utf-8", "replace")
    finally:
        if campaign.poll() is None:
            campaign.kill()
    assert campaign.returncode == 130, output[-3000:]
    assert "interrupted; servers stopped; 2 finished cell(s) kept" in output, output[-3000:]
    # No Ansible worker of the cancelled run survives to start a server again after the stop.
    assert fleet_.playbooks_on(INVENTORY) == []
    for host in HOSTS:
        assert no_server_in(host), (host, fleet_.engine_processes(host))
    time.sleep(20)  # longer than one slice of following a start-up
    for host in HOSTS:
        assert no_server_in(host), (host, fleet_.engine_processes(host))
        assert cell(workdir, "ct-sigint", host, "baseline")["status"] == "ok"
    assert sorted(p.name for p in cells.glob("*/*.json")) == ["baseline.json", "baseline.json"]


def test_a_host_lost_mid_benchmark_is_a_cell_and_the_other_host_finishes(fleet, workdir):
    fleet_.up()
    lost = "fleetopt-host-1"  # the baseline, then float32_compute; fleetopt-host-2 runs its baseline only
    raw = "%s/bench/%s-c1-t1.out" % (host_dir("ct-lost", lost), ONLY)
    campaign = subprocess.Popen(fleetopt_run(workdir, "ct-lost", "--only", ONLY,
                                             "-e", "campaign_bench_min_prompts=300", "-e", "campaign_bench_output_len=128"),
                                cwd=str(ROOT), env=fleet_.command_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    try:
        fleet_.wait_for(lambda: fleet_.exists(lost, raw), 1500, "the benchmark of %s on %s" % (ONLY, lost))
        time.sleep(1)
        fleet_.kill(lost)
        output = campaign.communicate(timeout=900)[0].decode("utf-8", "replace")
    finally:
        if campaign.poll() is None:
            campaign.kill()
    assert campaign.returncode == 1, output[-3000:]
    summary = json.loads((workdir / "results" / "ct-lost" / "summary.json").read_text())
    rows = {(row["host"], row["variant"]): row for row in summary["cells"]}
    assert rows[("fleetopt-host-2", "baseline")]["status"] == "ok"
    assert rows[(lost, "baseline")]["status"] == "ok"
    assert (workdir / "results" / "ct-lost" / "report.md").exists()
    gone = cell(workdir, "ct-lost", lost, ONLY)
    assert gone["status"] != "ok" and HOST_GONE.search(gone["reason"] or ""), gone


def test_a_host_unreachable_from_the_start_has_its_share_as_cells(fleet, workdir):
    gone = "fleetopt-host-1"
    if fleet_.running(gone):
        fleet_.stop(gone)
    try:
        proc = subprocess.run(fleetopt_run(workdir, "ct-gone", "--only", ONLY), cwd=str(ROOT),
                              env=fleet_.command_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    finally:
        fleet_.up()
    output = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 1, output[-3000:]
    assert "unreachable host(s): %s" % gone in output
    assert cell(workdir, "ct-gone", "fleetopt-host-2", "baseline")["status"] == "ok"
    assert (workdir / "results" / "ct-gone" / "report.md").exists()
    for variant in ("baseline", ONLY):  # its share: its own baseline and every other optimization
        result = cell(workdir, "ct-gone", gone, variant)
        assert result["status"] != "ok" and HOST_GONE.search(result["reason"] or ""), result
    summary = json.loads((workdir / "results" / "ct-gone" / "summary.json").read_text())
    assert {(row["host"], row["variant"]) for row in summary["cells"]} >= {(gone, "baseline"), (gone, ONLY)}
