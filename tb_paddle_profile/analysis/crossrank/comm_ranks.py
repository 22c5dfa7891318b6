"""Communication per communicator and phase, launch starvation and host stalls of every rank side by
side (``RunParallel.comm``; docs/communication.md, "Across ranks"), from the digests' Summary.comm.

- Per rank (``CommRank``): for each communicator and phase (comm_axes.py's rule), its calls, time,
  hidden and exposed time per step (Summary.comm.axes: the union over its streams, comm_overlap.py,
  divided by the rank's steps); the stream that starved most and its share of
  that stream's span, the median of its streams' median launch latencies, its largest launch queue;
  its steps with a host stall and its stalled time per step.
- Across ranks (``CommAxisAcross``): per communicator and phase, how many ranks have it, the means
  over them per step, the largest exposed time and its rank, and the communicator's algorithm
  bandwidth over every rank's calls with bytes (Σ bytes / Σ durations; 0 without shapes).
"""
from __future__ import annotations

import statistics
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ...v1 import plugin_pb2 as ppb


def _steps(r) -> int:
    return max(1, sum(1 for s in r.steps.values() if s.step >= 0) or len(r.steps))


def fill(out: ppb.RunParallel, ranks: Sequence) -> None:
    cv = out.comm
    rows: Dict[Tuple[int, int], List[Tuple[int, float, float, float, float]]] = {}
    bytes_: Dict[int, List[float]] = {}
    for r in ranks:
        c = r.digest.comm
        if not (c.overlap or c.launch or c.host_stalls.steps):
            continue
        n = _steps(r)
        m = cv.ranks.add(rank=r.rank, starved_stream=-1)
        per: Dict[Tuple[int, int], List[float]] = {}
        for o in c.axes:
            acc = per.setdefault((o.axis, o.phase), [0.0, 0.0, 0.0, 0.0])
            acc[0] += o.calls
            acc[1] += o.time_ns
            acc[2] += o.hidden_ns
            acc[3] += o.exposed_ns
        for (axis, phase), (calls, time, hidden, exposed) in sorted(per.items()):
            m.axes.add(axis=axis, phase=phase, calls=calls / n, time_ns=int(round(time / n)),
                       hidden_ns=int(round(hidden / n)), exposed_ns=int(round(exposed / n)))
            rows.setdefault((axis, phase), []).append((r.rank, calls / n, time / n, hidden / n, exposed / n))
        streams = [ls for ls in c.launch if ls.span_ns > 0]
        if streams:
            worst = max(streams, key=lambda ls: ls.starved_ns / ls.span_ns)
            m.starved_stream, m.starved_share = worst.stream, worst.starved_ns / worst.span_ns
            m.launch_p50_ns = int(statistics.median([ls.p50_ns for ls in streams]))   # (numpy's per rank: 3x slower)
            m.max_queue = max(ls.max_queue for ls in streams)
        hs = c.host_stalls
        m.stall_steps, m.steps = hs.steps_with_stall, hs.steps
        m.stalled_ns_per_step = int(round(hs.stalled_ns / max(1, hs.steps)))
        for b in c.bandwidth:
            if b.calls_with_bytes and b.duration_ns:
                acc = bytes_.setdefault(b.axis, [0.0, 0.0])
                acc[0] += b.bytes
                acc[1] += b.duration_ns
    for (axis, phase), vals in sorted(rows.items()):
        a = np.array([v[1:] for v in vals])
        k = int(np.argmax(a[:, 3]))
        bw = bytes_.get(axis)
        cv.axes.add(axis=axis, phase=phase, ranks=len(vals), time_ns=int(round(a[:, 1].mean())),
                    hidden_ns=int(round(a[:, 2].mean())), exposed_ns=int(round(a[:, 3].mean())),
                    max_exposed_ns=int(round(a[k, 3])), max_exposed_rank=vals[k][0],
                    algbw=bw[0] / (bw[1] * 1e-9) if bw else 0.0)
