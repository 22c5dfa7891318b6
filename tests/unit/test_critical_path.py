"""The critical path across ranks (analysis/crossrank/replay.py, critical_path.py, analysis/program.py) on
generated runs, against the generator's own step times and planted slow rank, and on real traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tb_paddle_profile.analysis import program as P
from tb_paddle_profile.analysis.crossrank import critical_path as C
from tb_paddle_profile.analysis.crossrank import replay as R
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.v1 import whatif_pb2 as wpb
from tbp_synth import SynthConfig, generate
from tbp_synth.truth import load_truth

SLOW_RANK = 1  # stage 0, mp 1, dp 0


def digests_of(folder: Path):
    files = sorted(folder.glob("*.paddle_trace.json"))
    return [digest_of(summarize_bytes(f.read_bytes(), f.name)) for f in files]


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cp_slow")
    cfg = SynthConfig(
        dp=2,
        mp=2,
        pp=2,
        steps=2,
        layers=2,
        micro_batches=2,
        slow_rank=SLOW_RANK,
        slow_factor=1.5,
        names="default",
        clock_skew_us=20,
        gpus_per_node=4,
    )
    generate(cfg, str(out))
    digests = digests_of(out)
    prep = R.prepare(digests)
    graph = R.Graph(prep)
    cp = wpb.CriticalPath()
    start, end = C.critical_path(graph, cp)
    return load_truth(str(out)), digests, graph, cp, start, end


def test_the_program_is_small_and_ordered(slow_run):
    _, digests, graph, _, _, _ = slow_run
    for d in digests:
        p = d.parallel.program
        n = len(p.kind)
        steps = len(d.parallel.steps)
        assert 0 < n <= 300 * steps
        idx = np.arange(n)
        for col in (p.stream_pred, p.launch_pred, p.cross_pred, p.wait_pred):
            a = np.asarray(col)
            assert ((a == -1) | ((a >= 0) & (a < idx))).all()  # predecessors first
        kinds = set(p.kind)
        assert {P.COMPUTE, P.COLLECTIVE, P.STEP_START, P.STEP_END, P.SYNC} <= kinds
        # every collective instance of the rank is one node
        coll = [c for c in p.collective if c >= 0]
        assert sorted(coll) == list(range(len(d.parallel.collectives.kind)))
    assert not graph.stalled


def test_the_unchanged_replay_gives_the_traced_step_times(slow_run):
    t, _, graph, cp, start, end = slow_run
    rk, st, sn, en = graph.step_nodes()
    replayed = end[en] - start[sn]
    ranks = [graph.prep.ranks[i].rank for i in rk.tolist()]
    steps = t.steps
    truth = np.array([t.step_time_ns[r, steps.index(s)] for r, s in zip(ranks, st.tolist())], dtype=float)
    assert replayed.size == t.step_time_ns.size
    assert np.abs(replayed - truth).max() <= 0.01 * truth.min()
    assert abs(cp.replayed_step_ns - t.step_time_ns.mean()) <= 0.01 * t.step_time_ns.mean()
    assert cp.replay_error < 0.01


def test_the_path_tiles_each_step_and_goes_through_the_slow_rank(slow_run):
    t, _, graph, cp, _, _ = slow_run
    assert len(cp.steps) == len(t.steps)
    for s in cp.steps:
        assert abs(s.breakdown.length_ns - s.replayed_ns) <= 0.01 * s.replayed_ns
        parts = s.breakdown.by_kind
        assert sum(p.ns for p in parts) == pytest.approx(s.breakdown.length_ns, abs=len(parts))
    on_path = {p.rank: p.ns for p in cp.total.by_rank}
    assert SLOW_RANK in on_path
    peers = [
        x["rank"]
        for x in t.ranks
        if x["pp"] == t.ranks[SLOW_RANK]["pp"] and x["mp"] == t.ranks[SLOW_RANK]["mp"] and x["rank"] != SLOW_RANK
    ]
    assert all(on_path[SLOW_RANK] > on_path.get(p, 0) for p in peers)
    kinds = {p.key for p in cp.total.by_kind}
    assert {"compute", "communication:all_reduce"} <= kinds


def test_segments_land_on_their_ranks_traces(slow_run):
    _, digests, graph, cp, _, _ = slow_run
    by_rank = {r.rank: r.digest.meta for r in graph.prep.ranks}  # the ranks as the analysis numbered them
    assert cp.segments
    for seg in cp.segments:
        m = by_rank[seg.rank]
        assert seg.start_unix_ns <= seg.end_unix_ns
        assert m.origin_unix_ns + m.start_ns - 1 <= seg.start_unix_ns
        assert seg.end_unix_ns <= m.origin_unix_ns + m.end_ns + 1
    assert {s.rank for s in cp.segments} >= {SLOW_RANK}


@pytest.mark.parametrize("folder", ["cpu-gpt-2rank-gloo", "cpu-gpt-single", "gpu-synthetic-2rank"])
def test_real_traces_replay(shared_traces, folder):
    digests = digests_of(shared_traces / folder)
    graph = R.Graph(R.prepare(digests))
    cp = wpb.CriticalPath()
    C.critical_path(graph, cp)
    assert cp.steps and cp.replay_error < 0.01
    rk, st, sn, en = graph.step_nodes()
    s, e = graph.replay()
    obs = graph.obs_end[en] - graph.obs_start[sn]
    assert np.abs((e[en] - s[sn]) - obs).max() <= 0.01 * obs.min()
