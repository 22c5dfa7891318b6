"""Compute/communication overlap per stream, communicator and phase of one rank (docs/communication.md).

For each (stream, communicator axis, phase) of the rank's collective instances: the union of their
intervals (time), the part of it while some compute kernel runs (hidden) and the rest (exposed); and the
same per (communicator axis, phase) over all its streams together (CommView.axes, as columns): what the
view across ranks compares (crossrank/comm_ranks.py).
Compute is what collectives.py calls compute: the union of the non-communication kernels (device
timeline), or of the non-communication operators outside communication (host timeline).
"""

from __future__ import annotations

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import summary_pb2 as pb
from . import ranges
from .collectives import CollectiveAnalysis, _subtract
from .profile import Profile


def compute_union(p: Profile, ca: CollectiveAnalysis):
    t = p.tables
    if ca.timeline == pb.TIMELINE_DEVICE:
        m = (t.device.type == et.KERNEL) & ~ca.dev_comm
        return ranges.union(t.device.start[m], t.device.end[m])
    inst = ca.instances
    comm = ranges.union(inst.start, inst.end)
    ops = (t.host.type == et.OPERATOR) & (ca._host_k == 0)
    return _subtract(ranges.union(t.host.start[ops], t.host.end[ops]), comm)


def _rows(inst, masks, compute):
    """(calls, time, hidden) of the union of the instances of each mask."""
    out = []
    for m in masks:
        u = ranges.union(inst.start[m], inst.end[m])
        out.append((int(m.sum()), ranges.measure(u), ranges.intersect_measure(u, compute)))
    return out


def overlap_view(p: Profile, ca: CollectiveAnalysis, axis: np.ndarray, phase: np.ndarray, out, axes_out=None) -> None:
    """One CommOverlap per (stream, axis, phase) present, in that order; into ``axes_out`` (a CommAxes,
    when given) one row per (axis, phase) over all streams."""
    inst = ca.instances
    if inst.kind.size == 0:
        return
    compute = compute_union(p, ca)
    keys = sorted(set(zip(inst.stream.tolist(), axis.tolist(), phase.tolist())))
    got = _rows(inst, [(inst.stream == s) & (axis == a) & (phase == ph) for s, a, ph in keys], compute)
    for (s, a, ph), (calls, time_ns, hidden) in zip(keys, got):
        out.add(stream=s, axis=a, phase=ph, calls=calls, time_ns=time_ns, hidden_ns=hidden, exposed_ns=time_ns - hidden)
    if axes_out is not None:
        pairs = sorted(set(zip(axis.tolist(), phase.tolist())))
        got = _rows(inst, [(axis == a) & (phase == ph) for a, ph in pairs], compute)
        axes_out.axis.extend(a for a, _ in pairs)
        axes_out.phase.extend(ph for _, ph in pairs)
        axes_out.calls.extend(c for c, _, _ in got)
        axes_out.time_ns.extend(t for _, t, _ in got)
        axes_out.hidden_ns.extend(h for _, _, h in got)
        axes_out.exposed_ns.extend(t - h for _, t, h in got)
