"""Windows and levels of detail over an open index: the slices of a lane in a window, merged below
a pixel (query_lane), an event's details, search and range sums."""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from .storage import TimelineIndex
from .tracks import KIND_HOST, KIND_RUNTIME, TYPE_NAMES


LANE_CAP = 4000  # items per lane and response, at most
MAX_PX = 8192
FLOW_CAP = 2000
MATCH_CAP = 2000


def merge_lane(start: np.ndarray, end: np.ndarray, name: np.ndarray, pixel: float):
    """Merge slices shorter than ``pixel`` that are less than ``pixel`` apart.

    Returns (first index of each item, count, item start, item end, name or -1 when mixed)."""
    n = len(start)
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z, z, z
    short = (end - start) < pixel
    new = np.ones(n, dtype=bool)
    if n > 1:
        joined = short[1:] & short[:-1] & ((start[1:] - end[:-1]) < pixel)
        new[1:] = ~joined
    first = np.nonzero(new)[0]
    count = np.diff(np.append(first, n))
    s = start[first]
    e = np.maximum.reduceat(end, first)
    nmin = np.minimum.reduceat(name, first)
    nmax = np.maximum.reduceat(name, first)
    nm = np.where(nmin == nmax, nmin, -1)
    return first, count, s, e, nm


def query_lane(
    idx: TimelineIndex,
    lane: int,
    ws: int,
    we: int,
    pixel: float,
    cap: int = LANE_CAP,
    match: Optional[np.ndarray] = None,
) -> dict:
    """The items of one lane in [ws, we] (index-local ns) at ``pixel`` ns per pixel."""
    a = idx.a
    lo, hi, keep = idx.lanes_in_window(ws, we, lane)
    pos = np.nonzero(keep)[0] + lo
    start, end, name = a["ev_start"][pos], a["ev_end"][pos], a["ev_name"][pos]
    p = max(float(pixel), 1.0)
    for _ in range(40):
        first, count, s, e, nm = merge_lane(start, end, name, p)
        if len(first) <= cap:
            break
        p *= 2.0
    dropped = 0
    if len(first) > cap:  # pathological (nested overlaps): keep the longest
        top = np.sort(np.argsort(-(e - s), kind="stable")[:cap])
        dropped = int(count.sum() - count[top].sum())
        first, count, s, e, nm = first[top], count[top], s[top], e[top], nm[top]
    ids = pos[first] if len(pos) else np.zeros(0, np.int64)
    out = {
        "ids": ids.astype(np.int64),
        "count": count,
        "start": s,
        "end": e,
        "name": nm,
        "type": a["ev_type"][ids].astype(np.int64) if len(ids) else np.zeros(0, np.int64),
        "events": int(len(pos)),
        "dropped": dropped,
    }
    if match is not None:
        hits = match[name].astype(np.int8) if len(name) else np.zeros(0, np.int8)
        out["match"] = np.maximum.reduceat(hits, first) if len(first) else np.zeros(0, np.int8)
    return out


def row_of(idx: TimelineIndex, ev: int) -> Tuple[int, int, int]:
    """(lane, track, depth) of an event id."""
    lane = int(np.searchsorted(idx.a["lane_ptr"], ev, "right")) - 1
    return lane, int(idx.a["lane_track"][lane]), int(idx.a["lane_depth"][lane])


def type_name(code: int) -> str:
    return TYPE_NAMES[code] if 0 <= code < len(TYPE_NAMES) else str(code)


def event_details(idx: TimelineIndex, ev: int) -> dict:
    """Everything about one event: its name, times, arguments, enclosing operator and linked events."""
    a = idx.a
    n = len(a["ev_start"])
    if not 0 <= ev < n:
        raise KeyError(ev)
    kind, row = int(a["ev_kind"][ev]), int(a["ev_row"][ev])
    _, track, depth = row_of(idx, ev)
    out = {
        "id": ev,
        "name": idx.names[int(a["ev_name"][ev])],
        "type": type_name(int(a["ev_type"][ev])),
        "start": int(a["ev_start"][ev]),
        "end": int(a["ev_end"][ev]),
        "track": track,
        "depth": depth,
        "track_label": idx.tracks[track]["label"],
        "corr": -1,
        "args": [],
        "operator": "",
        "related": [],
    }
    args = out["args"]

    def ref(pos: int, relation: str) -> dict:
        _, tr, dp = row_of(idx, pos)
        return {
            "id": pos,
            "name": idx.names[int(a["ev_name"][pos])],
            "type": type_name(int(a["ev_type"][pos])),
            "start": int(a["ev_start"][pos]),
            "end": int(a["ev_end"][pos]),
            "track": tr,
            "depth": dp,
            "relation": relation,
        }

    def operator_of(host_row: int) -> int:
        r = host_row
        for _ in range(256):
            if r < 0:
                return -1
            if int(a["host_type"][r]) == et.OPERATOR:
                return r
            r = int(a["host_parent"][r])
        return -1

    host_row = -1
    if kind == KIND_HOST:
        host_row = row
        found = idx.shapes(row)
        if found is not None:
            args.append(("input shapes", found[0]))
            args.append(("input dtypes", found[1]))
        parent = int(a["host_parent"][row])
        if parent >= 0:
            out["related"].append(ref(int(a["host_pos"][parent]), "parent"))
        op = operator_of(int(a["host_parent"][row]))
    elif kind == KIND_RUNTIME:
        corr = int(a["rt_corr"][row])
        out["corr"] = corr
        host_row = int(a["rt_host"][row])
        op = operator_of(host_row)
        if host_row >= 0:
            out["related"].append(ref(int(a["host_pos"][host_row]), "parent"))
        devs = np.nonzero(a["dev_rt"] == row)[0][:64]
        for d in devs.tolist():
            out["related"].append(ref(int(a["dev_pos"][d]), "kernel"))
    else:
        corr = int(a["dev_corr"][row])
        out["corr"] = corr
        g, b = a["dev_grid"][row].tolist(), a["dev_block"][row].tolist()
        code = int(a["ev_type"][ev])
        if code == et.KERNEL:
            args += [
                ("grid", ", ".join(map(str, g))),
                ("block", ", ".join(map(str, b))),
                ("registers per thread", str(int(a["dev_registers"][row]))),
                ("shared memory", f"{int(a['dev_shared_memory'][row])} B"),
                ("blocks per SM", f"{float(a['dev_blocks_per_sm'][row]):.2f}"),
                ("warps per SM", f"{float(a['dev_warps_per_sm'][row]):.2f}"),
                ("theoretical achieved occupancy %", f"{float(a['dev_occupancy'][row]):.2f}"),
            ]
        else:
            args.append(("bytes", str(int(a["dev_bytes"][row]))))
        rt = int(a["dev_rt"][row])
        op = -1
        if rt >= 0:
            out["related"].append(ref(int(a["rt_pos"][rt]), "launch"))
            op = operator_of(int(a["rt_host"][rt]))
    if kind == KIND_HOST and int(a["host_type"][row]) == et.OPERATOR:
        op = row
    if op >= 0:
        out["operator"] = idx.names[int(a["ev_name"][int(a["host_pos"][op])])]
        if op != host_row or kind != KIND_HOST:
            out["related"].append(ref(int(a["host_pos"][op]), "operator"))
    out["args"] = [{"key": k, "value": v} for k, v in args]
    return out


def search(idx: TimelineIndex, query: str, exact: bool, limit: int = MATCH_CAP) -> Tuple[int, np.ndarray]:
    """(total, first `limit` matching event ids in time order)."""
    mask = idx.name_mask(query, exact)
    if not mask.any():
        return 0, np.zeros(0, np.int64)
    hit = np.nonzero(mask[idx.a["ev_name"]])[0]
    order = np.argsort(idx.a["ev_start"][hit], kind="stable")
    return int(len(hit)), hit[order[:limit]]


def range_sums(idx: TimelineIndex, ws: int, we: int, tracks: Optional[Sequence[int]]) -> Dict[Tuple[str, str], list]:
    """Per (name, type): [count, total ns, overlap ns] of the slices of ``tracks`` overlapping [ws, we]
    (the lanes' slices gathered first, then summed at once: a range cutting hundreds of ranks sums each
    rank once, not once per lane)."""
    a = idx.a
    wanted = None if tracks is None else set(tracks)
    parts = []
    for lane in range(idx.n_lanes):
        if wanted is not None and int(a["lane_track"][lane]) not in wanted:
            continue
        lo, hi, keep = idx.lanes_in_window(ws, we, lane)
        if hi > lo:
            parts.append(np.nonzero(keep)[0] + lo)
    pos = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    if not len(pos):
        return {}
    s, e = a["ev_start"][pos], a["ev_end"][pos]
    key = a["ev_name"][pos].astype(np.int64) * 1024 + a["ev_type"][pos]
    uniq, inv = np.unique(key, return_inverse=True)
    cnt = np.bincount(inv)
    # (integer ns summed as float64: exact below 2**53 ns, 104 days)
    tot = np.bincount(inv, weights=(e - s).astype(np.float64))
    ovl = np.bincount(inv, weights=(np.minimum(e, we) - np.maximum(s, ws)).clip(0).astype(np.float64))
    out = {
        (k // 1024, k % 1024): [c, int(t_), int(o)]
        for k, c, t_, o in zip(uniq.tolist(), cnt.tolist(), tot.tolist(), ovl.tolist())
    }
    return {(idx.names[n], type_name(t)): v for (n, t), v in out.items()}
