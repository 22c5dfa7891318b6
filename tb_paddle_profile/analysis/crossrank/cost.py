"""One cost per rank: how much shorter the job's step gets with that rank at its role peers' speed.

The verdict (findings.py), the straggler what-if (whatif.py) and Compare all read this one number.

* **Candidates**: ranks with role peers (verdict.py) whose figure (compute, data loader, launches,
  memcpy, the wait for the step's first work) exceeds the peers' median by more than the noise:
  at least CANDIDATE_MIN_NS and CANDIDATE_MIN_FRACTION of the median step, and NOISE_SPREADS × the
  figure's noise: the standard deviation of the ranks from their role peers' median, estimated from its
  median absolute deviation pooled over all ranks, relative to the peers' value (at least
  NOISE_SCALE_FRACTION of the median step), so that a GPU a little slower by nature is no candidate. No threshold decides whether a candidate is a
  straggler: its cost does.
* **The change** ("at its role peers' speed"), in the replay of replay.py:
  - compute: the rank's compute runs' kernel time scaled by the peers' median compute ÷ its own;
  - memcpy: its copies' time scaled by the peers' median ÷ its own;
  - launches: its launch lags (and the host chain's) scaled by the peers' median ÷ its own;
  - data loader / host stall / first work: in each step, the host's longest stretch before work (the
    largest lag from a host node to the first node launched or reached after it: before the step's
    first work, or in its middle) shortened by the excess, and
    the gaps inside the compute runs launched from there those of queued kernels (the late host
    paced them; the run still ends no earlier than its last launch).
* **The cost**: the unchanged replay's job step (mean over ranks and steps of the ProfileStep
  durations) minus the changed one's, per step. Candidates are replayed a few at a time
  (Graph.replay_many), at most MAX_REPLAYED of them (the largest relative excess first; the others
  are not named, and a note says so); a group of candidates that share one excess (STRUCTURE_MIN_RANKS or more
  ranks of one figure within STRUCTURE_SPREAD of each other: a difference of the program, not of a
  rank) is replayed through one representative.
* **Without a replay** (the traces carry no program, or no collective joined the ranks: Paddle on
  CPU/gloo records none) the cost comes from the step times: the ranks of a synchronous job wait for
  the slowest inside the collectives the trace does not show, which is idle time on their host; the
  candidate's cost is how much longer the others idle than it does (the median over the other ranks
  of their idle time per step minus its own), at least 0 and at most the median step. (Not its
  excess: work outside any event, such as the Python around a slow loop, is late arrival too.)
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from .. import program as P
from . import verdict
from .model import RankData, Topology

CANDIDATE_MIN_NS = 50_000
CANDIDATE_MIN_FRACTION = 0.005
NOISE_SPREADS = 4.5
NOISE_SCALE_FRACTION = 0.05
STRUCTURE_MIN_RANKS = 4
STRUCTURE_MIN_SHARE = 0.05
# At most this many candidates are replayed (largest relative excess first; a group's representative
# first of all), REPLAY_BATCH per walk over the graph.
MAX_REPLAYED = 16
REPLAY_BATCH = 4
STRUCTURE_SPREAD = 0.25
# The figures a change is made for, and the host-side ones among them (one shortening, by the largest).
HOST_FIGURES = ("dataloader", "stall", "first_device")


@dataclass
class Candidate:
    index: int
    figure: str  # the figure with the largest excess beyond the noise (the cause)
    excess: int  # ns per step over the role peers' median in that figure
    excesses: Dict[str, int]  # every figure's excess beyond the noise (0 within it)
    value: int
    peer_value: int
    cost: float = 0.0  # ns per step
    method: str = ""  # "replay" or "step times"
    group: int = -1  # index into Costs.groups when it shares its excess with many ranks


@dataclass
class Group:
    """Candidates that share one excess: structure (the program differs), not stragglers."""

    figure: str
    members: List[int]  # rank indexes
    excess: int  # median excess
    peer_value: int
    representative: int
    cost: float = 0.0


@dataclass
class Costs:
    candidates: List[Candidate] = field(default_factory=list)  # costliest first
    groups: List[Group] = field(default_factory=list)
    base_step: float = 0.0  # the unchanged replay's job step (or the median step time)
    method: str = ""
    notes: List[str] = field(default_factory=list)
    caveat: str = ""  # the replay's caveat of the evidence (unmatched collectives), "" without

    def of(self, index: int) -> Optional[Candidate]:
        return next((c for c in self.candidates if c.index == index), None)


def _scale(peer: float, median_step: float) -> float:
    """What a figure's deviations are measured against: the peers' value, at least NOISE_SCALE_FRACTION
    of the median step (a figure near zero, such as a data loader that takes no time, has an absolute
    noise)."""
    return max(float(peer), NOISE_SCALE_FRACTION * median_step, 1.0)


def _noise(
    figs: List[Dict[str, int]],
    peer_vals: List[Dict[str, int]],
    peered: Sequence[bool],
    median_step: float,
    ranks: Sequence[RankData] = (),
    role_of: Sequence = (),
) -> Dict[str, float]:
    """Per figure, the timing noise as a share of the scale: the standard deviation estimated from the
    median absolute deviation of every peered rank from its role peers' median (pooled over the roles,
    so that a role of two ranks or one straggler does not set it). With fewer than NOISE_MIN_ROLES
    roles of two or more ranks the pool is the straggler's own deviation (DP2: both ranks deviate by
    it): then the noise of a rank's mean over its steps, from its steps' variation (_step_noise)."""
    idx = [i for i, p in enumerate(peered) if p]
    out: Dict[str, float] = {}
    roles: Dict[object, int] = {}  # role → its peered ranks
    for i in idx:
        if role_of:
            roles[role_of[i]] = roles.get(role_of[i], 0) + 1
    few = bool(role_of) and sum(1 for k in roles.values() if k > 1) < NOISE_MIN_ROLES
    step = _step_noise(ranks, idx, peer_vals, median_step) if few and ranks else None
    for f in verdict.FIGURES:
        if not idx:
            out[f] = 0.0
            continue
        got = step.get(f) if step is not None else None
        if got is not None:
            out[f] = got
            continue
        rel = np.array([abs(figs[i][f] - peer_vals[i][f]) / _scale(peer_vals[i][f], median_step) for i in idx])
        out[f] = 1.4826 * float(np.median(rel))
    return out


NOISE_MIN_ROLES = 3


def _step_noise(
    ranks: Sequence[RankData], idx: List[int], peer_vals: List[Dict[str, int]], median_step: float
) -> Dict[str, Optional[float]]:
    """Per figure, the standard deviation of the difference between two ranks' means over their steps,
    as a share of the scale: each rank's step-to-step deviation (1.4826 x the median absolute deviation
    about its own median) over the square root of its steps, x sqrt 2, the median over the ranks;
    None for a figure no rank has three steps of."""
    from .steps import _Steps

    st = _Steps(ranks)
    vals = verdict.step_values(st)
    out: Dict[str, Optional[float]] = {}
    for f in verdict.FIGURES:
        per = []
        for i in idx:
            v = vals[f][st.ptr[i] : st.ptr[i + 1]]
            if f == "first_device":
                v = v[v >= 0]
            if v.size < 3:
                continue
            sd = 1.4826 * float(np.median(np.abs(v - np.median(v)))) * np.sqrt(2.0 / v.size)
            per.append(sd / _scale(peer_vals[i][f], median_step))
        out[f] = float(np.median(per)) if per else None
    return out


def candidates(
    ranks: Sequence[RankData],
    topo: Topology,
    figs: List[Dict[str, int]],
    peer_vals: List[Dict[str, int]],
    median_step: float,
    peered: Sequence[bool],
) -> List[Candidate]:
    floor = max(CANDIDATE_MIN_NS, CANDIDATE_MIN_FRACTION * median_step)
    # roles known (a grid from the collectives): too few of them pool no noise; unknown (no collective
    # in the traces, every rank compared with all others): the pool over all ranks
    known = (
        (topo.complete or bool(topo.missing))
        and len(topo.coord_dp) == len(ranks)
        and all(x >= 0 for x in topo.coord_dp)
    )
    noise = _noise(figs, peer_vals, peered, median_step, ranks, verdict.roles(ranks, topo) if known else ())
    out = []
    for i in range(len(ranks)):
        if not peered[i]:
            continue
        ex = {}
        for f in verdict.FIGURES:
            e = figs[i][f] - peer_vals[i][f]
            ex[f] = int(e) if e >= max(floor, NOISE_SPREADS * noise[f] * _scale(peer_vals[i][f], median_step)) else 0
        if not any(ex.values()):
            continue
        main = [f for f in verdict.FIGURES if ex[f] and f != "first_device"] or ["first_device"]
        f = max(main, key=lambda x: (ex[x], -verdict.FIGURES.index(x)))
        out.append(Candidate(i, f, ex[f], ex, figs[i][f], peer_vals[i][f]))
    return out


def _groups(cands: List[Candidate], world: int) -> List[Group]:
    """Candidates of one figure whose excesses lie within STRUCTURE_SPREAD of each other, at least
    STRUCTURE_MIN_RANKS of them and STRUCTURE_MIN_SHARE of the world."""
    least = max(STRUCTURE_MIN_RANKS, int(np.ceil(STRUCTURE_MIN_SHARE * world)))
    out: List[Group] = []
    by: Dict[str, List[Candidate]] = defaultdict(list)
    for c in cands:
        by[c.figure].append(c)
    for f, cs in by.items():
        cs = sorted(cs, key=lambda c: c.excess)
        lo = 0
        while lo < len(cs):
            hi = lo + 1
            while hi < len(cs) and cs[hi].excess <= cs[lo].excess * (1 + 2 * STRUCTURE_SPREAD):
                hi += 1
            if hi - lo >= least:
                part = cs[lo:hi]
                mid = part[len(part) // 2]
                g = len(out)
                out.append(Group(f, [c.index for c in part], mid.excess, mid.peer_value, mid.index))
                for c in part:
                    c.group = g
            lo = hi
    return out


def _host_change(graph, mine: np.ndarray, x: float):
    """(launch_lag, host_lag, tail_lag, gaps): in each step of the rank (``mine``: its nodes), the lags
    from the host node with the longest stretch before work shortened by x, and the gaps inside the
    compute runs launched from it those of queued kernels."""
    n = graph.n
    host = mine & ~graph.is_device
    # per host node, its lead: the smallest lag to a node launched from it or reached after it
    lead = np.full(n + 1, np.inf)
    lp = np.where(graph.lp >= 0, graph.lp, n)
    sp = np.where((graph.sp >= 0) & ~graph.is_device, graph.sp, n)
    np.minimum.at(lead, lp[mine], graph.ll[mine])
    np.minimum.at(lead, sp[host], graph.sl[host])
    lead = lead[:n]
    cand = np.nonzero(host & np.isfinite(lead))[0]
    chosen = np.zeros(n + 1, dtype=bool)
    if cand.size:
        order = np.lexsort((-lead[cand], graph.step[cand]))  # by step, longest lead first
        c = cand[order]
        first = np.concatenate([[True], graph.step[c][1:] != graph.step[c][:-1]])
        chosen[c[first]] = True
    fl = chosen[lp]
    fs = chosen[sp]
    ll = np.where(fl, np.maximum(graph.ll - x, 0.0), graph.ll)
    tl = np.where(fl, np.maximum(graph.tl - x, 0.0), graph.tl)
    sl = np.where(fs, np.maximum(graph.sl - x, 0.0), graph.sl)
    # the gaps inside those compute runs were the late host's pace: a host that is on time queues the
    # kernels (a queued kernel starts about FREE_LAG_NS after the one before); the run still ends no
    # earlier than its last kernel's launch (the tail lag) allows
    gaps = graph.dur - graph.busy
    paced = fl[:n] & (graph.kind == P.COMPUTE)
    gaps = np.where(paced, np.minimum(gaps, np.maximum(graph.events - 1, 0) * float(P.FREE_LAG_NS)), gaps)
    return ll, sl, tl, gaps


def change_of(graph, c: Candidate, peer_vals: Dict[str, int], figs: Dict[str, int]) -> Dict[str, np.ndarray]:
    """The replay changes that put candidate ``c`` at its role peers' speed."""
    mine = graph.rank == c.index
    ch: Dict[str, np.ndarray] = {}
    scale = None
    for f, kinds in (("compute", (P.COMPUTE,)), ("memcpy", (P.MEMCPY, P.MEMSET))):
        if c.excesses.get(f):
            if scale is None:
                scale = np.ones(graph.n)
            scale[mine & np.isin(graph.kind, kinds)] = peer_vals[f] / max(1, figs[f])
    if scale is not None:
        ch["scale"] = scale
    x = max(c.excesses.get(f, 0) for f in HOST_FIGURES)
    if x:
        ch["launch_lag"], ch["host_lag"], ch["tail_lag"], ch["gaps"] = _host_change(graph, mine, float(x))
    if c.excesses.get("launch"):
        r = peer_vals["launch"] / max(1, figs["launch"])
        ll = ch.get("launch_lag", graph.ll)
        from_mine = mine & (graph.lp >= 0)
        ch["launch_lag"] = np.where(from_mine, ll * r, ll)
    return ch


def _step_time_costs(cands: List[Candidate], msgs, median_step: float) -> None:
    idle = np.array([m.idle_ns for m in msgs], dtype=np.float64)
    for c in cands:
        others = np.delete(idle, c.index)
        slack = float(np.median(others)) - idle[c.index] if others.size else 0.0
        c.cost = max(0.0, min(slack, median_step))
        c.method = "step times"


def rank_costs(
    ranks: Sequence[RankData],
    topo: Topology,
    flat,
    figs: List[Dict[str, int]],
    peer_vals: List[Dict[str, int]],
    median_step: float,
    msgs=None,
    graph=None,
    prep=None,
) -> Costs:
    """Every candidate's cost (see the module docstring). ``graph``: a replay.Graph already made,
    or a function that makes one (else one is made from ``prep`` or from the arguments when some
    candidate needs it)."""
    peered = verdict.has_peers(ranks, topo)
    cands = candidates(ranks, topo, figs, peer_vals, median_step, peered)
    out = Costs(base_step=median_step)
    if not cands:
        return out
    out.groups = _groups(cands, len(ranks))
    has_program = any(len(r.digest.parallel.program.kind) for r in ranks)
    joined = bool(flat.n) and has_program
    if not joined:
        _step_time_costs(cands, msgs if msgs is not None else [_Idle(r) for r in ranks], median_step)
        out.method = "step times"
        out.notes.append(
            "No collective joins the ranks in the traces (or they carry no program): each cost is "
            "the rank's excess as far as the other ranks' idle time can give it back, from step times."
        )
    else:
        if callable(graph):
            graph = graph()
        if graph is None:
            from .replay import Graph, Prepared
            from .waits import Waits

            if prep is None:
                prep = Prepared(list(ranks), flat, Waits(ranks, flat), topo, np.zeros(flat.n, dtype=object))
            graph = Graph(prep)
        reps = {g.representative for g in out.groups}
        replayed = sorted(
            (c for c in cands if c.group < 0 or c.index in reps),
            key=lambda c: (c.index not in reps, -c.excess / _scale(c.peer_value, median_step)),
        )
        if len(replayed) > MAX_REPLAYED:
            for c in replayed[MAX_REPLAYED:]:
                c.method = "not replayed"
            out.notes.append(
                f"{len(replayed) - MAX_REPLAYED} more ranks unlike their role peers were not replayed "
                f"(the {MAX_REPLAYED} with the largest excess were): they are not named."
            )
            replayed = replayed[:MAX_REPLAYED]
        out.caveat = graph.unmatched_note()
        base = out.base_step  # (set below: replayed is never empty, cands is not)
        for k in range(0, len(replayed), REPLAY_BATCH):  # a few at a time: K replays hold K copies of the graph
            part = replayed[k : k + REPLAY_BATCH]
            changes: List[dict] = [{}] + [change_of(graph, c, peer_vals[c.index], figs[c.index]) for c in part]
            s, e = graph.replay_many(changes)
            steps = graph.job_steps(s, e)
            base = float(steps[0])
            for c, new in zip(part, steps[1:].tolist()):
                c.cost = max(0.0, base - new)
                c.method = "replay"
        out.base_step = base
        for g in out.groups:
            rep = next(c for c in cands if c.index == g.representative)
            g.cost = rep.cost
            for c in cands:
                if c.group >= 0 and out.groups[c.group] is g and c is not rep:
                    c.cost, c.method = rep.cost, "replay (its group's representative)"
        out.method = "replay"
    cands.sort(key=lambda c: (-c.cost, -c.excess, c.index))
    out.candidates = cands
    return out


class _Idle:
    """A rank's mean idle time per step from its steps (when no RankParallel messages are at hand)."""

    def __init__(self, r: RankData):
        st = list(r.steps.values())
        self.idle_ns = int(round(sum(s.idle_ns for s in st) / max(1, len(st))))


def median_step(st) -> float:
    """The median over the ranks with steps of their mean step time (rounded to ns, as RankParallel's)."""
    has = st.count > 0
    if not has.any():
        return 0.0
    means = verdict.round_div(verdict.segment_sums(st.time, st.ptr, st.count.size), np.maximum(1, st.count))
    return float(np.median(means[has]))


def named(costs: Costs, median_step: float) -> List[Candidate]:
    """The candidates the verdict names, costliest first: those that cost the job at least the
    straggler floor, and those whose large excess the job absorbs (the absorbed stalls); not the
    members of a group (structure)."""
    from . import thresholds as T

    min_cost = max(T.STRAGGLER_MIN_COST_NS, T.STRAGGLER_MIN_COST_FRACTION * median_step)
    floor = max(T.ANOMALY_MIN_EXCESS_NS, T.ANOMALY_MIN_EXCESS_FRACTION * median_step)
    return [
        c
        for c in costs.candidates
        if c.group < 0 and c.method != "not replayed" and (c.cost >= min_cost or c.excess >= floor)
    ]
