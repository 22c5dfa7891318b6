"""Dark mode in a real ``tensorboard`` and Debian's Chromium (issue 26.6): what the canvases draw, read back
pixel by pixel, against WCAG's contrast ratio.

A generated DP2 × MP2 × PP2 run with a slow rank (tbp_synth); the page in dark mode (prefers-color-scheme)
at a device scale of 2, so that a 10 px digit has pixels of its own colour, not only anti-aliased ones:

* every label of the two step heatmaps against the cell it is printed on (the cell's own colour: the most
  frequent pixel of the cell), ≥ 4.5 : 1;
* the rank grid's axis labels against the card they are drawn on, ≥ 4.5 : 1; the outline of each rank the
  route's verdict names against the card (≥ 4.5 : 1) and against the rank's own cell (≥ 3 : 1, WCAG's
  minimum for a graphical object);
* the Memory view's zoom slider is dark: no pixel of it brighter than a mid grey (luminance 0.5; the light
  theme's handles were white on the dark card);

with no console error and no request outside 127.0.0.1. Screenshots (1,280 and 1,440 px, dark) go to
browser_util.SHOTS.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import REPO, SHOTS, checked_pages, tensorboard, wait_all_loaded

pytestmark = [pytest.mark.browser]


from google.protobuf import json_format  # noqa: E402

from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402

RUN = "synth-dp2mp2pp2"
SLOW_RANK = 5
SCALE = 2


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dark_logdir")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "2",
            "--pp",
            "2",
            "--steps",
            "3",
            "--layers",
            "2",
            "--micro-batches",
            "2",
            "--slow-rank",
            str(SLOW_RANK),
            "--slow-factor",
            "1.5",
            "--out",
            str(root / RUN),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("dark_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def dark_page(browser, request):
    """Pages in dark mode at a device scale of 2 (checked for errors and outside requests after the test)."""
    pages = checked_pages(browser, lambda: ran(request))
    make = next(pages)
    yield lambda width, height=1000: make(width, height, device_scale_factor=SCALE, color_scheme="dark")
    next(pages, None)


def goto(page, tb, keys: dict):
    page.goto(
        f"{tb.url}/#paddle_profile&"
        + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=60_000)
    frame.wait_for_function("() => document.documentElement.classList.contains('tbpp-dark')")
    return frame


def route_parallel(tb) -> plugin_pb2.RunParallel:
    body = tb.get(f"/data/plugin/paddle_profile/parallel?run={quote(RUN)}&span=0&format=json", timeout=120)
    return json_format.Parse(body, plugin_pb2.RunParallel(), ignore_unknown_fields=True)


# ---------------------------------------------------------------- WCAG


def _linear(c: float) -> float:
    c /= 255
    return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4


def luminance(rgb) -> float:
    r, g, b = (_linear(x) for x in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


# In the page: a box of a canvas (CSS px; ECharts draws in layers, one canvas each: they are composed in
# their order first) -> its opaque colours, the most frequent first, with their pixel counts.
_BOX = """([sel, x0, y0, w, h]) => {
  const layers = Array.from(document.querySelectorAll(sel));
  const cv = layers[0];
  const k = cv.width / cv.getBoundingClientRect().width;
  const X = Math.round(x0 * k), Y = Math.round(y0 * k), W = Math.max(1, Math.round(w * k)), H = Math.max(1, Math.round(h * k));
  const out = document.createElement('canvas');
  out.width = cv.width;
  out.height = cv.height;
  const o = out.getContext('2d');
  for (const l of layers) o.drawImage(l, 0, 0);
  const d = o.getImageData(X, Y, W, H).data;
  const counts = new Map();
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] !== 255) continue;
    const key = `${d[i]},${d[i + 1]},${d[i + 2]}`;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  return [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([c, n]) => [c.split(',').map(Number), n]);
}"""

_BG = """(sel) => {
  for (let e = document.querySelector(sel); e; e = e.parentElement) {
    const m = /rgba?\\((\\d+), (\\d+), (\\d+)(?:, ([\\d.]+))?\\)/.exec(getComputedStyle(e).backgroundColor);
    if (m && (m[4] === undefined || Number(m[4]) > 0.99)) return [Number(m[1]), Number(m[2]), Number(m[3])];
  }
  return [255, 255, 255];
}"""


def box(frame, sel, x, y, w, h):
    return frame.evaluate(_BOX, [sel, x, y, w, h])


def best_ink(colours, against):
    """The opaque colour of a box that contrasts most with ``against`` (a glyph's core pixels), and its ratio."""
    if not colours:
        return None, 0.0
    c = max((c for c, _ in colours), key=lambda c: contrast(c, against))
    return c, contrast(c, against)


# ---------------------------------------------------------------- the tests


def open_distributed(page, tb):
    frame = goto(page, tb, {"run": RUN, "worker": "rank0", "span": "0", "unit": "ms", "view": "distributed"})
    frame.wait_for_selector('[data-testid="par-grid"]', timeout=90_000)
    for test_id in ("par-heat-step", "par-heat-exposed"):
        frame.wait_for_selector(f'[data-testid="{test_id}"][data-drawn][data-theme="dark"]', timeout=60_000)
    return frame


@pytest.mark.parametrize("width", [1280, 1440])
def test_heatmap_labels_and_rank_grid_contrast_in_dark_mode(tb, dark_page, width):
    rp = route_parallel(tb)
    named = [s.rank for s in rp.straggler.stragglers]
    assert SLOW_RANK in named
    page = dark_page(width)
    frame = open_distributed(page, tb)

    # Heatmaps: every labelled cell, its label against its fill.
    for test_id in ("par-heat-step", "par-heat-exposed"):
        sel = f'[data-testid="{test_id}"] canvas'
        cells = frame.evaluate(
            """(id) => {
          const el = document.querySelector(`[data-testid="${id}"]`);
          const chart = el.__tbppChart;
          const opt = chart.getOption();
          const s = opt.series[0];
          if (!s.label || !s.label.show) return null;
          const a = chart.convertToPixel({ seriesIndex: 0 }, [0, 0]);
          const b = chart.convertToPixel({ seriesIndex: 0 }, [1, 1]);
          const w = Math.abs(b[0] - a[0]), h = Math.abs(b[1] - a[1]);
          return s.data.map((d) => { const p = chart.convertToPixel({ seriesIndex: 0 }, [d[0], d[1]]); return [p[0] - w / 2 + 3, p[1] - h / 2 + 3, w - 6, h - 6]; });
        }""",
            test_id,
        )
        assert cells, f"{test_id}: the heatmap prints no labels (8 ranks, 3 steps)"
        assert len(cells) == len(rp.ranks) * len(rp.steps)
        ratios = []
        for x, y, w, h in cells:
            colours = box(frame, sel, x, y, w, h)
            fill = colours[0][0]
            ink, ratio = best_ink(colours[1:], fill)
            assert ink is not None, (test_id, x, y)
            ratios.append(ratio)
        print(f"{test_id} at {width}: label contrast min {min(ratios):.2f}, max {max(ratios):.2f}")
        assert min(ratios) >= 4.5, (test_id, sorted(ratios)[:5])

    # The rank grid: its labels against the card, the named ranks' outlines.
    g = frame.evaluate("""() => { const e = document.querySelector('[data-testid="par-grid"]'); const d = e.dataset;
        return { cw: +d.cellW, ch: +d.cellH, left: +d.left, top: +d.top, gap: +d.stageGap, mp: +d.mp }; }""")
    sel = '[data-testid="par-grid"]'
    card = frame.evaluate(_BG, sel)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"dark-distributed-{width}.png"), full_page=True)
    for card_id in ("par-grid-card", "par-heat-step-card", "par-heat-exposed-card"):
        frame.locator(f'[data-testid="{card_id}"]').screenshot(path=str(SHOTS / f"dark-{card_id}-{width}.png"))
    labels = box(frame, sel, 0, g["top"], g["left"] - 4, g["ch"] * 2)
    ink, ratio = best_ink(labels, card)
    print(f"rank grid at {width}: labels {ink} on {card}: {ratio:.2f}")
    assert ratio >= 4.5, (ink, card, ratio)
    top = box(frame, sel, g["left"], 0, g["cw"] * 2, g["top"] - 2)
    assert best_ink(top, card)[1] >= 4.5
    by_rank = {r.rank: r for r in rp.ranks}
    for rank in named:
        r = by_rank[rank]
        x = g["left"] + r.dp * g["cw"]
        y = g["top"] + r.pipeline_stage * (g["mp"] * g["ch"] + g["gap"]) + r.mp * g["ch"]
        fill = box(frame, sel, x + 3, y + 3, g["cw"] - 6, g["ch"] - 6)[0][0]
        ring = box(frame, sel, x - 2, y + 3, 2, g["ch"] - 6)  # the outline's left edge (2 px wide)
        line = ring[0][0]
        print(f"rank {rank}: outline {line}, cell {fill}, card {card}")
        assert contrast(line, card) >= 4.5, (rank, line, card)
        assert contrast(line, fill) >= 3.0, (rank, line, fill)


def test_memory_zoom_slider_is_dark(tb, dark_page):
    page = dark_page(1280)
    frame = goto(page, tb, {"run": RUN, "worker": f"rank{SLOW_RANK}", "span": "0", "unit": "ms", "view": "memory"})
    frame.wait_for_selector('[data-testid="memory-curve"][data-drawn][data-theme="dark"]', timeout=90_000)
    sel = '[data-testid="memory-curve"] canvas'
    option = frame.evaluate("""() => { const c = document.querySelector('[data-testid="memory-curve"]').__tbppChart;
        const z = c.getOption().dataZoom.find((d) => d.type === 'slider');
        const r = c.getDom().getBoundingClientRect(); return { h: r.height, w: r.width, bottom: z.bottom, height: z.height }; }""")
    card = frame.evaluate(_BG, sel)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "dark-memory-1280.png"), full_page=True)
    # the slider's strip, its whole width (the window is the whole trace: a resize handle at each end): no
    # pixel of it near white but the grip in the window's middle (ECharts draws that white in every theme)
    y = option["h"] - option["bottom"] - option["height"]
    w = option["w"]
    halves = [
        box(frame, sel, 0, y - 2, 0.45 * w, option["height"] + 4),
        box(frame, sel, 0.55 * w, y - 2, 0.45 * w, option["height"] + 4),
    ]
    assert all(halves), "no slider drawn"
    for strip in halves:
        brightest = max((c for c, _ in strip), key=luminance)
        print(f"memory slider: most {strip[0][0]}, brightest {brightest} ({luminance(brightest):.3f}) on card {card}")
        assert luminance(strip[0][0]) < 0.2 and luminance(brightest) < 0.5, (strip[0][0], brightest, card)


@pytest.mark.parametrize("view", ["timeline", "overview"])
def test_the_header_keeps_the_run_and_the_span_whole_at_1280(tb, dark_page, view):
    """At 1,280 px the header's crumbs were cut to "sc…" and "spa…" once the worker's label held its
    coordinates ("rank 5 · dp1 pp0 mp1 · GPU5 · pid …") next to a long trace file name, and the file's
    "cached" badge was cut to a coloured sliver: the run and the span are whole, the worker's label gives way
    (its full text on hover), a badge is never cut."""
    route_parallel(tb)  # the cross-rank analysis done: the workers' labels hold their coordinates
    page = dark_page(1280, 800)
    frame = goto(page, tb, {"run": RUN, "worker": f"rank{SLOW_RANK}", "span": "0", "unit": "ms", "view": view})
    frame.wait_for_function(
        "() => document.querySelectorAll('.crumbs .crumb').length === 3"
        " && / dp\\d+/.test(document.querySelector('[data-testid=crumbs]').textContent)",
        timeout=30_000,
    )
    crumbs = frame.evaluate("""() => Array.from(document.querySelectorAll('.crumbs .crumb'), (e) => (
        { text: e.textContent, sw: e.scrollWidth, cw: e.clientWidth, title: e.title || '' }))""")
    assert len(crumbs) == 3, crumbs
    run, worker, span = crumbs
    assert run["text"] == RUN and run["sw"] <= run["cw"], run
    assert span["text"] == "span 0" and span["sw"] <= span["cw"], span
    assert worker["sw"] <= worker["cw"] or worker["title"] == worker["text"], worker
    badges = frame.evaluate("""() => Array.from(document.querySelectorAll('.main-head .badge'), (e) => (
        { sw: e.scrollWidth, cw: e.clientWidth, w: e.getBoundingClientRect().width }))""")
    assert all(b["sw"] <= b["cw"] + 1 and b["w"] > 20 for b in badges), badges
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"dark-header-{view}-1280.png"))


@pytest.mark.parametrize(
    "view", ["overview", "operators", "kernels", "distributed", "memory", "compare"]
)  # What-if draws no chart
def test_every_chart_text_is_inside_its_chart_at_1280(tb, dark_page, view):
    """No text ECharts draws (axis names and labels, value labels, legends, mark labels) is cut by its canvas
    at 1,280 px: each text's box (zrender's, in the chart's px) is inside the chart's width and height (the
    Memory curve's unit was cut before; the other views' charts guard against the same)."""
    from test_memory_browser import TEXTS_OUTSIDE

    route_parallel(tb)
    page = dark_page(1280, 800)
    frame = goto(page, tb, {"run": RUN, "worker": f"rank{SLOW_RANK}", "span": "0", "unit": "ms", "view": view})
    frame.wait_for_selector("[data-drawn]", timeout=90_000)
    page.wait_for_timeout(1500)  # every chart of the view drawn
    charts = frame.evaluate(
        "() => Array.from(document.querySelectorAll('[data-drawn]'), (e) => e.dataset.testid).filter(Boolean)"
    )
    assert charts, view
    cut = {}
    for test_id in charts:
        out = frame.evaluate(TEXTS_OUTSIDE, test_id)
        if out:
            cut[test_id] = out
    assert cut == {}, cut
