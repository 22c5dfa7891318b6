"""The plugin's HTTP routes (WSGI), served by TensorBoard under ``/data/plugin/paddle_profile/``.

Every request parameter is looked up among the runs, workers and spans of the latest scan: a value from
the client is only ever a dictionary key, never part of a filesystem path. Unknown values get 400/404
with a one-line message. Responses are gzip-compressed when the client accepts it. Nothing here parses a
trace: summaries come finished from the loader.

A file that the path policy (tb_paddle_profile/core/paths.py) refuses is listed FAILED with the reason, is
never handed to the timeline, and is never served (403); the raw trace is opened with
paths.open_checked. Every response carries ``X-Content-Type-Options: nosniff``; an exception of our
own code is answered 500 with a one-line message saying it is a bug of the tool, and logged with its
traceback.
"""
from __future__ import annotations

import collections
import concurrent.futures
import concurrent.futures.process
import functools
import gzip
import hashlib
import json
import logging
import mimetypes
import os
import re
import threading
import zlib
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Tuple
from urllib.parse import quote

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.core import paths
from tb_paddle_profile.core.errors import TraceError, TransientError, our_bug
from tb_paddle_profile.pipeline.discovery import Discovery, Snapshot, TraceFile
from tb_paddle_profile.pipeline.loader import FAILED, LOADING, QUEUED, READY, FileState, Loader
from tb_paddle_profile.store.lru import SizedLRU
from tb_paddle_profile.pipeline import runs as run_assembly
from tb_paddle_profile.core.protojson import to_json_bytes
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2
from tb_paddle_profile import timeline
from tb_paddle_profile.plugin.heavy import Heavy

logger = logging.getLogger(__name__)

PLUGIN_NAME = "paddle_profile"
STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_CTYPES = {"pb": PROTOBUF, "json": JSON}
# The `diff` route's baseline worker that stands for the median of the candidate rank's role peers.
PEERS_WORKER = "~peers"
_MAX_PARAM = 1024
# A list of workers (comma-separated names, each looked up among the run's): 16 ranks of ~80-character
# Kubernetes host names already pass 1,024; this cap holds some 700 such names (the request line's own
# limit, 64 KB in werkzeug's server, comes first beyond).
_MAX_LIST_PARAM = 60_000
_GZIP_MIN = 256
_CHUNK = 1 << 20
_COMPRESSIBLE = ("text/", "application/json", "application/javascript", PROTOBUF, "image/svg+xml",
                 "application/wasm")
_TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".wasm": "application/wasm",
    ".txt": "text/plain; charset=utf-8",
}
FALLBACK_MODULE = b"""// tb_paddle_profile: the frontend bundle is not installed (tb_paddle_profile/static/index.js).
export async function render() {
  const p = document.createElement("p");
  p.style.fontFamily = "sans-serif";
  p.textContent = "Paddle Profile: the frontend bundle is missing from this installation. " +
    "The data routes work: see ./runs?format=json";
  document.body.appendChild(p);
}
"""


HEAVY_WORKERS = 2  # heavy requests computing at once (plugin/heavy.py); the others wait without the GIL
HEAVY_PROCESSES = 1  # worker processes computing analyses and what-ifs (out of TensorBoard's GIL)


class HttpError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _shown(value: str) -> str:
    """A client value as it may appear in a message: quoted, escaped, short."""
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _accepts_gzip(request: Request) -> bool:
    return request.accept_encodings["gzip"] > 0


def _compressible(content_type: str) -> bool:
    return content_type.startswith(_COMPRESSIBLE)


def respond(request: Request, body: bytes, content_type: str, status: int = 200,
            headers: Optional[List[Tuple[str, str]]] = None, gzipped: Optional[bytes] = None) -> Response:
    """A response, gzip-encoded when the client accepts it (``gzipped``: the body already compressed)."""
    headers = list(headers or [])
    headers += [("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache, must-revalidate")]
    if _compressible(content_type):
        headers.append(("Vary", "Accept-Encoding"))
        if gzipped is not None or (_accepts_gzip(request) and len(body) >= _GZIP_MIN):
            body = gzipped if gzipped is not None else gzip.compress(body, compresslevel=3, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
    headers.append(("Content-Length", str(len(body))))
    return Response(body, status=status, headers=headers, content_type=content_type)


def _etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (weak or strong, or "*")."""
    for tag in if_none_match.split(","):
        tag = tag.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


def _text(request: Request, message: str, code: int, headers: Optional[List[Tuple[str, str]]] = None) -> Response:
    return respond(request, (message + "\n").encode("utf-8"), "text/plain; charset=utf-8", code, headers)


def internal_error(route: str, exc: BaseException) -> str:
    """The one line that answers a request which our own code failed (errors.our_bug's wording)."""
    return our_bug(route, exc, "your files", " with TensorBoard's log")


def _handler(fn: Callable[["Routes", Request], Response]):
    @functools.wraps(fn)
    def app(self: "Routes", environ, start_response):
        request = Request(environ)
        try:
            if request.method not in ("GET", "HEAD"):
                raise HttpError(405, f"method {request.method} not allowed: use GET")
            response = fn(self, request)
        except HttpError as err:
            response = _text(request, err.message, err.code)
        except TraceError as err:  # a file that is not a usable trace
            response = _text(request, str(err), 422)
        except TransientError as err:  # worth asking again
            response = _text(request, str(err), 503, [("Retry-After", "5")])
        except Exception as exc:  # a bug of ours: said so, with its traceback in the log
            logger.exception("tb_paddle_profile: internal error answering %s", _shown(request.full_path))
            response = _text(request, internal_error(fn.__name__, exc), 500)
        return response(environ, start_response)

    return app


def _param(request: Request, name: str, required: bool = True, most: int = _MAX_PARAM, nul: bool = False) -> str:
    """The one value of a query parameter, at most `most` characters; a NUL refused unless `nul` (a
    search text: names may hold one)."""
    values = request.args.getlist(name)
    if not values:
        if required:
            raise HttpError(400, f"missing parameter '{name}'")
        return ""
    if len(values) > 1:
        raise HttpError(400, f"parameter '{name}' given more than once")
    value = values[0]
    if len(value) > most or ("\x00" in value and not nul):
        raise HttpError(400, f"invalid value for parameter '{name}'")
    return value


def _format(request: Request) -> str:
    value = _param(request, "format", required=False).lower()
    if value in ("", "pb", "proto", "protobuf", "binary"):
        return "pb"
    if value == "json":
        return "json"
    raise HttpError(400, f"unknown format {_shown(value)}: use 'json' or leave it out for protobuf")


_CSV = "text/csv; charset=utf-8"


def _sorted_by(request: Request) -> str:
    from tb_paddle_profile.present.display.summary import SORTED_KEYS

    value = _param(request, "sorted_by", required=False) or "CPUTotal"
    if value not in SORTED_KEYS:
        raise HttpError(400, f"unknown sorted_by {_shown(value)}: use one of {', '.join(SORTED_KEYS)}")
    return value


def _encode(message, fmt: str) -> bytes:
    """Serialized protobuf, or proto3 JSON (lowerCamelCase names, enums by name, 64-bit ints as strings,
    fields with default values included so that rank 0 or a 0 ns time is explicit, as in the CLI's JSON)."""
    if fmt == "json":
        return to_json_bytes(message, indent=None)
    return message.SerializeToString()


class _FileStream:
    """Iterates a store's file in chunks, optionally gzip-compressing; closed by the WSGI server."""

    def __init__(self, handle, length: int, compress: bool):
        self._handle = handle
        self._left = length
        self._deflate = zlib.compressobj(3, zlib.DEFLATED, 31) if compress else None

    def __iter__(self) -> Iterator[bytes]:
        while self._left > 0:
            chunk = self._handle.read(min(_CHUNK, self._left))
            if not chunk:
                break
            self._left -= len(chunk)
            if self._deflate is not None:
                chunk = self._deflate.compress(chunk)
            if chunk:
                yield chunk
        if self._deflate is not None:
            yield self._deflate.flush()
        self.close()

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.close()


def _download_name(file_name: str) -> str:
    safe = "".join(c if (c.isascii() and (c.isalnum() or c in "._-")) else "_" for c in file_name)
    return f"attachment; filename=\"{safe}\"; filename*=UTF-8''{quote(file_name, safe='')}"


class Routes:
    """The WSGI apps; ``apps()`` is what the plugin's ``get_plugin_apps()`` returns."""

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
        self._run_parts: Dict[str, tuple] = {}  # run -> (key, serialized RunList holding that run alone)
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

    def apps(self) -> Dict[str, Callable]:
        return {
            "/runs": self.runs,
            "/summary": self.summary,
            "/display": self.display,
            "/csv": self.csv,
            "/distributed": self.distributed,
            "/parallel": self.parallel,
            "/parallel_matched": self.parallel_matched,
            "/rank_banner": self.rank_banner,
            "/whatif": self.whatif,
            "/diff": self.diff,
            "/trace": self.trace,
            "/timeline": self.timeline,
            "/timeline_event": self.timeline_event,
            "/timeline_search": self.timeline_search,
            "/timeline_range": self.timeline_range,
            "/timeline_instance": self.timeline_instance,
            "/timeline_compact": self.timeline_compact,
            "/trace_window": self.trace_window,
            "/status": self.status,
            "/index.js": self.asset,
            "/*": self.asset,
        }

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

    # ---------------------------------------------------------------- routes
    @_handler
    def runs(self, request: Request) -> Response:
        fmt = _format(request)
        if _param(request, "refresh", required=False) and self.discovery is not None:
            self.discovery.request_scan()
        snapshot = self._snapshot()
        version = self.loader.version if self.loader is not None else 0

        def build():
            data = self._run_list_bytes(snapshot)
            return data if fmt == "pb" else _encode(plugin_pb2.RunList.FromString(data), fmt)

        # the labels come from the runs' last analyses: a new analysis is a new run list
        labels_from = tuple(sorted(self._last_analysis.items()))
        return self._send_latest(request, ("runs", fmt), (snapshot.generation, version, labels_from), _CTYPES[fmt],
                                 build)

    def _run_list_bytes(self, snapshot: Snapshot) -> bytes:
        """The serialized RunList of ``snapshot``, each run's part made again only when a state shown for
        one of its files changed (Loader.run_version), a new scan or a new analysis of the run: a file
        that changes state costs its run's files, not every file of the logdir. The bytes are those of
        ``_run_list(snapshot).SerializeToString()`` (protobuf: repeated fields concatenate)."""
        parts, kept = [], {}
        prints = self._run_prints(snapshot)
        for run, workers in snapshot.runs.items():
            key = (prints[run], self.loader.run_version(run) if self.loader is not None else 0,
                   self._last_analysis.get(run))
            with self._lock:
                got = self._run_parts.get(run)
            if got is None or got[0] != key:
                part = plugin_pb2.RunList()
                self._run_entry(part.runs.add(run=run), run, workers)
                got = (key, part.SerializeToString())
            kept[run] = got
            parts.append(got[1])
        with self._lock:
            self._run_parts = kept
        head = plugin_pb2.RunList(logdir=snapshot.logdir).SerializeToString()
        tail = plugin_pb2.RunList(scanned_at=snapshot.scanned_at).SerializeToString()
        return head + b"".join(parts) + tail

    def _run_prints(self, snapshot: Snapshot) -> Dict[str, int]:
        """run -> a hash of its files as the scan lists them (every field of each TraceFile), computed once
        per scan: a scan that found a run as it was leaves that run's part of the run list as it is."""
        with self._lock:
            got = self._prints
        if got is None or got[0] != snapshot.generation:
            got = (snapshot.generation, {run: hash(tuple((worker, tuple(spans.items())) for worker, spans in workers.items()))
                                         for run, workers in snapshot.runs.items()})
            with self._lock:
                self._prints = got
        return got[1]

    def _run_list(self, snapshot: Snapshot) -> plugin_pb2.RunList:
        out = plugin_pb2.RunList(logdir=snapshot.logdir, scanned_at=snapshot.scanned_at)
        for run, workers in snapshot.runs.items():
            self._run_entry(out.runs.add(run=run), run, workers)
        return out

    def _run_entry(self, entry, run: str, workers: Mapping[str, Mapping[str, TraceFile]]) -> None:
        """Fill the RunList's entry of ``run``: its workers in rank order, each span's file and state."""
        files = [trace for spans in workers.values() for trace in spans.values()]
        order = iter(self._states(files))
        states = {(worker, span): next(order) for worker, spans in workers.items() for span in spans}
        labels = self._labels(run)
        numbers = self._rank_numbers(run, workers)
        for worker in sorted(workers, key=lambda w: (numbers.get(w, 1 << 30), w)):
            spans = workers[worker]
            first = next(iter(spans.values()))
            label = labels.get(worker) or self._prior_label(first, numbers.get(worker),
                                                            states[worker, next(iter(spans))].state == READY)
            w = entry.workers.add(worker=worker, rank=numbers.get(worker, first.rank), hostname=first.hostname,
                                  pid=first.pid, label=label)
            for span, trace in spans.items():
                st = states[worker, span]
                w.spans.add(span=span, file_name=trace.file_name, file_size=trace.size, state=st.state,
                            error=st.error, cached=st.cached, loading_since_unix_s=st.loading_since)

    def _rank_numbers(self, run: str, workers: Mapping[str, Mapping[str, TraceFile]]) -> Dict[str, int]:
        """worker -> its rank number, as the cross-rank analysis numbers them (analysis/crossrank/load.py):
        from the file names when every one tells a rank and no two the same; else the run's last
        analysis's; before there is one, Fleet's order computed here (hosts in natural order, then the
        GPU of the rank's digest when it is loaded, then the pid), so that Paddle's default worker names
        (host_<host>pid_<pid>) have a rank, a label and links in every view before any analysis."""
        from tb_paddle_profile.analysis.crossrank.labels import natural_key

        firsts = {w: next(iter(spans.values())) for w, spans in workers.items() if spans}
        told = [f.rank for f in firsts.values()]
        if all(r >= 0 for r in told) and len(set(told)) == len(told):
            return {w: f.rank for w, f in firsts.items()}
        known = self._analysis_facts(self._last_analysis.get(run))[2]
        if known and set(firsts) <= set(known):
            return {w: known[w] for w in firsts}
        order = sorted(firsts, key=lambda w: (natural_key(firsts[w].hostname), self._prior(firsts[w])[1],
                                              firsts[w].pid, natural_key(w), firsts[w].file_name))
        return {w: i for i, w in enumerate(order)}

    def _analysis_facts(self, key: Optional[str]) -> Tuple[Dict[str, str], Dict[str, int], Dict[str, int]]:
        """(worker -> label, worker -> clock offset ns, worker -> rank number) of the stored analysis
        ``key`` (in memory or on disk); empty when there is none. Never computes an analysis."""
        if not key:
            return {}, {}, {}
        facts = self._facts.get(key)
        if facts is None:
            data = self.analyses.peek(key)
            if data is None:
                return {}, {}, {}
            msg = plugin_pb2.RunParallel.FromString(data)
            facts = ({r.worker: r.label for r in msg.ranks if r.label},
                     {r.worker: r.clock_offset_ns for r in msg.ranks if r.clock_offset_ns},
                     {r.worker: r.rank for r in msg.ranks})
            self._facts.put(key, facts)
        return facts

    def _labels(self, run: str) -> Dict[str, str]:
        """worker -> label from the run's last cross-rank analysis, when there is one (in memory or on disk)."""
        return self._analysis_facts(self._last_analysis.get(run))[0]

    def _clock(self, run: str, span: str, files: Optional[List[TraceFile]] = None) -> Dict[str, int]:
        """worker -> its host's clock offset from the cross-rank analysis of this run and span (the
        timeline draws every rank on the corrected clock: the span's analysis is read back, or made now
        when none is stored for its ranks as they are; each rank on its own clock only while a rank is
        still being parsed or when the analysis fails)."""
        del files  # the offsets come from every rank of the span, whichever are drawn
        if self.loader is None:
            return {}
        workers = self._snapshot().runs.get(run) or {}
        span_files = [f for f in run_assembly.span_files(workers, span) if not f.refused]
        states = self._states(span_files)
        if not span_files or any(run_assembly.blocking(states)):
            return {}  # a rank being parsed: the inputs of the offsets are not known yet
        ready = [t for t, st in zip(span_files, states) if st.state == READY]
        if not ready:
            return {}
        # Keyed by the inputs the offsets come from: a host's traces exported again (new keys) give
        # another key, whose analysis is made now rather than the old one's offsets applied.
        key = run_assembly.analysis_key(t.key for t in ready)
        if key != self._last_span_analysis.get((run, span)) and self.analyses.peek(key) is None:
            try:
                self.analyses.get(key, lambda: self._compute_analysis(ready, run, span))
            except Routes._Reloading:
                return {}
            except Exception:  # an offset is never worth a failed timeline: drawn on each rank's clock
                logger.exception("tb_paddle_profile: no clock offsets for %s span %s", _shown(run), _shown(span))
                return {}
            self._last_span_analysis[(run, span)] = key
        return self._analysis_facts(key)[1]

    def _digest_blobs(self, ready: List[TraceFile]) -> List[bytes]:
        digests = []
        for trace in ready:
            data = self._require_loader().digest_bytes(trace)
            if data is None:  # never an analysis without it (it would be stored as the run's)
                raise Routes._Reloading
            digests.append(data)
        return digests

    def _compute_analysis(self, ready: List[TraceFile], run: str, span: str):
        """The analysis of ``ready`` (runs.analysis_blobs, the matched instances apart), in the heavy
        worker process."""
        key = run_assembly.analysis_key(t.key for t in ready)
        return self._in_process(run_assembly.analysis_blobs, self._digest_blobs(ready), run, span, key)

    def _in_process(self, fn, *args):
        """``fn(*args)`` in the heavy worker process (HEAVY_PROCESSES: its pool queues the others), out of
        the request threads' GIL; on the heavy executor of this process when no process can be started."""
        with self._lock:
            pool = self._procs
            if pool is None and not self._procs_failed:
                try:
                    from tb_paddle_profile.core.pool import process_pool

                    pool = self._procs = process_pool(HEAVY_PROCESSES)
                except Exception:  # no process (resources, platform): computed in this process
                    logger.warning("tb_paddle_profile: no worker process for the cross-rank analyses; "
                                   "computing them in TensorBoard's process", exc_info=True)
                    self._procs_failed = True
        if pool is None:
            return self._heavy.run(getattr(fn, "__name__", "analysis"), lambda: fn(*args))
        try:
            return pool.submit(fn, *args).result()
        except concurrent.futures.process.BrokenProcessPool:  # the process died (memory?): once more, here
            with self._lock:
                if self._procs is pool:
                    self._procs = None
            logger.warning("tb_paddle_profile: the analyses' worker process died; computing %s here",
                           getattr(fn, "__name__", "it"))
            return self._heavy.run(getattr(fn, "__name__", "analysis"), lambda: fn(*args))

    def _prior_label(self, trace: TraceFile, rank: Optional[int] = None, ready: Optional[bool] = None) -> str:
        """The label before any analysis: analysis.crossrank.labels.prior_label of the rank's digest (when
        it is at hand; ``rank``: its number in Fleet's order when the name tells none), else the worker name."""
        label = self._prior(trace, rank, ready)[0]
        return label or trace.worker

    def _prior(self, trace: TraceFile, rank: Optional[int] = None, ready: Optional[bool] = None) -> Tuple[str, int]:
        """(the rank's prior label or "", its GPU or -1) from its digest, when it is loaded. ``ready``: whether
        the file is READY, when the caller has its state already (the run list: one lock for the run's files,
        not one per file that is not loaded yet, which the loader's dispatcher then queues behind)."""
        if rank is None or rank == trace.rank:
            rank = trace.rank if trace.rank >= 0 else None
        memo = (trace.key, rank)
        got = self._priors.get(memo)
        if got is not None:
            return got
        got = ("", -1)
        if ready is None:
            ready = self.loader is not None and self.loader.states([trace])[0].state == READY
        if self.loader is not None and ready:
            data = self.loader.digest_bytes(trace)
            if data is not None:
                try:
                    from tb_paddle_profile.analysis.crossrank.labels import prior_label

                    d = summary_pb2.RankDigest.FromString(data)
                    got = (prior_label(d.meta, d.device_id, rank), int(d.device_id))
                except Exception:  # a label is never worth a failed run list
                    logger.debug("tb_paddle_profile: no label for %s", trace.file_name, exc_info=True)
                self._priors.put(memo, got)
        return got

    @_handler
    def summary(self, request: Request) -> Response:
        trace = self._file(request, refused=True)
        fmt = _format(request)

        def build(data: bytes) -> bytes:
            return data if fmt == "pb" else _encode(summary_pb2.Summary.FromString(data), fmt)

        return self._from_summary(request, trace, fmt, ("summary", trace.key, fmt), _CTYPES[fmt], build)

    @_handler
    def display(self, request: Request) -> Response:
        """The display model of one rank (display/summary.py): every table of its views."""
        trace = self._file(request, refused=True)
        fmt = _format(request)
        sorted_by = _sorted_by(request)

        def build(data: bytes) -> bytes:
            from tb_paddle_profile.present.display.summary import summary_display

            return _encode(summary_display(summary_pb2.Summary.FromString(data), sorted_by=sorted_by), fmt)

        return self._from_summary(request, trace, fmt, ("display", trace.key, sorted_by, fmt), _CTYPES[fmt], build)

    @_handler
    def csv(self, request: Request) -> Response:
        """One display table as CSV (display/export.py): ``run, worker, span, view, table[, sorted_by]`` for a
        rank's table; ``run, span, view=parallel|distributed|whatif, table`` (no worker) for a run view's."""
        from tb_paddle_profile.present.display.export import to_csv

        view, key = _param(request, "view"), _param(request, "table")
        if view == "diff":  # a table of the `diff` answer, with its six parameters
            return self._diff_csv(request, key)
        if not request.args.get("worker") and view in ("parallel", "distributed", "whatif"):
            return self._run_csv(request, view, key)
        trace = self._file(request, refused=True)
        sorted_by = _sorted_by(request)
        name = f"{trace.file_name.split('.')[0]}.{view}.{key}.csv"

        def build(data: bytes) -> bytes:
            from tb_paddle_profile.present.display.summary import find_table, summary_display

            table = find_table(summary_display(summary_pb2.Summary.FromString(data), sorted_by=sorted_by), key, view)
            if table is None:
                raise HttpError(404, f"no table {_shown(key)} in view {_shown(view)} of {trace.file_name}")
            return to_csv(table).encode("utf-8")

        return self._from_summary(request, trace, "json", ("csv", trace.key, sorted_by, view, key), _CSV, build,
                                  [("Content-Disposition", _download_name(name))])

    def _run_csv(self, request: Request, view: str, key: str) -> Response:
        """A run view's table: the `parallel` / `distributed` answer (built and cached by those routes),
        its Display's table as CSV; their 202 while ranks load."""
        from tb_paddle_profile.present.display.export import to_csv
        from tb_paddle_profile.present.display.summary import find_table

        environ = dict(request.environ)
        environ.pop("HTTP_ACCEPT_ENCODING", None)  # the inner answer uncompressed
        inner = Request(environ)
        from ..v1 import whatif_pb2

        route, message = {"parallel": (Routes.parallel, plugin_pb2.RunParallel),
                          "whatif": (Routes.whatif, whatif_pb2.RunWhatIf)}.get(
                              view, (Routes.distributed, plugin_pb2.RunDistributed))
        answer = route.__wrapped__(self, inner)
        if answer.status_code != 200 and answer.status_code != 202:
            return answer
        body = message.FromString(answer.get_data())
        if answer.status_code == 202 or not body.HasField("display"):
            return _text(request, f"waiting for the ranks of run {_shown(body.run)} to load", 202,
                         [("Retry-After", "1")])
        table = find_table(body.display, key, view)
        if table is None:
            raise HttpError(404, f"no table {_shown(key)} in view {_shown(view)} of run {_shown(body.run)}")
        name = f"{view}.{body.span or 'span'}.{key}.csv"
        return respond(request, to_csv(table).encode("utf-8"), _CSV,
                       headers=[("Content-Disposition", _download_name(name))])

    def _from_summary(self, request: Request, trace: TraceFile, fmt: str, memo_key: tuple, ctype: str,
                      build: Callable[[bytes], bytes], headers: Optional[List[Tuple[str, str]]] = None) -> Response:
        """An answer built from the rank's Summary (memoized under memo_key); while it loads, 202 with its
        SpanEntry (in ``fmt``); 422 when it failed."""
        loader = self._require_loader()
        state = self._states([trace])[0]
        if state.state == READY:
            data = loader.summary_bytes(trace)
            if data is not None:
                loader.prioritize((), trace.run)
                self._prewarm_timelines(trace)
                return self._send(request, memo_key, ctype, lambda: build(data), headers)
            state = loader.state(trace)
        if state.state == FAILED:
            raise HttpError(422, state.error or f"{trace.file_name}: failed")
        loader.prioritize([trace], trace.run)
        entry = plugin_pb2.SpanEntry(span=trace.span, file_name=trace.file_name, file_size=trace.size,
                                     state=state.state, error=state.error, cached=state.cached,
                                     loading_since_unix_s=state.loading_since)
        return respond(request, _encode(entry, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])

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

    @_handler
    def distributed(self, request: Request) -> Response:
        run, span, files = self._run_span(request)
        fmt = _format(request)
        # part=summary: without the view's per-rank tables (what a folded Distributed view of many ranks
        # does not draw before its details are opened)
        part = _param(request, "part", required=False)
        if part not in ("", "summary"):
            raise HttpError(400, f"unknown part {_shown(part)} (summary, or none for every table)")
        self._require_loader()
        numbers = self._rank_numbers(run, self._run(self._snapshot(), request, refused=True)[1])
        files.sort(key=lambda f: (numbers.get(f.worker, 1 << 30), f.worker))
        states = self._states(files)
        blocks = run_assembly.blocking(states)
        if not any(b or st.state in (QUEUED, LOADING) for b, st in zip(blocks, states)):
            # Every rank settled: memoized under what the answer is made of (the files' versions and
            # states, the rank numbers, the analysis whose labels it shows), built once.
            memo = ("distributed", run, span, tuple(f.key for f in files), tuple((st.state, st.error) for st in states),
                    tuple(numbers.get(f.worker, f.rank) for f in files), self._last_analysis.get(run), part, fmt)
            try:
                return self._send(request, memo, _CTYPES[fmt],
                                  lambda: _encode(self._distributed(run, span, files, states, blocks, numbers, part,
                                                                    settled=True)[0], fmt))
            except Routes._Reloading:  # a READY rank's digest vanished: it is being loaded again
                states = self._states(files)
                blocks = run_assembly.blocking(states)
        out, waiting = self._distributed(run, span, files, states, blocks, numbers, part)
        return respond(request, _encode(out, fmt), _CTYPES[fmt], 202 if waiting else 200,
                       [("Retry-After", "1")] if waiting else [])

    def _distributed(self, run: str, span: str, files: List[TraceFile], states, blocks, numbers: Dict[str, int],
                     part: str, settled: bool = False):
        """(RunDistributed, the ranks it waits for); ``settled``: _Reloading instead of waiting."""
        loader = self._require_loader()
        out = plugin_pb2.RunDistributed(run=run, span=span)
        waiting = []
        for trace, state, block in zip(files, states, blocks):
            rank = out.ranks.add()
            encoded = self._rank_part(trace) if state.state == READY else None
            if encoded is not None:
                rank.MergeFromString(encoded)
            elif state.state == READY:  # its cache entry vanished; it is being loaded again
                if settled:
                    raise Routes._Reloading
                state = loader.state(trace)
            rank.worker, rank.state, rank.error = trace.worker, state.state, state.error
            rank.rank = numbers.get(trace.worker, trace.rank)
            rank.file_version = trace.key.digest()[:16]
            if block or state.state in (QUEUED, LOADING):
                waiting.append(trace)
        loader.prioritize(waiting, run)
        if not waiting:  # the Distributed view's tables, once every rank is ready (display/parallel.py)
            from tb_paddle_profile.present.display.parallel import distributed_display

            labels = dict(self._labels(run))  # the analysis's; before there is one, the prior labels (as the run list)
            labels.update({t.worker: self._prior_label(t, numbers.get(t.worker)) for t in files if t.worker not in labels})
            out.display.CopyFrom(distributed_display(out, labels))
            _add_missing(out.display, "distributed", run_assembly.missing_ranks(files, states))
            if part == "summary":
                for view in out.display.views:
                    del view.tables[:]
        return out, waiting

    class _Reloading(Exception):
        """A READY rank's cached digest was damaged or removed: it is being computed again."""

    def _analysis(self, request: Request, matched: bool = False):
        """(run, span, files, states, analysis key, serialized RunParallel) of the run and span named by
        the request, or a 202 Response while ranks load; see runs.RunAnalyses. ``matched``: the
        analysis's matched instances (MatchedTable bytes) instead of the RunParallel."""
        run, span, files = self._run_span(request)
        fmt = _format(request)
        loader = self._require_loader()
        states = self._states(files)
        waiting = [t for t, block in zip(files, run_assembly.blocking(states)) if block]
        if waiting:
            loader.prioritize(waiting, run)
            out = plugin_pb2.RunParallel(run=run, span=span)
            out.notes.append(f"waiting for {len(waiting)} of {len(files)} ranks to load")
            return respond(request, _encode(out, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        ready = [t for t, st in zip(files, states) if st.state == READY]
        key = run_assembly.analysis_key(t.key for t in ready)

        def compute():  # once per analysis key, in the heavy worker process
            return self._compute_analysis(ready, run, span)

        try:
            data = self.analyses.matched(key, compute) if matched else self.analyses.get(key, compute)
        except Routes._Reloading:
            out = plugin_pb2.RunParallel(run=run, span=span)
            out.notes.append("waiting for a rank whose cached digest is being computed again")
            return respond(request, _encode(out, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        self._last_analysis[run] = key
        self._last_span_analysis[(run, span)] = key
        return run, span, files, states, key, data

    @_handler
    def parallel(self, request: Request) -> Response:
        """The cross-rank hybrid-parallel analysis (RunParallel) of one run and span, summary first
        (without its matched instances: parallel_matched pages through them), once every rank is
        ready; 202 with a note while some are still loading."""
        got = self._analysis(request)
        if isinstance(got, Response):
            return got
        run, span, files, states, key, data = got
        fmt = _format(request)
        workers = self._run(self._snapshot(), request, refused=True)[1]
        notes = [f"left out: {st.error}" for st, t in zip(states, files) if st.state == FAILED]
        notes += run_assembly.duplicate_notes(workers, span)
        missing = run_assembly.missing_ranks(files, states)
        # part=summary: what the top of the Distributed view draws (the verdict, the findings, the
        # outliers, the rank grid) without the per-rank tables, step breakdowns and matrices, so that a
        # 1,024-rank page decodes a tenth of the answer before its first screen
        part = _param(request, "part", required=False)
        if part not in ("", "summary"):
            raise HttpError(400, f"unknown part {_shown(part)} (summary, or none for the whole analysis)")

        def build() -> bytes:
            out = run_assembly.summary_first(plugin_pb2.RunParallel.FromString(data), in_place=True)
            out.run, out.span = run, span
            out.notes.extend(notes)
            from tb_paddle_profile.present.display.parallel import parallel_display  # the view's tables and sentences (display.proto)

            out.display.CopyFrom(parallel_display(out))
            _add_missing(out.display, "parallel", missing)
            if part == "summary":
                _summary_part(out)
            return _encode(out, fmt)

        return self._send(request, ("parallel", key, run, span, tuple(notes), missing, part, fmt), _CTYPES[fmt], build)

    @_handler
    def rank_banner(self, request: Request) -> Response:
        """What the stored cross-rank analysis of the run and span says of one rank (display View
        "rank_banner", present/display/parallel.rank_banner): the straggler, a role peer of it, or no
        sentence. Only an analysis already stored (in memory or in the cache) for the span's ranks as
        they are is read; none is ever computed here, so while ranks load or before anyone opened the
        run views the answer is an empty view."""
        run, span, files = self._run_span(request)
        worker = _param(request, "worker")
        fmt = _format(request)
        from tb_paddle_profile.present.display.parallel import rank_banner
        from tb_paddle_profile.v1 import display_pb2

        states = self._states(files) if self.loader is not None else []
        ready = [t for t, st in zip(files, states) if st.state == READY]
        if not ready or any(run_assembly.blocking(states)):
            return respond(request, _encode(display_pb2.View(key="rank_banner"), fmt), _CTYPES[fmt])
        key = run_assembly.analysis_key(t.key for t in ready)
        data = self.analyses.peek(key)
        if data is None:  # not stored (yet): nothing to say, nothing memoized
            return respond(request, _encode(display_pb2.View(key="rank_banner"), fmt), _CTYPES[fmt])

        def build() -> bytes:
            return _encode(rank_banner(plugin_pb2.RunParallel.FromString(data), worker), fmt)

        return self._send(request, ("rank_banner", key, worker, fmt), _CTYPES[fmt], build)

    @_handler
    def parallel_matched(self, request: Request) -> Response:
        """A page of the analysis's matched instances (MatchedPage): ``rank`` (a member), ``step``,
        ``offset``, ``limit`` (at most runs.MATCHED_LIMIT)."""
        rank, step = _int(request, "rank"), _int(request, "step")
        offset, limit = _int(request, "offset") or 0, _int(request, "limit") or 100
        got = self._analysis(request, matched=True)
        if isinstance(got, Response):
            return got
        run, span, _, _, key, data = got
        fmt = _format(request)

        def build() -> bytes:
            page = run_assembly.matched_page(data, rank, step, offset, limit, run=run, span=span, analysis_key=key)
            return _encode(page, fmt)

        return self._send(request, ("matched", key, run, span, rank, step, offset, limit, fmt), _CTYPES[fmt],
                          build)

    @_handler
    def whatif(self, request: Request) -> Response:
        """The critical path across ranks and the what-if estimates (RunWhatIf, analysis/crossrank/whatif.py;
        docs/critical-path.md) of one run and span, once every rank is ready; 202 with a note while some
        load. MFU inputs: ``params``, ``tokens_per_step``, ``peak_tflops`` (numbers; no config file here)."""
        from ..v1 import whatif_pb2

        run, span, files = self._run_span(request)
        fmt = _format(request)
        mfu_args = {}
        for name in ("params", "tokens_per_step", "peak_tflops"):
            value = _param(request, name, required=False)
            if value:
                try:
                    mfu_args[name] = float(value)
                except ValueError:
                    raise HttpError(400, f"parameter '{name}' must be a number, not {_shown(value)}") from None
                if not mfu_args[name] > 0 or mfu_args[name] == float("inf"):
                    raise HttpError(400, f"parameter '{name}' must be a positive number")
        loader = self._require_loader()
        states = self._states(files)
        waiting = [t for t, block in zip(files, run_assembly.blocking(states)) if block]
        if waiting:
            loader.prioritize(waiting, run)
            out = whatif_pb2.RunWhatIf(run=run, span=span)
            out.notes.append(f"waiting for {len(waiting)} of {len(files)} ranks to load")
            return respond(request, _encode(out, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        ready = [t for t, st in zip(files, states) if st.state == READY]
        key = run_assembly.analysis_key(t.key for t in ready)
        notes = [f"left out: {st.error}" for st, t in zip(states, files) if st.state == FAILED]
        missing = run_assembly.missing_ranks(files, states)

        def compute() -> bytes:  # the digests are read only when the answer is neither in memory nor stored
            return self._in_process(run_assembly.whatif_blob, self._digest_blobs(ready), run, span, mfu_args)

        def build() -> bytes:
            # stored with the analysis (runs.whatif_name): the first open after a restart reads it back
            out = whatif_pb2.RunWhatIf.FromString(
                self.analyses.derived(run_assembly.whatif_name(key, run, span, mfu_args), compute))
            out.notes.extend(notes)
            _add_missing(out.display, "whatif", missing)
            return _encode(out, fmt)

        memo = ("whatif", key, run, span, tuple(sorted(mfu_args.items())), tuple(notes), missing, fmt)
        try:
            return self._send(request, memo, _CTYPES[fmt], build)
        except Routes._Reloading:
            out = whatif_pb2.RunWhatIf(run=run, span=span)
            out.notes.append("waiting for a rank whose cached digest is being computed again")
            return respond(request, _encode(out, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])

    @_handler
    def diff(self, request: Request) -> Response:
        """Two ranks or two runs compared (RunDiff, display/diff.py; docs/diff.md): ``baseline_run``,
        ``baseline_worker``, ``baseline_span`` and the same ``candidate_*`` (both workers empty: the two runs'
        cross-rank analyses), ``sorted_by``; each side looked up as the rank routes and ``parallel`` look it
        up; 202 with the sides while one loads."""
        from tb_paddle_profile.present.display.diff import rank_diff, run_diff
        from ..v1 import diff_pb2

        fmt, sorted_by = _format(request), _sorted_by(request)
        sides = [tuple(_param(request, f"{side}_{p}", required=p != "worker") for p in ("run", "worker", "span"))
                 for side in ("baseline", "candidate")]
        if sides[0][1] == PEERS_WORKER:
            return self._peers_diff(request, sides[1], fmt)
        if bool(sides[0][1]) != bool(sides[1][1]):
            raise HttpError(400, "give a worker on both sides (two ranks) or on neither (two runs)")
        inner = [self._side_request(request, run, worker, span) for run, worker, span in sides]
        waiting = diff_pb2.RunDiff(mode="rank" if sides[0][1] else "run")
        for msg, (run, worker, span) in zip((waiting.baseline, waiting.candidate), sides):
            msg.run, msg.worker, msg.span = run, worker, span
        if sides[0][1]:  # two ranks: their Summaries
            traces = [self._file(r) for r in inner]
            datas, labels = [], []
            for trace in traces:
                state = self._states([trace])[0]
                data = self.loader.summary_bytes(trace) if state.state == READY else None
                if state.state == FAILED:
                    raise HttpError(422, state.error or f"{trace.file_name}: failed")
                if data is None:
                    self.loader.prioritize([trace], trace.run)
                    waiting.alignment.append(f"waiting for {trace.file_name} to load")
                datas.append(data)
                number = self._rank_numbers(trace.run, self._snapshot().runs.get(trace.run) or {}).get(trace.worker)
                labels.append(self._labels(trace.run).get(trace.worker) or self._prior_label(trace, number))
            if any(d is None for d in datas):
                return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])

            def build_ranks() -> bytes:
                named = [(run, worker, span, label) for (run, worker, span), label in zip(sides, labels)]
                return _encode(rank_diff(*(summary_pb2.Summary.FromString(d) for d in datas), named,
                                         sorted_by=sorted_by), fmt)

            return self._send(request, ("diff", traces[0].key, traces[1].key, tuple(labels), sorted_by, fmt),
                              _CTYPES[fmt], build_ranks)
        got = [self._analysis(r) for r in inner]  # two runs: their cross-rank analyses (computed once, stored)
        for g, (run, _, span) in zip(got, sides):
            if isinstance(g, Response):
                waiting.alignment.append(f"waiting for the ranks of run {run} span {span} to load")
        if any(isinstance(g, Response) for g in got):
            return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])

        def build_runs() -> bytes:
            named = [(run, "", span, f"{run} span {span}") for run, _, span in sides]
            return _encode(run_diff(*(plugin_pb2.RunParallel.FromString(g[5]) for g in got), named), fmt)

        return self._send(request, ("diff", got[0][4], got[1][4], tuple(sides), fmt), _CTYPES[fmt], build_runs)

    def _peers_diff(self, request: Request, side: Tuple[str, str, str], fmt: str) -> Response:
        """The candidate rank against the median of its role peers (baseline_worker "~peers"; RunDiff mode
        "peers", present/display/diff.peers_diff): the peers from the run's cross-rank analysis (computed
        and stored as the parallel route does), each peer's Summary; 202 while any loads."""
        from tb_paddle_profile.analysis.peers import role_peers
        from tb_paddle_profile.present.display.diff import peers_diff
        from ..v1 import diff_pb2

        run, worker, span = side
        if not worker:
            raise HttpError(400, "the role peers' median is compared with one rank: give candidate_worker")
        waiting = diff_pb2.RunDiff(mode="peers")
        waiting.baseline.run, waiting.baseline.worker, waiting.baseline.span = run, PEERS_WORKER, span
        waiting.candidate.run, waiting.candidate.worker, waiting.candidate.span = run, worker, span
        got = self._analysis(self._side_request(request, run, "", span))
        if isinstance(got, Response):
            waiting.alignment.append(f"waiting for the ranks of run {run} span {span} to load")
            return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        key, rp = got[4], plugin_pb2.RunParallel.FromString(got[5])
        peers, where = role_peers(rp, worker)
        if not peers:
            raise HttpError(422, f"no role peers to compare this rank with ({where})")
        trace = self._file(self._side_request(request, run, worker, span))
        workers = self._snapshot().runs.get(run) or {}
        files = [trace] + [workers[p.worker][span] for p in peers if span in workers.get(p.worker, {})]
        states = self._states(files)
        if states[0].state == FAILED:
            raise HttpError(422, states[0].error or f"{trace.file_name}: failed")
        # a peer that cannot be read is left out (the median is of the others), never waited for
        files = [files[0]] + [t for t, st in zip(files[1:], states[1:]) if st.state != FAILED]
        states = [states[0]] + [st for st in states[1:] if st.state != FAILED]
        if len(files) < 2:
            raise HttpError(422, f"none of this rank's role peers ({where}) could be read")
        datas = [self.loader.summary_bytes(t) if st.state == READY else None for t, st in zip(files, states)]
        if any(d is None for d in datas):
            self.loader.prioritize([t for t, d in zip(files, datas) if d is None], run)
            waiting.alignment.append(f"waiting for {sum(d is None for d in datas)} summaries to load")
            return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        number = self._rank_numbers(run, workers).get(worker)
        label = self._labels(run).get(worker) or self._prior_label(trace, number)
        named = [(run, PEERS_WORKER, span, f"median of {len(files) - 1} role peers ({where})"),
                 (run, worker, span, label)]

        def build() -> bytes:
            summaries = [summary_pb2.Summary.FromString(d) for d in datas]
            read = {t.worker for t in files[1:]}
            return _encode(peers_diff(summaries[0], summaries[1:], named, where,
                                      [p.rank for p in peers if p.worker in read]), fmt)

        return self._send(request, ("diff.peers", key, tuple(t.key for t in files), label, fmt), _CTYPES[fmt],
                          build)

    @staticmethod
    def _side_request(request: Request, run: str, worker: str, span: str) -> Request:
        """A request naming one side of a comparison as the rank and run routes take it (run, worker, span)."""
        from urllib.parse import urlencode

        environ = dict(request.environ)
        query = {"run": run, "span": span, **({"worker": worker} if worker else {})}
        environ["QUERY_STRING"] = urlencode(query)
        environ.pop("HTTP_ACCEPT_ENCODING", None)
        return Request(environ)

    def _diff_csv(self, request: Request, key: str) -> Response:
        """A table of the `diff` answer as CSV; its 202 while a side loads."""
        from tb_paddle_profile.present.display.export import to_csv
        from tb_paddle_profile.present.display.summary import find_table
        from ..v1 import diff_pb2

        from urllib.parse import urlencode

        environ = dict(request.environ)
        environ.pop("HTTP_ACCEPT_ENCODING", None)  # the inner answer: uncompressed protobuf
        environ["QUERY_STRING"] = urlencode([(k, v) for k, v in request.args.items(multi=True) if k != "format"])
        answer = Routes.diff.__wrapped__(self, Request(environ))
        if answer.status_code != 200:
            return answer
        table = find_table(diff_pb2.RunDiff.FromString(answer.get_data()).display, key)
        if table is None:
            raise HttpError(404, f"no table {_shown(key)} in the comparison")
        return respond(request, to_csv(table).encode("utf-8"), _CSV,
                       headers=[("Content-Disposition", _download_name(f"diff.{key}.csv"))])

    def _rank_part(self, trace: TraceFile) -> Optional[bytes]:
        """A rank's RankDistributed, from its digest (never its whole Summary)."""
        with self._lock:
            part = self._ranks.get(trace.key)
        if part is not None:
            return part
        data = self.loader.digest_bytes(trace)
        if data is None:
            return None
        digest = summary_pb2.RankDigest.FromString(data)
        rank = plugin_pb2.RankDistributed(total_time_ns=digest.meta.total_time_ns)
        rank.distributed.CopyFrom(digest.distributed)
        rank.steps.extend(digest.steps)
        part = rank.SerializeToString()
        with self._lock:
            self._ranks.put(trace.key, part)
        return part

    def _open(self, trace: TraceFile):
        """(handle, size) of a trace file, opened under the path policy; HttpError when it cannot be."""
        fs = self.discovery.fs
        try:
            # Checked again on the open file: a file swapped for a link since the scan is refused too.
            handle = paths.open_checked(fs, trace.path, trace.root or self.discovery.root, trace.file_name)
        except TraceError as err:
            raise HttpError(403, str(err)) from None
        except FileNotFoundError:
            raise HttpError(404, f"{trace.file_name}: the file no longer exists") from None
        except Exception as err:  # the store's own errors (permissions, network)
            raise HttpError(502, f"{trace.file_name}: cannot read: {' '.join(str(err).split())[:200]}") from None
        try:
            return handle, (os.fstat(handle.fileno()).st_size if paths.is_local(fs) else fs.size(trace.path))
        except Exception as err:
            handle.close()
            if isinstance(err, FileNotFoundError):
                raise HttpError(404, f"{trace.file_name}: the file no longer exists") from None
            raise HttpError(502, f"{trace.file_name}: cannot read: {' '.join(str(err).split())[:200]}") from None

    @_handler
    def trace(self, request: Request) -> Response:
        trace = self._file(request)  # 403 for a file the path policy refuses
        handle, size = self._open(trace)
        headers = [
            ("Content-Disposition", _download_name(trace.file_name)),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-cache, must-revalidate"),
        ]
        if trace.gzipped:
            ctype, compress = "application/gzip", False
        else:
            ctype, compress = JSON, _accepts_gzip(request)
            headers.append(("Vary", "Accept-Encoding"))
        if compress:
            headers.append(("Content-Encoding", "gzip"))
        else:
            headers.append(("Content-Length", str(size)))
        stream = _FileStream(handle, size, compress)
        if request.method == "HEAD":
            stream.close()
            stream = []
        return Response(stream, headers=headers, content_type=ctype, direct_passthrough=True)

    @_handler
    def status(self, request: Request) -> Response:
        """The logdir, the loader's counts and statistics, and every file's state (``files=0``: without the
        list of files, whose size grows with the logdir's). Made again only when a scan, a state or a
        statistic changed: the requests in between get the same bytes."""
        if _param(request, "format", required=False) not in ("", "json"):
            raise HttpError(400, "the status route answers JSON only")
        listing = _param(request, "files", required=False).lower() not in ("0", "false", "no")
        snapshot = self._snapshot()
        loader = self.loader
        stats = dict(loader.stats) if loader is not None else {}
        key = (snapshot.generation, loader.version if loader is not None else 0, tuple(sorted(stats.items())),
               self.error)

        def build() -> bytes:
            names = plugin_pb2.LoadState.Name
            body = {
                "logdir": snapshot.logdir,
                "scanned_at": snapshot.scanned_at,
                "scan_error": snapshot.error or self.error,
                "workers": loader.max_workers if loader is not None else 0,
                "stats": stats,
            }
            if not listing:  # the loader's tally (its files are the scan's, refused ones FAILED)
                body["counts"] = dict(sorted(loader.counts().items())) if loader is not None else {}
                return json.dumps(body).encode("utf-8")
            files = snapshot.files
            states = self._states(files)
            body["counts"] = dict(sorted(collections.Counter(names(s.state) for s in states).items()))
            body["files"] = [
                {"run": f.run, "worker": f.worker, "span": f.span, "file_name": f.file_name, "file_size": f.size,
                 "state": names(s.state), "error": s.error, "cached": s.cached, "refused": f.refused}
                for f, s in zip(files, states)
            ]
            return json.dumps(body).encode("utf-8")

        return self._send_latest(request, ("status", listing), key, JSON, build)

    @_handler
    def asset(self, request: Request) -> Response:
        path = request.path
        marker = f"/{PLUGIN_NAME}/"
        name = path.split(marker, 1)[1] if marker in path else path.lstrip("/")
        found = self._static_file(name)
        if found is None:
            if name == "index.js":
                return respond(request, FALLBACK_MODULE, _TYPES[".js"])
            raise HttpError(404, f"not found: {_shown(name)}")
        suffix = found.suffix.lower()
        ctype = _TYPES.get(suffix) or mimetypes.guess_type(found.name)[0] or "application/octet-stream"
        headers = []
        if ctype.startswith("text/html"):
            headers.append(("Content-Security-Policy", "default-src 'self'"))
        stat = found.stat()
        # An ETag from the content's hash (memoized per size and mtime): the browser revalidates the
        # bundle on every load (Cache-Control: no-cache) and gets a bodyless 304 while it is unchanged.
        memo = ("asset", name, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            etag = self._etags.get(memo)
        if etag is None:
            etag = '"' + hashlib.sha256(found.read_bytes()).hexdigest()[:32] + '"'
            with self._lock:
                if len(self._etags) > 256:  # a handful of assets; rewritten files leave old keys
                    self._etags.clear()
                self._etags[memo] = etag
        headers.append(("ETag", etag))
        if _etag_matches(request.headers.get("If-None-Match", ""), etag):
            return Response(b"", status=304, headers=headers + [
                ("Cache-Control", "no-cache, must-revalidate"), ("Vary", "Accept-Encoding")])
        return self._send(request, memo, ctype, found.read_bytes, headers)

    def _static_file(self, name: str) -> Optional[Path]:
        """The bundled asset of that name; the table is rebuilt from the folder on a miss."""
        with self._lock:
            found = self._static.get(name)
        if found is not None and found.is_file():
            return found
        table: Dict[str, Path] = {}
        root = self.static_dir
        if root.is_dir():
            base = root.resolve()
            for folder, _, names in os.walk(base):
                for n in names:
                    p = Path(folder) / n
                    if p.is_file() and not p.is_symlink():
                        table[p.relative_to(base).as_posix()] = p
        with self._lock:
            self._static = table
        return table.get(name)

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
                    logging.getLogger(__name__).exception(
                        "tb_paddle_profile: %s: starting its timeline index failed", f.file_name)
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

    def _span_files(self, request: Request, many: str = "workers") -> Tuple[str, str, List[TraceFile]]:
        """The run's files of one span: all workers, or those named (comma-separated) in ``many``."""
        snapshot = self._snapshot()
        run, workers = self._run(snapshot, request)
        span = _param(request, "span")
        names = [w for w in _param(request, many, required=False, most=_MAX_LIST_PARAM).split(",") if w]
        for w in names:
            if w not in workers:
                raise HttpError(404, f"unknown worker {_shown(w)} in run {_shown(run)}")
        chosen = names or list(workers)
        files = [workers[w][span] for w in chosen if span in workers[w]]
        if not files:
            raise HttpError(404, f"unknown span {_shown(span)} in run {_shown(run)}")
        numbers = self._rank_numbers(run, workers)
        files.sort(key=lambda f: (numbers.get(f.worker, 1 << 30), f.worker))
        return run, span, files

    def _indexes(self, files: List[TraceFile]) -> list:
        store = self._timelines()
        return [(f,) + store.get(f) for f in files]

    @_handler
    def timeline(self, request: Request) -> Response:
        """Level-of-detail slices of a window (TimelineWindow); 202 while an index is being built."""
        run, span, files = self._span_files(request)
        fmt = _format(request)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        px = _int(request, "px") or 1000
        base = _int(request, "base_unix_ns")
        query = _param(request, "q", required=False, nul=True)
        flows = _param(request, "flows", required=False) in ("1", "true")
        # One page of ranks (timeline.WINDOW_MAX_RANKS, and WINDOW_MAX_BYTES of message): only the
        # indexes of that page are opened.
        offset = _int(request, "rank_offset") or 0
        total = len(files)
        if offset and offset >= total:
            raise HttpError(400, f"rank_offset {offset} is past the {total} ranks asked for")
        clock = self._clock(run, span, files)
        files = files[offset:offset + timeline.WINDOW_MAX_RANKS]
        ranks = self._indexes(files)
        building = any(state == "building" for _, _, state in ranks)
        if not building and all(idx is None for _, idx, _ in ranks):  # not one rank can be drawn: say why
            store = self._timelines()
            code = max(self._failure_code(store, f) for f, _, _ in ranks)
            raise HttpError(code, "; ".join(state for _, _, state in ranks))
        budget = timeline.WINDOW_MAX_BYTES - (64 << 10) - (timeline.FLOW_CAP * 48 if flows else 0)
        numbers = self._rank_numbers(run, self._run(self._snapshot(), request)[1])

        def build() -> bytes:
            msg = timeline.window_message(run, span, ranks, ws, we, px, base, query, flows, total, offset, budget,
                                          clock=clock)
            for r in msg.ranks:  # default worker names: the rank the run list gives them
                r.rank = numbers.get(r.worker, r.rank)
            return _encode(msg, fmt)

        if building or ws is not None or we is not None:  # a window panned or zoomed to: one user's
            body = self._heavy.run("timeline", build)
            return respond(request, body, _CTYPES[fmt], 202 if building else 200,
                           [("Retry-After", "1")] if building else [])
        # The whole span (the view every user opens first): memoized under all it is made of
        page = tuple((f.worker, f.key, state, clock.get(f.worker, 0), numbers.get(f.worker, f.rank))
                     for f, _, state in ranks)
        memo = ("timeline", run, span, page, total, offset, ws, we, px, base, query, flows, fmt)
        return self._send(request, memo, _CTYPES[fmt], build)

    @staticmethod
    def _failure_code(store, trace: TraceFile) -> int:
        """The status of a timeline that cannot be built: 422 a file that is not a usable trace, 503 the
        store or cache failing (retried later), 500 a bug of ours."""
        kind = (store.failure(trace) or ("transient", ""))[0]
        return {"trace": 422, "transient": 503, "bug": 500}.get(kind, 500)

    def _one_index(self, request: Request):
        trace = self._file(request)
        store = self._timelines()
        idx, state = store.get(trace)
        if idx is None:
            if state == "building":
                raise HttpError(503, f"{trace.file_name}: its timeline is being built; try again shortly")
            raise HttpError(self._failure_code(store, trace), state)
        return trace, idx

    @_handler
    def timeline_event(self, request: Request) -> Response:
        trace, idx = self._one_index(request)
        fmt = _format(request)
        ev = _int(request, "id")
        if ev is None or not 0 <= ev < len(idx.a["ev_start"]):
            raise HttpError(404, f"no event {_shown(_param(request, 'id', required=False))} in {trace.file_name}")
        msg = timeline.event_message(trace.worker, idx, ev, _int(request, "base_unix_ns"),
                                     clock=self._clock(trace.run, trace.span))
        return respond(request, _encode(msg, fmt), _CTYPES[fmt])

    @_handler
    def timeline_search(self, request: Request) -> Response:
        run, span, files = self._span_files(request)
        fmt = _format(request)
        query = _param(request, "q", nul=True)
        if not query:
            raise HttpError(400, "empty query")
        exact = _param(request, "exact", required=False) in ("1", "true")
        limit = max(1, min(_int(request, "limit") or timeline.MATCH_CAP, timeline.MATCH_CAP))
        base, whole = _int(request, "base_unix_ns"), self._whole_span(request, run, span)

        def answer():
            clock = self._clock(run, span, files)
            store = self._timelines()
            ri = store.run_index(whole)  # names -> ranks: no rank opened per request
            if ri is not None:
                return timeline.run_search_message(ri, files, query, exact, base, limit, clock=clock,
                                                   open_rank=lambda f: store.get(f)[0])
            ranks = [(f, idx) for f, idx, _ in self._indexes(files)]  # an index not ready: the ranks' own
            return timeline.search_message(ranks, query, exact, base, limit, clock=clock)

        return respond(request, _encode(self._heavy.run("timeline_search", answer), fmt), _CTYPES[fmt])

    def _whole_span(self, request: Request, run: str, span: str) -> List[TraceFile]:
        """Every file of the run's span (the run index covers them all; a request may name some)."""
        return run_assembly.span_files(self._run(self._snapshot(), request)[1], span)

    @_handler
    def timeline_range(self, request: Request) -> Response:
        run, span, files = self._span_files(request)
        fmt = _format(request)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        if ws is None or we is None or we < ws:
            raise HttpError(400, "start_ns and end_ns are required, start_ns <= end_ns")
        by_worker = {f.worker: f for f in files}
        tracks: Dict[str, Optional[List[int]]] = {}
        for item in [t for t in _param(request, "tracks", required=False).split(",") if t]:
            worker, _, tid = item.rpartition(":")
            if worker not in by_worker or not (tid.isascii() and tid.isdigit() and len(tid) <= 18):
                raise HttpError(400, f"invalid track {_shown(item)}: use worker:track")
            lst = tracks.setdefault(worker, [])
            if lst is not None:
                lst.append(int(tid))
        if not tracks:
            tracks = {w: None for w in by_worker}
        base, whole = _int(request, "base_unix_ns"), self._whole_span(request, run, span)

        def answer():
            clock = self._clock(run, span, files)
            store = self._timelines()
            ri = store.run_index(whole)  # ranks held whole or missed: not opened
            if ri is not None:
                return timeline.run_range_message(ri, files, ws, we, tracks, base, clock=clock,
                                                  open_rank=lambda f: store.get(f)[0])
            ranks = [(f, idx) for f, idx, _ in self._indexes(files)]
            return timeline.range_message(ranks, ws, we, tracks, base, clock=clock)

        return respond(request, _encode(self._heavy.run("timeline_range", answer), fmt), _CTYPES[fmt])

    @_handler
    def timeline_instance(self, request: Request) -> Response:
        """The matched collective instance the slice ``worker``/``id`` is a member of (TimelineInstance),
        from the run's cross-rank analysis (its matched table: nothing derived again), each member with its
        slice on the timeline; 202 while ranks load (timeline/members.py)."""
        from ..analysis.crossrank.encode import MatchedTable
        from ..timeline import members as tm

        trace, idx = self._one_index(request)
        ev = _int(request, "id")
        if ev is None or not 0 <= ev < len(idx.a["ev_start"]):
            raise HttpError(404, f"no event {_shown(_param(request, 'id', required=False))} in {trace.file_name}")
        got = self._analysis(request, matched=True)
        if isinstance(got, Response):
            return got
        run, span, files, _, key, data = got
        fmt = _format(request)
        table = MatchedTable.from_bytes(data)
        rank_of = {f.worker: f.rank for f in files}
        if any(r < 0 for r in rank_of.values()):  # ranks the analysis inferred: its own numbering
            rank_of = {r.worker: r.rank for r in plugin_pb2.RunParallel.FromString(self.analyses.peek(key) or b"").ranks}
        rank = rank_of.get(trace.worker, trace.rank)
        group = tm.instance_of(table, rank, idx.origin + int(idx.a["ev_start"][ev]))
        members, note = {}, ""
        if group is None:
            note = "not a member of a collective instance that the cross-rank analysis matched"
        else:
            by_rank = {r: f for f in files for r in [rank_of.get(f.worker, f.rank)]}
            # Only the indexes of the ranks shown (``workers``, default all) are opened for the members' slices.
            shown = {w for w in _param(request, "workers", required=False, most=_MAX_LIST_PARAM).split(",") if w} or None
            store = self._timelines()
            for r in table.rank[int(table.ptr[group]):int(table.ptr[group + 1])].tolist():
                f = by_rank.get(int(r))
                opened = f is not None and (shown is None or f.worker in shown or f.worker == trace.worker)
                members[int(r)] = (f.worker if f is not None else "", store.get(f)[0] if opened else None)
        msg = tm.instance_message(run, span, key, table, group, members, _int(request, "base_unix_ns"),
                                  clock=self._clock(run, span, files), note=note)
        return respond(request, _encode(msg, fmt), _CTYPES[fmt])

    @_handler
    def timeline_compact(self, request: Request) -> Response:
        """The compact multi-rank timeline (TimelineCompact, timeline/compact.py): one row of ``bins``
        bins per rank over one step (``step``, default the median one), each row aligned on its rank's
        start of the step (``align=step``) or on the first row's (``align=clock``); every rank in the
        server's order (the straggler and its role peers first), the rows of order[rank_offset :
        rank_offset + rank_limit] (at most compact.PAGE_ROWS: only their indexes are opened), the stored
        critical path on them. 202 while ranks load or indexes are built."""
        from ..timeline import compact

        run, span, files = self._span_files(request)
        fmt = _format(request)
        align = _param(request, "align", required=False) or "step"
        if align not in ("step", "clock", "collective"):
            raise HttpError(400, f"unknown align {_shown(align)} (step, clock or collective)")
        kind = _param(request, "kind", required=False)
        bins = _int(request, "bins") or 1000
        step, offset = _int(request, "step"), _int(request, "rank_offset") or 0
        limit = min(_int(request, "rank_limit") or 64, compact.PAGE_ROWS)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        got = self._analysis(request)
        if isinstance(got, Response):  # ranks still loading: a TimelineCompact that says so, no rows yet
            if got.status_code != 202:
                return got
            from ..v1 import timeline_pb2

            wait = timeline_pb2.TimelineCompact(run=run, span=span, align=align,
                                                note="waiting for the ranks to load (the order and the step come from "
                                                     "the cross-rank analysis)")
            return respond(request, _encode(wait, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        _, _, _, _, key, data = got
        with self._lock:
            facts = self._compact_facts.get(key)
        if facts is None:
            facts = compact.Facts(plugin_pb2.RunParallel.FromString(data))
            with self._lock:
                self._compact_facts.put(key, facts)
        place = {w: i for i, w in enumerate(facts.order)}
        files = [f for _, f in sorted(enumerate(files), key=lambda x: (place.get(x[1].worker, len(place)), x[0]))]
        if offset and offset >= len(files):
            raise HttpError(400, f"rank_offset {offset} is past the {len(files)} ranks")
        rows = self._indexes(files[offset:offset + limit])
        building = any(state == "building" for _, _, state in rows)
        first = self._timelines().get(files[0])[0] if align == "clock" else None
        blob = self.analyses.peek_derived(run_assembly.whatif_name(key, run, span, {}))

        def table():  # the matched instances, stored with the analysis (align "collective")
            from ..analysis.crossrank.encode import MatchedTable

            got = self._analysis(request, matched=True)  # stored with the RunParallel above: read, not computed
            return MatchedTable.from_bytes(got[5]) if not isinstance(got, Response) else MatchedTable.empty()

        def build() -> bytes:
            from ..v1 import whatif_pb2

            critical = whatif_pb2.RunWhatIf.FromString(blob) if blob is not None else None
            return _encode(compact.compact_message(run, span, key, facts, files, rows, offset, step, align, ws, we,
                                                   bins, critical, first, kind, table), fmt)

        body = self._heavy.run("timeline_compact", build)
        return respond(request, body, _CTYPES[fmt], 202 if building else 200,
                       [("Retry-After", "1")] if building else [])

    @staticmethod
    def _gzip_chunks(chunks) -> Iterator[bytes]:
        """The gzip stream of ``chunks``, compressed as they come."""
        deflate = zlib.compressobj(3, zlib.DEFLATED, 31)
        try:
            for chunk in chunks:
                out = deflate.compress(chunk)
                if out:
                    yield out
            yield deflate.flush()
        finally:
            chunks.close()

    @_handler
    def trace_window(self, request: Request) -> Response:
        """A Chrome-trace JSON of one worker's slices in a window, for Perfetto or chrome://tracing."""
        trace, idx = self._one_index(request)
        base = _int(request, "base_unix_ns")
        off = idx.origin - (idx.origin if base is None else base)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        ws = idx.start_ns if ws is None else ws - off
        we = idx.end_ns if we is None else we - off
        if we < ws:
            raise HttpError(400, "end_ns is before start_ns")
        # Bounded: the answer's size is estimated from the index (an upper bound) before anything is sent.
        events, upper = timeline.window_size(idx, ws, we, trace.file_name)
        limit = timeline.window_limit_bytes()
        if limit and upper > limit:
            raise HttpError(413, f"{trace.file_name}: the window holds {events:,} events, up to "
                                 f"{upper / (1 << 20):,.1f} MB of JSON, over the {limit / (1 << 20):,.4g} MB that "
                                 f"trace_window sends at most ({timeline.ENV_WINDOW_MAX_MB}): narrow the window "
                                 f"(zoom in) and download again")
        stem = trace.file_name[:-3] if trace.file_name.endswith(".gz") else trace.file_name
        stem = stem[:-5] if stem.endswith(".json") else stem
        name = f"{stem}.window_{max(ws, 0) // 1000}us_{max(we, 0) // 1000}us.json"
        headers = [("Content-Disposition", _download_name(name)), ("X-Content-Type-Options", "nosniff"),
                   ("Cache-Control", "no-cache, must-revalidate"), ("Vary", "Accept-Encoding")]
        # Streamed: one block of events is formatted at a time, whatever the window.
        chunks = timeline.chrome_chunks(idx, ws, we, trace.file_name)
        if _accepts_gzip(request):
            headers.append(("Content-Encoding", "gzip"))
            chunks = self._gzip_chunks(chunks)
        if request.method == "HEAD":
            chunks.close()
            chunks = []
        return Response(chunks, headers=headers, content_type=JSON, direct_passthrough=True)


_INT64 = (-(1 << 63), (1 << 63) - 1)
_TIME = (-(1 << 62), 1 << 62)  # ns (about 146 years either way): sums and differences of two stay in int64
_INT_RANGES = {
    "start_ns": _TIME,
    "end_ns": _TIME,
    "base_unix_ns": _TIME,
    "px": (1, 100_000),  # the width drawn, in pixels
    "id": (0, _INT64[1]),  # an event's index
    "limit": (1, 1_000_000),  # matches asked for (the route caps them further)
    "rank": (-1, 1 << 31),
    "step": (-(1 << 62), 1 << 62),
    "offset": (0, 1 << 40),
    "rank_offset": (0, 1 << 31),
    "rank_limit": (1, 1 << 31),
    "bins": (1, 100_000),
}
_DECIMAL = re.compile(r"-?[0-9]{1,20}")


# The tables of the parallel view that its summary draws (the rest are per rank: thousands of rows)
SUMMARY_TABLES = ("stragglers", "findings", "outliers", "advice_triggers", "topology")


def _summary_part(out: plugin_pb2.RunParallel) -> None:
    """RunParallel reduced in place to what the summary draws: every rank's totals and coordinates kept
    (the rank grid, the links), their per-step breakdowns, the matrices and the per-rank tables dropped."""
    for r in out.ranks:
        r.ClearField("step_breakdown")
        r.ClearField("kinds")
    for f in ("step_time", "exposed_communication", "memory"):
        out.ClearField(f)
    for view in out.display.views:
        keep = [t for t in view.tables if t.key in SUMMARY_TABLES]
        del view.tables[:]
        view.tables.extend(keep)


def _add_missing(display, view_key: str, text: Optional[str]) -> None:
    """Put the missing-ranks sentence (runs.missing_ranks) first in the view ``view_key`` of ``display``:
    key "missing", level "warning"; the panels show it as a banner above everything else."""
    if not text:
        return
    from tb_paddle_profile.v1 import display_pb2

    for view in display.views:
        if view.key == view_key:
            s = display_pb2.Sentence(key="missing", level="warning", title="Missing ranks")
            s.spans.add(text=text)
            view.sentences.insert(0, s)


def _int(request: Request, name: str) -> Optional[int]:
    """An optional integer parameter (None when absent): ASCII decimal digits, within the parameter's
    range (_INT_RANGES, else int64); 400 otherwise, so that no route meets an integer it cannot hold."""
    value = _param(request, name, required=False)
    if value == "":
        return None
    low, high = _INT_RANGES.get(name, _INT64)
    number = int(value) if _DECIMAL.fullmatch(value) else None
    if number is None or not low <= number <= high:
        raise HttpError(400, f"parameter '{name}' must be an integer from {low} to {high}, not {_shown(value)}")
    return number

