"""The protobuf answers of the timeline routes: windows (page by page over ranks), an event's
details, search and range sums."""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from .counters import KIND_UTILIZATION, counter_bins
from .levels import FLOW_CAP, LANE_CAP, MATCH_CAP, MAX_PX, event_details, query_lane, range_sums, row_of, search
from .storage import TimelineIndex
from .tracks import GPU_STREAM, TYPE_NAMES


# One timeline window answers at most WINDOW_MAX_RANKS ranks and at most WINDOW_MAX_BYTES of message:
# more ranks are asked for page by page (TimelineWindow.rank_offset / ranks_total; docs/timeline.md).
WINDOW_MAX_RANKS = 32
WINDOW_MAX_BYTES = 2 << 20


def _deltas(values: np.ndarray, first: int = 0) -> np.ndarray:
    if not len(values):
        return values
    out = np.empty(len(values), dtype=np.int64)
    out[0] = values[0] - first
    out[1:] = np.diff(values)
    return out


def window_message(
    run: str,
    span: str,
    ranks: list,
    ws: Optional[int],
    we: Optional[int],
    px: int,
    base: Optional[int],
    query: str = "",
    flows: bool = False,
    ranks_total: Optional[int] = None,
    rank_offset: int = 0,
    max_bytes: int = WINDOW_MAX_BYTES,
    clock: Optional[Dict[str, int]] = None,
):
    """The TimelineWindow of ``ranks`` [(TraceFile, index or None, state)] for [ws, we] at ``px`` pixels.

    ``ws``/``we`` are ns relative to ``base`` (unix ns; default: the earliest origin of the ready ranks);
    None means the whole extent. ``ranks`` is one page (from ``rank_offset``) of the ``ranks_total``
    ranks asked for; a rank whose slices would take the message past ``max_bytes`` is left to the next
    page (the first rank of a page is always answered; one rank's window stays within the bound by the
    lane cap). ``clock``: worker -> its host's clock offset (ns), subtracted from its origin."""
    from ..v1 import timeline_pb2 as tpb

    ready = [(f, idx) for f, idx, _ in ranks if idx is not None]
    if base is None:
        base = min((_origin(f.worker, idx, clock) for f, idx in ready), default=0)
    lo_all = min((idx.start_ns + _origin(f.worker, idx, clock) - base for f, idx in ready), default=0)
    hi_all = max((idx.end_ns + _origin(f.worker, idx, clock) - base for f, idx in ready), default=0)
    if ws is None or we is None or we <= ws:
        ws, we = lo_all, max(hi_all, lo_all + 1)
    px = max(1, min(int(px or 1000), MAX_PX))
    pixel = (we - ws) / px
    msg = tpb.TimelineWindow(
        run=run,
        span=span,
        base_unix_ns=base,
        window_start_ns=ws,
        window_end_ns=we,
        px=px,
        resolution_ns=pixel,
        range_start_ns=lo_all,
        range_end_ns=hi_all,
        query=query,
    )
    msg.types.extend(TYPE_NAMES)
    names = [""]
    name_ids: Dict[Tuple[int, int], int] = {}
    flow_count = 0
    used = 0
    for ri, (f, idx, state) in enumerate(ranks):
        r = msg.ranks.add(worker=f.worker, rank=f.rank, file_name=f.file_name, state=state)
        names_before = len(names)
        if idx is None:
            used += r.ByteSize() + 4
            continue
        off = _origin(f.worker, idx, clock) - base
        r.offset_ns = off
        r.clock_offset_ns = (clock or {}).get(f.worker, 0)
        r.start_ns, r.end_ns = idx.start_ns + off, idx.end_ns + off
        for tr in idx.tracks:
            r.tracks.add(
                id=tr["id"],
                kind=tr["kind"],
                label=tr["label"],
                depth=tr["depth"],
                tid=tr["tid"],
                device=tr["device"],
                stream=tr["stream"],
                events=tr["events"],
            )
        lws, lwe = ws - off, we - off  # the window in this index's own times
        _add_counters(r, idx, lws, lwe, px)
        match = idx.name_mask(query) if query else None
        total = 0
        lane_items = {}
        for lane in range(idx.n_lanes):
            q = query_lane(idx, lane, lws, lwe, pixel, LANE_CAP, match)
            total += q["events"]
            if not len(q["ids"]):
                continue
            lane_items[lane] = q
            nm = q["name"]
            local = np.zeros(len(nm), dtype=np.int64)
            for j, g in enumerate(nm.tolist()):
                if g < 0:
                    continue
                k = name_ids.get((ri, g))
                if k is None:
                    k = name_ids[(ri, g)] = len(names)
                    names.append(idx.names[g])
                local[j] = k
            lane_msg = r.lanes.add(
                track=int(idx.a["lane_track"][lane]), depth=int(idx.a["lane_depth"][lane]), dropped=q["dropped"]
            )
            lane_msg.start_deltas.extend(_deltas(q["start"] + off, ws).tolist())
            lane_msg.durations.extend((q["end"] - q["start"]).tolist())
            lane_msg.names.extend(local.tolist())
            lane_msg.counts.extend(q["count"].tolist())
            lane_msg.id_deltas.extend(_deltas(q["ids"]).tolist())
            lane_msg.types.extend(q["type"].tolist())
            if "match" in q:
                lane_msg.matches.extend(q["match"].tolist())
        r.events_in_window = total
        cost = r.ByteSize() + 8 + sum(len(n.encode("utf-8", "surrogatepass")) + 3 for n in names[names_before:])
        if ri and max_bytes and used + cost > max_bytes:  # left to the next page
            del msg.ranks[-1]
            del names[names_before:]
            for name in [name for name, v in name_ids.items() if v >= names_before]:
                del name_ids[name]
            break
        used += cost
        if flows:
            flow_count += _add_flows(msg, ri, idx, lane_items, off, ws)
    msg.ranks_total = len(ranks) + rank_offset if ranks_total is None else ranks_total
    msg.rank_offset = rank_offset
    # Names are shared across ranks when equal.
    msg.names.extend(names)
    if flow_count > FLOW_CAP:
        msg.flows_dropped = flow_count - len(msg.flows)
    return msg


def _add_counters(r, idx: TimelineIndex, lws: int, lwe: int, px: int) -> None:
    """The rank's counters over its window, one value per pixel bin (counters.counter_bins)."""
    a = idx.a
    for i, c in enumerate(idx.counters):
        p0, p1 = int(a["ctr_ptr"][i]), int(a["ctr_ptr"][i + 1])
        util = c["kind"] == KIND_UTILIZATION
        top = 1.0 if util else float(a["ctr_v"][p0:p1].max(initial=0))
        # the lane's floor: a ratio's 0; memory's lowest value of the whole trace (negatives drawn at 0)
        low = 0.0 if util else max(0.0, min(float(a["ctr_v"][p0:p1].min()) if p1 > p0 else 0.0, top))
        msg = r.counters.add(
            kind=c["kind"], label=c["label"], unit=c["unit"], device=c["device"], max_value=top, min_value=low
        )
        msg.values.extend(counter_bins(idx, i, lws, lwe, px).tolist())


def _add_flows(msg, ri: int, idx: TimelineIndex, lane_items: dict, off: int, ws: int) -> int:
    """Launch→kernel pairs whose kernel is a visible single slice in the window."""
    a = idx.a
    dev_ids = []
    for lane, q in lane_items.items():
        tr = idx.tracks[int(a["lane_track"][lane])]
        if tr["kind"] != GPU_STREAM:
            continue
        single = q["count"] == 1
        dev_ids.append(q["ids"][single])
    if not dev_ids:
        return 0
    ids = np.concatenate(dev_ids)
    rows = a["ev_row"][ids]
    rts = a["dev_rt"][rows]
    ok = rts >= 0
    ids, rts = ids[ok], rts[ok]
    total = len(ids)
    room = FLOW_CAP - len(msg.flows)
    for dst, rt in zip(ids[: max(room, 0)].tolist(), rts[: max(room, 0)].tolist()):
        src = int(a["rt_pos"][rt])
        _, st, sd = row_of(idx, src)
        _, dt, dd = row_of(idx, dst)
        msg.flows.add(
            rank=ri,
            src_track=st,
            src_depth=sd,
            src_start_ns=int(a["ev_start"][src]) + off - ws,
            src_id=src,
            dst_track=dt,
            dst_depth=dd,
            dst_start_ns=int(a["ev_start"][dst]) + off - ws,
            dst_id=dst,
        )
    return total


def _origin(worker: str, idx: TimelineIndex, clock: Optional[Dict[str, int]]) -> int:
    """The index's origin on the run's common clock: its own origin less its host's clock offset."""
    return idx.origin - (clock or {}).get(worker, 0)


def event_message(
    worker: str, idx: TimelineIndex, ev: int, base: Optional[int], clock: Optional[Dict[str, int]] = None
):
    from ..v1 import timeline_pb2 as tpb

    d = event_details(idx, ev)
    origin = _origin(worker, idx, clock)
    base = origin if base is None else base
    off = origin - base
    msg = tpb.TimelineEvent(
        worker=worker,
        id=ev,
        name=d["name"],
        type=d["type"],
        start_ns=d["start"] + off,
        end_ns=d["end"] + off,
        track=d["track"],
        depth=d["depth"],
        track_label=d["track_label"],
        correlation_id=d["corr"],
        operator=d["operator"],
        base_unix_ns=base,
    )
    for arg in d["args"]:
        msg.args.add(key=arg["key"], value=arg["value"])
    for r in d["related"]:
        msg.related.add(
            worker=worker,
            id=r["id"],
            name=r["name"],
            type=r["type"],
            start_ns=r["start"] + off,
            end_ns=r["end"] + off,
            track=r["track"],
            depth=r["depth"],
            relation=r["relation"],
        )
    return msg


def search_message(
    ranks: list,
    query: str,
    exact: bool,
    base: Optional[int],
    limit: int = MATCH_CAP,
    clock: Optional[Dict[str, int]] = None,
):
    from ..v1 import timeline_pb2 as tpb

    ready = [(f, idx) for f, idx in ranks if idx is not None]
    if base is None:
        base = min((_origin(f.worker, idx, clock) for f, idx in ready), default=0)
    msg = tpb.TimelineSearch(query=query, base_unix_ns=base)
    found = []
    for f, idx in ready:
        total, ids = search(idx, query, exact, limit)
        msg.total += total
        off = _origin(f.worker, idx, clock) - base
        a = idx.a
        for ev in ids.tolist():
            found.append((int(a["ev_start"][ev]) + off, f, idx, ev, off))
    found.sort(key=lambda x: x[0])
    for start, f, idx, ev, off in found[:limit]:
        _, tr, dp = row_of(idx, ev)
        msg.matches.add(
            worker=f.worker,
            id=ev,
            name=idx.names[int(idx.a["ev_name"][ev])],
            start_ns=start,
            end_ns=int(idx.a["ev_end"][ev]) + off,
            track=tr,
            depth=dp,
        )
    if msg.matches:
        msg.first_start_ns = msg.matches[0].start_ns
        msg.last_end_ns = max(m.end_ns for m in msg.matches)
    return msg


def range_message(
    ranks: list,
    ws: int,
    we: int,
    tracks: Dict[str, Optional[List[int]]],
    base: Optional[int],
    clock: Optional[Dict[str, int]] = None,
):
    """Sums over [ws, we] of the tracks named per worker (None: all its tracks)."""

    ready = [(f, idx) for f, idx in ranks if idx is not None]
    if base is None:
        base = min((_origin(f.worker, idx, clock) for f, idx in ready), default=0)
    acc: Dict[Tuple[str, str], list] = {}
    for f, idx in ready:
        if f.worker not in tracks:
            continue
        off = _origin(f.worker, idx, clock) - base
        for key, v in range_sums(idx, ws - off, we - off, tracks[f.worker]).items():
            t = acc.setdefault(key, [0, 0, 0])
            for i in range(3):
                t[i] += v[i]
    return range_rows(acc, ws, we)


def range_rows(acc: Dict[Tuple[str, str], list], ws: int, we: int):
    """The TimelineRange of sums per (name, type): [count, total ns, overlap ns]; rows by overlap, longest
    first, then by name and type (the same order whichever ranks were read first)."""
    from ..v1 import timeline_pb2 as tpb

    msg = tpb.TimelineRange(start_ns=ws, end_ns=we)
    for (name, typ), (c, tot, ovl) in sorted(acc.items(), key=lambda kv: (-kv[1][2], kv[0])):
        msg.rows.add(name=name, type=typ, count=c, total_ns=tot, overlap_ns=ovl)
        msg.events += c
    return msg
