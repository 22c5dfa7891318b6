"""Paddle's Distributed Summary: communication, computation and their overlap.

Classification (profiler_statistic.DistributedSummary), for every non-root host node:
1. a Communication-type node: its range is CPU communication, and every kernel in its
   subtree is GPU communication;
2. an Operator whose lower-cased name contains allreduce, broadcast or rpc: the same;
3. any other node: each kernel of its own runtime calls is GPU communication when its
   name contains nccl or xccl, computation otherwise.
Communication is the union of CPU and GPU communication on one timeline.
"""

from __future__ import annotations

from typing import List

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from ..v1 import summary_pb2 as pb
from . import ranges
from .profile import Profile

COMMUNICATION_OP_WORDS = ("allreduce", "broadcast", "rpc")
COMMUNICATION_KERNEL_WORDS = ("nccl", "xccl")


def _subtree_kernel_rows(p: Profile, row: int) -> list:
    tree, t = p.tree, p.tables
    out = []
    stack = [row]
    while stack:
        r = stack.pop()
        stack.extend(tree.children(r).tolist())
        for rt in tree.runtimes(r).tolist():
            for d in tree.devices(rt).tolist():
                if t.device.type[d] == et.KERNEL:
                    out.append(d)
    return out


class DistributedAnalysis:
    def __init__(self, p: Profile):
        t, tree = p.tables, p.tree
        names = t.names
        comm_op = np.array([any(w in n.lower() for w in COMMUNICATION_OP_WORDS) for n in names], dtype=bool)
        comm_kernel = np.array([any(w in n.lower() for w in COMMUNICATION_KERNEL_WORDS) for n in names], dtype=bool)

        is_comm_host = (t.host.type == et.COMMUNICATION) | ((t.host.type == et.OPERATOR) & comm_op[t.host.name])
        comm_rows = np.nonzero(is_comm_host)[0]
        cpu_s, cpu_e = t.host.start[comm_rows], t.host.end[comm_rows]
        gpu_list: List[int] = []
        for row in comm_rows.tolist():
            gpu_list.extend(_subtree_kernel_rows(p, row))
        gpu_rows = np.array(gpu_list, dtype=np.int64)

        # Case 3: kernels of the own runtime calls of every other host node.
        dev_host = tree.dev_host
        own = (dev_host >= 0) & (t.device.type == et.KERNEL)
        if own.any():
            own &= ~gather(is_comm_host, dev_host, False)
        k_comm = own & comm_kernel[t.device.name] if own.any() else own
        k_comp = own & ~k_comm

        g_s = np.concatenate([t.device.start[gpu_rows], t.device.start[k_comm]])
        g_e = np.concatenate([t.device.end[gpu_rows], t.device.end[k_comm]])
        self.cpu_calls = len(set(zip(cpu_s.tolist(), cpu_e.tolist())))
        self.gpu_calls = len(set(zip(g_s.tolist(), g_e.tolist())))
        self.cpu_comm = ranges.union(cpu_s, cpu_e)
        self.gpu_comm = ranges.union(g_s, g_e)
        self.communication = ranges.union2(self.cpu_comm, self.gpu_comm)
        self.computation = ranges.union(t.device.start[k_comp], t.device.end[k_comp])
        self.overlap = ranges.intersect(self.communication, self.computation)

    def to_pb(self, out: pb.DistributedView, steps) -> None:
        out.present = bool(self.communication[0].size)
        out.communication_ns = ranges.measure(self.communication)
        out.computation_ns = ranges.measure(self.computation)
        out.overlap_ns = ranges.measure(self.overlap)
        out.cpu_calls = self.cpu_calls
        out.gpu_calls = self.gpu_calls
        out.cpu_communication_ns = ranges.measure(self.cpu_comm)
        out.gpu_communication_ns = ranges.measure(self.gpu_comm)
        for number, start, end in steps:
            s = out.steps.add(step=number)
            s.range.start_ns, s.range.end_ns = start, end
            s.communication_ns = ranges.measure(ranges.clip(self.communication, start, end))
            s.computation_ns = ranges.measure(ranges.clip(self.computation, start, end))
            s.overlap_ns = ranges.measure(ranges.clip(self.overlap, start, end))
