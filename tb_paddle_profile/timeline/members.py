"""A collective's matched instance on the timeline: which instance of the run's cross-rank analysis a
selected slice is, and each member's slice in its rank's index (route ``timeline_instance``).

Nothing is derived here: the instance, its members' waits, durations and the transfer are the analysis'
matched table (analysis.crossrank.encode.MatchedTable, as ``parallel_matched`` pages through it). This
module only finds things:

- the instance of a slice: the group with a member of the slice's rank whose start (``start_unix_ns``,
  the rank's origin + the instance's start, on its own clock) is the slice's start (``instance_of``);
- each member's slice: the event of the member's index that starts at the member's start, a device
  event first, then one with the instance's name (``event_at``).
"""

from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .levels import row_of
from .storage import TimelineIndex
from .tracks import KIND_DEVICE

DIRECTIONS = {1: "send", 2: "recv"}


def instance_of(table, rank: int, start_unix_ns: int) -> Optional[int]:
    """The group of ``table`` (a MatchedTable) with a member of ``rank`` starting at ``start_unix_ns``;
    None when the slice is in no matched instance."""
    if not table.n:
        return None
    hit = np.nonzero((table.rank == int(rank)) & (table.start == int(start_unix_ns)))[0]
    if not hit.size:
        return None
    return int(np.searchsorted(table.ptr, int(hit[0]), "right")) - 1


def event_at(idx: TimelineIndex, start: int, name: str = "") -> Optional[int]:
    """The event of ``idx`` starting at ``start`` (index-local ns): a device event first, then one
    named ``name``, then the first; None when no event starts there."""
    a = idx.a
    st, ptr = a["ev_start"], a["lane_ptr"]
    found = []
    for lane in range(idx.n_lanes):
        p0, p1 = int(ptr[lane]), int(ptr[lane + 1])
        i = p0 + int(np.searchsorted(st[p0:p1], start, "left"))
        while i < p1 and int(st[i]) == start:
            found.append(i)
            i += 1
    if not found:
        return None
    want = idx.names.index(name) if name and name in idx.names else -1

    def score(ev: int):
        return (int(a["ev_kind"][ev]) != KIND_DEVICE, int(a["ev_name"][ev]) != want, ev)

    return min(found, key=score)


def instance_message(
    run: str,
    span: str,
    analysis_key: str,
    table,
    group: Optional[int],
    members: Dict[int, tuple],
    base: Optional[int],
    clock: Optional[Dict[str, int]] = None,
    note: str = "",
):
    """The TimelineInstance of ``group`` of ``table``; ``members``: rank -> (worker, index or None) of
    the member ranks (an index None: not open yet, its slice is not found)."""
    from ..analysis.collectives import KIND_LABELS
    from ..v1 import timeline_pb2 as tpb

    clock = clock or {}
    msg = tpb.TimelineInstance(run=run, span=span, analysis_key=analysis_key, note=note)
    if group is None:
        msg.base_unix_ns = base or 0
        return msg
    lo, hi = int(table.ptr[group]), int(table.ptr[group + 1])
    name = table.names[int(table.name[group])] if table.names else ""
    if base is None:
        origins = [idx.origin - clock.get(w, 0) for w, idx in members.values() if idx is not None]
        base = min(origins) if origins else 0
    msg.matched, msg.index, msg.base_unix_ns = True, group, base
    msg.step, msg.name = int(table.step[group]), name
    msg.kind = KIND_LABELS.get(int(table.kind[group]), "other")
    msg.transfer_ns, msg.last_rank = int(table.transfer[group]), int(table.last_rank[group])
    for j in range(lo, hi):
        rank = int(table.rank[j])
        worker, idx = members.get(rank, ("", None))
        start_unix, dur = int(table.start[j]), int(table.dur[j])
        at = start_unix - clock.get(worker, 0) - base  # on the timeline's clock and base
        m = msg.members.add(
            rank=rank,
            worker=worker,
            ordinal=int(table.ordinal[j]),
            duration_ns=dur,
            wait_ns=int(table.wait[j]),
            start_ns=at,
            end_ns=at + dur,
            start_unix_ns=start_unix,
            direction=DIRECTIONS.get(int(table.dir[j]), ""),
            last=rank == msg.last_rank,
        )
        if idx is not None:
            ev = event_at(idx, start_unix - idx.origin, name)
            if ev is not None:
                _, track, depth = row_of(idx, ev)
                m.found, m.id, m.track, m.depth = True, ev, track, depth
    first = min((m.start_ns for m in msg.members), default=0)
    for m in msg.members:
        m.arrival_ns = m.start_ns - first
    return msg
