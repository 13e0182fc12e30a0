"""Open report.html in headless Chromium and check what a reader sees.

--dump-dom gives the document as Chromium built it; a harness page next to the report
(the report itself is not touched; its CSP forbids scripts) measures the rendered plots in
an iframe; a screenshot, cut at those measurements, shows every plot is really drawn.
"""
import html
import json
import re

import matplotlib.image
import numpy as np
import pytest

from browser.synthetic_campaign import EXPECTED_VERDICTS, synthetic_campaign
from fleetopt.analysis import conclusion
from fleetopt.report import html_report, plots

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1400, 9000
PLOT_IDS = ("plot-throughput", "plot-ttft", "plot-itl", "plot-startup")
MEASURE_PAGE = """<!DOCTYPE html>
<html><body style="margin:0">
<iframe id="report" src="report.html" style="border:0;width:%dpx;height:%dpx"></iframe>
<pre id="measured"></pre>
<script>
window.addEventListener("load", function () {
  var doc = document.getElementById("report").contentDocument, out = {figures: {}};
  function box(el) { var r = el.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }
  doc.querySelectorAll("figure.plot").forEach(function (f) {
    var svg = f.querySelector("svg");
    out.figures[f.id] = svg ? box(svg) : null;
  });
  out.verdictTable = box(doc.getElementById("verdict-table"));
  out.conclusion = box(doc.getElementById("conclusion"));
  out.verdictRows = Array.prototype.map.call(doc.querySelectorAll("#verdict-table tr.verdict-row"),
    function (tr) { return [tr.dataset.variant, tr.dataset.verdict, tr.getBoundingClientRect().height]; });
  document.getElementById("measured").textContent = JSON.stringify(out);
});
</script>
</body></html>
""" % (WIDTH, HEIGHT)


def hex_rgb(colour):
    return np.array([int(colour[i:i + 2], 16) / 255.0 for i in (1, 3, 5)])


def has_colour(pixels, colour, at_least=20):
    return int((np.abs(pixels[..., :3] - hex_rgb(colour)).max(axis=-1) < 2.5 / 255).sum()) >= at_least


def crop(pixels, rect):
    left, top, width, height = (int(round(v)) for v in rect)
    return pixels[top:top + height, left:left + width, :3]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return synthetic_campaign(tmp_path_factory.mktemp("browser"))


@pytest.fixture(scope="module")
def summary(campaign):
    return campaign[1]


@pytest.fixture(scope="module")
def report(campaign):
    folder, summary, cells = campaign
    return html_report.write_html_report(folder, summary, cells)


def test_the_dom_has_the_four_plots_and_every_verdict(report, summary, chromium):
    dom = chromium(report.as_uri(), "--dump-dom")
    for plot_id in PLOT_IDS:
        figure = re.search(r'<figure class="plot" id="%s"[^>]*>(.*?)</figure>' % plot_id, dom, re.S)
        assert figure, "Chromium's DOM has no %s" % plot_id
        assert "<svg" in figure.group(1) and "<figcaption>" in figure.group(1)
    rows = dict(re.findall(r'<tr class="verdict-row" data-variant="([^"]+)" data-verdict="([^"]+)">', dom))
    assert rows == EXPECTED_VERDICTS
    assert 'id="noise-floor-table"' in dom and "<script" not in dom
    said = re.search(r'<p id="conclusion" class="conclusion">(.*?)</p>', dom, re.S)
    assert said and re.sub(r"</?code>", "`", html.unescape(said.group(1))) == " ".join(conclusion.conclusion(summary))


def test_every_plot_and_verdict_row_renders_with_a_size(report, chromium):
    harness = report.parent / "measure.html"
    harness.write_text(MEASURE_PAGE)
    dom = chromium(harness.as_uri(), "--allow-file-access-from-files", "--virtual-time-budget=5000",
                   "--window-size=%d,%d" % (WIDTH, HEIGHT), "--dump-dom")
    measured = json.loads(re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S).group(1).replace("&quot;", '"'))
    for plot_id in PLOT_IDS:
        box = measured["figures"].get(plot_id)
        assert box and box[2] > 400 and box[3] > 150, (plot_id, box)
    assert [(v, d) for v, d, _ in measured["verdictRows"]] == list(EXPECTED_VERDICTS.items())
    assert all(height > 10 for _, _, height in measured["verdictRows"])
    # The campaign's end is what a reader sees first: in the first screen, above the verdicts, at least two lines.
    _left, top, width, height = measured["conclusion"]
    assert top < 300 and top + height < measured["verdictTable"][1] and width > 600 and height > 30, measured["conclusion"]

    shot = report.parent / "report.png"
    chromium(report.as_uri(), "--window-size=%d,%d" % (WIDTH, HEIGHT), "--screenshot=%s" % shot)
    pixels = matplotlib.image.imread(str(shot))
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert (pixels[..., :3] < 0.9).any(axis=-1).mean() > 0.03, "the screenshot is blank"
    for plot_id in PLOT_IDS:
        area = crop(pixels, measured["figures"][plot_id])
        inked = (area < 0.9).any(axis=-1).mean()
        colours = len(np.unique((area * 255).astype(np.uint8).reshape(-1, 3), axis=0))
        assert inked > 0.03 and colours > 20, (plot_id, inked, colours)
    startup = crop(pixels, measured["figures"]["plot-startup"])
    for phase in ("weights", "cuda_graph", "piecewise_cuda_graph"):
        assert has_colour(startup, plots.phase_colour(phase)), phase
    assert has_colour(startup, "#c00000", at_least=5), "no failed-here mark"
    table = crop(pixels, measured["verdictTable"])
    for badge in ("#d4f4dd", "#fbd5d5", "#fde8c8", "#9b1c1c"):  # improved, regressed, mixed, failed
        assert has_colour(table, badge), badge
