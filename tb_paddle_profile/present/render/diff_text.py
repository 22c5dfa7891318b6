"""A RunDiff (display/diff.py) in the terminal, for ``tb-paddle-profile diff``.

Layout only: the two sides, then per view its sentences (the verdict first, then how the sides were
aligned) and its printed tables in the Paddle-style layout of render/text.py (a value column's baseline,
candidate, delta and delta % print as one "a / b / c / d" column).
"""

from __future__ import annotations

import textwrap
from typing import List

from tb_paddle_profile.core.terminal import visible_lines
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.present.render.fit import DEFAULT_WIDTH, fit_tables
from tb_paddle_profile.present.render.text import render_table


def _lines(table, unit: str) -> List[str]:
    out: List[str] = []
    render_table(table, unit, out)
    return out


WIDTH = 100


def render_text(result, time_unit: str = "ms", width: int = DEFAULT_WIDTH) -> str:
    """The text of a RunDiff; a table wider than ``width`` is printed in parts (render/fit.py; 0: never)."""
    unit = result.display.time_unit or time_unit
    out: List[str] = [f"Baseline:  {result.baseline.label}", f"Candidate: {result.candidate.label}"]
    said = {sentence_text(s, unit) for v in result.display.views for s in v.sentences}
    out += [line for line in result.alignment if line not in said]  # e.g. the ranks a side left out
    out.append("")
    for view in result.display.views:
        tables = [t for t in view.tables if not t.text_hidden]
        if not tables and not view.sentences:
            continue
        for s in view.sentences:
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
        if view.sentences:
            out.append("")
        for t in tables:
            if not t.rows:
                continue
            for part in fit_tables(t, width, lambda x: _lines(x, unit)):
                render_table(part, unit, out)
            for s in t.notes:
                out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
            out.append("")
    return visible_lines(out).rstrip() + "\n"
