# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Follow an inference server's log: start-up phases, readiness, crash signatures.

Standard library only: this runs inside modules on target hosts and in the
controller's `fleetopt classify-log`. The engine-specific knowledge (phase
patterns, failure signatures) is data, loaded from `library/engines/<engine>.yml`
and handed in as a dict, so that the same watcher serves every engine.

Spec shape::

    phases:            # in start-up order
      - name: weights
        pattern: 'Load weight begin'
        event: start   # default; `info` only adds named groups to that phase
    ready:
      pattern: 'The server is fired up and ready to roll!'
    failures:
      - class: cuda_oom
        verdict: crashed          # or blocked
        priority: 80              # the highest-priority match is the root cause
        fatal: true               # the server cannot recover once this is logged
        patterns: ['CUDA out of memory']   # any of them on one line
        requires: ['...']         # optional: each must appear somewhere in the log
        root_cause: '...'
        remedy: '...'
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
EVIDENCE_CONTEXT_LINES = 400
MAX_EVIDENCE_TEXT = 400


def clean_segments(raw_line):
    """Split one physical log line into what a person would read.

    tqdm redraws its bar with carriage returns, so one line of the file can hold
    dozens of bar states; each is matched on its own but they share a line number.
    """
    text = ANSI_ESCAPE.sub("", raw_line)
    return [seg.strip() for seg in text.split("\r") if seg.strip()]


class _CompiledSignature:
    def __init__(self, spec):
        self.spec = spec
        self.failure_class = spec["class"]
        self.priority = int(spec.get("priority", 50))
        self.fatal = bool(spec.get("fatal", True))
        self.patterns = [re.compile(p) for p in spec.get("patterns", [])]
        self.requires = [re.compile(p) for p in spec.get("requires", [])]


class LogWatcher:
    """Incremental log reader that tracks phases and failure evidence.

    Feed it text as it arrives (`feed`), or a whole file (`feed_file`). Phase
    start times are wall-clock seconds as noticed by the caller's clock (or the
    `now` passed in), which is what start-up timing is measured against.
    """

    def __init__(self, spec, clock=time.time):
        self.clock = clock
        self.phase_specs = [
            (p["name"], re.compile(p["pattern"]), p.get("event", "start"))
            for p in spec.get("phases", [])
        ]
        ready = spec.get("ready") or {}
        self.ready_pattern = re.compile(ready["pattern"]) if ready.get("pattern") else None
        self.signatures = [_CompiledSignature(s) for s in spec.get("failures", [])]
        self.line_no = 0
        self.partial = ""
        self.phase = None
        self.phases = {}
        self.phase_order = []
        self.ready_line = None
        self.ready_at = None
        self.matches = []
        self.first_fatal_at = None
        self.recent = []

    # -- input -------------------------------------------------------------
    def feed(self, text, now=None, final=False):
        """Consume text; returns True when something notable changed."""
        now = self.clock() if now is None else now
        data = self.partial + text
        lines = data.split("\n")
        self.partial = "" if final else lines.pop()
        changed = False
        for index, raw in enumerate(lines):
            if final and raw == "" and index == len(lines) - 1:
                continue  # the empty piece after the file's last newline is no line
            self.line_no += 1
            for segment in clean_segments(raw):
                changed = self._consume(segment, now) or changed
        return changed

    def feed_file(self, path):
        # newline="" keeps tqdm's carriage returns inside their line, so line numbers are the file's.
        with open(path, "r", errors="replace", newline="") as handle:
            self.feed(handle.read(), final=True)
        return self

    # -- matching ------------------------------------------------------------
    def _consume(self, text, now):
        changed = False
        self.recent.append((self.line_no, text))
        if len(self.recent) > EVIDENCE_CONTEXT_LINES:
            del self.recent[: len(self.recent) - EVIDENCE_CONTEXT_LINES]
        for name, pattern, event in self.phase_specs:
            match = pattern.search(text)
            if not match:
                continue
            info = {k: v for k, v in match.groupdict().items() if v is not None}
            if event == "start" and name not in self.phases:
                self.phases[name] = {"start": now, "line": self.line_no, "info": info}
                self.phase_order.append(name)
                self.phase = name
                changed = True
            elif name in self.phases:
                self.phases[name]["info"].update(info)
            elif event == "info":
                self.phases[name] = {"start": now, "line": self.line_no, "info": info}
                self.phase_order.append(name)
        if self.ready_pattern is not None and self.ready_line is None and self.ready_pattern.search(text):
            self.ready_line = self.line_no
            self.ready_at = now
            changed = True
        for sig in self.signatures:
            if any(p.search(text) for p in sig.patterns):
                self.matches.append((sig, self.line_no, text[:MAX_EVIDENCE_TEXT], self.phase))
                if sig.fatal and self.first_fatal_at is None:
                    self.first_fatal_at = now
                    changed = True
        return changed

    # -- results -------------------------------------------------------------
    @property
    def ready(self):
        return self.ready_line is not None

    @property
    def failed(self):
        return self.first_fatal_at is not None

    def _requirements_met(self, sig, all_text):
        return all(any(p.search(t) for t in all_text) for p in sig.requires)

    def classify(self):
        """The root cause among everything matched so far, or None.

        The highest priority wins, so a root cause logged inside a traceback is
        not hidden by the symptoms that follow it (`scheduler is dead`, `Killed`).
        Ties go to the earliest line.
        """
        if not self.matches:
            return None
        context = [t for _, t in self.recent]
        best = None
        for sig, line, text, phase in self.matches:
            if sig.requires and not self._requirements_met(sig, context):
                continue
            key = (-sig.priority, line)
            if best is None or key < best[0]:
                best = (key, sig, line, text, phase)
        if best is None:
            return None
        _, sig, line, text, phase = best
        evidence = [
            {"line": ln, "text": tx}
            for s, ln, tx, _ in self.matches
            if s is sig
        ][:5]
        symptoms = sorted({s.failure_class for s, _, _, _ in self.matches if s.failure_class != sig.failure_class})
        return {
            "failure_class": sig.failure_class,
            "verdict": sig.spec.get("verdict", "crashed"),
            "root_cause": sig.spec.get("root_cause", ""),
            "remedy": sig.spec.get("remedy", ""),
            "phase": phase,
            "line": line,
            "evidence": evidence,
            "also_seen": symptoms,
        }

    def phase_times(self, end=None, origin=None):
        """Per-phase start offsets and durations.

        With `origin` (the launch time) the time before the first recognised line is
        reported as a `launch` phase: interpreter start and imports, often many seconds.
        """
        if not self.phase_order:
            return {}
        first = self.phases[self.phase_order[0]]["start"]
        result = {}
        if origin is not None and first > origin:
            result["launch"] = {"start_s": 0.0, "duration_s": round(first - origin, 3), "line": None, "info": {}}
        else:
            origin = first
        for index, name in enumerate(self.phase_order):
            start = self.phases[name]["start"]
            if index + 1 < len(self.phase_order):
                stop = self.phases[self.phase_order[index + 1]]["start"]
            else:
                stop = self.ready_at if self.ready_at is not None else end
            result[name] = {
                "start_s": round(start - origin, 3),
                "duration_s": None if stop is None else round(max(stop - start, 0.0), 3),
                "line": self.phases[name]["line"],
                "info": self.phases[name]["info"],
            }
        return result

    def snapshot(self):
        """State that lets a later process resume watching the same log."""
        return {
            "line_no": self.line_no,
            "partial": self.partial,
            "phase": self.phase,
            "phases": self.phases,
            "phase_order": self.phase_order,
            "ready_line": self.ready_line,
            "ready_at": self.ready_at,
            "first_fatal_at": self.first_fatal_at,
            "matches": [
                [sig.failure_class, line, text, phase] for sig, line, text, phase in self.matches
            ],
            "recent": self.recent[-50:],
        }

    def restore(self, state):
        by_class = {s.failure_class: s for s in self.signatures}
        self.line_no = state["line_no"]
        self.partial = state["partial"]
        self.phase = state["phase"]
        self.phases = state["phases"]
        self.phase_order = state["phase_order"]
        self.ready_line = state["ready_line"]
        self.ready_at = state["ready_at"]
        self.first_fatal_at = state["first_fatal_at"]
        self.matches = [
            (by_class[cls], line, text, phase)
            for cls, line, text, phase in state["matches"]
            if cls in by_class
        ]
        self.recent = [tuple(item) for item in state["recent"]]
        return self
