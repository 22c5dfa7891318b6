"""The "whatif" Display (display/whatif.py) in the terminal, for ``tb-paddle-profile whatif``.

Layout only: the critical-path headline, the what-if sentences, then every table the text shows in
the plain layout of render/parallel_text.py, then the schedule and MFU sentences and the notes.
"""
from __future__ import annotations

import textwrap
from typing import List

from tb_paddle_profile.core.terminal import visible_lines
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.present.render.parallel_text import WIDTH, table_lines


def render_display(display: dpb.Display) -> str:
    unit = display.time_unit or "ms"
    (view,) = [v for v in display.views if v.key == "whatif"]
    out: List[str] = []
    head = ("whatif.path", "whatif.best", "whatif.best.straggler", "whatif.best.none")
    for s in view.sentences:
        if s.key in head + ("units",):
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
    out.append("")
    for t in view.tables:
        if not t.text_hidden:
            out += table_lines(t, unit)
    for s in view.sentences:
        if s.key.startswith("whatif.") and s.key not in head:
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH, initial_indent="- ", subsequent_indent="  "))
    rest = [s for s in view.sentences if not s.key.startswith("whatif.") and s.key not in ("note", "units")]
    if rest:
        out.append("")
        for s in rest:
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
    notes = [s for s in view.sentences if s.key == "note"]
    if notes:
        out.append("")
        for s in notes:
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
    return visible_lines(out).rstrip() + "\n"
