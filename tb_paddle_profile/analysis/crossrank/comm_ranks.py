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

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...v1 import plugin_pb2 as ppb
from ...v1 import summary_pb2 as pb
from ..comm_bandwidth import bus_factor
from ..comm_rank import steps_of
from .load import packed_columns


# CommAxes' packed fields: number -> (name, zigzag-encoded)
_AXES_FIELDS = {
    1: ("axis", False),
    2: ("phase", False),
    3: ("calls", False),
    4: ("time_ns", False),
    5: ("hidden_ns", False),
    6: ("exposed_ns", False),
}


def _axes_columns(msgs: Sequence[pb.CommAxes]) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    """Every rank's CommAxes end to end: {field: (values, int64; rows per rank)}, read from their wire bytes
    at once (load.packed_columns), else through the protobuf API."""
    got = packed_columns(msgs, _AXES_FIELDS)
    if got is not None:
        return got
    counts = np.array([len(m.axis) for m in msgs], dtype=np.int64)
    return {
        name: (np.array([v for m in msgs for v in getattr(m, name)], dtype=np.int64), counts)
        for name, _ in _AXES_FIELDS.values()
    }


def fill(out: ppb.RunParallel, ranks: Sequence) -> None:
    cv = out.comm
    kept = [r for r in ranks if r.digest.comm.HasField("rank")]
    cv.ranks.extend(r.digest.comm.rank for r in kept)
    for r, m in zip(kept, cv.ranks):
        m.rank = r.rank
    if not kept:
        return
    # per rank and (axis, phase): its totals over its steps (r.steps: its distinct step numbers), rank order
    cols = _axes_columns([r.digest.comm.axes for r in kept])
    axis, per_rank = cols["axis"]
    phase = cols["phase"][0]
    n = np.repeat(np.array([steps_of(r.steps) for r in kept], dtype=np.int64), per_rank)
    rank_of = np.repeat(np.array([r.rank for r in kept], dtype=np.int64), per_rank)
    vals = np.stack([cols[k][0] / n for k in ("calls", "time_ns", "hidden_ns", "exposed_ns")], axis=1)
    bytes_: Dict[int, List[float]] = {}
    tv = out.topology
    size = {
        pb.COMM_AXIS_MP: tv.mp,
        pb.COMM_AXIS_DP: tv.dp,
        pb.COMM_AXIS_PP_GROUP: tv.pp,
        pb.COMM_AXIS_SHARDING: tv.sharding,
    }
    factors: Dict[Tuple[int, int], Optional[float]] = {}
    for r in kept:
        for b in r.digest.comm.bandwidth:
            if b.calls_with_bytes and b.duration_ns:
                ax, kind, nbytes, dur = b.axis, b.kind, b.bytes, b.duration_ns
                acc = bytes_.setdefault(ax, [0.0, 0.0, 0.0, 0.0])
                acc[0] += nbytes
                acc[1] += dur
                f = factors.get((ax, kind), -1.0)
                if f == -1.0:
                    f = factors[(ax, kind)] = bus_factor(kind, size.get(ax, 0))
                if f is not None:
                    acc[2] += nbytes * f
                    acc[3] += dur
    for ax, ph in sorted(set(zip(axis.tolist(), phase.tolist()))):
        sel = np.nonzero((axis == ax) & (phase == ph))[0]
        a = vals[sel]
        k = int(np.argmax(a[:, 3]))
        bw = bytes_.get(ax)
        cv.axes.add(
            axis=ax,
            phase=ph,
            ranks=sel.size,
            time_ns=int(round(a[:, 1].mean())),
            hidden_ns=int(round(a[:, 2].mean())),
            exposed_ns=int(round(a[:, 3].mean())),
            max_exposed_ns=int(round(a[k, 3])),
            max_exposed_rank=int(rank_of[sel[k]]),
            algbw=bw[0] / (bw[1] * 1e-9) if bw else 0.0,
            busbw=bw[2] / (bw[3] * 1e-9) if bw and bw[3] else 0.0,
        )
