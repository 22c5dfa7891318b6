"""The forward and backward phases of one rank's steps (``ParallelView.phases``, ``PhaseSpans``).

What the pipeline schedule across ranks (crossrank/schedule.py) reads of one trace. Definitions,
also in docs/pipeline-schedule.md:

- A *phase event* is a host event of type Forward or Backward with no Forward or Backward event
  above it (Paddle records a Forward event per ``Layer.__call__``, so only the outermost counts;
  a Backward event is ``Gradient Backward``).
- A *phase* is a run of consecutive phase events of one thread and one type inside one step with
  no phase event of the other type and no send/recv launched between them: one micro-batch's
  forward (the model's layers and the loss function, which the last pipeline stage calls after
  the model) or its backward. Paddle's pipeline sends and receives between micro-batches, outside
  the Forward and Backward events, so they separate the micro-batches of a stage that runs several
  forwards in a row (warm-up, GPipe).
- Its *device* extent: the first start and the last end of the compute kernels (kernels that are
  not communication kernels) launched from inside its events, their summed duration and count.
- Its *send/recv*: the send/recv instances (ParallelView.collectives) of its step launched inside
  it, a send launched after it and before the thread's next phase (its output), and a receive
  launched before it and after the previous phase (its input). Instances of unknown direction
  between two phases go to the nearer one; before the first phase to the first, after the last
  to the last.
"""

from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from ..v1 import summary_pb2 as pb

FORWARD, BACKWARD = 1, 2  # PhaseSpans.phase


def phase_spans(
    p, steps: Sequence[Tuple[int, int, int]], inst, dev_comm: np.ndarray, names: dict, out: pb.PhaseSpans
) -> None:
    """Fill ``out`` from the Profile ``p``. ``steps``: (number, start, end) per step (a trace without
    ProfileStep: one pseudo-step -1); ``inst``: collectives.Instances in ParallelView order;
    ``dev_comm``: per device row, whether it is a communication kernel; ``names``: the
    ParallelView's name table (name → index), extended with the phases' names."""
    t, tree = p.tables, p.tree
    h = t.host
    n_host = len(h.tid)
    if not n_host or not steps:
        return
    is_phase_type = (h.type == et.FORWARD) | (h.type == et.BACKWARD)
    if not is_phase_type.any():
        return
    om = tree.outermost(is_phase_type)
    rows = np.nonzero(om == np.arange(n_host))[0]
    s_start = np.array([a for _, a, _ in steps], dtype=np.int64)
    s_end = np.array([b for _, _, b in steps], dtype=np.int64)
    s_num = np.array([n for n, _, _ in steps], dtype=np.int64)
    st_order = np.argsort(s_start, kind="stable")

    def step_of(times: np.ndarray) -> np.ndarray:
        i = np.searchsorted(s_start[st_order], times, side="right") - 1
        idx = st_order[np.maximum(i, 0)]
        return np.where((i >= 0) & (times < s_end[idx]), idx, -1)

    r_step = step_of(h.start[rows])
    rows, r_step = rows[r_step >= 0], r_step[r_step >= 0]
    if not rows.size:
        return
    order = np.lexsort((h.start[rows], r_step, h.tid[rows]))
    rows, r_step = rows[order], r_step[order]
    r_type = h.type[rows]
    r_tid = h.tid[rows]

    p2p = np.nonzero(inst.kind == pb.COLLECTIVE_KIND_SEND_RECV)[0]
    p2p_launch = np.sort(inst.launch[p2p]) if p2p.size else np.zeros(0, np.int64)

    # a new phase where the thread, the step or the type changes, or a send/recv was launched
    # between the previous event's end and this one's start
    new = np.ones(rows.size, dtype=bool)
    if rows.size > 1:
        prev_end = h.end[rows[:-1]]
        cur_start = h.start[rows[1:]]
        between = (
            np.searchsorted(p2p_launch, cur_start, side="left") - np.searchsorted(p2p_launch, prev_end, side="left")
        ) > 0
        new[1:] = (r_tid[1:] != r_tid[:-1]) | (r_step[1:] != r_step[:-1]) | (r_type[1:] != r_type[:-1]) | between
    phase_of_row = np.cumsum(new) - 1
    n = int(phase_of_row[-1]) + 1
    heads = np.nonzero(new)[0]
    ph_type = np.where(r_type[heads] == et.FORWARD, FORWARD, BACKWARD).astype(np.int64)
    ph_step = r_step[heads]
    ph_start = h.start[rows[heads]]
    ph_end = np.zeros(n, dtype=np.int64)
    np.maximum.at(ph_end, phase_of_row, h.end[rows])
    ph_tid = r_tid[heads]

    # compute kernels launched from inside each phase's events
    host_phase = np.full(n_host, -1, dtype=np.int64)
    host_phase[rows] = phase_of_row
    d = t.device
    k_rows = np.nonzero((d.type == et.KERNEL) & ~dev_comm)[0] if len(d.type) else np.zeros(0, np.int64)
    k_phase = gather(host_phase, gather(om, tree.dev_host[k_rows], -1), -1) if k_rows.size else k_rows
    sel = k_phase >= 0
    k_rows, k_phase = k_rows[sel], k_phase[sel]
    big = np.iinfo(np.int64).max
    dev_start = np.full(n, big, dtype=np.int64)
    dev_end = np.zeros(n, dtype=np.int64)
    kern_ns = np.zeros(n, dtype=np.int64)
    np.minimum.at(dev_start, k_phase, d.start[k_rows])
    np.maximum.at(dev_end, k_phase, d.end[k_rows])
    np.add.at(kern_ns, k_phase, d.end[k_rows] - d.start[k_rows])
    kernels = np.bincount(k_phase, minlength=n).astype(np.int64)
    dev_start = np.where(kernels > 0, dev_start, 0)

    # send/recv of each phase (phases of a step in start order; the first thread's when several)
    owner = np.full(p2p.size, -1, dtype=np.int64)
    if p2p.size:
        i_step = step_of(inst.launch[p2p])
        by_time = np.lexsort((ph_start, ph_step))
        for si in np.unique(i_step[i_step >= 0]).tolist():
            cand = by_time[ph_step[by_time] == si]
            main = cand[ph_tid[cand] == ph_tid[cand[0]]]
            a, b = ph_start[main], ph_end[main]
            for j in np.nonzero(i_step == si)[0].tolist():
                owner[j] = main[_owner(a, b, int(inst.launch[p2p[j]]), int(inst.direction[p2p[j]]))]
    by_phase = np.argsort(owner, kind="stable")
    by_phase = by_phase[owner[by_phase] >= 0]
    counts = np.bincount(owner[by_phase], minlength=n) if by_phase.size else np.zeros(n, np.int64)

    out.phase.extend(ph_type.tolist())
    out.step.extend(s_num[ph_step].tolist())
    out.host_start_ns.extend(ph_start.tolist())
    out.host_end_ns.extend(ph_end.tolist())
    out.device_start_ns.extend(dev_start.tolist())
    out.device_end_ns.extend(dev_end.tolist())
    out.kernel_ns.extend(kern_ns.tolist())
    out.kernels.extend(kernels.tolist())
    out.p2p_ptr.extend(np.concatenate([[0], np.cumsum(counts)]).tolist())
    out.p2p.extend(p2p[by_phase].tolist())
    out.name.extend(names.setdefault(t.names[h.name[r]], len(names)) for r in rows[heads].tolist())


def _owner(start: np.ndarray, end: np.ndarray, at: int, direction: int) -> int:
    """Index (into start/end: one thread's phases in time order) of the phase a send/recv launched
    at ``at`` belongs to (see the module docstring)."""
    j = int(np.searchsorted(start, at, side="right")) - 1
    if j < 0:
        return 0
    if at < end[j] or j == start.size - 1:
        return j
    if direction == pb.P2P_DIRECTION_SEND:
        return j
    if direction == pb.P2P_DIRECTION_RECV:
        return j + 1
    return j if at - end[j] <= start[j + 1] - at else j + 1
