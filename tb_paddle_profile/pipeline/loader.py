"""Summaries of the discovered traces, computed in background worker processes.

The request threads never parse: they read states and finished summaries. A dispatcher thread hands
files to worker processes (workers.WorkerPool: one job per process at a time) that run the per-file job
(jobs.run_job: one parse gives the summary, the rank digest and the timeline index, written into the
cache); it is the one job runner of the plugin, ``preprocess`` and the CLI. :meth:`Loader.request_index`
runs a READY file's job again when the timeline store finds its index missing. Files are handed out
bounded by the cores and by the memory available against the planned peak of the files in flight (from their real size: a
gzipped file's inflated size is read from its gzip trailer), most wanted first (a file someone asked
for, then the run being looked at, then the others in run-list order). Each file is in one state:

- QUEUED: waiting for a worker (with the reason in its error when it waits to be retried);
  LOADING: being parsed (or read from a sidecar);
- READY: its summary is in the cache (or in memory when there is no writable cache);
- FAILED: not a usable trace, with the one-line reason; cached, so a restart does not parse it again.
  Failures that are not the file's fault are never cached: a refused file (a link out of the logdir,
  a FIFO: see paths.py), a bug of ours (logged with its traceback, not retried until the file changes
  or the tool is restarted), and transient ones, retried (see below);
- GROWING: still being written (its size changed since the last scan, or it is truncated JSON and was
  modified recently); it is retried once it settles and is never cached as failed.

Small files share a worker job (BATCH_FILES, BATCH_BYTES) when no worker is free for a file of its own:
one round trip to the worker for all of them; each still has its own outcome and its own error.

Retries. A worker process that dies (kill -9, the OOM killer) fails only the file it was parsing (the
files of a shared job are each loaded again in a job of their own, uncharged: which one it was is not
known); that file is parsed again at once, alone, up to MAX_CRASH_RETRIES times, then shown FAILED and
tried again (another round) at a scan after a backoff (RETRY_BACKOFF_S, doubling, at most MAX_BACKOFF_S). A file
that could not be read (not found — an object store briefly empty —, a network or permission error) is
read again at the next scan that lists it, then with the same backoff. A worker process that cannot be
started charges no file: the queued files show why and wait, retried with a backoff from
POOL_RETRY_S, and after POOL_MAX_TRIES failures in a row they are shown FAILED until a later scan.

A file that leaves the listing (deleted, or rewritten: a new size or version is another file) while it
is being parsed has its worker process ended; closing the loader ends all of them at once.

The loader is this module (``Loader``: its state, the routes' questions, the scans) and its mixins and
helpers, every name of which can be imported from here: ``loader_state`` (the states, the
entries), ``loader_plan`` (workers, memory plans, batches), ``loader_queue`` (the queue's heaps, the
next file), ``loader_dispatch`` (the dispatcher thread, the worker jobs, the results and retries). A
test changes a retry setting or the workers' initializer in ``loader_dispatch``, where it is read
(CRASH_RETRY_S, RETRY_BACKOFF_S, POOL_RETRY_S, _worker_init: left out of this namespace).
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
import tempfile
import threading
import time
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from tb_paddle_profile.store.cache import CacheKey, CachedResult, SummaryCache
from tb_paddle_profile.store.cache_store import new_owner
from tb_paddle_profile.store.lru import SizedLRU
from tb_paddle_profile.core.pool import Job, WorkerPool
from tb_paddle_profile.pipeline.discovery import Snapshot, TraceFile
from tb_paddle_profile.pipeline.loader_dispatch import (
    IDLE_SHUTDOWN_S,
    MAX_BACKOFF_S,
    MAX_CRASH_RETRIES,
    POOL_MAX_TRIES,
    _Dispatch,
)
from tb_paddle_profile.pipeline.loader_plan import (
    BATCH_BYTES,
    BATCH_FILES,
    DEFAULT_GROWING_S,
    ENV_GROWING_S,
    ENV_WORKERS,
    GZIP_FALLBACK_RATIO,
    INFLATE_HEAD_BYTES,
    JSON_MEMORY_FACTOR,
    MAX_DEFAULT_WORKERS,
    MEMORY_FRACTION,
    WORKER_BASE_MEMORY,
    available_memory,
    default_workers,
    growing_window_s,
    memory_estimate,
    read_inflated_sizes,
)
from tb_paddle_profile.pipeline.loader_state import (
    CHANGED_REASON,
    FAILED,
    GROWING,
    LOADING,
    QUEUED,
    READY,
    FileState,
    _Entry,
    _refused,
    _Tally,
    logger,
)
from tb_paddle_profile.v1 import plugin_pb2

__all__ = [
    "Loader",
    "MEMORY_LRU_BYTES",
    "DIGEST_LRU_BYTES",
    "IDLE_SHUTDOWN_S",
    "MAX_BACKOFF_S",
    "MAX_CRASH_RETRIES",
    "POOL_MAX_TRIES",
    "BATCH_BYTES",
    "BATCH_FILES",
    "DEFAULT_GROWING_S",
    "ENV_GROWING_S",
    "ENV_WORKERS",
    "GZIP_FALLBACK_RATIO",
    "INFLATE_HEAD_BYTES",
    "JSON_MEMORY_FACTOR",
    "MAX_DEFAULT_WORKERS",
    "MEMORY_FRACTION",
    "WORKER_BASE_MEMORY",
    "available_memory",
    "default_workers",
    "growing_window_s",
    "memory_estimate",
    "read_inflated_sizes",
    "CHANGED_REASON",
    "FAILED",
    "GROWING",
    "LOADING",
    "QUEUED",
    "READY",
    "FileState",
    "_Entry",
    "logger",
]

MEMORY_LRU_BYTES = 256 << 20  # finished summaries kept in memory for fast answers
DIGEST_LRU_BYTES = 128 << 20  # rank digests kept in memory (a few KB each: every rank of large runs)


class Loader(_Dispatch):
    """Keeps every discovered file's state and its summary; feed it snapshots with :meth:`update`.

    Files are read only under the path policy of paths.py, against the logdir root each TraceFile
    carries (``TraceFile.root``; `root` for files without one; None: links followed, as for a path the
    user named). A file discovery already refused (``TraceFile.refused``) is shown FAILED, never read."""

    def __init__(
        self,
        fs,
        cache: SummaryCache,
        workers: Optional[int] = None,
        growing_window: Optional[float] = None,
        root: Optional[str] = None,
        index: bool = True,
    ):
        self.fs = fs
        self.cache = cache
        # Each job also builds the trace's timeline index from the same parse (jobs.py), into the
        # cache, or into a temporary folder of this loader when the cache is off or not writable.
        self.index = index
        self._index_tmp: Optional[tempfile.TemporaryDirectory] = None
        self._digests = SizedLRU(DIGEST_LRU_BYTES)
        self._resolve: List[Tuple[concurrent.futures.Future, dict]] = []
        self.root = root
        self.max_workers = workers or default_workers()
        self.growing_window = growing_window_s() if growing_window is None else growing_window
        self._cond = threading.Condition(threading.RLock())
        self._entries: Dict[CacheKey, _Entry] = {}
        self._tally = _Tally()
        self._pending: Dict[CacheKey, _Entry] = {}
        # The queue's order without a scan of it per file started: a heap of (rank, token, key) of the
        # pending entries that are due, one of (seq, token, key) of them per run (the run being looked at
        # goes next: a change of that run, asked by requests all the time, re-sorts nothing), one of
        # (not_before, seq, token, key) of those that wait for a retry, and the entries wanting only their
        # index. An item whose token is not its entry's is stale (the entry started, left, or was pushed
        # again with a new rank): dropped when met.
        self._ready: list = []
        self._by_run: Dict[str, list] = {}
        self._run_items = 0
        self._later: list = []
        self._side: Dict[CacheKey, _Entry] = {}
        self._inflight: Dict[CacheKey, int] = {}  # key -> memory estimate
        self._running = 0  # worker jobs in flight (a batch of small files is one)
        self._done: List[Tuple[List[_Entry], Job]] = []
        self._urgent: set = set()
        self._focus: Optional[str] = None
        self._run_order: Dict[str, int] = {}
        self._memory = SizedLRU(MEMORY_LRU_BYTES)
        self._seq = itertools.count()
        self._version = 0
        self._closed = False
        self._executor: Optional[WorkerPool] = None
        self._idle_since = time.monotonic()
        self._pool_error = ""  # why no worker process could be started, while that lasts
        self._pool_fails = 0
        self._pool_retry_at = 0.0
        self._owner = new_owner()  # of its jobs' claims in the cache (jobs.py): a retry takes its own again
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
                if e is None:
                    out.append(FileState(QUEUED))
                elif e.state == QUEUED and not e.error and self._pool_error:
                    out.append(FileState(QUEUED, f"{e.file.file_name}: waiting: {self._pool_error}"))
                else:
                    out.append(
                        FileState(
                            e.state,
                            e.error,
                            e.cached,
                            e.why if e.state == FAILED else "",
                            e.loading_since if e.state == LOADING else 0.0,
                        )
                    )
            return out

    def worker_pids(self) -> List[int]:
        """The process ids of the loader's worker processes (busy or idle)."""
        with self._cond:
            pool = self._executor
        return pool.pids() if pool is not None else []

    def job_pid(self, file: TraceFile) -> Optional[int]:
        """The process id of the worker parsing `file` now, once it has started; else None."""
        with self._cond:
            e = self._entries.get(file.key)
            job = e.job if e is not None and e.state == LOADING else None
        return job.pid if job is not None else None

    def planned_memory(self, file: TraceFile) -> Optional[int]:
        """The peak memory planned for parsing `file` (None before it was planned)."""
        with self._cond:
            e = self._entries.get(file.key)
            return None if e is None else e.plan

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
                self._urgent.add(key)
                self._enqueue(e)
                self._touch()
        return None

    def digest_bytes(self, file: TraceFile) -> Optional[bytes]:
        """The serialized RankDigest of a READY file; None otherwise (never parses). An entry without a
        digest (a cache written by an older release, a sidecar) gets one from its summary."""
        key = file.key
        with self._cond:
            e = self._entries.get(key)
            if e is None or e.state != READY:
                return None
            data = e.digest if e.digest is not None else self._digests.get(key)
        if data is not None:
            return data
        data = self.cache.get_digest(key)
        if data is None:
            summary = self.summary_bytes(file)
            if summary is None:
                return None
            from tb_paddle_profile.analysis.digest import digest_of
            from tb_paddle_profile.v1 import summary_pb2

            data = digest_of(summary_pb2.Summary.FromString(summary)).SerializeToString()
            if not self.cache.put_digest(key, data):
                with self._cond:
                    if self._entries.get(key) is e:
                        e.digest = data
        with self._cond:
            self._digests.put(key, data)
        return data

    def request_index(self, file: TraceFile) -> "concurrent.futures.Future":
        """A future of the timeline index of ``file``: a dict ``{"ok": True, "path"}`` or ``{"ok": False,
        "kind": "trace"|"transient"|"bug", "error"}`` (timeline.TimelineStore's build result). The index
        comes from the file's job (the one that makes its summary); when that ran without leaving an
        index (evicted, an older cache, a sidecar), the job runs again, without changing the file's state."""
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._cond:
            e = self._entries.get(file.key)
            if e is None or self._closed:
                fut.set_result(
                    {"ok": False, "kind": "transient", "error": f"{file.file_name}: not known to the loader (yet)"}
                )
                return fut
            if e.state == READY and e.index_path and os.path.isfile(e.index_path) and not e.side_running:
                fut.set_result({"ok": True, "path": e.index_path, "note": ""})
                return fut
            if e.state == FAILED and e.why in ("", "bug", "refused", "refused-read"):
                fut.set_result({"ok": False, "kind": "bug" if e.why == "bug" else "trace", "error": e.error})
                return fut
            if e.state == GROWING:
                fut.set_result({"ok": False, "kind": "transient", "retry": False, "growing": True, "error": e.error})
                return fut
            e.waiters.append(fut)
            if e.state == READY and not e.side_running and not e.side:
                e.side = True
                self._side[file.key] = e
                self._urgent.add(file.key)
                self._touch()
            elif e.state in (QUEUED, FAILED) and file.key not in self._pending and file.key not in self._inflight:
                self._urgent.add(file.key)
                self._enqueue(e)
                self._touch()
            else:
                self._make_urgent(file.key)
                self._cond.notify_all()
        return fut

    def _index_dir(self) -> str:
        with self._cond:
            if self._index_tmp is None:
                self._index_tmp = tempfile.TemporaryDirectory(prefix="tbpp-timeline-")
            return self._index_tmp.name

    def counts(self) -> Dict[str, int]:
        """Files by state name (kept as states change: no pass over the files)."""
        with self._cond:
            names = plugin_pb2.LoadState.Name
            return {names(state): n for state, n in self._tally.counts.items() if n}

    def run_version(self, run: str) -> tuple:
        """Changes whenever a state shown for a file of ``run`` may have changed (its files' states, errors,
        or the reason no worker can start, which every queued file shows)."""
        with self._cond:
            return self._tally.runs.get(run, 0), self._pool_error

    def run_versions(self) -> Callable[[str], tuple]:
        """run_version of every run from one take of the lock (the run list asks for each of its runs)."""
        with self._cond:
            runs, error = dict(self._tally.runs), self._pool_error
        return lambda run: (runs.get(run, 0), error)

    def prioritize(self, files: Iterable[TraceFile], run: Optional[str] = None) -> None:
        """Load these files next, then the rest of ``run``."""
        with self._cond:
            for f in files:
                if f.key in self._pending and f.key not in self._urgent:  # (an urgent one is filed as such)
                    self._make_urgent(f.key)
            if run is not None:
                self._focus = run  # (its own heap: nothing to re-sort)
            self._cond.notify_all()

    def wait_idle(self, timeout: Optional[float] = None) -> bool:
        """Block until nothing is queued or loading, and the cache's bound is kept (for tests, preprocess
        and benchmarks)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending or self._inflight or self._done or self._side_jobs() or self.cache.trimmer.busy():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(min(left, 1.0) if left is not None else 1.0)
            return True

    def close(self) -> None:
        """Stop loading: the worker processes are ended at once, work in progress included."""
        with self._cond:
            self._closed = True
            pool, self._executor = self._executor, None
            self._cond.notify_all()
        if pool is not None:
            pool.shutdown()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=30)
        with self._cond:  # a pool the dispatcher was creating meanwhile
            pool, self._executor = self._executor, None
            waiters = [w for e in self._entries.values() for w in e.waiters]
            for e in self._entries.values():
                e.waiters = []
        if pool is not None:
            pool.shutdown()
        for w in waiters:
            if not w.done():
                w.set_result({"ok": False, "kind": "transient", "error": "the loader is closed"})
        if self._index_tmp is not None:
            try:
                self._index_tmp.cleanup()
            except OSError:
                pass

    # ------------------------------------------------------------- scanning
    def update(self, snapshot: Snapshot) -> None:
        """Reconcile the states with a new scan (runs on the scanning thread)."""
        self.track(snapshot.files, list(snapshot.runs))

    def track(self, files: Sequence[TraceFile], run_order: Sequence[str] = ()) -> None:
        """Reconcile the states with this list of files (every file the loader should know: one not in
        it is forgotten). ``run_order``: the runs in the order their work goes first."""
        now = time.time()
        mono = time.monotonic()
        with self._cond:
            new = [f for f in files if f.key not in self._entries and not f.changed and not _refused(f)]
        # Cache headers and gzip trailers are read outside the lock: requests keep being answered meanwhile.
        found = {f.key: self.cache.peek(f.key) for f in new}
        inflated = {}
        for root in {self._root_of(f) for f in new}:
            inflated.update(
                read_inflated_sizes(
                    self.fs, [f for f in new if found.get(f.key) is None and self._root_of(f) == root], root
                )
            )
        to_cache_failed = []
        cancel = []
        with self._cond:
            seen = set()
            for f in files:
                key = f.key
                seen.add(key)
                e = self._entries.get(key)
                if e is None:
                    e = self._entries[key] = _Entry(f, next(self._seq), now, self._tally)
                    if key in inflated:
                        e.plan = memory_estimate(f, inflated[key])
                    if _refused(f):
                        self._refuse(e, _refused(f))
                    elif f.changed:
                        self._set_growing(e, "changed", CHANGED_REASON)
                    elif (hit := found.get(key)) is not None:
                        e.state, e.error, e.cached = (READY if hit.ok else FAILED), hit.error, True
                        self.stats["cache_hits"] += 1
                    else:
                        self._enqueue(e)
                    continue
                e.file = f
                if _refused(f):
                    if e.why != "refused":
                        if e.job is not None and key in self._inflight:
                            cancel.append(e.job)
                        self._refuse(e, _refused(f))
                elif e.state == FAILED and e.why == "refused":
                    self._enqueue(e)  # no longer refused (a link put right): read it
                elif e.state == GROWING and e.why == "changed" and not f.changed:
                    self._enqueue(e)
                elif e.state == FAILED and e.why == "transient" and mono >= e.not_before:
                    self.stats["retries"] += 1
                    self._enqueue(e)  # another round: read errors, a file not found, a worker that died
                elif e.state == GROWING and e.why == "truncated" and not self._recent(e, now):
                    e.state, e.why = FAILED, ""
                    to_cache_failed.append((key, e.error))
            for key in [k for k in self._entries if k not in seen]:
                e = self._entries.pop(key)
                e.forget()
                self._pending.pop(key, None)
                self._side.pop(key, None)
                self._urgent.discard(key)
                self._memory.discard(key)
                if e.job is not None and key in self._inflight:
                    cancel.append(e.job)  # deleted or rewritten while parsed: stop spending a worker on it
            order = run_order or list(dict.fromkeys(f.run for f in files))
            run_rank = {run: i for i, run in enumerate(order)}
            if run_rank != self._run_order:
                self._run_order = run_rank
                self._reorder()
            pool = self._executor
            self._touch()
        for job in cancel:
            if pool is not None and pool.cancel(job):
                self.stats["cancelled"] += 1
        for key, error in to_cache_failed:
            self.cache.put(key, CachedResult(False, b"", error))
