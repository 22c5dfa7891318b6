"""The compact multi-rank timeline (route ``timeline_compact``): one summary row per rank over one step,
each a row of bins saying how much of the bin the GPU spent in communication, in compute and idle.

Nothing is derived again here:

- the bins come from each rank's timeline index: the union of its kernels is the index's GPU
  utilization counter (counters.py, one per device, merged), communication the union of its kernels
  whose name names NCCL/XCCL/RCCL (analysis.collectives.is_communication_kernel), both read only inside the
  window (``lanes_in_window``) and measured per bin by counters.busy_fraction; compute is the kernels'
  union less the communication (the fraction where a kernel runs and no communication kernel does);
- the step, its start on each rank, the clock offsets, the straggler and the role peers are the stored
  cross-rank analysis (RunParallel: step_breakdown ranges, step_time matrix, clock_offset_ns, the
  straggler verdict, the topology coordinates);
- the critical path is the stored what-if answer's (RunWhatIf.critical_path segments).

A rank whose trace has no GPU stream (Paddle on CPU, e.g. Fleet with gloo) has its row from the host side
instead (``host_row_bins``; the row's ``host_side``, the answer's ``host_note``): communication is the union
of its host events that are communication (analysis.collectives.host_kind: Communication events, operators
naming a collective), compute the union of its Operator events less communication, idle the rest (Python,
the data loader, waiting).
"""

from __future__ import annotations

import weakref
from types import SimpleNamespace
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from tb_paddle_profile.analysis.peers import role
from tb_paddle_profile.trace import event_types as et
from .counters import KIND_UTILIZATION, _union, bin_edges, busy_fraction
from .storage import TimelineIndex
from .tracks import EVENT_HOST, GPU_STREAM, HOST_THREAD

MAX_BINS = 4000
PAGE_ROWS = 128  # rows answered at most per request (their indexes are opened)
PATH_KINDS = {1: "compute", 2: "communication", 3: "memcpy", 4: "host", 5: "waiting"}
_COMM_NAMES: "weakref.WeakKeyDictionary[TimelineIndex, np.ndarray]" = weakref.WeakKeyDictionary()
_HOST_COMM_NAMES: "weakref.WeakKeyDictionary[TimelineIndex, np.ndarray]" = weakref.WeakKeyDictionary()
HOST_NOTE = (
    "host side: these ranks' traces have no GPU stream, so their rows show the host: compute is "
    "the time in operators (CPU), communication the host's communication events, idle the rest "
    "(Python, the data loader, waiting)"
)


def _comm_names(idx: TimelineIndex) -> np.ndarray:
    """A bool per name id of the index: a communication kernel's name (once per open index)."""
    got = _COMM_NAMES.get(idx)
    if got is None:
        from ..analysis.collectives import is_communication_kernel

        got = _COMM_NAMES[idx] = np.array([is_communication_kernel(n) for n in idx.names], dtype=bool)
    return got


def _host_comm_names(idx: TimelineIndex) -> np.ndarray:
    """A bool per name id of the index: an Operator of that name is communication (host_kind)."""
    got = _HOST_COMM_NAMES.get(idx)
    if got is None:
        from ..analysis.collectives import NOT_COMMUNICATION, host_kind

        got = _HOST_COMM_NAMES[idx] = np.array(
            [host_kind(n, et.OPERATOR) != NOT_COMMUNICATION for n in idx.names], dtype=bool
        )
    return got


def has_gpu(idx: TimelineIndex) -> bool:
    """Whether the index has a GPU stream or a GPU utilization counter (else its row is host-side)."""
    return any(t["kind"] == GPU_STREAM for t in idx.tracks) or any(c["kind"] == KIND_UTILIZATION for c in idx.counters)


def host_row_bins(idx: TimelineIndex, lws: int, lwe: int, bins: int) -> Tuple[np.ndarray, np.ndarray]:
    """(compute, communication) fractions of each bin over [lws, lwe] from the host events: communication the
    union of the host's communication events (Communication events, operators naming a collective),
    compute the union of its Operator events less communication."""
    a = idx.a
    edges = bin_edges(lws, lwe, bins)
    comm_op = _host_comm_names(idx)
    os_, oe, cs, ce = [], [], [], []
    for lane in range(idx.n_lanes):
        if idx.tracks[int(a["lane_track"][lane])]["kind"] != HOST_THREAD:
            continue
        lo, _, keep = idx.lanes_in_window(lws, lwe, lane)
        pos = np.nonzero(keep)[0] + lo
        pos = pos[a["ev_kind"][pos] == EVENT_HOST]
        typ = a["ev_type"][pos]
        is_op = typ == et.OPERATOR
        is_comm = (typ == et.COMMUNICATION) | (is_op & comm_op[a["ev_name"][pos]])
        cs.append(a["ev_start"][pos[is_comm]])
        ce.append(a["ev_end"][pos[is_comm]])
        os_.append(a["ev_start"][pos[is_op]])
        oe.append(a["ev_end"][pos[is_op]])
    cat = lambda xs: np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, np.int64)
    bs, be = _union(*_clip(cat(os_ + cs), cat(oe + ce), lws, lwe))
    ms, me = _union(*_clip(cat(cs), cat(ce), lws, lwe))
    busy = busy_fraction(bs.astype(np.float64), be.astype(np.float64), edges)
    communication = busy_fraction(ms.astype(np.float64), me.astype(np.float64), edges)
    return np.clip(busy - communication, 0.0, 1.0), communication


def _clip(s: np.ndarray, e: np.ndarray, lo: float, hi: float) -> Tuple[np.ndarray, np.ndarray]:
    keep = (e > lo) & (s < hi)
    return s[keep], e[keep]


def row_bins(idx: TimelineIndex, lws: int, lwe: int, bins: int) -> Tuple[np.ndarray, np.ndarray]:
    """(compute, communication) fractions of each of ``bins`` bins over [lws, lwe] (the index's own ns)."""
    a = idx.a
    edges = bin_edges(lws, lwe, bins)
    busy_s, busy_e = [], []
    for i, c in enumerate(idx.counters):  # the kernels' union per device (stored with the index)
        if c["kind"] != KIND_UTILIZATION:
            continue
        p0, p1 = int(a["ctr_ptr"][i]), int(a["ctr_ptr"][i + 1])
        t, v = a["ctr_t"][p0:p1], a["ctr_v"][p0:p1]
        lo = max(0, int(np.searchsorted(v, lws, "right")))  # ends ascend too (disjoint intervals)
        hi = int(np.searchsorted(t, lwe, "right"))
        busy_s.append(t[lo:hi])
        busy_e.append(v[lo:hi])
    comm = _comm_names(idx)
    cs, ce = [], []
    for lane in range(idx.n_lanes):
        if idx.tracks[int(a["lane_track"][lane])]["kind"] != GPU_STREAM:
            continue
        lo, _, keep = idx.lanes_in_window(lws, lwe, lane)
        pos = np.nonzero(keep)[0] + lo
        pos = pos[(a["ev_type"][pos] == et.KERNEL) & comm[a["ev_name"][pos]]]
        cs.append(a["ev_start"][pos])
        ce.append(a["ev_end"][pos])
    cat = lambda xs: np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, np.int64)
    if len(busy_s) > 1:  # several devices: one union
        bs, be = _union(cat(busy_s), cat(busy_e))
    else:
        bs, be = cat(busy_s), cat(busy_e)
    ms, me = _union(*_clip(cat(cs), cat(ce), lws, lwe))
    busy = busy_fraction(bs.astype(np.float64), be.astype(np.float64), edges)
    communication = busy_fraction(ms.astype(np.float64), me.astype(np.float64), edges)
    return np.clip(busy - communication, 0.0, 1.0), communication


# ---------------------------------------------------------------- what the stored analysis says


class Facts:
    """What the compact timeline needs of a stored analysis (RunParallel), read from it once."""

    def __init__(self, rp):
        self.workers: List[str] = [r.worker for r in rp.ranks]
        self.steps: List[int] = [int(s) for s in rp.steps]
        self.clock: Dict[str, int] = {r.worker: int(r.clock_offset_ns) for r in rp.ranks}
        self.rank_of: Dict[str, int] = {r.worker: int(r.rank) for r in rp.ranks}
        self.label: Dict[str, str] = {r.worker: r.label for r in rp.ranks}
        # worker -> step -> (start, end) on the rank's own index clock
        self.step_range: Dict[str, Dict[int, Tuple[int, int]]] = {
            r.worker: {int(s.step): (int(s.range.start_ns), int(s.range.end_ns)) for s in r.step_breakdown}
            for r in rp.ranks
        }
        vals = np.array(rp.step_time.values_ns, dtype=np.int64)
        n_steps = len(self.steps)
        self.job_step: Dict[int, int] = {}
        if n_steps and len(vals) == n_steps * len(self.workers):
            m = vals.reshape(len(self.workers), n_steps)
            self.job_step = {s: int(m[:, j].max()) for j, s in enumerate(self.steps)}
        self.order, self.roles, self.why = order_of(rp)
        # what order_of needs of the analysis, kept to answer a focus rank (order_for) without the RunParallel
        self._lite = SimpleNamespace(
            ranks=[
                SimpleNamespace(
                    rank=r.rank,
                    worker=r.worker,
                    dp=r.dp,
                    pipeline_stage=r.pipeline_stage,
                    mp=r.mp,
                    sharding=r.sharding,
                    peers=tuple(r.peers),
                )
                for r in rp.ranks
            ],
            straggler=SimpleNamespace(
                found=rp.straggler.found,
                uncertain=rp.straggler.uncertain,
                stragglers=[SimpleNamespace(rank=s.rank) for s in rp.straggler.stragglers],
            ),
        )
        self.collectives: Dict[
            int, Dict[str, Dict[int, int]]
        ] = {}  # step -> kind -> rank -> first start (collective_starts)
        self.nbytes = (
            300 * len(self.workers)
            + 8 * sum(len(r.peers) for r in rp.ranks)
            + 64 * sum(len(v) for v in self.step_range.values())
            + 1000
        )

    def order_for(self, focus: str = "") -> Tuple[List[str], Dict[str, str], str]:
        """order_of with ``focus`` (a worker of the analysis) in place of the straggler; the stored
        order when ``focus`` is empty or unknown."""
        if not focus or focus not in self.rank_of:
            return self.order, self.roles, self.why
        return order_of(self._lite, focus)

    def median_step(self) -> Optional[int]:
        """The step whose job step time (the slowest rank's) is the median of the steps' (the lower one
        of two middles, then the lower step number); the first step present when none is timed."""
        if self.job_step:
            ranked = sorted(self.job_step.items(), key=lambda kv: (kv[1], kv[0]))
            return ranked[(len(ranked) - 1) // 2][0]
        for w in self.workers:
            if self.step_range.get(w):
                return min(self.step_range[w])
        return None


def collective_starts(facts: Facts, step: int, table) -> Dict[str, Dict[int, int]]:
    """kind label -> rank -> the start (unix ns, the rank's own clock) of the rank's first matched instance
    of that kind in ``step``, from the analysis' matched table (a MatchedTable; ``table()`` gives it, read
    only once per analysis and step)."""
    got = facts.collectives.get(step)
    if got is None:
        from ..analysis.collectives import KIND_LABELS

        t = table()
        got = {}
        groups = np.nonzero(t.step == int(step))[0] if t.n else np.zeros(0, np.int64)
        if len(groups):
            lens = t.ptr[groups + 1] - t.ptr[groups]
            mem = np.repeat(t.ptr[groups] - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(
                int(lens.sum())
            )
            kind = np.repeat(t.kind[groups], lens)
            for k in np.unique(kind).tolist():
                sel = mem[kind == k]
                rank, start = t.rank[sel], t.start[sel]
                o = np.lexsort((start, rank))
                first = np.concatenate([[True], rank[o][1:] != rank[o][:-1]])
                got[KIND_LABELS.get(int(k), "other")] = dict(zip(rank[o][first].tolist(), start[o][first].tolist()))
        facts.collectives[step] = got
        facts.nbytes += 40 * sum(len(v) for v in got.values())
    return got


def instance_starts(table, rank: int, at_unix_ns: int, step: Optional[int]) -> Optional[Tuple[str, Dict[int, int]]]:
    """The matched instance (one communicator, one sequence number) that ``rank`` runs at ``at_unix_ns``
    (the rank's own clock) in ``step``: its member slice covering that time, else the nearest one of the
    step. (label "<kind> #<ordinal>", rank -> the start of its member, unix ns on its own clock), from the
    analysis' matched table (``table()``: a MatchedTable); None when the rank has no matched instance there."""
    from ..analysis.collectives import KIND_LABELS

    t = table()
    if not t.n:
        return None
    group_of = np.repeat(np.arange(t.n), np.diff(t.ptr))
    mine = np.nonzero(t.rank == int(rank))[0]
    if step is not None:
        mine = mine[t.step[group_of[mine]] == int(step)]
    if not mine.size:
        return None
    start = t.start[mine].astype(np.int64)
    end = start + np.maximum(t.dur[mine].astype(np.int64), 0)
    at = int(at_unix_ns)
    gap = np.where(at < start, start - at, np.where(at >= end, at - end, 0))  # 0: the slice covers it
    m = int(mine[int(np.argmin(gap))])
    g = int(group_of[m])
    lo, hi = int(t.ptr[g]), int(t.ptr[g + 1])
    starts: Dict[int, int] = {}
    for r, st in zip(t.rank[lo:hi].tolist(), t.start[lo:hi].tolist()):
        starts[int(r)] = min(int(st), starts.get(int(r), int(st)))
    return f"{KIND_LABELS.get(int(t.kind[g]), 'other')} #{int(t.ordinal[m])}", starts


def order_of(rp, focus: str = "") -> Tuple[List[str], Dict[str, str], str]:
    """(workers in the server's order, worker -> role, why): the straggler(s) the verdict names (or the
    worker ``focus`` names, role "named", in their place: a rank the user opened), then the
    first one's role peers (its stage, mp index and sharding when the topology is known; else its
    stage; else the ranks it shares collectives with), nearest rank numbers first, then every other
    rank in rank order; the possible straggler(s) of an uncertain verdict too ("why" says so). Without
    a straggler named: rank order."""
    ranks = sorted(rp.ranks, key=lambda r: (r.rank, r.worker))
    by_rank = {r.rank: r for r in ranks}
    v = rp.straggler
    # a verdict on incomplete evidence still names its possible straggler(s): first too, said so
    slow = [by_rank[s.rank] for s in v.stragglers if s.rank in by_rank] if v.found or v.uncertain else []
    named = [r for r in ranks if focus and r.worker == focus]
    if named:
        slow = named
    if not slow:
        return [r.worker for r in ranks], {}, "rank order (no straggler)"
    f = slow[0]
    topo = f.dp >= 0 and any(r.dp >= 0 and r.rank != f.rank for r in ranks)
    if topo:
        peers = [r.rank for r in ranks if role(r) == role(f)]
    elif f.pipeline_stage >= 0:
        peers = [r.rank for r in ranks if r.pipeline_stage == f.pipeline_stage]
    else:
        peers = [p for p in f.peers if p in by_rank]
    peers = sorted((p for p in peers if p != f.rank), key=lambda p: (abs(p - f.rank), p))
    order: List[str] = []
    roles: Dict[str, str] = {}
    for r in slow:
        if r.worker not in roles:
            order.append(r.worker)
            roles[r.worker] = "named" if named else "straggler"
    for p in peers:
        w = by_rank[p].worker
        if w not in roles:
            order.append(w)
            roles[w] = "peer"
    order += [r.worker for r in ranks if r.worker not in roles]
    who = "the stragglers" if len(slow) > 1 else "the straggler"
    if named:
        who = "the rank named"
    elif not v.found:
        who = f"{'the possible stragglers' if len(slow) > 1 else 'the possible straggler'} (uncertain evidence)"
    return order, roles, f"{who} and {'its role peers' if topo or f.pipeline_stage >= 0 else 'its peers'} first"


def compact_message(
    run: str,
    span: str,
    key: str,
    facts: Facts,
    files: Sequence,
    rows: Sequence,
    offset: int,
    step: Optional[int],
    align: str,
    ws: Optional[int],
    we: Optional[int],
    bins: int,
    critical=None,
    first: Optional[TimelineIndex] = None,
    kind: str = "",
    table=None,
    instance: Optional[Tuple[str, int]] = None,
    order: Optional[Tuple[List[str], Dict[str, str], str]] = None,
):
    """The TimelineCompact answer. ``files``: every rank's TraceFile in the server's order; ``rows``:
    (TraceFile, index or None, state) of order[offset : offset + len(rows)]; ``critical``: the stored
    RunWhatIf (None when there is none); ``first``: the index of files[0] (align "clock": every row on
    its start of the step; None: each row on its own); ``kind``, ``table``: align "collective" on the first
    matched instance of that kind (default all_reduce, else the first kind there is), ``table()`` the
    analysis' MatchedTable; ``instance``: align "instance" on one matched instance, the one that rank
    (worker) runs at that time (unix ns, the run's corrected clock; instance_starts): every member row on
    its member's start, ``align_kind`` its label ("all_reduce #3"), the rows of other ranks on their step;
    ``order``: Facts.order_for's (the roles and why of ``files``' order; default the stored order's)."""
    from ..v1 import timeline_pb2 as tpb

    msg = tpb.TimelineCompact(run=run, span=span, analysis_key=key, align=align, rank_offset=offset)
    msg.steps.extend(facts.steps)
    if step is None or not any(step in facts.step_range.get(f.worker, {}) for f in files):
        step = facts.median_step()
    msg.step = -1 if step is None else step
    _, roles, msg.why = order or (facts.order, facts.roles, facts.why)
    for f in files:
        msg.order.add(
            worker=f.worker,
            rank=facts.rank_of.get(f.worker, f.rank),
            label=facts.label.get(f.worker, ""),
            role=roles.get(f.worker, ""),
        )
    lengths = [e - s for f in files for s, e in [facts.step_range.get(f.worker, {}).get(msg.step, (0, 0))]]
    longest = max(lengths, default=0)
    if not longest:  # no step known: the rows' whole extents
        longest = max((idx.end_ns - idx.start_ns for _, idx, _ in rows if idx is not None), default=0)
    bins = max(1, min(int(bins or 1000), MAX_BINS))
    if step is None:
        msg.note = "no step in the cross-rank analysis"
    on = {}
    if align == "collective" and table is not None and step is not None:
        starts = collective_starts(facts, msg.step, table)
        msg.align_kinds.extend(sorted(starts))
        kind = kind if kind in starts else ("all_reduce" if "all_reduce" in starts else (sorted(starts) or [""])[0])
        msg.align_kind = kind
        on = starts.get(kind, {})
    if align == "instance" and table is not None and step is not None and instance is not None:
        worker, at = instance
        rank = facts.rank_of.get(worker)
        got = instance_starts(table, rank, int(at) + facts.clock.get(worker, 0), msg.step) if rank is not None else None
        if got is None:
            msg.note = f"no matched collective instance of {worker} at that time in step {msg.step}"
        else:
            msg.align_kind, on = got
    common = None  # align "clock": the first row of the order's start of the step (corrected clock)
    if align == "clock" and first is not None and files:
        f0 = files[0]
        s0 = facts.step_range.get(f0.worker, {}).get(msg.step, (first.start_ns, first.end_ns))[0]
        common = first.origin - facts.clock.get(f0.worker, 0) + s0
    placed = []  # (row, index, the row's time 0, the rank's clock offset)
    for f, idx, state in rows:
        r = msg.rows.add(worker=f.worker, rank=facts.rank_of.get(f.worker, f.rank), state=state)
        if idx is None:
            continue
        clock = facts.clock.get(f.worker, 0)
        s0, s1 = facts.step_range.get(f.worker, {}).get(msg.step, (idx.start_ns, idx.end_ns))
        mine = idx.origin - clock + s0  # the rank's start of the step, corrected clock
        zero = common if common is not None else mine
        coll = on.get(facts.rank_of.get(f.worker, f.rank))
        if coll is not None:  # its first instance of the kind, on the corrected clock
            zero, r.on_collective = int(coll) - clock, True
        r.zero_unix_ns = zero
        r.origin_offset_ns = zero - (idx.origin - clock)
        r.step_start_ns, r.step_end_ns = mine - zero, mine - zero + (s1 - s0)
        placed.append((r, idx, zero, clock))
    if ws is None or we is None or we <= ws:
        pad = max(longest // 50, 1000)
        ws, we = -pad, longest + pad
        if on and placed:  # on a collective: the steps of the rows answered
            ws = min(r.step_start_ns for r, _, _, _ in placed) - pad
            we = max(r.step_end_ns for r, _, _, _ in placed) + pad
    msg.window_start_ns, msg.window_end_ns, msg.bins = ws, we, bins
    segs_by_worker: Dict[str, list] = {}
    if critical is not None:
        msg.critical_known = True
        for seg in critical.critical_path.segments:
            if int(seg.step) == msg.step:
                segs_by_worker.setdefault(seg.worker, []).append(seg)
    by_rank_worker = {facts.rank_of.get(f.worker, f.rank): f.worker for f in files}
    for w, segs in list(segs_by_worker.items()):
        if not w:  # segments named by rank only
            del segs_by_worker[w]
            for seg in segs:
                segs_by_worker.setdefault(by_rank_worker.get(int(seg.rank), ""), []).append(seg)
    for r, idx, zero, clock in placed:
        local0 = zero + clock - idx.origin  # the row's time 0 in the index's own ns
        host = not has_gpu(idx)
        comp, comm = (host_row_bins if host else row_bins)(idx, local0 + ws, local0 + we, bins)
        r.host_side = host
        if host:
            msg.host_note = HOST_NOTE
        r.compute.extend(np.round(comp, 4).tolist())
        r.communication.extend(np.round(comm, 4).tolist())
        r.compute_share = float(comp.mean()) if len(comp) else 0.0
        r.communication_share = float(comm.mean()) if len(comm) else 0.0
        for seg in segs_by_worker.get(r.worker, []):  # on the rank's own clock: less its offset
            at = int(seg.start_unix_ns) - clock - zero
            msg.critical.add(
                worker=r.worker,
                start_ns=at,
                end_ns=at + int(seg.end_unix_ns - seg.start_unix_ns),
                kind=PATH_KINDS.get(int(seg.kind), "compute"),
                name=seg.name,
            )
    return msg
