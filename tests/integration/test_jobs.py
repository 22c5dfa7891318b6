"""One parse per trace (jobs.run_job), one run assembly (runs.py), the CLI on the plugin's cache, and the
cross-rank analysis cached on disk.

Parses are counted by the engine's own parse log (TB_PADDLE_PROFILE_PARSE_LOG: a line per parse, written
by whichever process parses), so worker processes and subprocesses are counted too."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from support.paths import REPO
from support.plugin_testlib import GPU, OLD, PREFIX, make_plugin, place, ready, trace_files, wait_for
from tb_paddle_profile.pipeline import jobs
from tb_paddle_profile import timeline
from tb_paddle_profile.timeline import remote
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.store.cache import SummaryCache
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.pipeline.discovery import Discovery
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2


@pytest.fixture
def parse_log(tmp_path, monkeypatch):
    log = tmp_path / "parses.log"
    monkeypatch.setenv(jobs.ENV_PARSE_LOG, str(log))

    def parses():
        return log.read_text().splitlines() if log.exists() else []

    return parses


@pytest.fixture
def logdir(tmp_path, shared_traces):
    root = tmp_path / "logdir"
    for src in trace_files(shared_traces, GPU):
        place(src.read_bytes(), root / "run" / src.name, mtime=OLD)
    return root


def _spec(f, cache_dir, **kw):
    return jobs.JobSpec(path=f.path, file_name=f.file_name, key=f.key, cache_dir=str(cache_dir), root=f.root, **kw)


def _files(logdir):
    return Discovery(str(logdir), interval=None).scan().files


# ------------------------------------------------------------------ the job


def test_one_parse_gives_the_summary_the_digest_and_the_timeline_index(logdir, tmp_path, parse_log):
    f = _files(logdir)[0]
    cache_dir = tmp_path / "cache"
    out = jobs.run_job(_spec(f, cache_dir))
    assert (out.kind, out.ok, out.stored, out.error) == ("parsed", True, True, "")
    assert parse_log() == [f.file_name]  # one parse for all three
    alone = summarize_file(f.path)  # the engine on its own
    assert summary_pb2.Summary.FromString(out.summary) == alone
    assert summary_pb2.RankDigest.FromString(out.digest) == digest_of(alone)
    cache = SummaryCache(cache_dir)
    assert cache.get(f.key).data == out.summary and cache.get_digest(f.key) == out.digest
    # The index is the one the timeline builds from its own parse of the trace.
    assert out.index_path == str(cache.index_path(f.key))
    built = tmp_path / "alone.tl"
    timeline.build_file_index(Path(f.path).read_bytes, f.file_name, str(built), trace=f.key.digest())
    assert Path(out.index_path).read_bytes() == built.read_bytes()

    again = jobs.run_job(_spec(f, cache_dir))
    assert (again.kind, again.ok, again.summary, again.digest) == ("cached", True, out.summary, out.digest)
    assert parse_log() == [f.file_name, f.file_name]  # the standalone build above; the job: none
    forced = jobs.run_job(_spec(f, cache_dir, force=True))
    assert forced.kind == "parsed" and len(parse_log()) == 3


def test_an_entry_is_complete_or_absent(logdir, tmp_path, monkeypatch):
    """A job that dies after its index and digest, before its summary entry: nothing counts as done."""
    f = _files(logdir)[0]
    cache_dir = tmp_path / "cache"

    class Died(BaseException):
        pass

    def die(self, key, result):
        raise Died

    with monkeypatch.context() as m:
        m.setattr(SummaryCache, "put", die)
        with pytest.raises(Died):
            jobs.run_job(_spec(f, cache_dir))
    cache = SummaryCache(cache_dir)
    assert cache.has_index(f.key) and cache.get_digest(f.key) is not None  # written first...
    assert cache.peek(f.key) is None  # ...but the entry is not visible: the job runs again
    out = jobs.run_job(_spec(f, cache_dir))
    assert out.kind == "parsed" and cache.peek(f.key).ok


def test_whose_fault_a_failure_is_decides_what_is_cached(tmp_path, parse_log, monkeypatch):
    root = tmp_path / "logdir"
    bad = place(b'{"traceEvents": [{"name": "x", "ph": "X", "ts": 1', root / "rank0_x.paddle_trace.json", mtime=OLD)
    f = _files(root)[0]
    cache_dir = tmp_path / "cache"
    out = jobs.run_job(_spec(f, cache_dir))
    assert (out.kind, out.ok, out.error_kind, out.retry) == ("parsed", False, "trace", False)
    assert bad.name in out.error and "\n" not in out.error
    again = jobs.run_job(_spec(f, cache_dir))  # the file's fault is its cached result
    assert (again.kind, again.error) == ("cached", out.error) and len(parse_log()) == 1

    bad.unlink()
    gone = jobs.run_job(_spec(f, tmp_path / "cache2"))
    assert (gone.kind, gone.error_kind, gone.retry) == ("gone", "transient", True)
    assert SummaryCache(tmp_path / "cache2").peek(f.key) is None  # never cached

    good = _files(_copy_one(tmp_path))[0]
    from tb_paddle_profile.analysis import summarize as engine

    monkeypatch.setattr(engine, "summarize_profile", lambda *a, **k: [][0])
    ours = jobs.run_job(_spec(good, tmp_path / "cache3"))
    assert (ours.kind, ours.error_kind) == ("bug", "bug") and "internal error" in ours.error
    assert "IndexError" in ours.traceback and SummaryCache(tmp_path / "cache3").peek(good.key) is None


def _copy_one(tmp_path):
    import shutil

    src = next(Path(REPO / "examples" / "profiler_log").rglob("*.paddle_trace.json"), None)
    dst = tmp_path / "one"
    dst.mkdir()
    if src is None:
        pytest.skip("no example trace")
    shutil.copy(src, dst / src.name)
    return dst


def test_the_job_is_picklable_and_runs_in_a_worker_process(logdir, tmp_path, parse_log):
    from tb_paddle_profile.core.pool import WorkerPool

    f = _files(logdir)[0]
    pool = WorkerPool(1)
    try:
        out = pool.submit(jobs.run_job, _spec(f, tmp_path / "cache", fs=None, protocol="file")).future.result(120)
    finally:
        pool.shutdown()
    assert out.kind == "parsed" and out.stored and parse_log() == [f.file_name]


# ------------------------------------------------------------------ the plugin: one parse per trace


def test_the_plugin_parses_each_trace_once_for_its_summary_and_its_timeline(logdir, tmp_path, parse_log, monkeypatch):
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        files = plugin.discovery.snapshot().files
        assert sorted(parse_log()) == sorted(f.file_name for f in files)
        r = client.get(f"{PREFIX}/timeline?run=run&span=0")
        assert r.status_code == 200, r.get_data()
        window = timeline_pb2_window(r.get_data())
        assert [x.state for x in window.ranks] == ["", ""] and all(x.lanes for x in window.ranks)
        assert len(parse_log()) == len(files)  # the timeline store opened the jobs' indexes: no parse

        # An index evicted from the cache: the store asks the loader, whose job runs again; the file
        # stays READY meanwhile.
        cache = plugin.loader.cache
        victim = files[1]
        os.unlink(cache.index_path(victim.key))
        plugin._routes._timeline_store._open.clear()
        plugin._routes._in_pool("views", remote.forget)  # (nor open in the timeline worker process)
        # The whole span drawn above is memoized: a window zoomed to needs the indexes again.
        zoomed = (
            f"{PREFIX}/timeline?run=run&span=0&start_ns={window.window_start_ns}"
            f"&end_ns={(window.window_start_ns + window.window_end_ns) // 2}"
        )
        r = client.get(zoomed)
        assert r.status_code in (200, 202)
        wait_for(lambda: client.get(zoomed).status_code == 200, 120, "the index")
        assert cache.has_index(victim.key) and parse_log().count(victim.file_name) == 2
        assert plugin.loader.state(victim).state == plugin_pb2.READY
    finally:
        plugin.close()


def timeline_pb2_window(data):
    from tb_paddle_profile.v1 import timeline_pb2

    return timeline_pb2.TimelineWindow.FromString(data)


# ------------------------------------------------------------------ the CLI on the plugin's cache


def cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_the_cli_reads_and_fills_the_plugins_cache(logdir, tmp_path, parse_log, monkeypatch):
    cache_dir = tmp_path / "cache"
    run = str(logdir / "run")
    first = cli("distributed", run, "--cache-dir", str(cache_dir), "--format", "json")
    assert first.returncode == 0, first.stderr
    assert len(parse_log()) == 2
    second = cli("distributed", run, "--cache-dir", str(cache_dir), "--format", "json")
    assert second.returncode == 0 and json.loads(second.stdout) == json.loads(first.stdout)
    summary = cli("summary", run, "--cache-dir", str(cache_dir), "--views", "overview")
    assert summary.returncode == 0 and summary.stdout.count("==> ") == 2
    pre = cli("preprocess", str(logdir), "--cache-dir", str(cache_dir))
    assert pre.returncode == 0, pre.stderr
    assert len(parse_log()) == 2  # the second distributed, summary and preprocess parsed nothing

    # preprocess helps distributed: a new cache filled by preprocess, then distributed parses nothing
    other = tmp_path / "cache-b"
    assert cli("preprocess", str(logdir), "--cache-dir", str(other)).returncode == 0
    assert len(parse_log()) == 4
    assert cli("distributed", run, "--cache-dir", str(other)).returncode == 0 and len(parse_log()) == 4
    # and a TensorBoard plugin on that cache parses nothing either
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(other))
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        assert client.get(f"{PREFIX}/parallel?run=run&span=0").status_code == 200
        assert client.get(f"{PREFIX}/timeline?run=run&span=0").status_code == 200
        assert len(parse_log()) == 4 and plugin._routes.analyses.computed == 0  # the CLI's analysis, read back
    finally:
        plugin.close()

    before = sorted(p for p in other.rglob("*") if p.is_file())
    nocache = cli("distributed", run, "--no-cache")
    assert nocache.returncode == 0 and len(parse_log()) == 6
    assert sorted(p for p in other.rglob("*") if p.is_file()) == before


# ------------------------------------------------------------------ one run assembly


def test_the_tab_and_the_cli_assemble_a_run_alike_including_a_worker_that_exported_twice(
    tmp_path, shared_traces, monkeypatch
):
    gpu = trace_files(shared_traces, GPU)
    run = tmp_path / "logdir" / "run"
    for src in gpu:
        place(src.read_bytes(), run / src.name, mtime=OLD)
    # rank1 exported span 0 again, later (its export time is in the name), holding another profile
    stem = gpu[1].name.split("_time_")[0]
    again = place(gpu[0].read_bytes(), run / f"{stem}_time_2099_01_01_00_00_00_000000.paddle_trace.json", mtime=OLD)
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))

    out = cli("distributed", str(run), "--cache-dir", str(tmp_path / "cache"), "--format", "json")
    assert out.returncode == 0, out.stderr
    by_cli = [(r.get("worker"), r.get("fileName")) for r in json.loads(out.stdout)["ranks"]]
    cli_notes = json.loads(out.stdout)["notes"]

    plugin, client = make_plugin(str(tmp_path / "logdir"))
    try:
        ready(plugin)
        r = client.get(f"{PREFIX}/parallel?run=run&span=0")
        assert r.status_code == 200
        served = plugin_pb2.RunParallel.FromString(r.get_data())
        rl = plugin_pb2.RunList.FromString(client.get(f"{PREFIX}/runs").get_data())
    finally:
        plugin.close()
    by_tab = [(x.worker, x.file_name) for x in served.ranks]
    assert by_tab == by_cli
    assert dict(by_tab)["rank1"] == again.name  # the latest export
    older = gpu[1].name
    assert any(older in n and again.name in n for n in served.notes)
    assert any(older in n and again.name in n for n in cli_notes)
    # the earlier export is still listed, as span "0@1"
    (entry,) = [w for r_ in rl.runs for w in r_.workers if w.worker == "rank1"]
    assert [(s.span, s.file_name) for s in entry.spans] == [("0", again.name), ("0@1", older)]


# ------------------------------------------------------------------ the analysis, cached


def test_the_analysis_is_computed_once_shared_and_read_back_after_a_restart(logdir, tmp_path, monkeypatch):
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        bodies = []
        threads = [
            threading.Thread(target=lambda: bodies.append(client.get(f"{PREFIX}/parallel?run=run&span=0").get_data()))
            for _ in range(6)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        as_json = client.get(f"{PREFIX}/parallel?run=run&span=0&format=json").get_data(as_text=True)
        assert plugin._routes.analyses.computed == 1  # six requests at once and both formats: one analysis
        assert len(set(bodies)) == 1
        served = plugin_pb2.RunParallel.FromString(bodies[0])
        assert served.analysis_key and json.loads(as_json)["analysisKey"] == served.analysis_key
        stored = sorted(p.stem for p in (tmp_path / "cache").glob("analysis-v*/*/*.ra"))
        # the analysis, and the answers made from it (the protobuf and the JSON one: runs.answer_name)
        assert served.analysis_key in stored and plugin._routes.analyses.derived_computed == 2
        assert len(stored) == 1 + 2
    finally:
        plugin.close()
    plugin, client = make_plugin(str(logdir))  # a restart on the same cache
    try:
        ready(plugin)
        again = plugin_pb2.RunParallel.FromString(client.get(f"{PREFIX}/parallel?run=run&span=0").get_data())
        assert again == served and plugin._routes.analyses.computed == 0
        # the run list labels the workers (from the analysis once there is one)
        rl = plugin_pb2.RunList.FromString(client.get(f"{PREFIX}/runs").get_data())
        labels = {w.worker: w.label for r in rl.runs for w in r.workers}
        assert all(labels.values()) and set(labels) == {x.worker for x in served.ranks}
    finally:
        plugin.close()
