"""Readable at 1,280 px (issue 16, point 3): every unit, no cut text, resizable columns.

A real ``tensorboard`` serves the committed traces (tests/data/traces); Debian's Chromium, driven by
Playwright at 1,280 and 1,440 px, opens the Overview, Operators, Kernels and Memory panels:

* no header and no number of a display table is cut (its scrollWidth fits its clientWidth); a name or
  other text cell that is cut holds its full text in its title (hover);
* a column's width follows a drag of its header's right edge, the drag does not sort, and the width is
  still there after a reload (local storage, per table);
* a CPU-only trace draws no GPU column (Paddle prints them as zeros; the panels leave them out), while the
  GPU-shaped trace draws them;
* the memory tables print bytes humanised ("4.00 MiB"): the strings of the Python formatter for the
  columns' panel_format, and the humanised form of the integers Paddle printed for the same trace
  (tests/data/traces/cpu-gpt-single/paddle_summary.CPUTotal.ms.txt).

Screenshots of each panel go to browser_util.SHOTS.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest

from support.paths import SHARED_TRACES
from support.report import ran
from support.browser_util import (
    copy_trace_sets,
    SHOTS,
    PageLog,
    new_page,
    read_virtual_table,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]


from test_frontend_panels import open_panel  # noqa: E402
from tb_paddle_profile.present.display import cells  # noqa: E402
from tb_paddle_profile.v1 import display_pb2 as dpb  # noqa: E402

VIEWS = ("overview", "operators", "kernels", "memory")
WIDTHS = (1280, 1440)
GPU_RUN, CPU_RUN = "shared/gpu-synthetic-2rank", "shared/cpu-gpt-single"
CASES = [(GPU_RUN, "us"), (CPU_RUN, "ms")]


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    return copy_trace_sets(tmp_path_factory.mktemp("readable_logdir"), [c[0] for c in CASES])


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("readable_tb")) as server:
        wait_all_loaded(server)
        yield server


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


def worker_of(logdir: Path, run: str) -> str:
    return sorted(p.name.split("_time_")[0] for p in (logdir / run).glob("*.paddle_trace.json"))[0]


def fetch_display(tb, run: str, worker: str) -> dpb.Display:
    return dpb.Display.FromString(
        tb.get(f"/data/plugin/paddle_profile/display?run={quote(run)}&worker={quote(worker)}&span=0")
    )


def goto_view(frame, view: str):
    frame.click(f'[data-testid="views"] button[data-view="{view}"]')
    frame.wait_for_selector(f'[data-testid="panel-{view}"]', timeout=60_000)
    frame.wait_for_timeout(300)


# Every header and drawn cell of the view's display tables whose text does not fit; names are listed only
# when their title does not hold their full text.
_CUT = """() => {
  const out = [];
  for (const dt of document.querySelectorAll('.panel .dt[data-table]')) {
    const table = dt.dataset.table;
    for (const th of dt.querySelectorAll('.vt-th')) {
      if (th.scrollWidth > th.clientWidth) out.push({table, what: 'header', col: th.dataset.col || '(group)', text: th.textContent, sw: th.scrollWidth, cw: th.clientWidth});
    }
    for (const td of dt.querySelectorAll('.vt-td')) {
      if (td.scrollWidth <= td.clientWidth) continue;
      if (td.classList.contains('name')) {
        const name = td.querySelector('.vt-name')?.textContent ?? '';
        if ((td.title || '').includes(name)) continue;
      } else if (td.classList.contains('left') && td.title && td.title.includes(td.textContent)) continue;  // text: full text on hover
      out.push({table, what: 'cell', col: td.dataset.col, text: td.textContent, sw: td.scrollWidth, cw: td.clientWidth});
    }
  }
  return out;
}"""

_HEADERS = """() => Array.from(document.querySelectorAll('.panel .dt[data-table]'), (dt) => ({
  table: dt.dataset.table, cols: Array.from(dt.querySelectorAll('.vt-hrow:not(.groups) .vt-th'), (h) => h.dataset.col),
  rows: dt.querySelectorAll('.vt-row').length }))"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("case", CASES, ids=["gpu", "cpu"])
def test_no_header_or_cell_is_cut_and_cpu_runs_have_no_gpu_columns(tb, logdir, page_at, case, width):
    run, unit = case
    worker = worker_of(logdir, run)
    display = fetch_display(tb, run, worker)
    page = page_at(width)
    SHOTS.mkdir(parents=True, exist_ok=True)
    frame = open_panel(page, tb, run, worker, VIEWS[0], unit)
    tables_seen = 0
    gpu_columns = 0
    for view in VIEWS:
        goto_view(frame, view)
        cut = frame.evaluate(_CUT)
        assert cut == [], f"{run} {view} at {width} px: cut text {cut[:8]}"
        for t in frame.evaluate(_HEADERS):
            tables_seen += 1
            drawn_gpu = [c for c in t["cols"] if c.startswith("gpu_") or c.endswith("_gpu_ns") or c == "gpu_ns"]
            gpu_columns += len(drawn_gpu)
            if run == CPU_RUN and t["rows"]:
                assert drawn_gpu == [], f"the CPU-only trace draws GPU columns in {t['table']}: {drawn_gpu}"
        page.screenshot(path=str(SHOTS / f"readable-{view}-{run.split('/')[-1]}-{width}.png"), full_page=True)
    assert tables_seen >= 5
    if run == GPU_RUN:
        assert gpu_columns > 10, "the GPU trace draws its GPU columns"
    # The model behind it: Paddle prints the Model Summary's GPU half for the CPU run too (all zeros); the
    # display model keeps it in the text layout and hides it from the panels only there.
    model = next(t for v in display.views for t in v.tables if t.key == "model")
    gpu_cols = [c for c in model.columns if c.group == "gpu"]
    assert gpu_cols and all(not c.text_hidden for c in gpu_cols)
    assert all(c.panel_hidden == (run == CPU_RUN) for c in gpu_cols)


def _paddle_memory_rows(printed: Path, place: str):
    """The rows of Paddle's printed Memory Summary of one place: (name, type, 5 integers)."""
    lines = printed.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if f"Memory Summary - {place}" in line)
    row = re.compile(r"^(.*?)\s{2,}(Allocated|Reserved)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s*$")
    out = []
    for line in lines[start + 1 :]:
        if "Summary" in line and line.startswith("---"):
            break
        m = row.match(line)
        if m:
            out.append((m.group(1).strip(), m.group(2), [int(x) for x in m.groups()[2:]]))
    return out


@pytest.mark.parametrize("width", [1280])
def test_memory_bytes_are_humanised_as_the_python_formatter_and_paddles_numbers(tb, logdir, page_at, width):
    worker = worker_of(logdir, CPU_RUN)
    display = fetch_display(tb, CPU_RUN, worker)
    memory = next(v for v in display.views if v.key == "memory")
    place = next(t for t in memory.tables if t.key.startswith("memory."))
    byte_cols = [i for i, c in enumerate(place.columns) if c.format.kind == dpb.CELL_BYTES]
    assert [place.columns[i].key for i in byte_cols] == ["allocation_size", "free_size", "increased_size"]
    for i in byte_cols:  # the text layout keeps Paddle's integers; the panels print the panel_format
        assert place.columns[i].panel_format.style == "human" and place.columns[i].format.style == ""
    page = page_at(width)
    frame = open_panel(page, tb, CPU_RUN, worker, "memory", "ms")
    frame.wait_for_selector(f'[data-testid="memory-table-wrap"][data-table="{place.key}"]')
    rows = read_virtual_table(frame, "memory-table")
    by_id = {r.id: r for r in place.rows}
    assert [r["id"] for r in rows] == [r.id for r in place.rows]
    for drawn in rows:
        model_row = by_id[drawn["id"]]
        for i in byte_cols:
            col = place.columns[i]
            assert drawn["cells"][col.key] == cells.format_value(col.panel_format, model_row.cells[i], "ms")
    # Against what Paddle printed for this trace, in Paddle's order: the same integers, humanised.
    printed = _paddle_memory_rows(
        SHARED_TRACES / "cpu-gpt-single" / "paddle_summary.CPUTotal.ms.txt", place.key[len("memory.") :]
    )
    assert len(printed) == len(rows) > 3
    humanised = 0
    for (name, kind, numbers), drawn in zip(printed, rows):
        assert drawn["name"].startswith(name[:40]) and drawn["cells"]["type"] == kind
        assert [drawn["cells"][k] for k in ("allocation_count", "free_count")] == [str(n) for n in numbers[:2]]
        shown = [drawn["cells"][k] for k in ("allocation_size", "free_size", "increased_size")]
        assert shown == [cells.human_bytes(n) for n in numbers[2:]]
        humanised += sum(1 for s in shown if s.endswith(("KiB", "MiB", "GiB")))
    assert humanised > 3, "the sizes print in KiB / MiB"
    assert not frame.evaluate(_CUT)


def _header_width(frame, test_id: str, col: str) -> float:
    return frame.locator(f'[data-testid="{test_id}"] .vt-hrow:not(.groups) .vt-th[data-col="{col}"]').bounding_box()[
        "width"
    ]


def test_a_dragged_column_width_holds_and_survives_a_reload(tb, logdir, page_at):
    worker = worker_of(logdir, GPU_RUN)
    page = page_at(1280)
    frame = open_panel(page, tb, GPU_RUN, worker, "operators", "us")
    wrap = frame.locator('.panel .dt[data-table="operators"]').first
    test_id = wrap.get_attribute("data-testid")[: -len("-wrap")]
    col = "calls"
    before = _header_width(frame, test_id, col)
    handle = frame.locator(f'[data-testid="{test_id}"] .vt-resize[data-resize="{col}"]')
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 30, y, steps=3)
    page.mouse.move(x + 70, y, steps=3)
    page.mouse.up()
    frame.wait_for_timeout(200)
    after = _header_width(frame, test_id, col)
    assert abs(after - (before + 70)) <= 1, (before, after)
    cell = frame.locator(f'[data-testid="{test_id}"] .vt-row .vt-td[data-col="{col}"]').first.bounding_box()
    assert abs(cell["width"] - after) <= 1, "the column's cells follow its header"
    # The drag is no click on the header: the table is not sorted by it.
    assert frame.locator(f'[data-testid="{test_id}"] .vt-th.sorted').count() == 0
    assert "calls:" not in page.url
    page.reload()
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector(f'[data-testid="{test_id}"] .vt-th[data-col="{col}"]', timeout=60_000)
    assert abs(_header_width(frame, test_id, col) - after) <= 1, "the width is kept across a reload"
    # Another table keeps its own widths.
    goto_view(frame, "kernels")
    kwrap = frame.locator('.panel .dt[data-table="kernels"]').first
    ktest = kwrap.get_attribute("data-testid")[: -len("-wrap")]
    assert abs(_header_width(frame, ktest, col) - after) > 1


@pytest.mark.parametrize("width", WIDTHS)
def test_auto_unit_prints_each_duration_column_in_the_unit_that_fits_it(tb, logdir, page_at, width):
    """The unit selector's "auto": every duration column of a table prints in the unit in which its
    largest value has at most three digits before the point (s from a second on), named in its header;
    the strings are the Python formatter's in that unit, and nothing is cut."""
    worker = worker_of(logdir, GPU_RUN)
    display = fetch_display(tb, GPU_RUN, worker)
    table = next(t for v in display.views if v.key == "operators" for t in v.tables if t.key == "operators")
    page = page_at(width)
    frame = open_panel(page, tb, GPU_RUN, worker, "operators", "auto")
    assert (
        frame.locator('[data-testid="select-unit"] button[data-value="auto"]').get_attribute("aria-checked") == "true"
    )
    drawn = read_virtual_table(frame, "operator-table")
    assert drawn, "the Operators table is empty"
    headers = {
        h["col"]: h["text"]
        for h in frame.evaluate(
            """() => Array.from(document.querySelectorAll('[data-testid="operator-table"] .vt-hrow:not(.groups) .vt-th'),
             (th) => ({col: th.dataset.col, text: th.textContent}))"""
        )
    }
    by_id = {r.id: r for r in table.rows}
    units_seen = set()
    for i, col in enumerate(table.columns):
        if col.format.kind != dpb.CELL_DURATION or col.format.unit or col.panel_hidden or col.key not in headers:
            continue
        values = [
            abs(r.cells[i].number)
            for r in table.rows
            if r.role not in (dpb.ROW_HEADER, dpb.ROW_SECTION) and len(r.cells) > i and not r.cells[i].missing
        ]
        top = max(values, default=0)
        unit = "s" if top >= 1e9 else "ms" if top >= 1e6 else "us" if top >= 1e3 else "ns"
        units_seen.add(unit)
        assert headers[col.key].endswith(f"({unit})"), (col.key, headers[col.key], top)
        for row in drawn[:50]:
            model_row = by_id[row["id"]]
            if model_row.role in (dpb.ROW_HEADER, dpb.ROW_SECTION):
                continue  # labels, printed as their text
            assert row["cells"][col.key] == cells.format_value(col.format, model_row.cells[i], unit), (col.key, row)
        if unit != "ns":
            assert top / {"s": 1e9, "ms": 1e6, "us": 1e3}[unit] < 1000 or unit == "s"
    assert units_seen, "no duration column was drawn"
    assert not frame.evaluate(_CUT)
    # a fixed unit again: the headers lose their unit, the cells are the CLI's strings in it
    frame.click('[data-testid="select-unit"] button[data-value="us"]')
    frame.wait_for_function(
        "() => !Array.from(document.querySelectorAll('[data-testid=\"operator-table\"] .vt-hrow:not(.groups) .vt-th')).some((th) => /\\((s|ms|us|ns)\\)$/.test(th.textContent))"
    )
