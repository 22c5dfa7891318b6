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

from typing import Dict, List, Sequence, Tuple

import numpy as np

from ...v1 import schedule_pb2 as spb
from .match import Flat
from .model import RankData, Topology
from .schedule_slots import B, F, _Partners, _RankSlots, _StageStep, _identify, _preds, _replay

PIPELINES_DRAWN = 8

BUBBLE_DEFINITION = (
    "span = the pipeline's step from its first slot's start on any stage to its last slot's end on any; a stage's "
    "idle = the span minus its slots (forwards and backwards, device extent). Fill/drain = the idle the recognised "
    "schedule imposes with balanced stages (the same order replayed with every forward and backward at the step's "
    "mean duration, each send/recv taking its measured latency: the send's launch after the sender's slot, then the "
    "transfer), at the same place; waiting = the rest (a slower neighbour, a receive posted late, the host's gaps)."
)

_PHASE = {F: spb.SCHEDULE_PHASE_FORWARD, B: spb.SCHEDULE_PHASE_BACKWARD}
_NAMES = {
    spb.SCHEDULE_KIND_1F1B: "1F1B",
    spb.SCHEDULE_KIND_GPIPE: "GPipe",
    spb.SCHEDULE_KIND_INTERLEAVED: "interleaved",
    spb.SCHEDULE_KIND_UNKNOWN: "unknown",
    spb.SCHEDULE_KIND_NOT_PIPELINED: "not pipelined",
}


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


# ---------------------------------------------------------------- the message


class _Rec:
    """One stage-step's slots, bubbles and totals (a StageStep message only for the pipelines drawn)."""

    def __init__(self, stage: int, step: int, rank: int, worker: str, lo: int, hi: int):
        self.stage, self.step, self.rank, self.worker, self.lo, self.hi = stage, step, rank, worker, lo, hi
        self.span_ns = hi - lo
        self.slots_ns = self.fill_drain_ns = self.wait_ns = self.ideal_idle_ns = 0
        self.split = False  # its idle split into fill/drain and waiting (the replay succeeded)
        self.slots: List[tuple] = []  # (phase, micro-batch, chunk, start, end, busy)
        self.bubbles: List[tuple] = []  # (kind, start, end)
        self.f_ext: List[int] = []
        self.b_ext: List[int] = []

    def to_pb(self) -> spb.StageStep:
        m = spb.StageStep(
            stage=self.stage,
            step=self.step,
            rank=self.rank,
            worker=self.worker,
            start_unix_ns=self.lo,
            end_unix_ns=self.hi,
            span_ns=self.span_ns,
            slots_ns=self.slots_ns,
            fill_drain_ns=self.fill_drain_ns,
            wait_ns=self.wait_ns,
            ideal_idle_ns=self.ideal_idle_ns,
        )
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
        out.why = (
            "The pipeline's traces hold no Forward or Backward events (Paddle records them around "
            "Layer calls and backward()): no slot to place."
        )
        return out
    partners = _Partners(ranks, flat)
    steps = sorted(set().union(*[set(slots[x].step.tolist()) for x in slots]))
    out.steps.extend(steps)

    # per pipeline and step: the stage-steps with their identities
    work = []  # (pipeline index, step, cells, paired)
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
    out.identity = (
        "send/recv pairing (a slot takes the micro-batch and chunk of the slot whose send it receives)"
        if all_paired
        else "the order of the slots on each stage (send/recv pairing incomplete)"
    )
    out.micro_batches, out.chunks = m_seen, v_seen

    # recognition
    cands = [spb.SCHEDULE_KIND_INTERLEAVED] if v_seen > 1 else [spb.SCHEDULE_KIND_1F1B, spb.SCHEDULE_KIND_GPIPE]
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
        out.why = (
            f"Every stage of every pipeline and step runs its {m_seen} micro-batches' forwards and backwards "
            f"in {out.name}'s order" + (f" (identical to {', '.join(also)} with these sizes)" if also else "") + "."
        )
    else:
        out.kind, out.name = spb.SCHEDULE_KIND_UNKNOWN, _NAMES[spb.SCHEDULE_KIND_UNKNOWN]
        out.why = (
            f"{follows[best]} of {total} stage-steps follow {_NAMES[best]}'s order; "
            + (first_miss.get(best) or "no slot was identified")
            + "."
        )
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
        out.notes.append(
            f"{unsplit} pipeline-step(s) could not be replayed in their order: their idle is not split "
            "into fill/drain and waiting."
        )
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
        sp = spb.SchedulePipeline(
            index=pi,
            ranks=[ranks[x].rank for x in chain],
            dp=topo.coord_dp[chain[0]] if topo.coord_dp else -1,
            mp=topo.coord_mp[chain[0]] if topo.coord_mp else -1,
            wait_ns=sum(m.wait_ns for m in per_pipe[pi]),
            matches_schedule=matches[pi],
        )
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
            out.notes.append(
                f"{len(pipes)} pipelines: the first and the one that waits most are drawn; the "
                "stage totals cover all of them (mean and worst)."
            )
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
            return (
                f"first difference: pipeline {pi} stage {s} (rank {rank}) step {st}, slot {k + 1} is {fmt(a)} "
                f"where it would be {fmt(b)}"
            )
    return (
        f"first difference: pipeline {pi} stage {s} (rank {rank}) step {st} runs {len(seq)} slots where it would "
        f"run {len(exp)}"
    )
