"""Paddle's Memory Summary, plus the allocated/reserved curve of each place.

Walk (MemorySummary.parse): every non-root host node except OperatorInner credits
its own memory events to its own name; an Operator also credits its direct
children's memory events to the operator's name. Peaks are the allocator's running
peaks carried on the credited events. The curve uses every memory event of the
place, in time order.
"""
from __future__ import annotations

import numpy as np

from .. import event_types as et
from ..v1 import summary_pb2 as pb
from .groupby import group, split_rows
from .profile import Profile

MAX_CURVE_POINTS = 4000


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
    small, extra = divmod(m.size, n_buckets)   # the first `extra` buckets hold one more
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


def memory_view(p: Profile, out: pb.MemoryView) -> None:
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
    values = {"alloc_count": alloc, "alloc_size": np.where(alloc, inc, 0),
              "free_count": ~alloc, "free_size": np.where(alloc, 0, -inc)}
    # One group-by for both tables, keyed by table first: 0 allocated, 1 reserved.
    table = np.full(rows.size, -1, dtype=np.int64)
    table[(mtype == et.ALLOCATE) | (mtype == et.FREE)] = 0
    table[(mtype == et.RESERVED_ALLOCATE) | (mtype == et.RESERVED_FREE)] = 1
    sel = np.nonzero(table >= 0)[0]
    g = group([table[sel], t.memory.place[rows[sel]], t.host.name[credited[sel]]], [o[sel] for o in order],
              {k: v[sel] for k, v in values.items()}, extremes=False)
    places_seen = []
    for kind in (0, 1):
        for pl in g.keys[1][g.keys[0] == kind].tolist():
            if pl not in places_seen:
                places_seen.append(pl)

    place_rows = split_rows(t.memory.place, np.arange(len(t.memory.place))) if places_seen else {}
    credited_place = t.memory.place[rows]
    for pl in places_seen:
        on_place = rows[credited_place == pl]   # the rows credited to a name (repeats do not change a max)
        msg = out.places.add(place=t.names[pl],
                             peak_allocated=max(0, int(t.memory.peak_allocated[on_place].max())),
                             peak_reserved=max(0, int(t.memory.peak_reserved[on_place].max())))
        for target, kind in ((msg.allocated, 0), (msg.reserved, 1)):
            for i in np.nonzero((g.keys[0] == kind) & (g.keys[1] == pl))[0].tolist():
                target.add(name=t.names[g.keys[2][i]], allocation_count=int(g.sums["alloc_count"][i]),
                           free_count=int(g.sums["free_count"][i]), allocation_size=int(g.sums["alloc_size"][i]),
                           free_size=int(g.sums["free_size"][i]))
        _curve(t, place_rows[pl], msg.curve)
