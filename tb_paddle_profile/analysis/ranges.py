"""Time-range algebra on numpy arrays: union, intersection and measure.

Paddle merges ranges with its own list code (statistic_helper.py); only the
measure of the results reaches its tables, and that is what these compute.
"""

from __future__ import annotations

import numpy as np

EMPTY = (np.zeros(0, np.int64), np.zeros(0, np.int64))


def union(starts, ends):
    """Merge ranges into sorted, disjoint ranges (touching ranges merge)."""
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    if s.size == 0:
        return EMPTY
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.ones(s.size, dtype=bool)
    new[1:] = s[1:] > reach[:-1]
    first = np.nonzero(new)[0]
    return s[first], np.maximum.reduceat(e, first)


def union2(a, b):
    return union(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))


def measure(r) -> int:
    return int((r[1] - r[0]).sum()) if r[0].size else 0


def intersect(a, b):
    """Intersection of two unions (each sorted and disjoint)."""
    if a[0].size == 0 or b[0].size == 0:
        return EMPTY
    pts = np.concatenate([a[0], a[1], b[0], b[1]])
    delta = np.concatenate([np.ones(a[0].size), -np.ones(a[1].size), np.ones(b[0].size), -np.ones(b[1].size)]).astype(
        np.int8
    )
    order = np.lexsort((delta, pts))  # ends before starts at the same point
    pts, delta = pts[order], delta[order]
    depth = np.cumsum(delta)
    both = depth == 2
    starts = pts[:-1][both[:-1]]
    ends = pts[1:][both[:-1]]
    keep = ends > starts
    return union(starts[keep], ends[keep])


def intersect_measure(a, b) -> int:
    """measure(intersect(a, b)) of two unions (each sorted and disjoint), without building the
    intersection: for each range of a, how much of b lies before its end less how much before its
    start (b's lengths summed up to the range of b that holds the point)."""
    if a[0].size == 0 or b[0].size == 0:
        return 0
    b0, b1 = b
    before = np.concatenate([[0], np.cumsum(b1 - b0)])  # b's measure before each of its ranges

    def covered(x: np.ndarray) -> np.ndarray:  # measure of b below each x
        j = np.searchsorted(b0, x, side="right") - 1
        jj = np.maximum(j, 0)
        return np.where(j >= 0, before[jj] + np.minimum(x, b1[jj]) - b0[jj], 0)

    return int((covered(a[1]) - covered(a[0])).sum())


def clip(r, lo: int, hi: int):
    """The part of a union inside [lo, hi)."""
    s = np.maximum(r[0], lo)
    e = np.minimum(r[1], hi)
    keep = e > s
    return s[keep], e[keep]
