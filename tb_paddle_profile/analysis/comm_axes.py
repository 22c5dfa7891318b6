"""Which communicator (parallel group) and which phase each collective instance of one rank belongs to.

A trace records no process group, so the group is told by a rule (docs/communication.md):

1. send/recv → PP; reduce-scatter and all-gather → sharding; all-to-all → EP.
2. An all-reduce, broadcast or other collective issued by a Communication-type host event in the
   backward phase → DP (the fused gradient all-reduce of a bucket).
3. Else, on a device stream that carries an all-reduce launched in the forward phase → MP (one NCCL
   communicator runs on its own stream; tensor-parallel layers all-reduce in forward and backward).
4. Else launched in the forward phase → MP; in the backward phase → DP.
5. Else (optimizer, outside the phases): PP group (loss broadcast, gradient-clip all-reduce) when the
   rank also sends/receives, else other.

The phase of an instance is the outermost Forward, Backward or Optimization host event around its
launch (0: none).
"""

from __future__ import annotations

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from ..v1 import summary_pb2 as pb
from .collectives import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, REDUCE_SCATTER, SEND_RECV, CollectiveAnalysis
from .profile import Profile

PHASE_OTHER, PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZATION = 0, 1, 2, 3
PHASE_LABELS = {
    PHASE_OTHER: "other",
    PHASE_FORWARD: "forward",
    PHASE_BACKWARD: "backward",
    PHASE_OPTIMIZATION: "optimizer",
}
_PHASE_TYPES = {et.FORWARD: PHASE_FORWARD, et.BACKWARD: PHASE_BACKWARD, et.OPTIMIZATION: PHASE_OPTIMIZATION}

AXIS_LABELS = {
    pb.COMM_AXIS_MP: "MP",
    pb.COMM_AXIS_DP: "DP",
    pb.COMM_AXIS_PP: "PP",
    pb.COMM_AXIS_PP_GROUP: "PP group",
    pb.COMM_AXIS_SHARDING: "sharding",
    pb.COMM_AXIS_EP: "EP",
    pb.COMM_AXIS_OTHER: "other",
    pb.COMM_AXIS_UNSPECIFIED: "-",
}


def instance_phases(p: Profile, ca: CollectiveAnalysis) -> np.ndarray:
    """Per instance: the phase of the host event that launched (or is) it."""
    t, tree = p.tables, p.tree
    host_row = np.where(ca.inst_dev_row >= 0, gather(tree.dev_host, ca.inst_dev_row, -1), ca.inst_host_row)
    if ca.inst_dev_row.size == 0:
        return np.zeros(0, np.int64)
    outer = tree.outermost(np.isin(t.host.type, list(_PHASE_TYPES)))
    ph_type = gather(t.host.type, gather(outer, host_row, -1), -1)
    phase = np.zeros(host_row.size, dtype=np.int64)
    for ty, v in _PHASE_TYPES.items():
        phase[ph_type == ty] = v
    return phase


def instance_axes(p: Profile, ca: CollectiveAnalysis, phase: np.ndarray) -> np.ndarray:
    """Per instance: its CommAxis by the rule of the module docstring."""
    inst = ca.instances
    kind, stream = inst.kind, inst.stream
    n = kind.size
    axis = np.full(n, pb.COMM_AXIS_OTHER, dtype=np.int64)
    if n == 0:
        return axis
    issuer_type = gather(p.tables.host.type, ca.inst_op_row, -1)
    fwd_ar = (kind == ALL_REDUCE) & (phase == PHASE_FORWARD) & inst.on_device
    mp_streams = np.isin(stream, np.unique(stream[fwd_ar])) & inst.on_device
    has_pp = bool((kind == SEND_RECV).any())
    rest = np.ones(n, dtype=bool)

    def take(mask, value):
        nonlocal rest
        m = rest & mask
        axis[m] = value
        rest = rest & ~m

    take(kind == SEND_RECV, pb.COMM_AXIS_PP)
    take((kind == REDUCE_SCATTER) | (kind == ALL_GATHER), pb.COMM_AXIS_SHARDING)
    take(kind == ALL_TO_ALL, pb.COMM_AXIS_EP)
    take((issuer_type == et.COMMUNICATION) & (phase == PHASE_BACKWARD), pb.COMM_AXIS_DP)
    take(mp_streams, pb.COMM_AXIS_MP)
    take(phase == PHASE_FORWARD, pb.COMM_AXIS_MP)
    take(phase == PHASE_BACKWARD, pb.COMM_AXIS_DP)
    take(np.full(n, has_pp), pb.COMM_AXIS_PP_GROUP)
    return axis


def comm_instances(p: Profile, ca: CollectiveAnalysis, out: pb.CommInstances):
    """Fill the per-instance columns; returns (axis, phase) for the views built on them."""
    phase = instance_phases(p, ca)
    axis = instance_axes(p, ca, phase)
    out.axis.extend(axis.tolist())
    out.phase.extend(phase.tolist())
    return axis, phase
