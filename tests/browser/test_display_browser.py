"""The per-rank panels draw the display model, cell for cell, in a real browser.

A real ``tensorboard`` serves the committed traces (tests/data/traces); Debian's Chromium, driven by
Playwright at 1,280 and 1,440 px, opens the Overview, Operators, Kernels and Memory panels. For every table
drawn (every row, opened where it is a tree, and every column the model does not hide from panels) the
text of each cell must be the string that the Python formatter (tb_paddle_profile.present.display.cells) gives for
the same Display, fetched from the plugin's own ``display`` route, and the rows must be the model's, in
its order. For Paddle's own tables the panel's numbers must also be the numbers that
``tb-paddle-profile summary`` prints for the same file. Each table's CSV link must answer the CSV that
display.export builds. Screenshots of each panel go to $TBP_SHOTS (default: the temp folder's tbp-shots/) (not committed).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Dict, List, Tuple
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import (
    copy_trace_sets,
    PageLog,
    new_page,
    read_virtual_table,
    tables_past_the_box,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]


from test_frontend_panels import cli_name_matches, cli_tables, cli_text, open_panel, trace_path  # noqa: E402
from tb_paddle_profile.present.display import cells  # noqa: E402
from tb_paddle_profile.present.display.export import to_csv  # noqa: E402
from tb_paddle_profile.v1 import display_pb2 as dpb  # noqa: E402

from support.browser_util import SHOTS, show_all_columns  # noqa: E402

VIEWS = ("overview", "operators", "kernels", "memory")
WIDTHS = (1280, 1440)
# (run, worker index, unit): a GPU-shaped trace in us and a real CPU trace in ms
CASES = [("shared/gpu-synthetic-2rank", 0, "us"), ("shared/cpu-gpt-single", 0, "ms")]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    return copy_trace_sets(tmp_path_factory.mktemp("display_logdir"), [c[0] for c in CASES])


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("display_tb")) as server:
        wait_all_loaded(server)
        yield server


def worker_of(logdir: Path, run: str, index: int) -> str:
    return sorted(p.name.split("_time_")[0] for p in (logdir / run).glob("*.paddle_trace.json"))[index]


def fetch_display(tb, run: str, worker: str, span: str = "0") -> dpb.Display:
    data = tb.get(f"/data/plugin/paddle_profile/display?run={quote(run)}&worker={quote(worker)}&span={span}")
    return dpb.Display.FromString(data)


# ---------------------------------------------------------------- reading the drawn tables

_TABLES = """() => Array.from(document.querySelectorAll('.panel .dt[data-table]'), (el) => ({
  key: el.dataset.table, testId: el.dataset.testid.replace(/-wrap$/, '') }))"""

_HEADER = """(testId) => Array.from(document.querySelectorAll(`[data-testid="${testId}"] .vt-hrow:not(.groups) .vt-th`), (h) => h.dataset.col)"""


def read_table(frame, test_id: str) -> Tuple[List[str], List[dict]]:
    """The column keys of a drawn display table and every row (scrolled through), in order; each row's
    cells as (column key, text) in the header's order."""
    header = frame.evaluate(_HEADER, test_id)
    rows = read_virtual_table(frame, test_id)
    for r in rows:
        assert set(r["cells"]) == set(header), (test_id, r["id"], sorted(r["cells"]), header)
        r["cells"] = [(k, r["cells"][k]) for k in header]
    return header, rows


def expected_text(table: dpb.Table, row: dpb.Row, i: int, unit: str) -> str:
    """The Python formatter's string for one cell (a repeated header or section row prints its labels; a
    column with a panel_format, the memory tables' bytes, prints with it in the panels)."""
    cell = row.cells[i]
    if row.role in (dpb.ROW_HEADER, dpb.ROW_SECTION):
        return cell.text
    col = table.columns[i]
    if col.HasField("panel_format"):
        return cells.format_value(col.panel_format, cell, unit)
    return cells.format_cell(col, cell, unit)


def unique_ids(table: dpb.Table) -> Dict[str, dpb.Row]:
    """Rows by the id the panel gives them (the model's id; a repeated or empty one made unique)."""
    out: Dict[str, dpb.Row] = {}
    for index, row in enumerate(table.rows):
        rid = row.id or f"#{index}"
        if rid in out:
            rid = f"{rid}#{index}"
        out[rid] = row
    return out


def find_model_table(display: dpb.Display, view: str, key: str) -> Tuple[dpb.Table, bool]:
    """The model table a drawn table shows; True when the panel shows its top-level rows only (a card's top rows)."""
    part = key.endswith(".top")
    base = key[: -len(".top")] if part else key
    for v in display.views:
        for t in v.tables:
            if t.key == base and (v.key == view or part):
                return t, part
    raise AssertionError(f"the panel draws a table {key!r} that the display model of view {view!r} does not have")


def check_drawn_table(
    frame, display: dpb.Display, view: str, key: str, test_id: str, unit: str
) -> Tuple[dpb.Table, List[dict]]:
    """Every cell of one drawn table equals the Python formatter's string; returns the model table and the rows."""
    table, part = find_model_table(display, view, key)
    show_all_columns(frame, test_id)  # columns hidden to fit the box: all shown, every cell read
    expand = frame.locator(f'[data-testid="{test_id}-expand-all"]')
    if expand.count():
        expand.click()
    header, rows = read_table(frame, test_id)
    columns = {c.key: i for i, c in enumerate(table.columns)}
    if part:
        assert set(header) <= set(columns), (key, header)
    else:
        assert header == [c.key for c in table.columns if not c.panel_hidden], (key, header)
    by_id = unique_ids(table)
    if part:
        expected_ids = [rid for rid, r in by_id.items() if r.depth == 0 and r.role == dpb.ROW_DATA]
    else:
        expected_ids = list(by_id)
    assert [r["id"] for r in rows] == expected_ids, f"{key}: the panel's rows are not the model's, in its order"
    for drawn in rows:
        row = by_id[drawn["id"]]
        for col, text in drawn["cells"]:
            want = expected_text(table, row, columns[col], unit)
            assert text == want, f"{key} row {drawn['id']!r} column {col!r}: panel {text!r}, Python {want!r}"
        if not part:
            assert drawn["depth"] == row.depth, (key, drawn["id"])
    return table, rows


def goto_view(frame, view: str):
    """Switches the open tab to another view with its own navigation (as a user does)."""
    frame.click(f'[data-testid="views"] button[data-view="{view}"]')
    frame.wait_for_selector(f'[data-testid="panel-{view}"]', timeout=60_000)
    return frame


def shoot(page, frame, path: Path) -> None:
    """A screenshot of the whole panel: the page made as tall as the plugin's content for the picture."""
    size = page.viewport_size
    height = frame.evaluate("() => document.querySelector('.content').scrollHeight + 140")
    page.set_viewport_size({"width": size["width"], "height": min(max(size["height"], height), 8000)})
    frame.wait_for_timeout(400)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)
    frame.wait_for_timeout(200)


def read_device(frame) -> List[List[str]]:
    return frame.evaluate("""() => Array.from(document.querySelectorAll('[data-testid=dt-device-row]'),
      (r) => Array.from(r.querySelectorAll('[data-testid=dt-device-cell]'), (c) => c.textContent))""")


# ---------------------------------------------------------------- against the CLI's text


def compare_with_cli(table: dpb.Table, drawn: List[dict], cli: dict, unit: str) -> int:
    """The panel's rows of a Paddle table (joined as the CLI prints them) against the CLI's own text."""
    printed = [cells_ for _, cells_ in cli["rows"]] + [cells_ for _, cells_ in cli.get("gpu_rows", [])]
    by_id = unique_ids(table)
    columns = [c for c in table.columns if not c.panel_hidden]
    shown = []
    for d in drawn:
        row = by_id[d["id"]]
        if row.role in (dpb.ROW_HEADER, dpb.ROW_SECTION) or row.text_hidden:
            continue
        texts = dict(d["cells"])
        line: List[str] = []
        last_group = None
        for col in table.columns:
            if col.text_hidden:
                continue
            # A panel_format column prints differently in the panel (checked against format_value above): the
            # CLI's side is compared through the column's own format.
            drawn_as_cli = col in columns and not col.HasField("panel_format")
            text = (
                texts[col.key]
                if drawn_as_cli
                else cells.format_cell(col, row.cells[list(table.columns).index(col)], unit)
            )
            if col.group and col.group == last_group:
                line[-1] += " / " + text
            else:
                line.append(text)
            last_group = col.group or None
        shown.append(line)
    assert len(shown) == len(printed), (
        f"{table.title}: {len(shown)} rows in the panel, {len(printed)} printed by the CLI"
    )
    for ui, cl in zip(shown, printed):
        assert cli_name_matches(cl[0], ui[0]), (table.title, cl[0], ui[0])
        assert ui[1:] == cl[1:], f"{table.title} {ui[0]}: panel {ui[1:]}, CLI {cl[1:]}"
    return len(shown)


def check_csv(tb, frame, test_id: str, table: dpb.Table) -> None:
    link = frame.locator(f'[data-testid="{test_id}-csv"]')
    assert link.count() == 1, f"{test_id} has no CSV link"
    href = link.get_attribute("href")
    assert href.startswith("csv?") and f"table={quote(table.key, safe='')}" in href.replace("%2E", "."), href
    body = tb.get(f"/data/plugin/paddle_profile/{href}").decode("utf-8")
    assert body == to_csv(table)
    assert list(csv.reader(io.StringIO(body)))[0][-1] == table.columns[-1].key


# ---------------------------------------------------------------- the test


@pytest.fixture
def page_at(browser, request):
    pages = []

    def make(width: int):
        log = PageLog()
        page = new_page(browser, log, width=width, height=1000)
        pages.append((page, log))
        return page

    yield make
    for page, log in pages:
        page.context.close()
        if ran(request):
            assert log.page_errors == [], log.page_errors
            assert log.console_errors == [], log.console_errors
            assert log.outside_requests() == [], log.outside_requests()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES, ids=["gpu", "cpu"])
def test_every_cell_of_every_panel_table_is_the_python_formatters(tb, logdir, page_at, case, width):
    run, index, unit = case
    if not (logdir / run).is_dir():
        pytest.skip(f"{run} is not here")
    worker = worker_of(logdir, run, index)
    display = fetch_display(tb, run, worker)
    path = str(trace_path(logdir, run, worker))
    printed = cli_tables(cli_text(path, unit))
    page = page_at(width)
    SHOTS.mkdir(parents=True, exist_ok=True)
    checked_tables = set()
    cli_rows = 0
    frame = open_panel(page, tb, run, worker, VIEWS[0], unit)
    for view in VIEWS:
        goto_view(frame, view)
        frame.wait_for_timeout(300)
        # no table runs past its card (the last columns hidden to fit, the Columns menu shows them)
        assert tables_past_the_box(frame) == [], view
        drawn = frame.evaluate(_TABLES)
        model_view = next(v for v in display.views if v.key == view)
        for d in drawn:
            table, rows = check_drawn_table(frame, display, view, d["key"], d["testId"], unit)
            checked_tables.add(table.key)
            if not d["key"].endswith(".top"):
                check_csv(tb, frame, d["testId"], table)
            if table.paddle_view and not table.text_hidden and not d["key"].endswith(".top"):
                assert table.title in printed, f"the CLI prints no {table.title}"
                cli_rows += compare_with_cli(table, rows, printed[table.title], unit)
        if view == "overview":
            device = next(t for t in model_view.tables if t.key == "device")
            assert read_device(frame) == [
                [expected_text(device, r, i, unit) for i in range(len(r.cells))] for r in device.rows
            ]
            assert [[c[0], c[1]] for _, c in printed["Device Summary"]["rows"]] == read_device(frame)
            checked_tables.add("device")
            queue = next((t for t in model_view.tables if t.key == "launch_queue"), None)
            if queue is not None:  # drawn as a chart: one point per row (test_frontend_panels checks each point)
                frame.wait_for_selector('[data-testid="launch-queue-chart"][data-drawn]', timeout=30_000)
                points = frame.evaluate("""() => document.querySelector('[data-testid="launch-queue-chart"]')
                    .__tbppChart.getOption().series.reduce((n, x) => n + x.data.length, 0)""")
                assert points == len(queue.rows)
                checked_tables.add("launch_queue")
        # Every table of the view that the panel shows by default is drawn (per-thread variants and the other
        # grouping are a selector away).
        defaults = {
            t.key
            for t in model_view.tables
            if ".thread." not in t.key and t.key not in ("operators_by_shape", "kernels_by_operator")
        }
        if view == "memory":
            places = [t.key for t in model_view.tables if t.key.startswith("memory.")]
            defaults -= set(places[1:])  # one place at a time
            # ... and so are its memory insights (the table of all places, memory_insights, is drawn)
            defaults -= {f"memory_{kind}.{p[len('memory.') :]}" for p in places[1:] for kind in ("steps", "alive")}
        assert defaults <= checked_tables, f"{view}: not drawn: {sorted(defaults - checked_tables)}"
        shoot(page, frame, SHOTS / f"{view}-{run.split('/')[-1]}-{width}.png")
    assert cli_rows > 10, "Paddle's tables were compared with the CLI"
    # The other grouping of the operators and kernels: drawn and formatted the same way
    goto_view(frame, "operators")
    if frame.locator('[data-testid="operators-grouping"] button[data-value="shape"]').count() and any(
        t.key == "operators_by_shape" for v in display.views for t in v.tables
    ):
        frame.click('[data-testid="operators-grouping"] button[data-value="shape"]')
        frame.wait_for_selector('[data-testid="operator-table-wrap"][data-table="operators_by_shape"]')
        check_drawn_table(frame, display, "operators", "operators_by_shape", "operator-table", unit)
    if any(t.key == "kernels_by_operator" for v in display.views for t in v.tables):
        goto_view(frame, "kernels")
        frame.click('[data-testid="kernels-grouping"] button[data-value="operator"]')
        frame.wait_for_selector('[data-testid="kernel-table-wrap"][data-table="kernels_by_operator"]')
        check_drawn_table(frame, display, "kernels", "kernels_by_operator", "kernel-table", unit)
