"""fleetopt_server's CPU placement: the server's whole session runs on the given CPUs, the launch records
what /proc says they are allowed, and a placement the host cannot give fails before anything starts."""
import os

import pytest

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_placement import format_cpu_list
from module_runner import run_module
from helpers import pid_gone
from test_server_module import READY

several_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a placement shows only on a host of 2 CPUs or more")


def usable():
    return sorted(os.sched_getaffinity(0))


@several_cpus
def test_the_server_and_every_process_it_starts_run_on_its_cpus(scripted_python, server_args, port):
    cpu, other = usable()[-1], usable()[0]
    python = scripted_python({"lines": READY, "serve_health_on": port, "spawn_child": True})
    started = run_module("fleetopt_server", server_args(python, cpus=str(cpu), client_cpus=[other]))
    try:
        placement = started["server"]["placement"]
        assert started["server"]["status"] == "ready"
        assert placement["requested"] == str(cpu) and placement["read_at"] == "ready"
        assert placement["server"] == str(cpu)
        # The supervisor, the server and the child the server started.
        assert len(placement["processes"]) == 3
        assert {process["cpus"] for process in placement["processes"]} == {str(cpu)}
        assert started["server"]["pid"] in [process["pid"] for process in placement["processes"]]
        # The same placement keeps the server; another one restarts it there.
        again = run_module("fleetopt_server", server_args(python, cpus=[cpu]))
        assert again["changed"] is False and again["server"]["pid"] == started["server"]["pid"]
        moved = run_module("fleetopt_server", server_args(python, cpus=[other]))
        assert moved["changed"] is True and moved["server"]["pid"] != started["server"]["pid"]
        assert moved["server"]["placement"]["server"] == str(other)
    finally:
        stopped = run_module("fleetopt_server", server_args(python, state="stopped"))
    assert stopped["server"]["stop"]["complete"] is True
    assert pid_gone(started["server"]["pid"])


def test_without_cpus_the_launch_records_where_the_server_may_run(scripted_python, server_args, port):
    python = scripted_python({"lines": READY, "serve_health_on": port})
    started = run_module("fleetopt_server", server_args(python))
    try:
        placement = started["server"]["placement"]
        assert placement["requested"] is None
        assert placement["server"] == format_cpu_list(usable())
    finally:
        run_module("fleetopt_server", server_args(python, state="stopped"))


@pytest.mark.parametrize("cpus, client_cpus, words", [
    ("0-", None, "server_cpus: '0-' is not a CPU number"),
    ([4096], None, "server_cpus: CPU 4096 not available on this host"),
    ("0", "0", "share CPU 0"),
])
def test_a_placement_the_host_cannot_give_fails_before_anything_starts(scripted_python, server_args, tmp_path, cpus,
                                                                       client_cpus, words):
    python = scripted_python({"lines": READY})
    result = run_module("fleetopt_server", server_args(python, cpus=cpus, client_cpus=client_cpus))
    assert result["failed"] is True
    assert words in result["msg"] and "nothing was launched" in result["msg"]
    assert result["server"]["failure"]["failure_class"] == "launch_failed"
    assert not (tmp_path / "logs" / "server.log").exists()


def test_checked_only_checks_the_placement(server_args, tmp_path):
    run_dir = tmp_path / "checked-run"
    checked = run_module("fleetopt_server", dict(name="t", state="checked", port=1, run_dir=str(run_dir),
                                                 cpus=[usable()[0]], client_cpus=None))
    assert checked["changed"] is False
    assert checked["placement"] == {"server": str(usable()[0]), "client": None,
                                    "usable": format_cpu_list(usable())}
    assert not run_dir.exists()
    refused = run_module("fleetopt_server", dict(name="t", state="checked", port=1, run_dir=str(run_dir),
                                                 cpus="1-0", client_cpus="a"))
    assert refused["failed"] is True
    assert "server_cpus: the range '1-0' runs backwards" in refused["msg"]
    assert "client_cpus: 'a' is not a CPU number" in refused["msg"]
