"""What a host's A/A says after its first launch of each side: said early, so that a user knows within minutes what
the campaign will be able to tell.

With two or more launches per variant the baseline and its A/A are the first two launches of a host (the first round's
pair; the last round ends with them, so every configuration keeps the same mean position in the order). Once both have
run, the two cells are judged as the report will judge them, with what there is: one launch a side, so the trials are
the unit. That is the noise of the launches' own trials; the spread from one launch to the next is measured only once
each side has run again, and the campaign's A/A adds it.
"""
import pathlib

from fleetopt.analysis.launches import launch_number
from fleetopt.analysis.summary import AA_VARIANT, BASELINE, build_summary, load_cells
from fleetopt.analysis.verdict_metrics import CAPACITY
from fleetopt.formatting import TERMINAL_WIDTH, fill_for_terminal, fmt_unsigned_pct

# How the play's line begins after the host's name (tests/benchmarks/first_run.py times the campaign by it).
HEADING = "early A/A (the first launch of the baseline against the first of its copy"


def first_pair(cells, host):
    """The host's first launch of the baseline and of its A/A, or None while either is missing."""
    found = {c["variant"]: c for c in cells
             if c.get("host") == host and c.get("variant") in (BASELINE, AA_VARIANT)
             and launch_number(c) == 1 and not c.get("stacked")}
    if BASELINE not in found or AA_VARIANT not in found:
        return None
    return [found[BASELINE], found[AA_VARIANT]]


def early_aa(campaign_dir, host, verdict_metric="output_throughput", confidence=0.95, min_effect_pct=5.0):
    """{host, status, levels: [{concurrency, change_pct, eq_low_pct, eq_high_pct}], resolves_pct, min_effect_pct}
    from the host's first launch of each side; status `missing` (a side has not run), `failed` (a side did not
    measure), `ok`. On capacity, which has no level intervals, output throughput is read."""
    verdict_metric = "output_throughput" if verdict_metric == CAPACITY else verdict_metric
    pair = first_pair(load_cells(campaign_dir), host)
    result = {"host": host, "status": "missing", "levels": [], "resolves_pct": None, "min_effect_pct": min_effect_pct}
    if pair is None:
        return result
    if any(c["status"] != "ok" for c in pair):
        result["status"] = "failed"
        result["reason"] = "; ".join("%s: %s" % (c["variant"], c.get("reason") or c["status"])
                                     for c in pair if c["status"] != "ok")
        return result
    summary = build_summary(pathlib.Path(campaign_dir), pair, verdict_metric, confidence, min_effect_pct)
    aa = next(h for h in summary["aa"] if h["host"] == host)
    result.update(status="ok", resolves_pct=aa["resolves_pct"], levels=[
        {"concurrency": f["concurrency"], "change_pct": f["change_pct"], "eq_low_pct": f["eq_low_pct"],
         "eq_high_pct": f["eq_high_pct"]} for f in summary["noise_floor"] if f["host"] == host])
    return result


def _level_words(level):
    if level["eq_low_pct"] is None:
        return "c=%s %+.1f %%" % (level["concurrency"], level["change_pct"])
    return "c=%s %+.1f %% [%+.1f, %+.1f]" % (
        level["concurrency"], level["change_pct"], level["eq_low_pct"], level["eq_high_pct"])


def early_aa_text(result):
    """Two sentences for the play: the first A/A pair per level, and what that means for the campaign."""
    host, minimum = result["host"], result["min_effect_pct"]
    if result["status"] == "missing":
        return "%s: no early A/A yet (its baseline and A/A have not both run)." % host
    if result["status"] == "failed":
        return "%s: no early A/A: %s." % (host, result["reason"])
    first = "%s, %s, trials as the unit, 90 %% equivalence intervals): %s." % (
        host, HEADING, ", ".join(_level_words(lv) for lv in result["levels"]))
    resolves = result["resolves_pct"]
    if resolves is None:
        return first + " Its trials give no interval at some level (fewer than two), so nothing can be said early."
    said = " Judged on these trials alone, this host resolves changes of %s or more; the campaign's A/A adds the " \
           "spread from one launch to the next, measured once both have run again." % fmt_unsigned_pct(resolves)
    if resolves > minimum:
        said += " That is more than the campaign's minimum effect of %s already: expect the A/A gate to hold the " \
                "verdicts back, and read what would decide them at the end." % fmt_unsigned_pct(minimum)
    else:
        said += " The campaign's minimum effect is %s; whether its A/A resolves that is known at the end." % (
            fmt_unsigned_pct(minimum))
    return first + said


def main(args):
    text = early_aa_text(early_aa(args.campaign_dir, args.host, args.verdict_metric, args.confidence, args.min_effect))
    print(fill_for_terminal(text, TERMINAL_WIDTH))
    return 0
