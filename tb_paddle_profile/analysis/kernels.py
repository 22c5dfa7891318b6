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
    t, tree = p.tables, p.tree
    is_op = t.host_type == et.OPERATOR
    rows = np.arange(len(t.host_tid))
    nearest = np.where(is_op, rows, -1)   # nearest Operator at or above, -1: none
    for d in range(2, tree.max_depth + 1):  # top down: a row without its own takes its parent's
        level = tree.level(d)
        level = level[~is_op[level]]
        nearest[level] = nearest[tree.host_parent[level]]
    return np.where(nearest >= 0, nearest, rows)


def kernel_view(p: Profile, out: pb.KernelView) -> None:
    t, tree = p.tables, p.tree
    rows = np.nonzero((tree.dev_rt >= 0) & (t.dev_type == et.KERNEL))[0]
    rt = tree.dev_rt[rows]
    host = tree.rt_host[rt]
    thread_index = np.searchsorted(np.array(tree.threads, dtype=np.int64), t.rt_tid[rt])
    rank = gather(p.walk_rank, host, -1)
    dev_pos = np.zeros(len(t.dev_id), dtype=np.int64)
    dev_pos[tree.rt_dev_idx] = np.arange(len(tree.rt_dev_idx))
    order = [thread_index, rank, t.rt_start[rt], rt, dev_pos[rows]]
    dur = {"d": (t.dev_end - t.dev_start)[rows]}
    name = t.dev_name[rows]

    owner = _operator_owner(p)
    op_name = np.where(host >= 0, t.host_name[owner[np.maximum(host, 0)]] if len(owner) else -1, -1)
    g_op = group([name, op_name], order, dur)
    g = merge(g_op, 1)   # by name alone
    cfg_cols = [t.dev_grid[rows, 0], t.dev_grid[rows, 1], t.dev_grid[rows, 2], t.dev_block[rows, 0],
                t.dev_block[rows, 1], t.dev_block[rows, 2], t.dev_registers[rows], t.dev_shared_memory[rows],
                np.round(t.dev_occupancy[rows] * 1000).astype(np.int64)]
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
            msg.configs.add(grid=t.dev_grid[d].tolist(), block=t.dev_block[d].tolist(),
                            registers_per_thread=int(t.dev_registers[d]), shared_memory=int(t.dev_shared_memory[d]),
                            blocks_per_sm=float(t.dev_blocks_per_sm[d]), warps_per_sm=float(t.dev_warps_per_sm[d]),
                            occupancy_pct=float(t.dev_occupancy[d]), calls=int(g_cfg.counts[j]),
                            total_ns=int(g_cfg.sums["d"][j]))
        for j in by_kernel_ops.get(key, ()):
            op = int(g_op.keys[1][j])
            o = msg.operators.add(operator=t.names[op] if op >= 0 else "", calls=int(g_op.counts[j]))
            o.gpu.total_ns, o.gpu.max_ns, o.gpu.min_ns = (int(g_op.sums["d"][j]), int(g_op.maxs["d"][j]),
                                                          int(g_op.mins["d"][j]))
