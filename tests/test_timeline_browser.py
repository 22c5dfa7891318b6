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

from browser_util import (
    REPO,
    PageLog,
    chromium_missing_reason,
    new_page,
    save_screenshot,
    tensorboard,
    wait_all_loaded,
)
from conftest import SHARED_TRACES

pytestmark = [pytest.mark.browser]

_missing = chromium_missing_reason()
if _missing:
    pytest.skip(f"browser tests need Chromium: {_missing}", allow_module_level=True)

from tb_paddle_profile import event_types as et  # noqa: E402
from tb_paddle_profile.reader import read_trace  # noqa: E402

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
    handle = page.wait_for_selector('iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000)
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=60_000)
    return frame


def wait_drawn(frame, timeout=60_000):
    """Until the timeline has slices from every rank (the indexes may still be building)."""
    frame.wait_for_function(
        "() => { const t = window.__tbppTimeline; const d = t && t.data();"
        " return d && d.items > 0 && d.ranks.every((r) => r.state === '' && r.tracks.length > 0); }",
        timeout=timeout)


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
        assert threads == set(t.host_tid.tolist()) | set(t.rt_tid.tolist())
        assert streams == set(zip(t.dev_id.tolist(), t.dev_stream.tolist()))
        per_stream = {(x["device"], x["stream"]): x["events"] for x in r["tracks"] if x["kind"] == 2}
        for key, n in per_stream.items():
            assert n == int(((t.dev_id == key[0]) & (t.dev_stream == key[1])).sum())
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
    row = int(np.nonzero(t.dev_type == et.KERNEL)[0][0])
    name = t.names[int(t.dev_name[row])]
    frame.fill('[data-testid="timeline-search"]', name)
    frame.press('[data-testid="timeline-search"]', "Enter")
    d = details(frame)
    assert d["name"] == name and d["type"] == "Kernel"
    worker = d["track"].split(" · ")[0]
    tw = tables[worker]
    same = np.nonzero((tw.dev_type == et.KERNEL) & (np.array(tw.names, dtype=object)[tw.dev_name] == name))[0]
    first = int(same[np.argmin(tw.dev_start[same])])
    assert d["correlation id"] == str(int(tw.dev_corr[first]))
    assert d["grid"] == ", ".join(map(str, tw.dev_grid[first].tolist()))
    assert d["block"] == ", ".join(map(str, tw.dev_block[first].tolist()))
    assert d["registers per thread"] == str(int(tw.dev_registers[first]))
    assert d["shared memory"] == f"{int(tw.dev_shared_memory[first])} B"
    total = sum(int(((x.dev_type == et.KERNEL) & (np.array(x.names, dtype=object)[x.dev_name] == name)).sum())
                for x in tables.values())
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
    frame.wait_for_function(f"() => {{ const v = window.__tbppTimeline.view(); return v.end - v.start < {0.5 * (before[1] - before[0])}; }}")
    zoomed = state(frame)["view"]
    assert zoomed[1] - zoomed[0] < before[1] - before[0]
    canvas.press("d")
    frame.wait_for_function(f"() => window.__tbppTimeline.view().start > {zoomed[0]}")
    # the server is asked for the new window, at the new resolution
    frame.wait_for_function(f"() => {{ const d = window.__tbppTimeline.data(), v = window.__tbppTimeline.view();"
                            f" return d.windowStart <= v.start && d.windowEnd >= v.end && d.windowEnd - d.windowStart < {before[1] - before[0]}; }}",
                            timeout=20_000)
    # ctrl + wheel zooms around the pointer
    box = canvas.bounding_box()
    page.mouse.move(box["x"] + 600, box["y"] + 200)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    v2 = state(frame)["view"]
    frame.wait_for_function(f"() => {{ const v = window.__tbppTimeline.view(); return v.end - v.start < {v2[1] - v2[0] + 1}; }}")
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
    name = row.locator(".vt-name").text_content()
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
    assert {x["tid"] for x in r0["tracks"] if x["kind"] == 1} == set(t.host_tid.tolist()) | set(t.rt_tid.tolist())
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
