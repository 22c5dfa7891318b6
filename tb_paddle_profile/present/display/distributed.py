"""The Distributed view of a run: every rank's Distribution Summary side by side and per step
(``distributed_display``), and the series its charts draw: each rank's split of its steps into computation
only, overlap, communication only and the rest (``rank_parts``), per step for every rank (``step_parts``) or,
beyond MANY_RANKS ranks, the ranks' mean split and the slowest rank (``step_means``)."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import MISSING, PERCENT, RATIO, num
from tb_paddle_profile.present.display.parallel_common import (
    _sentence,
    col,
    dur,
    count,
    _table,
    _row,
    _rank_link,
    _note,
    _share,
)


DISTRIBUTED_NOTE = "Ratio = time / total step time of the rank. Other = step time − (communication ∪ computation)."
NO_COMMUNICATION = (
    "No rank of this span recorded communication (Paddle prints no Distribution Summary): every step "
    "is computation or the rest."
)
_STATES = {v: k.lower() for k, v in ppb.LoadState.items()}
# The parts a span splits into, in the charts' order: (column key, header).
PARTS = (
    ("computation_ns", "Computation"),
    ("overlap_ns", "Overlap"),
    ("communication_ns", "Communication"),
    ("other_ns", "Other"),
)
# Above this many ranks (read), the per-step chart shows the ranks' mean split and the slowest rank.
MANY_RANKS = 16
# The tables of the charts (the route's summary part keeps them).
CHART_TABLES = ("rank_parts", "step_parts", "step_means")


def _state_text(r: ppb.RankDistributed) -> str:
    s = _STATES.get(r.state, "unknown")
    return f"{s}: {r.error}" if r.error else s


def _fallback_label(worker: str, r: int) -> str:
    if r >= 0:
        return f"rank {r}" if worker == f"rank{r}" else f"rank {r} · {worker}"
    return worker


def split(duration: int, comm: int, comp: int, overlap: int) -> Tuple[int, int, int, int]:
    """A span of `duration` as computation only, overlap, communication only and the rest (PARTS' order)."""
    return comp - overlap, overlap, comm - overlap, duration - (comp + comm - overlap)


def _axis_name(r: ppb.RankDistributed, label: str) -> str:
    """A rank's name on a chart's axis: "rank N", its label where the route could not number it."""
    return f"rank {r.rank}" if r.rank >= 0 else label


def _by_step(steps) -> Dict[int, pb.DistributedStep]:
    """Steps by number (the first of a number)."""
    out: Dict[int, pb.DistributedStep] = {}
    for s in steps:
        out.setdefault(s.step, s)
    return out


def _part_columns(shares: bool = False) -> List[dpb.Column]:
    out = []
    for key, header in PARTS:
        out.append(dur(key, header))
        if shares:
            out.append(col(key.replace("_ns", "_share"), f"{header} (%)", PERCENT, 2))
    return out


def _chart_tables(rd: ppb.RunDistributed, label_of) -> List[dpb.Table]:
    """The charts' series of the ranks read (in the route's rank order): ``rank_parts`` (all steps per
    rank, each part's share of the rank's step time), and ``step_parts`` (each rank's split of each step;
    a rank without a step has its cells missing) or, beyond MANY_RANKS ranks, ``step_means`` (per step the
    ranks' mean split, each part counted from 0, and the slowest rank's step time)."""
    ready = [r for r in rd.ranks if r.state == ppb.READY]
    per_rank = _table(
        "rank_parts",
        "All steps, per rank",
        [
            count("rank", "Rank", panel_hidden=True),
            col("name", "Rank"),
            col("label", "Label"),
            col("worker", "Worker", text_hidden=True, panel_hidden=True),
            dur("total_ns", "Steps"),
        ]
        + _part_columns(shares=True),
        text_hidden=True,
    )
    for r in ready:
        d = r.distributed
        parts = split(r.total_time_ns, d.communication_ns, d.computation_ns, d.overlap_ns)
        shares = [c for p in parts for c in (p, _share(p, r.total_time_ns))]
        _row(
            per_rank,
            [r.rank if r.rank >= 0 else None, _axis_name(r, label_of(r)), label_of(r), r.worker, r.total_time_ns]
            + shares,
            r.worker,
            _rank_link(r.rank),
        )
    step_ids = sorted({s.step for r in ready for s in r.distributed.steps})
    cells = [(r, _by_step(r.distributed.steps)) for r in ready]

    def cell(steps, step):
        s = steps.get(step)
        if s is None:
            return None
        length = s.range.end_ns - s.range.start_ns
        return length, split(length, s.communication_ns, s.computation_ns, s.overlap_ns)

    if len(ready) <= MANY_RANKS:
        per_step = _table(
            "step_parts",
            "Per step, every rank",
            [
                count("rank", "Rank", panel_hidden=True),
                col("name", "Rank"),
                col("label", "Label"),
                col("worker", "Worker", text_hidden=True, panel_hidden=True),
                count("step", "Step"),
                dur("total_ns", "Step time"),
            ]
            + _part_columns(),
            text_hidden=True,
        )
        for r, steps in cells:
            for step in step_ids:
                c = cell(steps, step)
                _row(
                    per_step,
                    [r.rank if r.rank >= 0 else None, _axis_name(r, label_of(r)), label_of(r), r.worker, step]
                    + ([c[0], *c[1]] if c else [None] * 5),
                    f"{r.worker}:{step}",
                    _rank_link(r.rank),
                )
        return [per_rank, per_step]
    means = _table(
        "step_means",
        f"Per step, mean of {len(ready)} ranks",
        [count("step", "Step"), count("ranks", "Ranks")]
        + _part_columns()
        + [
            col("slowest", "Slowest rank"),
            col("slowest_worker", "Worker", text_hidden=True, panel_hidden=True),
            dur("slowest_ns", "Slowest rank's step time"),
        ],
        text_hidden=True,
    )
    for step in step_ids:
        sums = [0, 0, 0, 0]
        n, worst = 0, None
        for r, steps in cells:
            c = cell(steps, step)
            if c is None:
                continue
            n += 1
            sums = [a + max(0, p) for a, p in zip(sums, c[1])]
            if worst is None or c[0] > worst[1]:
                worst = (r, c[0])
        assert worst is not None  # every step is some rank's
        _row(
            means,
            [step, n] + [x / n for x in sums] + [label_of(worst[0]), worst[0].worker, worst[1]],
            str(step),
            _rank_link(worst[0].rank),
        )
    return [per_rank, means]


def distributed_display(
    rd: ppb.RunDistributed, labels: Optional[Dict[str, str]] = None, time_unit: str = "ms", partial: bool = False
) -> dpb.Display:
    """The Display of the Distributed view: every rank's Distribution Summary side by side (table
    "ranks") and per step ("steps"), and the charts' series (_chart_tables). `labels`: the ranks' labels by
    worker (the run list's). `partial`: some ranks are still being read: only the charts' series of the
    ranks read so far, and the sentence "partial" saying so."""
    labels = labels or {}
    view = dpb.View(key="distributed", title="Distributed")
    label_of = lambda r: labels.get(r.worker) or _fallback_label(r.worker, r.rank)  # noqa: E731
    if partial:
        read = sum(r.state == ppb.READY for r in rd.ranks)
        view.sentences.append(
            _sentence(
                "partial",
                [
                    f"{read} of {len(rd.ranks)} ranks read: the charts show those; the tables of the ranks come once "
                    "every rank is read."
                ],
                "info",
            )
        )
        view.tables.extend(_chart_tables(rd, label_of))
        out = dpb.Display(time_unit=time_unit)
        out.views.append(view)
        return out
    ranks = _table(
        "ranks",
        "Ranks",
        [
            count("rank", "Rank"),
            col("label", "Label"),
            col("worker", "Worker", text_hidden=True, panel_hidden=True),
            col("state", "State"),
            dur("total_ns", "ProfileStep"),
            dur("comm_ns", "Communication"),
            col("comm_ratio", "Ratio (%)", RATIO, 2),
            dur("comp_ns", "Computation"),
            col("comp_ratio", "Ratio (%)", RATIO, 2),
            dur("overlap_ns", "Overlap"),
            col("overlap_ratio", "Ratio (%)", RATIO, 2),
            dur("other_ns", "Other"),
            count("steps", "Steps"),
        ],
        [_note("ranks.note", DISTRIBUTED_NOTE)],
    )
    steps = _table(
        "steps",
        "Per step",
        [
            count("rank", "Rank"),
            col("label", "Label", text_hidden=True),
            count("step", "Step"),
            dur("total_ns", "Step time"),
            dur("comm_ns", "Communication"),
            dur("comp_ns", "Computation"),
            dur("overlap_ns", "Overlap"),
            dur("other_ns", "Other"),
        ],
    )
    any_comm = False
    for r in rd.ranks:
        label = label_of(r)
        ready = r.state == ppb.READY
        d = r.distributed
        total, comm, comp, overlap = r.total_time_ns, d.communication_ns, d.computation_ns, d.overlap_ns
        ratio = lambda x: num(x / total if total else 0.0)
        nums = (
            [
                num(total),
                num(comm),
                ratio(comm),
                num(comp),
                ratio(comp),
                num(overlap),
                ratio(overlap),
                num(total - (comp + comm - overlap)),
                num(len(r.steps)),
            ]
            if ready
            else [MISSING] * 9
        )
        _row(
            ranks,
            [r.rank if r.rank >= 0 else None, label, r.worker, _state_text(r)] + nums,
            r.worker,
            _rank_link(r.rank),
        )
        if not ready:
            continue
        any_comm = any_comm or d.present
        for s in d.steps:
            length = s.range.end_ns - s.range.start_ns
            _row(
                steps,
                [
                    r.rank if r.rank >= 0 else None,
                    label,
                    s.step,
                    length,
                    s.communication_ns,
                    s.computation_ns,
                    s.overlap_ns,
                    length - (s.computation_ns + s.communication_ns - s.overlap_ns),
                ],
                f"{r.worker}:{s.step}",
                _rank_link(r.rank),
            )
    if not any_comm and any(r.state == ppb.READY for r in rd.ranks):
        view.sentences.append(_sentence("no_communication", [NO_COMMUNICATION], "info"))
    view.tables.extend([ranks, steps] + _chart_tables(rd, label_of))
    out = dpb.Display(time_unit=time_unit)
    out.views.append(view)
    return out
