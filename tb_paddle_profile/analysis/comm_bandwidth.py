"""Bytes and bandwidth per communicator and collective kind of one rank (docs/communication.md).

An instance's bytes are the bytes of the input tensors of the host operator that issued it, from
Paddle's ``input_shapes``/``input_dtypes`` (collectives.shape_bytes; 0 when the trace has none, as
Paddle 3.3.1 writes none). Its algorithm bandwidth is bytes / duration; its bus bandwidth, NCCL's
(nccl-tests' PERFORMANCE.md), is algbw × bus_factor(kind, n) for a group of n ranks:

- all-reduce: 2 (n − 1) / n
- all-gather, reduce-scatter, all-to-all: (n − 1) / n
- broadcast, reduce, send/recv: 1

n is not in a trace, so bus_factor answers None for the kinds that need it when n is unknown.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .collectives import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, REDUCE_SCATTER, SEND_RECV, Instances

# Nominal link bandwidths per direction, GB/s (1e9 bytes/s), against which bus bandwidth is shown:
# NVLink 4 (H100/H200 SXM: 18 links x 25 GB/s each way) and one 400 Gb/s NIC (InfiniBand NDR,
# RoCE). Settings TB_PADDLE_PROFILE_NVLINK_GBPS and TB_PADDLE_PROFILE_NETWORK_GBPS override them.
NVLINK_GBPS = 450.0
NETWORK_GBPS = 50.0


def bus_factor(kind: int, n: int = 0) -> Optional[float]:
    """NCCL's bus-bandwidth factor of a collective kind over n ranks (None: needs n, unknown)."""
    if kind in (BROADCAST, SEND_RECV):
        return 1.0
    if n < 1:
        return None
    if kind == ALL_REDUCE:
        return 2.0 * (n - 1) / n
    if kind in (ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL):
        return (n - 1) / n
    return None


def bandwidth_view(inst: Instances, axis: np.ndarray, out) -> None:
    """One CommBandwidth per (axis, kind) present, in axis then kind order."""
    dur = (inst.end - inst.start).astype(np.int64)
    for a, k in sorted(set(zip(axis.tolist(), inst.kind.tolist()))):
        m = (axis == a) & (inst.kind == k)
        known = m & (inst.nbytes > 0) & (dur > 0)
        nbytes = int(inst.nbytes[known].sum())
        algbw = inst.nbytes[known] / (dur[known] * 1e-9) if known.any() else np.zeros(0)
        out.add(
            axis=a,
            kind=k,
            calls=int(m.sum()),
            calls_with_bytes=int(known.sum()),
            bytes=nbytes,
            duration_ns=int(dur[known].sum()),
            max_algbw=float(algbw.max()) if algbw.size else 0.0,
        )
