"""Host stalls of one rank: gaps on the main thread with no CUDA runtime call (docs/communication.md).

The main thread is the thread of the ProfileStep events, else the thread with the most runtime calls.
Within each step, a stall is a stretch of the step longer than HOST_STALL_NS where the main thread
makes no runtime call at all: no kernel launch, no synchronisation, no copy (the GPU gets no new work
from it; garbage collection, checkpointing, logging, a slow data loader). The stretches from the
step's start to the first call and from the last call to the step's end count too. A trace without
runtime calls on that thread (a CPU run) has no stalls. The finding: stalls in more than half of the
steps.
"""

from __future__ import annotations

from typing import Dict, Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from . import ranges
from .profile import Profile

HOST_STALL_NS = 1_000_000


def main_thread(p: Profile) -> int:
    t = p.tables
    steps = t.host.type == et.PROFILE_STEP
    tids = t.host.tid[steps] if steps.any() else t.runtime.tid
    if tids.size == 0:
        return -1
    vals, counts = np.unique(tids, return_counts=True)
    return int(vals[np.argmax(counts)])


def stall_gaps(rt_start: np.ndarray, rt_end: np.ndarray, lo: int, hi: int, threshold: int):
    """The stretches of [lo, hi) without any of the calls, longer than threshold."""
    s, e = ranges.clip(ranges.union(rt_start, rt_end), lo, hi)
    gs = np.r_[lo, e]
    ge = np.r_[s, hi]
    keep = ge - gs > threshold
    return gs[keep], ge[keep]


def mid_step_stalls(p: Profile, steps: Sequence[Tuple[int, int, int]], exclude, threshold: int = HOST_STALL_NS):
    """Per step (number, lo, hi), the main thread's stalled time after the step's first runtime call:
    its stretches longer than threshold with no runtime call (stall_gaps, from that call to the step's
    end), less ``exclude`` (a union of ranges: the data loader's events, counted on their own). The
    stretch before the first call is the wait for the step's first work. 0 for every step of a trace
    without runtime calls on that thread (a CPU run)."""
    t = p.tables
    tid = main_thread(p)
    rt = np.nonzero(t.runtime.tid == tid)[0] if tid >= 0 else np.zeros(0, dtype=np.int64)
    if rt.size == 0:
        return [0] * len(steps)
    rt = rt[np.argsort(t.runtime.start[rt], kind="stable")]
    rs, re_ = t.runtime.start[rt], t.runtime.end[rt]
    out = []
    for _, lo, hi in steps:
        i = int(np.searchsorted(rs, lo, side="left"))
        if i >= rs.size or rs[i] >= hi:
            out.append(0)
            continue
        gs, ge = stall_gaps(rs, re_, int(rs[i]), hi, threshold)
        if not gs.size:
            out.append(0)
            continue
        gaps = (gs, ge)
        out.append(int((ge - gs).sum()) - ranges.intersect_measure(gaps, exclude))
    return out


def host_stall_view(p: Profile, steps: Sequence[Tuple[int, int, int]], out, threshold: int = HOST_STALL_NS) -> None:
    t, tree = p.tables, p.tree
    out.threshold_ns = threshold
    tid = main_thread(p)
    out.main_tid = tid
    rt = np.nonzero(t.runtime.tid == tid)[0]
    if tid < 0 or rt.size == 0:
        return
    rt = rt[np.argsort(t.runtime.start[rt], kind="stable")]
    rs, re_ = t.runtime.start[rt], t.runtime.end[rt]
    host = np.nonzero(t.host.tid == tid)[0]
    names: Dict[str, int] = {"": 0}

    def name_id(row: int) -> int:
        return names.setdefault(t.names[t.host.name[row]], len(names)) if row >= 0 else 0

    def within(mid: int) -> int:
        cover = host[(t.host.start[host] <= mid) & (t.host.end[host] > mid) & (t.host.type[host] != et.PROFILE_STEP)]
        return int(cover[np.argmax(tree.host_depth[cover])]) if cover.size else -1

    out.steps = len(steps)
    for number, lo, hi in steps:
        gs, ge = stall_gaps(rs, re_, lo, hi, threshold)
        if gs.size:
            out.steps_with_stall += 1
        for a, b in zip(gs.tolist(), ge.tolist()):
            i = int(np.searchsorted(rs, a, side="left")) - 1  # the call ending at (or before) a
            j = int(np.searchsorted(rs, b, side="left"))  # the call starting at b
            before = int(tree.rt_host[rt[i]]) if i >= 0 else -1
            after = int(tree.rt_host[rt[j]]) if j < rt.size else -1
            out.stalls.add(
                step=number,
                start_ns=a,
                duration_ns=b - a,
                before=name_id(before),
                after=name_id(after),
                within=name_id(within((a + b) // 2)),
            )
            out.stalled_ns += b - a
    out.names.extend(names)


def recurring(hs) -> bool:
    """The finding: stalls in more than half of the steps (and at least two)."""
    return hs.steps_with_stall >= 2 and 2 * hs.steps_with_stall > hs.steps
