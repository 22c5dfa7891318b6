"""Clock offsets of host groups aligned by the collectives that co-end (under end noise, host names known).

Send/recv ties the hosts of one pipeline together (a send and its receive end together: p2p.py), but
the replicas of a data-parallel job meet only in their data-parallel collectives, whose shapes do not
tell lock-step replicas' groups apart: a block that joined the groups of two stages gives an edge a
stage's time off, and the join keeps a whole replica that far off (hundreds of microseconds) with
nothing to outvote it. Here each group of hosts that send/recv links (a component) is placed where
most of its collective instances co-end with the hosts placed already: for a candidate shift of its
offsets, count the (channel, position) ends of its channels that have an end of a placed channel of
the same line-up within the tolerance; the candidates are the modes of the end differences between
its channels and the placed ones; the shift is taken only when it makes clearly more ends co-end than
the offsets it has (ALIGN_GAIN). At the true shift every member of every collective co-ends with its
communicator; a shift by one stage's time aligns some stages' groups with others' at best.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

from .clocks import binned

ALIGN_GAIN = 1.25  # a shift is taken when this many times the current offsets' co-ending ends
ALIGN_MIN_GAIN = 8  # ... and at least this many more
ALIGN_CANDIDATES = 4  # modes of the end differences tried per line-up
ALIGN_FULL = 0.8  # a line-up counts when this share of the component's ends co-end at a shift
ALIGN_SAMPLE_CHANNELS = 16  # channels of a component, positions of a line-up sampled for the candidates
ALIGN_SAMPLE_POSITIONS = 8
ALIGN_WINDOW_NS = 5_000_000  # end differences considered for the candidates (clocks within +-5 ms)
ALIGN_CHUNK = 1 << 20  # ends scored at once (shifts x the component's ends)
ALIGN_BAND_NS = 20_000_000  # a placed end this far or further counts as none (the bands of _Part)
ALIGN_TOL_SIGMAS = 6.0  # the tolerance given is this many sigmas of end noise (thresholds.P2P_NOISE_FACTOR)


def components(n_nodes: int, pairs: Iterable[Tuple[int, int]]) -> np.ndarray:
    """Per node its component of the graph of pairs (ids in the order of their lowest node)."""
    parent = list(range(n_nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(int(a)), find(int(b))
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    roots = np.array([find(i) for i in range(n_nodes)], dtype=np.int64)
    return np.unique(roots, return_inverse=True)[1].astype(np.int64).ravel()


class _Lineup:
    """One shaped line-up's ends (channels x positions) and each channel's node."""

    def __init__(self, E: np.ndarray, nodes: np.ndarray):
        self.E, self.nodes = E, nodes


def align_components(
    lineups: Sequence[Tuple[np.ndarray, np.ndarray]], off: List[int], comp: np.ndarray, tol: float
) -> Tuple[List[int], List[int]]:
    """(the offsets with each component shifted to where its ends co-end most with those placed before
    it, the components shifted). lineups: per shaped line-up its ends (channels x positions, the
    traces' clocks) and each channel's node; off: per node, subtracted from its ends; comp: per node its
    component (components()); the reference node's component is placed first and never moves."""
    n_comp = int(comp.max()) + 1 if comp.size else 0
    if n_comp < 2:
        return list(off), []
    o = np.asarray(off, dtype=np.int64)
    lus = [
        _Lineup(E.astype(np.int64), nodes)
        for E, nodes in lineups
        if nodes.size >= 2 and np.unique(comp[nodes]).size >= 2
    ]
    if not lus:
        return list(off), []
    placed = np.zeros(n_comp, dtype=bool)
    placed[comp[0]] = True
    moved: List[int] = []
    for c in range(n_comp):
        if placed[c]:
            continue
        shift = _best_shift(lus, comp, placed, c, o, tol)
        if shift:
            o[comp == c] += shift
            moved.append(c)
        placed[c] = True
    return [int(x) for x in o], moved


def _best_shift(lus: List[_Lineup], comp: np.ndarray, placed: np.ndarray, c: int, o: np.ndarray, tol: float) -> int:
    """The shift of component c's offsets (added) that makes the most of its ends co-end with placed
    channels' (0 unless clearly better than no shift). Only line-ups that co-end almost wholly at one of
    the candidate shifts count (ALIGN_FULL of the component's ends: a communicator spanning the
    component and placed hosts); the others, lock-step groups of other replicas that end tens of
    microseconds apart, blur every shift alike."""
    parts = []
    for L in lus:
        cc = comp[L.nodes]
        xs, ys = np.flatnonzero(cc == c), np.flatnonzero(placed[cc])
        if xs.size and ys.size:
            cE = L.E - o[L.nodes][:, None]
            parts.append(_Part(cE[xs], cE[ys]))
    if not parts:
        return 0
    cands: Dict[int, None] = {0: None}
    for part in parts:
        cands.update((d, None) for d in _candidates(part, tol))
    shifts = np.array(list(cands), dtype=np.int64)
    total = np.zeros(shifts.size)
    for part in parts:
        sc = part.scores(shifts, tol)
        if sc.max() >= ALIGN_FULL * part.X.size:
            total += sc
    base = float(total[0])
    k = int(np.argmax(total))
    if k and total[k] >= ALIGN_GAIN * base and total[k] - base >= ALIGN_MIN_GAIN:
        return int(shifts[k])
    return 0


class _Part:
    """One line-up's ends of the component (X) and of the placed channels (Y), channels x positions, on
    the corrected clock; Y sorted per position and laid out flat, each position in its own band
    (values relative to the position's first placed end, clipped to ALIGN_BAND_NS beyond its span), so
    that one search finds every nearest end at once."""

    def __init__(self, X: np.ndarray, Y: np.ndarray):
        self.X = X
        Ys = np.sort(Y, axis=0)
        self.Ys = Ys
        self.base = Ys[0]
        self.span = int((Ys[-1] - self.base).max())
        self.stride = self.span + 2 * ALIGN_BAND_NS + 1
        self.off = np.arange(X.shape[1], dtype=np.int64) * self.stride + ALIGN_BAND_NS
        self.flat = ((Ys - self.base) + self.off).T.ravel()

    def nearest(self, V: np.ndarray) -> np.ndarray:
        """Per value of V (... x positions), the distance to the nearest placed end at its position
        (at least ALIGN_BAND_NS where it is that far from every one)."""
        rel = np.clip(V - self.base, -ALIGN_BAND_NS, self.span + ALIGN_BAND_NS) + self.off
        i = np.searchsorted(self.flat, rel)
        hi = self.flat[np.minimum(i, self.flat.size - 1)]
        lo = self.flat[np.maximum(i - 1, 0)]
        return np.minimum(np.abs(rel - hi), np.abs(rel - lo))

    def scores(self, shifts: np.ndarray, tol: float) -> np.ndarray:
        """Per shift, the component's ends that co-end with a placed end, shifted by it: each counts
        exp(-d^2 / 2 s^2), d its distance to the nearest placed end, s = tol / ALIGN_TOL_SIGMAS x sqrt 2
        (two members' end noise): lock-step replicas' groups end tens of microseconds apart and count
        little, a communicator's members within the noise count fully."""
        s2 = 2.0 * (np.sqrt(2.0) * tol / ALIGN_TOL_SIGMAS) ** 2
        out = np.zeros(shifts.size)
        step = max(1, ALIGN_CHUNK // max(1, self.X.size))  # shifts at a time: memory bounded
        for k in range(0, shifts.size, step):
            sh = shifts[k : k + step]
            d = self.nearest(self.X[None, :, :] - sh[:, None, None]).astype(np.float64)
            w = np.where(d <= tol, np.exp(-np.square(d) / s2), 0.0)
            out[k : k + step] = w.reshape(sh.size, -1).sum(axis=1)
        return out


def _candidates(part: _Part, tol: float) -> List[int]:
    """The modes of the end differences (the component's channel minus a placed one at the same
    position, within ALIGN_WINDOW_NS; ALIGN_SAMPLE_CHANNELS x ALIGN_SAMPLE_POSITIONS of its ends), in
    bins of tol, the strongest first."""
    X = part.X[:ALIGN_SAMPLE_CHANNELS, :ALIGN_SAMPLE_POSITIONS]
    diffs = []
    for p in range(X.shape[1]):
        col = part.Ys[:, p]
        lo = np.searchsorted(col, X[:, p] - ALIGN_WINDOW_NS)
        hi = np.searchsorted(col, X[:, p] + ALIGN_WINDOW_NS)
        for v, a, b in zip(X[:, p].tolist(), lo.tolist(), hi.tolist()):
            if b > a:
                diffs.append(v - col[a:b])
    if not diffs:
        return []
    d = np.concatenate(diffs)
    bins, ub, near = binned(d, tol)
    top = ub[np.argsort(-near, kind="stable")[:ALIGN_CANDIDATES]]
    out: Dict[int, None] = {}
    for b in top.tolist():
        sel = d[np.abs(bins - b) <= 1]
        out[int(np.median(sel))] = None
    return list(out)


__all__ = ["components", "align_components"]
