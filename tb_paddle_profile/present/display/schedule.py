"""The display model of the pipeline schedule and the MFU (schedule.proto → display.proto), built once
for the CLI (`tb-paddle-profile whatif`) and the What-if panel (display/whatif.py puts them in its view):

* ``schedule_tables(sched)``: ``schedule_stages`` (per stage, mean per step: slots, span, fill/drain,
  waiting, the worst pipeline), ``schedule_bubbles`` (idle by kind), ``schedule_slots`` (the drawn
  pipelines' slots; panels and CSV only);
* ``mfu_tables(mfu)``: ``mfu`` (one row: the job), ``mfu_ranks`` (per rank; panels and CSV only beyond
  RANKS_PRINTED ranks);
* ``schedule_sentences(sched, mfu)``: ``schedule.kind``, ``schedule.bubble``, ``mfu``;

each in its section of the view (Sentence.section, Table.section): "schedule" (the slots as part "list")
or "mfu";
* ``schedule_view(sched, mfu)``: all of them as one View (key "schedule").

Definitions: docs/pipeline-schedule.md.
"""

from __future__ import annotations

from typing import List, Optional

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import schedule_pb2 as spb
from tb_paddle_profile.present.display.cells import NUMBER, PERCENT, lit, placed, rank, sentence, val
from tb_paddle_profile.present.display.parallel_common import (
    _note,
    _row,
    _table,
    col,
    count,
    dur,
    duration,
    pct,
    ranks_text,
)

RANKS_PRINTED = 16
KIND_TEXT = {
    spb.BUBBLE_KIND_FILL_DRAIN: "fill/drain",
    spb.BUBBLE_KIND_WAIT: "waiting",
    spb.BUBBLE_KIND_UNSPECIFIED: "idle (not split)",
}
PHASE_TEXT = {spb.SCHEDULE_PHASE_FORWARD: "F", spb.SCHEDULE_PHASE_BACKWARD: "B"}


def _rank_span(r: int) -> dpb.Span:
    return rank(r, f"rank {r}")


def _pipelined(s: spb.PipelineSchedule) -> bool:
    return s.kind not in (spb.SCHEDULE_KIND_UNSPECIFIED, spb.SCHEDULE_KIND_NOT_PIPELINED) and len(s.stage_totals) > 0


# ------------------------------------------------------------------ tables


def schedule_tables(s: spb.PipelineSchedule) -> List[dpb.Table]:
    if not _pipelined(s):
        return []
    stages = _table(
        "schedule_stages",
        f"Pipeline schedule per stage: {s.name} (mean per step)",
        [
            count("stage", "Stage"),
            dur("forward_ns", "Forward"),
            dur("backward_ns", "Backward"),
            dur("slots_ns", "Slots"),
            dur("span_ns", "Span"),
            dur("fill_drain_ns", "Fill/drain"),
            dur("wait_ns", "Waiting"),
            pct("bubble_ratio", "Bubble (of span)"),
            count("worst_rank", "Worst rank"),
            dur("worst_wait_ns", "Its waiting"),
            count("worst_pipeline", "Worst pipeline", text_hidden=True),
        ],
        [_note("schedule.definition", s.bubble_definition)],
    )
    for t in s.stage_totals:
        _row(
            stages,
            [
                t.stage,
                t.forward_ns,
                t.backward_ns,
                t.slots_ns,
                t.span_ns,
                t.fill_drain_ns,
                t.wait_ns,
                t.bubble_ratio,
                t.worst_rank,
                t.worst_wait_ns,
                t.worst_pipeline,
            ],
            f"stage:{t.stage}",
            f"rank:{t.worst_rank}",
        )

    bubbles = _table(
        "schedule_bubbles",
        "Pipeline bubbles by kind (per stage and step)",
        [
            col("kind", "Kind"),
            dur("mean_ns", "Mean"),
            pct("share", "Of span"),
            count("worst_stage", "Worst stage"),
            dur("worst_ns", "Worst stage's"),
            dur("theory_ns", "Theory"),
        ],
        [
            _note(
                "schedule.theory",
                "Theory = (pp − 1)·(tf + tb), the textbook bubble of a balanced pipeline, with tf "
                "and tb the mean forward and backward slots (interleaved: a chunk's slot, so this is "
                "the textbook's (pp − 1)·(tf + tb) / V of whole stages).",
            )
        ],
    )
    span = sum(t.span_ns for t in s.stage_totals) or 1
    rows = [("fill/drain", "fill_drain_ns", s.theory_fill_drain_ns), ("waiting", "wait_ns", None)]
    for name, field, theory in rows:
        vals = [getattr(t, field) for t in s.stage_totals]
        w = max(range(len(vals)), key=lambda i: (vals[i], -i))
        _row(
            bubbles,
            [name, sum(vals) / len(vals), sum(vals) / span, s.stage_totals[w].stage, vals[w], theory],
            name.replace("/", "_"),
        )
    idle = [t.fill_drain_ns + t.wait_ns for t in s.stage_totals]
    w = max(range(len(idle)), key=lambda i: (idle[i], -i))
    total = _row(
        bubbles, ["idle", sum(idle) / len(idle), sum(idle) / span, s.stage_totals[w].stage, idle[w], None], "idle"
    )
    total.role = dpb.ROW_TOTAL

    slots = _table(
        "schedule_slots",
        "Pipeline slots (drawn pipelines)",
        [
            count("pipeline", "Pipeline"),
            count("stage", "Stage"),
            count("rank", "Rank"),
            count("step", "Step"),
            col("phase", "Phase"),
            count("micro_batch", "Micro-batch"),
            count("chunk", "Chunk"),
            dur("start_ns", "Start (from the step's span)"),
            dur("duration_ns", "Duration"),
            dur("busy_ns", "Kernels"),
        ],
        text_hidden=True,
    )
    for p in s.pipelines:
        for m in p.stage_steps:
            for k, sl in enumerate(m.slots):
                _row(
                    slots,
                    [
                        p.index,
                        m.stage,
                        m.rank,
                        m.step,
                        PHASE_TEXT.get(sl.phase, "?"),
                        sl.micro_batch,
                        sl.chunk,
                        sl.start_unix_ns - m.start_unix_ns,
                        sl.end_unix_ns - sl.start_unix_ns,
                        sl.busy_ns,
                    ],
                    f"{p.index}:{m.step}:{m.stage}:{k}",
                    f"rank:{m.rank}",
                )
    return placed([stages, bubbles], "schedule") + placed([slots], "schedule", "list")


STAGES_NOTE = (
    "From the FLOPs the traces' input shapes tell (forward + twice the forward for the backward; "
    "docs/flops.md), not from --params: each rank's own FLOPs per step over its step time x peak, the mean "
    "over the stage's ranks."
)


def _stage_table(m: spb.Mfu) -> dpb.Table:
    t = _table(
        "mfu_stages",
        "MFU per pipeline stage (from input shapes)",
        [
            count("stage", "Stage"),
            col("ranks", "Ranks"),
            col("tflop_per_step", "TFLOP per step", NUMBER, 3),
            dur("step_ns", "Step time"),
            col("achieved_tflops", "Achieved TFLOP/s", NUMBER, 1),
            col("peak_tflops", "Peak TFLOP/s", NUMBER, 1),
            pct("mfu", "MFU"),
        ],
        [_note("mfu_stages.note", STAGES_NOTE)],
    )
    for s in m.stages:
        ach = s.flops_per_step / (s.step_time_ns * 1e-9) / 1e12 if s.step_time_ns else None
        _row(
            t,
            [
                s.stage,
                ranks_text(s.ranks),
                s.flops_per_step / 1e12,
                s.step_time_ns,
                ach,
                s.peak_flops / 1e12 if s.peak_flops else None,
                s.mfu if s.peak_flops else None,
            ],
            str(s.stage),
            f"rank:{s.ranks[0]}" if s.ranks else "",
        )
    return t


def mfu_tables(m: spb.Mfu) -> List[dpb.Table]:
    stages = [_stage_table(m)] if m.stages else []
    if not m.applicable:
        return placed(stages, "mfu")
    job = _table(
        "mfu",
        "Model FLOPs utilisation",
        [
            pct("mfu", "MFU"),
            col("achieved_tflops", "Achieved TFLOP/s", NUMBER, 1),
            col("peak_tflops", "Peak TFLOP/s per GPU", NUMBER, 1),
            count("gpus", "GPUs"),
            col("device", "Device"),
            dur("step_ns", "Step time"),
            col("params", "Parameters N", NUMBER, style="g"),
            col("tokens", "Tokens per step", NUMBER, style="g"),
            col("model_tflop_per_step", "Model TFLOP per step", NUMBER, 1),
        ],
        [_note(f"mfu.assumption.{i}", a) for i, a in enumerate(m.assumptions)]
        + [_note(f"mfu.formula.{i}", f) for i, f in enumerate(m.formulas)],
    )
    _row(
        job,
        [
            m.mfu,
            m.achieved_flops / 1e12,
            m.peak_flops_per_device / 1e12,
            m.devices,
            m.device_name,
            m.step_time_ns,
            m.params,
            m.tokens_per_step,
            m.model_flops_per_step / 1e12,
        ],
        "job",
    )
    ranks = _table(
        "mfu_ranks",
        "MFU per rank",
        [
            count("rank", "Rank"),
            col("device", "Device"),
            col("peak_tflops", "Peak TFLOP/s", NUMBER, 1),
            dur("step_ns", "Step time"),
            col("tflop_per_step", "Its TFLOP per step", NUMBER, 2),
            pct("mfu", "MFU"),
        ],
        text_hidden=len(m.ranks) > RANKS_PRINTED,
    )
    for r in m.ranks:
        _row(
            ranks,
            [r.rank, r.device_name, r.peak_flops / 1e12, r.step_time_ns, r.flops_per_step / 1e12, r.mfu],
            str(r.rank),
            f"rank:{r.rank}",
        )
    return placed([job, ranks] + stages, "mfu")


# ------------------------------------------------------------------ sentences


def schedule_sentences(s: Optional[spb.PipelineSchedule], m: Optional[spb.Mfu]) -> List[dpb.Sentence]:
    out: List[dpb.Sentence] = []
    if s is not None and s.kind != spb.SCHEDULE_KIND_UNSPECIFIED:
        if s.kind == spb.SCHEDULE_KIND_NOT_PIPELINED:
            out.append(
                sentence(
                    ["Pipeline schedule: not pipelined. ", s.why], key="schedule.kind", level="note", section="schedule"
                )
            )
        else:
            chunks = f", {s.chunks} chunks" if s.chunks > 1 else ""
            sizes = f" (pp {s.stages}, {s.micro_batches} micro-batches{chunks}"
            level = "warning" if s.kind == spb.SCHEDULE_KIND_UNKNOWN else "info"
            out.append(
                sentence(
                    [f"Pipeline schedule: {s.name}{sizes}). ", s.why],
                    key="schedule.kind",
                    level=level,
                    section="schedule",
                )
            )
        if _pipelined(s):
            t = s.stage_totals
            fd = sum(x.fill_drain_ns for x in t) / len(t)
            wait = sum(x.wait_ns for x in t) / len(t)
            worst = max(t, key=lambda x: (x.wait_ns, -x.stage))
            parts = [
                "Bubbles per stage and step: fill/drain ",
                duration(fd),
                " (textbook (pp − 1)·(tf + tb): ",
                duration(s.theory_fill_drain_ns),
                "), waiting ",
                duration(wait),
            ]
            if worst.wait_ns > 0:
                parts += [
                    "; most waiting at stage ",
                    str(worst.stage),
                    " (",
                    _rank_span(worst.worst_rank),
                    ": ",
                    duration(worst.worst_wait_ns),
                    " per step)",
                ]
            parts.append(".")
            out.append(
                sentence(parts, key="schedule.bubble", level="warning" if wait > fd else "info", section="schedule")
            )
    if m is not None:
        if m.applicable:
            out.append(
                sentence(
                    [
                        "MFU ",
                        val(m.mfu, PERCENT, digits=1),
                        ": ",
                        val(m.achieved_flops / 1e12, NUMBER, digits=1),
                        " TFLOP/s achieved of ",
                        str(m.devices),
                        " × ",
                        val(m.peak_flops_per_device / 1e12, NUMBER, digits=1),
                        f" TFLOP/s peak ({m.device_name}; {m.peak_source}); 6 · N · tokens with N = ",
                        val(m.params, NUMBER, style="g"),
                        ", ",
                        val(m.tokens_per_step, NUMBER, style="g"),
                        " tokens per step, step time ",
                        duration(m.step_time_ns),
                        ".",
                    ],
                    key="mfu",
                    section="mfu",
                )
            )
        elif m.why_not:
            out.append(sentence(["MFU: not computed. ", lit(m.why_not)], key="mfu", level="note", section="mfu"))
    return out


def schedule_view(s: Optional[spb.PipelineSchedule], m: Optional[spb.Mfu]) -> dpb.View:
    v = dpb.View(key="schedule", title="Pipeline schedule and MFU")
    v.sentences.extend(schedule_sentences(s, m))
    if s is not None:
        v.tables.extend(schedule_tables(s))
        v.sentences.extend(sentence([n], key="schedule.note", level="note", section="schedule") for n in s.notes)
    if m is not None:
        v.tables.extend(mfu_tables(m))
    return v
