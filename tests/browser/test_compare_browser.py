"""The Compare view (issue 15 in the tab), in a real ``tensorboard`` and Debian's Chromium.

Two generated runs (tbp_synth, small: DP2, one layer stage, 2 steps) differ in one planted change: every
rank's ``WarpSoftmaxForward`` kernel takes FACTOR times longer in the candidate. The view, opened at 1,280
and 1,440 px, light and dark:

* draws the ``diff`` route's answer (RunDiff): its sentences word for word and every cell of every table of
  the view equal to the Python formatter's string for the same model (test_display_browser's check), the
  model itself equal to ``tb-paddle-profile diff --format json`` on the same two files; the slowed kernel is
  the kernels table's first row, its delta coloured "slower", its size the generator's planted change;
* keeps the choice in the URL: a reload shows it again, a new choice is a history entry (Back returns),
  the swap button exchanges the sides;
* opens both timelines from a delta row, each on its own run and worker with the kernel found;
* compares two ranks of one run, and two whole runs (the decomposition's waterfall: one bar per part
  and the total, the parts adding up to it).
Screenshots go to browser_util.SHOTS.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from support.report import ran
from support.browser_util import (
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

from tb_paddle_profile.present.display import cells  # noqa: E402
from tb_paddle_profile.v1 import diff_pb2, display_pb2 as dpb  # noqa: E402
from test_display_browser import check_csv, check_drawn_table  # noqa: E402
from test_tab_conventions import luminance  # noqa: E402

KERNEL = "WarpSoftmaxForward"
FACTOR = 4.0
BASE, CAND = "base", "cand"
GROWING, BROKEN = "growing", "broken"
NOT_PADDLE = '{"traceEvents": [{"name": "x", "ph": "X"}], "note": "a Chrome trace, but not one of Paddle"}'
WIDTHS = (1280, 1440)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    from tbp_synth.generator import SynthConfig, generate

    root = tmp_path_factory.mktemp("compare_logdir")
    small = dict(dp=2, mp=1, pp=1, layers=2, steps=2, micro_batches=2)
    generate(SynthConfig(**small), str(root / BASE))
    generate(SynthConfig(slow_kernel={KERNEL: FACTOR}, **small), str(root / CAND))
    # A rank still being written (cut in half, modified now: GROWING) and one that is not a Paddle trace.
    full = trace_of(root, CAND, "rank0")
    (root / GROWING).mkdir()
    (root / GROWING / full.name).write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    (root / BROKEN).mkdir()
    (root / BROKEN / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json").write_text(NOT_PADDLE)
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("compare_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def page_at(browser, request):
    pages = []

    def make(width: int, dark: bool = False):
        log = PageLog()
        context = browser.new_context(
            viewport={"width": width, "height": 1000}, device_scale_factor=1, color_scheme="dark" if dark else "light"
        )
        page = context.new_page()
        context.on("request", lambda req: log.requests.append(req.url))
        page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: log.page_errors.append(str(err)))
        # which requests failed (the console only says that one did)
        page.on("response", lambda r: log.console_errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        pages.append((page, log))
        return page

    yield make
    for page, log in pages:
        page.context.close()
        if ran(request):
            assert log.page_errors == [], log.page_errors
            assert log.console_errors == [], log.console_errors
            assert log.outside_requests() == []


def trace_of(logdir: Path, run: str, worker: str) -> Path:
    return next((logdir / run).glob(f"{worker}_time_*.paddle_trace.json"))


def choice(brun=BASE, bworker="rank0", crun=CAND, cworker="rank0", bspan="0", cspan="0") -> dict:
    return dict(brun=brun, bworker=bworker, bspan=bspan, crun=crun, cworker=cworker, cspan=cspan)


def route_params(ch: dict) -> str:
    side = lambda w: "" if w == "*" else w  # noqa: E731
    return urlencode(
        dict(
            baseline_run=ch["brun"],
            baseline_worker=side(ch["bworker"]),
            baseline_span=ch["bspan"],
            candidate_run=ch["crun"],
            candidate_worker=side(ch["cworker"]),
            candidate_span=ch["cspan"],
        )
    )


def fetch_diff(tb, ch: dict) -> diff_pb2.RunDiff:
    return diff_pb2.RunDiff.FromString(tb.get(f"/data/plugin/paddle_profile/diff?{route_params(ch)}", timeout=120))


def link(tb, ch: dict, unit: str = "ms") -> str:
    keys = dict(run=ch["crun"], view="compare", unit=unit, **ch)
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    return f"{tb.url}/#{'&'.join(parts)}"


def open_compare(page, tb, ch: dict, unit: str = "ms"):
    page.goto(link(tb, ch, unit))
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    return wait_body(frame)


def wait_body(frame):
    """Until the comparison is drawn; an error notice fails at once with its text."""
    try:
        frame.wait_for_selector('[data-testid="cmp-body"], [data-testid="cmp-error"]', timeout=120_000)
    except Exception as err:  # say what the view shows instead
        shown = frame.evaluate("() => document.querySelector('.content')?.innerText ?? document.body.innerText")
        raise AssertionError(f"the comparison was not drawn: {shown[:600]!r}") from err
    error = frame.locator('[data-testid="cmp-error"]')
    assert error.count() == 0, error.text_content()
    return frame


def shown_choice(frame) -> dict:
    """The choice the pickers show (their data attributes) and the one in the iframe's hash."""
    sides = frame.evaluate("""() => Object.fromEntries(['baseline', 'candidate'].map((s) => {
      const el = document.querySelector(`[data-testid="cmp-${s}"]`);
      return [s, { run: el.dataset.run, worker: el.dataset.worker, span: el.dataset.span }]; }))""")
    return dict(
        brun=sides["baseline"]["run"],
        bworker=sides["baseline"]["worker"],
        bspan=sides["baseline"]["span"],
        crun=sides["candidate"]["run"],
        cworker=sides["candidate"]["worker"],
        cspan=sides["candidate"]["span"],
    )


def hash_pairs(frame) -> dict:
    from urllib.parse import unquote

    out = {}
    for part in frame.evaluate("() => location.hash").lstrip("#").split("&"):
        k, _, v = part.partition("=")
        if k:
            out[unquote(k)] = unquote(v)
    return out


def sentences_of(diff: diff_pb2.RunDiff, unit: str = "ms"):
    return [cells.sentence_text(s, unit) for v in diff.display.views for s in v.sentences]


def drawn_sentences(frame):
    return frame.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=cmp-sentence]'), (s) => s.textContent)"
    )


def current_view(frame) -> str:
    return frame.locator('[data-testid="cmp-tables"]').get_attribute("data-view")


def goto_diff_view(frame, key: str):
    seg = frame.locator(f'[data-testid="cmp-views"] button[data-value="{key}"]')
    if seg.count():
        seg.click()
    frame.wait_for_selector(f'[data-testid="cmp-tables"][data-view="{key}"]')


def shoot(page, frame, name: str, docs: str = "") -> None:
    """The page, as tall as its content, in SHOTS; docs: also docs/screenshots/<docs>.png (the README's)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    height = frame.evaluate("() => document.querySelector('.content').scrollHeight + 140")
    page.set_viewport_size({"width": size["width"], "height": min(max(size["height"], height), 6000)})
    frame.wait_for_timeout(400)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    if docs:
        save_screenshot(page, docs, max_kb=500)
    page.set_viewport_size(size)


def kernel_row(diff: diff_pb2.RunDiff):
    """The view and table holding kernels, and its first row (the largest |delta|)."""
    for v in diff.display.views:
        for t in v.tables:
            if t.key == "kernels":
                return v, t
    raise AssertionError("the comparison has no kernels table")


def colour(frame, test_id: str, row_index: int, col: str) -> str:
    return frame.evaluate(
        """([id, i, col]) => { const r = document.querySelector(`[data-testid="${id}"] .vt-row[data-index="${i}"]`);
      return getComputedStyle(r.querySelector(`.vt-td[data-col="${col}"]`)).color; }""",
        [test_id, row_index, col],
    )


def is_red(css: str) -> bool:
    r, g, b = [float(x) for x in css[css.index("(") + 1 : css.index(")")].split(",")[:3]]
    return r > g + 40 and r > b + 40


# ---------------------------------------------------------------- the tests


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_view_draws_the_routes_answer_and_the_slowed_kernel_tops_it(tb, logdir, page_at, width, dark):
    ch = choice()
    diff = fetch_diff(tb, ch)
    assert diff.mode == "rank" and diff.baseline.run == BASE and diff.candidate.run == CAND
    # The route's model is the CLI's, for the same two files.
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "diff",
            str(trace_of(logdir, BASE, "rank0")),
            str(trace_of(logdir, CAND, "rank0")),
            "--format",
            "json",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    cli = json_format.Parse(out.stdout, diff_pb2.RunDiff(), ignore_unknown_fields=True)
    assert [(v.key, [t.key for t in v.tables]) for v in cli.display.views] == [
        (v.key, [t.key for t in v.tables]) for v in diff.display.views
    ]
    for cv, rv in zip(cli.display.views, diff.display.views):
        for ct, rt in zip(cv.tables, rv.tables):
            assert list(ct.columns) == list(rt.columns) and list(ct.rows) == list(rt.rows), (rv.key, rt.key)
    assert sentences_of(cli) == sentences_of(diff)

    page = page_at(width, dark)
    frame = open_compare(page, tb, ch)
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    bg = frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert (luminance(bg) < 0.25) == dark, bg
    # the decomposition's chart is drawn in the page's theme
    frame.wait_for_selector('[data-testid="cmp-decomposition-chart"][data-drawn="1"]')
    assert frame.locator('[data-testid="cmp-decomposition-chart"]').get_attribute("data-theme") == (
        "dark" if dark else "light"
    )
    assert drawn_sentences(frame) == sentences_of(diff)
    assert shown_choice(frame) == ch

    # No table of any view runs past its card (the last columns hidden to fit, the Columns menu shows them)
    for v in diff.display.views:
        goto_diff_view(frame, v.key)
        frame.wait_for_timeout(100)
        assert tables_past_the_box(frame) == [], v.key
    # Every table of every view: each cell the Python formatter's string, in the model's order.
    for v in diff.display.views:
        goto_diff_view(frame, v.key)
        for t in v.tables:
            check_drawn_table(frame, diff.display, v.key, t.key, f"dt-{v.key}-{t.key}", "ms")
        if v.tables and width == 1280 and not dark:
            check_csv(tb, frame, f"dt-{v.key}-{v.tables[0].key}", v.tables[0])

    # The planted change: the slowed kernel leads the kernels table, its delta the generator's change.
    view, kernels = kernel_row(diff)
    goto_diff_view(frame, view.key)
    first = kernels.rows[0]
    name = first.cells[0].title or first.cells[0].text
    assert KERNEL in name
    col = {c.key: i for i, c in enumerate(kernels.columns)}
    delta_key = next(k for k in ("gpu_total_ns_delta", "total_ns_delta") if k in col)
    base_total = first.cells[col[delta_key.replace("_delta", "_baseline")]].number
    assert first.cells[col[delta_key]].number == pytest.approx((FACTOR - 1) * base_total, rel=0.02)
    test_id = f"dt-{view.key}-kernels"
    drawn = read_virtual_table(frame, test_id)
    assert KERNEL in drawn[0]["name"]
    assert is_red(colour(frame, test_id, 0, delta_key)), "a slower kernel's delta is drawn red"
    shoot(
        page,
        frame,
        f"compare-kernels-{'dark' if dark else 'light'}-{width}",
        docs="compare-kernels" if width == 1440 and not dark else "",
    )


def _shows(frame, ch: dict) -> None:
    frame.wait_for_function(
        "(want) => ['baseline', 'candidate'].every((s) => { const d = document.querySelector(`[data-testid=cmp-${s}]`).dataset;"
        " const w = want[s]; return d.run === w[0] && d.worker === w[1] && d.span === w[2]; })",
        arg={
            "baseline": [ch["brun"], ch["bworker"], ch["bspan"]],
            "candidate": [ch["crun"], ch["cworker"], ch["cspan"]],
        },
    )
    wait_body(frame)
    assert shown_choice(frame) == ch
    pairs = hash_pairs(frame)
    assert {k: pairs[k] for k in ch} == ch and pairs["view"] == "compare"


def test_choice_is_in_the_url_back_returns_swap_exchanges_reload_keeps_it(tb, page_at):
    page = page_at(1440)
    first = choice(cworker="rank1", bworker="rank1")
    frame = open_compare(page, tb, first)
    _shows(frame, first)
    # Another worker on the baseline side: a new history entry.
    frame.click('[data-testid="cmp-baseline-worker-button"]')
    frame.click('[data-testid="cmp-baseline-worker-option"][data-value="rank0"]')
    second = dict(first, bworker="rank0")
    _shows(frame, second)
    # The swap exchanges the sides (an entry too), and the view draws the route's answer for them.
    frame.click('[data-testid="cmp-swap"]')
    third = dict(brun=CAND, bworker="rank1", bspan="0", crun=BASE, cworker="rank0", cspan="0")
    _shows(frame, third)
    diff = fetch_diff(tb, third)
    frame.wait_for_function(
        "(want) => JSON.stringify(Array.from(document.querySelectorAll('[data-testid=cmp-sentence]'), (s) => s.textContent)) === want",
        arg=json.dumps(sentences_of(diff), ensure_ascii=False, separators=(",", ":")),
    )
    # Back returns to each choice before, Forward comes again.
    page.go_back()
    _shows(frame, second)
    page.go_back()
    _shows(frame, first)
    page.go_forward()
    _shows(frame, second)
    page.go_forward()
    _shows(frame, third)
    # A reload (TensorBoard's page and the tab) keeps the choice: it is in the link.
    page.reload()
    frame = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached"
    ).content_frame()
    frame.wait_for_selector('[data-testid="panel-compare"]', timeout=60_000)
    _shows(frame, third)


def _timeline_opened(frame, run: str, worker: str, name: str) -> None:
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=60_000)
    pairs = hash_pairs(frame)
    assert (pairs["view"], pairs["run"], pairs["worker"]) == ("timeline", run, worker)
    assert pairs.get("tlq") == name or frame.locator('[data-testid="timeline-search"]').input_value() == name
    # the search ran and landed on that worker's slice of the kernel
    frame.wait_for_selector('[data-testid="timeline-details"]', timeout=60_000)
    got = frame.evaluate("""() => { const out = { name: document.querySelector('[data-testid="timeline-detail-name"]').textContent };
      for (const td of document.querySelectorAll('[data-testid="timeline-details"] td[data-key]')) out[td.dataset.key] = td.textContent;
      return out; }""")
    assert got["name"] == name and got["track"].startswith(f"{worker} ·"), got
    assert frame.locator('[data-testid="timeline-search"]').input_value() == name


def test_a_delta_row_opens_both_timelines(tb, page_at):
    ch = choice(bworker="rank0", cworker="rank1")
    diff = fetch_diff(tb, ch)
    view, kernels = kernel_row(diff)
    first = kernels.rows[0]
    assert first.link.startswith("diff:")
    page = page_at(1440)
    frame = open_compare(page, tb, ch)
    goto_diff_view(frame, view.key)
    test_id = f"dt-{view.key}-kernels"
    frame.wait_for_selector(f'[data-testid="{test_id}"] .vt-row')
    name = frame.locator(f'[data-testid="{test_id}"] .vt-row[data-index="0"] .vt-td.name').get_attribute("title")
    frame.click(f'[data-testid="{test_id}"] .vt-row[data-index="0"]')
    frame.click('[data-testid="cmp-links-kernels"] [data-testid="cmp-tl-baseline"]')
    _timeline_opened(frame, BASE, "rank0", name)
    page.go_back()
    # the plugin's frame again (TensorBoard may have made a new one), until the comparison is drawn
    frame = wait_body(
        page.wait_for_selector(
            'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
        ).content_frame()
    )
    assert shown_choice(frame) == ch
    goto_diff_view(frame, view.key)
    frame.wait_for_selector(f'[data-testid="{test_id}"] .vt-row')
    frame.click(f'[data-testid="{test_id}"] .vt-row[data-index="0"]')
    frame.click('[data-testid="cmp-links-kernels"] [data-testid="cmp-tl-candidate"]')
    _timeline_opened(frame, CAND, "rank1", name)


def test_two_ranks_of_one_run(tb, page_at):
    ch = choice(brun=CAND, bworker="rank0", crun=CAND, cworker="rank1")
    diff = fetch_diff(tb, ch)
    assert diff.mode == "rank" and diff.baseline.worker == "rank0" and diff.candidate.worker == "rank1"
    page = page_at(1280)
    frame = open_compare(page, tb, ch)
    assert shown_choice(frame) == ch
    assert drawn_sentences(frame) == sentences_of(diff)
    v = diff.display.views[0]
    for t in v.tables:
        check_drawn_table(frame, diff.display, v.key, t.key, f"dt-{v.key}-{t.key}", "ms")
    shoot(page, frame, "compare-two-ranks-1280")


@pytest.mark.parametrize("width", WIDTHS)
def test_whole_runs_draw_the_decomposition_as_parts_that_add_up(tb, page_at, width):
    ch = choice(bworker="*", cworker="*")
    diff = fetch_diff(tb, ch)
    assert diff.mode == "run"
    decomposition = next(t for v in diff.display.views for t in v.tables if t.key == "decomposition")
    col = {c.key: i for i, c in enumerate(decomposition.columns)}
    parts = [r for r in decomposition.rows if r.role == dpb.ROW_DATA]
    total = next(r for r in decomposition.rows if r.role == dpb.ROW_TOTAL)
    assert sum(r.cells[col["delta_ns"]].number for r in parts) == pytest.approx(
        total.cells[col["delta_ns"]].number, abs=1
    )
    page = page_at(width)
    frame = open_compare(page, tb, ch)
    # The mode control shows the whole runs; the pickers list no worker.
    assert frame.locator('[data-testid="cmp-mode"] button.on').get_attribute("data-value") == "run"
    assert frame.locator('[data-testid="cmp-baseline-all"]').count() == 1
    assert drawn_sentences(frame) == sentences_of(diff)
    chart = frame.locator('[data-testid="cmp-decomposition-chart"]')
    frame.wait_for_selector('[data-testid="cmp-decomposition-chart"][data-drawn="1"]')
    # the waterfall's bars: one per part and one for the total, labelled with the cells' texts
    labels = json.loads(frame.locator(".cmp-waterfall").get_attribute("data-bars"))
    assert labels == [r.cells[0].text for r in parts] + [total.cells[0].text]
    assert chart.bounding_box()["width"] > 600
    for v in diff.display.views:
        goto_diff_view(frame, v.key)
        for t in v.tables:
            check_drawn_table(frame, diff.display, v.key, t.key, f"dt-{v.key}-{t.key}", "ms")
    # Every rank's compute got slower (the slowed kernel runs on each): those cells are drawn red.
    view = next(v for v in diff.display.views if any(t.key == "ranks" for t in v.tables))
    ranks = next(t for t in view.tables if t.key == "ranks")
    ci = [c.key for c in ranks.columns].index("compute_delta_ns")
    goto_diff_view(frame, view.key)
    for i, row in enumerate(ranks.rows):
        assert row.cells[ci].number > 0
        assert is_red(colour(frame, f"dt-{view.key}-ranks", i, "compute_delta_ns")), row.id
    shoot(page, frame, f"compare-runs-{width}", docs="compare-runs" if width == 1440 else "")


def test_still_parsing_then_drawn_and_a_broken_side_is_one_line(tb, logdir, page_at):
    page = page_at(1280)
    ch = choice(crun=GROWING)
    page.goto(link(tb, ch))
    frame = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached"
    ).content_frame()
    # The candidate's file is still being written: the route answers 202 and the view says it waits.
    frame.wait_for_selector('[data-testid="cmp-pending"]', timeout=60_000)
    assert (
        "growing" in frame.locator('[data-testid="cmp-pending"]').text_content()
        or trace_of(logdir, GROWING, "rank0").name in frame.locator('[data-testid="cmp-pending"]').text_content()
    )
    assert frame.locator('[data-testid="cmp-body"]').count() == 0
    # The writer finishes the file: the comparison is drawn, the route's answer for it.
    done = trace_of(logdir, CAND, "rank0").read_bytes()
    trace_of(logdir, GROWING, "rank0").write_bytes(done)
    wait_body(frame)
    frame.wait_for_function(
        "(n) => document.querySelectorAll('[data-testid=cmp-sentence]').length === n",
        arg=len(sentences_of(fetch_diff(tb, ch))),
        timeout=60_000,
    )
    assert drawn_sentences(frame) == sentences_of(fetch_diff(tb, ch))
    # A side that cannot be read: one line naming the file and why.
    frame.evaluate("(h) => { location.hash = h; }", "view=compare&" + urlencode(choice(crun=BROKEN)))
    frame.wait_for_selector('[data-testid="cmp-error"]', timeout=60_000)
    text = frame.locator('[data-testid="cmp-error"]').inner_text().strip()
    assert "\n" not in text and "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json" in text, text
    assert frame.locator('[data-testid="cmp-body"]').count() == 0
