"""The store (plugin side): opens built indexes, asks for missing ones to be built in worker
processes, keeps the open ones within bounds."""

from __future__ import annotations

import collections
import concurrent.futures
import concurrent.futures.process
import logging
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Dict, Optional, Tuple, cast

from tb_paddle_profile.store.files import discard, log_once, touch
from tb_paddle_profile.store.trim import Trimmer
from tb_paddle_profile.core import terminal
from .build import index_in_worker
from .runindex import RunIndex, build_run_index, run_key
from .storage import INDEX_VERSION, CorruptIndex, TimelineIndex, one_line


logger = terminal.logger("tb_paddle_profile.timeline")
TOUCH_EVERY_NS = 60_000_000_000


class _Job:
    """What the store knows of one file version's index besides an open one."""

    __slots__ = ("future", "attempts", "next_at", "kind", "reason", "path", "fresh")

    def __init__(self):
        self.future = None  # the build in flight
        self.attempts = 0  # builds that failed transiently in the current round
        self.next_at = 0.0  # monotonic time before which no new build starts
        self.kind = ""  # "" (none), "trace", "transient" (given up for now) or "bug"
        self.reason = ""  # the one-line message of that failure
        self.path: Optional[Path] = None  # where the last build wrote the index (the cache or the temp folder)
        self.fresh = False  # built and not opened yet: a failure to open it is ours, not retried


class TimelineStore:
    """Builds indexes in worker processes, on demand, and keeps the built ones open.

    :meth:`get` returns one of:

    - ``(index, "")``: ready;
    - ``(None, "building")``: a build is running, or a failed one is waiting to be retried; ask again;
    - ``(None, reason)``: it cannot be built now; ``reason`` is one line naming the file, and
      :meth:`failure` tells whose fault it is: "trace" (the file is not a usable trace), "transient"
      (the store could not be read or nothing could be written, RETRIES times; a request COOLDOWN_S
      later starts a new round) or "bug" (an error of ours, logged with its traceback, not retried).

    A request never starts a build while one runs, nor right after one failed: a transient failure is
    retried after BACKOFF_S, doubled each time, RETRIES builds at most in a round. When the cache folder
    is not writable (or the cache is off) the indexes are kept in a temporary folder of the process,
    deleted at close. ``root`` is the logdir: traces are read under its path policy (paths.read_checked).
    """

    RETRIES = 3
    BACKOFF_S = 2.0
    COOLDOWN_S = 120.0
    GROWING_S = 1.0  # a file still being written is asked about again this soon (not after COOLDOWN_S)
    KEEP_OPEN = 64
    KEEP_RUNS = 8  # run indexes kept open (runindex.py)

    def __init__(self, fs, cache_dir: Optional[Path], workers: int = 2, root: Optional[str] = None, runner=None):
        self.fs = fs
        self.root = root
        # runner(file) -> concurrent.futures.Future of a build result (index_in_worker's dict): the
        # plugin's loader (Loader.request_index), whose per-file job makes the summary and the index
        # from one parse. Without one (a store used on its own), builds run in a pool of its own.
        self.runner = runner
        self._tmp: Optional[tempfile.TemporaryDirectory] = None
        self._spill: Optional[Path] = None  # the temporary folder, when one is used
        self._spill_trimmer: Optional[Trimmer] = None
        if cache_dir is None:
            spill = self._temp_folder()
            cache_dir = spill.parent
            self.folder = spill
        else:
            self.folder = Path(cache_dir) / f"timeline-v{INDEX_VERSION}"
        self.trimmer = Trimmer(Path(cache_dir))  # the cache folder's bound covers the indexes too
        self.workers = max(1, workers)
        self._lock = threading.Lock()
        self._open: "collections.OrderedDict[str, TimelineIndex]" = collections.OrderedDict()
        self._jobs: Dict[str, _Job] = {}
        self._executor = None
        self._closed = False
        self._clock = time.monotonic  # tests may replace it
        self._runs: "collections.OrderedDict[str, RunIndex]" = collections.OrderedDict()
        self._run_flights: Dict[str, threading.Lock] = {}
        self.opens = 0  # rank indexes opened from their files (tests count them)

    def _temp_folder(self) -> Path:
        if self._spill is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="tbpp-timeline-")
            self._spill = Path(self._tmp.name) / f"timeline-v{INDEX_VERSION}"
            self._spill_trimmer = Trimmer(Path(self._tmp.name))
        return self._spill

    def _path(self, file) -> Path:
        digest = file.key.digest()
        return self.folder / digest[:2] / (digest + ".tl")

    def failure(self, file) -> Optional[Tuple[str, str]]:
        """(kind, reason) when the index of ``file`` cannot be built now (see the class); else None."""
        with self._lock:
            job = self._jobs.get(file.key.digest())
            if job is None or not job.kind or job.future is not None:
                return None
            return job.kind, job.reason

    def get(self, file) -> Tuple[Optional[TimelineIndex], str]:
        """(index, "") when ready; else (None, "building") or (None, reason): see the class."""
        digest = file.key.digest()
        now = self._clock()
        with self._lock:
            idx = self._open.get(digest)
            if idx is not None:
                self._open.move_to_end(digest)
                return idx, ""
            job = self._jobs.get(digest)
            if job is not None:
                if job.future is not None:
                    return None, "building"
                if job.kind in ("trace", "bug"):
                    return None, job.reason
                if job.kind == "transient":
                    if now < job.next_at:
                        return None, job.reason
                    job.kind, job.reason, job.attempts = "", "", 0  # cooled down: a new round
                elif now < job.next_at:
                    return None, "building"  # waiting to retry
            path = job.path if job is not None and job.path is not None else self._path(file)
            fresh = job is not None and job.fresh
        try:
            idx = TimelineIndex(str(path), trace=digest)
            self.opens += 1
        except FileNotFoundError:
            idx = None
            if fresh:  # built, then gone before it was opened (trimmed, folder cleaned): build again
                self._job(digest).fresh = False
        except CorruptIndex as err:
            if fresh:
                return self._give_up(
                    file,
                    digest,
                    "bug",
                    f"{file.file_name}: the timeline index just built does not read back ({err})",
                    "",
                )
            discard(path, None, str(err), "timeline index")
            idx = None
        except OSError as err:  # unreadable: built again (into the temporary folder if need be)
            if fresh:
                return self._give_up(
                    file, digest, "transient", f"{file.file_name}: cannot open its timeline index: {one_line(err)}", ""
                )
            idx = None
        except Exception as err:  # an error of ours reading a whole, intact index
            from tb_paddle_profile.core.errors import our_bug

            return self._give_up(file, digest, "bug", our_bug(file.file_name, err), traceback.format_exc())
        if idx is not None:
            # used: the last to be trimmed (the modification time is the cache's LRU clock). At most once
            # a minute, so that the version whose checksum was verified stays the same (storage.verified).
            if time.time_ns() - idx.mtime_ns > TOUCH_EVERY_NS:
                touch(path)
            with self._lock:
                job = self._jobs.get(digest)
                if job is not None:
                    job.fresh = False
                    job.kind, job.reason, job.attempts = "", "", 0
                known = self._open.get(digest)
                if known is not None:  # another request opened it meanwhile: one copy
                    idx = known
                else:
                    self._open[digest] = idx
                while len(self._open) > self.KEEP_OPEN:
                    # Dropped, not closed: a request may still be reading it (its arrays keep the mapping
                    # alive; the garbage collector unmaps it when the last one is done).
                    self._open.popitem(last=False)
            return idx, ""
        return self._start(file, digest)

    def run_index(self, files, builder=None) -> Optional[RunIndex]:
        """The run index of the indexes of ``files`` (runindex.py), in their order: open already, read
        back from the cache folder, or built now from their indexes (once, however many requests ask);
        None while one of them is not ready (its build is asked for, as by get) or when it cannot be
        written. ``builder(files, target)``: builds it elsewhere (the plugin's timeline worker process:
        remote.build_run), True when it wrote ``target``; else (or when it cannot) it is built here."""
        digests = [f.key.digest() for f in files]
        key = run_key(digests)
        with self._lock:
            ri = self._runs.get(key)
            if ri is not None:
                self._runs.move_to_end(key)
                return ri
            flight = self._run_flights.setdefault(key, threading.Lock())
        try:
            with flight:
                with self._lock:
                    ri = self._runs.get(key)
                if ri is None:
                    path = self.folder / key[:2] / f"run-{key}.tl"
                    ri = self._open_run(path, digests)
                    if ri is None and builder is not None and builder(files, str(path)):
                        self.trimmer.after_write(path)
                        ri = self._open_run(path, digests)
                    if ri is None:
                        ri = self._build_run(files, digests, path)
                    if ri is not None:
                        with self._lock:
                            self._runs[key] = ri
                            while len(self._runs) > self.KEEP_RUNS:
                                self._runs.popitem(last=False)  # dropped, not closed (as rank indexes)
        finally:
            with self._lock:
                if self._run_flights.get(key) is flight:
                    del self._run_flights[key]
        return ri

    def _open_run(self, path: Path, digests) -> Optional[RunIndex]:
        try:
            ri = RunIndex(str(path))
        except FileNotFoundError:
            return None
        except CorruptIndex as err:
            discard(path, None, str(err), "timeline run index")
            return None
        except OSError:
            return None
        if ri.traces != list(digests):
            ri.close()
            discard(path, None, "it indexes other traces", "timeline run index")
            return None
        if time.time_ns() - path.stat().st_mtime_ns > TOUCH_EVERY_NS:
            touch(path)
        return ri

    def _build_run(self, files, digests, path: Path) -> Optional[RunIndex]:
        class NotReady(Exception):
            pass

        def indexes():  # every rank's index, opened once (checked once per file version) and let go
            for f in files:
                idx, _ = self.get(f)
                if idx is None:  # not built yet: asked for by get; the run index waits for it
                    raise NotReady
                yield idx

        targets = [path]
        if self.folder != self._spill:  # a cache folder that cannot be written: the temporary one
            targets.append(self._temp_folder() / path.relative_to(self.folder))
        for target in targets:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                build_run_index(str(target), digests, indexes())
                # (the temporary folder's trimmer is made with that folder)
                cast(Trimmer, self.trimmer if target == path else self._spill_trimmer).after_write(target)
                return RunIndex(str(target))
            except NotReady:
                return None
            except (OSError, CorruptIndex) as err:
                log_once(
                    f"timeline-run-index:{target.parent.parent}",
                    logging.WARNING,
                    "tb_paddle_profile: timeline run index %s not written (%s)",
                    target,
                    one_line(err),
                )
        return None

    def _job(self, digest: str) -> _Job:
        with self._lock:
            return self._jobs.setdefault(digest, _Job())

    def _give_up(self, file, digest: str, kind: str, reason: str, trace_text: str) -> Tuple[None, str]:
        with self._lock:
            job = self._jobs.setdefault(digest, _Job())
            job.fresh, job.kind, job.reason = False, kind, reason
            job.next_at = self._clock() + (self.COOLDOWN_S if kind == "transient" else 0.0)
        if kind == "bug":
            logger.error("tb_paddle_profile: %s%s", reason, terminal.Lines(f"\n{trace_text}" if trace_text else ""))
        else:
            logger.warning("tb_paddle_profile: %s", reason)
        return None, reason

    def _start(self, file, digest: str) -> Tuple[None, str]:
        with self._lock:
            if self._closed:
                return None, f"{file.file_name}: the timeline store is closed"
            job = self._jobs.setdefault(digest, _Job())
            if job.future is not None:
                return None, "building"
            if self.runner is not None:
                fut, failed = self._run_elsewhere(file)
            else:
                fut, failed = self._run_here(file)
            job.future = fut
        if fut is None:
            self._finish(file, digest, None, failed)
            with self._lock:
                job = self._jobs[digest]
                return None, (job.reason if job.kind else "building")
        fut.add_done_callback(lambda f: self._finish(file, digest, f, None))
        return None, "building"

    def _run_elsewhere(self, file):
        """(future, None) of the runner's build (the loader's job), or (None, the failure)."""
        try:
            return self.runner(file), None
        except Exception as err:  # the loader closed meanwhile, or a bug of ours: said, never raised
            return None, {
                "ok": False,
                "kind": "transient",
                "error": f"{file.file_name}: timeline not built: {one_line(err)}",
            }

    def _run_here(self, file):
        """(future, None) of a build in this store's own pool (under the lock), or (None, the failure)."""
        from tb_paddle_profile.trace.reader import parse_workers
        from tb_paddle_profile.core.pool import process_pool

        target = self._path(file)
        fallback = None
        if self.folder != self._spill:
            spill = self._temp_folder()
            fallback = str(spill / target.relative_to(self.folder))
        try:
            if self._executor is None:
                self._executor = process_pool(self.workers)
            # cores not taken by other builds help decode this file
            building = sum(1 for j in self._jobs.values() if j.future is not None)
            share = max(1, parse_workers() // (building + 1))
            return self._executor.submit(
                index_in_worker,
                self.fs,
                file.path,
                file.file_name,
                file.size,
                str(target),
                share,
                getattr(file, "root", "") or self.root,
                fallback,
                file.key.digest(),
                self.workers,
            ), None
        except Exception as err:  # no worker process could be started (resources): transient
            self._executor = None
            return None, {
                "ok": False,
                "kind": "transient",
                "error": f"{file.file_name}: timeline not built: cannot start a worker process: {one_line(err)}",
            }

    def _finish(self, file, digest: str, fut, res: Optional[dict]) -> None:
        """A build ended (in the executor's thread): record its outcome. Never raises."""
        try:
            if res is None:
                try:
                    res = fut.result()
                except concurrent.futures.process.BrokenProcessPool as err:  # a worker died (memory?)
                    res = {
                        "ok": False,
                        "kind": "transient",
                        "broken": True,
                        "error": f"{file.file_name}: timeline not built: the worker process died "
                        f"({one_line(err)}; out of memory?)",
                    }
                except concurrent.futures.CancelledError:
                    res = {
                        "ok": False,
                        "kind": "transient",
                        "retry": True,
                        "error": f"{file.file_name}: timeline build cancelled",
                    }
                except Exception as err:  # the call itself failed (arguments, results): ours
                    from tb_paddle_profile.core.errors import our_bug

                    res = {
                        "ok": False,
                        "kind": "bug",
                        "error": our_bug(file.file_name, err),
                        "traceback": "".join(traceback.format_exception(type(err), err, err.__traceback__)),
                    }
            self._record(file, digest, res)
        except Exception:  # whatever happens, the job must not stay "building" forever
            logger.exception("tb_paddle_profile: %s: recording a timeline build failed", file.file_name)
            with self._lock:
                job = self._jobs.setdefault(digest, _Job())
                job.future, job.kind = None, "bug"
                job.reason = f"{file.file_name}: internal error in tb_paddle_profile while building its timeline"

    def _record(self, file, digest: str, res: dict) -> None:
        now = self._clock()
        written: Optional[Path] = None
        with self._lock:
            job = self._jobs.setdefault(digest, _Job())
            job.future = None
            if self._closed:
                return
            if res.get("broken") and self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=False)
                self._executor = None
            if res["ok"]:
                written = Path(res["path"])
                job.path, job.fresh = written, True
                job.kind, job.reason, job.attempts = "", "", 0
            elif res["kind"] == "transient" and res.get("growing"):
                # Not a failed build: its summary is not made yet. Asked again at the next request a
                # moment later, so that the timeline is there as soon as the summary is.
                job.kind, job.reason = "transient", res["error"]
                job.next_at = now + self.GROWING_S
            elif res["kind"] == "transient":
                job.attempts += 1
                if job.attempts >= self.RETRIES or res.get("retry") is False:
                    tries = f"{job.attempts} attempt{'s' if job.attempts > 1 else ''}"
                    job.kind = "transient"
                    job.reason = (
                        f"{res['error']} (gave up after {tries}; tried again on a request in {self.COOLDOWN_S:.0f} s)"
                    )
                    job.next_at = now + self.COOLDOWN_S
                else:
                    job.next_at = now + self.BACKOFF_S * (2 ** (job.attempts - 1))
            else:
                job.kind, job.reason = res["kind"], res["error"]
        if res["ok"] and written is not None:  # (written whenever the result is ok)
            if res.get("note"):
                log_once(
                    f"timeline-spill:{self.folder}",
                    logging.WARNING,
                    "tb_paddle_profile: timeline index folder %s: %s; timeline indexes are kept in a "
                    "temporary folder until TensorBoard exits",
                    self.folder,
                    res["note"],
                )
            trimmer = self.trimmer if written.is_relative_to(self.folder) else self._spill_trimmer
            if trimmer is not None:
                trimmer.after_write(written)
        elif res["kind"] == "bug":
            logger.error(
                "tb_paddle_profile: %s%s",
                res["error"],
                terminal.Lines(f"\n{res['traceback']}" if res.get("traceback") else ""),
            )
        elif res["kind"] == "transient" and not res.get("growing"):
            logger.warning("tb_paddle_profile: %s", job.reason or f"{res['error']} (will retry)")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            # Dropped, not closed: a request still answering keeps its index until it is done.
            self._open.clear()
            self._runs.clear()
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
        if self._tmp is not None:
            try:
                self._tmp.cleanup()
            except OSError:  # a file still mapped (Windows): left to the system's temporary-file cleanup
                pass
