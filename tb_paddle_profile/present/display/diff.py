"""The display model of a comparison (RunDiff.display; docs/diff.md).

* ``rank_diff_display(baseline, candidate, ...)``: two ranks' Summaries. Every table their own Displays have
  (display/summary.py: the Overview, Model stages, operators, kernels, memory) becomes one side-by-side table of
  the same key, built generically by :func:`diff_table` (display/diff_tables.py): the rows matched by their
  Row.id (an operator's input-shape group by the operator and its shapes), each value column as four columns
  ``<key>_baseline``, ``<key>_candidate``, ``<key>_delta``, ``<key>_delta_pct``, a ``status`` column ("new",
  "removed" or empty), rows sorted by the absolute delta (tables of fixed rows keep their order), and a
  ``diff:`` link to both timelines. A view ``step`` (first) splits the change of the step time (analysis/diff.py).
* ``run_diff_display(decomposition, ...)``: two runs' cross-rank analyses: view ``step`` with the sentence
  ``diff.verdict``, the tables ``decomposition``, ``stages`` and ``ranks``.

Row.link of a delta row: ``diff:`` + a URL query ``b=<baseline worker>&c=<candidate worker>&q=<name>`` (b or c
empty on the side where the row does not exist; the runs and spans are RunDiff.baseline / candidate).
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple, Union

from tb_paddle_profile.analysis.diff import Decomposition, Group, part_label
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import (
    DURATION,
    NUMBER,
    PERCENT,
    TEXT,
    fmt,
    num,
    sentence,
    text,
    val,
)
from tb_paddle_profile.present.display.summary import summary_display
from tb_paddle_profile.present.display.diff_tables import (
    _NEW,
    _REMOVED,
    _SIDES,
    _sort_column,
    _tables,
    diff_link,
    diff_table,
)

# Tables whose rows are a fixed structure: kept in their order (the others are sorted by |delta|).
FIXED_ORDER = ("device", "overview", "model", "model_steps", "distributed", "kernel_efficiency")
# The share of the change is a part's delta ÷ the step's: printed only when the step changed by at least this
# fraction of the baseline step (and 1 µs); below it the parts' changes cancel and a share means nothing.
SHARE_MIN_CHANGE = 0.01


# ------------------------------------------------------------------ the step-time decomposition


def _signed(x: float) -> List[Union[str, dpb.Span]]:
    return ["+" if x >= 0 else "−", val(abs(x), DURATION, style="unit")]


def verdict(d: Decomposition, what: str = "step") -> dpb.Sentence:
    """ "The step got 3.34 ms faster (36.24 ms → 32.89 ms, −9.2 %): waiting for late peers −2.98 ms, …"."""
    base, cand = d.total.step("baseline") or 0.0, d.total.step("candidate") or 0.0
    change = d.change
    ranked = sorted(d.keys, key=lambda k: -abs(d.total.delta(k) or 0.0))
    floor = max(1000.0, 0.01 * abs(change))
    shown = [k for k in ranked if abs(d.total.delta(k) or 0.0) >= floor][:5]
    spans: List = [
        f"The {what} got ",
        val(abs(change), DURATION, style="unit"),
        " faster" if change < 0 else " slower",
        " (",
        val(base, DURATION, style="unit"),
        " → ",
        val(cand, DURATION, style="unit"),
    ]
    if base:
        spans += [", ", "+" if change >= 0 else "−", val(abs(change) / base, PERCENT, digits=1)]
    spans.append(")")
    if abs(change) < 0.5 and not shown:
        spans = [f"The {what} time did not change (", val(base, DURATION, style="unit"), ")"]
    if shown:
        spans.append(": ")
        for i, k in enumerate(shown):
            spans += ([", "] if i else []) + [part_label(k), " "] + _signed(d.total.delta(k) or 0.0)  # (not None)
    spans.append(".")
    return sentence(spans, key="diff.verdict", level="info")


def _short(key: str) -> str:
    """A part's column header: "all-reduce", "waiting", "bubble", "memcpy", ..."""
    return {"waiting": "waiting", "bubble": "bubble", "memcpy": "memcpy"}.get(
        key, part_label(key).replace("exposed ", "")
    )


def _header_widths(t: dpb.Table) -> None:
    """The text layout sizes a column by its cells only (Paddle's rule); these tables' headers must fit."""
    for c in t.columns:
        c.text_min_width = max(c.text_min_width, len(c.header))
    for g in t.groups:
        g.text_min_width = max(g.text_min_width, len(g.header))


def _live_keys(d: Decomposition, groups: Sequence[Group]) -> List[str]:
    """Parts that are not zero on every side of every group."""

    def nonzero(k):
        return any(abs((getattr(g, s) or {}).get(k, 0.0)) > 0 for g in groups for s in _SIDES)

    return [k for k in d.keys if nonzero(k)]


def decomposition_table(d: Decomposition, workers: Tuple[str, str] = ("", "")) -> dpb.Table:
    g = d.total
    keys = _live_keys(d, [g])
    cols = [
        dpb.Column(
            key="part",
            header="Part",
            format=fmt(TEXT),
            description="compute + exposed communication (by kind, waiting, bubble) + exposed memcpy + "
            "idle = the step time (docs/diff.md)",
        ),
        dpb.Column(key="baseline_ns", header="Baseline", format=fmt(DURATION), description="per-step mean"),
        dpb.Column(key="candidate_ns", header="Candidate", format=fmt(DURATION), description="per-step mean"),
        dpb.Column(key="delta_ns", header="Delta", format=fmt(DURATION), description="candidate − baseline"),
        dpb.Column(key="delta_pct", header="Delta %", format=fmt(PERCENT, digits=1), description="delta / baseline"),
        dpb.Column(
            key="share",
            header="Share of change",
            format=fmt(PERCENT, digits=1),
            description="delta / the change of the step time",
        ),
    ]
    t = dpb.Table(key="decomposition", title="Step time change by part", columns=cols)
    t.text.CopyFrom(dpb.TextLayout(style="paddle", time_unit_line=True, closing_separator=True, blank_lines_after=1))
    _header_widths(t)
    change = d.change
    b, c = g.step("baseline") or 0.0, g.step("candidate") or 0.0
    shared = abs(change) >= max(1000.0, SHARE_MIN_CHANGE * abs(b))
    for k in sorted(keys, key=lambda k: -abs(g.delta(k) or 0.0)):
        pb_, pc = (g.baseline or {}).get(k, 0.0), (g.candidate or {}).get(k, 0.0)
        delta = g.delta(k)
        t.rows.add(
            cells=[
                text(part_label(k)),
                num(pb_),
                num(pc),
                num(delta),
                num(delta / pb_ if pb_ and delta is not None else None),
                num(delta / change if shared and delta is not None else None),
            ],
            id=k,
            link=diff_link(workers[0], workers[1], ""),
        )
    t.rows.add(
        cells=[
            text("step time"),
            num(b),
            num(c),
            num(c - b),
            num((c - b) / b if b else None),
            num(1.0 if shared else None),
        ],
        role=dpb.ROW_TOTAL,
        id="step",
        link=diff_link(workers[0], workers[1], ""),
    )
    if not shared and keys:
        t.notes.append(
            sentence(
                [
                    f"No share of the change: the step time changed by less than "
                    f"{SHARE_MIN_CHANGE:.0%} of the baseline's (",
                    val(change, DURATION, style="unit"),
                    "), the parts' changes cancel.",
                ],
                key="diff.share",
                level="note",
            )
        )
    return t


def groups_table(
    key: str, title: str, d: Decomposition, groups: Sequence[Group], what: str, keys: Optional[Sequence[str]] = None
) -> dpb.Table:
    """Stages, ranks or steps: each group's step time on both sides and each part's change."""
    keys = (
        [k for k in keys if any((getattr(g, s) or {}).get(k) for g in groups for s in _SIDES)]
        if keys is not None
        else _live_keys(d, groups)
    )
    cols = [
        dpb.Column(key="name", header=what, format=fmt(TEXT)),
        dpb.Column(
            key="status",
            header="Status",
            format=fmt(TEXT),
            text_min_width=7,
            description="new: only in the candidate; removed: only in the baseline",
        ),
        dpb.Column(key="ranks_baseline", header="Ranks (baseline)", format=fmt(dpb.CELL_COUNT), text_hidden=True),
        dpb.Column(key="ranks_candidate", header="Ranks (candidate)", format=fmt(dpb.CELL_COUNT), text_hidden=True),
        dpb.Column(key="baseline_ns", header="Baseline", format=fmt(DURATION), description="mean step time"),
        dpb.Column(key="candidate_ns", header="Candidate", format=fmt(DURATION), description="mean step time"),
        dpb.Column(key="delta_ns", header="Delta", format=fmt(DURATION), description="candidate − baseline"),
    ]
    for k in keys:
        cols.append(
            dpb.Column(
                key=f"{k}_delta_ns", header=_short(k), format=fmt(DURATION), description=f"change of {part_label(k)}"
            )
        )
    t = dpb.Table(key=key, title=title, columns=cols)
    t.text.CopyFrom(dpb.TextLayout(style="paddle", time_unit_line=True, closing_separator=True, blank_lines_after=1))
    _header_widths(t)
    for g in groups:
        status = (
            "" if g.baseline is not None and g.candidate is not None else (_NEW if g.baseline is None else _REMOVED)
        )
        cells = [
            text(g.label),
            text(status),
            num(g.baseline_ranks),
            num(g.candidate_ranks),
            num(g.step("baseline")),
            num(g.step("candidate")),
            num(g.change()),
        ]
        cells += [num(g.delta(k)) for k in keys]
        t.rows.add(cells=cells, id=g.key, link=diff_link(g.link_baseline, g.link_candidate, ""))
    return t


def _notes(view: dpb.View, notes: Sequence[str]) -> None:
    for n in notes:
        view.sentences.append(sentence([n], key="diff.alignment", level="note"))


def run_diff_display(d: Decomposition, time_unit: str = "ms") -> dpb.Display:
    """Two runs: view ``step`` (the sentence, the decomposition, per stage, per rank)."""
    out = dpb.Display(time_unit=time_unit)
    view = out.views.add(key="step", title="Step time")
    view.sentences.append(verdict(d))
    _notes(view, d.notes)
    ws = (d.ranks[0].link_baseline, d.ranks[0].link_candidate) if d.ranks else ("", "")
    view.tables.append(decomposition_table(d, ws))
    if d.stages:
        view.tables.append(groups_table("stages", "Step time change per pipeline stage", d, d.stages, "Stage"))
    if d.ranks:
        view.tables.append(groups_table("ranks", "Step time change per rank (aligned by role)", d, d.ranks, "Rank"))
    _steps_table(view, d)
    return out


def _steps_table(view: dpb.View, d: Decomposition, workers: Tuple[str, str] = ("", "")) -> None:
    """Per ProfileStep number (the steps both sides have are compared; the others new or removed)."""
    from tb_paddle_profile.analysis.diff import STEP_PARTS

    if d.steps:
        for g in d.steps:
            g.link_baseline = g.link_baseline or (workers[0] if g.baseline is not None else "")
            g.link_candidate = g.link_candidate or (workers[1] if g.candidate is not None else "")
        title = "Step time change per step" + (" (mean over ranks)" if d.ranks else "")
        view.tables.append(groups_table("steps", title, d, d.steps, "Step", STEP_PARTS))


def rank_diff_display(
    baseline: pb.Summary,
    candidate: pb.Summary,
    d: Decomposition,
    workers: Tuple[str, str],
    sorted_by: str = "CPUTotal",
    time_unit: str = "ms",
) -> dpb.Display:
    """Two ranks: view ``step`` first, then the views of display/summary.py side by side."""
    out = dpb.Display(time_unit=time_unit)
    step = out.views.add(key="step", title="Step time")
    if d.total.baseline is not None and d.total.candidate is not None:
        step.sentences.append(verdict(d))
        step.tables.append(decomposition_table(d, workers))
        _steps_table(step, d, workers)
    else:
        step.sentences.append(
            sentence(["One side has no ProfileStep: no step time to compare."], key="diff.verdict", level="note")
        )
    _notes(step, d.notes)
    displays = [summary_display(s, sorted_by=sorted_by, time_unit=time_unit) for s in (baseline, candidate)]
    tables = [_tables(x) for x in displays]
    sort_column = _sort_column(sorted_by)
    for v in displays[0].views:
        view = out.views.add(key=v.key, title=v.title)
        keys = [t.key for t in v.tables if t.key in tables[0]]
        keys += [k for k, (vk, _) in tables[1].items() if vk == v.key and k not in tables[0]]
        for key in keys:
            b = tables[0].get(key, (None, None))[1]
            c = tables[1].get(key, (None, None))[1]
            view.tables.append(diff_table(b, c, workers, sort_column=sort_column, sort=key not in FIXED_ORDER))
    return out


# ------------------------------------------------------------------ the RunDiff message (the route and the CLI)


def _side(msg, run: str, worker: str, span: str, label: str, ranks: int, steps: int) -> None:
    msg.run, msg.worker, msg.span, msg.label, msg.ranks, msg.steps = run, worker, span, label, ranks, steps


def rank_diff(
    baseline: pb.Summary,
    candidate: pb.Summary,
    sides: Sequence[Tuple[str, str, str, str]],
    sorted_by: str = "CPUTotal",
    time_unit: str = "ms",
):
    """RunDiff of two ranks; ``sides``: (run, worker, span, label) of the baseline and the candidate."""
    from tb_paddle_profile.analysis.diff import decompose_ranks
    from tb_paddle_profile.v1 import diff_pb2

    d = decompose_ranks(baseline, candidate)
    out = diff_pb2.RunDiff(mode="rank")
    for msg, (run, worker, span, label), s in zip((out.baseline, out.candidate), sides, (baseline, candidate)):
        _side(msg, run, worker, span, label, 1, len(s.parallel.steps))
    out.alignment.extend(d.notes)
    out.display.CopyFrom(rank_diff_display(baseline, candidate, d, (sides[0][1], sides[1][1]), sorted_by, time_unit))
    return out


def run_diff(baseline, candidate, sides: Sequence[Tuple[str, str, str, str]], time_unit: str = "ms"):
    """RunDiff of two runs' cross-rank analyses (RunParallel); ``sides`` as in rank_diff (workers empty)."""
    from tb_paddle_profile.analysis.diff import decompose_runs
    from tb_paddle_profile.v1 import diff_pb2

    d = decompose_runs(baseline, candidate)
    out = diff_pb2.RunDiff(mode="run")
    for msg, (run, worker, span, label), rp in zip((out.baseline, out.candidate), sides, (baseline, candidate)):
        _side(msg, run, worker, span, label, len(rp.ranks), max((len(r.step_breakdown) for r in rp.ranks), default=0))
    out.alignment.extend(d.notes)
    out.display.CopyFrom(run_diff_display(d, time_unit))
    return out


# ------------------------------------------------------------------ a rank against its role peers' median


def _per_step_table(key: str, title: str, figures, kernels: bool) -> dpb.Table:
    """Operators or kernels per step (analysis/peers.py), a Table diff_table compares: name, calls, totals."""
    from tb_paddle_profile.analysis.peers import KERNEL_FIGURES, OPERATOR_FIGURES

    t = dpb.Table(key=key, title=title)
    t.columns.add(key="name", header="Name", format=fmt(TEXT), text_min_width=40)
    heads = {
        "calls": ("Calls / step", fmt(NUMBER, digits=1)),
        "cpu_total_ns": ("CPU total / step", fmt(DURATION)),
        "gpu_total_ns": ("GPU total / step", fmt(DURATION)),
    }
    for f in KERNEL_FIGURES if kernels else OPERATOR_FIGURES:
        t.columns.add(key=f, header=heads[f][0], format=heads[f][1], description=f"{heads[f][0]} (per ProfileStep)")
    order = "gpu_total_ns" if kernels else "cpu_total_ns"
    for name, f in sorted(figures.items(), key=lambda kv: (-kv[1][order], kv[0])):
        t.rows.add(
            cells=[text(name)] + [num(f[k]) for k in (KERNEL_FIGURES if kernels else OPERATOR_FIGURES)],
            id=("k:" if kernels else "o:") + name,
            link=f"timeline:{name}",
        )
    return t


def peers_diff(
    rank: pb.Summary,
    peers: Sequence[pb.Summary],
    sides: Sequence[Tuple[str, str, str, str]],
    where: str,
    peer_ranks: Sequence[int],
    time_unit: str = "ms",
):
    """RunDiff (mode "peers") of one rank (the candidate) against the median of its role peers (the baseline):
    views ``operators`` and ``kernels``, per ProfileStep (analysis/peers.py); ``sides`` as in rank_diff
    (the baseline's worker "~peers")."""
    from tb_paddle_profile.analysis.peers import peers_median, per_step
    from tb_paddle_profile.present.display.parallel_common import ranks_text
    from tb_paddle_profile.v1 import diff_pb2

    me, med = per_step(rank), peers_median([per_step(s) for s in peers])
    out = diff_pb2.RunDiff(mode="peers")
    for msg, (run, worker, span, label), n, steps in zip(
        (out.baseline, out.candidate), sides, (len(peers), 1), (med.steps, me.steps)
    ):
        _side(msg, run, worker, span, label, n, int(steps))
    out.display.time_unit = time_unit
    for key, title, kernels in (("operators", "Operators", False), ("kernels", "Kernels", True)):
        view = out.display.views.add(key=key, title=title)
        if not kernels:  # one sentence for both views (the panel shows every view's)
            view.sentences.append(
                sentence(
                    [
                        f"Operators and kernels of {sides[1][3]}, per step, against the median of its {len(peers)} role "
                        f"peers ({where}: ranks {ranks_text(peer_ranks)}); a peer without a name counts 0."
                    ],
                    key="diff.peers",
                    level="info",
                )
            )
        base = _per_step_table(key, f"{title} per step", getattr(med, key), kernels)
        cand = _per_step_table(key, f"{title} per step", getattr(me, key), kernels)
        view.tables.append(
            diff_table(base, cand, ("", sides[1][1]), sort_column="gpu_total_ns" if kernels else "cpu_total_ns")
        )
    return out
