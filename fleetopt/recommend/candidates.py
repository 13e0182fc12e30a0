"""The candidates of a recommendation: the optimizations that improved on every host that measured them, in order of
measured effect, and the stack of those that do not conflict; every other optimization is left out with its reason."""
from fleetopt.analysis.launches import launch_details
from fleetopt.analysis.summary import AA_VARIANT, BASELINE
from fleetopt.recommend.gains import capacity_brief, effect, effect_text, gain_of

FAILED = ("crashed", "blocked", "timeout", "error")
# Left-out reasons, worst first: the reason of an optimization measured on several hosts is its worst one.
WHY_ORDER = ("crashed", "regressed", "inconclusive", "not_significant", "no_effect", "not_applicable", "not_measured",
             "stack_not_better", "not_yet_searched")
STACK_VARIANT = "stack"


def is_stacked(entry):
    """A variant that measures a stack of optimizations (its cell records `stacked`), not a single one."""
    name = entry.get("variant") or entry.get("id") or ""
    return bool(entry.get("stacked")) or name == STACK_VARIANT or name.startswith(STACK_VARIANT + "_")


def is_stage_baseline(entry):
    """The baseline a stack stage measured again beside a stack (its cell's `baseline_of`; by name for a cell the
    report synthesized for a host that never reached it)."""
    name = entry.get("variant") or ""
    prefix = BASELINE + "_"
    return bool(entry.get("baseline_of")) or (name.startswith(prefix) and is_stacked({"variant": name[len(prefix):]}))


def _why(verdict):
    if verdict in FAILED:
        return "crashed"
    if verdict in ("regressed", "mixed"):
        return "regressed"
    if verdict == "neutral":
        return "not_significant"
    if verdict in ("not_applicable", "no_effect"):
        return verdict
    if verdict == "skipped":
        return "not_measured"
    return "inconclusive"


def changes_against(base, other):
    """What `other` changes against `base`: {key: new value}, None for a key it removes."""
    changed = {k: v for k, v in (other or {}).items() if (base or {}).get(k) != v}
    changed.update({k: None for k in base or {} if k not in (other or {})})
    return changed


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


def split_variants(summary, merged):
    """({optimization: its summary entries, one per host}, [the stacks measured, each with its cell's `stacked`]):
    the baseline, the A/A and the baselines of stack stages are neither."""
    entries, stacks = {}, []
    for v in summary["variants"]:
        if v["variant"] in (BASELINE, AA_VARIANT) or is_stage_baseline(v):
            continue
        if is_stacked(dict(v, stacked=(merged.get((v["host"], v["variant"])) or {}).get("stacked"))):
            stacks.append(dict(v, stacked=(merged.get((v["host"], v["variant"])) or {}).get("stacked")))
        else:
            entries.setdefault(v["variant"], []).append(v)
    return entries, stacks


def choose_candidates(summary, entries, merged, metric):
    """(candidates, left out): an optimization improved on every host is a candidate, with its weakest host's gain
    and its changes against that host's baseline; any other is left out with its worst reason."""
    candidates, left_out = [], []
    for name, found in entries.items():
        if all(v["verdict"] == "improved" for v in found):
            per_host = []
            for v in found:
                cell = merged[(v["host"], name)]
                base_cell = merged.get((v["host"], BASELINE)) or {}
                levels, gain = gain_of(summary, v, metric)
                per_host.append({"host": v["host"], "levels": levels, "gain": gain,
                                 "capacity": capacity_brief(v.get("capacity")),
                                 "flags": changes_against(launch_details(base_cell).get("flags"),
                                                          launch_details(cell).get("flags")),
                                 "env": changes_against(launch_details(base_cell).get("env"),
                                                        launch_details(cell).get("env")),
                                 "conflicts": _conflicts(cell)})
            weakest = min(per_host, key=lambda h: effect(h["gain"]))
            candidates.append(dict(weakest, id=name, title=found[0].get("title"), hosts=[h["host"] for h in per_host],
                                   verdict_reason="; ".join(v.get("verdict_reason") or "" for v in found)))
        else:
            why = min((_why(v["verdict"]) for v in found if v["verdict"] != "improved"), key=WHY_ORDER.index)
            left_out.append({"id": name, "title": found[0].get("title"), "why": why, "hosts": [v["host"] for v in found],
                             "reason": _reason_text(found)})
    candidates.sort(key=lambda c: -effect(c["gain"]))
    return candidates, left_out


def without_conflicts(candidates, left_out):
    """The stack: the candidates in order of measured effect, each unless it conflicts with one already in it (that
    one is left out as `conflicting`, appended to `left_out`)."""
    stack = []
    for candidate in candidates:
        clash = next(((other, why) for other in stack for why in [_clash(candidate, other)] if why), None)
        if clash:
            other, why = clash
            left_out.append({"id": candidate["id"], "title": candidate["title"], "why": "conflicting",
                             "hosts": candidate["hosts"],
                             "reason": "conflicts with %s, which has the larger measured effect (%s against "
                                       "%s): %s" % (other["id"], effect_text(other["gain"]),
                                                    effect_text(candidate["gain"]), why)})
        else:
            stack.append(candidate)
    return stack
