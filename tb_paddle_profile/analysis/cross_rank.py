"""All ranks of one run and span side by side: waits at collectives, stragglers, pipeline
bubbles and advice, from each rank's ``Summary.parallel`` (collectives.py).

Definitions (also in docs/distributed.md):

- Ranks are aligned by ProfileStep number.
- Matching. Paddle traces carry no communicator ids, so instances are matched from what the
  traces show. Collectives other than send/recv: ranks whose per-step sequence of collective
  kinds is identical (same program: same pipeline stage) are lined up by position in that
  sequence (step, kind, ordinal); such a line-up may still hold several groups (the model-
  parallel groups of two data-parallel replicas), so it is cut where neighbouring absolute
  end times are far apart compared with how close each member's end is to its nearest other
  end (the members of one collective finish together). A line-up of two stays whole, which
  also covers two ranks whose clocks disagree. Send/recv: partner ranks are the pairs whose
  send/recv instances end together often; their instances are paired by nearest end (a send
  ends with its recv); without comparable clocks they stay unmatched.
- For a matched instance the transfer is the shortest member duration (the member that
  arrived last did not wait); each member's wait is its duration minus the transfer, and
  that wait is caused by the member with the shortest duration (the last to arrive).
- Straggler: per rank, per step, the wait it caused its peers at collectives other than
  send/recv, minus the wait it spent itself there, minus its send/recv wait beyond the median
  of its peers' (a rank held up by its pipeline neighbours arrives late through no fault of
  its own; send/recv waits as such follow the pipeline's schedule).
  A rank is named when that net caused wait is at least STRAGGLER_MIN_WAIT_FRACTION of the
  median step time and at least STRAGGLER_SHARE_OF_TOP of the largest one. Why: its compute
  per step against the median of the ranks it shares collectives with (its peers); at least
  COMPUTE_EXCESS_THRESHOLD more is "longer compute", else it arrives late with no more
  compute (host side: CPU, data loading, launches).
- Pipeline: ranks linked by matched send/recv form chains; the end whose first send/recv of
  a step is a send is stage 0. Bubble of a rank = exposed send/recv time per step (its GPU
  waits for a neighbour stage and computes nothing), bubble ratio = bubble / step time.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from ..v1 import plugin_pb2 as ppb
from ..v1 import summary_pb2 as pb
from .collectives import ALL_REDUCE, SEND_RECV

# Matching collectives: a line-up is cut where neighbouring end times differ by more than
# END_GAP_FACTOR × the typical distance to the nearest other end, and at least END_GAP_MIN_NS.
END_GAP_FACTOR = 10
END_GAP_MIN_NS = 100
# Matching send/recv: the two ends agree within this much, or this share of the shorter duration.
END_TOLERANCE_NS = 5_000
END_TOLERANCE_FRACTION = 0.01
# Send/recv partners: ranks whose send/recv end together this often (share of the smaller count).
P2P_PARTNER_SHARE = 0.25

# Straggler verdict.
STRAGGLER_MIN_WAIT_FRACTION = 0.05
STRAGGLER_SHARE_OF_TOP = 0.5
COMPUTE_EXCESS_THRESHOLD = 0.10

# Advice thresholds (fractions of the step time unless said otherwise).
EXPOSED_ALL_REDUCE_FRACTION = 0.10
EXPOSED_OTHER_COLLECTIVES_FRACTION = 0.10
LAUNCH_BOUND_RUNTIME_FRACTION = 0.50
MEMCPY_FRACTION = 0.10
GPU_IDLE_FRACTION = 0.20
PIPELINE_BUBBLE_FRACTION = 0.20
STAGE_IMBALANCE_FRACTION = 0.10

BUBBLE_DEFINITION = (
    "bubble = time per step during which a pipeline send/recv is in flight on the rank's GPU while no "
    "computation runs (the stage waits for a neighbour stage); bubble ratio = bubble / step time. "
    "On a CPU trace: the host's send/recv time.")


@dataclass
class _Rank:
    summary: pb.Summary
    rank: int
    worker: str
    inferred: bool
    steps: Dict[int, pb.ParallelStep]
    # instance columns
    kind: np.ndarray
    step: np.ndarray
    ordinal: np.ndarray
    start: np.ndarray      # absolute ns
    end: np.ndarray        # absolute ns
    direction: np.ndarray
    names: List[str]
    # filled by the matching
    wait: np.ndarray = None
    transfer: np.ndarray = None
    matched: np.ndarray = None
    caused: float = 0.0
    last_arrivals: int = 0
    peers: set = field(default_factory=set)


def _load(summaries: Sequence[pb.Summary]) -> Tuple[List[_Rank], List[str]]:
    notes = []
    ranks = [s.meta.rank for s in summaries]
    inferred = any(r < 0 for r in ranks) or len(set(ranks)) != len(ranks)
    if inferred:
        order = sorted(range(len(summaries)), key=lambda i: (summaries[i].meta.hostname, summaries[i].meta.pid,
                                                               summaries[i].meta.worker, summaries[i].meta.file_name))
        ranks = [0] * len(summaries)
        for r, i in enumerate(order):
            ranks[i] = r
        notes.append("The file names do not tell every rank (or tell one twice): ranks are numbered in the order "
                     "of hostname, pid and worker name.")
    out = []
    for s, r in zip(summaries, ranks):
        c = s.parallel.collectives
        start = np.array(c.start_ns, dtype=np.int64) + s.meta.origin_unix_ns
        n = start.size
        out.append(_Rank(
            summary=s, rank=r, worker=s.meta.worker, inferred=inferred,
            steps={st.step: st for st in s.parallel.steps},
            kind=np.array(c.kind, dtype=np.int64), step=np.array(c.step, dtype=np.int64),
            ordinal=np.array(c.ordinal, dtype=np.int64), start=start,
            end=start + np.array(c.duration_ns, dtype=np.int64),
            direction=np.array(c.direction, dtype=np.int64),
            names=[s.parallel.names[i] for i in c.name],
            wait=np.zeros(n, dtype=np.int64), transfer=np.zeros(n, dtype=np.int64),
            matched=np.zeros(n, dtype=bool)))
    out.sort(key=lambda r: r.rank)
    return out, notes


def _tolerance(durations: Iterable[int]) -> int:
    return max(END_TOLERANCE_NS, int(END_TOLERANCE_FRACTION * min(durations)))


def _split_by_end(members: List[Tuple[int, int]], ranks: List[_Rank]) -> List[List[Tuple[int, int]]]:
    """Members (rank index, instance index) of one line-up → the groups that ended together.

    The members of one collective end together, up to a small spread; several groups in one
    line-up end apart. Sorted by end, the line-up is cut where two neighbours are further apart
    than END_GAP_FACTOR times the typical distance of a member to its nearest other end (the
    spread within a group), and at least END_GAP_MIN_NS. Members left alone are dropped (not
    matched); with only two members there is nothing to tell apart and they stay one group."""
    if len(members) < 2:
        return []
    members = sorted(members, key=lambda m: ranks[m[0]].end[m[1]])
    ends = np.array([ranks[a].end[b] for a, b in members], dtype=np.int64)
    gaps = np.diff(ends)
    nearest = np.minimum(np.concatenate([[gaps[0]], gaps]), np.concatenate([gaps, [gaps[-1]]]))
    tol = max(END_GAP_MIN_NS, END_GAP_FACTOR * float(np.median(nearest)))
    cuts = np.nonzero(gaps > tol)[0] + 1
    groups = [list(g) for g in np.split(np.arange(len(members)), cuts)]
    return [[members[i] for i in g] for g in groups if len(g) > 1]


def _refine_by_other_steps(per_step):
    """[(step, groups)] of one line-up position → the same, where a step's groups that are a union of
    the groups most steps show at that position are split like them. Two groups that happen to end
    within the gap tolerance of each other in one step (the same collective of two data-parallel
    groups, say) are then still told apart."""
    def ranks_of(groups):
        return frozenset(frozenset(ri for ri, _ in g) for g in groups)

    shapes = [ranks_of(groups) for _, groups in per_step]
    usual, seen = max(((sh, shapes.count(sh)) for sh in set(shapes)), key=lambda x: (x[1], len(x[0])),
                      default=(frozenset(), 0))
    if seen < 2:
        return per_step
    out = []
    for (step, groups), shape in zip(per_step, shapes):
        if shape != usual:
            refined = []
            for g in groups:
                members = frozenset(ri for ri, _ in g)
                parts = [u for u in usual if u <= members]
                if len(parts) > 1 and frozenset().union(*parts) == members:
                    refined.extend([m for m in g if m[0] in u] for u in parts)
                else:
                    refined.append(g)
            groups = refined
        out.append((step, groups))
    return out


def _p2p_coincide(a: Tuple[int, int], b: Tuple[int, int], ranks: List[_Rank]) -> bool:
    """Two send/recv instances of different ranks that can be one transfer: they end together and
    are not two sends (or two recvs)."""
    ra, rb = ranks[a[0]], ranks[b[0]]
    if a[0] == b[0]:
        return False
    da, db = ra.direction[a[1]], rb.direction[b[1]]
    if da and db and da == db:
        return False
    durs = (ra.end[a[1]] - ra.start[a[1]], rb.end[b[1]] - rb.start[b[1]])
    return abs(int(rb.end[b[1]]) - int(ra.end[a[1]])) <= _tolerance(durs)


def _p2p_partners(pools: Dict[int, List[Tuple[int, int]]], ranks: List[_Rank]) -> List[Tuple[int, int]]:
    """Rank pairs (indices) that exchange send/recv: pairs whose instances end together for at least
    P2P_PARTNER_SHARE of the smaller one's send/recv instances. Chance coincidences between ranks of
    different pipelines stay below that; a stage's neighbours reach it."""
    score: Dict[Tuple[int, int], int] = defaultdict(int)
    count: Dict[int, int] = defaultdict(int)
    for members in pools.values():
        members = sorted(members, key=lambda m: ranks[m[0]].end[m[1]])
        for i, a in enumerate(members):
            count[a[0]] += 1
            for b in members[i + 1:]:
                if ranks[b[0]].end[b[1]] - ranks[a[0]].end[a[1]] > _tolerance(
                        (ranks[a[0]].end[a[1]] - ranks[a[0]].start[a[1]],)) + END_TOLERANCE_NS:
                    break
                if _p2p_coincide(a, b, ranks):
                    score[tuple(sorted((a[0], b[0])))] += 1
    pairs = [(k, v) for k, v in score.items() if v >= max(2, P2P_PARTNER_SHARE * min(count[k[0]], count[k[1]]))]
    return [k for k, _ in sorted(pairs, key=lambda kv: -kv[1])]


def _pair_send_recv(members: List[Tuple[int, int]], partners: List[Tuple[int, int]],
                    ranks: List[_Rank]) -> List[List[Tuple[int, int]]]:
    """Within one step: for each partner pair (strongest first), instances of the two ranks that end
    together, nearest ends first; each instance is used once."""
    pairs, used = [], set()
    for ra, rb in partners:
        mine = sorted((m for m in members if m[0] in (ra, rb) and m not in used),
                      key=lambda m: ranks[m[0]].end[m[1]])
        for i, a in enumerate(mine):
            if a in used:
                continue
            reach = _tolerance((ranks[a[0]].end[a[1]] - ranks[a[0]].start[a[1]],))
            for b in mine[i + 1:]:
                if ranks[b[0]].end[b[1]] - ranks[a[0]].end[a[1]] > reach:
                    break
                if b not in used and _p2p_coincide(a, b, ranks):
                    used.update((a, b))
                    pairs.append([a, b])
                    break
    return pairs


def _match(ranks: List[_Rank]) -> List[Tuple[int, int, List[Tuple[int, int]]]]:
    """(step, kind, members) for every matched instance."""
    out = []
    steps = sorted({int(s) for r in ranks for s in np.unique(r.step) if s >= 0} or
                   {int(s) for r in ranks for s in np.unique(r.step)})
    # Collectives: line up ranks with the same sequence of kinds in a step; each position of a
    # line-up splits into the groups that ended together.
    lineups: Dict[tuple, List[Tuple[int, List[List[Tuple[int, int]]]]]] = defaultdict(list)
    for step in steps:
        classes: Dict[tuple, List[int]] = defaultdict(list)
        seqs = {}
        for ri, r in enumerate(ranks):
            idx = np.nonzero((r.step == step) & (r.kind != SEND_RECV))[0]
            if idx.size:
                seqs[ri] = idx
                classes[tuple(r.kind[idx].tolist())].append(ri)
        for signature, members in classes.items():
            if len(members) < 2:
                continue
            for pos, kind in enumerate(signature):
                line = [(ri, int(seqs[ri][pos])) for ri in members]
                lineups[(signature, tuple(members), pos, kind)].append((step, _split_by_end(line, ranks)))
    for (_, _, _, kind), per_step in lineups.items():
        for step, groups in _refine_by_other_steps(per_step):
            out.extend((step, kind, g) for g in groups)
    out.sort(key=lambda x: x[0])  # step by step, as the line-ups were met (a stable sort)
    # Send/recv: pairs of partner ranks that end together.
    pools = {step: [(ri, int(i)) for ri, r in enumerate(ranks)
                    for i in np.nonzero((r.step == step) & (r.kind == SEND_RECV))[0]] for step in steps}
    partners = _p2p_partners(pools, ranks)
    for step in steps:
        for g in _pair_send_recv(pools[step], partners, ranks):
            out.append((step, SEND_RECV, g))
    return out


def _per_step(r: _Rank, attr: str) -> int:
    vals = [getattr(s, attr) for s in r.steps.values()]
    return int(round(sum(vals) / len(vals))) if vals else 0


def _step_time(s: pb.ParallelStep) -> int:
    return s.range.end_ns - s.range.start_ns


def _kind_step(s: pb.ParallelStep, kind: int) -> Optional[pb.KindStep]:
    for k in s.kinds:
        if k.kind == kind:
            return k
    return None


def analyze_run(summaries: Sequence[pb.Summary], run: str = "", span: str = "") -> ppb.RunParallel:
    """The RunParallel of the given Summaries (one per rank of one run and span)."""
    out = ppb.RunParallel(run=run, span=span)
    if not summaries:
        out.notes.append("No traces.")
        return out
    ranks, notes = _load(summaries)
    out.notes.extend(notes)

    # ---- match instances and attribute waits
    matched = _match(ranks)
    n_inst = sum(r.kind.size for r in ranks)
    for step, kind, members in matched:
        durs = [int(ranks[a].end[b] - ranks[a].start[b]) for a, b in members]
        transfer = min(durs)
        last = min(range(len(members)), key=lambda i: (durs[i], ranks[members[i][0]].rank))
        m = out.matched.add(step=step, kind=kind, name=ranks[members[last][0]].names[members[last][1]],
                            transfer_ns=transfer, last_rank=ranks[members[last][0]].rank)
        caused = 0
        for (a, b), d in zip(members, durs):
            r = ranks[a]
            r.wait[b], r.transfer[b], r.matched[b] = d - transfer, transfer, True
            caused += d - transfer
            m.members.add(rank=r.rank, ordinal=int(r.ordinal[b]), duration_ns=d, wait_ns=d - transfer,
                          start_unix_ns=int(r.start[b]), direction=int(r.direction[b]))
        if kind != SEND_RECV:
            lr = ranks[members[last][0]]
            lr.caused += caused
            lr.last_arrivals += 1
            for a, _ in members:
                ranks[a].peers.update(ranks[x].rank for x, _ in members if x != a)
    out.matching.instances = n_inst
    out.matching.matched_instances = sum(int(r.matched.sum()) for r in ranks)
    out.matching.end_tolerance_ns = END_TOLERANCE_NS
    out.matching.method = (
        "collectives: ranks with the same per-step sequence of kinds lined up by (step, kind, ordinal), cut "
        f"where neighbouring end times differ by more than {END_GAP_FACTOR}x the typical distance to the "
        f"nearest other end (at least {END_GAP_MIN_NS} ns); send/recv: pairs of partner ranks whose ends agree "
        f"within max({END_TOLERANCE_NS} ns, {END_TOLERANCE_FRACTION:.0%} of the shorter duration)")
    if n_inst and not out.matching.matched_instances and len(ranks) > 1:
        out.notes.append("No collective instance could be matched across ranks: waits and the straggler verdict "
                         "need instances that line up (same steps and sequence of collectives).")

    # ---- steps and heatmaps
    all_steps = sorted({n for r in ranks for n in r.steps})
    out.steps.extend(all_steps)
    for r in ranks:
        for n in all_steps:
            s = r.steps.get(n)
            out.step_time.values_ns.append(_step_time(s) if s else -1)
            out.exposed_communication.values_ns.append(s.exposed_communication_ns if s else -1)
    missing = [r.rank for r in ranks if len(r.steps) < len(all_steps)]
    if missing:
        out.notes.append(f"Ranks {', '.join(map(str, missing))} lack some of the steps {all_steps}.")

    # ---- per rank
    compute = {r.rank: _per_step(r, "compute_ns") for r in ranks}
    msgs: Dict[int, ppb.RankParallel] = {}
    for r in ranks:
        n_steps = max(1, len(r.steps))
        m = out.ranks.add(worker=r.worker, rank=r.rank, rank_inferred=r.inferred,
                          file_name=r.summary.meta.file_name, timeline=r.summary.parallel.timeline,
                          steps=len(r.steps))
        m.step_breakdown.extend(r.summary.parallel.steps)
        m.step_time_ns = int(round(sum(_step_time(s) for s in r.steps.values()) / n_steps))
        for f in ("compute_ns", "communication_ns", "hidden_communication_ns", "exposed_communication_ns",
                  "memory_ns", "exposed_memory_ns", "idle_ns", "runtime_ns", "sync_ns", "kernel_ns", "launches"):
            setattr(m, f, _per_step(r, f))
        for kind in sorted({k.kind for s in r.steps.values() for k in s.kinds} | set(np.unique(r.kind).tolist())):
            rk = m.kinds.add(kind=int(kind))
            for s in r.steps.values():
                k = _kind_step(s, kind)
                if k is not None:
                    rk.calls += k.calls
                    rk.device_ns += k.device_ns
                    rk.host_ns += k.host_ns
                    rk.exposed_ns += k.exposed_ns
                    rk.bytes += k.bytes
            sel = (r.kind == kind) & r.matched
            rk.wait_ns, rk.transfer_ns, rk.matched = int(r.wait[sel].sum()), int(r.transfer[sel].sum()), int(sel.sum())
        coll = (r.kind != SEND_RECV) & r.matched
        m.wait_ns = int(round(r.wait[coll].sum() / n_steps))
        m.caused_wait_ns = int(round(r.caused / n_steps))
        m.last_arrivals = r.last_arrivals
        m.matched = int(coll.sum())
        m.peers.extend(sorted(r.peers))
        peer_c = [compute[p] for p in r.peers]
        m.peer_compute_ns = int(statistics.median(peer_c)) if peer_c else 0
        m.pipeline_stage = -1
        msgs[r.rank] = m

    # ---- kinds across ranks
    for kind in sorted({k.kind for m in out.ranks for k in m.kinds}):
        ka = out.kinds.add(kind=kind)
        for m in out.ranks:
            for k in m.kinds:
                if k.kind == kind:
                    ka.calls += k.calls
                    ka.device_ns += k.device_ns
                    ka.host_ns += k.host_ns
                    ka.exposed_ns += k.exposed_ns
                    ka.bytes += k.bytes
                    ka.matched += k.matched
                    ka.wait_ns += k.wait_ns
                    ka.transfer_ns += k.transfer_ns
                    ka.ranks.append(m.rank)

    _straggler(out, ranks, msgs)
    _pipeline(out, ranks, matched, msgs)
    _advice(out, msgs)
    return out


# Times inside sentences (verdict, reasons, advice) are written as "{ns:N}" tokens, which the CLI
# (render.parallel_text.fill_times) and the tab print in the unit the user chose.
TIME_TOKEN = "{ns:%d}"


def _t(ns: float) -> str:
    return TIME_TOKEN % int(round(ns))


def _straggler(out: ppb.RunParallel, ranks: List[_Rank], msgs: Dict[int, ppb.RankParallel]) -> None:
    v = out.straggler
    v.min_wait_fraction = STRAGGLER_MIN_WAIT_FRACTION
    v.min_share_of_top = STRAGGLER_SHARE_OF_TOP
    v.compute_excess_threshold = COMPUTE_EXCESS_THRESHOLD
    step_times = [m.step_time_ns for m in out.ranks if m.steps]
    if len(ranks) < 2 or not step_times:
        v.summary = "A straggler needs at least two ranks with steps."
        return
    median_step = statistics.median(step_times)
    # A rank held up by its pipeline neighbours (send/recv waits beyond its peers') arrives late at
    # the next collective through no fault of its own: that excess counts as its own wait.
    p2p = {m.rank: sum(k.wait_ns for k in m.kinds if k.kind == SEND_RECV) // max(1, m.steps) for m in out.ranks}
    excess = {m.rank: max(0, p2p[m.rank] - int(statistics.median([p2p[x] for x in m.peers]))) if m.peers else 0
              for m in out.ranks}
    net = {m.rank: m.caused_wait_ns - m.wait_ns - excess[m.rank] for m in out.ranks}
    top = max(net.values())
    floor = STRAGGLER_MIN_WAIT_FRACTION * median_step
    if not any(m.matched for m in out.ranks):
        v.summary = "No collective could be matched across ranks, so nobody can be named."
        return
    for m in sorted(out.ranks, key=lambda m: -net[m.rank]):
        if net[m.rank] < floor or net[m.rank] < STRAGGLER_SHARE_OF_TOP * top:
            continue
        s = v.stragglers.add(rank=m.rank, worker=m.worker, net_caused_wait_ns=net[m.rank],
                             caused_wait_ns=m.caused_wait_ns, own_wait_ns=m.wait_ns,
                             pipeline_wait_excess_ns=excess[m.rank],
                             last_arrivals=m.last_arrivals, matched=m.matched,
                             compute_ns=m.compute_ns, peer_compute_ns=m.peer_compute_ns)
        s.compute_excess = (m.compute_ns / m.peer_compute_ns - 1) if m.peer_compute_ns else 0.0
        s.longer_compute = s.compute_excess >= COMPUTE_EXCESS_THRESHOLD
        lead = (f"rank {m.rank} arrives last at {m.last_arrivals} of the {m.matched} collectives it shares; its peers "
                f"wait {_t(m.caused_wait_ns)} per step for it (net of its own waits: {_t(net[m.rank])}, "
                f"{net[m.rank] / median_step:.1%} of the median step {_t(median_step)})")
        if s.longer_compute:
            s.reason = (f"{lead}, because its compute takes {_t(m.compute_ns)} per step, {s.compute_excess:.0%} more "
                        f"than its peers' median {_t(m.peer_compute_ns)}.")
        else:
            s.reason = (f"{lead}, while its compute ({_t(m.compute_ns)} per step) is within "
                        f"{COMPUTE_EXCESS_THRESHOLD:.0%} of its peers' median ({_t(m.peer_compute_ns)}): it starts its "
                        f"collectives late for host-side reasons (CPU, data loading, kernel launches).")
    v.found = bool(v.stragglers)
    if v.found:
        names = ", ".join(f"rank {s.rank}" for s in v.stragglers)
        why = "; ".join(("longer compute" if s.longer_compute else "late arrival with normal compute")
                        for s in v.stragglers)
        v.summary = f"Straggler: {names} ({why})."
    else:
        v.summary = (f"No straggler: no rank makes its peers wait {STRAGGLER_MIN_WAIT_FRACTION:.0%} of the median step "
                     f"({_t(floor)}) per step or more beyond its own waits (largest: {_t(max(top, 0))}).")
    named = {s.rank for s in v.stragglers}
    for m in out.ranks:
        if m.rank not in named and m.peer_compute_ns and m.compute_ns >= (1 + COMPUTE_EXCESS_THRESHOLD) * m.peer_compute_ns:
            v.summary += (f" Rank {m.rank} computes {m.compute_ns / m.peer_compute_ns - 1:.0%} more than its peers "
                          f"({_t(m.compute_ns)} against {_t(m.peer_compute_ns)} per step), but they hardly wait for "
                          f"it ({_t(max(net[m.rank], 0))} per step net).")


def _pipeline(out: ppb.RunParallel, ranks: List[_Rank], matched, msgs: Dict[int, ppb.RankParallel]) -> None:
    pv = out.pipeline
    pv.definition = BUBBLE_DEFINITION
    with_p2p = [r for r in ranks if (r.kind == SEND_RECV).any()]
    if not with_p2p:
        return
    pv.present = True
    for r in with_p2p:
        m = msgs[r.rank]
        bub = [(_kind_step(s, SEND_RECV).exposed_ns if _kind_step(s, SEND_RECV) else 0) for s in r.steps.values()]
        m.bubble_ns = int(round(sum(bub) / len(bub))) if bub else 0
        m.bubble_ratio = m.bubble_ns / m.step_time_ns if m.step_time_ns else 0.0

    # Chains of ranks linked by matched send/recv.
    adj: Dict[int, set] = defaultdict(set)
    for _, kind, members in matched:
        if kind == SEND_RECV and len(members) == 2:
            a, b = ranks[members[0][0]].rank, ranks[members[1][0]].rank
            adj[a].add(b)
            adj[b].add(a)
    by_rank = {r.rank: r for r in ranks}
    seen, chains = set(), []
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
        is_path = len(comp) >= 2 and len(ends) == 2 and all(len(adj[x]) <= 2 for x in comp)
        if not is_path:
            out.notes.append(f"Ranks {sorted(comp)} exchange send/recv but do not form one chain; no stages given.")
            continue
        head = min(ends, key=lambda x: (0 if _first_p2p_is_send(by_rank[x]) else 1, x))
        chain, prev = [head], None
        while len(chain) < len(comp):
            nxt = [y for y in adj[chain[-1]] if y != prev]
            prev = chain[-1]
            chain.append(nxt[0])
        chains.append(chain)
    pv.pipelines = len(chains)
    if not chains:
        out.notes.append("Send/recv found, but no pair matched across ranks: pipeline stages are unknown; the "
                         "bubble is given per rank.")
        return
    depth = max(len(c) for c in chains)
    for stage in range(depth):
        members = [c[stage] for c in chains if len(c) == depth]
        for x in members:
            msgs[x].pipeline_stage = stage
        ps = pv.stages.add(stage=stage, ranks=sorted(members))
        ms = [msgs[x] for x in members]
        ps.step_time_ns = int(round(sum(m.step_time_ns for m in ms) / len(ms)))
        ps.compute_ns = int(round(sum(m.compute_ns for m in ms) / len(ms)))
        ps.bubble_ns = int(round(sum(m.bubble_ns for m in ms) / len(ms)))
        ps.bubble_ratio = sum(m.bubble_ratio for m in ms) / len(ms)
    if any(len(c) != depth for c in chains):
        out.notes.append("Pipelines of different lengths: stages are given for the longest ones only.")


def _first_p2p_is_send(r: _Rank) -> bool:
    idx = np.nonzero(r.kind == SEND_RECV)[0]
    return bool(idx.size) and r.direction[idx[0]] == pb.P2P_DIRECTION_SEND


def _advice(out: ppb.RunParallel, msgs: Dict[int, ppb.RankParallel]) -> None:
    ranks = [m for m in out.ranks if m.step_time_ns > 0]

    def worst(value_of) -> Tuple[Optional[ppb.RankParallel], float]:
        best, val = None, -1.0
        for m in ranks:
            v = value_of(m)
            if v > val:
                best, val = m, v
        return best, val

    def add(rule, title, text, metric, m, value, threshold, unit="fraction of the step time", extra=()):
        a = out.advice.add(rule=rule, title=title, text=text)
        a.triggers.add(metric=metric, value=value, threshold=threshold, unit=unit, rank=m.rank if m else -1)
        for t in extra:
            a.triggers.add(**t)
        a.ranks.extend(sorted({m.rank} if m else set()))
        return a

    def kind_exposed(m, kinds) -> int:
        return sum(k.exposed_ns for k in m.kinds if k.kind in kinds) // max(1, m.steps)

    # Straggler first: it distorts every other figure of its peers.
    for s in out.straggler.stragglers:
        m = msgs[s.rank]
        where = ("its GPU: clocks and throttling (nvidia-smi -q -d CLOCK,PERFORMANCE), other processes on the "
                 "card, a slower or differently configured device" if s.longer_compute else
                 "its host: CPU contention or binding, data loading, Python work between steps, kernel-launch "
                 "overhead")
        add("straggler", f"Rank {s.rank} slows its peers",
            f"{s.reason} Check {where}. The other ranks' waits at collectives disappear once it keeps pace.",
            "net wait caused to peers per step", m, s.net_caused_wait_ns / m.step_time_ns,
            STRAGGLER_MIN_WAIT_FRACTION)

    def kind_wait(m, kinds) -> int:
        return sum(k.wait_ns for k in m.kinds if k.kind in kinds) // max(1, m.steps)

    # Waiting for late ranks is the straggler's doing; what is left is the transfer itself.
    m, v = worst(lambda m: max(0, kind_exposed(m, {ALL_REDUCE}) - kind_wait(m, {ALL_REDUCE})) / m.step_time_ns)
    if m is not None and v >= EXPOSED_ALL_REDUCE_FRACTION:
        where = ("runs with no computation beside it" if m.timeline == pb.TIMELINE_DEVICE
                 else "blocks the host (CPU trace)")
        exposed, wait = kind_exposed(m, {ALL_REDUCE}), kind_wait(m, {ALL_REDUCE})
        add("exposed_all_reduce", "All-reduce is not hidden behind computation",
            f"On rank {m.rank} all-reduce {where} for {_t(exposed)} per step, {_t(wait)} of which is waiting for "
            f"late ranks; the remaining {_t(exposed - wait)} is {v:.0%} of the step (threshold "
            f"{EXPOSED_ALL_REDUCE_FRACTION:.0%}). Fewer, larger and overlapped all-reduces help: accumulate gradients "
            "over more micro-batches per optimizer step (gradient accumulation), fuse gradients into larger buckets "
            "(tensor fusion, e.g. DataParallel's comm_buffer_size), and let the data-parallel all-reduce run during "
            "the backward pass (communication overlap)."
            + (" Model-parallel all-reduces (c_allreduce_sum) sit on the critical path: keep tensor parallelism "
               "within a node." if m.timeline == pb.TIMELINE_DEVICE else ""),
            "exposed all-reduce per step, less waiting for late ranks", m, v, EXPOSED_ALL_REDUCE_FRACTION)

    others = {pb.COLLECTIVE_KIND_ALL_GATHER, pb.COLLECTIVE_KIND_REDUCE_SCATTER, pb.COLLECTIVE_KIND_BROADCAST,
              pb.COLLECTIVE_KIND_ALL_TO_ALL}
    m, v = worst(lambda m: kind_exposed(m, others) / m.step_time_ns)
    if m is not None and v >= EXPOSED_OTHER_COLLECTIVES_FRACTION:
        add("exposed_collectives", "All-gather / reduce-scatter / broadcast / all-to-all are exposed",
            f"On rank {m.rank} these collectives run with no computation beside them for "
            f"{_t(kind_exposed(m, others))} per step ({v:.0%}; threshold {EXPOSED_OTHER_COLLECTIVES_FRACTION:.0%}). "
            "With sharding, enable its communication overlap and tensor fusion; for all-to-all (MoE), fewer and "
            "larger exchanges.",
            "exposed all-gather/reduce-scatter/broadcast/all-to-all per step", m, v, EXPOSED_OTHER_COLLECTIVES_FRACTION)

    m, v = worst(lambda m: max(0, m.runtime_ns - m.sync_ns) / m.step_time_ns)
    if m is not None and v >= LAUNCH_BOUND_RUNTIME_FRACTION:
        add("launch_bound", "CUDA runtime calls dominate the host's time (launch bound)",
            f"On rank {m.rank} CUDA runtime calls other than synchronisations take {_t(m.runtime_ns - m.sync_ns)} of "
            f"the {_t(m.step_time_ns)} step ({v:.0%}; threshold {LAUNCH_BOUND_RUNTIME_FRACTION:.0%}) for "
            f"{m.launches} launches, while kernels run {_t(m.kernel_ns)}. Fuse operators (fused attention, fused "
            "layer norm / bias / activation), use larger micro-batches, or capture the step in a CUDA Graph.",
            "CUDA runtime time per step", m, v, LAUNCH_BOUND_RUNTIME_FRACTION)

    m, v = worst(lambda m: m.memory_ns / m.step_time_ns)
    if m is not None and v >= MEMCPY_FRACTION:
        add("memcpy", "Memory copies take a large share of the GPU's step",
            f"On rank {m.rank} memcpy/memset run {_t(m.memory_ns)} per step ({v:.0%}; threshold "
            f"{MEMCPY_FRACTION:.0%}), {_t(m.exposed_memory_ns)} of it with no kernel beside it. Load batches into "
            "pinned memory (DataLoader with pinned/shared memory) and copy asynchronously; keep tensors on the GPU "
            "between steps; avoid host synchronisations that serialise copies.",
            "memcpy/memset per step", m, v, MEMCPY_FRACTION)

    device = [m for m in ranks if m.timeline == pb.TIMELINE_DEVICE]
    m, v = None, -1.0
    for x in device:
        if x.idle_ns / x.step_time_ns > v:
            m, v = x, x.idle_ns / x.step_time_ns
    if m is not None and v >= GPU_IDLE_FRACTION:
        add("gpu_idle", "The GPU idles: the host does not keep it fed",
            f"On rank {m.rank} no kernel, memcpy or memset runs for {_t(m.idle_ns)} per step ({v:.0%}; threshold "
            f"{GPU_IDLE_FRACTION:.0%}). Look at what the host does then: synchronising CUDA calls take "
            f"{_t(m.sync_ns)} per step (fewer host syncs: no loss.item(), .numpy() or tensor printing every step), "
            "data loading (more DataLoader workers, pinned memory), Python work between steps.",
            "GPU idle per step", m, v, GPU_IDLE_FRACTION)

    pv = out.pipeline
    if pv.present and pv.stages:
        worst_stage = max(pv.stages, key=lambda s: s.bubble_ratio)
        if worst_stage.bubble_ratio >= PIPELINE_BUBBLE_FRACTION:
            comp = [s.compute_ns for s in pv.stages]
            imbalance = (max(comp) / min(comp) - 1) if min(comp) > 0 else 0.0
            text = (f"Stage {worst_stage.stage} (ranks {', '.join(map(str, worst_stage.ranks))}) waits for its "
                    f"neighbours {_t(worst_stage.bubble_ns)} per step ({worst_stage.bubble_ratio:.0%} of the step; "
                    f"threshold {PIPELINE_BUBBLE_FRACTION:.0%}). More micro-batches per step (accumulate_steps) "
                    "shrink the fill and drain; an interleaved schedule (virtual pipeline stages) shrinks them "
                    "further.")
            extra = []
            if imbalance >= STAGE_IMBALANCE_FRACTION:
                text += (f" The stages' compute differs by {imbalance:.0%} (threshold {STAGE_IMBALANCE_FRACTION:.0%}): "
                         "move layers from the slowest stage to the others.")
                extra.append(dict(metric="compute of the slowest stage over the fastest, minus 1", value=imbalance,
                                  threshold=STAGE_IMBALANCE_FRACTION, unit="fraction", rank=-1))
            a = add("pipeline_bubble", "Pipeline bubbles", text, "pipeline bubble per step", None,
                    worst_stage.bubble_ratio, PIPELINE_BUBBLE_FRACTION, extra=extra)
            a.ranks.extend(worst_stage.ranks)
    elif pv.present:
        m, v = worst(lambda m: m.bubble_ratio)
        if m is not None and v >= PIPELINE_BUBBLE_FRACTION:
            add("pipeline_bubble", "Pipeline bubbles",
                f"Rank {m.rank} waits for pipeline neighbours {_t(m.bubble_ns)} per step ({v:.0%}; threshold "
                f"{PIPELINE_BUBBLE_FRACTION:.0%}). More micro-batches per step (accumulate_steps) or an interleaved "
                "schedule shrink the fill and drain.",
                "pipeline bubble per step", m, v, PIPELINE_BUBBLE_FRACTION)
