"""Communication per communicator and phase, launch starvation and host stalls of every rank side by
side (``RunParallel.comm``; docs/communication.md, "Across ranks"), from the digests' Summary.comm.

- Per rank (``CommRank``): its row as computed with its Summary (``CommView.rank``, analysis/comm_rank.py:
  for each communicator and phase its calls, time, hidden and exposed time per step; the stream that
  starved most and its share of that stream's span, the median launch latency, its largest launch queue;
  its steps with a host stall and its stalled time per step), copied with its rank number.
- Across ranks (``CommAxisAcross``): per communicator and phase, how many ranks have it, the means
  over them per step, the largest exposed time and its rank, and the communicator's algorithm
  bandwidth over every rank's calls with bytes (Σ bytes / Σ durations; 0 without shapes) and its bus
  bandwidth over the same calls: Σ bytes × NCCL's bus factor (comm_bandwidth.bus_factor) of the call's
  kind for the communicator's group size ÷ Σ durations, over the calls whose factor is known. The group
  size is the topology's (RunParallel.topology, topology.py): MP mp, DP dp, PP group pp, sharding
  sharding; send/recv and broadcast need none; an unknown size (0) leaves all-reduces and the like out.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from ...v1 import plugin_pb2 as ppb
from ...v1 import summary_pb2 as pb
from ..comm_bandwidth import bus_factor
from ..comm_rank import steps_of


def fill(out: ppb.RunParallel, ranks: Sequence) -> None:
    cv = out.comm
    kept = [r for r in ranks if r.digest.comm.HasField("rank")]
    cv.ranks.extend(r.digest.comm.rank for r in kept)
    rows: Dict[Tuple[int, int], List[Tuple[int, float, float, float, float]]] = {}
    bytes_: Dict[int, List[float]] = {}
    tv = out.topology
    size = {pb.COMM_AXIS_MP: tv.mp, pb.COMM_AXIS_DP: tv.dp, pb.COMM_AXIS_PP_GROUP: tv.pp,
            pb.COMM_AXIS_SHARDING: tv.sharding}
    for r, m in zip(kept, cv.ranks):
        m.rank = r.rank
        c = r.digest.comm
        n = steps_of(r.digest.parallel)
        for o in c.axes:   # one per (axis, phase)
            rows.setdefault((o.axis, o.phase), []).append(
                (r.rank, o.calls / n, o.time_ns / n, o.hidden_ns / n, o.exposed_ns / n))
        for b in c.bandwidth:
            if b.calls_with_bytes and b.duration_ns:
                acc = bytes_.setdefault(b.axis, [0.0, 0.0, 0.0, 0.0])
                acc[0] += b.bytes
                acc[1] += b.duration_ns
                f = bus_factor(b.kind, size.get(b.axis, 0))
                if f is not None:
                    acc[2] += b.bytes * f
                    acc[3] += b.duration_ns
    for (axis, phase), vals in sorted(rows.items()):
        a = np.array([v[1:] for v in vals])
        k = int(np.argmax(a[:, 3]))
        bw = bytes_.get(axis)
        cv.axes.add(axis=axis, phase=phase, ranks=len(vals), time_ns=int(round(a[:, 1].mean())),
                    hidden_ns=int(round(a[:, 2].mean())), exposed_ns=int(round(a[:, 3].mean())),
                    max_exposed_ns=int(round(a[k, 3])), max_exposed_rank=vals[k][0],
                    algbw=bw[0] / (bw[1] * 1e-9) if bw else 0.0,
                    busbw=bw[2] / (bw[3] * 1e-9) if bw and bw[3] else 0.0)
