"""Our own text views within a terminal's width: a table too wide is printed as several tables, each
with the first column (the row's name) and as many of the others as fit, in order.

Only the views of this tool use it (diff, parallel, whatif); Paddle's own tables (``summary``) keep
Paddle's layout whatever their width. The split is of whole printed columns: a group of values that
Paddle prints as one "a / b / c" column stays one column.
"""

from __future__ import annotations

from typing import Callable, List

from tb_paddle_profile.present.render.text import _units
from tb_paddle_profile.v1 import display_pb2 as dpb

DEFAULT_WIDTH = 120
MIN_NAME_WIDTH = 30


def _subtable(table: dpb.Table, indices: List[int], part: str) -> dpb.Table:
    out = dpb.Table()
    out.CopyFrom(table)
    del out.columns[:]
    del out.rows[:]
    out.columns.extend(table.columns[i] for i in indices)
    for row in table.rows:
        new = out.rows.add()
        new.CopyFrom(row)
        del new.cells[:]
        if row.role == dpb.ROW_SECTION:
            new.cells.extend(row.cells[:1])
            new.cells.extend(dpb.Cell() for _ in indices[1:])
        else:
            new.cells.extend(row.cells[i] for i in indices)
    if part:
        out.title = f"{table.title} {part}"
    return out


def fit_tables(table: dpb.Table, width: int, render: Callable[[dpb.Table], List[str]]) -> List[dpb.Table]:
    """``table`` as tables whose ``render``ed lines are at most ``width`` wide (``[table]`` when it fits,
    or when ``width`` is 0). Each part keeps the first printed column; a part holds at least one other
    column, however wide it is."""
    if width <= 0 or max((len(x) for x in render(table)), default=0) <= width:
        return [table]
    units = _units(table)
    if len(units) < 3:
        return [table]
    head = units[0].indices
    parts: List[List[int]] = []
    current: List[int] = []
    for u in units[1:]:
        trial = current + u.indices
        lines = render(_subtable(table, head + trial, ""))
        if current and max(len(x) for x in lines) > width:
            parts.append(current)
            current = list(u.indices)
        else:
            current = trial
    parts.append(current)
    n = len(parts)
    out = [_subtable(table, head + cols, f"({k + 1}/{n})") for k, cols in enumerate(parts)]
    for part in out:  # a name column cut to a fixed width (Paddle's kernel names) is cut shorter to fit
        first = part.columns[0]
        if first.text_truncate and first.text_width:
            excess = max(len(x) for x in render(part)) - width
            if excess > 0:
                first.text_width = max(MIN_NAME_WIDTH, first.text_width - excess)
    return out


def short_label(label: str) -> str:
    """A rank's label without what a table's own Rank column already says: "rank 5 · dp1 pp0 mp1 ·
    gpunode1 GPU1 · pid 305113" -> "dp1 pp0 mp1 · gpunode1 GPU1" (the pid stays when nothing else is left)."""
    parts = [x.strip() for x in label.split("·")]
    if parts and parts[0].startswith("rank "):
        parts = parts[1:]
    if len(parts) > 1 and parts[-1].startswith("pid "):
        parts = parts[:-1]
    return " · ".join(parts) or label


def header_lines(header: str, width: int) -> List[str]:
    """A column header over at most two lines, so that the column is as wide as its widest cell when a
    space allows it ("Exposed memcpy" over a 4-character column: "Exposed" / "memcpy")."""
    if len(header) <= width or " " not in header:
        return [header]
    words = header.split(" ")
    best = [header]
    for k in range(1, len(words)):
        a, b = " ".join(words[:k]), " ".join(words[k:])
        if max(len(a), len(b)) < max(len(x) for x in best):
            best = [a, b]
    return best
