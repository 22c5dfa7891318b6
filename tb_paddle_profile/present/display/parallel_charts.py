"""The series of the hybrid-parallel view's charts (display/parallel.py puts them in the view; the panels
draw them as they are): the step breakdown of every rank and step and of every rank's mean step
(``breakdown_steps``, ``breakdown_mean``).

A bar of the breakdown is the step split exactly: compute only + hidden communication + each kind's
exposed communication + exposed memcpy + idle = the step. Kinds can overlap one another, so each kind's
drawn height is cut so that the kinds together fill exactly the exposed communication (the kinds stacked in
KIND_ORDER; exposed time no kind accounts for drawn with the last kind); the tooltip gives each kind's own
exposed time. A part that is zero in every bar of a chart is not one of its parts.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from tb_paddle_profile.analysis import collectives as co
from tb_paddle_profile.present.display.parallel_common import (
    _label,
    _note,
    _rank_link,
    _row,
    _share,
    _table,
    col,
    count,
    dur,
)
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.present.display.cells import PERCENT

# The order the kinds are stacked in (and their legend's).
KIND_ORDER = (co.ALL_REDUCE, co.ALL_GATHER, co.REDUCE_SCATTER, co.BROADCAST, co.SEND_RECV, co.ALL_TO_ALL, co.OTHER)
# Column groups of a breakdown table: each part's own time, the height it is drawn with, its share of the step.
PART, BAR, SHARE = "part", "bar", "share"


class _Bar:
    """One bar: the step's parts (own times, in the chart's order) and its step time."""

    def __init__(self, total, compute_only, hidden, exposed, kinds: Dict[int, float], memcpy, idle):
        self.total, self.exposed = total, exposed
        self.fixed = {
            "compute_ns": compute_only,
            "hidden_comm_ns": hidden,
            "exposed_memcpy_ns": memcpy,
            "idle_ns": idle,
        }
        self.kinds = kinds

    def drawn(self, kinds: Sequence[int]) -> Dict[int, float]:
        out: Dict[int, float] = {}
        left = self.exposed
        for k in kinds:
            v = max(0, min(self.kinds.get(k, 0), left))
            out[k] = v
            left -= v
        if left > 0 and kinds:
            out[kinds[-1]] = out.get(kinds[-1], 0) + left
        return out

    def parts(self, kinds: Sequence[int]) -> List[Tuple[str, float, float]]:
        """(column key, own time, drawn height) in the chart's order."""
        d = self.drawn(kinds)
        f = self.fixed
        return (
            [
                ("compute_ns", f["compute_ns"], f["compute_ns"]),
                ("hidden_comm_ns", f["hidden_comm_ns"], f["hidden_comm_ns"]),
            ]
            + [(f"exposed_{co.KIND_LABELS[k]}_ns", self.kinds.get(k, 0), d[k]) for k in kinds]
            + [
                ("exposed_memcpy_ns", f["exposed_memcpy_ns"], f["exposed_memcpy_ns"]),
                ("idle_ns", f["idle_ns"], f["idle_ns"]),
            ]
        )


def _headers(kinds: Sequence[int]) -> Dict[str, str]:
    out = {
        "compute_ns": "Compute",
        "hidden_comm_ns": "Hidden comm",
        "exposed_memcpy_ns": "Exposed memcpy",
        "idle_ns": "Idle",
    }
    out.update({f"exposed_{co.KIND_LABELS[k]}_ns": f"Exposed {co.KIND_LABELS[k]}" for k in kinds})
    return out


def _step_bar(s) -> _Bar:
    return _Bar(
        s.range.end_ns - s.range.start_ns,
        s.compute_ns - s.hidden_communication_ns,
        s.hidden_communication_ns,
        s.exposed_communication_ns,
        {k.kind: k.exposed_ns for k in s.kinds},
        s.exposed_memory_ns,
        s.idle_ns,
    )


def _mean_bar(r: ppb.RankParallel) -> _Bar:
    n = max(1, r.steps)
    return _Bar(
        r.step_time_ns,
        r.compute_ns - r.hidden_communication_ns,
        r.hidden_communication_ns,
        r.exposed_communication_ns,
        {k.kind: k.exposed_ns / n for k in r.kinds},
        r.exposed_memory_ns,
        r.idle_ns,
    )


def rank_name(r: ppb.RankParallel) -> str:
    """A rank on a chart's axis: "rank N", "*" where its number was inferred."""
    return f"rank {r.rank}{'*' if r.rank_inferred else ''}"


KINDS_NOTE = (
    "Where kinds overlap one another, the overlap is drawn with the first kind; the tooltip gives each kind's "
    "own exposed time."
)


def _breakdown(
    key: str,
    title: str,
    cells: Sequence[Tuple[ppb.RankParallel, Optional[int], Optional[_Bar]]],
    kinds: Sequence[int],
    note: bool = False,
) -> dpb.Table:
    """The table of one breakdown chart: a row per bar (rank, step; a missing bar's cells missing)."""
    drawn_any: Dict[str, bool] = {}
    for _, _, b in cells:
        for k, _, drawn in b.parts(kinds) if b else []:
            drawn_any[k] = drawn_any.get(k, False) or drawn > 0
    headers = _headers(kinds)
    shown = [k for k, _, _ in _Bar(0, 0, 0, 0, {}, 0, 0).parts(kinds) if drawn_any.get(k)]
    t = _table(
        key,
        title,
        [
            count("rank", "Rank", panel_hidden=True),
            col("name", "Rank"),
            col("label", "Label"),
            col("worker", "Worker", text_hidden=True, panel_hidden=True),
            count("step", "Step"),
            dur("total_ns", "Step time"),
            dur("exposed_comm_ns", "Exposed comm (all kinds)"),
        ]
        + [dpb.Column(key=k, header=headers[k], format=dur(k, "").format, group=PART) for k in shown]
        + [
            dpb.Column(key=k.replace("_ns", "_bar_ns"), header=headers[k], format=dur(k, "").format, group=BAR)
            for k in shown
        ]
        + [
            dpb.Column(
                key=k.replace("_ns", "_share"), header=headers[k], format=col(k, "", PERCENT, 1).format, group=SHARE
            )
            for k in shown
        ],
        [_note("breakdown.kinds", KINDS_NOTE)] if note and len(kinds) > 1 else [],
        text_hidden=True,
    )
    t.groups.extend(
        [
            dpb.ColumnGroup(key=PART, header="Parts of the step"),
            dpb.ColumnGroup(key=BAR, header="Drawn heights (the kinds cut to the exposed time)"),
            dpb.ColumnGroup(key=SHARE, header="Shares of the step"),
        ]
    )
    for r, step, b in cells:
        head = [r.rank, rank_name(r), _label(r), r.worker, step]
        if b is None:
            _row(t, head + [None] * (2 + 3 * len(shown)), f"{r.worker}:{step}", _rank_link(r.rank))
            continue
        parts = {k: (own, drawn) for k, own, drawn in b.parts(kinds)}
        _row(
            t,
            head
            + [b.total, b.exposed]
            + [parts[k][0] for k in shown]
            + [parts[k][1] for k in shown]
            + [_share(parts[k][0], b.total) for k in shown],
            f"{r.worker}:{step}",
            _rank_link(r.rank),
        )
    return t


def kinds_present(rp: ppb.RunParallel) -> List[int]:
    have = {k.kind for k in rp.kinds}
    return [k for k in KIND_ORDER if k in have]


def breakdown_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """``breakdown_steps``: a row per rank and step of the run (rank-major, the run's steps in order; a rank
    without the step has its cells missing), with the note on overlapping kinds (for both charts);
    ``breakdown_mean``: a row per rank, its mean step."""
    kinds = kinds_present(rp)
    steps = list(rp.steps)
    cells: List[Tuple[ppb.RankParallel, Optional[int], Optional[_Bar]]] = []
    for r in rp.ranks:
        by_step = {s.step: s for s in r.step_breakdown}
        cells += [(r, step, _step_bar(by_step[step]) if step in by_step else None) for step in steps]
    mean = [(r, None, _mean_bar(r)) for r in rp.ranks]
    return [
        _breakdown("breakdown_steps", "Step breakdown, rank × step", cells, kinds, note=True),
        _breakdown("breakdown_mean", "Step breakdown, mean per step", mean, kinds),
    ]


# ------------------------------------------------------------------ rank × step heatmaps

# At most this many rows in a heatmap: beyond, consecutive ranks are binned (each bin holds its maximum).
MAX_HEAT_ROWS = 128


def heat_bins(n: int, max_rows: Optional[int] = None) -> List[Tuple[int, int]]:
    """The rows of a heatmap of `n` ranks: (first, last) index of each bin of consecutive ranks, at most
    `max_rows` (MAX_HEAT_ROWS) of them."""
    size = max(1, -(-n // (max_rows or MAX_HEAT_ROWS)))
    return [(i, min(n, i + size) - 1) for i in range(0, n, size)]


def heat_table(rp: ppb.RunParallel, key: str, title: str, matrix: ppb.RankStepMatrix) -> dpb.Table:
    """A rank × step heatmap of ``matrix``: a row per bin of consecutive ranks (one rank each up to
    MAX_HEAT_ROWS ranks), per step the bin's largest value (missing where no rank of the bin has the step),
    the rank that has it and its worker; Table.scale is the range of the values drawn."""
    steps = list(rp.steps)
    ranks = list(rp.ranks)
    values = list(matrix.values_ns)
    t = _table(
        key,
        title,
        [col("name", "Ranks"), col("title", "Ranks", text_hidden=True), count("ranks", "Rank count")]
        + [dpb.Column(key=f"step_{s}", header=f"#{s}", format=dur("", "").format, group="value") for s in steps]
        + [dpb.Column(key=f"worst_{s}", header=f"#{s}: worst rank", group="worst") for s in steps]
        + [
            dpb.Column(key=f"worst_{s}_worker", header=f"#{s}: its worker", group="worker", panel_hidden=True)
            for s in steps
        ],
        text_hidden=True,
    )
    drawn: List[int] = []
    for a, b in heat_bins(len(ranks)):
        best: List[Optional[Tuple[int, ppb.RankParallel]]] = []
        for si in range(len(steps)):
            top, worst = -1, None
            for ri in range(a, b + 1):
                i = ri * len(steps) + si
                v = values[i] if i < len(values) else -1
                if v >= 0 and v > top:
                    top, worst = v, ranks[ri]
            best.append((top, worst) if worst is not None else None)
        drawn += [x[0] for x in best if x]
        name = rank_name(ranks[a]) if a == b else f"ranks {ranks[a].rank}–{ranks[b].rank}"
        head = _label(ranks[a]) if a == b else f"{name} ({b - a + 1} ranks)"
        _row(
            t,
            [name, head, b - a + 1]
            + [x[0] if x else None for x in best]
            + [_label(x[1]) if x else None for x in best]
            + [x[1].worker if x else None for x in best],
            ranks[a].worker if a == b else f"{a}-{b}",
            _rank_link(ranks[a].rank) if a == b else "",
        )
    lo, hi = (min(drawn), max(drawn)) if drawn else (0, 1)
    t.scale.CopyFrom(dpb.ChartScale(min=lo, max=hi if hi != lo else lo + 1))
    return t
