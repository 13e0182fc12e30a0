# -*- coding: utf-8 -*-
# Copyright: fleetopt contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The configuration a server states it runs, and whether a variant changed anything.

A variant's flags are what fleetopt asks for; the engine may decide otherwise (SGLang switches a
prefill CUDA graph backend off for an MLA model, torch.compile switches tc_piecewise off, ...) and
says so only in its own statements: its log (SGLang's `server_args=ServerArgs(...)`, vLLM's
`Initializing a V1 LLM engine (...) with config: ...`), the graph capture lines, its warnings, or an
endpoint (SGLang's `GET /server_info`). Standard library only: this runs in modules on target hosts
and in the controller.

The engine spec's `effective_config` section says where (`library/engines/<engine>.yml`)::

    effective_config:
      arguments:                       # the line that prints the resolved arguments
        pattern: 'server_args=(?P<args>.*)$'
      keys: {prefill_graph: cuda_graph_config.prefill.backend, mem_fraction_static: mem_fraction_static}
      statements:                      # later lines, in log order, override the arguments
        - pattern: 'Breakable CUDA graph is incompatible with (?P<reason>.+?); disabling prefill CUDA graph\\.'
          sets: {prefill_graph: disabled}
          releases: '>=0.5.14'       # documentation: the releases that print it
          overrides: true             # the engine overriding what was asked (a rule), not a report of it

The record (`effective`): `settings` (flat key -> value), `source` (where they came from) and
`statements` (each matching line with its number, what it set and why).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import re

from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_versions import version_in_range

# Reprs that are no Python literal: `<CompilationMode.NONE: 0>`, `<object at 0x7f...>`.
ANGLE_REPR = re.compile(r"<([\w.]+)(?::[^<>]*)?>")
CALL = re.compile(r"^([A-Za-z_][\w.]*)\((.*)\)$", re.S)
KEY = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(.*)$", re.S)
OPEN, CLOSE = "([{", ")]}"
MAX_ARGUMENT_TEXT = 400000
# Statements kept in the record (every one still sets its values): each rank prints its own capture lines.
MAX_STATEMENTS = 64


def split_top(text, sep=","):
    """`text` split at `sep` outside brackets and quotes."""
    parts, depth, quote, start, index = [], 0, None, 0, 0
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in OPEN:
            depth += 1
        elif char in CLOSE:
            depth -= 1
        elif char == sep and depth == 0:
            parts.append(text[start:index])
            start = index + 1
        index += 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def parse_value(text):
    """A repr as printed by a dataclass or a dict: literals become values, `Name(k=v, ...)` a dict,
    `<Enum.NAME: 2>` the string 'Enum.NAME', anything else its text."""
    text = text.strip()
    call = CALL.match(text)
    if call and "=" in call.group(2) and not text.startswith(("{", "[", "(")):
        found = parse_arguments(call.group(2))
        if found:
            return found
    if text.startswith("{") and text.endswith("}"):
        entries = {}
        for part in split_top(text[1:-1]):
            key, colon, value = _split_colon(part)
            if not colon:
                return _literal(text)
            entries[str(_literal(key))] = parse_value(value)
        return entries
    if text.startswith("[") and text.endswith("]"):
        return [parse_value(part) for part in split_top(text[1:-1])]
    return _literal(text)


def _split_colon(part):
    depth, quote = 0, None
    for index, char in enumerate(part):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in OPEN:
            depth += 1
        elif char in CLOSE:
            depth -= 1
        elif char == ":" and depth == 0:
            return part[:index], ":", part[index + 1:]
    return part, "", ""


def _literal(text):
    text = text.strip()
    text = ANGLE_REPR.sub(lambda m: repr(m.group(1)), text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_arguments(text):
    """`a=1, b='x', c=Cls(d=2)` (the inside of a dataclass repr) or a dict repr -> {name: value}."""
    text = (text or "")[:MAX_ARGUMENT_TEXT].strip()
    call = CALL.match(text)
    if call:
        text = call.group(2)
    if text.startswith("{"):
        value = parse_value(text)
        return value if isinstance(value, dict) else {}
    found = {}
    for part in split_top(text):
        match = KEY.match(part)
        if match:
            found[match.group(1)] = parse_value(match.group(2))
    return found


def dig(mapping, path):
    """mapping['a']['b'] for path 'a.b'; None where any step is missing."""
    value = mapping
    for step in path.split("."):
        if not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def read_log(lines, spec, version=None, arguments=None, derive=None):
    """The effective configuration a server states, by the engine spec's `effective_config`.

    `lines` is the log's text, or its lines (or (number, text) pairs). `arguments`, when given, are the resolved
    arguments the server returned from its endpoint; they stand in for the log's arguments line.
    `derive(settings)` lets an adapter turn release-specific keys into common ones before the later
    statements apply. Statements whose `releases` exclude `version` are not read. Returns
    {"settings", "source", "statements"}; settings is empty where nothing the spec knows was stated.
    """
    section = (spec or {}).get("effective_config") or {}
    arguments_pattern = re.compile((section.get("arguments") or {}).get("pattern") or r"(?!)")
    statements = [(re.compile(s["pattern"]), s) for s in section.get("statements") or []
                  if not (version and s.get("releases") and not version_in_range(version, s["releases"]))]
    source = "endpoint %s" % section.get("endpoint") if arguments else None
    arguments = dict(arguments or {})
    seen = []
    for number, text in _numbered(lines):
        if not arguments:
            match = arguments_pattern.search(text)
            if match:
                arguments = parse_arguments(match.group("args"))
                source = "log line %d" % number
                continue
        for pattern, statement in statements:
            match = pattern.search(text)
            if match:
                seen.append(_statement(number, text, match, statement))
                break
    settings = settings_from(arguments, section.get("keys") or {})
    if derive is not None:
        settings = derive(settings)
    for entry in seen:
        settings.update(entry["sets"])
    # The rules that overrode the request first: they are the reasons a no-op quotes.
    kept = [s for s in seen if s["overrides"]] + [s for s in seen if not s["overrides"]]
    kept = sorted(kept[:MAX_STATEMENTS], key=lambda s: s["line"])
    return {"settings": settings, "source": source or ("log" if seen else None), "statements": kept}


def _numbered(lines):
    if isinstance(lines, str):
        # Lines end at newlines only: tqdm's carriage returns redraw a bar within one line.
        lines = lines.split("\n")
    for index, line in enumerate(lines, 1):
        if isinstance(line, (tuple, list)):
            yield line[0], line[1]
        else:
            yield index, line.rstrip("\r\n")


def _statement(number, text, match, statement):
    groups = dict((k, v) for k, v in match.groupdict().items() if v is not None)
    sets = {}
    for key, value in (statement.get("sets") or {}).items():
        sets[key] = groups.get(key, value) if value is None else value
    return {"line": number, "text": text.strip()[:400], "sets": sets, "reason": groups.get("reason"),
            "overrides": bool(statement.get("overrides"))}


def settings_from(arguments, keys):
    """{our key: arguments' value at its path}, for the keys present."""
    settings = {}
    for key, paths in keys.items():
        for path in [paths] if isinstance(paths, str) else paths:
            value = dig(arguments, path)
            if value is not None:
                settings[key] = value
                break
    return settings


def compare(variant, baseline, keys):
    """How a variant's effective settings stand against its baseline's on the keys it set out to change.

    Returns {"state": "changed" | "no_effect" | "unknown", "same": [...], "differ": [...], "unknown": [...],
    "others": {key: [baseline value, variant value]}}: `no_effect` when every key is stated by both and equal,
    `unknown` when a key is not stated by one of them; `others` are the keys the variant did not set out
    to change on which the two differ anyway.
    """
    variant = variant or {}
    baseline = baseline or {}
    same, differ, unknown = [], [], []
    for key in keys or []:
        if key not in variant or key not in baseline:
            unknown.append(key)
        elif variant[key] == baseline[key]:
            same.append(key)
        else:
            differ.append(key)
    others = dict((k, [baseline.get(k), variant.get(k)]) for k in sorted(set(variant) | set(baseline))
                  if k not in (keys or []) and k in variant and k in baseline and variant[k] != baseline[k])
    if differ:
        state = "changed"
    elif unknown or not keys:
        state = "unknown"
    else:
        state = "no_effect"
    return {"state": state, "same": same, "differ": differ, "unknown": unknown, "others": others}


def no_effect_reason(effective, keys, comparison, engine=None):
    """Why a variant changed nothing, in the server's own words: the values it ran, the auto-disable lines that set
    them (`overrides`), the release, and what else differs from the baseline."""
    effective = effective or {}
    settings = effective.get("settings") or {}
    said = [s for s in effective.get("statements") or [] if s.get("overrides") and set(s.get("sets") or {}) & set(keys)]
    named = ", ".join("%s=%s" % (key, settings.get(key)) for key in keys)
    text = "the server ran its baseline's %s (%s)" % ("setting" if len(keys) == 1 else "settings", named)
    release = effective.get("release")
    if said:
        who = "%s %s" % (engine or "the server", release) if release else "the server"
        text += "; %s said: %s" % (who, " | ".join('"%s" (log line %s)' % (s["text"], s["line"]) for s in said))
    else:
        text += "; the server gave no reason in its log%s" % (" (release %s)" % release if release else "")
    if comparison.get("others"):
        text += "; it differs from its baseline only in %s" % ", ".join(
            "%s (%s -> %s)" % (key, old, new) for key, (old, new) in sorted(comparison["others"].items()))
    return text
