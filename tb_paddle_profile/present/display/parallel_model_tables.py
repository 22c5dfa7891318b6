"""The tables of the hybrid-parallel view (display/parallel.py) on what the model puts on the ranks: peak
memory by stage and rank, tokens per replica and FLOPs per rank, time per layer by stage, and the
communicators' exposed time (the tables of time across ranks and steps: display/parallel_tables.py)."""

from __future__ import annotations

from typing import Dict, List

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.present.display.cells import BYTES, COUNT, NUMBER
from tb_paddle_profile.present.display.comm import nominal_gbps
from tb_paddle_profile.present.display.parallel_common import (
    ranks_text,
    duration,
    _sentence,
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


MEMORY_NOTE = (
    "Peak memory per rank: the largest peak allocated among its GPU places (Place(gpu:N)), else among its "
    "other places (a CPU run), as its Memory view gives it; per stage the largest, smallest and mean over "
    "the stage's ranks. Stage -1: no pipeline stage was found (all ranks)."
)


def _memory_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """Peak memory per pipeline stage and per rank (RunParallel.memory, analysis/memory.py)."""
    mem = rp.memory
    if not mem.ranks:
        return []

    def b(
        key: str, header: str, description: str
    ) -> dpb.Column:  # "1.50 GiB" in the CLI and the panel; CSV: the integer
        return col(key, header, BYTES, style="human", description=description)

    stages = _table(
        "memory_stages",
        "Peak memory by pipeline stage",
        [
            count("stage", "Stage"),
            col("ranks", "Ranks"),
            b("max_peak_allocated", "Max allocated", "The largest peak allocated of the stage's ranks"),
            count("max_allocated_rank", "On rank", description="The rank of the largest peak allocated"),
            b("min_peak_allocated", "Min allocated", "The smallest peak allocated of the stage's ranks"),
            b("mean_peak_allocated", "Mean allocated", "The mean peak allocated of the stage's ranks"),
            b("max_peak_reserved", "Max reserved", "The largest peak reserved of the stage's ranks"),
            count("max_reserved_rank", "On rank", description="The rank of the largest peak reserved"),
        ],
        [_note("memory.note", MEMORY_NOTE)],
    )
    for st in mem.stages:
        _row(
            stages,
            [
                st.stage,
                ranks_text(st.ranks),
                st.max_peak_allocated,
                st.max_allocated_rank,
                st.min_peak_allocated,
                st.mean_peak_allocated,
                st.max_peak_reserved,
                st.max_reserved_rank,
            ],
            str(st.stage),
            _rank_link(st.max_allocated_rank),
        )
    ranks = _table(
        "memory_ranks",
        "Peak memory by rank",
        [
            count("rank", "Rank"),
            count("stage", "Stage"),
            col("place", "Place"),
            b("peak_allocated", "Peak allocated", "The rank's largest peak allocated among its device places"),
            b("peak_reserved", "Peak reserved", "The peak reserved of that place"),
        ],
    )
    for r in mem.ranks:
        _row(ranks, [r.rank, r.stage, r.place, r.peak_allocated, r.peak_reserved], str(r.rank), _rank_link(r.rank))
    return [stages, ranks]


SEQUENCES_NOTE = (
    "Tokens from the recorded input shapes (each micro-batch's first embedding ids, else the rows of "
    "its first GEMM with a 2-D weight); a replica is the ranks of one data-parallel coordinate. "
    "Compute: the median over its ranks per step. docs/flops.md."
)
RANK_FLOPS_NOTE = (
    "Model FLOPs per step from the recorded shapes: forward GEMMs and attention, the backward counted as "
    "twice the forward; achieved = FLOPs per step / step time."
)


def _sequence_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """Tokens per data-parallel replica (RunParallel.sequences) and FLOPs per rank, where the traces
    record input shapes (crossrank/sequences.py); nothing otherwise."""
    out = []
    sb = rp.sequences
    if sb.present and sb.replicas:
        notes = [_note("sequences.note", SEQUENCES_NOTE)]
        if sb.method:
            notes.append(
                _sentence(
                    "sequences.cost",
                    [
                        f"Spread {sb.spread:.1%} (max / min - 1; CV {sb.cv:.1%}). With every replica at the mean "
                        f"{sb.mean_tokens_per_step:,.0f} tokens per step the step would be ",
                        duration(sb.cost_ns),
                        f" shorter ({sb.method}): ",
                        duration(sb.step_ns),
                        " to ",
                        duration(sb.balanced_step_ns),
                        ". ",
                        sb.assumption,
                    ],
                    "note",
                )
            )
        elif sb.why_not:
            notes.append(_note("sequences.why_not", sb.why_not))
        t = _table(
            "sequences",
            "Tokens per data-parallel replica",
            [
                col("dp", "DP", COUNT),
                col("ranks", "Ranks"),
                col("tokens_per_step", "Tokens/step", NUMBER, 0),
                col("tokens_per_micro_batch", "Tokens/micro-batch", NUMBER, 0),
                count("min_tokens", "Min"),
                count("max_tokens", "Max"),
                count("micro_batches", "Micro-batches"),
                dur("compute_ns", "Compute"),
            ],
            notes,
        )
        for r in sb.replicas:
            _row(
                t,
                [
                    r.dp if r.dp >= 0 else None,
                    ranks_text(r.ranks),
                    r.tokens_per_step,
                    r.tokens_per_micro_batch,
                    r.min_micro_batch_tokens,
                    r.max_micro_batch_tokens,
                    r.micro_batches,
                    r.compute_ns,
                ],
                str(r.dp),
                _rank_link(r.ranks[0]) if r.ranks else "",
            )
        out.append(t)
    if any(r.flops_per_step > 0 for r in rp.ranks):
        t = _table(
            "rank_flops",
            "FLOPs by rank (from input shapes)",
            [
                count("rank", "Rank"),
                col("label", "Label", text_hidden=True),
                count("stage", "Stage"),
                col("tokens_per_step", "Tokens/step", NUMBER, 0),
                col("tflop_per_step", "TFLOP/step", NUMBER, 3),
                dur("step_ns", "Step"),
                col("achieved_tflops", "Achieved TFLOP/s", NUMBER, 1),
            ],
            [_note("rank_flops.note", RANK_FLOPS_NOTE)],
        )
        for r in rp.ranks:
            ach = r.flops_per_step / (r.step_time_ns * 1e-9) / 1e12 if r.step_time_ns else None
            _row(
                t,
                [
                    r.rank,
                    _label(r),
                    r.pipeline_stage if r.pipeline_stage >= 0 else None,
                    r.tokens_per_step,
                    r.flops_per_step / 1e12,
                    r.step_time_ns,
                    ach,
                ],
                r.worker,
                _rank_link(r.rank),
            )
        out.append(t)
    return out


STAGE_LAYERS_NOTE = (
    "Per pipeline stage, each layer's forward compute kernels (launched below its Forward events) per "
    "step, over the stage's ranks: the median, the fastest and the slowest rank (click the row to "
    "open it). TFLOP/s = the median FLOPs / the median time; MFU = that / the GPU's peak. "
    "docs/flops.md."
)


def _stage_layers_table(rp: ppb.RunParallel) -> List[dpb.Table]:
    """The time per layer across ranks (RunParallel.layers, crossrank/layers.py); nothing without it."""
    lv = rp.layers
    if not lv.present:
        return []
    mfu = any(x.mfu > 0 for x in lv.layers)
    t = _table(
        "stage_layers",
        "Time per layer by stage (forward kernels)",
        [
            count("stage", "Stage"),
            col("layer", "Layer"),
            count("ordinal", "#"),
            col("ranks", "Ranks"),
            col("gflop_per_step", "GFLOP/step", NUMBER, 1, description="forward FLOPs per step, median over the ranks"),
            dur("median_ns", "Median", description="forward compute kernel time per step, median over the ranks"),
            dur("min_ns", "Fastest", text_hidden=True),
            count("slowest_rank", "Slowest rank"),
            dur("slowest_ns", "Slowest"),
            col("slowest_ratio", "Slowest / median", NUMBER, 2),
            col("tflops", "TFLOP/s", NUMBER, 1),
            col("slowest_tflops", "Slowest TFLOP/s", NUMBER, 1, text_hidden=True),
        ]
        + ([pct("mfu", "MFU")] if mfu else [])
        + [dur("comm_ns", "Comm kernels", description="communication kernels launched in its forward, median")],
        [_note("stage_layers.note", STAGE_LAYERS_NOTE)],
    )
    for x in lv.layers:
        ratio = x.slowest_kernel_ns / x.median_kernel_ns if x.median_kernel_ns else None
        _row(
            t,
            [
                x.stage if x.stage >= 0 else None,
                x.name,
                x.ordinal,
                ranks_text(x.ranks),
                x.flops / 1e9,
                x.median_kernel_ns,
                x.min_kernel_ns,
                x.slowest_rank,
                x.slowest_kernel_ns,
                ratio,
                x.achieved_flops / 1e12 if x.median_kernel_ns else None,
                x.slowest_achieved_flops / 1e12 if x.slowest_kernel_ns else None,
            ]
            + ([x.mfu if x.median_kernel_ns else None] if mfu else [])
            + [x.median_comm_kernel_ns],
            f"{x.stage}:{x.name}:{x.ordinal}",
            _rank_link(x.slowest_rank),
        )
    return [t]


COMM_AXES_NOTE = (
    "Per communicator (by rule, docs/communication.md) and phase: the means per step over the ranks that "
    "have it; hidden = while a compute kernel runs. Algbw: the communicator's bytes over its calls' time, "
    "all ranks and phases ('-' when the traces record no shapes); busbw: NCCL's bus bandwidth, algbw x "
    "2(n-1)/n for all-reduce, x (n-1)/n for all-gather / reduce-scatter / all-to-all, x 1 for broadcast "
    "and send/recv, n the communicator's size in the topology ('-' when unknown). Nominal links per "
    "direction: NVLink {nv:g} GB/s, network {net:g} GB/s."
)
COMM_RANKS_NOTE = (
    "Exposed communication per step by communicator; Starved: the share of the span its most starved "
    "stream sat idle waiting for the host's launches; Stalls: steps with a main-thread stretch over the "
    "threshold without any CUDA call."
)


def _comm_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """RunParallel.comm (crossrank/comm_ranks.py): per communicator and phase across ranks, and per rank."""
    from tb_paddle_profile.analysis.comm_axes import AXIS_LABELS, PHASE_LABELS

    nv, net = nominal_gbps()
    cv = rp.comm
    out = []
    if cv.axes:
        t = _table(
            "comm_axes",
            "Communication by communicator and phase (per step, across ranks)",
            [
                col("axis", "Communicator"),
                col("phase", "Phase"),
                count("ranks", "Ranks"),
                dur("time_ns", "Time"),
                dur("hidden_ns", "Hidden"),
                dur("exposed_ns", "Exposed"),
                pct("hidden_share", "Hidden share"),
                dur("max_exposed_ns", "Max exposed"),
                count("max_exposed_rank", "On rank"),
                col("algbw_gbps", "Algbw GB/s", NUMBER, 2),
                col("busbw_gbps", "Busbw GB/s", NUMBER, 2),
                pct("of_nvlink", "Of NVLink"),
                pct("of_network", "Of network"),
            ],
            [_note("comm_axes.note", COMM_AXES_NOTE.format(nv=nv, net=net))],
        )
        for a in cv.axes:
            bus = a.busbw / 1e9 if a.busbw else None
            _row(
                t,
                [
                    AXIS_LABELS.get(a.axis, "-"),
                    PHASE_LABELS.get(a.phase, "other"),
                    a.ranks,
                    a.time_ns,
                    a.hidden_ns,
                    a.exposed_ns,
                    _share(a.hidden_ns, a.time_ns),
                    a.max_exposed_ns,
                    a.max_exposed_rank,
                    a.algbw / 1e9 if a.algbw else None,
                    bus,
                    bus / nv if bus else None,
                    bus / net if bus else None,
                ],
                f"{a.axis}:{a.phase}",
                _rank_link(a.max_exposed_rank),
            )
        out.append(t)
    if cv.ranks:
        axes = sorted({x.axis for r in cv.ranks for x in r.axes})
        t = _table(
            "comm_ranks",
            "Communication, launches and host stalls by rank (per step)",
            [count("rank", "Rank"), col("label", "Label", text_hidden=True)]
            + [
                dur(
                    f"exposed_{AXIS_LABELS.get(a, 'other').lower().replace(' ', '_')}",
                    f"Exposed {AXIS_LABELS.get(a, 'other')}",
                )
                for a in axes
            ]
            + [
                pct("starved_share", "Starved"),
                count("starved_stream", "Stream"),
                dur("launch_p50_ns", "Launch p50"),
                count("max_queue", "Max queue"),
                col("stalls", "Stalls"),
                dur("stalled_ns", "Stalled"),
            ],
            [_note("comm_ranks.note", COMM_RANKS_NOTE)],
        )
        labels = {r.rank: _label(r) for r in rp.ranks}
        for r in cv.ranks:
            ex: Dict[int, int] = {}
            for x in r.axes:
                ex[x.axis] = ex.get(x.axis, 0) + x.exposed_ns
            starved = r.starved_stream >= 0
            _row(
                t,
                [r.rank, labels.get(r.rank, "")]
                + [ex.get(a, 0) for a in axes]
                + [
                    r.starved_share if starved else None,
                    r.starved_stream if starved else None,
                    r.launch_p50_ns if starved else None,
                    r.max_queue if starved else None,
                    f"{r.stall_steps}/{r.steps}",
                    r.stalled_ns_per_step,
                ],
                str(r.rank),
                _rank_link(r.rank),
            )
        out.append(t)
    return out
