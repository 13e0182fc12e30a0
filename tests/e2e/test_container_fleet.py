"""A fleet over real connections: the two podman containers of inventory/containers as fleet
hosts, reached through containers.podman.podman, each running its engine on the same port in its
own network namespace, the modules on the image's own Python.

The tests share one fleet (set up here from scratch: podman, the base image, the containers;
removed at the end). In file order:
  1. the fleet itself: idempotent, pinned, isolated; modules on the image's Python;
  2. one real campaign, the real engine in each container: every module runs there through
     `podman exec`, and each cell is measured inside its own container, its logs left there;
  3. fleetopt's orchestration over the fleet, on the scripted engine inside the containers
     (tests/scripted_engine run by the mounted engine's Python; vLLM's benchmark client stays real):
     a. `fleetopt run` of ct-fleet is interrupted (SIGINT) once both baselines are measured;
     b. `ansible-playbook` resumes ct-fleet: it measures only the rest, one variant per host;
     c. a campaign's controller and connections are killed during start-up: stop_servers.yml stops
        one container's server, the other's is stopped by its lease;
     d. ct-fleet resumed with one more variant: a host is lost mid-benchmark, the other finishes;
     e. the lost host, unreachable from the start of a new campaign: its share becomes cells.
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
from e2e.conftest import FEW_PROMPTS, fast_start_settings, fleetopt_command, record_real_startups
from helpers import ROOT

ONLY = "float32_compute"  # the cheapest variants: no compilation
# Cheap variants that keep the host's OpenMP binding, in catalog order: host 1 takes the first, host 2 the second.
SPREAD = ("float32_compute", "small_prefill_chunks")
MORE = ("float32_compute", "prefix_caching_off", "small_prefill_chunks")  # host 1: float32, small; host 2: prefix
# Each container has one core for vLLM's imports: the fast start saves one of three.
SHORT = dict(FEW_PROMPTS, **fast_start_settings("containers"), campaign_bench_concurrency=[1], campaign_bench_trials=1,
             campaign_launches=1, campaign_aa=False)
# The scripted engine's start-up lasts long enough to be interrupted in; a request of 64 tokens takes about 1.3 s, so
# a benchmark lasts long enough to lose its host in.
SCENARIO = {"startup_s": 8, "ttft_s": 0.02, "per_token_s": 0.02}
STATE_FILE = "%s/run/vllm-%d.json" % (STATE_DIR, PORT)
STATUS_FILE = "%s/run/vllm-%d.status" % (STATE_DIR, PORT)
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
def scripted(fleet):
    """The campaign settings that put the scripted engine in place of each container's engine."""
    pythons = {fleet_.install_scripted_engine(host, SCENARIO) for host in HOSTS}
    assert len(pythons) == 1
    return dict(SHORT, campaign_engine_python=pythons.pop())


def fleetopt_run(workdir, campaign_id, settings, *args):
    return fleetopt_command() + ["run", "-i", str(INVENTORY), "--campaign-id", campaign_id,
                                 "--results", str(workdir / "results"), "--artifacts", str(workdir / "artifacts"),
                                 "-e", json.dumps(settings)] + list(args)


def cell(workdir, campaign_id, host, variant):
    return json.loads((workdir / "results" / campaign_id / "cells" / host / ("%s.json" % variant)).read_text())


def no_server_in(host):
    return fleet_.engine_processes(host) == [] and fleet_.listening(host) == []


def assert_measured_inside_each_container(results, campaign_id, expected, python):
    """The campaign's matrix is `expected` ((host, variant) pairs), every cell ok and measured inside its own container
    by a server `python` ran, each variant compared with its own host's baseline; its logs and raw output stay on the
    host; no server is left. Returns the summary's rows."""
    summary = json.loads((results / "summary.json").read_text())
    measured = {(row["host"], row["variant"]): row for row in summary["cells"]}
    assert set(measured) == set(expected), sorted(measured)
    assert all(row["status"] == "ok" for row in measured.values()), measured
    for host, variant in measured:
        if variant != "baseline":
            assert measured[(host, variant)]["vs_baseline"] is not None  # compared with its own host's baseline
    assert (results / "report.md").exists()
    for host, variant in measured:
        result = json.loads((results / "cells" / host / ("%s.json" % variant)).read_text())
        assert result["provenance"]["host"]["hostname"] == host  # measured inside that container
        argv = result["launch"]["argv"]
        assert argv[0] == python, argv
        assert argv[argv.index("--host") + 1] == "127.0.0.1" and argv[argv.index("--port") + 1] == str(PORT)
        assert result["launch"]["env"]["VLLM_CPU_OMP_THREADS_BIND"] == CORES[host]
        # The server log and the raw benchmark output stay on the host that made them.
        logs = host_dir(campaign_id, host)
        assert result["startup"]["log_path"] == "%s/%s.log" % (logs, variant)
        assert fleet_.exists(host, result["startup"]["log_path"])
        raw = fleet_.in_host(host, "ls", logs + "/bench").split()
        assert "%s-c1-t1.out" % variant in raw, raw
    for host in HOSTS:
        assert no_server_in(host), fleet_.engine_processes(host)
        assert not fleet_.exists(host, STATE_FILE)
    return measured


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


@pytest.fixture(scope="module")
def real(fleet, workdir):
    """ct-real: the real engine in both containers (host 1: the baseline and ONLY, host 2: its baseline), run with
    `ansible-playbook`, verbose enough (-vvv) to show how each module reached its host."""
    rc, output = fleet_.ansible_playbook(
        "-i", INVENTORY, "optimize.yml", "-vvv", "-e", "only=%s" % ONLY, "-e", "campaign_id=ct-real",
        "-e", "campaign_results_dir=%s" % (workdir / "results"), "-e", json.dumps(SHORT))
    for host in HOSTS:  # one server log per start-up of the real engine in that container
        record_real_startups(len(fleet_.server_logs(host, "ct-real")), "the real engine in %s (ct-real)" % host)
    return {"rc": rc, "output": output, "dir": workdir / "results" / "ct-real"}


def test_a_real_campaign_runs_every_module_and_engine_inside_the_containers(real):
    assert real["rc"] == 0, real["output"][-5000:]
    # Every fleetopt module ran inside its container, through `podman exec`, with the image's Python.
    for host in HOSTS:
        for module in ("fleetopt_plan", "fleetopt_server", "fleetopt_bench"):
            shipped = r"RUN \[b'\S*podman', b'exec', b'%s', .*/usr/bin/python3 \S*/AnsiballZ_%s\.py" % (host, module)
            assert re.search(shipped, real["output"]), "%s did not run through podman exec on %s" % (module, host)
    # The variant goes to host 1 (host k of 2 takes every 2nd), each host has its own baseline.
    # ... by the real engine, the inventory's.
    assert_measured_inside_each_container(real["dir"], "ct-real", {
        (HOSTS[0], "baseline"), (HOSTS[0], ONLY), (HOSTS[1], "baseline")}, str(fleet_.ENGINE_PYTHON))


@pytest.fixture(scope="module")
def interrupted(scripted, workdir):
    """`fleetopt run` of ct-fleet, SIGINT once both baselines are measured and each host's
    variant server is up."""
    cells = workdir / "results" / "ct-fleet" / "cells"
    campaign = subprocess.Popen(fleetopt_run(workdir, "ct-fleet", scripted, "--only", ",".join(SPREAD)),
                                cwd=str(ROOT), env=fleet_.command_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    try:
        for host in HOSTS:
            fleet_.wait_for(lambda h=host: (cells / h / "baseline.json").exists(), 900, "the baseline of %s" % host)
        for host, variant in zip(HOSTS, SPREAD):
            fleet_.wait_for(lambda h=host, v=variant: fleet_.exists(h, "%s/%s.log" % (host_dir("ct-fleet", h), v))
                            and fleet_.engine_processes(h), 600, "the %s server on %s" % (variant, host))
        time.sleep(2)
        campaign.send_signal(signal.SIGINT)
        output = campaign.communicate(timeout=300)[0].decode("utf-8", "replace")
    finally:
        if campaign.poll() is None:
            campaign.kill()
    return {"rc": campaign.returncode, "output": output, "cells": cells,
            "kept": sorted(str(p.relative_to(cells)) for p in cells.glob("*/*.json")),
            "baselines": {host: cell(workdir, "ct-fleet", host, "baseline") for host in HOSTS},
            "launches": {host: len(fleet_.scripted_launches(host)) for host in HOSTS}}


@pytest.fixture(scope="module")
def campaign(interrupted, scripted, workdir):
    """ct-fleet resumed with `ansible-playbook`."""
    rc, output = fleet_.ansible_playbook(
        "-i", INVENTORY, "optimize.yml", "-e", "only=%s" % ",".join(SPREAD), "-e", "campaign_id=ct-fleet",
        "-e", "campaign_results_dir=%s" % (workdir / "results"), "-e", json.dumps(scripted))
    return {"rc": rc, "output": output, "dir": workdir / "results" / "ct-fleet",
            "launches": {host: len(fleet_.scripted_launches(host)) for host in HOSTS}}


def test_sigint_stops_every_server_in_every_container_and_keeps_finished_cells(interrupted):
    output = interrupted["output"]
    assert interrupted["rc"] == 130, output[-3000:]
    # Both baselines are kept; a host whose variant run ended in the moments the stop took keeps that cell too.
    kept = interrupted["kept"]
    assert "interrupted; servers stopped; %d finished cell(s) kept" % len(kept) in output, output[-3000:]
    assert {"%s/baseline.json" % host for host in HOSTS} <= set(kept) and len(kept) <= 3, kept
    # The scripted engine served both: a baseline and a variant started in each container.
    assert all(count == 2 for count in interrupted["launches"].values()), interrupted["launches"]
    # No Ansible worker of the cancelled run survives to start a server again after the stop.
    assert fleet_.playbooks_on(INVENTORY) == []
    for host in HOSTS:
        assert no_server_in(host), (host, fleet_.engine_processes(host))
    time.sleep(20)  # longer than one slice of following a start-up
    for host in HOSTS:
        assert no_server_in(host), (host, fleet_.engine_processes(host))
        assert interrupted["baselines"][host]["status"] == "ok"


def test_the_resumed_campaign_measures_only_the_rest_and_merges_into_one_matrix(campaign, interrupted, scripted,
                                                                                workdir):
    assert campaign["rc"] == 0, campaign["output"][-5000:]
    # The variants are spread (host k of 2 takes every 2nd), each host has its own baseline.
    assert_measured_inside_each_container(campaign["dir"], "ct-fleet", {
        (HOSTS[0], "baseline"), (HOSTS[0], SPREAD[0]), (HOSTS[1], "baseline"), (HOSTS[1], SPREAD[1])},
        scripted["campaign_engine_python"])
    for host, variant in zip(HOSTS, SPREAD):
        # Measured before the interrupt and kept, not measured again: the resume starts only the unfinished variant.
        assert cell(workdir, "ct-fleet", host, "baseline") == interrupted["baselines"][host]
        unfinished = 0 if "%s/%s.json" % (host, variant) in interrupted["kept"] else 1
        assert campaign["launches"][host] - interrupted["launches"][host] == unfinished, (host, campaign["launches"])


def test_servers_left_by_a_lost_controller_stop_by_stop_servers_or_by_their_lease(scripted, workdir):
    # The controller and its connections die at once (ansible-playbook, its workers and their
    # `podman exec` clients): a server starting in each container is left behind.
    lease_s = 30
    playbook = subprocess.Popen(
        [str(fleet_.venv_bin() / "ansible-playbook"), "-i", str(INVENTORY), "optimize.yml", "-e", "only=%s" % ONLY,
         "-e", "campaign_id=ct-left", "-e", "campaign_results_dir=%s" % (workdir / "results"),
         "-e", json.dumps(scripted), "-e", "campaign_lease_s=%d" % lease_s],
        cwd=str(ROOT), env=fleet_.command_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        for host in HOSTS:
            fleet_.wait_for(lambda h=host: fleet_.exists(h, STATE_FILE), 600, "a server on %s" % host)
    finally:
        fleet_.kill_tree(playbook.pid)
        playbook.wait()
    cut_at = time.time()
    for host in HOSTS:
        # A module run already inside the container goes on to its end (`podman exec` sends no
        # hang-up): at most one 15 s slice of following the start-up.
        fleet_.wait_for(lambda h=host: not fleet_.modules_in_flight(h), 120, "the module runs on %s to end" % host)
        assert fleet_.engine_processes(host), "no server was left on %s" % host

    # The operator stops one container's server at once ...
    rc, output = fleet_.ansible_playbook("-i", INVENTORY, "playbooks/stop_servers.yml", "--limit", HOSTS[1])
    assert rc == 0, output[-3000:]
    assert no_server_in(HOSTS[1]), fleet_.engine_processes(HOSTS[1])
    assert not fleet_.exists(HOSTS[1], STATE_FILE)
    # ... and nobody renews the other's lease: its watchdog stops it, inside the container, and says why.
    fleet_.wait_for(lambda: no_server_in(HOSTS[0]), lease_s + 120, "the lease to stop the server on %s" % HOSTS[0],
                    interval=2)
    status = json.loads(fleet_.in_host(HOSTS[0], "cat", STATUS_FILE))  # the watchdog's own record
    assert status["stopped_by"] == "lease", status
    # Renewed last by the module run that outlived the cut (at most a 15 s slice), then run out.
    assert status["lease_expired_at"] >= cut_at + lease_s - 16, (status["lease_expired_at"], cut_at)
    assert json.loads(fleet_.in_host(HOSTS[0], "cat", STATE_FILE))["label"]["campaign"] == "ct-left"


def test_a_host_lost_mid_benchmark_is_a_cell_and_the_other_host_finishes(campaign, scripted, workdir):
    # ct-fleet with one more variant: host 1 keeps its baseline and float32_compute and measures
    # small_prefill_chunks; host 2 keeps its baseline and measures prefix_caching_off.
    lost, other = HOSTS
    measured = SPREAD[1]
    raw = "%s/bench/%s-c1-t1.out" % (host_dir("ct-fleet", lost), measured)
    campaign_run = subprocess.Popen(fleetopt_run(workdir, "ct-fleet", scripted, "--only", ",".join(MORE)),
                                    cwd=str(ROOT), env=fleet_.command_env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT)
    try:
        fleet_.wait_for(lambda: fleet_.exists(lost, raw), 1200, "the benchmark of %s on %s" % (measured, lost), interval=0.2)
        fleet_.kill(lost)
        output = campaign_run.communicate(timeout=900)[0].decode("utf-8", "replace")
    finally:
        if campaign_run.poll() is None:
            campaign_run.kill()
    assert campaign_run.returncode == 1, output[-3000:]
    summary = json.loads((workdir / "results" / "ct-fleet" / "summary.json").read_text())
    rows = {(row["host"], row["variant"]): row for row in summary["cells"]}
    assert rows[(other, MORE[1])]["status"] == "ok", rows
    assert rows[(lost, "baseline")]["status"] == "ok" and rows[(lost, SPREAD[0])]["status"] == "ok"
    assert (workdir / "results" / "ct-fleet" / "report.md").exists()
    gone = cell(workdir, "ct-fleet", lost, measured)
    assert gone["status"] != "ok" and HOST_GONE.search(gone["reason"] or ""), gone


def test_a_host_unreachable_from_the_start_has_its_share_as_cells(scripted, workdir):
    gone = HOSTS[0]
    if fleet_.running(gone):  # lost in the test before; stopped here when that test did not run
        fleet_.stop(gone)
    try:
        proc = subprocess.run(fleetopt_run(workdir, "ct-gone", scripted, "--only", ONLY), cwd=str(ROOT),
                              env=fleet_.command_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    finally:
        fleet_.up()
    output = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 1, output[-3000:]
    assert "unreachable host(s): %s" % gone in output
    assert (workdir / "results" / "ct-gone" / "report.md").exists()
    summary = json.loads((workdir / "results" / "ct-gone" / "summary.json").read_text())
    # Its share (its own baseline and every 2nd optimization) is in the matrix, with the reason.
    assert {(r["host"], r["variant"], r["status"]) for r in summary["cells"]} == {
        (HOSTS[1], "baseline", "ok"), (gone, "baseline", "skipped"), (gone, ONLY, "skipped")}, summary["cells"]
    for variant in ("baseline", ONLY):
        result = cell(workdir, "ct-gone", gone, variant)
        assert result["reason"].startswith("not run: host unreachable:"), result["reason"]
