"""The display model of the what-if view (display.proto), built once from a RunWhatIf: view "whatif"
with the what-if estimates, the critical path (per step, by kind, by rank, by operator) and the
pipeline schedule and MFU tables of display/schedule.py. ``tb-paddle-profile whatif`` prints it
(render/whatif_text.py) and the What-if panel draws it. Table and column keys: docs/display.md.

Every sentence and table is placed (Sentence.section, Table.section and part): "headline" (the largest
saving, the straggler's), "units", "estimates", "path" (the critical path; its breakdowns part
"breakdown"), "schedule" (the slots part "list"), "mfu", "notes"; the text layout and the panel place
them by these.
"""

from __future__ import annotations

from typing import List

from tb_paddle_profile.analysis.crossrank.model import CAVEAT
from tb_paddle_profile.analysis.crossrank.whatif import whatif_parts
from tb_paddle_profile.analysis.mfu import mfu_of
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import whatif_pb2 as wpb
from tb_paddle_profile.present.display.cells import DURATION, PERCENT, placed, rank, sentence, val
from tb_paddle_profile.present.display.parallel_common import _row, _table, col, count, dur, pct
from tb_paddle_profile.present.display.schedule import mfu_tables, schedule_sentences, schedule_tables


def _change_label(x: wpb.WhatIf) -> str:
    """The estimate's title, and the rank it changes (the straggler's own row)."""
    return f"{x.title} (rank {x.rank})" if x.rank >= 0 else x.title


def _whatif_table(w: wpb.RunWhatIf) -> dpb.Table:
    t = _table(
        "whatif",
        "What-if estimates",
        [
            col("change", "Change"),
            dur("step", "Step"),
            dur("new_step", "New step"),
            dur("saving", "Saving per step"),
            pct("saving_pct", "Per step %"),
            dur("saving_per_sample", "Saving per sample"),
            pct("saving_per_sample_pct", "Per sample %"),
            col("assumption", "Assumption", text_hidden=True),
        ],
        notes=[
            sentence(
                [
                    "Step = the job's mean step time replayed (mean over ranks and steps). Twice the "
                    "micro-batches: the new step does twice the work; its saving is per sample, apart from "
                    "the savings per step."
                ]
            )
        ],
        empty="No what-if: the run has no step to replay.",
    )
    for x in w.what_ifs:
        if x.applicable:
            step = [None, None] if x.per_sample else [x.saving_ns, x.saving_fraction]
            sample = [x.saving_ns, x.saving_fraction] if x.per_sample else [None, None]
            _row(
                t,
                [_change_label(x), x.step_ns, x.new_step_ns] + step + sample + [x.assumption],
                id=wpb.WhatIfKind.Name(x.kind),
                link=f"rank:{x.rank}" if x.rank >= 0 else "",
            )
        else:
            _row(
                t,
                [x.title, x.step_ns, None, None, None, None, None, "not applicable: " + x.reason],
                id=wpb.WhatIfKind.Name(x.kind),
            )
    return t


def _parts_table(key: str, title: str, parts, first: str) -> dpb.Table:
    t = _table(key, title, [col("key", first), dur("time", "Time on path"), pct("share", "Share")])
    for p in parts:
        _row(t, [p.key, p.ns, p.fraction], link=f"rank:{p.rank}" if key.endswith("ranks") and p.rank >= 0 else "")
    return t


def _steps_table(cp: wpb.CriticalPath) -> dpb.Table:
    kinds = ["compute", "communication", "memcpy", "host", "waiting"]
    t = _table(
        "critical_path_steps",
        "Critical path by step",
        [
            count("step", "Step"),
            col("end_rank", "Ends on"),
            dur("observed", "Step (traced)"),
            dur("replayed", "Step (replayed)"),
            dur("path", "Path"),
        ]
        + [dur(k, k.capitalize()) for k in kinds],
    )
    for s in cp.steps:
        by = {k: 0 for k in kinds}
        for p in s.breakdown.by_kind:
            by[p.key.split(":")[0]] += p.ns
        _row(
            t,
            [s.step, f"rank {s.end_rank}", s.observed_ns, s.replayed_ns, s.breakdown.length_ns]
            + [by[k] for k in kinds],
            link=f"critical:{s.step}",
        )
    return t


def _headline(w: wpb.RunWhatIf) -> List[dpb.Sentence]:
    """ "whatif.best": the largest saving per step (a per-sample saving is not compared with them) with the
    rank it changes; "whatif.best.straggler": the straggler's own estimate, when it is not that one;
    "whatif.best.none": why nothing applies, when no change does."""
    per_step = [x for x in w.what_ifs if x.applicable and not x.per_sample and x.saving_ns > 0]
    if w.what_ifs and not any(x.applicable for x in w.what_ifs):
        # every change not applicable (a CPU/gloo run records no collective): said above the table, whose
        # rows then hold only "-" and their reasons in a column that may be hidden to fit
        reasons = list(dict.fromkeys(x.reason for x in w.what_ifs if x.reason))
        why = reasons[0] if len(reasons) == 1 else "; ".join(reasons[:3]) + ("; …" if len(reasons) > 3 else "")
        end = "" if why.endswith("…") else "."
        return [
            sentence([f"No what-if estimate applies to this run: {why}{end}"], key="whatif.best.none", level="note")
        ]
    if not per_step:
        return []

    def on(x: wpb.WhatIf) -> list:
        return [" (", rank(x.rank, f"rank {x.rank}"), ")"] if x.rank >= 0 else []

    # the savings with their unit: the panel draws the headline above the cards whose heads say the unit
    b = max(per_step, key=lambda x: x.saving_ns)
    out = [
        sentence(
            ["Largest estimated saving per step: ", b.title]
            + on(b)
            + [
                ", ",
                val(b.saving_ns, DURATION, style="unit"),
                " (",
                val(b.saving_fraction, PERCENT, digits=1),
                "). ",
                b.assumption,
            ],
            key="whatif.best",
            level="good",
        )
    ]
    own = [x for x in per_step if x.kind == wpb.WHAT_IF_STRAGGLER and x is not b]
    for x in own:
        out.append(
            sentence(
                [
                    "The straggler, ",
                    rank(x.rank, f"rank {x.rank}"),
                    ", at its role peers' speed: ",
                    val(x.saving_ns, DURATION, style="unit"),
                    " per step (",
                    val(x.saving_fraction, PERCENT, digits=1),
                    ").",
                ],
                key="whatif.best.straggler",
                level="good",
            )
        )
    return out


def _sentences(w: wpb.RunWhatIf, time_unit: str) -> List[dpb.Sentence]:
    out = [sentence([f"Times in {time_unit}."], key="units", level="note", section="units")]
    cp = w.critical_path
    if cp.steps:
        top = cp.total.by_kind[0] if cp.total.by_kind else None
        spans = [
            "Critical path: the job's step ",
            val(cp.observed_step_ns, DURATION),
            " (replayed ",
            val(cp.replayed_step_ns, DURATION),
            ", ",
            val(cp.replay_error, PERCENT, digits=2),
            " off)",
        ]
        if top is not None:
            spans += ["; its largest part is ", top.key, " (", val(top.fraction, PERCENT, digits=1), ")"]
        if cp.total.by_rank:
            r = cp.total.by_rank[0]
            spans += ["; most of it runs on ", r.key, " (", val(r.fraction, PERCENT, digits=1), ")"]
        out.append(sentence(spans + ["."], key="whatif.path", section="path"))
    out += placed(_headline(w), "headline")
    estimates = []
    for x in w.what_ifs:
        key = "whatif." + wpb.WhatIfKind.Name(x.kind).lower()[len("what_if_") :]
        if not x.applicable:
            estimates.append(sentence([f"{x.title}: not applicable ({x.reason})."], key=key, level="note"))
        if x.applicable:
            estimates.append(
                sentence(
                    [
                        x.title + ": ",
                        val(x.new_step_ns, DURATION),
                        " instead of ",
                        val(x.step_ns, DURATION),
                        " (saving ",
                        val(x.saving_ns, DURATION),
                        ", ",
                        val(x.saving_fraction, PERCENT, digits=1),
                        " per sample" if x.per_sample else " per step",
                        "). ",
                        x.assumption,
                    ],
                    key=key,
                )
            )
    out += placed(estimates, "estimates")
    # a caveat of the evidence says so itself
    out += placed(
        (sentence([n if n.startswith(CAVEAT) else "Note: " + n], key="note", level="note") for n in w.notes), "notes"
    )
    return out


def whatif_display(w: wpb.RunWhatIf, time_unit: str = "ms") -> dpb.Display:
    view = dpb.View(key="whatif", title="Critical path and what-if")
    view.sentences.extend(_sentences(w, time_unit))
    cp = w.critical_path
    view.tables.extend(placed([_whatif_table(w)], "estimates"))
    view.tables.extend(placed([_steps_table(cp)], "path"))
    view.tables.extend(
        placed(
            [
                _parts_table("critical_path_kinds", "Critical path by kind (all steps)", cp.total.by_kind, "Kind"),
                _parts_table("critical_path_ranks", "Critical path by rank (all steps)", cp.total.by_rank, "Rank"),
                _parts_table(
                    "critical_path_operators",
                    "Compute on the critical path by operator",
                    cp.total.by_operator,
                    "Operator",
                ),
            ],
            "path",
            "breakdown",
        )
    )
    if w.HasField("schedule") or w.HasField("mfu"):
        view.sentences.extend(
            schedule_sentences(w.schedule if w.HasField("schedule") else None, w.mfu if w.HasField("mfu") else None)
        )
        if w.HasField("schedule"):
            view.tables.extend(schedule_tables(w.schedule))
        if w.HasField("mfu"):
            view.tables.extend(mfu_tables(w.mfu))
    out = dpb.Display(time_unit=time_unit)
    out.views.append(view)
    return out


def whatif_answer(inputs, run: str = "", span: str = "", time_unit: str = "ms", **mfu_args) -> wpb.RunWhatIf:
    """analysis.crossrank.whatif.analyze_whatif's RunWhatIf with its Display: what the route and the
    CLI send. ``mfu_args``: params, tokens_per_step, model_config, peak_tflops."""
    out, facts = whatif_parts(inputs, run, span)
    return with_mfu(out, facts, time_unit, **mfu_args)


def with_mfu(out: wpb.RunWhatIf, facts, time_unit: str = "ms", **mfu_args) -> wpb.RunWhatIf:
    """``out`` (whatif_parts' RunWhatIf, or a what-if answer made with other MFU inputs) with the MFU of
    ``mfu_args`` from the ranks' MfuInputs ``facts`` (None: no ranks, no MFU) and its Display made again:
    the what-if answer for those MFU inputs, without a new replay."""
    if facts is not None:
        out.mfu.CopyFrom(mfu_of(facts, **mfu_args))
    out.display.CopyFrom(whatif_display(out, time_unit))
    return out
