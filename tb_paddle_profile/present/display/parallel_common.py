"""The building blocks of the run views (display/parallel.py, distributed.py, whatif.py, schedule.py):
causes and rank lists in words, the analysis's sentences as typed spans, columns, tables, rows and notes."""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence

from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.present.display.cells import (
    COUNT,
    DURATION,
    MISSING,
    PERCENT,
    TEXT,
    fmt,
    lit,
    num,
    rank,
    sentence,
    val,
)


# The panel's tag of a cause (the verdict's and the findings' `cause` ids).
CAUSES = {
    "device_compute": "device compute: check its GPU",
    "host_dataloader": "host: its data loader",
    "host": "host: check its CPU side",
    "host_stall": "host: stalls mid-step (garbage collection, checkpointing, logging?)",
    "launch_overhead": "launch overhead",
    "memcpy": "memcpy",
    "pipeline": "pipeline",
    "sequence_lengths": "data: sequence lengths across DP ranks",
}
CATEGORY_TITLE = {"anomaly": "Anomaly", "structure": "Structure", "evidence": "Evidence"}
CATEGORY_LEVEL = {"anomaly": "warning", "structure": "info", "evidence": "note"}
# How many outlier ranks the panel lists.
OUTLIERS = 8
# Rank lists printed in full up to this many ranks, as ranges beyond.
RANKS_SHOWN = 16


def cause_text(cause: str) -> str:
    return CAUSES.get(cause, cause.replace("_", " "))


def kind_label(kind: int) -> str:
    return KIND_LABELS.get(kind, "other")


def ranks_text(ranks: Iterable[int], limit: int = RANKS_SHOWN) -> str:
    """ "-" for none, "0,1,2" up to `limit` ranks, else runs of consecutive ranks as ranges ("0-127,256")."""
    ranks = list(ranks)
    if not ranks:
        return "-"
    if len(ranks) <= limit:
        return ",".join(map(str, ranks))
    s = sorted(ranks)
    out, a, b = [], s[0], s[0]
    for x in s[1:] + [None]:
        if x is not None and x == b + 1:
            b = x
            continue
        out.append(str(a) if a == b else f"{a}-{b}")
        if x is not None:
            a = b = x
    return ",".join(out)


# ------------------------------------------------------------------ sentences of the analysis

# a rank number is not a share ("the least covered rank 93%", "rank 93.5%")
_TOKEN = re.compile(r"\{ns:(-?[0-9]+)\}|\b([Rr])ank ([0-9]+)\b(?![0-9%]|\.[0-9])")


def duration(ns) -> dpb.Span:
    """A time inside a sentence: "12.34 ms" in the reader's unit."""
    return val(ns, DURATION, style="unit")


def spans(text_: str, labels: Optional[Dict[int, str]] = None) -> List[dpb.Span]:
    """The analysis's text as typed spans: each "{ns:N}" a duration, each "rank N" of a rank in
    `labels` a rank span printing the rank's label (an occurrence already written as that label is
    taken whole; "Rank N" keeps its capital)."""
    labels = labels or {}
    out: List[dpb.Span] = []
    pos = 0
    for m in _TOKEN.finditer(text_):
        if m.start() < pos:
            continue
        if m.group(1) is not None:
            span = duration(int(m.group(1)))
            end = m.end()
        else:
            r = int(m.group(3))
            if r not in labels:
                continue
            label = labels[r]
            end = m.end()
            if label and text_.startswith(label[1:], m.start() + 1):
                end = m.start() + len(label)
            shown = (m.group(2) + label[1:]) if label else m.group(0)
            span = rank(r, shown)
        if m.start() > pos:
            out.append(lit(text_[pos : m.start()]))
        out.append(span)
        pos = end
    if pos < len(text_):
        out.append(lit(text_[pos:]))
    return out


def _sentence(key: str, parts: Sequence, level: str = "info", title: str = "") -> dpb.Sentence:
    return sentence(parts, key=key, level=level, title=title)


# ------------------------------------------------------------------ columns


def col(
    key: str,
    header: str,
    kind: int = TEXT,
    digits: int = 0,
    style: str = "",
    unit: str = "",
    text_hidden: bool = False,
    panel_hidden: bool = False,
    description: str = "",
) -> dpb.Column:
    return dpb.Column(
        key=key,
        header=header,
        format=fmt(kind, unit, digits, style),
        text_hidden=text_hidden,
        panel_hidden=panel_hidden,
        description=description,
    )


def dur(key: str, header: str, **kw) -> dpb.Column:
    return col(key, header, DURATION, **kw)


def pct(key: str, header: str, digits: int = 1, **kw) -> dpb.Column:
    return col(key, header, PERCENT, digits, **kw)


def count(key: str, header: str, **kw) -> dpb.Column:
    return col(key, header, COUNT, **kw)


def _table(
    key: str,
    title: str,
    columns: List[dpb.Column],
    notes: Sequence[dpb.Sentence] = (),
    text_hidden: bool = False,
    empty: str = "",
) -> dpb.Table:
    t = dpb.Table(key=key, title=title, text=dpb.TextLayout(style="plain"), text_hidden=text_hidden, empty=empty)
    t.columns.extend(columns)
    t.notes.extend(notes)
    return t


def _row(t: dpb.Table, cells: Sequence, id: str = "", link: str = "") -> dpb.Row:
    """A row from its cells: a number, None (missing), a str (text) or a Cell."""
    row = t.rows.add(id=id, link=link)
    add = row.cells.add
    for c in cells:
        if c is None:
            add(missing=True)
        elif isinstance(c, str):
            add(text=c)
        elif isinstance(c, dpb.Cell):
            add().CopyFrom(c)
        else:
            add(number=c)
    return row


def _share(part, whole) -> dpb.Cell:
    return num(part / whole) if whole else MISSING


def _rank_link(r: int) -> str:
    return f"rank:{r}" if r >= 0 else ""


def _note(key: str, s: str) -> dpb.Sentence:
    return _sentence(key, [s], "note")


def _label(r: ppb.RankParallel) -> str:
    return r.label or r.worker


def _labels(rp: ppb.RunParallel) -> Dict[int, str]:
    return {
        r.rank: (r.label or (f"rank {r.rank}" if r.worker == f"rank{r.rank}" else f"rank {r.rank} · {r.worker}"))
        for r in rp.ranks
    }
