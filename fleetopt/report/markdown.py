"""report.md: the campaign's Markdown report, and the tables the play prints, from its summary and cells."""
import yaml
from tabulate import tabulate

from fleetopt.analysis.capacity_verdict import METRIC as CAPACITY, capacity_rules
from fleetopt.analysis.conclusion import conclusion_text
from fleetopt.analysis.cost import power_text
from fleetopt.formatting import (against_own_baseline, at_level, fmt, fmt_capacity, fmt_capacity_against, fmt_capacity_range,
                                 fmt_change, fmt_confidence, fmt_goodput, fmt_interval, fmt_mean_ci, fmt_money, fmt_slo)
from fleetopt.analysis.launches import describe_design
from fleetopt.analysis import stats
from fleetopt.report.steal import steal_text
from fleetopt.recommend import STATUS_PROPOSED
from fleetopt.analysis.summary import UNITS_OF_REPLICATION, comparison_method


def matrix_table(rows):
    table = []
    for r in rows:
        delta = r.get("vs_baseline") or {}
        table.append([
            r["variant"], r["host"], r["concurrency"] if r["concurrency"] is not None else "",
            "%s (%s launches)" % (r["trials"], r["launches"]) if (r.get("launches") or 0) > 1 else r["trials"],
            r["verdict"] or r["status"], fmt_mean_ci(r, "output_throughput"), fmt_mean_ci(r, "total_throughput"),
            fmt_mean_ci(r, "mean_ttft_ms", 2), fmt_mean_ci(r, "p99_ttft_ms", 2), fmt_mean_ci(r, "mean_itl_ms", 3),
            fmt((r.get("metrics") or {}).get("request_throughput"), 2), fmt_goodput(r),
            against_own_baseline(r, fmt_change(delta.get("output_throughput"))),
        ])
    headers = ["variant", "host", "conc.", "trials", "verdict", "output tok/s", "total tok/s",
               "TTFT mean ms", "TTFT p99 ms", "ITL mean ms", "req/s", "goodput req/s (share)",
               "output vs baseline [simultaneous CI]"]
    return tabulate(table, headers=headers, tablefmt="github")


def verdict_table(variants, metric=None):
    table = []
    for v in variants:
        levels = ", ".join(
            "c=%s %s%s" % (lv["concurrency"], lv["verdict"] or "untested",
                           " (%s)" % fmt_change(lv["change"]) if lv.get("change") else "")
            for lv in v["levels"]
        )
        if metric == CAPACITY:
            levels = fmt_capacity_against(v) if v["variant"] != "baseline" else fmt_capacity(v.get("capacity"))
        why = v.get("root_cause") or v.get("reason") or ""
        if v.get("remedy"):
            why += " Remedy: %s" % v["remedy"]
        if v.get("verdict_reason") and v.get("status") == "ok":
            why = v["verdict_reason"]
        if v.get("baseline_of"):
            why = "the baseline measured again beside %s, against the matrix's: the drift between the stages (%s)" % (
                v["baseline_of"], why)
        table.append([v["variant"], v["host"], v["verdict"] or "untested", levels, why])
    return tabulate(table, headers=["optimization", "host", "verdict",
                                    "capacity against its baseline" if metric == CAPACITY else "per concurrency", "why"],
                    tablefmt="github")


def verdict_rules(settings):
    if settings["verdict_metric"] == CAPACITY:
        text = capacity_rules(settings["confidence"])
        if not settings.get("slo"):
            text += (" No SLO was set (campaign_slo), so every verdict is inconclusive: set SLOs, or give them to the "
                     "report (--slo).")
        return text
    return (
        "Against the same host's baseline on %s (a stack measured after the matrix against the baseline measured "
        "again beside it in its stage: the matrix's could be hours old), from the interval of the relative change "
        "(%s) at %d %% confidence; intervals are simultaneous over the m levels (Bonferroni) a variant was compared at, so "
        "each level's interval is at 1 - %.2f/m. improved / regressed: the interval excludes 0 and the change "
        "is at least %.1f %%; neutral: two one-sided tests at %s %% each show the change inside ±%.1f %% (its "
        "%s %% equivalence interval lies inside the band), at each level on its own, since an optimization is "
        "neutral only where every level is; otherwise inconclusive (the reason names the intervals, the spread "
        "and the trials). A level the variant failed while the baseline measured counts as failed: mixed with an "
        "improved level, regressed without." % (
            settings["verdict_metric"], comparison_method(settings),
            round(settings["confidence"] * 100), 1 - settings["confidence"],
            settings["min_effect_pct"], fmt_confidence(1 - settings["confidence"]), settings["min_effect_pct"],
            fmt_confidence(stats.equivalence_level(settings["confidence"]))))


def capacity_text(summary):
    """The capacity of each measured variant under the SLOs, or why there is none."""
    slo = (summary.get("settings") or {}).get("slo") or {}
    if not slo:
        return ("No SLO was set (campaign_slo): no capacity, and no goodput counted. Set p99 limits in ms, e.g. "
                "campaign_slo: {p99_ttft_ms: 2000, p99_tpot_ms: 50, p99_itl_ms: 50}.")
    table = []
    for v in summary["variants"]:
        found = v.get("capacity") or {}
        levels = ", ".join("c=%s %d/%d" % (lv["concurrency"], lv["holds_in"], lv["trials"]) for lv in found.get("levels") or [])
        table.append([v["variant"], v["host"], fmt_capacity(found), fmt_capacity_range(found), levels,
                      found.get("reason") or ""])
    source = "as measured" if (summary["settings"].get("slo_source") == "cells") else "given to the report"
    taken = (" The verdicts are taken on these capacities (campaign_verdict_metric: capacity; see Verdicts)."
             if summary["settings"].get("verdict_metric") == CAPACITY else "")
    return ("SLOs (%s): %s.%s Capacity is the highest measured concurrency up to which every SLO holds on the mean "
            "of the runs' p99 figures (every run must succeed); over the trials, the range of each trial's own "
            "capacity; per level, the runs that met every SLO. Goodput (matrix) is counted by the benchmark client "
            "for the per-request SLOs (TTFT, TPOT) where it has a goodput option.\n\n" % (source, fmt_slo(slo), taken)
            + tabulate(table, headers=["variant", "host", "capacity", "over the trials", "runs meeting the SLOs",
                                       "why"], tablefmt="github"))


def cost_text(summary, cells):
    """Each variant's cost per million output tokens at its capacity, where its host has a price."""
    priced = [v for v in summary["variants"] if v.get("cost")]
    lines = [power_text(cells), ""]
    if not priced:
        return "\n".join(lines + ["No price per host-hour was given (campaign_cost_per_host_hour): no cost per "
                                  "million tokens."])
    table = []
    for v in priced:
        cost = v["cost"]
        interval = ("[%s, %s]" % (fmt_money(cost["low"]), fmt_money(cost["high"]))
                    if cost.get("low") is not None and cost.get("high") is not None else "")
        table.append([v["variant"], v["host"], fmt_money(cost["price_per_host_hour"]),
                      "" if cost["concurrency"] is None else "c=%s" % cost["concurrency"],
                      fmt_money(cost["per_million_output_tokens"]), interval,
                      fmt(cost.get("output_tokens_per_joule")), cost["basis"]])
    source = "as the cells recorded it" if summary["settings"].get("cost_source") == "cells" else "given to the report"
    return "\n".join(lines + [
        "Price per host-hour %s; cost per million output tokens = price / (output tokens per second x 3600) x 1e6, "
        "its interval from the interval of the mean output throughput." % source, "",
        tabulate(table, headers=["variant", "host", "price per hour", "level", "per million output tokens", "interval",
                                 "output tokens per joule", "level chosen"], tablefmt="github")])


def _flag_changes(changes):
    return ", ".join("%s removed" % k if v is None else k if v is True else "%s=%s" % (k, v)
                     for k, v in (changes or {}).items()) or "none"


def measured_text(proposal):
    """What the stack measured as one launch: against the baseline, and against the best single candidate."""
    measured = proposal.get("measured")
    if not measured:
        return []
    gain = measured["gain"]
    lines = ["Measured as one launch (%s, on %s) against %s: %s, %s%s." % (
        " + ".join(measured["composes"]) or measured["variant"], ", ".join(measured["hosts"]),
        measured.get("against") or "the baseline", measured["verdict"], fmt_change(gain) or "no change measured",
        at_level(gain))]
    if proposal.get("verifies"):
        lines[0] += " This campaign verifies the recommendation of campaign %s." % proposal["verifies"]
    drift = measured.get("baseline_drift")
    if drift:
        lines.append("That baseline against the matrix's, the drift of the host between the two stages (kept out of "
                     "the stack's effect): %s, %s%s." % (drift["verdict"], fmt_change(drift) or "no change measured",
                                                         at_level(drift)))
    versus = measured.get("vs_best_single")
    if versus:
        shown = fmt_change(versus.get("gain")) or "not compared"
        compared = " compared %s" % versus["compared"] if versus.get("compared") else ""
        lines.append("The stack against %s alone, the best single candidate,%s: %s, %s (%s)." % (
            versus["id"], compared, versus["verdict"], shown, versus.get("reason") or ""))
    return lines + [""]


def search_text(proposal):
    """The greedy search's steps, each against the configuration it was to improve on."""
    search = proposal.get("search")
    if not search:
        return []
    lines = ["Greedy search (the full stack was not better than its best single candidate): each step adds one "
             "candidate to the kept ones and is kept when it improves significantly over them.", ""]
    lines += ["- %s against %s%s: %s, %s (%s)" % (
        " + ".join(step["composes"]), step["against"], ", compared %s" % step["compared"] if step.get("compared") else "",
        step["verdict"], "kept" if step["kept"] else "not kept", step["reason"]) for step in search["steps"]]
    if search.get("next"):
        lines.append("- next step: %s (`-e recommend=true` on the same campaign id measures it)" % " + ".join(
            search["next"]))
    return lines + [""]


def recommendation_text(proposal):
    """The Recommendation section: what to deploy, its gains and capacity, what was left out."""
    lines = ["**Status: %s.**" % proposal["status"]]
    if proposal["status"] == STATUS_PROPOSED:
        lines[0] += (" Each candidate was measured alone against the baseline; the stack of them has not been "
                     "measured as one launch.")
    if proposal.get("stacked_variant") and not proposal.get("measured") and proposal["status"] == STATUS_PROPOSED:
        lines[0] += " Measure it: `-e recommend=true` (`fleetopt run --recommend`)."
    lines += ["", "Written to `recommended.yml`. Recommended, in order of measured effect: %s." % (
        ", ".join(proposal["stack"]) or "none (the baseline)"), ""]
    lines += measured_text(proposal) + search_text(proposal)
    if proposal["candidates"]:
        table = [[c["id"], ", ".join(c["hosts"]), "flags: %s; env: %s" % (_flag_changes(c["flags"]), _flag_changes(c["env"])),
                  (fmt_change(c["gain"]) or "n/a") + at_level(c["gain"]),
                  fmt_capacity(dict(c["capacity"] or {}, slo=proposal["slo"]))]
                 for c in proposal["candidates"]]
        gain = "%s gain%s" % (proposal["verdict_metric"],
                              "" if proposal["verdict_metric"] == CAPACITY else " [simultaneous CI]")
        lines += [tabulate(table, headers=["candidate", "host", "changes", gain, "capacity"], tablefmt="github"), ""]
    baseline = (proposal.get("baseline") or {}).get("capacity")
    if proposal["slo"] and baseline:
        lines += ["Baseline capacity under the SLOs (%s): %s (%s)." % (fmt_slo(proposal["slo"]),
                  fmt_capacity(dict(baseline, slo=proposal["slo"])), baseline.get("reason")), ""]
    lines += ["Inventory variables:", "", "```yaml",
              yaml.safe_dump(proposal["inventory"], sort_keys=False, default_flow_style=False).rstrip(), "```", ""]
    if proposal["launch"]["command"]:
        lines += ["Launch command:", "", "```", proposal["launch"]["command"], "```", ""]
    if proposal["left_out"]:
        lines += ["Left out:", "", tabulate([[e["id"], ", ".join(e["hosts"]), e["why"], e["reason"]]
                                             for e in proposal["left_out"]],
                                            headers=["optimization", "host", "why", "reason"], tablefmt="github"), ""]
    lines += ["- %s" % note for note in proposal.get("notes") or []]
    return "\n".join(lines).rstrip()


def design_text(settings):
    text = describe_design(settings.get("design"))
    text = "Design: %s" % text if text else "Design: one server launch per variant."
    unit = UNITS_OF_REPLICATION.get(settings.get("unit_of_replication"))
    return "%s Unit of replication: %s." % (text if text.endswith(".") else text + ".", unit) if unit else text


def resolves_text(host):
    """What the host's A/A says about the smallest change it resolves, and how to judge at it when the gate holds."""
    if host.get("resolves_pct") is None:
        return ""
    text = " Its noise resolves changes of %.1f %% or more" % host["resolves_pct"]
    if host["gate"]:
        text += (": judged at that minimum effect (`fleetopt report` with `--min-effect %.1f`), its A/A would be "
                 "neutral; more launches or trials resolve smaller changes" % host["resolves_pct"])
    return text + "."


def aa_text(summary):
    lines = []
    for host in summary.get("aa") or []:
        if not host["aa"]:
            lines.append("- %s: A/A was off; its verdicts are not checked against the host's noise." % host["host"])
        elif host["gate"]:
            lines.append("- %s: %s. Every other verdict of this host is inconclusive (the verdict before this "
                         "gate is kept as verdict_before_aa).%s" % (host["host"], host["gate"], resolves_text(host)))
        else:
            lines.append("- %s: the baseline is equivalent to itself (A/A neutral: %s).%s" % (
                host["host"], host["reason"], resolves_text(host)))
    return "\n".join(lines)


def noise_floor_text(summary):
    floor = summary.get("noise_floor") or []
    if not floor:
        return "No A/A run in this campaign (it was turned off: `-e aa=false`).\n\n" + \
            aa_text(summary)
    table = tabulate(
        [[f["host"], f["concurrency"], f["verdict"], fmt_change(f), fmt_interval(f.get("eq_low_pct"), f.get("eq_high_pct")),
          f.get("reason") or ""] for f in floor],
        headers=["host", "conc.", "baseline vs itself", "change [simultaneous CI]", "equivalence interval", "why"],
        tablefmt="github")
    return aa_text(summary) + "\n\n" + table


def problems_table(cells):
    table = []
    for cell in cells:
        if cell["status"] == "ok":
            continue
        failure = cell.get("failure") or {}
        table.append([
            cell["variant"], cell["host"], cell["status"], failure.get("failure_class") or "",
            failure.get("root_cause") or cell.get("reason") or "", failure.get("remedy") or "",
        ])
    if not table:
        return "None."
    return tabulate(table, headers=["variant", "host", "status", "class", "root cause / reason", "remedy"],
                    tablefmt="github")


def startup_table(cells):
    table = []
    for cell in cells:
        startup = cell.get("startup") or {}
        phases = startup.get("phases") or {}
        if not phases:
            continue
        parts = ", ".join("%s %s s" % (name, fmt(p.get("duration_s"))) for name, p in phases.items())
        table.append([cell["variant"], cell["host"], fmt(startup.get("startup_s")), parts])
    if not table:
        return "No server was started."
    return tabulate(table, headers=["variant", "host", "ready after s", "phases"], tablefmt="github")


def client_cost_text(cells):
    """The benchmark client's wall time against what it measured, and runs where it may have been the limit."""
    benches = [c.get("benchmark") or {} for c in cells]
    wall = sum(b.get("client_wall_s") or 0.0 for b in benches)
    measured = sum(b.get("measured_s") or 0.0 for b in benches)
    if not wall:
        return "- benchmark client: cost not recorded"
    bound = [(c["variant"], lv["concurrency"]) for c in cells for lv in c.get("levels") or [] if lv.get("client_bound")]
    text = "- benchmark client: %.0f s of wall time for %.0f s measured (overhead %.0f %%)" % (
        wall, measured, (wall - measured) / wall * 100)
    warmups = [(c, w) for c in cells for w in (c.get("benchmark") or {}).get("warmup") or []]
    if warmups:
        unsettled = ["%s launch %s c=%s (%s)" % (c["variant"], c.get("launch_number") or 1, w.get("concurrency"),
                                                 w.get("stopped_by")) for c, w in warmups if not w.get("settled")]
        text += "; warm-up runs %.0f s (%d runs; %d of %d new servers settled%s)" % (
            sum(b.get("warmup_s") or 0.0 for b in benches), sum(len(w.get("runs") or []) for c, w in warmups),
            len(warmups) - len(unsettled), len(warmups), "; not settled: " + ", ".join(unsettled) if unsettled else "")
    shorts = [lv["warmup_run"] for c in cells for lv in c.get("levels") or [] if lv.get("warmup_run")]
    if shorts:
        text += "; short warm-ups %.1f s (%d runs, %d requests of %s output tokens)" % (
            sum(w.get("client_run_s") or 0.0 for w in shorts), len(shorts), sum(w.get("num_prompts") or 0 for w in shorts),
            "/".join(str(n) for n in sorted({w.get("output_len") for w in shorts})))
    if bound:
        text += "; %d run(s) client-bound (the client used >= 90 %% of a core, so it may be what limited them): %s" % (
            len(bound), ", ".join(sorted({"%s c=%s" % b for b in bound})))
    return text


def leftovers_text(summary):
    """The servers an interrupted run left, as this campaign found them; empty when there were none."""
    notes = summary.get("leftover_servers") or []
    if not notes:
        return []
    return ["## Servers left by an interrupted run", "",
            "What the campaign found in each host's server slot before that host's variants ran "
            "(a server nothing renews runs for at most campaign_lease_s):", ""] + ["- %s" % n["text"] for n in notes] + [""]


def render_markdown(summary, cells):
    first = cells[0] if cells else {}
    bench = first.get("benchmark") or {}
    host = ((first.get("provenance") or {}).get("host") or {})
    lines = [
        "# fleetopt campaign %s" % summary["campaign"],
        "",
        conclusion_text(summary),
        "",
    ] + ([
        "## Recommendation",
        "",
        recommendation_text(summary["recommendation"]),
        "",
        "## Campaign",
        "",
    ] if summary.get("recommendation") else []) + [
        "- engine: %s %s" % (summary["engine"], summary.get("engine_version") or ""),
        "- hosts: %s (%s, %s CPUs, %s GPUs)" % (
            ", ".join(summary["hosts"]), host.get("cpu_model"), host.get("cpu_count"), host.get("gpu_count")),
        "- benchmark: concurrency %s, %s trial(s), %s input / %s output tokens" % (
            bench.get("concurrency"), bench.get("trials"), bench.get("input_len"), bench.get("output_len")),
        client_cost_text(cells),
        "- " + steal_text(cells),
        "- fleetopt revision: %s; generated %s" % (summary.get("fleetopt_revision"), summary["generated_at"]),
        "",
        "## Verdicts",
        "",
        verdict_rules(summary["settings"]),
        "",
        design_text(summary["settings"]),
        "",
        verdict_table(summary["variants"], summary["settings"]["verdict_metric"]),
        "",
        "## Capacity under the SLOs",
        "",
        capacity_text(summary),
        "",
        "## Cost and energy",
        "",
        cost_text(summary, cells),
        "",
        "## Noise floor",
        "",
        noise_floor_text(summary),
        "",
        "## Matrix",
        "",
        matrix_table(summary["cells"]),
        "",
        "## Not measured",
        "",
        problems_table(cells),
        "",
    ] + leftovers_text(summary) + [
        "## Start-up",
        "",
        startup_table(cells),
        "",
    ]
    return "\n".join(lines)
