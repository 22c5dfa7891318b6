"""Single-rank recommendations for the Overview (docs/kernel-efficiency.md, "Recommendations").

RULES is the table of rules, as data: each row names the rule, the metric it compares, its threshold
and what it looks at. Every threshold of these recommendations is here; the two that the cross-rank
advice also applies (launch bound, memcpy) are its constants (crossrank/thresholds.py), so a rank is
judged the same alone and in a run. The figures are a rank's own per-step figures (Summary.parallel.steps,
the ones the cross-rank analysis reads) summed over the steps and divided by the steps' total time, and
the kernel efficiency sums (KernelStats.efficiency). The display (display/summary.py) writes the sentences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ..v1 import summary_pb2 as pb
from .crossrank import thresholds as crossrank_thresholds

# Fractions of the step time, except LOW_OCCUPANCY (a time-weighted occupancy, a fraction) and
# LOW_OCCUPANCY_KERNEL_SHARE (a fraction of all kernel time).
DATALOADER_FRACTION = 0.10
LAUNCH_BOUND_FRACTION = crossrank_thresholds.LAUNCH_BOUND_RUNTIME_FRACTION
SYNC_FRACTION = 0.10
MEMCPY_FRACTION = crossrank_thresholds.MEMCPY_FRACTION
LOW_OCCUPANCY = 0.25
LOW_OCCUPANCY_KERNEL_SHARE = 0.10


@dataclass(frozen=True)
class Rule:
    rule: str
    title: str
    metric: str
    threshold: float


RULES: Tuple[Rule, ...] = (
    Rule("dataloader_bound", "Data-loader bound", "data-loader time / step time", DATALOADER_FRACTION),
    Rule(
        "launch_bound",
        "Launch bound",
        "CUDA runtime time other than synchronisations / step time",
        LAUNCH_BOUND_FRACTION,
    ),
    Rule("sync_heavy", "Synchronisation heavy", "synchronising CUDA calls' time / step time", SYNC_FRACTION),
    Rule("memcpy_heavy", "Memcpy heavy", "memcpy and memset time / step time", MEMCPY_FRACTION),
    Rule(
        "low_occupancy",
        "Low-occupancy kernels",
        "time of compute kernels of time-weighted occupancy below LOW_OCCUPANCY / all kernel time",
        LOW_OCCUPANCY_KERNEL_SHARE,
    ),
)
RULE = {r.rule: r for r in RULES}


@dataclass
class Recommendation:
    rule: Rule
    value: float  # compared with rule.threshold
    numbers: Dict[str, float] = field(default_factory=dict)  # what the sentence cites (ns, counts, names)
    names: List[str] = field(default_factory=list)


def _is_communication(name: str) -> bool:
    # NCCL kernels are one block per channel by design: their occupancy says nothing of the computation.
    return "nccl" in name.lower()


def step_figures(s: pb.Summary) -> Dict[str, int]:
    """The rank's per-step figures summed over its steps, and the steps' total time."""
    keys = ("dataloader_ns", "runtime_ns", "sync_ns", "memory_ns", "launches", "sync_calls", "kernel_ns")
    out = {k: 0 for k in keys}
    out["step_ns"] = 0
    for st in s.parallel.steps:
        out["step_ns"] += st.range.end_ns - st.range.start_ns
        for k in keys:
            out[k] += getattr(st, k)
    out["steps"] = len(s.parallel.steps)
    return out


def recommendations(s: pb.Summary) -> List[Recommendation]:
    """The rules that fire on this rank, in RULES' order."""
    f = step_figures(s)
    step = f["step_ns"]
    out: List[Recommendation] = []
    if step > 0:
        steps = f["steps"]
        per = {k: f[k] / steps for k in f}
        values = {
            "dataloader_bound": (f["dataloader_ns"] / step, dict(dataloader_ns=per["dataloader_ns"])),
            "launch_bound": (
                max(0, f["runtime_ns"] - f["sync_ns"]) / step,
                dict(
                    runtime_ns=max(0.0, per["runtime_ns"] - per["sync_ns"]),
                    launches=per["launches"],
                    kernel_ns=per["kernel_ns"],
                ),
            ),
            "sync_heavy": (f["sync_ns"] / step, dict(sync_ns=per["sync_ns"], sync_calls=per["sync_calls"])),
            "memcpy_heavy": (f["memory_ns"] / step, dict(memory_ns=per["memory_ns"])),
        }
        for rule, (value, numbers) in values.items():
            if value >= RULE[rule].threshold:
                numbers["step_ns"] = per["step_ns"]
                out.append(Recommendation(RULE[rule], value, numbers))
    total = s.kernels.efficiency.total_ns
    if total > 0:
        low = [
            k
            for k in s.kernels.kernels
            if not _is_communication(k.name)
            and k.efficiency.launch_ns > 0
            and k.efficiency.occupancy_ns / k.efficiency.launch_ns < LOW_OCCUPANCY
        ]
        low_ns = sum(k.efficiency.total_ns for k in low)
        if low_ns / total >= LOW_OCCUPANCY_KERNEL_SHARE:
            low.sort(key=lambda k: -k.efficiency.total_ns)
            out.append(
                Recommendation(
                    RULE["low_occupancy"],
                    low_ns / total,
                    dict(
                        kernels=len(low),
                        low_ns=low_ns,
                        occupancy=low[0].efficiency.occupancy_ns / low[0].efficiency.launch_ns,
                    ),
                    names=[low[0].name],
                )
            )
    return out
