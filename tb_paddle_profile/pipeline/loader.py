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
"""
from __future__ import annotations

import collections
import concurrent.futures
import heapq
import itertools
import tempfile
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from tb_paddle_profile.core import settings
from tb_paddle_profile.core import paths
from tb_paddle_profile.store.lru import SizedLRU
from tb_paddle_profile.store.cache import CacheKey, CachedResult, SummaryCache
from tb_paddle_profile.store.cache_store import new_owner
from tb_paddle_profile.core.errors import our_bug
from tb_paddle_profile.pipeline.jobs import JobSpec, run_job, run_jobs
from tb_paddle_profile.trace.reader import inflated_size
from tb_paddle_profile.core.pool import (
    Job,
    JobCancelled,
    JobError,
    WorkerDied,
    WorkerLost,
    WorkerPool,
    WorkerStartError,
    describe_exit,
)
from tb_paddle_profile.pipeline.discovery import Snapshot, TraceFile
from tb_paddle_profile.v1 import plugin_pb2

logger = logging.getLogger(__name__)

QUEUED, LOADING, READY, FAILED, GROWING = (
    plugin_pb2.QUEUED,
    plugin_pb2.LOADING,
    plugin_pb2.READY,
    plugin_pb2.FAILED,
    plugin_pb2.GROWING,
)

ENV_WORKERS = settings.WORKERS
ENV_GROWING_S = settings.GROWING_S
DEFAULT_GROWING_S = 300.0  # a truncated file modified within this time is still being written
MAX_DEFAULT_WORKERS = 8
IDLE_SHUTDOWN_S = 120.0  # worker processes are ended after this long without work, freeing their memory
MEMORY_FRACTION = 0.6  # of the memory available, for the files in flight
# Peak memory of one parse: a worker's own base plus a multiple of the JSON's size (the bytes, the decoded
# tables, the summary); a gzipped file also holds its compressed bytes while they are inflated.
# Measured: a 70 MB trace peaks at about 2.5x its size above the base.
WORKER_BASE_MEMORY = 150 << 20
JSON_MEMORY_FACTOR = 3
INFLATE_HEAD_BYTES = 64 << 10  # of a .gz, inflated to tell how much ISIZE wrapped
GZIP_FALLBACK_RATIO = 10  # inflated/compressed, when a gzip trailer cannot be read (JSON traces: about 10)
MEMORY_LRU_BYTES = 256 << 20  # finished summaries kept in memory for fast answers
DIGEST_LRU_BYTES = 128 << 20  # rank digests kept in memory (a few KB each: every rank of large runs)
# Retries (see the module's docstring).
MAX_CRASH_RETRIES = 2
CRASH_RETRY_S = 1.0
RETRY_BACKOFF_S = 60.0
MAX_BACKOFF_S = 1800.0
POOL_RETRY_S = 1.0
POOL_MAX_TRIES = 6

# Small files share a worker job, up to BATCH_FILES of them and BATCH_BYTES together (each at most that
# big, not gzipped): one round trip to the worker, its watcher and the loader's lock for all of them, not
# one each (tiny traces: the round trip cost ten times the parse under TensorBoard's request threads). Each
# file still has its own outcome; a batch whose worker died is run again one file a job (none charged).
BATCH_FILES = 16
BATCH_BYTES = 256 << 10

CHANGED_REASON = "still being written: its size or modification time changed since the last scan"


@dataclass(frozen=True)
class FileState:
    state: int
    error: str = ""
    cached: bool = False
    why: str = ""  # FAILED: "" (the file's fault), "transient", "refused", "refused-read" or "bug"
    loading_since: float = 0.0  # LOADING: time.time() when its parse began


class _Tally:
    """The loader's files counted by state, and a change counter per run, kept as states are set: the
    status and runs routes read them without a pass over every file."""

    __slots__ = ("counts", "runs")

    def __init__(self):
        self.counts: Dict[int, int] = collections.Counter()
        self.runs: Dict[str, int] = collections.Counter()

    def moved(self, run: str, old: Optional[int], new: Optional[int]) -> None:
        if old is not None:
            self.counts[old] -= 1
            if not self.counts[old]:
                del self.counts[old]
        if new is not None:
            self.counts[new] += 1
        self.runs[run] += 1


class _Entry:
    __slots__ = ("file", "_state", "tally", "error", "cached", "data", "seq", "crashes", "rounds", "not_before",
                 "why", "first_seen", "job", "plan", "digest", "index_path", "waiters", "side", "side_running",
                 "loading_since", "token", "solo")

    def __init__(self, file: TraceFile, seq: int, now: float, tally: Optional[_Tally] = None):
        self.file = file
        self.tally = tally if tally is not None else _Tally()
        self._state: Optional[int] = None
        self.state = QUEUED
        self.error = ""
        self.cached = False
        self.data: Optional[bytes] = None  # pinned summary when the disk cache could not take it
        self.seq = seq
        self.crashes = 0  # worker deaths in this round of attempts
        self.rounds = 0  # rounds of attempts that ended in a transient failure, in a row
        self.not_before = 0.0  # monotonic time before which it is not retried
        # GROWING: "changed" or "truncated"; FAILED: "transient" (retried after not_before), "refused",
        # "bug" (not retried) or "" (the file's own fault, cached)
        self.why = ""
        self.first_seen = now
        self.job: Optional[Job] = None
        self.plan: Optional[int] = None  # planned peak memory of its parse
        self.digest: Optional[bytes] = None  # pinned digest when the disk cache could not take it
        self.index_path = ""  # where its last job wrote the timeline index
        self.waiters: List[concurrent.futures.Future] = []  # timeline index requests (request_index)
        self.side = False  # queued for a job that only its timeline index needs (its state unchanged)
        self.side_running = False
        self.loading_since = 0.0
        self.token = 0  # its item in the loader's queue heaps (an older item is stale)
        self.solo = False  # its batch's worker died: it runs in a job of its own

    @property
    def state(self) -> int:
        return self._state

    @state.setter
    def state(self, value: int) -> None:
        # every change of what the routes show (error, cached, loading_since) comes with a state set
        self.tally.moved(self.file.run, self._state, value)
        self._state = value

    def forget(self) -> None:
        """Out of the loader's tally (the file is no longer listed)."""
        self.tally.moved(self.file.run, self._state, None)


# ------------------------------------------------------------------ worker side


def _worker_init() -> None:
    try:
        os.nice(5)  # parsing yields to TensorBoard's request threads
    except OSError:
        pass
    import tb_paddle_profile.analysis.summarize  # noqa: F401  (imported once per worker, not per file)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


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


def read_inflated_sizes(fs, files: List[TraceFile], root: Optional[str]) -> Dict[CacheKey, int]:
    """The inflated sizes of gzipped files (reader.inflated_size: the trailer's ISIZE, its wrap past 4 GiB
    told by the compression ratio of the first INFLATE_HEAD_BYTES); two small ranged reads each,
    concurrent on object stores; files that cannot be read are left out (their reader will say why)."""
    files = [f for f in files if f.gzipped and f.size >= 18]
    if not files:
        return {}
    parts: Dict[CacheKey, Tuple[bytes, bytes]] = {}
    if paths.is_local(fs):
        for f in files:
            try:
                with paths.open_checked(fs, f.path, root, f.file_name) as handle:
                    head = handle.read(min(INFLATE_HEAD_BYTES, f.size))
                    handle.seek(f.size - 4)
                    parts[f.key] = (head, handle.read(4))
            except Exception:  # gone, refused, unreadable
                continue
    else:
        n = len(files)
        try:
            got = fs.cat_ranges([f.path for f in files] * 2, [0] * n + [f.size - 4 for f in files],
                                [min(INFLATE_HEAD_BYTES, f.size) for f in files] + [f.size for f in files],
                                on_error="return")
        except Exception as err:
            logger.debug("tb_paddle_profile: gzip heads and trailers not read: %s", err)
            got = []
        for f, head, tail in zip(files, got[:n], got[n:]):
            if isinstance(head, bytes) and isinstance(tail, bytes):
                parts[f.key] = (head, tail)
    return {key: inflated_size(head, tail, size) for key, (head, tail), size in
            ((f.key, parts[f.key], f.size) for f in files if f.key in parts)}


def memory_estimate(file: TraceFile, inflated: Optional[int] = None) -> int:
    """Planned peak memory of parsing `file`; `inflated`: a gzipped file's real inflated size."""
    if not file.gzipped:
        return WORKER_BASE_MEMORY + JSON_MEMORY_FACTOR * file.size
    if inflated is None:
        inflated = GZIP_FALLBACK_RATIO * file.size
    return WORKER_BASE_MEMORY + file.size + JSON_MEMORY_FACTOR * inflated


def growing_window_s() -> float:
    try:
        return float(os.environ.get(ENV_GROWING_S, DEFAULT_GROWING_S))
    except ValueError:
        return DEFAULT_GROWING_S


def _backoff(n: int) -> float:
    """The wait before the `n`-th (1, 2, ...) deferred retry."""
    return min(MAX_BACKOFF_S, RETRY_BACKOFF_S * 2 ** max(0, n - 1))


class Loader:
    """Keeps every discovered file's state and its summary; feed it snapshots with :meth:`update`.

    Files are read only under the path policy of paths.py, against the logdir root each TraceFile
    carries (``TraceFile.root``; `root` for files without one; None: links followed, as for a path the
    user named). A file discovery already refused (``TraceFile.refused``) is shown FAILED, never read."""

    def __init__(self, fs, cache: SummaryCache, workers: Optional[int] = None,
                 growing_window: Optional[float] = None, root: Optional[str] = None, index: bool = True):
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
                    out.append(FileState(e.state, e.error, e.cached, e.why if e.state == FAILED else "",
                                         e.loading_since if e.state == LOADING else 0.0))
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
                fut.set_result({"ok": False, "kind": "transient",
                                "error": f"{file.file_name}: not known to the loader (yet)"})
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
            inflated.update(read_inflated_sizes(self.fs, [f for f in new if found.get(f.key) is None
                                                          and self._root_of(f) == root], root))
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
                    elif found.get(key) is not None:
                        hit = found[key]
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

    def _enqueue(self, e: _Entry, error: str = "", not_before: float = 0.0) -> None:
        e.state, e.error, e.cached, e.why = QUEUED, error, False, ""
        e.not_before = not_before
        self._pending[e.file.key] = e
        self._push(e)

    def _rank(self, e: _Entry) -> tuple:
        """Its place in the ready heap: asked for first, then by the run order (the run being looked at
        goes before them all but the asked for: _pick takes it from its run's heap)."""
        tier = 0 if e.file.key in self._urgent else 1
        return (tier, self._run_order.get(e.file.run, len(self._run_order)), e.seq)

    def _file_ready(self, e: _Entry) -> None:
        heapq.heappush(self._ready, (self._rank(e), e.token, e.file.key))
        heapq.heappush(self._by_run.setdefault(e.file.run, []), (e.seq, e.token, e.file.key))
        self._run_items += 1

    def _push(self, e: _Entry) -> None:
        """(Re)file a pending entry in the queue's heaps at its current rank: O(log n)."""
        e.token += 1
        if e.not_before > time.monotonic():
            heapq.heappush(self._later, (e.not_before, e.seq, e.token, e.file.key))
        else:
            self._file_ready(e)
        if len(self._ready) + len(self._later) + self._run_items > 4 * len(self._pending) + 64:
            self._reorder()  # mostly stale items: rebuilt, so that the heaps stay O(pending)

    def _make_urgent(self, key: CacheKey) -> None:
        self._urgent.add(key)
        e = self._pending.get(key)
        if e is not None:
            self._push(e)

    def _reorder(self) -> None:
        """Rebuild the heaps from the pending entries (the run order changed): O(n)."""
        self._ready, self._later, self._by_run = [], [], {}
        for e in self._pending.values():
            e.token += 1
            if e.not_before > time.monotonic():
                self._later.append((e.not_before, e.seq, e.token, e.file.key))
            else:
                self._ready.append((self._rank(e), e.token, e.file.key))
                self._by_run.setdefault(e.file.run, []).append((e.seq, e.token, e.file.key))
        self._run_items = len(self._ready)
        heapq.heapify(self._ready)
        heapq.heapify(self._later)
        for heap in self._by_run.values():
            heapq.heapify(heap)

    def _live(self, key: CacheKey, token: int) -> Optional[_Entry]:
        e = self._pending.get(key)
        return e if e is not None and e.token == token else None

    def _root_of(self, f: TraceFile) -> Optional[str]:
        return getattr(f, "root", "") or self.root

    def _refuse(self, e: _Entry, reason: str) -> None:
        self._pending.pop(e.file.key, None)
        self._urgent.discard(e.file.key)
        e.state, e.why, e.error, e.cached = FAILED, "refused", f"{e.file.file_name}: {reason}", False

    def _plan(self, e: _Entry) -> int:
        if e.plan is None:
            e.plan = memory_estimate(e.file)
        return e.plan

    def _side_jobs(self) -> List[_Entry]:
        return [e for e in self._side.values() if e.side and not e.side_running]

    def _pick(self, now: float) -> Optional[_Entry]:
        if now < self._pool_retry_at:
            return None
        side = self._side_jobs() if self._running < self.max_workers else []
        if side:
            return min(side, key=lambda e: e.seq)
        while self._later and self._later[0][0] <= now:  # retries now due
            _, _, token, key = heapq.heappop(self._later)
            e = self._live(key, token)
            if e is not None:
                self._file_ready(e)
        top = self._top(None, now)
        if top is not None and self._ready[0][0][0] == 0:  # asked for
            return top
        if self._focus is not None:
            focused = self._top(self._focus, now)
            if focused is not None:
                return focused
        return top

    def _top(self, run: Optional[str], now: float) -> Optional[_Entry]:
        """The due entry at the top of the ready heap (``run`` None) or of that run's heap; the stale
        items above it are dropped, an entry not due yet is filed for later."""
        while True:
            heap = self._ready if run is None else self._by_run.get(run)
            if not heap:
                return None
            token, key = heap[0][1], heap[0][2]
            e = self._live(key, token)
            if e is not None and e.not_before <= now:
                return e
            heapq.heappop(heap)
            if run is not None:
                self._run_items -= 1
            if e is not None:
                self._push(e)

    def _next_wake(self, now: float) -> float:
        """Seconds until a waiting retry is due (at most 1)."""
        times = [self._later[0][0]] if self._later and self._later[0][0] > now else []
        if self._pool_retry_at > now:
            times.append(self._pool_retry_at)
        return max(0.01, min([1.0] + [t - now for t in times]))

    def _can_start(self, e: _Entry) -> bool:
        if self._running >= self.max_workers:
            return False
        if not self._inflight:
            return True  # one file at a time always goes, however large
        if e.crashes:
            return False  # a file whose worker died is retried alone (the kernel may have killed it for memory)
        avail = available_memory()
        if avail is None:
            return True
        return sum(self._inflight.values()) + self._plan(e) <= MEMORY_FRACTION * avail

    def _batchable(self, e: _Entry) -> bool:
        return not (e.side or e.side_running or e.solo or e.crashes or e.file.gzipped) and e.file.size <= BATCH_BYTES

    def _joins(self, batch: list, e: _Entry) -> bool:
        """Whether ``e`` goes in the same worker job as ``batch`` (small files: see BATCH_FILES)."""
        if len(batch) >= BATCH_FILES or not self._batchable(batch[0][0]) or not self._batchable(e):
            return False
        if sum(m.file.size for m, _ in batch) + e.file.size > BATCH_BYTES:
            return False
        avail = available_memory()
        return avail is None or sum(self._inflight.values()) + JSON_MEMORY_FACTOR * e.file.size <= MEMORY_FRACTION * avail

    def _dispatch_loop(self) -> None:
        while True:
            try:
                if not self._dispatch_once():
                    return
            except Exception:  # a bug of ours: keep the loader alive, say so
                logger.exception("tb_paddle_profile: internal error in the loader's dispatcher")
                time.sleep(1.0)

    def _dispatch_once(self) -> bool:
        with self._cond:
            while not self._closed and not self._done:
                now = time.monotonic()
                nxt = self._pick(now)
                if nxt is not None and self._can_start(nxt):
                    break
                self._maybe_stop_idle_pool()
                self._cond.wait(self._next_wake(now))
            if self._closed:
                return False
            done, self._done = self._done, []
            starts: List[list] = []  # the worker jobs to submit: [(entry, recent)] each
            # (a pool standing in for WorkerPool, in tests, answers one file a job)
            batches = self._executor is None or isinstance(self._executor, WorkerPool)
            while True:
                nxt = self._pick(time.monotonic())
                if nxt is None:
                    break
                # a file joins the job started last only when no other job can start (a free worker
                # takes a file of its own)
                batch = (starts[-1] if starts and batches and self._running >= self.max_workers
                         and self._joins(starts[-1], nxt) else None)
                if batch is None and not self._can_start(nxt):
                    break
                key = nxt.file.key
                if nxt.side:  # only its index is wanted: its state stays as it is
                    nxt.side, nxt.side_running = False, True
                    self._side.pop(key, None)
                else:
                    del self._pending[key]
                    nxt.state, nxt.loading_since = LOADING, time.time()
                self._urgent.discard(key)
                plan = self._plan(nxt)
                self._inflight[key] = plan if batch is None else plan - WORKER_BASE_MEMORY  # one worker's base
                if batch is None:
                    starts.append([])
                    self._running += 1
                starts[-1].append((nxt, self._recent(nxt, time.time())))
            if starts:
                self._touch()
        for members, job in done:
            results = self._job_results(members, job)
            if results is None:
                continue
            for e, res in zip(members, results):
                try:
                    self._finish(e, res)
                except Exception as err:  # a bug of ours: that file says so, the others go on
                    logger.exception("tb_paddle_profile: internal error finishing %s", e.file.file_name)
                    self._fail_bug(e, our_bug(e.file.file_name, err))
        self._flush_resolved()
        for batch in starts:
            self._submit(batch)
        return True

    def _maybe_stop_idle_pool(self) -> None:
        if self._inflight or self._pending:
            self._idle_since = time.monotonic()
        elif self._executor is not None and time.monotonic() - self._idle_since > IDLE_SHUTDOWN_S:
            self._executor.shutdown()  # all idle: nothing is lost
            self._executor = None

    def _pool(self) -> WorkerPool:
        with self._cond:
            if self._closed:
                raise RuntimeError("the loader is closed")
            if self._executor is None:
                # not forks of TensorBoard (threaded): forkserver or spawn, see workers.py
                self._executor = WorkerPool(self.max_workers, _worker_init)
            return self._executor

    def _submit(self, batch: List[Tuple[_Entry, bool]]) -> None:
        """Hand one worker job its files: run_job of one, run_jobs of a batch of small ones."""
        members = [e for e, _ in batch]
        try:
            pool = self._pool()
            with self._cond:  # one lock for the whole job: request threads contend for it
                # Cores not taken by other jobs in flight help decode this one (a lone large file
                # then loads on all of them; many files get one process each).
                share = max(1, self.max_workers // max(1, self._running))
                index_dir = self._index_dir()
                forces = [e.side_running for e in members]
            cache_dir = str(self.cache.cache_dir) if self.cache.cache_dir is not None else None
            specs = [JobSpec(path=e.file.path, file_name=e.file.file_name, key=e.file.key, cache_dir=cache_dir,
                             sidecar=self.cache.sidecar, fs=self.fs, root=self._root_of(e.file),
                             index=self.index or force, index_dir=index_dir, force=force,
                             recent=recent, parse_workers=share, inflate_share=self.max_workers,
                             claim_owner=self._owner) for (e, recent), force in zip(batch, forces)]
            job = pool.submit(run_job, specs[0]) if len(specs) == 1 else pool.submit(run_jobs, specs)
        except Exception as err:  # no worker process could be started: no file's fault, retried
            with self._cond:
                self._running -= 1
            self._pool_failed(members, err)
            return

        def done(fut, members=members, job=job):
            with self._cond:
                self._running -= 1
                self._done.append((members, job))
                self._cond.notify_all()

        with self._cond:
            for e in members:
                e.job = job
            job.future.add_done_callback(done)

    def _job_results(self, members: List[_Entry], job: Job) -> Optional[List[dict]]:
        """The result of each file of a finished job, as the loader's result dicts; None when the job's
        worker process ended before taking it (the files are queued again, none charged)."""
        try:
            out = job.future.result()
            return [_as_result(o) for o in out] if len(members) > 1 else [_as_result(out)]
        except JobCancelled:
            return [{"kind": "cancelled"}] * len(members)
        except WorkerLost as err:  # ended before it started the job: no file is charged
            self._pool_failed(members, err)
            return None
        except (WorkerDied, JobError) as err:
            if len(members) > 1:  # which file it was is not known: each runs again in a job of its own
                with self._cond:
                    self.stats["worker_crashes" if isinstance(err, WorkerDied) else "bugs"] += 1
                logger.warning("tb_paddle_profile: a job of %d small files failed (%s); each is loaded again "
                               "alone", len(members), _one_line(err))
                return [{"kind": "solo", "error": _one_line(err)}] * len(members)
            name = members[0].file.file_name
            if isinstance(err, WorkerDied):  # the process parsing this file died: this file, and only it, is charged
                return [{"kind": "crash",
                         "error": f"{name}: the worker process parsing it {describe_exit(err.exitcode)}"}]
            # jobs.run_job itself failed: ours
            return [{"kind": "bug", "error": our_bug(name, _Remote.make(err.type_name, err.message)),
                     "traceback": err.traceback_text}]

    def _pool_failed(self, members: List[_Entry], err: BaseException) -> None:
        """A worker job that could not start (its process could not be started, or ended before taking
        it): its files are queued again, uncharged; the pool is tried again after a backoff."""
        if isinstance(err, (WorkerStartError, WorkerLost)):
            reason = _one_line(err)
        else:
            reason = f"cannot start a worker process: {_one_line(err)}"
        with self._cond:
            for e in members:
                key = e.file.key
                self._inflight.pop(key, None)
                e.job = None
            if self._closed:
                return
            self._pool_fails += 1
            self._pool_error = reason
            self.stats["pool_failures"] += 1
            for e in members:
                key = e.file.key
                if e.side_running:  # only its index was wanted: asked again, its state unchanged
                    e.side_running, e.side = False, True
                    self._side[key] = e
                elif self._entries.get(key) is e:
                    self._enqueue(e)
            if self._pool_fails >= POOL_MAX_TRIES:
                logger.error("tb_paddle_profile: %s (%d times in a row); the queued files wait for a later scan",
                             reason, self._pool_fails)
                now = time.monotonic()
                for p in list(self._pending.values()):
                    self._defer(p, f"{p.file.file_name}: not loaded: {reason}; tried again at a later scan",
                                now + _backoff(p.rounds + 1))
                self._pool_fails, self._pool_error, self._pool_retry_at = 0, "", 0.0
            else:
                wait = POOL_RETRY_S * 2 ** (self._pool_fails - 1)
                logger.warning("tb_paddle_profile: %s; retrying in %.0f s", reason, wait)
                self._pool_retry_at = time.monotonic() + wait
            self._touch()

    def _defer(self, e: _Entry, error: str, not_before: float) -> None:
        """FAILED for now, not cached, tried again (a new round) at a scan after `not_before`."""
        self._pending.pop(e.file.key, None)
        self._urgent.discard(e.file.key)
        e.state, e.why, e.error, e.cached = FAILED, "transient", error, False
        e.rounds += 1
        e.crashes = 0
        e.not_before = not_before
        self.stats["failed"] += 1

    def _fail_bug(self, e: _Entry, error: str) -> None:
        with self._cond:
            self._inflight.pop(e.file.key, None)
            if self._entries.get(e.file.key) is e:
                self._pending.pop(e.file.key, None)
                e.state, e.why, e.error, e.cached, e.job = FAILED, "bug", error, False, None
                self.stats["bugs"] += 1
            self._touch()

    def _finish(self, e: _Entry, res: dict) -> None:
        """Take one file's result of its job (see _job_results)."""
        key = e.file.key
        name = e.file.file_name
        kind = res["kind"]
        with self._cond:  # a worker took its job: processes can be started (a submit alone does not tell)
            if self._pool_fails:
                self._pool_fails, self._pool_error, self._pool_retry_at = 0, "", 0.0
        stored = False
        result = None
        if kind in ("parsed", "sidecar"):
            if res.get("note"):
                logger.warning("tb_paddle_profile: %s: %s", name, res["note"])
            result = CachedResult(res["ok"], res["data"], res["error"])
            stored = res.get("stored", False)
            if stored:
                self.cache.trimmer.after_write(self.cache._path(key), background=True)  # not on this thread
            else:  # the job could not store it (a cache that is not a local folder, or not writable)
                if result.ok and res.get("digest"):
                    self.cache.put_digest(key, res["digest"])
                stored = self.cache.put(key, result)
        elif kind == "bug":
            logger.error("tb_paddle_profile: %s\n%s", res["error"], res.get("traceback", "").rstrip())
        with self._cond:
            self._inflight.pop(key, None)
            e.job = None
            self.stats["parsed"] += bool(res.get("engine_called"))
            self.stats["sidecar_hits"] += kind == "sidecar"
            self.stats["cache_hits"] += bool(res.get("cached"))
            if res.get("index_path"):
                e.index_path = res["index_path"]
            if e.side_running:  # a job for its index only: the waiters get it, the state stays
                e.side_running = False
                self._answer_waiters(e, res)
                if result is not None and not stored and result.ok:
                    e.data = result.data
                self._touch()
                return
            current = self._entries.get(key) is e and e.state == LOADING  # (not refused meanwhile)
            if not current or self._closed:
                self._touch()
                return
            now = time.monotonic()
            if kind == "cancelled":  # not asked for by us while it is listed: load it again
                self._enqueue(e)
                self._touch()
                return
            if kind == "solo":  # its batch's worker died: run again alone, at once, not charged
                e.solo = True
                self._enqueue(e)
                self._touch()
                return
            if result is not None:
                e.state = READY if result.ok else FAILED
                e.error, e.cached, e.why = result.error, kind == "sidecar" or res.get("cached", False), ""
                e.data = None if stored or not result.ok else result.data
                e.digest = None if stored or not result.ok else (res.get("digest") or None)
                e.crashes = e.rounds = 0
                if result.ok:
                    self._memory.put(key, result.data)
                    if res.get("digest"):
                        self._digests.put(key, res["digest"])
                self.stats["ready" if result.ok else "failed"] += 1
            elif kind == "growing":
                self.stats["growing"] += 1
                self._set_growing(e, "truncated", res["error"])
            elif kind == "changed":
                self._set_growing(e, "changed", CHANGED_REASON)
            elif kind in ("crash", "memory"):
                self.stats["worker_crashes" if kind == "crash" else "out_of_memory"] += 1
                logger.warning("tb_paddle_profile: %s", res["error"])
                e.crashes += 1
                if e.crashes <= MAX_CRASH_RETRIES:
                    self._enqueue(e, f"{res['error']}; retrying ({e.crashes} of {MAX_CRASH_RETRIES})",
                                  now + CRASH_RETRY_S * 2 ** (e.crashes - 1))
                else:
                    tries = e.crashes
                    self._defer(e, f"{res['error']} ({tries} attempts in a row, out of memory?); "
                                   "tried again at a later scan", now + _backoff(e.rounds + 1))
            elif kind in ("gone", "io"):
                # Read again at the next scan that lists it (an object store briefly empty), then with backoff.
                later = now if e.rounds == 0 else now + _backoff(e.rounds)
                what = "read again when a later scan lists it" if kind == "gone" else "tried again at a later scan"
                self._defer(e, f"{res['error']}; {what}", later)
            elif kind == "refused":  # by the path policy when opened (discovery had let it through)
                e.state, e.why, e.error, e.cached = FAILED, "refused-read", res["error"], False
                self.stats["refused"] += 1
            else:  # "bug": ours; not cached (a fixed release parses the file again), not retried in a loop
                e.state, e.why, e.error, e.cached = FAILED, "bug", res["error"], False
                self.stats["bugs"] += 1
            if e.state != QUEUED:
                self._answer_waiters(e, res)
            self._touch()

    def _answer_waiters(self, e: _Entry, res: dict) -> None:
        """Resolve the timeline index requests of ``e`` from its job's result (under the lock)."""
        waiters, e.waiters = e.waiters, []
        if not waiters:
            return
        if e.index_path and os.path.isfile(e.index_path):
            answer = {"ok": True, "path": e.index_path, "note": res.get("note", "")}
        elif res["kind"] in ("parsed", "sidecar") and not res.get("ok"):
            answer = {"ok": False, "kind": "trace", "error": res["error"]}
        elif res["kind"] == "bug":
            answer = {"ok": False, "kind": "bug", "error": res["error"], "traceback": res.get("traceback", "")}
        elif res["kind"] in ("parsed", "sidecar"):
            answer = {"ok": False, "kind": "transient", "retry": False,
                      "error": f"{e.file.file_name}: its timeline index could not be written"
                               + (f" ({res['note']})" if res.get("note") else "")}
        else:
            answer = {"ok": False, "kind": "transient", "broken": res["kind"] == "crash",
                      "error": res.get("error") or f"{e.file.file_name}: timeline not built ({res['kind']})"}
        self._resolve.extend((w, answer) for w in waiters)  # set outside the lock (_flush_resolved)

    def _flush_resolved(self) -> None:
        """Resolve the index futures answered meanwhile, outside the lock: their callbacks (the
        timeline store) take locks of their own."""
        with self._cond:
            todo, self._resolve = self._resolve, []
        for w, answer in todo:
            if not w.done():
                w.set_result(answer)


def _as_result(outcome) -> dict:
    """A JobOutcome as the loader's result dict (a dict passes through: jobs of tests)."""
    if isinstance(outcome, dict):
        return outcome
    kind = "parsed" if outcome.kind == "cached" else outcome.kind
    return {"kind": kind, "ok": outcome.ok, "data": outcome.summary, "digest": outcome.digest,
            "error": outcome.error, "note": outcome.note, "engine_called": outcome.parsed,
            "stored": outcome.stored, "cached": outcome.kind == "cached", "index_path": outcome.index_path,
            "traceback": outcome.traceback}


def _refused(f: TraceFile) -> str:
    return getattr(f, "refused", "") or ""


class _Remote(Exception):
    """Stands for an exception raised in a worker process, under its own type name (for errors.our_bug)."""

    @staticmethod
    def make(type_name: str, message: str) -> BaseException:
        cls = type(type_name if type_name.isidentifier() else "Exception", (_Remote,), {})
        return cls(message)
