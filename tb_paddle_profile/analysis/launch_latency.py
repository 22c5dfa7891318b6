"""Launch latency and launch queue per device stream of one rank (docs/communication.md).

For every kernel, memcpy and memset with a launching runtime call (its correlation id):

- latency = the device event's start − the runtime call's start; p50 and p90 are nearest-rank
  percentiles (the value at rank ceil(q·n) of the sorted latencies), max the largest;
- queue = events of the stream launched (runtime call started) but not started on the device, a step
  function over time: its maximum, its time-weighted mean over the stream's span (first launch to
  last device end), and up to MAX_QUEUE_POINTS points (each the largest depth of its time bin);
- starvation = the idle gaps of the stream (its events sorted by start; a gap runs from the latest end
  so far to the next start) where the next event had not been launched yet: the part of the gap
  before the launch. Gaps whose starved part exceeds STARVE_MIN_NS are counted.
"""

from __future__ import annotations

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from .profile import Profile

MAX_QUEUE_POINTS = 512
STARVE_MIN_NS = 10_000
# A stream is reported starving behind the host when its starved time is at least this share of its span.
STARVE_SHARE = 0.10


def nearest_rank(sorted_values: np.ndarray, q: float) -> int:
    n = sorted_values.size
    if n == 0:
        return 0
    return int(sorted_values[max(0, int(np.ceil(q * n)) - 1)])


def queue_steps(launch: np.ndarray, start: np.ndarray):
    """The queue depth as a step function: (times, depth from that time on). At one time, starts are
    counted before launches (an event launched and started at once never waits)."""
    times = np.concatenate([start, launch])
    delta = np.concatenate([-np.ones(start.size, np.int64), np.ones(launch.size, np.int64)])
    order = np.lexsort((delta, times))
    times, depth = times[order], np.cumsum(delta[order])
    last = np.ones(times.size, dtype=bool)  # the depth after the last change at each time
    last[:-1] = times[1:] != times[:-1]
    return times[last], depth[last]


def _bins(times: np.ndarray, depth: np.ndarray):
    if times.size <= MAX_QUEUE_POINTS:
        return times, depth
    lo, hi = int(times[0]), int(times[-1])
    edges = np.linspace(lo, hi, MAX_QUEUE_POINTS + 1)
    b = np.minimum(np.searchsorted(edges, times, side="right") - 1, MAX_QUEUE_POINTS - 1)
    first = np.nonzero(np.r_[True, b[1:] != b[:-1]])[0]
    return edges[b[first]].astype(np.int64), np.maximum.reduceat(depth, first)


def launch_view(p: Profile, out) -> None:
    """One LaunchStream per (device, stream) with launched events, in that order."""
    t, tree = p.tables, p.tree
    d = t.device
    kinds = (d.type == et.KERNEL) | (d.type == et.MEMCPY) | (d.type == et.MEMSET)
    rt = tree.dev_rt
    rows = np.nonzero(kinds & (rt >= 0))[0]
    if rows.size == 0:
        return
    launch_all = gather(t.runtime.start, rt, 0)
    keys = sorted(set(zip(d.id[rows].tolist(), d.stream[rows].tolist())))
    for dev, stream in keys:
        r = rows[(d.id[rows] == dev) & (d.stream[rows] == stream)]
        start, end, launch = d.start[r], d.end[r], launch_all[r]
        lat = np.sort(start - launch)
        times, depth = queue_steps(launch, start)
        lo, hi = int(min(launch.min(), start.min())), int(end.max())
        span = max(1, hi - lo)
        seg = np.diff(np.r_[times, hi])
        mean_q = float((depth * np.maximum(seg, 0)).sum()) / span
        order = np.argsort(start, kind="stable")
        s, e, la = start[order], end[order], launch[order]
        reach = np.maximum.accumulate(e)[:-1]
        gap_lo, nxt, nxt_launch = reach, s[1:], la[1:]
        starved = np.clip(np.minimum(nxt_launch, nxt) - gap_lo, 0, None)
        bt, bd = _bins(times, depth)
        out.add(
            device_id=int(dev),
            stream=int(stream),
            launched=int(r.size),
            p50_ns=nearest_rank(lat, 0.5),
            p90_ns=nearest_rank(lat, 0.9),
            max_ns=int(lat[-1]),
            max_queue=int(depth.max()),
            mean_queue=mean_q,
            starved_ns=int(starved.sum()),
            starved_gaps=int((starved > STARVE_MIN_NS).sum()),
            span_ns=span,
            queue_time_ns=bt.tolist(),
            queue_depth=np.maximum(bd, 0).tolist(),
        )


def starving(ls) -> bool:
    """Whether a LaunchStream waited for the host for STARVE_SHARE of its span or more."""
    return ls.span_ns > 0 and ls.starved_ns >= STARVE_SHARE * ls.span_ns
