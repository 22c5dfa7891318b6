"""The routes of the logdir and the frontend: ``runs`` (the run list, each run's part made again only
when what it shows changed), ``status`` (the loader's counts and every file's state, JSON) and ``asset``
(the bundled frontend, with ETags; a fallback module when the bundle is not installed)."""

from __future__ import annotations

import collections
import hashlib
import json
import mimetypes
import os
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.pipeline.discovery import Snapshot, TraceFile
from tb_paddle_profile.pipeline.loader import READY
from tb_paddle_profile.present.display.files import group_files
from tb_paddle_profile.v1 import plugin_pb2

from .analyses import AnalysisBase
from .base import PLUGIN_NAME
from .gzparts import Deflated, gzip_pieces
from .http import (
    _CTYPES,
    _GZIP_MIN,
    JSON,
    HttpError,
    _accepts_gzip,
    _encode,
    _etag_matches,
    _format,
    _handler,
    _param,
    _shown,
    respond,
    respond_pieces,
)

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


_JSON_RUNS = b'"runs":[]'  # where the run entries go in the run list's JSON


class _RunPart:
    """One run's part of the run list: its serialized RunList holding that run alone, and made from it
    when first asked for, its JSON run entry and the gzip pieces of either (gzparts)."""

    __slots__ = ("key", "pb", "_json", "_gz")

    def __init__(self, key: tuple, pb: bytes):
        self.key, self.pb = key, pb
        self._json: Optional[bytes] = None
        self._gz: Dict[str, Deflated] = {}

    def body(self, fmt: str) -> bytes:
        if fmt == "pb":
            return self.pb
        if self._json is None:
            self._json = _encode(plugin_pb2.RunList.FromString(self.pb).runs[0], fmt)
        return self._json

    def deflated(self, fmt: str) -> Deflated:
        got = self._gz.get(fmt)
        if got is None:
            got = self._gz[fmt] = Deflated(self.body(fmt))
        return got


_COMMA = Deflated(b",")


class RunsRoutes(AnalysisBase):
    """runs, status, asset."""

    @_handler
    def runs(self, request: Request) -> Response:
        """The run list, as pieces: one per run, each made (and JSON-encoded, gzip-compressed) once per
        version of its run and shared by the answers until it changes; a state change costs its run's
        piece, then a join of the others by reference, not the bytes of the whole list."""
        fmt = _format(request)
        if _param(request, "refresh", required=False) and self.discovery is not None:
            self.discovery.request_scan()
        snapshot = self._snapshot()
        version = self.loader.version if self.loader is not None else 0
        gz = _accepts_gzip(request)
        # the labels come from the runs' last analyses: a new analysis is a new run list
        key = (snapshot.generation, version, tuple(sorted(self._last_analysis.items())))
        slot = ("runs", fmt, gz)
        with self._lock:
            hit = self._latest.get(slot)
        if hit is None or hit[0] != key:
            hit = (key, *self._run_list_pieces(snapshot, fmt, gz))
            with self._lock:
                self._latest[slot] = hit
        return respond_pieces(request, hit[1], _CTYPES[fmt], gzipped=hit[2])

    def _run_list_pieces(self, snapshot: Snapshot, fmt: str, gz: bool) -> Tuple[List[bytes], bool]:
        """(the answer as byte strings to send in order, whether they are gzip-compressed): the bytes of
        ``_encode(_run_list(snapshot), fmt)`` (protobuf: repeated fields concatenate; JSON: the run
        entries between the list's head and tail, comma-separated), compressed when ``gz`` and worth it."""
        parts = self._run_parts_of(snapshot)
        if fmt == "pb":
            head = plugin_pb2.RunList(logdir=snapshot.logdir).SerializeToString()
            tail = plugin_pb2.RunList(scanned_at=snapshot.scanned_at).SerializeToString()
        else:
            whole = _encode(plugin_pb2.RunList(logdir=snapshot.logdir, scanned_at=snapshot.scanned_at), fmt)
            at = whole.index(_JSON_RUNS) + len(_JSON_RUNS) - 1  # the logdir's quotes are escaped: never it
            head, tail = whole[:at], whole[at:]
        sep = b"," if fmt == "json" else b""
        raw = [head]
        for i, part in enumerate(parts):
            if sep and i:
                raw.append(sep)
            raw.append(part.body(fmt))
        raw.append(tail)
        if not gz or sum(map(len, raw)) < _GZIP_MIN:
            return raw, False
        pieces = [Deflated(head)]
        for i, part in enumerate(parts):
            if sep and i:
                pieces.append(_COMMA)
            pieces.append(part.deflated(fmt))
        pieces.append(Deflated(tail))
        return gzip_pieces(pieces), True

    def _run_parts_of(self, snapshot: Snapshot) -> List["_RunPart"]:
        """Each run's part of the run list, made again only when a state shown for one of its files
        changed (Loader.run_version), a new scan listed its files otherwise, or a new analysis of the run
        came: a file that changes state costs its run's files, not every file of the logdir."""
        parts, kept = [], {}
        prints = self._run_prints(snapshot)
        version = self.loader.run_versions() if self.loader is not None else (lambda run: 0)
        for run, workers in snapshot.runs.items():
            key = (prints[run], version(run), self._last_analysis.get(run))
            with self._lock:
                got = self._run_parts.get(run)
            if got is None or got.key != key:
                part = plugin_pb2.RunList()
                self._run_entry(part.runs.add(run=run), run, workers)
                got = _RunPart(key, part.SerializeToString())
            kept[run] = got
            parts.append(got)
        with self._lock:
            self._run_parts = kept
        return parts

    def _run_prints(self, snapshot: Snapshot) -> Dict[str, int]:
        """run -> a hash of its files as the scan lists them (every field of each TraceFile), computed once
        per scan: a scan that found a run as it was leaves that run's part of the run list as it is."""
        with self._lock:
            got = self._prints
        if got is None or got[0] != snapshot.generation:
            got = (
                snapshot.generation,
                {
                    run: hash(tuple((worker, tuple(spans.items())) for worker, spans in workers.items()))
                    for run, workers in snapshot.runs.items()
                },
            )
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
            label = labels.get(worker) or self._prior_label(
                first, numbers.get(worker), states[worker, next(iter(spans))].state == READY
            )
            w = entry.workers.add(
                worker=worker, rank=numbers.get(worker, first.rank), hostname=first.hostname, pid=first.pid, label=label
            )
            for span, trace in spans.items():
                st = states[worker, span]
                w.spans.add(
                    span=span,
                    file_name=trace.file_name,
                    file_size=trace.size,
                    state=st.state,
                    error=st.error,
                    cached=st.cached,
                    loading_since_unix_s=st.loading_since,
                )
        group_files(entry)

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
        key = (
            snapshot.generation,
            loader.version if loader is not None else 0,
            tuple(sorted(stats.items())),
            self.error,
        )

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
                {
                    "run": f.run,
                    "worker": f.worker,
                    "span": f.span,
                    "file_name": f.file_name,
                    "file_size": f.size,
                    "state": names(s.state),
                    "error": s.error,
                    "cached": s.cached,
                    "refused": f.refused,
                }
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
            return Response(
                b"",
                status=304,
                headers=headers + [("Cache-Control", "no-cache, must-revalidate"), ("Vary", "Accept-Encoding")],
            )
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
