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
    keys: List[np.ndarray]         # one column per key, one value per group, groups in order
    counts: np.ndarray
    sums: Dict[str, np.ndarray]
    maxs: Dict[str, np.ndarray]
    mins: Dict[str, np.ndarray]
    first_row: np.ndarray          # index (into the input rows) of each group's first row

    def __len__(self) -> int:
        return len(self.counts)


def _compose(keys: Sequence[np.ndarray]) -> np.ndarray:
    """Dense group ids from several integer key columns."""
    gid = np.zeros(len(keys[0]), dtype=np.int64)
    for k in keys:
        _, k_dense = np.unique(k, return_inverse=True)
        combined = gid * (int(k_dense.max()) + 1 if k_dense.size else 1) + k_dense
        _, gid = np.unique(combined, return_inverse=True)
    return gid.reshape(-1)


def group(keys: Sequence[np.ndarray], order: Sequence[np.ndarray], values: Dict[str, np.ndarray]) -> Groups:
    """Group rows by `keys`; groups come in the order of their first row by the sort keys `order`
    (most significant first)."""
    n = len(keys[0])
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Groups([empty for _ in keys], empty, {k: empty for k in values}, {k: empty for k in values},
                      {k: empty for k in values}, empty)
    gid = _compose(keys)
    n_groups = int(gid.max()) + 1
    # first row of each group by `order`, then groups sorted by it
    by_order = np.lexsort((np.arange(n),) + tuple(reversed(list(order))))
    first = np.full(n_groups, -1, dtype=np.int64)
    seen_gid = gid[by_order]
    _, first_pos = np.unique(seen_gid, return_index=True)
    first[:] = by_order[first_pos]
    # np.unique returned groups by id; reorder them by position of first appearance
    group_order = np.argsort(first_pos, kind="stable")
    remap = np.empty(n_groups, dtype=np.int64)
    remap[group_order] = np.arange(n_groups)
    g = remap[gid]
    counts = np.bincount(g, minlength=n_groups)
    sums, maxs, mins = {}, {}, {}
    for name, v in values.items():
        v = np.asarray(v, dtype=np.int64)
        s = np.zeros(n_groups, dtype=np.int64)
        np.add.at(s, g, v)
        mx = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(mx, g, v)
        mn = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(mn, g, v)
        sums[name], maxs[name], mins[name] = s, mx, mn
    first_row = first[group_order]
    return Groups([np.asarray(k)[first_row] for k in keys], counts, sums, maxs, mins, first_row)


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
