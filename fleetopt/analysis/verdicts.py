"""One verdict per optimization and host from its per-level verdicts, and the A/A gate.

A level is `improved`, `regressed`, `neutral` or `inconclusive` (fleetopt.analysis.stats.compare), or
`failed`: the variant measured nothing there while the baseline did. A failed level is a
result, never dropped: with an improved level the optimization is `mixed`, without one it is
`regressed`.

The A/A comparison (`baseline_aa`: the baseline measured again as if it were a variant) is the
host's noise floor: when it is not `neutral`, the host cannot tell its baseline from itself and
every other verdict of that host becomes `inconclusive` (the verdict it had is kept beside).
"""

GATED = ("improved", "regressed", "neutral", "mixed", "inconclusive")


def _names(levels):
    return ", ".join("c=%s" % lv["concurrency"] for lv in levels)


def overall_verdict(levels):
    """(verdict, reason) from [{"concurrency", "verdict", "reason"}]; verdict None: not compared."""
    # A level only a capacity search took this side to, which the baseline never measured, has nothing to be
    # compared with: the planned levels, and the searched ones both sides measured, decide.
    searched_only = [lv for lv in levels if lv.get("searched_only")]
    compared = [lv for lv in levels if not lv.get("searched_only")]
    if not compared:
        return "inconclusive", "no level was compared with the baseline"
    by = {}
    for lv in compared:
        by.setdefault(lv.get("verdict") or "uncompared", []).append(lv)
    improved, regressed, failed = by.get("improved", []), by.get("regressed", []), by.get("failed", [])
    neutral = by.get("neutral", [])
    unclear = by.get("inconclusive", []) + by.get("uncompared", [])
    parts = []
    if improved:
        parts.append("improved at %s" % _names(improved))
    if regressed:
        parts.append("regressed at %s" % _names(regressed))
    if failed:
        causes = sorted({lv.get("reason") for lv in failed if lv.get("reason")})
        parts.append("failed at %s (no trial succeeded where the baseline measured%s)" % (
            _names(failed), ": " + "; ".join(causes) if causes else ""))
    if neutral:
        parts.append("neutral at %s" % _names(neutral))
    if unclear:
        parts.append("inconclusive at %s" % _names(unclear))
    if searched_only:
        parts.append("not compared at %s (searched only here)" % _names(searched_only))
    reason = "; ".join(parts)
    if improved and (regressed or failed):
        return "mixed", reason
    if regressed or failed:
        return "regressed", reason
    if improved:
        return "improved", reason
    if neutral and not unclear:
        return "neutral", reason
    details = "; ".join("c=%s: %s" % (lv["concurrency"], lv.get("reason") or "not compared") for lv in unclear)
    return "inconclusive", "%s (%s)" % (reason, details)


def aa_gate(aa_verdict, aa_reason):
    """The reason that overrides a host's verdicts, or None when its A/A comparison is neutral."""
    if aa_verdict == "neutral":
        return None
    return "the host's A/A comparison (baseline vs itself) was %s: %s" % (aa_verdict or "not made",
                                                                          aa_reason or "no reason recorded")


def apply_aa_gate(entry, gate_reason, key="verdict", reason_key="verdict_reason"):
    """Make `entry`'s verdict inconclusive under `gate_reason`, keeping what it was."""
    if gate_reason is None or entry.get(key) not in GATED:
        return entry
    entry["verdict_before_aa"] = entry[key]
    entry["verdict_reason_before_aa"] = entry.get(reason_key)
    entry[key] = "inconclusive"
    entry[reason_key] = "%s; without that gate: %s (%s)" % (gate_reason, entry["verdict_before_aa"],
                                                            entry["verdict_reason_before_aa"] or "")
    return entry
