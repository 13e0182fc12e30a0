"""The campaign's self-contained HTML report: verdicts, noise floor, plots, matrix, provenance.

One file with inline CSS and inline SVG (no scripts, fonts or images from anywhere), so it
can be mailed, archived or opened from a results share as it is. Everything that comes
from cells is escaped by Jinja2's autoescape; only the SVG made by fleetopt.report.plots is not.
"""
import pathlib
import shlex

import jinja2
from markupsafe import Markup

from fleetopt.report import plots
from fleetopt.analysis.cost import power_text
from fleetopt.report.steal import steal_text
import yaml

from fleetopt.analysis.capacity_verdict import METRIC as CAPACITY, capacity_rules
from fleetopt.analysis.conclusion import conclusion
from fleetopt.formatting import (against_own_baseline, at_level, fmt, fmt_capacity, fmt_capacity_against,
                                 fmt_capacity_range, fmt_change, fmt_goodput, fmt_interval, fmt_mean_ci, fmt_money, fmt_pct, fmt_slo)
from fleetopt.files import write_atomically
from fleetopt.analysis.launches import describe_design, launch_details, launch_number, launch_total
from fleetopt.analysis.summary import UNITS_OF_REPLICATION, comparison_method

TEMPLATES = pathlib.Path(__file__).resolve().parent / "templates"
VERDICTS = ("improved", "neutral", "regressed", "mixed", "inconclusive", "blocked", "crashed", "timeout",
            "not_applicable")
PLOTS = (
    ("throughput", "Output throughput against concurrency",
     "Mean output tokens/s of the trials at each concurrency, per variant; bars are the 95 % confidence "
     "interval of the mean."),
    ("ttft", "Time to first token",
     "Mean TTFT per variant at each concurrency; bars are the 95 % confidence interval of the trial means."),
    ("itl", "Inter-token latency",
     "Mean ITL per variant at each concurrency; bars are the 95 % confidence interval of the trial means."),
    ("startup", "Start-up timeline",
     "Seconds spent in each start-up phase (graph capture and compilation included), from launch to ready; "
     "a cross marks the phase a server failed in."),
)


def fmt_p(comparison):
    value = (comparison or {}).get("p_value")
    return "" if value is None else ("%.3f" % value if value >= 0.001 else "<0.001")


def shell_command(argv):
    return shlex.join(str(a) for a in argv) if argv else ""


def code_spans(sentence):
    """[(text, is_code)] of a sentence whose `commands` are in backticks, for the template to set in <code>."""
    return [(part, bool(i % 2)) for i, part in enumerate(sentence.split("`")) if part]


def first_cell_per_host(cells):
    hosts = {}
    for cell in cells:
        hosts.setdefault(cell.get("host"), cell)
    return hosts


def host_hardware(cells):
    """One line of facts per host, from the provenance its first cell recorded."""
    described = []
    for host, cell in sorted(first_cell_per_host(cells).items(), key=lambda item: str(item[0])):
        facts = (cell.get("provenance") or {}).get("host") or {}
        gpus = facts.get("gpus") or []
        names = sorted({g.get("name") or "?" for g in gpus})
        described.append({
            "host": host, "hostname": facts.get("hostname"), "platform": facts.get("platform"),
            "cpu": "%s × %s" % (facts.get("cpu_count") or "?", facts.get("cpu_model") or "?"),
            "memory_gib": facts.get("memory_gib"),
            "gpus": "%d × %s" % (len(gpus), ", ".join(names)) if gpus else "none",
            "driver": ", ".join(sorted({g.get("driver_version") for g in gpus if g.get("driver_version")})),
            "cuda": facts.get("cuda_version"), "kernel": facts.get("kernel"),
        })
    return described


def verdict_rows(summary):
    """The verdict table: each variant on each host, its per-level changes, why it failed."""
    metric = summary["settings"]["verdict_metric"]
    by_variant = {}
    for row in summary["cells"]:
        by_variant.setdefault((row["host"], row["variant"]), []).append(row)
    table = []
    for variant in summary["variants"]:
        rows = [r for r in by_variant.get((variant["host"], variant["variant"]), []) if r["concurrency"] is not None]
        table.append(dict(variant, levels=[
            {"concurrency": r["concurrency"], "verdict": r.get("verdict") if r["status"] == "ok" else r["status"],
             "change": against_own_baseline(r, fmt_change((r.get("vs_baseline") or {}).get(metric))),
             "reason": r.get("verdict_reason") or r.get("reason"), "verdict_before_aa": r.get("verdict_before_aa"),
             "trials": r["trials"], "launches": r.get("launches")}
            for r in rows
        ]))
    return table


def verdict_counts(summary):
    counts = {}
    for variant in summary["variants"]:
        verdict = variant.get("verdict") or "untested"
        counts[verdict] = counts.get(verdict, 0) + 1
    order = ("baseline",) + VERDICTS + ("untested",)
    return [(v, counts[v]) for v in sorted(counts, key=lambda v: (order.index(v) if v in order else len(order), v))]


def provenance_rows(cells):
    rows = []
    for cell in cells:
        launch = launch_details(cell)
        provenance = cell.get("provenance") or {}
        rows.append({
            "variant": cell["variant"], "title": cell.get("title"), "host": cell.get("host"),
            "launch": launch_number(cell), "launches": launch_total(cell),
            "status": cell.get("status"), "command": shell_command(launch.get("argv")),
            "env": launch.get("env") or {}, "catalog_flags": launch.get("catalog_flags") or {},
            "config_hash": launch.get("config_hash"), "engine_version": provenance.get("engine_version"),
            "patches": provenance.get("patches") or [], "rationale": provenance.get("rationale"),
            "known_issues": provenance.get("known_issues") or [],
            "log_path": (cell.get("startup") or {}).get("log_path"),
        })
    return rows


def campaign_facts(summary, cells):
    first = cells[0] if cells else {}
    provenance = first.get("provenance") or {}
    benchmark = (summary.get("settings") or {}).get("benchmark") or first.get("benchmark") or {}
    model = provenance.get("model") or {}
    return {
        "model": model.get("served_name") or model.get("path"), "model_path": model.get("path"),
        "architecture": model.get("architecture"), "ansible_version": provenance.get("ansible_version"),
        "benchmark": benchmark, "client_command": shell_command(benchmark.get("client")),
    }


def environment():
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True, undefined=jinja2.ChainableUndefined, trim_blocks=True, lstrip_blocks=True,
    )
    env.filters.update(fmt=fmt, fmt_pct=fmt_pct, fmt_change=fmt_change, fmt_interval=fmt_interval, fmt_mean_ci=fmt_mean_ci, fmt_p=fmt_p,
                       fmt_capacity=fmt_capacity, fmt_capacity_range=fmt_capacity_range, fmt_goodput=fmt_goodput,
                       fmt_capacity_against=fmt_capacity_against, at_level=at_level,
                       fmt_slo=fmt_slo, fmt_money=fmt_money, combine_slo=lambda found, slo: dict(found or {}, slo=slo),
                       to_yaml=lambda value: yaml.safe_dump(value, sort_keys=False, default_flow_style=False))
    return env


def render_html(summary, cells):
    svgs = plots.all_plots(summary, cells)
    figures = [{"id": plot_id, "title": title, "caption": caption, "svg": Markup(svgs[plot_id])}
               for plot_id, title, caption in PLOTS]
    return environment().get_template("report.html.j2").render(
        summary=summary, facts=campaign_facts(summary, cells), hosts=host_hardware(cells),
        conclusion=[code_spans(sentence) for sentence in conclusion(summary)],
        verdicts=verdict_rows(summary), counts=verdict_counts(summary), figures=figures,
        design=describe_design((summary.get("settings") or {}).get("design")),
        unit=UNITS_OF_REPLICATION.get((summary.get("settings") or {}).get("unit_of_replication")),
        method=comparison_method(summary.get("settings") or {}),
        provenance=provenance_rows(cells), verdict_names=VERDICTS, power=power_text(cells), steal=steal_text(cells),
        on_capacity=summary["settings"]["verdict_metric"] == CAPACITY,
        capacity_rules=capacity_rules(summary["settings"]["confidence"]),
    )


def write_html_report(campaign_dir, summary, cells):
    """Write results/<campaign>/report.html and return its path."""
    # Imported here: fleetopt.report.write imports this module to call this function.

    path = pathlib.Path(campaign_dir) / "report.html"
    write_atomically(path, render_html(summary, cells))
    return path
