"""A module interrupted while it starts its kept client still stops that client (module_utils/fleetopt_kept_client.py):
a SIGTERM can arrive after the client's process exists and before the module has noted its pid."""
import os
import signal
import subprocess
import sys
import threading
import time

from ansible_collections.fleetopt.campaign.plugins.module_utils import fleetopt_kept_client
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_kept_client import ClientGuard, KeptClient
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import session_pids

TERMINATION = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def params(tmp_path):
    return {"python": sys.executable, "client_dir": str(tmp_path / "client"), "client_idle_s": 60,
            "result_dir": str(tmp_path), "name": "v"}


def test_an_interrupt_that_lands_while_the_client_starts_still_stops_the_client(tmp_path, monkeypatch):
    real_popen, started = subprocess.Popen, []

    def popen_then_interrupted(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc)
        os.kill(os.getpid(), signal.SIGTERM)  # before start() has noted the client's pid
        time.sleep(0.2)
        return proc

    monkeypatch.setattr(fleetopt_kept_client.subprocess, "Popen", popen_then_interrupted)
    handlers = {signum: signal.getsignal(signum) for signum in TERMINATION}
    # A thread beside the main one, as the module's power sampler runs on a GPU host: the kernel may hand it the
    # signal, so blocking signals in the main thread alone would not hold the interrupt back.
    done = threading.Event()
    beside = threading.Thread(target=done.wait, daemon=True)
    beside.start()
    try:
        guard = ClientGuard()
        guard.client = KeptClient(params(tmp_path), {})
        try:
            guard.client.start(dict(os.environ))
        except SystemExit as stopped:
            assert stopped.code == 128 + signal.SIGTERM
        else:
            raise AssertionError("the interrupt was lost")
    finally:
        done.set()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        leftover = started[0].pid
        alive = session_pids(leftover)
        if alive:
            os.killpg(leftover, signal.SIGKILL)
        started[0].wait()
    assert not alive, "the client outlived the module that was interrupted while starting it"


def test_the_client_starts_with_the_termination_signals_unblocked(tmp_path):
    client = KeptClient(params(tmp_path), {})
    client.start(dict(os.environ))
    try:
        deadline = time.time() + 20
        blocked = None
        while time.time() < deadline and blocked is None:
            with open("/proc/%d/status" % client.pid) as status:
                found = [line.split()[1] for line in status if line.startswith("SigBlk:")]
            if found and "fleetopt_bench_client" in open("/proc/%d/cmdline" % client.pid).read():
                blocked = int(found[0], 16)
            time.sleep(0.05)
        assert blocked is not None
        assert not any(blocked & (1 << (signum - 1)) for signum in TERMINATION), hex(blocked)
        assert not set(TERMINATION) & signal.pthread_sigmask(signal.SIG_BLOCK, []), "start() left them blocked here"
    finally:
        client.kill()
