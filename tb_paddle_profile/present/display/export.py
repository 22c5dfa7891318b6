"""Display tables taken away: as records, CSV (the panels' download and ``--format csv``) and
pandas DataFrames (the Python API). One derivation, three outputs.

Values are raw, not formatted: durations in ns, ratios and percents as fractions, bytes and counts as
integers; a missing cell is empty (CSV) or NaN/None (frames); a text cell gives its full text
(Cell.title where set, e.g. a kernel's whole name). Section rows ("Thread: 3") are not rows: their
text fills a ``section`` column of the rows below them; repeated header rows are dropped. A tree
table gets a ``depth`` column (0 for top-level rows).
"""
from __future__ import annotations

import csv
import io
from typing import Dict, List

from tb_paddle_profile.core.terminal import visible
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.present.display.cells import BYTES, COUNT, TEXT

_INTEGER = (COUNT, BYTES)


def _value(column: dpb.Column, cell: dpb.Cell):
    if cell.missing:
        return None
    kind = column.format.kind
    if kind == TEXT:
        return cell.title or cell.text
    if kind in _INTEGER:
        return int(cell.number)
    x = cell.number
    return int(x) if kind == dpb.CELL_DURATION and x.is_integer() else x


def header(table: dpb.Table) -> List[str]:
    has_sections = any(r.role == dpb.ROW_SECTION for r in table.rows)
    out = (["section"] if has_sections else []) + (["depth"] if table.tree else [])
    return out + [c.key for c in table.columns]


def records(table: dpb.Table) -> List[Dict[str, object]]:
    """One dict per data row, keys as in header()."""
    has_sections = any(r.role == dpb.ROW_SECTION for r in table.rows)
    section = ""
    out = []
    for row in table.rows:
        if row.role == dpb.ROW_SECTION:
            section = row.cells[0].text if row.cells else ""
            continue
        if row.role == dpb.ROW_HEADER:
            continue
        rec: Dict[str, object] = {}
        if has_sections:
            rec["section"] = section
        if table.tree:
            rec["depth"] = row.depth
        for col, cell in zip(table.columns, row.cells):
            rec[col.key] = _value(col, cell)
        out.append(rec)
    return out


# A text cell a spreadsheet would read as a formula (=HYPERLINK(...), +cmd, -1+1, @SUM, or one hidden
# after a tab or CR) is written after a quote, as OWASP advises: shown as text, never evaluated. Control
# characters are written as escapes (terminal.visible: \r, \n, \x1b...): one line per record, and a
# file that is printed (cat, less -r) carries nothing a terminal obeys.
_FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def _csv_cell(v):
    if v is None:
        return ""
    if isinstance(v, str):
        if v.startswith(_FORMULA_LEADS):
            v = "'" + v
        return visible(v)
    return v


def to_csv(table: dpb.Table) -> str:
    """The table as CSV (header() then records()); text cells neutralised against formula injection."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header(table), lineterminator="\n")
    w.writeheader()
    for rec in records(table):
        w.writerow({k: _csv_cell(v) for k, v in rec.items()})
    return buf.getvalue()


def to_frame(table: dpb.Table):
    """The table as a pandas DataFrame (columns by key, raw values; see the module docstring)."""
    import pandas as pd

    frame = pd.DataFrame.from_records(records(table), columns=header(table))
    frame.attrs["title"] = table.title
    frame.attrs["key"] = table.key
    frame.attrs["units"] = {c.key: _unit(c) for c in table.columns}
    return frame


def _unit(c: dpb.Column) -> str:
    k = c.format.kind
    return {dpb.CELL_DURATION: "ns", dpb.CELL_RATIO: "fraction", dpb.CELL_PERCENT: "fraction",
            dpb.CELL_BYTES: "bytes", dpb.CELL_COUNT: "count"}.get(k, "")
