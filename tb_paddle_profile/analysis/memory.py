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
from .groupby import group
from .profile import Profile

MAX_CURVE_POINTS = 4000


def _curve(t, place_id: int, out: pb.MemoryCurve) -> None:
    m = np.nonzero(t.mem_place == place_id)[0]
    m = m[np.argsort(t.mem_ts_ns[m], kind="stable")]
    out.events = int(m.size)
    if m.size > MAX_CURVE_POINTS:
        # Keep, in each bucket, the points of highest and lowest allocation.
        buckets = np.array_split(m, MAX_CURVE_POINTS // 2)
        keep = []
        for b in buckets:
            a = t.mem_current_allocated[b]
            keep.extend(sorted({int(b[np.argmax(a)]), int(b[np.argmin(a)])}, key=lambda r: t.mem_ts_ns[r]))
        m = np.array(keep, dtype=np.int64)
        out.decimated = True
    out.time_ns.extend(t.mem_ts_ns[m].tolist())
    out.allocated.extend(t.mem_current_allocated[m].tolist())
    out.reserved.extend(t.mem_current_reserved[m].tolist())


def memory_view(p: Profile, out: pb.MemoryView) -> None:
    t, tree = p.tables, p.tree
    owner = t.mem_owner
    m_rows = np.nonzero(owner >= 0)[0]
    m_host = owner[m_rows]
    # Own events of every host node but OperatorInner ...
    own = t.host_type[m_host] != et.OPERATOR_INNER
    # ... and the events of an Operator's direct children, credited to the Operator.
    parent = tree.host_parent[m_host]
    via_op = parent >= 0
    via_op[via_op] = t.host_type[parent[via_op]] == et.OPERATOR
    child_pos = np.zeros(len(t.host_tid), dtype=np.int64)
    child_pos[tree.child_idx] = np.arange(len(tree.child_idx))

    rows = np.concatenate([m_rows[own], m_rows[via_op]])
    credited = np.concatenate([m_host[own], parent[via_op]])
    # Paddle's walk credits an Operator's children (in order) before the Operator itself.
    phase = np.concatenate([np.ones(int(own.sum()), np.int64), np.zeros(int(via_op.sum()), np.int64)])
    sub = np.concatenate([np.zeros(int(own.sum()), np.int64), child_pos[m_host[via_op]]])
    order = [p.walk_rank[credited], phase, sub, rows]

    mtype = t.mem_type[rows]
    inc = t.mem_increase[rows]
    alloc = (mtype == et.ALLOCATE) | (mtype == et.RESERVED_ALLOCATE)
    values = {"alloc_count": alloc.astype(np.int64), "alloc_size": np.where(alloc, inc, 0),
              "free_count": (~alloc).astype(np.int64), "free_size": np.where(alloc, 0, -inc)}
    places_seen = []
    tables = {}
    for kind, mask in (("allocated", (mtype == et.ALLOCATE) | (mtype == et.FREE)),
                       ("reserved", (mtype == et.RESERVED_ALLOCATE) | (mtype == et.RESERVED_FREE))):
        sel = np.nonzero(mask)[0]
        g = group([t.mem_place[rows[sel]], t.host_name[credited[sel]]], [o[sel] for o in order],
                  {k: v[sel] for k, v in values.items()})
        tables[kind] = g
        for pl in g.keys[0].tolist():
            if pl not in places_seen:
                places_seen.append(pl)

    peak_rows = np.unique(rows)
    for pl in places_seen:
        on_place = peak_rows[t.mem_place[peak_rows] == pl]
        msg = out.places.add(place=t.names[pl],
                             peak_allocated=max(0, int(t.mem_peak_allocated[on_place].max())),
                             peak_reserved=max(0, int(t.mem_peak_reserved[on_place].max())))
        for target, g in ((msg.allocated, tables["allocated"]), (msg.reserved, tables["reserved"])):
            for i in np.nonzero(g.keys[0] == pl)[0].tolist():
                target.add(name=t.names[g.keys[1][i]], allocation_count=int(g.sums["alloc_count"][i]),
                           free_count=int(g.sums["free_count"][i]), allocation_size=int(g.sums["alloc_size"][i]),
                           free_size=int(g.sums["free_size"][i]))
        _curve(t, pl, msg.curve)
