"""The Timeline view in a real browser: Debian's Chromium driven by Playwright against a real
``tensorboard`` serving examples/profiler_log and the shared GPU-shaped traces.

What the page shows is checked against the trace itself (read with the reader): the tracks, the
slices, a selected kernel's launch arguments; zooming changes the window; search finds a kernel; the
kernel table's link lands on that kernel. No console error, no request outside 127.0.0.1.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from support.browser_util import (
    REPO,
    PageLog,
    new_page,
    save_screenshot,
    tensorboard,
    wait_all_loaded,
)
from support.paths import SHARED_TRACES

pytestmark = [pytest.mark.browser]


from tb_paddle_profile.trace import event_types as et  # noqa: E402
from tb_paddle_profile.trace.reader import read_trace  # noqa: E402

EXAMPLES = REPO / "examples" / "profiler_log"
GPU_DIR = SHARED_TRACES / "gpu-synthetic-2rank"
GPU_RUN = "shared/gpu-synthetic-2rank"
CPU_RUN = "gpt-2rank"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("timeline_logdir")
    if EXAMPLES.is_dir():
        for trace in EXAMPLES.rglob("*.paddle_trace.json"):
            dst = root / trace.parent.relative_to(EXAMPLES) / trace.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, dst)
    if not GPU_DIR.is_dir():
        pytest.skip("the shared GPU-shaped traces are not beside the repository")
    for trace in GPU_DIR.glob("*.paddle_trace.json"):
        dst = root / GPU_RUN / trace.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trace, dst)
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("timeline_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def page_and_log(browser):
    log = PageLog()
    page = new_page(browser, log)
    yield page, log
    page.context.close()
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
    assert log.outside_requests() == [], log.outside_requests()


def gpu_tables():
    out = {}
    for path in sorted(GPU_DIR.glob("*.paddle_trace.json")):
        out["rank" + path.name[4]] = read_trace(path.read_bytes(), path.name)
    return out


def open_view(page, tb, run: str, view: str = "timeline", worker: str = "rank0", extra: str = ""):
    from urllib.parse import quote

    keys = dict(run=run, worker=worker, span="0", unit="ms", view=view)
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    page.goto(f"{tb.url}/#{'&'.join(parts)}{extra}")
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=60_000)
    return frame


def wait_drawn(frame, timeout=60_000):
    """Until the timeline has slices from every rank (the indexes may still be building)."""
    frame.wait_for_function(
        "() => { const t = window.__tbppTimeline; const d = t && t.data();"
        " return d && d.items > 0 && d.ranks.every((r) => r.state === '' && r.tracks.length > 0); }",
        timeout=timeout,
    )


def state(frame):
    return frame.evaluate("""() => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
      return { view: [v.start, v.end], window: [d.windowStart, d.windowEnd], base: d.base,
        ranks: d.ranks.map((r) => ({ worker: r.worker, offset: r.offset,
          tracks: r.tracks.map((x) => ({ id: x.id, kind: x.kind, label: x.label, tid: Number(x.tid),
                                          device: Number(x.device), stream: Number(x.stream), events: Number(x.events) })),
          names: [...new Set([...r.lanes.values()].flatMap((l) => [...l.name].map((i) => d.names[i])))] })) }; }""")


def painted_pixels(frame) -> int:
    """Non-white pixels of the canvas's plot area: slices were drawn."""
    return frame.evaluate("""() => { const c = document.querySelector('[data-testid="timeline-canvas"]');
      const ctx = c.getContext('2d'); const x0 = Math.round(210 * devicePixelRatio);
      const img = ctx.getImageData(x0, Math.round(40 * devicePixelRatio), c.width - x0, c.height - Math.round(40 * devicePixelRatio)).data;
      let n = 0; for (let i = 0; i < img.length; i += 4) if (img[i] < 235 || img[i + 1] < 235 || img[i + 2] < 235) n++;
      return n; }""")


def details(frame) -> dict:
    frame.wait_for_selector('[data-testid="timeline-details"]', timeout=20_000)
    return frame.evaluate("""() => { const out = { name: document.querySelector('[data-testid="timeline-detail-name"]').textContent };
      for (const td of document.querySelectorAll('[data-testid="timeline-details"] td[data-key]')) out[td.dataset.key] = td.textContent;
      return out; }""")


def test_gpu_run_shows_every_ranks_threads_and_streams(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    st = state(frame)
    tables = gpu_tables()
    assert [r["worker"] for r in st["ranks"]] == sorted(tables)
    for r in st["ranks"]:
        t = tables[r["worker"]]
        threads = {x["tid"] for x in r["tracks"] if x["kind"] == 1}
        streams = {(x["device"], x["stream"]) for x in r["tracks"] if x["kind"] == 2}
        assert threads == set(t.host.tid.tolist()) | set(t.runtime.tid.tolist())
        assert streams == set(zip(t.device.id.tolist(), t.device.stream.tolist()))
        per_stream = {(x["device"], x["stream"]): x["events"] for x in r["tracks"] if x["kind"] == 2}
        for key, n in per_stream.items():
            assert n == int(((t.device.id == key[0]) & (t.device.stream == key[1])).sum())
        # the whole span is in view: the step and some kernel are among the slices sent
        names = set(r["names"])
        assert any(n.startswith("ProfileStep") for n in names)
    # ranks aligned by wall clock: offsets are the origins' differences
    assert min(r["offset"] for r in st["ranks"]) == 0
    assert painted_pixels(frame) > 2000
    text = frame.locator('[data-testid="timeline-tracks"]').text_content()
    assert "GPU 0 · stream 7" in text and "rank 1" in text


def test_search_finds_a_kernel_and_its_details_are_the_real_arguments(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    tables = gpu_tables()
    t = tables["rank0"]
    row = int(np.nonzero(t.device.type == et.KERNEL)[0][0])
    name = t.names[int(t.device.name[row])]
    frame.fill('[data-testid="timeline-search"]', name)
    frame.press('[data-testid="timeline-search"]', "Enter")
    d = details(frame)
    assert d["name"] == name and d["type"] == "Kernel"
    worker = d["track"].split(" · ")[0]
    tw = tables[worker]
    same = np.nonzero((tw.device.type == et.KERNEL) & (np.array(tw.names, dtype=object)[tw.device.name] == name))[0]
    first = int(same[np.argmin(tw.device.start[same])])
    assert d["correlation id"] == str(int(tw.device.corr[first]))
    assert d["grid"] == ", ".join(map(str, tw.device.grid[first].tolist()))
    assert d["block"] == ", ".join(map(str, tw.device.block[first].tolist()))
    assert d["registers per thread"] == str(int(tw.device.registers[first]))
    assert d["shared memory"] == f"{int(tw.device.shared_memory[first])} B"
    total = sum(
        int(((x.device.type == et.KERNEL) & (np.array(x.names, dtype=object)[x.device.name] == name)).sum())
        for x in tables.values()
    )
    assert frame.locator('[data-testid="timeline-found"]').text_content().strip().endswith(f"1 / {total}›")
    # the launch arrow toggle asks for flows and draws
    frame.check('[data-testid="timeline-flows"]')
    frame.wait_for_function("() => window.__tbppTimeline.data().flows.length > 0", timeout=20_000)


def test_click_on_a_slice_selects_it_and_zoom_changes_the_window(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    canvas = frame.locator('[data-testid="timeline-canvas"]')
    before = state(frame)["view"]
    canvas.click(position={"x": 300, "y": 10})  # the ruler: focuses the canvas, selects nothing
    for _ in range(4):
        canvas.press("w")
    frame.wait_for_function(
        f"() => {{ const v = window.__tbppTimeline.view(); return v.end - v.start < {0.5 * (before[1] - before[0])}; }}"
    )
    zoomed = state(frame)["view"]
    assert zoomed[1] - zoomed[0] < before[1] - before[0]
    canvas.press("d")
    frame.wait_for_function(f"() => window.__tbppTimeline.view().start > {zoomed[0]}")
    # the server is asked for the new window, at the new resolution
    frame.wait_for_function(
        f"() => {{ const d = window.__tbppTimeline.data(), v = window.__tbppTimeline.view();"
        f" return d.windowStart <= v.start && d.windowEnd >= v.end && d.windowEnd - d.windowStart < {before[1] - before[0]}; }}",
        timeout=20_000,
    )
    # ctrl + wheel zooms around the pointer
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 600, box["y"] + 200)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    v2 = state(frame)["view"]
    frame.wait_for_function(
        f"() => {{ const v = window.__tbppTimeline.view(); return v.end - v.start < {v2[1] - v2[0] + 1}; }}"
    )
    # click the middle of a kernel: find one in the data and where its row is drawn
    target = frame.evaluate("""() => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
      const c = document.querySelector('[data-testid="timeline-canvas"]'); const plot = c.clientWidth - 200;
      for (const row of t.rows()) { if (row.kind !== 'lane') continue;
        const lane = d.ranks[row.rank].lanes.get(row.track + ':' + row.depth); if (!lane) continue;
        for (let i = 0; i < lane.start.length; i++) {
          const s = lane.start[i], e = s + lane.dur[i];
          if (lane.count[i] !== 1 || d.types[lane.type[i]] !== 'Kernel' || s < v.start || e > v.end) continue;
          const x = 200 + ((s + e) / 2 - v.start) / (v.end - v.start) * plot;
          if ((e - s) / (v.end - v.start) * plot < 4) continue;
          const y = 26 + row.y + row.h / 2 - c.parentElement.scrollTop;
          if (y > c.clientHeight - 4) continue;
          return { x, y, name: d.names[lane.name[i]] }; } }
      return null; }""")
    if target is None:  # zoomed somewhere without a kernel: fit the whole span and use the first kernel
        canvas.press("0")
        frame.wait_for_timeout(300)
        pytest.fail("no kernel wide enough to click in the zoomed window")
    canvas.click(position={"x": target["x"], "y": target["y"]})
    d = details(frame)
    assert d["name"] == target["name"] and d["type"] == "Kernel"
    # the selection is in the URL
    frame.wait_for_function("() => location.hash.includes('tlsel=')")


def test_kernel_table_link_lands_on_that_kernel(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN, view="kernels")
    frame.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=60_000)
    row = frame.locator('[data-testid="kernel-table"] .vt-row[data-index="0"]')
    name = row.locator(".vt-td.name").get_attribute("title")  # the full name (the cell shows Paddle's display form)
    calls = int(row.locator('.vt-td[data-col="calls"]').text_content().replace(",", ""))
    row.click()
    frame.click('[data-testid="kernels-to-timeline"]')
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=30_000)
    d = details(frame)
    assert d["name"] == name and d["type"] == "Kernel"
    assert d["track"].startswith("rank0 · GPU 0 · stream")
    found = frame.locator('[data-testid="timeline-found"]').text_content()
    # the table counts rank0's calls; the timeline finds them in every rank of the run
    assert int(found.strip("‹›").split("/")[1]) >= calls
    # the selected kernel is drawn in view and highlighted (the query is applied)
    frame.wait_for_function("() => window.__tbppTimeline.data().query !== ''", timeout=20_000)
    st = state(frame)
    assert name in set().union(*[set(r["names"]) for r in st["ranks"]])
    # and back: from the slice to its row in the kernel table
    frame.click('[data-testid="timeline-to-kernels"]')
    frame.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=30_000)
    assert frame.locator('[data-testid="kernels-search"]').input_value() == name


def test_cpu_example_and_box_selection_and_screenshot(tb, page_and_log):
    page, _ = page_and_log
    if not (EXAMPLES / CPU_RUN).is_dir():
        pytest.skip("examples/profiler_log is not here")
    frame = open_view(page, tb, CPU_RUN)
    wait_drawn(frame)
    st = state(frame)
    path = sorted((EXAMPLES / CPU_RUN).glob("rank0_*.paddle_trace.json"))[0]
    t = read_trace(path.read_bytes(), path.name)
    r0 = st["ranks"][0]
    assert {x["tid"] for x in r0["tracks"] if x["kind"] == 1} == set(t.host.tid.tolist()) | set(t.runtime.tid.tolist())
    assert not [x for x in r0["tracks"] if x["kind"] == 2]  # a CPU-only trace has no GPU stream
    frame.fill('[data-testid="timeline-search"]', "matmul")
    frame.press('[data-testid="timeline-search"]', "Enter")
    assert "matmul" in details(frame)["name"]
    # shift-drag a box over the first rank's main thread: per-name sums
    canvas = frame.locator('[data-testid="timeline-canvas"]')
    canvas.press("0")
    frame.wait_for_timeout(300)
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 260, box["y"] + 60)
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 40, box["y"] + 140, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    frame.wait_for_selector('[data-testid="timeline-range"] tbody tr', timeout=20_000)
    assert frame.locator('[data-testid="timeline-range"] tbody tr').count() > 3


def test_screenshot_of_a_selected_kernel_with_launch_arrows(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    frame.fill('[data-testid="timeline-search"]', "gemm")
    frame.press('[data-testid="timeline-search"]', "Enter")
    details(frame)
    frame.check('[data-testid="timeline-flows"]')
    frame.wait_for_function("() => window.__tbppTimeline.data().flows.length > 0", timeout=20_000)
    frame.wait_for_timeout(300)
    save_screenshot(page, "timeline")


# ---------------------------------------------------------------- folding ranks and tracks


def rows(frame) -> list:
    """The drawn layout: every row (rank header, lane of a track, folded track) with its content y."""
    return frame.evaluate("""() => window.__tbppTimeline.rows().map((r) => ({ kind: r.kind, worker: r.worker,
      track: r.track, depth: r.depth, y: r.y, h: r.h, folded: r.folded }))""")


def canvas_attr(frame, name: str) -> str:
    return frame.locator('[data-testid="timeline-canvas"]').get_attribute(name) or ""


def wait_folds(frame, ranks: str, tracks: str = ""):
    """Until the canvas says these ranks and tracks are folded ("rank0,rank1"; "rank1:0")."""
    frame.wait_for_function(
        """([ranks, tracks]) => { const c = document.querySelector('[data-testid="timeline-canvas"]');
          return c.dataset.foldedRanks === ranks && c.dataset.foldedTracks === tracks; }""",
        arg=[ranks, tracks],
        timeout=20_000,
    )


def track_tops(rs: list) -> dict:
    return {f"{r['worker']}:{r['track']}": r["y"] for r in rs if r["kind"] == "lane" and r["depth"] == 0}


# Single slices of `type` on `worker`'s tracks, in view and at least minPx wide: where to click them.
_SLICES = """([worker, type, minPx]) => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
  const c = document.querySelector('[data-testid="timeline-canvas"]'); const plot = c.clientWidth - 200;
  const top = c.parentElement.scrollTop; const out = [];
  for (const row of t.rows()) { if (row.kind !== 'lane' || row.worker !== worker) continue;
    const lane = d.ranks[row.rank].lanes.get(row.track + ':' + row.depth); if (!lane) continue;
    for (let i = 0; i < lane.start.length; i++) {
      const s = lane.start[i], e = s + lane.dur[i];
      if (lane.count[i] !== 1 || d.types[lane.type[i]] !== type || s < v.start || e > v.end) continue;
      if ((e - s) / (v.end - v.start) * plot < minPx) continue;
      const y = 26 + row.y + row.h / 2 - top;
      if (y < 30 || y > c.clientHeight - 4) continue;
      out.push({ x: 200 + ((s + e) / 2 - v.start) / (v.end - v.start) * plot, y, name: d.names[lane.name[i]],
                 dur: lane.dur[i], worker: row.worker, track: row.track }); } }
  return out; }"""

# What a click at canvas (x, y) hits in the layout drawn now: "item" (a single slice, nothing else within
# 3 px), "empty" (a folded track, or a lane with nothing within 3 px), or "other" (anything else).
_UNDER = """([x, y]) => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
  const c = document.querySelector('[data-testid="timeline-canvas"]'); const plot = c.clientWidth - 200;
  const cy = y - 26 + c.parentElement.scrollTop;
  const row = t.rows().find((r) => cy >= r.y && cy < r.y + r.h);
  if (!row) return { kind: 'other' };
  if (row.kind === 'fold') return { kind: 'empty', worker: row.worker };
  if (row.kind !== 'lane') return { kind: 'other' };
  const lane = d.ranks[row.rank].lanes.get(row.track + ':' + row.depth); if (!lane) return { kind: 'other' };
  const at = v.start + (x - 200) / plot * (v.end - v.start), tol = 3 / plot * (v.end - v.start);
  const near = [];
  for (let i = 0; i < lane.start.length; i++) {
    const s = lane.start[i], e = s + lane.dur[i];
    if (s - tol <= at && at <= e + tol) near.push(i); }
  if (near.length === 0) return { kind: 'empty', worker: row.worker };
  const i = near[0], s = lane.start[i], e = s + lane.dur[i];
  if (near.length === 1 && lane.count[i] === 1 && s + tol < at && at < e - tol)
    return { kind: 'item', worker: row.worker, name: d.names[lane.name[i]] };
  return { kind: 'other' }; }"""


def click_canvas(frame, x: float, y: float):
    frame.locator('[data-testid="timeline-canvas"]').click(position={"x": x, "y": y})


def wait_detail(frame, name: str, track_prefix: str) -> dict:
    frame.wait_for_function(
        """([name, prefix]) => { const n = document.querySelector('[data-testid="timeline-detail-name"]');
          const t = document.querySelector('[data-testid="timeline-details"] td[data-key="track"]');
          return n && t && n.textContent === name && t.textContent.startsWith(prefix); }""",
        arg=[name, track_prefix],
        timeout=20_000,
    )
    return details(frame)


def assert_real_kernel(tables, worker: str, d: dict, dur: float):
    """The selected slice is a kernel of the trace with that correlation id, name, stream and duration."""
    t = tables[worker]
    names = np.array(t.names, dtype=object)[t.device.name]
    stream = int(d["track"].split(" · stream ")[1].split(" · ")[0])
    hits = np.nonzero(
        (t.device.type == et.KERNEL)
        & (t.device.corr == int(d["correlation id"]))
        & (names == d["name"])
        & (t.device.stream == stream)
        & ((t.device.end - t.device.start) == int(dur))
    )[0]
    assert len(hits) >= 1


def test_folding_a_rank_hides_its_tracks_and_clicks_hit_what_is_drawn(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    tables = gpu_tables()
    before = rows(frame)
    tops = track_tops(before)
    assert {k.split(":")[0] for k in tops} == {"rank0", "rank1"}
    assert canvas_attr(frame, "data-visible-tracks") == ",".join(tops)  # in drawing order
    hidden = frame.evaluate(_SLICES, ["rank0", "Kernel", 6])
    assert hidden, "no rank0 kernel wide enough to click at the whole span"

    # fold rank 0 with its header's button: its tracks leave the layout, rank 1's move up as one block
    frame.click('[data-testid="timeline-fold-rank"][data-worker="rank0"]')
    wait_folds(frame, "rank0")
    folded = rows(frame)
    assert not [r for r in folded if r["worker"] == "rank0" and r["kind"] != "rank"]
    assert [r for r in folded if r["kind"] == "rank" and r["worker"] == "rank0"][0]["folded"]
    visible = canvas_attr(frame, "data-visible-tracks").split(",")
    assert visible == [k for k in tops if k.startswith("rank1:")]
    after = track_tops(folded)
    shifts = {tops[k] - after[k] for k in after}
    assert len(shifts) == 1 and shifts.pop() > 0
    folds_li = frame.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="timeline-tracks"] li'))
      .map((li) => [li.dataset.worker, li.dataset.fold])""")
    assert {f for w, f in folds_li if w == "rank0"} == {"rank"} and {f for w, f in folds_li if w == "rank1"} == {""}
    assert (
        frame.locator('[data-testid="timeline-fold-rank"][data-worker="rank0"]').get_attribute("aria-expanded")
        == "false"
    )
    frame.wait_for_function("() => location.hash.includes('tlfold=')")
    # a hidden kernel whose place now shows something unambiguous (a single slice, or nothing)
    target = under = None
    for cand in hidden:
        u = frame.evaluate(_UNDER, [cand["x"], cand["y"]])
        if u["kind"] != "other":
            target, under = cand, u
            break
    assert target is not None, "every hidden kernel's place is now ambiguous"

    # the keyboard unfolds it again (the header's button focused, Enter): the layout is exactly as before
    frame.focus('[data-testid="timeline-fold-rank"][data-worker="rank0"]')
    frame.press('[data-testid="timeline-fold-rank"][data-worker="rank0"]', "Enter")
    wait_folds(frame, "")
    assert rows(frame) == before
    click_canvas(frame, target["x"], target["y"])
    d = wait_detail(frame, target["name"], "rank0 · ")
    assert_real_kernel(tables, "rank0", d, target["dur"])

    # fold it again, from the header row in the plot area this time
    rank0 = [r for r in before if r["kind"] == "rank" and r["worker"] == "rank0"][0]
    click_canvas(frame, 500, 26 + rank0["y"] + rank0["h"] / 2)
    wait_folds(frame, "rank0")
    assert rows(frame) == folded
    # a click where the hidden kernel was drawn hits what is drawn there now, never the hidden kernel
    click_canvas(frame, target["x"], target["y"])
    if under["kind"] == "item":
        assert under["worker"] == "rank1"
        wait_detail(frame, under["name"], "rank1 · ")
    else:
        frame.wait_for_selector('[data-testid="timeline-details"]', state="detached", timeout=20_000)
        frame.wait_for_function("() => !location.hash.includes('tlsel=rank0')")
    # a kernel of a track below (rank 1's streams) is selected at its new place
    below = frame.evaluate(_SLICES, ["rank1", "Kernel", 6])
    assert below
    k = below[len(below) // 2]
    assert k["y"] < tops[f"rank1:{k['track']}"] + 26  # it moved up
    click_canvas(frame, k["x"], k["y"])
    d = wait_detail(frame, k["name"], "rank1 · GPU")
    assert_real_kernel(tables, "rank1", d, k["dur"])
    frame.wait_for_function("() => location.hash.includes('tlsel=rank1')")


def test_folding_tracks_collapse_all_expand_all_and_the_folds_outlive_a_view_switch(tb, page_and_log):
    page, log = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    before = rows(frame)
    tops = track_tops(before)
    host = [r for r in before if r["kind"] == "lane" and r["worker"] == "rank1" and r["track"] == 0]
    assert len(host) > 1  # rank 1's host thread has nested rows

    # fold one track: one thin row, the tracks below move up by what it gave back
    frame.click('[data-testid="timeline-fold-track"][data-worker="rank1"][data-track="0"]')
    wait_folds(frame, "", "rank1:0")
    rs = rows(frame)
    fold = [r for r in rs if r["kind"] == "fold"]
    assert [(r["worker"], r["track"]) for r in fold] == [("rank1", 0)]
    assert fold[0]["y"] == tops["rank1:0"] and fold[0]["h"] < host[0]["h"]
    assert not [r for r in rs if r["kind"] == "lane" and r["worker"] == "rank1" and r["track"] == 0]
    gave = sum(r["h"] for r in host) - fold[0]["h"]
    for key, y in track_tops(rs).items():
        assert y == (tops[key] - gave if key in ("rank1:1", "rank1:2", "rank1:3") else tops[key])
    assert "rank1:0" not in canvas_attr(frame, "data-visible-tracks").split(",")
    # nothing in the folded track can be selected: select a kernel first, then click the thin row
    k = frame.evaluate(_SLICES, ["rank0", "Kernel", 6])[0]
    click_canvas(frame, k["x"], k["y"])
    wait_detail(frame, k["name"], "rank0 · ")
    click_canvas(frame, 200 + 954 / 2, 26 + fold[0]["y"] + fold[0]["h"] / 2)
    frame.wait_for_selector('[data-testid="timeline-details"]', state="detached", timeout=20_000)
    # a box over the folded track and rank 1's streams sums the streams only
    box = frame.locator('[data-testid="timeline-canvas"]').bounding_box()
    y0 = box["y"] + 26 + fold[0]["y"] + 2
    y1 = box["y"] + 26 + track_tops(rs)["rank1:3"] + 8
    page.mouse.move(box["x"] + 260, y0)
    page.keyboard.down("Shift")
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 40, y1, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    frame.wait_for_selector('[data-testid="timeline-range"] tbody tr', timeout=20_000)
    from urllib.parse import parse_qs, urlparse

    asked = [parse_qs(urlparse(u).query)["tracks"][0] for u in log.requests if "/timeline_range?" in u]
    assert asked and set(asked[-1].split(",")) == {"rank1:1", "rank1:2", "rank1:3"}

    # launch → kernel arrows (the selected slice's only): none to or from a folded rank or track
    frame.check('[data-testid="timeline-flows"]')
    frame.wait_for_function("() => window.__tbppTimeline.data().flows.length > 0", timeout=20_000)
    k = frame.evaluate(_SLICES, ["rank0", "Kernel", 6])[0]
    click_canvas(frame, k["x"], k["y"])
    wait_detail(frame, k["name"], "rank0 · ")
    frame.wait_for_function(
        """() => { const t = window.__tbppTimeline, d = t.data(), s = t.selected();
      const mine = d.flows.filter((f) => f.rank === 0 && ((f.dstTrack === s.track && f.dstDepth === s.depth && f.dstStart === s.start)
        || (f.srcTrack === s.track && f.srcDepth === s.depth && f.srcStart === s.start)));
      return t.arrows > 0 && t.arrows === mine.length && mine.length < d.flows.length; }""",
        timeout=20_000,
    )
    frame.click('[data-testid="timeline-fold-rank"][data-worker="rank0"]')
    wait_folds(frame, "rank0", "rank1:0")
    frame.wait_for_function("() => window.__tbppTimeline.arrows === 0")
    frame.uncheck('[data-testid="timeline-flows"]')

    # the folds stay while zooming and panning (the layout does not depend on the window)
    folded = rows(frame)
    canvas = frame.locator('[data-testid="timeline-canvas"]')
    w0 = state(frame)["window"]
    for key in "wwwwd":
        canvas.press(key)
    frame.wait_for_function(
        f"() => {{ const d = window.__tbppTimeline.data(); return d.windowEnd - d.windowStart < {w0[1] - w0[0]}; }}",
        timeout=20_000,
    )
    assert rows(frame) == folded and canvas_attr(frame, "data-folded-ranks") == "rank0"

    # and when another view is shown, and this one again
    frame.click('[data-testid="views"] button[data-view="kernels"]')
    frame.wait_for_selector('[data-testid="kernel-table"] .vt-row', timeout=60_000)
    frame.click('[data-testid="views"] button[data-view="timeline"]')
    wait_drawn(frame)
    wait_folds(frame, "rank0", "rank1:0")
    assert rows(frame) == folded
    assert frame.evaluate("() => window.__tbppTimeline.folds()") == "rank0:*,rank1:0"

    # collapse all: rank headers only; expand all: every rank and track as at first
    frame.click('[data-testid="timeline-collapse-all"]')
    wait_folds(frame, "rank0,rank1")
    assert [r["kind"] for r in rows(frame)] == ["rank", "rank"]
    assert canvas_attr(frame, "data-visible-tracks") == ""
    assert frame.locator('[data-testid="timeline-collapse-all"]').is_disabled()
    frame.click('[data-testid="timeline-expand-all"]')
    wait_folds(frame, "")
    assert rows(frame) == before
    assert frame.locator('[data-testid="timeline-expand-all"]').is_disabled()

    # a search opens its first match in view: a folded rank is unfolded for it, the other stays folded
    frame.click('[data-testid="timeline-collapse-all"]')
    wait_folds(frame, "rank0,rank1")
    tables = gpu_tables()
    t = tables["rank1"]
    name = t.names[int(t.device.name[int(np.nonzero(t.device.type == et.KERNEL)[0][0])])]
    frame.fill('[data-testid="timeline-search"]', name)
    frame.press('[data-testid="timeline-search"]', "Enter")
    d = details(frame)
    worker = d["track"].split(" · ")[0]
    wait_folds(frame, "rank1" if worker == "rank0" else "rank0")
    assert any(r["kind"] == "lane" and r["worker"] == worker for r in rows(frame))


def test_screenshot_with_a_folded_rank(tb, page_and_log):
    page, _ = page_and_log
    frame = open_view(page, tb, GPU_RUN)
    wait_drawn(frame)
    frame.click('[data-testid="timeline-fold-rank"][data-worker="rank0"]')
    frame.click('[data-testid="timeline-fold-track"][data-worker="rank1"][data-track="2"]')
    wait_folds(frame, "rank0", "rank1:2")
    k = frame.evaluate(_SLICES, ["rank1", "Kernel", 6])[0]
    click_canvas(frame, k["x"], k["y"])
    wait_detail(frame, k["name"], "rank1 · ")
    frame.check('[data-testid="timeline-flows"]')
    frame.wait_for_function("() => window.__tbppTimeline.arrows > 0", timeout=20_000)
    frame.wait_for_timeout(300)
    save_screenshot(page, "timeline-folded")


@pytest.fixture(scope="module")
def tb_tiny_window(tmp_path_factory):
    """A tensorboard on the CPU example whose trace_window refuses any window (a bound of ~100 bytes).

    The bound is read from the server's environment at each request, so it is set for that process only.
    """
    if not (EXAMPLES / CPU_RUN).is_dir():
        pytest.skip("examples/profiler_log is not here")
    root = tmp_path_factory.mktemp("timeline_tiny_logdir")
    for trace in (EXAMPLES / CPU_RUN).glob("*.paddle_trace.json"):
        (root / CPU_RUN).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(trace, root / CPU_RUN / trace.name)
    env = {"TB_PADDLE_PROFILE_WINDOW_MAX_MB": "0.0001"}
    with tensorboard(root, tmp_path_factory.mktemp("timeline_tiny_tb"), extra_env=env) as server:
        wait_all_loaded(server)
        yield server


def test_window_json_over_the_bound_shows_the_413_message_and_downloads_nothing(tb_tiny_window, page_and_log):
    page, log = page_and_log
    downloads = []
    page.on("download", lambda d: downloads.append(d))
    frame = open_view(page, tb_tiny_window, CPU_RUN)
    wait_drawn(frame)
    frame.click('[data-testid="timeline-download-window"]')
    notice = frame.wait_for_selector('[data-testid="timeline-download-error"]', timeout=20_000)
    text = notice.text_content()
    assert "413" in text and "TB_PADDLE_PROFILE_WINDOW_MAX_MB" in text and "narrow the window" in text, text
    frame.wait_for_timeout(1000)
    assert downloads == []
    # the refused requests are reported by Chromium itself ("Failed to load resource ... 413"): expected here
    log.console_errors[:] = [m for m in log.console_errors if "status of 413" not in m]
    # the message goes with the next window
    frame.locator('[data-testid="timeline-canvas"]').press("w")
    frame.wait_for_selector('[data-testid="timeline-download-error"]', state="detached", timeout=20_000)


def test_window_json_within_the_bound_downloads_the_chrome_trace(tb, page_and_log):
    import json

    page, _ = page_and_log
    if not (EXAMPLES / CPU_RUN).is_dir():
        pytest.skip("examples/profiler_log is not here")
    frame = open_view(page, tb, CPU_RUN)
    wait_drawn(frame)
    with page.expect_download(timeout=30_000) as got:
        frame.click('[data-testid="timeline-download-window"]')
    dl = got.value
    assert dl.failure() is None
    assert ".window_" in dl.suggested_filename and dl.suggested_filename.endswith(".json"), dl.suggested_filename
    trace = json.loads(Path(dl.path()).read_text())
    assert trace["traceEvents"], "the window's Chrome trace holds events"
    assert frame.locator('[data-testid="timeline-download-error"]').count() == 0
