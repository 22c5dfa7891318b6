"""The per-file job: one parse of a trace gives its Summary, its RankDigest and its timeline index.

Signature (stable; the plugin's loader, ``preprocess``, the CLI and the Dask runner all call it)::

    run_job(spec: JobSpec) -> JobOutcome
    run_jobs(specs: Sequence[JobSpec]) -> List[JobOutcome]   # run_job of each, in turn (a batch of small files)

``run_job`` is a top-level, picklable function of picklable arguments, usable in a
``workers.WorkerPool`` process or on a Dask worker; it never raises (a failure is an outcome).

``JobSpec`` (frozen dataclass, picklable):

- ``path``: the trace as its store names it; ``file_name``: its base name (for messages);
- ``key``: its :class:`cache.CacheKey` (source, size, version): the identity of this version of the file;
- ``fs``: an fsspec filesystem (picklable), or None and then ``protocol`` + ``storage_options`` build one
  on the worker (``fsspec.filesystem(protocol, **storage_options)``);
- ``cache_dir``: the cache location (a folder; None: no cache), ``sidecar``: read/write sidecars;
- ``root``: the logdir, for the path policy (paths.py; None: a file named by the user, followed);
- ``index``: also build the timeline index; ``index_dir``: where the index goes when the cache cannot
  take it (cache off or not writable), e.g. a temporary folder of the process;
- ``force``: parse even when the cache already holds the entry (the index went missing);
- ``recent``: the file was modified recently (a truncated one is then "growing", not failed);
- ``parse_workers``: processes/threads that decode a large file together (reader.read_trace);
- ``claim_owner``: who parses (one loader, one ``preprocess``: cache_store.new_owner()). With a local
  cache, the job takes the file's claim in it before parsing, so that processes sharing the cache
  (TensorBoard and ``preprocess`` runs) parse each trace once: a file claimed by another owner is
  waited for until its entry appears (then read from the cache) or the claim lapses (then parsed here);
- ``inflate_share``: how many jobs may run at once on this machine: a .gz is inflated at most to
  reader.max_inflate_bytes(inflate_share) (the memory divided among them, counted in bytes produced);
- ``return_data``: the outcome carries the summary's and the digest's bytes.

``JobOutcome`` (dataclass, picklable):

- ``kind``: "cached" (the cache held a complete entry: nothing parsed), "sidecar", "parsed",
  "growing", "changed" (size differs from the key), "gone", "io", "refused", "memory", "bug";
- ``ok``: a usable Summary; ``error``: the one-line reason when not;
- ``error_kind``: "" | "trace" (the file's fault: cached as its result) | "transient" (retry later;
  never cached) | "bug" (ours: never cached, ``traceback`` set), as in errors.py;
- ``summary``, ``digest``: serialized Summary / RankDigest (when ``return_data`` and ok);
- ``stored``: the summary (and digest) are in the cache; ``index_path``: where the index was written
  ("" none); ``note``: a warning (sidecar or cache not writable); ``parsed``: the engine ran.

Order of writes (see cache.SummaryCache): the index, the digest, then the summary entry last. The
summary entry is what makes a job's entry visible, so an entry is complete or absent: a job that dies
half way leaves at most an index or a digest that nothing refers to (trimmed by the cache's bound).
A failed trace (TraceError) gets only its failure entry.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from tb_paddle_profile.store.cache import CacheKey, CachedResult, SummaryCache, read_sidecar, write_sidecar
from tb_paddle_profile.core import settings
from tb_paddle_profile.core.errors import TraceError, TransientError, our_bug


@dataclass(frozen=True)
class JobSpec:
    path: str
    file_name: str
    key: CacheKey
    cache_dir: Optional[str] = None
    sidecar: bool = False
    fs: Any = None
    protocol: str = "file"
    storage_options: Dict[str, Any] = field(default_factory=dict)
    root: Optional[str] = None
    index: bool = True
    index_dir: Optional[str] = None
    force: bool = False
    recent: bool = False
    parse_workers: int = 1
    return_data: bool = True
    inflate_share: int = 1
    claim_owner: str = ""


@dataclass
class JobOutcome:
    kind: str
    ok: bool = False
    error: str = ""
    error_kind: str = ""
    summary: bytes = b""
    digest: bytes = b""
    stored: bool = False
    index_path: str = ""
    note: str = ""
    parsed: bool = False
    traceback: str = ""

    @property
    def retry(self) -> bool:
        """Worth running again later (never cached)."""
        return self.error_kind == "transient"


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _filesystem(spec: JobSpec):
    if spec.fs is not None:
        return spec.fs
    import fsspec

    return fsspec.filesystem(spec.protocol or "file", **(spec.storage_options or {}))


def _index_target(spec: JobSpec) -> Optional[str]:
    if not spec.index_dir:
        return None
    digest = spec.key.digest()
    return os.path.join(spec.index_dir, digest[:2], digest + ".tl")


def run_job(spec: JobSpec) -> JobOutcome:
    """Summary, digest and timeline index of one trace, from one parse (or from the cache); never raises."""
    try:
        return _run(spec)
    except MemoryError:
        return JobOutcome(
            "memory", error=f"{spec.file_name}: ran out of memory while parsing it", error_kind="transient", parsed=True
        )
    except TransientError as err:
        return JobOutcome("io", error=str(err), error_kind="transient")
    except Exception as err:  # not the file's fault: ours
        return JobOutcome(
            "bug", error=our_bug(spec.file_name, err), error_kind="bug", traceback=traceback.format_exc(), parsed=True
        )


def run_jobs(specs: Sequence[JobSpec]) -> List[JobOutcome]:
    """run_job of each spec in turn, in one worker job (the loader's batches of small files: one round trip
    to the worker for all of them); each file has its own outcome; never raises."""
    return [run_job(spec) for spec in specs]


def _from_cache(spec: JobSpec, cache: SummaryCache) -> Optional[JobOutcome]:
    """The outcome of a complete entry already in the cache (nothing parsed), else None."""
    hit = cache.peek(spec.key)
    if hit is None:
        return None
    if not hit.ok:
        return JobOutcome("cached", ok=False, error=hit.error, error_kind="trace", stored=True)
    if spec.index and not cache.has_index(spec.key):
        return None
    digest = cache.get_digest(spec.key)
    if digest is None:
        return None
    out = JobOutcome(
        "cached",
        ok=True,
        stored=True,
        digest=digest if spec.return_data else b"",
        index_path=str(cache.index_path(spec.key) or "") if spec.index else "",
    )
    if spec.return_data:
        full = cache.get(spec.key)
        if full is None or not full.ok:
            return None
        out.summary = full.data
    return out


def _store(
    spec: JobSpec, cache: SummaryCache, fs, result: CachedResult, digest: bytes, index_parts, out: JobOutcome
) -> JobOutcome:
    """Write the index, the digest, then the summary entry (see the module's docstring)."""
    from tb_paddle_profile.timeline import encode_parts

    notes = []
    cache_ok = cache.cache_dir is not None
    if index_parts is not None:  # the index names its trace (TimelineIndex checks it when opened)
        index_parts = (dict(index_parts[0], trace=spec.key.digest()), index_parts[1])
        written = None
        if cache_ok:
            try:
                written = cache.put_index(spec.key, encode_parts(*index_parts))
            except OSError as err:  # the summary may still be stored; the index goes to index_dir
                notes.append(f"cache folder not writable ({_one_line(err)})")
        target = _index_target(spec)
        if written is None and target:
            from pathlib import Path

            from tb_paddle_profile.store.files import atomic_write

            try:
                atomic_write(Path(target), encode_parts(*index_parts))
                written = target
            except OSError as err:
                notes.append(f"timeline index not written: {_one_line(err)}")
        out.index_path = written or ""
    if cache_ok:
        if result.ok:
            cache_ok = cache.put_digest(spec.key, digest)
        cache_ok = cache_ok and cache.put(spec.key, result)
    out.stored = cache_ok
    if spec.sidecar:
        note = write_sidecar(fs, spec.path, spec.key, result)
        if note:
            notes.append(note)
    out.note = "; ".join(notes)
    if spec.return_data or not out.stored:
        out.summary, out.digest = (result.data, digest) if result.ok else (b"", b"")
    return out


def _run(spec: JobSpec) -> JobOutcome:
    cache = SummaryCache(spec.cache_dir, sidecar=spec.sidecar, limit=0)  # the caller bounds the folder
    if not spec.force and cache.cache_dir is not None:
        found = _from_cache(spec, cache)
        if found is not None:
            return found
    claim = _claim(spec, cache)
    if isinstance(claim, JobOutcome):
        return claim
    try:
        return _run_claimed(spec, cache)
    finally:
        if claim is not None:
            claim.release()


CLAIM_WAIT_S = 1.0  # a file claimed by another process is looked at again this often


class _Claim:
    """The claim on one file in a local cache, renewed every third of its time to live until released
    (by the process's one renewing thread: a thread per job cost more than a small trace's parse)."""

    _lock = threading.Lock()
    _held: Dict[int, "_Claim"] = {}
    _thread: Optional[threading.Thread] = None

    def __init__(self, store, key: CacheKey, claim: dict, owner: str):
        self._store, self._key, self._claim, self._owner = store, key, claim, owner
        with _Claim._lock:
            _Claim._held[id(self)] = self
            if _Claim._thread is None or not _Claim._thread.is_alive():
                _Claim._thread = threading.Thread(target=_Claim._renew_all, name="tbpp-job-claims", daemon=True)
                _Claim._thread.start()

    @staticmethod
    def _renew_all() -> None:
        from tb_paddle_profile.store.cache_store import CLAIM_TTL_S

        while True:
            time.sleep(CLAIM_TTL_S / 3)
            with _Claim._lock:
                held = list(_Claim._held.values())
            for c in held:
                try:
                    c._store.renew(c._key, c._claim, CLAIM_TTL_S)
                except OSError:
                    pass  # the next beat tries again

    def release(self) -> None:
        with _Claim._lock:
            _Claim._held.pop(id(self), None)
        self._store.release(self._key, self._owner)


def _claim(spec: JobSpec, cache: SummaryCache):
    """None (no claim wanted), the _Claim taken, or the outcome of the entry another process wrote
    while this one waited for its claim."""
    if not spec.claim_owner or cache.cache_dir is None:
        return None
    from tb_paddle_profile.store.cache_store import CacheStore

    store = CacheStore(str(cache.cache_dir))
    while True:
        try:
            held, claim = store.claim(spec.key, spec.claim_owner)
        except OSError:
            return None  # claims cannot be written here: parse without one
        if held:
            return _Claim(store, spec.key, claim, spec.claim_owner)
        time.sleep(CLAIM_WAIT_S)
        found = None if spec.force else _from_cache(spec, cache)
        if found is not None:
            return found


def _run_claimed(spec: JobSpec, cache: SummaryCache) -> JobOutcome:
    from tb_paddle_profile.core import paths

    if not spec.force and cache.cache_dir is not None and spec.claim_owner:
        found = _from_cache(spec, cache)  # written by another process just before our claim
        if found is not None:
            return found
    fs = _filesystem(spec)
    if spec.sidecar and not spec.force:
        side = read_sidecar(fs, spec.path, spec.key, spec.root)
        if side is not None:
            digest = _digest_bytes(side.data) if side.ok else b""
            out = JobOutcome("sidecar", ok=side.ok, error=side.error, error_kind="" if side.ok else "trace")
            return _store(spec, SummaryCache(spec.cache_dir, limit=0), fs, side, digest, None, out)
    try:
        data = paths.read_checked(fs, spec.path, spec.root, spec.file_name)
    except TraceError as err:  # refused by the path policy (a FIFO, a link out of the logdir...)
        return JobOutcome("refused", error=str(err), error_kind="transient")
    except FileNotFoundError:
        return JobOutcome(
            "gone", error=f"{spec.file_name}: the file could not be found when it was read", error_kind="transient"
        )
    except (TransientError, MemoryError):
        raise
    except Exception as err:  # the store's own errors (network, permissions)
        return JobOutcome("io", error=f"{spec.file_name}: cannot read: {_one_line(err)}", error_kind="transient")
    if len(data) != spec.key.size:
        return JobOutcome("changed", error_kind="transient")
    box = [data]
    del data
    try:
        summary, index_parts = _parse(box, spec)
    except TraceError as err:
        if spec.recent and _looks_truncated(fs, spec):
            return JobOutcome("growing", error=str(err), error_kind="transient", parsed=True)
        out = JobOutcome("parsed", ok=False, error=str(err), error_kind="trace", parsed=True)
        return _store(spec, cache, fs, CachedResult(False, b"", str(err)), b"", None, out)
    from tb_paddle_profile.analysis.digest import digest_of

    digest = digest_of(summary).SerializeToString()
    out = JobOutcome("parsed", ok=True, parsed=True)
    return _store(spec, cache, fs, CachedResult(True, summary.SerializeToString(), ""), digest, index_parts, out)


def _digest_bytes(summary_bytes: bytes) -> bytes:
    from tb_paddle_profile.analysis.digest import digest_of
    from tb_paddle_profile.v1 import summary_pb2

    return digest_of(summary_pb2.Summary.FromString(summary_bytes)).SerializeToString()


def _parse(box: list, spec: JobSpec):
    """The one parse: tables and tree, then the Summary and (when asked) the index from the same ones."""
    from tb_paddle_profile.analysis.profile import Profile
    from tb_paddle_profile.analysis.summarize import summarize_profile
    from tb_paddle_profile.trace.reader import max_inflate_bytes, read_trace

    base = os.path.basename(spec.file_name)
    size = len(box[0])
    settings.note_parse(base)
    tables = read_trace(box, base, spec.parse_workers, max_inflate=max_inflate_bytes(spec.inflate_share))
    p = Profile.build(tables)
    summary = summarize_profile(p, base, size)
    parts = None
    if spec.index:
        from tb_paddle_profile.timeline import build_index

        parts = build_index(p.tables, p.tree)
    return summary, parts


ENV_PARSE_LOG = settings.PARSE_LOG


def _looks_truncated(fs, spec: JobSpec) -> bool:
    from tb_paddle_profile.core import paths
    from tb_paddle_profile.trace.reader import max_inflate_bytes
    from tb_paddle_profile.trace.truncation import looks_truncated

    try:
        return looks_truncated(
            paths.read_checked(fs, spec.path, spec.root, spec.file_name), max_inflate_bytes(spec.inflate_share)
        )
    except Exception:
        return False
