# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Follow an inference server's log: start-up phases, readiness, crash signatures.

Standard library only: this runs inside modules on target hosts and in the
controller's `fleetopt classify-log`. The engine-specific knowledge (phase
patterns, failure signatures, what a fatal traceback looks like) is data, loaded
from `library/engines/<engine>.yml` and handed in as a dict, so that the same
watcher serves every engine.

Structure first, strings second. The watcher reads Python tracebacks as blocks
(frames, the exception line, the message that follows it, chained exceptions)
and tells each line's context apart:

- a line inside a traceback, a standalone exception line (`RuntimeError: ...`),
  or an ERROR-level line is in *error context*;
- a warning (`WARNING ...`, torch's `[W...]`, `...: UserWarning: ...`,
  `NCCL WARN`, a message that starts with `Warning:`) is never one;
- anything else is plain.

A signature decides a crash only in error context, or anywhere (except a
warning) when it is a `banner`: a text that only a dying process prints. A match
inside a traceback counts once the traceback is known to end a process: a
banner announced it (`structure.process_ending`), its frames are the launcher's
main module (`structure.main_frames`), a banner of a dying process followed it,
or the log ended (`feed(..., final=True)`: the writer is gone) without the
server becoming ready or making progress after it.

Spec shape::

    phases:            # in start-up order
      - name: weights
        pattern: 'Load weight begin'
        event: start   # default; `info` only adds named groups to that phase
    ready:
      pattern: 'The server is fired up and ready to roll!'
    structure:         # optional; every key optional
      process_ending: ['Scheduler hit an exception:']  # a traceback after this ended a process
      main_frames: ['launch_server\\.py']              # frames of the launcher's main module
      secondary: ['other ranks']   # exceptions of ranks that died because another did
    failures:
      - class: cuda_oom
        verdict: crashed          # or blocked
        priority: 80              # the highest-priority match is the root cause
        fatal: true               # the server cannot recover once this is logged
        banner: false             # true: decides outside error context too
        symptom: false            # true: what follows any crash; never hides a traceback
        at_exit: false            # true: a plain-context match decides once the log ended
        patterns: ['CUDA out of memory']   # any of them on one line
        frames: ['cuda_graph_runner']      # optional: a frame of the same traceback must match
        deepest_frame: 'server_args\\.py'  # optional: the traceback's last frame must match
        frame_patterns: ['...']   # optional: classify a traceback cut before its exception line
        requires: ['...']         # optional: each must appear somewhere in the log
        root_cause: '...'
        remedy: '...'

classify() returns the root cause with `confidence`: `pattern` (a line matched),
`frames` (the traceback's frames or its final exception picked the class) or
`structure` (only the shape of the log says it crashed: `unknown_crash`, whose
root cause is the last exception line).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
EVIDENCE_CONTEXT_LINES = 400
MAX_EVIDENCE_TEXT = 400
MAX_TRACEBACK_TAIL = 60
MAX_BLOCKS = 200

# `[2026-03-02 10:15:03 TP3] `, `[2026-03-02 10:15:03] `, `[12-16 14:27:08] ` (multimodal)
LOG_PREFIX = re.compile(
    r"^\[(?:\d{4}-\d\d-\d\d |\d\d-\d\d )\d\d:\d\d:\d\d(?:[.,]\d+)?(?P<ranks>(?: [A-Z]{2,3}\d+)*)\] ?")
TRACEBACK_START = "Traceback (most recent call last):"
FRAME = re.compile(r'^File "(?P<path>[^"]*)", line \d+, in (?P<func>\S.*)$')
CHAIN = re.compile(r"^(?:The above exception was the direct cause of the following exception:|"
                   r"During handling of the above exception, another exception occurred:)$")
# `RuntimeError: ...`, `torch._dynamo.exc.Unsupported: ...`, `AssertionError`, `SystemExit: 2`,
# Triton's `triton.runtime.errors.OutOfResources: out of resource: ...`
EXCEPTION_LINE = re.compile(
    r"^(?P<exc>(?:[A-Za-z_]\w*\.)*(?:(?:[A-Z]\w*)?(?:Error|Exception|Exit|Interrupt|Failed|Failure|Timeout)|"
    r"Unsupported|OutOfResources|[A-Z]\w*Error\w*))(?::(?: (?P<msg>.*))?)?$")
# Levels, anchored at the start of the line (matched, not searched: lines can be long),
# plus the few markers that sit inside a line, tested as plain substrings.
ERROR_LEVEL = re.compile(
    r"(?:\([^)]*\) )*(?:ERROR|CRITICAL|FATAL)\b|(?:\[rank\d+\]:)?\[?[EF]\d{4} \d\d:\d\d:\d\d")
ERROR_MARKERS = (" - ERROR - ", " - CRITICAL - ")
WARNING_LEVEL = re.compile(
    r"(?:\([^)]*\) )*(?:WARNING|WARN)\b|(?:\[rank\d+\]:)?\[?W\d{4} \d\d:\d\d:\d\d|Warning:|"
    r"[^\s:]+:\d+: \w*Warning: ")
WARNING_MARKERS = ("NCCL WARN ", " - WARNING - ")


def _is_warning(message):
    return bool(WARNING_LEVEL.match(message)) or any(m in message for m in WARNING_MARKERS)


def _is_error(message):
    return bool(ERROR_LEVEL.match(message)) or any(m in message for m in ERROR_MARKERS)


NOT_FATAL_BEFORE = re.compile(r"^Exception ignored in\b")
# What a wrapper puts before the engine's own line: process tags of Ray and vLLM
# (`(WorkerDict pid=616, ip=...) `, `(EngineCore_DP0 pid=68) `), Python logging's
# `2025-03-08 02:04:48,693 - name - LEVEL - `, vLLM's `ERROR 02-06 16:34:06 [core.py:936] `.
# The line is read without it (so tracebacks keep their structure). vLLM's level counts (its
# own records); a relaying logger's level does not (it logs every line of the child alike).
WRAPPER = re.compile(
    r"^(?:\([^()]*\) )*(?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[,.]\d+ - [\w.]+ - [A-Z]+ - |"
    r"(?P<vllm_level>INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[^\]]*\] ?)?")


def clean_segments(raw_line):
    """Split one physical log line into what a person would read.

    tqdm redraws its bar with carriage returns, so one line of the file can hold
    dozens of bar states; each is matched on its own but they share a line number.
    """
    text = ANSI_ESCAPE.sub("", raw_line)
    return [seg.strip() for seg in text.split("\r") if seg.strip()]


def _compile_all(patterns):
    return [re.compile(p) for p in patterns or []]


def _any_of(patterns):
    """One expression that matches where any of `patterns` does: a cheap first test, so that
    most lines (tqdm redraws, batch statistics) cost one search instead of dozens. None when
    the patterns cannot be joined (a global inline flag), which means: no first test."""
    if not patterns:
        return re.compile(r"(?!)")
    joined = "|".join("(?:%s)" % re.sub(r"\(\?P<\w+>", "(?:", p) for p in patterns)
    try:
        return re.compile(joined)
    except re.error:
        return None


class _CompiledSignature:
    def __init__(self, spec):
        self.spec = spec
        self.failure_class = spec["class"]
        self.priority = int(spec.get("priority", 50))
        self.fatal = bool(spec.get("fatal", True))
        self.banner = bool(spec.get("banner", False))
        self.symptom = bool(spec.get("symptom", False))
        self.at_exit = bool(spec.get("at_exit", False))
        self.patterns = _compile_all(spec.get("patterns"))
        self.requires = _compile_all(spec.get("requires"))
        self.frames = _compile_all(spec.get("frames"))
        self.deepest_frame = re.compile(spec["deepest_frame"]) if spec.get("deepest_frame") else None
        self.frame_patterns = _compile_all(spec.get("frame_patterns"))

    def frames_ok(self, block):
        if not (self.frames or self.deepest_frame):
            return True
        if block is None or not block.frames:
            return False
        if self.frames and not any(p.search(f) for p in self.frames for f in block.frames):
            return False
        if self.deepest_frame and not self.deepest_frame.search(block.frames[-1]):
            return False
        return True


class _Block:
    """One traceback (or a standalone exception line), with the chain it belongs to."""

    def __init__(self, index, line, rank, banner, chain):
        self.index = index
        self.line = line
        self.rank = rank
        self.banner = banner
        self.chain = chain
        self.frames = []
        self.exceptions = []
        self.tail = []
        self.state = "frames"
        self.fatal = False
        self.ignored = False
        self.end_line = line

    def text(self):
        return self.exceptions + self.tail

    def to_dict(self):
        return {k: getattr(self, k) for k in ("index", "line", "rank", "banner", "chain", "frames", "exceptions",
                                              "tail", "state", "fatal", "ignored", "end_line")}

    @classmethod
    def from_dict(cls, data):
        block = cls(data["index"], data["line"], data["rank"], data["banner"], data["chain"])
        for key, value in data.items():
            setattr(block, key, value)
        return block


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
        self.any_phase = _any_of([p["pattern"] for p in spec.get("phases", [])])
        ready = spec.get("ready") or {}
        self.ready_pattern = re.compile(ready["pattern"]) if ready.get("pattern") else None
        self.signatures = [_CompiledSignature(s) for s in spec.get("failures", [])]
        self.anywhere = [s for s in self.signatures if s.banner or s.at_exit]
        self.any_anywhere = _any_of([p.pattern for s in self.anywhere for p in s.patterns])
        self.any_signature = _any_of([p.pattern for s in self.signatures for p in s.patterns])
        structure = spec.get("structure") or {}
        self.process_ending = _any_of(structure.get("process_ending") or [])
        self.main_frames = _compile_all(structure.get("main_frames"))
        self.secondary = _compile_all(structure.get("secondary"))
        self.line_no = 0
        self.partial = ""
        self.phase = None
        self.phases = {}
        self.phase_order = []
        self.ready_line = None
        self.ready_at = None
        self.matches = []          # decisive: (signature, line, text, phase)
        self.pending = []          # inside a traceback not yet known to be fatal: (sig, line, text, phase, block)
        self.at_exit_matches = []  # plain-context matches of `at_exit` signatures
        self.match_blocks = {}     # index in self.matches -> block index
        self.first_fatal_at = None
        self.first_fatal_line = None
        self.recent = []
        self.blocks = []
        self.block = None          # the traceback being read
        self.last_progress_line = 0
        self.last_plain_line = 0
        self.previous_text = ""
        self.ended = False

    # -- input -------------------------------------------------------------
    def feed(self, text, now=None, final=False):
        """Consume text; returns True when something notable changed.

        `final=True` says the log is complete: the process that wrote it is gone.
        """
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
        if final:
            changed = self._end(now) or changed
        return changed

    def feed_file(self, path):
        # newline="" keeps tqdm's carriage returns inside their line, so line numbers are the file's.
        with open(path, "r", errors="replace", newline="") as handle:
            self.feed(handle.read(), final=True)
        return self

    # -- structure -----------------------------------------------------------
    def _is_process_ending(self, text):
        return bool(self.process_ending.search(text))

    def _start_block(self, rank, banner, chained):
        chain = self.block.chain if (chained and self.block is not None) else len(self.blocks)
        block = _Block(len(self.blocks), self.line_no, rank, banner, chain)
        if chained and self.block is not None:
            block.fatal = self.block.fatal
            block.ignored = self.block.ignored
        elif banner and self._is_process_ending(banner):
            block.fatal = True
        elif self.previous_text and self._is_process_ending(self.previous_text):
            block.fatal = True
        if NOT_FATAL_BEFORE.search(self.previous_text) or NOT_FATAL_BEFORE.search(banner):
            block.ignored = True
        self.blocks.append(block)
        if len(self.blocks) > MAX_BLOCKS:
            del self.blocks[0]
        self.block = block
        return block

    def _unwrap(self, text):
        """(the engine's own line, the wrapper's level or None)."""
        wrapper = WRAPPER.match(text)
        if not wrapper or not wrapper.end():
            return text, None
        return text[wrapper.end():].strip(), wrapper.group("vllm_level")

    def _structure(self, text, level=None):
        """Track tracebacks; returns the line's context: traceback, code, error, warning or plain."""
        if level in ("WARNING", "WARN"):
            return "warning"
        if level in ("INFO", "DEBUG"):
            self.block = None  # an ordinary log line of the wrapper: no traceback goes on
        context = self._structure_of(text)
        if level in ("ERROR", "CRITICAL"):
            if context in ("traceback", "code") and self.block is not None and not self.block.fatal:
                self._make_fatal(self.block.chain)  # a traceback logged at ERROR level
            if context == "plain":
                return "error"
        return context

    def _structure_of(self, text):
        prefix = LOG_PREFIX.match(text)
        message = text[prefix.end():] if prefix else text
        rank = prefix.group("ranks").strip() if prefix else None
        at = message.find(TRACEBACK_START)
        if at >= 0:
            chained = self.block is not None and self.block.state == "chain" and not prefix
            self._start_block(rank if prefix else (self.block.rank if chained else None),
                              message[:at].strip(), chained)
            return "traceback"
        if not prefix and _is_warning(message):
            return "warning"  # another process's warning, even in the middle of a traceback
        block = self.block
        if block is not None:
            if prefix:
                self.block = None
            elif block.state == "frames":
                # Frames and the source lines under them are code, not error text: they
                # pick a class through `frames`, never through `patterns`.
                block.end_line = self.line_no
                match = FRAME.match(message)
                if match:
                    block.frames.append("%s:%s" % (match.group("path"), match.group("func")))
                    self._frames_changed(block)
                    return "code"
                if CHAIN.match(message):
                    block.state = "chain"
                elif EXCEPTION_LINE.match(message):
                    block.exceptions.append(message[:MAX_EVIDENCE_TEXT])
                    block.state = "message"
                else:
                    return "code"
                return "traceback"
            elif block.state == "message":
                block.end_line = self.line_no
                if CHAIN.match(message):
                    block.state = "chain"
                elif len(block.tail) < MAX_TRACEBACK_TAIL:
                    block.tail.append(message[:MAX_EVIDENCE_TEXT])
                return "traceback"
            elif block.state == "chain":
                block.end_line = self.line_no
                if EXCEPTION_LINE.match(message):
                    block.exceptions.append(message[:MAX_EVIDENCE_TEXT])
                return "traceback"
        if _is_warning(message):
            return "warning"
        # An exception on a line of its own, or after a banner on the same line
        # (`Scheduler hit an exception: torch._dynamo.exc.Unsupported: ...`).
        head, sep, rest = message.partition(": ")
        candidates = [message] + ([rest] if sep and self._is_process_ending(head + ":") else [])
        for candidate in candidates:
            if EXCEPTION_LINE.match(candidate) and not FRAME.match(candidate):
                banner = message[: len(message) - len(candidate)].strip()
                block = self._start_block(rank, banner, False)
                block.exceptions.append(candidate[:MAX_EVIDENCE_TEXT])
                block.state = "message"
                return "traceback"
        if _is_error(message):
            return "error"
        return "plain"

    def _frames_changed(self, block):
        if not block.fatal and any(p.search(block.frames[-1]) for p in self.main_frames):
            self._make_fatal(block.chain)

    def _make_fatal(self, chain, now=None):
        for block in self.blocks:
            if block.chain == chain and not block.ignored:
                block.fatal = True
        keep = []
        for item in self.pending:
            if item[4].chain == chain and not item[4].ignored:
                self._decide(item[0], item[1], item[2], item[3], item[4], now)
            else:
                keep.append(item)
        self.pending = keep
        if now is not None and self.first_fatal_at is None:
            lines = [b.line for b in self.blocks if b.chain == chain]
            self._mark_failed(now, min(lines) if lines else self.line_no)

    def _mark_failed(self, now, line):
        if self.first_fatal_at is None:
            self.first_fatal_at = now
            self.first_fatal_line = line
            return True
        return False

    def _decide(self, sig, line, text, phase, block, now):
        self.matches.append((sig, line, text, phase))
        if block is not None:
            self.match_blocks[len(self.matches) - 1] = block.index
        if sig.fatal and now is not None:
            self._mark_failed(now, line)

    def _promote_pending(self, now, since):
        """The process is dying: tracebacks logged since the last progress ended it."""
        chains = sorted({item[4].chain for item in self.pending if item[4].line >= since})
        chains += sorted({b.chain for b in self.blocks if b.line >= since and not b.fatal and not b.ignored
                          and b.exceptions} - set(chains))
        for chain in chains:
            self._make_fatal(chain, now)

    def _end(self, now):
        """The log is complete. A start-up that never got ready died of what it logged last."""
        self.ended = True
        self.block = None
        before = self.first_fatal_at
        if self.ready_line is None:
            self._promote_pending(now, self.last_progress_line)
            for sig, line, text, phase in self.at_exit_matches:
                self._decide(sig, line, text, phase, None, now)
        else:
            # A server that was ready died of a traceback only when that traceback is the
            # last thing it wrote (a graceful stop logs its own lines after any traceback).
            self._promote_pending(now, self.last_plain_line + 1)
        return before is None and self.first_fatal_at is not None

    # -- matching ------------------------------------------------------------
    def _consume(self, text, now):
        changed = False
        self.recent.append((self.line_no, text))
        if len(self.recent) > EVIDENCE_CONTEXT_LINES:
            del self.recent[: len(self.recent) - EVIDENCE_CONTEXT_LINES]
        shown = text[:MAX_EVIDENCE_TEXT]
        text, level = self._unwrap(text)
        context = self._structure(text, level)
        block = self.block if context in ("traceback", "code") else None
        # Start-up phases end at readiness: after it, no line is a phase line.
        phase_specs = () if (self.ready_line is not None or (
            self.any_phase is not None and not self.any_phase.search(text))) else self.phase_specs
        for name, pattern, event in phase_specs:
            match = pattern.search(text)
            if not match:
                continue
            info = {k: v for k, v in match.groupdict().items() if v is not None}
            if event == "start" and (name not in self.phases or self.phases[name].get("info_only")):
                # A phase that an info line announced (SGLang says why it disables prefill graphs before its
                # decode capture begins) starts at its start line, where it becomes the current phase.
                earlier = self.phases.pop(name, {}).get("info", {})
                if name in self.phase_order:
                    self.phase_order.remove(name)
                self.phases[name] = {"start": now, "line": self.line_no, "info": dict(earlier, **info)}
                self.phase_order.append(name)
                self.phase = name
                self.last_progress_line = self.line_no
                changed = True
            elif name in self.phases:
                self.phases[name]["info"].update(info)
            elif event == "info":
                self.phases[name] = {"start": now, "line": self.line_no, "info": info, "info_only": True}
                self.phase_order.append(name)
        if self.ready_pattern is not None and self.ready_line is None and self.ready_pattern.search(text):
            self.ready_line = self.line_no
            self.ready_at = now
            self.last_progress_line = self.line_no
            changed = True
        if context in ("traceback", "error"):
            candidates, first_test = self.signatures, self.any_signature
        elif context == "plain":
            candidates, first_test = self.anywhere, self.any_anywhere
        else:
            candidates, first_test = (), None
        if candidates and first_test is not None and not first_test.search(text):
            candidates = ()
        banner_hit = False
        for sig in candidates:
            if not any(p.search(text) for p in sig.patterns):
                continue
            banner_hit = banner_hit or sig.banner
            if context == "plain" and not sig.banner:
                self.at_exit_matches.append((sig, self.line_no, shown, self.phase))
                continue
            if sig.banner or block is None or block.fatal:
                before = self.first_fatal_at
                self._decide(sig, self.line_no, shown, self.phase, block, now)
                changed = changed or (before is None and self.first_fatal_at is not None)
                if sig.banner and sig.fatal:
                    self._promote_pending(now, self.last_progress_line)
            elif not block.ignored:
                self.pending.append((sig, self.line_no, shown, self.phase, block))
        if block is not None and block.fatal and not block.ignored:
            changed = self._mark_failed(now, block.line) or changed
        self.previous_text = text if context not in ("traceback", "code") else ""
        if context in ("plain", "error") and not banner_hit:
            self.last_plain_line = self.line_no
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

    def _block(self, index):
        for block in self.blocks:
            if block.index == index:
                return block
        return None

    def _is_secondary(self, block):
        return block is not None and any(p.search(t) for p in self.secondary for t in block.text())

    def _fatal_blocks(self):
        return [b for b in self.blocks if b.fatal and not b.ignored]

    def primary_traceback(self):
        """The traceback of the process that failed first (ranks that died of another's death lose)."""
        blocks = self._fatal_blocks()
        if not blocks:
            return None
        chains = {}
        for block in blocks:
            chains.setdefault(block.chain, []).append(block)
        ordered = sorted(chains.values(), key=lambda chain: chain[0].line)
        for chain in ordered:
            if not any(self._is_secondary(b) for b in chain):
                return chain
        return ordered[0]

    def classify(self):
        """The root cause among everything decided so far, or None.

        The highest priority wins, so a root cause logged inside a traceback is
        not hidden by the symptoms that follow it (`scheduler is dead`). Matches
        in the traceback of a rank that died because another did lose to every
        other match. Ties go to the earliest line. A crash whose traceback no
        signature explains is `unknown_crash`, with its last exception line.
        """
        failed = self.failed
        if not self.matches and not failed:
            return None
        context = [t for _line_no, t in self.recent]
        primary = self.primary_traceback()
        primary_indexes = {b.index for b in primary} if primary else set()
        best = None
        for position, (sig, line, text, phase) in enumerate(self.matches):
            if sig.requires and not self._requirements_met(sig, context):
                continue
            block = self._block(self.match_blocks.get(position, -1))
            if not sig.frames_ok(block):
                continue
            demoted = 1 if (block is not None and block.index not in primary_indexes
                            and self._is_secondary(block)) else 0
            key = (demoted, -sig.priority, line)
            if best is None or key < best[0]:
                best = (key, sig, line, text, phase, block)
        if primary and (best is None or best[1].symptom or best[0][0]):
            frames_class = self._class_from_frames(primary)
            if frames_class is not None:
                return frames_class
            exceptions = [e for b in primary for e in b.exceptions]
            # A traceback whose exception is itself a symptom (`Initialization failed. Please
            # see the error messages above.`) explains nothing: the symptom stands.
            said = exceptions[-1] if exceptions else None
            symptom_said = said is not None and any(
                p.search(said) for sig in self.signatures if sig.symptom for p in sig.patterns)
            if (exceptions and not symptom_said) or best is None or best[0][0]:
                return self._unknown_crash(primary, said)
        if best is None:
            return None
        sig, line, text, phase, block = best[1:]
        evidence = [
            {"line": ln, "text": tx}
            for s, ln, tx, _phase in self.matches
            if s is sig
        ][:5]
        symptoms = sorted({m[0].failure_class for m in self.matches if m[0].failure_class != sig.failure_class})
        if block is not None and (sig.frames or sig.deepest_frame or any(
                text.endswith(e) for e in block.exceptions[-1:])):
            confidence = "frames"
        elif block is None and sig.at_exit and not sig.banner:
            confidence = "structure"  # only the shape of the log (it ended on this) decided
        else:
            confidence = "pattern"
        result = {
            "failure_class": sig.failure_class,
            "verdict": sig.spec.get("verdict", "crashed"),
            "root_cause": sig.spec.get("root_cause", ""),
            "remedy": sig.spec.get("remedy", ""),
            "phase": phase,
            "line": line,
            "confidence": confidence,
            "evidence": evidence,
            "also_seen": symptoms,
        }
        chain = primary if (block is not None and block.index in primary_indexes) else (
            [b for b in self.blocks if block is not None and b.chain == block.chain] or primary)
        if chain:
            result["traceback"] = self._traceback_summary(chain)
        return result

    def _class_from_frames(self, chain):
        """A traceback cut before its exception line: the deepest frames pick the class."""
        if any(b.exceptions for b in chain):
            return None
        frames = [f for b in chain for f in b.frames]
        if not frames:
            return None
        for frame in reversed(frames):
            hits = [s for s in self.signatures if any(p.search(frame) for p in s.frame_patterns)]
            if hits:
                sig = max(hits, key=lambda s: s.priority)
                return {
                    "failure_class": sig.failure_class,
                    "verdict": sig.spec.get("verdict", "crashed"),
                    "root_cause": sig.spec.get("root_cause", ""),
                    "remedy": sig.spec.get("remedy", ""),
                    "phase": self._phase_at(chain[0].line),
                    "line": chain[0].line,
                    "confidence": "frames",
                    "evidence": [{"line": chain[0].line, "text": "deepest frame: %s" % frame}],
                    "also_seen": sorted({m[0].failure_class for m in self.matches}),
                    "traceback": self._traceback_summary(chain),
                }
        return None

    def _unknown_crash(self, chain, exception):
        frames = [f for b in chain for f in b.frames]
        if exception is None:
            exception = "(the traceback was cut before its exception line; deepest frame: %s)" % (
                frames[-1] if frames else "none")
        return {
            "failure_class": "unknown_crash",
            "verdict": "crashed",
            "root_cause": "The process ended with an exception that no known signature explains: %s" % exception,
            "remedy": "Read the traceback at the evidence line; if it recurs, add a signature for it to the engine's "
                      "knowledge base (library/engines/).",
            "phase": self._phase_at(chain[0].line),
            "line": chain[0].line,
            "confidence": "structure",
            "evidence": [{"line": chain[0].line, "text": exception}],
            "also_seen": sorted({m[0].failure_class for m in self.matches}),
            "traceback": self._traceback_summary(chain),
        }

    def _phase_at(self, line):
        phase = None
        for name in self.phase_order:
            if self.phases[name]["line"] <= line:
                phase = name
        return phase

    @staticmethod
    def _traceback_summary(chain):
        return {
            "line": chain[0].line,
            "rank": next((b.rank for b in chain if b.rank), None),
            "exceptions": [e for b in chain for e in b.exceptions][-3:],
            "deepest_frames": [f for b in chain for f in b.frames][-3:],
        }

    def phase_times(self, end=None, origin=None):
        """Per-phase start offsets and durations.

        With `origin` (the launch time) the time before the first recognised line is
        reported as a `launch` phase: interpreter start and imports, often many seconds. An
        engine whose first phase is itself named `launch` has that phase start at the launch.
        """
        if not self.phase_order:
            return {}
        first = self.phases[self.phase_order[0]]["start"]
        result = {}
        from_launch = None
        if origin is not None and first > origin:
            if self.phase_order[0] == "launch":
                from_launch = "launch"
            else:
                result["launch"] = {"start_s": 0.0, "duration_s": round(first - origin, 3), "line": None, "info": {}}
        else:
            origin = first
        for index, name in enumerate(self.phase_order):
            start = origin if name == from_launch else self.phases[name]["start"]
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
            "first_fatal_line": self.first_fatal_line,
            "matches": [
                [sig.failure_class, line, text, phase, self.match_blocks.get(i), self._sig_index(sig)]
                for i, (sig, line, text, phase) in enumerate(self.matches)
            ],
            "pending": [[sig.failure_class, line, text, phase, block.index, self._sig_index(sig)]
                        for sig, line, text, phase, block in self.pending],
            "at_exit": [[sig.failure_class, line, text, phase, None, self._sig_index(sig)]
                        for sig, line, text, phase in self.at_exit_matches],
            "blocks": [b.to_dict() for b in self.blocks[-50:]],
            "block": self.block.index if self.block is not None else None,
            "last_progress_line": self.last_progress_line,
            "last_plain_line": self.last_plain_line,
            "previous_text": self.previous_text,
            "recent": self.recent[-50:],
        }

    def _sig_index(self, sig):
        return self.signatures.index(sig)

    def _sig_of(self, item, by_class):
        """The signature a snapshot entry names: by its index, checked against its class."""
        cls = item[0]
        index = item[5] if len(item) > 5 else None
        if index is not None and 0 <= index < len(self.signatures) and self.signatures[index].failure_class == cls:
            return self.signatures[index]
        return by_class.get(cls)

    def restore(self, state):
        by_class = {}
        for sig in self.signatures:
            by_class.setdefault(sig.failure_class, sig)
        self.line_no = state["line_no"]
        self.partial = state["partial"]
        self.phase = state["phase"]
        self.phases = state["phases"]
        self.phase_order = state["phase_order"]
        self.ready_line = state["ready_line"]
        self.ready_at = state["ready_at"]
        self.first_fatal_at = state["first_fatal_at"]
        self.first_fatal_line = state.get("first_fatal_line")
        self.blocks = [_Block.from_dict(b) for b in state.get("blocks", [])]
        blocks = {b.index: b for b in self.blocks}
        self.block = blocks.get(state.get("block"))
        self.matches = []
        self.match_blocks = {}
        for item in state["matches"]:
            sig = self._sig_of(item, by_class)
            if sig is None:
                continue
            if len(item) > 4 and item[4] is not None:
                self.match_blocks[len(self.matches)] = item[4]
            self.matches.append((sig, item[1], item[2], item[3]))
        self.pending = [(self._sig_of(item, by_class), item[1], item[2], item[3], blocks[item[4]])
                        for item in state.get("pending", [])
                        if self._sig_of(item, by_class) is not None and item[4] in blocks]
        self.at_exit_matches = [(self._sig_of(item, by_class), item[1], item[2], item[3])
                                for item in state.get("at_exit", []) if self._sig_of(item, by_class) is not None]
        self.last_progress_line = state.get("last_progress_line", 0)
        self.last_plain_line = state.get("last_plain_line", 0)
        self.previous_text = state.get("previous_text", "")
        self.recent = [tuple(item) for item in state["recent"]]
        return self
