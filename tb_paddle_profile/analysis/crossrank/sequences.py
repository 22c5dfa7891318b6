"""Sequence imbalance across data-parallel replicas, and FLOPs per rank and stage, from the ranks'
digests (``RunParallel.sequences``; docs/flops.md).

- A **replica** is the ranks of one data-parallel coordinate (topology.py): its MP and PP ranks see
  the same micro-batches. Without a known coordinate (no collective tells the topology) every rank
  is its own replica.
- Its **tokens per step**: the mean over its ranks and steps of Σ tokens of the step's micro-batches
  (Summary.sequences, read from the recorded input shapes: sequences.py).
- **Spread**: max / min − 1 of the replicas' tokens per step; the coefficient of variation beside it.
- **Cost** ("sequences balanced"): every rank's compute scaled by the replicas' mean tokens ÷ its
  replica's tokens (compute taken as proportional to tokens: attention's quadratic part is not
  modelled), the critical-path graph replayed (replay.py); the cost is the job's step minus the
  replayed one. Without a graph (no program in the digests, nothing matched): from the compute
  figures, the slowest replica's median compute minus the slowest after the scaling (data parallelism
  waits at its gradient all-reduce for the slowest replica).
- **Finding** ``sequence_imbalance``: a spread of at least SEQUENCE_IMBALANCE_FRACTION with a cost of
  at least STRAGGLER_MIN_COST_NS and STRAGGLER_MIN_COST_FRACTION of the median step.

FLOPs per rank (RankParallel.flops_per_step, tokens_per_step) and per stage
(PipelineStage.flops_per_step: the mean over its ranks) are the digests' Summary.flops model FLOPs per
step; the stage-imbalance finding quotes them beside the compute times (findings.py).
"""

from __future__ import annotations

import statistics
from typing import Dict, List, Optional, Sequence

import numpy as np

from ...v1 import plugin_pb2 as ppb
from ...v1 import whatif_pb2 as wpb
from .. import program as P
from . import thresholds as T
from .advice import t

# Replicas whose tokens per step differ by this much (max / min - 1) or more are imbalanced.
SEQUENCE_IMBALANCE_FRACTION = 0.10
TITLE = "Sequences balanced"
ASSUMPTION = (
    "Every data-parallel replica gets the replicas' mean tokens per step: each rank's compute kernels "
    "are scaled by the mean tokens ÷ its replica's (compute proportional to tokens; attention's "
    "quadratic term not modelled); communication as traced."
)


def tokens_per_step(digest) -> float:
    """The mean over the rank's steps of its micro-batches' tokens (0: none recorded): Σ tokens ÷ the
    steps, as sequences.py writes it with the rank's Summary (SequenceView.tokens_per_step)."""
    return digest.sequences.tokens_per_step


def _replicas(ranks: Sequence, topo) -> Dict[int, List[int]]:
    """dp coordinate → rank indexes; every rank alone (keyed -1 - index) without coordinates."""
    out: Dict[int, List[int]] = {}
    known = bool(topo.coord_dp) and any(d >= 0 for d in topo.coord_dp)
    for r in ranks:
        i = r.index
        key = topo.coord_dp[i] if known and topo.coord_dp[i] >= 0 else -1 - i
        out.setdefault(key, []).append(i)
    return out


def _scale(ranks: Sequence, topo, tok: Optional[Sequence[float]] = None, reps=None) -> Optional[np.ndarray]:
    """Per rank index, mean tokens ÷ its replica's tokens (None: no tokens); ``tok``, ``reps``: each
    rank's tokens_per_step and the replicas, when known."""
    vals = np.array([tokens_per_step(r.digest) for r in ranks] if tok is None else tok)
    reps = _replicas(ranks, topo) if reps is None else reps
    per = {k: float(np.mean(vals[v])) for k, v in reps.items()}
    have = {k: v for k, v in per.items() if v > 0}
    if len(have) < 2:
        return None
    mean = sum(have.values()) / len(have)
    f = np.ones(len(ranks))
    for k, v in reps.items():
        if per[k] > 0:
            f[v] = mean / per[k]
    return f


def _replay_saving(graph, scale_of_rank: np.ndarray, base: Optional[float]):
    """(base, new) job step of the replay with each rank's compute scaled (None: no graph)."""
    if graph is None or not graph.n:
        return None
    if (scale_of_rank == 1.0).all():  # every replica at the mean already: the scaled replay is the traced one
        if base is None:
            s, e = graph.replay_many([{}])
            base = float(graph.job_steps(s, e)[0])
        return base, base
    scale = np.where(graph.kind == P.COMPUTE, scale_of_rank[graph.rank], 1.0)
    if base is None:
        s, e = graph.replay_many([{}, dict(scale=scale)])
        base, new = graph.job_steps(s, e).tolist()
    else:
        s, e = graph.replay(scale=scale)
        new = graph.job_step(s, e)
    return base, new


def sequences_balanced(graph, base: float, *_) -> wpb.WhatIf:
    """The What-if "Sequences balanced" (whatif.py's signature)."""
    k = wpb.WHAT_IF_BALANCED_SEQUENCES
    prep = graph.prep
    f = _scale(prep.ranks, prep.topo)
    if f is None:
        return wpb.WhatIf(
            kind=k,
            title=TITLE,
            applicable=False,
            step_ns=int(round(base)),
            new_step_ns=int(round(base)),
            rank=-1,
            reason="the traces record no input shapes (Paddle 3.3.1 writes none), or one "
            "data-parallel replica only: no tokens to balance",
        )
    _, new = _replay_saving(graph, f, base)
    s, b = int(round(base - new)), int(round(base))
    return wpb.WhatIf(
        kind=k,
        title=TITLE,
        applicable=True,
        step_ns=b,
        new_step_ns=int(round(new)),
        saving_ns=s,
        saving_fraction=s / b if b else 0.0,
        assumption=ASSUMPTION,
        rank=-1,
    )


def rank_flops(out: ppb.RunParallel, ranks: Sequence, msgs: Sequence[ppb.RankParallel]) -> None:
    """Each rank's tokens and model FLOPs per step, and each pipeline stage's mean FLOPs."""
    by_rank = {}
    for r, m in zip(ranks, msgs):
        m.tokens_per_step = tokens_per_step(r.digest)
        m.flops_per_step = r.digest.flops.model_flops_per_step
        by_rank[m.rank] = m
    for s in out.pipeline.stages:
        vals = [by_rank[x].flops_per_step for x in s.ranks if x in by_rank]
        s.flops_per_step = float(np.mean(vals)) if vals else 0.0


def fill(
    out: ppb.RunParallel,
    ranks: Sequence,
    topo,
    figs: List[Dict[str, int]],
    median_step: float,
    graph=None,
    base: Optional[float] = None,
) -> Optional[ppb.Finding]:
    """RunParallel.sequences, and the finding when the replicas' tokens differ (None otherwise).
    ``graph``: the replay graph, a function making it (called only when there are tokens to balance) or
    None; ``base``: its unchanged job step when known."""
    sb = out.sequences
    tok = [tokens_per_step(r.digest) for r in ranks]
    if not any(tok):
        sb.why_not = (
            "No rank records the tokens of its micro-batches: no embedding or GEMM in their forward "
            "phases carries input shapes (Paddle 3.3.1 writes them empty, even with record_shapes=True)."
        )
        return None
    sb.present = True
    names: set = set()
    for r in ranks:
        names.update(r.digest.sequences.names)
    sources = sorted(names)
    reps = _replicas(ranks, topo)
    rows = []
    for key in sorted(reps):
        idx = reps[key]
        mb_tok: List[int] = []
        counts: List[int] = []  # micro-batches per step, by step, rank after rank
        for i in idx:
            sq = ranks[i].digest.sequences
            mb_tok.extend(sq.tokens)
            counts.extend(sq.step_micro_batches)
        per_step = [tok[i] for i in idx if tok[i] > 0]
        # (the mean of integer tokens: their exact sum over their count, as numpy's mean of them)
        rep = sb.replicas.add(
            dp=key if key >= 0 else -1,
            ranks=[ranks[i].rank for i in idx],
            tokens_per_step=float(np.mean(per_step)) if per_step else 0.0,
            tokens_per_micro_batch=float(sum(mb_tok)) / len(mb_tok) if mb_tok else 0.0,
            min_micro_batch_tokens=min(mb_tok) if mb_tok else 0,
            max_micro_batch_tokens=max(mb_tok) if mb_tok else 0,
            micro_batches=int(statistics.mode(counts)) if counts else 0,
            compute_ns=int(statistics.median(figs[i]["compute"] for i in idx)),
        )
        rows.append(rep)
    vals = np.array([r.tokens_per_step for r in rows if r.tokens_per_step > 0])
    sb.mean_tokens_per_step = float(vals.mean()) if vals.size else 0.0
    sb.spread = float(vals.max() / vals.min() - 1) if vals.size > 1 and vals.min() > 0 else 0.0
    sb.cv = float(vals.std() / vals.mean()) if vals.size > 1 and vals.mean() > 0 else 0.0
    src = ", ".join(sources)
    f = _scale(ranks, topo, tok, reps)
    if f is None:
        sb.why_not = f"One data-parallel replica only (tokens from {src}): nothing to compare."
        sb.step_ns = sb.balanced_step_ns = int(round(base or median_step))
        return None
    if not median_step:
        sb.why_not = "The traces have no ProfileStep: no step time to weigh the imbalance against."
        return None
    if (f == 1.0).all() and base is None:
        # every replica at the mean already: no change to replay, the cost is nil by construction (no graph
        # made for it: the cross-rank analysis no slower for the sequences)
        sb.step_ns = sb.balanced_step_ns = int(round(median_step))
        sb.cost_ns = 0
        sb.method = "balanced"
        sb.assumption = ASSUMPTION
        return None
    got = _replay_saving(graph() if callable(graph) else graph, f, base)
    if got is not None:
        b, new = got
        sb.method = "replay"
    else:
        comp = np.array([figs[i]["compute"] for i in range(len(ranks))], dtype=np.float64)
        slow = max(r.compute_ns for r in rows)
        slow_bal = max(float(np.median([comp[i] * f[i] for i in reps[key]])) for key in reps)
        b = float(median_step)
        new = b - max(0.0, slow - slow_bal)
        sb.method = "step times"
    sb.step_ns, sb.balanced_step_ns = int(round(b)), int(round(new))
    sb.cost_ns = max(0, sb.step_ns - sb.balanced_step_ns)
    sb.assumption = ASSUMPTION
    min_cost = max(T.STRAGGLER_MIN_COST_NS, T.STRAGGLER_MIN_COST_FRACTION * median_step)
    if sb.spread < SEQUENCE_IMBALANCE_FRACTION or sb.cost_ns < min_cost:
        return None
    hi = max(rows, key=lambda r: r.tokens_per_step)
    lo = min((r for r in rows if r.tokens_per_step > 0), key=lambda r: r.tokens_per_step)

    def name(r):
        return f"replica dp{r.dp}" if r.dp >= 0 else f"rank {r.ranks[0]}"

    how = "the replayed step" if sb.method == "replay" else "from the compute figures, the step"
    text = (
        f"Sequence imbalance: {name(hi)} gets {hi.tokens_per_step:,.0f} tokens per step, {name(lo)} "
        f"{lo.tokens_per_step:,.0f} ({sb.spread:.0%} more; {len(rows)} replicas, tokens from {src}); the other "
        f"replicas wait for the longest at the gradient all-reduce. With every replica at the mean "
        f"{sb.mean_tokens_per_step:,.0f} tokens, {how} would be {t(sb.cost_ns)} shorter "
        f"({sb.cost_ns / median_step:.1%} of the median step; the What-if '{TITLE}'): balance the sequence "
        "lengths across data-parallel ranks (pack or sort by length)."
    )
    f_msg = ppb.Finding(
        rule="sequence_imbalance",
        category="anomaly",
        cause="sequence_lengths",
        ranks=list(hi.ranks)[:64],
        stage=-1,
        cost_ns=int(sb.cost_ns),
        excess_ns=int(max(0, hi.compute_ns - lo.compute_ns)),
        text=text,
    )
    f_msg.triggers.add(
        metric="tokens per step of the largest replica over the smallest, minus 1",
        value=sb.spread,
        threshold=SEQUENCE_IMBALANCE_FRACTION,
        unit="fraction",
        rank=-1,
    )
    f_msg.triggers.add(
        metric="cost to the job per step (sequences balanced)",
        value=sb.cost_ns / median_step,
        threshold=min_cost / median_step,
        unit="fraction of the median step",
        rank=-1,
    )
    return f_msg


def stage_flops_text(stages: Sequence[ppb.PipelineStage], hi: int, lo: int) -> str:
    """The stage-imbalance finding's sentence in FLOPs ('' without FLOPs)."""
    a, b = stages[hi].flops_per_step, stages[lo].flops_per_step
    if a <= 0 or b <= 0:
        return ""
    return (
        f" In FLOPs (from the recorded shapes): stage {stages[hi].stage} does {a / 1e12:.4g} TFLOP per step, "
        f"stage {stages[lo].stage} {b / 1e12:.4g} ({a / b - 1:+.0%})."
    )
