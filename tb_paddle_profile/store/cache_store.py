"""The summary cache at an fsspec URL (``s3://bucket/prefix``, ``gs://…``, a local or shared folder), so
that several machines fill and read one cache.

Entries have the layout and the checks of the local cache (:mod:`tb_paddle_profile.store.cache`): the same
``v<LAYOUT>/<xx>/<digest>.pb`` names under the URL, the same bytes (:func:`cache.encode_entry`), read
back only when whole, intact and of the same file version, tool and schema (:func:`cache.check_entry`,
:func:`cache.check_head`). A write is never visible half-done: in a local folder a temporary file,
fsync, rename (:func:`cache.atomic_write`); in an object store one PUT of the whole blob (S3 makes an
object visible whole or not at all; a multipart upload only when completed).

Claims (for ``preprocess --dask`` run from several machines at once): before parsing a file, a run
creates ``claims/<digest>.claim`` under the URL: a small JSON with its owner, host, expiry and attempt
number. The creation is exclusive where the store can do it (a local folder: a hard link that fails if
the name exists; S3: a conditional PUT, ``If-None-Match: *``); elsewhere it is written and read back.
A claim is renewed while its file is parsed (every third of CLAIM_TTL_S) and deleted once the entry is
written; a claim past its expiry (its owner died) is taken over by overwriting it and reading it back.
What this guarantees: two runs never both parse a file whose claim one of them created first on a store
with exclusive creation; the takeover of an expired claim, and stores without exclusive creation, are
best effort (both runs may then parse the file; the entries they write are identical, the last one
stays). A claim never decides what is served: only entries are read.

A URL cache is not bounded by the tool (``TB_PADDLE_PROFILE_CACHE_MAX_MB`` bounds local folders only):
bound a bucket with its own lifecycle rules. A damaged entry is a miss (logged once) and is overwritten by
the next write; it is not deleted, since another machine may be writing it at that moment.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import tempfile
import time
import uuid
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import fsspec

from tb_paddle_profile.store.cache import (
    ANALYSIS_FOLDER,
    DIGEST_FOLDER,
    LAYOUT,
    TIMELINE_FOLDER,
    CacheKey,
    CachedResult,
    SummaryCache,
    _CHECK_LEN,
    _DISABLED,
    ENV_CACHE_DIR,
    ENV_SIDECAR,
    _MAGIC,
    _MAX_HEADER,
    check_entry,
    check_head,
    default_cache_dir,
    encode_entry,
    env_flag,
)
from tb_paddle_profile.store.files import atomic_write, log_once, share_mode
from tb_paddle_profile.core import terminal

logger = terminal.logger(__name__)

CLAIM_TTL_S = 120.0  # a claim not renewed for this long is taken to belong to a run that died
HEAD_BYTES = 4096  # first read of an entry: magic, checksum and (nearly always) the whole header line
_HEAD_FIXED = len(_MAGIC) + _CHECK_LEN + 1


def is_url(location: Optional[str]) -> bool:
    """True for an fsspec URL (``proto://…`` or a chained ``a::b``), False for a plain local path."""
    text = str(location or "")
    return "://" in text or "::" in text


def _is_local(fs) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return "file" in protocol or "local" in protocol


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300] or type(err).__name__


def new_owner() -> str:
    """An identity for one preprocess run: host, process and a random part."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class CacheStore:
    """Cache entries (and claims) under one fsspec URL or local folder. Picklable: a Dask worker
    rebuilds it from the URL with its own environment's credentials."""

    def __init__(self, url: str):
        self.url = str(url)
        location = self.url if is_url(self.url) else os.path.abspath(os.path.expanduser(self.url))
        self.fs, root = fsspec.core.url_to_fs(location)
        self.root = root.rstrip("/") or "/"
        self.local = _is_local(self.fs)

    def __reduce__(self):
        return (type(self), (self.url,))

    def __repr__(self) -> str:
        return f"CacheStore({self.url!r})"

    # ------------------------------------------------------------ entries
    def entry_path(self, key: CacheKey) -> str:
        digest = key.digest()
        return f"{self.root}/v{LAYOUT}/{digest[:2]}/{digest}.pb"

    def read(self, key: CacheKey) -> Optional[CachedResult]:
        """The entry of ``key``, checked whole; None when absent, damaged or unreadable (logged once)."""
        path = self.entry_path(key)
        try:
            blob = self.fs.cat_file(path)
        except FileNotFoundError:
            return None
        except Exception as err:  # network, permissions: a miss, said once
            log_once(
                f"store-read:{self.url}",
                logging.WARNING,
                "tb_paddle_profile: cache %s cannot be read (%s); summaries are computed",
                self.url,
                _one_line(err),
            )
            return None
        found, why, _ = check_entry(blob, key)
        if found is None:
            _damaged(path, why)
        return found

    def head(
        self,
        key: CacheKey,
        size: Optional[int] = None,
        head: Optional[bytes] = None,
    ) -> Optional[CachedResult]:
        """Like :meth:`read` from the entry's first bytes and its size (``data`` is empty): a cut or
        padded entry is caught, flipped body bytes only by :meth:`read`. ``size``/``head``: already
        known from a listing and a batched read."""
        path = self.entry_path(key)
        try:
            if size is None:
                size = int(self.fs.info(path)["size"])
            if head is None:
                head = self.fs.cat_file(path, start=0, end=min(size, HEAD_BYTES))
        except FileNotFoundError:
            return None
        except Exception as err:
            log_once(
                f"store-read:{self.url}",
                logging.WARNING,
                "tb_paddle_profile: cache %s cannot be read (%s); summaries are computed",
                self.url,
                _one_line(err),
            )
            return None
        end = head.find(b"\n", _HEAD_FIXED)
        if end < 0:
            if len(head) < size and size <= _HEAD_FIXED + _MAX_HEADER + (1 << 30):
                found = self.read(key)  # a header longer than HEAD_BYTES: read the entry whole
                return found._replace(data=b"") if found else None
            _damaged(path, "cut short")
            return None
        found, why, _ = check_head(head[: end + 1], size, key)
        if found is None:
            _damaged(path, why)
        return found

    def heads(self, keys: List[CacheKey]) -> Dict[CacheKey, CachedResult]:
        """The entries (header only) of many keys at once: one listing of the entry folders and one
        batched ranged read of the entries found (concurrent on object stores)."""
        listing = self.listing()
        present = [(k, listing[k.digest()]) for k in keys if k.digest() in listing]
        if not present:
            return {}
        found: Dict[CacheKey, CachedResult] = {}
        paths = [self.entry_path(k) for k, _ in present]
        try:
            blobs = self.fs.cat_ranges(
                paths, [0] * len(paths), [min(s, HEAD_BYTES) for _, s in present], on_error="return"
            )
        except Exception as err:
            logger.debug("tb_paddle_profile: batched read of %s failed (%s); one by one", self.url, err)
            blobs = [None] * len(paths)
        for (key, size), blob in zip(present, blobs):
            hit = self.head(key, size, blob if isinstance(blob, bytes) else None)
            if hit is not None:
                found[key] = hit
        return found

    def has_index(self, key: CacheKey) -> bool:
        """Whether the timeline index of ``key`` is there (folder caches: indexes are memory-mapped)."""
        digest = key.digest()
        try:
            return self.fs.exists(f"{self.root}/{TIMELINE_FOLDER}/{digest[:2]}/{digest}.tl")
        except Exception:
            return False

    def exists(self, key: CacheKey) -> bool:
        return self.head(key) is not None

    def write(self, key: CacheKey, result: CachedResult) -> None:
        """Store the entry, visible whole or not at all; raises OSError (or the store's error)."""
        self._put(self.entry_path(key), encode_entry(key, result))

    # A job's other parts (jobs.py) and the cross-rank analyses: the local cache's folders and names.
    def blob_path(self, folder: str, name: str, suffix: str) -> str:
        return f"{self.root}/{folder}/{name[:2]}/{name}{suffix}"

    def read_blob(self, path: str, key: CacheKey) -> Optional[bytes]:
        try:
            blob = self.fs.cat_file(path)
        except FileNotFoundError:
            return None
        except Exception as err:
            log_once(
                f"store-read:{self.url}",
                logging.WARNING,
                "tb_paddle_profile: cache %s cannot be read (%s); summaries are computed",
                self.url,
                _one_line(err),
            )
            return None
        found, why, _ = check_entry(blob, key)
        if found is None or not found.ok:
            _damaged(path, why or "not a result")
            return None
        return found.data

    def write_blob(self, path: str, key: CacheKey, data: bytes) -> None:
        self._put(path, encode_entry(key, CachedResult(True, data, "")))

    def digest_path(self, key: CacheKey) -> str:
        return self.blob_path(DIGEST_FOLDER, key.digest(), ".dg")

    def read_digest(self, key: CacheKey) -> Optional[bytes]:
        """The serialized RankDigest of a trace version (written by the job before its summary entry)."""
        return self.read_blob(self.digest_path(key), key)

    def write_digest(self, key: CacheKey, data: bytes) -> None:
        self.write_blob(self.digest_path(key), key, data)

    def listing(self) -> Dict[str, int]:
        """digest -> size of every entry of this layout under the URL."""
        folder = f"{self.root}/v{LAYOUT}"
        try:
            self.fs.invalidate_cache(folder)
        except Exception:
            pass
        try:
            found = self.fs.find(folder, withdirs=False, detail=True)
        except FileNotFoundError:
            return {}
        out = {}
        for path, info in found.items():
            name = path.rsplit("/", 1)[-1]
            if name.endswith(".pb") and not name.startswith("."):
                out[name[:-3]] = int(info.get("size") or 0)
        return out

    def _put(self, path: str, blob: bytes) -> None:
        if self.local:
            atomic_write(Path(path), blob)
        else:
            self.fs.pipe_file(path, blob)  # one PUT of the whole blob

    # ------------------------------------------------------------ claims
    def claim_path(self, key: CacheKey) -> str:
        return f"{self.root}/claims/{key.digest()}.claim"

    def read_claim(self, key: CacheKey) -> Optional[dict]:
        try:
            blob = self.fs.cat_file(self.claim_path(key))
        except FileNotFoundError:
            return None
        try:
            claim = json.loads(blob)
        except ValueError:
            return {"owner": "", "expires": 0.0, "attempt": 0}  # a torn or foreign claim: expired
        return claim if isinstance(claim, dict) else {"owner": "", "expires": 0.0, "attempt": 0}

    def claim(
        self,
        key: CacheKey,
        owner: str,
        ttl: float = CLAIM_TTL_S,
        now: Optional[float] = None,
    ) -> Tuple[bool, dict]:
        """(held, claim): take the claim on ``key`` for ``owner`` unless another owner holds one that has
        not expired. A claim of the same owner (a retry of its task after a worker died) is taken again
        with its attempt number raised. ``claim`` is the one now in the store."""
        now = time.time() if now is None else now
        path = self.claim_path(key)
        mine = {
            "owner": owner,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "expires": now + ttl,
            "attempt": 1,
            "source": key.source,
        }
        if self._create(path, json.dumps(mine).encode()):
            return True, mine
        current = self.read_claim(key)
        if current is None:  # released between our try and our read: try once more
            if self._create(path, json.dumps(mine).encode()):
                return True, mine
            current = self.read_claim(key) or {"owner": "", "expires": 0.0, "attempt": 0}
        if current.get("owner") != owner and float(current.get("expires") or 0) > now:
            return False, current
        mine["attempt"] = int(current.get("attempt") or 0) + 1 if current.get("owner") == owner else 1
        self._put(path, json.dumps(mine).encode())  # our retry, or a takeover of an expired claim
        back = self.read_claim(key) or {}
        return back.get("owner") == owner, back or mine

    def renew(self, key: CacheKey, claim: dict, ttl: float = CLAIM_TTL_S) -> None:
        claim = dict(claim, expires=time.time() + ttl)
        self._put(self.claim_path(key), json.dumps(claim).encode())

    def release(self, key: CacheKey, owner: str) -> None:
        """Delete the claim if it is still ``owner``'s (best effort)."""
        try:
            current = self.read_claim(key)
            if current is not None and current.get("owner") == owner:
                self.fs.rm_file(self.claim_path(key))
        except FileNotFoundError:
            pass
        except Exception as err:
            logger.debug("tb_paddle_profile: claim on %s not released: %s", key.source, err)

    def _create(self, path: str, blob: bytes) -> bool:
        """Create ``path`` with ``blob`` only if it does not exist; True when created."""
        if self.local:
            folder = os.path.dirname(path)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=folder)
            try:
                share_mode(fd)
                with os.fdopen(fd, "wb") as f:  # no fsync: a claim lost in a crash only lapses sooner
                    f.write(blob)
                try:
                    os.link(tmp, path)  # fails if the name exists: exclusive, and whole when it appears
                    return True
                except FileExistsError:
                    return False
            finally:
                os.unlink(tmp)
        try:
            self.fs.pipe_file(path, blob, mode="create")  # S3: If-None-Match: *
            return True
        except FileExistsError:
            return False
        except (TypeError, NotImplementedError, ValueError):
            pass  # a store without exclusive creation: check, write, read back (best effort)
        if self.fs.exists(path):
            return False
        self.fs.pipe_file(path, blob)
        try:
            return self.fs.cat_file(path) == blob
        except FileNotFoundError:
            return False


def _damaged(path: str, why: str) -> None:
    log_once(
        f"store-damaged:{path}:{why}",
        logging.WARNING,
        "tb_paddle_profile: cache entry %s is damaged or not ours (%s): a miss; overwritten by the next summary",
        path,
        why,
    )


class UrlSummaryCache(SummaryCache):
    """A :class:`cache.SummaryCache` whose entries live at a URL (:class:`CacheStore`), for the plugin
    and the CLI (``TB_PADDLE_PROFILE_CACHE=s3://bucket/prefix``). It has no local folder
    (``cache_dir`` is None), so timeline indexes are built into a temporary folder of the process."""

    def __init__(self, url: str, sidecar: bool = False):
        super().__init__(None, sidecar=sidecar)
        self.store = CacheStore(url)
        self.url = self.store.url

    def get(self, key: CacheKey) -> Optional[CachedResult]:
        return self.store.read(key)

    def peek(self, key: CacheKey) -> Optional[CachedResult]:
        return self.store.head(key)

    def put(self, key: CacheKey, result: CachedResult) -> bool:
        return self._write(self.store.write, key, result)

    def get_digest(self, key: CacheKey) -> Optional[bytes]:
        return self.store.read_digest(key)

    def put_digest(self, key: CacheKey, data: bytes) -> bool:
        return self._write(self.store.write_digest, key, data)

    def get_analysis(self, name: str) -> Optional[bytes]:
        return self.store.read_blob(self.store.blob_path(ANALYSIS_FOLDER, name, ".ra"), self._analysis_key(name))

    def put_analysis(self, name: str, data: bytes) -> bool:
        path = self.store.blob_path(ANALYSIS_FOLDER, name, ".ra")
        return self._write(lambda key, blob: self.store.write_blob(path, key, blob), self._analysis_key(name), data)

    def _write(self, write, key, value) -> bool:
        try:
            write(key, value)
            return True
        except Exception as err:  # read-only bucket, network: the result stays in memory
            if not self._warned:
                logger.warning(
                    "tb_paddle_profile: summary cache %s not writable (%s); keeping summaries in memory",
                    self.url,
                    _one_line(err),
                )
                self._warned = True
            return False


def open_cache(cache_dir: Optional[str] = None, sidecar: Optional[bool] = None) -> SummaryCache:
    """The cache the settings name: explicit arguments first, then ``TB_PADDLE_PROFILE_CACHE`` /
    ``TB_PADDLE_PROFILE_SIDECAR``; a folder (default ``~/.cache/tb_paddle_profile``), an fsspec URL
    (s3://..., a UrlSummaryCache), or none ("off")."""
    if cache_dir is None:
        cache_dir = os.environ.get(ENV_CACHE_DIR, "").strip() or str(default_cache_dir())
    if str(cache_dir).strip().lower() in _DISABLED:
        cache_dir = None
    if sidecar is None:
        sidecar = env_flag(ENV_SIDECAR)
    if cache_dir is not None and ("://" in str(cache_dir) or "::" in str(cache_dir)):
        return UrlSummaryCache(str(cache_dir).strip(), sidecar=sidecar)
    return SummaryCache(cache_dir, sidecar=sidecar)
