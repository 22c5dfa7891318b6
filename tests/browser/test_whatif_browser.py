"""The What-if view and the critical path on the timeline, in a real ``tensorboard`` and Debian's Chromium.

Two generated runs (tbp_synth, with their planted truth): a DP2 × PP2 1F1B run with a slow rank, and a
PP2 interleaved run (two model chunks per stage). What the page shows is compared with things we did
not write in TypeScript:

* every cell of every table and every sentence of the view is the Python formatter's string
  (tb_paddle_profile/present/display/cells.py) of the `whatif` route's Display, and the route's estimates are
  the CLI's (`tb-paddle-profile whatif RUN --format json`, run on the folder TensorBoard serves);
* the schedule chart draws one box per slot of the generator's truth (`Truth.schedule(rank, step)`),
  in the truth's micro-batch order on every stage, F and B apart, chunks apart;
* the critical-path toggle of the timeline draws segments on exactly the ranks the route's segments
  of that step name, and a link from a critical-path row of the What-if view opens the timeline there;

at 1,280 and 1,440 px, light and dark, with no console error and no request outside 127.0.0.1.
Screenshots go to browser_util.SHOTS.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import (
    REPO,
    SHOTS,
    PageLog,
    read_virtual_table,
    save_screenshot,
    tables_past_the_box,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]


from google.protobuf import json_format  # noqa: E402

from tb_paddle_profile.present.display.cells import format_cell, sentence_text  # noqa: E402
from tb_paddle_profile.v1 import whatif_pb2  # noqa: E402
from tbp_synth.truth import load_truth  # noqa: E402

RUN = "synth-dp2pp2"
INTERLEAVED = "synth-pp2-interleaved"
SLOW_RANK = 3
SIZES = [(1280, False), (1440, True)]
SIZE_IDS = ["1280-light", "1440-dark"]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("whatif_logdir")
    common = ["--steps", "3", "--micro-batches", "4", "--mp", "1", "--jobs", "1"]
    # --record-shapes: the input shapes written (nothing else changes): MFU per stage and "Sequences balanced"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--pp",
            "2",
            "--layers",
            "2",
            *common,
            "--slow-rank",
            str(SLOW_RANK),
            "--slow-factor",
            "1.4",
            "--record-shapes",
            "--out",
            str(root / RUN),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    # interleaved: the layers split evenly over pp × V = 4 model chunks
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "1",
            "--pp",
            "2",
            "--layers",
            "4",
            *common,
            "--schedule",
            "interleaved",
            "--virtual-stages",
            "2",
            "--out",
            str(root / INTERLEAVED),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("whatif_tb")) as server:
        wait_all_loaded(server)
        yield server


def open_page(browser, log: PageLog, width: int, dark: bool):
    context = browser.new_context(
        viewport={"width": width, "height": 1000}, device_scale_factor=1, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    context.on("request", lambda req: log.requests.append(req.url))
    page.on(
        "console",
        lambda msg: log.console_errors.append(f"{msg.text} @ {msg.location}") if msg.type == "error" else None,
    )
    page.on("pageerror", lambda err: log.page_errors.append(str(err)))
    return page


@pytest.fixture
def pages(browser, request):
    """Opens pages (width, dark); after the test: no console or page error, no request outside 127.0.0.1."""
    logs, opened = [], []

    def make(width: int, dark: bool):
        log = PageLog()
        page = open_page(browser, log, width, dark)
        logs.append(log)
        opened.append(page)
        return page

    yield make
    for page in opened:
        page.context.close()
    if not ran(request):
        return
    for log in logs:
        assert log.page_errors == [], log.page_errors
        assert log.console_errors == [], log.console_errors
        assert log.outside_requests() == [], log.outside_requests()


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
    return frame


def open_whatif(page, tb, run: str, unit: str = "ms", extra: dict | None = None):
    frame = goto(
        page, tb, {"run": run, "worker": "rank0", "span": "0", "unit": unit, "view": "whatif", **(extra or {})}
    )
    try:
        frame.wait_for_selector('[data-testid="wi-estimates"]', timeout=90_000)
    except Exception as err:
        shown = frame.evaluate("() => document.body.innerText.slice(0, 3000)")
        raise AssertionError(f"the What-if view did not appear; the plugin showed:\n{shown}") from err
    return frame


def route_whatif(tb, run: str, query: str = "") -> whatif_pb2.RunWhatIf:
    body = tb.get(f"/data/plugin/paddle_profile/whatif?run={quote(run)}&span=0&format=json{query}", timeout=180)
    w = json_format.Parse(body, whatif_pb2.RunWhatIf(), ignore_unknown_fields=True)
    assert w.display.views, "the whatif route sent no display model"
    return w


def cli_json(run_dir: Path, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "whatif", run_dir.name, "--format", "json", "--no-cache", *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(run_dir.parent),
    )
    return json.loads(out.stdout)


def view_of(w):
    (view,) = [v for v in w.display.views if v.key == "whatif"]
    return view


def expected_cells(t, unit: str):
    shown = [i for i, c in enumerate(t.columns) if not c.panel_hidden]
    return [{t.columns[i].key: format_cell(t.columns[i], r.cells[i], unit) for i in shown} for r in t.rows]


def drawn_cells(frame, table_key: str):
    return [r["cells"] for r in read_virtual_table(frame, f"dt-{table_key}")]


_SENTENCES = """() => Array.from(document.querySelectorAll('[data-testid="panel-whatif"] .sentence')).map((e) => [e.dataset.key, e.textContent])"""


def check_against_python(frame, w, unit: str):
    """Every table of the view is drawn, cell for cell the Python formatter's strings; every sentence too."""
    view = view_of(w)
    for t in view.tables:
        assert drawn_cells(frame, t.key) == expected_cells(t, unit), t.key
    shown = Counter(tuple(x) for x in frame.evaluate(_SENTENCES))
    # "Times in ms" is the CLI's line; the panel says its unit in the cards' heads
    want = Counter(
        (s.key, sentence_text(s, unit))
        for s in list(view.sentences) + [n for t in view.tables for n in t.notes]
        if s.key != "units"
    )
    assert shown == want
    assert frame.locator('[data-testid="wi-estimates"] .card-sub').text_content().endswith(f"times in {unit}")


def shot(page, name: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


# ---------------------------------------------------------------- the view's numbers


@pytest.mark.parametrize("width,dark", SIZES, ids=SIZE_IDS)
def test_panel_numbers_are_the_routes_and_the_clis(tb, logdir, pages, width, dark):
    w = route_whatif(tb, RUN)
    page = pages(width, dark)
    unit = "ms" if width == 1280 else "us"
    frame = open_whatif(page, tb, RUN, unit)
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    # no table runs past its card (the last columns hidden to fit, the Columns menu shows them)
    assert tables_past_the_box(frame) == []
    check_against_python(frame, w, unit)
    # the route's estimates are the CLI's, and the panel's estimates table prints them
    cli = cli_json(logdir / RUN)
    by_kind = {x.get("kind"): x for x in cli.get("whatIfs", [])}
    assert len(by_kind) == len(w.what_ifs) >= 5
    # issue 30 in this panel: MFU per stage from the shapes, and the sequences' what-if (every replica the same
    # tokens: applicable, nothing to save), both drawn above with the model's cells
    assert "mfu_stages" in {t.key for v in w.display.views for t in v.tables}
    seq = next(x for x in w.what_ifs if x.kind == whatif_pb2.WHAT_IF_BALANCED_SEQUENCES)
    assert seq.applicable and seq.saving_ns == 0
    for x in w.what_ifs:
        c = by_kind[whatif_pb2.WhatIfKind.Name(x.kind)]
        assert c.get("applicable", False) == x.applicable, x.title
        assert int(c.get("newStepNs", 0)) == x.new_step_ns, x.title
        assert int(c.get("savingNs", 0)) == x.saving_ns, x.title
    shot(page, f"whatif-{width}-{'dark' if dark else 'light'}")
    if width == 1280 and not dark:  # the README's (its first screen)
        frame.evaluate("() => window.scrollTo(0, 0)")
        save_screenshot(page, "whatif")


# ---------------------------------------------------------------- the schedule chart


def drawn_slots(frame):
    return frame.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="schedule-slot"]')).map((g) => {
      const r = g.querySelector('rect');
      return { stage: Number(g.dataset.stage), phase: g.dataset.phase, mb: Number(g.dataset.mb), chunk: Number(g.dataset.chunk),
               x: Number(r.getAttribute('x')), w: Number(r.getAttribute('width')), fill: getComputedStyle(r).fill };
    })""")


def truth_order(truth, ranks, step: int):
    """The truth's slots per stage (execution order): [(phase, micro_batch, chunk)]."""
    return {
        stage: [(s["phase"], s["micro_batch"], s["chunk"]) for s in truth.schedule(rank, step)]
        for stage, rank in enumerate(ranks)
    }


@pytest.mark.parametrize(
    "run,width,dark", [(RUN, 1280, False), (INTERLEAVED, 1440, True)], ids=["1f1b-1280-light", "interleaved-1440-dark"]
)
def test_schedule_chart_has_one_box_per_slot_of_the_truth(tb, logdir, pages, run, width, dark):
    w = route_whatif(tb, run)
    truth = load_truth(logdir / run)
    sched = w.schedule
    assert sched.pipelines, "the route found no pipeline"
    page = pages(width, dark)
    frame = open_whatif(page, tb, run)
    frame.wait_for_selector('[data-testid="schedule-chart"]', timeout=30_000)
    title = frame.locator('[data-testid="wi-schedule"] .card-head h3').text_content()
    assert sched.name and sched.name in title
    assert truth.schedule_name.lower() in sched.name.lower()
    # the panel opens on the pipeline that waits most; every drawn pipeline and two steps are checked
    drawn = int(frame.get_attribute('[data-testid="wi-schedule-kind"]', "data-pipeline"))
    assert drawn == max(sched.pipelines, key=lambda p: p.wait_ns).index
    cases = [
        (p, step) for p in sorted(sched.pipelines, key=lambda p: p.index != drawn) for step in list(sched.steps)[:2]
    ]
    for pipe, step in cases:
        if len(sched.pipelines) > 1:
            frame.select_option('[data-testid="wi-schedule-pipeline"]', str(pipe.index))
            frame.wait_for_selector(
                f'[data-testid="wi-schedule-kind"][data-pipeline="{pipe.index}"]', state="attached", timeout=10_000
            )
        frame.select_option('[data-testid="wi-schedule-step"]', str(step))
        frame.wait_for_selector(f'[data-testid="schedule-chart"][data-step="{step}"]', timeout=10_000)
        slots = drawn_slots(frame)
        want = truth_order(truth, list(pipe.ranks), int(step))
        assert len(slots) == sum(len(v) for v in want.values()) > 0
        per_stage = defaultdict(list)
        for s in sorted(slots, key=lambda s: s["x"]):
            per_stage[s["stage"]].append((s["phase"], s["mb"], s["chunk"]))
        assert dict(per_stage) == want
        # F and B coloured apart; chunks shaded apart (interleaved)
        fills = {(s["phase"], s["chunk"]): s["fill"] for s in slots}
        assert len({fills[k] for k in fills if k[0] == "F"} & {fills[k] for k in fills if k[0] == "B"}) == 0
        if truth.virtual_stages > 1:
            assert len({fills[k] for k in fills if k[0] == "F"}) == truth.virtual_stages
        # bubbles by kind, as the route gives them
        kinds = Counter(
            frame.evaluate(
                """() => Array.from(document.querySelectorAll('[data-testid="schedule-bubble"]')).map((b) => b.dataset.kind)"""
            )
        )
        route_kinds = Counter(
            "wait" if b.kind == 2 else "fill_drain" for ss in pipe.stage_steps if ss.step == step for b in ss.bubbles
        )
        assert kinds == route_kinds
    # readable: the chart fits the card at this width
    box = frame.locator('[data-testid="schedule-chart"] svg').bounding_box()
    card = frame.locator('[data-testid="wi-schedule"]').bounding_box()
    assert box["x"] >= card["x"] and box["x"] + box["width"] <= card["x"] + card["width"] + 1
    frame.locator('[data-testid="wi-schedule"]').screenshot(path=str(SHOTS / f"whatif-schedule-{run}-{width}.png"))
    if run == RUN and width == 1280 and not dark:  # the README's
        save_screenshot(frame.locator('[data-testid="wi-schedule"]'), "pipeline-schedule")


# ---------------------------------------------------------------- the critical path on the timeline


def critical(frame):
    return frame.evaluate("() => window.__tbppCritical || null")


def wait_critical(frame, step=None):
    frame.wait_for_function(
        "(s) => { const c = window.__tbppCritical; return c && c.status === 'ok' && c.drawn > 0 && (s === null || c.step === s); }",
        arg=step,
        timeout=60_000,
    )
    return critical(frame)


@pytest.mark.parametrize("width,dark", SIZES, ids=SIZE_IDS)
def test_critical_path_toggle_draws_the_routes_ranks(tb, pages, width, dark):
    w = route_whatif(tb, RUN)
    page = pages(width, dark)
    frame = goto(page, tb, {"run": RUN, "worker": "rank0", "span": "0", "unit": "ms", "view": "timeline"})
    frame.wait_for_selector('[data-testid="timeline-critical-toggle"]', timeout=60_000)
    frame.wait_for_function(
        "() => { const t = window.__tbppTimeline; const d = t && t.data(); return d && d.items > 0; }", timeout=60_000
    )
    frame.check('[data-testid="timeline-critical-toggle"]')
    steps = [s.step for s in w.critical_path.steps]
    got = wait_critical(frame, steps[0])
    named = {seg.rank for seg in w.critical_path.segments if seg.step == steps[0]}
    assert {s["rank"] for s in got["segments"]} == named
    assert set(got["drawnWorkers"]) == {seg.worker for seg in w.critical_path.segments if seg.step == steps[0]}
    assert len(got["segments"]) == sum(1 for seg in w.critical_path.segments if seg.step == steps[0])
    # the view jumped to the path
    v = frame.evaluate("() => window.__tbppTimeline.view()")
    lo = min(s["start"] for s in got["segments"])
    hi = max(s["end"] for s in got["segments"])
    assert v["start"] <= lo and v["end"] >= hi and (v["end"] - v["start"]) < 1.5 * (hi - lo) + 2e6
    # another step: its own segments
    if len(steps) > 1:
        frame.select_option('[data-testid="timeline-critical-step"]', str(steps[1]))
        got2 = wait_critical(frame, steps[1])
        assert {s["rank"] for s in got2["segments"]} == {
            seg.rank for seg in w.critical_path.segments if seg.step == steps[1]
        }
    shot(page, f"whatif-timeline-critical-{width}-{'dark' if dark else 'light'}")
    if width == 1280 and not dark:  # the README's
        save_screenshot(page, "timeline-critical-path")


def test_path_rows_link_to_the_timeline_at_that_rank(tb, pages):
    """A step row of the critical path opens the timeline on the rank that ended the step, with that
    step's path; a rank row opens it on that rank, at its first segment of the step chosen in the card."""
    w = route_whatif(tb, RUN)
    page = pages(1440, False)
    frame = open_whatif(page, tb, RUN)
    frame.select_option('[data-testid="wi-path-step"]', str(w.critical_path.steps[1].step))
    row = frame.locator('[data-testid="dt-critical_path_ranks"] .vt-row.linked').last
    row.wait_for(timeout=30_000)
    label = row.locator(".vt-name").text_content()
    (part,) = [p for p in w.critical_path.total.by_rank if p.key == label]
    step = w.critical_path.steps[1].step
    first = next(i for i, seg in enumerate(w.critical_path.segments) if seg.rank == part.rank and seg.step == step)
    row.click()
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=30_000)
    got = wait_critical(frame, step)
    assert f"tlcp={step}%3A{first}" in frame.evaluate("() => location.hash")
    seg = w.critical_path.segments[first]
    assert (
        frame.evaluate("() => decodeURIComponent((location.hash.match(/worker=([^&]*)/) || [])[1] || '')") == seg.worker
    )
    (mine,) = [s for s in got["segments"] if s["index"] == first]
    v = frame.evaluate("() => window.__tbppTimeline.view()")
    assert v["start"] <= mine["start"] and v["end"] >= mine["end"]
    # Back: the What-if view again; then a step row
    page.go_back()
    frame.wait_for_selector('[data-testid="wi-estimates"]', timeout=30_000)
    row = frame.locator('[data-testid="dt-critical_path_steps"] .vt-row.linked').first
    row.wait_for(timeout=30_000)
    row.click()
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=30_000)
    got = wait_critical(frame)
    hash_ = frame.evaluate("() => location.hash")
    assert "tlcp=" in hash_
    step = got["step"]
    assert step in [s.step for s in w.critical_path.steps]
    # the rank the row named is the current worker, and its segment is in view
    worker = frame.evaluate("() => decodeURIComponent((location.hash.match(/worker=([^&]*)/) || [])[1] || '')")
    assert worker in got["drawnWorkers"]
    v = frame.evaluate("() => window.__tbppTimeline.view()")
    mine = [s for s in got["segments"] if s["worker"] == worker]
    assert any(s["start"] < v["end"] and s["end"] > v["start"] for s in mine)


# ---------------------------------------------------------------- MFU inputs


def test_mfu_inputs_requery_the_route_and_stay_in_the_link(tb, logdir, pages):
    params, tokens, peak = "1.3e9", "65536", "312"
    page = pages(1280, False)
    frame = open_whatif(page, tb, RUN)
    assert (
        frame.locator('[data-testid="wi-mfu"] .sentence[data-key="mfu"]').text_content().startswith("MFU: not computed")
    )
    frame.fill('[data-testid="wi-mfu-params"]', "seven")
    frame.click('[data-testid="wi-mfu-apply"]')
    assert "Not a number: seven" in frame.locator('[data-testid="wi-mfu-bad"]').text_content()
    frame.fill('[data-testid="wi-mfu-params"]', params)
    frame.fill('[data-testid="wi-mfu-tokens"]', tokens)
    frame.fill('[data-testid="wi-mfu-peak"]', peak)
    frame.click('[data-testid="wi-mfu-apply"]')
    frame.wait_for_function("() => location.hash.includes('u.wi.params=')", timeout=10_000)
    w = route_whatif(tb, RUN, f"&params={params}&tokens_per_step={tokens}&peak_tflops={peak}")
    assert w.mfu.applicable and w.mfu.mfu > 0
    frame.wait_for_selector('[data-testid="dt-mfu"]', timeout=60_000)
    for t in view_of(w).tables:
        if t.key.startswith("mfu"):
            assert drawn_cells(frame, t.key) == expected_cells(t, "ms"), t.key
    cli = cli_json(logdir / RUN, "--params", params, "--tokens-per-step", tokens, "--peak-tflops", peak)
    assert cli["mfu"]["mfu"] == pytest.approx(w.mfu.mfu, rel=1e-12)
    # the link restores the inputs: a new page opened on the same hash shows the same MFU table
    hash_ = frame.evaluate("() => location.hash")
    assert f"u.wi.tokens={tokens}" in hash_ and f"u.wi.peak={peak}" in hash_
    again = pages(1280, False)
    frame2 = open_whatif(again, tb, RUN, extra={"u.wi.params": params, "u.wi.tokens": tokens, "u.wi.peak": peak})
    frame2.wait_for_selector('[data-testid="dt-mfu"]', timeout=60_000)
    assert frame2.input_value('[data-testid="wi-mfu-params"]') == params
    assert drawn_cells(frame2, "mfu") == expected_cells([t for t in view_of(w).tables if t.key == "mfu"][0], "ms")
