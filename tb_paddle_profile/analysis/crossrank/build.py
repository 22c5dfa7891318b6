"""Assembles the RunParallel of one run and span (see the package docstring)."""

from __future__ import annotations

import statistics
from typing import Dict, List, Sequence

import numpy as np

from ...v1 import plugin_pb2 as ppb
from ...v1 import summary_pb2 as pb
from . import advice, clocks, encode, findings, labels, pipeline, thresholds as T, topology, verdict
from .load import as_digests, load_ranks
from .match import SEND_RECV, Flat, _groups_of, build_lineups, match, member_values, split_pipeline_unions
from .model import RankData
from .waits import Waits, communicators

PEERS_PER_GROUP = 64

PER_STEP_FIELDS = ("compute_ns", "communication_ns", "hidden_communication_ns", "exposed_communication_ns",
                   "memory_ns", "exposed_memory_ns", "idle_ns", "runtime_ns", "sync_ns", "kernel_ns", "launches",
                   "dataloader_ns")


def _per_step(r: RankData, attr: str) -> int:
    vals = [getattr(s, attr) for s in r.steps.values()]
    return int(round(sum(vals) / len(vals))) if vals else 0


def _step_time(s: pb.ParallelStep) -> int:
    return s.range.end_ns - s.range.start_ns


def _match_with_clocks(ranks: List[RankData], notes: List[str]):
    """Match, estimating and applying the hosts' clock offsets when ranks tell their hosts."""
    lineups = build_lineups(ranks)
    n_hosts = max((r.host for r in ranks), default=0) + 1
    clock_rows = []
    if not clocks.has_hosts(ranks):
        if len(ranks) > 1 and not all(r.hostname for r in ranks):
            notes.append("The worker names tell no hosts: no clock correction (ranks are assumed to share one "
                         "clock; a line-up of two ranks is matched whatever their clocks).")
        return match(ranks, lineups, T.END_GAP_MIN_NS), clock_rows, T.END_GAP_MIN_NS
    off, cspread, _, reached = clocks.coarse_offsets(ranks, lineups, n_hosts)
    for r in ranks:
        r.offset_ns = off[r.host]
    # the coarse estimate may be off by its spread: match that loosely first, then tighten
    # between hosts the cut is at least the clock estimate's error; within a host clocks agree
    floor = T.END_GAP_MIN_NS
    def shares(spreads):
        return [max(T.END_GAP_MIN_NS, min(T.CLOCK_LOOSE_MAX_NS, T.CLOCK_SPREAD_FACTOR * x)) / 2 for x in spreads]

    cross = shares(cspread)
    flat = match(ranks, lineups, floor, cross)
    spread = [0] * n_hosts
    samples = [0] * n_hosts
    fine = None
    for _ in range(3):
        fine = clocks.fine_offsets(ranks, flat, n_hosts)
        corr, spread, samples, reached_f, mad = fine
        changed = max((abs(c) for c, ok in zip(corr, reached_f) if ok), default=0)
        for h in range(n_hosts):
            if reached_f[h]:
                off[h] += corr[h]
        for r in ranks:
            r.offset_ns = off[r.host]
        new_cross = shares(mad)
        moved = max((abs(a - b) for a, b in zip(new_cross, cross)), default=0)
        reached = [a or b for a, b in zip(reached, reached_f)]
        if changed <= T.END_GAP_MIN_NS and moved <= T.END_GAP_MIN_NS / 2:
            break   # the clocks and the cut stand: this matching is the final one
        cross = new_cross
        flat = match(ranks, lineups, floor, cross)
        fine = None
    if fine is None:
        fine = clocks.fine_offsets(ranks, flat, n_hosts)
    _, spread, samples, reached_f, _ = fine
    # the reported spread and samples are those of the final matching (offsets as applied)
    names = {}
    for r in ranks:
        names.setdefault(r.host, (r.hostname, []))[1].append(r.index)
    lost = []
    for h in sorted(names):
        name, idx = names[h]
        clock_rows.append((name, int(off[h]), int(spread[h]), int(samples[h]), idx, h == 0))
        if h and not (reached[h] or reached_f[h]):
            lost.append(name)
    if lost:
        notes.append(f"No collective links host(s) {', '.join(lost[:8])}{', …' if len(lost) > 8 else ''} to the "
                     "others: their clocks are not corrected.")
    return flat, clock_rows, 2 * max(cross, default=T.END_GAP_MIN_NS / 2)


def analyze_run(inputs: Sequence, run: str = "", span: str = "") -> ppb.RunParallel:
    """The RunParallel of the given RankDigests (or Summaries), one per rank of one run and span."""
    out = ppb.RunParallel(run=run, span=span)
    if not inputs:
        out.notes.append("No traces.")
        return out
    digests = as_digests(inputs)
    ranks, notes = load_ranks(digests)
    out.notes.extend(notes)
    flat, clock_rows, floor = _match_with_clocks(ranks, out.notes)
    chains, _ = topology.pipelines(ranks, flat, [])
    flat = split_pipeline_unions(flat, chains)
    w = Waits(ranks, flat)
    comms, g_comm, counts = communicators(flat)
    topo, axis, g_axis = topology.build(ranks, flat, comms, g_comm, counts, out.notes)

    # ---- clocks
    for name, off, spread, samples, idx, ref in clock_rows:
        out.clocks.add(hostname=name, ranks=[ranks[i].rank for i in idx], offset_ns=off, spread_ns=spread,
                       samples=samples, reference=ref)

    # ---- matching info
    n_inst = sum(r.kind.size for r in ranks)
    matched_mask = [r.group >= 0 for r in ranks]
    out.matching.instances = n_inst
    out.matching.matched_instances = int(sum(int(m.sum()) for m in matched_mask))
    out.matching.end_tolerance_ns = int(floor)
    out.matching.method = (
        "channels (a rank's instances of one stream and issuing operator) with the same sequence of (step, kind) "
        "are lined up position by position; each position is cut where neighbouring end times (after the hosts' "
        f"clock correction) differ by more than {T.END_GAP_FACTOR}x the typical distance to the nearest other end "
        f"(at least {int(floor)} ns); a position that merges groups seen apart at most positions is split like "
        "them; send/recv groups are one send and one receive; instances no line-up explains are pooled by step "
        "and kind and cut the same way")
    all_kinds = np.concatenate([r.kind for r in ranks]) if ranks else np.zeros(0, np.int64)
    all_matched = np.concatenate(matched_mask) if ranks else np.zeros(0, bool)
    for k in np.unique(all_kinds).tolist():
        sel = all_kinds == k
        out.matching.coverage.add(kind=int(k), instances=int(sel.sum()), matched=int((sel & all_matched).sum()))
    if n_inst and not out.matching.matched_instances and len(ranks) > 1:
        out.notes.append("No collective instance could be matched across ranks: waits and the straggler verdict "
                         "need instances that line up (same steps and sequence of collectives).")

    # ---- steps and heatmaps
    all_steps = sorted({n for r in ranks for n in r.steps})
    out.steps.extend(all_steps)
    st_vals, ex_vals = [], []
    for r in ranks:
        for n in all_steps:
            s = r.steps.get(n)
            st_vals.append(_step_time(s) if s else -1)
            ex_vals.append(s.exposed_communication_ns if s else -1)
    out.step_time.values_ns.extend(st_vals)
    out.exposed_communication.values_ns.extend(ex_vals)
    missing = [r.rank for r in ranks if len(r.steps) < len(all_steps)]
    if missing:
        out.notes.append(f"Ranks {', '.join(map(str, missing[:32]))}{', …' if len(missing) > 32 else ''} lack some "
                         f"of the steps {all_steps[0]}..{all_steps[-1]}.")

    # ---- per-rank waits, caused waits, peers
    n = len(ranks)
    coll_group = (flat.g_kind != SEND_RECV) if flat.n else np.zeros(0, bool)
    last_rank = flat.m_rank[w.last] if flat.n else np.zeros(0, np.int64)
    caused = np.zeros(n, np.int64)
    last_arr = np.zeros(n, np.int64)
    if flat.n:
        np.add.at(caused, last_rank[coll_group], w.caused[coll_group])
        np.add.at(last_arr, last_rank[coll_group], 1)
    peer_axes = {"mp", "dp", "sharding", "world", "other"}
    comms_of: List[List[int]] = [[] for _ in range(n)]
    for c, members in enumerate(comms):
        if axis[c] in peer_axes:
            for x in members:
                comms_of[x].append(c)

    def peers_of(x: int) -> List[int]:
        """Ranks sharing a collective with x; from a group larger than PEERS_PER_GROUP, the members
        nearest to x in rank order (the field stays linear in size)."""
        got = set()
        for c in comms_of[x]:
            members = comms[c]
            if len(members) > PEERS_PER_GROUP:
                k = members.index(x)
                lo = max(0, min(k - PEERS_PER_GROUP // 2, len(members) - PEERS_PER_GROUP - 1))
                members = members[lo:lo + PEERS_PER_GROUP + 1]
            got.update(members)
        got.discard(x)
        return sorted(got)

    # ---- per rank
    figs = [verdict.figures(r) for r in ranks]
    peer_vals = verdict.peer_medians(ranks, topo, figs)
    peered = verdict.has_peers(ranks, topo)
    msgs: List[ppb.RankParallel] = []
    for r in ranks:
        i = r.index
        n_steps = max(1, len(r.steps))
        dp, mp = topo.coord_dp[i], topo.coord_mp[i]
        m = out.ranks.add(worker=r.worker, rank=r.rank, rank_inferred=r.rank_inferred, file_name=r.file_name,
                          timeline=r.digest.parallel.timeline, steps=len(r.steps), hostname=r.hostname,
                          pid=r.pid, device_id=r.device_id, dp=dp, mp=mp, sharding=topo.coord_sharding[i],
                          clock_offset_ns=int(r.offset_ns))
        m.label = labels.label(r.rank, r.hostname, r.device_id, r.pid, dp, topo.coord_pp[i], mp,
                               sharding=topo.coord_sharding[i], worker=r.worker)
        m.step_breakdown.extend(r.digest.parallel.steps)
        m.step_time_ns = int(round(sum(_step_time(s) for s in r.steps.values()) / n_steps))
        for f in PER_STEP_FIELDS:
            setattr(m, f, _per_step(r, f))
        fd = [s.first_device_ns for s in r.steps.values() if s.first_device_ns >= 0]
        m.first_device_ns = int(round(sum(fd) / len(fd))) if fd else -1
        matched = r.group >= 0
        for kind in sorted({k.kind for s in r.steps.values() for k in s.kinds} | set(np.unique(r.kind).tolist())):
            rk = m.kinds.add(kind=int(kind))
            for s in r.steps.values():
                for k in s.kinds:
                    if k.kind == kind:
                        rk.calls += k.calls
                        rk.device_ns += k.device_ns
                        rk.host_ns += k.host_ns
                        rk.exposed_ns += k.exposed_ns
                        rk.bytes += k.bytes
            sel = (r.kind == kind) & matched
            rk.wait_ns, rk.transfer_ns, rk.matched = int(r.wait[sel].sum()), int(r.transfer[sel].sum()), int(sel.sum())
        coll = (r.kind != SEND_RECV) & matched
        m.wait_ns = int(round(r.wait[coll].sum() / n_steps))
        m.caused_wait_ns = int(round(caused[i] / n_steps))
        m.last_arrivals = int(last_arr[i])
        m.matched = int(coll.sum())
        m.peers.extend(ranks[x].rank for x in peers_of(i))
        m.peer_compute_ns = peer_vals[i]["compute"] if peered[i] else 0
        m.pipeline_stage = -1
        m.coverage = float(matched.sum() / r.kind.size) if r.kind.size else 1.0
        msgs.append(m)

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

    # ---- matched instances
    _matched(out, ranks, flat, w)

    # ---- topology
    tv = out.topology
    tv.dp, tv.pp, tv.mp, tv.sharding = topo.dp, topo.pp, topo.mp, topo.sharding
    tv.method, tv.complete, tv.matches_fleet_order = topo.method, topo.complete, topo.matches_fleet_order
    tv.notes.extend(topo.notes)
    for ax, members, inst, kinds in topo.groups:
        tv.groups.add(axis=ax, ranks=[ranks[x].rank for x in members], instances=inst, kinds=list(kinds))

    pipeline.fill(out, ranks, topo, msgs)
    median_step = statistics.median([m.step_time_ns for m in out.ranks if m.steps] or [0])
    findings.fill(out, ranks, topo, flat, w, g_axis, figs, peer_vals, msgs, median_step)
    advice.advise(out, {m.rank: m for m in out.ranks}, median_step)
    return out


def _matched(out: ppb.RunParallel, ranks: Sequence[RankData], flat: Flat, w: Waits) -> None:
    out.matched_total = flat.n
    if not flat.n:
        return
    rank_no = np.array([r.rank for r in ranks], dtype=np.int64)
    m_rank = rank_no[flat.m_rank]
    names: Dict[str, int] = {}
    last_rows, last_inst = flat.m_rank[w.last], flat.m_inst[w.last]
    name_id = np.zeros(flat.n, dtype=np.int64)
    for ri, sel in _groups_of(last_rows, len(ranks)):
        r = ranks[ri]
        local = np.array([names.setdefault(x, len(names)) for x in r.names], dtype=np.int64)
        name_id[sel] = local[r.name[last_inst[sel]]]
    data = encode.matched_bytes(
        flat.g_step, flat.g_kind, name_id, list(names), w.transfer, m_rank[w.last], flat.ptr, m_rank,
        member_values(ranks, flat, "ordinal"), w.m_dur, w.m_wait, member_values(ranks, flat, "start"),
        member_values(ranks, flat, "dir"))
    out.MergeFromString(data)


def _matched_api(out: ppb.RunParallel, ranks: Sequence[RankData], flat: Flat, w: Waits) -> None:
    """The same through the protobuf API (slow; the reference the encoder is tested against)."""
    rank_no = np.array([r.rank for r in ranks], dtype=np.int64)
    m_rank = rank_no[flat.m_rank].tolist()
    ordinal = member_values(ranks, flat, "ordinal").tolist()
    start = member_values(ranks, flat, "start").tolist()
    direction = member_values(ranks, flat, "dir").tolist()
    dur, wait, last, ptr = w.m_dur.tolist(), w.m_wait.tolist(), w.last.tolist(), flat.ptr.tolist()
    for g in range(flat.n):
        a, b = ptr[g], ptr[g + 1]
        lr, li = int(flat.m_rank[last[g]]), int(flat.m_inst[last[g]])
        mc = out.matched.add(step=int(flat.g_step[g]), kind=int(flat.g_kind[g]),
                             name=ranks[lr].names[ranks[lr].name[li]], transfer_ns=int(w.transfer[g]),
                             last_rank=m_rank[last[g]])
        for j in range(a, b):
            mc.members.add(rank=m_rank[j], ordinal=ordinal[j], duration_ns=dur[j], wait_ns=wait[j],
                           start_unix_ns=start[j], direction=direction[j])
