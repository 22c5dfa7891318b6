"""The multi-rank workflow on the Timeline (issue 16, point 1), in Debian's Chromium through Playwright.

A real ``tensorboard`` serves the shared two-rank GPU-shaped traces; the selected worker is rank 1,
never rank 0, so a link that fell back to rank 0 fails. What the page shows is checked against the
trace read with the reader: the kernel a link lands on is a kernel of rank 1's file, with its name,
stream, correlation id and duration. At 1,280 and 1,440 px; screenshots go to $TBP_SHOTS (default: the temp folder's tbp-shots/).
"""

from __future__ import annotations

import re
import shutil
from urllib.parse import quote, unquote

import numpy as np
import pytest

from support.browser_util import PageLog, new_page, tensorboard, wait_all_loaded
from support.paths import SHARED_TRACES

pytestmark = [pytest.mark.browser]


from tb_paddle_profile.trace import event_types as et  # noqa: E402
from tb_paddle_profile.trace.reader import read_trace  # noqa: E402

GPU_DIR = SHARED_TRACES / "gpu-synthetic-2rank"
RUN = "gpu-2rank"
from support.browser_util import SHOTS  # noqa: E402

WIDTHS = [1280, 1440]


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    if not GPU_DIR.is_dir():
        pytest.skip("the shared GPU-shaped traces are not here")
    root = tmp_path_factory.mktemp("tlwf_logdir")
    for trace in GPU_DIR.glob("*.paddle_trace.json"):
        (root / RUN).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trace, root / RUN / trace.name)
    with tensorboard(root, tmp_path_factory.mktemp("tlwf_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture(scope="module")
def tables():
    out = {}
    for path in sorted(GPU_DIR.glob("*.paddle_trace.json")):
        out["rank" + path.name[4]] = read_trace(path.read_bytes(), path.name)
    return out


def _page(browser, width, height=900):
    log = PageLog()
    page = new_page(browser, log, width=width, height=height)
    return page, log


def _close(page, log):
    page.context.close()
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
    assert log.outside_requests() == [], log.outside_requests()


def open_view(page, tb, view="timeline", worker="rank1", extra=""):
    keys = dict(run=RUN, worker=worker, span="0", unit="ms", view=view)
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    page.goto(f"{tb.url}/#{'&'.join(parts)}{extra}")
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=60_000)
    return frame


def wait_drawn(frame, timeout=60_000):
    frame.wait_for_function(
        "() => { const t = window.__tbppTimeline; const d = t && t.data();"
        " return d && d.items > 0 && d.ranks.every((r) => r.state === '' && r.tracks.length > 0); }",
        timeout=timeout,
    )


def details(frame) -> dict:
    frame.wait_for_selector('[data-testid="timeline-details"]', timeout=20_000)
    return frame.evaluate("""() => { const out = { name: document.querySelector('[data-testid="timeline-detail-name"]').textContent };
      for (const td of document.querySelectorAll('[data-testid="timeline-details"] td[data-key]')) out[td.dataset.key] = td.textContent;
      return out; }""")


def wait_detail_on(frame, prefix: str) -> dict:
    frame.wait_for_function(
        """(prefix) => { const t = document.querySelector('[data-testid="timeline-details"] td[data-key="track"]');
          return t && t.textContent.startsWith(prefix); }""",
        arg=prefix,
        timeout=30_000,
    )
    return details(frame)


def fmt_dur(ns: float) -> str:
    """The page's fmtDur (panels/timeline/data.ts), for the expected readout text."""
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.3f} µs"
    return f"{round(ns)} ns"


def assert_kernel_of(tables, worker: str, d: dict):
    """The details are those of a kernel in `worker`'s trace file: name, stream, correlation id."""
    t = tables[worker]
    names = np.array(t.names, dtype=object)[t.device.name]
    stream = int(d["track"].split(" · stream ")[1].split(" · ")[0])
    hits = np.nonzero(
        (t.device.type == et.KERNEL)
        & (t.device.corr == int(d["correlation id"]))
        & (names == d["name"])
        & (t.device.stream == stream)
    )[0]
    assert len(hits) == 1, (worker, d)
    return int(hits[0])


# Where the selected slice is drawn now: its row in the layout, its x span, and whether both are on screen.
_SELECTED = """() => { const t = window.__tbppTimeline, s = t.selected(), v = t.view(), d = t.data();
  if (!s) return null;
  const c = document.querySelector('[data-testid="timeline-canvas"]'); const plot = c.clientWidth - 200;
  const ri = d.ranks.findIndex((r) => r.worker === s.worker);
  const row = t.rows().find((r) => r.kind === 'lane' && r.rank === ri && r.track === s.track && r.depth === s.depth);
  if (!row) return { worker: s.worker, row: false };
  const top = t.scrollTop(), y = 26 + row.y - top;
  const x0 = 200 + (s.start - v.start) / (v.end - v.start) * plot, x1 = 200 + (s.end - v.start) / (v.end - v.start) * plot;
  return { worker: s.worker, row: true, y, h: row.h, x0, x1, viewH: c.clientHeight, width: c.clientWidth,
           inView: y >= 26 && y + row.h <= c.clientHeight && x1 >= 200 && x0 <= c.clientWidth }; }"""

# Pixels of a colour (r, g, b within 8) inside a canvas rectangle (CSS px).
_PIXELS = """([x, y, w, h, rgb]) => { const c = document.querySelector('[data-testid="timeline-canvas"]');
  const k = devicePixelRatio; const img = c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k),
    Math.max(1, Math.round(w * k)), Math.max(1, Math.round(h * k))).data;
  let n = 0; for (let i = 0; i < img.length; i += 4)
    if (Math.abs(img[i] - rgb[0]) < 8 && Math.abs(img[i + 1] - rgb[1]) < 8 && Math.abs(img[i + 2] - rgb[2]) < 8) n++;
  return n; }"""

SELECTED_RGB = [13, 71, 161]  # draw.ts: the selected slice's outline
BOX_RGB = [25, 118, 210]  # draw.ts: the box selection's outline


def assert_selected_in_view_and_highlighted(frame):
    frame.wait_for_function(f"() => {{ const s = ({_SELECTED})(); return s && s.inView; }}", timeout=20_000)
    frame.wait_for_timeout(150)
    s = frame.evaluate(_SELECTED)
    x0 = max(200, s["x0"] - 3)
    n = frame.evaluate(_PIXELS, [x0, s["y"], min(s["width"], s["x1"] + 3) - x0, s["h"], SELECTED_RGB])
    assert n > 0, s  # the outline is drawn where the slice is
    return s


def assert_details_on_screen(page, frame):
    """The details panel sits wholly inside the viewport, under the canvas (no scrolling to see it)."""
    below = frame.locator('[data-testid="timeline-below"]').bounding_box()  # page coordinates
    canvas = frame.locator('[data-testid="timeline-canvas"]').bounding_box()
    vh = page.viewport_size["height"]
    assert below["height"] >= 200
    assert below["y"] + below["height"] <= vh + 1, (below, vh)
    assert below["y"] >= canvas["y"] + canvas["height"] - 1


def hash_keys(page) -> dict:
    h = unquote(page.evaluate("() => location.hash"))
    return dict(re.findall(r"p\.paddle_profile\.(\w+)=([^&]*)", h))


@pytest.mark.parametrize("width", WIDTHS)
def test_kernels_link_of_rank1_lands_on_rank1s_kernel_in_view(tb, tables, browser, width):
    page, log = _page(browser, width)
    frame = open_view(page, tb, view="kernels")
    frame.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=60_000)
    row = frame.locator('[data-testid="kernel-table"] .vt-row[data-index="0"]')
    name = row.locator(".vt-td.name").get_attribute("title")
    # the kernel runs on both ranks: a link falling back to rank 0 would find it there
    both = [
        w
        for w, t in tables.items()
        if name in set(np.array(t.names, dtype=object)[t.device.name[t.device.type == et.KERNEL]])
    ]
    assert sorted(both) == ["rank0", "rank1"]
    row.click()
    frame.click('[data-testid="kernels-to-timeline"]')
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=30_000)
    d = wait_detail_on(frame, "rank1 · ")
    assert d["name"] == name and d["type"] == "Kernel"
    i = assert_kernel_of(tables, "rank1", d)
    # rank 1's first occurrence of that kernel
    t = tables["rank1"]
    names = np.array(t.names, dtype=object)[t.device.name]
    same = np.nonzero((t.device.type == et.KERNEL) & (names == name))[0]
    assert t.device.start[i] == t.device.start[same].min()
    s = assert_selected_in_view_and_highlighted(frame)
    assert s["worker"] == "rank1"
    assert_details_on_screen(page, frame)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"timeline-link-rank1-{width}.png"))
    # and back: the button names the rank it switches to, and switches to it
    btn = frame.locator('[data-testid="timeline-to-kernels"]')
    assert btn.text_content().endswith("rank 1"), btn.text_content()
    btn.click()
    frame.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=30_000)
    assert frame.locator('[data-testid="kernels-search"]').input_value() == name
    assert hash_keys(page)["worker"] == "rank1"
    _close(page, log)


@pytest.mark.parametrize("width", WIDTHS)
def test_opens_on_the_selected_worker_and_fits_the_window(tb, browser, width):
    page, log = _page(browser, width, height=820)
    frame = open_view(page, tb)
    wait_drawn(frame)
    frame.wait_for_timeout(400)
    st = frame.evaluate("""() => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
      const head = t.rows().find((r) => r.kind === 'rank' && r.worker === 'rank1');
      const c = document.querySelector('[data-testid="timeline-canvas"]');
      const sc = c.parentElement;
      return { top: t.scrollTop(), headY: head.y, viewH: c.clientHeight, maxTop: sc.scrollHeight - sc.clientHeight,
               view: [v.start, v.end], range: [d.rangeStart, d.rangeEnd] }; }""")
    # rank 1's header is on screen (at the top, or as far as the scroll goes)
    assert st["top"] <= st["headY"] <= st["top"] + st["viewH"] - 26 - 22, st
    assert st["top"] == min(st["headY"], st["maxTop"]), st
    assert st["headY"] > 0  # rank 0 comes first: the scroll moved to rank 1
    # the whole span of both ranks, and the canvas fills the window (no details panel: nothing is selected)
    assert st["view"] == st["range"]
    assert frame.locator('[data-testid="timeline-below"]').count() == 0
    canvas = frame.locator('[data-testid="timeline-canvas"]').bounding_box()
    assert 0 <= page.viewport_size["height"] - (canvas["y"] + canvas["height"]) < 40  # no wasted height
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"timeline-open-rank1-{width}.png"))
    _close(page, log)


# The kernels of `worker` drawn whole in the canvas (CSS px of the canvas), lowest on screen last.
_KERNELS_IN_VIEW = """(worker) => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
  const c = document.querySelector('[data-testid="timeline-canvas"]'); const plot = c.clientWidth - 200, top = t.scrollTop();
  const out = [];
  for (const row of t.rows()) { if (row.kind !== 'lane' || row.worker !== worker) continue;
    const lane = d.ranks[row.rank].lanes.get(row.track + ':' + row.depth); if (!lane) continue;
    for (let i = 0; i < lane.start.length; i++) { const s = lane.start[i], e = s + lane.dur[i];
      if (lane.count[i] !== 1 || d.types[lane.type[i]] !== 'Kernel' || s < v.start || e > v.end || (e - s) / (v.end - v.start) * plot < 4) continue;
      const y = 26 + row.y + row.h / 2 - top; if (y < 30 || y > c.clientHeight - 4) continue;
      out.push({ x: 200 + ((s + e) / 2 - v.start) / (v.end - v.start) * plot, y, name: d.names[lane.name[i]] }); } }
  return out.sort((a, b) => a.y - b.y); }"""


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def test_the_canvas_takes_the_window_and_the_details_come_with_a_selection(tb, tables, browser, size):
    """Issue 26: at 1,280 x 800 the detailed timeline's canvas was 260 px tall, the details panel keeping its
    230 px under it with nothing selected ("Click a slice to see its details"). Now the canvas takes what the
    page leaves (at least 55 % of the window's height, its bottom on screen); the details panel is in the
    page only once a slice is clicked, wholly on screen with the slice still in view; its Close button (and
    Esc) takes it away and gives the height back."""
    width, height = size
    page, log = _page(browser, width, height)
    frame = open_view(page, tb)
    wait_drawn(frame)
    frame.wait_for_timeout(300)

    def canvas_box():
        return frame.locator('[data-testid="timeline-canvas"]').bounding_box()  # page coordinates

    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"timeline-open-{width}x{height}.png"))
    c = canvas_box()
    assert c["height"] >= 0.55 * height, (c, height)
    assert c["y"] + c["height"] <= height + 1, (c, height)  # the whole canvas on screen
    assert height - (c["y"] + c["height"]) < 40, (c, height)  # and no wasted height under it
    assert frame.locator('[data-testid="timeline-below"]').count() == 0
    assert frame.locator('[data-testid="timeline-details"]').count() == 0
    full = c["height"]

    # a click on the lowest kernel drawn: the details panel appears under the canvas, the kernel stays in view
    ks = frame.evaluate(_KERNELS_IN_VIEW, "rank1")
    assert ks, "no kernel of rank 1 drawn"
    k = ks[-1]
    frame.locator('[data-testid="timeline-canvas"]').click(position={"x": k["x"], "y": k["y"]})
    d = wait_detail_on(frame, "rank1 · ")
    assert d["name"] == k["name"] and d["type"] == "Kernel"
    assert_kernel_of(tables, "rank1", d)
    frame.wait_for_timeout(300)
    assert_details_on_screen(page, frame)
    assert_selected_in_view_and_highlighted(frame)
    assert canvas_box()["height"] < full  # the panel's height came from the canvas, not from below the window
    page.screenshot(path=str(SHOTS / f"timeline-details-on-select-{width}.png"))

    # Close: no panel, no selection in the URL, the canvas as tall as before
    frame.click('[data-testid="timeline-details-close"]')
    frame.wait_for_selector('[data-testid="timeline-below"]', state="detached", timeout=20_000)
    frame.wait_for_function("() => window.__tbppTimeline.selected() === null")
    page.wait_for_function("() => !decodeURIComponent(location.hash).includes('tlsel=rank')")
    frame.wait_for_function(
        f"() => document.querySelector('[data-testid=\"timeline-canvas\"]').clientHeight >= {full - 1}"
    )
    # Esc takes a selection away too
    frame.locator('[data-testid="timeline-canvas"]').click(position={"x": k["x"], "y": k["y"]})
    wait_detail_on(frame, "rank1 · ")
    page.keyboard.press("Escape")
    frame.wait_for_selector('[data-testid="timeline-below"]', state="detached", timeout=20_000)
    _close(page, log)


# draw.ts/data.ts maybeCommunication on a kernel's name
_COMM = re.compile(
    r"nccl|xccl|rccl|gloo|send|recv|all_?reduce|all_?gather|reduce_?scatter|broadcast|all_?to_?all|barrier", re.I
)


def _union(iv) -> float:
    total, cs, ce = 0.0, None, None
    for a, b in sorted(iv):
        if ce is None or a > ce:
            if ce is not None:
                total += ce - cs
            cs, ce = a, b
        else:
            ce = max(ce, b)
    return total + (ce - cs if ce is not None else 0.0)


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_collapse_all_leaves_each_ranks_compute_and_communication(tb, tables, browser, dark):
    """Issue 26: "Collapse all" left each rank a strip of grey and purple marks, nothing said of compute or
    communication. A folded rank's header now says its GPU's shares of the view ("compute 41.2 % · comm
    9.1 %": the union of its communication kernels, and of its other kernels less that, over the window)
    and colours its streams' kernels as the compact timeline does (communication orange, compute green).
    The shares are checked against the kernels of each rank's trace file (at the whole span every kernel is
    in the window; merged sub-pixel kernels allow 1.5 points); light and dark (the dark palette's colours)."""
    log = PageLog()
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, device_scale_factor=1, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    context.on("request", lambda req: log.requests.append(req.url))
    page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda err: log.page_errors.append(str(err)))
    frame = open_view(page, tb)
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    wait_drawn(frame)
    frame.click('[data-testid="timeline-collapse-all"]')
    frame.wait_for_function(
        "() => document.querySelector('[data-testid=\"timeline-canvas\"]').dataset.foldedRanks === 'rank0,rank1'"
    )
    frame.wait_for_function("() => (window.__tbppTimeline.folded || []).length === 2", timeout=20_000)
    frame.wait_for_timeout(200)
    got = {f["worker"]: f for f in frame.evaluate("() => window.__tbppTimeline.folded")}
    v = frame.evaluate("() => window.__tbppTimeline.view()")
    width = v["end"] - v["start"]
    for worker, t in tables.items():
        names = np.array(t.names, dtype=object)[t.device.name]
        k = t.device.type == et.KERNEL
        comm = np.array([bool(_COMM.search(n)) for n in names]) & k
        iv = lambda m: list(zip(t.device.start[m].astype(float), t.device.end[m].astype(float)))  # noqa: E731
        c = _union(iv(comm)) / width
        compute = (_union(iv(k)) - _union(iv(comm))) / width
        f = got[worker]
        assert c > 0 and compute > 0, (worker, c, compute)
        assert abs(f["communication"] - c) < 0.015 and abs(f["compute"] - compute) < 0.015, (worker, f, c, compute)
        assert f["text"] == f"compute {100 * f['compute']:.1f} % · comm {100 * f['communication']:.1f} %"
        # the rank's label fits the label column (200 px, from x = 16, its edge 6 px in): ellipsised when cut
        lw = frame.evaluate(
            "(t) => { const c = document.createElement('canvas').getContext('2d'); c.font = 'bold 12px system-ui, sans-serif'; return c.measureText(t).width; }",
            f["label"],
        )
        assert f["label"] and 16 + lw <= 200 - 6, (f, lw)
    # both colours are drawn in each folded header's plot area
    rows_ = frame.evaluate("() => window.__tbppTimeline.rows().map((r) => ({ worker: r.worker, y: r.y, h: r.h }))")
    top = frame.evaluate("() => window.__tbppTimeline.scrollTop()")
    for r in rows_:
        y = 26 + r["y"] - top
        # draw.ts's palettes: communication, compute
        for rgb in ([255, 167, 38], [102, 187, 106]) if dark else ([251, 140, 0], [67, 160, 71]):
            assert frame.evaluate(_PIXELS, [200, y, 994 - 200, r["h"], rgb]) > 0, (r, rgb)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"timeline-collapsed-{'dark' if dark else 'light'}-1280.png"))
    _close(page, log)


def test_timeline_search_opens_the_current_ranks_match(tb, tables, browser):
    page, log = _page(browser, 1440)
    frame = open_view(page, tb)
    wait_drawn(frame)
    t0, t1 = tables["rank0"], tables["rank1"]
    k0 = set(np.array(t0.names, dtype=object)[t0.device.name[t0.device.type == et.KERNEL]])
    k1 = set(np.array(t1.names, dtype=object)[t1.device.name[t1.device.type == et.KERNEL]])
    name = sorted(k0 & k1)[0]
    frame.fill('[data-testid="timeline-search"]', name)
    frame.press('[data-testid="timeline-search"]', "Enter")
    d = wait_detail_on(frame, "rank1 · ")
    assert d["name"] == name
    assert_kernel_of(tables, "rank1", d)
    assert_selected_in_view_and_highlighted(frame)
    _close(page, log)


def test_hover_readout_keys_without_a_click_and_a_readable_ruler(tb, tables, browser):
    page, log = _page(browser, 1440)
    frame = open_view(page, tb)
    wait_drawn(frame)
    canvas = frame.locator('[data-testid="timeline-canvas"]')
    box = canvas.bounding_box()
    # hovering a kernel of rank 1: its name, duration and start
    k = frame.evaluate("""() => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
      const c = document.querySelector('[data-testid="timeline-canvas"]'); const plot = c.clientWidth - 200, top = t.scrollTop();
      for (const row of t.rows()) { if (row.kind !== 'lane' || row.worker !== 'rank1') continue;
        const lane = d.ranks[row.rank].lanes.get(row.track + ':' + row.depth); if (!lane) continue;
        for (let i = 0; i < lane.start.length; i++) { const s = lane.start[i], e = s + lane.dur[i];
          if (lane.count[i] !== 1 || d.types[lane.type[i]] !== 'Kernel' || (e - s) / (v.end - v.start) * plot < 6) continue;
          const y = 26 + row.y + row.h / 2 - top; if (y < 30 || y > c.clientHeight - 4) continue;
          return { x: 200 + ((s + e) / 2 - v.start) / (v.end - v.start) * plot, y, name: d.names[lane.name[i]], dur: lane.dur[i], start: s }; } }
      return null; }""")
    assert k is not None
    page.mouse.move(box["x"] + k["x"], box["y"] + k["y"])
    hover = frame.locator('[data-testid="timeline-hover"]')
    hover.wait_for(state="visible", timeout=10_000)
    assert hover.locator('[data-key="name"]').text_content() == k["name"]
    meta = hover.locator('[data-key="meta"]').text_content()
    assert meta.startswith(f"{fmt_dur(k['dur'])} · start {fmt_dur(k['start'])}")
    t1 = tables["rank1"]
    assert k["name"] in set(np.array(t1.names, dtype=object)[t1.device.name[t1.device.type == et.KERNEL]])
    page.mouse.move(box["x"] + 100, box["y"] + 5)
    hover.wait_for(state="hidden", timeout=10_000)

    # W/A/S/D without a click in the canvas: a click on the hint text, then keys on the page
    frame.click(".tl-hint")
    v0 = frame.evaluate("() => { const v = window.__tbppTimeline.view(); return [v.start, v.end]; }")
    page.keyboard.press("w")
    frame.wait_for_function(
        f"() => {{ const v = window.__tbppTimeline.view(); return v.end - v.start < {0.9 * (v0[1] - v0[0])}; }}"
    )
    v1 = frame.evaluate("() => { const v = window.__tbppTimeline.view(); return [v.start, v.end]; }")
    page.keyboard.press("d")
    frame.wait_for_function(f"() => window.__tbppTimeline.view().start > {v1[0]}")
    # typing in the search box is not a shortcut
    v2 = frame.evaluate("() => { const v = window.__tbppTimeline.view(); return [v.start, v.end]; }")
    frame.click('[data-testid="timeline-search"]')
    page.keyboard.type("wasd")
    frame.wait_for_timeout(200)
    assert frame.evaluate("() => { const v = window.__tbppTimeline.view(); return [v.start, v.end]; }") == v2
    assert frame.locator('[data-testid="timeline-search"]').input_value() == "wasd"

    # the ruler at every zoom: distinct labels, evenly spaced, down to the 1 µs floor
    frame.click(".tl-hint")

    def ruler_ok():
        labels = frame.evaluate("() => window.__tbppTimeline.ruler.slice()")
        assert len(labels) >= 4, labels
        assert len(set(labels)) == len(labels), labels
        unit = {l.split(" ")[1] for l in labels}
        assert len(unit) == 1, labels
        vals = [float(l.split(" ")[0]) for l in labels]
        steps = np.diff(vals)
        assert (steps > 0).all() and np.allclose(steps, steps[0], rtol=1e-3), labels
        return labels

    ruler_ok()
    for _ in range(60):
        page.keyboard.press("w")
    frame.wait_for_function(
        "() => { const v = window.__tbppTimeline.view(); return v.end - v.start <= 1001; }", timeout=20_000
    )
    frame.wait_for_timeout(200)
    deep = ruler_ok()
    assert max(len(l.split(" ")[0].split(".")[-1]) for l in deep) >= 4, deep  # more digits as you zoom
    _close(page, log)


def test_box_selection_stays_in_time_and_flows_of_the_selection_only(tb, tables, browser):
    page, log = _page(browser, 1440)
    frame = open_view(page, tb, worker="rank0")
    wait_drawn(frame)
    canvas = frame.locator('[data-testid="timeline-canvas"]')
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 500, box["y"] + 60)
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(box["x"] + 800, box["y"] + 200, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    frame.wait_for_selector('[data-testid="timeline-range"] tbody tr', timeout=20_000)
    b0 = frame.evaluate("() => window.__tbppTimeline.box()")
    page.mouse.move(box["x"] + 650, box["y"] + 120)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    frame.wait_for_timeout(300)
    b1 = frame.evaluate("() => window.__tbppTimeline.box()")
    assert b1 == b0  # the same times, not the same pixels
    v = frame.evaluate("() => { const v = window.__tbppTimeline.view(); return [v.start, v.end]; }")
    plot = box["width"] - 200
    xa = 200 + (min(b0["t0"], b0["t1"]) - v[0]) / (v[1] - v[0]) * plot
    xb = 200 + (max(b0["t0"], b0["t1"]) - v[0]) / (v[1] - v[0]) * plot
    assert xb - xa > 300 + 20  # zoomed in: the box is wider on screen than it was drawn
    # its outline is drawn at the new place of its left edge (when on screen)
    if xa > 202:
        assert frame.evaluate(_PIXELS, [round(xa) - 1, 70, 3, 100, BOX_RGB]) > 0
    page.keyboard.press("Escape")
    frame.wait_for_function("() => window.__tbppTimeline.box() === null")

    # launch → kernel arrows: none without a selection; with one, those of that slice only
    frame.click('[data-testid="timeline-reset"]')
    frame.check('[data-testid="timeline-flows"]')
    frame.wait_for_function("() => window.__tbppTimeline.data().flows.length > 1", timeout=20_000)
    frame.wait_for_timeout(200)
    assert frame.evaluate("() => window.__tbppTimeline.arrows") == 0
    t = tables["rank0"]
    name = t.names[int(t.device.name[int(np.nonzero(t.device.type == et.KERNEL)[0][0])])]
    frame.fill('[data-testid="timeline-search"]', name)
    frame.press('[data-testid="timeline-search"]', "Enter")
    wait_detail_on(frame, "rank0 · ")
    frame.wait_for_function("() => window.__tbppTimeline.arrows > 0", timeout=20_000)
    got = frame.evaluate("""() => { const t = window.__tbppTimeline, d = t.data(), s = t.selected();
      const ri = d.ranks.findIndex((r) => r.worker === s.worker);
      const mine = d.flows.filter((f) => f.rank === ri && ((f.dstTrack === s.track && f.dstDepth === s.depth && f.dstStart === s.start)
        || (f.srcTrack === s.track && f.srcDepth === s.depth && f.srcStart === s.start)));
      return { arrows: t.arrows, mine: mine.length, all: d.flows.length }; }""")
    assert got["arrows"] == got["mine"] == 1 and got["all"] > 1, got
    page.screenshot(path=str(SHOTS / "timeline-flows-of-selection-1440.png"))
    _close(page, log)


def test_the_view_grows_as_more_ranks_come_in(tb, browser):
    """Shown first with rank 0 alone, then with both: the whole-span view takes rank 1's extent too."""
    page, log = _page(browser, 1280)
    frame = open_view(page, tb, worker="rank1", extra="&" + quote("p.paddle_profile.tlranks") + "=rank0")
    wait_drawn(frame)
    one = frame.evaluate(
        "() => { const t = window.__tbppTimeline, d = t.data(), v = t.view(); return { view: [v.start, v.end], range: [d.rangeStart, d.rangeEnd], ranks: d.ranks.length }; }"
    )
    assert one["ranks"] == 1 and one["view"] == one["range"]
    frame.click('[data-testid="timeline-ranks-default"]')
    frame.wait_for_function("() => window.__tbppTimeline.data().ranks.length === 2", timeout=30_000)
    wait_drawn(frame)
    frame.wait_for_timeout(200)
    two = frame.evaluate(
        "() => { const t = window.__tbppTimeline, d = t.data(), v = t.view(); return { view: [v.start, v.end], range: [d.rangeStart, d.rangeEnd] }; }"
    )
    assert two["view"] == two["range"]
    assert two["range"] != one["range"]  # rank 1 widens the span, and the view with it
    _close(page, log)


# The right edge of each ruler label drawn (CSS px of the canvas), from the page's numbers: the label's time
# parsed back, its tick at X(t) (the plot starts at the 200 px label column), the text 3 px right of it, its
# width measured in the ruler's font (the smaller of 10 and 11 px: a lower bound); the canvas's width.
RULER_RIGHTS = """([labels, v, labelW, sel]) => {
  const c = document.querySelector(sel);
  const W = c.clientWidth, plot = W - labelW;
  const ctx = document.createElement('canvas').getContext('2d');
  const unit = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9 };
  const out = [];
  for (const l of labels) {
    const [num, sym] = l.split(' ');
    const t = Number(num) * unit[sym];
    const x = Math.round(labelW + ((t - v.start) / (v.end - v.start)) * plot);
    const w = Math.min(...['10px', '11px'].map((f) => { ctx.font = `${f} system-ui, sans-serif`; return ctx.measureText(l).width; }));
    out.push({ label: l, right: x + 3 + w, W });
  }
  return out;
}"""


def test_no_ruler_label_is_cut_by_the_canvas_edge(tb, tables, browser):
    """At 1,280 px the last ruler label ran past the canvas's right edge ("8" of "80 ms" on a 1,024-rank run):
    over a series of pans and zooms, every label drawn ends inside the canvas (one that would not fit keeps
    its tick only); the labels left are still evenly spaced."""
    page, log = _page(browser, 1280, 800)
    frame = open_view(page, tb)
    wait_drawn(frame)
    frame.click(".tl-hint")
    seen = 0
    for key in ["d"] * 12 + ["w"] * 3 + ["d"] * 12 + ["s"] * 2 + ["a"] * 12:
        page.keyboard.press(key)
        frame.wait_for_timeout(60)
        labels = frame.evaluate("() => window.__tbppTimeline.ruler.slice()")
        v = frame.evaluate("() => window.__tbppTimeline.view()")
        for r in frame.evaluate(RULER_RIGHTS, [labels, v, 200, '[data-testid="timeline-canvas"]']):
            assert r["right"] <= r["W"] + 0.5, (key, r, labels)
            seen += 1
    assert seen > 100
    _close(page, log)
