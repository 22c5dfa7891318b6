"""The compact multi-rank timeline (issue 26, point 2): route ``timeline_compact`` against the planted
truth of a generated 32-rank run, and the compact view in Debian's Chromium at 1,280 × 800.

- The run: tbp_synth DP8 × MP2 × PP2 with a planted slow rank (``--slow-rank``). The route's order puts
  the planted rank first, then its role peers (the generator's coordinates: its pp stage and mp index),
  then the others in rank order; the default step is the median step by the job's step time.
- The bins: for every rank, each bin's communication and compute fractions equal what the rank's own
  trace JSON says: the union of its kernels whose name holds "nccl" (communication), the union of
  every kernel less that (compute), over bins laid from the rank's ProfileStep start (args start_time
  and end_time of the JSON events; nothing of the plugin's code computes the truth).
- The stored critical path (after the What-if route has run) is on the rows it passes through.
- The page: at 1,280 × 800 at least 32 rank rows are on screen, the straggler's row first; a click on a
  row shows that rank's lanes (the detailed timeline of that rank) under the compact rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, quote, urlencode, urlparse

import numpy as np
import pytest

from support import comm_json as cj
from support.browser_util import SHOTS, PageLog, new_page, plugin_frame, save_screenshot, tensorboard, wait_all_loaded
from tb_paddle_profile.v1 import timeline_pb2

REPO = Path(__file__).resolve().parents[2]
RUN = "gen"
DP, MP, PP, SLOW, STEPS = 8, 2, 2, 5, 3
PREFIX = "/data/plugin/paddle_profile"
BINS = 240
LONG_TASKS = """(() => { window.__tbppLong = [];
  try { new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__tbppLong.push(Math.round(e.duration)); })
          .observe({ type: "longtask", buffered: true }); } catch (e) {} })();"""


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    root = tmp_path_factory.mktemp("tlc") / "logdir"
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            str(DP),
            "--mp",
            str(MP),
            "--pp",
            str(PP),
            "--layers",
            "2",
            "--steps",
            str(STEPS),
            "--micro-batches",
            "2",
            "--slow-rank",
            str(SLOW),
            "--quiet",
            "--out",
            str(root / RUN),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert got.returncode == 0, got.stderr[-2000:]
    manifest = json.loads((root / RUN / "synth_manifest.json").read_text())
    with tensorboard(root, tmp_path_factory.mktemp("tlc_tb")) as server:
        wait_all_loaded(server)
        yield server, root / RUN, manifest


def _get(tb, route: str, timeout: float = 120.0, **params):
    """(status, body) of a route, asked again while it answers 202."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{tb.url}{PREFIX}/{route}?{urlencode(params)}", timeout=60) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()
        if status != 202 or time.monotonic() > deadline:
            return status, body
        time.sleep(0.5)


def _compact(tb, **params) -> timeline_pb2.TimelineCompact:
    status, body = _get(tb, "timeline_compact", run=RUN, span="0", **params)
    assert status == 200, body[:300]
    return timeline_pb2.TimelineCompact.FromString(body)


# ---------------------------------------------------------------- the truth, from the trace JSON


def _covered(iv, edges):
    """Per bin [edges[k], edges[k+1]): the fraction covered by the disjoint intervals iv."""
    out = np.zeros(len(edges) - 1)
    for s, e in iv:
        lo = max(0, int(np.searchsorted(edges, s, "right")) - 1)
        hi = min(len(out), int(np.searchsorted(edges, e, "left")))
        for k in range(lo, hi):
            out[k] += max(0.0, min(e, edges[k + 1]) - max(s, edges[k]))
    return out / np.diff(edges)


def _truth(trace: Path, step: int, ws: int, we: int, bins: int):
    """(compute, communication) per bin of a rank's trace, its bins laid from its ProfileStep#step start."""
    evs = cj.events(trace)
    zero = next(
        cj.span(e)[0] for e in cj.by_cat(evs, "ProfileStep") if e["name"].split("[")[0] == f"ProfileStep#{step}"
    )
    kernels = [(cj.span(e), cj.is_nccl(e)) for e in cj.by_cat(evs, "Kernel")]
    edges = zero + ws + (we - ws) * np.arange(bins + 1, dtype=np.float64) / bins
    busy = _covered(cj.union([iv for iv, _ in kernels]), edges)
    comm = _covered(cj.union([iv for iv, nccl in kernels if nccl]), edges)
    return busy - comm, comm, zero


def _coords(manifest):
    return {r["worker"]: r["coords"] for r in manifest["ranks"]}


def test_the_order_is_the_straggler_then_its_role_peers_then_rank_order(gen):
    tb, _, manifest = gen
    msg = _compact(tb, bins=BINS, rank_limit=1)
    order = [o.worker for o in msg.order]
    coords = _coords(manifest)
    slow = f"rank{SLOW}"
    assert order[0] == slow and msg.order[0].role == "straggler"
    me = coords[slow]
    peers = [w for w in coords if w != slow and (coords[w]["pp"], coords[w]["mp"]) == (me["pp"], me["mp"])]
    peers.sort(key=lambda w: (abs(int(w[4:]) - SLOW), int(w[4:])))
    assert order[1 : 1 + len(peers)] == peers and all(o.role == "peer" for o in msg.order[1 : 1 + len(peers)])
    rest = order[1 + len(peers) :]
    assert rest == sorted(rest, key=lambda w: int(w[4:])) and len(order) == DP * MP * PP == len(set(order))
    assert "straggler" in msg.why
    # The default step: the median of the steps by the job's step time (the slowest rank's), from the truth.
    job = {
        s: max(st["step_time_ns"] for r in manifest["ranks"] for st in r["steps"] if st["step"] == s)
        for s in range(1, STEPS + 1)
    }
    ranked = sorted(job, key=lambda s: (job[s], s))
    assert msg.step == ranked[(len(ranked) - 1) // 2] and list(msg.steps) == list(range(1, STEPS + 1))


def test_the_bins_are_the_ranks_kernels(gen):
    tb, run_dir, manifest = gen
    msg = _compact(tb, bins=BINS, rank_limit=64)
    assert len(msg.rows) == DP * MP * PP and [r.worker for r in msg.rows] == [o.worker for o in msg.order]
    traces = {r["worker"]: run_dir / r["trace"] for r in manifest["ranks"]}
    steps = {r["worker"]: {s["step"]: s for s in r["steps"]} for r in manifest["ranks"]}
    ws, we = msg.window_start_ns, msg.window_end_ns
    assert ws < 0 < we and msg.bins == BINS
    for row in msg.rows:
        assert row.state == "" and len(row.compute) == len(row.communication) == BINS
        comp, comm, zero = _truth(traces[row.worker], msg.step, ws, we, BINS)
        np.testing.assert_allclose(np.array(row.communication), comm, atol=2e-3, err_msg=row.worker)
        np.testing.assert_allclose(np.array(row.compute), comp, atol=2e-3, err_msg=row.worker)
        # aligned on its own start of the step: the step is [0, its duration] of the row
        planted = steps[row.worker][msg.step]
        assert row.step_start_ns == 0 and abs(row.step_end_ns - planted["step_time_ns"]) <= 1_000
        assert abs(row.origin_offset_ns - zero) <= 1_000  # the row's 0 in the rank's own times (one host: no offset)
    # the planted slow rank computes longer than its role peers over the same step
    share = {r.worker: r.compute_share for r in msg.rows}
    assert share[f"rank{SLOW}"] > max(share[o.worker] for o in msg.order[1:4])


def test_a_window_asked_for_is_binned_from_the_kernels_too(gen):
    tb, run_dir, manifest = gen
    traces = {r["worker"]: run_dir / r["trace"] for r in manifest["ranks"]}
    ws, we = 3_000_000, 9_500_000  # 3 ms to 9.5 ms into each rank's step
    msg = _compact(tb, bins=97, rank_offset=2, rank_limit=3, start_ns=ws, end_ns=we)
    assert (msg.window_start_ns, msg.window_end_ns, msg.bins) == (ws, we, 97) and len(msg.rows) == 3
    for row in msg.rows:
        comp, comm, _ = _truth(traces[row.worker], msg.step, ws, we, 97)
        np.testing.assert_allclose(np.array(row.communication), comm, atol=2e-3, err_msg=row.worker)
        np.testing.assert_allclose(np.array(row.compute), comp, atol=2e-3, err_msg=row.worker)


def test_pages_of_rows_and_bounds(gen):
    tb, _, _ = gen
    whole = _compact(tb, bins=50, rank_limit=64)
    page = _compact(tb, bins=50, rank_offset=30, rank_limit=5)
    assert page.rank_offset == 30 and [r.worker for r in page.rows] == [r.worker for r in whole.rows[30:32]]
    assert [tuple(r.compute) for r in page.rows] == [tuple(r.compute) for r in whole.rows[30:32]]
    assert len(page.order) == len(whole.order)
    for bad in ({"rank_offset": 99}, {"bins": 0}, {"align": "nope"}, {"rank_limit": 0}):
        status, _ = _get(tb, "timeline_compact", run=RUN, span="0", **bad)
        assert status == 400, bad
    status, _ = _get(tb, "timeline_compact", run="nope", span="0")
    assert status == 404
    status, _ = _get(tb, "timeline_compact", run=RUN, span="0", order_only=1, focus="nobody")
    assert status == 404
    # order_only: the order (the same as with rows) and no row
    alone = _compact(tb, bins=50, order_only=1)
    assert len(alone.rows) == 0 and list(alone.order) == list(whole.order) and alone.why == whole.why
    # align "clock": every row on the first row's start of the step (the straggler's), on the corrected clock
    clock = _compact(tb, bins=50, rank_limit=64, align="clock")
    assert len({r.zero_unix_ns for r in clock.rows}) == 1 and clock.rows[0].step_start_ns == 0
    own = {r.worker: r.zero_unix_ns for r in whole.rows}
    assert all(r.step_start_ns == own[r.worker] - r.zero_unix_ns for r in clock.rows)


def test_the_stored_critical_path_is_on_its_rows(gen):
    tb, _, _ = gen
    before = _compact(tb, bins=50, rank_limit=64)
    status, body = _get(tb, "whatif", run=RUN, span="0")
    assert status == 200
    from tb_paddle_profile.v1 import whatif_pb2

    w = whatif_pb2.RunWhatIf.FromString(body)
    after = _compact(tb, bins=50, rank_limit=64)
    assert not before.critical_known and after.critical_known
    segs = [s for s in w.critical_path.segments if s.step == after.step]
    assert segs and len(after.critical) == len(segs)
    zero = {r.worker: r.zero_unix_ns for r in after.rows}
    for got, want in zip(
        sorted(after.critical, key=lambda s: (s.worker, s.start_ns)),
        sorted(segs, key=lambda s: (s.worker, s.start_unix_ns)),
    ):
        assert got.worker == want.worker and got.end_ns - got.start_ns == want.end_unix_ns - want.start_unix_ns
        assert got.start_ns == want.start_unix_ns - zero[got.worker]  # one host: no clock offset


# ---------------------------------------------------------------- the page


# the mean luma of the compact canvas's label column (its background, under the labels' text)
_LABELS_LUMA = """() => { const c = document.querySelector('[data-testid="timeline-compact-canvas"]');
  const img = c.getContext('2d').getImageData(0, 30, 160, c.height - 30).data; let sum = 0, n = 0;
  for (let i = 0; i < img.length; i += 16) { sum += 0.2126 * img[i] + 0.7152 * img[i + 1] + 0.0722 * img[i + 2]; n++; }
  return sum / n; }"""


def _open(browser, tb, dark=False):
    log = PageLog()
    if dark:
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, device_scale_factor=1, color_scheme="dark"
        )
        page = context.new_page()
        page.on("pageerror", lambda err: log.page_errors.append(str(err)))
    else:
        page = new_page(browser, log, width=1280, height=800)
    page.add_init_script(LONG_TASKS)
    keys = dict(run=RUN, span="0", unit="ms", view="timeline")
    frame = plugin_frame(
        page, tb, "&" + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    return page, frame, log


def _labels_whole(frame, page):
    """Every row label drawn is whole at this width (measured in the page: its text's width within its room, no
    ellipsis): a short one in the row ("rank 5 ★ straggler", "rank 1 · peer"); the full label on hover."""
    labels = frame.evaluate("() => window.__tbppCompact.labels()")
    assert len(labels) >= 32, labels
    for lab in labels:
        assert not lab["text"].endswith("…") and lab["width"] <= lab["room"], lab
    first = labels[0]
    assert first["worker"] == f"rank{SLOW}" and first["text"] == f"rank {SLOW} ★ straggler", first
    assert first["full"].startswith("straggler · ") and f"rank {SLOW}" in first["full"], first
    assert all(lab["text"].endswith(" · peer") == lab["full"].startswith("role peer · ") for lab in labels)
    assert any(lab["text"].endswith(" · peer") for lab in labels)
    # hovering a label shows the full one (the hover box and the canvas's title)
    canvas = frame.locator('[data-testid="timeline-compact-canvas"]')
    top = frame.evaluate("() => window.__tbppCompact.rowsTop")
    canvas.hover(position={"x": 40, "y": top + 5})
    frame.wait_for_function(
        "(t) => document.querySelector('[data-testid=timeline-compact-hover]').textContent === t", arg=first["full"]
    )
    assert canvas.get_attribute("title") == first["full"]
    page.mouse.move(5, 790)


@pytest.mark.browser
def test_32_ranks_on_a_1280x800_screen_straggler_first_and_a_click_shows_its_lanes(gen, browser):
    tb, _, _ = gen
    page, frame, log = _open(browser, tb)
    frame.wait_for_function(
        "() => { const c = window.__tbppCompact; return c && c.drawnRows() > 0 && c.loadedRows() >= 32; }",
        timeout=120_000,
    )
    c = frame.evaluate(
        "() => ({ visible: window.__tbppCompact.visibleRows(), order: window.__tbppCompact.order(),"
        " drawn: window.__tbppCompact.drawnRows() })"
    )
    assert len(c["visible"]) >= 32, c
    assert c["order"][0] == f"rank{SLOW}" and c["visible"][0] == f"rank{SLOW}"
    _labels_whole(frame, page)
    # the rows are on screen: the canvas's box holds the 32 rows inside the 800 px viewport
    box = frame.locator('[data-testid="timeline-compact-canvas"]').bounding_box()
    iframe_box = page.locator('iframe[src*="plugin_entry.html?name=paddle_profile"]').bounding_box()
    row_h = frame.evaluate("() => window.__tbppCompact.rowH")
    top = frame.evaluate("() => window.__tbppCompact.rowsTop")
    assert iframe_box["y"] + box["y"] + top + 32 * row_h <= 800, (iframe_box, box, row_h)
    # Ctrl+wheel zooms around the pointer: drawn at once, the rows in view asked for again over the new window
    before = frame.evaluate("() => window.__tbppCompact.view()")
    page.mouse.move(iframe_box["x"] + box["x"] + 600, iframe_box["y"] + box["y"] + top + 5 * row_h)
    page.keyboard.down("Control")
    page.mouse.wheel(0, -400)
    page.keyboard.up("Control")
    frame.wait_for_function(
        "(b) => { const v = window.__tbppCompact.view(); return v && v.end - v.start < 0.8 * (b.end - b.start); }",
        arg=before,
        timeout=10_000,
    )
    frame.wait_for_function(
        "() => { const c = window.__tbppCompact, v = c.view(), w = c.windowOf(0);"
        " return w && Math.abs(w.start - v.start) <= 1 && Math.abs(w.end - v.end) <= 1; }",
        timeout=30_000,
    )
    frame.click('[data-testid="timeline-compact-fit"]')
    frame.wait_for_function(
        "(b) => { const c = window.__tbppCompact, w = c.windowOf(0);"
        " return w && Math.abs(w.start - b.start) <= 1 && Math.abs(w.end - b.end) <= 1; }",
        arg=before,
        timeout=30_000,
    )
    page.mouse.move(5, 790)  # no hover readout in the picture
    # no details panel before something is selected
    assert frame.locator('[data-testid="timeline-details"]').count() == 0
    page.wait_for_timeout(200)
    save_screenshot(page, "timeline-compact", max_kb=400)
    # a click on the fourth row: that rank's lanes (the detailed timeline of that rank) under the rows
    want = c["visible"][3]
    msg = _compact(tb, bins=BINS, rank_limit=64)
    row = next(r for r in msg.rows if r.worker == want)
    want_tl = (row.origin_offset_ns + msg.window_start_ns, row.origin_offset_ns + msg.window_end_ns)
    nodes = frame.evaluate("() => document.querySelectorAll('*').length")
    longest = frame.evaluate("() => Math.max(0, ...(window.__tbppLong || []))")
    print(f"compact timeline of 32 ranks: {nodes} DOM nodes, longest task {longest} ms")
    assert nodes < 3000
    # (on its label: a click on a communication bin aligns the rows on that collective instead)
    frame.locator('[data-testid="timeline-compact-canvas"]').click(position={"x": 60, "y": top + 3.5 * row_h})
    frame.wait_for_function(
        "(w) => { const t = window.__tbppTimeline; const d = t && t.data();"
        " return d && d.items > 0 && d.ranks.length === 1 && d.ranks[0].worker === w && d.ranks[0].tracks.length > 0; }",
        arg=want,
        timeout=120_000,
    )
    lanes = frame.evaluate("() => window.__tbppTimeline.rows().filter((r) => r.kind !== 'rank').length")
    assert lanes > 1
    # it opens on the step the rows show: the row's window in that rank's own times
    view = frame.evaluate("() => window.__tbppTimeline.view()")
    assert abs(view["start"] - want_tl[0]) < 1 and abs(view["end"] - want_tl[1]) < 1, (view, want_tl)
    assert frame.evaluate("() => window.__tbppCompact.expanded()") == [want]
    page.mouse.move(5, 790)  # no hover readout in the picture
    page.wait_for_timeout(300)
    save_screenshot(page, "timeline-compact-expanded", max_kb=400)
    page.context.close()
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
    assert log.outside_requests() == [], log.outside_requests()


@pytest.mark.browser
def test_the_compact_canvas_follows_the_dark_mode_and_aligns_on_a_collective(gen, browser):
    tb, _, _ = gen
    for dark in (True, False):
        page, frame, log = _open(browser, tb, dark=dark)
        frame.wait_for_function(
            "() => { const c = window.__tbppCompact; return c && c.drawnRows() >= 32; }", timeout=120_000
        )
        frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
        page.wait_for_timeout(200)
        luma = frame.evaluate(_LABELS_LUMA)
        assert (luma < 90) if dark else (luma > 170), (dark, luma)
        _labels_whole(frame, page)
        if not dark:  # the rows on each rank's first all-reduce: asked for again, drawn
            frame.select_option('[data-testid="timeline-compact-align"]', "collective")
            frame.wait_for_function(
                "() => { const c = window.__tbppCompact; return c.align() === 'collective'"
                " && c.loadedRows() >= 32 && c.drawnRows() >= 32; }",
                timeout=60_000,
            )
            assert frame.input_value('[data-testid="timeline-compact-kind"]') == "all_reduce"
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "timeline-compact-collective.png"))
        page.context.close()
        assert log.page_errors == [], log.page_errors


def test_align_on_a_collective_puts_each_row_on_its_first_instance_of_the_kind(gen):
    """align=collective: each rank's row is on the start of its first matched all-reduce of the step, which
    the trace JSON says is its first AllReduce kernel of the step (the generator matches them all)."""
    tb, run_dir, manifest = gen
    msg = _compact(tb, bins=60, rank_limit=64, align="collective", kind="all_reduce")
    assert msg.align == "collective" and msg.align_kind == "all_reduce" and "all_reduce" in msg.align_kinds
    for row in msg.rows:
        evs = cj.events(run_dir / next(r["trace"] for r in manifest["ranks"] if r["worker"] == row.worker))
        s0, s1 = next(
            cj.span(e) for e in cj.by_cat(evs, "ProfileStep") if e["name"].split("[")[0] == f"ProfileStep#{msg.step}"
        )
        first = min(
            cj.span(e)[0]
            for e in cj.by_cat(evs, "Kernel")
            if "allreduce" in e["name"].lower().replace("_", "") and s0 <= cj.span(e)[0] < s1
        )
        assert row.on_collective and abs(row.origin_offset_ns - first) <= 1_000, row.worker
        assert abs(row.step_start_ns - (s0 - first)) <= 1_000  # its step starts before the collective
    assert msg.window_start_ns <= min(r.step_start_ns for r in msg.rows)
    other = _compact(tb, bins=60, rank_limit=2, align="collective", kind="no such kind")
    assert other.align_kind == "all_reduce"  # an unknown kind: the default one


@pytest.mark.browser
def test_a_click_on_communication_aligns_every_row_on_that_collective_instance(gen, browser):
    """A click on a communication bin of the straggler's row: the route (align=instance) puts every member
    row of the collective instance under the pointer (one communicator, one sequence number) on its
    member's start; the page draws each member's start at the same x, the chip names the instance and
    takes the rows back. The members' starts are their kernels in the trace JSON: the kernel under the
    pointer on the clicked rank, the same n-th all-reduce of the step on every member rank."""
    tb, run_dir, manifest = gen
    page, frame, log = _open(browser, tb)
    frame.wait_for_function(
        "() => { const c = window.__tbppCompact; return c && c.loadedRows() >= 32 && c.drawnRows() >= 32; }",
        timeout=120_000,
    )
    c = frame.evaluate(
        "() => { const c = window.__tbppCompact; return { comm: c.communication(0), win: c.windowOf(0),"
        " view: c.view(), labelW: c.labelW, rowH: c.rowH, top: c.rowsTop, worker: c.order()[0] }; }"
    )
    assert c["worker"] == f"rank{SLOW}"
    comm, win, view = c["comm"], c["win"], c["view"]
    before = _compact(tb, bins=60, rank_limit=64)
    clicked = next(r for r in before.rows if r.worker == c["worker"])

    def all_reduces(w):
        """The rank's all-reduce kernels of the step (ns of its trace's origin), in order."""
        evs = cj.events(run_dir / next(r["trace"] for r in manifest["ranks"] if r["worker"] == w))
        s0, s1 = next(
            cj.span(e) for e in cj.by_cat(evs, "ProfileStep") if e["name"].split("[")[0] == f"ProfileStep#{before.step}"
        )
        return sorted(
            cj.span(e)
            for e in cj.by_cat(evs, "Kernel")
            if cj.is_nccl(e) and "allreduce" in e["name"].lower() and s0 <= cj.span(e)[0] < s1
        )

    # the middle of the straggler's longest all-reduce of the step, in its row's times: a communication bin
    ks, ke = max(all_reduces(c["worker"]), key=lambda sp: sp[1] - sp[0])
    t = (ks + ke) / 2 - clicked.origin_offset_ns
    k = int((t - win["start"]) / (win["end"] - win["start"]) * len(comm))
    assert comm[k] >= 0.5, (k, comm[max(0, k - 3) : k + 4])
    box = frame.locator('[data-testid="timeline-compact-canvas"]').bounding_box()
    x = c["labelW"] + (t - view["start"]) / (view["end"] - view["start"]) * (box["width"] - c["labelW"])
    frame.locator('[data-testid="timeline-compact-canvas"]').click(position={"x": x, "y": c["top"] + 0.5 * c["rowH"]})
    frame.wait_for_function(
        "() => { const c = window.__tbppCompact; return c.align() === 'instance' && c.drawnRows() >= 32; }",
        timeout=60_000,
    )
    chip = frame.locator('[data-testid="timeline-compact-instance"]')
    chip.wait_for()
    label, worker, at = (
        chip.get_attribute("data-label"),
        chip.get_attribute("data-worker"),
        chip.get_attribute("data-at"),
    )
    assert (
        worker == c["worker"]
        and label
        and "#" in label
        and f"aligned on {label.replace('_', ' ')}" in chip.inner_text()
    )
    # the page: every member row drawn has its start of the instance at the same x (its time 0)
    frame.wait_for_function(
        "() => (document.querySelector('[data-testid=\"timeline-compact-canvas\"]').dataset.instanceStarts || '').length > 2"
    )
    marks = json.loads(frame.locator('[data-testid="timeline-compact-canvas"]').get_attribute("data-instance-starts"))
    assert worker in marks and len(marks) >= 2, marks
    xs = [m["x"] for m in marks.values()]
    assert max(xs) - min(xs) <= 1.0, marks
    # the route's numbers: the same instance, each member row's time 0 its member's start; the page drew them
    msg = _compact(tb, bins=60, rank_limit=64, align="instance", instance_worker=worker, instance_ns=at)
    assert msg.align == "instance" and msg.align_kind == label, (msg.align, msg.align_kind, msg.note)
    members = {r.worker: r for r in msg.rows if r.on_collective}
    assert set(marks) == set(members), (sorted(marks), sorted(members))
    for w, m in marks.items():
        assert m["zero"] == str(members[w].zero_unix_ns), (w, m)
    # the truth, from the trace JSON: each member's start is an all-reduce kernel's, the clicked rank's the one
    # under the pointer, and it is the same n-th all-reduce of the step on every member rank
    nth = {}
    for w, row in members.items():
        kernels = all_reduces(w)
        i = min(range(len(kernels)), key=lambda j: abs(kernels[j][0] - row.origin_offset_ns))
        assert abs(kernels[i][0] - row.origin_offset_ns) <= 1_000, (w, row.origin_offset_ns, kernels)
        nth[w] = i
    assert all_reduces(worker)[nth[worker]] == (ks, ke)
    assert len(set(nth.values())) == 1, nth
    # the way back: the alignment chosen before (each rank on its step start)
    frame.click('[data-testid="timeline-compact-instance-clear"]')
    frame.wait_for_function(
        "() => { const c = window.__tbppCompact; return c.align() === 'step' && c.loadedRows() >= 32; }", timeout=60_000
    )
    assert frame.locator('[data-testid="timeline-compact-instance"]').count() == 0
    page.context.close()
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors


def test_align_on_an_instance_needs_the_rank_and_the_time(gen):
    """align=instance without instance_worker and instance_ns: 400; a time where the rank runs no matched
    instance of the step: the nearest one of the step (a rank with none: the rows on their step, a note)."""
    tb, _, _ = gen
    status, body = _get(tb, "timeline_compact", run=RUN, span="0", align="instance")
    assert status == 400 and b"instance_worker" in body
    msg = _compact(tb, bins=60, rank_limit=4, align="instance", instance_worker=f"rank{SLOW}", instance_ns=0)
    assert msg.align == "instance" and msg.align_kind and "#" in msg.align_kind, msg.note
    assert any(r.on_collective for r in msg.rows if r.worker == f"rank{SLOW}")
    none = _compact(tb, bins=60, rank_limit=4, align="instance", instance_worker="no-such-rank", instance_ns=0)
    assert not none.align_kind and "no matched collective instance" in none.note
    assert not any(r.on_collective for r in none.rows)


# ---------------------------------------------------------------- the rules, on hand-made analyses


def _rp(ranks, straggler=(), step_times=None):
    """A RunParallel of ``ranks`` [(rank, stage, mp, dp, peers)], the straggler(s) named."""
    from tb_paddle_profile.v1 import plugin_pb2

    rp = plugin_pb2.RunParallel()
    for rank, stage, mp, dp, peers in ranks:
        rp.ranks.add(worker=f"w{rank}", rank=rank, pipeline_stage=stage, mp=mp, dp=dp, sharding=-1, peers=peers)
    if straggler:
        rp.straggler.found = True
        for s in straggler:
            rp.straggler.stragglers.add(rank=s)
    if step_times:
        rp.steps.extend(sorted(step_times))
        for r in range(len(ranks)):
            rp.step_time.values_ns.extend(step_times[s][r] for s in sorted(step_times))
    return rp


def test_the_order_without_a_straggler_without_a_topology_and_without_stages():
    from tb_paddle_profile.timeline.compact import Facts, order_of

    plain = [(r, -1, -1, -1, []) for r in (3, 0, 2, 1)]
    assert order_of(_rp(plain))[:2] == (["w0", "w1", "w2", "w3"], {})
    # stages but no topology: the straggler's stage, nearest rank numbers first
    staged = [(r, r // 4, -1, -1, []) for r in range(8)]
    order, roles, why = order_of(_rp(staged, straggler=[6]))
    assert (
        order == ["w6", "w5", "w7", "w4", "w0", "w1", "w2", "w3"] and roles["w6"] == "straggler" and "role peers" in why
    )
    # no stages: the ranks it shares collectives with
    peered = [(r, -1, -1, -1, [0, 1, 2, 3] if r < 4 else [4, 5, 6, 7]) for r in range(8)]
    order, roles, why = order_of(_rp(peered, straggler=[2]))
    assert order[:4] == ["w2", "w1", "w3", "w0"] and roles["w0"] == "peer" and "w4" not in roles and "its peers" in why
    # two stragglers: both first, then the first one's role peers
    order, roles, _ = order_of(_rp(staged, straggler=[6, 1]))
    assert order[:2] == ["w6", "w1"] and roles["w1"] == "straggler" and order[2:5] == ["w5", "w7", "w4"]
    # an uncertain verdict (incomplete evidence: found is false) still names its possible straggler: first
    # too, said so (before: "rank order (no straggler)" while the Distributed view named rank 6)
    rp = _rp(staged, straggler=[6])
    rp.straggler.found, rp.straggler.uncertain = False, True
    order, roles, why = order_of(rp)
    assert order[:4] == ["w6", "w5", "w7", "w4"] and roles["w6"] == "straggler", (order, why)
    assert why.startswith("the possible straggler (uncertain evidence) and its role peers first"), why
    # named but neither found nor uncertain (absorbed: it sets no step): rank order
    rp.straggler.uncertain = False
    assert order_of(rp)[0][:2] == ["w0", "w1"]
    # a worker named (focus: the detailed timeline's current rank) in place of the straggler: it, then its
    # role peers, role "named"; Facts.order_for answers the same from what it keeps of the analysis
    rp = _rp(staged, straggler=[6])
    order, roles, why = order_of(rp, "w1")
    assert order[:4] == ["w1", "w0", "w2", "w3"] and roles["w1"] == "named" and "w6" not in roles, (order, roles)
    assert why == "the rank named and its role peers first", why
    facts = Facts(rp)
    assert facts.order_for("w1") == (order, roles, why)
    assert facts.order_for("") == facts.order_for("nobody") == order_of(rp)
    # the median step by the job's step time (the slowest rank's); the lower middle of an even count
    times = {1: [90, 100], 2: [50, 60], 3: [70, 75], 4: [10, 300]}
    assert Facts(_rp([(0, -1, -1, -1, []), (1, -1, -1, -1, [])], step_times=times)).median_step() == 3


# ---------------------------------------------------------------- ranks without a GPU: the host side

FLEET = REPO / "tests" / "data" / "crossrank" / "real-fleet-cpu-gloo" / "dp2pp2"  # Paddle 3.3.1, Fleet on CPU (gloo)
CPU_RUN = "fleet-cpu"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    import shutil

    if not FLEET.is_dir():
        pytest.skip("the real Fleet CPU traces are not here")
    root = tmp_path_factory.mktemp("tlc_cpu") / "logdir"
    shutil.copytree(FLEET, root / CPU_RUN)
    with tensorboard(root, tmp_path_factory.mktemp("tlc_cpu_tb")) as server:
        wait_all_loaded(server)
        yield server, root / CPU_RUN


def _host_truth(trace: Path, step: int, ws: int, we: int, bins: int):
    """(CPU operator time, host communication) per bin of a CPU rank's trace JSON, its bins laid from its
    ProfileStep#step start: the union of its Operator events, and of its Communication events (none here)."""
    import gzip

    with gzip.open(trace, "rt", encoding="utf-8") as f:
        evs = json.load(f)["traceEvents"]
    zero = next(
        cj.span(e)[0] for e in cj.by_cat(evs, "ProfileStep") if e["name"].split("[")[0] == f"ProfileStep#{step}"
    )
    edges = zero + ws + (we - ws) * np.arange(bins + 1, dtype=np.float64) / bins
    comm = _covered(cj.union([cj.span(e) for e in cj.by_cat(evs, "Communication")]), edges)
    ops = _covered(cj.union([cj.span(e) for e in cj.by_cat(evs, "Operator", "Communication")]), edges)
    return ops - comm, comm


def test_cpu_only_ranks_rows_show_the_host_side(fleet):
    """Real Fleet CPU traces have no GPU stream: before, every row was idle (no kernel). Each row is now
    host-side: its compute is the union of the rank's Operator events per bin (the trace JSON's), the
    answer says so (host_note)."""
    tb, folder = fleet
    status, body = _get(tb, "timeline_compact", run=CPU_RUN, span="0", bins=str(BINS), rank_limit="64")
    assert status == 200, body[:300]
    msg = timeline_pb2.TimelineCompact.FromString(body)
    assert len(msg.rows) == 4 and all(r.state == "" for r in msg.rows), msg.rows
    assert msg.host_note.startswith("host side"), msg.host_note
    traces = {p.name.split("_time_")[0]: p for p in folder.glob("*.paddle_trace.json.gz")}
    for r in msg.rows:
        assert r.host_side, r.worker
        assert r.compute_share > 0.01, (r.worker, r.compute_share)
        comp, comm = _host_truth(traces[r.worker], msg.step, msg.window_start_ns, msg.window_end_ns, BINS)
        assert np.allclose(np.array(r.compute), comp, atol=2e-3), (r.worker, np.abs(np.array(r.compute) - comp).max())
        assert np.allclose(np.array(r.communication), comm, atol=2e-3), r.worker


@pytest.mark.browser
def test_cpu_only_ranks_compact_rows_are_drawn_with_a_host_side_note(fleet, browser):
    """In the page (1,280 × 800, light and dark): the note says the rows are host-side, and each rank's row has
    compute drawn (pixels of the compute colour in the row), not a bare idle strip."""
    tb, _ = fleet
    for dark in (False, True):
        log = PageLog()
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, device_scale_factor=1, color_scheme="dark" if dark else "light"
        )
        page = context.new_page()
        page.on("pageerror", lambda err: log.page_errors.append(str(err)))
        page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
        keys = dict(run=CPU_RUN, span="0", unit="ms", view="timeline", tlmode="compact")
        frame = plugin_frame(
            page, tb, "&" + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
        )
        frame.wait_for_function(
            "() => { const c = window.__tbppCompact; return c && c.drawnRows() >= 4 && c.loadedRows() >= 4; }",
            timeout=120_000,
        )
        note = frame.locator('[data-testid="timeline-compact-host-note"]')
        note.wait_for(timeout=30_000)
        assert "host side" in note.text_content() and "operators" in note.text_content()
        top = frame.evaluate("() => window.__tbppCompact.rowsTop")
        row_h = frame.evaluate("() => window.__tbppCompact.rowH")
        label_w = frame.evaluate("() => window.__tbppCompact.labelW")
        for i in range(4):  # the compute colour (green, COMPACT_COLORS) in the row: idle is grey, communication orange
            n = frame.evaluate(
                """([x0, y0, h]) => {
              const c = document.querySelector('[data-testid="timeline-compact-canvas"]');
              const k = c.width / c.getBoundingClientRect().width;
              const d = c.getContext('2d').getImageData(Math.round(x0 * k), Math.round(y0 * k), c.width - Math.round(x0 * k), Math.max(1, Math.round(h * k))).data;
              let n = 0;
              for (let j = 0; j < d.length; j += 4) if (d[j + 1] > d[j] + 40 && d[j + 1] > d[j + 2] + 40) n++;
              return n; }""",
                [label_w + 1, top + i * row_h, row_h - 1],
            )
            assert n > 20, (dark, i, n)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"timeline-compact-cpu-{'dark' if dark else 'light'}.png"))
        context.close()
        assert log.page_errors == [], log.page_errors
        assert log.console_errors == [], log.console_errors


@pytest.mark.browser
def test_no_compact_ruler_label_is_cut_by_the_canvas_edge(fleet, browser):
    """The compact ruler's last label ran past the canvas's right edge at 1,280 px ("40 m" on a 1,024-rank
    run): over a series of pans (Shift+wheel) every label drawn ends inside the canvas."""
    from test_timeline_workflow import RULER_RIGHTS

    tb, _ = fleet
    log = PageLog()
    page = new_page(browser, log, width=1280, height=800)
    keys = dict(run=CPU_RUN, span="0", unit="ms", view="timeline", tlmode="compact")
    frame = plugin_frame(
        page, tb, "&" + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    frame.wait_for_function(
        "() => { const c = window.__tbppCompact; return c && c.drawnRows() >= 4 && c.ruler().length > 2; }",
        timeout=120_000,
    )
    canvas = frame.locator('[data-testid="timeline-compact-canvas"]')
    box = canvas.bounding_box()
    iframe_box = page.locator('iframe[src*="plugin_entry.html?name=paddle_profile"]').bounding_box()
    page.mouse.move(iframe_box["x"] + box["x"] + 700, iframe_box["y"] + box["y"] + 40)
    seen = 0
    for i in range(24):
        page.keyboard.down("Shift")
        page.mouse.wheel(0, 37 if i < 12 else -53)
        page.keyboard.up("Shift")
        frame.wait_for_timeout(60)
        labels = frame.evaluate("() => window.__tbppCompact.ruler()")
        v = frame.evaluate("() => window.__tbppCompact.view()")
        label_w = frame.evaluate("() => window.__tbppCompact.labelW")
        for r in frame.evaluate(RULER_RIGHTS, [labels, v, label_w, '[data-testid="timeline-compact-canvas"]']):
            assert r["right"] <= r["W"] + 0.5, (i, r, labels)
            seen += 1
    assert seen > 40
    page.context.close()
    assert log.page_errors == [], log.page_errors


# ---------------------------------------------------------------- the detailed view's default ranks: the server's


def _default_of(msg: timeline_pb2.TimelineCompact, rank_page: int = 16):
    """The detailed timeline's default ranks from the route's order: those it gives a role (the straggler or
    the worker named, then its role peers), else the order's first page; in rank order."""
    roled = [o for o in msg.order if o.role] or list(msg.order)
    return [o.worker for o in sorted(roled[:rank_page], key=lambda o: o.rank)]


@pytest.mark.browser
@pytest.mark.parametrize("named", ["", "rank10"], ids=["straggler", "worker-named"])
def test_the_detailed_views_default_ranks_are_the_servers_without_the_parallel_answer(gen, browser, named):
    """With no rank chosen, the detailed timeline of 32 ranks shows the ranks and the sentence the compact
    route gives (order_only=1: the order alone; focus: the worker named first), not a set the browser derives
    from the whole ``parallel`` answer, which it never asks for; every window it asks for is of those ranks."""
    tb, _, manifest = gen
    coords = _coords(manifest)
    msg = _compact(tb, bins=1, order_only=1, **({"focus": named} if named else {}))
    want = _default_of(msg)
    # the route's answer is the planted truth: the straggler (or the worker named) and its role peers
    focus = named or f"rank{SLOW}"
    me = coords[focus]
    assert set(want) == {w for w, c in coords.items() if (c["pp"], c["mp"]) == (me["pp"], me["mp"])}, want
    assert msg.order[0].worker == focus and ("rank named" if named else "straggler") in msg.why, msg.why
    assert len(msg.rows) == 0  # order_only: no row, no index opened
    log = PageLog()
    page = new_page(browser, log, width=1280, height=800)
    keys = dict(run=RUN, span="0", unit="ms", view="timeline", tlmode="detail", **({"worker": named} if named else {}))
    frame = plugin_frame(
        page, tb, "&" + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    frame.wait_for_function(
        "() => { const t = window.__tbppTimeline; const d = t && t.data();"
        " return d && d.items > 0 && d.ranks.every((r) => r.state === ''); }",
        timeout=120_000,
    )
    shown = frame.evaluate("() => window.__tbppTimeline.workers()")
    assert shown == want, (shown, want)
    assert frame.evaluate("() => window.__tbppTimeline.data().ranks.map((r) => r.worker)") == want
    why = frame.locator('[data-testid="timeline-ranks-why"]').text_content()
    assert why == f"default: {msg.why}", why
    # it opens on the focus: its rank header at the top of the canvas (or as far down as the scroll goes)
    frame.wait_for_function(
        """(w) => { const t = window.__tbppTimeline; const h = t.rows().find((r) => r.kind === 'rank' && r.worker === w);
        const box = document.querySelector('.tl-scroll'); const most = box.scrollHeight - box.clientHeight;
        return h && (Math.abs(t.scrollTop() - h.y) <= 1 || Math.abs(t.scrollTop() - most) <= 1); }""",
        arg=focus,
        timeout=20_000,
    )
    paths = [(urlparse(u).path.rsplit("/", 1)[-1], parse_qs(urlparse(u).query)) for u in log.requests]
    assert not [p for p, _ in paths if p == "parallel"], log.requests
    windows = [q for p, q in paths if p == "timeline"]
    assert windows and all(q.get("workers") == [",".join(want)] for q in windows), windows
    page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
