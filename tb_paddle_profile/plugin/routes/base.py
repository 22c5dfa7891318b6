"""What every family of routes shares: the state of ``Routes`` (the memoized answers, the analyses, the
heavy executor and worker process, the timeline store), the lookups of a request's run, worker, span and
file among the latest scan, the files' states, and the answers memoized by what they are made of
(``_send``) or while what they show stays the same (``_send_latest``)."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path
import hashlib
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Tuple

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


class SpanFacts(NamedTuple):
    """What the run views ask of a run's span at every request, made once per scan and loader version of
    the run (``RoutesBase._span_facts``): its files (runs.span_files: one per worker, rank order, refused
    ones included), their states, the READY ones and their analysis key, which ranks block the views, and
    a signature of the keys and states (the memoized answers' keys)."""

    files: Tuple[TraceFile, ...]
    states: Tuple[FileState, ...]
    ready: Tuple[TraceFile, ...]
    key: str
    blocking: Tuple[bool, ...]
    sig: str


class RoutesBase:
    """The state and lookups of ``Routes``; each family of routes is a subclass of it (of
    analyses.AnalysisBase, which adds the cross-rank analyses), and ``Routes`` is all of them."""

    def __init__(
        self, discovery: Optional[Discovery], loader: Optional[Loader], static_dir: Path = STATIC_DIR, error: str = ""
    ):
        self.discovery = discovery
        self.error = error  # why there is no discovery, shown by the status route
        self.loader = loader
        self.static_dir = Path(static_dir)
        self._lock = threading.Lock()
        # Encoded responses as (body, gzipped), by a key naming their content; RankDistributed parts.
        self._bodies = SizedLRU(64 << 20, sizeof=lambda v: len(v[0]))
        self._flights: Dict[tuple, list] = {}  # memo key -> [lock of its build, requests waiting or building] (_send)
        # The latest answer of the runs and status routes, one per (route, format, gzipped): (key, body,
        # gzipped), the key naming the scan and the loader's version it was made from (a new state is a
        # new answer; the older one is of no further use). And each run's part of the run list.
        self._latest: Dict[tuple, tuple] = {}
        self._run_parts: Dict[str, Any] = {}  # run -> runs._RunPart: (key, that run alone as a RunList, ...)
        self._prints: Optional[Tuple[int, Dict[str, int]]] = None  # (scan generation, run -> hash of its files)
        self._etags: Dict[tuple, str] = {}
        self._ranks = SizedLRU(32 << 20)
        # (run, span) -> ((scan generation, the run's loader version), SpanFacts): per request, a run view
        # looked at every rank's state and hashed every rank's key (issue 28: O(ranks) for a cached answer)
        self._span_memo = SizedLRU(16 << 20, sizeof=lambda v: 300 * len(v[1].files) + 200)
        # the digests of a set of ranks -> their timeline.remote.pack (timelines._packed)
        self._refs = SizedLRU(32 << 20, sizeof=lambda v: len(v[1]) + 100)
        # run -> (its workers in the scan, those without the files the path policy refuses) (_run)
        self._readable: Dict[str, tuple] = {}
        # run -> (what its rank numbers were made of, worker -> rank number) (analyses._rank_numbers)
        self._numbers: Dict[str, tuple] = {}
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
        # the process pools of the analyses and what-ifs, and of the timeline queries (analyses._in_pool),
        # started when needed; the names of those that could not be started
        self._procs: Dict[str, Any] = {}
        self._procs_failed: set = set()

    # --------------------------------------------------------------- lookups
    def _snapshot(self) -> Snapshot:
        if self.discovery is None:
            return Snapshot(logdir="")
        return self.discovery.snapshot()

    def _run(
        self, snapshot: Snapshot, request: Request, refused: bool = False
    ) -> Tuple[str, Mapping[str, Mapping[str, TraceFile]]]:
        """The run named by the request: worker -> span -> file; without the files the path policy
        refuses unless `refused` (those are only ever listed, never handed to code that reads)."""
        run = _param(request, "run")
        workers = snapshot.runs.get(run)
        if workers is None:
            raise HttpError(404, f"unknown run {_shown(run)}")
        if not refused:  # looked for once per scan (a pass over the run's files at each request before)
            with self._lock:
                hit = self._readable.get(run)
            if hit is None or hit[0] is not workers:
                if any(f.refused for spans in workers.values() for f in spans.values()):
                    kept = {w: {s: f for s, f in spans.items() if not f.refused} for w, spans in workers.items()}
                    hit = (workers, {w: spans for w, spans in kept.items() if spans})
                else:
                    hit = (workers, workers)
                with self._lock:
                    self._readable[run] = hit
            workers = hit[1]
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
        return [FileState(FAILED, f"{f.file_name}: {f.refused}") if f.refused else st for f, st in zip(files, states)]

    def _send(
        self,
        request: Request,
        memo_key: tuple,
        ctype: str,
        build: Callable[[], bytes],
        headers: Optional[List[Tuple[str, str]]] = None,
    ) -> Response:
        """Answer with a body memoized (compressed or not) under a key that names its content."""
        hit = self._memoized(request, memo_key, ctype, headers)
        if hit is not None:
            return hit
        # One build per answer at a time: the requests that miss it together (every user of a run opening its
        # view after a restart) wait for the first one's build instead of each making it again in the one GIL.
        flight_key = memo_key + (_accepts_gzip(request) and _compressible(ctype),)
        with self._lock:
            flight = self._flights.setdefault(flight_key, [threading.Lock(), 0])
            flight[1] += 1
        try:
            with flight[0]:
                hit = self._memoized(request, memo_key, ctype, headers)
                return hit if hit is not None else self._memoize(request, memo_key, ctype, build(), headers)
        finally:
            with self._lock:
                flight[1] -= 1
                if not flight[1]:
                    del self._flights[flight_key]

    def _memoized(
        self, request: Request, memo_key: tuple, ctype: str, headers: Optional[List[Tuple[str, str]]] = None
    ) -> Optional[Response]:
        """The answer memoized under ``memo_key`` (see _send); None when there is none."""
        gz = _accepts_gzip(request) and _compressible(ctype)
        with self._lock:
            hit = self._bodies.get(memo_key + (gz,))
        if hit is None:
            return None
        body, compressed = hit
        return respond(request, body, ctype, headers=headers, gzipped=body if compressed else None)

    def _memoize(
        self,
        request: Request,
        memo_key: tuple,
        ctype: str,
        body: bytes,
        headers: Optional[List[Tuple[str, str]]] = None,
    ) -> Response:
        """Answer with ``body``, memoized (compressed or not) under ``memo_key`` (see _send)."""
        gz = _accepts_gzip(request) and _compressible(ctype)
        compressed = False
        if gz and len(body) >= _GZIP_MIN:
            body, compressed = gzip.compress(body, compresslevel=3, mtime=0), True
        with self._lock:
            self._bodies.put(memo_key + (gz,), (body, compressed))
        return respond(request, body, ctype, headers=headers, gzipped=body if compressed else None)

    def _send_latest(
        self, request: Request, slot: tuple, key: tuple, ctype: str, build: Callable[[], bytes]
    ) -> Response:
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
        run, span, facts = self._run_span_facts(request)
        return run, span, list(facts.files)

    def _run_span_facts(self, request: Request) -> Tuple[str, str, SpanFacts]:
        """(run, span, SpanFacts) of the run and span named by the request; 404 for a span no worker recorded."""
        snapshot = self._snapshot()
        run, workers = self._run(snapshot, request, refused=True)
        span = _param(request, "span")
        facts = self._span_facts(run, span, snapshot, workers)
        if not facts.files:
            raise HttpError(404, f"unknown span {_shown(span)} in run {_shown(run)}")
        return run, span, facts

    def _span_facts(
        self,
        run: str,
        span: str,
        snapshot: Optional[Snapshot] = None,
        workers: Optional[Mapping[str, Mapping[str, TraceFile]]] = None,
    ) -> SpanFacts:
        """The SpanFacts of ``run``'s ``span`` in the latest scan (every worker, refused ones included),
        made again only when the scan or a state of the run's files changed."""
        if snapshot is None:
            snapshot = self._snapshot()
        if workers is None:
            workers = snapshot.runs.get(run) or {}
        # the version before the states: a state changing in between gives a newer version at the next request
        version = (snapshot.generation, self.loader.run_version(run) if self.loader is not None else None)
        with self._lock:
            hit = self._span_memo.get((run, span))
        if hit is not None and hit[0] == version:
            return hit[1]
        files = run_assembly.span_files(workers, span)
        states = self._states(files)
        ready = tuple(t for t, st in zip(files, states) if st.state == READY)
        sig = hashlib.sha256(
            "\0".join(f"{f.key.digest()}:{st.state}:{st.error}" for f, st in zip(files, states)).encode(
                "utf-8", "surrogateescape"
            )
        )
        facts = SpanFacts(
            tuple(files),
            tuple(states),
            ready,
            run_assembly.analysis_key(t.key for t in ready),
            tuple(run_assembly.blocking(states)),
            sig.hexdigest()[:40],
        )
        with self._lock:
            self._span_memo.put((run, span), (version, facts))
        return facts

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
            pools, self._procs = list(self._procs.values()), {}
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------- timeline (tb_paddle_profile.timeline)
    def _prewarm_timelines(self, trace: TraceFile) -> None:
        """Someone looks at a rank: have the missing timeline indexes of its run and span made into the
        cache folder in the background (their files' jobs run again), so that opening the Timeline view
        does not wait."""
        if self.loader is None or self.loader.cache.cache_dir is None:
            # No cache folder (a cache at a URL, or none): the loader's own parses left their indexes in
            # its temporary folder, and a summary read from a URL cache has none. Asking for those here
            # would parse every rank of the span again because one summary was looked at (a TensorBoard
            # over a cache `preprocess --dask` filled must parse nothing): they are built at their first
            # Timeline view (docs/dask.md).
            return
        snapshot = self._snapshot()
        # Once per scan of the logdir and run and span, not at every rank's summary: looking at each of
        # the span's files (a stat and a hash per rank) cost 95 ms per summary at 4,096 ranks.
        seen = (trace.run, trace.span)
        if self._prewarmed.get(seen) == snapshot.generation:
            return
        files = [spans[trace.span] for spans in snapshot.runs.get(trace.run, {}).values() if trace.span in spans]
        if not files:
            return
        store = self._timelines()
        cache = self.loader.cache
        settled = True
        for f, st in zip(files, self.loader.states(files)):
            # The jobs that made the summaries made their indexes: only a missing one is asked for
            # (opening every rank's index here would read a 1,024-rank run's at each view).
            if cache.has_index(f.key):
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
                    loader.fs, loader.cache.cache_dir, root=root, runner=loader.request_index
                )
        return store
