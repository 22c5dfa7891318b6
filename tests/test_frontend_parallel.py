"""The hybrid-parallel section of the Distributed view in a real browser (Debian's Chromium driven by
Playwright) against a real ``tensorboard`` serving a generated 8-rank DP2 × MP2 × PP2 run with a slow
rank and the example ``gpt-2rank`` run.

What the page shows is compared with ``tb-paddle-profile distributed RUN_DIR --format json``, run here on
the very folder TensorBoard serves, formatted with the CLI's own text helpers: the straggler verdict names
the same rank, every per-rank, per-kind, wait, pipeline and heatmap number equals the CLI's, the advice
items carry their thresholds, the heatmaps and the step breakdown are drawn, and clicking a rank opens its
overview. The page must log no console error and make no request outside 127.0.0.1.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import ran
from browser_util import (
    REPO,
    PageLog,
    chromium_missing_reason,
    new_page,
    read_simple_table,
    read_virtual_table,
    save_screenshot,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]

_missing = chromium_missing_reason()
if _missing:
    pytest.skip(f"browser tests need Chromium: {_missing}", allow_module_level=True)

from google.protobuf import json_format  # noqa: E402

from tb_paddle_profile.analysis.collectives import KIND_LABELS  # noqa: E402
from tb_paddle_profile.render.parallel_text import _bytes, _pct, fill_times  # noqa: E402
from tb_paddle_profile.render.text import format_time  # noqa: E402
from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402
from tb_paddle_profile.v1 import summary_pb2  # noqa: E402

EXAMPLE_2RANK = REPO / "examples" / "profiler_log" / "gpt-2rank"
SYNTH = "synth-dp2mp2pp2"
GPT = "gpt-2rank"
SLOW_RANK = 5


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("parallel_logdir")
    subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile.synth", "--dp", "2", "--mp", "2", "--pp", "2", "--steps", "3",
         "--layers", "2", "--micro-batches", "2", "--slow-rank", str(SLOW_RANK), "--slow-factor", "1.5",
         "--out", str(root / SYNTH)],
        check=True, capture_output=True, text=True, cwd=str(REPO),
    )
    if EXAMPLE_2RANK.is_dir():
        for trace in EXAMPLE_2RANK.glob("*.paddle_trace.json"):
            (root / GPT).mkdir(exist_ok=True)
            shutil.copyfile(trace, root / GPT / trace.name)
    return root


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    work = tmp_path_factory.mktemp("parallel_tb")
    with tensorboard(logdir, work) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def page_and_log(browser, request):
    """A fresh page; after the test, no console error, no page error and no request outside 127.0.0.1."""
    log = PageLog()
    page = new_page(browser, log, width=1440, height=1000)
    yield page, log
    page.context.close()
    if not ran(request):  # skipped (its data is not here): nothing was asked of the page
        return
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
    assert log.outside_requests() == [], log.outside_requests()
    assert any("/data/plugin/paddle_profile/parallel?" in u for u in log.requests), "the page never asked for the analysis"


@functools.lru_cache(maxsize=None)
def cli_parallel(run_dir: str) -> plugin_pb2.RunParallel:
    """What `tb-paddle-profile distributed RUN_DIR --format json` prints, as the protobuf it describes."""
    out = subprocess.run([sys.executable, "-m", "tb_paddle_profile", "distributed", run_dir, "--format", "json"],
                         capture_output=True, text=True, check=True, cwd=str(REPO))
    return json_format.Parse(out.stdout, plugin_pb2.RunParallel())


def open_distributed(page, tb, run: str, unit: str):
    keys = {"run": run, "worker": "rank0", "span": "0", "unit": unit, "view": "distributed"}
    page.goto(f"{tb.url}/#paddle_profile&" + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()))
    handle = page.wait_for_selector('iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000)
    frame = handle.content_frame()
    try:
        frame.wait_for_selector('[data-testid="par-ranks"]', timeout=60_000)
    except Exception as err:
        shown = frame.evaluate("() => document.body.innerText.slice(0, 3000)")
        raise AssertionError(f"the hybrid-parallel section did not appear; the plugin showed:\n{shown}") from err
    return frame


# ---------------------------------------------------------------- what the CLI prints, cell by cell


def label(r) -> str:
    """The rank's one label: the analysis's, else what the worker name tells (rank, then the name)."""
    if r.label:
        return r.label
    return f"rank {r.rank}" if r.worker == f"rank{r.rank}" else f"rank {r.rank} · {r.worker}"


def ranks_text(ranks) -> str:
    """Up to 16 ranks listed; more as ranges of consecutive numbers ("0-127,256-383")."""
    ranks = sorted(ranks)
    if not ranks:
        return "-"
    if len(ranks) <= 16:
        return ",".join(map(str, ranks))
    out, a, b = [], ranks[0], ranks[0]
    for x in ranks[1:] + [None]:
        if x is not None and x == b + 1:
            b = x
            continue
        out.append(str(a) if a == b else f"{a}-{b}")
        if x is not None:
            a = b = x
    return ",".join(out)


def expected_ranks(rp, unit):
    t = lambda ns: format_time(ns, unit)  # noqa: E731
    rows = []
    for r in rp.ranks:
        share = (lambda ns: _pct(ns / r.step_time_ns) if r.step_time_ns else "-")  # noqa: E731
        rows.append({"name": label(r), "rank": str(r.rank), "steps": str(r.steps), "step": t(r.step_time_ns),
                     "compute": t(r.compute_ns), "exposed": t(r.exposed_communication_ns),
                     "exposed_share": share(r.exposed_communication_ns), "hidden": t(r.hidden_communication_ns),
                     "memcpy": t(r.exposed_memory_ns), "idle": t(r.idle_ns),
                     "timeline": "host" if r.timeline == summary_pb2.TIMELINE_HOST else "GPU"})
    return rows


def expected_host(rp, unit):
    t = lambda ns: format_time(ns, unit)  # noqa: E731
    return [{"name": label(r), "rank": str(r.rank), "runtime": t(r.runtime_ns),
             "runtime_share": _pct(r.runtime_ns / r.step_time_ns) if r.step_time_ns else "-",
             "launches": str(r.launches), "sync": t(r.sync_ns), "kernel": t(r.kernel_ns)} for r in rp.ranks]


def expected_waits(rp, unit):
    t = lambda ns: format_time(ns, unit)  # noqa: E731
    return [{"name": label(r), "rank": str(r.rank), "waited": t(r.wait_ns), "caused": t(r.caused_wait_ns),
             "last": f"{r.last_arrivals}/{r.matched}", "compute": t(r.compute_ns),
             "peer_compute": t(r.peer_compute_ns) if r.peers else "-", "peers": ranks_text(r.peers)}
            for r in rp.ranks]


def expected_kinds(rp, unit):
    t = lambda ns: format_time(ns, unit)  # noqa: E731
    return [{"kind": KIND_LABELS.get(k.kind, "other"), "calls": str(k.calls), "device": t(k.device_ns),
             "host": t(k.host_ns), "exposed": t(k.exposed_ns), "matched": str(k.matched), "wait": t(k.wait_ns),
             "transfer": t(k.transfer_ns), "bytes": _bytes(k.bytes), "ranks": ranks_text(k.ranks)}
            for k in rp.kinds]


def expected_rank_kinds(rp, unit):
    t = lambda ns: format_time(ns, unit)  # noqa: E731
    rows = []
    for r in rp.ranks:
        n = max(1, r.steps)
        for k in r.kinds:
            rows.append({"name": KIND_LABELS.get(k.kind, "other"), "rank": str(r.rank), "calls": f"{k.calls / n:.1f}",
                         "device": t(k.device_ns / n), "exposed": t(k.exposed_ns / n), "wait": t(k.wait_ns / n),
                         "matched": f"{k.matched}/{k.calls}"})
    return rows


def expected_stages(rp, unit):
    t = lambda ns: format_time(ns, unit)  # noqa: E731
    return [{"stage": str(s.stage), "ranks": ranks_text(s.ranks), "step": t(s.step_time_ns),
             "compute": t(s.compute_ns), "bubble": t(s.bubble_ns), "ratio": _pct(s.bubble_ratio)}
            for s in rp.pipeline.stages]


def expected_matrix(rp, matrix, unit):
    n = len(rp.steps)
    rows = []
    for i, r in enumerate(rp.ranks):
        row = {"name": label(r), "rank": str(r.rank)}
        for j, s in enumerate(rp.steps):
            v = matrix.values_ns[i * n + j]
            row[f"s{s}"] = format_time(v, unit) if v >= 0 else "-"
        rows.append(row)
    return rows


def cells(rows):
    return [{k: v for k, v in r.items() if k != "_key"} for r in rows]


def virtual_cells(frame, test_id):
    """Every row of a virtualised per-rank table (scrolled through): its name column and its cells."""
    return [{"name": r["name"], **r["cells"]} for r in read_virtual_table(frame, test_id)]


def trigger_text(value, unit):
    return _pct(value) if "fraction" in unit else f"{value:g}"


CANVAS_INK = """(testId) => {
  const canvas = document.querySelector(`[data-testid="${testId}"] canvas`);
  if (!canvas) return -1;
  const ctx = canvas.getContext("2d");
  const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
  let ink = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && (data[i] < 235 || data[i + 1] < 235 || data[i + 2] < 235)) ink++;
  return ink;
}"""


def check_against_cli(frame, rp, unit):
    """Every number of the section against the CLI's RunParallel, formatted as the CLI formats it."""
    assert virtual_cells(frame, "par-ranks") == expected_ranks(rp, unit)
    assert virtual_cells(frame, "par-waits") == expected_waits(rp, unit)
    if not all(r.timeline == summary_pb2.TIMELINE_HOST for r in rp.ranks):
        assert virtual_cells(frame, "par-host") == expected_host(rp, unit)
    assert cells(read_simple_table(frame, "par-kinds")) == expected_kinds(rp, unit)
    assert virtual_cells(frame, "par-rank-kinds") == expected_rank_kinds(rp, unit)
    if rp.pipeline.stages:
        assert cells(read_simple_table(frame, "par-stages")) == expected_stages(rp, unit)

    # Verdict: the CLI's summary line (its times in the page's unit, as `--time-unit` prints them), the
    # same ranks, the CLI's thresholds sentence; above every chart and table (summary first).
    v = rp.straggler
    sentences = v.summary + "".join(s.reason for s in v.stragglers) + "".join(a.text for a in rp.advice)
    assert "{ns:" in sentences and "{ns:" not in fill_times(sentences, unit)
    assert frame.inner_text('[data-testid="par-verdict-summary"]').strip() == fill_times(v.summary, unit)
    tops = frame.evaluate("""() => ['par-verdict', 'dist-steps-card', 'dist-table-card', 'par-breakdown-card']
        .map((id) => document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect().top)""")
    assert tops == sorted(tops) and tops[0] < tops[1], tops
    assert frame.get_attribute('[data-testid="par-verdict"]', "data-uncertain") == ("1" if v.uncertain else "0")
    if v.uncertain:  # said plainly, in the card's head
        assert "Uncertain" in frame.inner_text('[data-testid="par-uncertain"]')
    if rp.matching.instances:
        coverage = v.coverage if (v.coverage or v.min_rank_coverage) else rp.matching.matched_instances / rp.matching.instances
        assert frame.inner_text('[data-testid="par-coverage"]').startswith(f"coverage {_pct(coverage)}")
    shown = [int(x) for x in frame.eval_on_selector_all('[data-testid="par-straggler"]', "els => els.map(e => e.dataset.rank)")]
    assert shown == [s.rank for s in v.stragglers][:3]
    reasons = frame.eval_on_selector_all('[data-testid="par-straggler"] .par-reason', "els => els.map(e => e.textContent)")
    assert reasons == [fill_times(s.reason, unit) for s in v.stragglers][:3]
    assert v.rule and frame.inner_text('[data-testid="par-verdict-rule"]') == f"({v.rule})"

    # Advice: the CLI's rules in its order, each trigger with its value and threshold.
    if rp.advice:
        rules = frame.eval_on_selector_all('[data-testid="par-advice"] > li', "els => els.map(e => e.dataset.rule)")
        assert rules == [a.rule for a in rp.advice]
        triggers = frame.eval_on_selector_all(
            '[data-testid="par-trigger"]', "els => els.map(e => [e.dataset.metric, e.dataset.value, e.dataset.threshold, e.textContent])")
        want = [(tr.metric, trigger_text(tr.value, tr.unit), trigger_text(tr.threshold, tr.unit),
                 "all ranks" if tr.rank < 0 else f"rank {tr.rank}") for a in rp.advice for tr in a.triggers]
        assert [tuple(t[:3]) for t in triggers] == [w[:3] for w in want]
        for (metric, value, threshold, who), t in zip(want, triggers):
            assert t[3] == f"{metric} ({who}){value}≥ threshold{threshold}"
        texts = frame.eval_on_selector_all('[data-testid="par-advice"] .par-advice-text', "els => els.map(e => e.textContent)")
        assert texts == [fill_times(a.text, unit) for a in rp.advice]
    else:
        assert frame.locator('[data-testid="par-advice-none"]').count() == 1

    # Heatmaps: drawn (ink on the canvas), and as tables equal to the CLI's rank × step tables.
    for test_id, matrix in (("par-heat-step", rp.step_time), ("par-heat-exposed", rp.exposed_communication)):
        frame.wait_for_selector(f'[data-testid="{test_id}"][data-drawn]')
        assert frame.evaluate(CANVAS_INK, test_id) > 500, f"{test_id} looks empty"
        frame.click(f'[data-testid="{test_id}-mode"] button[data-value="table"]')
        assert virtual_cells(frame, f"{test_id}-table") == expected_matrix(rp, matrix, unit)
        frame.click(f'[data-testid="{test_id}-mode"] button[data-value="heatmap"]')
        frame.wait_for_selector(f'[data-testid="{test_id}"][data-drawn]')

    # The rank × step breakdown (reads every rank's summary) is drawn.
    frame.wait_for_selector('[data-testid="par-breakdown-chart"][data-drawn]', timeout=30_000)
    assert frame.evaluate(CANVAS_INK, "par-breakdown-chart") > 500


# ---------------------------------------------------------------- tests


def test_parallel_synth_names_the_slow_rank_and_shows_the_cli_numbers(tb, logdir, page_and_log):
    page, _ = page_and_log
    unit = "ms"
    rp = cli_parallel(str(logdir / SYNTH))
    assert [s.rank for s in rp.straggler.stragglers] == [SLOW_RANK], rp.straggler.summary  # what the generator planted
    frame = open_distributed(page, tb, SYNTH, unit)
    check_against_cli(frame, rp, unit)
    assert f"rank {SLOW_RANK}" in frame.inner_text('[data-testid="par-verdict-summary"]')
    assert frame.locator('[data-testid="par-pipeline-card"] [data-testid="par-stages"]').count() == 1

    # The other views of the breakdown card draw too.
    for mode in ("mean", "waits", "steps"):
        frame.click(f'[data-testid="par-breakdown-mode"] button[data-value="{mode}"]')
        frame.wait_for_selector('[data-testid="par-breakdown-chart"][data-drawn]')
        assert frame.evaluate(CANVAS_INK, "par-breakdown-chart") > 500

    # Screenshots: the summary (verdict, findings, outliers, grid) at the top, and the details section.
    page.set_viewport_size({"width": 1440, "height": 1640})
    frame.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(300)
    save_screenshot(page, "parallel-summary")
    frame.evaluate("() => document.getElementById('tbpp-parallel').scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    path = save_screenshot(page, "parallel")
    assert path.stat().st_size > 10_000

    # Clicking the straggler opens its overview.
    frame.click('[data-testid="par-straggler-open"]')
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == f"rank{SLOW_RANK}"
    frame.wait_for_function("(w) => location.hash.includes('worker=' + w)", arg=f"rank{SLOW_RANK}")


def test_parallel_gpt_2rank_in_us_and_open_a_rank(tb, logdir, page_and_log):
    if not (logdir / GPT).is_dir():
        pytest.skip("examples/profiler_log/gpt-2rank is not here")
    page, _ = page_and_log
    unit = "us"
    rp = cli_parallel(str(logdir / GPT))
    frame = open_distributed(page, tb, GPT, unit)
    check_against_cli(frame, rp, unit)

    # Clicking a rank's row opens its overview.
    last = rp.ranks[-1].worker
    frame.click(f'[data-testid="par-waits"] .vt-row[data-id="{last}"]')
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == last


def test_parallel_switches_unit_and_back(tb, logdir, page_and_log):
    """Changing the time unit reformats every table like `--time-unit` does."""
    page, _ = page_and_log
    rp = cli_parallel(str(logdir / SYNTH))
    frame = open_distributed(page, tb, SYNTH, "ms")
    frame.click('[data-testid="select-unit"] button[data-value="us"]')
    frame.wait_for_function("() => location.hash.includes('unit=us')")
    assert virtual_cells(frame, "par-ranks") == expected_ranks(rp, "us")
    assert cells(read_simple_table(frame, "par-kinds")) == expected_kinds(rp, "us")
    # ... and the sentences: the verdict's and the straggler's times now in us
    v = rp.straggler
    assert frame.inner_text('[data-testid="par-verdict-summary"]').strip() == fill_times(v.summary, "us")
    reasons = frame.eval_on_selector_all('[data-testid="par-straggler"] .par-reason', "els => els.map(e => e.textContent)")
    assert reasons == [fill_times(s.reason, "us") for s in v.stragglers] and " us" in reasons[0]


def test_a_rewritten_rank_refreshes_the_analysis(browser, tmp_path):
    """A run's traces rewritten in place (a new profile under the same names) while the Distributed
    view is open: the page picks up the new files on its next poll of the run list and shows the
    new analysis (the slow rank moves from 1 to 0), not the one it had cached for the old files."""
    def generate(slow: int, out: Path) -> list:
        subprocess.run(
            [sys.executable, "-m", "tb_paddle_profile.synth", "--dp", "2", "--mp", "1", "--pp", "1", "--steps", "3",
             "--layers", "2", "--micro-batches", "2", "--slow-rank", str(slow), "--slow-factor", "1.6",
             "--out", str(out)],
            check=True, capture_output=True, text=True, cwd=str(REPO))
        return sorted(out.glob("*.paddle_trace.json"))

    logdir = tmp_path / "logdir"
    old = generate(1, logdir / "rw")
    new = generate(0, tmp_path / "next")
    assert [p.name[:5] for p in old] == [p.name[:5] for p in new] == ["rank0", "rank1"]
    log = PageLog()
    with tensorboard(logdir, tmp_path, extra_env={"TB_PADDLE_PROFILE_RESCAN_S": "1"}) as server:
        wait_all_loaded(server)
        page = new_page(browser, log, width=1440, height=1000)
        try:
            frame = open_distributed(page, server, "rw", "ms")
            frame.wait_for_function(
                "() => (document.querySelector('[data-testid=\"par-verdict-summary\"]') || {}).innerText?.includes('rank 1')",
                timeout=30_000)
            sizes = [p.stat().st_size for p in old]
            for src, dst in zip(new, old):
                shutil.copyfile(src, dst)
            assert [p.stat().st_size for p in old] != sizes
            frame.wait_for_function(
                "() => (document.querySelector('[data-testid=\"par-verdict-summary\"]') || {}).innerText?.includes('rank 0')",
                timeout=90_000)
            assert "rank 1" not in frame.inner_text('[data-testid="par-verdict-summary"]')
        finally:
            page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
    assert log.outside_requests() == []


def test_host_clocks_are_shown_with_their_spread(browser, tmp_path):
    """Two hosts whose clocks disagree by milliseconds (Paddle's default worker names): the Distributed
    view lists each host's estimated offset with its spread and samples, the numbers the route sends and
    the CLI prints, in the page's unit."""
    logdir = tmp_path / "logdir"
    subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile.synth", "--dp", "2", "--mp", "2", "--pp", "1", "--steps", "2",
         "--layers", "1", "--micro-batches", "1", "--names", "default", "--gpus-per-node", "2",
         "--clock-skew-us", "3000", "--out", str(logdir / "skew")],
        check=True, capture_output=True, text=True, cwd=str(REPO))
    log = PageLog()
    with tensorboard(logdir, tmp_path) as server:
        wait_all_loaded(server)
        body = server.get("/data/plugin/paddle_profile/parallel?run=skew&span=0&format=json", timeout=120)
        rp = json_format.Parse(body, plugin_pb2.RunParallel(), ignore_unknown_fields=True)
        assert len(rp.clocks) == 2 and sum(c.reference for c in rp.clocks) == 1
        assert max(abs(c.offset_ns) for c in rp.clocks) > 100_000  # the planted skew (ms) was found
        page = new_page(browser, log, width=1280, height=1000)
        try:
            frame = open_distributed(page, server, "skew", "us")
            frame.wait_for_selector('[data-testid="par-clocks"]', timeout=60_000)
            rows = [{k: v for k, v in r.items() if k in ("host", "offset", "spread", "samples")}
                    for r in read_simple_table(frame, "par-clocks")]
            assert rows == [{"host": c.hostname + (" (reference)" if c.reference else ""),
                             "offset": format_time(c.offset_ns, "us"), "spread": format_time(c.spread_ns, "us"),
                             "samples": str(c.samples)} for c in rp.clocks]
        finally:
            page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
