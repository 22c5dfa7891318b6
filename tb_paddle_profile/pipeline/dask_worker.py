"""The worker side of ``preprocess --dask`` (dask.py, whose docstring says what runs where and the faults):
one task per file, :func:`process_file`, run on a Dask worker: the entry looked for again, the file's claim
in the cache taken and kept alive, the file parsed once (``run_job``), its digest and summary entries
written, the claim released, a few hundred bytes of outcome returned."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

from tb_paddle_profile.store.cache import CacheKey, CachedResult
from tb_paddle_profile.store.cache_store import CLAIM_TTL_S, CacheStore
from tb_paddle_profile.core.errors import our_bug
from tb_paddle_profile.pipeline.jobs import JobOutcome, JobSpec, run_job
from tb_paddle_profile.core import terminal

logger = terminal.logger(__name__)


@dataclass(frozen=True)
class FileTask:
    """What one Dask task gets (picklable)."""

    spec: JobSpec
    store: Optional[CacheStore]  # the cache: its entries are checked and its claims taken through it
    write_entries: bool  # the task writes digest + summary into the store (a URL); else run_job does (a folder)
    owner: str  # the preprocess run
    ttl: float = CLAIM_TTL_S

    def done(self, store: CacheStore, out: dict) -> bool:
        """Whether the cache already has this file's entry (and its timeline index, when one is asked)."""
        hit = store.head(self.spec.key)
        if hit is None or (hit.ok and self.spec.index and not store.has_index(self.spec.key)):
            return False
        out.update(kind="cached", ok=hit.ok, error=hit.error, error_kind="" if hit.ok else "trace", stored=True)
        return True


def _run(spec: JobSpec) -> JobOutcome:
    """The one parse (a module-level name, so that a test can hold it on a worker)."""
    return run_job(spec)


class _Heartbeat:
    """Renews a claim every third of its time to live while its file is parsed."""

    def __init__(self, store: CacheStore, key: CacheKey, claim: dict, ttl: float):
        self._stop = threading.Event()
        self._args = (store, key, claim, ttl)
        self._thread = threading.Thread(target=self._loop, name="tbpp-claim", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        store, key, claim, ttl = self._args
        while not self._stop.wait(ttl / 3):
            try:
                store.renew(key, claim, ttl)
            except Exception as err:  # the store briefly unreachable: the next beat tries again
                logger.debug("tb_paddle_profile: claim on %s not renewed: %s", key.source, err)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def _worker_name() -> str:
    try:
        from distributed import get_worker

        return get_worker().address
    except Exception:
        return f"pid {os.getpid()}"


def process_file(task: FileTask) -> dict:
    """Runs on a Dask worker: the entry of one trace, unless the cache has it or another run holds its
    claim. Returns a small dict (kind, ok, error, error_kind, stored, note, attempt, worker, seconds);
    never raises."""
    started = time.perf_counter()
    spec, store = task.spec, task.store
    out = {
        "kind": "",
        "ok": False,
        "error": "",
        "error_kind": "",
        "stored": False,
        "note": "",
        "attempt": 1,
        "worker": _worker_name(),
        "seconds": 0.0,
        "parsed": False,
    }
    try:
        _process(task, spec, store, out)
    except Exception as err:  # ours (a store that fails is caught below, per step)
        import traceback

        out.update(kind="bug", error=our_bug(spec.file_name, err), error_kind="bug", traceback=traceback.format_exc())
    out["seconds"] = time.perf_counter() - started
    return out


def _process(task: FileTask, spec: JobSpec, store: Optional[CacheStore], out: dict) -> None:
    beat = None
    if store is not None:
        try:
            if task.done(store, out):
                return
            held, claim = store.claim(spec.key, task.owner, task.ttl)
        except Exception as err:  # the cache cannot be read or written: for now
            out.update(
                kind="io",
                error=f"{spec.file_name}: cache {store.url} not usable: {_one_line(err)}",
                error_kind="transient",
            )
            return
        if not held:
            out.update(
                kind="claimed",
                holder=str(claim.get("host") or claim.get("owner") or "?"),
                expires=float(claim.get("expires") or 0),
            )
            return
        out["attempt"] = int(claim.get("attempt") or 1)
        if task.done(store, out):  # written by another run just before our claim
            store.release(spec.key, task.owner)
            return
        beat = _Heartbeat(store, spec.key, claim, task.ttl)
    try:
        outcome = _run(spec)
        stored = outcome.stored
        if store is None and spec.sidecar:  # sidecars only: stored when written (the client reads them back)
            stored = outcome.kind in ("parsed", "sidecar") and "sidecar not written" not in outcome.note
        out.update(
            kind=outcome.kind,
            ok=outcome.ok,
            error=outcome.error,
            error_kind=outcome.error_kind,
            stored=stored,
            note=outcome.note,
            parsed=outcome.parsed,
        )
        if outcome.traceback:
            out["traceback"] = outcome.traceback
        if task.write_entries and store is not None and outcome.kind in ("parsed", "sidecar", "cached"):
            if outcome.ok or outcome.error_kind == "trace":
                try:
                    if outcome.ok:
                        store.write_digest(spec.key, outcome.digest)  # the digest first, the summary last
                    store.write(
                        spec.key, CachedResult(outcome.ok, outcome.summary if outcome.ok else b"", outcome.error)
                    )
                    out["stored"] = True
                except Exception as err:
                    out.update(stored=False, note=f"not stored in {store.url}: {_one_line(err)}")
    finally:
        if beat is not None and store is not None:  # (a heartbeat only with a store)
            beat.stop()
            store.release(spec.key, task.owner)


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300] or type(err).__name__
