"""Paddle's Memory Summary, plus the allocated/reserved curve of each place and the memory insights.

Walk (MemorySummary.parse): every non-root host node except OperatorInner credits
its own memory events to its own name; an Operator also credits its direct
children's memory events to the operator's name. Peaks are the allocator's running
peaks carried on the credited events. The curve uses every memory event of the
place, in time order.

The insights (not Paddle's; docs/panels.md "Memory insights") use every memory event of
the place in time order (ties in file order), like the curve:

* growth per step (``MemoryGrowth``): allocated and reserved at each ProfileStep's end, the
  step's peak and floor, least-squares slopes in bytes per step, and "leak suspected" when the
  allocated floor grows in every step by more than the LEAK_* thresholds below;
* fragmentation (``MemoryFragmentation``): reserved minus allocated at the allocated peak and
  its largest value;
* alive at the peak (``MemoryAlive``): the allocations not yet freed at the event of the highest
  current allocated, matched to their frees by address, grouped by the operator and the
  outermost Forward/Backward layer event around the allocating host event.

``rank_memory`` copies each place's peaks into ParallelView.memory (the digest carries it) and
``memory_stages`` makes the peaks per pipeline stage and rank of the cross-rank analysis.
"""

from __future__ import annotations

import re
from typing import Dict, Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import plugin_pb2 as ppb
from ..v1 import summary_pb2 as pb
from .groupby import group, split_rows
from .profile import Profile

MAX_CURVE_POINTS = 4000

# Thresholds of the memory insights (data, documented in docs/panels.md "Memory insights").
# A leak is suspected when a place has at least LEAK_MIN_STEPS steps and its allocated floor (the
# lowest allocated in a step) grows from each step to the next by more than the larger of
# LEAK_MIN_GROWTH_BYTES and LEAK_MIN_GROWTH_OF_PEAK x the place's peak allocated.
LEAK_MIN_STEPS = 3
LEAK_MIN_GROWTH_BYTES = 1 << 20
LEAK_MIN_GROWTH_OF_PEAK = 0.001
# Groups listed in MemoryAlive (largest first); the rest are summed in its others_* fields.
MAX_ALIVE_GROUPS = 100
STAMP_NS = 1000  # the resolution of a memory event's time stamp (µs)
THREAD_ROOT = "(thread root)"
_GPU_PLACE = re.compile(r"^Place\(gpu:\d+\)$")


def _curve(t, rows: np.ndarray, out: pb.MemoryCurve) -> None:
    """rows: the place's memory rows, ascending."""
    m = rows[np.argsort(t.memory.ts_ns[rows], kind="stable")]
    out.events = int(m.size)
    if m.size > MAX_CURVE_POINTS:
        m = _decimate(t, m, MAX_CURVE_POINTS // 2)
        out.decimated = True
    out.time_ns.extend(t.memory.ts_ns[m].tolist())
    out.allocated.extend(t.memory.current_allocated[m].tolist())
    out.reserved.extend(t.memory.current_reserved[m].tolist())


def _decimate(t, m: np.ndarray, n_buckets: int) -> np.ndarray:
    """Keep, in each of n_buckets consecutive buckets of m (sized as np.array_split makes them),
    the points of highest and lowest allocation (the first of equals), in time order."""
    small, extra = divmod(m.size, n_buckets)  # the first `extra` buckets hold one more
    sizes = np.full(n_buckets, small, dtype=np.int64)
    sizes[:extra] += 1
    starts = np.zeros(n_buckets, dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    bucket = np.repeat(np.arange(n_buckets), sizes)
    a = t.memory.current_allocated[m]

    def first_where(hit):  # per bucket, the first position where hit (every bucket has one)
        pos = np.nonzero(hit)[0]
        return pos[np.r_[True, bucket[pos][1:] != bucket[pos][:-1]]]

    hi = m[first_where(a == np.maximum.reduceat(a, starts)[bucket])]
    lo = m[first_where(a == np.minimum.reduceat(a, starts)[bucket])]
    ts = t.memory.ts_ns
    # two points in time order; one when they are the same row
    first = np.where(ts[lo] < ts[hi], lo, hi)
    second = np.where(ts[lo] < ts[hi], hi, lo)
    tie = np.nonzero((ts[lo] == ts[hi]) & (lo != hi))[0]
    for i in tie.tolist():  # equal times: the order of Python's sorted() over the set of both rows
        first[i], second[i] = sorted({int(hi[i]), int(lo[i])}, key=lambda r: ts[r])
    keep = np.stack([first, second], axis=1).reshape(-1)
    both = np.stack([np.ones(n_buckets, bool), first != second], axis=1).reshape(-1)
    return keep[both]


def memory_view(p: Profile, out: pb.MemoryView, steps: Sequence[Tuple[int, int, int]] = ()) -> None:
    """Paddle's Memory Summary of every place, its curve and its insights; `steps` are
    ModelAnalysis.steps, (number, start_ns, end_ns) per ProfileStep."""
    t, tree = p.tables, p.tree
    owner = t.memory.owner
    m_rows = np.nonzero(owner >= 0)[0]
    m_host = owner[m_rows]
    # Own events of every host node but OperatorInner ...
    own = t.host.type[m_host] != et.OPERATOR_INNER
    # ... and the events of an Operator's direct children, credited to the Operator.
    parent = tree.host_parent[m_host]
    via_op = parent >= 0
    via_op[via_op] = tree.is_operator[parent[via_op]]
    child_pos = tree.child_pos

    rows = np.concatenate([m_rows[own], m_rows[via_op]])
    credited = np.concatenate([m_host[own], parent[via_op]])
    # Paddle's walk credits an Operator's children (in order) before the Operator itself.
    phase = np.concatenate([np.ones(int(own.sum()), np.int64), np.zeros(int(via_op.sum()), np.int64)])
    sub = np.concatenate([np.zeros(int(own.sum()), np.int64), child_pos[m_host[via_op]]])
    order = [p.walk_rank[credited], phase, sub, rows]

    mtype = t.memory.type[rows]
    inc = t.memory.increase[rows]
    alloc = (mtype == et.ALLOCATE) | (mtype == et.RESERVED_ALLOCATE)
    values = {
        "alloc_count": alloc,
        "alloc_size": np.where(alloc, inc, 0),
        "free_count": ~alloc,
        "free_size": np.where(alloc, 0, -inc),
    }
    # One group-by for both tables, keyed by table first: 0 allocated, 1 reserved.
    table = np.full(rows.size, -1, dtype=np.int64)
    table[(mtype == et.ALLOCATE) | (mtype == et.FREE)] = 0
    table[(mtype == et.RESERVED_ALLOCATE) | (mtype == et.RESERVED_FREE)] = 1
    sel = np.nonzero(table >= 0)[0]
    g = group(
        [table[sel], t.memory.place[rows[sel]], t.host.name[credited[sel]]],
        [o[sel] for o in order],
        {k: v[sel] for k, v in values.items()},
        extremes=False,
    )
    places_seen = []
    for kind in (0, 1):
        for pl in g.keys[1][g.keys[0] == kind].tolist():
            if pl not in places_seen:
                places_seen.append(pl)

    place_rows = split_rows(t.memory.place, np.arange(len(t.memory.place))) if places_seen else {}
    credited_place = t.memory.place[rows]
    layer = None
    for pl in places_seen:
        on_place = rows[credited_place == pl]  # the rows credited to a name (repeats do not change a max)
        msg = out.places.add(
            place=t.names[pl],
            peak_allocated=max(0, int(t.memory.peak_allocated[on_place].max())),
            peak_reserved=max(0, int(t.memory.peak_reserved[on_place].max())),
        )
        for target, kind in ((msg.allocated, 0), (msg.reserved, 1)):
            for i in np.nonzero((g.keys[0] == kind) & (g.keys[1] == pl))[0].tolist():
                target.add(
                    name=t.names[g.keys[2][i]],
                    allocation_count=int(g.sums["alloc_count"][i]),
                    free_count=int(g.sums["free_count"][i]),
                    allocation_size=int(g.sums["alloc_size"][i]),
                    free_size=int(g.sums["free_size"][i]),
                )
        _curve(t, place_rows[pl], msg.curve)
        if layer is None:
            layer = tree.outermost((t.host.type == et.FORWARD) | (t.host.type == et.BACKWARD))
        _insights(p, place_rows[pl], steps, layer, msg)


# ------------------------------------------------------------------ insights


def _slope(y: np.ndarray) -> float:
    """Least-squares slope of y over 0, 1, 2, ... (per step); 0 with fewer than 2 points."""
    if y.size < 2:
        return 0.0
    x = np.arange(y.size, dtype=np.float64)
    x -= x.mean()
    yy = y.astype(np.float64)
    return float((x * (yy - yy.mean())).sum() / (x * x).sum())


def _insights(p: Profile, rows: np.ndarray, steps, layer: np.ndarray, msg: pb.MemoryPlace) -> None:
    t = p.tables
    mem = t.memory
    m = rows[np.argsort(mem.ts_ns[rows], kind="stable")]
    if not m.size:
        return
    ts, a, r = mem.ts_ns[m], mem.current_allocated[m], mem.current_reserved[m]
    typ, inc = mem.type[m], mem.increase[m]
    is_alloc_kind = (typ == et.ALLOCATE) | (typ == et.FREE)
    # the counters before the first event (its own increase taken back)
    base_a = int(a[0] - (inc[0] if is_alloc_kind[0] else 0))
    base_r = int(r[0] - (0 if is_alloc_kind[0] else inc[0]))

    # ---- growth per step
    g = msg.growth
    for number, start, end in steps:
        # memory events carry whole-µs stamps: one stamped less than 1 µs before the start is in the step
        i0 = int(np.searchsorted(ts, start - STAMP_NS, side="right"))
        i1 = int(np.searchsorted(ts, end, side="right"))
        enter_a = int(a[i0 - 1]) if i0 else base_a
        enter_r = int(r[i0 - 1]) if i0 else base_r
        inside_a, inside_r = a[i0:i1], r[i0:i1]
        pt = g.steps.add(
            step=number,
            events=max(0, i1 - i0),
            allocated_end=int(a[i1 - 1]) if i1 else base_a,
            reserved_end=int(r[i1 - 1]) if i1 else base_r,
            allocated_peak=max(enter_a, int(inside_a.max())) if inside_a.size else enter_a,
            allocated_floor=min(enter_a, int(inside_a.min())) if inside_a.size else enter_a,
            reserved_peak=max(enter_r, int(inside_r.max())) if inside_r.size else enter_r,
        )
        pt.range.start_ns, pt.range.end_ns = int(start), int(end)
    ends_a = np.array([s.allocated_end for s in g.steps], dtype=np.int64)
    ends_r = np.array([s.reserved_end for s in g.steps], dtype=np.int64)
    floors = np.array([s.allocated_floor for s in g.steps], dtype=np.int64)
    g.allocated_slope, g.reserved_slope, g.floor_slope = _slope(ends_a), _slope(ends_r), _slope(floors)
    growth = np.diff(floors)
    g.floor_growth_min = int(growth.min()) if growth.size else 0
    g.leak_min_steps = LEAK_MIN_STEPS
    g.leak_threshold_bytes = max(LEAK_MIN_GROWTH_BYTES, int(LEAK_MIN_GROWTH_OF_PEAK * msg.peak_allocated))
    g.leak_suspected = bool(
        floors.size >= LEAK_MIN_STEPS and growth.size and int(growth.min()) > g.leak_threshold_bytes
    )

    # ---- fragmentation: reserved - allocated after each event
    k = int(np.argmax(a))  # the allocated peak: the first event of the highest current allocated
    frag = r - a
    j = int(np.argmax(frag))
    f = msg.fragmentation
    f.peak_time_ns, f.peak_allocated, f.peak_reserved = int(ts[k]), int(a[k]), int(r[k])
    f.at_peak_bytes = int(frag[k])
    f.max_bytes, f.max_time_ns = int(frag[j]), int(ts[j])

    # ---- alive at the peak: allocations of the prefix up to the peak event whose address is
    # not freed after them (within the prefix), as a dict of addresses walked in time order leaves
    alive = msg.alive_at_peak
    alive.time_ns, alive.allocated = int(ts[k]), int(a[k])
    pre = m[: k + 1]
    pre = pre[(mem.type[pre] == et.ALLOCATE) | (mem.type[pre] == et.FREE)]
    addr = mem.addr[pre]
    known = addr >= 0
    alive.unaddressed = int((~known).sum())
    pre, addr = pre[known], addr[known]
    pos = np.arange(pre.size)
    order = np.lexsort((pos, addr))  # by address, then time
    ev, ad = pre[order], addr[order]
    is_alloc = mem.type[ev] == et.ALLOCATE
    same_next = np.r_[ad[1:] == ad[:-1], False]
    same_prev = np.r_[False, ad[1:] == ad[:-1]]
    prev_alloc = np.r_[False, is_alloc[:-1]]
    live = ev[is_alloc & ~same_next]  # the last event of its address: an allocation
    unseen_free = ev[~is_alloc & ~(same_prev & prev_alloc)]  # a free of a block not allocated in the trace
    alive.before_trace = base_a - int(-mem.increase[unseen_free].sum())
    if live.size:
        live = np.sort(live)  # file order: the first allocation of a group decides ties
        owner = mem.owner[live]
        has = owner >= 0
        op = np.full(live.size, -1, dtype=np.int64)
        op[has] = p.tree.nearest_operator[owner[has]]
        who = np.where(op >= 0, op, owner)
        name = np.where(who >= 0, t.host.name[np.maximum(who, 0)], -1)
        lay = np.full(live.size, -1, dtype=np.int64)
        lay[has] = layer[owner[has]]
        lay_name = np.where(lay >= 0, t.host.name[np.maximum(lay, 0)], -1)
        keys, first, inv = np.unique(np.stack([name, lay_name], axis=1), axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        size = mem.increase[live]
        counts = np.bincount(inv, minlength=len(keys))
        exact = np.zeros(len(keys), dtype=np.int64)  # int sums (weights are float64)
        np.add.at(exact, inv, size)
        rank = np.lexsort((first, -counts, -exact))
        for gi in rank[:MAX_ALIVE_GROUPS].tolist():
            n_id, l_id = int(keys[gi][0]), int(keys[gi][1])
            alive.groups.add(
                operator=t.names[n_id] if n_id >= 0 else THREAD_ROOT,
                layer=t.names[l_id] if l_id >= 0 else "",
                bytes=int(exact[gi]),
                count=int(counts[gi]),
            )
        rest = rank[MAX_ALIVE_GROUPS:]
        alive.others_bytes = int(exact[rest].sum())
        alive.others_count = int(counts[rest].sum())


# ------------------------------------------------------------------ across ranks


def rank_memory(view: pb.MemoryView, out: pb.RankMemory) -> None:
    """Each place's peaks, as MemoryView gives them (ParallelView.memory)."""
    for pl in view.places:
        out.places.add(place=pl.place, peak_allocated=pl.peak_allocated, peak_reserved=pl.peak_reserved)


def device_peak(memory: pb.RankMemory):
    """The rank's device memory: the place of the largest peak allocated among its GPU places
    ("Place(gpu:N)"), else among all its places; None without places."""
    places = [pl for pl in memory.places if _GPU_PLACE.match(pl.place)] or list(memory.places)
    if not places:
        return None
    return max(places, key=lambda pl: pl.peak_allocated)  # the first of equals


def memory_stages(out: ppb.RunParallel, ranks, msgs: Sequence[ppb.RankParallel]) -> None:
    """RunParallel.memory from each rank's digest (ParallelView.memory) and pipeline stage
    (RankParallel.pipeline_stage, set by the pipeline view): per rank its device peak, per stage the
    largest, smallest and mean peak allocated and the largest peak reserved."""
    by_stage: Dict[int, list] = {}  # stage → its ranks' MemoryRankRow
    for r in ranks:
        pl = device_peak(r.digest.parallel.memory)
        if pl is None:
            continue
        stage = int(msgs[r.index].pipeline_stage)
        row = out.memory.ranks.add(
            rank=r.rank, stage=stage, place=pl.place, peak_allocated=pl.peak_allocated, peak_reserved=pl.peak_reserved
        )
        by_stage.setdefault(stage, []).append(row)
    for stage in sorted(by_stage):
        rows = by_stage[stage]
        top_a = max(rows, key=lambda x: x.peak_allocated)
        top_r = max(rows, key=lambda x: x.peak_reserved)
        out.memory.stages.add(
            stage=stage,
            ranks=sorted(x.rank for x in rows),
            max_peak_allocated=top_a.peak_allocated,
            max_allocated_rank=top_a.rank,
            min_peak_allocated=min(x.peak_allocated for x in rows),
            mean_peak_allocated=int(round(sum(x.peak_allocated for x in rows) / len(rows))),
            max_peak_reserved=top_r.peak_reserved,
            max_reserved_rank=top_r.rank,
        )
