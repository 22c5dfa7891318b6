"""The parts of the matching that comms.py (communicators, then instances by their order) builds on.

Paddle traces carry no communicator ids. What they do carry, and what this holds:

* **Channels and line-ups** (build_lineups). On one rank, the instances of one device stream and one
  issuing operator (host instances: stream -1) form a channel: one communicator's traffic in
  practice. Its *signature* is the sequence of (step, kind) of its instances. Channels of different
  ranks with the same signature (and, for collectives, the same operator name) are lined up: the j-th
  instance of each is one position. Ranks that run different programs (pipeline stages) still line up
  on the channel they share (the clip all-reduce, the loss broadcast). All send/recv channels with
  the same signature form one line-up, sends and receives together.
* **Cuts by end time** (cut_columns, _persist, joined_blocks). At each position the members are
  sorted by their end and cut where neighbours are further apart than END_GAP_FACTOR × the typical
  distance to the nearest other end (and a floor). A communicator's member set recurs at every
  position: the meet of all positions' partitions, its blocks joined again where together at most
  positions, splits positions where two groups happened to end together.
* **Residue** (match_residue). Instances no line-up matched (a rank missing a step, a channel shared
  by several communicators) are pooled by (step, kind) over all ranks and cut by end time the same way.
* **Matched groups as columns** (Flat, Collector, member_values) and the split of groups that are a
  union of whole pipelines (split_pipeline_unions).

Everything is sorting and hashing: O(N log N) in the number of instances.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...v1 import summary_pb2 as pb
from . import thresholds as T
from .load import pool_of
from .model import Group, RankData

SEND_RECV = pb.COLLECTIVE_KIND_SEND_RECV
SEND, RECV = pb.P2P_DIRECTION_SEND, pb.P2P_DIRECTION_RECV


@dataclass
class Lineup:
    p2p: bool
    rows: np.ndarray  # C: RankData.index of each channel
    inst: np.ndarray  # C × P: instance index per channel and position
    steps: np.ndarray  # P
    kinds: np.ndarray  # P


def build_lineups(ranks: Sequence[RankData]) -> List[Lineup]:
    """Line-ups of every rank's channels (a rank's instances of one stream, issuing operator and
    send/recv flag, in launch order), rank by rank."""
    p = pool_of(ranks)
    if not p.kind.size:
        return []
    p2p = (p.kind == SEND_RECV).astype(np.int64)
    order = np.lexsort((p2p, p.op, p.stream, p.rank_of))  # stable: launch order within a channel
    rk, st, op, pp = p.rank_of[order], p.stream[order], p.op[order], p2p[order]
    new = np.concatenate(
        [[True], (rk[1:] != rk[:-1]) | (st[1:] != st[:-1]) | (op[1:] != op[:-1]) | (pp[1:] != pp[:-1])]
    )
    starts = np.nonzero(new)[0]
    ends = np.concatenate([starts[1:], [order.size]])
    kinds, steps = p.kind[order], p.step[order]
    inst = order - p.base[rk]
    # a channel's signature: (send/recv, its operator's name unless send/recv, its (kind, step) sequence);
    # the channels of one length side by side, their distinct rows found by sorting
    c_rank, c_op, c_p2p = rk[starts], op[starts], pp[starts]
    length = ends - starts
    name_id = np.where(c_p2p == 1, -1, global_names(ranks)[0](c_rank, c_op))
    cls = np.empty(starts.size, dtype=np.int64)
    n_cls = 0
    for L in np.unique(length).tolist():
        ch = np.flatnonzero(length == L)
        at = starts[ch][:, None] + np.arange(L)[None, :]
        M = np.hstack([c_p2p[ch][:, None], name_id[ch][:, None], kinds[at], steps[at]])
        ids = _row_ids(M)
        cls[ch] = ids + n_cls
        n_cls += int(ids.max()) + 1
    # classes in the order of their first channel, channels in order within each
    by = np.argsort(cls, kind="stable")
    cut = np.concatenate([[0], np.flatnonzero(np.diff(cls[by])) + 1, [by.size]])
    groups = [by[cut[i] : cut[i + 1]] for i in range(cut.size - 1)]
    groups.sort(key=lambda g: int(g[0]))
    out = []
    for ch in groups:
        if ch.size < 2:
            continue
        a0, L = int(starts[ch[0]]), int(length[ch[0]])
        cols = starts[ch][:, None] + np.arange(L)[None, :]
        out.append(Lineup(bool(c_p2p[ch[0]]), c_rank[ch], inst[cols], steps[a0 : a0 + L], kinds[a0 : a0 + L]))
    return out


def global_names(ranks: Sequence[RankData]):
    """(f, names): f(rank indexes, indexes into their RankData.names) gives one id per distinct
    string over all ranks' names (an index past a rank's names reads its last one), names[id] the
    string."""
    names: Dict[str, int] = {}
    local: Dict[tuple, np.ndarray] = {}
    parts, base = [], np.zeros(len(ranks) + 1, dtype=np.int64)
    for i, r in enumerate(ranks):
        key = tuple(r.names)
        got = local.get(key)
        if got is None:
            got = local[key] = np.array([names.setdefault(x, len(names)) for x in key], dtype=np.int64)
        parts.append(got)
        base[i + 1] = base[i] + got.size
    lut = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    size = np.diff(base)
    return (lambda rows, idx: lut[base[rows] + np.clip(idx, 0, size[rows] - 1)]), list(names)


def _gather(ranks: Sequence[RankData], rows: np.ndarray, inst: np.ndarray, what: str) -> np.ndarray:
    p = pool_of(ranks)
    at = p.base[rows][:, None] + inst
    if what == "cend":
        return p.end[at] - _offsets(ranks)[rows][:, None]
    if what == "end":
        return p.end[at]
    return p.direction[at]


def _offsets(ranks: Sequence[RankData]) -> np.ndarray:
    """Each rank's applied clock offset, by rank index."""
    return np.fromiter((r.offset_ns for r in ranks), dtype=np.int64, count=len(ranks))


def cut_columns(E: np.ndarray, floor_ns: float) -> Tuple[np.ndarray, np.ndarray]:
    """Cluster each column of E (members × positions, end times) by gaps; returns (order, cluster id
    in sorted order), both members × positions. A gap is cut beyond END_GAP_FACTOR × the column's
    typical distance to the nearest other end, and beyond floor_ns."""
    C, P = E.shape
    order = np.argsort(E, axis=0, kind="stable")
    Es = np.take_along_axis(E, order, 0)
    gaps = np.diff(Es, axis=0)
    left = np.vstack([gaps[:1], gaps])
    right = np.vstack([gaps, gaps[-1:]])
    nearest = np.minimum(left, right)
    tol = np.maximum(floor_ns, T.END_GAP_FACTOR * np.median(nearest, axis=0))
    cut = gaps > tol[None, :]
    cid = np.vstack([np.zeros((1, P), dtype=np.int64), np.cumsum(cut, axis=0)])
    return order, cid


def _leaders(order: np.ndarray, cid: np.ndarray) -> np.ndarray:
    """Per member and position, the smallest member (row) of its cluster: a canonical partition."""
    C, P = order.shape
    flat = (cid + np.arange(P)[None, :] * C).ravel()
    lead = np.full(C * P, C, dtype=np.int64)
    np.minimum.at(lead, flat, order.ravel())
    L = np.empty((C, P), dtype=np.int64)
    np.put_along_axis(L, order, lead[flat].reshape(C, P), 0)
    return L


def _persist(L: np.ndarray) -> np.ndarray:
    """Per position, the partition of the channels into groups, using that a communicator's members
    end together at every position while two groups end together only by coincidence.

    The meet of all positions' partitions separates every two channels that were apart somewhere;
    blocks of it that were together at ≥ PERSIST_SHARE of the positions (a position's cut split a
    true group) are joined again. Each position then keeps the meet of its own partition and that
    one: coincidental merges are split, and a position of another communicator (a channel shared
    by two) keeps its own groups."""
    C, P = L.shape
    if P < 2:
        return L
    block, nb = joined_blocks(L)
    # per position, the ids (in sorted order) of the distinct (leader, block): all positions at once
    width = (C + 1) * (nb + 1)
    v = (L * (nb + 1) + block[:, None]) + np.arange(P, dtype=np.int64)[None, :] * width
    uniq, inv = np.unique(v.ravel(), return_inverse=True)
    first = np.searchsorted(uniq, np.arange(P, dtype=np.int64) * width)
    return (inv.reshape(C, P) - first[None, :]).astype(L.dtype)


def joined_blocks(L: np.ndarray, share: Optional[float] = None):
    """(block per channel, block count): the meet of all positions' partitions (L: per channel and
    position, a canonical cluster id), its blocks joined again where they were together at ≥ share
    (PERSIST_SHARE) of the positions."""
    C, P = L.shape
    share = PERSIST_SHARE if share is None else share
    block = _row_ids(L)
    nb = int(block.max()) + 1
    if nb > 1:
        # co-clustering counts of block pairs, over clusters holding a few blocks
        key = np.arange(P)[None, :] * C + L  # cluster id, unique over positions
        pair = np.unique(key.ravel() * nb + np.repeat(block, P))  # (cluster, block), sorted
        trip = np.stack([pair // nb, pair % nb], axis=1)
        starts = np.concatenate([[0], np.nonzero(np.diff(trip[:, 0]))[0] + 1, [trip.shape[0]]])
        sizes = np.diff(starts)
        pairs, counts = _block_pairs(trip[:, 1], starts, sizes, nb)
        parent = list(range(nb))

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for (x, y), c in zip(pairs, counts):
            if c >= share * P:
                parent[find(x)] = find(y)
        block = np.array([find(x) for x in range(nb)], dtype=np.int64)[block]
    return block, nb


def _block_pairs(blocks: np.ndarray, starts: np.ndarray, sizes: np.ndarray, nb: int):
    """Per pair of blocks x < y found together in a cluster of 2..PERSIST_MAX_BLOCKS blocks (the
    clusters' sorted blocks are blocks[starts[i]:starts[i]+sizes[i]]), the number of such clusters:
    ([(x, y), ...], [count, ...]) in the order of their first cluster (then x, then y)."""
    sel = np.flatnonzero((sizes > 1) & (sizes <= PERSIST_MAX_BLOCKS))
    if not sel.size:
        return [], []
    cl, rk, keys = [], [], []
    for k in np.unique(sizes[sel]).tolist():
        cs = sel[sizes[sel] == k]
        iu, ju = np.triu_indices(k, 1)  # (0,1), (0,2), ..., (1,2), ...: x before y
        at = starts[cs][:, None]
        keys.append((blocks[at + iu[None, :]] * nb + blocks[at + ju[None, :]]).ravel())
        cl.append(np.repeat(cs, iu.size))
        rk.append(np.tile(np.arange(iu.size), cs.size))
    order = np.lexsort((np.concatenate(rk), np.concatenate(cl)))
    key = np.concatenate(keys)[order]
    uniq, first, count = np.unique(key, return_index=True, return_counts=True)
    o = np.argsort(first, kind="stable")
    uniq = uniq[o]
    return list(zip((uniq // nb).tolist(), (uniq % nb).tolist())), count[o].tolist()


def _row_ids(M: np.ndarray) -> np.ndarray:
    """np.unique(M, axis=0, return_inverse=True)[1]: each row's rank among the distinct rows, in
    lexicographic order."""
    order = np.lexsort(M.T[::-1])
    Ms = M[order]
    new = np.concatenate([[False], (Ms[1:] != Ms[:-1]).any(axis=1)])
    out = np.empty(M.shape[0], dtype=np.int64)
    out[order] = np.cumsum(new)
    return out


PERSIST_SHARE = 0.75
PERSIST_MAX_BLOCKS = 16


class Collector:
    """Groups as flat columns: members sorted by group, then by rank index."""

    def __init__(self):
        self.g_step: List[np.ndarray] = []
        self.g_kind: List[np.ndarray] = []
        self.g_size: List[np.ndarray] = []
        self.m_rank: List[np.ndarray] = []
        self.m_inst: List[np.ndarray] = []

    def add(self, steps, kinds, sizes, m_rank, m_inst):
        if len(sizes):
            self.g_step.append(np.asarray(steps, dtype=np.int64))
            self.g_kind.append(np.asarray(kinds, dtype=np.int64))
            self.g_size.append(np.asarray(sizes, dtype=np.int64))
            self.m_rank.append(np.asarray(m_rank, dtype=np.int64))
            self.m_inst.append(np.asarray(m_inst, dtype=np.int64))

    def arrays(self):
        cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.int64)  # noqa: E731
        return (cat(self.g_step), cat(self.g_kind), cat(self.g_size), cat(self.m_rank), cat(self.m_inst))


def _emit(col: Collector, L: np.ndarray, lu: Lineup):
    """Clusters of ≥ 2 members (L: per channel and position, a canonical cluster id) → groups."""
    C, P = L.shape
    key = L + np.arange(P)[None, :] * C  # cluster id unique over positions
    flat = key.T.ravel()  # position-major
    rows_flat = np.tile(np.arange(C), P)
    order = np.lexsort((lu.rows[rows_flat], flat))
    fk = flat[order]
    starts = np.concatenate([[0], np.nonzero(np.diff(fk))[0] + 1])
    sizes = np.diff(np.concatenate([starts, [fk.size]]))
    pos = fk[starts] // C
    keep = sizes >= 2
    if not keep.any():
        return
    g_starts, g_sizes, g_pos = starts[keep], sizes[keep], pos[keep]
    idx = _ranges(g_starts, g_sizes)
    mem = order[idx]
    m_row = mem % C
    m_pos = mem // C
    col.add(lu.steps[g_pos], lu.kinds[g_pos], g_sizes, lu.rows[m_row], lu.inst[m_row, m_pos])


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated aranges [s, s+n) for each (s, n)."""
    total = int(sizes.sum())
    out = np.ones(total, dtype=np.int64)
    ends = np.cumsum(sizes)
    out[0] = starts[0]
    if sizes.size > 1:
        out[ends[:-1]] = starts[1:] - (starts[:-1] + sizes[:-1] - 1)
    return np.cumsum(out)


def match_residue(ranks: Sequence[RankData], col: Collector, taken: np.ndarray, floor_ns: float):
    """Instances no line-up matched (``taken``: per pool position): pooled by (step, kind) over all
    ranks, cut by end time."""
    p = pool_of(ranks)
    free = np.nonzero(~taken)[0]
    if not free.size:
        return
    rk = p.rank_of[free]
    ins = free - p.base[rk]
    st, kd, dr = p.step[free], p.kind[free], p.direction[free]
    en = p.end[free] - _offsets(ranks)[rk]
    du = p.end[free] - p.start[free]
    order = np.lexsort((en, kd, st))
    rk, ins, st, kd, en, dr, du = (x[order] for x in (rk, ins, st, kd, en, dr, du))
    pool = np.concatenate([[True], (np.diff(st) != 0) | (np.diff(kd) != 0)])
    gaps = np.diff(en)
    # the typical distance to the nearest other end, per pool
    pid = np.cumsum(pool) - 1
    n = en.size
    left = np.concatenate([[np.inf], gaps.astype(float)])
    right = np.concatenate([gaps.astype(float), [np.inf]])
    left[pool] = np.inf
    right[np.concatenate([pool[1:], [True]])] = np.inf
    nearest = np.minimum(left, right)
    p2p = kd == SEND_RECV
    tol_p2p = np.maximum(T.END_TOLERANCE_NS, T.END_TOLERANCE_FRACTION * du)
    med = np.zeros(pid[-1] + 1)
    fin = np.isfinite(nearest)
    if fin.any():
        srt = np.lexsort((nearest[fin], pid[fin]))
        pf, nf = pid[fin][srt], nearest[fin][srt]
        b = np.concatenate([[0], np.nonzero(np.diff(pf))[0] + 1, [pf.size]])
        for i in range(b.size - 1):
            med[pf[b[i]]] = nf[(b[i] + b[i + 1]) // 2]
    tol = np.maximum(floor_ns, T.END_GAP_FACTOR * med[pid])
    thr = np.where(p2p, np.maximum(tol_p2p, floor_ns), tol)
    cut = np.concatenate([[True], pool[1:] | (gaps > thr[1:])])
    cstart = np.nonzero(cut)[0]
    csize = np.diff(np.concatenate([cstart, [n]]))
    steps, kinds, sizes, mr, mi = [], [], [], [], []
    for s, k in zip(cstart.tolist(), csize.tolist()):
        if k < 2:
            continue
        rr = rk[s : s + k]
        if np.unique(rr).size != k:
            continue
        if p2p[s]:
            if k != 2 or (dr[s] and dr[s] == dr[s + 1]):
                continue
        o = np.argsort(rr, kind="stable")
        steps.append(st[s])
        kinds.append(kd[s])
        sizes.append(k)
        mr.extend(rr[o].tolist())
        mi.extend(ins[s : s + k][o].tolist())
    col.add(steps, kinds, sizes, mr, mi)


@dataclass
class Flat:
    """Every matched group as columns; members of group g are m_*[ptr[g]:ptr[g+1]], by rank index."""

    g_step: np.ndarray
    g_kind: np.ndarray
    ptr: np.ndarray
    m_rank: np.ndarray
    m_inst: np.ndarray

    @property
    def n(self) -> int:
        return self.g_step.size

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.ptr)

    @property
    def m_group(self) -> np.ndarray:
        return np.repeat(np.arange(self.n), self.sizes)

    def group(self, i: int) -> Group:
        a, b = int(self.ptr[i]), int(self.ptr[i + 1])
        return Group(
            step=int(self.g_step[i]),
            kind=int(self.g_kind[i]),
            ranks=self.m_rank[a:b].copy(),
            insts=self.m_inst[a:b].copy(),
        )


def member_values(ranks: Sequence[RankData], flat: Flat, what: str) -> np.ndarray:
    """A per-instance column of each member: 'dur', 'cend', 'end', 'start', 'dir', 'ordinal', 'host'."""
    p = pool_of(ranks)
    if what == "host":
        return p.host[flat.m_rank]
    at = p.base[flat.m_rank] + flat.m_inst
    if what == "dur":
        return p.end[at] - p.start[at]
    if what == "cend":
        return p.end[at] - _offsets(ranks)[flat.m_rank]
    col = {"end": p.end, "start": p.start, "dir": p.direction, "ordinal": p.ordinal}[what]
    return col[at]


def _unions_disagree(uk: np.ndarray, split: np.ndarray, n_chains: int) -> np.ndarray:
    """Per group, whether it is a union of pipelines (uk: group * (n_chains + 1) + pipeline of each
    (group, pipeline) touched; split: the union groups) that joins its pipelines only by accident:
    for each of them the unions holding it have that pipeline alone in common (one collective merges
    it with its data-parallel replicas, another with its tensor-parallel partners). A communicator
    over several pipelines (Paddle's check group: a replica's model and pipeline ranks) holds the same
    pipelines at every instance and is left whole."""
    grp, pipe = uk // (n_chains + 1), uk % (n_chains + 1)
    sel = split[grp]
    sets: Dict[int, set] = {}
    for gi, c in zip(grp[sel].tolist(), pipe[sel].tolist()):
        sets.setdefault(gi, set()).add(c)
    common: Dict[int, set] = {}
    for members in {frozenset(v) for v in sets.values()}:
        for c in members:
            common[c] = common[c] & members if c in common else set(members)
    out = np.zeros(split.size, dtype=bool)
    for gi, pipes in sets.items():
        out[gi] = all(common[c] == {c} for c in pipes)
    return out


def split_pipeline_unions(flat: Flat, chains: List[List[int]]) -> Flat:
    """Groups across stages that are exactly a union of two or more pipelines (the loss broadcasts
    or clip all-reduces of pipelines running in lock-step, e.g. tensor-parallel partners', end
    together) are split into one group per pipeline, provided some collective elsewhere has exactly
    one pipeline's members (the run has pipeline-group collectives), or the unions disagree: each
    pipeline's unions have that pipeline alone in common (_unions_disagree)."""
    if flat.n == 0 or len(chains) < 2:
        return flat
    n_ranks = int(flat.m_rank.max()) + 1
    ch = np.full(max(n_ranks, max(max(c) for c in chains) + 1), -1, dtype=np.int64)
    for ci, c in enumerate(chains):
        ch[c] = ci
    clen = np.array([len(c) for c in chains], dtype=np.int64)
    sizes = flat.sizes
    coll = flat.g_kind != SEND_RECV
    mc = ch[flat.m_rank]
    lo = np.minimum.reduceat(mc, flat.ptr[:-1])
    hi = np.maximum.reduceat(mc, flat.ptr[:-1])
    # some collective holds exactly one pipeline's ranks
    single = bool((coll & (lo == hi) & (lo >= 0) & (sizes == clen[np.maximum(lo, 0)])).any())
    g = flat.m_group
    cand = coll & (sizes >= 4) & (lo != hi) & (lo >= 0)
    if not cand.any():
        return flat
    # a candidate holds every member of each pipeline it touches
    key = g * (len(chains) + 1) + np.maximum(mc, 0)
    uk, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    whole = cnt[inv.ravel()] == clen[np.maximum(mc, 0)]
    whole_g = np.minimum.reduceat(whole.astype(np.int64), flat.ptr[:-1]).astype(bool)
    split = cand & whole_g
    if split.any() and not single:
        split &= _unions_disagree(uk, split, len(chains))
    if not split.any():
        return flat
    part = np.where(split[g], mc, -1)
    order = np.lexsort((part, g))  # stable: members stay in rank order within a part
    gs, ps = g[order], part[order]
    new = np.concatenate([[True], (gs[1:] != gs[:-1]) | (ps[1:] != ps[:-1])])
    starts = np.nonzero(new)[0]
    new_sizes = np.diff(np.concatenate([starts, [gs.size]]))
    src = gs[starts]
    return Flat(
        flat.g_step[src],
        flat.g_kind[src],
        np.concatenate([[0], np.cumsum(new_sizes)]).astype(np.int64),
        flat.m_rank[order],
        flat.m_inst[order],
    )
