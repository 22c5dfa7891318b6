"""Display tables → the text Paddle's ``Profiler.summary()`` prints (TextLayout style "paddle").

The rows, ratios, orders and notes come from the display model (display/summary.py); the cells are
formatted by display/cells.py. This module only lays them out as Paddle 3.3.1's
``profiler_statistic._build_table`` does: the title centred in dashes over the widths, left-aligned
columns padded by two spaces, widths fixed or as wide as the widest cell, a ColumnGroup printed as one
"a / b / c" column, section rows as titles in dashes, a repeated header between separators, the note and
the closing rule under the table.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from tb_paddle_profile.core.terminal import visible, visible_lines
from tb_paddle_profile.present.display import cells
from tb_paddle_profile.present.display.summary import summary_display
from tb_paddle_profile.present.display.summary_common import SORTED_KEYS, VIEWS, display_kernel_name
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb

__all__ = [
    "SORTED_KEYS",
    "TIME_UNITS",
    "VIEWS",
    "display_kernel_name",
    "format_time",
    "render",
    "render_display",
    "render_table",
]

TIME_UNITS = cells.TIME_UNITS
_DURATION = cells.fmt(cells.DURATION)


def format_time(ns, unit: str) -> str:
    """A duration in ns as Paddle prints it in ``unit`` ("-" for an infinite minimum)."""
    return cells.format_value(_DURATION, cells.num(ns), unit)


class _Unit:
    """One printed column: a display column, or a ColumnGroup's columns joined by " / "."""

    def __init__(self, index: int, column: dpb.Column, group: Optional[dpb.ColumnGroup]):
        self.indices = [index]
        self.column = column
        self.group = group

    @property
    def header(self) -> str:
        return self.group.header if self.group is not None else self.column.header

    @property
    def min_width(self) -> int:
        return self.group.text_min_width if self.group is not None else self.column.text_min_width


def _units(table: dpb.Table) -> List[_Unit]:
    groups = {g.key: g for g in table.groups}
    units: List[_Unit] = []
    for i, c in enumerate(table.columns):
        if c.text_hidden:
            continue
        if c.group and units and units[-1].group is not None and units[-1].group.key == c.group:
            units[-1].indices.append(i)
        else:
            units.append(_Unit(i, c, groups.get(c.group) if c.group else None))
    return units


def _cell_texts(table: dpb.Table, units: List[_Unit], row: dpb.Row, time_unit: str) -> List[str]:
    out = []
    for n, u in enumerate(units):
        if row.role == dpb.ROW_HEADER:
            out.append(visible(" / ".join(row.cells[i].text for i in u.indices)))
            continue
        s = visible(" / ".join(cells.format_cell(table.columns[i], row.cells[i], time_unit) for i in u.indices))
        if n == 0:
            c, indent = u.column, 2 * row.depth
            if c.text_truncate and row.depth >= c.text_truncate_depth and len(s) + indent > c.text_width:
                s = s[: c.text_width - indent - 3] + "..."
            s = " " * indent + s
        out.append(s)
    return out


def render_table(table: dpb.Table, time_unit: str, out: List[str]) -> None:
    """Append the lines of one table in Paddle's layout."""
    units = _units(table)
    rows = [r for r in table.rows if not r.text_hidden]
    texts = [None if r.role == dpb.ROW_SECTION else _cell_texts(table, units, r, time_unit) for r in rows]
    widths = []
    for n, u in enumerate(units):
        fixed = u.column.text_width if u.group is None else 0
        if fixed:
            widths.append(fixed)
            continue
        widest = [len(t[n]) for r, t in zip(rows, texts) if t is not None and r.role != dpb.ROW_HEADER]
        widths.append(max([u.min_width] + widest))
    row_format = "".join("{:<" + str(w) + "}  " for w in widths)
    sep = "".join("-" * w + "  " for w in widths)
    length = sum(w + 2 for w in widths) - 2

    def title(s: str) -> str:
        left = length - len(s)
        return "-" * (left // 2) + s + "-" * (left - left // 2)

    lay = table.text
    out.append(title(table.title))
    if lay.time_unit_line:
        out.append(f"Time unit: {time_unit}")
    out.extend(ln for h in lay.head_lines for ln in h.split("\n"))
    if not lay.no_header:
        out += [sep, row_format.format(*(u.header for u in units)), sep]
    for r, t in zip(rows, texts):
        if t is None:  # (a ROW_SECTION row: no cell texts)
            out.append(title(r.cells[0].text if r.cells else ""))
        elif r.role == dpb.ROW_HEADER:
            out += [sep, row_format.format(*t), sep]
        else:
            out.append(row_format.format(*t))
    if lay.closing_separator:
        out.append(sep)
    if table.note:
        out.extend(table.note.split("\n"))  # Paddle's multi-line note: its lines, each made visible
    if lay.closing_rule:
        out.append("-" * length)
    out.extend([""] * lay.blank_lines_after)


def render_display(display: dpb.Display, time_unit: str, views: Optional[Sequence[str]] = None) -> str:
    """The Paddle-style text of a display's tables whose paddle_view is in ``views`` (all when None)."""
    want = set(views) if views else set(VIEWS)
    out: List[str] = []
    for view in display.views:
        for table in view.tables:
            if table.text_hidden or table.paddle_view not in want:
                continue
            render_table(table, time_unit, out)
            if table.key == "device" and any(s.key == "no_steps" for s in view.sentences):
                return visible_lines(out) + "\n"  # Paddle stops after the device table
    return visible_lines(out) + "\n" if out else ""


def render(
    summary: pb.Summary,
    sorted_by: str = "CPUTotal",
    time_unit: str = "ms",
    op_detail: bool = True,
    thread_sep: bool = False,
    views: Optional[Sequence[str]] = None,
) -> str:
    """The text of Paddle's summary for these options (what ``print(_build_table(...))`` writes, minus print's newline)."""
    if sorted_by not in SORTED_KEYS:
        raise ValueError(f"sorted_by must be one of {', '.join(SORTED_KEYS)}")
    if time_unit not in TIME_UNITS:
        raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}")
    display = summary_display(
        summary, sorted_by=sorted_by, op_detail=op_detail, thread_sep=thread_sep, time_unit=time_unit
    )
    return render_display(display, time_unit, views)
