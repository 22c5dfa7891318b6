"""Communicators from collective semantics, then every instance matched by its order.

NCCL has every member of a communicator issue the same collectives in the same order, and
send/recv between two ranks is FIFO. Traces carry no communicator ids; what this uses instead:

* **Collectives: a channel's shape.** A channel (match.py: one rank's instances of one stream and
  issuing operator) is one communicator's traffic. Channels with the same signature are lined up
  (the j-th instance of each is one position). The members of one collective end together, so the
  channels of one communicator have the same *shape*: their end times, each less its own mean over
  the positions, which no clock offset changes. Two channels are one communicator when their centred
  ends agree within the shape tolerance at nearly every position of the run (SHAPE_SHARE of them):
  lock-step replicas whose groups drift apart and back within each step agree at some positions, not
  at most (the meet of the positions' single-linkage cuts, sorting per position, its blocks joined
  again where together that often).
  A channel that agrees with no other is a one-rank communicator (MP = 1 still launching NCCL
  kernels): its instances are matched alone. Instance k of a communicator is then the k-th instance
  of each member channel.
* **End noise.** Members of one collective end microseconds apart on real GPUs. The communicators
  are found first at SHAPE_WIDE_TOL_NS; the run's end noise (end_noise: sigma of one member's end) is
  measured on them, and the shape, verification and send/recv tolerances scale with it (thresholds.py;
  at no noise they are MATCH_TOL_NS and MATCH_VERIFY_NS). Under noise, line-ups of fewer than
  SHAPE_NOISY_MIN_POSITIONS give their blocks to the clocks but are cut by corrected end time.
* **Clocks.** The end differences between the members of one communicator are their clocks'
  differences, constant over the run: per member pair the median over all positions. With host names,
  the pairs are per host (one clock per host); without, per rank, and the ranks are grouped into
  hosts by their offsets (ranks whose offsets are within CLOCK_HOST_GAP_NS of their neighbours' share
  a clock). Offsets are joined from the reference along the best supported pairs (clocks.join), each
  subtree then settled on the weighted median of every pair across its cut (one block that joined two
  stages' groups gives a pair a stage off; the others outvote it).
* **Verification.** A communicator's instance whose members' corrected ends are further apart than
  the verification tolerance is not one instance: its members go to the residue.
* **Send/recv: links, then pairs.** A send and its receive end together. Every send is paired
  with the receives of other ranks whose corrected ends are within the send/recv tolerance (a sweep
  over the instances sorted by end); links (two ranks) are weighed by how closely their candidates
  co-end and kept heaviest first, at most two per rank, each explaining its candidates away (a link
  whose candidates a heavier link's instances explain is not taken: tensor-parallel partners'
  pipelines in lock-step co-end across as well; pipeline_links); over kept links, instances are paired
  mutually nearest (each instance once).
* Line-ups of fewer than SHAPE_MIN_POSITIONS positions (no shape to tell) and of host instances
  (gloo's blocking calls, Communication events: their ends are when each process got its result, not
  one moment) are cut by corrected end time as before (match.cut_columns; a line-up of two channels
  is one group at every position); instances no line-up explains go to the residue (match.py).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import clocks, thresholds as T
from .clocks import join
from .load import pool_of
from .match import (SEND_RECV, Collector, Flat, Lineup, _emit, _gather, _leaders, _offsets, _persist, _ranges,
                    build_lineups, cut_columns, match_residue)
from .model import RankData
from .prior import candidates, rank_partitions, split_by_prior
from .shapes import EXACT_END_NS, measure_noise, shape_blocks

SHAPE_MIN_POSITIONS = 3
SHAPE_NOISY_MIN_POSITIONS = 8


class _Shaped:
    """A line-up with its communicator blocks."""

    def __init__(self, lu: Lineup, block: np.ndarray, by_time: bool = False):
        self.lu, self.block, self.by_time = lu, block, by_time


def _has_hosts(ranks: Sequence[RankData]) -> bool:
    return all(r.hostname for r in ranks)


def _clock_edges(ranks: Sequence[RankData], shaped: List[_Shaped], node_of: np.ndarray, noisy: bool = False,
                 exact: bool = False, sigma: float = 0.0):
    """Edges (a, b) → (offset(a) − offset(b), weight, spread, samples) between clock nodes, from the
    member pairs of every communicator block (each member against the block's first member on another
    node). exact (the run's members end together to the nanosecond): a pair whose end difference is
    not constant within EXACT_END_NS over the positions is no pair of one communicator (a block of
    thousands of lock-step channels joins some whose shapes agree by chance) and gives no edge. sigma (the
    end noise, when known): a block of at most NOISY_PAIRS_MAX_CHANNELS gives each node pair its most
    constant member pairs instead (_constant_pairs: a block that joined groups of two stages pairs a
    member with its block's first one of another stage)."""
    acc: Dict[Tuple[int, int], List[Tuple[float, int, float]]] = {}
    for s in shaped:
        lu, block = s.lu, s.block
        nb = int(block.max()) + 1 if block.size else 0
        if nb == block.size:
            continue   # all one-rank communicators
        E = _gather(ranks, lu.rows, lu.inst, "end")
        nodes = node_of[lu.rows]
        if sigma > 0 and block.size <= NOISY_PAIRS_MAX_CHANNELS:
            _constant_pairs(E, nodes, block, acc)
            continue
        order = np.lexsort((nodes, block))
        bs = block[order]
        firsts = np.concatenate([[True], bs[1:] != bs[:-1]])
        ref = order[np.maximum.accumulate(np.where(firsts, np.arange(order.size), 0))]
        cross = nodes[order] != nodes[ref]
        if not cross.any():
            continue
        a, b = order[cross], ref[cross]
        d = np.sort(E[a] - E[b], axis=1)
        P = d.shape[1]
        med = d[:, P // 2].astype(np.float64)
        iqr = (d[:, (3 * P) // 4] - d[:, P // 4]).astype(np.float64)
        if exact:
            same = (d[:, -1] - d[:, 0]) <= 2 * EXACT_END_NS
            a, b, med, iqr = a[same], b[same], med[same], iqr[same]
        for na, nb_, m, q in zip(nodes[a].tolist(), nodes[b].tolist(), med.tolist(), iqr.tolist()):
            acc.setdefault((na, nb_), []).append((m, P, q))
    return _pooled(acc, noisy)


def _pooled(acc: Dict[Tuple[int, int], List[Tuple[float, int, float]]], noisy: bool) -> Dict:
    """Per node pair, its (median difference, positions, spread) samples pooled into one edge."""
    edges = {}
    for k, v in acc.items():
        # under end noise the positions of a collective once or twice a step tell communicators apart
        # least (shape_blocks): a node pair linked by longer line-ups takes its clock from those alone
        if noisy and any(x[1] >= SHAPE_NOISY_MIN_POSITIONS for x in v):
            v = [x for x in v if x[1] >= SHAPE_NOISY_MIN_POSITIONS]
        m = np.array([x[0] for x in v])
        n = int(sum(x[1] for x in v))
        est = float(np.median(m))
        spread = float(max(np.median([x[2] for x in v]), np.percentile(m, 75) - np.percentile(m, 25)))
        edges[k] = (int(round(est)), n / (spread + T.CLOCK_BIN_NS), int(round(spread)), n)
    return edges


NOISY_PAIRS_MAX_CHANNELS = 512   # its C^2 / 2 member pairs compared over the positions


def _constant_pairs(E: np.ndarray, nodes: np.ndarray, block: np.ndarray, acc) -> None:
    """Under end noise, a block's clock evidence per node pair from its most constant member pairs: the
    members of one instance end together at every position (their difference's interquartile range about
    2 sigma), while a block that joined two stages' groups pairs members whose differences drift with the
    step's jitter; per node pair the pairs whose spread is within twice the smallest (plus a bin) give the
    median difference."""
    C, P = E.shape
    for b in np.unique(block):
        idx = np.flatnonzero(block == b)
        if np.unique(nodes[idx]).size < 2:
            continue
        X = E[idx].astype(np.int64)
        nd = nodes[idx]
        i, j = np.triu_indices(idx.size, 1)
        cross = nd[i] != nd[j]
        i, j = i[cross], j[cross]
        a_n, b_n = nd[i], nd[j]
        swap = a_n < b_n
        hi = np.where(swap, j, i)
        lo = np.where(swap, i, j)
        d = np.sort(X[hi] - X[lo], axis=1)
        med = d[:, P // 2].astype(np.float64)
        iqr = (d[:, (3 * P) // 4] - d[:, P // 4]).astype(np.float64)
        na, nb = nd[hi], nd[lo]
        key = na * (int(nd.max()) + 1) + nb
        order = np.lexsort((iqr, key))
        ks = key[order]
        bounds = np.concatenate([[0], np.flatnonzero(np.diff(ks)) + 1, [ks.size]])
        for k in range(bounds.size - 1):
            s0, s1 = int(bounds[k]), int(bounds[k + 1])
            sel = order[s0:s1]
            best = iqr[sel[0]]
            keep = sel[iqr[sel] <= 2.0 * best + T.CLOCK_BIN_NS]
            acc.setdefault((int(na[sel[0]]), int(nb[sel[0]])), []).append(
                (float(np.median(med[keep])), P, float(np.median(iqr[keep]))))


def _group_hosts(off: List[int], reached: List[bool], gap: float = T.CLOCK_HOST_GAP_NS) -> np.ndarray:
    """Ranks (clock nodes) whose offsets lie within gap of their neighbours' (sorted) share a host; each
    unreached rank is a host of its own. Host ids in the order of their lowest rank."""
    n = len(off)
    o = np.array(off, dtype=np.int64)
    ok = np.array(reached, dtype=bool)
    host = np.full(n, -1, dtype=np.int64)
    idx = np.flatnonzero(ok)
    if idx.size:
        srt = idx[np.argsort(o[idx], kind="stable")]
        new = np.concatenate([[True], np.diff(o[srt]) > gap])
        host[srt] = np.cumsum(new) - 1
    nxt = int(host.max()) + 1 if idx.size else 0
    for i in np.flatnonzero(~ok).tolist():
        host[i] = nxt
        nxt += 1
    # renumber by lowest member
    _, first, inv = np.unique(host, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.ravel()]


def _emit_shaped(ranks: Sequence[RankData], col: Collector, s: _Shaped, tol: float, parts=None, sigma: float = 0.0):
    """Each block's instances at every position; a position whose members' corrected ends spread
    beyond tol is left to the residue. Under end noise (parts: prior.rank_partitions) blocks whose
    instances spread beyond the noise (the shapes of lock-step replicas agree) are split along the
    communicators the run shows first (prior.py)."""
    lu, block = s.lu, s.block
    C, P = lu.inst.shape
    if parts is not None and C > 2:
        lead = np.full(int(block.max()) + 1, C, dtype=np.int64)
        np.minimum.at(lead, block, np.arange(C, dtype=np.int64))
        L = np.repeat(lead[block][:, None], P, axis=1)
        split = split_by_prior(L, _gather(ranks, lu.rows, lu.inst, "cend"), lu.rows, parts, sigma,
                               _hosts(ranks, lu.rows), _devices(ranks, lu.rows))
        if split is not L:
            block = np.unique(split[:, 0], return_inverse=True)[1].ravel()
    order = np.lexsort((lu.rows, block))
    bs = block[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(bs)) + 1])
    sizes = np.diff(np.concatenate([starts, [C]]))
    B = starts.size
    Ec = _gather(ranks, lu.rows[order], lu.inst[order], "cend")
    spread = np.maximum.reduceat(Ec, starts, axis=0) - np.minimum.reduceat(Ec, starts, axis=0)   # B × P
    ok = (spread <= tol).T.ravel()                                  # position-major, block within
    g_size = np.tile(sizes, P)
    g_step = np.repeat(lu.steps, B)
    g_kind = np.repeat(lu.kinds, B)
    m_rank = np.tile(lu.rows[order], P)
    m_inst = lu.inst[order].T.ravel()
    m_ok = np.repeat(ok, g_size)
    col.add(g_step[ok], g_kind[ok], g_size[ok], m_rank[m_ok], m_inst[m_ok])


def pipeline_links(la: np.ndarray, lb: np.ndarray, dt: np.ndarray, inv: np.ndarray, n: int,
                   sigma: float, ci: Optional[np.ndarray] = None,
                   cj: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
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
    candidates are the true links' instances, explained already."""
    s = max(np.sqrt(2.0) * sigma, T.MATCH_TOL_NS / 2.0)
    g = np.exp(-np.square(dt.astype(np.float64)) / (2.0 * s * s))
    w = np.bincount(inv, weights=g, minlength=la.size)
    best = np.zeros(n)
    np.maximum.at(best, la, w)
    np.maximum.at(best, lb, w)
    ok = w >= T.P2P_PARTNER_SHARE * np.maximum(best[la], best[lb])
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
    weak = w < P2P_STRONG_SHARE * np.maximum(best[la], best[lb])
    return keep, weak


P2P_MAX_LINKS = 2
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
        c = self.by_link[self.starts[link]:self.starts[link + 1]]
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
    key = a * n + b
    uk, inv = np.unique(key, return_inverse=True)
    inv = inv.ravel()
    la, lb = uk // n, uk % n
    keep_link, weak_link = pipeline_links(la, lb, e[J] - e[I], inv, n, sigma, I, J)
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


P2P_MAX_WINDOW = 256
P2P_ROUNDS = 16


def _p2p_host_edges(ranks: Sequence[RankData], node_of: np.ndarray, off: Sequence[int], window: float,
                    sigma: float) -> clocks.Edges:
    """Clock edges between hosts from send/recv, for the join after a first one (off: its offsets).
    Under end noise the communicators' blocks of lock-step replicas join groups of two stages, and the
    first join's hosts can be tens of microseconds off; a send and its receive end together, so each
    rank pair's co-ending candidates within window (corrected by off) recur at one difference, the
    error of the two hosts' offsets: its mode (bins of 2 sigma, clocks._mode_estimate). Rank pairs are
    kept as pipeline links are (pipeline_links: heaviest first, at most two per rank, each explaining
    its candidates away) weighed by the votes at their mode; each kept pair across hosts gives its
    hosts' edge (the median over the pairs of a host pair, samples summed)."""
    p = pool_of(ranks)
    sel = np.flatnonzero(p.kind == SEND_RECV)
    if sel.size < 2:
        return {}
    rk = p.rank_of[sel]
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
    J, I = code % e.size + code // e.size, code % e.size
    n = len(ranks)
    a, b = np.minimum(rk[I], rk[J]), np.maximum(rk[I], rk[J])
    dt = np.where(rk[J] == b, e[J] - e[I], e[I] - e[J]).astype(np.float64)   # rank b's end less rank a's
    uk, inv = np.unique(a * n + b, return_inverse=True)
    inv = inv.ravel()
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
    lk, bk = link2[cand], bin2[cand]
    order = np.lexsort((np.abs(2 * bk + 1), lk))
    first = np.concatenate([[True], lk[order][1:] != lk[order][:-1]])
    best = np.full(uk.size, -1, dtype=np.int64)
    best[lk[order][first]] = bk[order][first]
    at_mode = np.abs(bins - best[inv]) <= 1
    g = at_mode.astype(np.float64)
    la, lb = uk // n, uk % n
    w = np.bincount(inv, weights=g, minlength=uk.size)
    deg = np.zeros(n, dtype=np.int64)
    claims = _Claims(inv, uk.size, g, I, J)
    acc: Dict[Tuple[int, int], List[Tuple[float, int, float]]] = {}
    for i in np.lexsort((lb, la, -w)).tolist():
        x, y = int(la[i]), int(lb[i])
        if w[i] < P2P_CLOCK_MIN_VOTES or deg[x] >= P2P_MAX_LINKS or deg[y] >= P2P_MAX_LINKS:
            continue
        if not claims.take(i, float(w[i])):
            continue
        deg[x] += 1
        deg[y] += 1
        hx, hy = int(node_of[x]), int(node_of[y])
        if hx == hy:
            continue
        c = claims.by_link[claims.starts[i]:claims.starts[i + 1]]   # this link's candidates
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
P2P_CLOCK_MODE_SHARE = 0.5
P2P_CLOCK_WINDOW_FACTOR = 4.0   # the window: this x the first join's largest spread, at least the next
P2P_CLOCK_MIN_WINDOW_NS = 50_000
P2P_CLOCK_WIDE_WINDOW_NS = 10_000_000   # hosts' clocks within +-5 ms of the first join's


def _host_side(pool, lu: Lineup) -> bool:
    """A line-up of host instances (gloo's blocking calls, Communication events: no device stream)."""
    return bool(pool.stream[pool.base[lu.rows[0]] + lu.inst[0, 0]] < 0)


def _fallback(ranks, col: Collector, lu: Lineup, tol: float, parts=None, sigma: float = 0.0):
    """A line-up too short for a shape: cut by corrected end time (match.py's way), at least tol apart;
    under end noise split along the communicators the run shows (prior.py) where the cut's clusters
    spread beyond the noise (parts; None without noise and for host-side line-ups)."""
    E = _gather(ranks, lu.rows, lu.inst, "cend")
    C, P = E.shape
    if C == 2:
        L = np.zeros((2, P), dtype=np.int64)
    else:
        order, cid = cut_columns(E, tol)
        L = _persist(_leaders(order, cid))
        if parts is not None:
            L = split_by_prior(L, E, lu.rows, parts, sigma, _hosts(ranks, lu.rows), _devices(ranks, lu.rows))
    _emit(col, L, lu)


def match_run(ranks: List[RankData], notes: List[str]):
    """(Flat of every matched group, clock rows, the end tolerance): communicators, clocks, instances."""
    lineups = build_lineups(ranks)
    short: List[Lineup] = []
    pool = pool_of(ranks)
    cands: List[Tuple[Lineup, np.ndarray]] = []
    for lu in lineups:
        if lu.p2p:
            continue
        P = lu.inst.shape[1]
        # host instances (gloo, Communication events) block the calling thread: their ends tell when
        # each process got its result back, not one moment, so they are cut by time (match.py's way)
        if P < SHAPE_MIN_POSITIONS or _host_side(pool, lu):
            short.append(lu)
            continue
        cands.append((lu, _gather(ranks, lu.rows, lu.inst, "end")))
    # the run's end noise, measured on the communicators found at a wide tolerance, sets the
    # tolerances: shapes, an instance's spread, a send and its receive (at no noise: MATCH_TOL_NS)
    sigma, wide = measure_noise([lu for lu, _ in cands], [E for _, E in cands])
    # a run whose members end together to the nanosecond (sigma within EXACT_END_NS) has shapes and
    # short line-ups' cuts at EXACT_TOL_NS: lock-step replicas a microsecond apart are told apart
    exact = sigma <= EXACT_END_NS
    noisy = _noisy(sigma)
    shape_tol = min(T.SHAPE_WIDE_TOL_NS, max(T.EXACT_TOL_NS if exact else T.MATCH_TOL_NS,
                                             T.SHAPE_NOISE_FACTOR * sigma))
    tol = max(T.MATCH_TOL_NS, T.P2P_NOISE_FACTOR * sigma)
    cut_tol = T.EXACT_TOL_NS if exact else tol
    verify = max(T.MATCH_VERIFY_NS, T.VERIFY_NOISE_FACTOR * sigma)
    if tol > T.MATCH_TOL_NS:
        notes.append(f"The members of one collective end {{ns:{int(round(sigma))}}} apart (end noise, sigma, "
                     f"measured on the communicators): instances are matched within {{ns:{int(round(verify))}}}, "
                     f"send/recv within {{ns:{int(round(tol))}}}.")
    shaped: List[_Shaped] = []
    for (lu, E), bw in zip(cands, wide):
        block = bw if shape_tol >= T.SHAPE_WIDE_TOL_NS else shape_blocks(E, shape_tol, centred=noisy)
        # two channels of one rank in one block are no communicator: cut by time instead
        key = block * (len(ranks) + 1) + lu.rows
        if np.unique(key).size != key.size:
            short.append(lu)
            continue
        # a collective once or twice a step: its centred ends are mostly the job's step-time jitter,
        # which every communicator shares; under end noise its blocks give clocks, but its instances
        # are cut by corrected end time
        by_time = noisy and E.shape[1] < SHAPE_NOISY_MIN_POSITIONS
        shaped.append(_Shaped(lu, block, by_time))

    # ---- clocks
    hosts_known = _has_hosts(ranks)
    n = len(ranks)
    if hosts_known:
        node_of = np.array([r.host for r in ranks], dtype=np.int64)
    else:
        node_of = np.arange(n, dtype=np.int64)
    n_nodes = int(node_of.max()) + 1 if n else 0
    edges = _clock_edges(ranks, shaped, node_of, noisy, exact, sigma if noisy else 0.0)
    coarse = False
    if hosts_known and n_nodes > 1:
        # host pairs no communicator's shape links (line-ups too short for a shape): the most constant
        # channel pair of a line-up (clocks.coarse_pairs), refined once after a first matching below
        for k, (est, sp, pos) in clocks.coarse_pairs(ranks, lineups).items():
            if k not in edges and (k[1], k[0]) not in edges:
                edges[k] = (est, 1e-6 * pos / (sp + T.CLOCK_BIN_NS), sp, pos)
                coarse = True
    off, spread, samples, reached = join(n_nodes, edges, robust=True)
    if noisy and hosts_known and n_nodes > 1:
        # under end noise the blocks of lock-step replicas leave the hosts tens of microseconds off:
        # send/recv pairs, co-ending within a window that wide, give their hosts' edges (_p2p_host_edges)
        window = max(P2P_CLOCK_MIN_WINDOW_NS, P2P_CLOCK_WINDOW_FACTOR * float(max(spread, default=0)))
        p2p = _p2p_host_edges(ranks, node_of, off, window, sigma)
        if p2p:
            for k2 in p2p:
                edges.pop((k2[1], k2[0]), None)
            edges.update(p2p)
            off, spread, samples, reached = join(n_nodes, edges, robust=True)
        # a host no send/recv pair reached within that window (its first offset more than the window
        # off: a wrong block's edge the outvote could not settle) takes its pairs' edges from a wide one
        linked = {h for k2 in p2p for h in k2}
        if len(linked) < n_nodes:
            wide_p2p = _p2p_host_edges(ranks, node_of, off, P2P_CLOCK_WIDE_WINDOW_NS, sigma)
            fresh = {k2: e2 for k2, e2 in wide_p2p.items() if k2[0] not in linked or k2[1] not in linked}
            if fresh:
                for k2 in fresh:
                    edges.pop((k2[1], k2[0]), None)
                edges.update(fresh)
                off, spread, samples, reached = join(n_nodes, edges, robust=True)
    # (two ranks: a line-up of two channels is one group at every position, whatever its times, so
    # matched groups tell nothing of the clocks)
    if not hosts_known and n > 2 and not all(reached):
        off, spread, samples, reached = _refine_rank_clocks(ranks, shaped, short, (off, spread, samples, reached),
                                                            (tol, verify, sigma, cut_tol))
    clock_rows = []
    n_h = 0
    if not hosts_known:
        if pool.kind.size:
            host = _group_hosts(off, reached, max(T.CLOCK_HOST_GAP_NS, T.HOST_GAP_NOISE_FACTOR * sigma))
        else:   # no collective instance at all (Paddle on CPU/gloo): nothing tells clocks apart, one clock
            host = np.zeros(n, dtype=np.int64)
        n_h = int(host.max()) + 1 if n else 0
        h_off, h_spread, h_samples, h_reached = _host_clocks(ranks, shaped, host, n_h, (off, spread, samples, reached),
                                                             noisy)
        ref = h_off[int(host[0])] if n else 0
        for r in ranks:
            r.host = int(host[r.index])
            r.offset_ns = h_off[r.host] - ref
        pool.host[:] = host
        for h in range(n_h):
            idx = np.flatnonzero(host == h).tolist()
            clock_rows.append(("", h_off[h] - ref, h_spread[h], h_samples[h], idx, h == int(host[0])))
        if n_h > 1:
            notes.append(f"The worker names tell no hosts: {n_h} clocks told apart by the collectives' end times "
                         "(ranks whose offsets agree share a host).")
        lost = [i for i in range(n_h) if not h_reached[i]] if n > 1 else []
    else:
        for r in ranks:
            r.offset_ns = int(off[r.host])
        names: Dict[int, Tuple[str, List[int]]] = {}
        for r in ranks:
            names.setdefault(r.host, (r.hostname, []))[1].append(r.index)
        lost = []
        for h in sorted(names):
            name, idx = names[h]
            clock_rows.append((name, int(off[h]), int(spread[h]), int(samples[h]), idx, h == 0))
            if h and not reached[h]:
                lost.append(h)
    if lost and len(clock_rows) > 1:
        what = [clock_rows[h][0] or f"of ranks {[ranks[i].rank for i in clock_rows[h][4]][:4]}" for h in lost
                if h < len(clock_rows)]
        notes.append(f"No collective links host(s) {', '.join(what[:8])}{', …' if len(what) > 8 else ''} to the "
                     "others: their clocks are not corrected.")

    flat = _instances(ranks, shaped, short, tol, verify, sigma, cut_tol)
    if n_h > 1 and n > 2:
        # the hosts told apart by the clocks: their offsets refined from the matched groups, as with host names
        coarse, n_nodes = True, n_h
    # under end noise the first clocks (shapes, send/recv windows) can leave a host microseconds off that
    # the matched groups then tell (a replica linked to the others by rare data-parallel all-reduces
    # alone): refined once from them, as after a coarse estimate
    if coarse or (noisy and hosts_known and n_nodes > 1):
        corr, _, _, reached_f, _ = clocks.fine_offsets(ranks, flat, n_nodes, sigma)
        for r in ranks:
            if reached_f[r.host]:
                r.offset_ns += int(corr[r.host])
        for i, row in enumerate(clock_rows):
            if reached_f[i]:
                clock_rows[i] = (row[0], row[1] + int(corr[i])) + row[2:]
        flat = _instances(ranks, shaped, short, tol, verify, sigma, cut_tol)
    return flat, clock_rows, tol


def _host_clocks(ranks: Sequence[RankData], shaped: List[_Shaped], host: np.ndarray, n_h: int, clocks_,
                 noisy: bool):
    """(offsets, spread, samples, reached) per host of rank-named files, the hosts grouped from the ranks'
    offsets (clocks_, per rank): the median of its ranks' offsets, then, where the communicators' blocks
    link it to the reference host, from every member pair of those blocks pooled per host pair (one clock
    per host: _clock_edges with the hosts as nodes), as with host names."""
    off, spread, samples, reached = clocks_
    h_off = [0] * n_h
    h_spread, h_samples, h_reached = [0] * n_h, [0] * n_h, [False] * n_h
    for h in range(n_h):
        idx = np.flatnonzero(host == h)
        h_off[h] = int(round(float(np.median([off[i] for i in idx]))))
        h_spread[h] = int(max(spread[i] for i in idx))
        h_samples[h] = int(sum(samples[i] for i in idx))
        h_reached[h] = any(reached[i] for i in idx)
    if n_h > 1 and len(ranks) > 2:
        ho, hs, hn, hr = join(n_h, _clock_edges(ranks, shaped, host, noisy))
        ref = int(host[0])
        for h in range(n_h):
            if hr[h] and h != ref:
                h_off[h], h_spread[h], h_samples[h] = h_off[ref] + int(ho[h]), int(hs[h]), int(hn[h])
    return h_off, h_spread, h_samples, h_reached


def _refine_rank_clocks(ranks: Sequence[RankData], shaped: List[_Shaped], short: List[Lineup], clocks_, tols):
    """Rank-named files whose communicators' shapes leave ranks unlinked (collectives once a step,
    too few positions for a shape, are cut by time): match once at the offsets known so far (the
    unreached ranks' clocks as they are), then take every rank's offset from the matched groups that
    span it (clocks.fine_offsets, one clock per rank), as the host-named path does after its coarse
    estimate. Returns (offsets, spread, samples, reached) per rank."""
    off, spread, samples, reached = clocks_
    pool = pool_of(ranks)
    for r in ranks:
        r.host = r.index
        r.offset_ns = int(off[r.index]) if reached[r.index] else 0
    pool.host[:] = np.arange(len(ranks))
    flat = _instances(ranks, shaped, short, *tols)
    corr, sp_f, smp_f, reached_f, _ = clocks.fine_offsets(ranks, flat, len(ranks))
    if not any(reached_f[1:]):
        return clocks_
    new_off = [int(r.offset_ns + corr[r.index]) if reached_f[r.index] else int(off[r.index]) for r in ranks]
    new_spread = [int(sp_f[i]) if reached_f[i] else int(spread[i]) for i in range(len(ranks))]
    new_samples = [int(smp_f[i]) if reached_f[i] else int(samples[i]) for i in range(len(ranks))]
    return new_off, new_spread, new_samples, [bool(a or b) for a, b in zip(reached, reached_f)]


def _instances(ranks: Sequence[RankData], shaped: List[_Shaped], short: List[Lineup], tol: float,
               verify: float, sigma: float, cut_tol: float) -> Flat:
    col = Collector()
    pool = pool_of(ranks)
    match_p2p(ranks, col, tol, sigma)
    parts = _known_partitions(ranks, shaped, col) if _noisy(sigma) else None
    known = parts
    for s in shaped:
        if s.by_time:
            _fallback(ranks, col, s.lu, tol, parts, sigma)
            continue
        if parts is None and _irregular(s.block):
            # without end noise lock-step channels' shapes agree by chance: blocks of two and three
            # pipelines' members, and fragments (the run's communicators, known from the rest, regroup them)
            if known is None:
                known = _known_partitions(ranks, shaped, col)
            got = _regroup(ranks, s, known, verify)
            if got is not None:
                s = _Shaped(s.lu, got, s.by_time)
        _emit_shaped(ranks, col, s, verify, parts, sigma)
    for lu in short:
        # device line-ups of an exact run are cut at its exact tolerance; host instances (gloo) at tol
        host = _host_side(pool, lu)
        _fallback(ranks, col, lu, tol if host else cut_tol, None if host else parts, sigma)
    g_step, g_kind, g_size, m_rank, m_inst = col.arrays()
    p = pool_of(ranks)
    taken = np.zeros(p.kind.size, bool)
    if m_rank.size:
        taken[p.at(m_rank, m_inst)] = True
    taken |= p.kind == SEND_RECV        # send/recv: only by links
    match_residue(ranks, col, taken, tol)
    return _flat(ranks, col)


def _hosts(ranks: Sequence[RankData], rows: np.ndarray) -> np.ndarray:
    return np.array([ranks[i].host for i in rows.tolist()], dtype=np.int64)


def _devices(ranks: Sequence[RankData], rows: np.ndarray) -> np.ndarray:
    return np.array([max(ranks[i].device_id, -1) + 1 for i in rows.tolist()], dtype=np.int64)


def _irregular(block: np.ndarray) -> bool:
    """A shaped line-up's blocks of two or more channels are not all of one size."""
    sizes = np.bincount(block)
    return np.unique(sizes[sizes > 1]).size > 1


REGROUP_MIN_AGREEMENT = 0.5   # pair-set Jaccard of a known partition with the shape's blocks
REGROUP_MIN_WITHIN = 0.99     # of its (block, position) pairs whose members end within the tolerance


def _regroup(ranks: Sequence[RankData], s: _Shaped, parts: List[np.ndarray], tol: float) -> Optional[np.ndarray]:
    """The known partition (prior.candidates of the run's communicators) that agrees best with a shaped
    line-up's irregular blocks (the Jaccard index of the channel pairs they put together, at least
    REGROUP_MIN_AGREEMENT) and whose groups end within tol at REGROUP_MIN_WITHIN of their positions; its
    labels per channel, or None."""
    lu, J = s.lu, s.block
    E = _gather(ranks, lu.rows, lu.inst, "cend")
    C, P = E.shape

    def pairs(lab):
        c = np.bincount(lab).astype(np.float64)
        return float((c * (c - 1) / 2).sum())

    pj = pairs(J)
    best, best_score = None, REGROUP_MIN_AGREEMENT
    for lab in candidates(parts):
        Q = _canon_labels(lab[lu.rows])
        nq = int(Q.max()) + 1
        if nq == C:
            continue
        both = pairs(_canon_labels(Q * (int(J.max()) + 1) + J))
        pq = pairs(Q)
        score = both / max(pj + pq - both, 1.0)
        if score <= best_score:
            continue
        order = np.argsort(Q, kind="stable")
        starts = np.concatenate([[0], np.flatnonzero(np.diff(Q[order])) + 1])
        sizes = np.diff(np.concatenate([starts, [C]]))
        Eo = E[order]
        spread = np.maximum.reduceat(Eo, starts, axis=0) - np.minimum.reduceat(Eo, starts, axis=0)
        multi = sizes > 1
        if multi.any() and (spread[multi] <= tol).mean() >= REGROUP_MIN_WITHIN:
            best, best_score = Q, score
    return best


def _canon_labels(lab: np.ndarray) -> np.ndarray:
    return np.unique(lab, return_inverse=True)[1].astype(np.int64).ravel()


def _noisy(sigma: float) -> bool:
    """End noise that widens the shape tolerance beyond MATCH_TOL_NS."""
    return T.SHAPE_NOISE_FACTOR * sigma > T.MATCH_TOL_NS


def _known_partitions(ranks: Sequence[RankData], shaped: List[_Shaped], col: Collector):
    """The groups of ranks the shapes and the send/recv pairs found so far (prior.rank_partitions)."""
    _, g_kind, g_size, m_rank, _ = col.arrays()
    first = np.concatenate([[0], np.cumsum(g_size)[:-1]]).astype(np.int64)
    pair = first[(g_kind == SEND_RECV) & (g_size == 2)]
    return rank_partitions(len(ranks), [(s.lu.rows, s.block) for s in shaped if not s.by_time],
                           (m_rank[pair], m_rank[pair + 1]))


def _flat(ranks: Sequence[RankData], col: Collector) -> Flat:
    """Groups ordered by step, then kind, then their first member's corrected end."""
    g_step, g_kind, g_size, m_rank, m_inst = col.arrays()
    p = pool_of(ranks)
    ptr = np.concatenate([[0], np.cumsum(g_size)]).astype(np.int64)
    if not g_size.size:
        return Flat(g_step, g_kind, ptr, m_rank, m_inst)
    first_end = p.end[p.base[m_rank[ptr[:-1]]] + m_inst[ptr[:-1]]] - _offsets(ranks)[m_rank[ptr[:-1]]]
    go = np.lexsort((first_end, g_kind, g_step))
    sizes = g_size[go]
    new_ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    idx = _ranges(ptr[:-1][go], sizes)
    return Flat(g_step[go], g_kind[go], new_ptr, m_rank[idx], m_inst[idx])


__all__ = ["match_run", "match_p2p", "shape_blocks", "SHAPE_MIN_POSITIONS"]
