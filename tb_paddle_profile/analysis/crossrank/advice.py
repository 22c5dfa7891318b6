"""Rule-based advice, as data: RULES is a table, one row per rule, that advise() walks.

A row holds the rule's id and title, what it looks at (`scope`), the metric it cites, its threshold
(a constant of thresholds.py), the value it compares (per step, a fraction of the step time), the
numbers its sentence needs (`fields`) and the sentence itself as a str.format template. The code
below only walks the table: per scope it finds the subject (a named straggler; the rank, or the
stage, where the value is largest), and the rule fires there when the value reaches the threshold.
A row may carry a second condition (`also`: its own metric, value, threshold and sentence), added
when it holds too. Templates name their fields; a field that is a time (`Ns`) prints as a
"{ns:N}" token (TIME_TOKEN) that the CLI and the tab print in their unit, a `{value}` or
`{threshold}` with `:.0%` as a percentage. docs/distributed.md lists the rules.

Scopes: "straggler" (each rank the verdict names, in its order), "rank" (the rank with the largest
value among those the row `applies` to), "stage" (the pipeline stage with the largest value, when
the run has stages), "pipeline_rank" (as "rank", when the run has a pipeline but no stages)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, cast

from ...v1 import plugin_pb2 as ppb
from ...v1 import summary_pb2 as pb
from . import thresholds as T

TIME_TOKEN = "{ns:%d}"
ALL_REDUCE = pb.COLLECTIVE_KIND_ALL_REDUCE
OTHER_COLLECTIVES = {
    pb.COLLECTIVE_KIND_ALL_GATHER,
    pb.COLLECTIVE_KIND_REDUCE_SCATTER,
    pb.COLLECTIVE_KIND_BROADCAST,
    pb.COLLECTIVE_KIND_ALL_TO_ALL,
}
STEP = "fraction of the step time"


def t(ns: float) -> str:
    return TIME_TOKEN % int(round(ns))


class Ns(float):
    """A time in ns for a template: formats as its TIME_TOKEN."""

    def __format__(self, spec: str) -> str:
        return t(self)


def kind_exposed(m: ppb.RankParallel, kinds) -> int:
    return sum(k.exposed_ns for k in m.kinds if k.kind in kinds) // max(1, m.steps)


def kind_wait(m: ppb.RankParallel, kinds) -> int:
    return sum(k.wait_ns for k in m.kinds if k.kind in kinds) // max(1, m.steps)


@dataclass(frozen=True)
class Also:
    """A second condition of a rule: when its value reaches its threshold, its sentence is added
    to the rule's and it is cited as one more trigger."""

    metric: str
    threshold: float
    value: Callable
    template: str
    unit: str = "fraction"


@dataclass(frozen=True)
class Rule:
    rule: str
    title: str  # a template too (a straggler's names its rank)
    scope: str  # "straggler", "rank", "stage" or "pipeline_rank" (see the module's doc)
    metric: str
    threshold: float  # a constant of thresholds.py
    value: Optional[Callable]  # the subject → the value compared with the threshold (None: not compared)
    template: str  # the sentence; fields: rank, value, threshold and those of `fields`
    fields: Callable = lambda s: {}
    applies: Callable = lambda s: True
    unit: str = STEP
    also: Optional[Also] = None
    cost: Optional[Callable] = None  # straggler: its cost to the job, a second trigger (no threshold)


def _where_straggler(s: ppb.Straggler, device: bool = True) -> str:
    if s.longer_compute and device:
        return (
            "its GPU: clocks and throttling (nvidia-smi -q -d CLOCK,PERFORMANCE), other processes on the "
            "card, a slower or differently configured device"
        )
    if s.longer_compute:
        return "its CPU work: other processes on its cores, thread binding (OMP_NUM_THREADS), extra work on that rank"
    return "its host: CPU contention or binding, data loading, Python work between steps, kernel-launch overhead"


def _ar_fields(m: ppb.RankParallel) -> dict:
    ex, w = kind_exposed(m, {ALL_REDUCE}), kind_wait(m, {ALL_REDUCE})
    device = m.timeline == pb.TIMELINE_DEVICE
    return dict(
        where="runs with no computation beside it" if device else "blocks the host (CPU trace)",
        exposed=Ns(ex),
        wait=Ns(w),
        rest=Ns(ex - w),
        model_parallel=" Model-parallel all-reduces (c_allreduce_sum) sit on the critical path: keep tensor "
        "parallelism within a node."
        if device
        else "",
    )


def _ranks_text(ranks) -> str:
    return ", ".join(map(str, ranks[:16])) + (", …" if len(ranks) > 16 else "")


def _stage_imbalance(stage, stages) -> float:
    comp = [s.compute_ns for s in stages]
    return (max(comp) / min(comp) - 1) if min(comp) > 0 else 0.0


RULES: List[Rule] = [
    Rule(
        "straggler",
        "Rank {rank} slows the job",
        "straggler",
        "excess over the role peers' median per step",
        T.ANOMALY_MIN_EXCESS_FRACTION,
        value=None,  # the verdict named it: the excess is cited, not compared
        template="{reason} Check {where}. The other ranks' waits at collectives disappear once it keeps pace.",
        fields=lambda s: dict(reason=s.reason, where=_where_straggler(s)),
        cost=lambda s, median_step: s.job_cost_ns / median_step if median_step else 0.0,
    ),
    Rule(
        "exposed_all_reduce",
        "All-reduce is not hidden behind computation",
        "rank",
        "exposed all-reduce per step, less waiting for late ranks",
        T.EXPOSED_ALL_REDUCE_FRACTION,
        value=lambda m: max(0, kind_exposed(m, {ALL_REDUCE}) - kind_wait(m, {ALL_REDUCE})) / m.step_time_ns,
        template="On rank {rank} all-reduce {where} for {exposed} per step, {wait} of which is waiting for late "
        "ranks; the remaining {rest} is {value:.0%} of the step (threshold {threshold:.0%}). Fewer, larger "
        "and overlapped all-reduces help: accumulate gradients over more micro-batches per optimizer step "
        "(gradient accumulation), fuse gradients into larger buckets (tensor fusion, e.g. DataParallel's "
        "comm_buffer_size), and let the data-parallel all-reduce run during the backward pass "
        "(communication overlap).{model_parallel}",
        fields=_ar_fields,
    ),
    Rule(
        "exposed_collectives",
        "All-gather / reduce-scatter / broadcast / all-to-all are exposed",
        "rank",
        "exposed all-gather/reduce-scatter/broadcast/all-to-all per step",
        T.EXPOSED_OTHER_COLLECTIVES_FRACTION,
        value=lambda m: kind_exposed(m, OTHER_COLLECTIVES) / m.step_time_ns,
        template="On rank {rank} these collectives run with no computation beside them for {exposed} per step "
        "({value:.0%}; threshold {threshold:.0%}). With sharding, enable its communication overlap and "
        "tensor fusion; for all-to-all (MoE), fewer and larger exchanges.",
        fields=lambda m: dict(exposed=Ns(kind_exposed(m, OTHER_COLLECTIVES))),
    ),
    Rule(
        "launch_bound",
        "CUDA runtime calls dominate the host's time (launch bound)",
        "rank",
        "CUDA runtime time per step",
        T.LAUNCH_BOUND_RUNTIME_FRACTION,
        value=lambda m: max(0, m.runtime_ns - m.sync_ns) / m.step_time_ns,
        template="On rank {rank} CUDA runtime calls other than synchronisations take {runtime} of the {step} step "
        "({value:.0%}; threshold {threshold:.0%}) for {launches} launches, while kernels run {kernels}. "
        "Fuse operators (fused attention, fused layer norm / bias / activation), use larger micro-batches, "
        "or capture the step in a CUDA Graph.",
        fields=lambda m: dict(
            runtime=Ns(m.runtime_ns - m.sync_ns), step=Ns(m.step_time_ns), launches=m.launches, kernels=Ns(m.kernel_ns)
        ),
    ),
    Rule(
        "memcpy",
        "Memory copies take a large share of the GPU's step",
        "rank",
        "memcpy/memset per step",
        T.MEMCPY_FRACTION,
        value=lambda m: m.memory_ns / m.step_time_ns,
        template="On rank {rank} memcpy/memset run {memory} per step ({value:.0%}; threshold {threshold:.0%}), "
        "{exposed} of it with no kernel beside it. Load batches into pinned memory (DataLoader with "
        "pinned/shared memory) and copy asynchronously; keep tensors on the GPU between steps; avoid host "
        "synchronisations that serialise copies.",
        fields=lambda m: dict(memory=Ns(m.memory_ns), exposed=Ns(m.exposed_memory_ns)),
    ),
    Rule(
        "gpu_idle",
        "The GPU idles: the host does not keep it fed",
        "rank",
        "GPU idle per step",
        T.GPU_IDLE_FRACTION,
        value=lambda m: m.idle_ns / m.step_time_ns,
        template="On rank {rank} no kernel, memcpy or memset runs for {idle} per step ({value:.0%}; threshold "
        "{threshold:.0%}). Look at what the host does then: synchronising CUDA calls take {sync} per step "
        "(fewer host syncs: no loss.item(), .numpy() or tensor printing every step), data loading (more "
        "DataLoader workers, pinned memory), Python work between steps.",
        fields=lambda m: dict(idle=Ns(m.idle_ns), sync=Ns(m.sync_ns)),
        applies=lambda m: m.timeline == pb.TIMELINE_DEVICE,
    ),
    Rule(
        "pipeline_bubble",
        "Pipeline bubbles",
        "stage",
        "pipeline bubble per step",
        T.PIPELINE_BUBBLE_FRACTION,
        value=lambda s: s.bubble_ratio,
        template="Stage {stage} (ranks {ranks}) waits for its neighbours {bubble} per step ({value:.0%} of the step; "
        "threshold {threshold:.0%}). More micro-batches per step (accumulate_steps) shrink the fill and "
        "drain; an interleaved schedule (virtual pipeline stages) shrinks them further.",
        fields=lambda s: dict(stage=s.stage, ranks=_ranks_text(s.ranks), bubble=Ns(s.bubble_ns)),
        also=Also(
            "compute of the slowest stage over the fastest, minus 1",
            T.STAGE_IMBALANCE_FRACTION,
            value=_stage_imbalance,
            template=" The stages' compute differs by {value:.0%} (threshold {threshold:.0%}): move layers "
            "from the slowest stage to the others.",
        ),
    ),
    Rule(
        "pipeline_bubble",
        "Pipeline bubbles",
        "pipeline_rank",
        "pipeline bubble per step",
        T.PIPELINE_BUBBLE_FRACTION,
        value=lambda m: m.bubble_ratio,
        template="Rank {rank} waits for pipeline neighbours {bubble} per step ({value:.0%}; threshold "
        "{threshold:.0%}). More micro-batches per step (accumulate_steps) or an interleaved schedule "
        "shrink the fill and drain.",
        fields=lambda m: dict(bubble=Ns(m.bubble_ns)),
    ),
]


def _add(out, rule, title, text, metric, rank, value, threshold, unit=STEP, extra=()):
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


def _largest(rule: Rule, subjects):
    """The subject with the largest value (the first of equals), and that value; (None, -1)."""
    best, val = None, -1.0
    value = cast(Callable, rule.value)  # (every scope but "straggler", not asked here, has one)
    for s in subjects:
        if rule.applies(s):
            v = value(s)
            if v > val:
                best, val = s, v
    return best, val


def _subjects(rule: Rule, out: ppb.RunParallel, ranks, median_step: float):
    """(subject, rank or -1, value) of the places the rule fires."""
    pv = out.pipeline
    if rule.scope == "straggler":
        if out.straggler.uncertain:  # an uncertain verdict names nobody to act on
            return
        floor = max(T.STRAGGLER_MIN_COST_NS, T.STRAGGLER_MIN_COST_FRACTION * median_step)
        for s in out.straggler.stragglers:
            if s.job_cost_ns >= floor:  # an absorbed stall that costs nothing is no advice
                yield s, s.rank, (_excess(out, s.rank) / median_step if median_step else 0.0)
        return
    if rule.scope == "rank":
        pool = ranks
    elif rule.scope == "stage":
        pool = pv.stages if pv.present else []
    elif rule.scope == "pipeline_rank":
        pool = ranks if pv.present and not pv.stages else []
    else:
        raise ValueError(f"advice rule {rule.rule}: unknown scope {rule.scope!r}")
    best, val = _largest(rule, pool)
    if best is not None and val >= rule.threshold:
        yield best, (-1 if rule.scope == "stage" else best.rank), val


def advise(out: ppb.RunParallel, msgs: Dict[int, ppb.RankParallel], median_step: float) -> None:
    """Walk RULES in order and add an Advice to `out` for each place a rule fires."""
    ranks = [m for m in out.ranks if m.step_time_ns > 0]
    for rule in RULES:
        for subject, rank, value in _subjects(rule, out, ranks, median_step):
            fields = dict(rank=rank, value=value, threshold=rule.threshold, **rule.fields(subject))
            if rule.scope == "straggler" and rank in msgs and msgs[rank].timeline == pb.TIMELINE_HOST:
                fields["where"] = _where_straggler(subject, device=False)
            text = rule.template.format(**fields)
            extra = []
            if rule.cost is not None:
                extra.append(
                    dict(
                        metric="cost to the job per step",
                        value=rule.cost(subject, median_step),
                        threshold=0.0,
                        unit="fraction of the median step",
                        rank=rank,
                    )
                )
            if rule.also is not None:
                more = rule.also.value(subject, out.pipeline.stages)
                if more >= rule.also.threshold:
                    text += rule.also.template.format(value=more, threshold=rule.also.threshold)
                    extra.append(
                        dict(
                            metric=rule.also.metric,
                            value=more,
                            threshold=rule.also.threshold,
                            unit=rule.also.unit,
                            rank=-1,
                        )
                    )
            a = _add(
                out,
                rule.rule,
                rule.title.format(rank=rank),
                text,
                rule.metric,
                rank,
                value,
                rule.threshold,
                unit=rule.unit,
                extra=extra,
            )
            if rule.scope == "stage":
                a.ranks.extend(subject.ranks)
