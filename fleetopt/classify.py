"""`fleetopt classify-log --engine E FILE`: post-mortem of an inference server's log.

Prints one JSON object: how far the start-up got (`status`: ready, crashed or starting;
`phase`; each phase's line, its time from the log's own timestamps, and the values it
logged), and for a crash the root cause (`failure_class`, `verdict`, `root_cause`,
`remedy`, the evidence's line numbers, the symptoms also seen, how sure it is:
`confidence` `pattern`, `frames` or `structure`, and the deciding `traceback`: rank,
exception lines, deepest frames). A crash no signature explains is `unknown_crash`
with its last exception line. Engine-agnostic: the
knowledge is library/engines/<engine>.yml, read by the same LogWatcher the lifecycle
module uses. Exit code 0 for any analysis, 2 when the file cannot be read.
"""
import datetime
import json
import re
import sys

from fleetopt.paths import engine_spec
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_logwatch import LogWatcher, clean_segments

EXIT_UNREADABLE = 2


def read_log(path):
    """The log's text with its carriage returns kept: tqdm redraws stay on their line, so
    line numbers are the file's own (what `sed -n Np` shows)."""
    with open(path, "r", errors="replace", newline="") as handle:
        return handle.read()


def feed_whole(watcher, text):
    """Feed a complete log; line numbers stay the file's own."""
    watcher.feed(text, final=True)
    return watcher


def line_timestamps(text, stamp_spec):
    """{line number: seconds} for lines that carry a timestamp (per the engine spec)."""
    if not stamp_spec:
        return {}
    pattern = re.compile(stamp_spec["pattern"])
    stamps = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        for segment in clean_segments(raw):
            match = pattern.search(segment)
            if match:
                try:
                    moment = datetime.datetime.strptime(match.group("ts"), stamp_spec["format"])
                except ValueError:
                    continue
                stamps[number] = moment.timestamp()
                break
    return stamps


def time_at(stamps, line):
    """The timestamp of `line`, or of the closest stamped line before it."""
    if isinstance(stamps, LazyStamps):
        return stamps.time_at(line)
    for number in range(line, 0, -1):
        if number in stamps:
            return stamps[number]
    return None


class LazyStamps:
    """Timestamps read only for the lines a report needs (a phase's first line, the end),
    walking back to the closest stamped line: parsing every line's time costs more than
    the whole analysis on a long log."""

    def __init__(self, text, stamp_spec):
        self.lines = text.split("\n")
        self.pattern = re.compile(stamp_spec["pattern"]) if stamp_spec else None
        self.format = stamp_spec["format"] if stamp_spec else None
        self.cache = {}

    def stamp_of(self, number):
        if number not in self.cache:
            self.cache[number] = None
            for segment in clean_segments(self.lines[number - 1]):
                match = self.pattern.search(segment)
                if match:
                    try:
                        moment = datetime.datetime.strptime(match.group("ts"), self.format)
                    except ValueError:
                        continue
                    self.cache[number] = moment.timestamp()
                    break
        return self.cache[number]

    def time_at(self, line):
        if self.pattern is None:
            return None
        for number in range(min(line, len(self.lines)), 0, -1):
            stamp = self.stamp_of(number)
            if stamp is not None:
                return stamp
        return None


def phase_report(watcher, stamps):
    """Phases in the order they started, timed with the log's own clock where it has one."""
    starts = [(name, watcher.phases[name]["line"]) for name in watcher.phase_order]
    origin = time_at(stamps, starts[0][1]) if starts else None
    end_line = watcher.ready_line or watcher.line_no
    report = {}
    for index, (name, line) in enumerate(starts):
        begin = time_at(stamps, line)
        next_line = starts[index + 1][1] if index + 1 < len(starts) else end_line
        finish = time_at(stamps, next_line)
        report[name] = {
            "line": line,
            "start_s": None if begin is None or origin is None else round(begin - origin, 3),
            "duration_s": None if begin is None or finish is None else round(max(finish - begin, 0.0), 3),
            "info": watcher.phases[name]["info"],
        }
    return report


def status_of(watcher):
    if watcher.failed:
        return "crashed"
    if watcher.ready:
        return "ready"
    return "starting"


def analyse(path, spec):
    text = read_log(path)
    watcher = feed_whole(LogWatcher(spec), text)
    stamps = LazyStamps(text, spec.get("log_timestamp"))
    status = status_of(watcher)
    failure = watcher.classify() if status == "crashed" else None
    result = {
        "file": path,
        "status": status,
        "phase": (failure or {}).get("phase") or watcher.phase,
        "phases": phase_report(watcher, stamps),
        "lines": watcher.line_no,
        "ready_line": watcher.ready_line,
        "failure_class": None,
        "verdict": None,
        "root_cause": None,
        "remedy": None,
        "confidence": None,
        "evidence_lines": [],
        "evidence": [],
        "also_seen": [],
        "traceback": None,
    }
    if failure:
        result.update({
            "failure_class": failure["failure_class"],
            "verdict": failure["verdict"],
            "root_cause": failure["root_cause"],
            "remedy": failure["remedy"],
            "evidence_lines": [item["line"] for item in failure["evidence"]],
            "confidence": failure.get("confidence"),
            "evidence": failure["evidence"],
            "also_seen": failure["also_seen"],
            "traceback": failure.get("traceback"),
        })
    elif status == "crashed":
        result["root_cause"] = "A fatal line matched, but no signature's requirements were met."
    return result


def main(args):
    try:
        with open(args.log_file, "rb"):
            pass
    except OSError as err:
        print("fleetopt classify-log: cannot read %s: %s" % (args.log_file, err.strerror), file=sys.stderr)
        return EXIT_UNREADABLE
    result = analyse(args.log_file, engine_spec(args.engine))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
