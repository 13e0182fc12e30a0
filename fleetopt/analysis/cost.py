"""What a million output tokens cost, per variant and host, at the level the variant is judged at.

The level is the variant's capacity under the SLOs (the highest concurrency at which every SLO
holds); without SLOs, its highest measured level, and the report says so. The price is what one
host costs per hour (campaign_cost_per_host_hour, recorded in the host's cells, or given to the
report); the cost is that price over the output tokens the host makes in an hour at that level:

    cost per million output tokens = price per hour / (output tokens per second x 3600) x 1e6

Its interval comes from the interval of the level's mean output throughput. Where the GPUs' board
power was sampled, the level's output tokens per joule come with it.
"""

PER_MILLION = 1e6
SECONDS_PER_HOUR = 3600.0


def host_prices(cells, given=None):
    """{host: price per hour}: `given` for every host, else what each host's cells recorded."""
    prices = {}
    for cell in cells:
        price = given if given is not None else (cell.get("benchmark") or {}).get("cost_per_host_hour")
        if price not in (None, ""):  # "" is what `-e campaign_cost_per_host_hour=` leaves
            prices[cell["host"]] = float(price)
    return prices


def per_million(price, throughput):
    return None if not throughput or throughput <= 0 else price / (throughput * SECONDS_PER_HOUR) * PER_MILLION


def judged_level(variant, slo):
    """(concurrency, why) of the level the cost is read at, or (None, why not)."""
    found = variant.get("capacity") or {}
    if slo:
        if found.get("capacity") is None:
            return None, "no capacity under the SLOs (%s)" % (found.get("reason") or "not measured")
        return found["capacity"], "at its capacity under the SLOs"
    measured = [lv["concurrency"] for lv in variant.get("levels") or [] if lv.get("trials")]
    if not measured:
        return None, "no level was measured"
    return max(measured), "no SLO was set: at its highest measured level"


def variant_cost(variant, rows, price, slo):
    """The cost record of one variant summary on its host, from the matrix rows of that host."""
    if price is None:
        return None
    concurrency, why = judged_level(variant, slo)
    record = {"price_per_host_hour": price, "concurrency": concurrency, "basis": why, "per_million_output_tokens": None,
              "low": None, "high": None, "output_tokens_per_joule": None}
    if concurrency is None:
        return record
    wanted = (variant["host"], variant["variant"], concurrency)
    row = next((r for r in rows if (r["host"], r["variant"], r["concurrency"]) == wanted and r["status"] == "ok"), None)
    if row is None:
        record["basis"] = "c=%s was not measured" % concurrency
        return record
    described = (row.get("stats") or {}).get("output_throughput") or {}
    record["per_million_output_tokens"] = per_million(price, (row.get("metrics") or {}).get("output_throughput"))
    # A higher throughput is a lower cost: the interval's ends swap.
    record["low"] = per_million(price, described.get("ci_high"))
    record["high"] = per_million(price, described.get("ci_low"))
    record["output_tokens_per_joule"] = (row.get("metrics") or {}).get("output_tokens_per_joule")
    return record


def attach_costs(summaries, rows, cells, slo, given_price=None):
    """Each variant summary gains `cost` (None where its host has no price)."""
    prices = host_prices(cells, given_price)
    for variant in summaries:
        variant["cost"] = variant_cost(variant, rows, prices.get(variant["host"]), slo)
    return summaries


def power_text(cells):
    """How the GPUs' board power was sampled on each host, or why it was not."""
    seen = {}
    for cell in cells:
        power = (cell.get("benchmark") or {}).get("power")
        if power and cell["host"] not in seen:
            seen[cell["host"]] = power
    if not seen:
        return "Board power: not recorded by these cells."
    parts = []
    for host, power in sorted(seen.items()):
        if power.get("sampled"):
            gpus = ", ".join(str(g) for g in power.get("gpus") or []) or "none"
            parts.append("%s: %s every %s ms on GPU(s) %s" % (host, power.get("field"), power.get("interval_ms"), gpus))
        else:
            parts.append("%s: not sampled (%s)" % (host, power.get("reason")))
    return ("Board power, the mean over each run's measured window (warm-ups excluded), summed over the host's "
            "GPUs; output tokens per joule are the run's output throughput over it. " + "; ".join(parts) + ".")
