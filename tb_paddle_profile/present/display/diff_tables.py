"""The generic side-by-side table of a comparison (display/diff.py): :func:`diff_table` makes one table of
two tables of the same key, the rows matched by their Row.id, each value column as its baseline, candidate,
delta and delta % (docs/diff.md); ``diff_link`` the link of a delta row to both timelines."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple, cast
from urllib.parse import quote, urlencode

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.present.display.cells import (
    DURATION,
    PERCENT,
    RATIO,
    TEXT,
    fmt,
    num,
    sentence,
    text,
)

# Value columns the CLI prints (and the panels draw) by default; the others are in the CSV, JSON and frames.
PRIMARY = (
    "calls",
    "time_ns",
    "utilization",
    "value",
    "cpu_total_ns",
    "gpu_total_ns",
    "allocation_count",
    "allocation_size",
    "free_size",
    "increased_size",
)
# Numeric columns that name the row rather than measure it (model_steps: the step number).
IDENTITY = ("step",)
_SIDES = ("baseline", "candidate")
_NEW, _REMOVED = "new", "removed"


def diff_link(baseline_worker: str, candidate_worker: str, name: str) -> str:
    """The link of a delta row: both timelines (either worker empty where the row does not exist), the name."""
    return "diff:" + urlencode({"b": baseline_worker, "c": candidate_worker, "q": name}, quote_via=quote)


class _Node:
    __slots__ = ("key", "rows", "children")

    def __init__(self, key: str):
        self.key = key
        self.rows: Dict[str, dpb.Row] = {}
        self.children: Dict[str, "_Node"] = {}


def _row_key(table: dpb.Table, row: dpb.Row, col_index: Dict[str, int]) -> str:
    """The row's identity across two traces: its id, with an input-shape group's index replaced by its shapes;
    rows without an id: their text cells."""
    rid = row.id or "\x02".join(c.text for c in row.cells)
    if "\x01s:" in rid and "input_shapes" in col_index:
        rid = rid.rsplit("\x01s:", 1)[0] + "\x01s:" + row.cells[col_index["input_shapes"]].text
    return rid


def _forest(table: dpb.Table, side: str, root: _Node) -> None:
    """Add the table's rows to the tree under ``root`` (sections are nodes of depth -1)."""
    col_index = {c.key: i for i, c in enumerate(table.columns)}
    stack: List[Tuple[int, _Node]] = [(-1, root)]  # (depth, node): the open ancestors
    for row in table.rows:
        if row.role == dpb.ROW_HEADER:
            row = dpb.Row(
                cells=[text(row.cells[0].text or row.id.upper())] + list(row.cells[1:]), role=dpb.ROW_SECTION, id=row.id
            )
        key = _row_key(table, row, col_index)
        if row.role == dpb.ROW_SECTION:
            section = root.children.setdefault(key, _Node(key))
            section.rows[side] = row
            stack = [(-1, section)]
            continue
        while len(stack) > 1 and stack[-1][0] >= row.depth:
            stack.pop()
        node = stack[-1][1].children.setdefault(key, _Node(key))
        node.rows[side] = row
        stack.append((row.depth, node))


def _is_identity(c: dpb.Column) -> bool:
    """A column that names the row (copied from the side that has it): text outside a column group, the step."""
    return (c.format.kind == TEXT and not c.group) or c.key in IDENTITY


def _value_columns(table: dpb.Table) -> List[dpb.Column]:
    """The measured columns (each as baseline / candidate / delta / delta %); grouped text attributes (a kernel's
    grid and block, "Tensor Cores") are left out."""
    return [c for c in table.columns if not _is_identity(c) and c.format.kind != TEXT]


def _header(c: dpb.Column, groups: Dict[str, dpb.ColumnGroup]) -> str:
    g = groups.get(c.group)
    prefix = (g.panel_header or g.key.upper()) if g is not None and c.group in ("cpu", "gpu") else ""
    return f"{prefix} {c.header}".strip()


def _cell(row: Optional[dpb.Row], index: Optional[int]) -> Optional[dpb.Cell]:
    if row is None or index is None or index >= len(row.cells):
        return None
    return row.cells[index]


def _number(cell: Optional[dpb.Cell]) -> Optional[float]:
    if cell is None or cell.missing or cell.text:
        return None
    return cell.number


def diff_table(
    baseline: Optional[dpb.Table],
    candidate: Optional[dpb.Table],
    workers: Tuple[str, str] = ("", ""),
    sort_column: str = "",
    sort: bool = True,
) -> dpb.Table:
    """Two Tables of the same key side by side (see the module docstring); either may be None (a table only one
    side has: every row new or removed)."""
    ref = cast(dpb.Table, baseline if baseline is not None else candidate)  # (not both None)
    groups = {g.key: g for g in ref.groups}
    ident = [c for c in ref.columns if _is_identity(c)]
    values = _value_columns(ref)
    index = {
        side: ({c.key: i for i, c in enumerate(t.columns)} if t is not None else {})
        for side, t in zip(_SIDES, (baseline, candidate))
    }
    out = dpb.Table(
        key=ref.key,
        title=f"{ref.title}: baseline vs candidate",
        tree=ref.tree,
        empty=ref.empty,
        paddle_view=ref.paddle_view,
        text_hidden=ref.text_hidden,
    )
    out.text.CopyFrom(
        dpb.TextLayout(
            style="paddle",
            time_unit_line=any(c.format.kind == DURATION for c in values),
            closing_separator=True,
            blank_lines_after=1,
        )
    )
    heads = [list(t.text.head_lines) if t is not None else [] for t in (baseline, candidate)]
    for i in range(max(len(h) for h in heads)):  # "Peak Allocated Memory: 12" on each side -> "...: 12 / 14"
        b_line, c_line = (h[i] if i < len(h) else "" for h in heads)
        label, _, b_value = b_line.rpartition(": ")
        c_label, _, c_value = c_line.rpartition(": ")
        out.text.head_lines.append(f"{label or c_label}: {b_value or '-'} / {c_value or '-'} (baseline / candidate)")
    for c in ident:
        col = out.columns.add()
        col.CopyFrom(c)
        col.panel_hidden = c.panel_hidden
    out.columns.add(
        key="status",
        header="Status",
        format=fmt(TEXT),
        text_min_width=7,
        description="new: only in the candidate; removed: only in the baseline",
    )
    specs = []  # (source key, kind)
    for c in values:
        primary = c.key in PRIMARY or ref.key == "model_steps"
        hidden_text = c.text_hidden or not primary
        hidden_panel = c.panel_hidden or not primary
        header = _header(c, groups)
        pct = c.format.kind not in (RATIO, PERCENT)
        out.groups.add(
            key=c.key, header=f"{header} (baseline / candidate / delta{' / %' if pct else ''})", panel_header=header
        )
        base_fmt = dpb.Format()
        base_fmt.CopyFrom(c.format)
        for suffix, title in (("baseline", "Baseline"), ("candidate", "Candidate"), ("delta", "Delta")):
            col = out.columns.add(
                key=f"{c.key}_{suffix}",
                header=title,
                format=base_fmt,
                group=c.key,
                description=f"{c.description or header}: {suffix}"
                if suffix != "delta"
                else f"{header}: candidate − baseline (a missing side counts as 0)",
                text_hidden=hidden_text,
                panel_hidden=hidden_panel,
            )
            if c.HasField("panel_format"):
                col.panel_format.CopyFrom(c.panel_format)
        if pct:
            out.columns.add(
                key=f"{c.key}_delta_pct",
                header="Delta %",
                format=fmt(PERCENT, digits=1),
                group=c.key,
                description=f"{header}: delta / baseline",
                text_hidden=hidden_text,
                panel_hidden=hidden_panel,
            )
        specs.append((c.key, pct))

    root = _Node("")
    for side, t in zip(_SIDES, (baseline, candidate)):
        if t is not None:
            _forest(t, side, root)

    sort_on = (
        sort_column
        if sort_column in {c.key for c in values}
        else next(
            (k for k in ("gpu_total_ns", "cpu_total_ns", "increased_size", "time_ns") if k in {c.key for c in values}),
            "",
        )
    )
    counts = {_NEW: 0, _REMOVED: 0}

    value_keys = {c.key for c in values}
    then_by = [k for k in ("gpu_total_ns", "cpu_total_ns") if k in value_keys and k != sort_on]

    def delta_of(node: _Node, key: str) -> float:
        vals = [_number(_cell(node.rows.get(s), index[s].get(key))) for s in _SIDES]
        return (vals[1] or 0.0) - (vals[0] or 0.0)

    def order(node: _Node):
        """By |delta| of the sort column, then of the other side's total (largest first)."""
        return tuple(-abs(delta_of(node, k)) for k in [sort_on] + then_by)

    def emit(node: _Node, depth: int, parent_name: str = "") -> None:
        b, c = node.rows.get("baseline"), node.rows.get("candidate")
        src = cast(dpb.Row, b if b is not None else c)  # (a node has a row on one side at least)
        if src.role == dpb.ROW_SECTION:
            if not node.children:  # a section with no rows on either side (the GPU half of a CPU rank)
                return
            out.rows.add(
                cells=[text(src.cells[0].text)] + [text("")] * (len(out.columns) - 1), role=dpb.ROW_SECTION, id=src.id
            )
        else:
            status = "" if b is not None and c is not None else (_NEW if b is None else _REMOVED)
            if status:
                counts[status] += 1
            cells = []
            for col in ident:
                cell = _cell(src, index["baseline" if b is not None else "candidate"].get(col.key))
                cells.append(cell if cell is not None else text(""))
            cells.append(text(status))
            for key, pct in specs:
                vals = [_number(_cell(row, index[s].get(key))) for s, row in zip(_SIDES, (b, c))]
                cells += [num(v) for v in vals]
                both_missing = all(v is None for v in vals)
                delta = None if both_missing else (vals[1] or 0.0) - (vals[0] or 0.0)
                cells.append(num(delta))
                if pct:
                    cells.append(num(delta / vals[0]) if delta is not None and vals[0] else num(None))
            # the event the source row's timeline link searches; a row without one (a kernel's launch
            # configuration) its parent's; a top-level row without one (the Model stages) its name
            name = (
                src.link[len("timeline:") :]
                if src.link.startswith("timeline:")
                else (parent_name or (src.cells[0].text if src.cells else ""))
            )
            link = diff_link(workers[0] if b is not None else "", workers[1] if c is not None else "", name)
            out.rows.add(cells=cells, depth=depth, role=src.role, id=src.id, link=link, text_hidden=src.text_hidden)
        kids = list(node.children.values())
        if sort and sort_on:
            kids.sort(key=order)
        for kid in kids:
            if src.role == dpb.ROW_SECTION:
                emit(kid, 0)
            else:
                emit(kid, depth + 1, name)

    top = list(root.children.values())
    if (
        sort
        and sort_on
        and not any(cast(dpb.Row, n.rows.get("baseline", n.rows.get("candidate"))).role == dpb.ROW_SECTION for n in top)
    ):
        top.sort(key=order)
    for node in top:
        emit(node, 0)
    for col in out.columns[len(ident) :]:
        col.text_min_width = max(col.text_min_width, len(col.header))
    for g in out.groups:
        g.text_min_width = max(g.text_min_width, len(g.header))
    how = (
        "name and input shapes"
        if "input_shapes" in index["baseline"] or "input_shapes" in index["candidate"]
        else "name"
    )
    sorted_on = f", by |delta| of {sort_on}" if sort and sort_on else ""
    out.notes.append(
        sentence(
            [f"Rows matched by {how}{sorted_on}: {counts[_NEW]} new, {counts[_REMOVED]} removed."],
            key="diff.matching",
            level="note",
        )
    )
    return out


def _tables(display: dpb.Display) -> Dict[str, Tuple[str, dpb.Table]]:
    """table key -> (view key, table); per-thread tables left out (thread ids differ between traces)."""
    return {t.key: (v.key, t) for v in display.views for t in v.tables if ".thread." not in t.key}


def _sort_column(sorted_by: str) -> str:
    return "cpu_total_ns" if sorted_by.startswith("CPU") else "gpu_total_ns"
