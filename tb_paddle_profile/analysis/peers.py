"""A rank against the median of its role peers (docs/diff.md "A rank against its role peers").

* **Role peers**: the other ranks of the run's cross-rank analysis with the same role (:func:`role`: pipeline
  stage, MP index and sharding index; the roles of crossrank/verdict.py, of the rank banner and of the
  compact timeline's order). A rank whose MP index is unknown (-1) has none.
* **Per step**: each rank's operators (top-level operator nodes: calls, CPU total, GPU total with memcpy and
  memset, as the Operators table) and kernels (calls, GPU total) by name, each total divided by the rank's
  ProfileStep count (its Summary's parallel steps; 1 where it has none).
* **The peers' median**: per name, the median over the peer ranks of those per-step figures, a peer
  without that name counting 0 (statistics.median: the mean of the two middle values for an even count).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Dict, List, Optional, Sequence, Tuple

from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.v1 import summary_pb2 as pb

# name -> figure -> value per step
Figures = Dict[str, Dict[str, float]]
OPERATOR_FIGURES = ("calls", "cpu_total_ns", "gpu_total_ns")
KERNEL_FIGURES = ("calls", "gpu_total_ns")


@dataclass
class PerStep:
    """One rank's operators and kernels per step (or the peers' median of them)."""

    operators: Figures
    kernels: Figures
    steps: float


def role(r: ppb.RankParallel) -> Optional[Tuple[int, int, int]]:
    """A rank's role in the stored analysis (pipeline stage, MP index, sharding index), or None where its
    MP index is unknown."""
    return (r.pipeline_stage, r.mp, r.sharding) if r.mp >= 0 else None


def role_peers(rp: ppb.RunParallel, worker: str) -> Tuple[List[ppb.RankParallel], str]:
    """The role peers of ``worker`` in the analysis (rank order) and its role in words ("stage 1, MP index
    0"); ([], reason) where it has none."""
    me = next((r for r in rp.ranks if r.worker == worker), None)
    if me is None:
        return [], "this rank is not in the run's cross-rank analysis"
    mine = role(me)
    if mine is None:
        return [], "the analysis does not know this rank's MP index"
    where = (f"stage {me.pipeline_stage}, " if me.pipeline_stage >= 0 else "") + f"MP index {me.mp}"
    peers = sorted((r for r in rp.ranks if r.worker != worker and role(r) == mine), key=lambda r: r.rank)
    return peers, where


def per_step(s: pb.Summary) -> PerStep:
    """A rank's top-level operators and kernels by name, per ProfileStep."""
    steps = float(len(s.parallel.steps) or 1)
    ops: Figures = {}
    for node in s.operators.operators:
        st = node.stats
        f = ops.setdefault(st.name, dict.fromkeys(OPERATOR_FIGURES, 0.0))
        f["calls"] += st.calls / steps
        f["cpu_total_ns"] += st.cpu.total_ns / steps
        f["gpu_total_ns"] += st.general_gpu.total_ns / steps
    kernels: Figures = {}
    for k in s.kernels.kernels:
        f = kernels.setdefault(k.name, dict.fromkeys(KERNEL_FIGURES, 0.0))
        f["calls"] += k.calls / steps
        f["gpu_total_ns"] += k.gpu.total_ns / steps
    return PerStep(ops, kernels, steps)


def _median_of(sides: Sequence[Figures], figures: Sequence[str]) -> Figures:
    names = sorted({n for side in sides for n in side})
    zero = dict.fromkeys(figures, 0.0)
    return {n: {f: float(median(side.get(n, zero)[f] for side in sides)) for f in figures} for n in names}


def peers_median(peers: Sequence[PerStep]) -> PerStep:
    """Per name and figure, the median over the peers (a peer without the name: 0)."""
    if not peers:
        return PerStep({}, {}, 0.0)
    return PerStep(
        _median_of([p.operators for p in peers], OPERATOR_FIGURES),
        _median_of([p.kernels for p in peers], KERNEL_FIGURES),
        float(median(p.steps for p in peers)),
    )
