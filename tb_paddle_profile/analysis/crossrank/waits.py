"""Transfer and wait of every matched member, and the communicators (distinct member sets).

For a matched instance the transfer is the shortest member duration (the member that arrived last
did not wait: its kernel is the transfer itself); each member's wait is its duration minus the
transfer; the member with the shortest duration (the lowest rank among equals) arrived last.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from .match import SEND_RECV, Flat, _groups_of, member_values
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
        if n:
            order = np.lexsort((flat.m_rank, dur, g))
            firsts = np.concatenate([[0], np.nonzero(np.diff(g[order]))[0] + 1])
            self.last = order[firsts]             # member position of each group's last arrival
        else:
            self.last = np.zeros(0, np.int64)
        self.caused = np.zeros(n, np.int64)       # Σ waits of the other members, per group
        if n:
            self.caused = np.add.reduceat(self.m_wait, flat.ptr[:-1])
        for ri, sel in _groups_of(flat.m_rank, len(ranks)):
            r = ranks[ri]
            ii = flat.m_inst[sel]
            r.wait[ii] = self.m_wait[sel]
            r.transfer[ii] = self.transfer[g[sel]]
            r.group[ii] = g[sel]


def communicators(flat: Flat) -> Tuple[List[Tuple[int, ...]], np.ndarray, List[int]]:
    """Distinct member sets (send/recv pairs apart from collectives of the same ranks), the
    communicator of each group, and how many groups each has."""
    comms: Dict[Tuple[bool, Tuple[int, ...]], int] = {}
    g_comm = np.zeros(flat.n, dtype=np.int64)
    mr = flat.m_rank.tolist()
    ptr = flat.ptr.tolist()
    p2p = (flat.g_kind == SEND_RECV).tolist()
    for i in range(flat.n):
        key = (p2p[i], tuple(mr[ptr[i]:ptr[i + 1]]))
        c = comms.get(key)
        if c is None:
            c = comms[key] = len(comms)
        g_comm[i] = c
    counts = np.bincount(g_comm, minlength=len(comms)).tolist() if flat.n else []
    return [k[1] for k in comms], g_comm, counts
