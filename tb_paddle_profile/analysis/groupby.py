"""Vectorised group-by for the analyses: rows grouped by key columns, in order of first appearance.

Paddle builds its tables with dicts filled during a walk; the rows of a group-by here come out in
the order of the smallest `order` value of each group, which reproduces that insertion order when
`order` is the walk position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Sequence

import numpy as np

from ..v1 import summary_pb2 as pb


@dataclass
class Groups:
    keys: List[np.ndarray]  # one column per key, one value per group, groups in order
    counts: np.ndarray
    sums: Dict[str, np.ndarray]
    maxs: Dict[str, np.ndarray]
    mins: Dict[str, np.ndarray]
    first_row: np.ndarray  # index (into the input rows) of each group's first row

    def __len__(self) -> int:
        return len(self.counts)


def dense_ids(k: np.ndarray):
    """(ids, count): each value's rank among the distinct values of k, and their number.

    Columns of small range (name ids, types, positions) use a lookup table over [min, max]
    instead of a sort.
    """
    k = np.asarray(k).reshape(-1)
    if k.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    lo, hi = int(k.min()), int(k.max())
    if hi - lo <= 4 * k.size + 1024:
        offset = k.astype(np.int64) - lo
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[offset] = True
        table = np.cumsum(present, dtype=np.int64) - 1  # value - lo → rank among present values
        return table[offset], int(table[-1]) + 1
    uniq, inverse = np.unique(k, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64, copy=False), int(uniq.size)


def stable_order(ids: np.ndarray, count: int) -> np.ndarray:
    """Stable argsort of ids in [0, count): a radix sort when they fit in 16 bits."""
    return np.argsort(ids.astype(np.uint16) if count <= 1 << 16 else ids, kind="stable")


def split_rows(key: np.ndarray, rows: np.ndarray) -> Dict[int, np.ndarray]:
    """rows split by the integer key of each row: {key value: its rows, in their given order}."""
    ids, count = dense_ids(key)
    by = rows[stable_order(ids, count)]
    ptr = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(ids, minlength=count), out=ptr[1:])
    values = np.empty(count, dtype=np.int64)
    values[ids] = key
    return {v: by[ptr[i] : ptr[i + 1]] for i, v in enumerate(values.tolist())}


def _compose(keys: Sequence[np.ndarray]):
    """Dense group ids (and their count) from several integer key columns.

    Columns are packed as digits of one integer (a column of range w is a digit in base w),
    re-densified only when the packed range grows past a lookup table's size.
    """
    n = len(keys[0])
    limit = 4 * n + 1024
    gid, span = np.zeros(n, dtype=np.int64), 1
    for k in keys:
        k = np.asarray(k).reshape(-1)
        lo, hi = int(k.min()), int(k.max())
        width = hi - lo + 1
        if width == 1:  # constant column: splits nothing
            continue
        if width > limit:
            k, width = dense_ids(k)
        else:
            k = k.astype(np.int64) - lo
        if span * width > limit:
            gid, span = dense_ids(gid)
        gid = gid * width + k
        span *= width
    return dense_ids(gid)


def _first_rows(gid: np.ndarray, n_groups: int, order: Sequence[np.ndarray]):
    """Each group's first row by the sort keys `order` (ties: lowest row), and the groups'
    order by that row, without sorting the rows: one level at a time, keep only the rows that
    hold their group's minimum of the key, so later levels see few rows."""
    rows = None  # None: all rows
    mins = []
    for o in order:
        ov = np.asarray(o, dtype=np.int64)
        ov, g = (ov, gid) if rows is None else (ov[rows], gid[rows])
        m = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(m, g, ov)
        keep = ov == m[g]
        rows = np.nonzero(keep)[0] if rows is None else rows[keep]
        mins.append(m)
    if rows is None:
        rows = np.arange(len(gid), dtype=np.int64)
    first = np.full(n_groups, len(gid), dtype=np.int64)
    np.minimum.at(first, gid[rows], rows)
    # groups in order of their first rows, compared key by key (few groups: a small sort)
    group_order = np.lexsort((first,) + tuple(reversed(mins)))
    return first, group_order


def group(
    keys: Sequence[np.ndarray], order: Sequence[np.ndarray], values: Dict[str, np.ndarray], extremes: bool = True
) -> Groups:
    """Group rows by integer `keys`; groups come in the order of their first row by the integer
    sort keys `order` (most significant first; ties go to the lower row). Sums of the values,
    and with `extremes` their maxima and minima."""
    n = len(keys[0])
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups(
            [empty for _ in keys],
            empty,
            {k: empty for k in values},
            {k: empty for k in values},
            {k: empty for k in values},
            empty,
        )
    gid, n_groups = _compose(keys)
    first, group_order = _first_rows(gid, n_groups, order)
    remap = np.empty(n_groups, dtype=np.int64)
    remap[group_order] = np.arange(n_groups)
    g = remap[gid]
    counts = np.bincount(g, minlength=n_groups)
    sums, maxs, mins = {}, {}, {}
    for name, v in values.items():
        v = np.asarray(v, dtype=np.int64)
        s = np.zeros(n_groups, dtype=np.int64)
        np.add.at(s, g, v)
        sums[name] = s
        if not extremes:
            continue
        mx = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(mx, g, v)
        mn = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(mn, g, v)
        maxs[name], mins[name] = mx, mn
    first_row = first[group_order]
    return Groups([np.asarray(k)[first_row] for k in keys], counts, sums, maxs, mins, first_row)


def merge(g: Groups, drop: int) -> Groups:
    """What group() returns for the same rows and order when key column `drop` is a constant 0:
    g's groups that differ only in that key, combined. Since g's groups come in the order of
    their first rows, a combined group's first row is that of its first member."""
    n = len(g)
    if n == 0:
        return g
    gid, n_groups = _compose([k for i, k in enumerate(g.keys) if i != drop])
    first = np.full(n_groups, n, dtype=np.int64)
    np.minimum.at(first, gid, np.arange(n))
    group_order = np.argsort(first)  # distinct values
    remap = np.empty(n_groups, dtype=np.int64)
    remap[group_order] = np.arange(n_groups)
    m = remap[gid]
    counts = np.zeros(n_groups, dtype=np.int64)
    np.add.at(counts, m, g.counts)
    sums, maxs, mins = {}, {}, {}
    for name in g.sums:
        sums[name] = np.zeros(n_groups, dtype=np.int64)
        np.add.at(sums[name], m, g.sums[name])
    for name in g.maxs:
        maxs[name] = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(maxs[name], m, g.maxs[name])
        mins[name] = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(mins[name], m, g.mins[name])
    members = first[group_order]
    keys = [np.zeros(n_groups, dtype=np.int64) if i == drop else k[members] for i, k in enumerate(g.keys)]
    return Groups(keys, counts, sums, maxs, mins, g.first_row[members])


def write_stats(msg: pb.EventStats, name: str, g: Groups, i: int) -> None:
    """One group of host rows (values cpu, gpu, general) as an EventStats row."""
    msg.name = name
    msg.calls = int(g.counts[i])
    for field, col in (("cpu", "cpu"), ("gpu", "gpu"), ("general_gpu", "general")):
        ts = getattr(msg, field)
        ts.total_ns, ts.max_ns, ts.min_ns = int(g.sums[col][i]), int(g.maxs[col][i]), int(g.mins[col][i])


def host_values(p, rows: np.ndarray) -> dict:
    """The per-node time columns of these host rows, for group()."""
    return {"cpu": p.times.cpu[rows], "gpu": p.times.gpu[rows], "general": p.times.general_gpu[rows]}
