"""Faults while the plugin runs, on the plugin as TensorBoard builds it (its routes behind TensorBoard's
own WSGI application, real worker processes): a worker killed mid-parse, the cache folder made
unwritable, a corrupt cache entry and timeline index, a link out of the logdir, and an S3 endpoint
stopped and restored. Each must end in a clear state: nothing lost, nothing served from outside the
logdir, nothing written into it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

import fsspec
import pytest

from support.plugin_testlib import (
    GLOO,
    OLD,
    PREFIX,
    GateFS,
    free_port,
    make_plugin,
    pid_gone,
    place,
    ready,
    stop,
    trace_files,
    tree_digest,
    wait_for,
    wait_http,
)
from tb_paddle_profile import timeline
from tb_paddle_profile.timeline import remote
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2, timeline_pb2


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    return tmp_path


def states(client):
    runs = plugin_pb2.RunList.FromString(client.get(f"{PREFIX}/runs").get_data())
    return {(r.run, w.worker, s.span): (s.state, s.error) for r in runs.runs for w in r.workers for s in w.spans}


def summary(client, run, worker, span="0"):
    r = client.get(f"{PREFIX}/summary?" + urlencode({"run": run, "worker": worker, "span": span}))
    return r.status_code, r.get_data()


def timeline_window(client, run, span="0", timeout=120.0, **window):
    """Poll the timeline route until it stops answering 202 (bounded); (status, TimelineWindow or text).
    ``window``: start_ns, end_ns (the whole span without them: memoized once drawn)."""
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(f"{PREFIX}/timeline?" + urlencode({"run": run, "span": span, "px": 800, **window}))
        if r.status_code != 202:
            body = (
                timeline_pb2.TimelineWindow.FromString(r.get_data())
                if r.status_code == 200
                else r.get_data(as_text=True)
            )
            return r.status_code, body
        assert time.monotonic() < deadline, "the timeline kept answering 202"
        time.sleep(0.2)


def drawn_events(window) -> int:
    return sum(len(lane.durations) for rank in window.ranks for lane in rank.lanes)


def gloo_logdir(shared_traces, root: Path) -> dict:
    out = {}
    for src in trace_files(shared_traces, GLOO):
        out[src.name] = place(src.read_bytes(), root / "gloo" / src.name, mtime=OLD)
    return out


# ------------------------------------------------------------------ a worker killed while it parses


def test_a_worker_killed_mid_parse_costs_only_its_file_which_is_retried(env, shared_traces, monkeypatch):
    """The logdir is read through a store whose whole-file reads wait for a gate, so both files are
    surely in flight, each on its own worker process, when one of those processes is killed."""
    gates = env / "gates"
    gates.mkdir()
    files = gloo_logdir(shared_traces, env / "logdir")
    fsspec.register_implementation("gatefile", GateFS, clobber=True)
    monkeypatch.setitem(fsspec.config.conf, "gatefile", {"gates": str(gates)})
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch.CRASH_RETRY_S", 0.0)
    before = tree_digest(env / "logdir")
    plugin, client = make_plugin(f"gatefile://{env / 'logdir'}")
    try:
        assert plugin.discovery.wait_first_scan(60)
        traces = {f.file_name: f for f in plugin.discovery.snapshot().files}
        a, b = (traces[name] for name in sorted(files))
        pid_a = wait_for(lambda: plugin.loader.job_pid(a), what="a's parse to start")
        pid_b = wait_for(lambda: plugin.loader.job_pid(b), what="b's parse to start")
        assert pid_a != pid_b
        os.kill(pid_a, signal.SIGKILL)
        wait_for(lambda: pid_gone(pid_a), what="the killed worker to be reaped")
        # b's worker lived: b is still on it, not charged.
        assert plugin.loader.state(b).state == plugin_pb2.LOADING and plugin.loader.job_pid(b) == pid_b
        for name in files:
            (gates / name).touch()
        assert plugin.loader.wait_idle(120), plugin.loader.counts()
        assert plugin.loader.stats["worker_crashes"] == 1
        for f in (a, b):
            assert states(client)[(f.run, f.worker, f.span)] == (plugin_pb2.READY, "")
            code, body = summary(client, f.run, f.worker, f.span)
            assert code == 200 and summary_pb2.Summary.FromString(body) == summarize_bytes(
                files[f.file_name].read_bytes(), f.file_name
            )
    finally:
        plugin.close()
    assert pid_gone(pid_b) or not Path(f"/proc/{pid_b}/status").read_text().count("zombie")
    assert tree_digest(env / "logdir") == before


# ------------------------------------------------------------------ the cache folder made unwritable


def test_a_cache_folder_made_unwritable_while_serving_loses_nothing(env, shared_traces):
    files = gloo_logdir(shared_traces, env / "logdir")
    cache = env / "cache"
    plugin, client = make_plugin(str(env / "logdir"))
    try:
        ready(plugin)
        assert all(state == (plugin_pb2.READY, "") for state in states(client).values())
        # The cache folder goes away and a regular file takes its place: nothing can be written there,
        # not even by root.
        cache.rename(env / "cache.moved")
        cache.write_bytes(b"not a folder")
        src = sorted(files.values())[0]
        new = place(
            src.read_bytes().replace(b'"span_index": "0"', b'"span_index": "1"', 1),
            env / "logdir" / "gloo" / src.name.replace("_time_", "_time_9"),
            mtime=OLD,
        )
        plugin.discovery.scan()
        ready(plugin)
        got = states(client)
        assert all(state == (plugin_pb2.READY, "") for state in got.values()), got
        worker = next(w for (run, w, span) in got if span == "1")
        code, body = summary(client, "gloo", worker, "1")
        assert code == 200 and summary_pb2.Summary.FromString(body) == summarize_bytes(new.read_bytes(), new.name)
        # The already cached summaries are still served (from memory or the moved folder's copies).
        for run, w, span in got:
            assert summary(client, run, w, span)[0] == 200
        # The timeline still draws: its index is built into a temporary folder.
        code, window = timeline_window(client, "gloo", "1")
        assert code == 200 and drawn_events(window) > 0
    finally:
        plugin.close()
    assert cache.read_bytes() == b"not a folder"  # our own cache path was left as it was found


# ------------------------------------------------------------------ a corrupt cache entry and index


def test_a_corrupt_cache_entry_and_timeline_index_are_misses(env, shared_traces):
    files = gloo_logdir(shared_traces, env / "logdir")
    plugin, client = make_plugin(str(env / "logdir"))
    try:
        ready(plugin)
        code, first_window = timeline_window(client, "gloo")
        assert code == 200 and drawn_events(first_window) > 0
        parallel = client.get(f"{PREFIX}/parallel?run=gloo&span=0")
        assert parallel.status_code == 200
    finally:
        plugin.close()
    entries = sorted((env / "cache").rglob("*.pb"))
    indexes = sorted((env / "cache").rglob("*.tl"))
    assert len(entries) == 2 and len(indexes) == 2
    # One summary entry cut short after its header, the other's body flipped; one index garbled in the
    # middle, the other cut.
    data = entries[0].read_bytes()
    entries[0].write_bytes(data[: len(data) - 200])
    data = bytearray(entries[1].read_bytes())
    data[-50] ^= 0xFF
    entries[1].write_bytes(bytes(data))
    data = bytearray(indexes[0].read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = os.urandom(64)
    indexes[0].write_bytes(bytes(data))
    indexes[1].write_bytes(indexes[1].read_bytes()[:1000])

    plugin, client = make_plugin(str(env / "logdir"))
    try:
        ready(plugin)
        # The cut entry is seen from its length at load time; the flipped one by its checksum when it
        # is first read: a miss then too (the route answers 202 while it is parsed again), never served.
        for name, path in files.items():
            f = next(t for t in plugin.discovery.snapshot().files if t.file_name == name)
            code, body = wait_for(
                lambda: (lambda c, b: (c, b) if c != 202 else None)(*summary(client, f.run, f.worker, f.span)),
                what=f"{name}'s summary",
            )
            assert code == 200 and summary_pb2.Summary.FromString(body) == summarize_bytes(path.read_bytes(), name)
        assert plugin.loader.wait_idle(60)
        assert plugin.loader.stats["parsed"] == 2  # both damaged entries were misses, parsed again
        for route in ("distributed", "parallel"):
            assert client.get(f"{PREFIX}/{route}?run=gloo&span=0").status_code == 200
        assert client.get(f"{PREFIX}/parallel?run=gloo&span=0").get_data() == parallel.get_data()
        code, window = timeline_window(client, "gloo")
        assert code == 200 and window == first_window  # rebuilt, drawn as before
    finally:
        plugin.close()


# ------------------------------------------------------------------ a link out of the logdir


def test_a_link_out_of_the_logdir_is_listed_refused_and_never_served(env, shared_traces):
    gloo_logdir(shared_traces, env / "logdir")
    outside = env / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_bytes(b"top secret: not a trace")
    (env / "logdir" / "links").mkdir()
    os.symlink(secret, env / "logdir" / "links" / "passwd_time_1.paddle_trace.json")
    before = tree_digest(env / "logdir")
    plugin, client = make_plugin(str(env / "logdir"))
    try:
        ready(plugin)
        got = states(client)
        state, error = got[("links", "passwd", "?")]
        assert state == plugin_pb2.FAILED and "outside the logdir" in error
        assert all(s == plugin_pb2.READY for (run, _, _), (s, _) in got.items() if run == "gloo")
        q = urlencode({"run": "links", "worker": "passwd", "span": "?"})
        for route in ("trace", "summary", "trace_window", "timeline_event"):
            r = client.get(f"{PREFIX}/{route}?{q}&id=0")
            assert r.status_code in (403, 404, 422), (route, r.status_code)
            assert b"top secret" not in r.get_data()
        assert b"top secret" not in client.get(f"{PREFIX}/status").get_data()
    finally:
        plugin.close()
    assert tree_digest(env / "logdir") == before


# ------------------------------------------------------------------ an S3 endpoint stopped and restored

boto3 = pytest.importorskip("boto3")
BUCKET = "faults"
LOGDIR = f"s3://{BUCKET}/profiler_log"


def _moto(port: int, log: Path):
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wait_http(f"http://127.0.0.1:{port}/", proc, 60)
    return proc


def _upload(files: dict, extra: dict = None):
    s3 = boto3.client("s3")
    try:
        s3.create_bucket(Bucket=BUCKET)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    for name, data in {**files, **(extra or {})}.items():
        s3.put_object(Bucket=BUCKET, Key=f"profiler_log/gloo/{name}", Body=data)


def test_an_s3_endpoint_stopped_and_restored(env, shared_traces, monkeypatch):
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    port = free_port()
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(env / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(env / "no-aws-creds"),
        "AWS_MAX_ATTEMPTS": "1",
        "AWS_RETRY_MODE": "standard",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setattr(timeline.TimelineStore, "BACKOFF_S", 0.2)
    monkeypatch.setattr(timeline.TimelineStore, "COOLDOWN_S", 1.0)
    fsspec.filesystem("s3").clear_instance_cache()
    files = {src.name: src.read_bytes() for src in trace_files(shared_traces, GLOO)}
    log = env / "moto.log"
    proc = _moto(port, log)
    plugin = None
    try:
        _upload(files)
        plugin, client = make_plugin(LOGDIR)
        ready(plugin)
        got = states(client)
        assert len(got) == 2 and all(state == (plugin_pb2.READY, "") for state in got.values())

        stop(proc)  # the endpoint goes away
        plugin.discovery.scan()
        # The listing failed: the files of the last good scan are kept, their summaries still served.
        assert plugin.discovery.snapshot().error
        assert states(client) == got
        for run, w, span in got:
            assert summary(client, run, w, span)[0] == 200
        # The indexes were built by the jobs that made the summaries (one parse): drawn without the store.
        code, window = timeline_window(client, "gloo")
        assert code == 200 and drawn_events(window) > 0
        # A timeline whose index needs the store now (evicted from the cache; the whole span drawn above
        # is memoized, so a window zoomed to): a clear "for now" answer, not 202 for ever.
        for index in (env / "cache").glob("timeline-v*/*/*.tl"):
            index.unlink()
        plugin._routes._timeline_store._open.clear()
        plugin._routes._in_pool("views", remote.forget)  # (nor open in the timeline worker process)
        code, text = timeline_window(
            client, "gloo", start_ns=window.window_start_ns, end_ns=(window.window_start_ns + window.window_end_ns) // 2
        )
        assert code == 503, (code, text)
        assert text.strip() and "\n" not in text.strip()

        proc = _moto(port, log)  # the endpoint comes back (empty, as a restored service may): the
        new_name = "rank1_time_2026_11_29_07_30_00_000000.paddle_trace.json"  # traces are written again
        new = files[sorted(files)[1]].replace(b'"span_index": "0"', b'"span_index": "1"', 1)
        _upload(files, {new_name: new})
        time.sleep(1.1)  # the timeline store's cool-down (shortened above)
        plugin.discovery.scan()
        ready(plugin)
        after = states(client)
        assert all(state == (plugin_pb2.READY, "") for state in after.values()), after
        assert set(after) == set(got) | {("gloo", "rank1", "1")}
        code, body = summary(client, "gloo", "rank1", "1")
        assert code == 200 and summary_pb2.Summary.FromString(body) == summarize_bytes(new, new_name)
        code, window = timeline_window(client, "gloo")
        assert code == 200 and drawn_events(window) > 0
    finally:
        if plugin is not None:
            plugin.close()
        stop(proc)
