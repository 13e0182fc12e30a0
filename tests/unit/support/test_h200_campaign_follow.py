"""tests/device/h200/campaign.sh follow: it follows a running campaign for the seconds it is given.

A device command holds the machine only while it runs, and the machine keeps /tmp about 30 s after it, so a follow that
returns at once loses the campaign, and one that outlives the command's 10 minutes loses what it would have collected.
"""
import os
import pathlib
import subprocess
import time

from helpers import ROOT

SCRIPT = ROOT / "tests" / "device" / "h200" / "campaign.sh"


def test_follow_waits_for_a_running_campaign_until_its_seconds_are_up(tmp_path):
    root = tmp_path / "h200"
    root.mkdir()
    campaign = subprocess.Popen(["sleep", "60"])
    try:
        (root / "play.pid").write_text("%d\n" % campaign.pid)
        (root / "play.log").write_text("PLAY [Run the baseline and every variant] ***\n")
        started = time.monotonic()
        # follow N stops N - 25 s after it starts, leaving the rest of the command's time to collect the results.
        done = subprocess.run(["bash", str(SCRIPT), "follow", "29"], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, FLEETOPT_H200_ROOT=str(root), OUT=str(tmp_path / "out")))
        waited = time.monotonic() - started
    finally:
        campaign.kill()
        campaign.wait()
    assert done.returncode == 0, done.stderr
    assert "PLAY [Run the baseline and every variant]" in done.stdout
    assert "still running; follow again" in done.stdout
    assert waited >= 4.0, "follow returned after %.1f s of the 4 s it was given" % waited
    assert (pathlib.Path(tmp_path / "out" / "play.log")).read_text().startswith("PLAY")


def ended_campaign(tmp_path, log="PLAY RECAP ***\n"):
    root = tmp_path / "h200"
    root.mkdir()
    (root / "play.pid").write_text("999999999\n")
    (root / "play.log").write_text(log)
    return root


def follow(tmp_path, root):
    return subprocess.run(["bash", str(SCRIPT), "follow", "500"], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, FLEETOPT_H200_ROOT=str(root), OUT=str(tmp_path / "out")))


def test_follow_returns_once_the_campaign_has_ended(tmp_path):
    done = follow(tmp_path, ended_campaign(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "PLAY RECAP" in done.stdout and "campaign ended" in done.stdout


def test_follow_collects_the_campaign_the_last_start_named(tmp_path):
    root = ended_campaign(tmp_path)
    for campaign in ("h200", "h200t3"):
        (root / "checkout" / "results" / campaign).mkdir(parents=True)
        (root / "checkout" / "results" / campaign / "report.md").write_text(campaign)
    (root / "campaign").write_text("h200t3\n")
    done = follow(tmp_path, root)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run(["tar", "-tzf", str(tmp_path / "out" / "results.tar.gz")], capture_output=True, text=True,
                            check=True).stdout.split()
    assert "h200t3/report.md" in listed and not any(name.startswith("h200/") for name in listed), listed


def test_follow_reads_a_play_log_that_a_new_start_began_anew(tmp_path):
    root = ended_campaign(tmp_path, log="PLAY [Report the campaign] ***\n")
    (root / "follow.offset").write_text("100000\n")
    done = follow(tmp_path, root)
    assert done.returncode == 0, done.stderr
    assert "PLAY [Report the campaign]" in done.stdout
