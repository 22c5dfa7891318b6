"""The loader's dispatcher (a mixin of Loader): its thread takes the next files, hands them to the worker
pool in jobs, and takes each file's result: READY or FAILED, or queued again, or retried later (the
retries of the module loader's docstring: MAX_CRASH_RETRIES, CRASH_RETRY_S, RETRY_BACKOFF_S, POOL_RETRY_S,
POOL_MAX_TRIES)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List, Optional, Tuple, cast

from tb_paddle_profile.core import terminal
from tb_paddle_profile.core.errors import our_bug
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
from tb_paddle_profile.store.cache import DIGEST_FOLDER, CachedResult
from tb_paddle_profile.pipeline.jobs import JobSpec, run_job, run_jobs
from tb_paddle_profile.pipeline.loader_plan import WORKER_BASE_MEMORY
from tb_paddle_profile.pipeline.loader_queue import _Queue
from tb_paddle_profile.pipeline.loader_state import (
    CHANGED_REASON,
    FAILED,
    LOADING,
    QUEUED,
    READY,
    _as_result,
    _Entry,
    _one_line,
    _Remote,
    logger,
)


IDLE_SHUTDOWN_S = 120.0  # worker processes are ended after this long without work, freeing their memory


# Retries (see the docstring of pipeline/loader.py).
MAX_CRASH_RETRIES = 2
CRASH_RETRY_S = 1.0
RETRY_BACKOFF_S = 60.0
MAX_BACKOFF_S = 1800.0
POOL_RETRY_S = 1.0
POOL_MAX_TRIES = 6


def _worker_init() -> None:
    try:
        os.nice(5)  # parsing yields to TensorBoard's request threads
    except OSError:
        pass
    import tb_paddle_profile.analysis.summarize  # noqa: F401  (imported once per worker, not per file)


def _backoff(n: int) -> float:
    """The wait before the `n`-th (1, 2, ...) deferred retry."""
    return min(MAX_BACKOFF_S, RETRY_BACKOFF_S * 2 ** max(0, n - 1))


class _Dispatch(_Queue):
    """The dispatcher's methods of Loader (its thread is started by Loader.__init__)."""

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
                batch = (
                    starts[-1]
                    if starts and batches and self._running >= self.max_workers and self._joins(starts[-1], nxt)
                    else None
                )
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
            specs = [
                JobSpec(
                    path=e.file.path,
                    file_name=e.file.file_name,
                    key=e.file.key,
                    cache_dir=cache_dir,
                    sidecar=self.cache.sidecar,
                    fs=self.fs,
                    root=self._root_of(e.file),
                    index=self.index or force,
                    index_dir=index_dir,
                    force=force,
                    recent=recent,
                    parse_workers=share,
                    inflate_share=self.max_workers,
                    claim_owner=self._owner,
                )
                for (e, recent), force in zip(batch, forces)
            ]
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
                logger.warning(
                    "tb_paddle_profile: a job of %d small files failed (%s); each is loaded again alone",
                    len(members),
                    _one_line(err),
                )
                return [{"kind": "solo", "error": _one_line(err)}] * len(members)
            name = members[0].file.file_name
            if isinstance(err, WorkerDied):  # the process parsing this file died: this file, and only it, is charged
                return [
                    {"kind": "crash", "error": f"{name}: the worker process parsing it {describe_exit(err.exitcode)}"}
                ]
            # jobs.run_job itself failed: ours
            return [
                {
                    "kind": "bug",
                    "error": our_bug(name, _Remote.make(err.type_name, err.message)),
                    "traceback": err.traceback_text,
                }
            ]

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
                logger.error(
                    "tb_paddle_profile: %s (%d times in a row); the queued files wait for a later scan",
                    reason,
                    self._pool_fails,
                )
                now = time.monotonic()
                for p in list(self._pending.values()):
                    self._defer(
                        p,
                        f"{p.file.file_name}: not loaded: {reason}; tried again at a later scan",
                        now + _backoff(p.rounds + 1),
                    )
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
                # not on this thread; the job stored it in the cache's folder, so the cache has one
                # (its digest and timeline index too, where it wrote them: the folder's size counts them)
                also = [
                    p
                    for p in (self.cache._blob_path(DIGEST_FOLDER, key.digest(), ".dg"), self.cache.index_path(key))
                    if p is not None
                ]
                self.cache.trimmer.after_write(cast(Path, self.cache._path(key)), background=True, also=also)
            else:  # the job could not store it (a cache that is not a local folder, or not writable)
                if result.ok and res.get("digest"):
                    self.cache.put_digest(key, res["digest"])
                stored = self.cache.put(key, result)
        elif kind == "bug":
            logger.error("tb_paddle_profile: %s\n%s", res["error"], terminal.Lines(res.get("traceback", "").rstrip()))
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
                    self._enqueue(
                        e,
                        f"{res['error']}; retrying ({e.crashes} of {MAX_CRASH_RETRIES})",
                        now + CRASH_RETRY_S * 2 ** (e.crashes - 1),
                    )
                else:
                    tries = e.crashes
                    self._defer(
                        e,
                        f"{res['error']} ({tries} attempts in a row, out of memory?); tried again at a later scan",
                        now + _backoff(e.rounds + 1),
                    )
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
            answer = {
                "ok": False,
                "kind": "transient",
                "retry": False,
                "error": f"{e.file.file_name}: its timeline index could not be written"
                + (f" ({res['note']})" if res.get("note") else ""),
            }
        else:
            answer = {
                "ok": False,
                "kind": "transient",
                "broken": res["kind"] == "crash",
                "error": res.get("error") or f"{e.file.file_name}: timeline not built ({res['kind']})",
            }
        self._resolve.extend((w, answer) for w in waiters)  # set outside the lock (_flush_resolved)

    def _flush_resolved(self) -> None:
        """Resolve the index futures answered meanwhile, outside the lock: their callbacks (the
        timeline store) take locks of their own."""
        with self._cond:
            todo, self._resolve = self._resolve, []
        for w, answer in todo:
            if not w.done():
                w.set_result(answer)
