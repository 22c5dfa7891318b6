"""Paddle's Memory Summary, plus the allocated/reserved curve of each place.

Walk (MemorySummary.parse): every non-root host node except OperatorInner credits
its own memory events to its own name; an Operator also credits its direct
children's memory events to the operator's name. Peaks are the allocator's running
peaks carried on the credited events. The curve uses every memory event of the
place, in time order.
"""
from __future__ import annotations

from typing import Dict

import numpy as np

from .. import event_types as et
from ..v1 import summary_pb2 as pb
from .profile import Profile

MAX_CURVE_POINTS = 4000


class _Item:
    __slots__ = ("alloc_count", "free_count", "alloc_size", "free_size")

    def __init__(self):
        self.alloc_count = self.free_count = self.alloc_size = self.free_size = 0


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
    n_host = len(t.host_tid)
    owned = np.nonzero(t.mem_owner >= 0)[0]
    order = owned[np.argsort(t.mem_owner[owned], kind="stable")]
    counts = np.bincount(t.mem_owner[owned], minlength=n_host)
    ptr = np.zeros(n_host + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    ptr_l, order_l = ptr.tolist(), order.tolist()

    allocated: Dict[int, Dict[int, _Item]] = {}
    reserved: Dict[int, Dict[int, _Item]] = {}
    peak_alloc: Dict[int, int] = {}
    peak_res: Dict[int, int] = {}
    mtype = t.mem_type.tolist()
    mplace = t.mem_place.tolist()
    minc = t.mem_increase.tolist()
    mpa = t.mem_peak_allocated.tolist()
    mpr = t.mem_peak_reserved.tolist()

    def credit(name_id: int, row: int) -> None:
        for m in order_l[ptr_l[row]:ptr_l[row + 1]]:
            ty, place = mtype[m], mplace[m]
            table = allocated if ty in (et.ALLOCATE, et.FREE) else reserved
            items = table.setdefault(place, {})
            item = items.get(name_id)
            if item is None:
                item = items[name_id] = _Item()
            if ty in (et.ALLOCATE, et.RESERVED_ALLOCATE):
                item.alloc_count += 1
                item.alloc_size += minc[m]
            else:
                item.free_count += 1
                item.free_size -= minc[m]
            peak_alloc[place] = max(peak_alloc.get(place, 0), mpa[m])
            peak_res[place] = max(peak_res.get(place, 0), mpr[m])

    if len(owned):
        for tid in tree.threads:
            for row in tree.walk[tid].tolist():
                ty = t.host_type[row]
                if ty == et.OPERATOR_INNER:
                    continue
                name_id = int(t.host_name[row])
                if ty == et.OPERATOR:
                    for child in tree.children(row).tolist():
                        credit(name_id, child)
                credit(name_id, row)

    places = list(allocated) + [pl for pl in reserved if pl not in allocated]
    for pl in places:
        msg = out.places.add(place=t.names[pl], peak_allocated=peak_alloc.get(pl, 0),
                             peak_reserved=peak_res.get(pl, 0))
        for target, table in ((msg.allocated, allocated), (msg.reserved, reserved)):
            for name_id, item in table.get(pl, {}).items():
                target.add(name=t.names[name_id], allocation_count=item.alloc_count, free_count=item.free_count,
                           allocation_size=item.alloc_size, free_size=item.free_size)
        _curve(t, pl, msg.curve)
