"""The time per layer across ranks: which layer of which pipeline stage, on which rank, is slow
(``RunParallel.layers``; docs/flops.md, "Time per layer across ranks"), from the digests'
Summary.flops layers (analysis/flops.py: a layer's forward FLOPs and the device time of the compute
kernels its Forward subtree launched).

- The ranks are grouped by pipeline stage (``RankParallel.pipeline_stage``, pipeline.py; -1 for all
  ranks when the run is not pipelined); a stage's layers are its ranks' (name, ordinal), in the model's
  order (that of the first rank that has them).
- Every figure is per step: a rank's sums over its steps divided by its FlopsView.steps.
- Per layer: the median over the stage's ranks that have it of its FLOPs, its compute kernel time and its
  communication kernel time; the fastest time; the **slowest rank** (the largest compute kernel time, the
  lowest rank number on a tie) with its time and its own FLOP/s.
- FLOP/s = the median FLOPs / the median kernel time; MFU = that / the median of the ranks' peaks
  (FlopsView.peak_flops; 0 when a rank's GPU is unknown).

A separate module, not a function of sequences.py: that one answers "do the data-parallel replicas get
the same tokens, and what does it cost" and the FLOPs per rank and stage; this one compares the ranks'
kernel time layer by layer, from other columns of the digest.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from ...v1 import plugin_pb2 as ppb

NO_SHAPES = (
    "No rank has FLOPs per layer: the traces record no input shapes of the forward operators (Paddle "
    "3.3.1 writes them empty, even with record_shapes=True)."
)
NO_KERNELS = (
    "The layers' FLOPs are known but no rank has kernel time per layer: the traces have no kernels "
    "launched from the layers' Forward events (a CPU run)."
)


def fill(out: ppb.RunParallel, ranks: Sequence, msgs: Sequence[ppb.RankParallel]) -> None:
    """RunParallel.layers from each rank's Summary.flops layers (after pipeline.fill: it reads the
    ranks' pipeline_stage)."""
    lv = out.layers
    if not any(len(r.digest.flops.layers) for r in ranks):
        lv.why_not = NO_SHAPES
        return
    if not any(x.kernel_ns for r in ranks for x in r.digest.flops.layers):
        lv.why_not = NO_KERNELS
        return
    lv.present = True
    # (stage, name, ordinal) → per rank: (rank, flops, kernel_ns, comm_kernel_ns, peak), per step
    rows: Dict[Tuple[int, str, int], List[Tuple[int, float, float, float, float]]] = {}
    for r, m in zip(ranks, msgs):
        fv = r.digest.flops
        n = max(1, fv.steps)
        stage = m.pipeline_stage if m.pipeline_stage >= 0 else -1
        for x in fv.layers:
            rows.setdefault((stage, x.name, x.ordinal), []).append(
                (m.rank, x.flops / n, x.kernel_ns / n, x.comm_kernel_ns / n, fv.peak_flops)
            )
    order = {k: i for i, k in enumerate(rows)}  # first seen: the model's order on the stage's first rank
    for key in sorted(rows, key=lambda k: (k[0], order[k])):
        stage, name, ordinal = key
        vals = sorted(rows[key])
        a = np.array([v[1:] for v in vals], dtype=np.float64)
        flops, time, comm = (float(np.median(a[:, j])) for j in range(3))
        k = int(np.argmax(a[:, 1]))  # the first of the largest: the lowest rank on a tie
        peak = float(np.median(a[:, 3])) if (a[:, 3] > 0).all() else 0.0
        ach = flops / (time * 1e-9) if time > 0 else 0.0
        lv.layers.add(
            stage=stage,
            name=name,
            ordinal=ordinal,
            ranks=[v[0] for v in vals],
            flops=flops,
            median_kernel_ns=int(round(time)),
            min_kernel_ns=int(round(a[:, 1].min())),
            slowest_rank=vals[k][0],
            slowest_kernel_ns=int(round(a[k, 1])),
            median_comm_kernel_ns=int(round(comm)),
            achieved_flops=ach,
            slowest_achieved_flops=a[k, 0] / (a[k, 1] * 1e-9) if a[k, 1] > 0 else 0.0,
            mfu=ach / peak if peak > 0 else 0.0,
        )
