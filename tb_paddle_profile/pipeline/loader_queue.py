"""The loader's queue (a mixin of Loader, under its lock): the pending entries in heaps (asked for first,
then the run being looked at, then the run order; retries filed for later), which entry goes next
(_pick), and whether it may start now or join the job started last (_can_start, _joins)."""

from __future__ import annotations

import heapq
import time
from typing import List, Optional

from tb_paddle_profile.store.cache import CacheKey
from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.pipeline.loader_plan import (
    BATCH_BYTES,
    BATCH_FILES,
    JSON_MEMORY_FACTOR,
    MEMORY_FRACTION,
    available_memory,
    memory_estimate,
)
from tb_paddle_profile.pipeline.loader_state import FAILED, GROWING, QUEUED, _Entry, _LoaderState


class _Queue(_LoaderState):
    """The queue's methods of Loader (its state is set up by Loader.__init__)."""

    def _touch(self) -> None:
        self._version += 1
        self._cond.notify_all()

    def _recent(self, e: _Entry, now: float) -> bool:
        modified = e.file.mtime if e.file.mtime is not None else e.first_seen
        return now - modified < self.growing_window

    def _set_growing(self, e: _Entry, why: str, error: str) -> None:
        e.state, e.why, e.error, e.cached = GROWING, why, error, False
        self._pending.pop(e.file.key, None)

    def _enqueue(self, e: _Entry, error: str = "", not_before: float = 0.0) -> None:
        e.state, e.error, e.cached, e.why = QUEUED, error, False, ""
        e.not_before = not_before
        self._pending[e.file.key] = e
        self._push(e)

    def _rank(self, e: _Entry) -> tuple:
        """Its place in the ready heap: asked for first, then by the run order (the run being looked at
        goes before them all but the asked for: _pick takes it from its run's heap)."""
        tier = 0 if e.file.key in self._urgent else 1
        return (tier, self._run_order.get(e.file.run, len(self._run_order)), e.seq)

    def _file_ready(self, e: _Entry) -> None:
        heapq.heappush(self._ready, (self._rank(e), e.token, e.file.key))
        heapq.heappush(self._by_run.setdefault(e.file.run, []), (e.seq, e.token, e.file.key))
        self._run_items += 1

    def _push(self, e: _Entry) -> None:
        """(Re)file a pending entry in the queue's heaps at its current rank: O(log n)."""
        e.token += 1
        if e.not_before > time.monotonic():
            heapq.heappush(self._later, (e.not_before, e.seq, e.token, e.file.key))
        else:
            self._file_ready(e)
        if len(self._ready) + len(self._later) + self._run_items > 4 * len(self._pending) + 64:
            self._reorder()  # mostly stale items: rebuilt, so that the heaps stay O(pending)

    def _make_urgent(self, key: CacheKey) -> None:
        self._urgent.add(key)
        e = self._pending.get(key)
        if e is not None:
            self._push(e)

    def _reorder(self) -> None:
        """Rebuild the heaps from the pending entries (the run order changed): O(n)."""
        self._ready, self._later, self._by_run = [], [], {}
        for e in self._pending.values():
            e.token += 1
            if e.not_before > time.monotonic():
                self._later.append((e.not_before, e.seq, e.token, e.file.key))
            else:
                self._ready.append((self._rank(e), e.token, e.file.key))
                self._by_run.setdefault(e.file.run, []).append((e.seq, e.token, e.file.key))
        self._run_items = len(self._ready)
        heapq.heapify(self._ready)
        heapq.heapify(self._later)
        for heap in self._by_run.values():
            heapq.heapify(heap)

    def _live(self, key: CacheKey, token: int) -> Optional[_Entry]:
        e = self._pending.get(key)
        return e if e is not None and e.token == token else None

    def _root_of(self, f: TraceFile) -> Optional[str]:
        return getattr(f, "root", "") or self.root

    def _refuse(self, e: _Entry, reason: str) -> None:
        self._pending.pop(e.file.key, None)
        self._urgent.discard(e.file.key)
        e.state, e.why, e.error, e.cached = FAILED, "refused", f"{e.file.file_name}: {reason}", False

    def _plan(self, e: _Entry) -> int:
        if e.plan is None:
            e.plan = memory_estimate(e.file)
        return e.plan

    def _side_jobs(self) -> List[_Entry]:
        return [e for e in self._side.values() if e.side and not e.side_running]

    def _pick(self, now: float) -> Optional[_Entry]:
        if now < self._pool_retry_at:
            return None
        side = self._side_jobs() if self._running < self.max_workers else []
        if side:
            return min(side, key=lambda e: e.seq)
        while self._later and self._later[0][0] <= now:  # retries now due
            _, _, token, key = heapq.heappop(self._later)
            e = self._live(key, token)
            if e is not None:
                self._file_ready(e)
        top = self._top(None, now)
        if top is not None and self._ready[0][0][0] == 0:  # asked for
            return top
        if self._focus is not None:
            focused = self._top(self._focus, now)
            if focused is not None:
                return focused
        return top

    def _top(self, run: Optional[str], now: float) -> Optional[_Entry]:
        """The due entry at the top of the ready heap (``run`` None) or of that run's heap; the stale
        items above it are dropped, an entry not due yet is filed for later."""
        while True:
            heap = self._ready if run is None else self._by_run.get(run)
            if not heap:
                return None
            token, key = heap[0][1], heap[0][2]
            e = self._live(key, token)
            if e is not None and e.not_before <= now:
                return e
            heapq.heappop(heap)
            if run is not None:
                self._run_items -= 1
            if e is not None:
                self._push(e)

    def _next_wake(self, now: float) -> float:
        """Seconds until a waiting retry is due (at most 1)."""
        times = [self._later[0][0]] if self._later and self._later[0][0] > now else []
        if self._pool_retry_at > now:
            times.append(self._pool_retry_at)
        return max(0.01, min([1.0] + [t - now for t in times]))

    def _can_start(self, e: _Entry) -> bool:
        if self._running >= self.max_workers:
            return False
        if not self._inflight:
            return True  # one file at a time always goes, however large
        if e.crashes:
            return False  # a file whose worker died is retried alone (the kernel may have killed it for memory)
        avail = available_memory()
        if avail is None:
            return True
        return sum(self._inflight.values()) + self._plan(e) <= MEMORY_FRACTION * avail

    def _batchable(self, e: _Entry) -> bool:
        return not (e.side or e.side_running or e.solo or e.crashes or e.file.gzipped) and e.file.size <= BATCH_BYTES

    def _joins(self, batch: list, e: _Entry) -> bool:
        """Whether ``e`` goes in the same worker job as ``batch`` (small files: see BATCH_FILES)."""
        if len(batch) >= BATCH_FILES or not self._batchable(batch[0][0]) or not self._batchable(e):
            return False
        if sum(m.file.size for m, _ in batch) + e.file.size > BATCH_BYTES:
            return False
        avail = available_memory()
        return (
            avail is None or sum(self._inflight.values()) + JSON_MEMORY_FACTOR * e.file.size <= MEMORY_FRACTION * avail
        )
