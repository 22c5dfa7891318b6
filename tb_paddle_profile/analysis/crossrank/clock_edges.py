"""Clock edges between clock nodes (hosts, or ranks without host names) from the communicators found
by shape, and hosts grouped from per-rank offsets (comms.py's module docstring: "Clocks").

The end differences between the members of one communicator are their clocks' differences, constant
over the run: per member pair the median over all positions, per node pair those pooled into one edge
(clocks.join joins the edges into offsets).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from . import thresholds as T
from .match import _gather
from .model import RankData
from .shapes import EXACT_END_NS, SHAPE_NOISY_MIN_POSITIONS, Shaped


def clock_edges(
    ranks: Sequence[RankData],
    shaped: List[Shaped],
    node_of: np.ndarray,
    noisy: bool = False,
    exact: bool = False,
    sigma: float = 0.0,
):
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
            continue  # all one-rank communicators
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


NOISY_PAIRS_MAX_CHANNELS = 512  # its C^2 / 2 member pairs compared over the positions


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
                (float(np.median(med[keep])), P, float(np.median(iqr[keep])))
            )


def group_hosts(off: List[int], reached: List[bool], gap: float = T.CLOCK_HOST_GAP_NS) -> np.ndarray:
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
