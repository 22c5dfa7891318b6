"""Paddle's Kernel Summary, plus launch configurations and the operators that launched each kernel.

Items: every Kernel-type device event under any runtime call, those of thread
roots included, keyed by the full name, in the order Paddle's walk meets them
(per thread: the root's runtime calls first, then the host nodes in walk order).
"""
from __future__ import annotations

import numpy as np

from .. import event_types as et
from ..event_tree import gather
from ..v1 import summary_pb2 as pb
from .groupby import group, merge
from .profile import Profile


def _operator_owner(p: Profile) -> np.ndarray:
    """Per host row: the nearest Operator at or above it, else the row itself."""
    nearest = p.tree.nearest_operator
    return np.where(nearest >= 0, nearest, np.arange(len(nearest)))


def kernel_view(p: Profile, out: pb.KernelView) -> None:
    t, tree = p.tables, p.tree
    rows = np.nonzero((tree.dev_rt >= 0) & (t.device.type == et.KERNEL))[0]
    rt = tree.dev_rt[rows]
    host = tree.rt_host[rt]
    thread_index = np.searchsorted(np.array(tree.threads, dtype=np.int64), t.runtime.tid[rt])
    rank = gather(p.walk_rank, host, -1)
    order = [thread_index, rank, t.runtime.start[rt], rt, tree.dev_pos[rows]]
    dur = {"d": (t.device.end - t.device.start)[rows]}
    name = t.device.name[rows]

    owner = _operator_owner(p)
    op_name = np.where(host >= 0, t.host.name[owner[np.maximum(host, 0)]] if len(owner) else -1, -1)
    g_op = group([name, op_name], order, dur)
    g = merge(g_op, 1)   # by name alone
    dv = t.device
    cfg_cols = [dv.grid[rows, 0], dv.grid[rows, 1], dv.grid[rows, 2], dv.block[rows, 0], dv.block[rows, 1],
                dv.block[rows, 2], dv.registers[rows], dv.shared_memory[rows],
                np.round(dv.occupancy[rows] * 1000).astype(np.int64)]
    g_cfg = group([name] + cfg_cols, order, dur)

    by_kernel_ops = {}
    for i in range(len(g_op)):
        by_kernel_ops.setdefault(int(g_op.keys[0][i]), []).append(i)
    by_kernel_cfg = {}
    for i in np.argsort(-g_cfg.sums["d"], kind="stable").tolist():
        by_kernel_cfg.setdefault(int(g_cfg.keys[0][i]), []).append(i)

    for i in range(len(g)):
        key = int(g.keys[0][i])
        msg = out.kernels.add(name=t.names[key], calls=int(g.counts[i]))
        msg.gpu.total_ns, msg.gpu.max_ns, msg.gpu.min_ns = int(g.sums["d"][i]), int(g.maxs["d"][i]), int(g.mins["d"][i])
        for j in by_kernel_cfg.get(key, ()):
            d = rows[g_cfg.first_row[j]]
            msg.configs.add(grid=dv.grid[d].tolist(), block=dv.block[d].tolist(),
                            registers_per_thread=int(dv.registers[d]), shared_memory=int(dv.shared_memory[d]),
                            blocks_per_sm=float(dv.blocks_per_sm[d]), warps_per_sm=float(dv.warps_per_sm[d]),
                            occupancy_pct=float(dv.occupancy[d]), calls=int(g_cfg.counts[j]),
                            total_ns=int(g_cfg.sums["d"][j]))
        for j in by_kernel_ops.get(key, ()):
            op = int(g_op.keys[1][j])
            o = msg.operators.add(operator=t.names[op] if op >= 0 else "", calls=int(g_op.counts[j]))
            o.gpu.total_ns, o.gpu.max_ns, o.gpu.min_ns = (int(g_op.sums["d"][j]), int(g_op.maxs["d"][j]),
                                                          int(g_op.mins["d"][j]))
