"""Process groups, pipelines and each rank's DP / PP / MP coordinate, from the matched member sets.

* **Pipelines**: ranks linked by matched send/recv (a link needs at least P2P_PARTNER_SHARE of the
  transfers of its busier end's busiest link, so a stray pair does not join two chains) form
  chains, one per (dp, mp); stage 0 is the end whose first send/recv is a send. With the interleaved
  schedule the last stage also sends to stage 0 (chunk v to chunk v + 1): a ring, whose stage 0 is
  the rank whose first send/recv is a send and stage 1 the rank that send went to.
* **pp_group**: a communicator whose members are exactly one pipeline's ranks (clip all-reduce,
  loss broadcast).
* Communicators whose members all sit in one stage: per rank, the one with the most instances per
  step is its **mp** group (per-layer collectives; on ties the one within one host), the one that
  meets it only in the rank itself is its **dp** group (same stage and mp index across replicas).
  A rank with a single such communicator: **mp** when every such group lies within one host of
  several, else **dp** when it has at most DP_MAX_RATE instances per step, else **mp**.
  Communicators of only all-gather / reduce-scatter beyond those two are **sharding**.
* Communicators across stages that are no pipeline: **world** when they hold every rank, else
  **other**.
* Coordinates: pp = the position in the chain; mp and dp = the position in the rank's mp / dp
  group, members in rank order (Fleet numbers them so). `matches_fleet_order` when every rank
  equals (dp·PP + pp)·MP + mp, Paddle's CommunicateTopology order ["data", "pipe", "sharding",
  "sep", "model"] with the model axis fastest (python/paddle/distributed/fleet/base/topology.py).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from ...v1 import summary_pb2 as pb
from . import thresholds as T
from .match import Flat, SEND, SEND_RECV
from .model import RankData, Topology

DP_MAX_RATE = 4
SHARDING_KINDS = {pb.COLLECTIVE_KIND_ALL_GATHER, pb.COLLECTIVE_KIND_REDUCE_SCATTER}


def _first_p2p_is_send(r: RankData) -> bool:
    idx = np.flatnonzero(r.kind == SEND_RECV)
    return bool(idx.size) and r.direction[idx[0]] == SEND


def _first_send_partner(r: RankData, x: int, flat: Flat) -> int:
    """The rank index that rank index x's first send/recv send was matched with (-1: none)."""
    idx = np.flatnonzero((r.kind == SEND_RECV) & (r.direction == SEND))
    if not idx.size or not flat.n:
        return -1
    pos = np.flatnonzero((flat.m_rank == x) & (flat.m_inst == idx[0]))
    if not pos.size:
        return -1
    g = int(np.searchsorted(flat.ptr, pos[0], side="right")) - 1
    others = [int(y) for y in flat.m_rank[flat.ptr[g] : flat.ptr[g + 1]].tolist() if int(y) != x]
    return others[0] if others else -1


def pipelines(ranks: Sequence[RankData], flat: Flat, notes: List[str]) -> Tuple[List[List[int]], Dict]:
    sel = np.nonzero((flat.g_kind == SEND_RECV) & (flat.sizes == 2))[0]
    a = flat.m_rank[flat.ptr[sel]]
    b = flat.m_rank[flat.ptr[sel] + 1]
    count: Dict[Tuple[int, int], int] = {}
    if a.size:  # transfers per (x, y) pair, in the order of their first transfer
        width = int(max(a.max(), b.max())) + 1
        keys, first, cnt = np.unique(a * width + b, return_index=True, return_counts=True)
        o = np.argsort(first, kind="stable")
        count = {(x, y): c for x, y, c in zip((keys[o] // width).tolist(), (keys[o] % width).tolist(), cnt[o].tolist())}
    best: Dict[int, int] = defaultdict(int)
    for (x, y), c in count.items():
        best[x] = max(best[x], c)
        best[y] = max(best[y], c)
    adj: Dict[int, Set[int]] = defaultdict(set)
    for (x, y), c in count.items():
        if c >= T.P2P_PARTNER_SHARE * max(best[x], best[y]):
            adj[x].add(y)
            adj[y].add(x)
    seen: Set[int] = set()
    chains = []
    for start in sorted(adj):
        if start in seen:
            continue
        comp, stack = [], [start]
        while stack:
            x = stack.pop()
            if x in seen:
                continue
            seen.add(x)
            comp.append(x)
            stack.extend(adj[x] - seen)
        ends = [x for x in comp if len(adj[x]) == 1]
        # a ring: the interleaved schedule also links the last stage to stage 0 (chunk v to v + 1)
        ring = len(comp) >= 3 and all(len(adj[x]) == 2 for x in comp)
        if not ring and not (len(comp) >= 2 and len(ends) == 2 and all(len(adj[x]) <= 2 for x in comp)):
            notes.append(
                f"Ranks {sorted(ranks[x].rank for x in comp)} exchange send/recv but do not form one "
                "chain; no stages given for them."
            )
            continue
        head = min(comp if ring else ends, key=lambda x: (0 if _first_p2p_is_send(ranks[x]) else 1, x))
        chain, prev = [head], None
        if ring:  # stage 1 is the one stage 0 sends its first activations to
            prev = next((y for y in adj[head] if y != _first_send_partner(ranks[head], head, flat)), None)
        while len(chain) < len(comp):
            nxt = [y for y in adj[chain[-1]] if y != prev]
            prev = chain[-1]
            chain.append(nxt[0])
        chains.append(chain)
    return chains, count


def _replica_dp(
    n: int, chains: List[List[int]], mp_group: List[Tuple[int, ...]], dp_group: List
) -> Optional[List[int]]:
    """The dp coordinate of every rank as its replica's index, or None when the replicas are not a
    grid. A replica (one dp index) is what the pipelines and the mp groups join; each dp group must
    hold one rank of every replica. Replicas are numbered by their lowest rank index (Fleet's dp
    order when the ranks are numbered in Fleet's order; a rank's position in its own dp group is
    not, when the host names do not follow Fleet's host order: the stages of one replica would
    get different dp indexes). A rank without a dp group takes its replica's index when at least
    DP_CONFIRM_SHARE of the ranks have one and every one of those agrees."""
    # components: every group's members take the lowest label among them, until nothing changes
    groups = [np.asarray(g, dtype=np.int64) for g in list(chains) + list(mp_group) if len(g) > 1]
    label = np.arange(n, dtype=np.int64)
    if groups:
        flat_m = np.concatenate(groups)
        flat_g = np.repeat(np.arange(len(groups)), [g.size for g in groups])
        for _ in range(n):
            low = np.full(len(groups), n, dtype=np.int64)
            np.minimum.at(low, flat_g, label[flat_m])
            new = label.copy()
            np.minimum.at(new, flat_m, low[flat_g])
            if (new == label).all():
                break
            label = new
    root = label.tolist()
    lowest: Dict[int, int] = {}
    for x in range(n):
        lowest.setdefault(root[x], x)
    order = sorted(lowest, key=lowest.__getitem__)
    index = {r: i for i, r in enumerate(order)}
    dp = [index[root[x]] for x in range(n)]
    sizes: Dict[int, int] = defaultdict(int)
    for x in range(n):
        sizes[dp[x]] += 1
    if len(set(sizes.values())) != 1:
        return None
    n_rep = len(order)
    if n_rep > 1:
        if sum(g is not None for g in dp_group) < DP_CONFIRM_SHARE * n:
            return None
        whole = list(range(n_rep))
        for g in {tuple(g) for g in dp_group if g is not None}:  # each group once (its members share it)
            if len(g) != n_rep or sorted(dp[y] for y in g) != whole:
                return None
    return dp


# Replicas are the dp axis when their ranks' dp groups hold one rank of each, and at least this share
# of the ranks has a dp group (two of a stage's rare all-reduces joined by lock-step leave a few without)
DP_CONFIRM_SHARE = 0.75


def build(
    ranks: Sequence[RankData],
    flat: Flat,
    comms: List[Tuple[int, ...]],
    g_comm: np.ndarray,
    counts: List[int],
    notes: List[str],
) -> Tuple[Topology, List[str], np.ndarray]:
    """The topology, the axis of each communicator, and the axis of each group (as comm axes)."""
    n = len(ranks)
    topo = Topology()
    chains, p2p_count = pipelines(ranks, flat, topo.notes)
    stage = [-1] * n
    chain_of = [-1] * n
    for ci, chain in enumerate(chains):
        for s, x in enumerate(chain):
            stage[x] = s
            chain_of[x] = ci
    pp_deg = max((len(c) for c in chains), default=1)
    if not chains:
        stage = [0] * n
    chain_sets = {tuple(sorted(c)): ci for ci, c in enumerate(chains)}
    steps = max(1, max((len(r.steps) for r in ranks), default=1))

    kinds_of: Dict[int, Set[int]] = defaultdict(set)
    if flat.n:
        for c, k in set(zip(g_comm.tolist(), flat.g_kind.tolist())):
            kinds_of[c].add(k)
    axis = ["other"] * len(comms)
    within: Dict[int, List[int]] = defaultdict(list)  # rank index → within-stage communicators
    for c, members in enumerate(comms):
        ks = kinds_of[c]
        if ks == {SEND_RECV}:
            axis[c] = "pp"
            continue
        if members in chain_sets and len(members) > 1:
            axis[c] = "pp_group"
            continue
        st = {stage[x] for x in members}
        if len(st) == 1 and -1 not in st:
            for x in members:
                within[x].append(c)
            axis[c] = "?"
        else:
            axis[c] = "world" if len(members) == n else "other"

    multi_host = len({r.host for r in ranks}) > 1 and all(r.hostname for r in ranks)

    host_of = [r.host for r in ranks]
    single: Dict[int, bool] = {}

    def one_host(c):  # once per communicator (a dp group is asked by each of its members)
        got = single.get(c)
        if got is None:
            h = host_of[comms[c][0]] if comms[c] else -1
            got = single[c] = all(host_of[x] == h for x in comms[c])
        return got

    sets: Dict[int, Set[int]] = {}

    def member_set(c):  # once per communicator
        got = sets.get(c)
        if got is None:
            got = sets[c] = set(comms[c])
        return got

    where: Dict[int, Dict[int, int]] = {}

    def index_in(c, x):  # comms[c].index(x), each communicator's positions found once
        got = where.get(c)
        if got is None:
            got = where[c] = {y: i for i, y in reversed(list(enumerate(comms[c])))}
        return got[x]

    mp_of = [-1] * n
    dp_of = [-1] * n
    for x in range(n):
        cs = [c for c in within.get(x, []) if not (kinds_of[c] <= SHARDING_KINDS)]
        if not cs:
            continue
        cs.sort(key=lambda c: (-counts[c], 0 if one_host(c) else 1, c))
        if len(cs) == 1:
            c = cs[0]
            if multi_host and all(one_host(y) for y in [c]):
                mp_of[x] = c
            elif counts[c] / steps <= DP_MAX_RATE:
                dp_of[x] = c
            else:
                mp_of[x] = c
            continue
        mp_of[x] = cs[0]
        mset = member_set(cs[0])
        for c in cs[1:]:
            if mset & member_set(c) == {x}:
                dp_of[x] = c
                break
    for x in range(n):
        if mp_of[x] >= 0:
            axis[mp_of[x]] = "mp"
        if dp_of[x] >= 0 and axis[dp_of[x]] != "mp":
            axis[dp_of[x]] = "dp"
    for c in range(len(comms)):
        if axis[c] == "?":
            axis[c] = "sharding" if kinds_of[c] <= SHARDING_KINDS else "other"
    # a communicator called mp by some ranks and dp by others is neither
    for x in range(n):
        if dp_of[x] >= 0 and axis[dp_of[x]] != "dp":
            dp_of[x] = -1
        if mp_of[x] >= 0 and axis[mp_of[x]] != "mp":
            mp_of[x] = -1

    any_mp = any(c >= 0 for c in mp_of)
    any_dp = any(c >= 0 for c in dp_of)
    topo.pp = pp_deg if chains else 1
    topo.mp = max((len(comms[c]) for c in mp_of if c >= 0), default=1)
    topo.dp = max((len(comms[c]) for c in dp_of if c >= 0), default=1)
    topo.coord_pp = list(stage)
    topo.coord_mp = [index_in(mp_of[x], x) if mp_of[x] >= 0 else (-1 if any_mp else 0) for x in range(n)]
    topo.coord_dp = [index_in(dp_of[x], x) if dp_of[x] >= 0 else (-1 if any_dp else 0) for x in range(n)]
    by_replica = _replica_dp(
        n,
        chains,
        [comms[c] if c >= 0 else (x,) for x, c in enumerate(mp_of)],
        [comms[c] if c >= 0 else None for c in dp_of],
    )
    if by_replica is not None:
        topo.coord_dp = by_replica
    # sharding (Paddle's sharding_degree): a rank's within-stage communicator of all-gathers and
    # reduce-scatters only; its coordinate is its index there (present only when every rank has one)
    sh_of = [-1] * n
    for x in range(n):
        for c in within.get(x, []):
            if axis[c] == "sharding" and len(comms[c]) > 1:
                sh_of[x] = c
                break
    if n > 1 and all(c >= 0 for c in sh_of):
        topo.sharding = max(len(comms[c]) for c in sh_of)
        topo.coord_sharding = [index_in(sh_of[x], x) for x in range(n)]
    else:
        topo.coord_sharding = [-1] * n
    topo.pipelines = chains
    # groups: communicators other than send/recv pairs, then one "pp" group per pipeline
    for c, members in enumerate(comms):
        if axis[c] == "pp":
            continue
        topo.groups.append((axis[c], members, counts[c], tuple(sorted(kinds_of[c]))))
    for chain in chains:
        inst = sum(p2p_count.get((min(a, b), max(a, b)), 0) for a, b in zip(chain, chain[1:]))
        topo.groups.append(("pp", tuple(sorted(chain)), inst, (SEND_RECV,)))
    # Fleet's CommunicateTopology orders the axes data, pipe, sharding, (sep,) model, model fastest
    sh_deg = topo.sharding or 1
    sh = topo.coord_sharding if topo.sharding else [0] * n
    coords = list(zip(topo.coord_dp, topo.coord_pp, sh, topo.coord_mp))
    topo.complete = (
        all(min(c) >= 0 for c in coords) and len(set(coords)) == n and topo.dp * topo.pp * sh_deg * topo.mp == n
    )
    topo.matches_fleet_order = topo.complete and all(
        ranks[x].rank == ((d * topo.pp + p) * sh_deg + s_) * topo.mp + m for x, (d, p, s_, m) in enumerate(coords)
    )
    topo.method = (
        "pipelines from matched send/recv pairs (stage 0 sends first); pp_group = a communicator "
        "holding exactly one pipeline; per rank, its within-stage communicator with the most "
        "instances per step is mp, the one meeting it only in the rank is dp; indexes in rank order"
    )
    # model selection: the grid read off the groups against every DP x PP x MP factorization of the
    # world numbered by Fleet's formula; the one that explains the most matched instances wins, and
    # every rank gets its coordinates from it, or none gets any
    pick = select_model(ranks, comms, counts, kinds_of, topo, axis)
    topo.fit = pick.fit
    trusted = pick.source == "groups" or pick.fit >= _min_fit(ranks)
    if not flat.n and n > 1:
        # Paddle on CPU (gloo) records no event for a collective or a send/recv: nothing tells the grid
        topo.coord_dp = topo.coord_pp = topo.coord_mp = [-1] * n
        topo.complete = topo.matches_fleet_order = False
        topo.notes.append(
            "No trace holds a collective or send/recv instance (Paddle on CPU/gloo records none): "
            "no topology and no coordinates."
        )
    elif n > 1 and not trusted:
        topo.coord_dp = topo.coord_pp = topo.coord_mp = [-1] * n
        topo.coord_sharding = [-1] * n
        topo.complete = topo.matches_fleet_order = False
        topo.notes.append(
            f"No DP x PP x MP grid explains the run: the groups fill none exactly once, and the "
            f"best factorization numbered by Fleet's formula, {pick.label()}, explains "
            f"{100 * pick.fit:.1f} % of the matched instances (at least {100 * _min_fit(ranks):.0f} % "
            "needed); no rank is given coordinates."
        )
    elif n > 1:
        if pick.source == "fleet":
            topo.dp, topo.pp, topo.mp = pick.shape
            topo.sharding = 0
            topo.coord_dp, topo.coord_pp, topo.coord_mp = (list(c) for c in pick.coords)
            topo.coord_sharding = [-1] * n
            gone = missing_ranks(ranks)
            topo.complete = not gone
            topo.matches_fleet_order = True
            if gone:
                topo.missing = gone
                topo.notes.append(
                    f"Rank(s) {', '.join(map(str, gone[:16]))}{', …' if len(gone) > 16 else ''} of the "
                    f"{pick.label()} grid have no trace: the grid is incomplete, the other ranks have "
                    "their coordinates, and their groups count only the ranks with traces."
                )
            topo.method += (
                "; the grid: the DP x PP x MP factorization of the world, ranks numbered by Fleet's "
                "formula, that explains the most matched instances"
            )
        runner = f"; next best {pick.runner_up[0]}: {100 * pick.runner_up[1]:.1f} %" if pick.runner_up else ""
        topo.notes.append(
            f"{pick.label()} explains {100 * pick.fit:.1f} % of the matched instances (its groups' "
            f"members exactly), of {pick.candidates} grids tried{runner}."
        )
    g_axis = np.array([axis[c] for c in g_comm.tolist()], dtype=object) if flat.n else np.zeros(0, dtype=object)
    return topo, axis, g_axis


# a factorization numbered by Fleet's formula is taken only when it explains at least this share of the
# matched instances; when the rank numbers are inferred (Paddle's default worker names: hosts in natural
# order, which need not be Fleet's), at least MODEL_MIN_FIT_INFERRED
MODEL_MIN_FIT = 0.9
MODEL_MIN_FIT_INFERRED = 0.99


def _min_fit(ranks: Sequence[RankData]) -> float:
    return MODEL_MIN_FIT_INFERRED if any(r.rank_inferred for r in ranks) else MODEL_MIN_FIT


class _Pick:
    """The chosen grid: where its coordinates come from ("groups": read off the matched groups;
    "fleet": Fleet's formula on the rank numbers), its shape, coordinates and fit."""

    def __init__(self, source, shape, coords, fit, candidates, runner_up, sharding=0):
        self.source, self.shape, self.coords, self.fit = source, shape, coords, fit
        self.candidates, self.runner_up, self.sharding = candidates, runner_up, sharding

    def label(self) -> str:
        d, p, m = self.shape
        sh = f" x sharding {self.sharding}" if self.sharding else ""
        return f"DP {d} x PP {p} x MP {m}{sh}"


def world_size(ranks: Sequence[RankData]) -> int:
    """The job's world: its ranks, or its highest rank + 1 where a few numbers are missing (the rank
    numbers told by the file names, or read off hosts and GPUs: load._lane_ranks; then at least the
    hosts times the GPUs seen, so that the last rank's trace may be the missing one)."""
    n = len(ranks)
    if not n:
        return 0
    top = max(r.rank for r in ranks) + 1
    if all(r.rank_inferred and r.hostname and r.device_id >= 0 for r in ranks):
        # numbered from hosts and GPUs: every host runs as many ranks as GPUs seen (the last one's too)
        top = max(top, len({r.hostname for r in ranks}) * len({r.device_id for r in ranks}))
    if top > n and len({r.rank for r in ranks}) == n and n >= T.WORLD_MIN_PRESENT * top:
        return top
    return n


def missing_ranks(ranks: Sequence[RankData]) -> List[int]:
    """The rank numbers of the world (world_size) that have no trace."""
    here = {r.rank for r in ranks}
    return [x for x in range(world_size(ranks)) if x not in here]


def _divisors(n: int) -> List[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def factorizations(n: int) -> List[Tuple[int, int, int]]:
    """Every (dp, pp, mp) with dp * pp * mp = n."""
    return [(d, p, n // (d * p)) for d in _divisors(n) for p in _divisors(n // d)]


def fleet_coords(rank: np.ndarray, shape: Tuple[int, int, int]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fleet's coordinates of each rank number: rank = (dp * PP + pp) * MP + mp."""
    _, P, M = shape
    return rank // (P * M), (rank // M) % P, rank % M


def explained(comms: List[Tuple[int, ...]], counts: List[int], p2p: np.ndarray, coords, shape) -> float:
    """The share of the matched instances whose members are exactly one group of the grid ``shape``
    with per-rank-index ``coords`` (dp, pp, mp arrays): an mp group (one dp and pp, MP members), a dp
    group (one pp and mp, DP members), a pipeline (one dp and mp, PP members), the world, a send/recv
    pair of neighbouring stages of one pipeline (stage 0 and the last too: the interleaved ring), a
    one-rank communicator where an axis has one rank."""
    return _explain(comms, counts, p2p, coords, shape)[0]


class _Members:
    """The communicators as flat columns, made once for every grid scored (select_model)."""

    def __init__(self, comms, counts):
        self.n = len(comms)
        self.total = float(sum(counts))
        self.counts = np.asarray(counts, dtype=np.float64)
        self.size = np.array([len(c) for c in comms], dtype=np.int64)
        self.mem = np.fromiter((x for c in comms for x in c), dtype=np.int64, count=int(self.size.sum()))
        self.ptr = np.concatenate([[0], np.cumsum(self.size)[:-1]]).astype(np.int64)


def _explain(
    comms, counts, p2p, coords, shape, members: Optional[_Members] = None, labels: Optional[Sequence[str]] = None
) -> Tuple[float, Set[str], float]:
    """(explained's share, the axes some explained communicator is a group of: "mp", "dp", "pp" (a
    pipeline-group collective), "p2p" (a send/recv pair), the share explained as a group of the very axis
    ``labels`` give it (each communicator's axis as the groups read it; 0 without labels): select_model's
    tie-break)."""
    cm = members if members is not None else _Members(comms, counts)
    total = cm.total
    if not cm.n or not total:
        return 0.0, set(), 0.0
    D, P, M = shape
    n = int(D * P * M)
    size, mem, ptr = cm.size, cm.mem, cm.ptr
    d, p, m = (np.asarray(x, dtype=np.int64)[mem] for x in coords)

    def same(x):
        return np.maximum.reduceat(x, ptr) == np.minimum.reduceat(x, ptr)

    sd, sp, sm = same(d), same(p), same(m)
    coll = ~p2p
    gap = np.abs(np.maximum.reduceat(p, ptr) - np.minimum.reduceat(p, ptr))
    # a group's size: its ranks that have a trace (all of them but where the world lacks some)
    size_mp, size_dp, size_pp, size_world = M, D, P, n
    n_here = len(coords[0])
    if n_here < n:
        cd, cp, cm_ = (np.asarray(x, dtype=np.int64) for x in coords)
        d0, p0, m0 = d[ptr], p[ptr], m[ptr]
        size_mp = np.bincount(cd * P + cp, minlength=D * P)[d0 * P + p0]
        size_dp = np.bincount(cp * M + cm_, minlength=P * M)[p0 * M + m0]
        size_pp = np.bincount(cd * M + cm_, minlength=D * M)[d0 * M + m0]
        size_world = n_here
    rules = {
        "one": coll & (size == 1) & ((M == 1) | (D == 1) | (P == 1)),
        "mp": coll & (size > 1) & (size == size_mp) & sd & sp,
        "dp": coll & (size > 1) & (size == size_dp) & sp & sm,
        "pp": coll & (size > 1) & (size == size_pp) & sd & sm,
        "world": coll & (size == size_world) & (n > 1),
        "p2p": p2p & (size == 2) & sd & sm & ((gap == 1) | ((gap == P - 1) & (P > 2))),
    }
    ok = np.zeros(len(comms), dtype=bool)
    for v in rules.values():
        ok |= v
    fit = float(cm.counts[ok].sum() / total)
    agree = 0.0
    if labels is not None:
        lab = np.asarray(labels, dtype=object)
        same_axis = np.zeros(len(comms), dtype=bool)
        for ax in ("mp", "dp", "pp"):
            same_axis |= rules[ax] & (lab == ax)
        agree = float(cm.counts[same_axis].sum() / total)
    return fit, {k for k, v in rules.items() if v.any()}, agree


def _unevidenced(shape: Tuple[int, int, int], seen: Set[str]) -> Tuple[int, int]:
    """(1 when the grid has stages but no send/recv pair between them, else 0; how many of its axes of
    more than one rank no explained communicator is a group of)."""
    D, P, M = shape
    axes = [("dp", D, {"dp"}), ("pp", P, {"pp", "p2p"}), ("mp", M, {"mp"})]
    return int(P > 1 and "p2p" not in seen), sum(1 for _, k, ev in axes if k > 1 and not (ev & seen))


def select_model(
    ranks: Sequence[RankData],
    comms: List[Tuple[int, ...]],
    counts: List[int],
    kinds_of: Dict[int, Set[int]],
    topo: Topology,
    labels: Optional[Sequence[str]] = None,
) -> _Pick:
    """The grid that explains the most matched instances: the one read off the groups (when it is
    complete) or a DP x PP x MP factorization of the world with Fleet's rank numbering (taken only
    when it explains at least _min_fit; else the groups' grid, when complete). Ties go to the
    grid that leaves no axis without evidence (stages need send/recv pairs between them; an axis of
    more than one rank, some communicator that is one of its groups), then to the grid of the groups,
    then to the factorization whose first stage holds the ranks that read data (the data loader runs
    on stage 0 only, when not on every rank), then to the first in order."""
    n = len(ranks)
    p2p = np.array([kinds_of.get(c, set()) == {SEND_RECV} for c in range(len(comms))], dtype=bool)
    rank = np.array([r.rank for r in ranks], dtype=np.int64)
    reads = np.array([any(s.dataloader_ns > 0 for s in r.steps.values()) for r in ranks], dtype=bool)
    informative = 0 < int(reads.sum()) < n
    members = _Members(comms, counts)
    scored = []
    world = world_size(ranks)
    # with ranks missing from the world the groups' grid indexes the ranks at hand (a DP group of 31 of 32
    # numbers every rank after the gap one too low): only Fleet's formula on the rank numbers places them
    if topo.complete and (world == n or topo.sharding):
        coords = (np.array(topo.coord_dp), np.array(topo.coord_pp), np.array(topo.coord_mp))
        if topo.sharding:  # the sharding axis is read off its groups only: that grid is taken as it is
            return _Pick("groups", (topo.dp, topo.pp, topo.mp), coords, 1.0 if comms else 0.0, 1, None, topo.sharding)
        shape = (topo.dp, topo.pp, topo.mp)
        fit, seen, _ = _explain(comms, counts, p2p, coords, shape, members)
        scored.append((fit, _unevidenced(shape, seen), 1, 0.0, "groups", shape, coords, 0.0))
    # without the groups' grid (ranks missing), factorizations that explain as much are told apart by the
    # axes the groups read (a communicator meeting a rank once a step is DP, not MP)
    by_axis = labels if world > n else None
    for shape in factorizations(world):
        coords = fleet_coords(rank, shape)
        prog = float(np.mean(reads == (coords[1] == 0))) if informative and shape[1] > 1 else 0.0
        fit, seen, agree = _explain(comms, counts, p2p, coords, shape, members, by_axis)
        scored.append((fit, _unevidenced(shape, seen), 0, prog, "fleet", shape, coords, agree))
    scored.sort(key=lambda x: (-x[0], x[1], -x[2], -x[7], -x[3]))
    ranked = [(x[0], x[2], x[3], x[4], x[5], x[6]) for x in scored]
    best = ranked[0]
    if best[3] == "fleet" and best[0] < _min_fit(ranks) and any(x[3] == "groups" for x in ranked):
        best = next(x for x in ranked if x[3] == "groups")  # a hypothesis that fits badly: the groups' grid
    runner = next(((_Pick(x[3], x[4], x[5], x[0], 0, None).label(), x[0]) for x in ranked[1:] if x[4] != best[4]), None)
    return _Pick(best[3], best[4], best[5], best[0], len(ranked), runner)
