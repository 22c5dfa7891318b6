"""Pipeline view: bubbles per rank and per stage, from the topology's chains."""

from __future__ import annotations

from typing import List, Sequence

from ...v1 import plugin_pb2 as ppb
from .match import SEND_RECV
from .model import RankData, Topology

BUBBLE_DEFINITION = (
    "bubble = time per step during which a pipeline send/recv is in flight on the rank's GPU while no "
    "computation runs (the stage waits for a neighbour stage); bubble ratio = bubble / step time. "
    "On a CPU trace: the host's send/recv time."
)


def fill(out: ppb.RunParallel, ranks: Sequence[RankData], topo: Topology, msgs: List[ppb.RankParallel]) -> None:
    pv = out.pipeline
    pv.definition = BUBBLE_DEFINITION
    with_p2p = [r for r in ranks if (r.kind == SEND_RECV).any()]
    if not with_p2p:
        return
    pv.present = True
    for r in with_p2p:
        m = msgs[r.index]
        bub = []
        for s in r.steps.values():
            k = next((k for k in s.kinds if k.kind == SEND_RECV), None)
            bub.append(k.exposed_ns if k is not None else 0)
        m.bubble_ns = int(round(sum(bub) / len(bub))) if bub else 0
        m.bubble_ratio = m.bubble_ns / m.step_time_ns if m.step_time_ns else 0.0
    chains = topo.pipelines
    pv.pipelines = len(chains)
    if not chains:
        out.notes.append(
            "Send/recv found, but no pair matched across ranks: pipeline stages are unknown; the "
            "bubble is given per rank."
        )
        return
    depth = max(len(c) for c in chains)
    for x, stage in enumerate(topo.stages(len(msgs))):
        if stage >= 0:
            msgs[x].pipeline_stage = stage
    for stage in range(depth):
        members = [c[stage] for c in chains if len(c) == depth]
        ms = [msgs[x] for x in members]
        ps = pv.stages.add(stage=stage, ranks=sorted(m.rank for m in ms))
        ps.step_time_ns = int(round(sum(m.step_time_ns for m in ms) / len(ms)))
        ps.compute_ns = int(round(sum(m.compute_ns for m in ms) / len(ms)))
        ps.bubble_ns = int(round(sum(m.bubble_ns for m in ms) / len(ms)))
        ps.bubble_ratio = sum(m.bubble_ratio for m in ms) / len(ms)
    if any(len(c) != depth for c in chains):
        out.notes.append("Pipelines of different lengths: stages are given for the longest ones only.")
