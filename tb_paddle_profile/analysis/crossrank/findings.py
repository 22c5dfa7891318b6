"""The verdict (StragglerVerdict) and the findings (RunParallel.findings), most costly first.

Rules (thresholds in thresholds.py, explained in docs/distributed.md):

| rule | category | fires when |
|---|---|---|
| straggler | anomaly | a rank is an anomaly (verdict.py: unlike its role peers) and costs the job at least ABSORBED_SHARE of its excess |
| absorbed_stall | anomaly | an anomaly that costs less than ABSORBED_SHARE of its excess (the pipeline hides most of it) |
| stage_imbalance | structure | the stages' mean compute differs by ≥ STAGE_IMBALANCE_FRACTION |
| structural_wait | structure | a stage's ranks wait ≥ STRUCTURAL_WAIT_FRACTION of the step at pipeline-group collectives |
| uncertain | evidence | a rank's matched coverage is below MIN_COVERAGE |
"""

from __future__ import annotations

import statistics
from typing import Dict, List, Sequence

import numpy as np

from ...v1 import plugin_pb2 as ppb
from . import thresholds as T
from .advice import t
from .match import Flat
from .model import RankData, Topology
from .verdict import WHAT, anomalies, job_costs


# Where to look, per cause, in the verdict's sentence.
CHECK = {"device_compute": "its GPU", "host_dataloader": "its data loader", "host": "its host",
         "launch_overhead": "its kernel launches", "memcpy": "its memory copies"}


def _finding(out, rule, category, text, cause="", ranks=(), stage=-1, cost=0, excess=0, absorbed=False,
             triggers=()):
    f = ppb.Finding(rule=rule, category=category, cause=cause, ranks=list(ranks), stage=stage, cost_ns=int(cost),
                    excess_ns=int(excess), absorbed=absorbed, text=text)
    for tr in triggers:
        f.triggers.add(**tr)
    return f


def fill(out: ppb.RunParallel, ranks: Sequence[RankData], topo: Topology, flat: Flat, w, g_axis: np.ndarray,
         figs: List[Dict[str, int]], peer_vals: List[Dict[str, int]], msgs: List[ppb.RankParallel],
         median_step: float) -> None:
    v = out.straggler
    v.min_wait_fraction = T.ANOMALY_MIN_EXCESS_FRACTION
    v.min_share_of_top = T.STRAGGLER_SHARE_OF_TOP
    v.compute_excess_threshold = T.COMPUTE_EXCESS_THRESHOLD
    v.rule = (f"Each rank is compared with its role peers (the ranks of the same stage and MP index): a rank is "
              f"named when its compute, data loading, launches, copies or wait for the first work exceed their "
              f"median by at least {v.min_wait_fraction:.0%} of the median step ('longer compute': also at least "
              f"{v.compute_excess_threshold:.0%} more compute); its cost is what the other replicas wait for it "
              f"per step.")
    inst = sum(r.kind.size for r in ranks)
    cov = [m.coverage for m in msgs]
    v.coverage = out.matching.matched_instances / inst if inst else 1.0
    v.min_rank_coverage = min(cov) if cov else 1.0
    found: List[ppb.Finding] = []
    if v.min_rank_coverage < T.MIN_COVERAGE and len(ranks) > 1:
        v.uncertain = True
        low = [m for m in msgs if m.coverage < T.MIN_COVERAGE]
        low.sort(key=lambda m: m.coverage)
        found.append(_finding(
            out, "uncertain", "evidence",
            f"Only {low[0].coverage:.0%} of {low[0].label}'s collectives were matched (threshold "
            f"{T.MIN_COVERAGE:.0%}; {len(low)} rank(s) below it): waits and the verdict may miss what happened there.",
            ranks=[m.rank for m in low[:64]],
            triggers=[dict(metric="matched coverage of the least covered rank", value=low[0].coverage,
                           threshold=T.MIN_COVERAGE, unit="fraction", rank=low[0].rank)]))

    if len(ranks) < 2 or not median_step:
        v.summary = "A straggler needs at least two ranks with steps."
        out.findings.extend(found)
        return

    costs = job_costs(ranks, flat, w.m_wait, g_axis)
    anoms, excess, peer_vals = anomalies(ranks, topo, figs, peer_vals, costs, median_step)
    for i, m in enumerate(msgs):
        m.deviation = max(0.0, max(excess[i].values(), default=0) / median_step)

    named = []
    for a in anoms:
        r, m = ranks[a.index], msgs[a.index]
        cost = a.cost
        lead = (f"{m.label} {WHAT[a.figure]} {t(a.value)} per step against its role peers' median {t(a.peer_value)} "
                f"({t(a.excess)} more)")
        share = f"{cost / median_step:.1%} of the median step {t(median_step)}"
        if a.absorbed:
            text = f"{lead}; the pipeline hides most of it; it costs the job {t(cost)} per step ({share})."
        else:
            text = f"{lead}; the other replicas wait for it, which costs the job {t(cost)} per step ({share})."
        found.append(_finding(out, "absorbed_stall" if a.absorbed else "straggler", "anomaly", text, cause=a.cause,
                              ranks=[r.rank], stage=topo.coord_pp[a.index] if topo.pipelines else -1, cost=cost,
                              excess=a.excess, absorbed=a.absorbed,
                              triggers=[dict(metric=f"{a.figure} over the role peers' median per step",
                                             value=a.excess / median_step, threshold=T.ANOMALY_MIN_EXCESS_FRACTION,
                                             unit="fraction of the median step", rank=r.rank),
                                        dict(metric="cost to the job per step", value=cost / median_step,
                                             threshold=T.ABSORBED_SHARE * a.excess / median_step,
                                             unit="fraction of the median step (absorbed below)", rank=r.rank)]))
        named.append(a)
        s = v.stragglers.add(rank=r.rank, worker=r.worker, label=m.label, cause=a.cause, job_cost_ns=cost,
                             absorbed=a.absorbed, net_caused_wait_ns=cost, caused_wait_ns=m.caused_wait_ns,
                             own_wait_ns=m.wait_ns, last_arrivals=m.last_arrivals, matched=m.matched,
                             compute_ns=figs[a.index]["compute"], peer_compute_ns=peer_vals[a.index]["compute"])
        s.compute_excess = (s.compute_ns / s.peer_compute_ns - 1) if s.peer_compute_ns else 0.0
        s.longer_compute = a.cause == "device_compute"
        if s.longer_compute:
            s.reason = (f"{text} Its compute takes {t(s.compute_ns)} per step, "
                        f"{s.compute_excess:.0%} more than its role peers' median {t(s.peer_compute_ns)}: longer "
                        "compute.")
        else:
            s.reason = (f"{text} Its compute ({t(s.compute_ns)} per step) is within "
                        f"{T.COMPUTE_EXCESS_THRESHOLD:.0%} of its role peers' median ({t(s.peer_compute_ns)}): it "
                        "starts its collectives late for host-side reasons (CPU, data loading, kernel launches).")
    v.found = bool(named)
    parts = []
    if named:
        def one(a):
            why = "longer compute" if a.cause == "device_compute" else "late arrival with normal compute"
            tail = ("the pipeline hides most of it; it costs the job " if a.absorbed else "it costs the job ")
            return (f"rank {ranks[a.index].rank} ({why}; check {CHECK[a.cause]}) {WHAT[a.figure]} {t(a.excess)} per step more "
                    f"than its role peers; {tail}{t(a.cost)} per step")
        parts.append("Straggler: " + "; ".join(one(a) for a in named[:8]) + (f"; and {len(named) - 8} more"
                                                                             if len(named) > 8 else "") + ".")
    else:
        parts.append("No straggler: no rank computes, loads data, launches or copies more than its role peers by "
                     f"{T.ANOMALY_MIN_EXCESS_FRACTION:.0%} of the median step "
                     f"({t(max(T.ANOMALY_MIN_EXCESS_NS, T.ANOMALY_MIN_EXCESS_FRACTION * median_step))}) or more.")
    if v.uncertain:
        parts.append(f"Uncertain: {v.coverage:.0%} of the instances matched, the least covered rank "
                     f"{v.min_rank_coverage:.0%} (threshold {T.MIN_COVERAGE:.0%}).")
    v.summary = " ".join(parts)

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
            cost = comp[hi] - sum(comp) / len(comp)
            found.append(_finding(
                out, "stage_imbalance", "structure",
                f"Stage {stages[hi].stage} computes {imb:.0%} more than stage {stages[lo].stage} ({t(comp[hi])} against "
                f"{t(comp[lo])} per step): move a layer from stage {stages[hi].stage} to stage {stages[lo].stage}. "
                f"Balanced, the slowest stage would save about {t(cost)} per step.",
                cause="pipeline", ranks=list(stages[hi].ranks)[:64], stage=stages[hi].stage, cost=cost,
                excess=comp[hi] - comp[lo],
                triggers=[dict(metric="compute of the slowest stage over the fastest, minus 1", value=imb,
                               threshold=T.STAGE_IMBALANCE_FRACTION, unit="fraction", rank=-1)]))
        if flat.n:
            ppg = (g_axis == "pp_group")
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
                        found.append(_finding(
                            out, "structural_wait", "structure",
                            f"Stage {s.stage}'s ranks wait {t(med)} per step (median) at the pipeline-group "
                            "collectives (gradient-clip all-reduce, loss broadcast) for the other stages: the "
                            "pipeline's schedule, the same on every replica, not a straggler.",
                            cause="pipeline", ranks=list(s.ranks)[:64], stage=s.stage, cost=0, excess=int(med),
                            triggers=[dict(metric="wait at pipeline-group collectives per step", value=med / median_step,
                                           threshold=T.STRUCTURAL_WAIT_FRACTION, unit="fraction of the median step",
                                           rank=-1)]))
    order = {"anomaly": 0, "structure": 1, "evidence": 2}
    found.sort(key=lambda f: (order.get(f.category, 3), -f.cost_ns))
    out.findings.extend(found)
