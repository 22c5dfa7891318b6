"""The plugin's routes over a logdir with several runs, driven through TensorBoard's own WSGI routing.

The logdir holds copies of the shared traces (one gzipped, one nested, one at the top, a worker with two
spans one of which uses the 2.x ``span_indx`` key), a truncated file, a non-Paddle JSON, an empty file
and a file that grows during the test. Summaries served must equal the engine's for the same bytes;
parameters are only ever looked up; the logdir is left exactly as it was.
"""

from __future__ import annotations

import gzip
import os
import signal
import time
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from google.protobuf import json_format

from support.plugin_testlib import GLOO, GPU, OLD, PREFIX, SINGLE, make_plugin, place, ready, trace_files, tree_digest
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

READY, FAILED, GROWING = plugin_pb2.READY, plugin_pb2.FAILED, plugin_pb2.GROWING


@pytest.fixture(scope="module")
def env(shared_traces, tmp_path_factory):
    root = tmp_path_factory.mktemp("routes")
    logdir, cache = root / "logdir", root / "cache"
    gloo = trace_files(shared_traces, GLOO)
    gpu = trace_files(shared_traces, GPU)
    single = trace_files(shared_traces, SINGLE)[0]
    files = {}
    for i, src in enumerate(gloo):
        files[f"gloo{i}"] = place(src.read_bytes(), logdir / "gloo" / src.name)
    files["gz"] = place(single.read_bytes(), logdir / "gz" / (single.name + ".gz"), gz=True)
    files["top"] = place(single.read_bytes(), logdir / single.name)
    files["nested"] = place(single.read_bytes(), logdir / "team" / "a" / "single" / single.name)
    files["gpu0"] = place(gpu[0].read_bytes(), logdir / "gpu" / gpu[0].name)
    files["gpu1"] = place(gpu[1].read_bytes(), logdir / "gpu" / gpu[1].name)
    later = "rank0_time_2026_11_29_00_00_02_000000.paddle_trace.json"  # rank0's next span, 2.x key
    files["gpu0-span1"] = place(gpu[0].read_bytes(), logdir / "gpu" / later, span="1", old_key=True)
    half = gloo[0].read_bytes()
    half = half[: len(half) // 2]
    broken = logdir / "broken"
    files["truncated"] = place(half, broken / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json", mtime=OLD)
    files["foreign"] = place(
        b'{"hello": "world"}\n', broken / "rank1_time_2026_01_01_00_00_00_000000.paddle_trace.json"
    )
    files["empty"] = place(b"", broken / "rank2_time_2026_01_01_00_00_00_000000.paddle_trace.json", mtime=OLD)
    place(b'{"not": "a trace name"}', broken / "notes.json")
    files["growing"] = place(half, logdir / "growing" / gloo[0].name)  # recent: still being written

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TB_PADDLE_PROFILE_CACHE", str(cache))
        mp.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
        mp.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
        expected_tree = tree_digest(logdir)
        plugin, client = make_plugin(str(logdir))
        ready(plugin)
        yield {
            "logdir": logdir,
            "files": files,
            "plugin": plugin,
            "client": client,
            "tree": expected_tree,
            "full": gloo[0].read_bytes(),
        }
        plugin.close()


def get(env, route, **params):
    return env["client"].get(f"{PREFIX}/{route}?{urlencode(params)}" if params else f"{PREFIX}/{route}")


def run_list(env) -> plugin_pb2.RunList:
    r = get(env, "runs")
    assert r.status_code == 200 and r.mimetype == "application/x-protobuf"
    return plugin_pb2.RunList.FromString(r.get_data())


def spans_by_path(rl: plugin_pb2.RunList):
    """SpanEntry by the file's path relative to the logdir."""
    return {os.path.normpath(f"{run.run}/{s.file_name}"): s for run in rl.runs for w in run.workers for s in w.spans}


def engine_summary(path: Path) -> summary_pb2.Summary:
    return summarize_bytes(path.read_bytes(), path.name)


def test_tensorboard_lists_the_plugin(env):
    r = env["client"].get("/data/plugins_listing")
    entry = r.get_json()["paddle_profile"]
    assert entry["enabled"] is True
    assert entry["tab_name"] == "Paddle Profile"
    assert entry["loading_mechanism"] == {"type": "IFRAME", "module_path": f"{PREFIX}/index.js"}


def test_run_list_has_runs_workers_spans_and_states(env):
    rl = run_list(env)
    assert rl.logdir == str(env["logdir"])
    assert rl.scanned_at > 0
    assert [r.run for r in rl.runs] == [".", "broken", "gloo", "gpu", "growing", "gz", "team/a/single"]
    runs = {r.run: r for r in rl.runs}
    assert [(w.worker, w.rank) for w in runs["gloo"].workers] == [("rank0", 0), ("rank1", 1)]
    gpu = {w.worker: [s.span for s in w.spans] for w in runs["gpu"].workers}
    assert gpu == {"rank0": ["0", "1"], "rank1": ["0"]}
    host = runs["gz"].workers[0]
    # the name tells no rank: numbered in Fleet's order, as the cross-rank analysis numbers it
    assert (host.worker, host.hostname, host.pid, host.rank) == ("host_vmpid_20369", "vm", 20369, 0)

    by_path = spans_by_path(rl)
    assert "broken/notes.json" not in by_path

    def span(key):
        return by_path[os.path.relpath(env["files"][key], env["logdir"])]

    for key in ("top", "nested", "gz", "gpu0", "gpu1", "gpu0-span1", "gloo0", "gloo1"):
        assert span(key).state == READY, key
        assert span(key).file_size == env["files"][key].stat().st_size
    for key, reason in (("truncated", "truncated JSON"), ("foreign", "not a Paddle trace"), ("empty", "empty file")):
        assert span(key).state == FAILED, key
        assert reason in span(key).error and env["files"][key].name in span(key).error
    assert span("growing").state == GROWING and "truncated" in span("growing").error

    as_json = json_format.Parse(get(env, "runs", format="json").get_data(as_text=True), plugin_pb2.RunList())
    assert as_json == rl


def test_every_summary_equals_the_engines(env):
    rl = run_list(env)
    checked = 0
    for run in rl.runs:
        for w in run.workers:
            for s in w.spans:
                if s.state != READY:
                    continue
                r = get(env, "summary", run=run.run, worker=w.worker, span=s.span)
                assert r.status_code == 200 and r.mimetype == "application/x-protobuf"
                got = summary_pb2.Summary.FromString(r.get_data())
                assert got == engine_summary(env["logdir"] / run.run / s.file_name), s.file_name
                checked += 1
    assert checked == 8


def test_summary_json_and_gzip(env):
    path = env["files"]["gpu0-span1"]
    expected = engine_summary(path)
    assert expected.meta.span == "1"
    q = {"run": "gpu", "worker": "rank0", "span": "1"}
    r = get(env, "summary", format="json", **q)
    assert r.status_code == 200 and r.mimetype == "application/json"
    assert json_format.Parse(r.get_data(as_text=True), summary_pb2.Summary()) == expected
    r = env["client"].get(f"{PREFIX}/summary?{urlencode(q)}", headers={"Accept-Encoding": "gzip, deflate"})
    assert r.headers["Content-Encoding"] == "gzip"
    assert summary_pb2.Summary.FromString(gzip.decompress(r.get_data())) == expected
    r = env["client"].head(f"{PREFIX}/summary?{urlencode(q)}")
    assert r.status_code == 200 and r.get_data() == b""


def test_failed_unknown_and_bad_requests(env):
    truncated = env["files"]["truncated"].name
    r = get(env, "summary", run="broken", worker="rank0", span="0")
    assert r.status_code == 422
    assert truncated in r.get_data(as_text=True) and "truncated JSON" in r.get_data(as_text=True)
    r = get(env, "summary", run="broken", worker="rank2", span="?")  # the empty file has no span to read
    assert r.status_code == 422 and "empty file" in r.get_data(as_text=True)

    cases = [
        ({"run": "nope", "worker": "rank0", "span": "0"}, 404, "unknown run 'nope'", ("summary", "trace")),
        ({"run": "gloo", "worker": "rank9", "span": "0"}, 404, "unknown worker 'rank9'", ("summary", "trace")),
        ({"run": "gloo", "worker": "rank0", "span": "7"}, 404, "unknown span '7'", ("summary", "trace")),
        ({"worker": "rank0", "span": "0"}, 400, "missing parameter 'run'", ("summary", "trace", "distributed")),
        (
            {"run": "gloo", "worker": "rank0", "span": "0", "format": "xml"},
            400,
            "unknown format",
            ("summary", "distributed", "runs"),
        ),
    ]
    for params, code, message, routes in cases:
        for route in routes:
            r = get(env, route, **params)
            assert r.status_code == code and message in r.get_data(as_text=True), (route, params, r.get_data())
    r = env["client"].get(f"{PREFIX}/summary?run=gloo&run=gloo&worker=rank0&span=0")
    assert r.status_code == 400 and "more than once" in r.get_data(as_text=True)
    r = env["client"].post(f"{PREFIX}/summary?run=gloo&worker=rank0&span=0")
    assert r.status_code == 405
    r = get(env, "distributed", run="gloo", span="5")
    assert r.status_code == 404 and "unknown span '5'" in r.get_data(as_text=True)


def test_distributed_puts_every_rank_side_by_side(env):
    r = get(env, "distributed", run="gloo", span="0")
    assert r.status_code == 200 and r.mimetype == "application/x-protobuf"
    dist = plugin_pb2.RunDistributed.FromString(r.get_data())
    assert (dist.run, dist.span) == ("gloo", "0")
    assert [(x.worker, x.rank, x.state) for x in dist.ranks] == [("rank0", 0, READY), ("rank1", 1, READY)]
    for rank in dist.ranks:
        path = env["files"][f"gloo{rank.rank}"]
        s = engine_summary(path)
        assert rank.distributed == s.distributed and rank.distributed.present
        assert list(rank.steps) == list(s.model.steps) and len(rank.steps) > 0
        assert rank.total_time_ns == s.meta.total_time_ns > 0
    as_json = json_format.Parse(
        get(env, "distributed", run="gloo", span="0", format="json").get_data(as_text=True), plugin_pb2.RunDistributed()
    )
    assert as_json == dist

    # part=summary: the same answer without the view's per-rank tables (a folded view of many ranks); the
    # charts' series stay. part=details: every table. Both (the page's) without the ranks' own figures, which
    # the tables carry.
    whole = dist.display.views
    part = plugin_pb2.RunDistributed.FromString(
        get(env, "distributed", run="gloo", span="0", part="summary").get_data()
    )
    assert any(t.key == "ranks" for v in whole for t in v.tables)
    assert [t.key for v in part.display.views for t in v.tables] == ["rank_parts", "step_parts"]
    assert [t for v in part.display.views for t in v.tables] == [
        t for v in whole for t in v.tables if t.key in ("rank_parts", "step_parts")
    ]
    assert [list(v.sentences) for v in part.display.views] == [list(v.sentences) for v in whole]
    details = plugin_pb2.RunDistributed.FromString(
        get(env, "distributed", run="gloo", span="0", part="details").get_data()
    )
    assert details.display == dist.display
    for got in (part, details):
        assert [(x.worker, x.rank, x.state, x.total_time_ns, x.file_version) for x in got.ranks] == [
            (x.worker, x.rank, x.state, x.total_time_ns, x.file_version) for x in dist.ranks
        ]
        assert not any(x.HasField("distributed") or x.steps for x in got.ranks)
    assert get(env, "distributed", run="gloo", span="0", part="tables").status_code == 400

    # Of the broken run only the truncated file has a readable span 0; the others have none ("?").
    r = get(env, "distributed", run="broken", span="0")
    assert r.status_code == 200
    broken = plugin_pb2.RunDistributed.FromString(r.get_data())
    assert [(x.worker, x.state) for x in broken.ranks] == [("rank0", FAILED)]
    assert "truncated JSON" in broken.ranks[0].error and not broken.ranks[0].steps
    unknown = plugin_pb2.RunDistributed.FromString(get(env, "distributed", run="broken", span="?").get_data())
    assert [(x.worker, x.state) for x in unknown.ranks] == [("rank1", FAILED), ("rank2", FAILED)]


def analyze_run(summaries, run, span):
    """The analysis of the engine summaries' digests, as the parallel route computes it."""
    from tb_paddle_profile.analysis.digest import digest_of
    from tb_paddle_profile.pipeline.runs import analyze_digests

    return analyze_digests([digest_of(s) for s in summaries], run, span)


def test_parallel_is_the_cross_rank_analysis_of_the_ranks(env):
    """The route serves what the cross-rank analysis gives for the digests of the same files' engine
    summaries (runs.analyze_digests: the analysis the route runs, on the engine's own output)."""
    r = get(env, "parallel", run="gpu", span="0")
    assert r.status_code == 200 and r.mimetype == "application/x-protobuf"
    served = plugin_pb2.RunParallel.FromString(r.get_data())
    summaries = [engine_summary(env["files"]["gpu0"]), engine_summary(env["files"]["gpu1"])]
    expected = analyze_run(summaries, "gpu", "0")
    # Summary first: the matched instances are left out and counted; the key names the ranks' versions.
    assert not served.matched and served.matched_total == len(expected.matched) > 0
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.pipeline.runs import analysis_key

    files = Discovery(str(env["logdir"]), interval=None).scan().runs["gpu"]
    assert served.analysis_key == analysis_key([files["rank0"]["0"].key, files["rank1"]["0"].key])
    matched = list(expected.matched)
    del expected.matched[:]
    expected.matched_total, expected.analysis_key = served.matched_total, served.analysis_key
    expected.display.CopyFrom(parallel_display(expected))  # the view's tables and sentences (display/parallel.py)
    assert served == expected
    assert len(served.ranks) == 2
    # ... and paged by parallel_matched: all of them in order, or those of one member rank and step
    page = plugin_pb2.MatchedPage.FromString(get(env, "parallel_matched", run="gpu", span="0").get_data())
    assert list(page.matched) == matched and page.total == len(matched) and page.analysis_key == served.analysis_key
    pages = [
        plugin_pb2.MatchedPage.FromString(
            get(env, "parallel_matched", run="gpu", span="0", offset=str(o), limit="1").get_data()
        )
        for o in range(len(matched) + 1)
    ]
    assert [m for p in pages for m in p.matched] == matched and not pages[-1].matched
    step = matched[-1].step
    page = plugin_pb2.MatchedPage.FromString(
        get(env, "parallel_matched", run="gpu", span="0", rank="1", step=str(step)).get_data()
    )
    assert list(page.matched) == [m for m in matched if m.step == step and any(x.rank == 1 for x in m.members)]
    assert page.total == len(page.matched) > 0
    assert get(env, "parallel_matched", run="gpu", span="0", limit="0").status_code == 400
    # every rank carries its own per-step breakdown, so per-step charts need no further request
    assert [list(r.step_breakdown) for r in served.ranks] == [list(s.parallel.steps) for s in summaries]
    assert all(len(r.step_breakdown) == 2 for r in served.ranks)
    as_json = json_format.Parse(
        get(env, "parallel", run="gpu", span="0", format="json").get_data(as_text=True), plugin_pb2.RunParallel()
    )
    assert as_json == served
    assert get(env, "parallel", run="gpu", span="9").status_code == 404
    assert get(env, "parallel", run="../gpu", span="0").status_code in (400, 404)


def test_parallel_details_are_what_the_page_draws(env, monkeypatch):
    """part=details: the whole answer's display (but the per-step breakdown beyond DETAIL_STEP_ROWS rows,
    which part=breakdown_steps gives alone, as the whole answer has it) without the raw series its tables
    carry (each rank's step breakdown and kinds, the rank × step matrices); everything else as the whole."""
    from tb_paddle_profile.plugin.routes import parallel as routes_parallel

    whole = plugin_pb2.RunParallel.FromString(get(env, "parallel", run="gpu", span="0").get_data())
    (steps,) = [t for v in whole.display.views for t in v.tables if t.key == "breakdown_steps"]
    assert len(steps.rows) == 4  # 2 ranks x 2 steps
    monkeypatch.setattr(routes_parallel, "DETAIL_STEP_ROWS", 3)
    details = plugin_pb2.RunParallel.FromString(get(env, "parallel", run="gpu", span="0", part="details").get_data())
    assert [t.key for v in details.display.views for t in v.tables] == [
        t.key for v in whole.display.views for t in v.tables if t.key != "breakdown_steps"
    ]
    assert [list(v.sentences) for v in details.display.views] == [list(v.sentences) for v in whole.display.views]
    assert whole.step_time.values_ns and any(r.step_breakdown and r.kinds for r in whole.ranks)
    assert not details.step_time.values_ns and not details.exposed_communication.values_ns
    assert not any(r.step_breakdown or r.kinds for r in details.ranks)
    rest = plugin_pb2.RunParallel()
    rest.CopyFrom(whole)
    for r in rest.ranks:
        r.ClearField("step_breakdown")
        r.ClearField("kinds")
    for f in ("step_time", "exposed_communication", "display"):
        rest.ClearField(f)
    details.ClearField("display")
    assert details == rest
    alone = plugin_pb2.RunParallel.FromString(
        get(env, "parallel", run="gpu", span="0", part="breakdown_steps").get_data()
    )
    assert [list(v.tables) for v in alone.display.views] == [[steps]] and not alone.ranks
    assert (alone.run, alone.span, alone.analysis_key) == (whole.run, whole.span, whole.analysis_key)
    assert get(env, "parallel", run="gpu", span="0", part="ranks").status_code == 400


def test_trace_download(env):
    path = env["files"]["gpu1"]
    q = {"run": "gpu", "worker": "rank1", "span": "0"}
    r = get(env, "trace", **q)
    assert r.status_code == 200 and r.get_data() == path.read_bytes()
    assert r.headers["Content-Disposition"].startswith(f'attachment; filename="{path.name}"')
    assert r.headers["Content-Length"] == str(path.stat().st_size)
    r = env["client"].get(f"{PREFIX}/trace?{urlencode(q)}", headers={"Accept-Encoding": "gzip"})
    assert r.headers["Content-Encoding"] == "gzip" and gzip.decompress(r.get_data()) == path.read_bytes()
    gz = env["files"]["gz"]
    r = get(env, "trace", run="gz", worker="host_vmpid_20369", span="0")
    assert r.mimetype == "application/gzip" and r.get_data() == gz.read_bytes()
    assert gz.name in r.headers["Content-Disposition"]


def test_status_route(env):
    r = get(env, "status")
    assert r.status_code == 200
    body = r.get_json()
    assert body["counts"] == {"FAILED": 3, "GROWING": 1, "READY": 8}
    assert body["stats"]["parsed"] == 12
    assert len(body["files"]) == 12
    assert all(set(f) >= {"run", "worker", "span", "state", "error"} for f in body["files"])
    assert get(env, "status", format="pb").status_code == 400


def test_static_assets(env):
    r = env["client"].get(f"{PREFIX}/index.js")
    assert r.status_code == 200 and r.mimetype == "text/javascript"
    assert b"render" in r.get_data()
    r = env["client"].get("/data/plugin_entry.html?name=paddle_profile")
    assert r.status_code == 200 and b"./index.js" in r.get_data()
    assert env["client"].get(f"{PREFIX}/no-such-asset.js").status_code == 404


TRAVERSAL = [
    "..",
    "../",
    "../../../../etc/passwd",
    "/etc/passwd",
    "gloo/..",
    "gloo/../gloo",
    "./gloo",
    "gloo/",
    "gloo/.",
    "..\\..\\setup.py",
    "....//....//etc/passwd",
    "..;/",
    "%2e%2e%2f",
    "%2e%2e/%2e%2e/etc/passwd",
    "..%2f..%2f",
    "%252e%252e%252f",
    "%2Fetc%2Fpasswd",
    "%c0%ae%c0%ae/",
    "\u2024\u2024/",
    "gloo%00",
    "~",
    "~/.ssh/id_rsa",
    "file:///etc/passwd",
    "s3://bucket/key",
]


def test_path_traversal_is_refused_in_every_parameter(env):
    logdir = env["logdir"]
    real = env["files"]["gloo0"]
    payloads = TRAVERSAL + [
        str(real),
        str(real.parent),
        str(logdir),
        os.path.relpath(real, logdir),
        real.name,
        real.as_uri(),
    ]
    valid = {"run": "gloo", "worker": "rank0", "span": "0"}
    for route, names in (
        ("summary", ("run", "worker", "span")),
        ("trace", ("run", "worker", "span")),
        ("distributed", ("run", "span")),
    ):
        for name in names:
            for payload in payloads:
                for encoded in (payload, quote(payload, safe="")):  # as typed, and encoded once more
                    params = {k: v for k, v in valid.items() if k in names}
                    query = "&".join(f"{k}={quote(v)}" for k, v in params.items() if k != name)
                    r = env["client"].get(f"{PREFIX}/{route}?{query}&{name}={encoded}")
                    body = r.get_data()
                    assert r.status_code in (400, 404), (route, name, payload, r.status_code)
                    assert b"traceEvents" not in body and len(body) < 2000
    for path in (
        "../../../setup.py",
        "%2e%2e/%2e%2e/cache.py",
        "..%2f..%2fplugin%2froutes.py",
        "/etc/passwd",
        "static/../plugin/routes.py",
        "..\\routes.py",
        "%252e%252e/setup.py",
        "plugin/routes.py",
        "../__init__.py",
    ):
        r = env["client"].get(f"{PREFIX}/{path}")
        assert r.status_code == 404, path
        assert b"import" not in r.get_data()


BAD_INTEGERS = [
    "99999999999999999999999",
    "-99999999999999999999999",
    str(2**63),
    str(-(2**63) - 1),
    str(10**30),
    "1e3",
    "0x10",
    "+1",
    " 1",
    "1_000",
    "\u0661\u0662",
    "\u00b2",
    "-",
    "1.5",
    "nan",
]
OUT_OF_RANGE = {  # per parameter, beyond the integers that are bad everywhere
    "start_ns": [str(2**62 + 1), str(-(2**62) - 1)],
    "end_ns": [str(2**62 + 1)],
    "base_unix_ns": [str(2**63 - 1)],
    "px": ["-5", "0", "100001"],
    "id": ["-1"],
    "limit": ["0", "-1"],
}
EDGES = {"start_ns": str(-(2**62)), "end_ns": str(2**62), "base_unix_ns": str(2**62), "px": "100000", "limit": "1"}


def _index_built(env, run="gloo", span="0"):
    for _ in range(600):  # bounded: about 120 s
        r = get(env, "timeline", run=run, span=span)
        if r.status_code != 202:
            return r.status_code
        time.sleep(0.2)
    return 202


def test_integer_parameters_out_of_range_are_400_in_every_timeline_route(env):
    assert _index_built(env) == 200
    one = {"run": "gloo", "span": "0", "worker": "rank0"}
    routes = {
        "timeline": ({}, ("start_ns", "end_ns", "px", "base_unix_ns")),
        "timeline_event": ({"id": "0"}, ("id", "base_unix_ns")),
        "timeline_search": ({"q": "matmul"}, ("limit", "base_unix_ns")),
        "timeline_range": ({"start_ns": "0", "end_ns": "1000"}, ("start_ns", "end_ns", "base_unix_ns")),
        "trace_window": ({"start_ns": "0", "end_ns": "1000"}, ("start_ns", "end_ns", "base_unix_ns")),
    }
    for route, (extra, names) in routes.items():
        assert get(env, route, **one, **extra).status_code == 200, route
        for name in names:
            for value in BAD_INTEGERS + OUT_OF_RANGE.get(name, []):
                r = get(env, route, **one, **dict(extra, **{name: value}))
                text = r.get_data(as_text=True)
                assert r.status_code == 400, (route, name, value, r.status_code, text[:300])
                assert f"parameter '{name}' must be an integer" in text and len(text.splitlines()) == 1
            if name in EDGES:  # the ends of the range are answered
                r = get(env, route, **one, **dict(extra, **{name: EDGES[name]}))
                assert r.status_code == 200, (route, name, r.status_code, r.get_data()[:300])
    for track in ("rank0:\u00b2", "rank0:" + "9" * 30, "rank0:-1", "rank0:1e3"):
        r = get(env, "timeline_range", run="gloo", span="0", start_ns="0", end_ns="1000", tracks=track)
        assert r.status_code == 400 and "invalid track" in r.get_data(as_text=True), track


def test_every_response_says_nosniff_and_our_own_bug_is_a_500_that_says_so(env, monkeypatch, caplog):
    from tb_paddle_profile.plugin import routes

    gloo = {"run": "gloo", "worker": "rank0", "span": "0"}
    answers = [
        get(env, "runs"),
        get(env, "status"),
        get(env, "summary", **gloo),
        get(env, "trace", **gloo),
        get(env, "summary", run="nope", worker="x", span="0"),
        get(env, "summary", run="gloo"),
        get(env, "summary", run="broken", worker="rank0", span="0"),
        env["client"].post(f"{PREFIX}/runs"),
        env["client"].get(f"{PREFIX}/index.js"),
        env["client"].get(f"{PREFIX}/nothing.css"),
        get(env, "timeline", run="gloo", span="0", px="-5"),
    ]
    assert sorted({r.status_code for r in answers}) == [200, 400, 404, 405, 422]
    for r in answers:
        assert r.headers.get("X-Content-Type-Options") == "nosniff", (r.status_code, r.headers)

    def boom(self, *args, **kwargs):
        raise KeyError("lane_ptr")

    # every request reads the latest scan (the status answer itself is memoized: Routes._send_latest)
    monkeypatch.setattr(routes.Routes, "_snapshot", boom)
    with caplog.at_level("ERROR", logger="tb_paddle_profile.plugin.routes"):
        for r in (get(env, "status"), get(env, "summary", **gloo)):
            text = r.get_data(as_text=True)
            assert r.status_code == 500 and r.headers["X-Content-Type-Options"] == "nosniff"
            assert r.mimetype == "text/plain" and len(text.splitlines()) == 1
            assert "internal error in tb_paddle_profile" in text and "a bug in the tool" in text
            assert "KeyError: 'lane_ptr'" in text
    logged = [rec for rec in caplog.records if rec.exc_info and rec.exc_info[0] is KeyError]
    assert len(logged) == 2 and "internal error" in logged[0].getMessage()


def test_growing_file_is_retried_not_cached_as_failed(env):
    plugin, path = env["plugin"], env["files"]["growing"]
    q = {"run": "growing", "worker": "rank0", "span": "0"}
    r = get(env, "summary", **q)
    assert r.status_code == 202 and r.headers["Retry-After"]
    entry = plugin_pb2.SpanEntry.FromString(r.get_data())
    assert entry.state == GROWING and "truncated" in entry.error
    r = get(env, "distributed", run="growing", span="0")
    assert r.status_code == 202  # not every rank is there yet: the partial view, to poll again
    ranks = plugin_pb2.RunDistributed.FromString(r.get_data()).ranks
    assert [(x.worker, x.state) for x in ranks] == [("rank0", GROWING)]
    old = plugin.discovery.snapshot().runs["growing"]["rank0"]["0"]
    assert plugin.loader.cache.peek(old.key) is None  # a growing file is never cached as failed

    with open(path, "ab") as f:  # the writer finishes the file
        f.write(env["full"][path.stat().st_size :])
    env["tree"].update({k: v for k, v in tree_digest(env["logdir"]).items() if k.startswith("growing/")})
    plugin.discovery.scan()
    r = get(env, "summary", format="json", **q)
    assert r.status_code == 202 and r.get_json()["state"] == "GROWING"  # changed since the last scan
    plugin.discovery.scan()  # unchanged now: it settles and loads
    ready(plugin)
    r = get(env, "summary", **q)
    assert r.status_code == 200
    assert summary_pb2.Summary.FromString(r.get_data()) == engine_summary(path)


def test_new_runs_and_spans_appear_on_rescan(env, shared_traces):
    plugin = env["plugin"]
    src = trace_files(shared_traces, GPU)[1]
    added = place(src.read_bytes(), env["logdir"] / "later" / src.name)
    env["tree"].update({k: v for k, v in tree_digest(env["logdir"]).items() if k.startswith("later")})
    assert "later" not in [r.run for r in run_list(env).runs]
    plugin.discovery.scan()
    assert "later" in [r.run for r in run_list(env).runs]
    ready(plugin)
    r = get(env, "summary", run="later", worker="rank1", span="0")
    assert r.status_code == 200 and summary_pb2.Summary.FromString(r.get_data()) == engine_summary(added)


def test_a_rewritten_rank_changes_its_version_and_the_parallel_analysis(env, shared_traces):
    """A trace rewritten in place (a new profile under the same name) gets a new file_version in the
    distributed route, which the Distributed view keys its cached cross-rank analysis on, and the
    parallel route answers for the new bytes."""

    plugin = env["plugin"]
    gpu = trace_files(shared_traces, GPU)
    paths = [place(src.read_bytes(), env["logdir"] / "rewrite" / src.name, mtime=OLD) for src in gpu]
    env["tree"].update({k: v for k, v in tree_digest(env["logdir"]).items() if k.startswith("rewrite")})
    plugin.discovery.scan()
    plugin.discovery.scan()  # unchanged since the last scan (a background scan may have seen it half-written)
    ready(plugin)

    def versions():
        r = get(env, "distributed", run="rewrite", span="0")
        assert r.status_code == 200, plugin_pb2.RunDistributed.FromString(r.get_data())
        return [x.file_version for x in plugin_pb2.RunDistributed.FromString(r.get_data()).ranks]

    def parallel():
        r = get(env, "parallel", run="rewrite", span="0")
        assert r.status_code == 200
        return plugin_pb2.RunParallel.FromString(r.get_data())

    before, first = versions(), parallel()
    assert all(len(v) == 16 for v in before) and before[0] != before[1]
    assert versions() == before  # stable while nothing changes
    place(gpu[0].read_bytes() + b"\n", paths[1], mtime=OLD + 60)  # rank1's file now holds another profile
    env["tree"].update({k: v for k, v in tree_digest(env["logdir"]).items() if k.startswith("rewrite")})
    plugin.discovery.scan()
    plugin.discovery.scan()  # unchanged since the last scan (a background scan may have seen it half-written)
    ready(plugin)
    after = versions()
    assert after[0] == before[0] and after[1] != before[1]
    expected = analyze_run([engine_summary(p) for p in paths], "rewrite", "0")
    now = parallel()
    assert now.analysis_key != first.analysis_key  # a changed trace changes the analysis key
    expected.matched_total, expected.analysis_key = len(expected.matched), now.analysis_key
    del expected.matched[:]
    expected.display.CopyFrom(parallel_display(expected))
    assert now == expected
    first.analysis_key = now.analysis_key
    assert now != first


def worker_processes(loader):
    """The loader's worker processes (children of the forkserver, not of this process), alive."""
    return [pid for pid in loader.worker_pids() if os.path.exists(f"/proc/{pid}")]


def test_a_dead_worker_process_is_replaced(env, shared_traces):
    plugin = env["plugin"]
    workers = worker_processes(plugin.loader)
    assert workers, "the worker processes of the loads above are still there (idle)"
    for pid in workers:
        os.kill(pid, signal.SIGKILL)  # what the kernel's OOM killer does
    src = trace_files(shared_traces, GPU)[0]
    added = place(src.read_bytes(), env["logdir"] / "after-crash" / src.name)
    env["tree"].update({k: v for k, v in tree_digest(env["logdir"]).items() if k.startswith("after-crash")})
    plugin.discovery.scan()
    ready(plugin)
    r = get(env, "summary", run="after-crash", worker="rank0", span="0")
    assert r.status_code == 200 and summary_pb2.Summary.FromString(r.get_data()) == engine_summary(added)


def test_zz_logdir_is_unchanged(env):
    """Last in this module: after every route above, the logdir holds exactly what the tests wrote."""
    assert tree_digest(env["logdir"]) == env["tree"]


def test_a_small_gzipped_body_says_so(tmp_path):
    """A body compressed below the size threshold must still carry Content-Encoding: gzip."""
    import gzip as gz

    from tb_paddle_profile.plugin.routes import _GZIP_MIN, respond
    from werkzeug.wrappers import Request

    raw = b"x" * (_GZIP_MIN + 10)
    packed = gz.compress(raw)
    assert len(packed) < _GZIP_MIN
    req = Request(
        {
            "REQUEST_METHOD": "GET",
            "HTTP_ACCEPT_ENCODING": "gzip",
            "wsgi.url_scheme": "http",
            "SERVER_NAME": "x",
            "SERVER_PORT": "80",
            "PATH_INFO": "/",
        }
    )
    resp = respond(req, packed, "application/x-protobuf", gzipped=packed)
    assert resp.headers.get("Content-Encoding") == "gzip"
    assert gz.decompress(resp.get_data()) == raw
