"""How numbers read in every report (Markdown, HTML, the play's table)."""
import textwrap

NO_BREAK = "\u00a0"
# The play's lines that fleetopt writes (the report's last lines, the early A/A) are wrapped to this width.
TERMINAL_WIDTH = 100


def fmt(value, digits=1):
    return "" if value is None else "%.*f" % (digits, value)


def fmt_pct(value):
    return "" if value is None else "%+.1f %%" % value


def fmt_unsigned_pct(value):
    """'7.8 %': a size (a spread, a resolvable effect), not a change; 'n/a' without one."""
    return "n/a" if value is None else "%.1f %%" % value


def fmt_change(comparison):
    """'+5.2 % [+1.0, +9.4]' from a stats.compare result (empty when there is none)."""
    if not comparison or comparison.get("change_pct") is None:
        return ""
    interval = fmt_interval(comparison.get("ci_low_pct"), comparison.get("ci_high_pct"))
    return fmt_pct(comparison["change_pct"]) + (" " + interval if interval else "")


def fmt_interval(low, high):
    """'[-1.2, +2.0]' (empty when there is none)."""
    return "" if low is None or high is None else "[%+.1f, %+.1f]" % (low, high)


def at_level(gain):
    """' at c=4', the level a gain was measured at; '' for one with no level (a gain on capacity over none)."""
    return "" if (gain or {}).get("concurrency") is None else " at c=%s" % gain["concurrency"]


def against_own_baseline(row, change):
    """The change, naming the baseline it is against when that is a stage's own (a stack's), not the campaign's."""
    own = row.get("baseline_variant")
    return "%s vs %s" % (change, own) if change and own and own != "baseline" else change


def fmt_mean_ci(row, metric, digits=1):
    """'512.3 ± 4.1' (mean and half its interval), or the mean alone with a single trial."""
    mean = (row.get("metrics") or {}).get(metric)
    if mean is None:
        return ""
    described = (row.get("stats") or {}).get(metric) or {}
    if described.get("ci_high") is None:
        return fmt(mean, digits)
    return "%s ± %s" % (fmt(mean, digits), fmt(described["ci_high"] - mean, digits))


def fmt_confidence(level):
    """'95' or '98.33' (percent) for a confidence level such as 0.95 or 1 - 0.05/3."""
    return ("%.2f" % (level * 100)).rstrip("0").rstrip(".")


def fmt_money(value):
    """A price or a cost to four significant digits, in the price's own currency; '' without one."""
    return "" if value is None else "%.4g" % value


def fmt_capacity(found):
    """'c=4', '≥ c=16' (every level held) or 'none' from a fleetopt.analysis.capacity result; '' without one."""
    if not found or not found.get("slo"):
        return ""
    if found.get("capacity") is None:
        return "none"
    return ("≥ c=%s" if found.get("at_least") else "c=%s") % found["capacity"]


def fmt_capacity_range(found):
    """The capacities of the trials, 'c=1 to c=4' (one value: 'c=4'); '' without trials."""
    if not found or not found.get("per_trial"):
        return ""
    low, high = found.get("low"), found.get("high")
    high_text = "none" if high is None else ("≥ c=%s" if found.get("high_at_least") else "c=%s") % high
    low_text = "none" if low is None else "c=%s" % low
    return high_text if low_text == high_text or (low == high and low is not None) else "%s to %s" % (low_text, high_text)


def fmt_capacity_with_trials(found):
    """'c=4 (over the trials c=2 to c=4)', the range left out where it says the same; 'none' without a capacity."""
    level, over_trials = fmt_capacity(found) or "none", fmt_capacity_range(found)
    return level + (" (over the trials %s)" % over_trials if over_trials and over_trials != level else "")


def fmt_capacity_against(variant):
    """A variant's capacity against its own baseline's, as the verdict on capacity compared them; '' without one."""
    compared = variant.get("capacity_comparison")
    if not compared:
        return ""
    text = "%s against %s's %s" % (fmt_capacity_with_trials(compared["variant"]), compared["baseline_variant"],
                                   fmt_capacity_with_trials(compared["baseline"]))
    if compared.get("change_pct") is not None:
        text += ", %+.1f %%" % compared["change_pct"]
    return text


def fmt_goodput(row):
    """'9.50 (95 %)': goodput in requests/s and its share of the requests/s; '' where none was counted."""
    good = (row.get("metrics") or {}).get("request_goodput")
    if good is None:
        return ""
    share = row.get("goodput_share")
    return "%.2f" % good + ("" if share is None else " (%.0f %%)" % (share * 100))


def fmt_slo(slo):
    """'p99_ttft_ms <= 2000 ms, p99_itl_ms <= 50 ms'."""
    return ", ".join("%s <= %g ms" % (k, v) for k, v in (slo or {}).items())


def fill_for_terminal(sentence, width):
    """The sentence on lines of at most `width` columns, a number and its unit, and each `command`, kept on one line."""
    parts = sentence.replace(" %", NO_BREAK + "%").split("`")
    unbreakable = "`".join(part.replace(" ", NO_BREAK) if i % 2 else part for i, part in enumerate(parts))
    return textwrap.fill(unbreakable, width, break_on_hyphens=False, break_long_words=False).replace(NO_BREAK, " ")
