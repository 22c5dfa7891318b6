"""The routes every tab and poll asks for, at a cost that does not grow with the logdir (issue 29).

The status and runs answers are made again only when what they show changed: a scan, a file's state, a
statistic. The run list is made of one part per run, each made again only when a file of that run changed
(``Loader.run_version``) or a scan listed the run differently; its bytes are always those of the whole list
built at once. The loader counts its files by state as states are set (``Loader.counts``), with no pass over
them. Here the loader's jobs are held by a pool the test ends one by one, so every state is the test's."""

import collections
import json
import os
from pathlib import Path

import pytest
from werkzeug.test import Client

from tb_paddle_profile.core.pool import Job
from tb_paddle_profile.pipeline import loader as loader_mod
from tb_paddle_profile.pipeline.discovery import Discovery
from tb_paddle_profile.plugin import routes as routes_mod
from tb_paddle_profile.store.cache import SummaryCache
from tb_paddle_profile.v1 import plugin_pb2


def _tiny(rank: int) -> bytes:
    pid, base = 1000 + rank, 1_795_944_547_421_883 + rank * 7
    tid = f"{pid}(Python)"
    events = [
        {
            "name": "ProfileStep#1[1.000 ms]",
            "pid": pid,
            "tid": tid,
            "ts": base,
            "dur": 1000.0,
            "ph": "X",
            "cat": "ProfileStep",
            "args": {"start_time": "0.000 us", "end_time": "1000.000 us"},
        },
        {
            "name": "matmul dygraph[200.000 us]",
            "pid": pid,
            "tid": f"{pid}(C++)",
            "ts": base + 100,
            "dur": 200.0,
            "ph": "X",
            "cat": "Operator",
            "args": {
                "start_time": "100.000 us",
                "end_time": "300.000 us",
                "input_shapes": {},
                "input_dtypes": {},
                "callstack": "",
            },
        },
    ]
    return json.dumps(
        {"schemaVersion": "1.0.2", "span_index": 0, "ExtraInfo": {str(pid): "MainThread"}, "traceEvents": events}
    ).encode()


def _write(root: Path, run: str, rank: int) -> Path:
    (root / run).mkdir(parents=True, exist_ok=True)
    path = root / run / f"rank{rank}_time_2026_12_02_10_00_00_{rank:06d}.paddle_trace.json"
    path.write_bytes(_tiny(rank))
    return path


class HeldPool:
    """Stands for the worker pool: each job waits until the test ends its future."""

    def submit(self, fn, spec):
        job = Job()
        job.pid = os.getpid()
        return job

    def cancel(self, job) -> bool:
        return False

    def pids(self):
        return []

    def shutdown(self) -> None:
        pass


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    """A real job's outcome of one tiny trace (its summary and digest), what the held jobs answer."""
    from tb_paddle_profile.pipeline.jobs import JobSpec, run_job
    from tb_paddle_profile.store.cache import CacheKey

    work = tmp_path_factory.mktemp("one")
    path = _write(work, "r", 0)
    out = run_job(
        JobSpec(
            path=str(path),
            file_name=path.name,
            key=CacheKey(str(path), path.stat().st_size, "1"),
            cache_dir=str(work / "cache"),
            index=False,
        )
    )
    assert out.ok, out.error
    return out


@pytest.fixture
def env(tmp_path, outcome):
    root = tmp_path / "logs"
    for run in ("a", "b"):
        for rank in range(3):
            _write(root, run, rank)
    d = Discovery(str(root), interval=None)
    L = loader_mod.Loader(d.fs, SummaryCache(None), workers=8, root=d.root, index=False)
    L._executor = HeldPool()

    def settle():
        """Until the dispatcher has started every queued file (8 held workers: more than the files)."""
        _wait(lambda: not L.counts().get("QUEUED"))

    def scan():
        d.scan()
        settle()

    d.subscribe(L.update)
    scan()
    routes = routes_mod.Routes(d, L)
    calls = collections.Counter()
    for name in ("_states", "_run_entry"):
        real = getattr(routes, name)

        def counted(*args, _real=real, _name=name):
            calls[_name, args[1] if _name == "_run_entry" else None] += 1
            return _real(*args)

        setattr(routes, name, counted)
    apps = routes.apps()

    def finish(run: str, rank: int):
        """End the held job of that file with the outcome; wait until the loader has it READY."""
        trace = d.snapshot().runs[run][f"rank{rank}"]["0"]
        job = _wait(lambda: _job_of(L, trace))
        job.future.set_result(outcome)
        _wait(lambda: L.state(trace).state == plugin_pb2.READY)
        settle()

    yield {
        "root": root,
        "discovery": d,
        "loader": L,
        "routes": routes,
        "calls": calls,
        "finish": finish,
        "scan": scan,
        "status": Client(apps["/status"]),
        "runs": Client(apps["/runs"]),
    }
    L.close()


def _job_of(L, trace):
    with L._cond:
        e = L._entries.get(trace.key)
        return e.job if e is not None and e.state == plugin_pb2.LOADING else None


def _wait(condition, timeout: float = 30.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(0.01)
    raise AssertionError("timed out")


def _status(env, **params):
    r = env["status"].get("/", query_string=params)
    assert r.status_code == 200
    return r.get_data(), json.loads(r.get_data())


def _full_counts(body) -> dict:
    return dict(sorted(collections.Counter(f["state"] for f in body["files"]).items()))


def test_status_memoized_by_scan_and_state_and_right_after_a_new_file(env):
    calls = env["calls"]
    data, body = _status(env)
    assert len(body["files"]) == 6 and sum(body["counts"].values()) == 6
    assert calls["_states", None] == 1
    again, _ = _status(env)
    assert again == data and calls["_states", None] == 1  # nothing changed: the same bytes, no pass over files
    light = _status(env, files="0")[1]
    assert "files" not in light and light["counts"] == body["counts"] == _full_counts(body)

    env["finish"]("a", 1)  # one file READY: a new loader version, a new answer
    data, body = _status(env)
    assert calls["_states", None] == 2
    states = {(f["run"], f["worker"]): f["state"] for f in body["files"]}
    assert states["a", "rank1"] == "READY" and list(states.values()).count("READY") == 1
    assert body["counts"] == _full_counts(body) == _status(env, files="0")[1]["counts"]
    assert body["counts"]["READY"] == 1

    _write(env["root"], "b", 7)  # a new file, then a scan: listed, QUEUED, counted
    env["scan"]()
    data, body = _status(env)
    assert calls["_states", None] == 3
    assert ("b", "rank7") in {(f["run"], f["worker"]) for f in body["files"]}
    assert len(body["files"]) == 7 and sum(body["counts"].values()) == 7
    assert body["counts"] == _full_counts(body) == _status(env, files="0")[1]["counts"]

    (env["root"] / "a" / "rank1_time_2026_12_02_10_00_00_000001.paddle_trace.json").unlink()  # the READY one
    env["scan"]()
    body = _status(env)[1]
    assert len(body["files"]) == 6 and "READY" not in body["counts"]
    assert body["counts"] == _full_counts(body) == _status(env, files="0")[1]["counts"]
    env["scan"]()  # a scan that changes nothing is a new scan: the answer says when it was made
    before = body["scanned_at"]
    body = _status(env)[1]
    assert calls["_states", None] == 5 and body["scanned_at"] >= before


def _run_list(env, fmt=""):
    r = env["runs"].get("/", query_string={"format": fmt} if fmt else {})
    assert r.status_code == 200
    return r.get_data()


def _whole(env, fmt="pb") -> bytes:
    routes = env["routes"]
    msg = routes._run_list(env["discovery"].snapshot())
    return routes_mod._encode(msg, fmt)


def _entries(calls) -> dict:
    return {run: n for (name, run), n in calls.items() if name == "_run_entry"}


def test_run_list_made_again_only_for_the_run_that_changed(env):
    calls, d = env["calls"], env["discovery"]
    data = _run_list(env)
    assert _entries(calls) == {"a": 1, "b": 1}
    calls.clear()
    assert data == _whole(env) and _run_list(env, "json") == _whole(env, "json")
    assert _entries(calls) == {"a": 2, "b": 2}  # the two whole lists built here; the JSON answer from the parts
    calls.clear()
    assert _run_list(env) == data and not _entries(calls)  # nothing changed: the same bytes

    env["finish"]("b", 2)
    data = _run_list(env)
    assert _entries(calls) == {"b": 1}  # run a's part is kept
    calls.clear()
    assert data == _whole(env) and _run_list(env, "json") == _whole(env, "json")
    listed = plugin_pb2.RunList.FromString(data)
    spans = {(r.run, w.worker): w.spans[0].state for r in listed.runs for w in r.workers}
    assert spans["b", "rank2"] == plugin_pb2.READY and list(spans.values()).count(plugin_pb2.READY) == 1
    calls.clear()

    env["scan"]()  # nothing changed on disk: a new scan, no part made again, the new scan time in the answer
    data = _run_list(env)
    assert not _entries(calls)
    assert plugin_pb2.RunList.FromString(data).scanned_at == d.snapshot().scanned_at
    assert data == _whole(env)
    calls.clear()

    _write(env["root"], "a", 5)
    env["scan"]()
    data = _run_list(env)
    assert _entries(calls) == {"a": 1}
    calls.clear()
    assert data == _whole(env)
    assert [w.worker for w in plugin_pb2.RunList.FromString(data).runs[0].workers] == [
        "rank0",
        "rank1",
        "rank2",
        "rank5",
    ]

    _write(env["root"], "c", 0)  # a new run, and run b gone
    for p in (env["root"] / "b").iterdir():
        p.unlink()
    env["scan"]()
    calls.clear()
    data = _run_list(env)
    assert _entries(calls) == {"c": 1}
    assert [r.run for r in plugin_pb2.RunList.FromString(data).runs] == ["a", "c"]
    assert set(env["routes"]._run_parts) == {"a", "c"}  # the parts of runs no longer listed are dropped
    calls.clear()
    assert data == _whole(env)


class _Compressed:
    """Counts the bytes zlib is given to compress (gzip.compress and zlib.compressobj go through it)."""

    def __init__(self, monkeypatch):
        import zlib

        self.bytes = 0
        real_compress, real_obj = zlib.compress, zlib.compressobj
        counter = self

        class Obj:
            def __init__(self, *args, **kwargs):
                self._c = real_obj(*args, **kwargs)

            def compress(self, data):
                counter.bytes += len(data)
                return self._c.compress(data)

            def flush(self, *args):
                return self._c.flush(*args)

        def compress(data, *args, **kwargs):
            counter.bytes += len(data)
            return real_compress(data, *args, **kwargs)

        monkeypatch.setattr(zlib, "compress", compress)
        monkeypatch.setattr(zlib, "compressobj", Obj)


class _JsonEntries:
    """Counts the run entries the JSON encoder is given (a whole list's, or one entry at a time)."""

    def __init__(self, monkeypatch):
        from tb_paddle_profile.core import protojson

        self.entries = 0
        real, counter = protojson._encoder, self

        class Encoder:
            def encode(self, value):
                if isinstance(value, dict):
                    counter.entries += len(value["runs"]) if "runs" in value else int("workers" in value)
                return real.encode(value)

        monkeypatch.setattr(protojson, "_encoder", Encoder())


def test_run_list_after_a_state_change_encodes_and_compresses_only_that_run(env, monkeypatch):
    """After one file's state changed, the JSON and gzip answers of the run list cost that run's part: the
    other runs' JSON entries and compressed pieces are kept (they were made again whole: O(bytes) of the
    list, 25 MB at 100,000 files, at every state change). Every answer is the whole list's bytes."""
    import gzip

    pb, js = env["runs"], env["runs"]
    gz = {"Accept-Encoding": "gzip"}

    def answers():
        out = {}
        for fmt in ("pb", "json"):
            q = {"format": fmt}
            plain = pb.get("/", query_string=q)
            zipped = js.get("/", query_string=q, headers=gz)
            assert plain.status_code == zipped.status_code == 200
            assert "Content-Encoding" not in plain.headers and zipped.headers["Content-Encoding"] == "gzip"
            assert int(zipped.headers["Content-Length"]) == len(zipped.get_data())
            assert gzip.decompress(zipped.get_data()) == plain.get_data() == _whole(env, fmt)
            out[fmt] = plain.get_data()
        return out

    answers()
    listed = env["routes"]._run_list(env["discovery"].snapshot())
    assert listed.runs[0].run == "a"
    a_pb = len(plugin_pb2.RunList(runs=[listed.runs[0]]).SerializeToString())
    a_json = len(routes_mod._encode(listed.runs[0], "json"))
    env["finish"]("b", 1)
    whole = {fmt: len(_whole(env, fmt)) for fmt in ("pb", "json")}
    compressed, entries = _Compressed(monkeypatch), _JsonEntries(monkeypatch)
    got = {}
    for fmt in ("pb", "json"):
        before = compressed.bytes
        r = js.get("/", query_string={"format": fmt}, headers=gz)
        got[fmt] = gzip.decompress(r.get_data())
        # the head, run b's part and the tail; not run a's part, not the whole list
        assert compressed.bytes - before == whole[fmt] - (a_pb if fmt == "pb" else a_json + 1), fmt
    assert entries.entries == 1  # run b's JSON entry, once: the gzip and plain answers share it
    r = pb.get("/", query_string={"format": "json"})
    assert entries.entries == 1 and r.get_data() == got["json"]
    monkeypatch.undo()
    assert got == {fmt: _whole(env, fmt) for fmt in ("pb", "json")}
    assert answers() == got


def test_loader_counts_follow_every_state(env):
    """Loader.counts is kept as states are set; it equals a count over the entries at every step."""
    L = env["loader"]

    def by_pass():
        with L._cond:
            return dict(collections.Counter(plugin_pb2.LoadState.Name(e.state) for e in L._entries.values()))

    assert L.counts() == by_pass() and sum(L.counts().values()) == 6
    env["finish"]("a", 0)
    assert L.counts() == by_pass() and L.counts()["READY"] == 1
    versions = {run: L.run_version(run) for run in ("a", "b")}
    env["finish"]("b", 0)
    assert L.run_version("a") == versions["a"] and L.run_version("b") != versions["b"]
    (env["root"] / "b" / "rank0_time_2026_12_02_10_00_00_000000.paddle_trace.json").unlink()
    env["scan"]()
    assert L.counts() == by_pass() and sum(L.counts().values()) == 5 and L.counts()["READY"] == 1


def test_first_scan_holds_a_batch_of_heads_not_every_file(tmp_path, monkeypatch):
    """A scan read the head (8 KB) of every new file before turning any into its span: 100,000 new files
    held 0.8 GB at once. Now the heads are read HEAD_BATCH at a time and only their spans kept."""
    import tracemalloc

    from tb_paddle_profile.pipeline import discovery as discovery_mod

    root = tmp_path / "logs"
    n = 3000
    pad = {"pad": "x" * 12_000}  # after span_index: each file longer than a head
    for i in range(n):
        (root / f"r{i // 1000}").mkdir(parents=True, exist_ok=True)
        doc = {"schemaVersion": "1.0.2", "span_index": i % 3, "ExtraInfo": pad, "traceEvents": []}
        (root / f"r{i // 1000}" / f"rank{i}_time_2026_12_02_10_00_00_{i:06d}.paddle_trace.json").write_text(
            json.dumps(doc)
        )
    batches = []
    real = Discovery._read_heads

    def counted(self, entries):
        batches.append(len(entries))
        return real(self, entries)

    monkeypatch.setattr(Discovery, "_read_heads", counted)
    d = Discovery(str(root), interval=None)
    tracemalloc.start()
    try:
        snap = d.scan()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert sum(batches) == n and max(batches) <= discovery_mod.HEAD_BATCH < n
    spans = {f.worker: f.span for f in snap.files}
    assert len(spans) == n and all(spans[f"rank{i}"] == str(i % 3) for i in range(n))
    # every head held at once is n x HEAD_BYTES on its own (24.6 MB); the rest of a scan is ~4 KB a file
    assert peak < n * discovery_mod.HEAD_BYTES, peak
    batches.clear()
    assert d.scan().files == snap.files and not batches  # known files: no head read again


def test_run_list_reads_the_runs_versions_in_one_take_and_a_file_key_is_made_once(env, monkeypatch):
    """A 100,000-file soak with 50 clients (issue 29) found the run list taking the loader's lock once per
    run (Loader.run_version, ahead of the dispatcher waiting for it) and TraceFile.key making a new
    CacheKey at each of its many uses per file and request. Now one take for every run's version, and
    each TraceFile's key is made once (the same object after)."""
    L, d = env["loader"], env["discovery"]
    takes = collections.Counter()
    for name in ("run_version", "run_versions"):
        real = getattr(L, name)

        def counted(*args, _real=real, _name=name):
            takes[_name] += 1
            return _real(*args)

        monkeypatch.setattr(L, name, counted)
    env["finish"]("a", 2)
    data = _run_list(env)
    assert takes == {"run_versions": 1}, takes
    assert plugin_pb2.RunList.FromString(data) == env["routes"]._run_list(d.snapshot())
    versions = L.run_versions()
    assert all(versions(run) == L.run_version(run) for run in ("a", "b", "not a run"))

    trace = d.snapshot().runs["a"]["rank0"]["0"]
    assert trace.key is trace.key and trace.key == loader_mod.CacheKey(trace.source, trace.size, trace.version)
