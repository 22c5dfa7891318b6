"""Find runs, workers and spans under a logdir, local or remote, without parsing any trace.

Every folder that holds ``*.paddle_trace.json`` or ``*.paddle_trace.json.gz`` is a run, named by its path
relative to the logdir (``.`` for the logdir itself). The worker, host, pid and rank come from the file
name; the span from the first few KB of the file (one ranged read), never from a full parse.

Which files form a run, a worker and a span, and which file a worker that exported a span twice
stands for (the latest export), is decided by :func:`tb_paddle_profile.pipeline.runs.assemble`, the same for
the CLI.

A background thread rescans periodically, so runs and spans written during training appear without a
restart. Each scan is published as an immutable :class:`Snapshot`; request threads only ever read the
latest one. A file whose size or version changed since the previous scan is marked ``changed``: it is
still being written, and the loader waits for it to settle.

The path policy of :mod:`tb_paddle_profile.core.paths` is applied to every listed file of a local logdir: a
file it refuses (a link leading outside the logdir or nowhere, a FIFO, a device, ...) is still listed,
so that the user sees why, with the reason in ``TraceFile.refused``; nothing of it is read (not even its
head), and the loader shows it FAILED with that reason. Folders that are symbolic links are not walked
(fsspec's local listing does not descend into them), so a link out of the logdir or a link loop is never
followed; a linked file is listed with its target's size and modification time.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import posixpath
import re
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

import fsspec

from tb_paddle_profile.core import paths
from tb_paddle_profile.pipeline import runs as runs_mod
from tb_paddle_profile.store.cache import CacheKey
from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.core.naming import is_trace_file, parse_file_name
from tb_paddle_profile.trace.reader import peek_span
from tb_paddle_profile.core import terminal

logger = terminal.logger(__name__)

HEAD_BYTES = 8192
HEAD_BATCH = 512  # heads read and turned into spans at a time: a scan of N new files holds 512 heads, not N
MIN_SCAN_GAP_S = 2.0
SLOW_SCAN_FACTOR = 5
UNKNOWN_SPAN = "?"
# Keys under which fsspec implementations report a content identity, best first.
_VERSION_KEYS = ("ETag", "etag", "md5Hash", "generation", "version_id", "VersionId")
_TIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "modified", "mtime_ns", "created", "timeCreated")


@dataclass(frozen=True)
class TraceFile:
    """One trace file: one worker's one span of one run."""

    run: str
    worker: str
    span: str
    file_name: str
    path: str  # the store's own path; internal, never built from a request
    source: str  # protocol-qualified location, for cache keys
    size: int
    version: str
    mtime: Optional[float]
    rank: int = -1
    hostname: str = ""
    pid: int = -1
    export_time: str = ""
    changed: bool = False  # size or version differ from the previous scan
    refused: str = ""  # why the path policy (paths.py) forbids reading it; "" when it may be read
    root: str = ""  # the logdir as the store names it: the `root` for paths.open_checked/read_checked
    recorded_span: str = ""  # the span the trace records (`span` may be "<span>@1": runs.assemble)

    @functools.cached_property
    def key(self) -> CacheKey:
        """Made once per TraceFile (kept in its __dict__, not a field): the loader, the routes and the
        queue ask for it per file many times a second, and a new key per ask is a measurable share of
        the server's time at 100,000 files."""
        return CacheKey(self.source, self.size, self.version)

    @property
    def gzipped(self) -> bool:
        return self.file_name.endswith(".gz")


@dataclass(frozen=True)
class Snapshot:
    """The result of one scan: run -> worker -> span -> file, in display order."""

    logdir: str
    scanned_at: float = 0.0  # 0 until the first scan completes
    runs: Mapping[str, Mapping[str, Mapping[str, TraceFile]]] = field(default_factory=dict)
    error: str = ""  # why the last listing failed, if it did (the files of the scan before are kept)
    generation: int = 0

    @property
    def files(self) -> List[TraceFile]:
        return [f for workers in self.runs.values() for spans in workers.values() for f in spans.values()]


def _as_epoch(value) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return value.timestamp()
    if isinstance(value, (int, float)):
        value = float(value)
        if value > 1e17:  # nanoseconds
            return value / 1e9
        if value > 1e11:  # milliseconds
            return value / 1e3
        return value
    if isinstance(value, str):
        try:
            return _as_epoch(_dt.datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            try:
                return _as_epoch(float(value))
            except ValueError:
                return None
    return None


def file_identity(info: Mapping) -> Tuple[str, Optional[float]]:
    """(version, mtime) of a listing entry: an ETag-like identity when the store has one, else the time."""
    mtime = None
    for k in _TIME_KEYS:
        if info.get(k) is not None:
            mtime = _as_epoch(info[k])
            if mtime is not None:
                break
    for k in _VERSION_KEYS:
        if info.get(k):
            return str(info[k]).strip('"'), mtime
    return (repr(mtime) if mtime is not None else ""), mtime


def parse_logdir_spec(spec: str) -> List[Tuple[str, str]]:
    """(group name, folder) of each entry of TensorBoard's ``--logdir_spec`` (``name:/path,/other``).

    TensorBoard's rules: entries are split at commas; ``name:path`` names a group unless the entry is a
    URL (``s3://...``), starts with ``/`` (``/a:b`` is a path with a colon) or has a drive letter; local
    paths are expanded (``~``) and made real. An entry without a name is named after its folder's last
    component when the spec has several entries, and has no name (its runs named as with ``--logdir``)
    when it is the only one. Two entries of the same name are told apart by " (2)", " (3)", ...
    """
    uri = re.compile(r"[a-zA-Z][0-9a-zA-Z.]*://")
    parsed: List[Tuple[Optional[str], str]] = []
    for entry in (spec or "").split(","):
        entry = entry.strip()
        if not entry:
            continue
        name: Optional[str] = None
        path = entry
        if uri.match(entry) is None and ":" in entry and entry[0] != "/" and not os.path.splitdrive(entry)[0]:
            name, _, path = entry.partition(":")
            name = name.strip().strip("/") or None
        if uri.match(path) is None:
            path = os.path.realpath(os.path.expanduser(path))
        parsed.append((name, path))
    out: List[Tuple[str, str]] = []
    taken: Dict[str, int] = {}
    for name, path in parsed:
        if name is None:
            name = "" if len(parsed) == 1 else (posixpath.basename(path.rstrip("/")) or path)
        count = taken.get(name, 0) + 1
        taken[name] = count
        out.append((name if count == 1 else f"{name} ({count})", path))
    return out


class Discovery:
    """Scans one logdir, or the folders of a ``--logdir_spec`` (``groups``), through fsspec; read-only.

    With groups, each folder's runs are named ``<group>/<run>`` (``<group>`` for the folder itself), as
    TensorBoard names the runs of a spec; each file keeps its own folder as its ``root``, the boundary
    of the path policy. The folders must lie on one filesystem (the first entry's); an entry on another
    is left out and named in ``problems``.
    """

    def __init__(self, logdir: str, interval: Optional[float] = 30.0, groups: Optional[List[Tuple[str, str]]] = None):
        self.logdir = logdir
        entries = groups if groups else [("", logdir)]
        self.roots: List[Tuple[str, str]] = []  # (group name, root as the store names it)
        self.problems: List[str] = []
        self.fs: Any = None  # the fsspec filesystem of the first entry (there is always one)
        for group, folder in entries:
            url = folder
            if "://" not in url and "::" not in url:
                url = os.path.abspath(os.path.expanduser(url))
            # Credentials and endpoints come from each store's usual environment and from fsspec's config.
            fs, root = fsspec.core.url_to_fs(url)
            if self.fs is None:
                self.fs = fs
            elif type(fs) is not type(self.fs):
                self.problems.append(f"{folder}: not on the filesystem of {entries[0][1]} (left out)")
                continue
            self.roots.append((group, root.rstrip("/") or "/"))
        self.root = self.roots[0][1]
        self.local = paths.is_local(self.fs)
        self.interval = interval
        self._snapshot = Snapshot(logdir=logdir)
        self._known: Dict[str, Tuple[int, str, Optional[str]]] = {}  # path -> (size, version, span)
        self._listeners: List[Callable[[Snapshot], None]] = []
        self._scan_lock = threading.Lock()
        self._first = threading.Event()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    @classmethod
    def from_spec(cls, spec: str, interval: Optional[float] = 30.0) -> "Discovery":
        """The folders of TensorBoard's ``--logdir_spec`` (see :func:`parse_logdir_spec`)."""
        groups = parse_logdir_spec(spec)
        if not groups:
            raise ValueError(f"--logdir_spec {spec!r} names no folder")
        return cls(spec, interval, groups=groups)

    # ---------------------------------------------------------------- public
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def subscribe(self, listener: Callable[[Snapshot], None]) -> None:
        """``listener(snapshot)`` runs on the scanning thread after every scan."""
        self._listeners.append(listener)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="paddle-profile-scan", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def request_scan(self) -> None:
        """Ask the background thread for a scan now; returns at once."""
        self._wake.set()

    def wait_first_scan(self, timeout: Optional[float]) -> bool:
        return self._first.wait(timeout)

    def scan(self) -> Snapshot:
        """List the logdir, read the heads of new files, publish and return the snapshot."""
        with self._scan_lock:
            snapshot = self._scan_once()
            # Listeners first, so that a published snapshot always has its files' states.
            for listener in list(self._listeners):
                try:
                    listener(snapshot)
                except Exception:  # a listener's bug must not stop discovery
                    logger.exception("tb_paddle_profile: scan listener failed")
            self._snapshot = snapshot
            self._first.set()
        return snapshot

    # -------------------------------------------------------------- internal
    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.scan()
            except Exception:
                logger.exception("tb_paddle_profile: scan of %s failed", self.logdir)
            if self.interval is None:
                return
            took = time.monotonic() - started
            # A large bucket that takes long to list is listed less often, so scans never dominate.
            self._wake.wait(max(self.interval, SLOW_SCAN_FACTOR * took))
            self._wake.clear()
            # Scans asked for by requests come at most every MIN_SCAN_GAP_S.
            self._stop.wait(max(0.0, started + MIN_SCAN_GAP_S - time.monotonic()))

    def _list(self) -> List[Tuple[str, str, str, Mapping]]:
        """(run, path, root, listing entry) of every trace file under every root."""
        self.fs.invalidate_cache()
        out = []
        for group, root in self.roots:
            if not self.fs.exists(root):
                continue
            found = self.fs.find(root, withdirs=False, detail=True)
            for p, info in found.items():
                if not is_trace_file(posixpath.basename(p)):
                    continue
                run = self._run_name(p, root, group)
                if run is not None:
                    out.append((run, p, root, info))
        return out

    @staticmethod
    def _run_name(path: str, root: str, group: str = "") -> Optional[str]:
        parent = posixpath.dirname(path)
        if parent == root:
            rel = "."
        else:
            prefix = root if root.endswith("/") else root + "/"
            if not parent.startswith(prefix):
                return None
            rel = parent[len(prefix) :]
        if not group:
            return rel
        return group if rel == "." else f"{group}/{rel}"

    def _checked(self, path: str, info: Mapping, root_real: str) -> Tuple[str, Mapping]:
        """(why the path policy refuses the file or "", its listing entry). A local link that may be
        read is described by its target: fsspec gives the target's size but the link's own mtime, which
        would hide a rewrite of the target."""
        if not self.local:
            return "", info
        reason = paths.refusal(self.fs, path, root_real) or ""
        if not reason and info.get("islink"):
            try:
                st = os.stat(path)
                info = dict(info, size=st.st_size, mtime=st.st_mtime)
            except OSError:
                pass
        return reason, info

    def _read_heads(self, entries: List[Tuple[str, int, str]]) -> Tuple[Dict[str, bytes], Dict[str, str]]:
        """The first bytes of each file, and the files refused when opened (swapped since the check)."""
        if not entries:
            return {}, {}
        if self.local:
            heads, refused = {}, {}
            for path, size, root in entries:
                try:
                    with paths.open_checked(self.fs, path, root, posixpath.basename(path)) as handle:
                        heads[path] = handle.read(min(HEAD_BYTES, size))
                except TraceError as err:
                    refused[path] = err.reason
                except OSError as err:  # gone or unreadable: its span stays unknown, the loader says why
                    logger.debug("tb_paddle_profile: cannot read the head of %s: %s", path, err)
            return heads, refused
        names = [p for p, _, _ in entries]
        ends = [min(HEAD_BYTES, size) for _, size, _ in entries]
        try:
            # Async stores (s3, gcs, http) fetch all the ranges concurrently.
            heads = self.fs.cat_ranges(names, [0] * len(names), ends, on_error="return")
        except Exception as err:
            logger.warning("tb_paddle_profile: reading trace heads failed: %s", err)
            return {}, {}
        return {p: h for p, h in zip(names, heads) if isinstance(h, bytes)}, {}

    def _scan_once(self) -> Snapshot:
        previous = self._snapshot
        try:
            listing = self._list()
        except Exception as err:
            message = " ".join(str(err).split()) or type(err).__name__
            logger.warning("tb_paddle_profile: cannot list %s: %s", self.logdir, message)
            return Snapshot(previous.logdir, time.time(), previous.runs, message, previous.generation + 1)

        entries = []
        real = {root: paths.real_root(root) if self.local else root for _, root in self.roots}
        for run, path, root, info in listing:
            refused, info = self._checked(path, info, real[root])
            size = int(info.get("size") or 0)
            version, mtime = file_identity(info)
            entries.append((run, path, size, version, mtime, refused, root))

        need_head = []
        asked = set()
        for run, path, size, version, _, refused, root in entries:
            known = self._known.get(path)
            if refused or path in asked:
                continue  # nothing of a refused file is read, not even its head
            if size > 0 and (known is None or (known[2] is None and known[:2] != (size, version))):
                need_head.append((path, size, root))
                asked.add(path)
        spans_read: Dict[str, Optional[str]] = {}
        late: Dict[str, str] = {}
        for i in range(0, len(need_head), HEAD_BATCH):  # (100,000 new files: 0.8 GB of heads if read at once)
            heads, refused_now = self._read_heads(need_head[i : i + HEAD_BATCH])
            late.update(refused_now)
            spans_read.update((path, peek_span(head)) for path, head in heads.items())
            del heads

        known_now: Dict[str, Tuple[int, str, Optional[str]]] = {}
        traces: List[TraceFile] = []
        for run, path, size, version, mtime, refused, root in entries:
            refused = refused or late.get(path, "")
            known = self._known.get(path)
            if refused:
                span = None
                known = None  # its span is not remembered: it is read afresh once the file may be read
            elif path in spans_read:
                span = spans_read[path]
            else:
                span = known[2] if known else None
            if not refused:
                known_now[path] = (size, version, span)
            name = posixpath.basename(path)
            parsed = parse_file_name(name)
            trace = TraceFile(
                run=run,
                worker=parsed.worker,
                span=span if span else UNKNOWN_SPAN,
                file_name=name,
                path=path,
                source=self.fs.unstrip_protocol(path),
                size=size,
                version=version,
                mtime=mtime,
                rank=parsed.rank,
                hostname=parsed.hostname,
                pid=parsed.pid,
                export_time=parsed.export_time,
                changed=known is not None and known[:2] != (size, version),
                refused=refused,
                root=root,
                recorded_span=span if span else UNKNOWN_SPAN,
            )
            traces.append(trace)
        self._known = known_now
        return Snapshot(previous.logdir, time.time(), runs_mod.assemble(traces), "", previous.generation + 1)


# ------------------------------------------------------------------ the CLI's files


def local_traces(target: str) -> Tuple[object, Optional[str], List]:
    """(fs, root, files) of what a CLI command reads: every trace under the folder ``target`` (one run,
    named "."; the folder is the path policy's root, as for the tab) or the one file named (followed
    wherever it leads; root None). The files carry the cache keys the plugin gives them."""
    if os.path.isdir(target):
        d = Discovery(target, interval=None)
        snap = d.scan()
        if snap.error:
            raise OSError(snap.error)
        files = [replace(f, run=".", span=f.recorded_span or f.span) for f in snap.files]
        runs = runs_mod.assemble(files)
        return d.fs, d.root, [f for spans in runs.get(".", {}).values() for f in spans.values()]
    import fsspec

    fs, path = fsspec.core.url_to_fs(os.path.abspath(target))
    name = os.path.basename(path)
    try:
        st = os.stat(path)
        size = st.st_size
        version, mtime = file_identity({"mtime": st.st_mtime})
    except OSError:
        size, version, mtime = 0, "", None
    span = _head_span(path)
    w = parse_file_name(name)
    f = TraceFile(
        run=".",
        worker=w.worker,
        span=span,
        file_name=name,
        path=path,
        source=fs.unstrip_protocol(path),
        size=size,
        version=version,
        mtime=mtime,
        rank=w.rank,
        hostname=w.hostname,
        pid=w.pid,
        export_time=w.export_time,
        root="",
        recorded_span=span,
    )
    return fs, None, [f]


def _head_span(path: str) -> str:
    from tb_paddle_profile.core.paths import open_checked
    from tb_paddle_profile.trace.reader import peek_span

    try:
        with open_checked(None, path, None) as f:
            return peek_span(f.read(8192)) or "?"
    except Exception:  # a FIFO, a device, gone: the job says why
        return "?"
