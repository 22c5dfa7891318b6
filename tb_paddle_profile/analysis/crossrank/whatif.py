"""What-if estimates: the critical-path graph (replay.py) replayed with one change.

Each estimate is the job's mean step time (mean over ranks and steps of the ProfileStep
durations) of the changed replay, against the unchanged replay's. The changes (also in
docs/critical-path.md):

* **dp_overlap**: every matched data-parallel all-reduce (topology axis dp) keeps its
  synchronisation (it ends when its last member started) but its transfer takes no time.
* **straggler**: the costliest anomaly of the verdict. Slow compute (cause device_compute): its
  compute runs' kernel time is scaled by its role peers' median compute ÷ its own. A host-side one
  (data loader, launches, the wait for the step's first work): every lag from its step starts (its
  launches, its host's next node) is shortened by its excess over its role peers.
* **balanced_stages**: each pipeline stage's compute runs are scaled so that its compute (the
  median over its ranks) equals the mean over the stages.
* **double_micro_batches**: not a replay; the 1F1B bubble model. A step of M micro-batches over
  S stages takes A + (M + S − 1) · t, t the bottleneck stage's forward + backward time per
  micro-batch (its Forward/Backward phases' device spans ÷ M, median over the stage's ranks); with
  2M: the step grows by M · t and does twice the work, so the saving is per sample.
* **no_launch_overhead**: the host issues the step's work at once: every launch of a step happens
  when its first launch did (launch edges dropped but for the first), and the host reaches its
  synchronising call then; the data loader before the first launch and the work after the
  synchronisation stay.
* **balanced_sequences**: every data-parallel replica at the replicas' mean tokens per step (from the
  recorded input shapes): each rank's compute runs scaled by the mean ÷ its replica's tokens
  (crossrank/sequences.py).
"""

from __future__ import annotations

import itertools
import statistics
from typing import List, Optional, Sequence

import numpy as np

from ...v1 import whatif_pb2 as wpb
from .. import program as P
from ..collectives import ALL_REDUCE
from . import sequences, verdict
from .steps import _Steps
from .replay import Graph, prepare
from .model import CAVEAT

TITLES = {
    wpb.WHAT_IF_DP_OVERLAP: "DP all-reduce fully overlapped",
    wpb.WHAT_IF_STRAGGLER: "Straggler at its peers' speed",
    wpb.WHAT_IF_BALANCED_STAGES: "Stages balanced",
    wpb.WHAT_IF_DOUBLE_MICRO_BATCHES: "Twice the micro-batches",
    wpb.WHAT_IF_NO_LAUNCH_OVERHEAD: "No host launch overhead",
    wpb.WHAT_IF_BALANCED_SEQUENCES: sequences.TITLE,
}


def _result(
    kind: wpb.WhatIfKind,
    base: float,
    new: float,
    assumption: str,
    rank: int = -1,
    per_sample: bool = False,
    saving: Optional[float] = None,
) -> wpb.WhatIf:
    s = int(round((base - new) if saving is None else saving))
    b = int(round(base))
    return wpb.WhatIf(
        kind=kind,
        title=TITLES[kind],
        applicable=True,
        step_ns=b,
        new_step_ns=int(round(new)),
        saving_ns=s,
        saving_fraction=s / b if b else 0.0,
        assumption=assumption,
        per_sample=per_sample,
        rank=rank,
    )


def _not_applicable(kind: wpb.WhatIfKind, base: float, reason: str) -> wpb.WhatIf:
    return wpb.WhatIf(
        kind=kind,
        title=TITLES[kind],
        applicable=False,
        reason=reason,
        step_ns=int(round(base)),
        new_step_ns=int(round(base)),
        rank=-1,
    )


def _compute_figures(graph: Graph):
    prep = graph.prep
    st = _Steps(prep.ranks)
    return st, verdict.figures(st)


def dp_overlap(graph: Graph, base: float, *_) -> wpb.WhatIf:
    k = wpb.WHAT_IF_DP_OVERLAP
    flat = graph.prep.flat
    if not flat.n:
        return _not_applicable(k, base, "no collective was matched across ranks")
    sel = (graph.g_axis == "dp") & (flat.g_kind == ALL_REDUCE)
    if not sel.any():
        return _not_applicable(k, base, "the run has no data-parallel all-reduce")
    tr = np.where(sel, 0.0, graph.transfer)
    s, e = graph.replay(transfer=tr)
    return _result(
        k,
        base,
        graph.job_step(s, e),
        "Each data-parallel all-reduce still waits for its last member but its transfer takes no "
        "time (fully hidden behind other work).",
    )


def straggler(graph: Graph, base: float, *_) -> wpb.WhatIf:
    """The costliest rank the verdict names at its role peers' speed: its cost (cost.py) is the saving,
    the same number the verdict and the findings give."""
    from .cost import median_step, named, rank_costs

    k = wpb.WHAT_IF_STRAGGLER
    prep = graph.prep
    ranks, topo = prep.ranks, prep.topo
    if len(ranks) < 2:
        return _not_applicable(k, base, "a single rank has no peers")
    st, figs = _compute_figures(graph)
    peer_vals = verdict.peer_medians(ranks, topo, figs)
    med = median_step(st)
    costs = rank_costs(ranks, topo, prep.flat, figs, peer_vals, med, graph=graph)
    found = [c for c in named(costs, med) if c.cost > 0] or named(costs, med)
    if not found:
        return _not_applicable(k, base, "no rank is slower than its role peers")
    c = found[0]  # the costliest
    label = ranks[c.index].rank
    if c.method == "step times":
        how = (
            "from the step times (no collective joins the ranks in the traces): its excess as far as the "
            "other ranks' idle time can give it back"
        )
    elif verdict.CAUSE[c.figure] == "device_compute":
        how = (
            f"its compute kernels take {c.peer_value / max(1, c.value):.0%} of their time, its role peers' "
            "median compute; everything else as traced"
        )
    else:
        how = (
            f"its host reaches each step's work {c.excess / 1e6:.3g} ms earlier (its excess over its role "
            f"peers: it {verdict.WHAT.get(c.figure, c.figure)} longer); its kernels as traced"
        )
    return _result(
        k, costs.base_step, costs.base_step - c.cost, f"Rank {label} at its role peers' speed: {how}.", rank=label
    )


def balanced_stages(graph: Graph, base: Optional[float], *_) -> wpb.WhatIf:
    """``base``: the unchanged replay's job step (None: replayed here)."""
    k = wpb.WHAT_IF_BALANCED_STAGES
    prep = graph.prep
    of = prep.topo.stages(len(prep.ranks))  # the send/recv chains' stages, with or without a grid
    stages = sorted({p for p in of if p >= 0})
    if len(stages) < 2:
        return _not_applicable(k, base or 0.0, "the run has no pipeline stages")
    _, figs = _compute_figures(graph)
    comp = {p: statistics.median([figs[i]["compute"] for i in range(len(prep.ranks)) if of[i] == p]) for p in stages}
    mean = sum(comp.values()) / len(comp)
    scale = np.ones(graph.n)
    pp_of = np.array(of, dtype=np.int64)[graph.rank] if graph.n else np.zeros(0, np.int64)
    for p in stages:
        scale[(pp_of == p) & (graph.kind == P.COMPUTE)] = mean / max(1.0, comp[p])
    if base is None:  # the unchanged replay too, in the same walk
        s, e = graph.replay_many([{}, dict(scale=scale)])
        base, new = graph.job_steps(s, e).tolist()
    else:
        s, e = graph.replay(scale=scale)
        new = graph.job_step(s, e)
    spread = max(comp.values()) / max(1.0, min(comp.values())) - 1
    return _result(
        k,
        base,
        new,
        f"Every stage computes the stages' mean ({len(stages)} stages, now {spread:.0%} apart): its "
        "compute kernels are scaled by mean ÷ its own; communication as traced.",
    )


def _phase_columns(ranks):
    """Every rank's ParallelView.phases as columns end to end, with the rank index of each phase."""
    phs = [r.digest.parallel.phases for r in ranks]
    counts = np.array([len(p.phase) for p in phs], dtype=np.int64)
    n = int(counts.sum())

    def col(name):
        return np.fromiter(itertools.chain.from_iterable(getattr(p, name) for p in phs), dtype=np.int64, count=n)

    return (
        np.repeat(np.arange(len(ranks)), counts),
        col("phase"),
        col("step"),
        col("device_start_ns"),
        col("device_end_ns"),
        col("host_start_ns"),
        col("host_end_ns"),
    )


def double_micro_batches(graph: Graph, base: float, *_) -> wpb.WhatIf:
    k = wpb.WHAT_IF_DOUBLE_MICRO_BATCHES
    prep = graph.prep
    ranks, topo = prep.ranks, prep.topo
    rank, phase, step, ds, de, hs, he = _phase_columns(ranks)
    fb = (phase == 1) | (phase == 2)
    if not fb.any():
        return _not_applicable(k, base, "the traces have no Forward/Backward events to count micro-batches by")
    # per (rank, step): forwards, the phases' device time, the host's time over them
    key = rank * (int(step.max() - step.min()) + 1) + (step - step.min())
    uk, inv = np.unique(key[fb], return_inverse=True)
    inv = inv.ravel()
    fw = np.bincount(inv, weights=(phase[fb] == 1).astype(float), minlength=uk.size)
    device = np.bincount(inv, weights=(de - ds)[fb].astype(float), minlength=uk.size)
    h_lo = np.full(uk.size, np.inf)
    h_hi = np.full(uk.size, -np.inf)
    np.minimum.at(h_lo, inv, hs[fb].astype(float))
    np.maximum.at(h_hi, inv, he[fb].astype(float))
    host = h_hi - h_lo
    r_of = uk // (int(step.max() - step.min()) + 1)
    ok = fw >= 1
    if not ok.any():
        return _not_applicable(k, base, "the traces have no Forward events to count micro-batches by")
    M = int(round(float(np.median(fw[ok]))))
    # a device-bound stage: its phases' device time; a host-bound one: the host's time over them
    per = np.where(device > 0, np.maximum(device, host), 0.0) / np.maximum(fw, 1)
    of = topo.stages(len(ranks))  # the send/recv chains' stages, with or without a grid
    S = max(1, len({p for p in of if p >= 0}))
    pp = np.array([max(p, 0) for p in of], dtype=np.int64)
    r_mean = np.bincount(r_of[ok], weights=per[ok], minlength=len(ranks)) / np.maximum(
        np.bincount(r_of[ok], minlength=len(ranks)), 1
    )
    has = np.bincount(r_of[ok], minlength=len(ranks)) > 0
    t_mb = max(float(np.median(r_mean[has & (pp == p)])) for p in np.unique(pp[has]).tolist())
    if t_mb <= 0:  # no device work in the phases: the bubble model is about devices
        return _not_applicable(k, base, "the Forward/Backward phases launched no device work: a CPU run")
    new = base + M * t_mb
    saving = base - new / 2  # the original step's samples now take half the new step
    return _result(
        k,
        base,
        new,
        f"1F1B with {M} micro-batch(es) over {S} stage(s): a step is A + (M + S - 1) × t with t = "
        f"{t_mb / 1e6:.3g} ms per micro-batch on the bottleneck stage; with {2 * M} the step does twice "
        "the work and grows by M × t (saving per sample).",
        per_sample=True,
        saving=saving,
    )


def no_launch_overhead(
    graph: Graph, base: float, s0: Optional[np.ndarray] = None, e0: Optional[np.ndarray] = None
) -> wpb.WhatIf:
    k = wpb.WHAT_IF_NO_LAUNCH_OVERHEAD
    lp = graph.lp
    has = lp >= 0
    if not has.any():
        return _not_applicable(k, base, "the traces have no kernel launches on the main thread")
    # per anchor: the lag of its first launch
    first = np.full(graph.n, np.inf)
    a = np.nonzero(has)[0]
    a = a[np.lexsort((graph.ll[a], lp[a]))]  # by anchor, smallest lag first
    if a.size:
        head = np.concatenate([[True], lp[a][1:] != lp[a][:-1]])
        first[lp[a][head]] = graph.ll[a][head]
    ll = np.where(has, np.minimum(graph.ll, first[np.maximum(lp, 0)]), graph.ll)
    tl = np.where(has, np.minimum(graph.tl, first[np.maximum(lp, 0)]), graph.tl)
    # a host node after an anchor with launches: reached right at the anchor's first launch
    host = ~graph.is_device & (graph.sp >= 0)
    f_sp = first[np.maximum(graph.sp, 0)]
    sl = np.where(host & np.isfinite(f_sp) & (graph.kind == P.SYNC), np.minimum(graph.sl, f_sp), graph.sl)
    # the gaps inside a compute run shrink to a queued kernel's (the host no longer paces them): the
    # rank's median gap after a stream predecessor that set a node's start
    if s0 is None or e0 is None:  # (given together, or neither)
        s0, e0 = graph.replay()
    sp = graph.sp
    queued = graph.is_device & (sp >= 0)
    queued &= np.abs(e0[np.maximum(sp, 0)] + graph.sl - s0) < 0.5
    qgap = np.full(len(graph.prep.ranks), float(P.FREE_LAG_NS))
    qr, qs = graph.rank[queued], graph.sl[queued]
    o = np.lexsort((qs, qr))
    qr, qs = qr[o], qs[o]
    if qr.size:  # per rank, the median of its sorted lags
        lo = np.searchsorted(qr, np.arange(qgap.size), side="left")
        hi = np.searchsorted(qr, np.arange(qgap.size), side="right")
        has = hi > lo
        mid_a, mid_b = (lo + (hi - lo - 1) // 2)[has], (lo + (hi - lo) // 2)[has]
        qgap[has] = (qs[mid_a] + qs[mid_b]) / 2
    gaps = graph.dur - graph.busy
    gaps = np.where(graph.kind == P.COMPUTE, np.minimum(gaps, np.maximum(graph.events - 1, 0) * qgap[graph.rank]), gaps)
    s, e = graph.replay(launch_lag=ll, host_lag=sl, tail_lag=tl, gaps=gaps)
    return _result(
        k,
        base,
        graph.job_step(s, e),
        "The host issues each step's work at once: every launch happens when the step's first did and "
        "the host reaches its synchronising call then; the data loader and the work after the "
        "synchronisation stay.",
    )


ALL = (dp_overlap, straggler, balanced_stages, double_micro_batches, no_launch_overhead, sequences.sequences_balanced)


def what_ifs(
    graph: Graph, base: float, start: Optional[np.ndarray] = None, end: Optional[np.ndarray] = None
) -> List[wpb.WhatIf]:
    """Every what-if; ``start``/``end``: the unchanged replay, when already made."""
    if start is None:
        start, end = graph.replay()
    return [f(graph, base, start, end) for f in ALL]


def analyze_whatif(
    inputs: Sequence,
    run: str = "",
    span: str = "",
    params=None,
    tokens_per_step=None,
    model_config=None,
    peak_tflops=None,
) -> wpb.RunWhatIf:
    """The RunWhatIf of the given RankDigests (or Summaries) of one run and span: the critical path,
    the what-ifs, the pipeline schedule and MFU (its Display is present.display.whatif's). A bad model
    config raises ValueError (one line naming the file)."""
    from ..mfu import mfu_of

    out, facts = whatif_parts(inputs, run, span)
    if facts is not None:
        out.mfu.CopyFrom(
            mfu_of(
                facts,
                params=params,
                tokens_per_step=tokens_per_step,
                model_config=model_config,
                peak_tflops=peak_tflops,
            )
        )
    return out


def whatif_parts(inputs: Sequence, run: str = "", span: str = ""):
    """(the RunWhatIf of analyze_whatif without its MFU, the ranks' MfuInputs: None without ranks). MFU is
    arithmetic on the ranks' recorded steps, not on the replay: the answer for other MFU inputs is this
    one with mfu_of(facts, ...) (the what-if route keeps both, runs.whatif_blob)."""
    from ..mfu import mfu_inputs
    from . import labels as L
    from .critical_path import critical_path
    from .schedule import build_schedule

    out = wpb.RunWhatIf(run=run, span=span)
    if not inputs:
        out.notes.append("No traces.")
        return out, None
    prep = prepare(inputs)
    out.ranks = len(prep.ranks)
    out.notes.extend(prep.notes)
    topo = prep.topo
    labels = {}
    for r in prep.ranks:
        i = r.index
        labels[i] = L.label(
            r.rank,
            r.hostname,
            r.device_id,
            r.pid,
            topo.coord_dp[i],
            topo.coord_pp[i],
            topo.coord_mp[i],
            sharding=topo.coord_sharding[i],
            worker=r.worker,
        )
    if not any(len(r.digest.parallel.program.kind) for r in prep.ranks):
        out.notes.append("The traces carry no program (parsed by an older version, or no events): no critical path.")
    else:
        graph = Graph(prep)
        start, end = critical_path(graph, out.critical_path, labels)
        base = graph.job_step(start, end)
        if graph.unmatched_note():
            out.notes.append(CAVEAT + graph.unmatched_note())
        if graph.stalled:
            out.notes.append(
                "Part of the graph could not be ordered across ranks (a collective whose members wait "
                "for each other): it keeps its traced times."
            )
        if base > 0:
            out.what_ifs.extend(what_ifs(graph, base, start, end))
        else:
            out.notes.append("No ProfileStep: there is no step time to replay.")
    out.schedule.CopyFrom(build_schedule(prep.ranks, topo, prep.flat))
    return out, mfu_inputs(prep.ranks, topo)
