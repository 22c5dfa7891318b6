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
from tb_paddle_profile.present.display.parallel import parallel_display, spans
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb

WIDTH = 100
# Tables printed after the verdict and the findings (the rest before them).
_LATE_TABLES = ("pipeline", "pipeline_ranks")


def table_lines(t: dpb.Table, time_unit: str) -> List[str]:
    """One table in the plain layout."""
    shown = [i for i, c in enumerate(t.columns) if not c.text_hidden]
    header = [t.columns[i].header for i in shown]
    rows = [[visible(format_cell(t.columns[i], r.cells[i], time_unit)) for i in shown]
            for r in t.rows if not r.text_hidden]
    widths = [max(len(h), *(len(r[j]) for r in rows)) if rows else len(h) for j, h in enumerate(header)]
    line = "  ".join("-" * w for w in widths)
    out = [t.title.center(max(len(line), len(t.title)), "-")]
    out.append("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    out.append(line)
    for r in rows:
        out.append("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    out.append(line)
    note = " ".join(x for x in [t.note] + [sentence_text(s, time_unit) for s in t.notes] if x)
    if note:
        out.extend(textwrap.wrap(note, WIDTH))
    out.append("")
    return out


def render_display(display: dpb.Display) -> str:
    """The "parallel" view of `display`, in the time unit it was built for (its "units" sentence says it)."""
    unit = display.time_unit or "ms"
    (view,) = [v for v in display.views if v.key == "parallel"]
    said = lambda key: [s for s in view.sentences if s.key == key]  # noqa: E731
    txt = lambda s: sentence_text(s, unit)  # noqa: E731
    wrap = textwrap.wrap
    out: List[str] = []
    out.append(" ".join(txt(s) for s in said("headline") + said("units")))
    out.append("")
    tables = [t for t in view.tables if not t.text_hidden]
    for t in tables:
        if t.key not in _LATE_TABLES:
            out += table_lines(t, unit)

    out.append("Straggler verdict".center(WIDTH, "-"))
    for s in said("verdict"):
        out.extend(wrap(txt(s), WIDTH))
    for s in said("verdict.straggler"):
        out.extend(wrap(txt(s), WIDTH, initial_indent="  - ", subsequent_indent="    "))
    for s in said("verdict.evidence"):
        out.extend(wrap(txt(s), WIDTH))
    out.append("")

    findings = [s for s in view.sentences if s.key.startswith("finding.") and s.key.count(".") == 1]
    if findings:
        out.append("Findings".center(WIDTH, "-"))
        for s in findings:
            out.extend(wrap(f"{s.title} {txt(s)}", WIDTH, subsequent_indent="   "))
        out.append("")

    for t in tables:
        if t.key in _LATE_TABLES:
            out += table_lines(t, unit)

    out.append("Advice".center(WIDTH, "-"))
    for s in said("advice.none"):
        out.append(txt(s))
    i = 0
    for s in view.sentences:
        if not s.key.startswith("advice.") or s.key == "advice.none":
            continue
        if s.key.count(".") == 1:
            i += 1
            out.extend(wrap(f"{i}. {s.title}. {txt(s)}", WIDTH, subsequent_indent="   "))
        elif s.key.endswith(".trigger"):
            out.append(f"   {txt(s)}")
    out.append("")

    for s in said("matching"):
        out.extend(wrap(txt(s), WIDTH))
    for s in said("note"):
        out.extend(wrap(txt(s), WIDTH))
    return visible_lines(out).rstrip() + "\n"


def render(rp: ppb.RunParallel, time_unit: str = "ms") -> str:
    """The CLI's text of a RunParallel: its Display, laid out."""
    return render_display(parallel_display(rp, time_unit))


# Thin names kept for the tests that compare the panel with the CLI's formatting.
def fill_times(text: str, unit: str) -> str:
    """A sentence of the analysis with its "{ns:N}" time tokens printed in `unit`."""
    return "".join(format_value(s.format, s.value, unit) if s.is_value else s.text for s in spans(text))


def _pct(x: float) -> str:
    return format_value(cells.fmt(cells.PERCENT, digits=1), cells.num(x))


def _bytes(n: int) -> str:
    return cells.human_bytes(int(n))


__all__ = ["render", "render_display", "table_lines", "fill_times"]
