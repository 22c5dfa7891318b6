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

This module holds the parallel view's findings, outliers, advice and sentences and puts the view together;
its tables are display/parallel_tables.py's and display/parallel_model_tables.py's, the straggler verdict and
the rank banner display/straggler.py's, the Distributed view display/distributed.py's, the shared building
blocks display/parallel_common.py's.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import COUNT, NUMBER, PERCENT, lit, rank, val
from tb_paddle_profile.present.display.parallel_common import (
    CATEGORY_TITLE,
    CATEGORY_LEVEL,
    OUTLIERS,
    cause_text,
    ranks_text,
    duration,
    spans,
    _sentence,
    col,
    dur,
    pct,
    count,
    _table,
    _row,
    _rank_link,
    _note,
    _label,
    _labels,
)
from tb_paddle_profile.present.display.parallel_tables import (
    _clocks_table,
    _host_table,
    _kinds_table,
    _matrix_table,
    _pipeline_tables,
    _rank_kinds_table,
    _ranks_table,
    _topology_table,
    _waits_table,
)
from tb_paddle_profile.present.display.parallel_model_tables import (
    _comm_tables,
    _memory_tables,
    _sequence_tables,
    _stage_layers_table,
)
from tb_paddle_profile.present.display.parallel_charts import breakdown_tables, heat_table
from tb_paddle_profile.present.display.straggler import _named, _stragglers_table
from tb_paddle_profile.present.display.distributed import distributed_display


def _findings_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "findings",
        "Findings",
        [
            col("category", "Category"),
            col("category_title", "Category"),
            col("rule", "Rule"),
            col("cause", "Cause"),
            count("stage", "Stage"),
            dur("cost_ns", "Cost to the job"),
            dur("excess_ns", "Excess"),
            col("absorbed", "Absorbed"),
            col("ranks", "Ranks"),
        ],
        text_hidden=True,
    )
    for i, f in enumerate(rp.findings):
        _row(
            t,
            [
                f.category,
                (CATEGORY_TITLE.get(f.category, f.category)),
                f.rule,
                (cause_text(f.cause) if f.cause else ""),
                f.stage if f.stage >= 0 else None,
                f.cost_ns if f.cost_ns > 0 else None,
                f.excess_ns if f.excess_ns > 0 else None,
                ("mostly absorbed" if f.absorbed else ""),
                ranks_text(f.ranks),
            ],
            f"finding.{i}",
            _rank_link(f.ranks[0]) if len(f.ranks) == 1 else "",
        )
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
    t = _table(
        "outliers",
        "Outlier ranks",
        [
            count("rank", "Rank", panel_hidden=True),
            col("label", "Rank"),
            measure,
            dur("step_ns", "Step"),
            col("named", "Named", panel_hidden=True),
        ],
        [
            _note(
                "outliers.note",
                "largest excess over the rank's role peers, as a share of the median step"
                if by_dev
                else "time its peers wait for it net of its own waits, per step",
            )
        ],
        text_hidden=True,
        empty="No rank stands out from its peers.",
    )
    for r, s in rows[:OUTLIERS]:
        _row(t, [r.rank, _label(r), s, r.step_time_ns, ("1" if r.rank in named else "")], r.worker, _rank_link(r.rank))
    return t


def _advice_triggers_table(rp: ppb.RunParallel) -> dpb.Table:
    t = _table(
        "advice_triggers",
        "Advice triggers",
        [
            count("advice", "Advice"),
            col("rule", "Rule"),
            col("metric", "Metric"),
            col("who", "Where"),
            count("rank", "Rank"),
            col("value", "Value", NUMBER, style="g"),
            col("threshold", "Threshold", NUMBER, style="g"),
            col("unit", "Unit"),
        ],
        text_hidden=True,
    )
    for i, a in enumerate(rp.advice):
        for tr in a.triggers:
            _row(
                t,
                [
                    i,
                    a.rule,
                    tr.metric,
                    (f"rank {tr.rank}" if tr.rank >= 0 else "all ranks"),
                    tr.rank if tr.rank >= 0 else None,
                    tr.value,
                    tr.threshold,
                    tr.unit,
                ],
                f"{i}:{tr.metric}",
                _rank_link(tr.rank),
            )
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


def _placed(s: dpb.Sentence, section: str, rule: str, part: str = "") -> dpb.Sentence:
    """`s` placed in its view: the section it prints in, the finding's or advice's rule, its part ("": the head)."""
    s.section, s.rule, s.part = section, rule, part
    return s


def _sentences(rp: ppb.RunParallel, labels: Dict[int, str], time_unit: str) -> List[dpb.Sentence]:
    out: List[dpb.Sentence] = []
    steps = list(rp.steps)
    step_txt = (f"steps {steps[0]}..{steps[-1]}" if len(steps) > 1 else f"step {steps[0]}") if steps else "no steps"
    span = f", span {rp.span}" if rp.span else ""
    out.append(
        _sentence(
            "headline",
            [
                f"Hybrid-parallel analysis of {rp.run or 'the run'}{span}: ",
                val(len(rp.ranks), COUNT),
                f" ranks, {step_txt}.",
            ],
        )
    )
    out.append(_sentence("units", [f"Times in {time_unit}, per step (means over the rank's steps)."]))

    v = rp.straggler
    level = "warning" if v.found else ("note" if v.uncertain or v.stragglers else "good")
    out.append(_sentence("verdict", spans(v.summary, labels), level, "Straggler verdict"))
    for i, s in enumerate(v.stragglers):
        named = _named(v, i)
        out.append(
            _sentence(
                "verdict.straggler",
                spans(s.reason, labels),
                "warning" if named else "note",
                (s.label or labels.get(s.rank, "")) if named else "",
            )
        )
    ev = [
        f"({v.rule} Evidence: ",
        val(v.coverage, PERCENT, digits=1),
        " of the instances matched, the least covered rank ",
        val(v.min_rank_coverage, PERCENT, digits=1),
        f"{'; UNCERTAIN' if v.uncertain else ''}.)",
    ]
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
        out.append(
            _placed(
                _sentence(key, spans(f.text, labels), CATEGORY_LEVEL.get(f.category, "info"), tag), "findings", f.rule
            )
        )
        if f.cost_ns > 0:
            cost = ["costs ", duration(f.cost_ns), " / step"]
        else:
            cost = [] if f.category == "evidence" else ["no cost to the job"]
        if f.absorbed:
            cost += [" (mostly absorbed)"]
        if cost:
            out.append(
                _placed(
                    _sentence(key + ".cost", cost, CATEGORY_LEVEL.get(f.category, "info")), "findings", f.rule, "cost"
                )
            )
        if f.excess_ns > 0:
            out.append(
                _placed(
                    _sentence(
                        key + ".excess",
                        ["Excess on the rank itself: ", duration(f.excess_ns), " / step against its role peers."],
                        "note",
                    ),
                    "findings",
                    f.rule,
                    "excess",
                )
            )
        if f.ranks:
            out.append(_placed(_rank_chips(key + ".ranks", f.ranks, labels), "findings", f.rule, "ranks"))

    if not rp.advice:
        out.append(_placed(_sentence("advice.none", ["No rule fired."], "good"), "advice", ""))
    for a in rp.advice:
        key = f"advice.{a.rule}"
        out.append(_placed(_sentence(key, spans(a.text, labels), "warning", a.title), "advice", a.rule))
        for tr in a.triggers:
            # a citation: "rank 5" (a rank span, linked), not the whole label
            who = rank(tr.rank, f"rank {tr.rank}") if tr.rank >= 0 else lit("all ranks")
            out.append(
                _placed(
                    _sentence(
                        key + ".trigger",
                        [
                            f"[{a.rule}] {tr.metric} (",
                            who,
                            "): ",
                            _trigger_value(tr.value, tr.unit),
                            " >= threshold ",
                            _trigger_value(tr.threshold, tr.unit),
                        ],
                        "note",
                    ),
                    "advice",
                    a.rule,
                    "trigger",
                )
            )
        if a.ranks:
            out.append(_placed(_rank_chips(key + ".ranks", a.ranks, labels), "advice", a.rule, "ranks"))

    m = rp.matching
    out.append(
        _sentence(
            "matching",
            [
                "Matching: ",
                val(m.matched_instances, COUNT),
                " of ",
                val(m.instances, COUNT),
                f" communication instances matched across ranks ({m.method}).",
            ],
            "note",
        )
    )
    for n in rp.notes:
        out.append(_sentence("note", ["Note: "] + spans(n, labels), "note"))
    return out


def parallel_display(rp: ppb.RunParallel, time_unit: str = "ms", text: bool = False) -> dpb.Display:
    """The Display of the hybrid-parallel analysis: one view "parallel" (keys in docs/display.md). ``text``:
    for the CLI's text, without the tables the text never shows (the step breakdowns and heatmaps, a row per
    rank and step: a third of the CLI's time at 1,024 ranks)."""
    labels = _labels(rp)
    view = dpb.View(key="parallel", title="Hybrid-parallel analysis")
    view.sentences.extend(_sentences(rp, labels, time_unit))
    tables = [
        _ranks_table(rp),
        _matrix_table(rp, "step_time", "Step time by rank and step", rp.step_time),
        _matrix_table(rp, "exposed_comm_by_step", "Exposed communication by rank and step", rp.exposed_communication),
        _kinds_table(rp),
        _rank_kinds_table(rp),
    ]
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
    tables += _stage_layers_table(rp)
    tables += _comm_tables(rp)
    tables += [_stragglers_table(rp, labels), _findings_table(rp), _outliers_table(rp), _advice_triggers_table(rp)]
    if not text:
        tables += breakdown_tables(rp)
        tables += [
            heat_table(rp, "step_time_heat", "Step time by rank and step", rp.step_time),
            heat_table(rp, "exposed_comm_heat", "Exposed communication by rank and step", rp.exposed_communication),
        ]
    view.tables.extend(tables)
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
