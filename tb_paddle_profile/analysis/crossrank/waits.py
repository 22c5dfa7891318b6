"""Transfer and wait of every matched member, and the communicators (distinct member sets).

For a matched instance the transfer is the shortest member duration (the member that arrived last
did not wait: its kernel is the transfer itself); each member's wait is its duration minus the
transfer; the member with the shortest duration (the lowest rank among equals) arrived last.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from .load import pool_of
from .match import SEND_RECV, Flat, _row_ids, member_values
from .model import RankData


class Waits:
    def __init__(self, ranks: Sequence[RankData], flat: Flat):
        self.flat = flat
        dur = member_values(ranks, flat, "dur")
        self.m_dur = dur
        n = flat.n
        if n:
            self.transfer = np.minimum.reduceat(dur, flat.ptr[:-1])
        else:
            self.transfer = np.zeros(0, np.int64)
        g = flat.m_group
        self.m_wait = dur - self.transfer[g] if n else np.zeros(0, np.int64)
        # last member: shortest duration, lowest rank index among equals (members are by rank index)
        if n:  # the first member (members are by rank index) whose duration is the group's shortest
            cand = np.flatnonzero(dur == self.transfer[g])
            cg = g[cand]
            self.last = cand[np.concatenate([[True], cg[1:] != cg[:-1]])]  # member position, per group
        else:
            self.last = np.zeros(0, np.int64)
        self.caused = np.zeros(n, np.int64)  # Σ waits of the other members, per group
        if n:
            self.caused = np.add.reduceat(self.m_wait, flat.ptr[:-1])
        if n:  # into every rank's columns at once (RankData's are views of the pool's)
            p = pool_of(ranks)
            at = p.at(flat.m_rank, flat.m_inst)
            p.wait[at] = self.m_wait
            p.transfer[at] = self.transfer[g]
            p.group[at] = g


def communicators(flat: Flat) -> Tuple[List[Tuple[int, ...]], np.ndarray, List[int]]:
    """Distinct member sets (send/recv pairs apart from collectives of the same ranks), the
    communicator of each group, and how many groups each has; communicators numbered in the
    order of their first group."""
    g_comm = np.zeros(flat.n, dtype=np.int64)
    if not flat.n:
        return [], g_comm, []
    sizes = flat.sizes
    p2p = (flat.g_kind == SEND_RECV).astype(np.int64)
    # groups of one size and p2p flag at a time: their member rows side by side, distinct rows
    first_of: List[np.ndarray] = []  # per class: the first group of each distinct member set
    local: List[Tuple[np.ndarray, np.ndarray]] = []
    cls = sizes * 2 + p2p
    order = np.argsort(cls, kind="stable")
    cs = cls[order]
    bounds = np.concatenate([[0], np.nonzero(np.diff(cs))[0] + 1, [cs.size]])
    for i in range(bounds.size - 1):
        gs = order[bounds[i] : bounds[i + 1]]  # ascending group index
        k = int(sizes[gs[0]])
        M = flat.m_rank[flat.ptr[gs][:, None] + np.arange(k)[None, :]] if k else np.zeros((gs.size, 0), np.int64)
        ids = _row_ids(M) if k else np.zeros(gs.size, np.int64)
        firsts = np.full(int(ids.max()) + 1, gs.size, dtype=np.int64)
        np.minimum.at(firsts, ids, np.arange(gs.size))
        first_of.append(gs[firsts])
        local.append((gs, ids))
    firsts_all = np.concatenate(first_of)
    rank = np.empty(firsts_all.size, dtype=np.int64)
    rank[np.argsort(firsts_all, kind="stable")] = np.arange(firsts_all.size)
    off = 0
    for (gs, ids), f in zip(local, first_of):
        g_comm[gs] = rank[off + ids]
        off += f.size
    comms: List[Tuple[int, ...]] = [()] * firsts_all.size
    mr, ptr = flat.m_rank.tolist(), flat.ptr.tolist()
    for c, g in zip(rank.tolist(), firsts_all.tolist()):
        comms[c] = tuple(mr[ptr[g] : ptr[g + 1]])
    counts = np.bincount(g_comm, minlength=len(comms)).tolist()
    return comms, g_comm, counts
