"""TensorBoard's conventions (issue 16, point 4), in a real ``tensorboard`` and Debian's Chromium.

- the bundle is served with an ETag (the SHA-256 of the file on disk) and answers 304 to If-None-Match;
- dark mode follows TensorBoard's own (its ``<body class="dark-mode">``, which by default follows the
  browser's prefers-color-scheme), live, in the page and in the charts;
- Back returns to the previous view inside the tab (run, worker, span and panel are history entries);
- a table's filter, sort and a panel's grouping are in the link and come back from it;
- a logdir with a broken trace logs no console error on any panel.
Screenshots (light and dark, 1,280 and 1,440 px) go to <temp dir>/shots/.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from support.browser_util import REPO, PageLog, tensorboard, wait_all_loaded
from support.paths import trace_folders

pytestmark = [pytest.mark.browser]


from support.browser_util import SHOTS  # noqa: E402

STATIC = REPO / "tb_paddle_profile" / "static"
RUN = "gloo"  # a real 2-rank CPU run (Paddle's own traces)
BROKEN_RUN = "broken"  # one file that is not a Paddle trace
GPU_RUN = "gpu"  # GPU-shaped traces with kernels (tests' gpu-synthetic-2rank)
BROKEN_WORKER = "rank7"
NOT_PADDLE = '{"traceEvents": [{"name": "x", "ph": "X"}], "note": "a Chrome trace, but not one of Paddle"}'
VIEWS = ["overview", "operators", "kernels", "distributed", "memory", "timeline"]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    folders = {f.name: f for f in trace_folders()}
    if "cpu-gpt-2rank-gloo" not in folders:
        pytest.skip("the shared trace set cpu-gpt-2rank-gloo is not here")
    root = tmp_path_factory.mktemp("conventions_logdir")
    (root / RUN).mkdir()
    for trace in folders["cpu-gpt-2rank-gloo"].glob("*.paddle_trace.json"):
        shutil.copyfile(trace, root / RUN / trace.name)
    # A third rank of the same run that fails to parse, and a run whose only file fails.
    (root / RUN / f"{BROKEN_WORKER}_time_2026_11_29_07_19_39_000000.paddle_trace.json").write_text(NOT_PADDLE)
    (root / BROKEN_RUN).mkdir()
    (root / BROKEN_RUN / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json").write_text(NOT_PADDLE)
    if "gpu-synthetic-2rank" in folders:  # a run with kernels (the Kernels view's grouping)
        (root / GPU_RUN).mkdir()
        for trace in folders["gpu-synthetic-2rank"].glob("*.paddle_trace.json"):
            shutil.copyfile(trace, root / GPU_RUN / trace.name)
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("conventions_tb")) as server:
        wait_all_loaded(server)
        yield server


def workers(tb) -> list:
    status = json.loads(tb.get("/data/plugin/paddle_profile/status"))
    return sorted({f["worker"] for f in status["files"] if f["run"] == RUN and f["state"] == "READY"})


def open_page(browser, log: PageLog, width: int, dark: bool):
    context = browser.new_context(
        viewport={"width": width, "height": 900}, device_scale_factor=1, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    context.on("request", lambda req: log.requests.append(req.url))
    page.on(
        "console",
        lambda msg: log.console_errors.append(f"{msg.text} @ {msg.location}") if msg.type == "error" else None,
    )
    page.on("pageerror", lambda err: log.page_errors.append(str(err)))
    return page


def link(tb, **keys) -> str:
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    return f"{tb.url}/#{'&'.join(parts)}"


def frame_of(page, view: str = ""):
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector(f'[data-testid="panel-{view}"]' if view else '[data-testid="app"]', timeout=60_000)
    return frame


def shown_view(frame) -> str:
    return frame.evaluate("() => document.querySelector('.views .view.on')?.dataset.view ?? ''")


def host_keys(page) -> dict:
    """The p.paddle_profile.* keys of TensorBoard's own URL (what a shared link carries)."""
    out = {}
    for part in page.evaluate("() => location.hash").lstrip("#").split("&")[1:]:
        k, _, v = part.partition("=")
        k = unquote(k)
        if k.startswith("p.paddle_profile."):
            out[k[len("p.paddle_profile.") :]] = unquote(v)
    return out


def luminance(css_rgb: str) -> float:
    nums = [float(x) for x in css_rgb[css_rgb.index("(") + 1 : css_rgb.index(")")].split(",")[:3]]
    return (0.2126 * nums[0] + 0.7152 * nums[1] + 0.0722 * nums[2]) / 255


# ---------------------------------------------------------------- the bundle's ETag


def _get(url: str, headers: dict):
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.mark.parametrize("name", ["index.js", "index.css"])
def test_bundle_has_an_etag_and_answers_304(tb, name):
    url = f"{tb.url}/data/plugin/paddle_profile/{name}"
    truth = '"' + hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:32] + '"'
    status, headers, body = _get(url, {})
    assert status == 200 and body == (STATIC / name).read_bytes()
    assert headers["ETag"] == truth
    assert "no-cache" in headers["Cache-Control"] and "must-revalidate" in headers["Cache-Control"]
    status, headers, body = _get(url, {"If-None-Match": truth, "Accept-Encoding": "gzip"})
    assert (status, body) == (304, b"") and headers["ETag"] == truth
    status, _, body = _get(url, {"If-None-Match": "W/" + truth})
    assert (status, body) == (304, b"")
    status, _, body = _get(url, {"If-None-Match": '"something-else"'})
    assert status == 200 and body == (STATIC / name).read_bytes()


def test_browser_revalidates_the_bundle(tb, browser):
    """A second load of the tab gets the bundle as a 304 (the browser sent the ETag back)."""
    log = PageLog()
    page = open_page(browser, log, 1440, False)
    codes = []
    page.on("response", lambda r: codes.append(r.status) if r.url.endswith("/paddle_profile/index.js") else None)
    page.goto(link(tb, run=RUN, view="overview"))
    frame_of(page, "overview")
    page.reload()
    frame_of(page, "overview")
    page.context.close()
    assert codes[:1] == [200] and 304 in codes[1:], codes


# ---------------------------------------------------------------- dark mode


@pytest.mark.parametrize("width", [1280, 1440])
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_dark_mode_follows_tensorboard(tb, browser, width, dark):
    log = PageLog()
    page = open_page(browser, log, width, dark)
    page.goto(link(tb, run=RUN, worker=workers(tb)[-1], view="overview"))
    frame = frame_of(page, "overview")
    # TensorBoard's own decision (its default follows the browser's colour scheme): the body class.
    page.wait_for_function("(d) => document.body.classList.contains('dark-mode') === d", arg=dark)
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    frame.wait_for_selector('.chart[data-drawn="1"]')
    bg = frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
    text = frame.evaluate("() => getComputedStyle(document.querySelector('.main')).color")
    assert (luminance(bg) < 0.25) == dark, bg
    assert (luminance(text) > 0.6) == dark, text
    themes = frame.evaluate(
        "() => Array.from(document.querySelectorAll('.chart[data-drawn]')).map((c) => c.dataset.theme)"
    )
    assert themes and set(themes) == {"dark" if dark else "light"}, themes
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"conventions-overview-{'dark' if dark else 'light'}-{width}.png"))
    # Live: TensorBoard's toggle flips the body class; the tab and its charts follow without a reload.
    page.evaluate("(d) => document.body.classList.toggle('dark-mode', d)", not dark)
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=not dark)
    frame.wait_for_function(
        "(t) => Array.from(document.querySelectorAll('.chart[data-drawn]')).every((c) => c.dataset.theme === t)",
        arg="dark" if not dark else "light",
    )
    bg = frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert (luminance(bg) < 0.25) == (not dark), bg
    page.evaluate("(d) => document.body.classList.toggle('dark-mode', d)", dark)
    frame.locator('.views .view[data-view="operators"]').click()
    frame.wait_for_selector('[data-testid="panel-operators"]')
    page.screenshot(path=str(SHOTS / f"conventions-operators-{'dark' if dark else 'light'}-{width}.png"))
    page.context.close()
    assert log.console_errors == [] and log.page_errors == [], (log.console_errors, log.page_errors)


# ---------------------------------------------------------------- history


def test_back_returns_to_the_previous_view(tb, browser):
    log = PageLog()
    page = open_page(browser, log, 1440, False)
    names = workers(tb)
    assert len(names) == 2
    page.goto(link(tb, run=RUN, worker=names[1], view="overview"))  # not rank 0
    frame = frame_of(page, "overview")
    tensorboard_url = page.url.split("#")[0]
    frame.locator('.views .view[data-view="operators"]').click()
    frame.wait_for_selector('[data-testid="panel-operators"]')
    frame.locator('.views .view[data-view="memory"]').click()
    frame.wait_for_selector('[data-testid="panel-memory"]')
    assert host_keys(page)["view"] == "memory" and host_keys(page)["worker"] == names[1]
    page.go_back()
    frame.wait_for_selector('[data-testid="panel-operators"]')
    assert shown_view(frame) == "operators" and page.url.startswith(tensorboard_url)
    assert host_keys(page)["view"] == "operators"
    page.go_back()
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert shown_view(frame) == "overview" and page.url.startswith(tensorboard_url)
    assert host_keys(page)["worker"] == names[1]
    assert "rank 1" in frame.locator('[data-testid="crumbs"]').text_content()
    page.go_forward()
    frame.wait_for_selector('[data-testid="panel-operators"]')
    # A filter typed in a table replaces the entry: one Back still goes to the previous view.
    frame.locator('[data-testid="operators-search"]').fill("matmul")
    frame.wait_for_function("() => location.hash.includes('u.ops.q=matmul')")
    page.go_back()
    frame.wait_for_selector('[data-testid="panel-overview"]')
    page.context.close()
    assert log.console_errors == [] and log.page_errors == [], (log.console_errors, log.page_errors)


def test_a_pasted_link_is_followed_without_a_reload(tb, browser):
    """Issue 26.6: a link pasted into the address bar of an open tab changes only TensorBoard's hash
    (a same-document navigation: no reload, no new iframe); the tab shows what the link names."""
    log = PageLog()
    page = open_page(browser, log, 1280, False)
    names = workers(tb)
    page.goto(link(tb, run=RUN, worker=names[0], view="overview"))
    frame = frame_of(page, "overview")
    assert "rank 0" in frame.locator('[data-testid="crumbs"]').text_content()
    # a mark in the iframe's window: gone if the iframe were loaded again
    frame.evaluate("() => { window.__pastedLinkMark = 1; }")
    page.goto(link(tb, run=RUN, worker=names[1], view="operators", **{"u.ops.q": "matmul"}))
    frame.wait_for_selector('[data-testid="panel-operators"]', timeout=30_000)
    assert frame.evaluate("() => window.__pastedLinkMark") == 1
    assert shown_view(frame) == "operators"
    assert "rank 1" in frame.locator('[data-testid="crumbs"]').text_content()
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == names[1]
    assert frame.locator('[data-testid="operators-search"]').input_value() == "matmul"
    # the tab's own hash and TensorBoard's agree on the pasted selection
    assert "worker=" + names[1] in frame.evaluate("() => location.hash")
    assert host_keys(page)["worker"] == names[1] and host_keys(page)["view"] == "operators"
    # Back returns to the view before the paste
    page.go_back()
    frame.wait_for_selector('[data-testid="panel-overview"]', timeout=30_000)
    assert "rank 0" in frame.locator('[data-testid="crumbs"]').text_content()
    page.context.close()
    assert log.console_errors == [] and log.page_errors == [], (log.console_errors, log.page_errors)


# ---------------------------------------------------------------- table state in the link


READ_ROWS = """() => Array.from(document.querySelectorAll('[data-testid="operator-table"] .vt-row'))
  .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
  .map((r) => r.querySelector('.vt-name').textContent)"""


def test_table_state_is_in_the_link(tb, browser):
    log = PageLog()
    page = open_page(browser, log, 1280, False)
    names = workers(tb)
    page.goto(link(tb, run=RUN, worker=names[1], view="operators"))
    frame = frame_of(page, "operators")
    grouping = frame.locator('[data-testid="operators-grouping"] button[data-value="shape"]')
    has_shapes = grouping.get_attribute("title") is None
    if has_shapes:
        grouping.click()
        frame.wait_for_function("() => location.hash.includes('u.ops.group=shape')")
    frame.locator('[data-testid="operators-search"]').fill("add")
    header = frame.locator('[data-testid="operator-table"] .vt-th.sortable').nth(1)
    col = header.get_attribute("data-col")
    header.click()
    frame.wait_for_function(
        "(c) => document.querySelector(`.vt-th[data-col='${c}']`).getAttribute('aria-sort') !== null", arg=col
    )
    sort_before = header.get_attribute("aria-sort")
    rows_before = frame.evaluate(READ_ROWS)
    assert rows_before
    keys = host_keys(page)
    assert keys.get("u.ops.q") == "add" and keys.get(
        f"u.dt.{'operators_by_shape' if has_shapes else 'operators'}.s", ""
    ).startswith(col + ":"), keys
    shared = page.url
    page.context.close()

    # Someone opens the link: the same filter, sort, grouping and rows.
    page = open_page(browser, log, 1280, False)
    page.goto(shared)
    frame = frame_of(page, "operators")
    assert frame.locator('[data-testid="operators-search"]').input_value() == "add"
    if has_shapes:
        assert (
            frame.locator('[data-testid="operators-grouping"] button[data-value="shape"]').get_attribute("aria-checked")
            == "true"
        )
    header = frame.locator(f'[data-testid="operator-table"] .vt-th[data-col="{col}"]')
    assert header.get_attribute("aria-sort") == sort_before
    frame.wait_for_function(
        "(n) => document.querySelectorAll('[data-testid=\"operator-table\"] .vt-row').length >= n",
        arg=min(len(rows_before), 1),
    )
    assert frame.evaluate(READ_ROWS) == rows_before
    page.context.close()
    assert log.console_errors == [] and log.page_errors == [], (log.console_errors, log.page_errors)


def test_kernels_grouping_is_in_the_link(tb, browser):
    log = PageLog()
    page = open_page(browser, log, 1440, False)
    status = json.loads(tb.get("/data/plugin/paddle_profile/status"))
    gpu = sorted({f["worker"] for f in status["files"] if f["run"] == GPU_RUN and f["state"] == "READY"})
    if not gpu:
        pytest.skip("the trace set gpu-synthetic-2rank is not here")
    page.goto(link(tb, run=GPU_RUN, worker=gpu[-1], view="kernels"))
    frame = frame_of(page, "kernels")
    frame.locator('[data-testid="kernels-grouping"] button[data-value="operator"]').click()
    frame.wait_for_function("() => location.hash.includes('u.kernels.group=operator')")
    assert host_keys(page).get("u.kernels.group") == "operator"
    shared = page.url
    page.context.close()

    page = open_page(browser, log, 1440, False)
    page.goto(shared)
    frame = frame_of(page, "kernels")
    button = frame.locator('[data-testid="kernels-grouping"] button[data-value="operator"]')
    assert button.get_attribute("aria-checked") == "true"
    assert "per launching operator" in frame.locator('[data-testid="panel-kernels"]').inner_text()
    # back to the default: the key leaves the link
    frame.locator('[data-testid="kernels-grouping"] button[data-value="kernel"]').click()
    frame.wait_for_function("() => !location.hash.includes('u.kernels.group=')")
    page.context.close()
    assert log.console_errors == [] and log.page_errors == [], (log.console_errors, log.page_errors)


# ---------------------------------------------------------------- no console errors


@pytest.mark.parametrize("width,dark", [(1280, True), (1440, False)], ids=["1280-dark", "1440-light"])
def test_no_console_error_with_a_broken_file(tb, browser, width, dark):
    log = PageLog()
    page = open_page(browser, log, width, dark)
    for run, worker in [(RUN, workers(tb)[-1]), (RUN, BROKEN_WORKER), (BROKEN_RUN, "rank0")]:
        page.goto(link(tb, run=run, worker=worker, view="overview"))
        frame = frame_of(page)
        for view in VIEWS:
            frame.locator(f'.views .view[data-view="{view}"]').click()
            frame.wait_for_function("(v) => document.querySelector('.views .view.on')?.dataset.view === v", arg=view)
            frame.wait_for_timeout(400)
            if run == RUN and worker == BROKEN_WORKER and view == "distributed":
                page.screenshot(path=str(SHOTS / f"conventions-broken-distributed-{width}.png"))
        if worker == BROKEN_WORKER:
            errors = frame.locator('[data-testid="file-error"]')
            assert errors.count() >= 1 and "rank7" in frame.locator('[data-testid="files"]').text_content()
    page.context.close()
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
