"""More ranks than the timeline store keeps open (64): a generated 66-rank run (DP33 x MP2, small per rank)
through a real ``tensorboard`` process. Every route answers; the timeline of all ranks answers page by
page within its bound (timeline.WINDOW_MAX_RANKS ranks, WINDOW_MAX_BYTES); search and range read every
rank's index at once; each trace was parsed once (the generator's files, counted by the parse log)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time

import pytest

from support.plugin_testlib import tensorboard_process, tree_digest
from test_tensorboard_e2e import api, descendants, fetch
from tb_paddle_profile.pipeline import jobs
from tb_paddle_profile import timeline
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2, timeline_pb2

pytest.importorskip("tensorboard")
DP, MP = 33, 2
RANKS = DP * MP
DEADLINE_S = 300


@pytest.fixture(scope="module")
def run66(tmp_path_factory):
    root = tmp_path_factory.mktemp("scale-logdir")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            str(DP),
            "--mp",
            str(MP),
            "--pp",
            "1",
            "--layers",
            "1",
            "--micro-batches",
            "1",
            "--steps",
            "2",
            "--out",
            str(root / "big"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    (root / "big" / "synth_manifest.json").unlink(missing_ok=True)
    for extra in (root / "big").glob("*.json"):
        if not extra.name.endswith(".paddle_trace.json"):
            extra.unlink()
    return root


@pytest.fixture(scope="module")
def server(run66, tmp_path_factory):
    before = tree_digest(run66)
    parse_log = tmp_path_factory.mktemp("scale-parses") / "parses.log"
    env = {
        "TB_PADDLE_PROFILE_CACHE": str(tmp_path_factory.mktemp("scale-cache")),
        "TB_PADDLE_PROFILE_WORKERS": "2",
        jobs.ENV_PARSE_LOG: str(parse_log),
    }
    with tensorboard_process(run66, env, tmp_path_factory.mktemp("scale-tb"), DEADLINE_S) as (base, proc, log):
        yield base, parse_log, log
        children = descendants(proc.pid)  # its worker processes, before it is stopped
    for _ in range(100):
        if not [p for p in children if os.path.exists(f"/proc/{p}")]:
            break
        time.sleep(0.1)
    assert tree_digest(run66) == before, "the logdir changed"


def _loaded(base):
    deadline = time.monotonic() + DEADLINE_S
    while True:
        status, _, body = api(base, "runs")
        assert status == 200
        rl = plugin_pb2.RunList.FromString(body)
        states = [s.state for r in rl.runs for w in r.workers for s in w.spans]
        if len(states) == RANKS and all(s == plugin_pb2.READY for s in states):
            return rl
        assert time.monotonic() < deadline, f"not loaded in time: {states}"
        time.sleep(0.5)


def _ok(base, route, **params):
    """The answer of a route once it stops answering 202 (bounded)."""
    deadline = time.monotonic() + 120
    while True:
        status, headers, body = api(base, route, **params)
        if status != 202:
            assert status == 200, (route, params, status, body[:300])
            return headers, body
        assert time.monotonic() < deadline, f"{route} kept answering 202"
        time.sleep(0.3)


def test_every_route_answers_for_66_ranks_and_the_timeline_pages_through_them(server):
    base, parse_log, log = server
    rl = _loaded(base)
    (run,) = rl.runs
    assert run.run == "big" and [w.rank for w in run.workers] == list(range(RANKS))
    assert all(w.label for w in run.workers)

    w0 = run.workers[0]
    _, body = _ok(base, "summary", run="big", worker=w0.worker, span="0")
    assert summary_pb2.Summary.FromString(body).meta.rank == 0
    _, body = _ok(base, "distributed", run="big", span="0")
    dist = plugin_pb2.RunDistributed.FromString(body)
    assert [r.rank for r in dist.ranks] == list(range(RANKS)) and all(r.steps for r in dist.ranks)

    _, body = _ok(base, "parallel", run="big", span="0")
    par = plugin_pb2.RunParallel.FromString(body)
    assert [r.rank for r in par.ranks] == list(range(RANKS))
    assert not par.matched and par.matched_total > 0 and par.analysis_key
    # the matched instances, page by page: a member rank's of one step
    step = par.steps[-1]
    _, body = _ok(base, "parallel_matched", run="big", span="0", rank=RANKS - 1, step=step, limit=5)
    page = plugin_pb2.MatchedPage.FromString(body)
    assert page.total >= len(page.matched) > 0 and len(page.matched) <= 5
    assert all(m.step == step and any(x.rank == RANKS - 1 for x in m.members) for m in page.matched)
    _, as_json = _ok(base, "parallel", run="big", span="0", format="json")
    assert json.loads(as_json)["analysisKey"] == par.analysis_key

    # The timeline of all 66 ranks (more than the 64 indexes kept open): page by page, each within its bound.
    seen, offset, total = [], 0, None
    while total is None or offset < total:
        headers, body = _ok(base, "timeline", run="big", span="0", px=1200, rank_offset=offset)
        data = gzip.decompress(body) if headers.get("Content-Encoding") == "gzip" else body
        assert len(data) <= timeline.WINDOW_MAX_BYTES
        window = timeline_pb2.TimelineWindow.FromString(data)
        assert window.rank_offset == offset and 0 < len(window.ranks) <= timeline.WINDOW_MAX_RANKS
        total = window.ranks_total
        assert all(r.state == "" and r.lanes for r in window.ranks)
        seen += [r.rank for r in window.ranks]
        offset += len(window.ranks)
    assert total == RANKS and seen == list(range(RANKS))
    assert api(base, "timeline", run="big", span="0", rank_offset=RANKS)[0] == 400

    # Routes over every rank's index at once, and one rank's
    _, body = _ok(base, "timeline_search", run="big", span="0", q="ProfileStep", limit=1000)
    found = timeline_pb2.TimelineSearch.FromString(body)
    assert {m.worker for m in found.matches} == {w.worker for w in run.workers}  # every rank's steps
    _, body = _ok(base, "timeline_range", run="big", span="0", start_ns=0, end_ns=1 << 40)
    assert timeline_pb2.TimelineRange.FromString(body).events > 0
    headers, body = _ok(base, "timeline", run="big", span="0", workers=run.workers[-1].worker)
    last = timeline_pb2.TimelineWindow.FromString(
        gzip.decompress(body) if headers.get("Content-Encoding") == "gzip" else body
    )
    lane = last.ranks[0].lanes[0]
    _, body = _ok(base, "timeline_event", run="big", worker=run.workers[-1].worker, span="0", id=lane.id_deltas[0])
    assert fetch(f"{base}/data/plugin/paddle_profile/trace_window?run=big&worker={w0.worker}&span=0")[0] == 200
    assert fetch(f"{base}/data/plugin/paddle_profile/trace?run=big&worker={w0.worker}&span=0")[0] == 200
    status, _, body = api(base, "status")
    assert status == 200 and json.loads(body)["counts"] == {"READY": RANKS}

    # One parse per trace: summaries, digests, indexes and the analysis all came from the jobs.
    parses = parse_log.read_text().splitlines()
    assert sorted(parses) == sorted({p for p in parses}) and len(parses) == RANKS
    assert "Traceback" not in log.read_text()
