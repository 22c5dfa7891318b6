"""The hybrid-parallel section of the Distributed view in a real browser (Debian's Chromium driven by
Playwright) against a real ``tensorboard`` serving a generated 8-rank DP2 × MP2 × PP2 run with a slow
rank and the example ``gpt-2rank`` run.

The panel draws RunParallel.display (the display model the `parallel` route sends, built in Python).
What the page shows is compared with two things we did not write in TypeScript:

* the Python formatter (tb_paddle_profile/present/display/cells.py) applied to the route's Display: every cell
  of every table of the view, and every sentence and note the panel shows, is the same string;
* the CLI: `tb-paddle-profile distributed RUN_DIR --time-unit X`, run here on the very folder TensorBoard
  serves: every row of every table the CLI prints is a line of its output, and every sentence it prints
  is in it (its lines wrapped at 100 columns);

and, on the generated run, the generator's planted slow rank is the one the verdict names. The heatmaps
and the step breakdown are drawn, clicking a rank opens its overview, and the page logs no console
error and makes no request outside 127.0.0.1.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import (
    REPO,
    PageLog,
    new_page,
    read_virtual_table,
    save_screenshot,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]


from google.protobuf import json_format  # noqa: E402

from tb_paddle_profile.present.display.cells import format_cell, sentence_text  # noqa: E402
from tb_paddle_profile.present.render.fit import short_label  # noqa: E402
from tb_paddle_profile.v1 import display_pb2  # noqa: E402
from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402

EXAMPLE_2RANK = REPO / "examples" / "profiler_log" / "gpt-2rank"
SYNTH = "synth-dp2mp2pp2"
GPT = "gpt-2rank"
SLOW_RANK = 5
from support.browser_util import SHOTS  # noqa: E402


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("parallel_logdir")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "2",
            "--pp",
            "2",
            "--steps",
            "3",
            "--layers",
            "2",
            "--micro-batches",
            "2",
            "--slow-rank",
            str(SLOW_RANK),
            "--slow-factor",
            "1.5",
            "--out",
            str(root / SYNTH),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
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
    assert any("/data/plugin/paddle_profile/parallel?" in u for u in log.requests), (
        "the page never asked for the analysis"
    )


def route_parallel(tb, run: str) -> plugin_pb2.RunParallel:
    """The `parallel` route's answer (what the page draws), with its Display."""
    body = tb.get(f"/data/plugin/paddle_profile/parallel?run={quote(run)}&span=0&format=json", timeout=120)
    rp = json_format.Parse(body, plugin_pb2.RunParallel(), ignore_unknown_fields=True)
    assert rp.display.views, "the parallel route sent no display model"
    return rp


def view_of(rp: plugin_pb2.RunParallel) -> display_pb2.View:
    (view,) = [v for v in rp.display.views if v.key == "parallel"]
    return view


def cli_text(run_dir: Path, unit: str) -> str:
    """What `tb-paddle-profile distributed RUN_DIR --time-unit UNIT --width 0` prints (run in the logdir, so
    that the run is named as TensorBoard names it; tables whole, a row a line)."""
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "distributed",
            run_dir.name,
            "--time-unit",
            unit,
            "--no-cache",
            "--width",
            "0",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(run_dir.parent),
    )
    return out.stdout


def open_distributed(page, tb, run: str, unit: str):
    keys = {"run": run, "worker": "rank0", "span": "0", "unit": unit, "view": "distributed"}
    page.goto(
        f"{tb.url}/#paddle_profile&"
        + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    try:
        frame.wait_for_selector('[data-testid="par-ranks"]', timeout=60_000)
    except Exception as err:
        shown = frame.evaluate("() => document.body.innerText.slice(0, 3000)")
        raise AssertionError(f"the hybrid-parallel section did not appear; the plugin showed:\n{shown}") from err
    return frame


# ---------------------------------------------------------------- the model, formatted by Python

# Where the panel draws each table of the view (DisplayTable's data-testid); any other table is "par-<key>".
TABLE_IDS = {
    "ranks": "par-ranks",
    "waits": "par-waits",
    "host": "par-host",
    "kinds": "par-kinds",
    "rank_kinds": "par-rank-kinds",
    "clocks": "par-clocks",
    "pipeline": "par-stages",
    "pipeline_ranks": "par-stages",
    "outliers": "par-outliers",
    "step_time": "par-heat-step-table",
    "exposed_comm_by_step": "par-heat-exposed-table",
    "stage_layers": "par-stage-layers",
}
HEATMAP_TABLES = {"step_time": "par-heat-step", "exposed_comm_by_step": "par-heat-exposed"}
# Tables the panel lays out as blocks or lists rather than as a table (checked cell by cell below).
LAID_OUT = {"stragglers", "findings", "advice_triggers"}
# Tables the panel draws as charts (check_charts: the chart's series are their cells).
CHARTED = {"breakdown_steps", "breakdown_mean", "step_time_heat", "exposed_comm_heat"}


def table_id(key: str) -> str:
    return TABLE_IDS.get(key, f"par-{key}")


def expected_cells(t: display_pb2.Table, unit: str):
    """Every row of a table as the panel must print it: {column key: Python's string}, the model's order,
    the columns a panel draws."""
    shown = [i for i, c in enumerate(t.columns) if not c.panel_hidden]
    return [{t.columns[i].key: format_cell(t.columns[i], r.cells[i], unit) for i in shown} for r in t.rows]


def drawn_cells(frame, test_id: str):
    """Every row of a DisplayTable in the page (scrolled through): {column key: its text}."""
    return [r["cells"] for r in read_virtual_table(frame, test_id)]


_SENTENCES = """(sel) => Array.from(document.querySelectorAll(sel)).map((e) => [e.dataset.key, e.textContent])"""
PARALLEL_SENTENCES = '[data-testid="par-summary"] .sentence, #tbpp-parallel .sentence'
DISTRIBUTED_SENTENCES = '[data-testid="panel-distributed"] > .notice .sentence, [data-testid="dist-table-card"] .sentence, [data-testid="dist-step-rows-card"] .sentence'


def route_distributed(tb, run: str) -> plugin_pb2.RunDistributed:
    body = tb.get(f"/data/plugin/paddle_profile/distributed?run={quote(run)}&span=0&format=json", timeout=120)
    rd = json_format.Parse(body, plugin_pb2.RunDistributed(), ignore_unknown_fields=True)
    assert rd.display.views, "the distributed route sent no display model"
    return rd


def check_distributed(frame, rd, unit):
    """The Distributed view's own tables (every rank's Distribution Summary side by side, and per step)
    and its sentences are the Python formatter's strings of RunDistributed.display."""
    (view,) = [v for v in rd.display.views if v.key == "distributed"]
    tables = {t.key: t for t in view.tables}
    assert drawn_cells(frame, "dist-ranks") == expected_cells(tables["ranks"], unit)
    assert drawn_cells(frame, "dist-step-rows") == expected_cells(tables["steps"], unit)
    # the two charts draw the model's series: a bar per rank read (rank_parts), a bar per rank and step
    # (step_parts), each part's column in the page's unit (a bar from 0)
    parts = ("computation_ns", "overlap_ns", "communication_ns", "other_ns")
    header = lambda t, k: t.columns[_col(t, k)].header  # noqa: E731
    t = tables["rank_parts"]
    got = frame.evaluate(_OPTION, "dist-ranks-chart")
    assert got["x"] == [r.cells[_col(t, "name")].text for r in t.rows]
    assert got["series"] == [
        {
            "name": header(t, k),
            "stack": "all",
            "data": [max(0.0, r.cells[_col(t, k)].number) / DIVISOR[unit] for r in t.rows],
        }
        for k in parts
    ]
    t = tables["step_parts"]
    got = frame.evaluate(_OPTION, "dist-steps-chart")
    workers = list(dict.fromkeys(r.cells[_col(t, "worker")].text for r in t.rows))
    assert got["series"] == [
        {
            "name": header(t, k),
            "stack": f"r{ri}",
            "data": [
                max(0.0, r.cells[_col(t, k)].number) / DIVISOR[unit]
                for r in t.rows
                if r.cells[_col(t, "worker")].text == w
            ],
        }
        for ri, w in enumerate(workers)
        for k in parts
    ]
    shown = Counter(tuple(x) for x in frame.evaluate(_SENTENCES, DISTRIBUTED_SENTENCES))
    want = Counter(
        (s.key, sentence_text(s, unit)) for s in list(view.sentences) + [n for t in view.tables for n in t.notes]
    )
    assert shown == want


def check_against_python(frame, rp, unit):
    """Every cell of every table of the view and every sentence the panel shows equals the Python
    formatter's string for the same Display."""
    view = view_of(rp)
    tables = {t.key: t for t in view.tables}
    for key, t in tables.items():
        if key in LAID_OUT or key in CHARTED or (key == "outliers" and not t.rows):
            continue
        if key in HEATMAP_TABLES:
            frame.click(f'[data-testid="{HEATMAP_TABLES[key]}-mode"] button[data-value="table"]')
        assert drawn_cells(frame, table_id(key)) == expected_cells(t, unit), key
        if key in HEATMAP_TABLES:
            frame.click(f'[data-testid="{HEATMAP_TABLES[key]}-mode"] button[data-value="heatmap"]')
            frame.wait_for_selector(f'[data-testid="{HEATMAP_TABLES[key]}"][data-drawn]')
    if "outliers" in tables and not tables["outliers"].rows:
        assert frame.inner_text('[data-testid="par-outliers-none"]') == tables["outliers"].empty

    # The named ranks: each block's label, cause and facts are the table's cells (the first 3 shown).
    named = tables["stragglers"]
    blocks = frame.eval_on_selector_all(
        '[data-testid="par-straggler"]',
        """els => els.map((e) => ({
        rank: e.dataset.rank, label: e.querySelector('[data-testid="par-straggler-open"]').textContent,
        cause: e.querySelector('[data-testid="par-straggler-cause"]').textContent,
        facts: Object.fromEntries(Array.from(e.querySelectorAll('[data-testid="par-fact"]')).map((d) => [d.dataset.col, d.textContent]))}))""",
    )
    want = []
    for row in expected_cells(named, unit)[:3]:
        facts = {k: v for k, v in row.items() if k not in ("rank", "label", "cause", "gpu")}
        text_cols = {c.key for c in named.columns if c.format.kind == display_pb2.CELL_TEXT}
        facts = {k: v for k, v in facts.items() if not (k in text_cols and v == "")}
        want.append({"rank": row["rank"], "label": row["label"], "cause": row["cause"], "facts": facts})
    assert blocks == want

    # Findings: each item's category and cause are the findings table's cells, in its order.
    if rp.findings:
        items = frame.eval_on_selector_all(
            '[data-testid="par-finding"]',
            """els => els.map((e) => [
            e.dataset.rule, e.querySelector('.par-cat').textContent,
            (e.querySelector('.par-cause') || {}).textContent || ''])""",
        )
        f = tables["findings"]
        assert items == [[r["rule"], r["category_title"], r["cause"]] for r in expected_cells(f, unit)]

    # Advice triggers: each cites the table's value and threshold.
    if rp.advice:
        got = frame.eval_on_selector_all(
            '[data-testid="par-trigger"]',
            "els => els.map(e => [e.dataset.metric, e.dataset.value, e.dataset.threshold])",
        )
        assert got == [
            [r["metric"], r["value"], r["threshold"]] for r in expected_cells(tables["advice_triggers"], unit)
        ]

    # Sentences: what the page shows, key by key, is Python's sentence_text of the model's sentences
    # (the view's and the drawn tables' notes); every sentence of the view is shown, but "units" (the
    # panel says its own unit), the rank lists (drawn as buttons, checked below) and the named ranks
    # beyond the first 3 (behind a button).
    shown = Counter(tuple(x) for x in frame.evaluate(_SENTENCES, PARALLEL_SENTENCES))
    model = Counter((s.key, sentence_text(s, unit)) for s in view.sentences)
    notes = Counter(
        (s.key, sentence_text(s, unit))
        for t in view.tables
        for s in t.notes
        if t.key not in LAID_OUT and not (t.key == "outliers" and not t.rows)
    )
    assert not shown - (model + notes), shown - (model + notes)
    reasons = [s for s in view.sentences if s.key == "verdict.straggler"]
    missing = model - shown
    assert all(k == "units" or k.endswith(".ranks") or k == "verdict.straggler" for k, _ in missing), missing
    assert sum(n for (k, _), n in missing.items() if k == "verdict.straggler") == max(0, len(reasons) - 3)
    assert not notes - shown, notes - shown
    assert any(k == "verdict" for k, _ in shown)

    # Rank lists: the first 4 of the sentence's rank spans as buttons, the whole sentence on hover.
    chips = frame.eval_on_selector_all(
        '[data-testid="par-rank-chips"]',
        """els => els.map((e) => [e.dataset.key,
        Array.from(e.querySelectorAll('button')).map((b) => b.textContent),
        (e.querySelector('[data-testid="par-more-ranks"]') || {}).title || ''])""",
    )
    lists = [s for s in view.sentences if s.key.endswith(".ranks")]
    assert [c[0] for c in chips] == [s.key for s in lists]
    for (key, buttons, title), s in zip(chips, lists):
        ranks = [x.text for x in s.spans if x.is_rank]
        assert buttons == ranks[:4]
        assert title == (sentence_text(s, unit) if len(ranks) > 4 else "")


_OPTION = """(testId) => { const o = document.querySelector(`[data-testid="${testId}"]`).__tbppChart.getOption();
  return { x: o.xAxis[0].data, legend: o.legend[0].data || null,
           series: o.series.map((s) => ({ name: s.name, stack: s.stack || null, data: s.data })) }; }"""
DIVISOR = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}


def _col(t: display_pb2.Table, key: str) -> int:
    return [c.key for c in t.columns].index(key)


def check_charts(frame, rp, unit):
    """The step breakdown draws the model's breakdown_steps and breakdown_mean: its ranks, its parts (the
    legend: the columns of group "part") and each bar's heights (group "bar", in the page's unit), nothing
    computed on the page."""
    view = view_of(rp)
    tables = {t.key: t for t in view.tables}
    for mode, key in (("steps", "breakdown_steps"), ("mean", "breakdown_mean")):
        frame.click(f'[data-testid="par-breakdown-mode"] button[data-value="{mode}"]')
        frame.wait_for_function(
            """([id, n]) => { const c = document.querySelector(`[data-testid="${id}"]`).__tbppChart;
            return c && c.getOption().series.length === n; }""",
            arg=[
                "par-breakdown-chart",
                len(rp.steps if mode == "steps" else [0]) * sum(c.group == "part" for c in tables[key].columns),
            ],
        )
        got = frame.evaluate(_OPTION, "par-breakdown-chart")
        t = tables[key]
        parts = [c for c in t.columns if c.group == "part"]
        bars = [c for c in t.columns if c.group == "bar"]
        assert got["legend"] == [c.header for c in parts]
        ranks = [r.rank for r in rp.ranks]
        assert got["x"] == [r.cells[_col(t, "name")].text for r in t.rows][:: len(t.rows) // len(ranks)]
        steps = len(t.rows) // len(ranks)
        want = []
        for si in range(steps):
            for p, b in zip(parts, bars):
                rows = t.rows[si::steps]
                want.append(
                    {
                        "name": p.header,
                        "stack": f"s{si}",
                        "data": [max(0.0, r.cells[_col(t, b.key)].number) / DIVISOR[unit] for r in rows],
                    }
                )
        assert got["series"] == want, key
    frame.click('[data-testid="par-breakdown-mode"] button[data-value="steps"]')
    # the heatmaps: a row per rank (or bin), a cell per step with a value, coloured over the table's scale
    for key, test_id in (("step_time_heat", "par-heat-step"), ("exposed_comm_heat", "par-heat-exposed")):
        t = tables[key]
        values = [i for i, c in enumerate(t.columns) if c.group == "value"]
        got = frame.evaluate(
            """(id) => { const o = document.querySelector(`[data-testid="${id}"]`).__tbppChart.getOption();
            return { y: o.yAxis[0].data, x: o.xAxis[0].data, data: o.series[0].data, scale: [o.visualMap[0].min, o.visualMap[0].max] }; }""",
            test_id,
        )
        assert got["y"] == [r.cells[_col(t, "name")].text for r in t.rows]
        assert got["x"] == [t.columns[i].header for i in values]
        assert got["data"] == [
            [si, bi, r.cells[i].number]
            for bi, r in enumerate(t.rows)
            for si, i in enumerate(values)
            if not r.cells[i].missing
        ]
        assert got["scale"] == [t.scale.min, t.scale.max]


def squash(text: str) -> str:
    """Text without its whitespace: the CLI wraps its sentences at 100 columns, also after a hyphen."""
    return "".join(text.split())


def check_against_cli(frame, rp, cli: str, unit):
    """The tables and sentences the CLI prints are the panel's strings: each row of a CLI table (its
    text columns) is a line of its output, each sentence is in it."""
    view = view_of(rp)
    for t in view.tables:
        if t.text_hidden or t.key in LAID_OUT:
            continue
        shown = [i for i, c in enumerate(t.columns) if not c.text_hidden and not c.panel_hidden]
        assert t.title in cli, t.title
        for r in t.rows:
            if r.text_hidden:
                continue
            # the text names a rank by its short label (its Rank cell says the number; no pid): fit.short_label
            cells = [
                short_label(c) if t.columns[i].key == "label" else c
                for i, c in ((i, format_cell(t.columns[i], r.cells[i], unit)) for i in shown)
            ]
            line = r"^\s*" + r"\s+".join(re.escape(c) for c in cells if c) + r"\s*$"
            assert re.search(line, cli, re.M), (t.key, cells)
    flat = squash(cli)
    printed = {"headline", "verdict", "verdict.straggler", "verdict.evidence", "matching", "note", "advice.none"}
    for s in view.sentences:
        head = s.key.count(".") == 1 and s.key.split(".")[0] in ("finding", "advice")
        if s.key in printed or head or s.key.endswith(".trigger"):
            assert squash(sentence_text(s, unit)) in flat, (s.key, sentence_text(s, unit))
    # ... and what the panel shows of them is that text
    assert squash(frame.inner_text('[data-testid="par-verdict-sentence"]')) in flat


CANVAS_INK = """(testId) => {
  const canvas = document.querySelector(`[data-testid="${testId}"] canvas`);
  if (!canvas) return -1;
  const ctx = canvas.getContext("2d");
  const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
  let ink = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && (data[i] < 235 || data[i + 1] < 235 || data[i + 2] < 235)) ink++;
  return ink;
}"""


def check_drawn(frame, rp):
    """Summary first (the verdict above every chart and table), the charts have ink."""
    tops = frame.evaluate("""() => ['par-verdict', 'dist-steps-card', 'dist-table-card', 'par-breakdown-card']
        .map((id) => document.querySelector(`[data-testid="${id}"]`).getBoundingClientRect().top)""")
    assert tops == sorted(tops) and tops[0] < tops[1], tops
    v = rp.straggler
    assert frame.get_attribute('[data-testid="par-verdict"]', "data-uncertain") == ("1" if v.uncertain else "0")
    if v.uncertain:  # said plainly, in the card's head
        assert "Uncertain" in frame.inner_text('[data-testid="par-uncertain"]')
    shown = [
        int(x)
        for x in frame.eval_on_selector_all('[data-testid="par-straggler"]', "els => els.map(e => e.dataset.rank)")
    ]
    assert shown == [s.rank for s in v.stragglers][:3]
    if rp.advice:
        rules = frame.eval_on_selector_all('[data-testid="par-advice"] > li', "els => els.map(e => e.dataset.rule)")
        assert rules == [a.rule for a in rp.advice]
    else:
        assert frame.locator('[data-testid="par-advice-none"]').count() == 1
    for test_id in ("par-heat-step", "par-heat-exposed"):
        frame.wait_for_selector(f'[data-testid="{test_id}"][data-drawn]')
        assert frame.evaluate(CANVAS_INK, test_id) > 500, f"{test_id} looks empty"
    frame.wait_for_selector('[data-testid="par-breakdown-chart"][data-drawn]', timeout=30_000)
    assert frame.evaluate(CANVAS_INK, "par-breakdown-chart") > 500


def shot(page, name: str, docs: bool):
    """A screenshot in $TBP_SHOTS (to look at); `docs`: also the one in docs/screenshots."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    if docs:
        path = save_screenshot(page, name, max_kb=400)
        shutil.copyfile(path, SHOTS / path.name)
        return SHOTS / path.name
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


# ---------------------------------------------------------------- tests


def test_parallel_synth_names_the_slow_rank_and_shows_the_models_strings(tb, logdir, page_and_log):
    page, _ = page_and_log
    unit = "ms"
    rp = route_parallel(tb, SYNTH)
    assert [s.rank for s in rp.straggler.stragglers] == [SLOW_RANK], rp.straggler.summary  # what the generator planted
    frame = open_distributed(page, tb, SYNTH, unit)
    check_drawn(frame, rp)
    check_against_python(frame, rp, unit)
    check_charts(frame, rp, unit)
    check_against_cli(frame, rp, cli_text(logdir / SYNTH, unit), unit)
    check_distributed(frame, route_distributed(tb, SYNTH), unit)
    # the verdict names the planted rank by its label, as a link to it
    label = next(r.label for r in rp.ranks if r.rank == SLOW_RANK) or f"rank {SLOW_RANK}"
    assert label in frame.inner_text('[data-testid="par-verdict-summary"]')
    assert frame.locator(f'[data-testid="par-verdict-sentence"] a.rank-link[data-rank="{SLOW_RANK}"]').count() >= 1
    assert frame.locator('[data-testid="par-pipeline-card"] [data-testid="par-stages"]').count() == 1

    # The CSV links of the tables fetch the route's tables (built in Python): the columns by key, one
    # line per row, the same ranks in the same order as the panel's rows.
    for test_id, view_key, key in (
        ("par-ranks", "parallel", "ranks"),
        ("par-waits", "parallel", "waits"),
        ("dist-ranks", "distributed", "ranks"),
    ):
        href = frame.get_attribute(f'[data-testid="{test_id}-csv"]', "href")
        assert href.startswith("csv?") and f"view={view_key}" in href and f"table={key}" in href, href
        rows = list(csv.DictReader(io.StringIO(tb.get("/data/plugin/paddle_profile/" + href).decode())))
        panel = [r["cells"]["rank"] for r in read_virtual_table(frame, test_id)]
        assert [str(int(float(r["rank"]))) for r in rows] == panel, (test_id, rows[:2])

    # The other views of the breakdown card draw too.
    for mode in ("mean", "waits", "steps"):
        frame.click(f'[data-testid="par-breakdown-mode"] button[data-value="{mode}"]')
        frame.wait_for_selector('[data-testid="par-breakdown-chart"][data-drawn]')
        assert frame.evaluate(CANVAS_INK, "par-breakdown-chart") > 500

    # Screenshots: the summary (verdict, findings, outliers, grid) at the top, and the details section,
    # at 1,440 and 1,280 px.
    for width in (1440, 1280):
        page.set_viewport_size({"width": width, "height": 1640})
        frame.evaluate("() => window.scrollTo(0, 0)")
        page.wait_for_timeout(400)
        shot(page, "parallel-summary" if width == 1440 else f"parallel-summary-{width}", docs=width == 1440)
        frame.evaluate("() => document.getElementById('tbpp-parallel').scrollIntoView({block: 'start'})")
        page.wait_for_timeout(400)
        path = shot(page, "parallel" if width == 1440 else f"parallel-{width}", docs=width == 1440)
        assert path.stat().st_size > 10_000
        for part in ("par-ranks-card", "par-kinds-card", "par-matching"):  # the tables below, to look at
            frame.evaluate(
                "(id) => document.querySelector(`[data-testid=\"${id}\"]`).scrollIntoView({block: 'start'})", part
            )
            page.wait_for_timeout(300)
            shot(page, f"parallel-{width}-{part}", docs=False)
        # nothing wider than the page: no horizontal scroll at either width
        assert frame.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")

    # A rank span in the verdict opens that rank's overview.
    frame.evaluate("() => window.scrollTo(0, 0)")
    frame.click(f'[data-testid="par-verdict-sentence"] a.rank-link[data-rank="{SLOW_RANK}"]')
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == f"rank{SLOW_RANK}"
    frame.wait_for_function("(w) => location.hash.includes('worker=' + w)", arg=f"rank{SLOW_RANK}")


def test_parallel_straggler_button_opens_the_rank(tb, logdir, page_and_log):
    page, _ = page_and_log
    frame = open_distributed(page, tb, SYNTH, "ms")
    frame.click('[data-testid="par-straggler-open"]')
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == f"rank{SLOW_RANK}"


def test_parallel_gpt_2rank_in_us_and_open_a_rank(tb, logdir, page_and_log):
    if not (logdir / GPT).is_dir():
        pytest.skip("examples/profiler_log/gpt-2rank is not here")
    page, _ = page_and_log
    unit = "us"
    rp = route_parallel(tb, GPT)
    frame = open_distributed(page, tb, GPT, unit)
    check_drawn(frame, rp)
    check_against_python(frame, rp, unit)
    check_charts(frame, rp, unit)
    check_against_cli(frame, rp, cli_text(logdir / GPT, unit), unit)
    check_distributed(frame, route_distributed(tb, GPT), unit)

    # Clicking a rank's row opens its overview.
    last = rp.ranks[-1].worker
    frame.click(f'[data-testid="par-waits"] .vt-row[data-id="{last}"]')
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == last


def test_parallel_switches_unit_and_back(tb, logdir, page_and_log):
    """Changing the time unit reformats every table and sentence like `--time-unit` does."""
    page, _ = page_and_log
    rp = route_parallel(tb, SYNTH)
    frame = open_distributed(page, tb, SYNTH, "ms")
    frame.click('[data-testid="select-unit"] button[data-value="us"]')
    frame.wait_for_function("() => location.hash.includes('unit=us')")
    check_against_python(frame, rp, "us")
    reasons = frame.eval_on_selector_all('[data-testid="par-reason"]', "els => els.map(e => e.textContent)")
    assert reasons and " us" in reasons[0]
    frame.click('[data-testid="select-unit"] button[data-value="ms"]')
    frame.wait_for_function("() => location.hash.includes('unit=ms')")
    tables = {t.key: t for t in view_of(rp).tables}
    assert drawn_cells(frame, "par-ranks") == expected_cells(tables["ranks"], "ms")


def test_a_rewritten_rank_refreshes_the_analysis(browser, tmp_path):
    """A run's traces rewritten in place (a new profile under the same names) while the Distributed
    view is open: the page picks up the new files on its next poll of the run list and shows the
    new analysis (the slow rank moves from 1 to 0), not the one it had cached for the old files."""

    def generate(slow: int, out: Path) -> list:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tbp_synth",
                "--dp",
                "4",
                "--mp",
                "1",
                "--pp",
                "1",
                "--steps",
                "3",
                "--layers",
                "2",
                "--micro-batches",
                "2",
                "--slow-rank",
                str(slow),
                "--slow-factor",
                "1.6",
                "--out",
                str(out),
            ],
            check=True,
            capture_output=True,
            text=True,
            cwd=str(REPO),
        )
        return sorted(out.glob("*.paddle_trace.json"))

    logdir = tmp_path / "logdir"
    old = generate(1, logdir / "rw")
    new = generate(0, tmp_path / "next")
    # DP4: a DP2 job's two role peers give no noise estimate apart from the straggler's own deviation
    # (test_crossrank_verdict_cost.test_a_dp2_straggler_is_named, an xfail)
    assert [p.name[:5] for p in old] == [p.name[:5] for p in new] == ["rank0", "rank1", "rank2", "rank3"]
    log = PageLog()
    with tensorboard(logdir, tmp_path, extra_env={"TB_PADDLE_PROFILE_RESCAN_S": "1"}) as server:
        wait_all_loaded(server)
        page = new_page(browser, log, width=1440, height=1000)
        try:
            frame = open_distributed(page, server, "rw", "ms")
            named = "() => Array.from(document.querySelectorAll('[data-testid=\"par-straggler\"]')).map((e) => e.dataset.rank).join(',')"
            frame.wait_for_function(f"() => ({named})() === '1'", timeout=30_000)
            sizes = [p.stat().st_size for p in old]
            for src, dst in zip(new, old):
                shutil.copyfile(src, dst)
            assert [p.stat().st_size for p in old] != sizes
            frame.wait_for_function(f"() => ({named})() === '0'", timeout=90_000)
            assert frame.locator('[data-testid="par-verdict-sentence"] a.rank-link[data-rank="0"]').count() >= 1
            assert frame.locator('[data-testid="par-verdict-sentence"] a.rank-link[data-rank="1"]').count() == 0
        finally:
            page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
    assert log.outside_requests() == []


def test_host_clocks_are_shown_with_their_spread(browser, tmp_path):
    """Two hosts whose clocks disagree by milliseconds (Paddle's default worker names): the Distributed
    view lists each host's estimated offset with its spread and samples — the model's cells, which are
    the route's RunParallel.clocks — in the page's unit."""
    logdir = tmp_path / "logdir"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "2",
            "--pp",
            "1",
            "--steps",
            "2",
            "--layers",
            "1",
            "--micro-batches",
            "1",
            "--names",
            "default",
            "--gpus-per-node",
            "2",
            "--clock-skew-us",
            "3000",
            "--out",
            str(logdir / "skew"),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    log = PageLog()
    with tensorboard(logdir, tmp_path) as server:
        wait_all_loaded(server)
        rp = route_parallel(server, "skew")
        assert len(rp.clocks) == 2 and sum(c.reference for c in rp.clocks) == 1
        assert max(abs(c.offset_ns) for c in rp.clocks) > 100_000  # the planted skew (ms) was found
        page = new_page(browser, log, width=1280, height=1000)
        try:
            frame = open_distributed(page, server, "skew", "us")
            frame.wait_for_selector('[data-testid="par-clocks"]', timeout=60_000)
            rows = drawn_cells(frame, "par-clocks")
            (clocks,) = [t for t in view_of(rp).tables if t.key == "clocks"]
            assert rows == expected_cells(clocks, "us")
            # the cells are the route's raw clock fields, in us
            assert [(r["host"], r["offset_ns"], r["spread_ns"], r["samples"]) for r in rows] == [
                (c.hostname, f"{c.offset_ns / 1e3:.2f}", f"{c.spread_ns / 1e3:.2f}", str(c.samples)) for c in rp.clocks
            ]
        finally:
            page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)


def _gbps(text: str) -> float:
    assert text != "-", text
    return float(text.replace(",", ""))


def check_bus_bandwidth_across_ranks(frame, truth):
    """Issue 26.6, across ranks: the communicators whose operators carry shapes (the MP all-reduces, the PP
    send/recv) show their algbw and busbw, busbw = algbw x NCCL's factor for the group size the topology gives
    (all-reduce 2(n-1)/n, n the generator's mp; send/recv 1); the DP reducer's (no shapes, as Paddle) '-', the
    table's note saying why."""
    rows = drawn_cells(frame, "par-comm_axes")
    shaped = {(r["axis"], r["phase"]): r for r in rows if r["algbw_gbps"] != "-"}
    assert {a for a, _ in shaped} >= {"MP", "PP"}, rows
    n = truth.config["mp"]
    for (axis, phase), r in shaped.items():
        factor = 2 * (n - 1) / n if axis == "MP" else 1.0 if axis == "PP" else None
        if factor is not None:
            assert _gbps(r["busbw_gbps"]) == pytest.approx(_gbps(r["algbw_gbps"]) * factor, abs=0.011), r
    dp = [r for r in rows if r["axis"] == "DP"]
    assert dp and all(r["algbw_gbps"] == r["busbw_gbps"] == "-" for r in dp), dp
    note = frame.text_content('[data-testid="par-comm_axes-notes"]')
    assert "'-' when the traces record no shapes" in note and "n the communicator's size in the topology" in note


def check_bytes_per_instance(frame):
    """Issue 26.6, one rank: each collective instance's bytes where its issuing operator has shapes
    (c_allreduce_sum, send_v2), '-' where it has none (recv_v2, the backward's grad nodes); busbw where NCCL's
    factor needs no group size (send/recv: algbw), '-' for an all-reduce (one trace does not tell its group's
    size), the table's note saying both."""
    rows = drawn_cells(frame, "dt-comm-instances")
    sends = [r for r in rows if r["op"].startswith("send_v2")]
    reduces = [r for r in rows if r["op"].startswith("c_allreduce_sum")]
    assert sends and reduces, {r["op"] for r in rows}
    for r in sends:
        assert r["bytes"] != "-" and _gbps(r["busbw_gbps"]) == _gbps(r["algbw_gbps"]), r
    for r in reduces:
        assert r["bytes"] != "-" and r["algbw_gbps"] != "-" and r["busbw_gbps"] == "-", r
    unshaped = [r for r in rows if r["op"].startswith(("recv_v2", "Global_"))]
    assert unshaped and all(r["bytes"] == r["algbw_gbps"] == r["busbw_gbps"] == "-" for r in unshaped), unshaped[:3]
    note = frame.text_content('[data-testid="dt-comm-instances-note"]')
    assert "'-' without shapes" in note and "needs no group size" in note


def test_time_per_layer_by_stage_names_the_planted_slow_gpu(browser, tmp_path):
    """A run recording its input shapes with rank 5 (stage 0) planted 1.5x slower: the Distributed view draws
    the time per layer by stage (RunParallel.layers) with the model's cells, names rank 5 as the slowest of
    every stage-0 layer, and a click on such a row opens rank 5; every other table (tokens, FLOPs,
    communication per communicator with its bus bandwidth) has the model's cells too; bytes and bus bandwidth
    shown where the shapes and the group size give them, '-' with the reason where not (issue 26.6)."""
    from tbp_synth.truth import load_truth

    logdir = tmp_path / "logdir"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "2",
            "--pp",
            "2",
            "--steps",
            "2",
            "--layers",
            "4",
            "--micro-batches",
            "2",
            "--record-shapes",
            "--slow-rank",
            str(SLOW_RANK),
            "--slow-factor",
            "1.5",
            "--out",
            str(logdir / "layers"),
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    truth = load_truth(str(logdir / "layers"))
    stage = next(x["pp"] for x in truth.ranks if x["rank"] == SLOW_RANK)
    log = PageLog()
    with tensorboard(logdir, tmp_path) as server:
        wait_all_loaded(server)
        rp = route_parallel(server, "layers")
        (table,) = [t for t in view_of(rp).tables if t.key == "stage_layers"]
        page = new_page(browser, log, width=1440, height=1000)
        try:
            frame = open_distributed(page, server, "layers", "ms")
            frame.wait_for_selector('[data-testid="par-stage-layers"]', timeout=60_000)
            rows = drawn_cells(frame, "par-stage-layers")
            assert rows == expected_cells(table, "ms")
            mine = [r for r in rows if r["stage"] == str(stage)]
            assert len(mine) == 2 and all(r["slowest_rank"] == str(SLOW_RANK) for r in mine)
            # the view's other tables of this run with shapes (tokens per replica, FLOPs by rank, communication by
            # communicator and by rank), as every table: the Python formatter's strings
            assert {"sequences", "rank_flops", "comm_axes", "comm_ranks"} <= {t.key for t in view_of(rp).tables}
            check_against_python(frame, rp, "ms")
            check_bus_bandwidth_across_ranks(frame, truth)
            row_id = next(r.id for r in table.rows if r.link == f"rank:{SLOW_RANK}")
            frame.click(f'[data-testid="par-stage-layers"] .vt-row[data-id="{row_id}"]')
            frame.wait_for_selector('[data-testid="panel-overview"]')
            assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == f"rank{SLOW_RANK}"
            # its Overview: the FLOPs by operator and layer, the tokens per micro-batch and the communication
            # cards (issue 30) have the Python formatter's cells of that rank's display
            from tb_paddle_profile.analysis.summarize import summarize_file
            from tb_paddle_profile.present.display.summary import summary_display

            trace = next((logdir / "layers").glob(f"rank{SLOW_RANK}_time_*.paddle_trace.json"))
            (ov,) = [v for v in summary_display(summarize_file(str(trace))).views if v.key == "overview"]
            keys = ("flops_operators", "flops_layers", "sequences", "comm_bandwidth", "comm_overlap", "launch_latency")
            tables = {t.key: t for t in ov.tables if t.key in keys}
            assert set(tables) == set(keys)
            for key, t in tables.items():
                frame.wait_for_selector(f'[data-testid="dt-{key.replace("_", "-")}"]', timeout=30_000)
                assert drawn_cells(frame, f"dt-{key.replace('_', '-')}") == expected_cells(t, "ms"), key
            check_bytes_per_instance(frame)
        finally:
            page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
