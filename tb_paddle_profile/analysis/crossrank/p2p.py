"""Send/recv across ranks: which rank pairs carry transfers (links), then each send paired with its
receive, and the hosts' clock edges that those pairs give (comms.py's module docstring: "Send/recv:
links, then pairs").

A send and its receive end together. Every send is paired with the receives of other ranks whose
corrected ends are within the send/recv tolerance (a sweep over the instances sorted by end); links
(two ranks) are weighed by how closely their candidates co-end and kept heaviest first, at most two
per rank, each explaining its candidates away (pipeline_links); over kept links, instances are
paired mutually nearest (each instance once).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import clocks, thresholds as T
from .load import pool_of
from .match import SEND_RECV, Collector, _offsets
from .model import RankData


def pipeline_links(
    la: np.ndarray,
    lb: np.ndarray,
    dt: np.ndarray,
    inv: np.ndarray,
    n: int,
    sigma: float,
    ci: Optional[np.ndarray] = None,
    cj: Optional[np.ndarray] = None,
    lanes: Optional[Tuple[np.ndarray, int]] = None,
) -> Tuple[np.ndarray, np.ndarray]:
    """Which links (rank pairs la[i] < lb[i]) carry send/recv, from their co-ending candidates (dt: each
    candidate's end difference, inv: its link). A link's weight sums exp(-dt^2 / 2 s^2) over its
    candidates, s the end difference's noise (sqrt 2 x sigma, at least MATCH_TOL_NS / 2): every transfer
    of a true link co-ends within the noise, while the links between lock-step pipelines (tensor-
    parallel partners') co-end often but further apart. Links are taken heaviest first while both ranks
    have fewer than two (a pipeline stage sends to and receives from its two neighbours; the
    interleaved schedule's ring too), and only when at least P2P_PARTNER_SHARE as heavy as the
    heaviest link of either rank. Returns (kept, weak): weak links are below P2P_STRONG_SHARE of the
    heaviest link of either rank (a coincidence of lock-step replicas co-ends to the nanosecond now and
    then; its link is light), and lose every tie of the pairing below to a strong one.

    With the candidates' instances (ci, cj), links explain their candidates away: a link taken claims
    the instances of its candidates within 3 s, and a later link is taken only while at least
    P2P_RESIDUAL_SHARE of its weight comes from candidates not both of whose instances a heavier link
    claimed. Two tensor-parallel partners' pipelines in lock-step on one host (4 -> 6 and 5 -> 7 end
    within the noise of each other) make a cross link 4 - 7 as heavy as half a true one; its
    candidates are the true links' instances, explained already.

    lanes (each rank's lane and their modulus, lane_offsets): a grid job's pipeline links all join
    ranks one lane offset apart (Fleet's next stage is rank + MP: the local GPU + MP on 8-GPU hosts).
    Tensor-parallel partners run in lock-step, so their transfers co-end with each other's partners
    within the end noise and a partner's link can outweigh the true one; a link whose offset is not
    the one most ranks' heaviest links share (at least P2P_LANE_SHARE of them) is taken in the order of
    P2P_LANE_PENALTY of its weight."""
    s = max(np.sqrt(2.0) * sigma, T.MATCH_TOL_NS / 2.0)
    g = np.exp(-np.square(dt.astype(np.float64)) / (2.0 * s * s))
    w = np.bincount(inv, weights=g, minlength=la.size)
    best = np.zeros(n)
    np.maximum.at(best, la, w)
    np.maximum.at(best, lb, w)
    ok = w >= T.P2P_PARTNER_SHARE * np.maximum(best[la], best[lb])
    weak = w < P2P_STRONG_SHARE * np.maximum(best[la], best[lb])
    # the lane prior orders the links and weighs their claims; which links may be taken at all, and
    # which are weak, stays the timing's (a ring's closing link of another offset is no weaker for it)
    scale = lane_scale(la, lb, w, lanes)
    if scale is not None:
        w = w * scale
        g = g * scale[inv]
    deg = np.zeros(n, dtype=np.int64)
    keep = np.zeros(la.size, dtype=bool)
    cand = np.flatnonzero(ok)
    claims = _Claims(inv, la.size, g, ci, cj) if ci is not None and cj is not None and ci.size else None
    for i in cand[np.lexsort((lb[cand], la[cand], -w[cand]))].tolist():
        x, y = int(la[i]), int(lb[i])
        if deg[x] < P2P_MAX_LINKS and deg[y] < P2P_MAX_LINKS:
            if claims is not None and not claims.take(i, float(w[i])):
                continue
            keep[i] = True
            deg[x] += 1
            deg[y] += 1
    return keep, weak


P2P_MAX_LINKS = 2
P2P_LANE_SHARE = 0.6
P2P_LANE_PENALTY = 0.5


def lane_offsets(ranks: Sequence[RankData]) -> Optional[Tuple[np.ndarray, int]]:
    """Each rank's lane (its rank number when every file names it, else its local GPU) and their
    modulus (0: none; the GPUs of a host): pipeline_links' prior. None when nothing tells lanes apart."""
    if ranks and all(not r.rank_inferred for r in ranks):
        return np.array([r.rank for r in ranks], dtype=np.int64), 0
    dev = np.array([max(r.device_id, 0) for r in ranks], dtype=np.int64)
    if not dev.size or int(dev.max()) == 0:
        return None
    return dev, int(dev.max()) + 1


def _lane_offset(la: np.ndarray, lb: np.ndarray, lanes: Tuple[np.ndarray, int]) -> np.ndarray:
    """A link's lane offset, whichever way round (modulo the lanes' modulus when they have one)."""
    lane, mod = lanes
    d = lane[lb] - lane[la]
    if mod:
        d = np.mod(d, mod)
        return np.minimum(d, mod - d)
    return np.abs(d)


def lane_scale(
    la: np.ndarray, lb: np.ndarray, w: np.ndarray, lanes: Optional[Tuple[np.ndarray, int]]
) -> Optional[np.ndarray]:
    """Per link, 1 where its lane offset is the major one, else P2P_LANE_PENALTY (pipeline_links);
    None without lanes or without a major offset."""
    if lanes is None or not la.size:
        return None
    off = _lane_offset(la, lb, lanes)
    major = _major_offset(la, lb, w, off)
    return None if major is None else np.where(off == major, 1.0, P2P_LANE_PENALTY)


def _major_offset(la: np.ndarray, lb: np.ndarray, w: np.ndarray, off: np.ndarray) -> Optional[int]:
    """The lane offset that at least P2P_LANE_SHARE of the ranks' heaviest links share, else None."""
    if not la.size:
        return None
    ends = np.concatenate([la, lb])
    ww = np.concatenate([w, w])
    oo = np.concatenate([off, off])
    # each rank's heaviest link, the first of a tie (in the order above): without sorting every link
    # (a lexsort of 2 x 10^6 links was half a second at 4,096 ranks)
    best = np.full(int(ends.max()) + 1, -np.inf)
    np.maximum.at(best, ends, ww)
    heaviest = np.flatnonzero(ww == best[ends])
    _, first = np.unique(ends[heaviest], return_index=True)
    top = oo[heaviest[first]]
    vals, cnt = np.unique(top, return_counts=True)
    k = int(np.argmax(cnt))
    return int(vals[k]) if cnt[k] >= P2P_LANE_SHARE * top.size else None


P2P_STRONG_SHARE = 0.5
P2P_RESIDUAL_SHARE = 0.5


class _Claims:
    """The instances that links taken so far explain (pipeline_links): a link's candidates (ci, cj:
    their two instances; inv: their link; g: their weight terms) within 3 s of co-ending claim both."""

    def __init__(self, inv: np.ndarray, n_links: int, g: np.ndarray, ci: np.ndarray, cj: np.ndarray):
        self.by_link = np.argsort(inv, kind="stable")
        self.starts = np.searchsorted(inv[self.by_link], np.arange(n_links + 1))
        self.claimed = np.zeros(int(max(ci.max(), cj.max())) + 1, dtype=np.bool_)
        self.near = g >= np.exp(-4.5)
        self.g, self.ci, self.cj = g, ci, cj

    def take(self, link: int, weight: float) -> bool:
        """Whether the link is still needed (at least P2P_RESIDUAL_SHARE of its weight from candidates
        not both of whose instances are claimed); if so its near candidates' instances are claimed."""
        c = self.by_link[self.starts[link] : self.starts[link + 1]]
        free = ~(self.claimed[self.ci[c]] & self.claimed[self.cj[c]])
        if float(self.g[c[free]].sum()) < P2P_RESIDUAL_SHARE * weight:
            return False
        c = c[self.near[c]]
        self.claimed[self.ci[c]] = True
        self.claimed[self.cj[c]] = True
        return True


def match_p2p(ranks: Sequence[RankData], col: Collector, tol: float, sigma: float = 0.0):
    """Send/recv pairs: co-ending candidates, kept links, mutually nearest pairs (module docstring)."""
    p = pool_of(ranks)
    sel = np.flatnonzero(p.kind == SEND_RECV)
    if sel.size < 2:
        return
    rk = p.rank_of[sel]
    e = (p.end[sel] - _offsets(ranks)[rk]).astype(np.int64)
    d = p.direction[sel]
    o = np.argsort(e, kind="stable")
    sel, rk, e, d = sel[o], rk[o], e[o], d[o]
    parts_i: List[np.ndarray] = []
    parts_j: List[np.ndarray] = []
    for k in range(1, P2P_MAX_WINDOW + 1):
        if k >= e.size:
            break
        dt = e[k:] - e[:-k]
        near = dt <= tol
        if not near.any():
            break
        ok = near & (rk[k:] != rk[:-k]) & ((d[k:] == 0) | (d[:-k] == 0) | (d[k:] != d[:-k]))
        idx = np.flatnonzero(ok)
        parts_i.append(idx)
        parts_j.append(idx + k)
    if not parts_i:
        return
    I, J = np.concatenate(parts_i), np.concatenate(parts_j)
    if not I.size:
        return
    n = len(ranks)
    a, b = np.minimum(rk[I], rk[J]), np.maximum(rk[I], rk[J])
    uk, inv = _links_of(a * n + b, n)
    la, lb = uk // n, uk % n
    keep_link, weak_link = pipeline_links(la, lb, e[J] - e[I], inv, n, sigma, I, J, lane_offsets(ranks))
    keep = keep_link[inv]
    I, J = I[keep], J[keep]
    weak = weak_link[inv][keep].astype(np.int64)
    dt = (e[J] - e[I]).astype(np.float64)
    used = np.zeros(e.size, dtype=np.bool_)
    acc_i: List[np.ndarray] = []
    acc_j: List[np.ndarray] = []
    live = np.ones(I.size, dtype=np.bool_)
    for _ in range(P2P_ROUNDS):
        live &= ~used[I] & ~used[J]
        c = np.flatnonzero(live)
        if not c.size:
            break
        ends = np.concatenate([I[c], J[c]])
        cand = np.concatenate([c, c])
        dd = np.concatenate([dt[c], dt[c]])
        wk = np.concatenate([weak[c], weak[c]])
        srt = np.lexsort((cand, dd, wk, ends))
        es = ends[srt]
        first = np.concatenate([[True], es[1:] != es[:-1]])
        best_of = np.full(e.size, -1, dtype=np.int64)
        best_of[es[first]] = cand[srt][first]
        mutual = c[(best_of[I[c]] == c) & (best_of[J[c]] == c)]
        if not mutual.size:
            break
        used[I[mutual]] = True
        used[J[mutual]] = True
        acc_i.append(I[mutual])
        acc_j.append(J[mutual])
    if acc_i:
        # lock-step stages end their transfers together: a receive can co-end closer with a neighbour's
        # transfer to its other neighbour than with its own sender's, and the pair taken leaves two
        # transfers without one; augmenting paths over the candidates give them theirs
        ai, aj = _augment(e.size, I, J, dt, np.concatenate(acc_i), np.concatenate(acc_j))
        acc_i, acc_j = [ai], [aj]
    if not acc_i:
        return
    ai, aj = np.concatenate(acc_i), np.concatenate(acc_j)
    swap = rk[ai] > rk[aj]
    x = np.where(swap, aj, ai)
    y = np.where(swap, ai, aj)
    m_rank = np.stack([rk[x], rk[y]], axis=1).ravel()
    pos = np.stack([sel[x], sel[y]], axis=1).ravel()
    m_inst = pos - p.base[m_rank]
    col.add(p.step[sel[x]], np.full(x.size, SEND_RECV), np.full(x.size, 2), m_rank, m_inst)


P2P_AUGMENT_DEPTH = 3  # matched pairs an augmenting path may re-pair


def _augment(
    n: int, I: np.ndarray, J: np.ndarray, dt: np.ndarray, mi: np.ndarray, mj: np.ndarray
) -> Tuple[np.ndarray, np.ndarray]:
    """The pairs (mi, mj) of instances 0..n-1, grown by augmenting paths over the candidates (I, J;
    dt their end differences): from an instance without a pair, along a candidate to a paired instance,
    from its partner along another candidate, ... to an instance without a pair (at most
    P2P_AUGMENT_DEPTH pairs re-paired; candidates tried nearest first). Every path found pairs one more
    instance each side; the pairs stay those of candidates."""
    mate = np.full(n, -1, dtype=np.int64)
    mate[mi], mate[mj] = mj, mi
    deg = np.bincount(np.concatenate([I, J]), minlength=n)
    free = np.flatnonzero((mate < 0) & (deg > 0))
    if not free.size or not np.any(mate[np.concatenate([I, J])] < 0):
        return mi, mj
    ends = np.concatenate([I, J])
    other = np.concatenate([J, I])
    order = np.lexsort((np.abs(np.concatenate([dt, dt])), ends))
    ends, other = ends[order], other[order]
    start = np.searchsorted(ends, np.arange(n + 1))
    nb = other.tolist()
    st = start.tolist()
    m = mate.tolist()
    grown = False
    for u in free.tolist():
        if m[u] >= 0:
            continue
        # breadth first over alternating paths: u - v (paired with w) - ... - x (no pair)
        prev = {u: -1}
        frontier = [u]
        found = -1
        for _ in range(P2P_AUGMENT_DEPTH + 1):
            nxt = []
            for a in frontier:
                for v in nb[st[a] : st[a + 1]]:
                    if v in prev or v == a:
                        continue
                    if m[v] < 0:
                        prev[v] = a
                        found = v
                        break
                    w = m[v]
                    if w in prev:
                        continue
                    prev[v] = a
                    prev[w] = v
                    nxt.append(w)
                if found >= 0:
                    break
            if found >= 0 or not nxt:
                break
            frontier = nxt
        if found < 0:
            continue
        # flip the path: found takes prev[found]; each paired instance on it takes the one before it
        x = found
        while True:
            a = prev[x]
            old = m[a]
            m[x], m[a] = a, x
            if a == u:
                break
            x = old
        grown = True
    if not grown:
        return mi, mj
    mm = np.array(m, dtype=np.int64)
    lo = np.flatnonzero(mm > np.arange(n))
    return lo, mm[lo]


PAIR_TABLE_MAX = 1 << 22  # rank pairs counted in a table up to 2,048 ranks (32 MB), sorted beyond


def _links_of(key: np.ndarray, n: int) -> Tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_inverse=True) for rank-pair keys a * n + b (0 <= key < n * n): the distinct
    keys and each one's index among them, by counting when the table is small (millions of candidates at
    1,024 ranks: 20 x faster than sorting them)."""
    if n * n > PAIR_TABLE_MAX:
        uk, inv = np.unique(key, return_inverse=True)
        return uk, inv.ravel()
    seen = np.bincount(key, minlength=n * n) > 0
    index = np.cumsum(seen) - 1
    return np.flatnonzero(seen), index[key]


P2P_MAX_WINDOW = 256
P2P_ROUNDS = 16


def p2p_host_edges(
    ranks: Sequence[RankData], node_of: np.ndarray, off: Sequence[int], window: float, sigma: float
) -> clocks.Edges:
    """Clock edges between hosts from send/recv, for the join after a first one (off: its offsets).
    Under end noise the communicators' blocks of lock-step replicas join groups of two stages, and the
    first join's hosts can be tens of microseconds off; a send and its receive end together, so each
    rank pair's co-ending candidates within window (corrected by off) recur at one difference, the
    error of the two hosts' offsets: its mode (bins of 2 sigma, clocks._mode_estimate). Rank pairs are
    kept as pipeline links are (pipeline_links: heaviest first, at most two per rank, each explaining
    its candidates away) weighed by the votes at their mode; each kept pair across hosts gives its
    hosts' edge (the median over the pairs of a host pair, samples summed). Each rank's first
    P2P_CLOCK_MAX_PER_RANK send/recv instances are enough for a mode and bound the work: at 1,024 ranks in
    lock-step hundreds of transfers end within the window of each other."""
    p = pool_of(ranks)
    sel = np.flatnonzero(p.kind == SEND_RECV)
    if sel.size < 2:
        return {}
    rk = p.rank_of[sel]
    first = np.concatenate([[True], rk[1:] != rk[:-1]])
    nth = np.arange(sel.size) - np.maximum.accumulate(np.where(first, np.arange(sel.size), 0))
    sel, rk = sel[nth < P2P_CLOCK_MAX_PER_RANK], rk[nth < P2P_CLOCK_MAX_PER_RANK]
    o = np.asarray(off, dtype=np.int64)
    e = (p.end[sel] - o[node_of[rk]]).astype(np.int64)
    d = p.direction[sel]
    srt = np.argsort(e, kind="stable")
    rk, e, d = rk[srt], e[srt], d[srt]
    parts_i: List[np.ndarray] = []
    for k in range(1, P2P_MAX_WINDOW + 1):
        if k >= e.size:
            break
        near = (e[k:] - e[:-k]) <= window
        if not near.any():
            break
        ok = near & (rk[k:] != rk[:-k]) & ((d[k:] == 0) | (d[:-k] == 0) | (d[k:] != d[:-k]))
        parts_i.append(np.flatnonzero(ok) + k * e.size)
    if not parts_i:
        return {}
    code = np.concatenate(parts_i)
    I = code % e.size
    J = I + code // e.size
    n = len(ranks)
    rI, rJ = rk[I], rk[J]
    swap = rJ < rI
    a, b = np.where(swap, rJ, rI), np.where(swap, rI, rJ)
    de = (e[J] - e[I]).astype(np.float64)
    dt = np.where(swap, -de, de)  # rank b's end less rank a's
    uk, inv = _links_of(a * n + b, n)
    bin_ns = max(float(T.CLOCK_BIN_NS), clocks.FINE_NOISE_BIN * sigma)
    # each rank pair's mode: its candidates binned, the bin with the most together with its neighbours
    bins = np.floor(dt / bin_ns).astype(np.int64)
    key = inv.astype(np.int64) * (1 << 40) + (bins + (1 << 39))
    uk2, cnt = np.unique(key, return_counts=True)
    link2, bin2 = uk2 >> 40, (uk2 & ((1 << 40) - 1)) - (1 << 39)
    near_cnt = cnt.copy()
    adj = (np.diff(link2) == 0) & (np.diff(bin2) == 1)
    near_cnt[1:] += np.where(adj, cnt[:-1], 0)
    near_cnt[:-1] += np.where(adj, cnt[1:], 0)
    # a schedule repeats its transfers, so a mode recurs a transfer period either side of the true one:
    # of the bins holding at least P2P_CLOCK_MODE_SHARE of the link's most, the nearest the first join's
    top = np.zeros(uk.size, dtype=np.int64)
    np.maximum.at(top, link2, near_cnt)
    cand = near_cnt >= P2P_CLOCK_MODE_SHARE * top[link2]
    lk, bk = link2[cand], bin2[cand]  # by link, then bin (the unique keys' order)
    # per link the candidate bin nearest zero, the lower of a tie: a group minimum, no sort
    score = np.abs(2 * bk + 1)
    starts = np.flatnonzero(np.concatenate([[True], lk[1:] != lk[:-1]]))
    group = np.cumsum(np.concatenate([[False], lk[1:] != lk[:-1]]))
    at_min = np.flatnonzero(score == np.minimum.reduceat(score, starts)[group])
    chosen = at_min[np.concatenate([[True], group[at_min][1:] != group[at_min][:-1]])]
    best = np.full(uk.size, -1, dtype=np.int64)
    best[lk[chosen]] = bk[chosen]
    at_mode = np.abs(bins - best[inv]) <= 1
    g = at_mode.astype(np.float64)
    la, lb = uk // n, uk % n
    w = np.bincount(inv, weights=g, minlength=uk.size)
    scale = lane_scale(la, lb, w, lane_offsets(ranks))
    ws, gs = (w, g) if scale is None else (w * scale, g * scale[inv])
    deg = np.zeros(n, dtype=np.int64)
    acc: Dict[Tuple[int, int], List[Tuple[float, int, float]]] = {}
    voted = np.flatnonzero(w >= P2P_CLOCK_MIN_VOTES)
    # only voted links are taken: their candidates are the claims' (a few hundred of 10^5 links at 1,024
    # ranks; ordering all 2 million candidates by link was a fifth of this function)
    if not voted.size:
        return {}
    is_voted = np.zeros(uk.size, dtype=np.bool_)
    is_voted[voted] = True
    mine = np.flatnonzero(is_voted[inv])
    claims = _Claims(inv[mine], uk.size, gs[mine], I[mine], J[mine])
    for i in voted[np.lexsort((lb[voted], la[voted], -ws[voted]))].tolist():
        x, y = int(la[i]), int(lb[i])
        if deg[x] >= P2P_MAX_LINKS or deg[y] >= P2P_MAX_LINKS:
            continue
        if not claims.take(i, float(ws[i])):
            continue
        deg[x] += 1
        deg[y] += 1
        hx, hy = int(node_of[x]), int(node_of[y])
        if hx == hy:
            continue
        c = mine[claims.by_link[claims.starts[i] : claims.starts[i + 1]]]  # this link's candidates
        v = np.sort(dt[c[at_mode[c]]])
        med, iqr = float(v[v.size // 2]), float(v[(3 * v.size) // 4] - v[v.size // 4])
        # rank y's end later by med: offset(hy) - offset(hx) grows by med
        acc.setdefault((hy, hx), []).append((float(o[hy] - o[hx]) + med, int(v.size), iqr))
    edges: clocks.Edges = {}
    for k2, vals in acc.items():
        est = float(np.median([x[0] for x in vals]))
        samples = int(sum(x[1] for x in vals))
        spread = float(np.median([x[2] for x in vals]))
        edges[k2] = (int(round(est)), samples / (spread + T.CLOCK_BIN_NS), int(round(spread)), samples)
    return edges


P2P_CLOCK_MIN_VOTES = 8
P2P_CLOCK_MAX_PER_RANK = 96
P2P_CLOCK_MODE_SHARE = 0.5
P2P_CLOCK_WINDOW_FACTOR = 4.0  # the window: this x the first join's largest spread, at least the next
P2P_CLOCK_MIN_WINDOW_NS = 50_000
P2P_CLOCK_WIDE_WINDOW_NS = 10_000_000  # hosts' clocks within +-5 ms of the first join's
