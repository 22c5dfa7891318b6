"""`tb-paddle-profile report`: the display model of a run as ONE self-contained HTML file.

Rendered from the display model only (present/display: the views, their sentences and tables, the cells
formatted by display/cells.py as the CLI and the tab format them): nothing is computed here. The page
has its CSS inline, no script, no font, no image and no link to anything outside itself, so that it
opens from disk, offline, and can be attached to an issue or an e-mail.
"""

from __future__ import annotations

import datetime
import html
from typing import Sequence, Tuple

from tb_paddle_profile.core.version import __version__
from tb_paddle_profile.present.display.cells import format_cell, span_text
from tb_paddle_profile.v1 import display_pb2 as dpb

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#fafbfc}
header{background:#1d2a44;color:#fff;padding:16px 28px}header h1{margin:0;font-size:20px}
header p{margin:4px 0 0;opacity:.8;font-size:13px}
main{padding:8px 28px 40px;max-width:1500px}
nav{margin:12px 0;font-size:13px}nav a{margin-right:14px;color:#2456a6}
section.view{margin-top:28px}h2{font-size:18px;border-bottom:2px solid #d5dbe6;padding-bottom:4px}
h3{font-size:15px;margin:22px 0 6px}
p.sentence{margin:6px 0;padding:6px 10px;border-left:4px solid #9aa7bd;background:#fff}
p.warning{border-color:#d08a00;background:#fff8e8}p.good{border-color:#2f9e44;background:#effaf1}
p.note{border-color:#c3cad6;color:#4b5565;font-size:13px}
.scroll{overflow-x:auto;max-height:640px;overflow-y:auto;border:1px solid #dde2ea;background:#fff}
table{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:3px 8px;border-bottom:1px solid #eef1f5;white-space:nowrap;text-align:right}
th{position:sticky;top:0;background:#eef2f8;text-align:center}td.text{text-align:left}
tr.total td{font-weight:600;background:#f5f7fb}tr.section td{font-weight:600;background:#e9eef7;text-align:left}
tr.header td{font-weight:600;background:#eef2f8;text-align:center}
p.empty,p.tnote{color:#5b6575;font-size:13px;margin:4px 0}pre.note{font-size:12px;color:#4b5565}
footer{color:#7a8494;font-size:12px;margin-top:40px}
"""

ROLE_CLASS = {dpb.ROW_TOTAL: "total", dpb.ROW_SECTION: "section", dpb.ROW_HEADER: "header"}


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def sentence_html(s: dpb.Sentence, time_unit: str) -> str:
    body = "".join(
        f"<b>{_esc(span_text(x, time_unit))}</b>" if x.is_value or x.is_rank else _esc(span_text(x, time_unit))
        for x in s.spans
    )
    title = f"<b>{_esc(s.title)}:</b> " if s.title else ""
    return f'<p class="sentence {_esc(s.level or "info")}" data-key="{_esc(s.key)}">{title}{body}</p>'


def table_html(t: dpb.Table, time_unit: str, view_key: str = "") -> str:
    cols = list(t.columns)
    out = [f'<h3 id="{_esc(view_key)}.{_esc(t.key)}">{_esc(t.title)}</h3>']
    if not t.rows:
        out.append(f'<p class="empty">{_esc(t.empty or "No rows.")}</p>')
    else:
        out.append(f'<div class="scroll"><table data-key="{_esc(t.key)}"><thead><tr>')
        out.extend(f'<th title="{_esc(c.description)}">{_esc(c.header or c.key)}</th>' for c in cols)
        out.append("</tr></thead><tbody>")
        for row in t.rows:
            cls = ROLE_CLASS.get(row.role, "")
            out.append(f'<tr class="{cls}">' if cls else "<tr>")
            for i, (c, cell) in enumerate(zip(cols, row.cells)):
                is_text = c.format.kind == dpb.CELL_TEXT
                shown = cell.text if is_text else format_cell(c, cell, time_unit)
                pad = f' style="padding-left:{8 + 14 * row.depth}px"' if i == 0 and row.depth else ""
                tip = f' title="{_esc(cell.title)}"' if cell.title else ""
                out.append(f'<td class="{"text" if is_text else "num"}"{pad}{tip}>{_esc(shown)}</td>')
            out.append("</tr>")
        out.append("</tbody></table></div>")
    out.extend(f'<p class="tnote">{_esc(span_text_all(s, time_unit))}</p>' for s in t.notes)
    if t.note:
        out.append(f'<pre class="note">{_esc(t.note)}</pre>')
    return "".join(out)


def span_text_all(s: dpb.Sentence, time_unit: str) -> str:
    return "".join(span_text(x, time_unit) for x in s.spans)


def top_rows(display: dpb.Display, keys: Sequence[str], n: int, title: str) -> dpb.Display:
    """A Display of one view holding the tables ``keys`` of ``display`` cut to their first ``n``
    top-level rows (with the rows under them): a rank's top operators and kernels for the report."""
    out = dpb.Display(time_unit=display.time_unit)
    view = out.views.add(key="rank", title=title)
    by_key = {t.key: t for v in display.views for t in v.tables}
    for key in keys:
        if key not in by_key:
            continue
        t = view.tables.add()
        t.CopyFrom(by_key[key])
        del t.rows[:]
        kept = 0
        for row in by_key[key].rows:
            if row.role == dpb.ROW_DATA and row.depth == 0:
                kept += 1
            if kept > n:
                break
            t.rows.add().CopyFrom(row)
        t.title = f"{t.title} (the first {n})" if kept > n else t.title
    return out


def render_report(
    title: str, displays: Sequence[Tuple[str, dpb.Display]], time_unit: str = "ms", notes: Sequence[str] = ()
) -> str:
    """The HTML page: ``displays`` [(heading, Display)], each view a section (its sentences, then its
    tables, the CLI's and the panels' own); ``notes`` (the run's loading notes) at the end."""
    sections, links = [], []
    for heading, display in displays:
        for v in display.views:
            anchor = f"{heading}-{v.key}".replace(" ", "-")
            links.append(f'<a href="#{_esc(anchor)}">{_esc(heading)}: {_esc(v.title or v.key)}</a>')
            body = [f'<section class="view" id="{_esc(anchor)}"><h2>{_esc(heading)}: {_esc(v.title or v.key)}</h2>']
            body.extend(sentence_html(s, time_unit) for s in v.sentences)
            body.extend(table_html(t, time_unit, v.key) for t in v.tables)
            body.append("</section>")
            sections.append("".join(body))
    made = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    note_html = "".join(f'<p class="sentence note">{_esc(n)}</p>' for n in notes)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{_esc(title)} · tb-paddle-profile report</title><style>{CSS}</style></head><body>"
        f"<header><h1>{_esc(title)}</h1><p>tb-paddle-profile {__version__} report · times in "
        f"{_esc(time_unit)} · made {made}</p></header><main><nav>{''.join(links)}</nav>"
        f"{''.join(sections)}"
        + (f'<section class="view"><h2>Notes</h2>{note_html}</section>' if notes else "")
        + "<footer>Every number here is a cell of the tool's display model, formatted as the CLI and "
        "the TensorBoard tab format it. The page loads nothing from the network.</footer>"
        "</main></body></html>\n"
    )
