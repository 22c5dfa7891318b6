#!/usr/bin/env python3
"""Timeline benchmark: a generated 1M-event rank and an 8-rank run, served by a real TensorBoard and drawn
by headless Chromium (Playwright, /usr/bin/chromium).

    python bench/bench_timeline.py [--work DIR] [--events 1000000] [--rank-events 200000]

Prints a markdown table: index build time (first timeline request, cold), time to the first drawn
timeline (warm index, from navigation), bytes per window while zooming in (protobuf, before gzip), and
frames per second while zooming and panning with the keyboard (one key event per animation frame).
No assertions: numbers only.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.browser_util import PageLog, launch_browser, new_page, tensorboard, wait_all_loaded  # noqa: E402

PREFIX = "/data/plugin/paddle_profile"


def generate(out: Path, args: list) -> None:
    if out.is_dir() and any(out.glob("*.paddle_trace.json")):
        return
    subprocess.run(
        [sys.executable, "-m", "tbp_synth", "--out", str(out), *args],
        check=True,
        capture_output=True,
        cwd=str(Path(__file__).resolve().parents[1]),
    )


def cold_build(tb, run: str) -> float:
    t0 = time.perf_counter()
    while True:
        with urllib.request.urlopen(f"{tb.url}{PREFIX}/timeline?run={run}&span=0&px=1500", timeout=600) as r:
            if r.status == 200:
                return time.perf_counter() - t0
        time.sleep(0.1)


def browse(browser, tb, run: str) -> dict:
    log = PageLog()
    page = new_page(browser, log, 1600, 1000)
    from urllib.parse import quote

    keys = dict(run=run, worker="rank0", span="0", unit="ms", view="timeline")
    url = f"{tb.url}/#paddle_profile&" + "&".join(
        f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()
    )
    page.goto(url)
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=120_000
    )
    frame = handle.content_frame()
    frame.wait_for_function("() => window.__tbppTimeline && window.__tbppTimeline.firstDrawAt > 0", timeout=120_000)
    # both in epoch ms: the iframe's first frame with slices minus the top page's navigation start
    first_ms = frame.evaluate("() => performance.timeOrigin + window.__tbppTimeline.firstDrawAt") - page.evaluate(
        "() => performance.timeOrigin"
    )
    in_frame_ms = frame.evaluate("() => window.__tbppTimeline.firstDrawAt")  # since the plugin's iframe started
    sizes = [frame.evaluate("() => window.__tbppTimeline.lastBytes")]
    canvas = frame.locator('[data-testid="timeline-canvas"]')
    canvas.click(position={"x": 400, "y": 8})
    for _ in range(12):  # zoom in step by step; each settled window is one request
        before = frame.evaluate("() => window.__tbppTimeline.requests")
        for _ in range(3):
            canvas.press("w")
        try:
            frame.wait_for_function(
                f"() => window.__tbppTimeline.requests > {before} && "
                "window.__tbppTimeline.data().windowEnd >= window.__tbppTimeline.view().end",
                timeout=10_000,
            )
            frame.wait_for_timeout(150)
        except Exception:
            pass
        sizes.append(frame.evaluate("() => window.__tbppTimeline.lastBytes"))
    canvas.press("0")
    frame.wait_for_timeout(500)
    fps = frame.evaluate("""() => new Promise((done) => {
      const c = document.querySelector('[data-testid="timeline-canvas"]');
      const s = window.__tbppTimeline; const f0 = s.frames; const t0 = performance.now(); let i = 0;
      const keys = ['w','w','w','a','d','w','s','d','a','w'];
      const tick = () => {
        if (performance.now() - t0 > 4000) { done({ fps: (s.frames - f0) / ((performance.now() - t0) / 1000), drawMs: s.drawMs }); return; }
        c.dispatchEvent(new KeyboardEvent('keydown', { key: keys[i++ % keys.length], bubbles: true }));
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
    })""")
    page.context.close()
    return {
        "first_ms": first_ms,
        "in_frame_ms": in_frame_ms,
        "sizes": sizes,
        "fps": fps["fps"],
        "draw_ms": fps["drawMs"],
        "errors": log.console_errors + log.page_errors,
        "outside": log.outside_requests(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rank-events", type=int, default=200_000)
    a = ap.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="bench_timeline_"))
    logdir = work / "logdir"
    generate(
        logdir / "one-1m", ["--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--events-per-rank", str(a.events)]
    )
    generate(
        logdir / "eight-ranks",
        ["--dp", "2", "--mp", "2", "--pp", "2", "--steps", "4", "--events-per-rank", str(a.rank_events)],
    )
    rows = []
    from playwright.sync_api import sync_playwright

    with tensorboard(logdir, work, extra_env={"TB_PADDLE_PROFILE_CACHE": str(work / "cache")}) as tb:
        wait_all_loaded(tb, timeout=1800)
        builds = {run: cold_build(tb, run) for run in ("one-1m", "eight-ranks")}
        with sync_playwright() as p:
            browser = launch_browser(p)
            for run, label in (
                ("one-1m", f"1 rank, {a.events:,} events"),
                ("eight-ranks", f"8 ranks × {a.rank_events:,} events"),
            ):
                r = browse(browser, tb, run)
                rows.append((label, builds[run], r))
            browser.close()
    print(
        "| run | first timeline request (s; cold = index build) | first drawn timeline, warm index (ms from TensorBoard page load / from plugin iframe start) | bytes per window: median / max (KB) | fps zoom+pan | draw ms |"
    )
    print("|---|---|---|---|---|---|")
    for label, build, r in rows:
        sizes = [s for s in r["sizes"] if s]
        print(
            f"| {label} | {build:.1f} | {r['first_ms']:.0f} / {r['in_frame_ms']:.0f} | {statistics.median(sizes) / 1024:.0f} / {max(sizes) / 1024:.0f} | "
            f"{r['fps']:.0f} | {r['draw_ms']:.1f} |"
        )
    for label, _, r in rows:
        if r["errors"] or r["outside"]:
            print(f"\n{label}: console errors {r['errors'][:3]}, outside requests {r['outside'][:3]}")
    print(f"\n(work folder: {work.name})")


if __name__ == "__main__":
    main()
