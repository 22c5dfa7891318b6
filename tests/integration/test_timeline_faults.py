"""The timeline under faults (issue 17): names that hold "\\0" (10), damaged index files (5), builds that
fail for reasons other than a bad trace (4), and trace_window's bound and streaming (2).

The store's retry logic is driven with threads instead of worker processes (``process_pool`` replaced),
a fake store whose reads fail on demand and a fake clock, so that every poll is counted; the routes are
driven through TensorBoard's own routing of the plugin with real worker processes."""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import logging
import os
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from support.plugin_testlib import GPU, OLD, PREFIX, generate_rank, make_plugin, place, ready, trace_files
from tb_paddle_profile import timeline
from tb_paddle_profile.core import pool as workers
from tb_paddle_profile.store.cache import CacheKey
from tb_paddle_profile.trace.reader import read_trace
from tb_paddle_profile.v1 import timeline_pb2 as tpb

HANG_GUARD_S = 60.0  # what a build may take here at most; only ever reached when something spins


def _trace(names, extra_steps: int = 0) -> bytes:
    """A small Paddle-shaped trace: one ProfileStep and one operator per name, in order."""
    events = [
        {
            "name": "ProfileStep#1",
            "pid": 1,
            "tid": "1(Python)",
            "ts": 1000,
            "dur": 10_000,
            "ph": "X",
            "cat": "ProfileStep",
            "args": {"start_time": "0.000 us", "end_time": "10000.000 us"},
        }
    ]
    for i, name in enumerate(names):
        events.append(
            {"name": name, "pid": 1, "tid": "1(Python)", "ts": 1000 + i * 10, "dur": 5, "ph": "X", "cat": "Operator"}
        )
    return json.dumps(
        {"displayTimeUnit": "ms", "schemaVersion": "1.0.2", "span_index": "0", "traceEvents": events}
    ).encode()


class _File:
    """What the store needs of a TraceFile."""

    def __init__(self, path: Path, version: str = "1", worker: str = "rank0"):
        self.path = str(path)
        self.file_name = path.name
        self.size = path.stat().st_size
        self.key = CacheKey("file://" + self.path, self.size, version)
        self.root = str(path.parent)
        self.worker, self.rank = worker, 0


class _FlakyFS:
    """A non-local store (so reads go through fs.cat_file) that fails while ``down`` is set and can hold
    reads until ``gate`` is set; counts the reads."""

    protocol = "flaky"

    def __init__(self):
        self.down = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.reads = 0
        self._lock = threading.Lock()

    def cat_file(self, path):
        with self._lock:
            self.reads += 1
        assert self.gate.wait(HANG_GUARD_S)
        if self.down.is_set():
            raise ConnectionError("Could not connect to the endpoint URL")  # not an OSError: a store's own
        return Path(path).read_bytes()


@pytest.fixture
def threads(monkeypatch):
    """Builds run in threads of this process (so that a test can count and fake what they do)."""
    pools = []

    def pool(n, init=None):
        pools.append(concurrent.futures.ThreadPoolExecutor(n))
        return pools[-1]

    monkeypatch.setattr(workers, "process_pool", pool)
    yield pools
    for p in pools:
        p.shutdown(wait=True)


def _poll(store, f, until=lambda state: state != "building"):
    """Ask for the index like the page does until ``until`` holds; the answers seen on the way."""
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        idx, state = store.get(f)
        if idx is not None or until(state):
            return idx, state
        assert time.monotonic() < deadline, f"still {state!r} after {HANG_GUARD_S} s: the store spins"
        time.sleep(0.01)


def _counting(monkeypatch) -> list:
    """Count the builds the store starts."""
    calls = []
    real = timeline.index_in_worker

    def counted(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(timeline.store, "index_in_worker", counted)  # where the store looks it up
    return calls


# ------------------------------------------------------------------ 10. names holding "\0"


NAMES = ["a\0b", "", "héllo wörld ✓", "\0", "plain", "日本語\0x", "\0\0", "emoji 😀", "last"]


def test_names_read_back_exactly_whatever_they_hold(tmp_path):
    data = _trace(NAMES)
    tables = read_trace(data, "x.paddle_trace.json")
    assert [tables.names[i] for i in tables.host.name.tolist()] == ["ProfileStep#1"] + NAMES  # the reader's part
    out = tmp_path / "x.tl"
    timeline.build_file_index(lambda: data, "x.paddle_trace.json", str(out))
    idx = timeline.TimelineIndex(str(out))
    assert idx.names == tables.names
    a = idx.a
    got = [idx.names[int(a["ev_name"][p])] for p in a["host_pos"].tolist()]
    assert got == ["ProfileStep#1"] + NAMES
    # and as the routes send them: the window's name table, the details, the Perfetto window
    msg = timeline.window_message("r", "0", [(_File(out), idx, "")], None, None, 100_000, base=idx.origin)
    shown = set()
    for lane in msg.ranks[0].lanes:
        shown.update(msg.names[k] for k, c in zip(lane.names, lane.counts) if c == 1)
    assert shown == set(["ProfileStep#1"] + NAMES)
    assert [timeline.event_details(idx, p)["name"] for p in a["host_pos"].tolist()] == ["ProfileStep#1"] + NAMES
    doc = json.loads(timeline.chrome_subset(idx, idx.start_ns, idx.end_ns, "x.paddle_trace.json"))
    assert sorted(e["name"] for e in doc["traceEvents"] if e["ph"] == "X") == sorted(["ProfileStep#1"] + NAMES)


# ------------------------------------------------------------------ 5. damaged index files


def _array_offset(blob: bytes, key: str) -> int:
    magic = blob[:8]
    n = int.from_bytes(blob[len(magic) : len(magic) + 8], "little")
    start = len(magic) + 8
    head = json.loads(blob[start : start + n])
    base = start + n + ((-(start + n)) % 64)
    return base + head["arrays"][key][2]


def _truncate(blob: bytes) -> bytes:
    return blob[: len(blob) // 2]


def _flip(blob: bytes) -> bytes:
    at = _array_offset(blob, "ev_start") + 8  # the second event's start
    return blob[:at] + bytes([blob[at] ^ 0x40]) + blob[at + 1 :]


def _garbage(blob: bytes) -> bytes:
    keep = _array_offset(blob, "ev_start")  # magic and header kept, every array overwritten
    return blob[:keep] + np.random.default_rng(7).integers(0, 256, len(blob) - keep, dtype=np.uint8).tobytes()


def _empty(blob: bytes) -> bytes:
    return b""


@pytest.mark.parametrize("damage", [_truncate, _flip, _garbage, _empty])
def test_a_damaged_index_is_a_miss_deleted_and_built_again(damage, tmp_path, threads, monkeypatch, caplog):
    trace = tmp_path / "logdir" / "rank0_time_1.paddle_trace.json"
    trace.parent.mkdir()
    trace.write_bytes(_trace([f"op{i}" for i in range(200)]))
    f = _File(trace)
    store = timeline.TimelineStore(None, tmp_path / "cache")
    try:
        good = store._path(f)
        good.parent.mkdir(parents=True)
        timeline.build_file_index(trace.read_bytes, trace.name, str(good))
        expected = timeline.TimelineIndex(str(good))
        starts, names = expected.a["ev_start"].copy(), list(expected.names)
        good.write_bytes(damage(good.read_bytes()))
        calls = _counting(monkeypatch)
        with caplog.at_level(logging.WARNING):
            idx, state = store.get(f)
            assert idx is None and state == "building", "a damaged index is never served"
            idx, state = _poll(store, f)
        assert state == "" and idx is not None
        assert len(calls) == 1
        assert np.array_equal(idx.a["ev_start"], starts) and idx.names == names
        assert timeline.TimelineIndex(str(good)).names == names  # the damaged file was replaced
        damaged = [r for r in caplog.records if "is damaged" in r.getMessage()]
        assert len(damaged) == 1 and str(good) in damaged[0].getMessage()
    finally:
        store.close()


# ------------------------------------------------------------------ 4. builds failing for other reasons


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "logdir" / "rank0_time_1.paddle_trace.json"
    path.parent.mkdir()
    path.write_bytes(_trace([f"op{i}" for i in range(50)]))
    return _File(path)


def test_an_unreachable_store_is_retried_with_backoff_then_reported_then_retried_once_back(
    tmp_path, trace_file, threads, monkeypatch
):
    fs = _FlakyFS()
    store = timeline.TimelineStore(fs, tmp_path / "cache")
    now = [1000.0]
    store._clock = lambda: now[0]
    store.BACKOFF_S, store.RETRIES, store.COOLDOWN_S = 10.0, 3, 300.0
    f = trace_file
    try:
        fs.down.set()
        fs.gate.clear()
        assert store.get(f) == (None, "building")
        for _ in range(20):  # polls while the build runs start nothing
            assert store.get(f) == (None, "building")
        assert fs.reads <= 1
        fs.gate.set()
        _poll(store, f, until=lambda s: store._jobs[f.key.digest()].future is None)
        assert fs.reads == 1
        # polls right after a failure start nothing either: the retry waits for its backoff
        for _ in range(20):
            assert store.get(f) == (None, "building")
        assert fs.reads == 1
        for attempt in (2, 3):
            now[0] += 10.0 * 2 ** (attempt - 2) + 0.1
            _poll(store, f, until=lambda s: fs.reads == attempt and store._jobs[f.key.digest()].future is None)
        idx, state = store.get(f)
        assert idx is None and state != "building"
        assert state.startswith(f"{f.file_name}: cannot read:") and "gave up after 3 attempts" in state
        assert store.failure(f)[0] == "transient"
        for _ in range(20):  # given up: reported, not retried, until the cool-down has passed
            now[0] += 1.0
            assert store.get(f) == (None, state)
        assert fs.reads == 3
        fs.down.clear()  # the store is back
        now[0] += 300.0
        idx, state = _poll(store, f)
        assert state == "" and idx is not None and fs.reads == 4
        assert store.failure(f) is None
    finally:
        store.close()


def test_an_error_of_ours_is_reported_as_ours_logged_and_not_retried(
    tmp_path, trace_file, threads, monkeypatch, caplog
):
    def broken(tables, tree):
        raise IndexError("index 7 is out of bounds for axis 0 with size 3")

    monkeypatch.setattr(timeline.build, "build_index", broken)  # where the worker's build looks it up
    calls = _counting(monkeypatch)
    store = timeline.TimelineStore(None, tmp_path / "cache")
    store.BACKOFF_S = 0.0
    try:
        with caplog.at_level(logging.ERROR):
            idx, state = _poll(store, trace_file)
        assert idx is None
        assert state.startswith(f"{trace_file.file_name}: internal error in tb_paddle_profile")
        assert "not a fault of this file" in state and "IndexError: index 7 is out of bounds" in state
        assert "\n" not in state
        assert store.failure(trace_file) == ("bug", state)
        logged = [r for r in caplog.records if r.levelno >= logging.ERROR and "internal error" in r.getMessage()]
        assert logged and "Traceback" in logged[0].getMessage() and "broken" in logged[0].getMessage()
        for _ in range(20):
            assert store.get(trace_file) == (None, state)
        assert len(calls) == 1
    finally:
        store.close()


def test_a_bad_trace_is_reported_once_and_not_rebuilt(tmp_path, threads, monkeypatch):
    path = tmp_path / "logdir" / "rank0_time_1.paddle_trace.json"
    path.parent.mkdir()
    path.write_bytes(_trace(["x"])[:-30])
    f = _File(path)
    calls = _counting(monkeypatch)
    store = timeline.TimelineStore(None, tmp_path / "cache")
    store.BACKOFF_S = 0.0
    try:
        idx, state = _poll(store, f)
        assert idx is None and state.startswith(f"{path.name}: truncated JSON")
        assert store.failure(f) == ("trace", state)
        for _ in range(20):
            assert store.get(f) == (None, state)
        assert len(calls) == 1
    finally:
        store.close()


def test_no_worker_process_is_a_transient_failure_not_an_exception(tmp_path, trace_file, monkeypatch):
    starts = []

    def no_pool(n, init=None):
        starts.append(n)
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(workers, "process_pool", no_pool)
    store = timeline.TimelineStore(None, tmp_path / "cache")
    store.BACKOFF_S = 0.0
    try:
        idx, state = _poll(store, trace_file)
        assert idx is None and "cannot start a worker process" in state and "Too many open files" in state
        assert store.failure(trace_file)[0] == "transient"
        assert len(starts) == store.RETRIES
    finally:
        store.close()


def _unwritable(tmp_path: Path) -> Path:
    """A cache folder that cannot be created, even by root: its parent is a file."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_bytes(b"")
    return blocker / "cache"


def test_an_unwritable_cache_folder_still_gives_a_timeline(tmp_path, trace_file, threads, monkeypatch, caplog):
    calls = _counting(monkeypatch)
    store = timeline.TimelineStore(None, _unwritable(tmp_path))
    try:
        with caplog.at_level(logging.WARNING):
            idx, state = _poll(store, trace_file)
        assert state == "" and idx is not None and len(calls) == 1
        assert store._spill is not None and list(store._spill.rglob("*.tl"))  # kept in the temporary folder
        assert sum("temporary folder" in r.getMessage() for r in caplog.records) == 1
        assert store.get(trace_file)[0] is idx
    finally:
        store.close()
    assert not store._spill.exists()  # removed with the store


def test_an_index_in_use_stays_readable_when_others_push_it_out(tmp_path, threads):
    """Issue 12's KeyError 'lane_ptr': the store kept a bounded number of indexes open and closed the one
    it dropped, under the request still reading it."""
    path = tmp_path / "logdir" / "rank0_time_1.paddle_trace.json"
    path.parent.mkdir()
    path.write_bytes(_trace([f"op{i}" for i in range(30)]))
    store = timeline.TimelineStore(None, tmp_path / "cache")
    try:
        keep = getattr(store, "KEEP_OPEN", 64)
        files = [_File(path, version=str(v)) for v in range(keep + 2)]
        built = tmp_path / "one.tl"
        timeline.build_file_index(path.read_bytes, path.name, str(built))
        for f in files:  # the same index under many versions' keys: nothing to build
            target = store._path(f)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(built.read_bytes())
        first, state = store.get(files[0])
        assert state == "" and first is not None
        for f in files[1:]:
            assert store.get(f)[1] == ""
        msg = timeline.window_message("r", "0", [(files[0], first, "")], None, None, 1000, base=first.origin)
        assert msg.ranks[0].events_in_window == len(first.a["ev_start"]) > 30
    finally:
        store.close()


# ------------------------------------------------------------------ 2. trace_window: bounded and streamed


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A generated rank of about 100,000 events (some 17 MB as a Perfetto window), and its index."""
    out = tmp_path_factory.mktemp("gen")
    path = generate_rank(out, 100_000)
    timeline.build_file_index(path.read_bytes, path.name, str(out / "gen.tl"))
    return path, timeline.TimelineIndex(str(out / "gen.tl"))


def _windows(idx):
    lo, hi = idx.start_ns, idx.end_ns
    return [(lo, hi), (lo, lo + (hi - lo) // 10), (lo + (hi - lo) // 2, lo + (hi - lo) // 2 + 1_000_000), (hi, hi)]


def test_window_size_is_an_upper_bound_of_what_is_written(generated):
    path, idx = generated
    a = idx.a
    for ws, we in _windows(idx):
        events, upper = timeline.window_size(idx, ws, we, path.name)
        body = timeline.chrome_subset(idx, ws, we, path.name)
        assert events == int(((a["ev_end"] >= ws) & (a["ev_start"] <= we)).sum())
        assert events == sum(1 for e in json.loads(body)["traceEvents"] if e["ph"] == "X")
        assert len(body) <= upper <= 3 * len(body) + 4096, (ws, we, len(body), upper)


def test_the_window_is_written_in_chunks_in_bounded_memory(generated):
    """What is held at once is a chunk and a block of events, not the window (which used to be built
    whole: 1.78 GB for a 10M-event trace)."""
    path, idx = generated
    lo, hi = idx.start_ns, idx.end_ns
    ws, we = lo, lo + (hi - lo) // 20  # some 6 MB of JSON
    list(timeline.chrome_chunks(idx, lo, lo + 1, path.name))  # first use: lazy tables built
    tracemalloc.start()
    try:
        total, chunks, largest = 0, 0, 0
        for chunk in timeline.chrome_chunks(idx, ws, we, path.name, chunk=1 << 16, block=256):
            total += len(chunk)
            chunks += 1
            largest = max(largest, len(chunk))
            del chunk
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total > 4 << 20 and chunks > 20
    assert peak < total / 6, f"{peak} bytes held at once to write {total}"
    assert largest < total / 10
    assert b"".join(timeline.chrome_chunks(idx, ws, we, path.name, chunk=1 << 16, block=256)) == timeline.chrome_subset(
        idx, ws, we, path.name
    )  # the same JSON, however it is cut


@pytest.fixture(scope="module")
def generated_plugin(generated, shared_traces, tmp_path_factory):
    path, _ = generated
    root = tmp_path_factory.mktemp("gen_logdir")
    place(path.read_bytes(), root / "big" / path.name)
    place(b'{"traceEvents": [', root / "broken" / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json", mtime=OLD)
    for f in trace_files(shared_traces, GPU):
        place(f.read_bytes(), root / "gpu" / f.name)
    old = os.environ.get("TB_PADDLE_PROFILE_CACHE")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(_unwritable(tmp_path_factory.mktemp("gen_cache")))
    plugin, client = make_plugin(root)
    try:
        ready(plugin)
        yield plugin, client
    finally:
        plugin.close()
        if old is None:
            os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)
        else:
            os.environ["TB_PADDLE_PROFILE_CACHE"] = old


def _until_built(client, url):
    deadline = time.monotonic() + HANG_GUARD_S
    while True:
        r = client.get(url)
        building = r.status_code == 202 or (r.status_code == 503 and b"being built" in r.data)
        if not building:
            return r
        assert time.monotonic() < deadline, f"{url}: still {r.status_code} after {HANG_GUARD_S} s"
        time.sleep(0.2)


def test_timelines_are_served_with_an_unwritable_cache(generated_plugin):
    """The cache folder cannot even be created: the indexes are kept in a temporary folder, and the
    timeline is drawn (it used to answer 202 'building' forever, each poll parsing the trace again)."""
    _, client = generated_plugin
    r = _until_built(client, f"{PREFIX}/timeline?run=gpu&span=0&px=800")
    assert r.status_code == 200, r.data
    msg = tpb.TimelineWindow.FromString(r.data)
    assert [x.state for x in msg.ranks] == ["", ""] and all(x.lanes for x in msg.ranks)


def test_a_timeline_that_cannot_be_built_answers_with_the_reason(generated_plugin):
    _, client = generated_plugin
    r = _until_built(client, f"{PREFIX}/timeline?run=broken&span=%3F")
    assert r.status_code == 422
    text = r.get_data(as_text=True)
    assert text.startswith("rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json: truncated JSON")
    r = client.get(f"{PREFIX}/trace_window?run=broken&worker=rank0&span=%3F")
    assert r.status_code == 422 and r.get_data(as_text=True) == text


def test_trace_window_refuses_a_window_over_the_bound_and_streams_the_others(generated_plugin, generated, monkeypatch):
    _, client = generated_plugin
    path, idx = generated
    worker = path.name.split("_time_")[0]
    base = f"{PREFIX}/trace_window?run=big&worker={worker}&span=0&base_unix_ns={idx.origin}"
    assert _until_built(client, base).status_code == 200  # no bound by default for this size
    monkeypatch.setenv(timeline.ENV_WINDOW_MAX_MB, "4")
    r = client.get(base)
    assert r.status_code == 413
    text = r.get_data(as_text=True)
    assert text.startswith(f"{path.name}: the window holds {len(idx.a['ev_start']):,} events")
    assert "narrow the window" in text and timeline.ENV_WINDOW_MAX_MB in text and text.count("\n") == 1

    lo, hi = idx.start_ns, idx.end_ns
    ws, we = lo, lo + (hi - lo) // 100  # about 1.5 MB at most
    url = f"{base}&start_ns={ws}&end_ns={we}"
    r = client.get(url, buffered=False)
    assert r.status_code == 200 and r.is_streamed
    chunks = list(r.response)
    r.close()
    body = b"".join(chunks)
    assert len(chunks) > 1 and max(len(c) for c in chunks) < len(body)
    doc = json.loads(body)
    a = idx.a
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == int(
        ((a["ev_end"] >= ws) & (a["ev_start"] <= we)).sum()
    )
    assert "attachment" in r.headers["Content-Disposition"] and r.headers["X-Content-Type-Options"] == "nosniff"
    zipped = client.get(url, headers={"Accept-Encoding": "gzip"})
    assert zipped.status_code == 200 and zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.data) == body
    head = client.head(base)
    assert head.status_code == 413
