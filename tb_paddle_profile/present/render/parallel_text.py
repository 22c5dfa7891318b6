"""The "parallel" Display (display/parallel.py) in the terminal, for ``tb-paddle-profile parallel``.

Layout only: the tables (TextLayout style "plain": the title centred in dashes over the columns,
two-space gaps, a dashes line under the header and after the last row, the notes wrapped at WIDTH),
then the verdict, the findings, the pipeline and the advice blocks, the matching and the notes.
Every cell and sentence is formatted by display/cells.py; what is printed is built in
display/parallel.py (the panels draw the same message).
"""

from __future__ import annotations

import textwrap
from typing import List

from tb_paddle_profile.core.terminal import visible_all, visible_lines
from tb_paddle_profile.present.display import cells
from tb_paddle_profile.present.display.cells import format_value, sentence_text, value_formatter
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.display.parallel_common import spans
from tb_paddle_profile.present.render.fit import DEFAULT_WIDTH, fit_tables, header_lines, short_label
from tb_paddle_profile.present.render.text import _units
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb

WIDTH = 100
TABLE_WIDTH = DEFAULT_WIDTH  # our tables' widest line; wider ones are printed in parts
# Tables printed after the verdict and the findings (the rest before them).
_LATE_TABLES = ("pipeline", "pipeline_ranks")


def table_lines(t: dpb.Table, time_unit: str, width: int = TABLE_WIDTH) -> List[str]:
    """One table in the plain layout; wider than ``width``, in parts that each fit (render/fit.py's split:
    the first printed column and as many others as fit, in order). Each cell is formatted once whatever
    the number of parts tried (a per-rank table of 4,096 ranks: each trial part formatted every cell again)."""
    if any(t.columns[i].text_truncate and t.columns[i].text_width for i in range(len(t.columns))):
        out: List[str] = []  # (a cut name column is cut shorter to fit: fit_tables renders each part)
        for part in fit_tables(t, width, lambda x: _Grid(x, time_unit).lines(_shown(x), x.title, False)):
            out += _Grid(part, time_unit).lines(_shown(part), part.title, False)
        return out
    grid = _Grid(t, time_unit)
    shown = _shown(t)
    if width <= 0 or grid.widest(shown, t.title, False) <= width:
        return grid.lines(shown, t.title, False)
    units = _units(t)
    if len(units) < 3:
        return grid.lines(shown, t.title, False)
    head = units[0].indices
    parts: List[List[int]] = []
    current: List[int] = []
    for u in units[1:]:  # as fit_tables: a part holds at least one unit after the head
        trial = current + u.indices
        if current and grid.widest(head + trial, t.title, True) > width:
            parts.append(current)
            current = list(u.indices)
        else:
            current = trial
    parts.append(current)
    out = []
    for k, cols in enumerate(parts):
        out += grid.lines(head + cols, f"{t.title} ({k + 1}/{len(parts)})", True)
    return out


def _shown(t: dpb.Table) -> List[int]:
    return [i for i, c in enumerate(t.columns) if not c.text_hidden]


class _Grid:
    """The plain layout of a table's columns, whole or a part of them (``part``: as fit._subtable makes it,
    a section row keeping its first cell alone), from each column's cells formatted once."""

    def __init__(self, t: dpb.Table, time_unit: str):
        self.t, self.unit = t, time_unit
        self.rows = [r for r in t.rows if not r.text_hidden]
        self._cells: dict = {}
        note = " ".join(x for x in [t.note] + [sentence_text(s, time_unit) for s in t.notes] if x)
        self.note = textwrap.wrap(note, WIDTH) if note else []

    def _column(self, i: int, first: int, part: bool, shorten: bool) -> List[str]:
        """Column ``i``'s printed cells; ``first``: the part's first column (a section row's first cell)."""
        key = (i, i == first, part, shorten)
        got = self._cells.get(key)
        if got is None:
            col, empty, section = self.t.columns[i], dpb.Cell(), dpb.ROW_SECTION
            text = value_formatter(col.format, self.unit)  # (format_cell's, made once for the column)
            got = visible_all(
                [
                    text((r.cells[0] if i == first else empty) if part and r.role == section else r.cells[i])
                    for r in self.rows
                ]
            )
            if shorten and col.key == "label":
                got = [short_label(c) for c in got]
            self._cells[key] = got
        return got

    def _layout(self, cols: List[int], part: bool):
        # a table with its own Rank column shows the rest of each rank's label ("dp1 pp0 mp1 · gpunode1 GPU1")
        shorten = any(self.t.columns[i].key == "rank" for i in cols)
        columns = [self._column(i, cols[0], part, shorten) for i in cols]
        cell_widths = [max(map(len, c), default=0) for c in columns]
        heads = [header_lines(self.t.columns[i].header, w) for i, w in zip(cols, cell_widths)]
        widths = [max(w, *(len(h) for h in hs)) for w, hs in zip(cell_widths, heads)]
        return columns, heads, widths

    def widest(self, cols: List[int], title: str, part: bool) -> int:
        """The longest of ``lines``' lines, without making them."""
        _, _, widths = self._layout(cols, part)
        return max(sum(widths) + 2 * max(0, len(widths) - 1), len(title), max(map(len, self.note), default=0))

    def lines(self, cols: List[int], title: str, part: bool) -> List[str]:
        columns, heads, widths = self._layout(cols, part)
        line = "  ".join("-" * w for w in widths)
        out = [title.center(max(len(line), len(title)), "-")]
        depth = max(len(h) for h in heads) if heads else 1
        for k in range(depth):  # headers over two lines end on the same line as the others
            parts = [(hs[k - (depth - len(hs))] if k >= depth - len(hs) else "") for hs in heads]
            out.append("  ".join(h.ljust(w) for h, w in zip(parts, widths)).rstrip())
        out.append(line)
        for r in range(len(self.rows)):
            out.append("  ".join(c[r].ljust(w) for c, w in zip(columns, widths)).rstrip())
        out.append(line)
        out.extend(self.note)
        out.append("")
        return out


def render_display(display: dpb.Display, width: int = TABLE_WIDTH) -> str:
    """The "parallel" view of `display`, in the time unit it was built for (its "units" sentence says it);
    tables wider than ``width`` in parts (0: never)."""
    unit = display.time_unit or "ms"
    (view,) = [v for v in display.views if v.key == "parallel"]
    said = lambda key: [s for s in view.sentences if s.key == key]  # noqa: E731
    txt = lambda s: sentence_text(s, unit)  # noqa: E731
    wrap = textwrap.wrap
    out: List[str] = []
    out.extend(wrap(" ".join(txt(s) for s in said("headline") + said("units")), DEFAULT_WIDTH))
    out.append("")
    tables = [t for t in view.tables if not t.text_hidden]
    for t in tables:
        if t.key not in _LATE_TABLES:
            out += table_lines(t, unit, width)

    out.append("Straggler verdict".center(WIDTH, "-"))
    for s in said("verdict"):
        out.extend(wrap(txt(s), WIDTH))
    for s in said("verdict.straggler"):
        out.extend(wrap(txt(s), WIDTH, initial_indent="  - ", subsequent_indent="    "))
    for s in said("verdict.evidence"):
        out.extend(wrap(txt(s), WIDTH))
    out.append("")

    findings = [s for s in view.sentences if s.section == "findings" and not s.part]
    if findings:
        out.append("Findings".center(WIDTH, "-"))
        for s in findings:
            out.extend(wrap(f"{s.title} {txt(s)}", WIDTH, subsequent_indent="   "))
        out.append("")

    for t in tables:
        if t.key in _LATE_TABLES:
            out += table_lines(t, unit, width)

    out.append("Advice".center(WIDTH, "-"))
    advice = [s for s in view.sentences if s.section == "advice"]
    for s in advice:
        if not s.rule:  # "No rule fired."
            out.append(txt(s))
    i = 0
    for s in advice:
        if not s.rule:
            continue
        if not s.part:
            i += 1
            out.extend(wrap(f"{i}. {s.title}. {txt(s)}", WIDTH, subsequent_indent="   "))
        elif s.part == "trigger":
            out.extend(wrap(txt(s), DEFAULT_WIDTH, initial_indent="   ", subsequent_indent="     "))
    out.append("")

    for s in said("matching"):
        out.extend(wrap(txt(s), WIDTH))
    for s in said("note"):
        out.extend(wrap(txt(s), WIDTH))
    return visible_lines(out).rstrip() + "\n"


def render(rp: ppb.RunParallel, time_unit: str = "ms", width: int = TABLE_WIDTH) -> str:
    """The CLI's text of a RunParallel: its Display, laid out."""
    return render_display(parallel_display(rp, time_unit, text=True), width)


# Thin names kept for the tests that compare the panel with the CLI's formatting.
def fill_times(text: str, unit: str) -> str:
    """A sentence of the analysis with its "{ns:N}" time tokens printed in `unit`."""
    return "".join(format_value(s.format, s.value, unit) if s.is_value else s.text for s in spans(text))


def _pct(x: float) -> str:
    return format_value(cells.fmt(cells.PERCENT, digits=1), cells.num(x))


def _bytes(n: int) -> str:
    return cells.human_bytes(int(n))


__all__ = ["render", "render_display", "table_lines", "fill_times"]
