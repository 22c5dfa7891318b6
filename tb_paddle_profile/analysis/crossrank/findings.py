"""The verdict (StragglerVerdict) and the findings (RunParallel.findings), most costly first.

Rules (thresholds in thresholds.py, explained in docs/distributed.md):

| rule | category | fires when |
|---|---|---|
| straggler | anomaly | a rank unlike its role peers beyond the noise (cost.py) whose replay at their speed shortens the job's step by at least STRAGGLER_MIN_COST_NS and STRAGGLER_MIN_COST_FRACTION of the median step, and by at least ABSORBED_SHARE of its excess |
| absorbed_stall | anomaly | such a rank that costs the job less than ABSORBED_SHARE of its excess (the pipeline hides most of it), named when it costs the floor or its excess is at least ANOMALY_MIN_EXCESS_FRACTION of the median step |
| shared_excess | structure | STRUCTURE_MIN_RANKS or more ranks (and STRUCTURE_MIN_SHARE of the world) share one excess: their program or place differs, not their speed; replayed through one of them |
| stage_imbalance | structure | the stages' mean compute differs by ≥ STAGE_IMBALANCE_FRACTION (its text quotes the stages' FLOPs when the traces record shapes) |
| sequence_imbalance | anomaly | the data-parallel replicas' tokens per step differ by ≥ SEQUENCE_IMBALANCE_FRACTION at a cost (sequences.py) |
| structural_wait | structure | a stage's ranks wait ≥ STRUCTURAL_WAIT_FRACTION of the step at pipeline-group collectives |
| uncertain | evidence | a rank's matched coverage is below MIN_COVERAGE |
"""

from __future__ import annotations

import statistics
from typing import Dict, List, Sequence

import numpy as np

from ...v1 import plugin_pb2 as ppb
from ...v1 import summary_pb2 as pb
from . import sequences, thresholds as T
from .advice import t
from .cost import STRUCTURE_MIN_RANKS, named as named_candidates, rank_costs
from .match import Flat
from .model import CAVEAT, RankData, Topology
from .verdict import CAUSE, FIGURES, WHAT, has_peers


FIGURE_NAME = {
    "compute": "compute",
    "dataloader": "data loading",
    "launch": "kernel launches",
    "memcpy": "copies",
    "stall": "host stalls in the middle of the step",
    "first_device": "the wait for the step's first work",
}
# Where to look, per cause, in the verdict's sentence.
CHECK = {
    "device_compute": "its GPU",
    "host_dataloader": "its data loader",
    "host": "its host",
    "host_stall": "its host's Python between launches (garbage collection, checkpointing, logging)",
    "launch_overhead": "its kernel launches",
    "memcpy": "its memory copies",
}


def _finding(out, rule, category, text, cause="", ranks=(), stage=-1, cost=0, excess=0, absorbed=False, triggers=()):
    f = ppb.Finding(
        rule=rule,
        category=category,
        cause=cause,
        ranks=list(ranks),
        stage=stage,
        cost_ns=int(cost),
        excess_ns=int(excess),
        absorbed=absorbed,
        text=text,
    )
    for tr in triggers:
        f.triggers.add(**tr)
    return f


def _name(out, v, found, ranks, topo, msgs, figs, peer_vals, c, median_step, check, who) -> None:
    """The finding and the Straggler of one named candidate."""
    i = c.index
    r, m = ranks[i], msgs[i]
    cost = int(round(c.cost))
    cause = CAUSE[c.figure]
    absorbed = cost < T.ABSORBED_SHARE * c.excess
    lead = (
        f"{m.label} {WHAT[c.figure]} {t(c.value)} per step against {who}' median {t(c.peer_value)} ({t(c.excess)} more)"
    )
    share = f"{cost / median_step:.1%} of the median step {t(median_step)}"
    how = (
        f"at {who}' speed the replayed step would be that much shorter"
        if c.method.startswith("replay")
        else "from the step times: the other ranks' idle time it could give back"
    )
    if absorbed:
        text = f"{lead}; the pipeline hides most of it; it costs the job {t(cost)} per step ({share}; {how})."
    else:
        text = f"{lead}; it costs the job {t(cost)} per step ({share}; {how})."
    found.append(
        _finding(
            out,
            "absorbed_stall" if absorbed else "straggler",
            "anomaly",
            text,
            cause=cause,
            ranks=[r.rank],
            stage=topo.coord_pp[i] if topo.pipelines else -1,
            cost=cost,
            excess=c.excess,
            absorbed=absorbed,
            triggers=[
                dict(
                    metric=f"{c.figure} over the role peers' median per step",
                    value=c.excess / median_step,
                    threshold=0.0,
                    unit="fraction of the median step",
                    rank=r.rank,
                ),
                dict(
                    metric="cost to the job per step (replayed at its peers' speed)",
                    value=cost / median_step,
                    threshold=T.ABSORBED_SHARE * c.excess / median_step,
                    unit="fraction of the median step (absorbed below)",
                    rank=r.rank,
                ),
            ],
        )
    )
    s = v.stragglers.add(
        rank=r.rank,
        worker=r.worker,
        label=m.label,
        cause=cause,
        job_cost_ns=cost,
        absorbed=absorbed,
        net_caused_wait_ns=cost,
        caused_wait_ns=m.caused_wait_ns,
        own_wait_ns=m.wait_ns,
        last_arrivals=m.last_arrivals,
        matched=m.matched,
        compute_ns=figs[i]["compute"],
        peer_compute_ns=peer_vals[i]["compute"],
    )
    s.compute_excess = (s.compute_ns / s.peer_compute_ns - 1) if s.peer_compute_ns else 0.0
    s.longer_compute = cause == "device_compute"
    if s.longer_compute:
        s.reason = (
            f"{text} Its compute takes {t(s.compute_ns)} per step, {s.compute_excess:.0%} more than its "
            f"{who}' median {t(s.peer_compute_ns)}: longer compute; check {check[cause]}."
        )
    else:
        s.reason = (
            f"{text} Its compute ({t(s.compute_ns)} per step) is like {who}' "
            f"({t(s.peer_compute_ns)}): it starts its work late for host-side reasons (CPU, data loading, "
            "kernel launches)."
        )


def _structure(g, ranks, topo, figs, median_step) -> ppb.Finding:
    """One finding for a group of ranks that share an excess over their role peers."""
    stages = sorted({topo.coord_pp[i] for i in g.members if topo.coord_pp and topo.coord_pp[i] >= 0})
    where = f" of stage {stages[0]}" if len(stages) == 1 else ""
    share = g.excess / g.peer_value if g.peer_value else 0.0
    text = (
        f"{len(g.members)} ranks{where}: {FIGURE_NAME[g.figure]} {t(g.excess)} per step "
        f"({share:+.0%}) more than their role peers, all alike: a difference of their program or "
        f"their place in the job, not a straggler; one of them at its peers' speed would save "
        f"{t(g.cost)} per step."
    )
    return _finding(
        None,
        "shared_excess",
        "structure",
        text,
        cause=CAUSE[g.figure],
        ranks=[ranks[i].rank for i in g.members][:64],
        stage=stages[0] if len(stages) == 1 else -1,
        cost=int(round(g.cost)),
        excess=g.excess,
        triggers=[
            dict(
                metric="ranks sharing the excess",
                value=len(g.members),
                threshold=STRUCTURE_MIN_RANKS,
                unit="ranks",
                rank=-1,
            )
        ],
    )


def _balanced_saving(graph, costs):
    """The What-if "Stages balanced" saving per step from the replay (None without one)."""
    if graph is None:
        return None
    from .whatif import balanced_stages

    x = balanced_stages(graph, costs.base_step if costs.method == "replay" else None)
    return x.saving_ns if x.applicable else None


def fill(
    out: ppb.RunParallel,
    ranks: Sequence[RankData],
    topo: Topology,
    flat: Flat,
    w,
    g_axis: np.ndarray,
    figs: List[Dict[str, int]],
    peer_vals: List[Dict[str, int]],
    msgs: List[ppb.RankParallel],
    median_step: float,
    prep=None,
) -> None:
    v = out.straggler
    v.min_wait_fraction = T.ANOMALY_MIN_EXCESS_FRACTION
    v.min_share_of_top = T.STRAGGLER_SHARE_OF_TOP
    v.compute_excess_threshold = T.COMPUTE_EXCESS_THRESHOLD
    v.rule = (
        "Each rank is compared with its role peers (the ranks of the same stage and MP index); a rank whose "
        "compute, data loading, launches, copies or wait for the first work exceed their median beyond the "
        "noise is replayed at their speed: its cost is how much shorter the job's step gets, and the "
        "costliest are named first."
    )
    inst = sum(r.kind.size for r in ranks)
    cov = [m.coverage for m in msgs]
    v.coverage = out.matching.matched_instances / inst if inst else 1.0
    v.min_rank_coverage = min(cov) if cov else 1.0
    found: List[ppb.Finding] = []
    if v.min_rank_coverage < T.MIN_COVERAGE and len(ranks) > 1:
        v.uncertain = True
        low = [m for m in msgs if m.coverage < T.MIN_COVERAGE]
        low.sort(key=lambda m: m.coverage)
        found.append(
            _finding(
                out,
                "uncertain",
                "evidence",
                f"Only {low[0].coverage:.0%} of {low[0].label}'s collectives were matched (threshold "
                f"{T.MIN_COVERAGE:.0%}; {len(low)} rank(s) below it): waits and the verdict may miss what happened there.",
                ranks=[m.rank for m in low[:64]],
                triggers=[
                    dict(
                        metric="matched coverage of the least covered rank",
                        value=low[0].coverage,
                        threshold=T.MIN_COVERAGE,
                        unit="fraction",
                        rank=low[0].rank,
                    )
                ],
            )
        )

    sequences.rank_flops(out, ranks, msgs)
    if len(ranks) < 2 or not median_step:
        sequences.fill(out, ranks, topo, figs, median_step)  # its why-not: one replica, or no steps
        v.summary = "A straggler needs at least two ranks with steps."
        out.findings.extend(found)
        return

    peered = has_peers(ranks, topo)
    # Without any collective in the traces (Paddle on CPU/gloo records none) nothing tells the ranks'
    # roles: each is compared with all the others, beyond the spread of the whole run, and the verdict
    # says it is uncertain.
    blind = not flat.n and len(ranks) > 1
    who = "the other ranks" if blind else "its role peers"
    if blind:
        v.uncertain = True
        found.append(
            _finding(
                out,
                "no_collectives",
                "evidence",
                "The traces record no collective and no send/recv (Paddle on CPU with gloo records none): the ranks' "
                "roles are unknown, so each rank is compared with all the others beyond the spread of the whole run, "
                "and costs come from the step times (how much longer the other ranks idle).",
                triggers=[dict(metric="matched collective instances", value=0, threshold=1, unit="instances", rank=-1)],
            )
        )
    box = {}

    def graph():
        """The replay graph, made once and only when something needs a replay."""
        if "g" not in box:
            box["g"] = None
            if prep is not None and flat.n and any(len(r.digest.parallel.program.kind) for r in ranks):
                from .replay import Graph

                box["g"] = Graph(prep)
        return box["g"]

    costs = rank_costs(ranks, topo, flat, figs, peer_vals, median_step, msgs, graph=graph)
    if costs.caveat:
        p2p_left, other_left, total = graph().unmatched()
        share = (p2p_left + other_left) / max(total, 1)
        if share > T.REPLAY_UNMATCHED_MAX_SHARE or graph().cut_ranks():
            v.uncertain = True
        found.append(
            _finding(
                out,
                "replay_unmatched",
                "evidence",
                CAVEAT + costs.caveat,
                triggers=[
                    dict(
                        metric="share of the collective instances the replay could not join",
                        value=share,
                        threshold=T.REPLAY_UNMATCHED_MAX_SHARE,
                        unit="fraction",
                        rank=-1,
                    )
                ],
            )
        )
    seq = sequences.fill(
        out, ranks, topo, figs, median_step, graph, costs.base_step if costs.method == "replay" else None
    )
    if seq is not None:
        found.append(seq)
    for i, m in enumerate(msgs):
        ex = [figs[i][f] - peer_vals[i][f] for f in FIGURES] if peered[i] else [0]
        m.deviation = max(0.0, max(ex) / median_step)
    # A candidate is named when it costs the job something, or when a large excess is absorbed (the
    # absorbed stall: worth knowing, not what sets the step).
    min_cost = max(T.STRAGGLER_MIN_COST_NS, T.STRAGGLER_MIN_COST_FRACTION * median_step)
    named = named_candidates(costs, median_step)
    cpu = all(r.digest.parallel.timeline == pb.TIMELINE_HOST for r in ranks)
    check = dict(CHECK, device_compute="its CPU work" if cpu else "its GPU")
    for c in named:
        _name(out, v, found, ranks, topo, msgs, figs, peer_vals, c, median_step, check, who)
    for g in costs.groups:
        found.append(_structure(g, ranks, topo, figs, median_step))
    v.found = any(c.cost >= min_cost for c in named) and not v.uncertain
    parts = []
    if named:

        def one(c):
            why = "longer compute" if CAUSE[c.figure] == "device_compute" else "late arrival with normal compute"
            absorbed = c.cost < T.ABSORBED_SHARE * c.excess
            tail = "the pipeline hides most of it; it costs the job " if absorbed else "it costs the job "
            return (
                f"rank {ranks[c.index].rank} ({why}; check {check[CAUSE[c.figure]]}) {WHAT[c.figure]} "
                f"{t(c.excess)} per step more than {who}; {tail}{t(c.cost)} per step"
            )

        head = "Possible straggler (uncertain evidence): " if v.uncertain else "Straggler: "
        if not v.found and not v.uncertain:
            head = "No straggler sets the step; absorbed: "
        parts.append(
            head
            + "; ".join(one(c) for c in named[:8])
            + (f"; and {len(named) - 8} more" if len(named) > 8 else "")
            + "."
        )
    else:
        parts.append(f"No straggler: no rank at its role peers' speed would shorten the step by {t(min_cost)} or more.")
    if costs.groups:
        parts.append(
            "Structure, not stragglers: "
            + "; ".join(
                f"{len(g.members)} ranks with {FIGURE_NAME[g.figure]} {t(g.excess)} per step over their role peers"
                for g in costs.groups[:4]
            )
            + "."
        )
    if not any(peered) and len(ranks) > 1:
        parts.append("No rank has a known role peer (the topology gives no roles): nobody is compared.")
    if blind:
        parts.append("Uncertain: the traces record no collective, so the ranks' roles are unknown.")
    elif v.uncertain and v.min_rank_coverage < T.MIN_COVERAGE:
        parts.append(
            f"Uncertain: {v.coverage:.0%} of the instances matched, the least covered rank "
            f"{v.min_rank_coverage:.0%} (threshold {T.MIN_COVERAGE:.0%})."
        )
    elif v.uncertain and costs.caveat:
        parts.append("Uncertain: " + costs.caveat)
    v.summary = " ".join(parts)
    for note in costs.notes:
        if note not in out.notes:
            out.notes.append(note)

    # ---- structure: stage imbalance and structural waits
    if topo.pipelines and out.pipeline.stages:
        stages = list(out.pipeline.stages)
        by_rank = {m.rank: m for m in msgs}
        # medians: an anomalous rank does not move its stage's figure
        comp = [int(statistics.median(by_rank[x].compute_ns for x in s.ranks)) for s in stages]
        hi = max(range(len(stages)), key=lambda i: comp[i])
        lo = min(range(len(stages)), key=lambda i: comp[i])
        if comp[lo] > 0 and comp[hi] / comp[lo] - 1 >= T.STAGE_IMBALANCE_FRACTION:
            imb = comp[hi] / comp[lo] - 1
            saving = _balanced_saving(graph(), costs)
            if saving is None:  # no replay: the slowest stage's compute beyond the mean
                cost = comp[hi] - sum(comp) / len(comp)
                how = f"Balanced, the slowest stage would save about {t(cost)} per step."
            elif saving > 0:
                cost = saving
                how = (
                    f"Balanced (every stage computing the stages' mean), the replayed step would be {t(cost)} "
                    "shorter (the What-if 'Stages balanced')."
                )
            else:
                cost = 0
                how = (
                    "Yet the replay with every stage computing the stages' mean finds no shorter step (the What-if "
                    "'Stages balanced'): the slowest stage does not set the step."
                )
            found.append(
                _finding(
                    out,
                    "stage_imbalance",
                    "structure",
                    f"Stage {stages[hi].stage} computes {imb:.0%} more than stage {stages[lo].stage} ({t(comp[hi])} against "
                    f"{t(comp[lo])} per step): move a layer from stage {stages[hi].stage} to stage {stages[lo].stage}. "
                    + how
                    + sequences.stage_flops_text(stages, hi, lo),
                    cause="pipeline",
                    ranks=list(stages[hi].ranks)[:64],
                    stage=stages[hi].stage,
                    cost=cost,
                    excess=comp[hi] - comp[lo],
                    triggers=[
                        dict(
                            metric="compute of the slowest stage over the fastest, minus 1",
                            value=imb,
                            threshold=T.STAGE_IMBALANCE_FRACTION,
                            unit="fraction",
                            rank=-1,
                        )
                    ],
                )
            )
        if flat.n:
            ppg = g_axis == "pp_group"
            if ppg.any():
                gsel = ppg[flat.m_group]
                per = np.zeros(len(ranks))
                np.add.at(per, flat.m_rank[gsel], w.m_wait[gsel])
                for s in stages:
                    idx = [x for c in topo.pipelines if len(c) > s.stage for x in [c[s.stage]]]
                    vals = [per[x] / max(1, len(ranks[x].steps)) for x in idx]
                    if not vals:
                        continue
                    med = statistics.median(vals)
                    if med >= T.STRUCTURAL_WAIT_FRACTION * median_step:
                        found.append(
                            _finding(
                                out,
                                "structural_wait",
                                "structure",
                                f"Stage {s.stage}'s ranks wait {t(med)} per step (median) at the pipeline-group "
                                "collectives (gradient-clip all-reduce, loss broadcast) for the other stages: the "
                                "pipeline's schedule, the same on every replica, not a straggler.",
                                cause="pipeline",
                                ranks=list(s.ranks)[:64],
                                stage=s.stage,
                                cost=0,
                                excess=int(med),
                                triggers=[
                                    dict(
                                        metric="wait at pipeline-group collectives per step",
                                        value=med / median_step,
                                        threshold=T.STRUCTURAL_WAIT_FRACTION,
                                        unit="fraction of the median step",
                                        rank=-1,
                                    )
                                ],
                            )
                        )
    order = {"anomaly": 0, "structure": 1, "evidence": 2}
    found.sort(key=lambda f: (order.get(f.category, 3), -f.cost_ns))
    out.findings.extend(found)
