import re

import pytest
import yaml

from browser.synthetic_campaign import EVIL, EXPECTED_VERDICTS, synthetic_campaign
from fleetopt.report import html_report, plots
from fleetopt.analysis.summary import build_summary
from helpers import ROOT

SECTIONS = ("campaign", "verdicts", "noise-floor", "plots", "matrix", "provenance")
PLOT_IDS = ("plot-throughput", "plot-ttft", "plot-itl", "plot-startup")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """(campaign folder, summary, cells, report.html text), written once: rendering plots takes a while."""
    folder, summary, cells = synthetic_campaign(tmp_path_factory.mktemp("html"))
    path = html_report.write_html_report(folder, summary, cells)
    assert path == folder / "report.html"
    return folder, summary, cells, path.read_text()


def figure(html, plot_id):
    match = re.search(r'<figure class="plot" id="%s"[^>]*>(.*?)</figure>' % plot_id, html, re.S)
    assert match, "no figure %s" % plot_id
    return match.group(1)


def test_the_report_has_every_section_and_plot_with_its_caption(campaign):
    html = campaign[3]
    for section in SECTIONS:
        assert re.search(r'<(section|header) id="%s"' % section, html), section
    for plot_id in PLOT_IDS:
        body = figure(html, plot_id)
        assert body.count("<svg") == 1 and "</svg>" in body and "<figcaption>" in body
    assert "graph capture" in figure(html, "plot-startup")


def test_the_header_names_engine_hardware_settings_and_revision(campaign):
    html = campaign[3]
    assert '<dd id="engine">sglang 0.5.10</dd>' in html
    assert "2 × NVIDIA H200" in html and "192 × AMD EPYC 9654" in html and "580.159.04" in html
    assert "abc123def456" in html and "qwen3-8b" in html
    assert "(Welch, over trials) at 95 % confidence" in html and "at least 3.0 %" in html and "inside ±3.0 %" in html
    assert "simultaneous over the m levels (Bonferroni)" in html
    assert '<dd id="design">one server launch per variant</dd>' in html
    assert '<dd id="host-steal">CPU stolen by the hypervisor (its other guests) during the runs: median 0.2 %, most 0.4 %' in html
    assert "concurrency 1, 8; 3 trial(s)" in html


def test_every_variant_has_its_verdict_and_failures_their_cause_and_remedy(campaign):
    html = campaign[3]
    rows = dict(re.findall(r'<tr class="verdict-row" data-variant="([^"]+)" data-verdict="([^"]+)">', html))
    assert rows == EXPECTED_VERDICTS
    for verdict in html_report.VERDICTS:
        assert 'class="verdict verdict-%s"' % verdict in html
    assert "+20.0 % [+17.1, +22.9]" in html  # the improved variant's change and interval at c=1 (97.5 %: 2 levels)
    assert "FlashInfer&#39;s fp4_quantize makes a graph break" in html
    assert "Register fp4_quantize as a custom op" in html and "dynamo_fullgraph_graph_break" in html
    assert "needs 8 GPU(s), host has 2" in html and "Raise the start-up timeout." in html
    assert "1 improved" in html and "2 neutral" in html and "1 not_applicable" in html


def test_noise_floor_is_shown_when_there_is_an_aa_run_and_explained_when_not(campaign, tmp_path):
    _, summary, cells, html = campaign
    table = re.search(r'<table id="noise-floor-table">(.*?)</table>', html, re.S).group(1)
    assert table.count("<tr>") == 3 and "+0.1 % [-2.5, +2.8]" in table and "(equivalent: two one-sided tests)" in table
    assert "the baseline is equivalent to itself (A/A neutral)" in html
    resolves = summary["aa"][0]["resolves_pct"]
    assert '<span class="resolves">Its noise resolves changes of %.1f %% or more.</span>' % resolves in html
    gated = dict(summary, aa=[dict(summary["aa"][0], gate="the host's A/A comparison (baseline vs itself) was improved")])
    assert ("Its noise resolves changes of %.1f %% or more: judged at that minimum effect (<code>fleetopt report</code> "
            "with <code>--min-effect %.1f</code>), its A/A would be neutral" % (resolves, resolves)
            ) in html_report.render_html(gated, cells)
    assert "noise-floor-warning" not in html
    without_aa = [c for c in cells if c["variant"] != "baseline_aa"]
    html = html_report.render_html(build_summary(tmp_path, without_aa), without_aa)
    assert "noise-floor-table" not in html and "No A/A run in this campaign" in html
    assert "gpu-a:\n    A/A was off" in html or "A/A was off; this host" in html


def test_a_baseline_that_differs_from_itself_is_a_warning(campaign):
    _, summary, cells, _ = campaign
    noisy = dict(summary, noise_floor=[dict(summary["noise_floor"][0], verdict="improved")])
    assert 'id="noise-floor-warning"' in html_report.render_html(noisy, cells)


def test_matrix_and_provenance_list_every_row_and_launch_command(campaign):
    _, summary, cells, html = campaign
    assert html.count('<tr class="matrix-row">') == len(summary["cells"])
    assert "120.0 ± 2.5" in html
    assert html.count('<details class="provenance-variant"') == len(cells)
    assert "sglang.launch_server --model-path /models/qwen --port 30000 --tp-size 2 --cuda-graph-max-bs 256" in html
    assert "id=sglang-fp4-prewarm checksum=sha256:0123" in html
    assert "sglang.bench_serving --backend sglang" in html


def test_everything_from_cells_is_escaped(campaign):
    html = campaign[3]
    assert "<script" not in html
    assert EVIL not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;quotes&#39;" in html
    assert html.count("&lt;script&gt;") >= 3  # title, root cause, environment


def test_the_report_is_self_contained(campaign):
    html = campaign[3]
    assert not re.search(r"<(link|img|iframe|object|embed)\b", html)
    assert "@import" not in html
    for target in re.findall(r'(?:href|src)="([^"]*)"|url\(([^)]*)\)', html):
        assert "".join(target).startswith("#"), target  # only references inside the SVGs
    assert "Content-Security-Policy" in html and "default-src 'none'" in html


def test_plots_are_deterministic_and_show_phases_and_failures(campaign):
    _, summary, cells, html = campaign
    first = plots.all_plots(summary, cells)
    assert first == plots.all_plots(summary, cells)
    assert all(svg in html for svg in first.values())
    assert list(first) == ["throughput", "ttft", "itl", "startup"]
    for svg in first.values():
        assert svg.startswith("<svg") and "<dc:date>" not in svg
    ids = re.findall(r'\bid="([^"]+)"', "".join(first.values()))
    assert len(ids) == len(set(ids))  # every id unique once the four SVGs share a page
    assert set(re.findall(r'(?:href="#|url\(#)([^")]+)', "".join(first.values()))) <= set(ids)
    startup = first["startup"]
    for text in ("cuda_graph", "piecewise_cuda_graph", "blocked in piecewise_cuda_graph", "crashed in weights",
                 "timeout in cuda_graph", "failed here", "ready 115.5 s"):
        assert "<!-- %s -->" % text in startup, text  # matplotlib writes each text as a comment
    assert "tensor_parallel_8" not in startup  # never started
    assert plots.phase_colour("cuda_graph") == plots.phase_colour("cuda_graph", ["zzz"])
    assert "<!-- baseline_aa -->" in first["throughput"] and "<!-- c=8 -->" in first["ttft"]


def test_a_campaign_without_measurements_still_renders(campaign, tmp_path):
    cells = campaign[2]
    failed = [c for c in cells if c["status"] != "ok"]
    summary = build_summary(tmp_path, failed)
    html = html_report.render_html(summary, failed)
    assert "<!-- No variant was measured. -->" in figure(html, "plot-throughput")
    assert all(figure(html, plot_id).count("<svg") == 1 for plot_id in PLOT_IDS)


def test_inconclusive_verdicts_show_their_reason(campaign):
    html = campaign[3]
    assert "1 inconclusive" in html
    row = re.search(r'<tr class="verdict-row" data-variant="noisy_flag".*?</tr>', html, re.S).group(0)
    assert "interval width" in row and "c=1: " in row and 'class="why verdict-reason"' in row


def test_a_noisy_aa_gates_the_hosts_verdicts_and_the_design_is_shown(campaign, tmp_path):
    cells = [dict(c) for c in campaign[2]]
    for c in cells:
        if c["variant"] == "baseline_aa":
            c["levels"] = [dict(lv, metrics=dict(lv["metrics"], output_throughput=lv["metrics"]["output_throughput"]
                                                 * 1.1)) for lv in c["levels"]]
    cells[0] = dict(cells[0], design={"launches": 2, "order": "counterbalanced (ABBA)"})
    summary = build_summary(tmp_path, cells)
    html = html_report.render_html(summary, cells)
    assert "the host&#39;s A/A comparison (baseline vs itself) was improved" in html
    row = re.search(r'<tr class="verdict-row" data-variant="cuda_graph_max_bs" data-verdict="inconclusive">.*?</tr>',
                    html, re.S).group(0)
    assert "before the A/A gate: improved" in row
    assert 'id="noise-floor-warning"' in html
    assert '<dd id="design">launches: 2, order: counterbalanced (ABBA)</dd>' in html


def test_phase_order_and_colours_are_library_data():
    """library/phases.yml orders and colours the start-up phases; the plots keep no table of their own."""
    listed = yaml.safe_load((ROOT / "library" / "phases.yml").read_text())["phases"]
    names = [p["name"] for p in listed]
    assert len(set(names)) == len(names) and len({p["colour"] for p in listed}) == len(listed)
    for phase in listed:
        assert plots.phase_colour(phase["name"]) == phase["colour"]
    assert sorted(reversed(names + ["zzz_new"]), key=plots.phase_rank) == names + ["zzz_new"]
    # Each shipped engine's phases are listed, in the order its spec goes through them.
    for spec in sorted((ROOT / "library" / "engines").glob("*.yml")):
        ordered = list(dict.fromkeys(p["name"] for p in yaml.safe_load(spec.read_text())["phases"]))
        assert [n for n in names if n in ordered] == ordered, spec.name
