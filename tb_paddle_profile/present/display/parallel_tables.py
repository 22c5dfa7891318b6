"""The tables of the hybrid-parallel view (display/parallel.py): ranks, steps, collectives by kind, host,
waits, topology, clocks, pipeline, memory, sequences, time per layer and communicators."""
from __future__ import annotations

from typing import Dict, List

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import BYTES, COUNT, NUMBER
from tb_paddle_profile.present.display.comm import nominal_gbps
from tb_paddle_profile.present.display.parallel_common import (kind_label, ranks_text, duration, _sentence, col, dur,
                                                               pct, count, _table, _row, _share, _rank_link, _note,
                                                               _label)


RANKS_NOTE = ("Step = Compute + Exposed comm + Exposed memcpy + Idle. GPU timeline: Compute = some non-communication "
              "kernel runs; Exposed comm = a communication kernel runs and no computation; Hidden comm = communication "
              "overlapped by computation; Idle = nothing runs on the GPU.")
RANKS_HOST_NOTE = ("Host timeline (no device events): communication = host communication events, which block the host; "
                   "Compute = other operators; Idle = the rest.")
RANKS_INFERRED_NOTE = "* rank numbered in the order of hostname, pid and worker name (the file names do not tell it)."
KINDS_NOTE = ("Totals over ranks and steps. Wait = duration − transfer of matched instances (transfer ≈ the shortest "
              "duration of the instance across its ranks).")
HOST_NOTE = "Kernel time is the plain sum of kernel durations (streams overlap)."
WAITS_NOTE = ("Role peers: the ranks of the same pipeline stage and mp index (other replicas). First work = from the "
              "step's start to its first device event. Matched = matched instances of all its collectives. Deviation = "
              "its largest excess over its role peers' median, as a share of the median step.")
CLOCKS_NOTE = ("Offset of each host's clock from the reference host's, found from collectives spanning hosts (their "
               "members end together); subtracted from its times before matching.")


def _ranks_table(rp: ppb.RunParallel) -> dpb.Table:
    notes = [_note("ranks.note", RANKS_NOTE)]
    if any(r.timeline == pb.TIMELINE_HOST for r in rp.ranks):
        notes.append(_note("ranks.host", RANKS_HOST_NOTE))
    if any(r.rank_inferred for r in rp.ranks):
        notes.append(_note("ranks.inferred", RANKS_INFERRED_NOTE))
    t = _table("ranks", "Per-rank step breakdown", [
        count("rank", "Rank"), col("label", "Label"), col("worker", "Worker", text_hidden=True, panel_hidden=True),
        count("steps", "Steps"), dur("step_ns", "Step"), dur("compute_ns", "Compute"),
        dur("exposed_comm_ns", "Exposed comm"), pct("exposed_comm_share", "(of step)"),
        dur("hidden_comm_ns", "Hidden comm"), dur("exposed_memcpy_ns", "Exposed memcpy"), dur("idle_ns", "Idle"),
        col("timeline", "Timeline")], notes)
    for r in rp.ranks:
        _row(t, [r.rank, _label(r), r.worker, r.steps, r.step_time_ns, r.compute_ns,
                 r.exposed_communication_ns, _share(r.exposed_communication_ns, r.step_time_ns),
                 r.hidden_communication_ns, r.exposed_memory_ns, r.idle_ns,
                 ("host" if r.timeline == pb.TIMELINE_HOST else "GPU")], r.worker, _rank_link(r.rank))
    return t


def _matrix_table(rp: ppb.RunParallel, key: str, title: str, matrix: ppb.RankStepMatrix) -> dpb.Table:
    steps = list(rp.steps)
    t = _table(key, title, [count("rank", "Rank"), col("label", "Label", text_hidden=True)]
               + [dur(f"step_{s}", f"#{s}") for s in steps])
    vals = list(matrix.values_ns)
    for i, r in enumerate(rp.ranks):
        row = vals[i * len(steps):(i + 1) * len(steps)]
        _row(t, [r.rank, _label(r)] + [v if v >= 0 else None for v in row] + [None] * (len(steps) - len(row)),
             r.worker, _rank_link(r.rank))
    return t


def _kinds_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("kinds", "Collectives by kind (all ranks, all steps)", [
        col("kind", "Kind"), count("calls", "Calls"), dur("device_ns", "Device time"), dur("host_ns", "Host time"),
        dur("exposed_ns", "Exposed"), count("matched", "Matched"), dur("wait_ns", "Wait"),
        dur("transfer_ns", "Transfer"), col("bytes", "Bytes", BYTES, style="human"), col("ranks", "Ranks")],
        [_note("kinds.note", KINDS_NOTE)])
    for k in rp.kinds:
        _row(t, [kind_label(k.kind), k.calls, k.device_ns, k.host_ns, k.exposed_ns,
                 k.matched, k.wait_ns, k.transfer_ns, k.bytes, ranks_text(k.ranks)],
             kind_label(k.kind))
    return t


def _rank_kinds_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("rank_kinds", "Collectives by rank and kind (per step)", [
        count("rank", "Rank"), col("kind", "Kind"), col("calls", "Calls", NUMBER, 1), dur("device_ns", "Device time"),
        dur("exposed_ns", "Exposed"), dur("wait_ns", "Wait"), col("matched_of", "Matched"),
        count("matched", "Matched instances", text_hidden=True, panel_hidden=True),
        count("calls_total", "Calls (all steps)", text_hidden=True, panel_hidden=True)])
    for r in rp.ranks:
        n = max(1, r.steps)
        for k in r.kinds:
            _row(t, [r.rank, kind_label(k.kind), k.calls / n, k.device_ns / n,
                     k.exposed_ns / n, k.wait_ns / n, f"{k.matched}/{k.calls}", k.matched,
                     k.calls], f"{r.rank}:{kind_label(k.kind)}", _rank_link(r.rank))
    return t


def _host_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("host", "Host side: CUDA runtime against kernels (per step)", [
        count("rank", "Rank"), dur("runtime_ns", "CUDA runtime"), pct("runtime_share", "(of step)"),
        count("launches", "Launches"), dur("sync_ns", "Synchronising"), dur("kernel_ns", "Kernel time")],
        [_note("host.note", HOST_NOTE)])
    for r in rp.ranks:
        _row(t, [r.rank, r.runtime_ns, _share(r.runtime_ns, r.step_time_ns), r.launches, r.sync_ns,
                 r.kernel_ns], r.worker, _rank_link(r.rank))
    return t


def _waits_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("waits", "Waits at collectives other than send/recv, and each rank against its role peers (per step)", [
        count("rank", "Rank"), dur("wait_ns", "Waited"), dur("caused_wait_ns", "Made peers wait"),
        col("arrived_last", "Arrived last"), dur("compute_ns", "Compute"),
        dur("peer_compute_ns", "Role peers' compute"),
        dur("dataloader_ns", "Data loader"), dur("first_work_ns", "First work"), pct("coverage", "Matched"),
        pct("deviation", "Deviation"), col("peers", "Peers"),
        count("last_arrivals", "Last arrivals", text_hidden=True, panel_hidden=True),
        count("matched", "Matched instances", text_hidden=True, panel_hidden=True)],
        [_note("waits.note", WAITS_NOTE)])
    for r in rp.ranks:
        _row(t, [r.rank, r.wait_ns, r.caused_wait_ns, f"{r.last_arrivals}/{r.matched}",
                 r.compute_ns, r.peer_compute_ns if r.peer_compute_ns else None, r.dataloader_ns,
                 r.first_device_ns if r.first_device_ns >= 0 else None, r.coverage, r.deviation,
                 ranks_text(r.peers), r.last_arrivals, r.matched], r.worker, _rank_link(r.rank))
    return t


def _topology_table(tv: ppb.TopologyView) -> dpb.Table:
    head = (f"DP {tv.dp} x PP {tv.pp} x MP {tv.mp}" + (" (complete" if tv.complete else " (incomplete")
            + (", Fleet's rank order)" if tv.matches_fleet_order else ")"))
    notes = [_note("topology.method", tv.method)] if tv.method else []
    notes += [_note("topology.note", n) for n in tv.notes]
    t = _table("topology", f"Topology: {head}", [
        col("axis", "Axis"), count("groups", "Groups"), col("sizes", "Sizes"), count("instances", "Instances"),
        col("examples", "Examples")], notes)
    by_axis: Dict[str, list] = {}
    for g in tv.groups:
        by_axis.setdefault(g.axis, []).append(g)
    for axis, gs in sorted(by_axis.items()):
        examples = "; ".join(ranks_text(g.ranks, 8) for g in gs[:3]) + (" …" if len(gs) > 3 else "")
        _row(t, [axis, len(gs), str(sorted({len(g.ranks) for g in gs})),
                 sum(g.instances for g in gs), examples], axis)
    return t


def _clocks_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("clocks", "Host clocks", [
        col("host", "Host"), dur("offset_ns", "Offset"), dur("spread_ns", "Spread (IQR)"), count("samples", "Samples"),
        col("reference", ""), col("ranks", "Ranks")], [_note("clocks.note", CLOCKS_NOTE)])
    for c in rp.clocks:
        _row(t, [c.hostname or "-", c.offset_ns, c.spread_ns, c.samples,
                 ("reference" if c.reference else ""), (ranks_text(c.ranks, 8))], c.hostname)
    return t


def _pipeline_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    pv = rp.pipeline
    if not pv.present:
        return []
    notes = [_note("pipeline.definition", pv.definition)] if pv.definition else []
    if pv.stages:
        flops = any(s.flops_per_step > 0 for s in pv.stages)   # a column only where the traces record shapes
        t = _table("pipeline", f"Pipeline ({pv.pipelines} pipelines)", [
            count("stage", "Stage"), col("ranks", "Ranks"), dur("step_ns", "Step"), dur("compute_ns", "Compute"),
            dur("bubble_ns", "Bubble"), pct("bubble_ratio", "Bubble ratio")]
            + ([col("tflop_per_step", "TFLOP/step", NUMBER, 3,
                    description="Model FLOPs per step from the recorded shapes (forward + backward), mean over the "
                                "stage's ranks")] if flops else []), notes)
        for s in pv.stages:
            _row(t, [s.stage, ranks_text(s.ranks), s.step_time_ns, s.compute_ns, s.bubble_ns,
                     s.bubble_ratio] + ([s.flops_per_step / 1e12] if flops else []), str(s.stage),
                 _rank_link(s.ranks[0]) if s.ranks else "")
        return [t]
    t = _table("pipeline_ranks", "Pipeline (stages unknown)", [
        count("rank", "Rank"), dur("step_ns", "Step"), dur("bubble_ns", "Bubble"), pct("bubble_ratio", "Bubble ratio")],
        notes)
    for r in rp.ranks:
        if r.bubble_ns or r.pipeline_stage >= 0:
            _row(t, [r.rank, r.step_time_ns, r.bubble_ns, r.bubble_ratio], r.worker,
                 _rank_link(r.rank))
    return [t]


MEMORY_NOTE = ("Peak memory per rank: the largest peak allocated among its GPU places (Place(gpu:N)), else among its "
               "other places (a CPU run), as its Memory view gives it; per stage the largest, smallest and mean over "
               "the stage's ranks. Stage -1: no pipeline stage was found (all ranks).")


def _memory_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """Peak memory per pipeline stage and per rank (RunParallel.memory, analysis/memory.py)."""
    mem = rp.memory
    if not mem.ranks:
        return []
    def b(key: str, header: str, description: str) -> dpb.Column:   # "1.50 GiB" in the CLI and the panel; CSV: the integer
        return col(key, header, BYTES, style="human", description=description)

    stages = _table("memory_stages", "Peak memory by pipeline stage", [
        count("stage", "Stage"), col("ranks", "Ranks"),
        b("max_peak_allocated", "Max allocated", "The largest peak allocated of the stage's ranks"),
        count("max_allocated_rank", "On rank", description="The rank of the largest peak allocated"),
        b("min_peak_allocated", "Min allocated", "The smallest peak allocated of the stage's ranks"),
        b("mean_peak_allocated", "Mean allocated", "The mean peak allocated of the stage's ranks"),
        b("max_peak_reserved", "Max reserved", "The largest peak reserved of the stage's ranks"),
        count("max_reserved_rank", "On rank", description="The rank of the largest peak reserved")],
        [_note("memory.note", MEMORY_NOTE)])
    for st in mem.stages:
        _row(stages, [st.stage, ranks_text(st.ranks), st.max_peak_allocated, st.max_allocated_rank,
                      st.min_peak_allocated, st.mean_peak_allocated, st.max_peak_reserved, st.max_reserved_rank],
             str(st.stage), _rank_link(st.max_allocated_rank))
    ranks = _table("memory_ranks", "Peak memory by rank", [
        count("rank", "Rank"), count("stage", "Stage"), col("place", "Place"),
        b("peak_allocated", "Peak allocated", "The rank's largest peak allocated among its device places"),
        b("peak_reserved", "Peak reserved", "The peak reserved of that place")])
    for r in mem.ranks:
        _row(ranks, [r.rank, r.stage, r.place, r.peak_allocated, r.peak_reserved], str(r.rank), _rank_link(r.rank))
    return [stages, ranks]


SEQUENCES_NOTE = ("Tokens from the recorded input shapes (each micro-batch's first embedding ids, else the rows of "
                  "its first GEMM with a 2-D weight); a replica is the ranks of one data-parallel coordinate. "
                  "Compute: the median over its ranks per step. docs/flops.md.")
RANK_FLOPS_NOTE = ("Model FLOPs per step from the recorded shapes: forward GEMMs and attention, the backward counted as "
                   "twice the forward; achieved = FLOPs per step / step time.")


def _sequence_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """Tokens per data-parallel replica (RunParallel.sequences) and FLOPs per rank, where the traces
    record input shapes (crossrank/sequences.py); nothing otherwise."""
    out = []
    sb = rp.sequences
    if sb.present and sb.replicas:
        notes = [_note("sequences.note", SEQUENCES_NOTE)]
        if sb.method:
            notes.append(_sentence("sequences.cost", [
                f"Spread {sb.spread:.1%} (max / min - 1; CV {sb.cv:.1%}). With every replica at the mean "
                f"{sb.mean_tokens_per_step:,.0f} tokens per step the step would be ", duration(sb.cost_ns),
                f" shorter ({sb.method}): ", duration(sb.step_ns), " to ", duration(sb.balanced_step_ns), ". ",
                sb.assumption], "note"))
        elif sb.why_not:
            notes.append(_note("sequences.why_not", sb.why_not))
        t = _table("sequences", "Tokens per data-parallel replica", [
            col("dp", "DP", COUNT), col("ranks", "Ranks"), col("tokens_per_step", "Tokens/step", NUMBER, 0),
            col("tokens_per_micro_batch", "Tokens/micro-batch", NUMBER, 0), count("min_tokens", "Min"),
            count("max_tokens", "Max"), count("micro_batches", "Micro-batches"), dur("compute_ns", "Compute")], notes)
        for r in sb.replicas:
            _row(t, [r.dp if r.dp >= 0 else None, ranks_text(r.ranks), r.tokens_per_step, r.tokens_per_micro_batch,
                     r.min_micro_batch_tokens, r.max_micro_batch_tokens, r.micro_batches, r.compute_ns],
                 str(r.dp), _rank_link(r.ranks[0]) if r.ranks else "")
        out.append(t)
    if any(r.flops_per_step > 0 for r in rp.ranks):
        t = _table("rank_flops", "FLOPs by rank (from input shapes)", [
            count("rank", "Rank"), col("label", "Label", text_hidden=True), count("stage", "Stage"),
            col("tokens_per_step", "Tokens/step", NUMBER, 0), col("tflop_per_step", "TFLOP/step", NUMBER, 3),
            dur("step_ns", "Step"), col("achieved_tflops", "Achieved TFLOP/s", NUMBER, 1)],
            [_note("rank_flops.note", RANK_FLOPS_NOTE)])
        for r in rp.ranks:
            ach = r.flops_per_step / (r.step_time_ns * 1e-9) / 1e12 if r.step_time_ns else None
            _row(t, [r.rank, _label(r), r.pipeline_stage if r.pipeline_stage >= 0 else None, r.tokens_per_step,
                     r.flops_per_step / 1e12, r.step_time_ns, ach], r.worker, _rank_link(r.rank))
        out.append(t)
    return out


STAGE_LAYERS_NOTE = ("Per pipeline stage, each layer's forward compute kernels (launched below its Forward events) per "
                     "step, over the stage's ranks: the median, the fastest and the slowest rank (click the row to "
                     "open it). TFLOP/s = the median FLOPs / the median time; MFU = that / the GPU's peak. "
                     "docs/flops.md.")


def _stage_layers_table(rp: ppb.RunParallel) -> List[dpb.Table]:
    """The time per layer across ranks (RunParallel.layers, crossrank/layers.py); nothing without it."""
    lv = rp.layers
    if not lv.present:
        return []
    mfu = any(x.mfu > 0 for x in lv.layers)
    t = _table("stage_layers", "Time per layer by stage (forward kernels)", [
        count("stage", "Stage"), col("layer", "Layer"), count("ordinal", "#"), col("ranks", "Ranks"),
        col("gflop_per_step", "GFLOP/step", NUMBER, 1, description="forward FLOPs per step, median over the ranks"),
        dur("median_ns", "Median", description="forward compute kernel time per step, median over the ranks"),
        dur("min_ns", "Fastest", text_hidden=True), count("slowest_rank", "Slowest rank"),
        dur("slowest_ns", "Slowest"), col("slowest_ratio", "Slowest / median", NUMBER, 2),
        col("tflops", "TFLOP/s", NUMBER, 1),
        col("slowest_tflops", "Slowest TFLOP/s", NUMBER, 1, text_hidden=True)]
        + ([pct("mfu", "MFU")] if mfu else [])
        + [dur("comm_ns", "Comm kernels", description="communication kernels launched in its forward, median")],
        [_note("stage_layers.note", STAGE_LAYERS_NOTE)])
    for x in lv.layers:
        ratio = x.slowest_kernel_ns / x.median_kernel_ns if x.median_kernel_ns else None
        _row(t, [x.stage if x.stage >= 0 else None, x.name, x.ordinal, ranks_text(x.ranks), x.flops / 1e9,
                 x.median_kernel_ns, x.min_kernel_ns, x.slowest_rank, x.slowest_kernel_ns, ratio,
                 x.achieved_flops / 1e12 if x.median_kernel_ns else None,
                 x.slowest_achieved_flops / 1e12 if x.slowest_kernel_ns else None]
             + ([x.mfu if x.median_kernel_ns else None] if mfu else []) + [x.median_comm_kernel_ns],
             f"{x.stage}:{x.name}:{x.ordinal}", _rank_link(x.slowest_rank))
    return [t]


COMM_AXES_NOTE = ("Per communicator (by rule, docs/communication.md) and phase: the means per step over the ranks that "
                  "have it; hidden = while a compute kernel runs. Algbw: the communicator's bytes over its calls' time, "
                  "all ranks and phases ('-' when the traces record no shapes); busbw: NCCL's bus bandwidth, algbw x "
                  "2(n-1)/n for all-reduce, x (n-1)/n for all-gather / reduce-scatter / all-to-all, x 1 for broadcast "
                  "and send/recv, n the communicator's size in the topology ('-' when unknown). Nominal links per "
                  "direction: NVLink {nv:g} GB/s, network {net:g} GB/s.")
COMM_RANKS_NOTE = ("Exposed communication per step by communicator; Starved: the share of the span its most starved "
                   "stream sat idle waiting for the host's launches; Stalls: steps with a main-thread stretch over the "
                   "threshold without any CUDA call.")


def _comm_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """RunParallel.comm (crossrank/comm_ranks.py): per communicator and phase across ranks, and per rank."""
    from tb_paddle_profile.analysis.comm_axes import AXIS_LABELS, PHASE_LABELS
    nv, net = nominal_gbps()
    cv = rp.comm
    out = []
    if cv.axes:
        t = _table("comm_axes", "Communication by communicator and phase (per step, across ranks)", [
            col("axis", "Communicator"), col("phase", "Phase"), count("ranks", "Ranks"), dur("time_ns", "Time"),
            dur("hidden_ns", "Hidden"), dur("exposed_ns", "Exposed"), pct("hidden_share", "Hidden share"),
            dur("max_exposed_ns", "Max exposed"), count("max_exposed_rank", "On rank"),
            col("algbw_gbps", "Algbw GB/s", NUMBER, 2), col("busbw_gbps", "Busbw GB/s", NUMBER, 2),
            pct("of_nvlink", "Of NVLink"), pct("of_network", "Of network")],
            [_note("comm_axes.note", COMM_AXES_NOTE.format(nv=nv, net=net))])
        for a in cv.axes:
            bus = a.busbw / 1e9 if a.busbw else None
            _row(t, [AXIS_LABELS.get(a.axis, "-"), PHASE_LABELS.get(a.phase, "other"), a.ranks, a.time_ns,
                     a.hidden_ns, a.exposed_ns, _share(a.hidden_ns, a.time_ns), a.max_exposed_ns,
                     a.max_exposed_rank, a.algbw / 1e9 if a.algbw else None, bus,
                     bus / nv if bus else None, bus / net if bus else None], f"{a.axis}:{a.phase}",
                 _rank_link(a.max_exposed_rank))
        out.append(t)
    if cv.ranks:
        axes = sorted({x.axis for r in cv.ranks for x in r.axes})
        t = _table("comm_ranks", "Communication, launches and host stalls by rank (per step)", [
            count("rank", "Rank"), col("label", "Label", text_hidden=True)]
            + [dur(f"exposed_{AXIS_LABELS.get(a, 'other').lower().replace(' ', '_')}",
                   f"Exposed {AXIS_LABELS.get(a, 'other')}") for a in axes]
            + [pct("starved_share", "Starved"), count("starved_stream", "Stream"), dur("launch_p50_ns", "Launch p50"),
               count("max_queue", "Max queue"), col("stalls", "Stalls"), dur("stalled_ns", "Stalled")],
            [_note("comm_ranks.note", COMM_RANKS_NOTE)])
        labels = {r.rank: _label(r) for r in rp.ranks}
        for r in cv.ranks:
            ex: Dict[int, int] = {}
            for x in r.axes:
                ex[x.axis] = ex.get(x.axis, 0) + x.exposed_ns
            starved = r.starved_stream >= 0
            _row(t, [r.rank, labels.get(r.rank, "")] + [ex.get(a, 0) for a in axes]
                 + [r.starved_share if starved else None, r.starved_stream if starved else None,
                    r.launch_p50_ns if starved else None, r.max_queue if starved else None,
                    f"{r.stall_steps}/{r.steps}", r.stalled_ns_per_step], str(r.rank), _rank_link(r.rank))
        out.append(t)
    return out
