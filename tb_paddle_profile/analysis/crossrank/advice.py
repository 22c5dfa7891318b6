"""Rule-based advice, as data: each rule is (id, title, metric, threshold, what it measures per
rank, text template). A rule fires on the rank where its value is largest when that value reaches
the threshold; values are per step, as fractions of that rank's step time. The straggler rule
comes first (from the verdict); the pipeline rule works on stages. Sentences carry times as
"{ns:N}" tokens (see TIME_TOKEN)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from ...v1 import plugin_pb2 as ppb
from ...v1 import summary_pb2 as pb
from . import thresholds as T

TIME_TOKEN = "{ns:%d}"
ALL_REDUCE = pb.COLLECTIVE_KIND_ALL_REDUCE
OTHER_COLLECTIVES = {pb.COLLECTIVE_KIND_ALL_GATHER, pb.COLLECTIVE_KIND_REDUCE_SCATTER, pb.COLLECTIVE_KIND_BROADCAST,
                     pb.COLLECTIVE_KIND_ALL_TO_ALL}


def t(ns: float) -> str:
    return TIME_TOKEN % int(round(ns))


def kind_exposed(m: ppb.RankParallel, kinds) -> int:
    return sum(k.exposed_ns for k in m.kinds if k.kind in kinds) // max(1, m.steps)


def kind_wait(m: ppb.RankParallel, kinds) -> int:
    return sum(k.wait_ns for k in m.kinds if k.kind in kinds) // max(1, m.steps)


@dataclass(frozen=True)
class Rule:
    rule: str
    title: str
    metric: str
    threshold: float
    value: Callable[[ppb.RankParallel], float]      # per step, fraction of the step time
    text: Callable[[ppb.RankParallel, float], str]   # the sentence, given the rank and the value
    applies: Callable[[ppb.RankParallel], bool] = lambda m: True


def _ar_text(m, v):
    where = "runs with no computation beside it" if m.timeline == pb.TIMELINE_DEVICE else "blocks the host (CPU trace)"
    ex, w = kind_exposed(m, {ALL_REDUCE}), kind_wait(m, {ALL_REDUCE})
    return (f"On rank {m.rank} all-reduce {where} for {t(ex)} per step, {t(w)} of which is waiting for late ranks; "
            f"the remaining {t(ex - w)} is {v:.0%} of the step (threshold {T.EXPOSED_ALL_REDUCE_FRACTION:.0%}). Fewer, "
            "larger and overlapped all-reduces help: accumulate gradients over more micro-batches per optimizer step "
            "(gradient accumulation), fuse gradients into larger buckets (tensor fusion, e.g. DataParallel's "
            "comm_buffer_size), and let the data-parallel all-reduce run during the backward pass (communication "
            "overlap)." + (" Model-parallel all-reduces (c_allreduce_sum) sit on the critical path: keep tensor "
                           "parallelism within a node." if m.timeline == pb.TIMELINE_DEVICE else ""))


RULES: List[Rule] = [
    Rule("exposed_all_reduce", "All-reduce is not hidden behind computation",
         "exposed all-reduce per step, less waiting for late ranks", T.EXPOSED_ALL_REDUCE_FRACTION,
         lambda m: max(0, kind_exposed(m, {ALL_REDUCE}) - kind_wait(m, {ALL_REDUCE})) / m.step_time_ns, _ar_text),
    Rule("exposed_collectives", "All-gather / reduce-scatter / broadcast / all-to-all are exposed",
         "exposed all-gather/reduce-scatter/broadcast/all-to-all per step", T.EXPOSED_OTHER_COLLECTIVES_FRACTION,
         lambda m: kind_exposed(m, OTHER_COLLECTIVES) / m.step_time_ns,
         lambda m, v: (f"On rank {m.rank} these collectives run with no computation beside them for "
                       f"{t(kind_exposed(m, OTHER_COLLECTIVES))} per step ({v:.0%}; threshold "
                       f"{T.EXPOSED_OTHER_COLLECTIVES_FRACTION:.0%}). With sharding, enable its communication overlap "
                       "and tensor fusion; for all-to-all (MoE), fewer and larger exchanges.")),
    Rule("launch_bound", "CUDA runtime calls dominate the host's time (launch bound)", "CUDA runtime time per step",
         T.LAUNCH_BOUND_RUNTIME_FRACTION, lambda m: max(0, m.runtime_ns - m.sync_ns) / m.step_time_ns,
         lambda m, v: (f"On rank {m.rank} CUDA runtime calls other than synchronisations take "
                       f"{t(m.runtime_ns - m.sync_ns)} of the {t(m.step_time_ns)} step ({v:.0%}; threshold "
                       f"{T.LAUNCH_BOUND_RUNTIME_FRACTION:.0%}) for {m.launches} launches, while kernels run "
                       f"{t(m.kernel_ns)}. Fuse operators (fused attention, fused layer norm / bias / activation), use "
                       "larger micro-batches, or capture the step in a CUDA Graph.")),
    Rule("memcpy", "Memory copies take a large share of the GPU's step", "memcpy/memset per step", T.MEMCPY_FRACTION,
         lambda m: m.memory_ns / m.step_time_ns,
         lambda m, v: (f"On rank {m.rank} memcpy/memset run {t(m.memory_ns)} per step ({v:.0%}; threshold "
                       f"{T.MEMCPY_FRACTION:.0%}), {t(m.exposed_memory_ns)} of it with no kernel beside it. Load "
                       "batches into pinned memory (DataLoader with pinned/shared memory) and copy asynchronously; "
                       "keep tensors on the GPU between steps; avoid host synchronisations that serialise copies.")),
    Rule("gpu_idle", "The GPU idles: the host does not keep it fed", "GPU idle per step", T.GPU_IDLE_FRACTION,
         lambda m: m.idle_ns / m.step_time_ns,
         lambda m, v: (f"On rank {m.rank} no kernel, memcpy or memset runs for {t(m.idle_ns)} per step ({v:.0%}; "
                       f"threshold {T.GPU_IDLE_FRACTION:.0%}). Look at what the host does then: synchronising CUDA "
                       f"calls take {t(m.sync_ns)} per step (fewer host syncs: no loss.item(), .numpy() or tensor "
                       "printing every step), data loading (more DataLoader workers, pinned memory), Python work "
                       "between steps."),
         applies=lambda m: m.timeline == pb.TIMELINE_DEVICE),
]


def _add(out, rule, title, text, metric, rank, value, threshold, unit="fraction of the step time", extra=()):
    a = out.advice.add(rule=rule, title=title, text=text)
    a.triggers.add(metric=metric, value=value, threshold=threshold, unit=unit, rank=rank)
    for x in extra:
        a.triggers.add(**x)
    if rank >= 0:
        a.ranks.append(rank)
    return a


def _excess(out: ppb.RunParallel, rank: int) -> int:
    for f in out.findings:
        if f.category == "anomaly" and list(f.ranks) == [rank]:
            return f.excess_ns
    return 0


def advise(out: ppb.RunParallel, msgs: Dict[int, ppb.RankParallel], median_step: float) -> None:
    ranks = [m for m in out.ranks if m.step_time_ns > 0]
    for s in out.straggler.stragglers:
        where = ("its GPU: clocks and throttling (nvidia-smi -q -d CLOCK,PERFORMANCE), other processes on the "
                 "card, a slower or differently configured device" if s.longer_compute else
                 "its host: CPU contention or binding, data loading, Python work between steps, kernel-launch "
                 "overhead")
        _add(out, "straggler", f"Rank {s.rank} slows the job",
             f"{s.reason} Check {where}. The other ranks' waits at collectives disappear once it keeps pace.",
             "excess over the role peers' median per step", s.rank, _excess(out, s.rank) / median_step
             if median_step else 0.0, T.ANOMALY_MIN_EXCESS_FRACTION,
             extra=[dict(metric="cost to the job per step", value=s.job_cost_ns / median_step if median_step else 0.0,
                         threshold=0.0, unit="fraction of the median step", rank=s.rank)])
    for rule in RULES:
        best: Optional[ppb.RankParallel] = None
        val = -1.0
        for m in ranks:
            if rule.applies(m):
                v = rule.value(m)
                if v > val:
                    best, val = m, v
        if best is not None and val >= rule.threshold:
            _add(out, rule.rule, rule.title, rule.text(best, val), rule.metric, best.rank, val, rule.threshold)
    pv = out.pipeline
    if pv.present and pv.stages:
        worst = max(pv.stages, key=lambda s: s.bubble_ratio)
        if worst.bubble_ratio >= T.PIPELINE_BUBBLE_FRACTION:
            comp = [s.compute_ns for s in pv.stages]
            imbalance = (max(comp) / min(comp) - 1) if min(comp) > 0 else 0.0
            text = (f"Stage {worst.stage} (ranks {', '.join(map(str, worst.ranks[:16]))}"
                    f"{', …' if len(worst.ranks) > 16 else ''}) waits for its neighbours {t(worst.bubble_ns)} per step "
                    f"({worst.bubble_ratio:.0%} of the step; threshold {T.PIPELINE_BUBBLE_FRACTION:.0%}). More "
                    "micro-batches per step (accumulate_steps) shrink the fill and drain; an interleaved schedule "
                    "(virtual pipeline stages) shrinks them further.")
            extra = []
            if imbalance >= T.STAGE_IMBALANCE_FRACTION:
                text += (f" The stages' compute differs by {imbalance:.0%} (threshold {T.STAGE_IMBALANCE_FRACTION:.0%}): "
                         "move layers from the slowest stage to the others.")
                extra.append(dict(metric="compute of the slowest stage over the fastest, minus 1", value=imbalance,
                                  threshold=T.STAGE_IMBALANCE_FRACTION, unit="fraction", rank=-1))
            a = _add(out, "pipeline_bubble", "Pipeline bubbles", text, "pipeline bubble per step", -1,
                     worst.bubble_ratio, T.PIPELINE_BUBBLE_FRACTION, extra=extra)
            a.ranks.extend(worst.ranks)
    elif pv.present and ranks:
        m = max(ranks, key=lambda m: m.bubble_ratio)
        if m.bubble_ratio >= T.PIPELINE_BUBBLE_FRACTION:
            _add(out, "pipeline_bubble", "Pipeline bubbles",
                 f"Rank {m.rank} waits for pipeline neighbours {t(m.bubble_ns)} per step ({m.bubble_ratio:.0%}; "
                 f"threshold {T.PIPELINE_BUBBLE_FRACTION:.0%}). More micro-batches per step (accumulate_steps) or an "
                 "interleaved schedule shrink the fill and drain.",
                 "pipeline bubble per step", m.rank, m.bubble_ratio, T.PIPELINE_BUBBLE_FRACTION)
