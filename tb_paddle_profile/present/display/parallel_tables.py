"""The tables of the hybrid-parallel view (display/parallel.py) on time across ranks and steps: ranks, steps,
collectives by kind, host, waits, topology, clocks, pipeline (memory, sequences, time per layer and
communicators: display/parallel_model_tables.py)."""

from __future__ import annotations

from typing import Dict, List

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import BYTES, NUMBER
from tb_paddle_profile.present.display.parallel_common import (
    kind_label,
    ranks_text,
    col,
    dur,
    pct,
    count,
    _table,
    _row,
    _share,
    _rank_link,
    _note,
    _label,
)


RANKS_NOTE = (
    "Step = Compute + Exposed comm + Exposed memcpy + Idle. GPU timeline: Compute = some non-communication "
    "kernel runs; Exposed comm = a communication kernel runs and no computation; Hidden comm = communication "
    "overlapped by computation; Idle = nothing runs on the GPU."
)
RANKS_HOST_NOTE = (
    "Host timeline (no device events): communication = host communication events, which block the host; "
    "Compute = other operators; Idle = the rest."
)
RANKS_INFERRED_NOTE = "* rank numbered in the order of hostname, pid and worker name (the file names do not tell it)."
KINDS_NOTE = (
    "Totals over ranks and steps. Wait = duration − transfer of matched instances (transfer ≈ the shortest "
    "duration of the instance across its ranks)."
)
HOST_NOTE = "Kernel time is the plain sum of kernel durations (streams overlap)."
WAITS_NOTE = (
    "Role peers: the ranks of the same pipeline stage and mp index (other replicas). First work = from the "
    "step's start to its first device event. Matched = matched instances of all its collectives. Deviation = "
    "its largest excess over its role peers' median, as a share of the median step."
)
CLOCKS_NOTE = (
    "Offset of each host's clock from the reference host's, found from collectives spanning hosts (their "
    "members end together); subtracted from its times before matching."
)


def _ranks_table(rp: ppb.RunParallel) -> dpb.Table:
    notes = [_note("ranks.note", RANKS_NOTE)]
    if any(r.timeline == pb.TIMELINE_HOST for r in rp.ranks):
        notes.append(_note("ranks.host", RANKS_HOST_NOTE))
    if any(r.rank_inferred for r in rp.ranks):
        notes.append(_note("ranks.inferred", RANKS_INFERRED_NOTE))
    t = _table(
        "ranks",
        "Per-rank step breakdown",
        [
            count("rank", "Rank"),
            col("label", "Label"),
            col("worker", "Worker", text_hidden=True, panel_hidden=True),
            count("steps", "Steps"),
            dur("step_ns", "Step"),
            dur("compute_ns", "Compute"),
            dur("exposed_comm_ns", "Exposed comm"),
            pct("exposed_comm_share", "(of step)"),
            dur("hidden_comm_ns", "Hidden comm"),
            dur("exposed_memcpy_ns", "Exposed memcpy"),
            dur("idle_ns", "Idle"),
            col("timeline", "Timeline"),
        ],
        notes,
    )
    for r in rp.ranks:
        _row(
            t,
            [
                r.rank,
                _label(r),
                r.worker,
                r.steps,
                r.step_time_ns,
                r.compute_ns,
                r.exposed_communication_ns,
                _share(r.exposed_communication_ns, r.step_time_ns),
                r.hidden_communication_ns,
                r.exposed_memory_ns,
                r.idle_ns,
                ("host" if r.timeline == pb.TIMELINE_HOST else "GPU"),
            ],
            r.worker,
            _rank_link(r.rank),
        )
    return t


def _matrix_table(rp: ppb.RunParallel, key: str, title: str, matrix: ppb.RankStepMatrix) -> dpb.Table:
    steps = list(rp.steps)
    t = _table(
        key,
        title,
        [count("rank", "Rank"), col("label", "Label", text_hidden=True)] + [dur(f"step_{s}", f"#{s}") for s in steps],
    )
    vals = list(matrix.values_ns)
    for i, r in enumerate(rp.ranks):
        row = vals[i * len(steps) : (i + 1) * len(steps)]
        _row(
            t,
            [r.rank, _label(r)] + [v if v >= 0 else None for v in row] + [None] * (len(steps) - len(row)),
            r.worker,
            _rank_link(r.rank),
        )
    return t


def _kinds_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "kinds",
        "Collectives by kind (all ranks, all steps)",
        [
            col("kind", "Kind"),
            count("calls", "Calls"),
            dur("device_ns", "Device time"),
            dur("host_ns", "Host time"),
            dur("exposed_ns", "Exposed"),
            count("matched", "Matched"),
            dur("wait_ns", "Wait"),
            dur("transfer_ns", "Transfer"),
            col("bytes", "Bytes", BYTES, style="human"),
            col("ranks", "Ranks"),
        ],
        [_note("kinds.note", KINDS_NOTE)],
    )
    for k in rp.kinds:
        _row(
            t,
            [
                kind_label(k.kind),
                k.calls,
                k.device_ns,
                k.host_ns,
                k.exposed_ns,
                k.matched,
                k.wait_ns,
                k.transfer_ns,
                k.bytes,
                ranks_text(k.ranks),
            ],
            kind_label(k.kind),
        )
    return t


def _rank_kinds_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "rank_kinds",
        "Collectives by rank and kind (per step)",
        [
            count("rank", "Rank"),
            col("kind", "Kind"),
            col("calls", "Calls", NUMBER, 1),
            dur("device_ns", "Device time"),
            dur("exposed_ns", "Exposed"),
            dur("wait_ns", "Wait"),
            col("matched_of", "Matched"),
            count("matched", "Matched instances", text_hidden=True, panel_hidden=True),
            count("calls_total", "Calls (all steps)", text_hidden=True, panel_hidden=True),
        ],
    )
    for r in rp.ranks:
        n = max(1, r.steps)
        for k in r.kinds:
            _row(
                t,
                [
                    r.rank,
                    kind_label(k.kind),
                    k.calls / n,
                    k.device_ns / n,
                    k.exposed_ns / n,
                    k.wait_ns / n,
                    f"{k.matched}/{k.calls}",
                    k.matched,
                    k.calls,
                ],
                f"{r.rank}:{kind_label(k.kind)}",
                _rank_link(r.rank),
            )
    return t


def _host_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "host",
        "Host side: CUDA runtime against kernels (per step)",
        [
            count("rank", "Rank"),
            dur("runtime_ns", "CUDA runtime"),
            pct("runtime_share", "(of step)"),
            count("launches", "Launches"),
            dur("sync_ns", "Synchronising"),
            dur("kernel_ns", "Kernel time"),
        ],
        [_note("host.note", HOST_NOTE)],
    )
    for r in rp.ranks:
        _row(
            t,
            [r.rank, r.runtime_ns, _share(r.runtime_ns, r.step_time_ns), r.launches, r.sync_ns, r.kernel_ns],
            r.worker,
            _rank_link(r.rank),
        )
    return t


def _waits_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "waits",
        "Waits at collectives other than send/recv, and each rank against its role peers (per step)",
        [
            count("rank", "Rank"),
            dur("wait_ns", "Waited"),
            dur("caused_wait_ns", "Made peers wait"),
            col("arrived_last", "Arrived last"),
            dur("compute_ns", "Compute"),
            dur("peer_compute_ns", "Role peers' compute"),
            dur("dataloader_ns", "Data loader"),
            dur("first_work_ns", "First work"),
            pct("coverage", "Matched"),
            pct("deviation", "Deviation"),
            col("peers", "Peers"),
            count("last_arrivals", "Last arrivals", text_hidden=True, panel_hidden=True),
            count("matched", "Matched instances", text_hidden=True, panel_hidden=True),
        ],
        [_note("waits.note", WAITS_NOTE)],
    )
    for r in rp.ranks:
        _row(
            t,
            [
                r.rank,
                r.wait_ns,
                r.caused_wait_ns,
                f"{r.last_arrivals}/{r.matched}",
                r.compute_ns,
                r.peer_compute_ns if r.peer_compute_ns else None,
                r.dataloader_ns,
                r.first_device_ns if r.first_device_ns >= 0 else None,
                r.coverage,
                r.deviation,
                ranks_text(r.peers),
                r.last_arrivals,
                r.matched,
            ],
            r.worker,
            _rank_link(r.rank),
        )
    return t


def _topology_table(tv: ppb.TopologyView) -> dpb.Table:
    head = (
        f"DP {tv.dp} x PP {tv.pp} x MP {tv.mp}"
        + (" (complete" if tv.complete else " (incomplete")
        + (", Fleet's rank order)" if tv.matches_fleet_order else ")")
    )
    notes = [_note("topology.method", tv.method)] if tv.method else []
    notes += [_note("topology.note", n) for n in tv.notes]
    t = _table(
        "topology",
        f"Topology: {head}",
        [
            col("axis", "Axis"),
            count("groups", "Groups"),
            col("sizes", "Sizes"),
            count("instances", "Instances"),
            col("examples", "Examples"),
        ],
        notes,
    )
    by_axis: Dict[str, list] = {}
    for g in tv.groups:
        by_axis.setdefault(g.axis, []).append(g)
    for axis, gs in sorted(by_axis.items()):
        examples = "; ".join(ranks_text(g.ranks, 8) for g in gs[:3]) + (" …" if len(gs) > 3 else "")
        _row(t, [axis, len(gs), str(sorted({len(g.ranks) for g in gs})), sum(g.instances for g in gs), examples], axis)
    return t


def _clocks_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "clocks",
        "Host clocks",
        [
            col("host", "Host"),
            dur("offset_ns", "Offset"),
            dur("spread_ns", "Spread (IQR)"),
            count("samples", "Samples"),
            col("reference", ""),
            col("ranks", "Ranks"),
        ],
        [_note("clocks.note", CLOCKS_NOTE)],
    )
    for c in rp.clocks:
        _row(
            t,
            [
                c.hostname or "-",
                c.offset_ns,
                c.spread_ns,
                c.samples,
                ("reference" if c.reference else ""),
                (ranks_text(c.ranks, 8)),
            ],
            c.hostname,
        )
    return t


def _pipeline_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    pv = rp.pipeline
    if not pv.present:
        return []
    notes = [_note("pipeline.definition", pv.definition)] if pv.definition else []
    if pv.stages:
        flops = any(s.flops_per_step > 0 for s in pv.stages)  # a column only where the traces record shapes
        t = _table(
            "pipeline",
            f"Pipeline ({pv.pipelines} pipelines)",
            [
                count("stage", "Stage"),
                col("ranks", "Ranks"),
                dur("step_ns", "Step"),
                dur("compute_ns", "Compute"),
                dur("bubble_ns", "Bubble"),
                pct("bubble_ratio", "Bubble ratio"),
            ]
            + (
                [
                    col(
                        "tflop_per_step",
                        "TFLOP/step",
                        NUMBER,
                        3,
                        description="Model FLOPs per step from the recorded shapes (forward + backward), mean over the "
                        "stage's ranks",
                    )
                ]
                if flops
                else []
            ),
            notes,
        )
        for s in pv.stages:
            _row(
                t,
                [s.stage, ranks_text(s.ranks), s.step_time_ns, s.compute_ns, s.bubble_ns, s.bubble_ratio]
                + ([s.flops_per_step / 1e12] if flops else []),
                str(s.stage),
                _rank_link(s.ranks[0]) if s.ranks else "",
            )
        return [t]
    t = _table(
        "pipeline_ranks",
        "Pipeline (stages unknown)",
        [
            count("rank", "Rank"),
            dur("step_ns", "Step"),
            dur("bubble_ns", "Bubble"),
            pct("bubble_ratio", "Bubble ratio"),
        ],
        notes,
    )
    for r in rp.ranks:
        if r.bubble_ns or r.pipeline_stage >= 0:
            _row(t, [r.rank, r.step_time_ns, r.bubble_ns, r.bubble_ratio], r.worker, _rank_link(r.rank))
    return [t]
