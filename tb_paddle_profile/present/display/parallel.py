"""The display model of the run views (display.proto), built once from the cross-rank messages:

* ``parallel_display(run_parallel)`` — view "parallel": every table, sentence and note of the
  hybrid-parallel analysis that ``tb-paddle-profile parallel RUN`` prints (render/parallel_text.py)
  and the Parallel panel shows, plus the panel's own tables (named ranks, findings, outliers:
  Table.text_hidden) and sentences (costs, coverage, rank chips: keys the text layout does not print);
* ``distributed_display(run_distributed)`` — view "distributed": every rank's Distribution Summary
  side by side (the Distributed panel's table) and per step.

The analysis writes its sentences with times as "{ns:N}" tokens (analysis/crossrank/advice.py
TIME_TOKEN) and ranks as "rank N" or the rank's label; ``spans()`` turns them into typed spans in one
place: a duration span per token (printed "12.34 ms" in the reader's unit) and a rank span per
reference to a rank of the run (Span.text: the rank's label). Table keys and column keys:
docs/display.md.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Sequence

from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.peers import role
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import (
    BYTES,
    COUNT,
    DURATION,
    MISSING,
    NUMBER,
    PERCENT,
    RATIO,
    TEXT,
    fmt,
    lit,
    num,
    rank,
    sentence,
    val,
)

# The panel's tag of a cause (the verdict's and the findings' `cause` ids).
CAUSES = {
    "device_compute": "device compute: check its GPU",
    "host_dataloader": "host: its data loader",
    "host": "host: check its CPU side",
    "launch_overhead": "launch overhead",
    "memcpy": "memcpy",
    "pipeline": "pipeline",
    "sequence_lengths": "data: sequence lengths across DP ranks",
}
CATEGORY_TITLE = {"anomaly": "Anomaly", "structure": "Structure", "evidence": "Evidence"}
CATEGORY_LEVEL = {"anomaly": "warning", "structure": "info", "evidence": "note"}
# How many outlier ranks the panel lists.
OUTLIERS = 8
# Rank lists printed in full up to this many ranks, as ranges beyond.
RANKS_SHOWN = 16


def cause_text(cause: str) -> str:
    return CAUSES.get(cause, cause.replace("_", " "))


def kind_label(kind: int) -> str:
    return KIND_LABELS.get(kind, "other")


def ranks_text(ranks: Iterable[int], limit: int = RANKS_SHOWN) -> str:
    """"-" for none, "0,1,2" up to `limit` ranks, else runs of consecutive ranks as ranges ("0-127,256")."""
    ranks = list(ranks)
    if not ranks:
        return "-"
    if len(ranks) <= limit:
        return ",".join(map(str, ranks))
    s = sorted(ranks)
    out, a, b = [], s[0], s[0]
    for x in s[1:] + [None]:
        if x is not None and x == b + 1:
            b = x
            continue
        out.append(str(a) if a == b else f"{a}-{b}")
        if x is not None:
            a = b = x
    return ",".join(out)


# ------------------------------------------------------------------ sentences of the analysis

# a rank number is not a share ("the least covered rank 93%", "rank 93.5%")
_TOKEN = re.compile(r"\{ns:(-?[0-9]+)\}|\b([Rr])ank ([0-9]+)\b(?![0-9%]|\.[0-9])")


def duration(ns) -> dpb.Span:
    """A time inside a sentence: "12.34 ms" in the reader's unit."""
    return val(ns, DURATION, style="unit")


def spans(text_: str, labels: Optional[Dict[int, str]] = None) -> List[dpb.Span]:
    """The analysis's text as typed spans: each "{ns:N}" a duration, each "rank N" of a rank in
    `labels` a rank span printing the rank's label (an occurrence already written as that label is
    taken whole; "Rank N" keeps its capital)."""
    labels = labels or {}
    out: List[dpb.Span] = []
    pos = 0
    for m in _TOKEN.finditer(text_):
        if m.start() < pos:
            continue
        if m.group(1) is not None:
            span = duration(int(m.group(1)))
            end = m.end()
        else:
            r = int(m.group(3))
            if r not in labels:
                continue
            label = labels[r]
            end = m.end()
            if label and text_.startswith(label[1:], m.start() + 1):
                end = m.start() + len(label)
            shown = (m.group(2) + label[1:]) if label else m.group(0)
            span = rank(r, shown)
        if m.start() > pos:
            out.append(lit(text_[pos:m.start()]))
        out.append(span)
        pos = end
    if pos < len(text_):
        out.append(lit(text_[pos:]))
    return out


def _sentence(key: str, parts: Sequence, level: str = "info", title: str = "") -> dpb.Sentence:
    return sentence(parts, key=key, level=level, title=title)


# ------------------------------------------------------------------ columns


def col(key: str, header: str, kind: int = TEXT, digits: int = 0, style: str = "", unit: str = "",
        text_hidden: bool = False, panel_hidden: bool = False, description: str = "") -> dpb.Column:
    return dpb.Column(key=key, header=header, format=fmt(kind, unit, digits, style), text_hidden=text_hidden,
                      panel_hidden=panel_hidden, description=description)


def dur(key: str, header: str, **kw) -> dpb.Column:
    return col(key, header, DURATION, **kw)


def pct(key: str, header: str, digits: int = 1, **kw) -> dpb.Column:
    return col(key, header, PERCENT, digits, **kw)


def count(key: str, header: str, **kw) -> dpb.Column:
    return col(key, header, COUNT, **kw)


def _table(key: str, title: str, columns: List[dpb.Column], notes: Sequence[dpb.Sentence] = (),
           text_hidden: bool = False, empty: str = "") -> dpb.Table:
    t = dpb.Table(key=key, title=title, text=dpb.TextLayout(style="plain"), text_hidden=text_hidden, empty=empty)
    t.columns.extend(columns)
    t.notes.extend(notes)
    return t


def _row(t: dpb.Table, cells: Sequence, id: str = "", link: str = "") -> dpb.Row:
    """A row from its cells: a number, None (missing), a str (text) or a Cell."""
    row = t.rows.add(id=id, link=link)
    add = row.cells.add
    for c in cells:
        if c is None:
            add(missing=True)
        elif isinstance(c, str):
            add(text=c)
        elif isinstance(c, dpb.Cell):
            add().CopyFrom(c)
        else:
            add(number=c)
    return row


def _share(part, whole) -> dpb.Cell:
    return num(part / whole) if whole else MISSING


def _rank_link(r: int) -> str:
    return f"rank:{r}" if r >= 0 else ""


def _note(key: str, s: str) -> dpb.Sentence:
    return _sentence(key, [s], "note")


# ------------------------------------------------------------------ the parallel view

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


def _label(r: ppb.RankParallel) -> str:
    return r.label or r.worker


def _labels(rp: ppb.RunParallel) -> Dict[int, str]:
    return {r.rank: (r.label or (f"rank {r.rank}" if r.worker == f"rank{r.rank}" else f"rank {r.rank} · {r.worker}"))
            for r in rp.ranks}


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


COMM_AXES_NOTE = ("Per communicator (by rule, docs/communication.md) and phase: the means per step over the ranks that "
                  "have it; hidden = while a compute kernel runs. Algbw: the communicator's bytes over its calls' time, "
                  "all ranks and phases ('-' when the traces record no shapes).")
COMM_RANKS_NOTE = ("Exposed communication per step by communicator; Starved: the share of the span its most starved "
                   "stream sat idle waiting for the host's launches; Stalls: steps with a main-thread stretch over the "
                   "threshold without any CUDA call.")


def _comm_tables(rp: ppb.RunParallel) -> List[dpb.Table]:
    """RunParallel.comm (crossrank/comm_ranks.py): per communicator and phase across ranks, and per rank."""
    from tb_paddle_profile.analysis.comm_axes import AXIS_LABELS, PHASE_LABELS
    cv = rp.comm
    out = []
    if cv.axes:
        t = _table("comm_axes", "Communication by communicator and phase (per step, across ranks)", [
            col("axis", "Communicator"), col("phase", "Phase"), count("ranks", "Ranks"), dur("time_ns", "Time"),
            dur("hidden_ns", "Hidden"), dur("exposed_ns", "Exposed"), pct("hidden_share", "Hidden share"),
            dur("max_exposed_ns", "Max exposed"), count("max_exposed_rank", "On rank"),
            col("algbw_gbps", "Algbw GB/s", NUMBER, 2)], [_note("comm_axes.note", COMM_AXES_NOTE)])
        for a in cv.axes:
            _row(t, [AXIS_LABELS.get(a.axis, "-"), PHASE_LABELS.get(a.phase, "other"), a.ranks, a.time_ns,
                     a.hidden_ns, a.exposed_ns, _share(a.hidden_ns, a.time_ns), a.max_exposed_ns,
                     a.max_exposed_rank, a.algbw / 1e9 if a.algbw else None], f"{a.axis}:{a.phase}",
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
            ex = {}
            for x in r.axes:
                ex[x.axis] = ex.get(x.axis, 0) + x.exposed_ns
            starved = r.starved_stream >= 0
            _row(t, [r.rank, labels.get(r.rank, "")] + [ex.get(a, 0) for a in axes]
                 + [r.starved_share if starved else None, r.starved_stream if starved else None,
                    r.launch_p50_ns if starved else None, r.max_queue if starved else None,
                    f"{r.stall_steps}/{r.steps}", r.stalled_ns_per_step], str(r.rank), _rank_link(r.rank))
        out.append(t)
    return out


def straggler_cause(s: ppb.Straggler) -> str:
    """A named rank's cause as the panel tags it ("host: its data loader")."""
    return (cause_text(s.cause) if s.cause else "longer compute: check its GPU" if s.longer_compute
            else "late arrival, normal compute: check its host")


# The banner's words for a cause: what of the rank is slower than its role peers' (the part a figure measures).
BANNER_SUBJECT = {
    "host_dataloader": "its data loader",
    "host": "its CPU side",
    "device_compute": "its GPU compute",
    "launch_overhead": "its kernel launches",
    "memcpy": "its memory copies",
}
BANNER_PHRASE = {
    "pipeline": "held up by the pipeline",
    "sequence_lengths": "its sequences are longer than its DP peers'",
}


def banner_cause(rp: ppb.RunParallel, s: ppb.Straggler) -> List:
    """A named rank's cause as a sentence's clause: "its data loader takes 6.10 ms more per step than its role
    peers'" (the excess of the finding of that cause on that rank alone, where there is one)."""
    cause = s.cause or ("device_compute" if s.longer_compute else "")
    subject = BANNER_SUBJECT.get(cause)
    if subject is None:
        return [BANNER_PHRASE.get(cause, cause_text(cause) if cause else
                                  "it arrives late with a normal compute time (check its host)")]
    excess = next((f.excess_ns for f in rp.findings if list(f.ranks) == [s.rank] and f.cause == cause
                   and f.excess_ns > 0), 0)
    if not excess and cause == "device_compute" and s.compute_ns > s.peer_compute_ns:
        excess = s.compute_ns - s.peer_compute_ns
    if excess:
        return [f"{subject} takes ", duration(excess), " more per step than its role peers'"]
    return [f"{subject} is slower than its role peers'"]


def _named(v: ppb.StragglerVerdict, i: int) -> bool:
    """Whether the verdict names its i-th straggler in bold: not an uncertain verdict, nor an absorbed
    stall (but the costliest rank of a verdict that found one: what the job pays most for)."""
    s = v.stragglers[i]
    return not v.uncertain and (not s.absorbed or (v.found and i == 0))


def rank_banner(rp: ppb.RunParallel, worker: str) -> dpb.View:
    """View "rank_banner": what the run's cross-rank analysis says of one rank, for the top of its pages
    (Overview, Operators, Kernels, Memory): at most one sentence.

    * a straggler the verdict names: "The straggler of this run (span S): <cause (banner_cause)>; it costs
      the job <t> per step" (level warning);
    * a rank the verdict lists without naming it (an uncertain verdict, a stall the pipeline absorbs): the
      same facts at level note;
    * a role peer of a named straggler (the same pipeline stage and MP index, both known, another rank):
      "A role peer of rank N, the straggler of this run: ..." with rank N a rank span (a link);
    * else nothing (no sentence)."""
    view = dpb.View(key="rank_banner", title="This rank in the run's analysis")
    v = rp.straggler
    me = next((r for r in rp.ranks if r.worker == worker), None)
    if me is None:
        return view
    span = f" (span {rp.span})" if rp.span else ""

    def cost(s: ppb.Straggler) -> List:
        parts = banner_cause(rp, s) + ["; it costs the job ", duration(s.job_cost_ns), " per step"]
        return parts + [" (mostly absorbed by the pipeline)" if s.absorbed else "", "."]

    for i, s in enumerate(v.stragglers):
        if s.worker == worker or (not s.worker and s.rank == me.rank):
            if _named(v, i):
                view.sentences.append(_sentence("rank_banner.straggler", [f"The straggler of this run{span}: "]
                                                + cost(s), "warning", "Straggler"))
            else:
                why = "an uncertain verdict" if v.uncertain else "not the run's straggler"
                view.sentences.append(_sentence("rank_banner.named", [f"Named by this run's verdict{span} ({why}): "]
                                                + cost(s), "note", "Unlike its role peers"))
            return view
    by_rank = {r.rank: r for r in rp.ranks}
    for i, s in enumerate(v.stragglers):
        it = by_rank.get(s.rank)
        if it is None or not _named(v, i) or it.rank == me.rank:
            continue
        if role(it) is not None and role(it) == role(me):
            where = (f"stage {me.pipeline_stage}, " if me.pipeline_stage >= 0 else "") + f"MP index {me.mp}"
            view.sentences.append(_sentence("rank_banner.peer", [
                "A role peer of ", rank(s.rank, f"rank {s.rank}"), f" ({where}), the straggler of this run{span}: "]
                + cost(s), "info", "Role peer"))
            return view
    return view


def _stragglers_table(rp: ppb.RunParallel, labels: Dict[int, str]) -> dpb.Table:
    t = _table("stragglers", "Named ranks", [
        count("rank", "Rank"), col("label", "Label"), col("cause", "Cause"), col("gpu", "GPU cause"),
        dur("job_cost_ns", "Costs the job"), col("absorbed", "Absorbed"), dur("compute_ns", "Compute"),
        dur("peer_compute_ns", "Role peers' compute"), pct("compute_excess", "(more)", 0),
        count("last_arrivals", "Arrived last"), count("matched", "Matched")], text_hidden=True)
    for s in rp.straggler.stragglers:
        gpu = s.cause == "device_compute" if s.cause else s.longer_compute
        tag = straggler_cause(s)
        _row(t, [s.rank, (s.label or labels.get(s.rank, f"rank {s.rank}")), tag, ("1" if gpu else ""),
                 s.job_cost_ns, ("mostly absorbed" if s.absorbed else ""), s.compute_ns,
                 s.peer_compute_ns, s.compute_excess, s.last_arrivals, s.matched],
             s.worker or str(s.rank), _rank_link(s.rank))
    return t


def _findings_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("findings", "Findings", [
        col("category", "Category"), col("category_title", "Category"), col("rule", "Rule"), col("cause", "Cause"),
        count("stage", "Stage"), dur("cost_ns", "Cost to the job"), dur("excess_ns", "Excess"),
        col("absorbed", "Absorbed"), col("ranks", "Ranks")], text_hidden=True)
    for i, f in enumerate(rp.findings):
        _row(t, [f.category, (CATEGORY_TITLE.get(f.category, f.category)), f.rule,
                 (cause_text(f.cause) if f.cause else ""), f.stage if f.stage >= 0 else None,
                 f.cost_ns if f.cost_ns > 0 else None, f.excess_ns if f.excess_ns > 0 else None,
                 ("mostly absorbed" if f.absorbed else ""), ranks_text(f.ranks)], f"finding.{i}",
             _rank_link(f.ranks[0]) if len(f.ranks) == 1 else "")
    return t


def _outliers_table(rp: ppb.RunParallel) -> dpb.Table:
    """The ranks least like their peers: named ranks first, then by deviation (the analysis's
    measure) where any rank has one, else by the net wait they cause; at most OUTLIERS."""
    named = {s.rank for s in rp.straggler.stragglers}
    by_dev = any(r.deviation != 0 for r in rp.ranks)
    score = (lambda r: r.deviation) if by_dev else (lambda r: r.caused_wait_ns - r.wait_ns)
    rows = [(r, score(r)) for r in rp.ranks if score(r) > 0 or r.rank in named]
    rows.sort(key=lambda x: (x[0].rank not in named, -x[1]))
    measure = pct("deviation", "Deviation") if by_dev else dur("net_caused_wait_ns", "Net caused wait")
    t = _table("outliers", "Outlier ranks", [count("rank", "Rank", panel_hidden=True), col("label", "Rank"), measure,
                                             dur("step_ns", "Step"), col("named", "Named", panel_hidden=True)],
               [_note("outliers.note", "largest excess over the rank's role peers, as a share of the median step"
                      if by_dev else "time its peers wait for it net of its own waits, per step")],
               text_hidden=True, empty="No rank stands out from its peers.")
    for r, s in rows[:OUTLIERS]:
        _row(t, [r.rank, _label(r), s, r.step_time_ns, ("1" if r.rank in named else "")],
             r.worker, _rank_link(r.rank))
    return t


def _advice_triggers_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table("advice_triggers", "Advice triggers", [
        count("advice", "Advice"), col("rule", "Rule"), col("metric", "Metric"), col("who", "Where"),
        count("rank", "Rank"), col("value", "Value", NUMBER, style="g"),
        col("threshold", "Threshold", NUMBER, style="g"),
        col("unit", "Unit")], text_hidden=True)
    for i, a in enumerate(rp.advice):
        for tr in a.triggers:
            _row(t, [i, a.rule, tr.metric, (f"rank {tr.rank}" if tr.rank >= 0 else "all ranks"),
                     tr.rank if tr.rank >= 0 else None, tr.value, tr.threshold, tr.unit],
                 f"{i}:{tr.metric}", _rank_link(tr.rank))
    return t


def _coverage(rp: ppb.RunParallel):
    """The matching's coverage: the verdict's own figures, else the matching totals; None when unknown."""
    v = rp.straggler
    if v.coverage > 0 or v.min_rank_coverage > 0:
        return v.coverage, v.min_rank_coverage
    m = rp.matching
    if m.instances > 0:
        covered = [r.coverage for r in rp.ranks if r.coverage > 0]
        return m.matched_instances / m.instances, (min(covered) if covered else None)
    return None


def _rank_chips(key: str, ranks: Sequence[int], labels: Dict[int, str]) -> dpb.Sentence:
    parts: List = []
    for i, r in enumerate(ranks):
        if i:
            parts.append(", ")
        parts.append(rank(r, labels.get(r, f"rank {r}")))
    return _sentence(key, parts)


def _trigger_value(x: float, unit: str) -> dpb.Span:
    return val(x, PERCENT, digits=1) if "fraction" in unit else val(x, NUMBER, style="g")


def _sentences(rp: ppb.RunParallel, labels: Dict[int, str], time_unit: str) -> List[dpb.Sentence]:
    out: List[dpb.Sentence] = []
    steps = list(rp.steps)
    step_txt = (f"steps {steps[0]}..{steps[-1]}" if len(steps) > 1 else f"step {steps[0]}") if steps else "no steps"
    span = f", span {rp.span}" if rp.span else ""
    out.append(_sentence("headline", [f"Hybrid-parallel analysis of {rp.run or 'the run'}{span}: ",
                                      val(len(rp.ranks), COUNT), f" ranks, {step_txt}."]))
    out.append(_sentence("units", [f"Times in {time_unit}, per step (means over the rank's steps)."]))

    v = rp.straggler
    level = "warning" if v.found else ("note" if v.uncertain or v.stragglers else "good")
    out.append(_sentence("verdict", spans(v.summary, labels), level, "Straggler verdict"))
    for i, s in enumerate(v.stragglers):
        named = _named(v, i)
        out.append(_sentence("verdict.straggler", spans(s.reason, labels), "warning" if named else "note",
                             (s.label or labels.get(s.rank, "")) if named else ""))
    ev = [f"({v.rule} Evidence: ", val(v.coverage, PERCENT, digits=1),
          " of the instances matched, the least covered rank ", val(v.min_rank_coverage, PERCENT, digits=1),
          f"{'; UNCERTAIN' if v.uncertain else ''}.)"]
    out.append(_sentence("verdict.evidence", ev, "warning" if v.uncertain else "note"))
    cov = _coverage(rp)
    if cov is not None:
        parts = ["coverage ", val(cov[0], PERCENT, digits=1)]
        if cov[1] is not None and cov[1] >= 0:
            parts += [" · lowest rank ", val(cov[1], PERCENT, digits=1)]
        out.append(_sentence("verdict.coverage", parts, "warning" if v.uncertain else "note"))

    for f in rp.findings:
        key = f"finding.{f.rule}"
        tag = f"[{f.category}: {f.rule}{', ' + f.cause if f.cause else ''}]"
        out.append(_sentence(key, spans(f.text, labels), CATEGORY_LEVEL.get(f.category, "info"), tag))
        if f.cost_ns > 0:
            cost = ["costs ", duration(f.cost_ns), " / step"]
        else:
            cost = [] if f.category == "evidence" else ["no cost to the job"]
        if f.absorbed:
            cost += [" (mostly absorbed)"]
        if cost:
            out.append(_sentence(key + ".cost", cost, CATEGORY_LEVEL.get(f.category, "info")))
        if f.excess_ns > 0:
            out.append(_sentence(key + ".excess", ["Excess on the rank itself: ", duration(f.excess_ns),
                                                   " / step against its role peers."], "note"))
        if f.ranks:
            out.append(_rank_chips(key + ".ranks", f.ranks, labels))

    if not rp.advice:
        out.append(_sentence("advice.none", ["No rule fired."], "good"))
    for a in rp.advice:
        key = f"advice.{a.rule}"
        out.append(_sentence(key, spans(a.text, labels), "warning", a.title))
        for tr in a.triggers:
            # a citation: "rank 5" (a rank span, linked), not the whole label
            who = rank(tr.rank, f"rank {tr.rank}") if tr.rank >= 0 else lit("all ranks")
            out.append(_sentence(key + ".trigger", [f"[{a.rule}] {tr.metric} (", who, "): ",
                                                    _trigger_value(tr.value, tr.unit), " >= threshold ",
                                                    _trigger_value(tr.threshold, tr.unit)], "note"))
        if a.ranks:
            out.append(_rank_chips(key + ".ranks", a.ranks, labels))

    m = rp.matching
    out.append(_sentence("matching", ["Matching: ", val(m.matched_instances, COUNT), " of ", val(m.instances, COUNT),
                                      f" communication instances matched across ranks ({m.method})."], "note"))
    for n in rp.notes:
        out.append(_sentence("note", ["Note: "] + spans(n, labels), "note"))
    return out


def parallel_display(rp: ppb.RunParallel, time_unit: str = "ms") -> dpb.Display:
    """The Display of the hybrid-parallel analysis: one view "parallel" (keys in docs/display.md)."""
    labels = _labels(rp)
    view = dpb.View(key="parallel", title="Hybrid-parallel analysis")
    view.sentences.extend(_sentences(rp, labels, time_unit))
    tables = [_ranks_table(rp),
              _matrix_table(rp, "step_time", "Step time by rank and step", rp.step_time),
              _matrix_table(rp, "exposed_comm_by_step", "Exposed communication by rank and step",
                            rp.exposed_communication),
              _kinds_table(rp), _rank_kinds_table(rp)]
    if not all(r.timeline == pb.TIMELINE_HOST for r in rp.ranks):
        tables.append(_host_table(rp))
    tables.append(_waits_table(rp))
    tv = rp.topology
    if tv.groups or tv.dp or tv.pp or tv.mp:
        tables.append(_topology_table(tv))
    if rp.clocks:
        tables.append(_clocks_table(rp))
    tables += _pipeline_tables(rp)
    tables += _memory_tables(rp)
    tables += _sequence_tables(rp)
    tables += _comm_tables(rp)
    tables += [_stragglers_table(rp, labels), _findings_table(rp), _outliers_table(rp), _advice_triggers_table(rp)]
    view.tables.extend(tables)
    out = dpb.Display(time_unit=time_unit)
    out.views.append(view)
    return out


# ------------------------------------------------------------------ the distributed view

DISTRIBUTED_NOTE = ("Ratio = time / total step time of the rank. Other = step time − (communication ∪ computation).")
NO_COMMUNICATION = ("No rank of this span recorded communication (Paddle prints no Distribution Summary): every step "
                    "is computation or the rest.")
_STATES = {v: k.lower() for k, v in ppb.LoadState.items()}


def _state_text(r: ppb.RankDistributed) -> str:
    s = _STATES.get(r.state, "unknown")
    return f"{s}: {r.error}" if r.error else s


def _fallback_label(worker: str, r: int) -> str:
    if r >= 0:
        return f"rank {r}" if worker == f"rank{r}" else f"rank {r} · {worker}"
    return worker


def distributed_display(rd: ppb.RunDistributed, labels: Optional[Dict[str, str]] = None,
                        time_unit: str = "ms") -> dpb.Display:
    """The Display of the Distributed view: every rank's Distribution Summary side by side (table
    "ranks") and per step ("steps"). `labels`: the ranks' labels by worker (the run list's)."""
    labels = labels or {}
    view = dpb.View(key="distributed", title="Distributed")
    ranks = _table("ranks", "Ranks", [
        count("rank", "Rank"), col("label", "Label"), col("worker", "Worker", text_hidden=True, panel_hidden=True),
        col("state", "State"),
        dur("total_ns", "ProfileStep"), dur("comm_ns", "Communication"), col("comm_ratio", "Ratio (%)", RATIO, 2),
        dur("comp_ns", "Computation"), col("comp_ratio", "Ratio (%)", RATIO, 2), dur("overlap_ns", "Overlap"),
        col("overlap_ratio", "Ratio (%)", RATIO, 2), dur("other_ns", "Other"), count("steps", "Steps")],
        [_note("ranks.note", DISTRIBUTED_NOTE)])
    steps = _table("steps", "Per step", [
        count("rank", "Rank"), col("label", "Label", text_hidden=True), count("step", "Step"),
        dur("total_ns", "Step time"), dur("comm_ns", "Communication"), dur("comp_ns", "Computation"),
        dur("overlap_ns", "Overlap"), dur("other_ns", "Other")])
    any_comm = False
    for r in rd.ranks:
        label = labels.get(r.worker) or _fallback_label(r.worker, r.rank)
        ready = r.state == ppb.READY
        d = r.distributed
        total, comm, comp, overlap = r.total_time_ns, d.communication_ns, d.computation_ns, d.overlap_ns
        ratio = (lambda x: num(x / total if total else 0.0))
        nums = ([num(total), num(comm), ratio(comm), num(comp), ratio(comp), num(overlap), ratio(overlap),
                 num(total - (comp + comm - overlap)), num(len(r.steps))] if ready else [MISSING] * 9)
        _row(ranks, [r.rank if r.rank >= 0 else None, label, r.worker, _state_text(r)] + nums,
             r.worker, _rank_link(r.rank))
        if not ready:
            continue
        any_comm = any_comm or d.present
        for s in d.steps:
            length = s.range.end_ns - s.range.start_ns
            _row(steps, [r.rank if r.rank >= 0 else None, label, s.step, length,
                         s.communication_ns, s.computation_ns, s.overlap_ns,
                         length - (s.computation_ns + s.communication_ns - s.overlap_ns)],
                 f"{r.worker}:{s.step}", _rank_link(r.rank))
    if not any_comm and any(r.state == ppb.READY for r in rd.ranks):
        view.sentences.append(_sentence("no_communication", [NO_COMMUNICATION], "info"))
    view.tables.extend([ranks, steps])
    out = dpb.Display(time_unit=time_unit)
    out.views.append(view)
    return out


def display_of(view: str, message, time_unit: str = "ms", labels: Optional[Dict[str, str]] = None) -> dpb.Display:
    """The Display of a run view by its key: "parallel" from a RunParallel, "distributed" from a RunDistributed."""
    if view == "parallel":
        return parallel_display(message, time_unit)
    if view == "distributed":
        return distributed_display(message, labels, time_unit)
    raise KeyError(f"no run view {view!r} (parallel, distributed)")
