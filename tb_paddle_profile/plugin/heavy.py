"""Heavy work of the routes (a search or a range over many ranks, a timeline window panned to) on a bounded
executor instead of the request threads. The work itself runs in worker processes (analyses._in_pool): the
cross-rank analyses and what-ifs in one, the timeline queries in another (timeline/remote.py); a task here
waits for its process without the GIL, and computes in this process only when no process can be started
(or a timeline index is missing: the store has it built).

TensorBoard answers each request on its own thread, and they all share one GIL: fifty requests each
computing for seconds made every cheap route (a summary from the memo, the run list) wait behind them
(p99 24-26 s under 50 clients, docs/benchmarks.md). Here at most ``workers`` of them compute at once; the others
wait on their future without taking the GIL, so a cheap request competes with two threads at most. A
request that would queue beyond ``queue`` heavy requests is answered 503 with Retry-After (TransientError).
Work that a heavy task starts itself (a search that needs the analysis's clock) runs inline on that
task's thread: never a deadlock on the executor's own threads."""

from __future__ import annotations

import concurrent.futures
import threading
from typing import Callable, TypeVar

from tb_paddle_profile.core.errors import TransientError

T = TypeVar("T")


class Heavy:
    def __init__(self, workers: int = 2, queue: int = 64):
        self.workers = max(1, int(workers))
        self.queue = max(1, int(queue))
        self._pool = concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="tbpp-heavy")
        self._local = threading.local()
        self._lock = threading.Lock()
        self.pending = 0  # heavy requests submitted and not done
        self.ran = 0  # tasks run on the executor (tests)

    def run(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()`` on the executor, its result or its exception here; inline when called from a task."""
        if getattr(self._local, "inside", False):
            return fn()
        with self._lock:
            if self.pending >= self.queue:
                raise TransientError(what, f"the server is busy with {self.pending} heavy requests; try again shortly")
            self.pending += 1
        try:
            return self._pool.submit(self._call, fn).result()
        finally:
            with self._lock:
                self.pending -= 1

    def _call(self, fn: Callable[[], T]) -> T:
        self._local.inside = True
        try:
            with self._lock:
                self.ran += 1
            return fn()
        finally:
            self._local.inside = False

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
