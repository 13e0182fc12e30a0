"""The recommendation of a finished single-optimization matrix: results/<id>/recommended.yml.

Candidates are the optimizations whose verdict is `improved` on every host that measured them.
They are taken in order of measured effect (the largest change of the verdict metric at any of
their levels, the smallest over hosts) and added to the stack one by one, unless one conflicts
with a candidate already in it:

- declared: either catalog entry names the other under `conflicts` (each cell records its
  entry's, so the inventory's own optimizations can declare them too);
- found: both change the same server flag or environment variable to different values
  (setting against removing included), so they cannot both be in one launch.

Every other optimization is left out with the reason: regressed (or mixed), conflicting,
crashed (crashed, blocked, timeout, error), not_significant (neutral: equivalent to the
baseline), inconclusive, not_applicable, not_measured (skipped).

The stack is a proposal: with two or more candidates it has not been measured as one launch,
and its status says so. Its inventory variables are the baseline's flags and environment with
each candidate's changes applied (a removed flag stays as null, so the catalog's baseline cannot
put it back); its launch command is the baseline's with those flags, through the engine's adapter.
Each candidate keeps its measured gain with its interval and its capacity under the SLOs.
"""
import shlex

import yaml

from fleetopt.files import write_atomically
from fleetopt.launches import launch_details, merge_launches
from fleetopt.summary import AA_VARIANT, BASELINE

# Makes the collection's module_utils importable.
import fleetopt.paths  # noqa: F401  pylint: disable=unused-import
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engine import REDACTED, merge_flags, render_flags
from ansible_collections.fleetopt.campaign.plugins.module_utils.fleetopt_engines import get_adapter

STATUS_PROPOSED = "proposed, not yet measured as a stack"
STATUS_SINGLE = "measured: a single optimization, nothing to stack"
STATUS_NONE = "nothing to recommend: no optimization improved; keep the baseline"
FAILED = ("crashed", "blocked", "timeout", "error")
# Left-out reasons, worst first: the reason of an optimization measured on several hosts is its worst one.
WHY_ORDER = ("crashed", "regressed", "inconclusive", "not_significant", "not_applicable", "not_measured")


def _why(verdict):
    if verdict in FAILED:
        return "crashed"
    if verdict in ("regressed", "mixed"):
        return "regressed"
    if verdict == "neutral":
        return "not_significant"
    if verdict == "not_applicable":
        return "not_applicable"
    if verdict == "skipped":
        return "not_measured"
    return "inconclusive"


def _diff(base, other):
    """What `other` changes against `base`: {key: new value}, None for a key it removes."""
    changed = {k: v for k, v in (other or {}).items() if (base or {}).get(k) != v}
    changed.update({k: None for k in base or {} if k not in (other or {})})
    return changed


def _round(value, digits=2):
    return None if value is None else round(float(value), digits)


def _gains(summary, host, variant, metric):
    levels = []
    for row in summary["cells"]:
        if row["host"] == host and row["variant"] == variant and row["status"] == "ok":
            comparison = (row.get("vs_baseline") or {}).get(metric)
            if comparison:
                levels.append({"concurrency": row["concurrency"], "verdict": row.get("verdict"),
                               "change_pct": _round(comparison["change_pct"]),
                               "ci_low_pct": _round(comparison["ci_low_pct"]),
                               "ci_high_pct": _round(comparison["ci_high_pct"]),
                               "confidence": _round(comparison["confidence"], 4)})
    return sorted(levels, key=lambda lv: lv["concurrency"])


def _headline(levels, metric):
    """The level with the largest improvement: the candidate's measured effect."""
    if not levels:
        return {"metric": metric, "concurrency": None, "change_pct": 0.0, "ci_low_pct": None, "ci_high_pct": None,
                "confidence": None}
    improved = [lv for lv in levels if lv["verdict"] == "improved"] or levels
    best = max(improved, key=lambda lv: lv["change_pct"])
    return dict({"metric": metric}, **{k: best[k] for k in ("concurrency", "change_pct", "ci_low_pct",
                                                            "ci_high_pct", "confidence")})


def _capacity_brief(found):
    if not found:
        return None
    return {k: found.get(k) for k in ("capacity", "at_least", "low", "high", "high_at_least", "reason")}


def _reason_text(entries):
    parts = []
    for v in entries:
        text = v.get("verdict_reason") or v.get("root_cause") or v.get("reason") or v.get("verdict") or ""
        parts.append("%s on %s: %s" % (v.get("verdict"), v["host"], text))
    return "; ".join(parts)


def _clash(candidate, other):
    """Why `candidate` cannot join a stack that holds `other`, or None."""
    for a, b in ((candidate, other), (other, candidate)):
        for declared in a["conflicts"]:
            if declared.get("id") == b["id"]:
                return "declared in the catalog: %s" % (declared.get("why") or "no reason given")
    for kind, key in (("flag", "flags"), ("environment variable", "env")):
        for name in sorted(set(candidate[key]) & set(other[key])):
            if candidate[key][name] != other[key][name]:
                return "both change the %s %s (%s against %s)" % (kind, name, _shown(candidate[key][name]),
                                                                  _shown(other[key][name]))
    return None


def _shown(value):
    return "removed" if value is None else repr(value)


def _conflicts(cell):
    found = ((cell.get("provenance") or {}).get("conflicts")) or []
    return [c if isinstance(c, dict) else {"id": c} for c in found]


def _launch(baseline_cell, flags, engine, engine_version):
    """(argv, None) of the stacked launch: the baseline's command with the stack's flags; (None, why) when the
    baseline's command does not end in its own flags as the adapter renders them."""
    details = launch_details(baseline_cell)
    argv, base_flags = details.get("argv") or [], details.get("flags") or {}
    tail = render_flags(base_flags)
    if not argv or (tail and argv[-len(tail):] != tail):
        return None, "the baseline's recorded command does not end in its flags; build it from the inventory variables"
    try:
        adapter = get_adapter(engine, engine_version)
    except (KeyError, ValueError) as exc:
        return None, "no adapter for engine %r (%s); build the command from the inventory variables" % (engine, exc)
    prefix = argv[:len(argv) - len(tail)] if tail else list(argv)
    return prefix + render_flags(adapter.normalize_flags(merge_flags(flags))), None


def recommend(summary, cells):
    """The recommendation (a dict, the content of recommended.yml) from a summary and its cells."""
    settings = summary.get("settings") or {}
    metric = settings.get("verdict_metric", "output_throughput")
    merged = {(c["host"], c["variant"]): c for c in merge_launches(cells)}
    entries = {}
    for v in summary["variants"]:
        if v["variant"] not in (BASELINE, AA_VARIANT):
            entries.setdefault(v["variant"], []).append(v)
    baselines = {v["host"]: v for v in summary["variants"] if v["variant"] == BASELINE}

    candidates, left_out = [], []
    for name, found in entries.items():
        if all(v["verdict"] == "improved" for v in found):
            per_host = []
            for v in found:
                cell = merged[(v["host"], name)]
                base_cell = merged.get((v["host"], BASELINE)) or {}
                levels = _gains(summary, v["host"], name, metric)
                per_host.append({"host": v["host"], "levels": levels, "gain": _headline(levels, metric),
                                 "capacity": _capacity_brief(v.get("capacity")),
                                 "flags": _diff(launch_details(base_cell).get("flags"), launch_details(cell).get("flags")),
                                 "env": _diff(launch_details(base_cell).get("env"), launch_details(cell).get("env")),
                                 "conflicts": _conflicts(cell)})
            weakest = min(per_host, key=lambda h: h["gain"]["change_pct"])
            candidates.append(dict(weakest, id=name, title=found[0].get("title"), hosts=[h["host"] for h in per_host],
                                   verdict_reason="; ".join(v.get("verdict_reason") or "" for v in found)))
        else:
            why = min((_why(v["verdict"]) for v in found if v["verdict"] != "improved"), key=WHY_ORDER.index)
            left_out.append({"id": name, "title": found[0].get("title"), "why": why, "hosts": [v["host"] for v in found],
                             "reason": _reason_text(found)})

    candidates.sort(key=lambda c: -c["gain"]["change_pct"])
    stack = []
    for candidate in candidates:
        clash = next(((other, why) for other in stack for why in [_clash(candidate, other)] if why), None)
        if clash:
            other, why = clash
            left_out.append({"id": candidate["id"], "title": candidate["title"], "why": "conflicting",
                             "hosts": candidate["hosts"],
                             "reason": "conflicts with %s, which has the larger measured effect (%+.1f %% against "
                                       "%+.1f %%): %s" % (other["id"], other["gain"]["change_pct"],
                                                          candidate["gain"]["change_pct"], why)})
        else:
            stack.append(candidate)
    left_out.sort(key=lambda e: (WHY_ORDER.index(e["why"]) if e["why"] in WHY_ORDER else -1, e["id"]))

    host = stack[0]["host"] if stack else (sorted(baselines) or [None])[0]
    base_cell = merged.get((host, BASELINE)) or {}
    base_launch = launch_details(base_cell)
    flags = dict(base_launch.get("flags") or {})
    env = dict(base_launch.get("env") or {})
    for candidate in stack:
        flags.update(candidate["flags"])
        env.update({k: v for k, v in candidate["env"].items() if v is not None})
        for name in [k for k, v in candidate["env"].items() if v is None]:
            env.pop(name, None)
    secret = sorted(k for k, v in env.items() if v == REDACTED)
    env = {k: v for k, v in env.items() if v != REDACTED}
    engine = summary.get("engine")
    argv, no_command = _launch(base_cell, flags, engine, summary.get("engine_version")) if base_cell else (
        None, "no baseline was measured")
    notes = []
    if len({h for c in stack for h in c["hosts"]}) > 1:
        notes.append("the candidates were measured on different hosts (%s), each against its own host's baseline; "
                     "the inventory variables and command are those of %s" % (
                         ", ".join(sorted({h for c in stack for h in c["hosts"]})), host))
    if secret:
        notes.append("secret environment left out (set it from your vault): %s" % ", ".join(secret))
    if no_command:
        notes.append(no_command)
    status = STATUS_PROPOSED if len(stack) > 1 else STATUS_SINGLE if stack else STATUS_NONE
    return {
        "status": status,
        "campaign": summary.get("campaign"),
        "engine": engine,
        "engine_version": summary.get("engine_version"),
        "verdict_metric": metric,
        "confidence": settings.get("confidence"),
        "min_effect_pct": settings.get("min_effect_pct"),
        "slo": settings.get("slo") or {},
        "stack": [c["id"] for c in stack],
        "host": host,
        "inventory": {"campaign_server_flags": flags, "campaign_server_env": env},
        "launch": {"argv": argv, "command": shlex.join(str(a) for a in argv) if argv else None, "env": dict(env)},
        "baseline": {"host": host, "capacity": _capacity_brief((baselines.get(host) or {}).get("capacity"))},
        "candidates": [{k: c[k] for k in ("id", "title", "hosts", "flags", "env", "gain", "levels", "capacity",
                                          "verdict_reason")} for c in stack],
        "left_out": left_out,
        "notes": notes,
    }


def write_recommendation(campaign_dir, proposal):
    """results/<id>/recommended.yml, opening with what it is; returns its path."""
    path = campaign_dir / "recommended.yml"
    header = "# fleetopt recommendation of campaign %s: %s\n" % (proposal.get("campaign"), proposal["status"])
    if proposal["status"] == STATUS_PROPOSED:
        header += ("# Each candidate was measured alone against the baseline; the stack of them has not been measured "
                   "as one launch.\n")
    write_atomically(path, header + yaml.safe_dump(proposal, sort_keys=False, default_flow_style=False, width=100))
    return path
