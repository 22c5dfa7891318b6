"""Compute/communication overlap per stream, communicator and phase of one rank (docs/communication.md).

For each (stream, communicator axis, phase) of the rank's collective instances: the union of their
intervals (time), the part of it while some compute kernel runs (hidden) and the rest (exposed); and the
same per (communicator axis, phase) over all its streams together (CommView.axes, stream ALL_STREAMS):
what the view across ranks compares (crossrank/comm_ranks.py).
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

ALL_STREAMS = -2   # CommOverlap.stream of CommView.axes


def compute_union(p: Profile, ca: CollectiveAnalysis):
    t = p.tables
    if ca.timeline == pb.TIMELINE_DEVICE:
        m = (t.device.type == et.KERNEL) & ~ca.dev_comm
        return ranges.union(t.device.start[m], t.device.end[m])
    inst = ca.instances
    comm = ranges.union(inst.start, inst.end)
    ops = (t.host.type == et.OPERATOR) & (ca._host_k == 0)
    return _subtract(ranges.union(t.host.start[ops], t.host.end[ops]), comm)


def _rows(inst, keys, masks, compute, out) -> None:
    for (s, a, ph), m in zip(keys, masks):
        u = ranges.union(inst.start[m], inst.end[m])
        time_ns = ranges.measure(u)
        hidden = ranges.intersect_measure(u, compute)
        out.add(stream=s, axis=a, phase=ph, calls=int(m.sum()), time_ns=time_ns, hidden_ns=hidden,
                exposed_ns=time_ns - hidden)


def overlap_view(p: Profile, ca: CollectiveAnalysis, axis: np.ndarray, phase: np.ndarray, out,
                 axes_out=None) -> None:
    """One CommOverlap per (stream, axis, phase) present, in that order; into ``axes_out`` (when given)
    one per (axis, phase) over all streams."""
    inst = ca.instances
    if inst.kind.size == 0:
        return
    compute = compute_union(p, ca)
    keys = sorted(set(zip(inst.stream.tolist(), axis.tolist(), phase.tolist())))
    _rows(inst, keys, [(inst.stream == s) & (axis == a) & (phase == ph) for s, a, ph in keys], compute, out)
    if axes_out is not None:
        pairs = sorted(set(zip(axis.tolist(), phase.tolist())))
        _rows(inst, [(ALL_STREAMS, a, ph) for a, ph in pairs], [(axis == a) & (phase == ph) for a, ph in pairs],
              compute, axes_out)
