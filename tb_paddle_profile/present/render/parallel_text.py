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

from tb_paddle_profile.core.terminal import visible, visible_lines
from tb_paddle_profile.present.display import cells
from tb_paddle_profile.present.display.cells import format_cell, format_value, sentence_text
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.display.parallel_common import spans
from tb_paddle_profile.present.render.fit import DEFAULT_WIDTH, fit_tables, header_lines, short_label
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb

WIDTH = 100
TABLE_WIDTH = DEFAULT_WIDTH  # our tables' widest line; wider ones are printed in parts
# Tables printed after the verdict and the findings (the rest before them).
_LATE_TABLES = ("pipeline", "pipeline_ranks")


def table_lines(t: dpb.Table, time_unit: str, width: int = TABLE_WIDTH) -> List[str]:
    """One table in the plain layout; wider than ``width``, in parts that each fit (render/fit.py)."""
    out: List[str] = []
    for part in fit_tables(t, width, lambda x: _plain_lines(x, time_unit)):
        out += _plain_lines(part, time_unit)
    return out


def _plain_lines(t: dpb.Table, time_unit: str) -> List[str]:
    shown = [i for i, c in enumerate(t.columns) if not c.text_hidden]
    # a table with its own Rank column shows the rest of each rank's label ("dp1 pp0 mp1 · gpunode1 GPU1")
    shorten = any(t.columns[i].key == "rank" for i in shown)
    rows = []
    for r in t.rows:
        if r.text_hidden:
            continue
        cells_ = [visible(format_cell(t.columns[i], r.cells[i], time_unit)) for i in shown]
        if shorten:
            cells_ = [short_label(c) if t.columns[i].key == "label" else c for i, c in zip(shown, cells_)]
        rows.append(cells_)
    cell_widths = [max((len(r[j]) for r in rows), default=0) for j in range(len(shown))]
    heads = [header_lines(t.columns[i].header, w) for i, w in zip(shown, cell_widths)]
    widths = [max(w, *(len(h) for h in hs)) for w, hs in zip(cell_widths, heads)]
    line = "  ".join("-" * w for w in widths)
    out = [t.title.center(max(len(line), len(t.title)), "-")]
    depth = max(len(h) for h in heads) if heads else 1
    for k in range(depth):  # headers over two lines end on the same line as the others
        parts = [(hs[k - (depth - len(hs))] if k >= depth - len(hs) else "") for hs in heads]
        out.append("  ".join(h.ljust(w) for h, w in zip(parts, widths)).rstrip())
    out.append(line)
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    out.append(line)
    note = " ".join(x for x in [t.note] + [sentence_text(s, time_unit) for s in t.notes] if x)
    if note:
        out.extend(textwrap.wrap(note, WIDTH))
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
    return render_display(parallel_display(rp, time_unit), width)


# Thin names kept for the tests that compare the panel with the CLI's formatting.
def fill_times(text: str, unit: str) -> str:
    """A sentence of the analysis with its "{ns:N}" time tokens printed in `unit`."""
    return "".join(format_value(s.format, s.value, unit) if s.is_value else s.text for s in spans(text))


def _pct(x: float) -> str:
    return format_value(cells.fmt(cells.PERCENT, digits=1), cells.num(x))


def _bytes(n: int) -> str:
    return cells.human_bytes(int(n))


__all__ = ["render", "render_display", "table_lines", "fill_times"]
