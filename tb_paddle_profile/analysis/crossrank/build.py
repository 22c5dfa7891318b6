"""Assembles the RunParallel of one run and span (see the package docstring)."""

from __future__ import annotations

import statistics
from typing import Dict, List, Sequence, Set, Tuple, cast

import numpy as np

from ...v1 import plugin_pb2 as ppb
from ..memory import memory_stages
from . import advice, comm_ranks, encode, findings, labels, layers, pipeline, thresholds as T, topology, verdict
from .load import as_digests, load_ranks, pool_of
from .match import SEND_RECV, Flat, global_names, member_values, split_pipeline_unions
from .model import RankData
from .steps import PER_STEP_FIELDS, _RankKinds, _Steps, _match_with_clocks

_sums, _round_div = verdict.segment_sums, verdict.round_div
from .waits import Waits, communicators

PEERS_PER_GROUP = 64


def analyze_run(inputs: Sequence, run: str = "", span: str = "") -> ppb.RunParallel:
    """The RunParallel of the given RankDigests (or Summaries), one per rank of one run and span,
    its matched instances included (``analyze`` gives them apart, as columns)."""
    out, table = analyze(inputs, run, span)
    if table.n:
        out.MergeFromString(table.encode())
    return out


def analyze(inputs: Sequence, run: str = "", span: str = "") -> Tuple[ppb.RunParallel, encode.MatchedTable]:
    """(the RunParallel without its matched instances, ``matched_total`` set; those instances as an
    encode.MatchedTable): what the plugin and the CLI compute once per run and span and store."""
    out = ppb.RunParallel(run=run, span=span)
    if not inputs:
        out.notes.append("No traces.")
        return out, encode.MatchedTable.empty()
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
        out.clocks.add(
            hostname=name,
            ranks=[ranks[i].rank for i in idx],
            offset_ns=off,
            spread_ns=spread,
            samples=samples,
            reference=ref,
        )

    # ---- matching info
    n_inst = sum(r.kind.size for r in ranks)
    matched_mask = [cast(np.ndarray, r.group) >= 0 for r in ranks]  # (load.py sets it, the matching fills it)
    out.matching.instances = n_inst
    out.matching.matched_instances = int(sum(int(m.sum()) for m in matched_mask))
    out.matching.end_tolerance_ns = int(floor)
    out.matching.method = (
        "channels (a rank's instances of one stream and issuing operator) with the same sequence of (step, kind) "
        "are lined up position by position; each position is cut where neighbouring end times (after the hosts' "
        f"clock correction) differ by more than {T.END_GAP_FACTOR}x the typical distance to the nearest other end "
        f"(at least {int(floor)} ns); a position that merges groups seen apart at most positions is split like "
        "them; send/recv groups are one send and one receive; instances no line-up explains are pooled by step "
        "and kind and cut the same way"
    )
    all_kinds = np.concatenate([r.kind for r in ranks]) if ranks else np.zeros(0, np.int64)
    all_matched = np.concatenate(matched_mask) if ranks else np.zeros(0, bool)
    for k in np.unique(all_kinds).tolist():
        sel = all_kinds == k
        out.matching.coverage.add(kind=int(k), instances=int(sel.sum()), matched=int((sel & all_matched).sum()))
    if n_inst and not out.matching.matched_instances and len(ranks) > 1:
        out.notes.append(
            "No collective instance could be matched across ranks: waits and the straggler verdict "
            "need instances that line up (same steps and sequence of collectives)."
        )

    # ---- steps and heatmaps
    st = _Steps(ranks)
    all_steps = sorted(set(st.step.tolist()))
    out.steps.extend(all_steps)
    S = len(all_steps)
    grid_st = np.full((len(ranks), S), -1, dtype=np.int64)
    grid_ex = np.full((len(ranks), S), -1, dtype=np.int64)
    if st.rank.size:
        col = np.searchsorted(np.array(all_steps, dtype=np.int64), st.step)
        grid_st[st.rank, col] = st.time
        grid_ex[st.rank, col] = st.col("exposed_communication_ns")
    out.step_time.values_ns.extend(grid_st.ravel().tolist())
    out.exposed_communication.values_ns.extend(grid_ex.ravel().tolist())
    missing = [ranks[i].rank for i in np.nonzero(st.count < S)[0].tolist()]
    if missing:
        out.notes.append(
            f"Ranks {', '.join(map(str, missing[:32]))}{', …' if len(missing) > 32 else ''} lack some "
            f"of the steps {all_steps[0]}..{all_steps[-1]}."
        )

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
    position: Dict[int, Dict[int, int]] = {}  # members.index(x) of the large groups
    for c, members in enumerate(comms):
        if axis[c] in peer_axes:
            for x in members:
                comms_of[x].append(c)
            if len(members) > PEERS_PER_GROUP:
                position[c] = {y: i for i, y in reversed(list(enumerate(members)))}

    def peers_of(x: int) -> List[int]:
        """Ranks sharing a collective with x; from a group larger than PEERS_PER_GROUP, the members
        nearest to x in rank order (the field stays linear in size)."""
        got: Set[int] = set()
        for c in comms_of[x]:
            members = comms[c]
            if len(members) > PEERS_PER_GROUP:
                k = position[c][x]
                lo = max(0, min(k - PEERS_PER_GROUP // 2, len(members) - PEERS_PER_GROUP - 1))
                members = members[lo : lo + PEERS_PER_GROUP + 1]
            got.update(members)
        got.discard(x)
        return sorted(got)

    # ---- per rank: means over its steps, its kinds (from its steps and its instances)
    figs = verdict.figures(st)
    peer_vals = verdict.peer_medians(ranks, topo, figs)
    peered = verdict.has_peers(ranks, topo)
    n_steps = np.maximum(1, st.count)
    means = _round_div(
        np.stack([_sums(st.fields[:, j], st.ptr, n) for j in range(len(PER_STEP_FIELDS))], axis=1), n_steps[:, None]
    )
    step_time = _round_div(_sums(st.time, st.ptr, n), n_steps)
    fd_ok = st.first_device >= 0
    fd_sum = _sums(np.where(fd_ok, st.first_device, 0), st.ptr, n)
    fd_cnt = _sums(fd_ok.astype(np.int64), st.ptr, n)
    first_device = np.where(fd_cnt > 0, _round_div(fd_sum, np.maximum(fd_cnt, 1)), -1)
    p = pool_of(ranks)
    matched_i = p.group >= 0
    coll_i = (p.kind != SEND_RECV) & matched_i
    wait_coll = _sums(np.where(coll_i, p.wait, 0), p.base, n)
    n_coll = _sums(coll_i.astype(np.int64), p.base, n)
    n_matched = _sums(matched_i.astype(np.int64), p.base, n)
    wait_ns = _round_div(wait_coll, n_steps)
    caused_ns = _round_div(caused, n_steps)
    kinds = _RankKinds(ranks, p, matched_i)
    kind_rows = kinds.rows()
    rank_no = [r.rank for r in ranks]
    msgs: List[ppb.RankParallel] = []
    for r in ranks:
        i = r.index
        dp, mp = topo.coord_dp[i], topo.coord_mp[i]
        m = out.ranks.add(
            worker=r.worker,
            rank=r.rank,
            rank_inferred=r.rank_inferred,
            file_name=r.file_name,
            timeline=r.digest.parallel.timeline,
            steps=len(r.steps),
            hostname=r.hostname,
            pid=r.pid,
            device_id=r.device_id,
            dp=dp,
            mp=mp,
            sharding=topo.coord_sharding[i],
            clock_offset_ns=int(r.offset_ns),
        )
        m.label = labels.label(
            r.rank,
            r.hostname,
            r.device_id,
            r.pid,
            dp,
            topo.coord_pp[i],
            mp,
            sharding=topo.coord_sharding[i],
            worker=r.worker,
        )
        m.step_breakdown.extend(r.digest.parallel.steps)
        m.step_time_ns = int(step_time[i])
        for f, v in zip(PER_STEP_FIELDS, means[i].tolist()):
            setattr(m, f, v)
        m.first_device_ns = int(first_device[i])
        for row in kind_rows[i]:
            m.kinds.add(**row)
        m.wait_ns = int(wait_ns[i])
        m.caused_wait_ns = int(caused_ns[i])
        m.last_arrivals = int(last_arr[i])
        m.matched = int(n_coll[i])
        m.peers.extend([rank_no[x] for x in peers_of(i)])
        m.peer_compute_ns = peer_vals[i]["compute"] if peered[i] else 0
        m.pipeline_stage = -1
        m.coverage = float(n_matched[i] / r.kind.size) if r.kind.size else 1.0
        msgs.append(m)

    # ---- kinds across ranks
    for row, members in kinds.across(rank_no):
        ka = out.kinds.add(**row)
        ka.ranks.extend(members)

    # ---- matched instances (as columns: encoded when asked for)
    out.matched_total = flat.n
    table = _matched_table(ranks, flat, w)

    # ---- topology
    tv = out.topology
    tv.dp, tv.pp, tv.mp, tv.sharding = topo.dp, topo.pp, topo.mp, topo.sharding
    tv.method, tv.complete, tv.matches_fleet_order = topo.method, topo.complete, topo.matches_fleet_order
    tv.notes.extend(topo.notes)
    for ax, members, inst, group_kinds in topo.groups:
        tv.groups.add(axis=ax, ranks=[ranks[x].rank for x in members], instances=inst, kinds=list(group_kinds))

    pipeline.fill(out, ranks, topo, msgs)
    memory_stages(out, ranks, msgs)  # after the pipeline view: it reads pipeline_stage
    comm_ranks.fill(out, ranks)
    layers.fill(out, ranks, msgs)  # after the pipeline view: it reads pipeline_stage
    median_step = statistics.median([m.step_time_ns for m in out.ranks if m.steps] or [0])
    from .replay import Prepared

    prep = Prepared(ranks, flat, w, topo, np.asarray(g_axis))
    findings.fill(out, ranks, topo, flat, w, g_axis, figs, peer_vals, msgs, median_step, prep=prep)
    advice.advise(out, {m.rank: m for m in out.ranks}, median_step)
    return out, table


def _matched_table(ranks: Sequence[RankData], flat: Flat, w: Waits) -> encode.MatchedTable:
    if not flat.n:
        return encode.MatchedTable.empty()
    p = pool_of(ranks)
    rank_no = np.array([r.rank for r in ranks], dtype=np.int64)
    m_rank = rank_no[flat.m_rank]
    # the name of each group's last member, as an index into one table of all ranks' names
    name_of, names = global_names(ranks)
    last_rows, last_inst = flat.m_rank[w.last], flat.m_inst[w.last]
    name_id = name_of(last_rows, p.name[p.at(last_rows, last_inst)])
    return encode.MatchedTable(
        list(names),
        flat.ptr,
        step=flat.g_step,
        kind=flat.g_kind,
        name=name_id,
        transfer=w.transfer,
        last_rank=m_rank[w.last],
        rank=m_rank,
        ordinal=member_values(ranks, flat, "ordinal"),
        dur=w.m_dur,
        wait=w.m_wait,
        start=member_values(ranks, flat, "start"),
        dir=member_values(ranks, flat, "dir"),
    )


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
        mc = out.matched.add(
            step=int(flat.g_step[g]),
            kind=int(flat.g_kind[g]),
            name=ranks[lr].names[ranks[lr].name[li]],
            transfer_ns=int(w.transfer[g]),
            last_rank=m_rank[last[g]],
        )
        for j in range(a, b):
            mc.members.add(
                rank=m_rank[j],
                ordinal=ordinal[j],
                duration_ns=dur[j],
                wait_ns=wait[j],
                start_unix_ns=start[j],
                direction=direction[j],
            )
