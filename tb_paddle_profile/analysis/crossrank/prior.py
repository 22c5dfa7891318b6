"""The communicators a run already shows, as the prior for collectives too rare for a shape.

A collective issued once or twice a step (the pipeline group's gradient-norm all-reduce, a loss
broadcast, a data-parallel all-reduce of one fused bucket) has too few positions for a shape
(comms.py), so under end noise its line-up is cut by corrected end time, and lock-step replicas end
their instances within the noise of each other: the cut joins two or more of them into one. Without
noise, lock-step replicas' identical increments put their instances in one shape block the same way.

The rest of the run tells which groups of ranks communicate: the blocks of the line-ups matched by
their shape (tensor-parallel and data-parallel groups, one partition of the ranks each) and the
send/recv links (their components are the pipelines). A rare collective's communicator is one of
those partitions or a join of two or all of them (a replica: the tensor-parallel groups joined by the
pipelines; a stage: the tensor- and data-parallel groups), and the cut's blocks split by host (a
tensor-parallel group lives on one host's NVLink; lock-step replicas' groups on different hosts
agree in their shapes) and by local GPU (Fleet's layout gives a stage's data-parallel group the same
GPU of each host, its lock-step tensor-parallel partners' groups the neighbouring ones). When none of them fits, one more
candidate comes from the ends themselves: the members of one instance agree within the noise at every position, while two lock-step
instances that a cut joined drift apart at some (channels linked when the sum over positions of their
squared end difference over 2 sigma^2 is below the chi-square quantile; the links' components, within
each of the cut's blocks). Of the candidates that refine the time
cut's blocks (they only split what the cut joined), the coarsest whose instances spread no more
than the end noise allows (pooled standard deviation of the members' corrected ends within
PRIOR_NOISE_FACTOR x sigma + PRIOR_FLOOR_NS) and no more than the tightest such candidate's beyond
chance (their variance ratio within PRIOR_Z standard errors: a refinement of the true communicator
spreads as the noise does, a join of two lock-step instances more; the tightest candidate is the
measure of the noise) is taken, and each position's
clusters are split along it. When the time cut's own clusters are within the noise it stays as it is.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from .match import _gather, joined_blocks
from .model import RankData
from .shapes import Shaped

PRIOR_NOISE_FACTOR = 1.5
PRIOR_FLOOR_NS = 500.0
PRIOR_Z = 3.0  # how far a coarser candidate's variance may exceed the finest's, in standard errors
PRIOR_MIN_DOF = 12  # the tightest candidate's spread is a measure of the noise only with this many
PRIOR_PAIR_Z = 3.72  # two channels of one instance disagree beyond this quantile once in 10,000 pairs
PRIOR_MAX_PAIRWISE = 1024  # channels of one block compared pairwise, at most
PRIOR_MAX_BASES = 8  # distinct base partitions taken (their pairwise joins grow as the square)


def _canon(labels: np.ndarray) -> np.ndarray:
    return np.unique(labels, return_inverse=True)[1].astype(np.int64).ravel()


def rank_partitions(
    n: int, blocks: Sequence[Tuple[np.ndarray, np.ndarray]], pairs: Tuple[np.ndarray, np.ndarray]
) -> List[np.ndarray]:
    """Distinct partitions of the n ranks (a label per rank; a rank no group holds is alone): one per
    shaped line-up (rows, block), and the send/recv links' components (pairs: rank arrays a, b)."""
    seen, out = set(), []

    def add(lab: np.ndarray) -> None:
        c = _canon(lab)
        if c.max() + 1 < n and c.tobytes() not in seen:  # some rank is with another
            seen.add(c.tobytes())
            out.append(c)

    for rows, block in blocks:
        lab = np.arange(n, dtype=np.int64) + int(block.max()) + 1
        lab[rows] = block
        add(lab)
    a, b = pairs
    if len(a):
        lab = np.arange(n, dtype=np.int64)
        while True:  # components: each rank takes the smallest label of its links until none changes
            m = np.minimum(lab[a], lab[b])
            new = lab.copy()
            np.minimum.at(new, a, m)
            np.minimum.at(new, b, m)
            new = new[new]
            if np.array_equal(new, lab):
                break
            lab = new
        add(lab)
    return out[:PRIOR_MAX_BASES]


def _join(parts: Sequence[np.ndarray]) -> np.ndarray:
    """The finest partition coarser than every one of parts (labels per rank)."""
    n = parts[0].size
    lab = np.arange(n, dtype=np.int64)
    while True:
        prev = lab
        for p in parts:
            m = np.full(int(p.max()) + 1, n, dtype=np.int64)
            np.minimum.at(m, p, lab)
            lab = m[p]
        if np.array_equal(lab, prev):
            return _canon(lab)


def candidates(parts: List[np.ndarray]) -> List[np.ndarray]:
    """The base partitions, their pairwise joins and the join of all, without repeats."""
    seen, out = set(), []
    combos = [[p] for p in parts] + [[p, q] for i, p in enumerate(parts) for q in parts[i + 1 :]]
    if len(parts) > 2:
        combos.append(list(parts))
    for c in combos:
        lab = c[0] if len(c) == 1 else _join(c)
        if lab.tobytes() not in seen:
            seen.add(lab.tobytes())
            out.append(lab)
    return out


def meet(L: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Per position, the clusters of L (canonical leaders, channels × positions) split along Q (a
    label per channel), as canonical leaders again."""
    C, P = L.shape
    key = L * (int(Q.max()) + 1) + Q[:, None]
    out = np.empty_like(L)
    rows = np.arange(C, dtype=np.int64)
    for p in range(P):
        u, inv = np.unique(key[:, p], return_inverse=True)
        lead = np.full(u.size, C, dtype=np.int64)
        np.minimum.at(lead, inv, rows)
        out[:, p] = lead[inv]
    return out


def spread(M: np.ndarray, E: np.ndarray) -> Tuple[Optional[float], int]:
    """(pooled standard deviation of E, corrected ends, within the clusters of M of ≥ 2 members; its
    degrees of freedom)."""
    C, P = M.shape
    key = (M + np.arange(P, dtype=np.int64)[None, :] * C).ravel()
    e = E.astype(np.float64).ravel()
    cnt = np.bincount(key, minlength=C * P)
    mean = np.bincount(key, weights=e, minlength=C * P) / np.maximum(cnt, 1)
    dof = int(np.maximum(cnt - 1, 0).sum())
    if not dof:
        return None, 0
    dev = e - mean[key]
    return float(np.sqrt(np.dot(dev, dev) / dof)), dof


def _chi2_quantile(k: int, z: float) -> float:
    """The chi-square quantile with k degrees of freedom at normal quantile z (Wilson-Hilferty)."""
    a = 2.0 / (9.0 * k)
    return k * (1.0 - a + z * np.sqrt(a)) ** 3


def consistent_partition(E: np.ndarray, J: np.ndarray, sigma: float) -> Optional[np.ndarray]:
    """Channels of one block of J linked when their corrected ends agree at every position within the
    noise (sum over positions of the squared difference / 2 sigma^2 below the chi-square quantile at
    PRIOR_PAIR_Z), and the links' components, as a label per channel; None when a block is too large
    to compare pairwise."""
    C, P = E.shape
    labels = np.arange(C, dtype=np.int64)
    q = _chi2_quantile(P, PRIOR_PAIR_Z) * 2.0 * (sigma * sigma + PRIOR_FLOOR_NS * PRIOR_FLOOR_NS)
    for b in np.unique(J):
        idx = np.flatnonzero(J == b)
        m = idx.size
        if m < 2:
            continue
        if m > PRIOR_MAX_PAIRWISE:
            return None
        X = E[idx].astype(np.float64)
        X -= X.mean(axis=0)[None, :]
        sq = np.einsum("ij,ij->i", X, X)
        A = (sq[:, None] + sq[None, :] - 2.0 * X @ X.T) <= q
        lab = np.arange(m, dtype=np.int64)
        while True:
            new = np.where(A, lab[None, :], m).min(axis=1)
            new = new[new]
            if np.array_equal(new, lab):
                break
            lab = new
        labels[idx] = idx[lab]
    return _canon(labels)


def split_by_prior(
    L: np.ndarray,
    E: np.ndarray,
    rows: np.ndarray,
    parts: List[np.ndarray],
    sigma: float,
    host: Optional[np.ndarray] = None,
    device: Optional[np.ndarray] = None,
) -> np.ndarray:
    """L (a time cut's clusters per position) split along the coarsest candidate communicator that
    refines its blocks and whose instances are within the end noise (module docstring)."""
    if L.shape[0] < 3:
        return L
    # the spreads below are float64 sums: of unix ns (1.7e18: a float64 ulp of 256 ns, and sums of 64 of
    # them off by microseconds, which split DP64's world all-reduces by host) they are taken from the
    # earliest end, so that they are exact
    E = E - E.min() if E.size else E
    limit = PRIOR_NOISE_FACTOR * sigma + PRIOR_FLOOR_NS
    J = joined_blocks(L)[0]
    if _worst_block(L, E, J) <= limit:
        return L
    chans = [_canon(lab[rows]) for lab in candidates(parts)]
    if host is not None:
        chans.append(_canon(J * (int(host.max()) + 1) + host))  # the cut's blocks, one host each
    if device is not None and device.max() > 0:
        chans.append(_canon(J * (int(device.max()) + 1) + device))  # the cut's blocks, one local GPU each
    chosen = _best(L, E, J, chans, limit)
    if chosen is None:
        # nothing the run shows fits: the channels that agree within the noise at every position
        agree = consistent_partition(E, J, sigma)
        chosen = _best(L, E, J, [agree] if agree is not None else [], limit)
    return L if chosen is None else chosen


def _worst_block(L: np.ndarray, E: np.ndarray, J: np.ndarray) -> float:
    """The largest pooled standard deviation of E within L's clusters, pooled per block of J over the
    positions (one joined pair of instances among many shows here, not in the run's pooled spread)."""
    C, P = L.shape
    key = (L + np.arange(P, dtype=np.int64)[None, :] * C).ravel()
    e = E.astype(np.float64).ravel()
    cnt = np.bincount(key, minlength=C * P)
    mean = np.bincount(key, weights=e, minlength=C * P) / np.maximum(cnt, 1)
    dev = e - mean[key]
    blk = np.repeat(J[:, None], P, axis=1).ravel()
    ss = np.bincount(blk, weights=dev * dev)
    # degrees of freedom per block: its channels less one per (cluster, position) it holds
    first = np.zeros(C * P, dtype=bool)
    first[np.unique(key, return_index=True)[1]] = True
    dof = np.bincount(blk, weights=(~first).astype(np.float64))
    ok = dof > 0
    return float(np.sqrt(np.max(ss[ok] / dof[ok]))) if ok.any() else 0.0


def _best(L: np.ndarray, E: np.ndarray, J: np.ndarray, chans: List[np.ndarray], limit: float):
    """Of the candidates (a label per channel) that refine J and spread within limit, the coarsest
    whose spread is not larger than the tightest one's beyond chance; None when none fits."""
    found = []  # (blocks, spread, dof, clusters)
    for Q in chans:
        nq = int(Q.max()) + 1
        if nq == Q.size or np.unique(Q * (int(J.max()) + 1) + J).size != nq:
            continue  # nobody together, or a block of Q across two of the cut's blocks
        M = meet(L, Q)
        s, dof = spread(M, E)
        if s is not None and s <= limit:
            found.append((nq, s, dof, M))
    # the tightest candidate's spread is the noise (the communicator, or a refinement of it, spreads
    # as the noise does); a coarser one is taken only when its spread is not larger beyond chance
    ref = min((f for f in found if f[2] >= PRIOR_MIN_DOF), key=lambda f: f[1], default=None)
    if ref is None:
        return None
    ok = [f for f in found if (f[1] / max(ref[1], 1.0)) ** 2 <= 1.0 + PRIOR_Z * np.sqrt(2.0 / f[2] + 2.0 / ref[2])]
    return min(ok, key=lambda f: (f[0], f[1]))[3]


__all__ = ["rank_partitions", "split_by_prior", "candidates", "meet", "spread"]


def irregular(block: np.ndarray) -> bool:
    """A shaped line-up's blocks of two or more channels are not all of one size."""
    sizes = np.bincount(block)
    return np.unique(sizes[sizes > 1]).size > 1


REGROUP_MIN_AGREEMENT = 0.5  # pair-set Jaccard of a known partition with the shape's blocks
REGROUP_MIN_WITHIN = 0.99  # of its (block, position) pairs whose members end within the tolerance


def regroup(ranks: Sequence[RankData], s: Shaped, parts: List[np.ndarray], tol: float) -> Optional[np.ndarray]:
    """The known partition (candidates of the run's communicators) that agrees best with a shaped
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
