"""Counter tracks of the timeline (memory allocated / reserved per place, GPU utilization per device).

The values the window route answers are checked against the memory events and kernel intervals of
tests/data/traces/gpu-synthetic-2rank read here straight from the JSON (not with the reader):
memory is the highest current_allocated / current_reserved in each pixel bin (a step function of
the events in time order), utilization the fraction of the bin covered by the device's kernels."""

from __future__ import annotations

import json
from decimal import Decimal
import math
import os
import time
from collections import defaultdict
from pathlib import Path

import pytest

from support.plugin_testlib import GPU, PREFIX, make_plugin, ready, trace_files
from tb_paddle_profile.v1 import timeline_pb2 as tpb


def _ns(us) -> int:
    """µs (a JSON number or Paddle's "1607.343 us") as integer ns, exactly (no float rounding)."""
    return int((Decimal(str(us).replace("us", "").strip()) * 1000).to_integral_value())


def _truth(path: Path, origin=None) -> dict:
    """From the raw JSON: the origin (unix ns), memory steps per (place, kind) (ns relative to ``origin``,
    default the trace's own), kernel intervals per device (ns relative to the trace's start_time origin)."""
    events = json.loads(path.read_text())["traceEvents"]
    origins = {
        _ns(e["ts"]) - _ns(e["args"]["start_time"])
        for e in events
        if e.get("ph") == "X" and "start_time" in e.get("args", {})
    }
    assert len(origins) == 1 or max(origins) - min(origins) < 2000, origins
    own = min(origins)
    if origin is None:
        origin = own
    assert abs(origin - own) < 2000, (origin, own)  # the answer's origin is the trace's own (to µs)
    memory = defaultdict(list)
    kernels = defaultdict(list)
    for pos, e in enumerate(events):
        if e.get("ph") == "i" and "place" in e.get("args", {}):
            t = _ns(e["ts"]) - origin
            memory[(e["args"]["place"], "allocated")].append((t, pos, e["args"]["current_allocated"]))
            memory[(e["args"]["place"], "reserved")].append((t, pos, e["args"]["current_reserved"]))
        elif e.get("ph") == "X" and e.get("cat") == "Kernel":
            a = e["args"]
            kernels[int(a["device"])].append((_ns(a["start_time"]), _ns(a["end_time"])))
    return {"origin": own, "memory": {k: sorted(v) for k, v in memory.items()}, "kernels": kernels}


def _edges(ws, we, px):
    return [ws + (we - ws) * k / px for k in range(px + 1)]


def _memory_max(points, a, b):
    """The highest value of the step function over [a, b) (NaN before its first point)."""
    before = [v for t, _, v in points if t <= a]
    vals = ([before[-1]] if before else []) + [v for t, _, v in points if a < t < b]
    return max(vals) if vals else math.nan


def _check_memory(got, points, edges, slack):
    """Memory times carry the reader's float rounding of absolute µs (a few hundred ns): each bin's value
    lies between the step function's highest value over the bin shrunk and grown by `slack` ns."""
    assert len(got) == len(edges) - 1
    for i, (g, a, b) in enumerate(zip(got, edges, edges[1:])):
        inner, outer = _memory_max(points, a + slack, b - slack), _memory_max(points, a - slack, b + slack)
        if math.isnan(outer):
            assert math.isnan(g), (i, g)
        elif not math.isnan(inner):
            assert inner <= g <= outer, (i, g, inner, outer)
        else:
            assert math.isnan(g) or g <= outer, (i, g, outer)


def _busy_bins(intervals, edges):
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return [sum(max(0.0, min(e, b) - max(s, a)) for s, e in merged) / (b - a) for a, b in zip(edges, edges[1:])]


def _same(got, want, tol):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        if math.isnan(w):
            assert math.isnan(g), (i, g, w)
        else:
            assert abs(g - w) <= tol, (i, g, w)


@pytest.fixture(scope="module")
def client(shared_traces, tmp_path_factory):
    root = tmp_path_factory.mktemp("ctr_logdir")
    for f in trace_files(shared_traces, GPU):
        dst = root / "gpu" / f.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.read_bytes())
    old = os.environ.get("TB_PADDLE_PROFILE_CACHE")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path_factory.mktemp("ctr_cache"))
    plugin, c = make_plugin(root)
    try:
        ready(plugin)
        yield c
    finally:
        plugin.close()
        store = getattr(plugin._routes, "_timeline_store", None)
        if store is not None:
            store.close()
        if old is None:
            os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)
        else:
            os.environ["TB_PADDLE_PROFILE_CACHE"] = old


def _window(client, query):
    deadline = time.monotonic() + 120
    while True:
        r = client.get(f"{PREFIX}/timeline?run=gpu&span=0&{query}")
        if r.status_code != 202 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert r.status_code == 200, r.data[:300]
    return tpb.TimelineWindow.FromString(r.data)


@pytest.mark.parametrize("zoom", [None, (0.3, 0.45)])
def test_counters_equal_the_memory_events_and_kernel_intervals(client, shared_traces, zoom):
    whole = _window(client, "px=300")
    if zoom is None:
        msg = whole
    else:
        span = whole.window_end_ns - whole.window_start_ns
        ws = whole.window_start_ns + int(span * zoom[0])
        we = whole.window_start_ns + int(span * zoom[1])
        msg = _window(client, f"px=240&start_ns={ws}&end_ns={we}&base_unix_ns={whole.base_unix_ns}")
    files = {f.name: f for f in trace_files(shared_traces, GPU)}
    assert len(msg.ranks) == 2
    for r in msg.ranks:
        truth = _truth(files[r.file_name], origin=msg.base_unix_ns + r.offset_ns)
        lws, lwe = msg.window_start_ns - r.offset_ns, msg.window_end_ns - r.offset_ns
        edges = _edges(lws, lwe, msg.px)
        by_label = {c.label: c for c in r.counters}
        want_labels = {f"{place} {kind}" for place, kind in truth["memory"]} | {
            f"GPU {d} utilization" for d in truth["kernels"]
        }
        assert set(by_label) == want_labels
        assert truth["memory"] and truth["kernels"]  # the trace has both, so neither check is empty
        for (place, kind), points in truth["memory"].items():
            c = by_label[f"{place} {kind}"]
            assert c.unit == "bytes" and c.kind == kind
            assert c.max_value == max(v for _, _, v in points)
            # the lane's bottom: the lowest value of the whole trace (at every zoom), negatives as 0
            assert c.min_value == max(0, min(v for _, _, v in points))
            _check_memory(list(c.values), points, edges, slack=1000)
        for dev, intervals in truth["kernels"].items():
            c = by_label[f"GPU {dev} utilization"]
            assert c.unit == "ratio" and c.device == dev and (c.min_value, c.max_value) == (0, 1)
            want = _busy_bins(intervals, edges)
            _same(list(c.values), want, 1e-6)
            if zoom is None:
                assert max(want) > 0.5  # a bin really is busy, not a curve of zeros
        if zoom is None:
            # over the whole window, the busy time summed over the bins is the kernels' union
            for dev, intervals in truth["kernels"].items():
                c = by_label[f"GPU {dev} utilization"]
                busy = sum(c.values) * (lwe - lws) / msg.px
                assert abs(busy - sum(_busy_bins(intervals, [lws, lwe])) * (lwe - lws)) < 1.0


# ------------------------------------------------------------------ in a real browser


@pytest.fixture(scope="module")
def tb_gpu(shared_traces, tmp_path_factory):
    from support.browser_util import tensorboard, wait_all_loaded

    root = tmp_path_factory.mktemp("ctr_tb_logdir")
    for f in trace_files(shared_traces, GPU):
        dst = root / "gpu" / f.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.read_bytes())
    with tensorboard(root, tmp_path_factory.mktemp("ctr_tb")) as server:
        wait_all_loaded(server)
        yield server


_PAGE_STATE = """() => { const t = window.__tbppTimeline, d = t.data(), v = t.view();
  return { view: [v.start, v.end], ws: d.windowStart, we: d.windowEnd, res: d.resolution, base: d.base,
    scroll: t.scrollTop(), width: document.querySelector('[data-testid="timeline-canvas"]').clientWidth,
    ranks: d.ranks.map((r) => ({ worker: r.worker, file: r.fileName, offset: r.offset,
      counters: r.counters.map((c) => ({ label: c.label, unit: c.unit, kind: c.kind, max: c.max, min: c.min,
        values: [...c.values].map((x) => Number.isNaN(x) ? null : x) })) })),
    rows: t.rows().filter((r) => r.kind === 'counter').map((r) => ({ worker: r.worker, counter: r.counter, y: r.y, h: r.h, label: r.label })) }; }"""


def _plateau(values, low: float) -> int:
    """The middle of the longest run of one value >= low."""
    best, best_len, i = -1, 0, 0
    while i < len(values):
        j = i
        while j < len(values) and values[j] == values[i]:
            j += 1
        if values[i] is not None and values[i] >= low and j - i > best_len:
            best, best_len = (i + j) // 2, j - i
        i = j
    assert best_len >= 5, values  # wide enough to hit with the pointer
    return best


@pytest.mark.browser
@pytest.mark.parametrize("width", [1280, 1440])
def test_counter_lanes_are_drawn_with_the_traces_values_and_hover_reads_them(tb_gpu, browser, shared_traces, width):
    from support.browser_util import SHOTS, PageLog, new_page, save_screenshot
    from tb_paddle_profile.present.display.cells import human_bytes
    from urllib.parse import quote

    log = PageLog()
    page = new_page(browser, log, width=width)
    try:
        keys = dict(run="gpu", worker="rank0", span="0", unit="ms", view="timeline")
        parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
        page.goto(f"{tb_gpu.url}/#{'&'.join(parts)}")
        handle = page.wait_for_selector(
            'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
        )
        frame = handle.content_frame()
        frame.wait_for_function(
            "() => { const t = window.__tbppTimeline; const d = t && t.data();"
            " return d && d.items > 0 && d.ranks.length === 2 && d.ranks.every((r) => r.state === '' && r.counters.length > 0); }",
            timeout=90_000,
        )
        st = frame.evaluate(_PAGE_STATE)
        files = {f.name: f for f in trace_files(shared_traces, GPU)}
        base = int(st["base"])
        px = None
        for r in st["ranks"]:
            truth = _truth(files[r["file"]], origin=base + r["offset"])
            by_label = {c["label"]: c for c in r["counters"]}
            assert set(by_label) == {f"{p} {k}" for p, k in truth["memory"]} | {
                f"GPU {d} utilization" for d in truth["kernels"]
            }
            px = len(next(iter(by_label.values()))["values"])
            edges = _edges(st["ws"] - r["offset"], st["we"] - r["offset"], px)
            for (place, kind), points in truth["memory"].items():
                vals = [math.nan if v is None else v for v in by_label[f"{place} {kind}"]["values"]]
                _check_memory(vals, points, edges, slack=1000)
            for dev, intervals in truth["kernels"].items():
                vals = [math.nan if v is None else v for v in by_label[f"GPU {dev} utilization"]["values"]]
                _same(vals, _busy_bins(intervals, edges), 1e-6)
        # every counter has its lane, below its rank's tracks
        assert len(st["rows"]) == sum(len(r["counters"]) for r in st["ranks"])
        assert abs(st["ws"] + px * st["res"] - st["we"]) < 1.0

        canvas = frame.locator('[data-testid="timeline-canvas"]')
        rank0 = st["ranks"][0]
        plot = st["width"] - 200
        # each lane is scaled from the counter's lowest to its highest value over the trace, both labelled
        # (bytes humanised, a ratio in %): the hidden list of lanes carries the labels the axis draws
        axes = frame.evaluate("""() => [...document.querySelectorAll('[data-testid="timeline-counter"]')].map((li) =>
            [li.dataset.worker, Number(li.dataset.counter), li.dataset.lo, li.dataset.hi])""")
        for worker, ci, lo_text, hi_text in axes:
            r = next(x for x in st["ranks"] if x["worker"] == worker)
            c = r["counters"][ci]
            points = _truth(files[r["file"]], origin=base + r["offset"])["memory"].get(tuple(c["label"].rsplit(" ", 1)))
            if c["unit"] == "ratio":
                assert (lo_text, hi_text) == ("0 %", "100 %")
                continue
            lo, hi = max(0, min(v for _, _, v in points)), max(v for _, _, v in points)
            if lo == hi:  # a constant counter is drawn from 0
                lo = 0
            assert (lo_text, hi_text) == tuple(human_bytes(v) if v else "0 B" for v in (lo, hi)), (
                c["label"],
                lo_text,
                hi_text,
            )
        for want in ("GPU 0 utilization", "Place(gpu:0) allocated"):
            ci = next(i for i, c in enumerate(rank0["counters"]) if c["label"] == want)
            c = rank0["counters"][ci]
            row = next(r for r in st["rows"] if r["worker"] == rank0["worker"] and r["counter"] == ci)
            lo = 0 if c["unit"] == "ratio" or c["min"] >= c["max"] else c["min"]
            hi = 1 if c["unit"] == "ratio" else c["max"]
            # a run of one value at least a quarter up the lane's scale: drawn tall, and a pixel off reads the same
            k = _plateau(c["values"], lo + (hi - lo) / 4)
            t = st["ws"] + (k + 0.5) * st["res"]
            x = 200 + (t - st["view"][0]) / (st["view"][1] - st["view"][0]) * plot
            y = 26 + row["y"] + row["h"] / 2 - st["scroll"]
            canvas.scroll_into_view_if_needed()
            canvas.hover(position={"x": x, "y": y})
            frame.wait_for_selector('[data-testid="timeline-hover"] b', state="visible", timeout=10_000)
            text = frame.locator('[data-testid="timeline-hover"] b').text_content()
            v = c["values"][k]
            shown = human_bytes(int(v)) if c["unit"] == "bytes" else f"{v * 100:.1f} %"
            assert text == f"{want}: {shown}", (text, k)
            assert v > 0
            # the lane is painted where its value is high: the area's colour under the pointer's column
            painted = frame.evaluate(
                """([x, y0, h]) => { const c = document.querySelector('[data-testid="timeline-canvas"]');
              const r = devicePixelRatio; const img = c.getContext('2d').getImageData(Math.round(x * r), Math.round(y0 * r), 1, Math.round(h * r)).data;
              let n = 0; for (let i = 0; i < img.length; i += 4) if (img[i] < 230 || img[i + 1] < 230 || img[i + 2] < 230) n++; return n; }""",
                [x, 26 + row["y"] - st["scroll"], row["h"]],
            )
            # as tall as the value's place between the lane's bottom and top (28 px lane, 24 px inside)
            assert abs(painted - (c["values"][k] - lo) / (hi - lo) * 24) <= 3, (want, painted, c["values"][k], lo, hi)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"timeline-counters-{width}.png"))
        if width == 1440:  # the documentation's picture (docs/timeline.md)
            save_screenshot(frame.locator('[data-testid="timeline-canvas"]'), "timeline-counters")
    finally:
        page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
    assert log.outside_requests() == []
