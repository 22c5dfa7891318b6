"""The "whatif" Display (display/whatif.py) in the terminal, for ``tb-paddle-profile whatif``.

Layout only, by the sentences' sections: the units, the critical path and the headline, then every table
the text shows in the plain layout of render/parallel_text.py, the estimates as bullets, then the schedule
and MFU sentences and the notes.
"""

from __future__ import annotations

import textwrap
from typing import List

from tb_paddle_profile.core.terminal import visible_lines
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.present.render.parallel_text import WIDTH, table_lines


# The sections printed in the head (in the model's order), as bullets under the tables, and last; the
# others (the schedule's, MFU's) between those.
HEAD = ("units", "path", "headline")
BULLETS = "estimates"
LAST = "notes"


def render_display(display: dpb.Display) -> str:
    unit = display.time_unit or "ms"
    (view,) = [v for v in display.views if v.key == "whatif"]
    out: List[str] = []
    for s in view.sentences:
        if s.section in HEAD:
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
    out.append("")
    for t in view.tables:
        if not t.text_hidden:
            out += table_lines(t, unit)
    for s in view.sentences:
        if s.section == BULLETS:
            out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH, initial_indent="- ", subsequent_indent="  "))
    for group in (
        [s for s in view.sentences if s.section not in HEAD + (BULLETS, LAST)],
        [s for s in view.sentences if s.section == LAST],
    ):
        if group:
            out.append("")
            for s in group:
                out.extend(textwrap.wrap(sentence_text(s, unit), WIDTH))
    return visible_lines(out).rstrip() + "\n"
