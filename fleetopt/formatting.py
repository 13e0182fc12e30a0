"""How numbers read in every report (Markdown, HTML, the play's table)."""


def fmt(value, digits=1):
    return "" if value is None else "%.*f" % (digits, value)


def fmt_pct(value):
    return "" if value is None else "%+.1f %%" % value


def fmt_change(comparison):
    """'+5.2 % [+1.0, +9.4]' from a stats.compare result (empty when there is none)."""
    if not comparison or comparison.get("change_pct") is None:
        return ""
    text = fmt_pct(comparison["change_pct"])
    if comparison.get("ci_low_pct") is not None:
        text += " [%+.1f, %+.1f]" % (comparison["ci_low_pct"], comparison["ci_high_pct"])
    return text


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
