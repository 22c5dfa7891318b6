"""Channel shapes and the run's end noise (comms.py's module docstring: "a channel's shape", "end noise")."""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from . import thresholds as T
from .match import Lineup, _leaders, joined_blocks

SHAPE_MIN_POSITIONS = 3  # a line-up shorter than this has no shape to tell (cut by end time)
SHAPE_NOISY_MIN_POSITIONS = 8  # ... under end noise (its blocks still give the clocks)
NOISE_ROUNDS = 8  # the end noise measured again on tighter blocks, at most this often
NOISE_STEP = 0.75  # each time at this share of the last tolerance, at most SHAPE_NOISE_FACTOR x sigma
NOISE_SETTLED = 0.85  # ... until it falls by less than this factor


def shape_blocks(E: np.ndarray, tol: float, centred: bool = True) -> np.ndarray:
    """Per channel (row of E, channels × positions of end times), its communicator block: channels
    whose shapes agree within tol (single linkage per position) at SHAPE_SHARE of the positions
    (match.joined_blocks: the meet over positions, blocks together that often joined again; a member's
    end that timing noise moves at a few positions does not split its communicator). No clock offset
    changes a shape: ``centred``, each channel's ends less their own mean over the positions (the
    members of one communicator end together at every position, so their centred ends differ by the
    end noise only, while lock-step replicas' groups drift apart and back within each step and agree
    only where the drift crosses its mean); else the increments of its ends from one position to the
    next (what the matching uses when the run shows no end noise: exact agreement). Block ids are 0..
    in the order of their first channel."""
    C, P = E.shape
    if C < 2 or P < 2:
        return np.zeros(C, dtype=np.int64)
    if centred:
        X = (E - E[:, :1]).astype(np.float64)  # unix ns: float64 only after taking the first end off
        R = X - X.mean(axis=1, keepdims=True)
    else:
        R = np.diff(E, axis=1).astype(np.float64)
    order = np.argsort(R, axis=0, kind="stable")
    Rs = np.take_along_axis(R, order, 0)
    cid = np.vstack([np.zeros((1, R.shape[1]), dtype=np.int64), np.cumsum(np.diff(Rs, axis=0) > tol, axis=0)])
    block, _ = joined_blocks(_leaders(order, cid), SHAPE_SHARE)
    if not centred:  # exact increments: members agree to the nanosecond, a chained block is split
        block = _consistent_blocks(R, block, tol)
    _, first, inv = np.unique(block, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inv.ravel()]


SHAPE_SHARE = 0.75
SHAPE_REFERENCES = 32


def _consistent_blocks(R: np.ndarray, block: np.ndarray, tol: float) -> np.ndarray:
    """Single linkage chains: among a thousand channels, lock-step replicas' shapes fill the gaps between
    two communicators and one block holds both. In a run without end noise every member of a
    communicator agrees with every other (within tol at SHAPE_SHARE of the positions; under noise a
    few positions' outliers would split true members, so it is used on exact increments only), so a block whose shapes spread wider at some
    position is split: the member that agrees with the most others (of up to SHAPE_REFERENCES tried)
    keeps those that agree with it, and the rest is split the same way; a member that agrees with no other
    stays in the block (a lone outlier is no communicator of its own: the instances' verification and
    the residue judge it)."""
    C, P = R.shape
    order = np.argsort(block, kind="stable")
    bs = block[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(bs)) + 1])
    sizes = np.diff(np.concatenate([starts, [C]]))
    Rs = R[order]
    spread = np.maximum.reduceat(Rs, starts, axis=0) - np.minimum.reduceat(Rs, starts, axis=0)
    bad = np.flatnonzero((sizes > 1) & (spread > tol).any(axis=1))
    if not bad.size:
        return block
    out = block.astype(np.int64).copy()
    nxt = int(out.max()) + 1
    for b in bad.tolist():
        members = order[starts[b] : starts[b] + sizes[b]]
        Rb = R[members]
        left = np.ones(members.size, dtype=bool)  # members not yet taken, by their index in the block
        rest = np.arange(members.size)
        agrees: Dict[int, np.ndarray] = {}  # a reference's agreeing members in the whole block

        def agreeing(q: int) -> np.ndarray:
            if q not in agrees:
                agrees[q] = np.flatnonzero((np.abs(Rb - Rb[q]) <= tol).mean(axis=1) >= SHAPE_SHARE)
            return agrees[q]

        first = True
        while rest.size > 1:
            refs = (
                rest
                if rest.size <= SHAPE_REFERENCES
                else rest[np.linspace(0, rest.size - 1, SHAPE_REFERENCES).astype(np.int64)]
            )
            counts = [int(left[agreeing(q)].sum()) for q in refs.tolist()]
            nb = agreeing(int(refs[int(np.argmax(counts))]))
            keep = nb[left[nb]]
            if not first and keep.size > 1:
                out[members[keep]] = nxt
                nxt += 1
            first = False
            left[keep] = False
            rest = np.flatnonzero(left)
    return out


# end_noise: a member "exact" when its distance to its block's first member (less its median) is within
# this at every position; a run with at least this many (and this share) of exact members has no end
# noise to measure.
EXACT_END_NS = 50
EXACT_MIN_MEMBERS = 8
EXACT_MIN_SHARE = 0.005
EXACT_MIN_BLOCK_SHARE = 0.25  # ... or in at least this share of the blocks of two or more channels


def end_noise(lineups: Sequence[Lineup], ends: Sequence[np.ndarray], blocks: Sequence[np.ndarray]) -> float:
    """The run's end noise: sigma of one member's end about its collective's, in ns. On every block of
    two or more channels, each member's end minus the block's first member's, less its median over the
    positions (their clocks' difference), is the difference of two members' noise; the median absolute
    residual per member, the median over all members (blocks that merged lock-step replicas by accident
    are few), as a normal's sigma (x 1.4826 / sqrt 2). 0 when no block has two channels."""
    per, worst, blk = [], [], []
    n_blocks = 0
    for lu, E, block in zip(lineups, ends, blocks):
        if block.size < 2 or int(block.max()) + 1 == block.size:
            continue
        order = np.argsort(block, kind="stable")
        bs = block[order]
        first = np.concatenate([[True], bs[1:] != bs[:-1]])
        ref = order[np.maximum.accumulate(np.where(first, np.arange(order.size), 0))]
        a, b = order[~first], ref[~first]
        d = (E[a] - E[b]).astype(np.float64)
        r = np.abs(d - np.median(d, axis=1, keepdims=True))
        per.append(np.median(r, axis=1))
        worst.append(r.max(axis=1))
        blk.append(bs[~first] + n_blocks)
        n_blocks += int(block.max()) + 1
    if not per:
        return 0.0
    m = np.concatenate(per)
    # Members that end with their block's first member to the nanosecond at every position (within
    # EXACT_END_NS) cannot come from noise: such a run's collectives end together, and the members of
    # wide blocks far off are lock-step replicas merged by the wide tolerance (at 1,024 ranks most of
    # them: their median is the replicas' drift, not noise). Then the noise is that of the exact ones.
    # Counted per member and per block: a wide block of 512 lock-step replicas holds its first member's
    # one tensor-parallel partner among 4,095 members, yet nearly every block holds one.
    # Every position, not the median: in a line-up of three positions (a collective once a step) one
    # residual is the median's own zero, and members 2 us of noise apart have a median residual of a
    # few nanoseconds by chance (a DP2 x PP16 run's noise was measured as 14 ns, not 450).
    exact = np.concatenate(worst) <= EXACT_END_NS
    b = np.concatenate(blk)
    held, multi = np.unique(b[exact]).size, np.unique(b).size
    if int(exact.sum()) >= EXACT_MIN_MEMBERS and (
        int(exact.sum()) >= EXACT_MIN_SHARE * m.size or held >= EXACT_MIN_BLOCK_SHARE * multi
    ):
        m = m[exact]
    return float(np.median(m)) * 1.4826 / np.sqrt(2.0)


def measure_noise(lineups: Sequence[Lineup], ends: Sequence[np.ndarray]) -> Tuple[float, List[np.ndarray]]:
    """(the run's end noise: end_noise on the blocks at SHAPE_WIDE_TOL_NS, measured again on tighter
    blocks while it falls; those wide blocks)."""
    wide = [shape_blocks(E, T.SHAPE_WIDE_TOL_NS) for E in ends]
    sigma = end_noise(lineups, ends, wide)
    # many lock-step replicas: the wide blocks join some, whose drift inflates the median; measured
    # again on the blocks of a tighter tolerance (NOISE_STEP of the last, at most the one that noise
    # gives) until it falls by less than NOISE_SETTLED: the true communicators' noise is a plateau
    t: float = T.SHAPE_WIDE_TOL_NS
    for _ in range(NOISE_ROUNDS):
        t = min(NOISE_STEP * t, T.SHAPE_NOISE_FACTOR * sigma)
        if t <= T.MATCH_TOL_NS:
            break
        again = end_noise(lineups, ends, [shape_blocks(E, t) for E in ends])
        settled = not again or again >= NOISE_SETTLED * sigma
        sigma = min(sigma, again) if again else sigma
        if settled:
            break
    return sigma, wide


__all__ = ["shape_blocks", "end_noise", "measure_noise", "EXACT_END_NS", "SHAPE_SHARE"]


class Shaped:
    """A line-up with its communicator blocks."""

    def __init__(self, lu: Lineup, block: np.ndarray, by_time: bool = False):
        self.lu, self.block, self.by_time = lu, block, by_time
