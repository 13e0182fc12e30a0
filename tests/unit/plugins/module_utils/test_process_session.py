"""fleetopt_process.start_session: a program started as the leader of a session of its own, fed
its input and writing to a private log, as fleetopt_server starts each server's supervisor."""
import os
import stat
import sys

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_process import start_session

PROGRAM = "import os, sys; print(os.getsid(0) == os.getpid(), os.getppid()); print(sys.stdin.read()); sys.stderr.write('err')"


def test_the_program_leads_a_new_session_reads_its_input_and_writes_a_private_log(tmp_path):
    log = tmp_path / "supervisor.log"
    log.write_text("an earlier launch\n")
    proc = start_session([sys.executable, "-c", PROGRAM], b'{"argv": ["x"]}', str(log))
    assert proc.wait(timeout=30) == 0
    leader, parent = log.read_text().split("\n", 1)[0].split()
    assert leader == "True" and int(parent) == os.getpid()
    assert log.read_text().split("\n")[1:] == ['{"argv": ["x"]}', "err"]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
