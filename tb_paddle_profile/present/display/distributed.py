"""The Distributed view of a run: every rank's Distribution Summary side by side and per step
(``distributed_display``)."""
from __future__ import annotations

from typing import Dict, Optional

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.present.display.cells import MISSING, RATIO, num
from tb_paddle_profile.present.display.parallel_common import (_sentence, col, dur, count, _table, _row, _rank_link,
                                                               _note)


DISTRIBUTED_NOTE = ("Ratio = time / total step time of the rank. Other = step time − (communication ∪ computation).")
NO_COMMUNICATION = ("No rank of this span recorded communication (Paddle prints no Distribution Summary): every step "
                    "is computation or the rest.")
_STATES = {v: k.lower() for k, v in ppb.LoadState.items()}


def _state_text(r: ppb.RankDistributed) -> str:
    s = _STATES.get(r.state, "unknown")
    return f"{s}: {r.error}" if r.error else s


def _fallback_label(worker: str, r: int) -> str:
    if r >= 0:
        return f"rank {r}" if worker == f"rank{r}" else f"rank {r} · {worker}"
    return worker


def distributed_display(rd: ppb.RunDistributed, labels: Optional[Dict[str, str]] = None,
                        time_unit: str = "ms") -> dpb.Display:
    """The Display of the Distributed view: every rank's Distribution Summary side by side (table
    "ranks") and per step ("steps"). `labels`: the ranks' labels by worker (the run list's)."""
    labels = labels or {}
    view = dpb.View(key="distributed", title="Distributed")
    ranks = _table("ranks", "Ranks", [
        count("rank", "Rank"), col("label", "Label"), col("worker", "Worker", text_hidden=True, panel_hidden=True),
        col("state", "State"),
        dur("total_ns", "ProfileStep"), dur("comm_ns", "Communication"), col("comm_ratio", "Ratio (%)", RATIO, 2),
        dur("comp_ns", "Computation"), col("comp_ratio", "Ratio (%)", RATIO, 2), dur("overlap_ns", "Overlap"),
        col("overlap_ratio", "Ratio (%)", RATIO, 2), dur("other_ns", "Other"), count("steps", "Steps")],
        [_note("ranks.note", DISTRIBUTED_NOTE)])
    steps = _table("steps", "Per step", [
        count("rank", "Rank"), col("label", "Label", text_hidden=True), count("step", "Step"),
        dur("total_ns", "Step time"), dur("comm_ns", "Communication"), dur("comp_ns", "Computation"),
        dur("overlap_ns", "Overlap"), dur("other_ns", "Other")])
    any_comm = False
    for r in rd.ranks:
        label = labels.get(r.worker) or _fallback_label(r.worker, r.rank)
        ready = r.state == ppb.READY
        d = r.distributed
        total, comm, comp, overlap = r.total_time_ns, d.communication_ns, d.computation_ns, d.overlap_ns
        ratio = (lambda x: num(x / total if total else 0.0))
        nums = ([num(total), num(comm), ratio(comm), num(comp), ratio(comp), num(overlap), ratio(overlap),
                 num(total - (comp + comm - overlap)), num(len(r.steps))] if ready else [MISSING] * 9)
        _row(ranks, [r.rank if r.rank >= 0 else None, label, r.worker, _state_text(r)] + nums,
             r.worker, _rank_link(r.rank))
        if not ready:
            continue
        any_comm = any_comm or d.present
        for s in d.steps:
            length = s.range.end_ns - s.range.start_ns
            _row(steps, [r.rank if r.rank >= 0 else None, label, s.step, length,
                         s.communication_ns, s.computation_ns, s.overlap_ns,
                         length - (s.computation_ns + s.communication_ns - s.overlap_ns)],
                 f"{r.worker}:{s.step}", _rank_link(r.rank))
    if not any_comm and any(r.state == ppb.READY for r in rd.ranks):
        view.sentences.append(_sentence("no_communication", [NO_COMMUNICATION], "info"))
    view.tables.extend([ranks, steps])
    out = dpb.Display(time_unit=time_unit)
    out.views.append(view)
    return out

