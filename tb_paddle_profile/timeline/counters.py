"""Counter tracks of the timeline: memory allocated and reserved per place, and GPU utilisation per
device.

Built with the index (``counters_of``) and stored in it as one list of counters in the header
(``counters``: kind, label, unit, device) with their points in three arrays: ``ctr_ptr`` (counter i's
points are ``ctr_t[ctr_ptr[i]:ctr_ptr[i + 1]]``), ``ctr_t`` and ``ctr_v``:

- kind "allocated" / "reserved" (unit "bytes"): a step function, one point per memory event of the
  place in time order (``ctr_t``: its time, ``ctr_v``: current_allocated / current_reserved after it);
  no value before the first event;
- kind "utilization" (unit "ratio"): the union of the device's kernel intervals (``ctr_t``: starts,
  ``ctr_v``: ends; disjoint, ascending).

A window answer (``counter_bins``) gives each counter one value per pixel bin of the window: the
highest value of the memory step function in the bin (NaN before its first point), the fraction of
the bin during which a kernel ran on the device.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et

KIND_ALLOCATED, KIND_RESERVED, KIND_UTILIZATION = "allocated", "reserved", "utilization"
_GPU_PLACE = re.compile(r"gpu:(\d+)")


def _union(start: np.ndarray, end: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """The union of intervals as disjoint ascending (starts, ends)."""
    if not len(start):
        return start.astype(np.int64), end.astype(np.int64)
    o = np.argsort(start, kind="stable")
    s, e = start[o].astype(np.int64), np.maximum(end[o], start[o]).astype(np.int64)
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.nonzero(new)[0]
    last = np.append(first[1:], len(s)) - 1
    return s[first], reach[last]


def counters_of(t) -> Tuple[List[dict], Dict[str, np.ndarray]]:
    """The counters of a trace's tables (header entries, arrays ctr_ptr / ctr_t / ctr_v)."""
    counters: List[dict] = []
    ts: List[np.ndarray] = []
    vs: List[np.ndarray] = []
    m = t.memory
    if len(m.tid):
        for place in sorted(set(m.place.tolist()), key=lambda p: t.names[p]):
            label = t.names[place]
            g = _GPU_PLACE.search(label)
            device = int(g.group(1)) if g else -1
            rows = np.nonzero(m.place == place)[0]
            rows = rows[np.argsort(m.ts_ns[rows], kind="stable")]
            for kind, col in ((KIND_ALLOCATED, m.current_allocated), (KIND_RESERVED, m.current_reserved)):
                counters.append({"kind": kind, "label": f"{label} {kind}", "unit": "bytes", "device": device})
                ts.append(m.ts_ns[rows].astype(np.int64))
                vs.append(col[rows].astype(np.int64))
    d = t.device
    kernel = d.type == et.KERNEL
    for dev in sorted(set(d.id[kernel].tolist())):
        sel = kernel & (d.id == dev)
        s, e = _union(d.start[sel], d.end[sel])
        counters.append(
            {"kind": KIND_UTILIZATION, "label": f"GPU {dev} utilization", "unit": "ratio", "device": int(dev)}
        )
        ts.append(s)
        vs.append(e)
    ptr = np.zeros(len(counters) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in ts], out=ptr[1:])
    cat = lambda xs: np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, np.int64)
    return counters, {"ctr_ptr": ptr, "ctr_t": cat(ts), "ctr_v": cat(vs)}


def bin_edges(ws: float, we: float, px: int) -> np.ndarray:
    """The px + 1 edges (ns, float) of a window's pixel bins."""
    return ws + (we - ws) * np.arange(px + 1, dtype=np.float64) / px


def step_max(t: np.ndarray, v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin [edges[k], edges[k+1]): the highest value of the step function (t, v) (NaN before t[0])."""
    n = len(edges) - 1
    out = np.full(n, np.nan)
    if not len(t) or n <= 0:
        return out
    vf = v.astype(np.float64)
    at = np.searchsorted(t, edges[:-1], side="right") - 1  # the point in force at each bin's start
    have = at >= 0
    out[have] = vf[at[have]]
    lo = at + 1  # the points inside the bin: lo .. hi - 1
    hi = np.searchsorted(t, edges[1:], side="left")
    inside = hi > lo
    if inside.any():
        best = _range_max(vf, lo[inside], hi[inside])
        cur = out[inside]
        out[inside] = np.where(np.isnan(cur), best, np.maximum(np.nan_to_num(cur, nan=-np.inf), best))
    return out


def _range_max(vf: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """max(vf[lo[i]:hi[i]]) for non-empty, ascending, non-overlapping ranges."""
    bounds = np.empty(2 * len(lo), dtype=np.int64)
    bounds[0::2], bounds[1::2] = lo, hi
    ext = np.append(vf, -np.inf)
    return np.maximum.reduceat(ext, np.minimum(bounds, len(vf)))[0::2]


def busy_fraction(s: np.ndarray, e: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Per bin: the fraction of it covered by the disjoint ascending intervals (s, e)."""
    n = len(edges) - 1
    if not len(s) or n <= 0:
        return np.zeros(max(n, 0))
    length = (e - s).astype(np.float64)
    prefix = np.concatenate([[0.0], np.cumsum(length)])

    def covered(x):  # busy time before x
        j = np.searchsorted(s, x, side="right")
        over = np.where(j > 0, np.maximum(e[np.maximum(j - 1, 0)] - x, 0.0), 0.0)
        return prefix[j] - over

    c = covered(edges)
    width = np.diff(edges)
    return np.clip(np.diff(c) / np.where(width > 0, width, 1.0), 0.0, 1.0)


def counter_bins(idx, i: int, lws: float, lwe: float, px: int) -> np.ndarray:
    """Counter i of an open index over [lws, lwe] (its own times), one value per pixel bin."""
    a = idx.a
    p0, p1 = int(a["ctr_ptr"][i]), int(a["ctr_ptr"][i + 1])
    t, v = a["ctr_t"][p0:p1], a["ctr_v"][p0:p1]
    edges = bin_edges(lws, lwe, px)
    if idx.counters[i]["kind"] == KIND_UTILIZATION:
        return busy_fraction(t, v, edges)
    return step_max(t, v, edges)
