"""What the panels draw is carried by the display model (issue 25: the frontend only draws).

Each derivation the panels once made from the analysis' raw values now lives in the display model, and is
held here to the analysis' own values: a generated DP2 x MP2 x PP2 run with a slow rank (tbp_synth),
parsed, digested and analysed in process, its RunParallel, the RunDistributed the route assembles
from the same digests, its RunWhatIf and a rank's Summary.
"""

import pytest

from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display import distributed, parallel_charts
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.present.display.distributed import distributed_display
from tb_paddle_profile.present.display.export import records
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.display.parallel_charts import kinds_present
from tb_paddle_profile.present.display.parallel_common import kind_label
from tb_paddle_profile.present.display.summary import summary_display
from tb_paddle_profile.present.display.whatif import whatif_answer
from tb_paddle_profile.present.render.parallel_text import render
from tb_paddle_profile.present.render.whatif_text import render_display
from tb_paddle_profile.v1 import plugin_pb2
from tbp_synth import SynthConfig, generate

SLOW_RANK = 5


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The generator's result, each rank's Summary and digest, in rank order."""
    out = tmp_path_factory.mktemp("display_carries") / "synth"
    res = generate(
        SynthConfig(dp=2, mp=2, pp=2, steps=3, layers=2, micro_batches=2, slow_rank=SLOW_RANK, slow_factor=1.5),
        str(out),
    )
    summaries = [summarize_file(p) for _, p in sorted(res.traces.items())]
    return res, summaries, [digest_of(s) for s in summaries]


@pytest.fixture(scope="module")
def run(generated):
    res, _, digests = generated
    rp = analyze_run(digests, run="synth", span="0")
    rd = plugin_pb2.RunDistributed(run="synth", span="0")
    for (rank, _), d in zip(sorted(res.traces.items()), digests):
        r = rd.ranks.add(worker=f"rank{rank}", rank=rank, state=plugin_pb2.READY, total_time_ns=d.meta.total_time_ns)
        r.distributed.CopyFrom(d.distributed)
        r.steps.extend(d.steps)
    return rp, rd


def _view(display, key="parallel"):
    (v,) = [v for v in display.views if v.key == key]
    return v


def _groups(view, section):
    """Each head of `section` with the parts the model places under it."""
    out = []
    for s in view.sentences:
        if s.section != section:
            continue
        if not s.part:
            out.append((s, []))
        else:
            out[-1][1].append(s)
    return out


def test_findings_and_advice_are_placed_by_the_model(run):
    rp, _ = run
    view = _view(parallel_display(rp))
    assert rp.findings and rp.advice, "the planted slow rank fires no finding or advice"
    findings = _groups(view, "findings")
    assert [h.rule for h, _ in findings] == [f.rule for f in rp.findings]
    for (head, parts), f in zip(findings, rp.findings):
        assert head.key == f"finding.{f.rule}" and all(p.rule == f.rule for p in parts)
        assert [p.part for p in parts if p.part == "excess"] == (["excess"] if f.excess_ns > 0 else [])
        chips = [p for p in parts if p.part == "ranks"]
        assert [[s.rank for s in p.spans if s.is_rank] for p in chips] == ([list(f.ranks)] if f.ranks else [])
        cost = [p for p in parts if p.part == "cost"]
        if f.cost_ns > 0:
            assert [s.value.number for s in cost[0].spans if s.is_value] == [f.cost_ns]
    advice = [(h, parts) for h, parts in _groups(view, "advice") if h.rule]
    assert [h.rule for h, _ in advice] == [a.rule for a in rp.advice]
    for (head, parts), a in zip(advice, rp.advice):
        assert head.title == a.title
        triggers = [p for p in parts if p.part == "trigger"]
        assert [[s.rank for s in p.spans if s.is_rank] for p in triggers] == [
            [t.rank] if t.rank >= 0 else [] for t in a.triggers
        ]
    # the text layout prints the same sections: each finding's tag and text, each advice numbered by its title
    text = render(rp)
    for (head, _), f in zip(findings, rp.findings):
        assert f"[{f.category}: {f.rule}" in text and sentence_text(head)[:60] in text.replace("\n   ", " ")
    for i, a in enumerate(rp.advice, 1):
        assert f"{i}. {a.title}." in text


def _records(view, key):
    (t,) = [t for t in view.tables if t.key == key]
    return records(t)


def test_distributed_charts_series_are_the_ranks_split(run):
    """rank_parts and step_parts: each rank's (and each step's) split into computation only, overlap,
    communication only and the rest adds up to its step time, from the rank's own Distribution Summary."""
    _, rd = run
    view = _view(distributed_display(rd), "distributed")
    parts = ("computation_ns", "overlap_ns", "communication_ns", "other_ns")
    rows = _records(view, "rank_parts")
    assert [r["worker"] for r in rows] == [r.worker for r in rd.ranks]
    for row, r in zip(rows, rd.ranks):
        d = r.distributed
        assert d.communication_ns > 0 and d.computation_ns > 0
        assert sum(row[p] for p in parts) == row["total_ns"] == r.total_time_ns
        assert row["overlap_ns"] == d.overlap_ns
        assert row["computation_ns"] + d.overlap_ns == d.computation_ns
        assert row["communication_ns"] + d.overlap_ns == d.communication_ns
        for p in parts:
            assert row[p.replace("_ns", "_share")] == row[p] / r.total_time_ns
        assert row["name"] == f"rank {r.rank}"
    steps = _records(view, "step_parts")
    want = [(r.worker, s.step) for r in rd.ranks for s in r.distributed.steps]
    assert [(x["worker"], x["step"]) for x in steps] == want  # every rank has every step here
    by = {(r.worker, s.step): s for r in rd.ranks for s in r.distributed.steps}
    for x in steps:
        s = by[(x["worker"], x["step"])]
        assert x["total_ns"] == s.range.end_ns - s.range.start_ns == sum(x[p] for p in parts)
        assert (x["overlap_ns"], x["computation_ns"] + s.overlap_ns, x["communication_ns"] + s.overlap_ns) == (
            s.overlap_ns,
            s.computation_ns,
            s.communication_ns,
        )


def test_distributed_step_means_and_slowest_rank(run, monkeypatch):
    """Beyond MANY_RANKS ranks the per-step chart is step_means: per step the ranks' mean of each part (from
    0) and the slowest rank, the same numbers as the ranks' own step_parts rows."""
    _, rd = run
    few = _records(_view(distributed_display(rd), "distributed"), "step_parts")
    monkeypatch.setattr(distributed, "MANY_RANKS", 4)
    view = _view(distributed_display(rd, {"rank5": "the slow one"}), "distributed")
    assert not [t for t in view.tables if t.key == "step_parts"]
    (means_table,) = [t for t in view.tables if t.key == "step_means"]
    assert means_table.title == f"Per step, mean of {len(rd.ranks)} ranks"
    means = records(means_table)
    assert [m["step"] for m in means] == sorted({x["step"] for x in few})
    for m in means:
        rows = [x for x in few if x["step"] == m["step"]]
        assert m["ranks"] == len(rows) == len(rd.ranks)
        for p in ("computation_ns", "overlap_ns", "communication_ns", "other_ns"):
            assert m[p] == pytest.approx(sum(max(0, x[p]) for x in rows) / len(rows), rel=1e-12)
        slowest = max(rows, key=lambda x: x["total_ns"])
        assert (m["slowest_worker"], m["slowest_ns"]) == (slowest["worker"], slowest["total_ns"])
        # named by its label (the run list's, else "rank N")
        assert m["slowest"] == ("the slow one" if slowest["worker"] == "rank5" else slowest["label"])


def test_distributed_partial_answer_draws_the_ranks_read(run):
    """While ranks load, the view carries the charts' series of the ranks read and says it is partial; the
    tables of the ranks come once every rank is read."""
    _, rd = run
    loading = plugin_pb2.RunDistributed()
    loading.CopyFrom(rd)
    for r in loading.ranks[3:]:
        r.Clear()
        r.worker, r.state = f"late{len(r.worker)}", plugin_pb2.LOADING
    view = _view(distributed_display(loading, partial=True), "distributed")
    assert [t.key for t in view.tables] == ["rank_parts", "step_parts"]
    assert [r["worker"] for r in _records(view, "rank_parts")] == [r.worker for r in rd.ranks[:3]]
    (said,) = [s for s in view.sentences if s.key == "partial"]
    assert sentence_text(said).startswith(f"3 of {len(rd.ranks)} ranks read")


def test_breakdown_series_split_each_step_exactly(run):
    """breakdown_steps and breakdown_mean: each bar's parts are the analysis' own (compute only, hidden
    communication, each kind's exposed time, exposed memcpy, idle), their drawn heights fill the step time
    exactly (the kinds cut to the exposed communication), each with its share of the step."""
    rp, _ = run
    view = _view(parallel_display(rp))
    (steps_t,) = [t for t in view.tables if t.key == "breakdown_steps"]
    parts = [c.key for c in steps_t.columns if c.group == "part"]
    bars = [c.key for c in steps_t.columns if c.group == "bar"]
    kinds = [k for k in parts if k not in ("compute_ns", "hidden_comm_ns", "exposed_memcpy_ns", "idle_ns")]
    assert kinds and [c.header for c in steps_t.columns if c.key in kinds] == [
        f"Exposed {kind_label(k)}" for k in kinds_present(rp)
    ]
    rows = records(steps_t)
    assert [(r["worker"], r["step"]) for r in rows] == [(r.worker, s) for r in rp.ranks for s in rp.steps]
    by = {(r.worker, s.step): s for r in rp.ranks for s in r.step_breakdown}
    for row in rows:
        s = by[(row["worker"], row["step"])]
        assert row["total_ns"] == s.range.end_ns - s.range.start_ns
        assert row["compute_ns"] == s.compute_ns - s.hidden_communication_ns
        assert row["hidden_comm_ns"] == s.hidden_communication_ns and row["idle_ns"] == s.idle_ns
        assert row["exposed_comm_ns"] == s.exposed_communication_ns
        own = {f"exposed_{kind_label(k.kind)}_ns": k.exposed_ns for k in s.kinds}
        assert {k: row[k] for k in kinds if row[k]} == {k: v for k, v in own.items() if v}
        assert sum(row[k.replace("_ns", "_bar_ns")] for k in kinds) == s.exposed_communication_ns
        assert sum(row[b] for b in bars) == row["total_ns"]  # the bar is the step
        for k in parts:
            assert row[k.replace("_ns", "_share")] == row[k] / row["total_ns"]
    means = records([t for t in view.tables if t.key == "breakdown_mean"][0])
    assert [m["worker"] for m in means] == [r.worker for r in rp.ranks]
    for m, r in zip(means, rp.ranks):
        assert (m["total_ns"], m["compute_ns"]) == (r.step_time_ns, r.compute_ns - r.hidden_communication_ns)
        for k in r.kinds:
            assert m[f"exposed_{kind_label(k.kind)}_ns"] == k.exposed_ns / r.steps
        assert m["name"] == f"rank {r.rank}" and m["label"] == r.label


def test_heatmap_bins_hold_each_bins_largest_value(run, monkeypatch):
    """step_time_heat and exposed_comm_heat: a row per rank (or, beyond MAX_HEAT_ROWS ranks, per bin of
    consecutive ranks), each step's cell the largest of the analysis' own rank × step values in the bin and
    the rank that has it; the colour scale is the range of the cells."""
    rp, _ = run
    steps = list(rp.steps)
    for rows_max, sizes in ((parallel_charts.MAX_HEAT_ROWS, [1] * 8), (3, [3, 3, 2])):
        monkeypatch.setattr(parallel_charts, "MAX_HEAT_ROWS", rows_max)
        view = _view(parallel_display(rp))
        for key, matrix in (("step_time_heat", rp.step_time), ("exposed_comm_heat", rp.exposed_communication)):
            (t,) = [t for t in view.tables if t.key == key]
            rows = records(t)
            assert [r["ranks"] for r in rows] == sizes
            first = 0
            cells = []
            for r, n in zip(rows, sizes):
                members = rp.ranks[first : first + n]
                for si, s in enumerate(steps):
                    vals = [(matrix.values_ns[(first + i) * len(steps) + si], m) for i, m in enumerate(members)]
                    top = max(v for v, _ in vals)
                    assert r[f"step_{s}"] == top
                    assert r[f"worst_{s}_worker"] == next(m.worker for v, m in vals if v == top)
                    cells.append(top)
                assert r["name"] == (
                    f"rank {members[0].rank}" if n == 1 else f"ranks {members[0].rank}–{members[-1].rank}"
                )
                first += n
            assert (t.scale.min, t.scale.max) == (min(cells), max(cells))


# ---------------------------------------------------------------- What-if


def _placed(view):
    """{section: [(key, part), ...]} of the view's sentences and tables, in the model's order."""
    out: dict = {}
    for x in list(view.sentences) + list(view.tables):
        out.setdefault(x.section, []).append((x.key, x.part))
    return out


def test_whatif_sections_are_the_models(generated):
    """Each sentence and table of the what-if view is placed by the model: the estimates (a sentence per
    what-if of the analysis, in its order, and the table of them), the critical path (its sentence, the steps,
    the three breakdowns of the analysis' path), the schedule (the per-stage table of every stage, the drawn
    slots as a list), MFU, the headline and the units; the CLI's text prints the estimates as bullets under
    the tables and the head above them, by section."""
    _, _, digests = generated
    w = whatif_answer(digests, run="synth", span="0")
    (view,) = w.display.views
    placed = _placed(view)
    assert "" not in placed, placed.get("")
    assert [k for k, _ in placed["estimates"]] == [
        "whatif." + x
        for x in (
            "dp_overlap",
            "straggler",
            "balanced_stages",
            "double_micro_batches",
            "no_launch_overhead",
            "balanced_sequences",
        )
    ][: len(w.what_ifs)] + ["whatif"]
    estimates = [s for s in view.sentences if s.section == "estimates"]
    assert [sentence_text(s).split(":")[0] for s in estimates] == [x.title for x in w.what_ifs]
    cp = w.critical_path
    assert cp.steps and placed["path"] == [
        ("whatif.path", ""),
        ("critical_path_steps", ""),
        ("critical_path_kinds", "breakdown"),
        ("critical_path_ranks", "breakdown"),
        ("critical_path_operators", "breakdown"),
    ]
    tables = {t.key: t for t in view.tables}
    assert [r["step"] for r in records(tables["critical_path_steps"])] == [s.step for s in cp.steps]
    assert [r["key"] for r in records(tables["critical_path_kinds"])] == [p.key for p in cp.total.by_kind]
    assert [r["key"] for r in records(tables["critical_path_ranks"])] == [p.key for p in cp.total.by_rank]
    sched = w.schedule
    assert sched.stages == 2 and ("schedule_slots", "list") in placed["schedule"]
    assert [k for k, p in placed["schedule"] if p != "list"] == [
        "schedule.kind",
        "schedule.bubble",
        "schedule_stages",
        "schedule_bubbles",
    ]
    assert [r["stage"] for r in records(tables["schedule_stages"])] == [t.stage for t in sched.stage_totals]
    assert len(tables["schedule_slots"].rows) == sum(len(m.slots) for p in sched.pipelines for m in p.stage_steps)
    assert {k for k, _ in placed["mfu"]} >= {"mfu"}  # the sentence: why not computed, no model given
    assert [k for k, _ in placed["units"]] == ["units"]
    assert {k for k, _ in placed.get("headline", [])} <= {"whatif.best", "whatif.best.straggler", "whatif.best.none"}
    assert all(k == "note" for k, _ in placed.get("notes", []))

    text = render_display(w.display).splitlines()
    first_table = next(i for i, line in enumerate(text) if "What-if estimates" in line)
    for s in view.sentences:
        said = sentence_text(s, "ms")[:60]
        at = next(i for i, line in enumerate(text) if said[:40] in line)
        if s.section in ("units", "path", "headline"):
            assert at < first_table, s.key
        else:
            assert at > first_table, s.key
        if s.section == "estimates":
            assert text[at].startswith("- ") and said[:40] in text[at][2:], s.key


def test_schedule_opens_on_the_pipeline_that_waits_most(generated):
    """The schedule names the pipeline and step the chart opens on: the pipeline whose stages wait most
    (summed from its own stage-steps' waiting, the lowest index of a tie; here the replica beside the planted
    slow rank's, which waits for it), and its first step."""
    res, _, digests = generated
    sched = whatif_answer(digests, run="synth", span="0").schedule
    assert len(sched.pipelines) == sched.pipelines_total == 4  # DP2 x MP2: a pipeline each, all drawn
    waits = {p.index: sum(m.wait_ns for m in p.stage_steps) for p in sched.pipelines}
    most = max(sorted(waits), key=lambda i: waits[i])
    assert waits[most] > min(waits.values())
    assert sched.drawn_pipeline == most
    (pipe,) = [p for p in sched.pipelines if p.index == most]
    coords = {r["rank"]: r["coords"] for r in res.manifest["ranks"]}
    assert all(coords[r]["dp"] != coords[SLOW_RANK]["dp"] for r in pipe.ranks), pipe.ranks
    assert sched.drawn_step == min(m.step for m in pipe.stage_steps) == min(sched.steps)


def test_launch_queue_series_are_named_by_the_model(generated):
    """The Overview's launch-queue chart draws a line per `series` of the model's table: each stream of the
    rank's analysis, named "GPU<device> stream <stream>", with that stream's own points in order."""
    _, summaries, _ = generated
    s = summaries[SLOW_RANK]
    (view,) = [v for v in summary_display(s).views if v.key == "overview"]
    (t,) = [t for t in view.tables if t.key == "launch_queue"]
    lines: dict = {}
    for r in records(t):
        lines.setdefault(r["series"], []).append((r["time_ns"], r["depth"]))
    assert len(s.comm.launch) >= 2
    assert lines == {
        f"GPU{ls.device_id} stream {ls.stream}": list(zip(ls.queue_time_ns, ls.queue_depth)) for ls in s.comm.launch
    }
