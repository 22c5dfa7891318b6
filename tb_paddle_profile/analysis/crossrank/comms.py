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

from typing import Dict, List, Sequence, Tuple

import numpy as np

from . import clocks, thresholds as T
from .clocks import join
from .load import pool_of
from .match import (
    SEND_RECV,
    Collector,
    Flat,
    Lineup,
    _emit,
    _gather,
    _leaders,
    _offsets,
    _persist,
    _ranges,
    build_lineups,
    cut_columns,
    match_residue,
)
from .model import RankData
from .align import align_components, components
from .clock_edges import clock_edges, group_hosts
from .p2p import P2P_CLOCK_MIN_WINDOW_NS, P2P_CLOCK_WIDE_WINDOW_NS, P2P_CLOCK_WINDOW_FACTOR, match_p2p, p2p_host_edges
from .prior import irregular, rank_partitions, regroup, split_by_prior
from .shapes import EXACT_END_NS, SHAPE_MIN_POSITIONS, SHAPE_NOISY_MIN_POSITIONS, Shaped, measure_noise, shape_blocks


def _has_hosts(ranks: Sequence[RankData]) -> bool:
    return all(r.hostname for r in ranks)


def _emit_shaped(ranks: Sequence[RankData], col: Collector, s: Shaped, tol: float, parts=None, sigma: float = 0.0):
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
        split = split_by_prior(
            L,
            _gather(ranks, lu.rows, lu.inst, "cend"),
            lu.rows,
            parts,
            sigma,
            _hosts(ranks, lu.rows),
            _devices(ranks, lu.rows),
        )
        if split is not L:
            block = np.unique(split[:, 0], return_inverse=True)[1].ravel()
    order = np.lexsort((lu.rows, block))
    bs = block[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(bs)) + 1])
    sizes = np.diff(np.concatenate([starts, [C]]))
    B = starts.size
    Ec = _gather(ranks, lu.rows[order], lu.inst[order], "cend")
    spread = np.maximum.reduceat(Ec, starts, axis=0) - np.minimum.reduceat(Ec, starts, axis=0)  # B × P
    ok = (spread <= tol).T.ravel()  # position-major, block within
    g_size = np.tile(sizes, P)
    g_step = np.repeat(lu.steps, B)
    g_kind = np.repeat(lu.kinds, B)
    m_rank = np.tile(lu.rows[order], P)
    m_inst = lu.inst[order].T.ravel()
    m_ok = np.repeat(ok, g_size)
    col.add(g_step[ok], g_kind[ok], g_size[ok], m_rank[m_ok], m_inst[m_ok])


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
    shape_tol = min(T.SHAPE_WIDE_TOL_NS, max(T.EXACT_TOL_NS if exact else T.MATCH_TOL_NS, T.SHAPE_NOISE_FACTOR * sigma))
    tol = max(T.MATCH_TOL_NS, T.P2P_NOISE_FACTOR * sigma)
    cut_tol = T.EXACT_TOL_NS if exact else tol
    verify = max(T.MATCH_VERIFY_NS, T.VERIFY_NOISE_FACTOR * sigma)
    if tol > T.MATCH_TOL_NS:
        notes.append(
            f"The members of one collective end {{ns:{int(round(sigma))}}} apart (end noise, sigma, "
            f"measured on the communicators): instances are matched within {{ns:{int(round(verify))}}}, "
            f"send/recv within {{ns:{int(round(tol))}}}."
        )
    shaped: List[Shaped] = []
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
        shaped.append(Shaped(lu, block, by_time))

    # ---- clocks
    hosts_known = _has_hosts(ranks)
    n = len(ranks)
    if hosts_known:
        node_of = np.array([r.host for r in ranks], dtype=np.int64)
    else:
        node_of = np.arange(n, dtype=np.int64)
    n_nodes = int(node_of.max()) + 1 if n else 0
    edges = clock_edges(ranks, shaped, node_of, noisy, exact, sigma if noisy else 0.0)
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
        p2p = p2p_host_edges(ranks, node_of, off, window, sigma)
        if p2p:
            for k2 in p2p:
                edges.pop((k2[1], k2[0]), None)
            edges.update(p2p)
            off, spread, samples, reached = join(n_nodes, edges, robust=True)
        # a host no send/recv pair reached within that window (its first offset more than the window
        # off: a wrong block's edge the outvote could not settle) takes its pairs' edges from a wide one
        linked = {h for k2 in p2p for h in k2}
        p2p_pairs = list(p2p)
        if len(linked) < n_nodes:
            wide_p2p = p2p_host_edges(ranks, node_of, off, P2P_CLOCK_WIDE_WINDOW_NS, sigma)
            fresh = {k2: e2 for k2, e2 in wide_p2p.items() if k2[0] not in linked or k2[1] not in linked}
            if fresh:
                for k2 in fresh:
                    edges.pop((k2[1], k2[0]), None)
                edges.update(fresh)
                off, spread, samples, reached = join(n_nodes, edges, robust=True)
                p2p_pairs += list(fresh)
        # the hosts that send/recv ties together, each such group placed where its collectives co-end
        # most with the groups placed before it (align.py: lock-step replicas' blocks leave a replica a
        # stage's time off)
        ends = [(_gather(ranks, sh.lu.rows, sh.lu.inst, "end"), node_of[sh.lu.rows]) for sh in shaped]
        off, _ = align_components(ends, off, components(n_nodes, p2p_pairs), tol)
    # (two ranks: a line-up of two channels is one group at every position, whatever its times, so
    # matched groups tell nothing of the clocks)
    if not hosts_known and n > 2 and not all(reached):
        off, spread, samples, reached = _refine_rank_clocks(
            ranks, shaped, short, (off, spread, samples, reached), (tol, verify, sigma, cut_tol)
        )
    clock_rows = []
    n_h = 0
    if not hosts_known:
        if pool.kind.size:
            if exact:
                sp_ok = [float(x) for x, ok in zip(spread, reached) if ok]
                gap = max(T.EXACT_HOST_GAP_NS, T.HOST_GAP_SPREAD_FACTOR * float(np.median(sp_ok)) if sp_ok else 0.0)
            else:
                gap = max(T.CLOCK_HOST_GAP_NS, T.HOST_GAP_NOISE_FACTOR * sigma)
            host = group_hosts(off, reached, gap)
        else:  # no collective instance at all (Paddle on CPU/gloo): nothing tells clocks apart, one clock
            host = np.zeros(n, dtype=np.int64)
        n_h = int(host.max()) + 1 if n else 0
        h_off, h_spread, h_samples, h_reached = _host_clocks(
            ranks, shaped, host, n_h, (off, spread, samples, reached), noisy
        )
        ref = h_off[int(host[0])] if n else 0
        for r in ranks:
            r.host = int(host[r.index])
            r.offset_ns = h_off[r.host] - ref
        pool.host[:] = host
        for h in range(n_h):
            idx = np.flatnonzero(host == h).tolist()
            clock_rows.append(("", h_off[h] - ref, h_spread[h], h_samples[h], idx, h == int(host[0])))
        if n_h > 1:
            notes.append(
                f"The worker names tell no hosts: {n_h} clocks told apart by the collectives' end times "
                "(ranks whose offsets agree share a host)."
            )
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
        what = [
            clock_rows[h][0] or f"of ranks {[ranks[i].rank for i in clock_rows[h][4]][:4]}"
            for h in lost
            if h < len(clock_rows)
        ]
        notes.append(
            f"No collective links host(s) {', '.join(what[:8])}{', …' if len(what) > 8 else ''} to the "
            "others: their clocks are not corrected."
        )

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


def _host_clocks(ranks: Sequence[RankData], shaped: List[Shaped], host: np.ndarray, n_h: int, clocks_, noisy: bool):
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
        ho, hs, hn, hr = join(n_h, clock_edges(ranks, shaped, host, noisy))
        ref = int(host[0])
        for h in range(n_h):
            if hr[h] and h != ref:
                h_off[h], h_spread[h], h_samples[h] = h_off[ref] + int(ho[h]), int(hs[h]), int(hn[h])
    return h_off, h_spread, h_samples, h_reached


def _refine_rank_clocks(ranks: Sequence[RankData], shaped: List[Shaped], short: List[Lineup], clocks_, tols):
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


def _instances(
    ranks: Sequence[RankData],
    shaped: List[Shaped],
    short: List[Lineup],
    tol: float,
    verify: float,
    sigma: float,
    cut_tol: float,
) -> Flat:
    col = Collector()
    pool = pool_of(ranks)
    match_p2p(ranks, col, tol, sigma)
    parts = _known_partitions(ranks, shaped, col) if _noisy(sigma) else None
    known = parts
    for s in shaped:
        if s.by_time:
            _fallback(ranks, col, s.lu, tol, parts, sigma)
            continue
        if parts is None and irregular(s.block):
            # without end noise lock-step channels' shapes agree by chance: blocks of two and three
            # pipelines' members, and fragments (the run's communicators, known from the rest, regroup them)
            if known is None:
                known = _known_partitions(ranks, shaped, col)
            got = regroup(ranks, s, known, verify)
            if got is not None:
                s = Shaped(s.lu, got, s.by_time)
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
    taken |= p.kind == SEND_RECV  # send/recv: only by links
    match_residue(ranks, col, taken, tol)
    return _flat(ranks, col)


def _hosts(ranks: Sequence[RankData], rows: np.ndarray) -> np.ndarray:
    return np.array([ranks[i].host for i in rows.tolist()], dtype=np.int64)


def _devices(ranks: Sequence[RankData], rows: np.ndarray) -> np.ndarray:
    return np.array([max(ranks[i].device_id, -1) + 1 for i in rows.tolist()], dtype=np.int64)


def _noisy(sigma: float) -> bool:
    """End noise that widens the shape tolerance beyond MATCH_TOL_NS."""
    return T.SHAPE_NOISE_FACTOR * sigma > T.MATCH_TOL_NS


def _known_partitions(ranks: Sequence[RankData], shaped: List[Shaped], col: Collector):
    """The groups of ranks the shapes and the send/recv pairs found so far (prior.rank_partitions)."""
    _, g_kind, g_size, m_rank, _ = col.arrays()
    first = np.concatenate([[0], np.cumsum(g_size)[:-1]]).astype(np.int64)
    pair = first[(g_kind == SEND_RECV) & (g_size == 2)]
    return rank_partitions(
        len(ranks), [(s.lu.rows, s.block) for s in shaped if not s.by_time], (m_rank[pair], m_rank[pair + 1])
    )


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
