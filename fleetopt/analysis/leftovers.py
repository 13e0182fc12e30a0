"""Servers an interrupted run left behind, as the next campaign found them.

Before a host runs its variants, the campaign role stops whatever fleetopt server its slot still
records (plan.yml). When there was one (stopped by its lease since, dead on its own, or still
running) the role writes what it found to `leftovers/<host>/<found>.json`: the campaign and cell
the server served (its label), how it ended and when, and the root cause. One file per finding,
never rewritten, so a resumed campaign keeps the history of its interruptions.

Here each record becomes a note for summary.json and the reports, with whether the cell was
measured again: a cell of this campaign written after the finding was (the resume measured it),
one written before was kept, and no cell means the run ended before it. A server of another
campaign is only noted; that campaign measures its cell when it is run again with its id.
"""
import datetime

from fleetopt.analysis.launches import launch_number
from fleetopt.files import json_records

OUTCOMES = {
    "stopped_by_lease": "stopped by its lease at {at} (nothing renewed it: the controller went away)",
    "died": "had stopped on its own ({failure})",
    "running": "was still running when this campaign started, and was stopped",
}


def load_records(campaign_dir):
    """The records of the leftovers/ folder (one folder per host), each naming its host."""
    return [dict(record, host=record.get("host") or path.parent.name)
            for path, record in json_records(campaign_dir, "leftovers/*/*.json") if isinstance(record, dict)]


def cell_name(cell):
    number = launch_number(cell)
    return cell["variant"] if number == 1 else "%s.launch%d" % (cell["variant"], number)


def parse_time(text):
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def show_time(text):
    moment = parse_time(text)
    if moment is None:
        return text or "an unknown time"
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def what_happened(record):
    failure = ": ".join(str(p) for p in (record.get("failure_class"), record.get("root_cause")) if p) or "cause unknown"
    template = OUTCOMES.get(record.get("outcome"), "was found ({outcome})")
    return template.format(at=show_time(record.get("at")), failure=failure, outcome=record.get("outcome"))


def fate_of_cell(record, cell, same_campaign):
    """(measured_again, cell_status, text): what became of the cell the server served."""
    if not record.get("cell"):
        return None, None, None
    if not same_campaign:
        if not record.get("campaign"):
            return None, None, None
        return None, None, ("noted only: it served campaign %s, which measures that cell when it is run again "
                            "with its id" % record["campaign"])
    if cell is None or cell.get("synthesized"):
        return False, cell.get("status") if cell else None, "not measured again yet: the campaign ended before it"
    status = cell.get("status")
    if status == "skipped":
        reason = cell.get("reason") or "skipped"
        if reason.startswith("not run: "):
            reason = reason[len("not run: "):]
        return False, status, "not measured again yet: %s" % reason
    measured_at, found_at = parse_time(cell.get("measured_at")), parse_time(record.get("found_at"))
    if measured_at and found_at and measured_at >= found_at:
        return True, status, "measured again when this campaign resumed (%s)" % status
    return False, status, "its result had been written before and is kept"


def who(record):
    if not record.get("cell"):
        return "a server of an earlier run (its cell was not recorded) on %s" % record["host"]
    if record.get("campaign") == record.get("found_by"):
        return "%s on %s" % (record["cell"], record["host"])
    return "%s of campaign %s on %s" % (record["cell"], record.get("campaign") or "unknown", record["host"])


def leftover_notes(campaign_dir, cells):
    """One note per record, in the order found (host, then time)."""
    by_name = {(c.get("host"), cell_name(c)): c for c in cells if c.get("variant")}
    notes = []
    for record in load_records(campaign_dir):
        same = bool(record.get("campaign")) and record.get("campaign") == record.get("found_by")
        measured_again, status, fate = fate_of_cell(record, by_name.get((record["host"], record.get("cell"))), same)
        text = "%s: %s" % (who(record), what_happened(record))
        if fate:
            text += "; %s" % fate
        notes.append({
            "host": record["host"], "cell": record.get("cell"), "variant": record.get("variant"),
            "campaign": record.get("campaign"), "found_by": record.get("found_by"), "found_at": record.get("found_at"),
            "outcome": record.get("outcome"),
            "stopped_by": "lease" if record.get("outcome") == "stopped_by_lease" else None,
            "at": record.get("at"), "failure_class": record.get("failure_class"),
            "root_cause": record.get("root_cause"), "log_path": record.get("log_path"),
            "same_campaign": same, "measured_again": measured_again, "cell_status": status, "text": text,
        })
    return notes
