"""Paddle's Kernel Summary, plus launch configurations and the operators that launched each kernel.

Items: every Kernel-type device event under any runtime call, those of thread
roots included, keyed by the full name, in the order Paddle's walk meets them
(per thread: the root's runtime calls first, then the host nodes in walk order).

Efficiency (docs/kernel-efficiency.md): per call, whether its name marks a Tensor Core kernel on its
GPU's architecture (TENSOR_CORE_RULES), its estimated SM efficiency min(1, blocks / SM count) and its
theoretical achieved occupancy; summed, weighted by duration, per kernel and over the rank.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from ..v1 import summary_pb2 as pb
from .groupby import group, merge, split_rows
from .profile import Profile


# Substrings of kernel names that mark Tensor Core (MMA) kernels, each with the first compute
# capability (major * 10 + minor) whose GPUs have the instruction it names; a rule marks a call when
# the name contains the substring and the call's GPU is of that capability or later (or the trace
# gives no capability for it). Sources: NVIDIA PyProf's list (used by torch-tb-profiler), cuBLAS /
# cuDNN / CUTLASS naming (MMA shape h884 = Volta, 1688 = Turing, 16816 = Ampere; xmma, tensorop,
# wgmma / gmma = Hopper), FlashAttention 2 (sm80+). Matched case-insensitively.
TENSOR_CORE_RULES = (
    ("h884", 70, "Volta half-precision MMA (cuBLAS volta_h884gemm, cuDNN)"),
    ("s884", 70, "Volta MMA with fp32 accumulation"),
    ("hmma", 70, "HMMA instruction kernels (cuDNN, cuBLAS)"),
    ("xmma", 70, "cuBLAS / cuDNN xmma kernels (sm80_xmma_*, sm90_xmma_*)"),
    ("tensorop", 70, "CUTLASS Tensor Core kernels (cutlass_80_tensorop_*, cutlass3x_sm90_tensorop_*)"),
    ("dgrad_1x1_stride_2x2", 70, "cuDNN Tensor Core convolution (PyProf's list)"),
    ("first_layer_wgrad_kernel", 70, "cuDNN Tensor Core convolution (PyProf's list)"),
    ("conv1x1", 70, "cuDNN Tensor Core convolution (PyProf's list)"),
    ("conv2d_c1_k1", 70, "cuDNN Tensor Core convolution (PyProf's list)"),
    ("direct_group", 70, "cuDNN Tensor Core grouped convolution (PyProf's list)"),
    ("h1688", 75, "Turing half-precision MMA (turing_h1688gemm)"),
    ("s1688", 75, "Turing MMA with fp32 accumulation; tf32 on Ampere"),
    ("c1688", 75, "complex MMA (PyProf's list)"),
    ("i8816", 75, "Turing int8 MMA"),
    ("imma", 75, "integer MMA kernels (turing_int8_imma, ampere_int8_imma)"),
    ("16816", 80, "Ampere MMA shape (ampere_h16816gemm, bf16_s16816gemm)"),
    ("flash_fwd", 80, "FlashAttention 2 forward (sm80+ only)"),
    ("flash_bwd", 80, "FlashAttention 2 backward (sm80+ only)"),
    ("wgmma", 90, "Hopper warpgroup MMA"),
    ("gmma", 90, "Hopper GMMA kernels (CUTLASS sm90)"),
)


def is_tensor_core(name: str, capability: int = 0) -> bool:
    """Whether a kernel name marks a Tensor Core kernel on a GPU of that compute capability
    (major * 10 + minor; 0: unknown, every rule applies)."""
    low = name.lower()
    return any(sub in low and (capability == 0 or capability >= cc) for sub, cc, _ in TENSOR_CORE_RULES)


def _efficiency_columns(p: Profile, rows: np.ndarray, name: np.ndarray):
    """Per kernel call: (tensor core, has launch parameters, SM count known, SM efficiency, occupancy)."""
    t = p.tables
    dv = t.device
    dev_ids = dv.id[rows]
    sm = np.zeros(len(rows), dtype=np.float64)
    cap = np.zeros(len(rows), dtype=np.int64)
    for d in t.devices:
        on = dev_ids == d.id
        sm[on] = d.sm_count
        cap[on] = d.compute_major * 10 + d.compute_minor
    tc = np.zeros(len(rows), dtype=bool)
    if len(rows):
        pairs, inverse = np.unique(np.stack([name.astype(np.int64), cap]), axis=1, return_inverse=True)
        flags = np.array([is_tensor_core(t.names[n], c) for n, c in pairs.T.tolist()], dtype=bool)
        tc = flags[inverse.reshape(-1)]
    blocks = dv.grid[rows].astype(np.int64).prod(axis=1) if len(rows) else np.zeros(0, np.int64)
    launched = blocks > 0
    known = launched & (sm > 0)
    sm_eff = np.where(known, np.minimum(1.0, blocks / np.where(sm > 0, sm, 1.0)), 0.0)
    occ = np.where(launched, dv.occupancy[rows].astype(np.float64) / 100.0, 0.0)
    return tc, launched, known, sm_eff, occ


def _add_efficiency(out: pb.KernelEfficiency, sel, dur, tc, launched, known, sm_eff, occ) -> None:
    d = dur[sel]
    out.total_ns = int(d.sum())
    out.tensor_core_ns = int(d[tc[sel]].sum())
    out.launch_ns = int(d[launched[sel]].sum())
    out.sm_known_ns = int(d[known[sel]].sum())
    out.sm_efficiency_ns = float((d * sm_eff[sel]).sum())
    out.occupancy_ns = float((d * occ[sel]).sum())


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
    g = merge(g_op, 1)  # by name alone
    dv = t.device
    cfg_cols = [
        dv.grid[rows, 0],
        dv.grid[rows, 1],
        dv.grid[rows, 2],
        dv.block[rows, 0],
        dv.block[rows, 1],
        dv.block[rows, 2],
        dv.registers[rows],
        dv.shared_memory[rows],
        np.round(dv.occupancy[rows] * 1000).astype(np.int64),
    ]
    g_cfg = group([name] + cfg_cols, order, dur)

    eff = _efficiency_columns(p, rows, name)
    _add_efficiency(out.efficiency, slice(None), dur["d"], *eff)
    calls_of = split_rows(name, np.arange(len(rows))) if len(rows) else {}
    by_kernel_ops: Dict[int, List[int]] = {}
    for i in range(len(g_op)):
        by_kernel_ops.setdefault(int(g_op.keys[0][i]), []).append(i)
    by_kernel_cfg: Dict[int, List[int]] = {}
    for i in np.argsort(-g_cfg.sums["d"], kind="stable").tolist():
        by_kernel_cfg.setdefault(int(g_cfg.keys[0][i]), []).append(i)

    for i in range(len(g)):
        key = int(g.keys[0][i])
        msg = out.kernels.add(name=t.names[key], calls=int(g.counts[i]))
        msg.gpu.total_ns, msg.gpu.max_ns, msg.gpu.min_ns = int(g.sums["d"][i]), int(g.maxs["d"][i]), int(g.mins["d"][i])
        _add_efficiency(msg.efficiency, calls_of[key], dur["d"], *eff)
        for j in by_kernel_cfg.get(key, ()):
            d = rows[g_cfg.first_row[j]]
            msg.configs.add(
                grid=dv.grid[d].tolist(),
                block=dv.block[d].tolist(),
                registers_per_thread=int(dv.registers[d]),
                shared_memory=int(dv.shared_memory[d]),
                blocks_per_sm=float(dv.blocks_per_sm[d]),
                warps_per_sm=float(dv.warps_per_sm[d]),
                occupancy_pct=float(dv.occupancy[d]),
                calls=int(g_cfg.counts[j]),
                total_ns=int(g_cfg.sums["d"][j]),
            )
        for j in by_kernel_ops.get(key, ()):
            op = int(g_op.keys[1][j])
            o = msg.operators.add(operator=t.names[op] if op >= 0 else "", calls=int(g_op.counts[j]))
            o.gpu.total_ns, o.gpu.max_ns, o.gpu.min_ns = (
                int(g_op.sums["d"][j]),
                int(g_op.maxs["d"][j]),
                int(g_op.mins["d"][j]),
            )
