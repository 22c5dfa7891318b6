"""Benchmark of the Paddle Profile tab in a real browser (Debian's Chromium, headless, via Playwright).

Reports, as a markdown table:
- overview of a cached run: from loading TensorBoard on the tab (a shared link) to the drawn Overview
  (charts drawn, tables filled), with every summary already in the cache of a freshly started TensorBoard;
  also the tab's own part: from the creation of the plugin's iframe (TensorBoard's app loaded) to the
  drawn Overview — what a user waits for when switching to the tab in an open TensorBoard;
- a 10,000-operator trace (written here in Paddle's Chrome-tracing layout and parsed by the real engine):
  time to the drawn Operators panel, frame rate and slowest frames while the table scrolls for a few
  seconds, and the time to sort and to search the 10,000 rows.

Usage: python bench/bench_frontend.py [--repeat N] [--ops N] [--scroll-seconds S]
Needs /usr/bin/chromium (or $TBPP_CHROMIUM) and the playwright Python package. No assertions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from support.browser_util import (  # noqa: E402
    PageLog,
    chromium_missing_reason,
    launch_browser,
    new_page,
    tensorboard,
    wait_all_loaded,
)

SHARED = REPO / "tests" / "data" / "traces" / "gpu-synthetic-2rank"
EXAMPLE = REPO / "examples" / "profiler_log" / "gpt-2rank"


def write_wide_trace(path: Path, n_ops: int) -> None:
    """One step of `n_ops` distinct operators, each with an inner event, in Paddle 3.3.1's layout."""
    pid, tid = 4242, 4242
    origin_us = 1_795_937_000_000_000
    step_us = n_ops * 10 + 10

    def event(name: str, cat: str, start_us: float, dur_us: float, thread: str, extra=None) -> dict:
        args = {"start_time": f"{start_us:.3f} us", "end_time": f"{start_us + dur_us:.3f} us"}
        args.update(extra or {})
        return {
            "name": f"{name}[{dur_us:.3f} us]",
            "pid": pid,
            "tid": f"{tid}({thread})",
            "ts": origin_us + int(start_us),
            "dur": dur_us,
            "ph": "X",
            "cat": cat,
            "cname": "thread_state_runnable",
            "args": args,
        }

    events = [event("ProfileStep#1", "ProfileStep", 0.0, float(step_us), "Python")]
    for i in range(n_ops):
        start = 5.0 + i * 10
        dur = 4.0 + (i * 7919 % 50) / 10  # distinct times, so sorting has work to do
        events.append(
            event(
                f"op{i:05d} dygraph",
                "Operator",
                start,
                dur,
                "C++",
                {"input_shapes": {}, "input_dtypes": {}, "callstack": ""},
            )
        )
        events.append(event(f"op{i:05d} infer_meta", "OperatorInner", start + 0.5, 1.0, "C++"))
    events.append({})
    trace = {
        "displayTimeUnit": "ms",
        "schemaVersion": "1.0.2",
        "span_index": "0",
        "traceEvents": events,
        "ExtraInfo": {
            str(tid): "MainThread",
            "Process Cpu Utilization": "1.000000",
            "System Cpu Utilization": "0.500000",
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(trace, indent=1))


def link(url: str, **keys: str) -> str:
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    return f"{url}/#{'&'.join(parts)}"


def plugin_frame(page):
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=120_000
    )
    return handle.content_frame()


OVERVIEW_DRAWN = (
    '[data-testid="overview-cpu-chart"][data-drawn]',
    '[data-testid="model-steps-chart"][data-drawn]',
    '[data-testid="dt-top-operators"]',
)

SCROLL_FPS = """async ([testId, seconds, speed]) => {
  const box = document.querySelector(`[data-testid="${testId}"]`);
  const max = box.scrollHeight - box.clientHeight;
  const frames = [];
  let last = performance.now();
  const end = last + seconds * 1000;
  let dir = 1;
  await new Promise((resolve) => {
    const tick = (now) => {
      frames.push(now - last);
      let next = box.scrollTop + dir * speed * (now - last);
      if (next >= max) { next = max; dir = -1; }
      if (next <= 0) { next = 0; dir = 1; }
      box.scrollTop = next;
      last = now;
      if (now < end) requestAnimationFrame(tick); else resolve();
    };
    requestAnimationFrame(tick);
  });
  frames.shift();
  frames.sort((a, b) => a - b);
  const mean = frames.reduce((a, b) => a + b, 0) / frames.length;
  return { frames: frames.length, fps: 1000 / mean, p95: frames[Math.floor(frames.length * 0.95)], max: frames[frames.length - 1],
           rows: Number(box.dataset.rows), rendered: box.querySelectorAll('.vt-row').length };
}"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--scroll-seconds", type=float, default=4.0)
    args = parser.parse_args(argv)
    missing = chromium_missing_reason()
    if missing:
        sys.exit(f"cannot run: {missing}")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="tbpp_bench_fe_") as tmp:
        root = Path(tmp)
        logdir = root / "logdir"
        source = SHARED if SHARED.is_dir() else EXAMPLE
        if not source.is_dir():
            sys.exit("no trace to open: neither the shared GPU traces nor examples/profiler_log/gpt-2rank are here")
        run = "cached"
        for trace in source.glob("*.paddle_trace.json"):
            (logdir / run).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, logdir / run / trace.name)
        worker = sorted(p.name.split("_time_")[0] for p in (logdir / run).glob("*.paddle_trace.json"))[0]
        # The example runs too: a logdir with a few runs, as a user would open.
        for trace in EXAMPLE.parent.rglob("*.paddle_trace.json"):
            dst = logdir / "examples" / trace.relative_to(EXAMPLE.parent)
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, dst)
        write_wide_trace(logdir / "wide" / "rank0_time_2026_11_29_00_00_00_000000.paddle_trace.json", args.ops)
        work = root / "work"
        work.mkdir()

        # First start: parse everything into the cache. Second start: the same cache, nothing to parse.
        with tensorboard(logdir, work) as tb:
            t0 = time.perf_counter()
            wait_all_loaded(tb, timeout=600)
            parse_s = time.perf_counter() - t0
        rows = []
        with tensorboard(logdir, work) as tb, sync_playwright() as p:
            status = wait_all_loaded(tb)
            cached = all(f["cached"] for f in status["files"])
            browser = launch_browser(p)
            opens, inside = [], []
            for _ in range(args.repeat):
                log = PageLog()
                page = new_page(browser, log)
                t0 = time.perf_counter()
                page.goto(link(tb.url, run=run, worker=worker, span="0", unit="ms", view="overview"))
                frame = plugin_frame(page)
                for sel in OVERVIEW_DRAWN:
                    frame.wait_for_selector(sel, timeout=120_000)
                opens.append(time.perf_counter() - t0)
                inside.append(frame.evaluate("performance.now()") / 1000)
                page.context.close()

            log = PageLog()
            page = new_page(browser, log, height=1200)
            t0 = time.perf_counter()
            page.goto(link(tb.url, run="wide", worker="rank0", span="0", unit="us", view="operators"))
            frame = plugin_frame(page)
            frame.wait_for_selector('[data-testid="operator-table"] .vt-row', timeout=120_000)
            ops_open = time.perf_counter() - t0
            ops_inside = frame.evaluate("performance.now()") / 1000
            n_rows = int(frame.locator('[data-testid="operator-table"]').get_attribute("data-rows"))
            # px per ms: a steady wheel scroll, and a fling that shows new rows in every frame
            wheel = frame.evaluate(SCROLL_FPS, ["operator-table", args.scroll_seconds, 3])
            fling = frame.evaluate(SCROLL_FPS, ["operator-table", args.scroll_seconds, 40])

            def timed_ui(action, done_js):
                t = time.perf_counter()
                action()
                frame.wait_for_function(done_js, timeout=60_000)
                return time.perf_counter() - t

            sort_s = timed_ui(
                lambda: frame.click('[data-testid="operator-table"] .vt-th[data-col="cpu_max_ns"]'),
                "() => document.querySelector('[data-testid=operator-table] .vt-th.sorted')?.dataset.col === 'cpu_max_ns'",
            )
            search_s = timed_ui(
                lambda: frame.fill('[data-testid="operators-search"]', "op0999"),
                # 10 operators and the title row of their section ("Thread: All threads merged")
                "() => document.querySelector('[data-testid=operator-table]').dataset.rows === '11'",
            )
            browser.close()

        def ms(v: float) -> str:
            return f"{v * 1000:.0f} ms"

        rows = [
            ("summaries parsed into the cache (first start, all files)", f"{parse_s:.2f} s"),
            ("summaries served from the cache on restart", "yes" if cached else "no"),
            (
                f"load TensorBoard on the tab → drawn Overview, cached run (median of {args.repeat})",
                ms(statistics.median(opens)),
            ),
            ("  fastest / slowest", f"{ms(min(opens))} / {ms(max(opens))}"),
            ("  of which the tab itself: its iframe created → drawn Overview (median)", ms(statistics.median(inside))),
            (f"load TensorBoard on the tab → drawn Operators, {n_rows:,} operators", ms(ops_open)),
            ("  of which the tab itself: iframe created → drawn table", ms(ops_inside)),
            (
                f"scroll the {n_rows:,}-row table at 3,000 px/s for {args.scroll_seconds:g} s: frames per second",
                f"{wheel['fps']:.1f}",
            ),
            ("  95th percentile / slowest frame", f"{wheel['p95']:.1f} ms / {wheel['max']:.1f} ms"),
            ("fling at 40,000 px/s (all rows new in every frame): frames per second", f"{fling['fps']:.1f}"),
            ("  95th percentile / slowest frame", f"{fling['p95']:.1f} ms / {fling['max']:.1f} ms"),
            ("  rows in the DOM while scrolling", str(fling["rendered"])),
            (f"sort {n_rows:,} rows by CPU Max (click → drawn)", ms(sort_s)),
            (f"search {n_rows:,} rows (type → drawn)", ms(search_s)),
        ]
        print("| measure | value |")
        print("|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
        print()
        print(f"Headless Debian Chromium (software rendering), viewport 1440×1000; run `{run}` = {source.name}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
