"""The summary cache: a trace is parsed once, its serialized ``Summary`` is kept.

An entry is keyed by the trace's location, size and modification time (or ETag), the tool's version and
a fingerprint of the summary schema, so a changed trace or a new release never reads a stale summary.
Entries live in a local folder (default ``~/.cache/tb_paddle_profile``; env ``TB_PADDLE_PROFILE_CACHE``
moves it, ``off`` disables it). Optionally, and only when asked (``TB_PADDLE_PROFILE_SIDECAR=1``), a
sidecar file next to the trace holds the same entry, so a team sharing a logdir parses each trace once.

A failure (a trace that is not usable) is cached too, so that a restart does not parse it again.
Every write is atomic: a temporary file in the same folder, flushed to disk (fsync), then a rename (a single
PUT on object stores). Every entry carries a checksum (blake2b of its header and body) and its body's
length: an entry that is cut short, has flipped bytes or is not an entry at all is a miss, never served;
a damaged cache entry is deleted (logged once) and the trace summarized again, a damaged sidecar is
ignored and rewritten.

The folder is bounded (``TB_PADDLE_PROFILE_CACHE_MAX_MB``, default 8192; 0: unbounded): after writes, the
least recently used entries (summaries and timeline indexes; a read refreshes an entry's modification
time) are deleted until the folder is back under 90 % of the bound. Only the tool's own entry files are
ever deleted.

This module holds the key, the entry's layout and checks, the sidecars and ``SummaryCache``; the atomic
writes and damaged entries are store/files.py's, the bound store/trim.py's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Optional, Tuple

from tb_paddle_profile.core import settings
from tb_paddle_profile.core.version import __version__
from tb_paddle_profile.analysis.summarize import SUMMARY_SCHEMA
from tb_paddle_profile.store.files import atomic_write, discard, log_once, touch
from tb_paddle_profile.store.trim import Trimmer
from tb_paddle_profile.v1 import summary_pb2
from tb_paddle_profile.core import terminal

logger = terminal.logger(__name__)

ENV_CACHE_DIR = settings.CACHE_DIR
ENV_SIDECAR = settings.SIDECAR
TIMELINE_FOLDER = "timeline-v3"  # = timeline.INDEX_VERSION's folder (checked there)
DIGEST_FOLDER = "digest-v1"
ANALYSIS_FOLDER = "analysis-v1"
SIDECAR_SUFFIX = ".tb_paddle_profile.pb"
# Entry layout 2: magic, the checksum line (hex blake2b-128 of header line + body), the JSON header line
# (with the body's length), the body. Layout 1 had no checksum: its files (in ``v1/``, with another magic)
# are never read, only trimmed away by the bound like any old entry.
LAYOUT = 2
_MAGIC = b"TBPPSUM2\n"
_CHECK_LEN = 32
_MAX_HEADER = 1 << 16
MAX_SIDECAR_BYTES = 1 << 30  # a "sidecar" larger than this is not one of ours: ignored
_DISABLED = {"off", "none", "0", "false", "no"}


@functools.lru_cache(maxsize=1)
def schema_fingerprint() -> str:
    """The engine's summary schema number and a digest of summary.proto: a change of either retires
    every entry, so an old entry is never read as a new summary."""
    proto = hashlib.sha256(summary_pb2.DESCRIPTOR.serialized_pb).hexdigest()[:12]
    return f"{SUMMARY_SCHEMA}-{proto}"


@dataclass(frozen=True)
class CacheKey:
    """What identifies one version of one trace file."""

    source: str  # protocol-qualified location, e.g. "file:///…/x.paddle_trace.json" or "s3://b/k"
    size: int
    version: str  # ETag, generation or modification time, as the store reports it

    def header(self, ok: bool, error: str = "") -> dict:
        return {
            "source": self.source,
            "size": self.size,
            "version": self.version,
            "tool": __version__,
            "schema": schema_fingerprint(),
            "ok": ok,
            "error": error,
        }

    def digest(self) -> str:
        """Made once per key (kept in its __dict__, not a field): the routes ask for every rank's at each
        request of a run view (issue 28: 7 % of the server's samples under 50 clients at 1,024 ranks)."""
        got = self.__dict__.get("_digest")
        if got is None:
            text = "\0".join([self.source, str(self.size), self.version, __version__, schema_fingerprint()])
            got = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
            object.__setattr__(self, "_digest", got)
        return got


class CachedResult(NamedTuple):
    ok: bool
    data: bytes  # serialized Summary when ok
    error: str  # one-line reason when not ok


def _check(header: bytes, body: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=_CHECK_LEN // 2)
    h.update(header)
    h.update(b"\n")
    h.update(body)
    return h.hexdigest().encode("ascii")


def encode_entry(key: CacheKey, result: CachedResult) -> bytes:
    body = result.data if result.ok else b""
    fields = dict(key.header(result.ok, result.error), body_size=len(body))
    header = json.dumps(fields, sort_keys=True).encode("utf-8")
    return b"".join([_MAGIC, _check(header, body), b"\n", header, b"\n", body])


def _split(blob: bytes) -> Tuple[Optional[Tuple[bytes, bytes, bytes]], str]:
    """(checksum, header line, rest) of an entry, or (None, why it is not one)."""
    if not blob.startswith(_MAGIC):
        return None, "not a cache entry of this layout"
    start = len(_MAGIC) + _CHECK_LEN + 1
    if len(blob) < start or blob[start - 1 : start] != b"\n":
        return None, "cut short"
    end = blob.find(b"\n", start)
    if end < 0:
        return None, "cut short"
    return (blob[len(_MAGIC) : start - 1], blob[start:end], blob[end + 1 :]), ""


def _parse_header(line: bytes, key: CacheKey, check_source: bool) -> Tuple[Optional[dict], str, bool]:
    """(header, problem, damaged): problem "" when the header belongs to ``key``; damaged when it is
    not even a header (rather than one of another version of the trace)."""
    try:
        header = json.loads(line)
    except ValueError:
        return None, "header does not decode", True
    if (
        not isinstance(header, dict)
        or not isinstance(header.get("body_size"), int)
        or not isinstance(header.get("error", ""), str)
    ):
        return None, "header is not an entry's", True
    expected = key.header(bool(header.get("ok")), header.get("error", ""))
    fields = ["size", "version", "tool", "schema"] + (["source"] if check_source else [])
    if any(header.get(f) != expected[f] for f in fields):
        return None, "entry of another file, version or release", False
    return header, "", False


def check_entry(blob: bytes, key: CacheKey, check_source: bool = True) -> Tuple[Optional[CachedResult], str, bool]:
    """(entry, problem, damaged): the entry in ``blob`` when it is whole, intact and belongs to ``key``;
    else None, the reason, and whether the blob is damaged (cut, corrupt, not an entry) rather than
    merely another version's."""
    parts, why = _split(blob)
    if parts is None:
        return None, why, True
    check, line, body = parts
    header, why, damaged = _parse_header(line, key, check_source)
    if header is None:
        return None, why, damaged
    if len(body) != header["body_size"]:
        return None, f"body of {len(body)} bytes, {header['body_size']} expected (cut short or padded)", True
    if _check(line, body) != check:
        return None, "checksum mismatch (corrupt bytes)", True
    if not header.get("ok"):
        if body:
            return None, "a failure entry with a body", True
        return CachedResult(False, b"", str(header.get("error", ""))), "", False
    return CachedResult(True, body, ""), "", False


def decode_entry(blob: bytes, key: CacheKey, check_source: bool = True) -> Optional[CachedResult]:
    """The entry in ``blob`` if it is whole, intact (its checksum matches) and belongs to ``key``; None otherwise."""
    return check_entry(blob, key, check_source)[0]


def check_head(head: bytes, file_size: int, key: CacheKey) -> Tuple[Optional[CachedResult], str, bool]:
    """Like :func:`check_entry` from the first lines only (magic, checksum, header) and the file's size:
    a cut or padded entry is caught, flipped body bytes only when the body is read."""
    parts, why = _split(head)
    if parts is None:
        return None, why, True
    _, line, rest = parts
    if rest:
        return None, "header too long", True
    header, why, damaged = _parse_header(line, key, True)
    if header is None:
        return None, why, damaged
    if file_size != len(head) + header["body_size"]:
        return (
            None,
            f"file of {file_size} bytes, {len(head) + header['body_size']} expected (cut short or padded)",
            True,
        )
    if not header.get("ok"):
        return CachedResult(False, b"", str(header.get("error", ""))), "", False
    return CachedResult(True, b"", ""), "", False


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tb_paddle_profile"


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def _is_local(fs) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "file" in protocol or "local" in protocol


def sidecar_path(trace_path: str) -> str:
    return trace_path + SIDECAR_SUFFIX


def read_sidecar(fs, trace_path: str, key: CacheKey, root: Optional[str] = None) -> Optional[CachedResult]:
    """The sidecar entry of a trace if it exists, is intact and matches ``key`` (any read error counts as
    absent; a damaged one is absent too, and is replaced when the summary is written again).

    The sidecar travels with the logdir (mounts, copies to another machine), so its location is not checked,
    only the size, version, tool and schema. On local stores it is read under the logdir's path policy
    (:mod:`tb_paddle_profile.core.paths`; ``root``: the logdir, None for a trace named by the user): a FIFO, a
    device, a link out of the logdir or a file over MAX_SIDECAR_BYTES is not read.
    """
    from tb_paddle_profile.core.paths import is_local, open_checked

    target = sidecar_path(trace_path)
    try:
        if is_local(fs):
            with open_checked(fs, target, root) as handle:
                blob = handle.read(MAX_SIDECAR_BYTES + 1)
            if len(blob) > MAX_SIDECAR_BYTES:
                return None
        else:
            blob = fs.cat_file(target)
    except (OSError, ValueError):
        return None
    except Exception:  # refused by the path policy, a store's own error types (botocore, gcsfs): no sidecar
        return None
    found, why, damaged = check_entry(blob, key, check_source=False)
    if damaged:
        log_once(
            f"sidecar:{target}:{len(blob)}",
            logging.WARNING,
            "tb_paddle_profile: sidecar %s is damaged (%s): ignored, rewritten with the next summary",
            target,
            why,
        )
    return found


def write_sidecar(fs, trace_path: str, key: CacheKey, result: CachedResult) -> str:
    """Write the sidecar next to a trace; returns "" or the one-line reason it could not be written."""
    blob = encode_entry(key, result)
    target = sidecar_path(trace_path)
    try:
        if _is_local(fs):
            atomic_write(Path(target), blob)
        else:
            fs.pipe_file(target, blob)  # one PUT: object stores make it visible whole or not at all
        return ""
    except Exception as err:  # read-only store, permissions: the cache still works without a sidecar
        return f"sidecar not written: {' '.join(str(err).split())[:200]}"


class SummaryCache:
    """Summaries on local disk, keyed by :class:`CacheKey`; ``cache_dir=None`` keeps nothing on disk."""

    def __init__(self, cache_dir: Optional[os.PathLike | str], sidecar: bool = False, limit: Optional[int] = None):
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.sidecar = sidecar
        self._warned = False
        self.trimmer = Trimmer(self.cache_dir, limit)

    def _path(self, key: CacheKey) -> Optional[Path]:
        if self.cache_dir is None:
            return None
        digest = key.digest()
        return self.cache_dir / f"v{LAYOUT}" / digest[:2] / (digest + ".pb")

    def get(self, key: CacheKey) -> Optional[CachedResult]:
        """The entry of ``key``, checked whole (checksum); a damaged one is deleted and None returned."""
        return self._read_checked(self._path(key), key, need_ok=False)

    @staticmethod
    def _read_checked(path: Optional[Path], key: CacheKey, need_ok: bool) -> Optional[CachedResult]:
        """The entry at ``path`` checked whole against ``key``; a damaged one (or, with ``need_ok``, one
        that holds a failure) is deleted and None returned: at its key's own path any mismatch is damage."""
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                inode = os.fstat(f.fileno()).st_ino
                blob = f.read()
        except OSError:
            return None
        found, why, _ = check_entry(blob, key)
        if found is None or (need_ok and not found.ok):
            discard(path, inode, why or "not a result")
            return None
        touch(path)
        return found

    def peek(self, key: CacheKey) -> Optional[CachedResult]:
        """Like :meth:`get` but reads only the header: ``data`` is empty. For deciding states quickly.
        An entry cut short or padded is caught here (by its length); flipped body bytes by :meth:`get`."""
        path = self._path(key)
        if path is None:
            return None
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                head = f.read(len(_MAGIC) + _CHECK_LEN + 1)
                head += f.readline(_MAX_HEADER)
        except OSError:
            return None
        if not head.endswith(b"\n") and len(head) < st.st_size:  # a header over _MAX_HEADER: read it all
            found = self.get(key)
            return found._replace(data=b"") if found else None
        found, why, _ = check_head(head, st.st_size, key)
        if found is None:
            discard(path, st.st_ino, why)
        return found

    # ---- the other parts of a job's entry (jobs.py) and the cross-rank analyses
    #
    # One job writes, for one trace version: its timeline index, then its digest, then its summary
    # entry. The summary entry is written last and is what makes the job's entry visible: a reader
    # that finds it finds the digest and the index too (unless trimmed or damaged since, which is a
    # miss that runs the job again); a job that dies half way leaves no summary entry, so the
    # trace counts as not done. Each file is itself written atomically (atomic_write).

    def index_path(self, key: CacheKey) -> Optional[Path]:
        """Where the timeline index of ``key`` lives in this cache (None when the cache is off)."""
        if self.cache_dir is None:
            return None
        digest = key.digest()
        return self.cache_dir / TIMELINE_FOLDER / digest[:2] / (digest + ".tl")

    def has_index(self, key: CacheKey) -> bool:
        path = self.index_path(key)
        return path is not None and path.is_file()

    def put_index(self, key: CacheKey, chunks) -> Optional[str]:
        """Write a timeline index (an iterable of byte chunks) atomically; its path, or None when the
        cache is off. Raises OSError when it cannot be written."""
        path = self.index_path(key)
        if path is None:
            return None
        atomic_write(path, chunks)
        return str(path)

    def _blob_path(self, folder: str, name: str, suffix: str) -> Optional[Path]:
        if self.cache_dir is None:
            return None
        return self.cache_dir / folder / name[:2] / (name + suffix)

    def _get_blob(self, path: Optional[Path], key: CacheKey) -> Optional[bytes]:
        found = self._read_checked(path, key, need_ok=True)
        return found.data if found is not None else None

    def _put_blob(self, path: Optional[Path], key: CacheKey, data: bytes) -> bool:
        if path is None:
            return False
        try:
            atomic_write(path, encode_entry(key, CachedResult(True, data, "")))
            self.trimmer.after_write(path)
            return True
        except OSError as err:
            if not self._warned:
                logger.warning("tb_paddle_profile: cache not writable (%s); keeping results in memory", err)
                self._warned = True
            return False

    def get_digest(self, key: CacheKey) -> Optional[bytes]:
        """The serialized RankDigest of a trace version, or None."""
        return self._get_blob(self._blob_path(DIGEST_FOLDER, key.digest(), ".dg"), key)

    def put_digest(self, key: CacheKey, data: bytes) -> bool:
        return self._put_blob(self._blob_path(DIGEST_FOLDER, key.digest(), ".dg"), key, data)

    @staticmethod
    def _analysis_key(name: str) -> CacheKey:
        return CacheKey("analysis:" + name, 0, "")

    def get_analysis(self, name: str) -> Optional[bytes]:
        """A serialized cross-rank analysis stored under ``name`` (RunParallel.analysis_key), or None."""
        return self._get_blob(self._blob_path(ANALYSIS_FOLDER, name, ".ra"), self._analysis_key(name))

    def put_analysis(self, name: str, data: bytes) -> bool:
        return self._put_blob(self._blob_path(ANALYSIS_FOLDER, name, ".ra"), self._analysis_key(name), data)

    def put(self, key: CacheKey, result: CachedResult) -> bool:
        """Store an entry; False when the cache is off or the folder is not writable (logged once)."""
        path = self._path(key)
        if path is None:
            return False
        try:
            atomic_write(path, encode_entry(key, result))
            self.trimmer.after_write(path)
            return True
        except OSError as err:
            if not self._warned:
                logger.warning("tb_paddle_profile: summary cache not writable (%s); keeping summaries in memory", err)
                self._warned = True
            return False
