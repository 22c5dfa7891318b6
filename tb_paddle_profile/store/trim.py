"""The cache folder's bound (``TB_PADDLE_PROFILE_CACHE_MAX_MB``): the least recently used entries deleted
after writes, at most every TRIM_INTERVAL_S seconds, and writes a kill left behind. A process keeps the
folder's size as it writes and walks it a slice at a time (Trimmer): the whole folder is walked once, then
only when its size passes the bound."""

from __future__ import annotations

import os
import re
import threading
import time
import weakref
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from tb_paddle_profile.core import settings
from tb_paddle_profile.core import terminal


# The cache's one logger, whichever of its modules writes.
logger = terminal.logger("tb_paddle_profile.store.cache")

ENV_CACHE_MAX_MB = settings.CACHE_MAX_MB
DEFAULT_CACHE_MAX_MB = 8192
TRIM_INTERVAL_S = 30.0  # a folder is walked at most this often per Trimmer
SLICE_ENTRIES = 4096  # entries a tick looks at (whole subfolders, the last one may pass it) once the folder is known
STALE_PART_S = 3600.0  # a .tmp-*.part older than this is a write a kill left behind: trimmed
# The entry files the bound applies to: <cache>/v<N>/xx/<digest>.pb (summaries),
# <cache>/timeline-v<N>/xx/<digest>.tl (timeline indexes), <cache>/digest-v<N>/xx/<digest>.dg (rank digests)
# and <cache>/analysis-v<N>/xx/<key>.ra (cross-rank analyses), any layout version N; nothing else is touched.
_ENTRY_FOLDER = re.compile(r"(v|timeline-v|digest-v|analysis-v)[0-9]+")
_ENTRY_SUFFIX = {"v": ".pb", "timeline-v": ".tl", "digest-v": ".dg", "analysis-v": ".ra"}


def cache_limit_bytes() -> int:
    """The cache folder's bound in bytes from ``TB_PADDLE_PROFILE_CACHE_MAX_MB`` (0: none)."""
    return settings.megabytes(ENV_CACHE_MAX_MB, DEFAULT_CACHE_MAX_MB)


def _entries(
    cache_dir: Path, stale: Optional[list] = None, subfolders: Optional[list] = None
) -> List[Tuple[float, int, Path]]:
    """(mtime, size, path) of the entries; `stale`, when given, gets the same of the .tmp-*.part files
    older than STALE_PART_S (left by a writer killed half way); `subfolders` the entry subfolders walked."""
    found: List[Tuple[float, int, Path]] = []
    for sub, suffix in _subfolders(cache_dir):
        if subfolders is not None:
            subfolders.append((sub, suffix))
        _walk_subfolder(sub, suffix, found, stale)
    return found


def _subfolders(cache_dir: Path) -> List[Tuple[str, str]]:
    """(path, entry suffix) of every entry subfolder (<cache>/<kind>-v<N>/xx), in a stable order."""
    out = []
    for root in sorted(os.scandir(cache_dir), key=lambda e: e.name):
        m = _ENTRY_FOLDER.fullmatch(root.name)
        if m is None or not root.is_dir(follow_symlinks=False):
            continue
        suffix = _ENTRY_SUFFIX[m.group(1)]
        for sub in sorted(os.scandir(root.path), key=lambda e: e.name):
            if sub.is_dir(follow_symlinks=False):
                out.append((sub.path, suffix))
    return out


def _walk_subfolder(sub: str, suffix: str, found: list, stale: Optional[list]) -> None:
    old = time.time() - STALE_PART_S
    for entry in os.scandir(sub):
        if stale is not None and entry.name.startswith(".tmp-") and entry.name.endswith(".part"):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_mtime < old and entry.is_file(follow_symlinks=False):
                stale.append((st.st_mtime, st.st_size, Path(entry.path)))
            continue
        if entry.name.endswith(suffix) and not entry.name.startswith(".") and entry.is_file(follow_symlinks=False):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append((st.st_mtime, st.st_size, Path(entry.path)))


def _unlink_all(files: Iterable[Tuple[float, int, Path]]) -> int:
    freed = 0
    for _, size, path in files:
        try:
            path.unlink()
        except OSError:
            continue
        freed += size
    return freed


def trim(cache_dir: Path, limit: int, keep: Iterable[Path] = ()) -> int:
    """Delete the least recently used entries until the folder's entries fit in 90 % of ``limit``
    bytes (``keep``: paths never deleted, e.g. the entry just written). Returns the bytes freed."""
    return _trim_walk(cache_dir, limit, keep)[0]


def _trim_walk(cache_dir: Path, limit: int, keep: Iterable[Path] = ()) -> Tuple[int, Dict[str, int], list, int]:
    """trim's walk: (bytes freed, subfolder -> bytes of its entries left, the subfolders walked in order,
    the entries looked at); the paths absolute."""
    if limit <= 0:
        return 0, {}, [], 0
    stale: list = []
    subfolders: list = []
    entries = _entries(Path(os.path.abspath(cache_dir)), stale, subfolders)
    parts = _unlink_all(stale)
    total = sum(size for _, size, _ in entries)
    gone = set()
    freed = 0
    if total > limit:
        keep = {Path(os.path.abspath(p)) for p in keep}
        target = int(limit * 0.9)
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
            gone.add(path)
    sizes: Dict[str, int] = {sub: 0 for sub, _ in subfolders}
    for _, size, path in entries:
        if path not in gone:
            sizes[str(path.parent)] = sizes.get(str(path.parent), 0) + size
    return parts + freed, sizes, subfolders, len(entries) + len(stale)


class _Book:
    """What a process knows of a cache folder's entries, shared by its Trimmers of that folder: the bytes of
    each entry subfolder when it was last walked, plus the entries written there since (as told by
    after_write), their sum, and where the next slice walk starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sizes: Dict[str, int] = {}
        self.total = 0
        self.order: List[Tuple[str, str]] = []  # (subfolder, suffix) in walking order
        self.cursor = 0
        self.walked = False  # a whole walk has been made (the first tick makes one)
        self.last = -float("inf")  # monotonic time of the last tick

    def add(self, sub: str, size: int) -> None:
        self.sizes[sub] = self.sizes.get(sub, 0) + size
        self.total += size

    def set(self, sub: str, size: int) -> None:
        self.total += size - self.sizes.get(sub, 0)
        self.sizes[sub] = size


_books: "weakref.WeakValueDictionary[str, _Book]" = weakref.WeakValueDictionary()
_books_lock = threading.Lock()


def _book(folder: Path) -> _Book:
    name = os.path.abspath(folder)
    with _books_lock:
        got = _books.get(name)
        if got is None:
            got = _books[name] = _Book()
        return got


class Trimmer:
    """Keeps a cache folder under its bound after writes, at a cost per tick that does not grow with the
    folder (a walk of every entry every TRIM_INTERVAL_S takes seconds at 400,000 entries).

    The first tick (at most every TRIM_INTERVAL_S seconds after a write) walks the whole folder as
    :func:`trim` does; from then on the process keeps the folder's size (a ``_Book``, shared by its
    Trimmers of the folder): each write it is told of adds the entry's size, and each later tick walks a
    slice of the folder, the next subfolders in turn until SLICE_ENTRIES entries were looked at, so that
    what other processes wrote or removed is seen within a round of the folder, and .tmp-*.part files a
    kill left behind are removed. When the size known passes the bound, the whole folder is
    walked and trimmed as :func:`trim` does (the least recently used entries down to 90 %, the entry just
    written kept), and the size known is set from that walk: whole walks come at most once per 10 % of
    the bound written, a constant cost per byte written however large the folder."""

    def __init__(self, cache_dir: Optional[Path], limit: Optional[int] = None):
        self.cache_dir = cache_dir
        self.limit = cache_limit_bytes() if limit is None else limit
        self._lock = threading.Lock()
        self._book = _book(cache_dir) if cache_dir is not None and self.limit > 0 else None
        self._walking = False  # a background walk is under way
        self._again: Optional[Path] = None  # a walk asked for while it was: run once more after it
        self.visited = 0  # entries the last tick looked at (for tests)
        self.whole_walks = 0  # ticks that walked the whole folder (for tests)

    def after_write(self, written: Path, background: bool = False, also: Iterable[Path] = ()) -> int:
        """Count the entry ``written`` (and the entries ``also`` written with it: a job's digest and index)
        in the folder's size; trim when TRIM_INTERVAL_S has passed since the last tick; the bytes freed.
        ``background``: the tick runs on a thread of its own, one at a time, and 0 is returned (the
        loader's dispatcher does not wait for it)."""
        book = self._book
        if self.cache_dir is None or self.limit <= 0 or book is None:
            return 0
        for path in (written, *also):
            try:
                size = os.stat(path).st_size
            except OSError:
                continue
            with book.lock:
                book.add(os.path.dirname(os.path.abspath(path)), size)
        with book.lock:
            now = time.monotonic()
            if now - book.last < TRIM_INTERVAL_S:
                return 0
            book.last = now
        if background:
            with self._lock:
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
        book = self._book
        if self.cache_dir is None or book is None:
            return 0
        try:
            with book.lock:
                whole = not book.walked or book.total > self.limit
            if not whole:
                freed = self._slice(book)
                with book.lock:
                    whole = book.total > self.limit
            if whole:
                freed = self._whole(book, written)
        except OSError as err:  # a folder removed underneath us: nothing to bound
            logger.debug("tb_paddle_profile: cache trim skipped: %s", err)
            return 0
        if freed:
            logger.info(
                "tb_paddle_profile: cache over %d MB: %d MB of least recently used entries removed",
                self.limit >> 20,
                freed >> 20,
            )
        return freed

    def _whole(self, book: _Book, written: Path) -> int:
        assert self.cache_dir is not None
        freed, sizes, subfolders, self.visited = _trim_walk(self.cache_dir, self.limit, keep=[written])
        self.whole_walks += 1
        with book.lock:
            book.sizes, book.total = sizes, sum(sizes.values())
            book.order, book.cursor, book.walked = subfolders, 0, True
        return freed

    def _slice(self, book: _Book) -> int:
        """Walk the next subfolders until SLICE_ENTRIES entries were looked at: their sizes as they are
        now, their stale .tmp-*.part files removed; a round of the folder ends with its subfolders listed
        again (new ones walked in the next round). The bytes of the parts removed."""
        assert self.cache_dir is not None
        visited = freed = 0
        with book.lock:
            if book.cursor >= len(book.order):
                book.order, book.cursor = [], 0
            order, cursor = book.order, book.cursor
        if not order:
            order = _subfolders(Path(os.path.abspath(self.cache_dir)))
            listed = {sub for sub, _ in order}
            with book.lock:
                book.order, book.cursor = order, 0
                for sub in [s for s in book.sizes if s not in listed]:  # removed since: nothing there
                    book.set(sub, 0)
                    del book.sizes[sub]
            cursor = 0
        while cursor < len(order) and visited < SLICE_ENTRIES:
            sub, suffix = order[cursor]
            cursor += 1
            found: list = []
            stale: list = []
            try:
                _walk_subfolder(sub, suffix, found, stale)
            except OSError:  # a subfolder removed: nothing there
                pass
            freed += _unlink_all(stale)
            visited += len(found) + len(stale)
            with book.lock:
                book.set(sub, sum(size for _, size, _ in found))
        with book.lock:
            book.cursor = cursor
        self.visited = visited
        return freed
