"""The display model of the run views (display/parallel.py) against the generator's planted truth.

A run goes the way of a real one (tests/unit/test_crossrank_truth.py): generate() writes Paddle traces
of DP4 x MP2 x PP2 on two hosts with skewed clocks, rank 9 stalling 15 ms per step in its data
loader; the traces are parsed, digested and analysed. The truth (tbp_synth/truth.py: every member's
wait, the hosts' offsets, the labels, the planted stall) is what the tables, sentences, the CLI's
text and CSV, and the plugin's answers are held to.
"""

import contextlib
import csv
import io
import re

import pytest

from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank.labels import SEP
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.cli.commands import main
from tb_paddle_profile.present.display.cells import DURATION, sentence_text
from tb_paddle_profile.present.display.export import records, to_csv
from tb_paddle_profile.present.display.distributed import distributed_display
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.display.parallel_common import ranks_text, spans
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.render.parallel_text import render, render_display, table_lines
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2
from tbp_synth import SynthConfig, generate
from tbp_synth.truth import load_truth

WAIT_TOLERANCE_NS = 500_000  # per rank and step, as tests/unit/test_crossrank_truth.py (issue 13)
OFFSET_TOLERANCE_NS = 1_000
COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all")  # not send/recv
CONFIG = dict(dp=4, mp=2, pp=2, steps=3, names="default", clock_skew_us=3000, slow_host_rank=9, host_delay_us=15_000)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("display_parallel")
    out = root / "logdir" / "host0"
    res = generate(SynthConfig(**CONFIG), str(out))
    digests = [digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())]
    rp = analyze_run(digests, run="host0", span="0")
    return root, load_truth(str(out)), rp


def _view(display, key="parallel"):
    (v,) = [v for v in display.views if v.key == key]
    return v


def _table(view, key):
    (t,) = [t for t in view.tables if t.key == key]
    return t


def _said(view, key):
    return [s for s in view.sentences if s.key == key]


def test_the_verdict_names_the_planted_rank_by_its_label(run):
    _, t, rp = run
    (p,) = t.planted
    label = t.ranks[p["rank"]]["label"]
    view = _view(parallel_display(rp))
    (verdict,) = _said(view, "verdict")
    assert verdict.level == "warning"
    ranks = [(s.rank, s.text) for s in verdict.spans if s.is_rank]
    assert ranks == [(p["rank"], label)]  # the planted rank, and no other, with the generator's label
    times = [s for s in verdict.spans if s.is_value]
    assert times and all(s.format.kind == DURATION for s in times)
    ms, us = sentence_text(verdict, "ms"), sentence_text(verdict, "us")
    assert label in ms and "{ns:" not in ms and " ms " in ms and " us " in us and " ms " not in us
    # the cost to the job printed in the sentence is the generator's (measured against the run without the stall)
    costs = [s.value.number for s in times]
    assert min(abs(c - p["job_cost_ns_per_step"]) for c in costs) <= WAIT_TOLERANCE_NS
    (reason,) = _said(view, "verdict.straggler")
    assert [s.rank for s in reason.spans if s.is_rank] == [p["rank"]] and label in sentence_text(reason)
    (row,) = records(_table(view, "stragglers"))
    assert row["rank"] == p["rank"] and row["label"] == label and row["cause"] == "host: its data loader"
    assert abs(row["job_cost_ns"] - p["job_cost_ns_per_step"]) <= WAIT_TOLERANCE_NS
    outliers = records(_table(view, "outliers"))
    assert outliers[0]["rank"] == p["rank"] and outliers[0]["named"] == "1"


def test_the_wait_tables_are_the_analysis_and_the_truth(run):
    _, t, rp = run
    view = _view(parallel_display(rp))
    waits = records(_table(view, "waits"))
    assert [w["rank"] for w in waits] == [r.rank for r in rp.ranks] == [x["rank"] for x in t.ranks]
    for w, r in zip(waits, rp.ranks):
        assert (w["wait_ns"], w["caused_wait_ns"], w["compute_ns"]) == (r.wait_ns, r.caused_wait_ns, r.compute_ns)
        assert w["arrived_last"] == f"{r.last_arrivals}/{r.matched}" and w["peers"] == ranks_text(r.peers)
        assert abs(w["wait_ns"] - t.waits_per_step(r.rank, COLLECTIVES)) <= WAIT_TOLERANCE_NS, r.rank
    per_kind = records(_table(view, "rank_kinds"))
    for r in rp.ranks:
        total = sum(x["wait_ns"] for x in per_kind if x["rank"] == r.rank)  # per step already
        assert abs(total - t.waits_per_step(r.rank)) <= WAIT_TOLERANCE_NS, r.rank
    ranks = records(_table(view, "ranks"))
    assert [x["label"] for x in ranks] == [x["label"] for x in t.ranks]
    for x, r in zip(ranks, rp.ranks):
        assert x["step_ns"] == r.step_time_ns and x["exposed_comm_share"] == r.exposed_communication_ns / r.step_time_ns
        assert abs(x["step_ns"] - t.step_time_ns[r.rank].mean()) <= WAIT_TOLERANCE_NS
    assert [row.link for row in _table(view, "ranks").rows] == [f"rank:{r.rank}" for r in rp.ranks]
    steps = records(_table(view, "step_time"))
    for x in steps:
        for i, s in enumerate(t.steps):
            assert abs(x[f"step_{s}"] - t.step_time_ns[x["rank"]][i]) <= WAIT_TOLERANCE_NS


def test_topology_and_host_clocks_are_the_planted_ones(run):
    _, t, rp = run
    view = _view(parallel_display(rp))
    cfg = t.config
    topo = _table(view, "topology")
    assert topo.title == f"Topology: DP {cfg['dp']} x PP {cfg['pp']} x MP {cfg['mp']} (complete, Fleet's rank order)"
    host_of = {x["hostname"]: x["host"] for x in t.ranks}
    clocks = records(_table(view, "clocks"))
    (ref,) = [c for c in clocks if c["reference"] == "reference"]
    base = t.host_offsets_ns[host_of[ref["host"]]]
    assert len(clocks) == len(t.host_offsets_ns) == 2
    for c in clocks:
        assert abs(c["offset_ns"] - (t.host_offsets_ns[host_of[c["host"]]] - base)) <= OFFSET_TOLERANCE_NS
        assert c["ranks"] == ranks_text(sorted(x["rank"] for x in t.ranks if x["hostname"] == c["host"]), 8)


def test_the_text_layout_prints_the_model(run):
    _, t, rp = run
    display = parallel_display(rp, "ms")
    view = _view(display)
    text = render(rp, "ms")
    for tb in view.tables:  # every table but the panels' own, under its title and header
        head = "\n".join(table_lines(tb, "ms")[:3])
        assert (head in text) != tb.text_hidden, tb.key
    assert "{ns:" not in text
    # the text is laid out from a display without the tables it never shows (text=True): the same text
    assert text == render_display(display)
    assert {t.key for t in _view(parallel_display(rp, "ms", text=True)).tables} >= {
        tb.key for tb in view.tables if not tb.text_hidden
    }
    # the "Waited" column read back from the terminal's text is the truth's wait, in ms
    block = text.split("Waits at collectives other than send/recv")[1].split("\n\n")[0].splitlines()
    rows = [line.split() for line in block[3:] if line and line[0].isdigit()]
    assert [int(r[0]) for r in rows] == [x["rank"] for x in t.ranks]
    for r in rows:
        assert abs(float(r[1]) * 1e6 - t.waits_per_step(int(r[0]), COLLECTIVES)) <= WAIT_TOLERANCE_NS + 5_000
    label = t.ranks[t.planted[0]["rank"]]["label"]
    verdict = text.split("Straggler verdict")[1].split("Findings")[0]
    assert label in " ".join(verdict.split()) and "UNCERTAIN" not in verdict  # named by its label (wrapped)
    for s in _said(view, "advice.none") + [s for s in view.sentences if s.key.endswith(".trigger")]:
        assert sentence_text(s, "ms") in text


def test_sentence_spans_take_times_and_rank_references():
    labels = {3: "rank 3 · dp1 pp0 mp0 · GPU3", 30: "rank 30"}
    got = spans(
        "Rank 3 waits {ns:1500000} for rank 3 · dp1 pp0 mp0 · GPU3; the least covered rank 93% "
        "and rank 7, ranks 3-4; rank 30.",
        labels,
    )
    kinds = [
        ("rank", s.rank, s.text) if s.is_rank else ("ns", s.value.number) if s.is_value else ("lit", s.text)
        for s in got
    ]
    assert kinds == [
        ("rank", 3, "Rank 3 · dp1 pp0 mp0 · GPU3"),
        ("lit", " waits "),
        ("ns", 1500000.0),
        ("lit", " for "),
        ("rank", 3, "rank 3 · dp1 pp0 mp0 · GPU3"),
        ("lit", "; the least covered rank 93% and rank 7, ranks 3-4; "),
        ("rank", 30, "rank 30"),
        ("lit", "."),
    ]
    s = dpb.Sentence(spans=got)
    assert sentence_text(s, "ms") == (
        "Rank 3 · dp1 pp0 mp0 · GPU3 waits 1.50 ms for rank 3 · dp1 pp0 mp0 · GPU3; the "
        "least covered rank 93% and rank 7, ranks 3-4; rank 30."
    )
    assert ranks_text(list(range(40)) + [50, 52, 53]) == "0-39,50,52-53" and ranks_text([2, 1]) == "2,1"


def _cli(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_cli_csv_gives_every_table_with_raw_values(run, tmp_path):
    root, t, rp = run
    run_dir = str(root / "logdir" / "host0")
    cache = ["--cache-dir", str(tmp_path / "cache"), "--jobs", "1"]
    code, out, _ = _cli("parallel", run_dir, "--format", "csv", *cache)
    assert code == 0
    heads = re.findall(r"^# (parallel/\w+): (.*)$", out, re.M)
    view = _view(parallel_display(rp))
    assert heads == [(f"parallel/{tb.key}", tb.title) for tb in view.tables]
    code, out, _ = _cli("distributed", run_dir, "--format", "csv", "--table", "waits", *cache)
    assert code == 0 and not out.startswith("#")  # --table: plain CSV, its header line first
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [int(r["rank"]) for r in rows] == [x["rank"] for x in t.ranks]
    for r in rows:
        assert abs(int(r["wait_ns"]) - t.waits_per_step(int(r["rank"]), COLLECTIVES)) <= WAIT_TOLERANCE_NS
        assert float(r["coverage"]) == 1.0
    assert out == to_csv(_table(view, "waits"))  # the analysis in the CLI is this one
    code, out, err = _cli("parallel", run_dir, "--format", "csv", "--table", "nope", *cache)
    assert code == 2 and not out and err.count("\n") == 1 and run_dir in err and "parallel/waits" in err


def test_plugin_answers_carry_the_displays(run, tmp_path, monkeypatch):
    from support.plugin_testlib import PREFIX, make_plugin, ready, tree_digest

    root, t, rp = run
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    before = tree_digest(root / "logdir")
    plugin, client = make_plugin(str(root / "logdir"))
    try:
        ready(plugin)
        # before any analysis, the Distributed view names the ranks as the run list does: no coordinates yet,
        # the generator's host, GPU and pid
        rd = plugin_pb2.RunDistributed.FromString(client.get(f"{PREFIX}/distributed?run=host0&span=0").get_data())
        shown = {r["worker"]: r["label"] for r in records(_table(_view(rd.display, "distributed"), "ranks"))}
        (entry,) = [
            r for r in plugin_pb2.RunList.FromString(client.get(f"{PREFIX}/runs").get_data()).runs if r.run == "host0"
        ]
        assert shown == {w.worker: w.label for w in entry.workers}
        for x in t.ranks:
            assert shown[x["worker"]].split(SEP)[1:] == [p for p in x["label"].split(SEP) if not p.startswith("dp")][1:]
        resp = client.get(f"{PREFIX}/parallel?run=host0&span=0")
        assert resp.status_code == 200
        got = plugin_pb2.RunParallel.FromString(resp.get_data())
        view = _view(got.display)
        (p,) = t.planted
        (verdict,) = _said(view, "verdict")
        assert [(s.rank, s.text) for s in verdict.spans if s.is_rank] == [(p["rank"], t.ranks[p["rank"]]["label"])]
        waits = records(_table(view, "waits"))
        assert [w["wait_ns"] for w in waits] == [r.wait_ns for r in got.ranks]
        assert [n for n in _said(view, "note")] and not got.matched  # summary first: no matched instances
        resp = client.get(f"{PREFIX}/csv?run=host0&span=0&view=parallel&table=waits")
        assert resp.status_code == 200 and resp.get_data(as_text=True) == to_csv(_table(view, "waits"))
        for r in csv.DictReader(io.StringIO(resp.get_data(as_text=True))):
            assert abs(int(r["wait_ns"]) - t.waits_per_step(int(r["rank"]), COLLECTIVES)) <= WAIT_TOLERANCE_NS

        resp = client.get(f"{PREFIX}/distributed?run=host0&span=0")
        assert resp.status_code == 200
        rd = plugin_pb2.RunDistributed.FromString(resp.get_data())
        dview = _view(rd.display, "distributed")
        rows = records(_table(dview, "ranks"))
        # Paddle's default worker names tell no rank: each has the number the run list gives it (Fleet's order:
        # hosts, GPUs, pids; issue 26.4), the truth's, and the label the analysis gave it
        by_label = {x["label"]: x for x in t.ranks}
        assert sorted(r["label"] for r in rows) == sorted(by_label)
        for r in rows:
            truth = by_label[r["label"]]
            assert r["worker"] == truth["worker"] and r["rank"] == truth["rank"]
            truth_total = t.step_time_ns[truth["rank"]].sum()
            assert r["state"] == "ready" and r["steps"] == len(t.steps)
            assert abs(r["total_ns"] - truth_total) <= 3 * WAIT_TOLERANCE_NS
            assert r["comm_ratio"] == pytest.approx(r["comm_ns"] / r["total_ns"])
            assert r["other_ns"] == r["total_ns"] - (r["comp_ns"] + r["comm_ns"] - r["overlap_ns"])
        steps = records(_table(dview, "steps"))
        assert len(steps) == len(t.ranks) * len(t.steps)
        for s in steps:
            i = t.steps.index(s["step"])
            assert abs(s["total_ns"] - t.step_time_ns[by_label[s["label"]]["rank"]][i]) <= WAIT_TOLERANCE_NS
        assert distributed_display(rd, {x["worker"]: x["label"] for x in t.ranks}) == rd.display
        resp = client.get(f"{PREFIX}/csv?run=host0&span=0&view=distributed&table=steps")
        assert resp.status_code == 200 and resp.get_data(as_text=True) == to_csv(_table(dview, "steps"))
    finally:
        plugin.close()
    assert tree_digest(root / "logdir") == before  # nothing written in the logdir
