"""The memory insights in a real TensorBoard and Debian's Chromium (issue 16, point 7), at 1,280 and 1,440 px,
light and dark.

A generated run with a planted leak (tbp_synth --leak-bytes-per-step, pp 2) and the real CPU trace
(tests/data/traces/cpu-gpt-single) are served by ``tensorboard``; the Memory panel must show the leak
sentence, the insights table, the per-step table and its chart, and what is alive at the peak, every cell
the Python formatter's string of the display route's model; the Distributed view's hybrid-parallel
section shows the peak per pipeline stage (one bar per stage) and per rank, as the parallel route's model.
No text is cut, no console error. Screenshots go to browser_util.SHOTS.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from google.protobuf import json_format

from support.paths import REPO
from support.report import ran
from support.browser_util import (
    SHOTS,
    PageLog,
    save_screenshot,
    copy_trace_sets,
    read_virtual_table,
    show_all_columns,
    tables_past_the_box,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]


from test_frontend_panels import open_panel  # noqa: E402
from test_readable import _CUT  # noqa: E402
from test_tab_conventions import luminance  # noqa: E402
from tb_paddle_profile.present.display.cells import format_value, sentence_text  # noqa: E402
from tb_paddle_profile.v1 import display_pb2 as dpb  # noqa: E402
from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402

LEAK_RUN, CPU_RUN = "leak", "shared/cpu-gpt-single"
LEAK = 256 << 20


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = copy_trace_sets(tmp_path_factory.mktemp("memory_logdir"), [CPU_RUN])
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--out",
            str(root / LEAK_RUN),
            "--dp",
            "1",
            "--mp",
            "1",
            "--pp",
            "2",
            "--steps",
            "4",
            "--layers",
            "2",
            "--micro-batches",
            "2",
            "--control",
            "--leak-bytes-per-step",
            str(LEAK),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    for extra in ("synth_manifest.json", "synth_truth.json", "synth_truth.npz"):
        (root / LEAK_RUN / extra).unlink(missing_ok=True)
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("memory_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def page_at(browser, request):
    made = []

    def make(width: int, dark: bool):
        log = PageLog()
        context = browser.new_context(
            viewport={"width": width, "height": 1000}, device_scale_factor=1, color_scheme="dark" if dark else "light"
        )
        page = context.new_page()
        context.on("request", lambda req: log.requests.append(req.url))
        page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: log.page_errors.append(str(err)))
        made.append((page, log))
        return page

    yield make
    for page, log in made:
        page.context.close()
        if ran(request):
            assert log.page_errors == [], log.page_errors
            assert log.console_errors == [], log.console_errors
            assert log.outside_requests() == [], log.outside_requests()


def worker_of(logdir: Path, run: str) -> str:
    return sorted(p.name.split("_time_")[0] for p in (logdir / run).glob("*.paddle_trace.json"))[0]


def memory_view(tb, run: str, worker: str) -> dpb.View:
    d = dpb.Display.FromString(
        tb.get(f"/data/plugin/paddle_profile/display?run={quote(run)}&worker={quote(worker)}&span=0")
    )
    return next(v for v in d.views if v.key == "memory")


def table(view: dpb.View, key: str) -> dpb.Table:
    return next(t for t in view.tables if t.key == key)


def panel_strings(t: dpb.Table, unit: str):
    """Each row as the panel must print it: (first column's text, {other column: text}), the model's order."""
    out = []
    for r in t.rows:
        cells = {}
        for c, x in zip(t.columns, r.cells):
            if not c.panel_hidden:
                cells[c.key] = format_value(c.panel_format if c.HasField("panel_format") else c.format, x, unit)
        out.append(cells)
    return out


def drawn(frame, test_id: str):
    return [dict(r["cells"]) for r in read_virtual_table(frame, test_id)]


def check_dark(frame, dark: bool):
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    bg = frame.evaluate(
        "() => getComputedStyle(document.querySelector('[data-testid=memory-insights-card]')).backgroundColor"
    )
    assert (luminance(bg) < 0.25) == dark, bg


def _same(frame, test_id: str, t: dpb.Table, unit: str):
    assert drawn(frame, test_id) == panel_strings(t, unit), t.key


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("width", [1280, 1440])
def test_memory_panel_shows_the_leak_growth_and_whats_alive(tb, logdir, page_at, width, dark):
    worker = worker_of(logdir, LEAK_RUN)
    view = memory_view(tb, LEAK_RUN, worker)
    place = next(t.key[len("memory_steps.") :] for t in view.tables if t.key.startswith("memory_steps.Place(gpu"))
    page = page_at(width, dark)
    frame = open_panel(page, tb, LEAK_RUN, worker, "memory", "ms")
    if frame.locator('[data-testid="memory-place"]').count():  # the GPU place (the CPU one may come first)
        frame.click(f'[data-testid="memory-place"] button[data-value="{place}"]')
    frame.wait_for_selector(f'[data-testid="memory-steps-wrap"][data-table="memory_steps.{place}"]', timeout=30_000)
    frame.wait_for_selector('[data-testid="memory-steps-chart"][data-drawn]', timeout=30_000)
    check_dark(frame, dark)
    # the headline: the leak, with its bytes per step, as Python wrote it
    leak = next(s for s in view.sentences if s.key == f"memory.leak.{place}")
    shown = frame.inner_text('[data-testid="view-sentences"]')
    assert sentence_text(leak, "ms") in " ".join(shown.split())
    assert "256.00 MiB" in sentence_text(leak, "ms")
    # at either width no column runs past its card (columns are hidden to fit, the Columns menu shows them)
    past = tables_past_the_box(frame)
    assert past == [], past
    for test_id in ("memory-insights", "memory-steps"):
        show_all_columns(frame, test_id)
    # every cell of the three insight tables is the Python formatter's string
    _same(frame, "memory-insights", table(view, "memory_insights"), "ms")
    _same(frame, "memory-steps", table(view, f"memory_steps.{place}"), "ms")
    _same(frame, "memory-alive", table(view, f"memory_alive.{place}"), "ms")
    ins = drawn(frame, "memory-insights")
    assert "Yes" in [r.get("leak") for r in ins]
    assert frame.evaluate(_CUT) == []
    SHOTS.mkdir(parents=True, exist_ok=True)
    for card in ("memory-insights-card", "memory-alive-card"):
        frame.locator(f'[data-testid="{card}"]').scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / f"{card}-leak-{width}-{'dark' if dark else 'light'}.png"))
        if card == "memory-insights-card" and width == 1440 and not dark:  # the README's
            save_screenshot(page, "memory-insights")


@pytest.mark.parametrize("width", [1280, 1440])
def test_memory_panel_on_a_real_cpu_trace(tb, logdir, page_at, width):
    worker = worker_of(logdir, CPU_RUN)
    view = memory_view(tb, CPU_RUN, worker)
    page = page_at(width, False)
    frame = open_panel(page, tb, CPU_RUN, worker, "memory", "ms")
    frame.wait_for_selector('[data-testid="memory-alive-wrap"][data-table="memory_alive.Place(cpu)"]', timeout=30_000)
    past = tables_past_the_box(frame)
    assert past == [], past
    show_all_columns(frame, "memory-insights")
    _same(frame, "memory-insights", table(view, "memory_insights"), "ms")
    _same(frame, "memory-alive", table(view, "memory_alive.Place(cpu)"), "ms")
    assert [r.get("leak") for r in drawn(frame, "memory-insights")] == ["No"]
    growth = next(s for s in view.sentences if s.key == "memory.growth.Place(cpu)")
    assert sentence_text(growth, "ms") in " ".join(frame.inner_text('[data-testid="view-sentences"]').split())
    # the CPU allocator's reserved is below allocated: said in the insights table's notes
    notes = frame.inner_text('[data-testid="memory-insights-notes"]')
    assert "reserved is below allocated" in notes
    assert frame.evaluate(_CUT) == []
    frame.locator('[data-testid="memory-alive-card"]').scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"memory-alive-cpu-{width}.png"))


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("width", [1280, 1440])
def test_parallel_view_shows_the_peak_per_stage(tb, logdir, page_at, width, dark):
    body = tb.get(f"/data/plugin/paddle_profile/parallel?run={quote(LEAK_RUN)}&span=0&format=json", timeout=120)
    rp = json_format.Parse(body, plugin_pb2.RunParallel(), ignore_unknown_fields=True)
    (view,) = [v for v in rp.display.views if v.key == "parallel"]
    stages, ranks = table(view, "memory_stages"), table(view, "memory_ranks")
    assert [s.stage for s in rp.memory.stages] == [0, 1]
    page = page_at(width, dark)
    keys = {"run": LEAK_RUN, "worker": "rank0", "span": "0", "unit": "ms", "view": "distributed"}
    page.goto(
        f"{tb.url}/#paddle_profile&"
        + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="par-ranks"]', timeout=90_000)  # the analysis arrived
    frame.wait_for_selector('[data-testid="par-memory-card"]', timeout=60_000)  # the details, a task later
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    # no table of the Distributed view runs past its card (the last columns hidden to fit)
    frame.wait_for_timeout(300)
    past = tables_past_the_box(frame)
    assert past == [], past
    _same(frame, "par-memory_stages", stages, "ms")
    _same(frame, "par-memory_ranks", ranks, "ms")
    bars = frame.locator('[data-testid="par-memory-bars"] .par-mem-bar')
    assert bars.count() == len(rp.memory.stages)
    texts = [bars.nth(i).inner_text() for i in range(bars.count())]
    for text, st in zip(texts, rp.memory.stages):
        assert f"stage {st.stage}" in text and text.strip().endswith(("GiB", "MiB"))
    cut = frame.evaluate(_CUT.replace(".panel .dt[data-table]", '[data-testid="par-memory-card"] .dt[data-table]'))
    assert cut == []
    frame.locator('[data-testid="par-memory-card"]').scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"memory-stages-{width}-{'dark' if dark else 'light'}.png"))


# ---------------------------------------------------------------- units (issue 26.6)

BINARY = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
_SIZE = re.compile(r"(-?)(\d+(?:\.\d\d)?) (B|KiB|MiB|GiB)")


def size_of(text: str, raw: float) -> None:
    """``text`` is ``raw`` bytes as a human size: its sign, a binary unit whose multiple of 1..1024 it is, 2
    decimals (an integer of B)."""
    m = _SIZE.fullmatch(text.strip())
    assert m, f"{text!r} is not a human size (B, KiB, MiB, GiB)"
    sign, number, unit = m.groups()
    assert (sign == "-") == (raw < 0), (text, raw)
    magnitude = abs(raw) / BINARY[unit]
    assert 1 <= magnitude < 1024 or unit in ("B", "GiB"), (text, raw)
    # B: the integer (a fractional mean, a slope, is cut); else 2 decimals
    assert abs(float(number) - magnitude) < (1 if unit == "B" else 0.005 + 1e-9), (text, raw)


_CHART_UNITS = """(id) => {
  const c = document.querySelector(`[data-testid="${id}"]`).__tbppChart;
  const o = c.getOption();
  const marks = o.series.filter((s) => s.markPoint && s.markPoint.data && s.markPoint.data.length)
    .map((s) => ({ text: s.markPoint.label.formatter(), value: s.markPoint.data[0].value, y: s.markPoint.data[0].coord[1] }));
  const box = o.tooltip[0].formatter([{ dataIndex: 0 }]);
  const tip = typeof box === "string" ? box : box.textContent;
  const ys = o.series.map((s) => s.data.map((d) => (Array.isArray(d) ? d[1] : d)));
  return { axis: o.yAxis[0].name, marks, tip, ys };
}"""


def test_memory_units_agree_between_axis_and_labels(tb, logdir, page_at):
    """The memory curve's y axis names a binary unit (GiB) and every label on or beside it prints sizes in
    binary units by the same ladder: a peak label in the axis's unit is its point's height ("8.00 GB" on a
    GiB axis was the defect); the per-step chart's axis and tooltips the same."""
    worker = worker_of(logdir, LEAK_RUN)
    view = memory_view(tb, LEAK_RUN, worker)
    place = next(t.key[len("memory_steps.") :] for t in view.tables if t.key.startswith("memory_steps.Place(gpu"))
    page = page_at(1280, False)
    frame = open_panel(page, tb, LEAK_RUN, worker, "memory", "ms")
    if frame.locator('[data-testid="memory-place"]').count():
        frame.click(f'[data-testid="memory-place"] button[data-value="{place}"]')
    frame.wait_for_selector(f'[data-testid="memory-steps-wrap"][data-table="memory_steps.{place}"]', timeout=30_000)
    frame.wait_for_selector('[data-testid="memory-curve"][data-drawn]', timeout=30_000)
    frame.wait_for_selector('[data-testid="memory-steps-chart"][data-drawn]', timeout=30_000)
    frame.wait_for_timeout(300)

    curve = frame.evaluate(_CHART_UNITS, "memory-curve")
    assert curve["axis"] in BINARY, curve["axis"]
    top = max(max(ys) for ys in curve["ys"] if ys)
    assert 1 <= top < 1024 or curve["axis"] == "GiB", (curve["axis"], top)  # the axis's unit fits its data
    assert curve["marks"], "no peak marked"
    for mark in curve["marks"]:
        assert mark["text"].startswith("peak "), mark
        size_of(mark["text"][len("peak ") :], mark["value"])
        if mark["text"].endswith(" " + curve["axis"]):  # in the axis's unit: the number is the point's height
            assert abs(float(mark["text"].split()[1]) - mark["y"]) <= 0.005 + 1e-9, (mark, curve["axis"])
    highest = max(curve["marks"], key=lambda m: m["value"])
    assert highest["text"].endswith(" " + curve["axis"]), (highest, curve["axis"])
    shown = re.findall(r"\((-?[\d.]+ \S+?)\)", curve["tip"])  # "123 B (1.50 MiB)" per series
    assert len(shown) == 2 and all(_SIZE.fullmatch(text) or text == "0 B" for text in shown), curve["tip"]

    steps = frame.evaluate(_CHART_UNITS, "memory-steps-chart")
    assert steps["axis"] in BINARY, steps["axis"]
    t = table(view, f"memory_steps.{place}")
    top_raw = max(
        x.number
        for r in t.rows
        for c, x in zip(t.columns, r.cells)
        if c.key in ("allocated_end", "reserved_end", "allocated_peak", "allocated_floor")
    )
    assert abs(max(max(ys) for ys in steps["ys"]) - top_raw / BINARY[steps["axis"]]) < 1e-6
    assert 1 <= top_raw / BINARY[steps["axis"]] < 1024 or steps["axis"] == "GiB"
    sizes = re.findall(r"(-?\d[\d.]* (?:[KMGT]i?B|B))", steps["tip"])
    assert sizes and all(_SIZE.fullmatch(s) for s in sizes), steps["tip"]
    SHOTS.mkdir(parents=True, exist_ok=True)
    frame.locator('[data-testid="memory-curve-card"]').screenshot(path=str(SHOTS / "memory-units-curve-1280.png"))


def test_negative_bytes_print_as_signed_sizes(tb, logdir, page_at):
    """The CPU allocator's reserved − allocated is negative on the real CPU trace: the insights table prints
    it as a human size with a sign ("-483183820 B" was the defect), every number the model's raw value."""
    worker = worker_of(logdir, CPU_RUN)
    view = memory_view(tb, CPU_RUN, worker)
    t = table(view, "memory_insights")
    raw = {c.key: x.number for c, x in zip(t.columns, t.rows[0].cells)}
    negative = [
        k
        for k in ("fragmentation_at_peak", "fragmentation_max", "allocated_slope", "reserved_slope", "floor_growth_min")
        if raw.get(k, 0) < -1024
    ]
    assert negative, raw  # the trace's CPU place: reserved below allocated
    page = page_at(1280, False)
    frame = open_panel(page, tb, CPU_RUN, worker, "memory", "ms")
    frame.wait_for_selector('[data-testid="memory-insights"] .vt-row', timeout=30_000)
    (row,) = drawn(frame, "memory-insights")
    for key in negative:
        size_of(row[key], raw[key])
    for key in ("allocated_slope", "reserved_slope", "floor_growth_min", "fragmentation_at_peak", "fragmentation_max"):
        if raw.get(key):
            size_of(row[key], raw[key])
    SHOTS.mkdir(parents=True, exist_ok=True)
    frame.locator('[data-testid="memory-insights-card"]').screenshot(
        path=str(SHOTS / "memory-units-insights-cpu-1280.png")
    )


# Every text ECharts drew on a chart (axis names and labels, mark labels, legend): its box (zrender's, in the
# chart's px) outside the chart's own width and height, i.e. clipped by the canvas.
TEXTS_OUTSIDE = """(id) => {
  const el = document.querySelector(`[data-testid="${id}"]`);
  const chart = el && el.__tbppChart;
  if (!chart) return null;
  const W = chart.getWidth(), H = chart.getHeight(), out = [];
  for (const e of chart.getZr().storage.getDisplayList(true)) {
    if ((e.type !== 'text' && e.type !== 'tspan') || !e.style || !e.style.text || e.invisible || e.ignore) continue;
    const r = e.getBoundingRect().clone();
    const m = e.getComputedTransform && e.getComputedTransform();
    if (m) r.applyTransform(m);
    if (r.x < -0.5 || r.y < -0.5 || r.x + r.width > W + 0.5 || r.y + r.height > H + 0.5)
      out.push({ text: String(e.style.text), x: Math.round(r.x), y: Math.round(r.y), w: Math.round(r.width), W, H });
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1280, 1440])
def test_memory_chart_texts_are_inside_the_chart(tb, logdir, page_at, width):
    """The memory curve's x-axis name (the time unit, at the axis' end) was cut by the canvas's right edge at
    1,280 px ("m" of "ms"); every text of the panel's charts is inside its chart."""
    worker = worker_of(logdir, CPU_RUN)
    page = page_at(width, True)
    frame = open_panel(page, tb, CPU_RUN, worker, "memory", "ms")
    frame.wait_for_selector('[data-testid="memory-curve"][data-drawn]', timeout=30_000)
    charts = frame.evaluate(
        "() => Array.from(document.querySelectorAll('[data-drawn]')).map((e) => e.dataset.testid).filter(Boolean)"
    )
    assert "memory-curve" in charts, charts
    for test_id in charts:
        out = frame.evaluate(TEXTS_OUTSIDE, test_id)
        assert out == [], (test_id, out)


# ---------------------------------------------------------------- the peaks' labels (issue 26, seen at 1,024 ranks)

# What ECharts drew: each "peak …" label's box and each pin's box (zrender's display list, in the chart's pixels),
# and each series' line as the stepped polyline ECharts' own coordinate system puts its points on.
_DRAWN_MARKS = """(id) => {
  const c = document.querySelector(`[data-testid="${id}"]`).__tbppChart;
  const box = (el) => { const r = el.getBoundingRect().clone(); if (el.transform) r.applyTransform(el.transform);
                        return { x: r.x, y: r.y, w: r.width, h: r.height }; };
  const list = c.getZr().storage.getDisplayList(true);
  const labels = list.filter((el) => el.style && typeof el.style.text === 'string' && el.style.text.startsWith('peak '))
    .map((el) => ({ text: el.style.text, ...box(el) }));
  const texts = list.filter((el) => el.style && typeof el.style.text === 'string' && el.style.text && !el.style.text.startsWith('peak '))
    .map((el) => ({ text: el.style.text, ...box(el) }));
  const pins = list.filter((el) => el.shape && el.shape.symbolType === 'pin').map(box);
  const o = c.getOption();
  const lines = o.series.map((s, i) => s.data.map((d) => c.convertToPixel({ seriesIndex: i }, d)));
  const grid = c.getModel().getComponent('grid', 0).coordinateSystem.getRect();
  return { labels, texts, pins, lines, grid: { x: grid.x, y: grid.y, w: grid.width, h: grid.height } };
}"""


def _meet(a: dict, b: dict, pad: float = 1.0) -> bool:
    return (
        a["x"] < b["x"] + b["w"] + pad
        and b["x"] < a["x"] + a["w"] + pad
        and a["y"] < b["y"] + b["h"] + pad
        and b["y"] < a["y"] + a["h"] + pad
    )


def _segments(points):
    """A line drawn with step 'end': from each point across to the next one's x, then up or down to it."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        yield {"x": min(x0, x1), "y": y0, "w": abs(x1 - x0), "h": 0}
        yield {"x": x1, "y": min(y0, y1), "w": 0, "h": abs(y1 - y0)}


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_peak_labels_keep_clear_of_each_other_the_pins_and_the_lines(tb, logdir, page_at, dark):
    """On every place's memory curve each "peak …" label keeps clear (1 px) of the other label, of the pins, of
    every other text drawn (axes, legend) and of both lines, inside the plot: the allocated peak's label touched the reserved line above it ("peak 187.39 MiB"
    on the 1,024-rank run's Place(cpu), where reserved is 64 MiB over allocated, about 40 px)."""
    worker = worker_of(logdir, LEAK_RUN)
    page = page_at(1280, dark)
    frame = open_panel(page, tb, LEAK_RUN, worker, "memory", "ms")
    frame.wait_for_selector('[data-testid="memory-curve"][data-drawn]', timeout=30_000)
    check_dark(frame, dark)
    places = frame.eval_on_selector_all(
        '[data-testid="memory-place"] button', "els => els.map((e) => e.dataset.value)"
    ) or [None]
    seen = 0
    for place in places:
        if place is not None:
            frame.click(f'[data-testid="memory-place"] button[data-value="{place}"]')
            frame.wait_for_function(
                "(p) => document.querySelector('[data-testid=memory-curve]').__tbppChart.getOption()"
                ".series.some((s) => s.markPoint && s.markPoint.data.length && s.data.length)",
                arg=place,
            )
        frame.wait_for_timeout(300)
        got = frame.evaluate(_DRAWN_MARKS, "memory-curve")
        SHOTS.mkdir(parents=True, exist_ok=True)
        frame.locator('[data-testid="memory-curve-card"]').screenshot(
            path=str(SHOTS / f"memory-peaks-{place}-{'dark' if dark else 'light'}.png")
        )
        labels, grid = got["labels"], got["grid"]
        assert len(labels) == 2 and len(got["pins"]) == 2, (place, labels, got["pins"])
        seen += 1
        lines = [s for points in got["lines"] for s in _segments(points)]
        for i, label in enumerate(labels):
            where = (place, label["text"])
            assert label["x"] >= grid["x"] and label["x"] + label["w"] <= grid["x"] + grid["w"], (where, label, grid)
            assert label["y"] + label["h"] <= grid["y"] + grid["h"], (where, label, grid)
            assert not any(_meet(label, other) for other in labels[i + 1 :]), (where, labels)
            assert not any(_meet(label, pin) for pin in got["pins"]), (where, label, got["pins"])
            assert not any(_meet(label, t) for t in got["texts"]), (
                where,
                label,
                [t for t in got["texts"] if _meet(label, t)],
            )
            crossed = [s for s in lines if _meet(label, s)]
            assert not crossed, (where, label, crossed[:3])
    assert seen >= 2
