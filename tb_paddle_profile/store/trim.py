"""The cache folder's bound (``TB_PADDLE_PROFILE_CACHE_MAX_MB``): the least recently used entries deleted
after writes, at most every TRIM_INTERVAL_S seconds, and writes a kill left behind."""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Iterable, List, Optional, Tuple

from tb_paddle_profile.core import settings


# The cache's one logger, whichever of its modules writes.
logger = logging.getLogger("tb_paddle_profile.store.cache")

ENV_CACHE_MAX_MB = settings.CACHE_MAX_MB
DEFAULT_CACHE_MAX_MB = 8192
TRIM_INTERVAL_S = 30.0  # a folder is walked at most this often per Trimmer
STALE_PART_S = 3600.0  # a .tmp-*.part older than this is a write a kill left behind: trimmed
# The entry files the bound applies to: <cache>/v<N>/xx/<digest>.pb (summaries),
# <cache>/timeline-v<N>/xx/<digest>.tl (timeline indexes), <cache>/digest-v<N>/xx/<digest>.dg (rank digests)
# and <cache>/analysis-v<N>/xx/<key>.ra (cross-rank analyses), any layout version N; nothing else is touched.
_ENTRY_FOLDER = re.compile(r"(v|timeline-v|digest-v|analysis-v)[0-9]+")
_ENTRY_SUFFIX = {"v": ".pb", "timeline-v": ".tl", "digest-v": ".dg", "analysis-v": ".ra"}


def cache_limit_bytes() -> int:
    """The cache folder's bound in bytes from ``TB_PADDLE_PROFILE_CACHE_MAX_MB`` (0: none)."""
    return settings.megabytes(ENV_CACHE_MAX_MB, DEFAULT_CACHE_MAX_MB)


def _entries(cache_dir: Path, stale: Optional[list] = None) -> List[Tuple[float, int, Path]]:
    """(mtime, size, path) of the entries; `stale`, when given, gets the same of the .tmp-*.part files
    older than STALE_PART_S (left by a writer killed half way)."""
    found = []
    old = time.time() - STALE_PART_S
    for root in os.scandir(cache_dir):
        m = _ENTRY_FOLDER.fullmatch(root.name)
        if m is None or not root.is_dir(follow_symlinks=False):
            continue
        suffix = _ENTRY_SUFFIX[m.group(1)]
        for sub in os.scandir(root.path):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for entry in os.scandir(sub.path):
                if stale is not None and entry.name.startswith(".tmp-") and entry.name.endswith(".part"):
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_mtime < old and entry.is_file(follow_symlinks=False):
                        stale.append((st.st_mtime, st.st_size, Path(entry.path)))
                    continue
                if entry.name.endswith(suffix) and not entry.name.startswith(".") \
                        and entry.is_file(follow_symlinks=False):
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    found.append((st.st_mtime, st.st_size, Path(entry.path)))
    return found


def trim(cache_dir: Path, limit: int, keep: Iterable[Path] = ()) -> int:
    """Delete the least recently used entries until the folder's entries fit in 90 % of ``limit``
    bytes (``keep``: paths never deleted, e.g. the entry just written). Returns the bytes freed."""
    if limit <= 0:
        return 0
    stale: list = []
    entries = _entries(cache_dir, stale)
    freed = 0
    for _, size, path in stale:
        try:
            path.unlink()
        except OSError:
            continue
        freed += size
    total = sum(size for _, size, _ in entries)
    if total <= limit:
        return freed
    keep = {Path(p) for p in keep}
    target = int(limit * 0.9)
    parts, freed = freed, 0
    for _, size, path in sorted(entries, key=lambda e: (e[0], str(e[2]))):
        if total - freed <= target:
            break
        if path in keep:
            continue
        try:
            path.unlink()  # a memory-mapped timeline index stays readable by whoever has it open
        except OSError:
            continue
        freed += size
    return parts + freed


class Trimmer:
    """Calls :func:`trim` after writes, at most every TRIM_INTERVAL_S seconds."""

    def __init__(self, cache_dir: Optional[Path], limit: Optional[int] = None):
        self.cache_dir = cache_dir
        self.limit = cache_limit_bytes() if limit is None else limit
        self._lock = threading.Lock()
        self._last = -float("inf")
        self._walking = False  # a background walk is under way
        self._again: Optional[Path] = None  # a walk asked for while it was: run once more after it

    def after_write(self, written: Path, background: bool = False) -> int:
        """Trim when TRIM_INTERVAL_S has passed since the last walk; the bytes freed. ``background``: the
        walk (every entry of the folder stat'ed: seconds for the 400,000 entries of 100,000 traces) runs on
        a thread of its own, one at a time, and 0 is returned (the loader's dispatcher does not wait for it)."""
        if self.cache_dir is None or self.limit <= 0:
            return 0
        with self._lock:
            now = time.monotonic()
            if now - self._last < TRIM_INTERVAL_S:
                return 0
            self._last = now
            if background:
                if self._walking:
                    self._again = written
                    return 0
                self._walking = True
        if not background:
            return self._trim(written)
        try:
            threading.Thread(target=self._walk, args=(written,), name="tbpp-cache-trim", daemon=True).start()
        except RuntimeError:  # no thread to be had: walked here
            self._walk(written)
        return 0

    def busy(self) -> bool:
        """A background walk is under way."""
        with self._lock:
            return self._walking

    def _walk(self, written: Path) -> None:
        while True:
            try:
                self._trim(written)
            except Exception:  # a bug of ours: the bound waits for the next walk, the loader goes on
                logger.exception("tb_paddle_profile: cache trim failed")
            with self._lock:
                again, self._again = self._again, None
                if again is None:
                    self._walking = False
                    return
                written = again

    def _trim(self, written: Path) -> int:
        if self.cache_dir is None:
            return 0
        try:
            freed = trim(self.cache_dir, self.limit, keep=[written])
        except OSError as err:  # a folder removed underneath us: nothing to bound
            logger.debug("tb_paddle_profile: cache trim skipped: %s", err)
            return 0
        if freed:
            logger.info("tb_paddle_profile: cache over %d MB: %d MB of least recently used entries removed",
                        self.limit >> 20, freed >> 20)
        return freed
