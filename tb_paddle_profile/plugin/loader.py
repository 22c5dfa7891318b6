"""Summaries of the discovered traces, computed in background worker processes.

The request threads never parse: they read states and finished summaries. A dispatcher thread hands
files to a process pool, bounded by the cores and by the memory available against the size of the files
in flight, most wanted first (a file someone asked for, then the run being looked at, then the others in
run-list order). Each file is in one state:

- QUEUED: waiting for a worker; LOADING: being parsed (or read from a sidecar);
- READY: its summary is in the cache (or in memory when there is no writable cache);
- FAILED: not a usable trace, with the one-line reason; cached, so a restart does not parse it again;
- GROWING: still being written (its size changed since the last scan, or it is truncated JSON and was
  modified recently); it is retried once it settles and is never cached as failed.
"""
from __future__ import annotations

import collections
import concurrent.futures
import itertools
import logging
import os
import threading
import time
import zlib
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from tb_paddle_profile.cache import CacheKey, CachedResult, SummaryCache, read_sidecar, write_sidecar
from tb_paddle_profile.errors import TraceError
from tb_paddle_profile.workers import process_pool
from tb_paddle_profile.plugin.discovery import Snapshot, TraceFile
from tb_paddle_profile.v1 import plugin_pb2

logger = logging.getLogger(__name__)

QUEUED, LOADING, READY, FAILED, GROWING = (
    plugin_pb2.QUEUED,
    plugin_pb2.LOADING,
    plugin_pb2.READY,
    plugin_pb2.FAILED,
    plugin_pb2.GROWING,
)

ENV_WORKERS = "TB_PADDLE_PROFILE_WORKERS"
ENV_GROWING_S = "TB_PADDLE_PROFILE_GROWING_S"
DEFAULT_GROWING_S = 300.0  # a truncated file modified within this time is still being written
MAX_DEFAULT_WORKERS = 8
IDLE_SHUTDOWN_S = 120.0  # worker processes are ended after this long without work, freeing their memory
MEMORY_FRACTION = 0.6  # of the memory available, for the files in flight
# Peak memory of one parse: a worker's own base plus a multiple of the file size (the bytes, the decoded
# tables, the summary). Measured: a 70 MB trace peaks at about 2.5x its size above the base.
WORKER_BASE_MEMORY = 150 << 20
JSON_MEMORY_FACTOR = 3
GZIP_MEMORY_FACTOR = 40  # JSON traces compress about tenfold
MEMORY_LRU_BYTES = 256 << 20  # finished summaries kept in memory for fast answers
_MAX_CRASH_RETRIES = 1

CHANGED_REASON = "still being written: its size or modification time changed since the last scan"


@dataclass(frozen=True)
class FileState:
    state: int
    error: str = ""
    cached: bool = False


class _Entry:
    __slots__ = ("file", "state", "error", "cached", "data", "seq", "crashes", "why", "first_seen")

    def __init__(self, file: TraceFile, seq: int, now: float):
        self.file = file
        self.state = QUEUED
        self.error = ""
        self.cached = False
        self.data: Optional[bytes] = None  # pinned summary when the disk cache could not take it
        self.seq = seq
        self.crashes = 0
        self.why = ""  # GROWING: "changed" or "truncated"; FAILED: "io" when worth retrying
        self.first_seen = now


class SizedLRU:
    """A least-recently-used map bounded by the total size of its values (``sizeof``, default len)."""

    def __init__(self, limit: int, sizeof=len):
        self.limit = limit
        self.size = 0
        self._sizeof = sizeof
        self._items: "collections.OrderedDict[object, object]" = collections.OrderedDict()

    def get(self, key):
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def put(self, key, value) -> None:
        n = self._sizeof(value)
        if n > self.limit:
            return
        self.discard(key)
        self._items[key] = value
        self.size += n
        while self.size > self.limit:
            _, dropped = self._items.popitem(last=False)
            self.size -= self._sizeof(dropped)

    def discard(self, key) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.size -= self._sizeof(old)


# ------------------------------------------------------------------ worker side


def _worker_init() -> None:
    try:
        os.nice(5)  # parsing yields to TensorBoard's request threads
    except OSError:
        pass
    import tb_paddle_profile.engine  # noqa: F401  (imported once per worker, not per file)


def _reread_looks_truncated(fs, path: str) -> bool:
    try:
        return looks_truncated(fs.cat_file(path))
    except Exception:
        return False


def looks_truncated(data: bytes) -> bool:
    """True when the bytes end before the JSON document does (a file still being written)."""
    if data[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(wbits=31)
        tail = b""
        try:
            for i in range(0, len(data), 1 << 20):
                out = inflater.decompress(data[i:i + (1 << 20)])
                tail = (tail + out)[-256:]
        except zlib.error:
            return False  # corrupt rather than cut short
        if not inflater.eof:
            return True
        data = tail
    return not data[-256:].rstrip().endswith((b"}", b"]"))


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def load_in_worker(fs, path: str, file_name: str, size: int, key: CacheKey, sidecar: bool, recent: bool,
                   parse_workers: int = 1) -> dict:
    """Runs in a worker process: the summary of one file, from its sidecar or by parsing it
    (with `parse_workers` processes decoding a large file together).

    Returns a dict: ``kind`` is "sidecar", "parsed", "growing", "changed", "gone" or "io"; "sidecar" and
    "parsed" carry ``ok`` and ``data`` or ``error``; ``engine_called`` tells whether the trace was parsed.
    """
    if sidecar:
        found = read_sidecar(fs, path, key)
        if found is not None:
            return {"kind": "sidecar", "ok": found.ok, "data": found.data, "error": found.error}
    try:
        data = fs.cat_file(path)
    except FileNotFoundError:
        return {"kind": "gone", "error": f"{file_name}: the file no longer exists"}
    except Exception as err:
        return {"kind": "io", "error": f"{file_name}: cannot read: {_one_line(err)}"}
    if len(data) != size:
        return {"kind": "changed"}
    from tb_paddle_profile import engine

    box = [data]
    del data  # the engine frees the bytes once its tables are built

    try:
        summary = engine.summarize_reader(box.pop, file_name, workers=parse_workers)
    except TraceError as err:
        if recent and _reread_looks_truncated(fs, path):
            return {"kind": "growing", "error": str(err), "engine_called": True}
        result = CachedResult(False, b"", str(err))
    else:
        result = CachedResult(True, summary.SerializeToString(), "")
    note = write_sidecar(fs, path, key, result) if sidecar else ""
    return {"kind": "parsed", "ok": result.ok, "data": result.data, "error": result.error, "note": note,
            "engine_called": True}


# ------------------------------------------------------------------ parent side


def default_workers() -> int:
    env = os.environ.get(ENV_WORKERS, "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


def available_memory() -> Optional[int]:
    """Bytes of memory available now, within the container's limit where there is one."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit.isdigit():
            room = int(limit) - used
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail


def memory_estimate(file: TraceFile) -> int:
    return WORKER_BASE_MEMORY + file.size * (GZIP_MEMORY_FACTOR if file.gzipped else JSON_MEMORY_FACTOR)


def _growing_window() -> float:
    try:
        return float(os.environ.get(ENV_GROWING_S, DEFAULT_GROWING_S))
    except ValueError:
        return DEFAULT_GROWING_S


class Loader:
    """Keeps every discovered file's state and its summary; feed it snapshots with :meth:`update`."""

    def __init__(self, fs, cache: SummaryCache, workers: Optional[int] = None,
                 growing_window: Optional[float] = None):
        self.fs = fs
        self.cache = cache
        self.max_workers = workers or default_workers()
        self.growing_window = _growing_window() if growing_window is None else growing_window
        self._cond = threading.Condition(threading.RLock())
        self._entries: Dict[CacheKey, _Entry] = {}
        self._pending: Dict[CacheKey, _Entry] = {}
        self._inflight: Dict[CacheKey, int] = {}  # key -> memory estimate
        self._done: List[Tuple[_Entry, concurrent.futures.Future, object]] = []  # (entry, future, its pool)
        self._urgent: set = set()
        self._focus: Optional[str] = None
        self._run_order: Dict[str, int] = {}
        self._memory = SizedLRU(MEMORY_LRU_BYTES)
        self._seq = itertools.count()
        self._version = 0
        self._closed = False
        self._executor: Optional[concurrent.futures.ProcessPoolExecutor] = None
        self._idle_since = time.monotonic()
        self.stats: Dict[str, int] = collections.Counter()
        self._thread = threading.Thread(target=self._dispatch_loop, name="paddle-profile-loader", daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- reading
    @property
    def version(self) -> int:
        """Changes whenever any file's state changes."""
        return self._version

    def state(self, file: TraceFile) -> FileState:
        return self.states([file])[0]

    def states(self, files: Iterable[TraceFile]) -> List[FileState]:
        """The states of many files at once (one lock for all)."""
        with self._cond:
            out = []
            for f in files:
                e = self._entries.get(f.key)
                out.append(FileState(QUEUED) if e is None else FileState(e.state, e.error, e.cached))
            return out

    def summary_bytes(self, file: TraceFile) -> Optional[bytes]:
        """The serialized Summary of a READY file; None otherwise (never parses)."""
        key = file.key
        with self._cond:
            e = self._entries.get(key)
            if e is None or e.state != READY:
                return None
            data = e.data if e.data is not None else self._memory.get(key)
        if data is not None:
            return data
        found = self.cache.get(key)
        if found is not None and found.ok:
            with self._cond:
                self._memory.put(key, found.data)
            return found.data
        with self._cond:  # the cache entry went away (cache folder cleaned): compute it again
            if self._entries.get(key) is e and e.state == READY and e.data is None:
                self._enqueue(e)
                self._urgent.add(key)
                self._touch()
        return None

    def counts(self) -> Dict[str, int]:
        with self._cond:
            names = plugin_pb2.LoadState.Name
            return dict(collections.Counter(names(e.state) for e in self._entries.values()))

    def prioritize(self, files: Iterable[TraceFile], run: Optional[str] = None) -> None:
        """Load these files next, then the rest of ``run``."""
        with self._cond:
            for f in files:
                if f.key in self._pending:
                    self._urgent.add(f.key)
            if run is not None:
                self._focus = run
            self._cond.notify_all()

    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Block until nothing is queued or loading (for tests, preprocess and benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending or self._inflight or self._done:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left if left is not None else 1.0)
            return True

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    # ------------------------------------------------------------- scanning
    def update(self, snapshot: Snapshot) -> None:
        """Reconcile the states with a new scan (runs on the scanning thread)."""
        now = time.time()
        files = snapshot.files
        with self._cond:
            new = [f for f in files if f.key not in self._entries and not f.changed]
        # Cache headers are read outside the lock: requests keep being answered meanwhile.
        found = {f.key: self.cache.peek(f.key) for f in new}
        to_cache_failed = []
        with self._cond:
            seen = set()
            for f in files:
                key = f.key
                seen.add(key)
                e = self._entries.get(key)
                if e is None:
                    e = self._entries[key] = _Entry(f, next(self._seq), now)
                    if f.changed:
                        self._set_growing(e, "changed", CHANGED_REASON)
                    elif found.get(key) is not None:
                        hit = found[key]
                        e.state, e.error, e.cached = (READY if hit.ok else FAILED), hit.error, True
                        self.stats["cache_hits"] += 1
                    else:
                        self._enqueue(e)
                    continue
                e.file = f
                if e.state == GROWING and e.why == "changed" and not f.changed:
                    self._enqueue(e)
                elif e.state == FAILED and e.why == "io":
                    self._enqueue(e)  # a read error (network, permissions) is retried at each scan
                elif e.state == GROWING and e.why == "truncated" and not self._recent(e, now):
                    e.state, e.why = FAILED, ""
                    to_cache_failed.append((key, e.error))
            for key in [k for k in self._entries if k not in seen]:
                del self._entries[key]
                self._pending.pop(key, None)
                self._urgent.discard(key)
                self._memory.discard(key)
            self._run_order = {run: i for i, run in enumerate(snapshot.runs)}
            self._touch()
        for key, error in to_cache_failed:
            self.cache.put(key, CachedResult(False, b"", error))

    # ------------------------------------------------------------- internal
    def _touch(self) -> None:
        self._version += 1
        self._cond.notify_all()

    def _recent(self, e: _Entry, now: float) -> bool:
        modified = e.file.mtime if e.file.mtime is not None else e.first_seen
        return now - modified < self.growing_window

    def _set_growing(self, e: _Entry, why: str, error: str) -> None:
        e.state, e.why, e.error, e.cached = GROWING, why, error, False
        self._pending.pop(e.file.key, None)

    def _enqueue(self, e: _Entry) -> None:
        e.state, e.error, e.cached, e.why = QUEUED, "", False, ""
        self._pending[e.file.key] = e

    def _pick(self) -> Optional[_Entry]:
        if not self._pending:
            return None
        last = len(self._run_order)

        def rank(e: _Entry):
            key = e.file.key
            tier = 0 if key in self._urgent else (1 if e.file.run == self._focus else 2)
            return (tier, self._run_order.get(e.file.run, last), e.seq)

        return min(self._pending.values(), key=rank)

    def _can_start(self, e: _Entry) -> bool:
        if len(self._inflight) >= self.max_workers:
            return False
        if not self._inflight:
            return True  # one file at a time always goes, however large
        avail = available_memory()
        if avail is None:
            return True
        return sum(self._inflight.values()) + memory_estimate(e.file) <= MEMORY_FRACTION * avail

    def _dispatch_loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._done:
                    nxt = self._pick()
                    if nxt is not None and self._can_start(nxt):
                        break
                    self._maybe_stop_idle_pool()
                    self._cond.wait(1.0)
                if self._closed:
                    return
                done, self._done = self._done, []
                starts = []
                while True:
                    nxt = self._pick()
                    if nxt is None or not self._can_start(nxt):
                        break
                    key = nxt.file.key
                    del self._pending[key]
                    self._urgent.discard(key)
                    nxt.state = LOADING
                    self._inflight[key] = memory_estimate(nxt.file)
                    starts.append((nxt, self._recent(nxt, time.time())))
                if starts:
                    self._touch()
            for e, fut, pool in done:
                self._finish(e, fut, pool)
            for e, recent in starts:
                self._submit(e, recent)

    def _maybe_stop_idle_pool(self) -> None:
        if self._inflight or self._pending:
            self._idle_since = time.monotonic()
        elif self._executor is not None and time.monotonic() - self._idle_since > IDLE_SHUTDOWN_S:
            self._executor.shutdown(wait=False)
            self._executor = None

    def _pool(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            # not forks of TensorBoard (threaded): forkserver or spawn, see workers.py
            self._executor = process_pool(self.max_workers, _worker_init)
        return self._executor

    def _submit(self, e: _Entry, recent: bool) -> None:
        f = e.file
        pool = self._pool()
        try:
            # Cores not taken by other files in flight help decode this one (a lone large file
            # then loads on all of them; many files get one process each).
            with self._cond:
                share = max(1, self.max_workers // max(1, len(self._inflight)))
            fut = pool.submit(load_in_worker, self.fs, f.path, f.file_name, f.size, f.key, self.cache.sidecar, recent,
                              share)
        except (BrokenProcessPool, RuntimeError) as err:
            fut = concurrent.futures.Future()
            fut.set_exception(BrokenProcessPool(str(err)))

        def done(fut, e=e, pool=pool):
            with self._cond:
                self._done.append((e, fut, pool))
                self._cond.notify_all()

        fut.add_done_callback(done)

    def _finish(self, e: _Entry, fut: concurrent.futures.Future, pool) -> None:
        key = e.file.key
        try:
            res = fut.result()
        except BrokenProcessPool:  # a worker died (killed for memory?): that pool is unusable
            res = {"kind": "crash"}
            if self._executor is pool:
                pool.shutdown(wait=False)
                self._executor = None
        except Exception as err:  # a bug in the engine or the worker: report it, do not cache it
            res = {"kind": "error", "error": f"{e.file.file_name}: internal error: {_one_line(err)}"}
        kind = res["kind"]
        stored = False
        result = None
        if kind in ("parsed", "sidecar"):
            if res.get("note"):
                logger.warning("tb_paddle_profile: %s: %s", e.file.file_name, res["note"])
            result = CachedResult(res["ok"], res["data"], res["error"])
            stored = self.cache.put(key, result)
        with self._cond:
            self._inflight.pop(key, None)
            self.stats["parsed"] += bool(res.get("engine_called"))
            self.stats["sidecar_hits"] += kind == "sidecar"
            current = self._entries.get(key) is e
            if not current:
                self._touch()
                return
            if result is not None:
                e.state = READY if result.ok else FAILED
                e.error, e.cached = result.error, kind == "sidecar"
                e.data = None if stored or not result.ok else result.data
                if result.ok:
                    self._memory.put(key, result.data)
                self.stats["ready" if result.ok else "failed"] += 1
            elif kind == "growing":
                self.stats["growing"] += 1
                self._set_growing(e, "truncated", res["error"])
            elif kind == "changed":
                self._set_growing(e, "changed", CHANGED_REASON)
            elif kind == "crash" and e.crashes < _MAX_CRASH_RETRIES:
                e.crashes += 1
                self._enqueue(e)
            else:
                e.state = FAILED
                e.why = "io" if kind == "io" else ""
                e.error = res.get("error") or (
                    f"{e.file.file_name}: the worker process died while parsing it (out of memory?)")
                self.stats["failed"] += 1
            self._touch()
