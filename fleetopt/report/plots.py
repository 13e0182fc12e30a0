"""The report's figures, drawn with matplotlib and returned as inline SVG text.

Every figure is rendered with a fixed hash salt and without a date, so the same summary
always gives byte-identical SVG (tests compare them), and its ids carry the figure's name,
so several SVGs can share one HTML page.
"""
import io
import re

import matplotlib
import yaml

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

from fleetopt.paths import LIBRARY  # noqa: E402
from fleetopt.analysis.summary import AA_VARIANT, BASELINE  # noqa: E402

# Start-up phases in the order the engines go through them, each with the colour it keeps in
# every report (library/phases.yml). Unknown phases get the spare colours.
PHASE_COLOURS = {p["name"]: p["colour"] for p in yaml.safe_load((LIBRARY / "phases.yml").read_text())["phases"]}
PHASE_ORDER = tuple(PHASE_COLOURS)
SPARE_COLOURS = ("#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#dbdb8d", "#9edae5")
FAILED_STATUSES = ("crashed", "blocked", "timeout")
HOST_LINESTYLES = ("-", "--", ":", "-.")
HOST_MARKERS = ("o", "s", "^", "D", "v")
FIGURE_WIDTH_IN = 9.0


def phase_colour(name, extra_names=()):
    if name in PHASE_COLOURS:
        return PHASE_COLOURS[name]
    unknown = sorted(n for n in set(extra_names) | {name} if n not in PHASE_COLOURS)
    return SPARE_COLOURS[unknown.index(name) % len(SPARE_COLOURS)]


def phase_rank(name):
    """Sort key: listed phases in their order, then the others by name."""
    return (PHASE_ORDER.index(name) if name in PHASE_ORDER else len(PHASE_ORDER), name)


def series_key(row):
    return (row["host"], row["variant"])


def plain(text):
    """Text matplotlib shows as it is (a `$` would start mathtext)."""
    return str(text).replace("$", r"\$")


def series_label(key, several_hosts):
    host, variant = key
    return plain("%s @ %s" % (variant, host) if several_hosts else variant)


def variant_colours(variants):
    """A colour per variant, the same in every figure and on every host: baseline black, A/A grey."""
    palette = plt.get_cmap("tab10").colors + plt.get_cmap("Dark2").colors
    colours, index = {}, 0
    for variant in variants:
        if variant in colours:
            continue
        if variant == BASELINE:
            colours[variant] = "black"
        elif variant == AA_VARIANT:
            colours[variant] = "#888888"
        else:
            colours[variant] = palette[index % len(palette)]
            index += 1
    return colours


def series_styles(keys):
    """Colour by variant, line style and marker by host."""
    colours = variant_colours([variant for _, variant in keys])
    hosts = list(dict.fromkeys(host for host, _ in keys))
    return {
        (host, variant): {"color": colours[variant], "linestyle": HOST_LINESTYLES[hosts.index(host) % 4],
                          "marker": HOST_MARKERS[hosts.index(host) % 5]}
        for host, variant in keys
    }


def measured_series(summary):
    """{(host, variant): [rows with a measurement, by concurrency]} in summary order."""
    series = {}
    for row in summary["cells"]:
        if row["status"] == "ok" and row.get("concurrency") is not None:
            series.setdefault(series_key(row), []).append(row)
    return {k: sorted(v, key=lambda r: r["concurrency"]) for k, v in series.items()}


def mean_and_error(row, metric):
    """Mean and the (below, above) lengths of its interval's error bar (0 where unknown)."""
    mean = (row.get("metrics") or {}).get(metric)
    described = (row.get("stats") or {}).get(metric) or {}
    if mean is None:
        return None, (0.0, 0.0)
    low, high = described.get("ci_low"), described.get("ci_high")
    if low is None or high is None:
        return mean, (0.0, 0.0)
    return mean, (max(mean - low, 0.0), max(high - mean, 0.0))


def to_svg(fig, name):
    with matplotlib.rc_context({"svg.hashsalt": "fleetopt-" + name}):
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return prefix_ids(text[text.index("<svg"):], name)  # no XML declaration or DOCTYPE inline


def prefix_ids(svg, prefix):
    """Give every id (glyphs, clip paths, groups) the figure's prefix: several SVGs share one HTML page."""
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    return re.sub(r'(\bid="|href="#|url\(#)([^")]+)',
                  lambda m: m.group(1) + (prefix + "-" + m.group(2) if m.group(2) in ids else m.group(2)), svg)


def no_data_figure(message, name):
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=11, color="#555555")
    return to_svg(fig, name)


def throughput_svg(summary, metric="output_throughput"):
    """Output throughput against concurrency, one line per variant (and host), 95 % CI bars."""
    series = measured_series(summary)
    if not series:
        return no_data_figure("No variant was measured.", "throughput")
    several_hosts = len({k[0] for k in series}) > 1
    styles = series_styles(series)
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 4.8))
    levels = sorted({r["concurrency"] for rows in series.values() for r in rows})
    for key, rows in series.items():
        points = [(r["concurrency"],) + mean_and_error(r, metric) for r in rows]
        points = [p for p in points if p[1] is not None]
        if not points:
            continue
        xs, ys, errors = zip(*points)
        ax.errorbar(xs, ys, yerr=[[e[0] for e in errors], [e[1] for e in errors]], capsize=4,
                    linewidth=1.6, label=series_label(key, several_hosts), **styles[key])
    if len(levels) > 1 and min(levels) > 0:
        ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [str(c) for c in levels])
    ax.minorticks_off()
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel("output tokens/s")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return to_svg(fig, "throughput")


def latency_svg(summary, metric, ylabel, name):
    """Grouped bars: the metric's mean per variant at each concurrency (and host), 95 % CI bars."""
    series = measured_series(summary)
    if not series:
        return no_data_figure("No variant was measured.", name)
    several_hosts = len({host for host, _ in series}) > 1
    colours = variant_colours([variant for _, variant in series])
    groups = {}
    for rows in series.values():
        for row in rows:
            mean, error = mean_and_error(row, metric)
            if mean is not None:
                groups.setdefault((row["host"], row["concurrency"]), []).append((row["variant"], mean, error))
    if not groups:
        return no_data_figure("No variant has a %s." % metric, name)
    order = sorted(groups)
    width = 0.8 / max(len(bars) for bars in groups.values())
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 4.8))
    labelled = set()
    for position, group in enumerate(order):
        bars = groups[group]
        first = position - width * (len(bars) - 1) / 2.0
        for index, (variant, mean, error) in enumerate(bars):
            ax.bar(first + index * width, mean, width=width * 0.92, color=colours[variant], edgecolor="white",
                   hatch="//" if variant == AA_VARIANT else None, yerr=[[error[0]], [error[1]]], capsize=3,
                   error_kw={"elinewidth": 1.0, "ecolor": "#333333"},
                   label=None if variant in labelled else plain(variant))
            labelled.add(variant)
    ax.set_xticks(range(len(order)), [plain("c=%s\n%s" % (c, h) if several_hosts else "c=%s" % c) for h, c in order])
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return to_svg(fig, name)


def ttft_svg(summary):
    return latency_svg(summary, "mean_ttft_ms", "mean time to first token (ms)", "ttft")


def itl_svg(summary):
    return latency_svg(summary, "mean_itl_ms", "mean inter-token latency (ms)", "itl")


def startup_bars(cells):
    """One bar per started (host, variant): its phases as (name, start_s, duration_s), and how it ended."""
    bars = []
    for cell in cells:
        if cell.get("status") == "not_applicable":
            continue
        startup = cell.get("startup") or {}
        phases = []
        for name, phase in (startup.get("phases") or {}).items():
            start = phase.get("start_s") or 0.0
            duration = phase.get("duration_s")
            phases.append((name, float(start), float(duration) if duration is not None else 0.0))
        failure = cell.get("failure") or {}
        died_in = None
        if cell.get("status") in FAILED_STATUSES:
            died_in = failure.get("phase") or (phases[-1][0] if phases else None)
        bars.append({"key": (cell.get("host"), cell["variant"]), "status": cell.get("status"), "phases": phases,
                     "startup_s": startup.get("startup_s"), "died_in": died_in})
    return bars


def startup_svg(cells):
    """Horizontal stacked bars of each variant's start-up phases; failed starts marked where they died."""
    bars = startup_bars(cells)
    if not bars:
        return no_data_figure("No server was started.", "startup")
    several_hosts = len({b["key"][0] for b in bars}) > 1
    names = [n for b in bars for n, _, _ in b["phases"]]
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 1.2 + 0.42 * len(bars)))
    right_edge = max([s + d for b in bars for _, s, d in b["phases"]] + [b["startup_s"] or 0 for b in bars] + [1.0])
    for y, bar in enumerate(bars):
        for name, start, duration in bar["phases"]:
            ax.barh(y, duration, left=start, height=0.6, color=phase_colour(name, names), edgecolor="white",
                    linewidth=0.5)
        end = max([s + d for _, s, d in bar["phases"]] + [0.0])
        if bar["status"] in FAILED_STATUSES:
            ax.plot([end], [y], marker="X", markersize=11, color="#c00000", markeredgecolor="white", zorder=5)
            where = "in %s" % bar["died_in"] if bar["died_in"] else "before any phase"
            ax.text(end + right_edge * 0.015, y, "%s %s" % (bar["status"], where), va="center", fontsize=8,
                    color="#c00000")
        elif bar["startup_s"] is not None:
            ax.text(end + right_edge * 0.015, y, "ready %.1f s" % bar["startup_s"], va="center", fontsize=8)
    ax.set_yticks(range(len(bars)), [series_label(b["key"], several_hosts) for b in bars])
    ax.invert_yaxis()
    ax.set_xlim(0, right_edge * 1.3)
    ax.set_xlabel("seconds since launch")
    ax.grid(True, axis="x", alpha=0.3)
    seen = []
    for name in sorted(set(names), key=phase_rank):
        seen.append(Patch(color=phase_colour(name, names), label=name))
    if any(b["status"] in FAILED_STATUSES for b in bars):
        seen.append(plt.Line2D([], [], marker="X", color="#c00000", linestyle="none", markersize=9,
                               label="failed here"))
    if seen:
        ax.legend(handles=seen, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return to_svg(fig, "startup")


def all_plots(summary, cells):
    """{plot id: SVG text} for the HTML report, in the order it shows them."""
    return {
        "throughput": throughput_svg(summary),
        "ttft": ttft_svg(summary),
        "itl": itl_svg(summary),
        "startup": startup_svg(cells),
    }
