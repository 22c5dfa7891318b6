"""Each host's clock offset, from collectives that span hosts (their members end together).

Ranks on one host share its clock; the host is the worker name's (``host_<hostname>pid_<pid>``,
TraceMeta.hostname). Without hostnames there is nothing to tell which ranks share a clock, and no
correction is made (the notes say so).

1. **Coarse** (before any matching): line-ups (match.py) are built from the channels' structure,
   not from times. For a channel on host h and one on the line-up's first host, the end difference
   at each position is offset(h) − offset(first) when they are members of one collective at every
   position, and drifts otherwise; the most constant pair (coarse_pairs) gives the estimate.
2. **Fine** (after matching): for every matched group spanning hosts, each member's corrected end
   minus the corrected end of the group's member on its first host: the median per host pair is
   the correction (voted the same way, so that groups a loose first matching merged do not pull it),
   the interquartile range of the samples near it the spread. The analysis matches again with the fine
   offsets, the end-time cut at least CLOCK_SPREAD_FACTOR × the largest median absolute deviation
   of those samples (robust to the groups a loose first matching merged). The first matching cuts
   at CLOCK_SPREAD_FACTOR × the coarse estimate's spread (the interquartile range of the
   candidates in the last window), at most CLOCK_BIN_NS.

Host pairs are joined into offsets from the reference host (the first in natural order) along the
best supported pairs (a maximum spanning tree by number of samples).
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import thresholds as T
from .load import pool_of
from .match import Flat, Lineup, _gather, member_values
from .model import RankData


def has_hosts(ranks: Sequence[RankData]) -> bool:
    return len({r.host for r in ranks}) > 1 and all(r.hostname for r in ranks)


def coarse_pairs(ranks: Sequence[RankData], lineups: List[Lineup]) -> Dict[Tuple[int, int], Tuple[int, int, int]]:
    """Per host pair (h, ref): (estimate, spread, positions) of the most constant channel pair.

    For two channels of a line-up on hosts h and ref, the end difference at each position is
    offset(h) − offset(ref) when the two are members of one collective at every position (its
    members end together), and drifts from position to position otherwise (two replicas' groups,
    even in lock-step). The pair whose differences are the most constant (smallest interquartile
    range, among pairs seen at ≥ 2 positions where there are such) gives the estimate (their median)."""
    best: Dict[Tuple[int, int], Tuple[float, int, int, int]] = {}
    host_of = pool_of(ranks).host
    for lu in lineups:
        hosts = host_of[lu.rows]
        uh = np.unique(hosts)
        if uh.size < 2:
            continue
        E = _gather(ranks, lu.rows, lu.inst, "end")
        P = E.shape[1]
        ref = int(uh[0])
        er = E[np.nonzero(hosts == ref)[0][: T.CLOCK_MAX_CHANNELS]]
        # every other host at once: its first CLOCK_MAX_CHANNELS channels (padding marked), against the
        # reference host's, all pairs' end differences sorted by position
        others = uh[1:]
        order = np.argsort(hosts, kind="stable")
        hs = hosts[order]
        first = np.searchsorted(hs, others)
        count = np.minimum(np.searchsorted(hs, others, side="right") - first, T.CLOCK_MAX_CHANNELS)
        k = np.arange(T.CLOCK_MAX_CHANNELS)
        valid = k[None, :] < count[:, None]  # H × K
        rows = order[np.minimum(first[:, None] + k[None, :], order.size - 1)]
        eh = E[rows]  # H × K × P
        d = np.sort(eh[:, :, None, :] - er[None, None, :, :], axis=3).reshape(others.size, -1, P)
        q1, med, q3 = d[:, :, P // 4], d[:, :, P // 2], d[:, :, (3 * P) // 4]
        iqr = (q3 - q1).astype(np.float64)
        iqr[~np.repeat(valid, er.shape[0], axis=1)] = np.inf
        pick = np.argmin(iqr, axis=1)
        at = np.arange(others.size)
        for h, i, m in zip(others.tolist(), iqr[at, pick].tolist(), med[at, pick].tolist()):
            cand = (i if P >= 2 else float("inf"), -P, int(round(m)), int(round(i)))
            key = (h, ref)
            if key not in best or cand < best[key]:
                best[key] = cand
    return {k: (v[2], v[3], -v[1]) for k, v in best.items()}


def binned(d: np.ndarray, bin_ns: float) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(each value's bin, the bins that hold values, each such bin's count with its two neighbours')."""
    b = np.floor(d / bin_ns).astype(np.int64)
    vals, counts = np.unique(b, return_counts=True)
    near = counts.copy()
    adj = np.diff(vals) == 1
    near[1:] += np.where(adj, counts[:-1], 0)
    near[:-1] += np.where(adj, counts[1:], 0)
    return b, vals, near


def _mode_estimate(d: np.ndarray, bin_ns: float = T.CLOCK_BIN_NS) -> Tuple[int, int, int]:
    """(estimate, votes, spread) of candidates d: the bin_ns bin (CLOCK_BIN_NS; under end noise wider,
    fine_offsets) that holds the most of them together with its two neighbours; the estimate is their
    median, the spread their interquartile range. The bins are fine on purpose: the true difference
    recurs exactly (a collective's members end together) while a pair that is no collective (two
    replicas' groups at the same position) drifts from position to position, so its candidates spread
    even when there are more of them."""
    if d.size == 0:
        return 0, 0, 0
    b, vals, near = binned(d, bin_ns)
    best = vals[int(np.argmax(near))]
    x = d[np.abs(b - best) <= 1]
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    return int(round(med)), int(x.size), int(round(q3 - q1))


# (a, b) → (offset(a) − offset(b), weight, spread, samples)
Edges = Dict[Tuple[int, int], Tuple[int, float, int, int]]


def join(n_hosts: int, edges: Edges, robust: bool = False):
    """edges (a, b) → (offset(a) − offset(b), weight, spread, samples). Offsets from host 0 along a
    maximum spanning tree; returns (offsets, spread, samples, reached) per host. robust: a tree edge
    that the other edges across its cut outvote is left out and the tree grown again (_outvoted)."""
    out = _tree(n_hosts, edges)
    if not robust or not 2 < n_hosts <= ROBUST_MAX_NODES:
        return out[:4]
    live = dict(edges)
    for _ in range(ROBUST_MAX_ROUNDS):
        off, _, _, reached, parent, order = out
        if len(live) <= len(order) - 1:
            break
        bad = _outvoted(off, parent, order, live)
        if bad is None:
            break
        live.pop(bad)
        grown = _tree(n_hosts, live)
        if sum(grown[3]) < sum(reached):
            break  # the edge was the only bridge after all
        out = grown
    return out[:4]


ROBUST_MAX_NODES = 512
ROBUST_MAX_ROUNDS = 16
SETTLE_MAJORITY = 2.0 / 3.0
SETTLE_SPREAD_FACTOR = 4.0
SETTLE_MIN_NS = 10_000
SETTLE_MAX_SPREAD_RATIO = 10.0


def _tree(n_hosts: int, edges: Edges):
    """(offsets, spread, samples, reached, parent, order) along a maximum spanning tree from host 0."""
    adj: Dict[int, List[Tuple[int, int, float, int, int]]] = defaultdict(list)
    for (a, b), (d, w, spread_, n) in edges.items():
        adj[b].append((a, d, w, spread_, n))  # offset(a) = offset(b) + d
        adj[a].append((b, -d, w, spread_, n))
    off = [0] * n_hosts
    spread = [0] * n_hosts
    samples = [0] * n_hosts
    reached = [False] * n_hosts
    parent = [-1] * n_hosts
    order: List[int] = []
    if n_hosts == 0:
        return off, spread, samples, reached, parent, order
    reached[0] = True
    order.append(0)
    heap = [(-w, 0, a, d, s, n) for a, d, w, s, n in adj[0]]
    heapq.heapify(heap)
    while heap:
        negw, frm, to, d, s, n = heapq.heappop(heap)
        if reached[to]:
            continue
        reached[to] = True
        off[to] = off[frm] + d
        spread[to], samples[to] = s, n
        parent[to] = frm
        order.append(to)
        for a, d2, w, s2, n2 in adj[to]:
            if not reached[a]:
                heapq.heappush(heap, (-w, to, a, d2, s2, n2))
    return off, spread, samples, reached, parent, order


def _outvoted(off: List[int], parent: List[int], order: List[int], edges: Edges) -> Optional[Tuple[int, int]]:
    """The tree edge most clearly outvoted by the edges across its cut, or None. For the subtree under
    each tree edge, every crossing edge (offset(a) − offset(b) = d) asks the subtree to move by its
    residual; the median move (weighted by samples: a wrong pair can be as constant as a right one)
    outvotes the tree edge when it is beyond the tolerance (SETTLE_SPREAD_FACTOR × the crossing edges'
    median spread, at least SETTLE_MIN_NS), at least three edges cross, and at least SETTLE_MAJORITY of
    their samples, or of the edges themselves (distinct host pairs that agree), ask for it; a crossing
    edge whose spread is over SETTLE_MAX_SPREAD_RATIO x their median votes not. One wrong edge in the tree (a block that joined two stages' groups: ends
    a stage apart) puts its side a stage off; the other pairs between the two sides outvote it."""
    n = len(off)
    keys = list(edges)
    ea = np.array([k[0] for k in keys], dtype=np.int64)
    eb = np.array([k[1] for k in keys], dtype=np.int64)
    ed = np.array([edges[k][0] for k in keys], dtype=np.float64)
    es = np.array([edges[k][2] for k in keys], dtype=np.float64)
    ew = np.array([max(edges[k][3], 1) for k in keys], dtype=np.float64)
    o = np.asarray(off, dtype=np.float64)
    resid = ed - (o[ea] - o[eb])
    child: List[List[int]] = [[] for _ in range(n)]
    for c in order[1:]:
        child[parent[c]].append(c)
    best, best_share = None, SETTLE_MAJORITY
    for c in order[1:]:
        inside = np.zeros(n, dtype=bool)
        stack = [c]
        while stack:
            x = stack.pop()
            inside[x] = True
            stack.extend(child[x])
        cross = np.flatnonzero(inside[ea] != inside[eb])
        if cross.size >= 3:
            # an edge whose spread is many times its neighbours' (a block of two stages' groups at once)
            # says nothing of the cut
            cross = cross[es[cross] <= SETTLE_MAX_SPREAD_RATIO * max(float(np.median(es[cross])), 1.0)]
        if cross.size < 3:
            continue
        move = np.where(inside[ea[cross]], resid[cross], -resid[cross])
        w = ew[cross]
        srt = np.argsort(move, kind="stable")
        cw = np.cumsum(w[srt])
        shift = float(move[srt][int(np.searchsorted(cw, cw[-1] / 2.0))])
        tol = max(SETTLE_MIN_NS, SETTLE_SPREAD_FACTOR * float(np.median(es[cross])))
        if abs(shift) <= tol:
            continue
        near = np.abs(move - shift) <= tol
        share = float(w[near].sum() / cw[-1])
        share = max(share, float(near.mean()))  # or by edges: distinct host pairs that agree
        if share >= best_share:
            p = parent[c]
            tree_edge = (c, p) if (c, p) in edges else (p, c)
            if tree_edge in edges:
                best, best_share = tree_edge, share
    return best


def coarse_offsets(ranks: Sequence[RankData], lineups: List[Lineup], n_hosts: int):
    edges: Edges = {}
    for k, (est, spread, positions) in coarse_pairs(ranks, lineups).items():
        # the join prefers the most constant pairs: weight = positions / (spread + 1 bin)
        edges[k] = (est, positions / (spread + T.CLOCK_BIN_NS), spread, positions)
    return join(n_hosts, edges)


def fine_offsets(ranks: Sequence[RankData], flat: Flat, n_hosts: int, sigma: float = 0.0):
    """Corrections to the applied offsets from the matched groups that span hosts. Without end noise
    each member against the group's first member on its lowest host; under end noise (sigma: one
    member's end about its collective's, shapes.end_noise) the mean of the group's members on each host
    against the lowest host's, and the vote's bins FINE_NOISE_BIN x sigma wide (the noise spreads the
    true difference over several CLOCK_BIN_NS bins)."""
    if flat.n == 0:
        return join(n_hosts, {}) + ([0] * n_hosts,)
    host = member_values(ranks, flat, "host")
    cend = member_values(ranks, flat, "cend")
    g = flat.m_group
    noisy = sigma > T.CLOCK_BIN_NS / FINE_NOISE_BIN
    bin_ns = max(float(T.CLOCK_BIN_NS), FINE_NOISE_BIN * sigma)
    if noisy:
        a, b, d = _host_means(g, host, cend - cend[flat.ptr[:-1]][g], n_hosts)
    else:
        a, b, d = _member_pairs(g, host, cend, flat)
    if not d.size:
        return join(n_hosts, {}) + ([0] * n_hosts,)
    key = a * n_hosts + b
    order = np.lexsort((d, key))
    ks, ds = key[order], d[order]
    bounds = np.concatenate([[0], np.nonzero(np.diff(ks))[0] + 1, [ks.size]])
    edges: Edges = {}
    mad = {}
    for i in range(bounds.size - 1):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        x = ds[lo:hi]
        k = int(ks[bounds[i]])
        n = hi - lo
        q1, med0, q3 = x[n // 4], x[n // 2], x[(3 * n) // 4]  # sorted: quartiles by index
        if q3 - q1 <= bin_ns:
            med, votes, spread = int(round(float(med0))), n, int(round(float(q3 - q1)))
        else:  # contaminated by merged groups: vote
            med, votes, spread = _mode_estimate(x, bin_ns)
        if noisy and votes < FINE_NOISY_MIN_VOTES:
            continue  # under noise one group's means are no clock: a host reached by none keeps its own
        edges[(k // n_hosts, k % n_hosts)] = (med, votes, spread, votes)
        mad[(k // n_hosts, k % n_hosts)] = float(np.median(np.abs(x - med))) if spread > bin_ns else spread / 2.0
    off, spread, samples, reached = join(n_hosts, edges)
    # per host: the robust spread (median absolute deviation) of the pair that reached it
    _, host_mad, _, _ = join(n_hosts, {k: (e[0], e[1], int(round(mad[k])), e[3]) for k, e in edges.items()})
    return off, spread, samples, reached, host_mad


FINE_NOISE_BIN = 2.0
FINE_NOISY_MIN_VOTES = 3


def _member_pairs(g: np.ndarray, host: np.ndarray, cend: np.ndarray, flat: Flat):
    """(host, reference host, end difference) of every member of a group not on its lowest host, against
    the group's first member on that host (members are sorted by rank index; hosts follow rank order
    closely but not necessarily)."""
    first = flat.ptr[:-1]
    lo_host = np.minimum.reduceat(host, first) if host.size else host
    ref_of = np.full(flat.n, -1, dtype=np.int64)
    is_lo = host == lo_host[g]
    pos = np.nonzero(is_lo)[0]
    _, firsts = np.unique(g[pos], return_index=True)
    ref_of[g[pos[firsts]]] = pos[firsts]
    other = ~is_lo
    return host[other], lo_host[g[other]], cend[other] - cend[ref_of[g[other]]]


def _host_means(g: np.ndarray, host: np.ndarray, rel: np.ndarray, n_hosts: int):
    """(host, reference host, difference of means) of every group's members per host (rel: each member's
    corrected end less its group's first member's), each host against the group's lowest."""
    u, inv = np.unique(g * n_hosts + host, return_inverse=True)
    inv = inv.ravel()
    mean = np.bincount(inv, weights=rel.astype(np.float64)) / np.bincount(inv)
    ug, uh = u // n_hosts, u % n_hosts
    first = np.concatenate([[True], ug[1:] != ug[:-1]])
    ref = np.maximum.accumulate(np.where(first, np.arange(u.size), 0))
    other = ~first
    return uh[other], uh[ref[other]], mean[other] - mean[ref[other]]
