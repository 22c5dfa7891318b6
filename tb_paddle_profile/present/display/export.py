"""Display tables taken away: as records, CSV (the panels' download and ``--format csv``) and
pandas DataFrames (the Python API). One derivation, three outputs.

Values are raw, not formatted: durations in ns, ratios and percents as fractions, bytes and counts as
integers; a missing cell is empty (CSV) or NaN/None (frames); a text cell gives its full text
(Cell.title where set, e.g. a kernel's whole name). Section rows ("Thread: 3") are not rows: their
text fills a ``section`` column of the rows below them; repeated header rows are dropped. A tree
table gets a ``depth`` column (0 for top-level rows).

The Python API's frames (api.py): ``display_frames`` (every table of a Display by key), ``tidy`` (a table's
frame as data: typed columns, one level of a tree, parent ids) and ``sentence_frame`` (the sentences).
"""

from __future__ import annotations

import csv
import io
from typing import Dict, List

from tb_paddle_profile.core.terminal import visible
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.present.display.cells import BYTES, COUNT, TEXT, sentence_text

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
    return {
        dpb.CELL_DURATION: "ns",
        dpb.CELL_RATIO: "fraction",
        dpb.CELL_PERCENT: "fraction",
        dpb.CELL_BYTES: "bytes",
        dpb.CELL_COUNT: "count",
    }.get(k, "")


# ------------------------------------------------------------------ the Python API's frames


def display_frames(display) -> Dict[str, object]:
    """Every table of a Display, by table key ("operators", "memory.Place(cpu)", ...), as DataFrames."""
    return {t.key: to_frame(t) for v in display.views for t in v.tables}


def tidy(frame, tree: str = "top"):
    """A display table's frame as data: consistent dtypes by unit (durations in ns as int64, averages
    ``*_avg_ns`` as float64, counts and bytes as int64, fractions as float64; a column with a missing
    value nullable: Int64), the ``section`` column (Paddle's "Thread: 3") as ``thread``; for a tree
    table (a ``depth`` column), ``tree="top"`` keeps the top-level rows (one per operator: sums do not
    count an inner event twice) and ``tree="inner"`` the others, each with its ``parent_id`` (the ``id``
    of the row it is under) and ``top`` (the name of its top-level row). ``id`` is the row's position
    in the display table."""
    import pandas as pd

    out = frame.copy()
    units = dict(frame.attrs.get("units", {}))
    if "depth" in out:
        out.insert(0, "id", range(len(out)))
    if "section" in out:
        out["section"] = out["section"].astype(str).str.replace(r"^Thread:\s*", "", regex=True)
        out = out.rename(columns={"section": "thread"})
    if "depth" in out:
        parents: list = []
        tops: list = []
        stack: List[tuple] = []  # (depth, id, name) of the rows above
        names = out["name"] if "name" in out else out.iloc[:, 2]
        for rid, depth, name in zip(out["id"], out["depth"], names):
            while stack and stack[-1][0] >= depth:
                stack.pop()
            parents.append(stack[-1][1] if stack else -1)
            tops.append(stack[0][2] if stack else name)
            stack.append((depth, rid, name))
        out["parent_id"], out["top"] = parents, tops
        if tree == "top":
            out = out[out["depth"] == 0].drop(columns=["depth", "parent_id", "top"])
        elif tree == "inner":
            out = out[out["depth"] > 0]
        out = out.reset_index(drop=True)
    for col, unit in units.items():
        if col not in out:
            continue
        series = pd.to_numeric(out[col], errors="coerce")
        if unit == "fraction" or (unit == "ns" and col.endswith("_avg_ns")):
            out[col] = series.astype("float64")
        elif unit in ("ns", "count", "bytes"):
            whole = series.dropna()
            if len(whole) and not (whole == whole.round()).all():
                out[col] = series.astype("float64")
            else:
                out[col] = series.round().astype("Int64" if series.isna().any() else "int64")
    for col in LIST_COLUMNS & set(out.columns):
        out[col] = [_int_list(v) for v in out[col]]
    out.attrs.update(frame.attrs, tidy=tree)
    return out


# Text columns that hold lists of integers in the display ("0,1,4", "[2, 1, 1]"): lists in the frames.
LIST_COLUMNS = {"ranks", "sizes", "examples", "members", "grid", "block"}


def _int_list(value):
    if not isinstance(value, str):
        return value
    if ";" in value:  # groups: "1,3; 0,2"
        groups = [_int_list(g) for g in value.split(";")]
        return groups if all(isinstance(g, list) for g in groups) else value
    parts = [p.strip() for p in value.strip().strip("[]").split(",")]
    try:
        return [int(p) for p in parts if p]
    except ValueError:
        return value  # not a list of numbers ("…" of a cut list, a name): kept as it is


def sentence_frame(display, time_unit: str = "ms"):
    """Every sentence of a Display's views as a frame: view, key, level, title, text, and where it belongs
    (section, part, rule: display.proto's Sentence)."""
    import pandas as pd

    columns = ["view", "key", "level", "title", "text", "section", "part", "rule"]
    rows = [
        {
            "view": v.key,
            "key": s.key,
            "level": s.level,
            "title": s.title,
            "text": sentence_text(s, time_unit),
            "section": s.section,
            "part": s.part,
            "rule": s.rule,
        }
        for v in display.views
        for s in v.sentences
    ]
    return pd.DataFrame(rows, columns=columns)
