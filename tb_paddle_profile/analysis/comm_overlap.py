"""Compute/communication overlap per stream, communicator and phase of one rank (docs/communication.md).

For each (stream, communicator axis, phase) of the rank's collective instances: the union of their
intervals (time), the part of it while some compute kernel runs (hidden) and the rest (exposed).
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


def overlap_view(p: Profile, ca: CollectiveAnalysis, axis: np.ndarray, phase: np.ndarray, out) -> None:
    """One CommOverlap per (stream, axis, phase) present, in that order."""
    inst = ca.instances
    if inst.kind.size == 0:
        return
    compute = compute_union(p, ca)
    for s, a, ph in sorted(set(zip(inst.stream.tolist(), axis.tolist(), phase.tolist()))):
        m = (inst.stream == s) & (axis == a) & (phase == ph)
        u = ranges.union(inst.start[m], inst.end[m])
        time_ns = ranges.measure(u)
        hidden = ranges.measure(ranges.intersect(u, compute))
        out.add(stream=s, axis=a, phase=ph, calls=int(m.sum()), time_ns=time_ns, hidden_ns=hidden,
                exposed_ns=time_ns - hidden)
