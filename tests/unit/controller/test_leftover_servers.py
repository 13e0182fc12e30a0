"""A server left by an interrupted run (stopped by its lease, dead, or still running) is recorded by
the next campaign that finds it (results/<id>/leftovers/<host>/<found>.json, written by the campaign
role's plan.yml), and summary.json, report.md and report.html say per host and cell what happened to
it and whether its cell was measured again."""
import json

from fleetopt.report import html_report
from fleetopt.analysis.summary import build_summary, load_cells
from test_report import cell, run, trials, write_campaign

FOUND_AT = "2026-01-01T10:05:00Z"


def record(host, cell_name, outcome="stopped_by_lease", campaign="c1", **extra):
    variant, _, launch = cell_name.partition(".launch")
    return dict({
        "schema": "fleetopt.leftover/1", "host": host, "found_by": "c1", "found_at": FOUND_AT,
        "campaign": campaign, "cell": cell_name, "variant": variant, "launch": int(launch or 1),
        "outcome": outcome, "at": "2026-01-01T10:00:00Z" if outcome == "stopped_by_lease" else None,
        "failure_class": "lease_expired" if outcome == "stopped_by_lease" else None,
        "root_cause": "Stopped by its lease at 2026-01-01 11:00:00: fleetopt did not renew it" if outcome == "stopped_by_lease"
        else None, "pid": 4242, "log_path": "/state/%s.log" % cell_name,
    }, **extra)


def write_leftover(campaign, rec):
    path = campaign / "leftovers" / rec["host"] / ("%s.json" % rec["found_at"].replace(":", ""))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec))


def measured(variant, order, at, host="h1", **extra):
    return dict(cell(variant, order, levels=trials(1, 100.0, 101.0, 99.0), host=host), measured_at=at, **extra)


def campaign_with_leftovers(tmp_path):
    cells = [
        measured("baseline", 0, "2026-01-01T09:50:00Z"),                 # kept from the interrupted run
        measured("float32_compute", 1, "2026-01-01T10:07:30Z"),          # measured again after the finding
        measured("baseline", 0, "2026-01-01T09:40:00Z", host="h2"),
        measured("float32_compute", 1, "2026-01-01T09:45:00Z", host="h2"),  # written before its server was left
        measured("baseline", 0, "2026-01-01T09:40:00Z", host="h3"),
    ]
    campaign = write_campaign(tmp_path, cells)
    write_leftover(campaign, record("h1", "float32_compute"))
    write_leftover(campaign, record("h2", "float32_compute", outcome="running"))
    write_leftover(campaign, record("h3", "float32_compute", outcome="died", failure_class="process_exited",
                                    root_cause="The server exited (exit code -9)"))
    write_leftover(campaign, record("h4", "baseline", campaign="nightly"))
    return campaign


def test_the_summary_says_per_host_and_cell_what_the_lease_stopped_and_what_was_measured_again(tmp_path):
    campaign = campaign_with_leftovers(tmp_path)
    assert run(campaign) == 0
    summary = json.loads((campaign / "summary.json").read_text())
    notes = {(n["host"], n["cell"]): n for n in summary["leftover_servers"]}
    assert set(notes) == {("h1", "float32_compute"), ("h2", "float32_compute"), ("h3", "float32_compute"),
                          ("h4", "baseline")}
    lease = notes[("h1", "float32_compute")]
    assert lease["stopped_by"] == "lease" and lease["at"] == "2026-01-01T10:00:00Z" and lease["campaign"] == "c1"
    assert lease["measured_again"] is True and lease["cell_status"] == "ok"
    assert lease["text"] == ("float32_compute on h1: stopped by its lease at 2026-01-01 10:00:00 UTC (nothing renewed "
                             "it: the controller went away); measured again when this campaign resumed (ok)")
    assert notes[("h2", "float32_compute")]["measured_again"] is False
    assert notes[("h2", "float32_compute")]["text"] == (
        "float32_compute on h2: was still running when this campaign started, and was stopped; "
        "its result had been written before and is kept")
    assert notes[("h3", "float32_compute")]["text"] == (
        "float32_compute on h3: had stopped on its own (process_exited: The server exited (exit code -9)); "
        "not measured again yet: the campaign ended before it")
    other = notes[("h4", "baseline")]
    assert other["measured_again"] is None
    assert other["text"] == ("baseline of campaign nightly on h4: stopped by its lease at 2026-01-01 10:00:00 UTC "
                             "(nothing renewed it: the controller went away); noted only: it served campaign "
                             "nightly, which measures that cell when it is run again with its id")
    markdown = (campaign / "report.md").read_text()
    assert "## Servers left by an interrupted run" in markdown
    assert "- %s" % lease["text"] in markdown and "- %s" % other["text"] in markdown


def test_the_html_report_lists_each_leftover_server_per_host_and_cell(tmp_path):
    campaign = campaign_with_leftovers(tmp_path)
    cells = load_cells(campaign)
    html = html_report.render_html(build_summary(campaign, cells), cells)
    assert '<section id="leftover-servers">' in html
    assert ('<li data-host="h1" data-cell="float32_compute">float32_compute on h1: stopped by its lease at '
            '2026-01-01 10:00:00 UTC') in html
    assert "measured again when this campaign resumed (ok)" in html


def test_a_campaign_without_leftover_servers_has_no_such_section(tmp_path):
    campaign = write_campaign(tmp_path, [measured("baseline", 0, "2026-01-01T09:50:00Z")])
    assert run(campaign) == 0
    assert json.loads((campaign / "summary.json").read_text())["leftover_servers"] == []
    assert "interrupted run" not in (campaign / "report.md").read_text()
    assert 'id="leftover-servers"' not in (campaign / "report.html").read_text()


def test_a_leftover_of_unknown_cell_and_an_unreadable_record_are_still_reported(tmp_path):
    campaign = write_campaign(tmp_path, [measured("baseline", 0, "2026-01-01T09:50:00Z")])
    write_leftover(campaign, record("h1", "baseline", campaign=None, cell=None, variant=None, launch=None))
    (campaign / "leftovers" / "h1" / "broken.json").write_text("{")
    assert run(campaign) == 0
    notes = json.loads((campaign / "summary.json").read_text())["leftover_servers"]
    assert [n["text"] for n in notes] == [
        "a server of an earlier run (its cell was not recorded) on h1: stopped by its lease at 2026-01-01 10:00:00 UTC "
        "(nothing renewed it: the controller went away)"]
