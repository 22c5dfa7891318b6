"""Honest loading states, in a real TensorBoard and Debian's Chromium (docs/panels.md, "Loading states").

- A rank that failed (a real trace of tests' shared gpu-synthetic-2rank cut in half, old enough not to
  count as still being written) among good ones: the Parallel and Distributed answers are the analysis
  of the other rank, 200, with a "missing" sentence naming the failed rank and why; the panel shows it
  as a banner above the analysis. The good rank's numbers are Paddle's own (its printed summary).
- A large file (a generated 1M-event trace (hundreds of MB), so that its parse outlasts a page reload) while it is parsed: the sidebar shows its size and how
  long it has been parsing (the worker reports no byte progress, so no percentage).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from support.browser_util import PageLog, SHOTS, read_virtual_table, new_page, tensorboard, wait_all_loaded
from support.plugin_testlib import generate_rank


from test_frontend_panels import open_panel  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "traces" / "gpu-synthetic-2rank"
ROUTE = "/data/plugin/paddle_profile"


def _shot(page, name: str) -> None:
    """A full-page screenshot to look at, in browser_util.SHOTS (not committed)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _paddle_profile_step(rank: int):
    """(calls, total ms) of ProfileStep in Paddle's own printed overview of the rank."""
    text = (DATA / f"paddle_summary.rank{rank}.CPUTotal.ms.txt").read_text()
    m = re.search(r"^ProfileStep\s+(\d+)\s+([\d.]+)\s", text, re.M)
    assert m, "Paddle's table has no ProfileStep line"
    return int(m.group(1)), float(m.group(2))


def _truncated_run(logdir: Path) -> str:
    run = logdir / "cut"
    run.mkdir(parents=True)
    cut = ""
    for f in sorted(DATA.glob("*.paddle_trace.json")):
        data = f.read_bytes()
        if f.name.startswith("rank1"):
            data, cut = data[: len(data) // 2], f.name
        (run / f.name).write_bytes(data)
        old = time.time() - 3600  # not "still being written" (loader.DEFAULT_GROWING_S)
        os.utime(run / f.name, (old, old))
    return cut


def _get(tb, route: str):
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(tb.url + ROUTE + route, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def _missing_sentence(display: dict, view: str) -> str:
    (v,) = [x for x in display["views"] if x["key"] == view]
    first = v["sentences"][0]
    assert first["key"] == "missing" and first["level"] == "warning", first
    return "".join(s.get("text", "") for s in first["spans"])


def test_failed_rank_is_named_and_the_others_are_analysed(tmp_path, browser):
    logdir = tmp_path / "logdir"
    cut = _truncated_run(logdir)
    calls, total_ms = _paddle_profile_step(0)
    with tensorboard(logdir, tmp_path) as tb:
        status = wait_all_loaded(tb)
        states = sorted(f["state"] for f in status["files"])
        assert states == ["FAILED", "READY"], status["files"]

        code, dist = _get(tb, "/distributed?run=cut&span=0&format=json")
        assert code == 200, dist
        by_worker = {r["worker"]: r for r in dist["ranks"]}
        assert by_worker["rank1"]["state"] == "FAILED" and "truncated JSON" in by_worker["rank1"]["error"]
        assert by_worker["rank0"]["state"] == "READY"
        # the good rank's step total is Paddle's (its printed ProfileStep row)
        assert int(by_worker["rank0"]["totalTimeNs"]) / 1e6 == pytest.approx(total_ms, abs=0.005)
        text = _missing_sentence(dist["display"], "distributed")
        assert "rank 1" in text and cut in text and "truncated JSON" in text, text
        assert "covers the other 1 rank" in text, text

        code, par = _get(tb, "/parallel?run=cut&span=0&format=json")
        assert code == 200, par
        assert [r["worker"] for r in par["ranks"]] == ["rank0"]
        assert par["ranks"][0]["steps"] == calls  # Paddle's ProfileStep calls
        text = _missing_sentence(par["display"], "parallel")
        assert "rank 1" in text and "truncated JSON" in text, text

        for width in (1280, 1440):
            log = PageLog()
            page = new_page(browser, log, width=width)
            frame = open_panel(page, tb, "cut", "rank0", "distributed")
            banner = frame.wait_for_selector('[data-testid="missing-ranks"]', timeout=60_000)
            shown = banner.inner_text()
            assert "rank 1" in shown and "truncated JSON" in shown and "covers the other 1 rank" in shown, shown
            assert banner.is_visible()
            # the banner comes before the other ranks' verdict, not under a green banner far below
            top = frame.evaluate(
                "() => [document.querySelector('[data-testid=missing-ranks]').getBoundingClientRect().top,"
                " (document.querySelector('[data-testid=par-verdict]') || {getBoundingClientRect: () => ({top: 1e9})})"
                ".getBoundingClientRect().top]"
            )
            assert top[0] < top[1], top
            # the Parallel details repeat it where they start
            par_banner = frame.wait_for_selector('[data-testid="par-missing"]', timeout=60_000)
            assert "rank 1" in par_banner.inner_text()
            # no "still being parsed" / "comes once every rank is read" for a failed rank
            body = frame.evaluate("() => document.body.innerText")
            # (the loading notes: "waiting for N of M ranks", "waiting for <file> to load", "waiting for a rank
            # whose ..."; a GPU "waiting for the host's launches" is a column's description)
            assert "once every rank is read" not in body, body[:2000]
            assert not re.search(r"waiting for (\d+ of \d+ ranks|a rank\b|\S+\.paddle_trace)", body), body[:2000]
            # the good rank's row is there, with Paddle's step total
            frame.wait_for_selector('[data-testid="dist-ranks"]', timeout=60_000)
            rows = [r["cells"] for r in read_virtual_table(frame, "dist-ranks")]
            assert len(rows) == 2, rows  # both ranks listed, the failed one with its state
            good = [r for r in rows if r.get("rank") == "0"]
            assert good and good[0]["total_ns"] == f"{total_ms:.2f}", rows
            bad = [r for r in rows if r.get("rank") == "1"]
            assert bad and "FAILED" in bad[0]["state"].upper(), rows
            _shot(page, f"loading-missing-rank-{width}")
            assert not log.page_errors, log.page_errors
            page.context.close()


def test_rank_still_being_written_does_not_hold_back_the_others(tmp_path):
    """A rank cut in half and modified just now counts as still being written (GROWING), which may last
    minutes: the cross-rank views answer 200 for the other rank, name it as still being written, and are
    computed again once it is complete."""
    logdir = tmp_path / "logdir"
    cut = _truncated_run(logdir)
    os.utime(logdir / "cut" / cut, None)  # modified now: still being written, not broken
    with tensorboard(logdir, tmp_path) as tb:
        status = wait_all_loaded(tb)
        assert sorted(f["state"] for f in status["files"]) == ["GROWING", "READY"], status["files"]
        for route, view in (("parallel", "parallel"), ("distributed", "distributed")):
            code, body = _get(tb, f"/{route}?run=cut&span=0&format=json")
            assert code == 200, (route, body)
            text = _missing_sentence(body["display"], view)
            assert "rank 1" in text and "still being written" in text and cut in text, text
            assert "covers the other 1 rank" in text and "computed again" in text, text
        code, par = _get(tb, "/parallel?run=cut&span=0&format=json")
        assert [r["worker"] for r in par["ranks"]] == ["rank0"]
        # the writer finishes the file: the next answers cover both ranks, without the sentence
        (logdir / "cut" / cut).write_bytes((DATA / cut).read_bytes())
        deadline = time.monotonic() + 120
        while True:
            code, par = _get(tb, "/parallel?run=cut&span=0&format=json")
            if code == 200 and len(par["ranks"]) == 2:
                break
            assert time.monotonic() < deadline, (code, par if code != 200 else par["ranks"])
            time.sleep(0.5)
        (v,) = [x for x in par["display"]["views"] if x["key"] == "parallel"]
        assert all(s["key"] != "missing" for s in v.get("sentences", [])), v["sentences"][:2]


def test_large_file_shows_size_and_parsing_time(tmp_path, browser):
    logdir = tmp_path / "logdir"
    (logdir / "run").mkdir(parents=True)
    small = sorted(DATA.glob("rank0_*.paddle_trace.json"))[0]
    shutil.copy(small, logdir / "run" / small.name)
    big = generate_rank(tmp_path / "gen", events=1_000_000)
    size = big.stat().st_size
    staged = logdir.parent / "rank1_time_2026_11_29_00_00_01_000000.paddle_trace.json"
    shutil.move(str(big), staged)  # renamed into the run once the page is open (whole: never "growing")
    with tensorboard(logdir, tmp_path) as tb:
        wait_all_loaded(tb)
        log = PageLog()
        page = new_page(browser, log, width=1280)
        frame = open_panel(page, tb, "run", "rank0", "overview")
        os.replace(staged, logdir / "run" / staged.name)  # the next scan (5 s) finds it
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60:
            st = json.loads(tb.get(ROUTE + "/status"))
            if any(f["state"] == "LOADING" for f in st["files"]):
                break
            time.sleep(0.1)
        # the server says when the parse began (so a reload does not restart the count)
        runs = json.loads(tb.get(ROUTE + "/runs?format=json"))
        loading = [sp for r in runs["runs"] for w in r["workers"] for sp in w["spans"] if sp["state"] == "LOADING"]
        if loading:  # (unless it finished in between)
            since = float(loading[0]["loadingSinceUnixS"])
            assert time.time() - 120 < since <= time.time(), since
        # the page's run list is polled slowly once all is ready: a reload shows the file at once
        page.reload()
        handle = page.wait_for_selector(
            'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
        )
        frame = handle.content_frame()
        seen, states = [], set()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            got = frame.query_selector('[data-testid="file-progress"]')
            if got is not None:
                seen.append(got.inner_text())
                if len(seen) == 1:
                    _shot(page, "loading-progress-1280")
            status = json.loads(tb.get(ROUTE + "/status"))
            states = {f["state"] for f in status["files"]}
            if len(status["files"]) == 2 and states == {"READY"}:
                break
            time.sleep(0.2)
        assert states == {"READY"}, states
        assert seen, "the large file was never shown parsing"
        for text in seen:
            m = re.fullmatch(r"parsing (\d+) s · (.+)", text)
            assert m, seen
            # the file's size, humanised as the Python side does (display.cells.human_bytes)
            from tb_paddle_profile.present.display.cells import human_bytes

            assert m.group(2) == human_bytes(size), (text, size)
        secs = [int(re.match(r"parsing (\d+)", t).group(1)) for t in seen]
        assert secs == sorted(secs), secs  # the time only grows
        assert not log.page_errors, log.page_errors
        page.context.close()
