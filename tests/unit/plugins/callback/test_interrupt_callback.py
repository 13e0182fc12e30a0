"""On Ctrl-C, the callback fleetopt_interrupt (plugins/callback/fleetopt_interrupt.py) says which servers still run
where, when their lease stops them and how to stop them now; it follows fleetopt_server's results to know them, and
then hands the interrupt on, so Ansible still ends the run."""
import importlib.util
import signal
import types

import pytest

from helpers import ROOT

spec = importlib.util.spec_from_file_location("fleetopt_interrupt", ROOT / "plugins" / "callback" / "fleetopt_interrupt.py")
plugin = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plugin)


class Host(object):
    def __init__(self, name):
        self.name = name

    def get_name(self):
        return self.name


def result(host, action, args, server):
    task = types.SimpleNamespace(action=action, args=args)
    return types.SimpleNamespace(_task=task, _host=Host(host), _result={"server": server})


@pytest.fixture
def callback():
    before = signal.getsignal(signal.SIGINT)
    handed_on = []
    signal.signal(signal.SIGINT, lambda signum, frame: handed_on.append(signum))
    made = plugin.CallbackModule()
    made.shown = []
    made._display = types.SimpleNamespace(display=lambda text, stderr=False: made.shown.append(text))
    made.handed_on = handed_on
    yield made
    signal.signal(signal.SIGINT, before)


def started(callback, host, name, lease_s=0, status="ready", action="fleetopt.campaign.fleetopt_server"):
    callback.v2_runner_on_ok(result(host, action, {"name": name, "lease_s": lease_s},
                                    {"status": status, "pid": 4242, "port": 8000}))


def test_a_started_server_is_named_with_its_lease_and_the_command_that_stops_them(callback):
    started(callback, "gpu1", "torch_compile", lease_s=600)
    started(callback, "gpu2", "baseline")
    message = callback.message()
    assert "gpu1: torch_compile, pid 4242, port 8000 (its lease stops it by" in message
    assert "gpu2: baseline, pid 4242, port 8000 (no lease: it runs until stopped)" in message
    assert "playbooks/stop_servers.yml" in message and "resumes the campaign" in message


def test_a_stopped_or_crashed_server_is_forgotten_and_an_unhealthy_one_kept(callback):
    started(callback, "gpu1", "a")
    callback.v2_runner_on_ok(result("gpu1", "fleetopt_server", {"name": "a", "state": "stopped"}, {"status": "stopped"}))
    started(callback, "gpu1", "b")
    callback.v2_runner_on_failed(result("gpu1", "fleetopt_server", {"name": "b"}, {"status": "crashed"}))
    started(callback, "gpu1", "c")
    callback.v2_runner_on_failed(result("gpu1", "fleetopt_server", {"name": "c", "state": "stopped"},
                                        {"status": "unhealthy"}))
    assert set(callback.running) == {("gpu1", "c")}


def test_other_modules_results_are_not_servers(callback):
    started(callback, "gpu1", "x", action="fleetopt.campaign.fleetopt_bench")
    assert callback.running == {}


def test_the_interrupt_says_what_runs_then_is_handed_on(callback):
    started(callback, "gpu1", "baseline", lease_s=60)
    callback.interrupted(signal.SIGINT, None)
    assert len(callback.shown) == 1 and "gpu1: baseline" in callback.shown[0]
    assert callback.handed_on == [signal.SIGINT]


def test_with_nothing_running_the_interrupt_says_nothing(callback):
    callback.interrupted(signal.SIGINT, None)
    assert callback.shown == [] and callback.handed_on == [signal.SIGINT]
