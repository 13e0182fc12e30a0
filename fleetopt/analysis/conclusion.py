"""The campaign's end in two or three plain sentences, from its summary.json: what was decided, what each host could
resolve, and what would decide the rest.

The play's last lines, the top of report.md and the top of report.html all show these sentences; they only shape them.
What would decide the rest is chosen from the A/A's own data: where the launch means spread more than their own trials
explain, more trials cannot help. The launches per variant that would resolve the campaign's minimum effect are
planned from the launch-to-launch spread the A/A measured, as the report will judge them (launch means, the spread
pooled over the host's configurations with each round's shift taken out, the equivalence interval's t quantile): the
fewest launches with which an A/A of a host that noisy comes out neutral 4 times in 5. Past a few of them only another
host (quieter, or with a GPU) would.
"""
import math

from scipy import stats

from fleetopt.analysis.summary import AA_VARIANT, BASELINE, trials_by_launch
from fleetopt.analysis.verdict_metrics import CAPACITY
from fleetopt.formatting import fill_for_terminal, fmt_unsigned_pct

# The order, and the words, in which the decided sentence counts verdicts; any other verdict follows as it is named.
VERDICT_WORDS = (
    ("improved", "improved"), ("regressed", "regressed"), ("mixed", "mixed (better at some levels, worse at others)"),
    ("neutral", "neutral"), ("no_effect", "had no effect (the server ran the baseline's configuration)"),
    ("crashed", "crashed"), ("blocked", "blocked"), ("timeout", "timed out"),
    ("not_applicable", "not applicable"), ("inconclusive", "inconclusive"), (None, "not measured"),
)
# Launches per variant that a campaign can still be asked for; past that, the host itself has to change.
PRACTICAL_LAUNCHES = 8
# How often a planned A/A should come out neutral: the normal quantile that leaves (1 - 0.8) / 2 on each side.
PLAN_QUANTILE = 1.2816
MOST_LAUNCHES = 1000


THIS_FOLDER = "<this campaign's folder>"


def _count_words(counts, notes):
    """'2 improved, 1 crashed and 3 inconclusive (the A/A gate held back 1 regressed)' from {verdict: count}."""
    counts = dict(counts)
    parts = []
    for key, word in VERDICT_WORDS:
        if counts.get(key):
            parts.append("%d %s%s" % (counts.pop(key), word, notes.get(key, "")))
    parts += ["%d %s" % (n, key) for key, n in sorted(counts.items(), key=lambda item: str(item[0]))]
    return parts[0] if len(parts) == 1 else "%s and %s" % (", ".join(parts[:-1]), parts[-1])


def judged(summary):
    """The variants this campaign judged: every one but the baseline, its A/A and a stage's baseline measured again."""
    return [v for v in summary.get("variants") or []
            if v["variant"] not in (BASELINE, AA_VARIANT) and not v.get("baseline_of")]


def held_back(summary):
    """{verdict it would have had: count} of the judged variants whose decided verdict the A/A gate held back."""
    held = {}
    for v in judged(summary):
        before = v.get("verdict_before_aa")
        if before and before != "inconclusive":
            held[before] = held.get(before, 0) + 1
    return held


def decided_sentence(summary):
    variants = judged(summary)
    hosts = sorted({v["host"] for v in variants})
    counts = {}
    for v in variants:
        counts[v.get("verdict")] = counts.get(v.get("verdict"), 0) + 1
    held = held_back(summary)
    notes = {}
    if held:
        notes["inconclusive"] = " (the A/A gate held back %s)" % _count_words(held, {})
    if not variants:
        text = "No optimization was measured against the baseline"
    else:
        what = "%d optimization%s" % (len(variants), "" if len(variants) == 1 else "s")
        if len(hosts) > 1:
            what = "%d verdicts (optimizations on %d hosts)" % (len(variants), len(hosts))
        text = "Of %s, %s" % (what, _count_words(counts, notes))
    proposal = summary.get("recommendation")
    if proposal is None:  # a summary read before its recommendation was made
        return text + "."
    if proposal.get("stack"):
        return text + "; recommended: %s (%s)." % (", ".join(proposal["stack"]), proposal.get("status"))
    return text + "; nothing to recommend: keep the baseline."


def _gpus(summary, host):
    """The host's GPU count as its cells recorded it; else 1 when its board power was read by nvidia-smi; else None."""
    known = (summary.get("host_gpus") or {}).get(host)
    if known is not None:
        return known
    power = ((summary.get("settings") or {}).get("benchmark") or {}).get("power") or {}
    return len(power.get("gpus") or [0]) if power.get("sampled") else None


def _aa_clause(summary, host):
    name, minimum = host["host"], summary["settings"]["min_effect_pct"]
    held = ", and the A/A gate held its verdicts back" if host.get("gate") else ""
    if not host.get("aa"):
        return "on %s no A/A ran (`-e aa=false`), so nothing says what its noise resolves" % name
    if host.get("resolves_pct") is None:
        if summary["settings"].get("verdict_metric") == CAPACITY:
            return "on %s the A/A on capacity was %s (a smallest resolvable change is not computed on capacity)%s" % (
                name, host.get("verdict") or "not made", held)
        return "on %s the A/A was %s and tells no smallest change it resolves%s" % (
            name, host.get("verdict") or "not made", held)
    return ("on %s the A/A (the baseline against itself) says it resolves changes of %s or more, against the "
            "campaign's minimum effect of %s, so %s" % (
                name, fmt_unsigned_pct(host["resolves_pct"]), fmt_unsigned_pct(minimum),
                "the A/A gate held its verdicts back" if host.get("gate") else "its verdicts stand"))


def resolves_sentence(summary):
    """What each host could resolve, and whether the A/A gate held its verdicts back."""
    text = "; ".join(_aa_clause(summary, h) for h in summary.get("aa") or [])
    return text[0].upper() + text[1:] + "." if text else ""


def _aa_level(summary, host):
    """The A/A's noise-floor entry with the widest equivalence bound on this host (the one resolves_pct comes from)."""
    floor = [f for f in summary.get("noise_floor") or [] if f["host"] == host
             and f.get("eq_low_pct") is not None and f.get("eq_high_pct") is not None]
    return max(floor, key=lambda f: max(-f["eq_low_pct"], f["eq_high_pct"])) if floor else None


def _row(summary, host, variant, concurrency):
    return next((r for r in summary.get("cells") or [] if r["host"] == host and r["variant"] == variant
                 and r["concurrency"] == concurrency), None)


def trial_cv_pct(rows, metric):
    """The spread of the trials within a launch (coefficient of variation, %, pooled over the launches of the rows
    that ran two trials or more), or None where no launch ran two trials."""
    squares, df, total, n = 0.0, 0, 0.0, 0
    for row in rows:
        for values in trials_by_launch(row, metric).values():
            total, n = total + sum(values), n + len(values)
            if len(values) > 1:
                mean = sum(values) / len(values)
                squares += sum((v - mean) ** 2 for v in values)
                df += len(values) - 1
    if not df or not total:
        return None
    return math.sqrt(squares / df) / (total / n) * 100.0


def noise_of(summary, host):
    """What the host's A/A says about where its noise is, at its noisiest level: {concurrency, launches,
    configurations (launched more than once there), eq_confidence, trials_per_launch, launch_cv_pct (None with one
    launch per configuration: then aa_change_pct, the A/A's two launches apart), trial_cv_pct}; None without a
    measured A/A."""
    level = _aa_level(summary, host)
    if level is None:
        return None
    metric = summary["settings"]["verdict_metric"]
    aa = _row(summary, host, AA_VARIANT, level["concurrency"])
    base = _row(summary, host, BASELINE, level["concurrency"])
    if aa is None or base is None:
        return None
    compared = (aa.get("vs_baseline") or {}).get(metric) or {}
    launches = max(aa.get("launches") or 1, 1)
    launched = [r for r in summary.get("cells") or [] if r["host"] == host and r["concurrency"] == level["concurrency"]
                and r["status"] == "ok" and (r.get("launches") or 1) > 1]
    return {"concurrency": level["concurrency"], "launches": launches, "configurations": len(launched),
            "eq_confidence": compared.get("eq_confidence") or level.get("eq_confidence") or 0.9,
            "trials_per_launch": max((aa.get("trials") or launches) / float(launches), 1.0),
            "launch_cv_pct": compared.get("launch_cv_pct"), "aa_change_pct": level.get("change_pct"),
            "trial_cv_pct": trial_cv_pct([aa, base], metric)}


def launches_to_resolve(launch_cv_pct, minimum_pct, configurations, eq_confidence=0.9):
    """The fewest launches per configuration (at most MOST_LAUNCHES) with which an A/A on a host whose launch means
    spread by `launch_cv_pct` shows equivalence within `minimum_pct` 4 times in 5: the difference of two means of L
    launch means, with (configurations - 1)(L - 1) degrees of freedom (rounds as blocks), its equivalence interval's
    half-width plus the A/A's own scatter inside the band."""
    spread = math.sqrt(math.log1p((launch_cv_pct / 100.0) ** 2))
    band = math.log1p(minimum_pct / 100.0)
    for launches in range(2, MOST_LAUNCHES + 1):
        df = max(configurations - 1, 1) * (launches - 1)
        quantile = float(stats.t.ppf(1 - (1 - eq_confidence) / 2, df))
        if (quantile + PLAN_QUANTILE) * spread * math.sqrt(2.0 / launches) <= band:
            return launches
    return None


def launch_spread(noise):
    """The CV (%) of one launch's mean to plan launches with: the launch-to-launch spread the A/A measured (with one
    launch per configuration, its two launches' difference over sqrt(2)), and at least what the launch's own trials
    make of it, as the report judges a launch mean (stats.launch_mean_floor); None where neither was measured."""
    spread = noise["launch_cv_pct"]
    if spread is None and noise["aa_change_pct"] is not None:
        spread = abs(noise["aa_change_pct"]) / math.sqrt(2.0)
    floor = None if noise["trial_cv_pct"] is None else noise["trial_cv_pct"] / math.sqrt(noise["trials_per_launch"])
    known = [value for value in (spread, floor) if value is not None]
    return max(known) if known else None


def where_noise(noise):
    """'launch' where the launch means spread more than their own trials explain (more trials cannot narrow that),
    'trial' where a launch's trials are most of it, None where the A/A cannot tell (one trial per launch)."""
    trial, spread = noise["trial_cv_pct"], noise["launch_cv_pct"]
    if spread is None and noise["aa_change_pct"] is not None:
        spread = abs(noise["aa_change_pct"]) / math.sqrt(2.0)  # two launch means apart: sqrt(2) launch spreads
    if trial is None or spread is None:
        return None
    from_trials = trial / math.sqrt(noise["trials_per_launch"])
    from_launch = math.sqrt(max(spread ** 2 - from_trials ** 2, 0.0))
    return "launch" if from_launch >= from_trials else "trial"


def _spread_words(noise):
    if noise["launch_cv_pct"] is not None:
        launch = "the launch means vary by %s from launch to launch" % fmt_unsigned_pct(noise["launch_cv_pct"])
    else:
        launch = "the A/A's two launches differ by %s" % fmt_unsigned_pct(abs(noise["aa_change_pct"]))
    return "%s while the trials within a launch vary by %s (c=%s)" % (
        launch, fmt_unsigned_pct(noise["trial_cv_pct"]), noise["concurrency"])


def _other_hosts(gpus):
    """The hosts that would resolve more than this one, by whether it has a GPU (None: not known)."""
    if gpus == 0:
        return ["a quieter host (nothing else on its cores)", "a GPU host"]
    if gpus is None:
        return ["a quieter host", "a GPU host if this one has none"]
    return ["a quieter host (nothing else running on it)"]


def _either(options):
    return options[0] if len(options) == 1 else "%s or %s" % (", ".join(options[:-1]), options[-1])


def _host_advice(summary, host, folder):
    """What would decide this host's inconclusive verdicts, chosen by where its A/A says the noise is."""
    name, minimum = host["host"], summary["settings"]["min_effect_pct"]
    design = summary["settings"].get("design") or {}
    planned = max(design.get("launches") or 1, 1)
    if not host.get("aa"):
        return ("run with the A/A (without `-e aa=false`) to learn what %s resolves; more launches (campaign_launches: "
                "%d) narrow every interval" % (name, 2 * planned))
    resolves = host.get("resolves_pct")
    if resolves is None:
        if summary["settings"].get("verdict_metric") == CAPACITY and not summary["settings"].get("slo"):
            return "set SLOs (campaign_slo, or `fleetopt report --slo`) so that %s's capacity can be judged" % name
        return "an A/A that measures every level with two trials or more (this one was %s) would tell what %s resolves" % (
            host.get("verdict") or "not made", name)
    rejudge = "meanwhile `fleetopt report %s --min-effect %.1f` judges this campaign at what %s resolves" % (
        folder or THIS_FOLDER, resolves, name)
    noise = noise_of(summary, name)
    launches = noise["launches"] if noise else planned
    if resolves <= minimum:
        return ("on %s the A/A resolves the minimum effect, so what is left open is the variants' own: an effect "
                "near the minimum effect, or a spread of their own wider than the baseline's; more launches "
                "(campaign_launches: %d) narrow their intervals" % (name, 2 * launches))
    where = where_noise(noise) if noise else None
    spread = launch_spread(noise) if noise else None
    if spread is None:
        options = ["more launches (campaign_launches: %d)" % (2 * launches)] + _other_hosts(_gpus(summary, name))
        return "on %s %s would narrow the intervals; %s" % (name, _either(options), rejudge)
    needed = launches_to_resolve(spread, minimum, max(noise["configurations"], 2), noise["eq_confidence"])
    needed = needed and max(needed, launches + 1)
    practical = needed is not None and needed <= PRACTICAL_LAUNCHES
    many = "about %d launches" % needed if needed else "more than %d launches" % MOST_LAUNCHES
    others = _other_hosts(_gpus(summary, name))
    if where == "launch":
        text = "on %s %s, so more trials will not help" % (name, _spread_words(noise))
        if practical:
            text += ", more launches will: about %d per variant (campaign_launches: %d) would resolve %s" % (
                needed, needed, fmt_unsigned_pct(minimum))
        else:
            text += ", and resolving %s would take %s per variant: %s would resolve more" % (
                fmt_unsigned_pct(minimum), many, _either(others))
    elif where == "trial":
        text = "on %s %s, so %s would narrow the intervals" % (
            name, _spread_words(noise), _either(["more trials per launch (campaign_bench_trials)"] + others))
        if practical:
            text += "; about %d launches per variant (campaign_launches: %d) would resolve %s" % (
                needed, needed, fmt_unsigned_pct(minimum))
    elif practical:
        text = "on %s about %d launches per variant (campaign_launches: %d) would resolve %s" % (
            name, needed, needed, fmt_unsigned_pct(minimum))
    else:
        text = "on %s resolving %s would take %s per variant: %s would resolve more" % (
            name, fmt_unsigned_pct(minimum), many, _either(others))
    return "%s; %s" % (text, rejudge)


def next_sentence(summary, folder=None):
    """What would decide the inconclusive verdicts, per host that has some; empty when none is inconclusive."""
    open_hosts = []
    for v in judged(summary):
        if v.get("verdict") == "inconclusive" and v["host"] not in open_hosts:
            open_hosts.append(v["host"])
    if not open_hosts:
        return ""
    by_host = {h["host"]: h for h in summary.get("aa") or []}
    advice = [_host_advice(summary, by_host.get(host) or {"host": host, "aa": False}, folder)
              for host in sorted(open_hosts)]
    return "To decide the rest: %s." % "; ".join(advice)


def conclusion(summary, folder=None):
    """The campaign's end as a list of two or three sentences; `folder`, the campaign's folder as the reader would
    name it (none in the report files, which live in it)."""
    return [s for s in (decided_sentence(summary), resolves_sentence(summary), next_sentence(summary, folder)) if s]


def conclusion_text(summary, width=None, folder=None):
    """The sentences as one paragraph; for a terminal (`width`), each sentence on lines of its own of at most that
    many columns."""
    if not width:
        return " ".join(conclusion(summary, folder))
    return "\n".join(fill_for_terminal(s, width) for s in conclusion(summary, folder))
