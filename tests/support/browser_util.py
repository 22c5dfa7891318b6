"""Helpers for the browser tests and the frontend benchmark: a real TensorBoard process and Debian's Chromium.

Playwright drives the system Chromium (``/usr/bin/chromium``, or ``$TBPP_CHROMIUM``); it never downloads a
browser. Every request the page makes is recorded, so tests can check that none leaves 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, List, Optional
from urllib.parse import urlparse

from support.plugin_testlib import free_port, stop, wait_http

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CHROMIUM = os.environ.get("TBPP_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = REPO / "docs" / "screenshots"
# Screenshots made to look at (not committed): $TBP_SHOTS, else <the temp folder>/tbp-shots
SHOTS = Path(os.environ.get("TBP_SHOTS") or Path(tempfile.gettempdir()) / "tbp-shots")


def chromium_missing_reason() -> Optional[str]:
    """Why the browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


@dataclass
class TensorBoard:
    url: str
    process: subprocess.Popen
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str, timeout: float = 10.0) -> bytes:
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.read()


@contextlib.contextmanager
def tensorboard(
    logdir: Path, workdir: Path, extra_env: Optional[dict] = None, timeout: float = 90.0
) -> Iterator[TensorBoard]:
    """A real ``tensorboard`` on a free port of 127.0.0.1, serving ``logdir``; stopped on exit."""
    port = free_port()
    log_path = workdir / f"tensorboard-{port}.log"
    env = dict(os.environ)
    env.setdefault("TB_PADDLE_PROFILE_CACHE", str(workdir / "cache"))
    env.update(extra_env or {})
    cmd = [
        sys.executable,
        "-m",
        "tensorboard.main",
        "--logdir",
        str(logdir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--reload_interval",
        "5",
    ]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(workdir))
    tb = TensorBoard(f"http://127.0.0.1:{port}", proc, log_path)
    try:
        wait_http(tb.url + "/data/plugins_listing", proc, timeout)
        yield tb
    finally:
        stop(proc)


def wait_all_loaded(tb: TensorBoard, timeout: float = 120.0) -> dict:
    """Waits until no trace file is queued or loading; returns the status route's JSON."""
    deadline = time.monotonic() + timeout
    while True:
        status = json.loads(tb.get("/data/plugin/paddle_profile/status"))
        states = {f["state"] for f in status["files"]}
        if status["files"] and not states & {"QUEUED", "LOADING", "LOAD_STATE_UNSPECIFIED"}:
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"files still loading after {timeout:.0f} s: {status['counts']}")
        time.sleep(0.3)


@dataclass
class PageLog:
    """What a page did: every request URL, console errors, page errors."""

    requests: List[str] = field(default_factory=list)
    console_errors: List[str] = field(default_factory=list)
    page_errors: List[str] = field(default_factory=list)

    def outside_requests(self) -> List[str]:
        """Requests to anything but 127.0.0.1 (data: and blob: URLs stay inside the page)."""
        out = []
        for url in self.requests:
            u = urlparse(url)
            if u.scheme in ("data", "blob", "about"):
                continue
            if u.hostname != "127.0.0.1":
                out.append(url)
        return out


def checked_pages(browser, checked: bool):
    """A generator for a fixture: yields ``make(width, height=1000, **context_options)`` (a new context's page,
    logged); after the test (``checked()`` true: it ran), no page or console error and no request outside
    127.0.0.1 on any of them."""
    logs, opened = [], []

    def make(width: int, height: int = 1000, **options):
        log = PageLog()
        context = browser.new_context(viewport={"width": width, "height": height}, **options)
        page = context.new_page()
        context.on("request", lambda req: log.requests.append(req.url))
        page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda err: log.page_errors.append(str(err)))
        logs.append(log)
        opened.append(page)
        return page

    yield make
    for page in opened:
        page.context.close()
    if not checked():
        return
    for log in logs:
        assert log.page_errors == [], log.page_errors
        assert log.console_errors == [], log.console_errors
        assert log.outside_requests() == [], log.outside_requests()


def launch_browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)


def new_page(browser, log: PageLog, width: int = 1440, height: int = 1000):
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    page = context.new_page()
    context.on("request", lambda req: log.requests.append(req.url))
    page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda err: log.page_errors.append(str(err)))
    return page


def plugin_frame(page, tb: TensorBoard, hash_part: str = "", timeout: float = 60_000):
    """Opens TensorBoard on the Paddle Profile tab and returns the plugin's iframe (a Playwright Frame)."""
    page.goto(f"{tb.url}/#paddle_profile{hash_part}")
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', timeout=timeout, state="attached"
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=timeout)
    return frame


# ---------------------------------------------------------------- the plugin's main-thread tasks

# Issue 26: "no task over 200 ms". A task's wall time on this shared 2-core machine measures the load more
# than the page (a 7 ms task has taken 411 ms), so the limit is asserted on the CPU time the renderer's
# main thread spent in each of the plugin frame's long tasks (Chrome's trace: RunTask's thread time).
TASK_CPU_LIMIT_MS = 200
# Every frame records its own long tasks (the Long Tasks API, attribution "self"): durations in
# window.__tbppLong, [start, duration] in window.__tbppLongAt, from its first script on.
LONG_TASKS = """(() => { window.__tbppLong = []; window.__tbppLongAt = [];
  try { new PerformanceObserver((l) => { for (const e of l.getEntries()) if (e.name === "self") {
          window.__tbppLong.push(Math.round(e.duration)); window.__tbppLongAt.push([e.startTime, e.duration]); } })
          .observe({ type: "longtask", buffered: true }); } catch (e) {} })();"""
_TRACE_CATEGORIES = ["disabled-by-default-devtools.timeline", "blink.user_timing"]


class TaskClock:
    """The wall and CPU time of a frame's long tasks: the page's LONG_TASKS init script lists the frame's own
    tasks; Chrome's trace, started before the page is opened, gives each its main-thread CPU time (the
    RunTask starting where the task started, on the frame's clock put on the trace's by a performance mark)."""

    def __init__(self, browser, page):
        self.browser = browser
        page.context.add_init_script(LONG_TASKS)
        browser.start_tracing(page=page, categories=_TRACE_CATEGORIES)
        self.stopped = False

    def stop(self, frame) -> List[tuple]:
        """(wall ms, CPU ms) of each of the frame's long tasks so far, longest CPU first; ends the trace. A
        task the trace has no RunTask for counts its wall time as its CPU."""
        got = frame.evaluate("""() => { performance.mark('tbpp-clock');
            return { at: performance.getEntriesByName('tbpp-clock').pop().startTime, long: window.__tbppLongAt || [] }; }""")
        events = json.loads(self.browser.stop_tracing())["traceEvents"]
        self.stopped = True
        names = {
            (e["pid"], e["tid"]): e["args"]["name"]
            for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"
        }
        tasks = [
            e
            for e in events
            if e.get("name") == "RunTask" and e.get("ph") == "X" and names.get((e["pid"], e["tid"])) == "CrRendererMain"
        ]
        mark = next(e for e in events if e.get("name") == "tbpp-clock")
        origin = mark["ts"] - got["at"] * 1000  # the frame's time 0 on the trace's clock (us)
        out = []
        for start, wall in got["long"]:
            at = origin + start * 1000
            near = [e for e in tasks if abs(e["ts"] - at) < 1000]
            if not near:
                # the trace holds no task where this one began (seen once in a full run on a loaded
                # 2-core machine: a 51 ms task): its wall time stands for its CPU, an upper bound
                out.append((round(wall), round(wall)))
                continue
            task = max(near, key=lambda e: e.get("dur", 0))
            out.append((round(wall), round(task.get("tdur", task.get("dur", 0)) / 1000)))
        return sorted(out, key=lambda x: -x[1])

    def cancel(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.browser.stop_tracing()


def save_screenshot(target, name: str, max_kb: int = 300) -> Path:
    """A PNG of ``target`` (a page or a locator) in docs/screenshots/; fails if it is over ``max_kb``."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    target.screenshot(path=str(path))
    size_kb = path.stat().st_size / 1024
    assert size_kb < max_kb, f"{path.name} is {size_kb:.0f} KB; keep screenshots under {max_kb} KB"
    return path


# ---------------------------------------------------------------- reading the panels

_READ_SIMPLE = """(testId) => {
  const table = document.querySelector(`[data-testid="${testId}"]`);
  if (!table) return null;
  return Array.from(table.querySelectorAll("tbody tr")).map((tr) => {
    const row = { _key: tr.dataset.key || "" };
    for (const td of tr.querySelectorAll("td[data-col]")) row[td.dataset.col] = td.textContent;
    return row;
  });
}"""

_READ_VISIBLE = """(testId) => {
  const box = document.querySelector(`[data-testid="${testId}"]`);
  const rows = Array.from(box.querySelectorAll(".vt-row"));
  rows.sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index));  // DOM order is slot order
  return rows.map((r) => {
    const cells = {};
    for (const td of r.querySelectorAll(".vt-td[data-col]")) cells[td.dataset.col] = td.textContent;
    const detail = r.querySelector(".vt-detail");
    return { id: r.dataset.id, depth: Number(r.dataset.depth), name: r.querySelector(".vt-name").textContent,
             detail: detail ? detail.textContent : "", expandable: !!r.querySelector(".vt-toggle"), cells };
  });
}"""


def read_simple_table(frame, test_id: str) -> List[dict]:
    """Rows of a short table: {column key: text, "_key": row key}."""
    rows = frame.evaluate(_READ_SIMPLE, test_id)
    assert rows is not None, f"no table {test_id!r}"
    return rows


def read_virtual_table(frame, test_id: str) -> List[dict]:
    """Every row of a virtual-scrolling table, in order, scrolling through it (rows outside the view are not in the DOM);
    every column first shown (a table hides its last columns to fit its box)."""
    show_all_columns(frame, test_id)
    box = frame.locator(f'[data-testid="{test_id}"]')
    total = int(box.get_attribute("data-rows"))
    seen: dict = {}
    order: List[str] = []
    box.evaluate("(el) => { el.scrollTop = 0; }")
    for _ in range(10_000):
        frame.wait_for_timeout(30)
        for row in frame.evaluate(_READ_VISIBLE, test_id):
            if row["id"] not in seen:
                seen[row["id"]] = row
                order.append(row["id"])
        if len(order) >= total:
            break
        moved = box.evaluate(
            "(el) => { const before = el.scrollTop; el.scrollTop += el.clientHeight * 0.8; return el.scrollTop > before; }"
        )
        if not moved:
            break
    box.evaluate("(el) => { el.scrollTop = 0; }")
    rows = [seen[i] for i in order]
    assert len(rows) == total, f"read {len(rows)} of {total} rows of {test_id}"
    return rows


def copy_trace_sets(root: Path, runs) -> Path:
    """A logdir at ``root`` holding the committed trace sets named ``runs`` ("shared/<folder>"), copied
    (the tests never touch the repository's files); skips the test when none is there."""
    import shutil

    import pytest
    from support.paths import trace_folders

    for folder in trace_folders():
        if f"shared/{folder.name}" not in set(runs):
            continue
        for trace in folder.glob("*.paddle_trace.json"):
            dst = root / "shared" / folder.name / trace.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, dst)
    if not any(root.rglob("*.paddle_trace.json")):
        pytest.skip("the test traces are not here")
    return root


def show_all_columns(frame, test_id: str) -> None:
    """Every column of a DisplayTable shown (a table hides columns to fit its box, e.g. the Kernels table's
    launch configuration at 1,280 px): its Columns menu opened, each unchecked column checked, closed."""
    menu = frame.locator(f'[data-testid="{test_id}-columns"]')
    if not menu.count():
        return
    if not menu.is_visible():  # a table in a closed section: its boxes checked in the page, one at a time
        menu.evaluate("""async (m) => { for (let i = 0; i < 200; i++) {
          const box = m.querySelector('input[type=checkbox]:not(:checked)'); if (!box) return;
          box.click(); await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))); } }""")
        return
    menu.locator("summary").click()
    hidden = menu.locator("input[type=checkbox]:not(:checked)")
    while hidden.count():
        hidden.first.check()
    menu.locator("summary").click()


# ---------------------------------------------------------------- tables that run past their box

# Every table of the page whose columns end beyond its own box (it scrolls sideways: a column cut at the edge):
# a DisplayTable (.dt[data-table]: its last header against the box) and a plain table (.st-wrap: the table against
# the wrap, which scrolls). Each as {table, right, box}.
_PAST = """() => {
  const out = [];
  for (const dt of document.querySelectorAll('.dt[data-table]')) {
    if (!dt.offsetParent) continue;
    const box = dt.getBoundingClientRect().right;
    const right = Math.max(0, ...Array.from(dt.querySelectorAll('.vt-th'), (th) => th.getBoundingClientRect().right));
    if (right > box + 1) out.push({ table: dt.dataset.table, right, box });
  }
  for (const wrap of document.querySelectorAll('.st-wrap')) {
    const t = wrap.querySelector('table');
    if (!t || !wrap.offsetParent) continue;
    const box = wrap.getBoundingClientRect().right;
    const right = t.getBoundingClientRect().right;
    if (right > box + 1 || wrap.scrollWidth > wrap.clientWidth + 1) out.push({ table: t.dataset.testid || '', right, box });
  }
  return out;
}"""


def tables_past_the_box(frame) -> List[dict]:
    """The tables of the frame whose columns run past their box (none should, at 1,280 px and wider: columns are
    hidden to fit, wrapped or abbreviated); ``[]`` when every table fits."""
    return frame.evaluate(_PAST)
