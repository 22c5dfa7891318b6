"""The pipeline schedule across ranks: which micro-batch's forward and backward ran when on every
stage, the schedule recognised, and the bubbles split into fill/drain and waiting.

    build_schedule(ranks, topo, flat) -> PipelineSchedule

``ranks`` after the waits (``RankData.group`` filled), ``topo`` from topology.build, ``flat`` the
matched groups. Each rank's slots are its phases (``ParallelView.phases``, analysis/phases.py). The
definitions (also in docs/pipeline-schedule.md):

- **Slot**: one phase of one stage: its device extent (first compute kernel's start to the last
  one's end; the host events' extent on a CPU trace), clock-corrected (``RankData.offset_ns``).
  Slots of a stage run in their host order (one thread issues them).
- **Identity** (micro-batch, chunk): from the send/recv pairing (match.py's matched pairs): a
  forward that receives its input from a forward of the previous stage is that forward's
  micro-batch and chunk (from the last stage to stage 0: the next chunk); a backward that receives
  from a backward of the next stage likewise (from stage 0 to the last stage: the previous chunk).
  Forwards that receive nothing (stage 0, chunk 0) are micro-batches 0, 1, … in order; backwards that
  receive nothing (the last stage, the last chunk) likewise. Where pairing leaves a slot without
  identity, the pipeline-step falls back to the order alone (the n-th forward is micro-batch n, chunk 0).
- **Schedule**: the order of (phase, micro-batch, chunk) on every stage and step is compared with
  GPipe, 1F1B and interleaved 1F1B (``expected``); the one every stage-step follows is recognised.
- **Span** of a pipeline's step: from the first slot's start on any of its stages to the last slot's
  end on any. A stage's **idle** = the span minus its slots: before its first slot, between slots,
  after its last one.
- **Fill/drain** vs **waiting**: the recognised order is replayed with every forward taking the
  pipeline-step's mean forward and every backward its mean backward (balanced stages): a slot starts
  when the previous slot of its stage has ended and the slot it depends on (the same micro-batch's
  forward on the previous stage, backward on the next one, or its own forward on the last stage)
  has ended plus the latency of the send/recv between them: from the sender's slot's end to its send
  kernel's start, plus the transfer (waits.py). Each idle stretch (before slot k of a stage, or after
  its last) is fill/drain up to the replay's idle at the same place, and waiting beyond it. A step
  whose order cannot be replayed (a slot would wait for one its neighbour runs later) keeps its idle
  unsplit (BUBBLE_KIND_UNSPECIFIED).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, cast

import numpy as np

from ...v1 import schedule_pb2 as spb
from .load import pool_of
from .match import RECV, SEND, SEND_RECV, Flat
from .model import RankData, Topology

F, B = 1, 2   # PhaseSpans.phase
PIPELINES_DRAWN = 8

BUBBLE_DEFINITION = (
    "span = the pipeline's step from its first slot's start on any stage to its last slot's end on any; a stage's "
    "idle = the span minus its slots (forwards and backwards, device extent). Fill/drain = the idle the recognised "
    "schedule imposes with balanced stages (the same order replayed with every forward and backward at the step's "
    "mean duration, each send/recv taking its measured latency: the send's launch after the sender's slot, then the "
    "transfer), at the same place; waiting = the rest (a slower neighbour, a receive posted late, the host's gaps).")

_PHASE = {F: spb.SCHEDULE_PHASE_FORWARD, B: spb.SCHEDULE_PHASE_BACKWARD}
_NAMES = {spb.SCHEDULE_KIND_1F1B: "1F1B", spb.SCHEDULE_KIND_GPIPE: "GPipe",
          spb.SCHEDULE_KIND_INTERLEAVED: "interleaved", spb.SCHEDULE_KIND_UNKNOWN: "unknown",
          spb.SCHEDULE_KIND_NOT_PIPELINED: "not pipelined"}


# ---------------------------------------------------------------- the schedules

def expected(kind: int, pp: int, stage: int, m: int, v: int = 1) -> List[Tuple[int, int, int]]:
    """The (phase, micro-batch, chunk) order of ``stage`` under schedule ``kind`` with ``pp`` stages,
    ``m`` micro-batches and ``v`` chunks per stage (Paddle's PipelineParallel and
    PipelineParallelWithInterleave; Megatron's schedules are the same)."""
    if kind == spb.SCHEDULE_KIND_GPIPE:
        return [(F, i, 0) for i in range(m)] + [(B, i, 0) for i in range(m)]
    if kind == spb.SCHEDULE_KIND_1F1B:
        warm = min(pp - stage - 1, m)
        out = [(F, i, 0) for i in range(warm)]
        for j in range(m - warm):
            out += [(F, warm + j, 0), (B, j, 0)]
        return out + [(B, j, 0) for j in range(m - warm, m)]
    if kind == spb.SCHEDULE_KIND_INTERLEAVED:
        total = m * v

        def mb(k):
            return (k // (pp * v)) * pp + k % pp

        def fwd(k):
            return (F, mb(k), (k // pp) % v)

        def bwd(k):
            return (B, mb(k), v - 1 - (k // pp) % v)

        warm = total if m == pp else min(total, (pp - stage - 1) * 2 + (v - 1) * pp)
        out = [fwd(k) for k in range(warm)]
        for j in range(total - warm):
            out += [fwd(warm + j), bwd(j)]
        return out + [bwd(j) for j in range(total - warm, total)]
    return []


# ---------------------------------------------------------------- slots

class _RankSlots:
    """One rank's phases as slots (columns), clock-corrected unix ns."""

    def __init__(self, r: RankData):
        ph = r.digest.parallel.phases
        self.n = n = len(ph.phase)

        def col(f):
            v = getattr(ph, f)
            return np.fromiter(v, dtype=np.int64, count=len(v))

        self.phase = col("phase")
        self.step = col("step")
        hs, he = col("host_start_ns"), col("host_end_ns")
        ds, de = col("device_start_ns"), col("device_end_ns")
        kern = col("kernels")
        dev = kern > 0
        base = int(r.origin_unix_ns) - int(r.offset_ns)
        self.host_start = hs + base
        self.start = np.where(dev, ds, hs) + base
        self.end = np.where(dev, de, he) + base
        self.busy = np.where(dev, col("kernel_ns"), he - hs)
        self.on_device = bool(dev.any())
        # instance index → slot
        self.inst_slot = np.full(r.kind.size, -1, dtype=np.int64)
        ptr = col("p2p_ptr") if len(ph.p2p_ptr) == n + 1 else np.zeros(n + 1, np.int64)
        idx = col("p2p")
        if not (idx.size and ptr[-1] == idx.size and (idx >= 0).all() and (idx < r.kind.size).all()):
            ptr, idx = np.zeros(n + 1, np.int64), np.zeros(0, np.int64)   # none (or not this trace's)
        self.p2p_ptr, self.p2p_idx = ptr, idx   # slot i's send/recv: p2p_idx[p2p_ptr[i]:p2p_ptr[i+1]]
        self.inst_slot[idx] = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))


class _StageStep:
    def __init__(self, stage: int, rank: int, rows: np.ndarray):
        self.stage, self.rank, self.rows = stage, rank, rows   # rows: slot rows of the rank, host order
        self.mb = np.full(rows.size, -1, dtype=np.int64)
        self.chunk = np.full(rows.size, -1, dtype=np.int64)
        self.pred: List[Optional[Tuple[int, int]]] = [None] * rows.size   # (stage, position) it receives from
        self.lag = np.zeros(rows.size, dtype=np.int64)   # the transfer of what it receives (waits.py)


class _Partners:
    """For every instance of every rank (the pool's positions), its send/recv partner's rank index and
    instance (-1: not in a matched pair)."""

    def __init__(self, ranks: Sequence[RankData], flat: Flat):
        p = pool_of(ranks)
        self.base = p.base
        self.rank = np.full(p.kind.size, -1, dtype=np.int64)
        self.inst = np.full(p.kind.size, -1, dtype=np.int64)
        if flat.n:
            two = np.nonzero((flat.sizes == 2) & (flat.g_kind == SEND_RECV))[0]
            a, b = flat.ptr[two], flat.ptr[two] + 1
            for x, y in ((a, b), (b, a)):
                at = p.at(flat.m_rank[x], flat.m_inst[x])
                self.rank[at], self.inst[at] = flat.m_rank[y], flat.m_inst[y]


def _preds(pipe: List[int], ranks: Sequence[RankData], slots: Dict[int, "_RankSlots"], partners: _Partners,
           cells: Dict[int, "_StageStep"]) -> None:
    """For each slot of one pipeline-step (cells: stage → _StageStep), the slot of the same phase on
    another stage of the pipeline whose send it receives, and that edge's latency."""
    pos_of: Dict[Tuple[int, int], Tuple[int, int]] = {}   # (rank index, slot row) → (stage, position)
    for s, c in cells.items():
        for k, row in enumerate(c.rows.tolist()):
            pos_of[(c.rank, row)] = (s, k)
    in_pipe = set(pipe)
    for s, c in cells.items():
        r, rs = ranks[c.rank], slots[c.rank]
        transfer = cast(np.ndarray, r.transfer)  # set when the ranks are loaded (load.py)
        base = int(partners.base[c.rank])
        for k, row in enumerate(c.rows.tolist()):
            for j in rs.p2p_idx[rs.p2p_ptr[row]:rs.p2p_ptr[row + 1]].tolist():
                xr, xi = int(partners.rank[base + j]), int(partners.inst[base + j])
                if xr < 0 or xr == c.rank or xr not in in_pipe:
                    continue
                x_slot = int(slots[xr].inst_slot[xi])
                other = pos_of.get((xr, x_slot))
                if other is None:
                    continue
                d, xd = int(r.direction[j]), int(ranks[xr].direction[xi])
                receives = d == RECV or (d != SEND and xd == SEND)
                if d not in (SEND, RECV) and xd not in (SEND, RECV):   # no direction: the earlier one sent
                    receives = slots[xr].start[x_slot] < rs.start[row]
                if not receives or rs.phase[row] != slots[xr].phase[x_slot]:
                    continue
                c.pred[k] = other
                # the edge's latency: from the sender's slot's end to its send kernel's start (the send's
                # launch), then the transfer (waits.py); a receive posted late is the receiver's doing
                sender = ranks[xr]
                launch = int(sender.start[xi]) - int(sender.offset_ns) - int(slots[xr].end[x_slot])
                c.lag[k] = max(int(c.lag[k]), int(transfer[j]) + max(0, launch))


def _identify(cells: Dict[int, _StageStep], slots: Dict[int, _RankSlots], pp: int) -> Tuple[bool, int]:
    """Micro-batch and chunk of every slot from the pairing (True) or, failing that, from the order
    (False); the number of chunks."""
    def phase(c, k):
        return int(slots[c.rank].phase[c.rows[k]])

    for c in cells.values():
        c.mb[:] = -1
        c.chunk[:] = -1
    # roots: stage 0's forwards without a sender
    if 0 in cells:
        c0 = cells[0]
        n = 0
        for k in range(c0.rows.size):
            if phase(c0, k) == F and c0.pred[k] is None:
                c0.mb[k], c0.chunk[k] = n, 0
                n += 1

    def propagate(ph: int) -> None:
        for _ in range(4 * pp + 4):
            changed = False
            for s, c in cells.items():
                for k in range(c.rows.size):
                    pred = c.pred[k]
                    if c.mb[k] >= 0 or phase(c, k) != ph or pred is None:
                        continue
                    ps, pk = pred
                    oc = cells[ps]
                    if oc.mb[pk] < 0:
                        continue
                    step = 0
                    if ph == F and ps == pp - 1 and s == 0:
                        step = 1
                    elif ph == B and ps == 0 and s == pp - 1:
                        step = -1
                    c.mb[k], c.chunk[k] = oc.mb[pk], oc.chunk[pk] + step
                    changed = True
            if not changed:
                return

    propagate(F)
    v = 1 + max((int(c.chunk.max()) for c in cells.values() if c.chunk.size), default=0)
    if pp - 1 in cells:
        cl = cells[pp - 1]
        n = 0
        for k in range(cl.rows.size):
            if phase(cl, k) == B and cl.pred[k] is None:
                cl.mb[k], cl.chunk[k] = n, v - 1
                n += 1
    propagate(B)
    if all((c.mb >= 0).all() for c in cells.values()):
        return True, v
    for c in cells.values():   # the order alone
        seen = {F: 0, B: 0}
        for k in range(c.rows.size):
            p = phase(c, k)
            c.mb[k], c.chunk[k] = seen[p], 0
            seen[p] += 1
    return False, 1


def _replay(cells: Dict[int, _StageStep], slots: Dict[int, _RankSlots], pp: int, v: int,
            tf: float, tb: float) -> Optional[Dict[int, List[int]]]:
    """The ideal idle before each slot (and after the last) of every stage: the recognised order with
    balanced durations, each slot also waiting for the transfer of what it receives; None when the
    order cannot be replayed (a dependency never met)."""
    end_of: Dict[Tuple[int, int, int, int], float] = {}
    keys = {s: [(int(slots[c.rank].phase[c.rows[k]]), int(c.mb[k]), int(c.chunk[k])) for k in range(c.rows.size)]
            for s, c in cells.items()}
    present = {(s, *key) for s, ks in keys.items() for key in ks}

    lag = {(s, *key): int(c.lag[k]) for s, c in cells.items() for k, key in enumerate(keys[s])}

    def dep(s, ph, mb, ch):
        if ph == F:
            d = (s - 1, F, mb, ch) if s > 0 else ((pp - 1, F, mb, ch - 1) if ch > 0 else None)
        elif s < pp - 1:
            d = (s + 1, B, mb, ch)
        elif ch < v - 1:
            d = (0, B, mb, ch + 1)
        else:
            d = (s, F, mb, ch)
        return d if d in present else None

    pos = {s: 0 for s in cells}
    free = {s: 0.0 for s in cells}
    starts = {s: [0.0] * len(keys[s]) for s in cells}
    ends = {s: [0.0] * len(keys[s]) for s in cells}
    left = sum(len(k) for k in keys.values())
    while left:
        progressed = False
        for s in cells:
            while pos[s] < len(keys[s]):
                ph, mb, ch = keys[s][pos[s]]
                d = dep(s, ph, mb, ch)
                if d is not None and d not in end_of:
                    break
                t0 = max(free[s], end_of[d] + lag[(s, ph, mb, ch)] if d is not None else 0.0)
                t1 = t0 + (tf if ph == F else tb)
                starts[s][pos[s]], ends[s][pos[s]] = t0, t1
                end_of[(s, ph, mb, ch)] = t1
                free[s] = t1
                pos[s] += 1
                left -= 1
                progressed = True
        if not progressed:
            return None
    span = max((e[-1] for e in ends.values() if e), default=0.0)
    out: Dict[int, List[int]] = {}
    for s in cells:
        gaps, prev = [], 0.0
        for a, b in zip(starts[s], ends[s]):
            gaps.append(int(round(max(0.0, a - prev))))
            prev = max(prev, b)
        gaps.append(int(round(max(0.0, span - prev))))
        out[s] = gaps
    return out


# ---------------------------------------------------------------- the message

class _Rec:
    """One stage-step's slots, bubbles and totals (a StageStep message only for the pipelines drawn)."""

    def __init__(self, stage: int, step: int, rank: int, worker: str, lo: int, hi: int):
        self.stage, self.step, self.rank, self.worker, self.lo, self.hi = stage, step, rank, worker, lo, hi
        self.span_ns = hi - lo
        self.slots_ns = self.fill_drain_ns = self.wait_ns = self.ideal_idle_ns = 0
        self.split = False   # its idle split into fill/drain and waiting (the replay succeeded)
        self.slots: List[tuple] = []     # (phase, micro-batch, chunk, start, end, busy)
        self.bubbles: List[tuple] = []   # (kind, start, end)
        self.f_ext: List[int] = []
        self.b_ext: List[int] = []

    def to_pb(self) -> spb.StageStep:
        m = spb.StageStep(stage=self.stage, step=self.step, rank=self.rank, worker=self.worker,
                          start_unix_ns=self.lo, end_unix_ns=self.hi, span_ns=self.span_ns, slots_ns=self.slots_ns,
                          fill_drain_ns=self.fill_drain_ns, wait_ns=self.wait_ns, ideal_idle_ns=self.ideal_idle_ns)
        for ph, mb, ch, a, b, busy in self.slots:
            m.slots.add(phase=_PHASE[ph], micro_batch=mb, chunk=ch, start_unix_ns=a, end_unix_ns=b, busy_ns=busy)
        for kind, a, b in self.bubbles:
            m.bubbles.add(kind=kind, start_unix_ns=a, end_unix_ns=b, duration_ns=b - a)
        return m


def build_schedule(ranks: Sequence[RankData], topo: Topology, flat: Flat) -> spb.PipelineSchedule:
    out = spb.PipelineSchedule(bubble_definition=BUBBLE_DEFINITION)
    chains = [c for c in topo.pipelines if len(c) >= 2]
    if not chains:
        out.kind, out.name = spb.SCHEDULE_KIND_NOT_PIPELINED, _NAMES[spb.SCHEDULE_KIND_NOT_PIPELINED]
        out.why = "No chain of ranks exchanges send/recv: the run is not pipelined (one stage)."
        out.stages = 1
        return out
    pp = max(len(c) for c in chains)
    if any(len(c) != pp for c in chains):
        out.notes.append("Pipelines of different lengths: only those with the most stages are analysed.")
    chains = [c for c in chains if len(c) == pp]
    out.stages = pp
    out.pipelines_total = len(chains)
    slots = {x: _RankSlots(ranks[x]) for c in chains for x in c}
    if not any(slots[x].n for x in slots):
        out.kind, out.name = spb.SCHEDULE_KIND_UNKNOWN, _NAMES[spb.SCHEDULE_KIND_UNKNOWN]
        out.why = ("The pipeline's traces hold no Forward or Backward events (Paddle records them around "
                   "Layer calls and backward()): no slot to place.")
        return out
    partners = _Partners(ranks, flat)
    steps = sorted(set().union(*[set(slots[x].step.tolist()) for x in slots]))
    out.steps.extend(steps)

    # per pipeline and step: the stage-steps with their identities
    work = []   # (pipeline index, step, cells, paired)
    v_seen, m_seen = 1, 0
    all_paired = True
    missing = 0
    for pi, chain in enumerate(chains):
        for st in steps:
            cells = {}
            for s, x in enumerate(chain):
                rs = slots[x]
                sel = np.nonzero(rs.step == st)[0]
                sel = sel[np.argsort(rs.host_start[sel], kind="stable")]
                if sel.size:
                    cells[s] = _StageStep(s, x, sel)
            if len(cells) < pp:
                missing += 1
                continue
            _preds(chain, ranks, slots, partners, cells)
            paired, v = _identify(cells, slots, pp)
            all_paired &= paired
            v_seen = max(v_seen, v)
            m_seen = max(m_seen, 1 + max(int(c.mb.max()) for c in cells.values()))
            work.append((pi, st, cells, paired))
    if missing:
        out.notes.append(f"{missing} pipeline-step(s) lack a stage's forward/backward events and are left out.")
    out.identity = ("send/recv pairing (a slot takes the micro-batch and chunk of the slot whose send it "
                    "receives)" if all_paired else "the order of the slots on each stage (send/recv pairing "
                    "incomplete)")
    out.micro_batches, out.chunks = m_seen, v_seen

    # recognition
    cands = ([spb.SCHEDULE_KIND_INTERLEAVED] if v_seen > 1 else [spb.SCHEDULE_KIND_1F1B, spb.SCHEDULE_KIND_GPIPE])
    follows = {k: 0 for k in cands}
    want: Dict[Tuple[int, int], list] = {}
    first_miss: Dict[int, str] = {}
    total = 0
    for pi, st, cells, _ in work:
        for s, c in cells.items():
            total += 1
            seq = list(zip(slots[c.rank].phase[c.rows].tolist(), c.mb.tolist(), c.chunk.tolist()))
            for k in cands:
                exp = want.get((k, s))
                if exp is None:
                    exp = want[(k, s)] = expected(k, pp, s, m_seen, v_seen)
                if seq == exp:
                    follows[k] += 1
                elif k not in first_miss:
                    first_miss[k] = _difference(seq, exp, pi, s, st, ranks[c.rank].rank)
    best = max(cands, key=lambda k: (follows[k], -cands.index(k)))
    if total and follows[best] == total:
        out.kind = best
        out.name = _NAMES[best] + (f" (V={v_seen})" if best == spb.SCHEDULE_KIND_INTERLEAVED else "")
        also = [_NAMES[k] for k in cands if k != best and follows[k] == total]
        out.why = (f"Every stage of every pipeline and step runs its {m_seen} micro-batches' forwards and backwards "
                   f"in {out.name}'s order" + (f" (identical to {', '.join(also)} with these sizes)" if also else "")
                   + ".")
    else:
        out.kind, out.name = spb.SCHEDULE_KIND_UNKNOWN, _NAMES[spb.SCHEDULE_KIND_UNKNOWN]
        out.why = (f"{follows[best]} of {total} stage-steps follow {_NAMES[best]}'s order; "
                   + (first_miss.get(best) or "no slot was identified") + ".")
    recognised = out.kind != spb.SCHEDULE_KIND_UNKNOWN

    # bubbles per pipeline, stage and step
    per_pipe: Dict[int, List[_Rec]] = {}
    matches: Dict[int, bool] = {}
    fwd_all, bwd_all = [], []
    unsplit = 0
    for pi, st, cells, _ in work:
        ext = {s: (slots[c.rank].start[c.rows], slots[c.rank].end[c.rows]) for s, c in cells.items()}
        lo = min(int(a.min()) for a, _ in ext.values())
        hi = max(int(b.max()) for _, b in ext.values())
        ph = {s: slots[c.rank].phase[c.rows] for s, c in cells.items()}
        dur_f = np.concatenate([(b - a)[ph[s] == F] for s, (a, b) in ext.items()])
        dur_b = np.concatenate([(b - a)[ph[s] == B] for s, (a, b) in ext.items()])
        fwd_all.append(dur_f)
        bwd_all.append(dur_b)
        tf = float(dur_f.mean()) if dur_f.size else 0.0
        tb = float(dur_b.mean()) if dur_b.size else 0.0
        ideal = _replay(cells, slots, pp, out.chunks, tf, tb)
        if ideal is None:
            unsplit += 1
        ok = True
        for s, c in cells.items():
            rs = slots[c.rank]
            a, b = ext[s][0].tolist(), ext[s][1].tolist()
            mbs, chs, phs = c.mb.tolist(), c.chunk.tolist(), ph[s].tolist()
            if recognised:
                exp = want.get((out.kind, s))
                if exp is None:
                    exp = want[(out.kind, s)] = expected(out.kind, pp, s, out.micro_batches, out.chunks)
                ok &= list(zip(phs, mbs, chs)) == exp
            else:
                ok = False
            m = _Rec(s, st, ranks[c.rank].rank, ranks[c.rank].worker, lo, hi)
            m.slots = list(zip(phs, mbs, chs, a, b, rs.busy[c.rows].tolist()))
            m.f_ext = [y - x for x, y, p_ in zip(a, b, phs) if p_ == F]
            m.b_ext = [y - x for x, y, p_ in zip(a, b, phs) if p_ == B]
            prev, gaps = lo, []
            for x, y in zip(a, b):
                gaps.append((prev, max(prev, x)))
                prev = max(prev, y)
            gaps.append((prev, hi))
            idle_ideal = ideal[s] if ideal is not None else None
            for gi, (g0, g1) in enumerate(gaps):
                g = g1 - g0
                if g <= 0:
                    continue
                if idle_ideal is None:
                    m.bubbles.append((spb.BUBBLE_KIND_UNSPECIFIED, g0, g1))
                    continue
                fd = min(g, idle_ideal[gi])
                if fd > 0:
                    m.bubbles.append((spb.BUBBLE_KIND_FILL_DRAIN, g0, g0 + fd))
                if g - fd > 0:
                    m.bubbles.append((spb.BUBBLE_KIND_WAIT, g0 + fd, g1))
                m.fill_drain_ns += fd
                m.wait_ns += g - fd
            m.slots_ns = m.span_ns - sum(g1 - g0 for g0, g1 in gaps)
            m.ideal_idle_ns = sum(idle_ideal) if idle_ideal is not None else 0
            m.split = idle_ideal is not None
            per_pipe.setdefault(pi, []).append(m)
        matches[pi] = matches.get(pi, True) and ok
    if unsplit:
        out.notes.append(f"{unsplit} pipeline-step(s) could not be replayed in their order: their idle is not split "
                         "into fill/drain and waiting.")
    fa = np.concatenate(fwd_all) if fwd_all else np.zeros(0)
    ba = np.concatenate(bwd_all) if bwd_all else np.zeros(0)
    tf_all = float(fa.mean()) if fa.size else 0.0
    tb_all = float(ba.mean()) if ba.size else 0.0
    # the textbook (pp - 1)·(tf + tb) / V with whole-stage tf, tb: a slot is one chunk's, V times shorter
    out.theory_fill_drain_ns = int(round((pp - 1) * (tf_all + tb_all)))

    # the pipelines' totals, the stage totals, the pipelines drawn
    pipes = []
    for pi in sorted(per_pipe):
        chain = chains[pi]
        sp = spb.SchedulePipeline(index=pi, ranks=[ranks[x].rank for x in chain],
                                  dp=topo.coord_dp[chain[0]] if topo.coord_dp else -1,
                                  mp=topo.coord_mp[chain[0]] if topo.coord_mp else -1,
                                  wait_ns=sum(m.wait_ns for m in per_pipe[pi]), matches_schedule=matches[pi])
        pipes.append(sp)
    for s in range(pp):
        rows = [(pi, m) for pi, ms in per_pipe.items() for m in ms if m.stage == s]
        if not rows:
            continue
        t = out.stage_totals.add(stage=s)
        t.span_ns = _mean([m.span_ns for _, m in rows])
        t.slots_ns = _mean([m.slots_ns for _, m in rows])
        # fill/drain and waiting over the stage-steps whose idle is split (replayed)
        t.fill_drain_ns = _mean([m.fill_drain_ns for _, m in rows if m.split])
        t.wait_ns = _mean([m.wait_ns for _, m in rows if m.split])
        t.bubble_ratio = sum(m.span_ns - m.slots_ns for _, m in rows) / max(1, sum(m.span_ns for _, m in rows))
        ext_f = [x for _, m in rows for x in m.f_ext]
        ext_b = [x for _, m in rows for x in m.b_ext]
        t.forward_ns, t.backward_ns = _mean(ext_f), _mean(ext_b)
        by_pipe: Dict[int, List[_Rec]] = {}
        for pi, m in rows:
            by_pipe.setdefault(pi, []).append(m)
        worst = max(sorted(by_pipe), key=lambda pi: sum(m.wait_ns for m in by_pipe[pi]) / len(by_pipe[pi]))
        t.worst_pipeline = worst
        t.worst_rank = ranks[chains[worst][s]].rank
        t.worst_wait_ns = _mean([m.wait_ns for m in by_pipe[worst] if m.split])
        t.worst_fill_drain_ns = _mean([m.fill_drain_ns for m in by_pipe[worst] if m.split])
    drawn = pipes
    if pipes:
        # what the chart opens on: the pipeline that waits most, its first step
        most = max(pipes, key=lambda p: (p.wait_ns, -p.index))
        out.drawn_pipeline = most.index
        out.drawn_step = min(m.step for m in per_pipe[most.index])
        if len(pipes) > PIPELINES_DRAWN:
            drawn = [pipes[0]] + ([most] if most.index != pipes[0].index else [])
            out.notes.append(f"{len(pipes)} pipelines: the first and the one that waits most are drawn; the "
                             "stage totals cover all of them (mean and worst).")
    for sp in drawn:
        sp.stage_steps.extend(m.to_pb() for m in sorted(per_pipe[sp.index], key=lambda m: (m.step, m.stage)))
        out.pipelines.append(sp)
    return out


def _mean(values) -> int:
    values = list(values)
    return int(round(sum(values) / len(values))) if values else 0


def _difference(seq, exp, pi, s, st, rank) -> str:
    def fmt(x):
        return f"{'F' if x[0] == F else 'B'}{x[1]}" + (f".{x[2]}" if x[2] else "")
    for k, (a, b) in enumerate(zip(seq, exp)):
        if a != b:
            return (f"first difference: pipeline {pi} stage {s} (rank {rank}) step {st}, slot {k + 1} is {fmt(a)} "
                    f"where it would be {fmt(b)}")
    return (f"first difference: pipeline {pi} stage {s} (rank {rank}) step {st} runs {len(seq)} slots where it would "
            f"run {len(exp)}")
