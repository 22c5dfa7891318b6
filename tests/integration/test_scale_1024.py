"""A generated 1,024-rank run (DP128 × PP4 × MP2, one planted slow GPU; tests/support/scale_run.py) through the
CLI and a real ``tensorboard``: the CLI reads what ``preprocess`` stored (it parses nothing), the verdict
names exactly the planted rank with the job cost the generator measured, the topology and every pipeline
are the generator's, and TensorBoard over that cache parses nothing and answers every route, the
timeline page by page through all 1,024 ranks. (The browser side of the same run:
tests/browser/test_frontend_scale.py.)"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time

import pytest

from support import scale_run as sr
from support.plugin_testlib import tensorboard_process
from test_tensorboard_e2e import api, fetch
from tb_paddle_profile.pipeline import jobs
from tb_paddle_profile import timeline
from tbp_synth.truth import load_truth
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2, timeline_pb2

pytest.importorskip("tensorboard")
RANKS = sr.DP * sr.MP * sr.PP
DEADLINE_S = 600


def cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", *args],
        cwd=str(sr.REPO),
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=env,
    )


@pytest.fixture(scope="module")
def analysis(scale_run) -> plugin_pb2.RunParallel:
    out = cli("distributed", str(scale_run.run_dir), "--cache-dir", str(scale_run.cache), "--format", "json", "-v")
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"{RANKS} trace(s): 0 parsed, {RANKS} from the cache" in out.stderr  # preprocess stored them all
    from google.protobuf import json_format

    return json_format.Parse(out.stdout, plugin_pb2.RunParallel(), ignore_unknown_fields=True)


def test_the_verdict_names_exactly_the_planted_rank_with_its_cost(scale_run, analysis):
    truth = load_truth(scale_run.run_dir)
    (planted,) = truth.planted
    assert planted["rank"] == sr.SLOW_RANK and planted["type"] == "device_slow"
    v = analysis.straggler
    assert v.found and not v.uncertain
    assert [s.rank for s in v.stragglers] == [sr.SLOW_RANK]
    (s,) = v.stragglers
    assert s.cause == "device_compute" and s.longer_compute
    # Its cost to the job per step, not summed over its 127 replicas' peers: the generator's control
    # simulation (the same run without the slow GPU) gives the truth.
    want = planted["job_cost_ns_per_step"]
    assert want > 0 and abs(s.job_cost_ns - want) <= 0.25 * want, (s.job_cost_ns, want)
    median_step = sorted(r.step_time_ns for r in analysis.ranks)[RANKS // 2]
    assert s.job_cost_ns < median_step
    anomalies = [f for f in analysis.findings if f.category == "anomaly"]
    assert [list(f.ranks) for f in anomalies] == [[sr.SLOW_RANK]]


def test_topology_pipelines_and_matching_are_the_generators(scale_run, analysis):
    truth = load_truth(scale_run.run_dir)
    t = analysis.topology
    assert (t.dp, t.pp, t.mp) == (sr.DP, sr.PP, sr.MP) and t.complete and t.matches_fleet_order
    coords = {r["rank"]: (r["dp"], r["pp"], r["mp"]) for r in truth.ranks}
    assert {r.rank: (r.dp, r.pipeline_stage, r.mp) for r in analysis.ranks} == coords
    assert analysis.pipeline.pipelines == sr.DP * sr.MP  # one per (dp, mp): every pipeline found
    assert [len(st.ranks) for st in analysis.pipeline.stages] == [sr.DP * sr.MP] * sr.PP
    # every instance of the truth matched with its members
    assert analysis.matched_total == truth.n_instances
    assert analysis.matching.matched_instances == analysis.matching.instances
    assert all(r.coverage == 1.0 for r in analysis.ranks)
    for r in analysis.ranks:
        assert r.label.startswith(f"rank {r.rank} · dp{r.dp} pp{r.pipeline_stage} mp{r.mp}"), r.label


@pytest.fixture(scope="module")
def server(scale_run, tmp_path_factory):
    parse_log = tmp_path_factory.mktemp("scale1024-parses") / "parses.log"
    env = {
        "TB_PADDLE_PROFILE_CACHE": str(scale_run.cache),
        "TB_PADDLE_PROFILE_WORKERS": "2",
        jobs.ENV_PARSE_LOG: str(parse_log),
    }
    with tensorboard_process(scale_run.logdir, env, tmp_path_factory.mktemp("scale1024-tb"), DEADLINE_S) as (
        base,
        _,
        log,
    ):
        yield base, parse_log, log


def _ok(base, route, **params):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        status, headers, body = api(base, route, **params)
        if status != 202:
            assert status == 200, (route, params, status, body[:300])
            return headers, body
        assert time.monotonic() < deadline, f"{route} kept answering 202"
        time.sleep(0.5)


def _plain(headers, body) -> bytes:
    return gzip.decompress(body) if headers.get("Content-Encoding") == "gzip" else body


def test_tensorboard_over_the_cache_parses_nothing_and_every_route_answers(server, analysis):
    base, parse_log, log = server
    deadline = time.monotonic() + DEADLINE_S
    while True:
        rl = plugin_pb2.RunList.FromString(api(base, "runs")[2])
        states = [s.state for r in rl.runs for w in r.workers for s in w.spans]
        if len(states) == RANKS and all(s == plugin_pb2.READY for s in states):
            break
        assert time.monotonic() < deadline, "not loaded in time"
        time.sleep(0.5)
    (run,) = rl.runs
    assert [w.rank for w in run.workers] == list(range(RANKS))

    _ok(base, "parallel", run=sr.RUN, span="0")  # the CLI's analysis, read from the cache
    status, headers, body = fetch(
        f"{base}/data/plugin/paddle_profile/parallel?run={sr.RUN}&span=0", {"Accept-Encoding": "gzip"}
    )
    assert status == 200 and headers.get("Content-Encoding") == "gzip"
    assert len(body) <= 2 << 20  # the summary-first answer at 1,024 ranks, on the wire
    par = plugin_pb2.RunParallel.FromString(_plain(headers, body))
    assert not par.matched and par.matched_total == analysis.matched_total
    assert [s.rank for s in par.straggler.stragglers] == [s.rank for s in analysis.straggler.stragglers]
    # the labels of the run list are the analysis's once it exists
    rl = plugin_pb2.RunList.FromString(api(base, "runs")[2])
    labels = {r.rank: r.label for r in par.ranks}
    assert {w.rank: w.label for w in rl.runs[0].workers} == labels

    slow = next(w for w in run.workers if w.rank == sr.SLOW_RANK)
    _, body = _ok(base, "summary", run=sr.RUN, worker=slow.worker, span="0")
    assert summary_pb2.Summary.FromString(body).meta.rank == sr.SLOW_RANK
    _, body = _ok(base, "distributed", run=sr.RUN, span="0")
    assert len(plugin_pb2.RunDistributed.FromString(body).ranks) == RANKS
    _, body = _ok(base, "parallel_matched", run=sr.RUN, span="0", rank=sr.SLOW_RANK, limit=50)
    page = plugin_pb2.MatchedPage.FromString(body)
    assert 0 < len(page.matched) <= 50 and all(any(m.rank == sr.SLOW_RANK for m in g.members) for g in page.matched)

    # The timeline, page by page through all 1,024 ranks, every window within its bound.
    seen, offset, total = [], 0, None
    while total is None or offset < total:
        headers, body = _ok(base, "timeline", run=sr.RUN, span="0", px=1200, rank_offset=offset)
        data = _plain(headers, body)
        assert len(data) <= timeline.WINDOW_MAX_BYTES
        window = timeline_pb2.TimelineWindow.FromString(data)
        assert 0 < len(window.ranks) <= timeline.WINDOW_MAX_RANKS and all(r.lanes for r in window.ranks)
        total = window.ranks_total
        seen += [r.rank for r in window.ranks]
        offset += len(window.ranks)
    assert seen == list(range(RANKS))
    _, body = _ok(base, "timeline_search", run=sr.RUN, span="0", q="ProfileStep", limit=10)
    assert timeline_pb2.TimelineSearch.FromString(body).matches
    assert json.loads(api(base, "status")[2])["counts"] == {"READY": RANKS}
    # TensorBoard parsed nothing: preprocess's one parse per trace served it all.
    assert not parse_log.exists() or parse_log.read_text() == ""
    assert "Traceback" not in log.read_text()


def test_the_compact_timeline_answers_at_1024_ranks_a_page_at_a_time(server, analysis):
    """timeline_compact (issue 26.2) at 1,024 ranks: every rank in the order, the planted straggler first
    and its role peers (its stage and mp index, by the analysis' coordinates) next, a page of rows opening
    only its ranks' indexes, in bounded time and size."""
    base, _, _ = server
    _ok(base, "parallel", run=sr.RUN, span="0")
    t0 = time.monotonic()
    headers, body = _ok(base, "timeline_compact", run=sr.RUN, span="0", bins=1000, rank_limit=64)
    first = time.monotonic() - t0
    msg = timeline_pb2.TimelineCompact.FromString(_plain(headers, body))
    order = [o.rank for o in msg.order]
    assert sorted(order) == list(range(RANKS)) and order[0] == sr.SLOW_RANK and msg.order[0].role == "straggler"
    me = next(r for r in analysis.ranks if r.rank == sr.SLOW_RANK)
    peers = {r.rank for r in analysis.ranks if (r.pipeline_stage, r.mp) == (me.pipeline_stage, me.mp)} - {sr.SLOW_RANK}
    assert set(order[1 : 1 + len(peers)]) == peers and all(o.role == "peer" for o in msg.order[1 : 1 + len(peers)])
    assert len(msg.rows) == 64 and all(r.state == "" and len(r.compute) == 1000 for r in msg.rows)
    t0 = time.monotonic()
    headers, body = _ok(base, "timeline_compact", run=sr.RUN, span="0", bins=1000, rank_offset=900, rank_limit=500)
    page = time.monotonic() - t0
    msg = timeline_pb2.TimelineCompact.FromString(_plain(headers, body))
    assert msg.rank_offset == 900 and len(msg.rows) == 124  # at most 128 rows a request; the last 124
    assert len(body) < 2 << 20
    print(
        f"timeline_compact at {RANKS} ranks: first page {first:.2f} s, 124 rows {page:.2f} s, {len(body) / 1024:.0f} KB"
    )
