"""What every family of routes shares: the state of ``Routes`` (the memoized answers, the analyses, the
heavy executor and worker process, the timeline store), the lookups of a request's run, worker, span and
file among the latest scan, the files' states, and the answers memoized by what they are made of
(``_send``) or while what they show stays the same (``_send_latest``)."""
from __future__ import annotations

import gzip
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from werkzeug.wrappers import Request, Response

from tb_paddle_profile import timeline
from tb_paddle_profile.pipeline import runs as run_assembly
from tb_paddle_profile.pipeline.discovery import Discovery, Snapshot, TraceFile
from tb_paddle_profile.pipeline.loader import FAILED, LOADING, QUEUED, READY, FileState, Loader
from tb_paddle_profile.plugin.heavy import Heavy
from tb_paddle_profile.store.lru import SizedLRU
from tb_paddle_profile.core import terminal

from .http import _GZIP_MIN, HttpError, _accepts_gzip, _compressible, _param, _shown, respond

logger = terminal.logger(__name__)

PLUGIN_NAME = "paddle_profile"
STATIC_DIR = Path(__file__).resolve().parent.parent.parent / "static"
HEAVY_WORKERS = 2  # heavy requests computing at once (plugin/heavy.py); the others wait without the GIL
HEAVY_PROCESSES = 1  # worker processes computing analyses and what-ifs (out of TensorBoard's GIL)


class _Reloading(Exception):
    """A READY rank's cached digest was damaged or removed: it is being computed again."""


class RoutesBase:
    """The state and lookups of ``Routes``; each family of routes is a subclass of it (of
    analyses.AnalysisBase, which adds the cross-rank analyses), and ``Routes`` is all of them."""

    def __init__(self, discovery: Optional[Discovery], loader: Optional[Loader], static_dir: Path = STATIC_DIR,
                 error: str = ""):
        self.discovery = discovery
        self.error = error  # why there is no discovery, shown by the status route
        self.loader = loader
        self.static_dir = Path(static_dir)
        self._lock = threading.Lock()
        # Encoded responses as (body, gzipped), by a key naming their content; RankDistributed parts.
        self._bodies = SizedLRU(64 << 20, sizeof=lambda v: len(v[0]))
        # The latest answer of the runs and status routes, one per (route, format, gzipped): (key, body,
        # gzipped), the key naming the scan and the loader's version it was made from (a new state is a
        # new answer; the older one is of no further use). And each run's part of the run list.
        self._latest: Dict[tuple, tuple] = {}
        self._run_parts: Dict[str, Any] = {}  # run -> runs._RunPart: (key, that run alone as a RunList, ...)
        self._prints: Optional[Tuple[int, Dict[str, int]]] = None  # (scan generation, run -> hash of its files)
        self._etags: Dict[tuple, str] = {}
        self._ranks = SizedLRU(32 << 20)
        self._static: Dict[str, Path] = {}
        # Cross-rank analyses by analysis key: in memory (bounded), in the cache folder, computed once.
        cache = loader.cache if loader is not None and loader.cache.cache_dir is not None else None
        self.analyses = run_assembly.RunAnalyses(cache)
        self._last_analysis: Dict[str, str] = {}  # run -> analysis key of its last analysis (labels)
        # (run, span) -> analysis key of its last analysis (the timeline's clock corrections)
        self._last_span_analysis: Dict[Tuple[str, str], str] = {}
        # analysis key -> (worker -> label, worker -> clock offset): small facts of a stored analysis,
        # kept so that the run list and every timeline request do not decode a whole RunParallel
        self._facts = SizedLRU(8 << 20, sizeof=lambda v: 200 * (len(v[0]) + len(v[1]) + len(v[2])) + 100)
        # analysis key -> timeline.compact.Facts (the compact timeline's steps, order and clock, read once)
        self._compact_facts = SizedLRU(16 << 20, sizeof=lambda v: v.nbytes)
        # trace key -> (label, GPU) read from its digest before any analysis (the run list's)
        self._priors = SizedLRU(4 << 20, sizeof=lambda v: 100 + len(v[0]))
        self._prewarmed: Dict[Tuple[str, str], int] = {}  # (run, span) -> the scan whose indexes were asked for
        # searches, ranges, what-ifs and first analyses: at most HEAVY_WORKERS at once (heavy.py)
        self._heavy = Heavy(HEAVY_WORKERS)
        self._procs = None  # the process pool of the analyses and what-ifs (_in_process), started when needed
        self._procs_failed = False

    # --------------------------------------------------------------- lookups
    def _snapshot(self) -> Snapshot:
        if self.discovery is None:
            return Snapshot(logdir="")
        return self.discovery.snapshot()

    def _run(self, snapshot: Snapshot, request: Request,
             refused: bool = False) -> Tuple[str, Mapping[str, Mapping[str, TraceFile]]]:
        """The run named by the request: worker -> span -> file; without the files the path policy
        refuses unless `refused` (those are only ever listed, never handed to code that reads)."""
        run = _param(request, "run")
        workers = snapshot.runs.get(run)
        if workers is None:
            raise HttpError(404, f"unknown run {_shown(run)}")
        if not refused and any(f.refused for spans in workers.values() for f in spans.values()):
            kept = {w: {s: f for s, f in spans.items() if not f.refused} for w, spans in workers.items()}
            workers = {w: spans for w, spans in kept.items() if spans}
        return run, workers

    def _file(self, request: Request, refused: bool = False) -> TraceFile:
        """The file named by run, worker and span; 403 when the path policy refuses it, unless
        `refused` (the caller then only reports its state)."""
        snapshot = self._snapshot()
        run, workers = self._run(snapshot, request, refused=True)
        worker = _param(request, "worker")
        spans = workers.get(worker)
        if spans is None:
            raise HttpError(404, f"unknown worker {_shown(worker)} in run {_shown(run)}")
        span = _param(request, "span")
        trace = spans.get(span)
        if trace is None:
            raise HttpError(404, f"unknown span {_shown(span)} of worker {_shown(worker)} in run {_shown(run)}")
        if trace.refused and not refused:
            raise HttpError(403, f"{trace.file_name}: {trace.refused}")
        return trace

    def _states(self, files: List[TraceFile]) -> List[FileState]:
        """The loader's states, a refused file FAILED with its reason whatever the loader says."""
        states = self.loader.states(files) if self.loader is not None else [FileState(QUEUED)] * len(files)
        return [FileState(FAILED, f"{f.file_name}: {f.refused}") if f.refused else st
                for f, st in zip(files, states)]

    def _send(self, request: Request, memo_key: tuple, ctype: str, build: Callable[[], bytes],
              headers: Optional[List[Tuple[str, str]]] = None) -> Response:
        """Answer with a body memoized (compressed or not) under a key that names its content."""
        gz = _accepts_gzip(request) and _compressible(ctype)
        with self._lock:
            hit = self._bodies.get(memo_key + (gz,))
        if hit is None:
            body, compressed = build(), False
            if gz and len(body) >= _GZIP_MIN:
                body, compressed = gzip.compress(body, compresslevel=3, mtime=0), True
            hit = (body, compressed)
            with self._lock:
                self._bodies.put(memo_key + (gz,), hit)
        body, compressed = hit
        return respond(request, body, ctype, headers=headers, gzipped=body if compressed else None)

    def _send_latest(self, request: Request, slot: tuple, key: tuple, ctype: str,
                     build: Callable[[], bytes]) -> Response:
        """Answer with the body memoized under ``slot`` while its ``key`` stays the same (the runs and
        status routes: asked for by every tab and poll, built again only when what they show changed)."""
        gz = _accepts_gzip(request) and _compressible(ctype)
        with self._lock:
            hit = self._latest.get(slot + (gz,))
        if hit is None or hit[0] != key:
            body, compressed = build(), False
            if gz and len(body) >= _GZIP_MIN:
                body, compressed = gzip.compress(body, compresslevel=3, mtime=0), True
            hit = (key, body, compressed)
            with self._lock:
                self._latest[slot + (gz,)] = hit
        _, body, compressed = hit
        return respond(request, body, ctype, gzipped=body if compressed else None)

    def _run_span(self, request: Request) -> Tuple[str, str, List[TraceFile]]:
        """The files of every worker of a run that recorded the span (a worker's latest export of it:
        runs.py), in rank order."""
        snapshot = self._snapshot()
        run, workers = self._run(snapshot, request, refused=True)
        span = _param(request, "span")
        files = run_assembly.span_files(workers, span)
        if not files:
            raise HttpError(404, f"unknown span {_shown(span)} in run {_shown(run)}")
        return run, span, files

    def _require_loader(self) -> Loader:
        if self.loader is None:
            raise HttpError(404, "no logdir")
        return self.loader

    def close(self) -> None:
        """Stop the timeline store's worker processes, if any were started."""
        store = getattr(self, "_timeline_store", None)
        if store is not None:
            store.close()
        self._heavy.close()
        with self._lock:
            pool, self._procs = self._procs, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------- timeline (tb_paddle_profile.timeline)
    def _prewarm_timelines(self, trace: TraceFile) -> None:
        """Someone looks at a rank: have the missing timeline indexes of its run and span made in the
        background (their files' jobs run again), so that opening the Timeline view does not wait."""
        snapshot = self._snapshot()
        # Once per scan of the logdir and run and span, not at every rank's summary: looking at each of
        # the span's files (a stat and a hash per rank) cost 95 ms per summary at 4,096 ranks.
        seen = (trace.run, trace.span)
        if self._prewarmed.get(seen) == snapshot.generation:
            return
        files = [spans[trace.span] for spans in snapshot.runs.get(trace.run, {}).values() if trace.span in spans]
        if not files or self.loader is None:
            return
        store = self._timelines()
        cache = self.loader.cache
        settled = True
        for f, st in zip(files, self.loader.states(files)):
            # The jobs that made the summaries made their indexes: only a missing one is asked for
            # (opening every rank's index here would read a 1,024-rank run's at each view).
            if cache.cache_dir is not None and cache.has_index(f.key):
                continue
            if st.state == READY and not getattr(f, "refused", ""):
                try:
                    store.get(f)
                except Exception:  # a bug of ours: logged, but it must not break the summary
                    logger.exception("tb_paddle_profile: %s: starting its timeline index failed", f.file_name)
            elif st.state in (QUEUED, LOADING):
                settled = False  # asked about again once it is loaded
        if settled:
            with self._lock:
                self._prewarmed[seen] = snapshot.generation

    def _timelines(self):
        loader = self._require_loader()
        with self._lock:
            store = getattr(self, "_timeline_store", None)
            if store is None:
                root = self.discovery.root if self.discovery is not None else None
                # Indexes come from the loader's per-file jobs (one parse per trace, jobs.py); the store
                # only opens them, and asks the loader again for one that is missing.
                store = self._timeline_store = timeline.TimelineStore(
                    loader.fs, loader.cache.cache_dir, root=root, runner=loader.request_index)
        return store
