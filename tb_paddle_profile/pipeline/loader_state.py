"""The loader's files: their states (QUEUED, LOADING, READY, FAILED, GROWING) and what the routes see of
one (FileState), the loader's entry per file (_Entry) and the counts kept as states are set (_Tally); a
job's outcome as the loader's result dict (_as_result), an exception of a worker process (_Remote); the
attributes of Loader, declared for its mixins (_LoaderState)."""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, cast

from tb_paddle_profile.core.pool import Job, WorkerPool
from tb_paddle_profile.store.cache import CacheKey, SummaryCache
from tb_paddle_profile.store.lru import SizedLRU
from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.v1 import plugin_pb2
from tb_paddle_profile.core import terminal

# The loader's one logger, whichever of its modules writes (the CLI quiets it by this name).
logger = terminal.logger("tb_paddle_profile.pipeline.loader")


QUEUED, LOADING, READY, FAILED, GROWING = (
    plugin_pb2.QUEUED,
    plugin_pb2.LOADING,
    plugin_pb2.READY,
    plugin_pb2.FAILED,
    plugin_pb2.GROWING,
)


CHANGED_REASON = "still being written: its size or modification time changed since the last scan"


@dataclass(frozen=True)
class FileState:
    state: plugin_pb2.LoadState
    error: str = ""
    cached: bool = False
    why: str = ""  # FAILED: "" (the file's fault), "transient", "refused", "refused-read" or "bug"
    loading_since: float = 0.0  # LOADING: time.time() when its parse began


class _Tally:
    """The loader's files counted by state, and a change counter per run, kept as states are set: the
    status and runs routes read them without a pass over every file."""

    __slots__ = ("counts", "runs")

    def __init__(self):
        self.counts: Dict[int, int] = collections.Counter()
        self.runs: Dict[str, int] = collections.Counter()

    def moved(self, run: str, old: Optional[int], new: Optional[int]) -> None:
        if old is not None:
            self.counts[old] -= 1
            if not self.counts[old]:
                del self.counts[old]
        if new is not None:
            self.counts[new] += 1
        self.runs[run] += 1


class _Entry:
    __slots__ = (
        "file",
        "_state",
        "tally",
        "error",
        "cached",
        "data",
        "seq",
        "crashes",
        "rounds",
        "not_before",
        "why",
        "first_seen",
        "job",
        "plan",
        "digest",
        "index_path",
        "waiters",
        "side",
        "side_running",
        "loading_since",
        "token",
        "solo",
    )

    def __init__(self, file: TraceFile, seq: int, now: float, tally: Optional[_Tally] = None):
        self.file = file
        self.tally = tally if tally is not None else _Tally()
        self._state: Optional[plugin_pb2.LoadState] = None
        self.state = QUEUED
        self.error = ""
        self.cached = False
        self.data: Optional[bytes] = None  # pinned summary when the disk cache could not take it
        self.seq = seq
        self.crashes = 0  # worker deaths in this round of attempts
        self.rounds = 0  # rounds of attempts that ended in a transient failure, in a row
        self.not_before = 0.0  # monotonic time before which it is not retried
        # GROWING: "changed" or "truncated"; FAILED: "transient" (retried after not_before), "refused",
        # "bug" (not retried) or "" (the file's own fault, cached)
        self.why = ""
        self.first_seen = now
        self.job: Optional[Job] = None
        self.plan: Optional[int] = None  # planned peak memory of its parse
        self.digest: Optional[bytes] = None  # pinned digest when the disk cache could not take it
        self.index_path = ""  # where its last job wrote the timeline index
        self.waiters: List[concurrent.futures.Future] = []  # timeline index requests (request_index)
        self.side = False  # queued for a job that only its timeline index needs (its state unchanged)
        self.side_running = False
        self.loading_since = 0.0
        self.token = 0  # its item in the loader's queue heaps (an older item is stale)
        self.solo = False  # its batch's worker died: it runs in a job of its own

    @property
    def state(self) -> plugin_pb2.LoadState:
        return cast(plugin_pb2.LoadState, self._state)  # set in __init__ (None only before that first set)

    @state.setter
    def state(self, value: plugin_pb2.LoadState) -> None:
        # every change of what the routes show (error, cached, loading_since) comes with a state set
        self.tally.moved(self.file.run, self._state, value)
        self._state = value

    def forget(self) -> None:
        """Out of the loader's tally (the file is no longer listed)."""
        self.tally.moved(self.file.run, self._state, None)


class _LoaderState:
    """The attributes of Loader, declared for the type checker: Loader.__init__ sets them (and says what
    they are); its mixins (loader_queue._Queue, loader_dispatch._Dispatch) read and set them. Annotations
    only: nothing is set here."""

    fs: Any  # an fsspec filesystem
    cache: SummaryCache
    index: bool
    _index_tmp: Optional[tempfile.TemporaryDirectory]
    _digests: SizedLRU
    _resolve: List[Tuple[concurrent.futures.Future, dict]]
    root: Optional[str]
    max_workers: int
    growing_window: float
    _cond: threading.Condition
    _entries: Dict[CacheKey, _Entry]
    _tally: _Tally
    _pending: Dict[CacheKey, _Entry]
    _ready: list
    _by_run: Dict[str, list]
    _run_items: int
    _later: list
    _side: Dict[CacheKey, _Entry]
    _inflight: Dict[CacheKey, int]
    _running: int
    _done: List[Tuple[List[_Entry], Job]]
    _urgent: Set[CacheKey]
    _focus: Optional[str]
    _run_order: Dict[str, int]
    _memory: SizedLRU
    _seq: itertools.count
    _version: int
    _closed: bool
    _executor: Optional[WorkerPool]
    _idle_since: float
    _pool_error: str
    _pool_fails: int
    _pool_retry_at: float
    _owner: str
    stats: Dict[str, int]
    _thread: threading.Thread
    _index_dir: Callable[[], str]  # Loader's method: the folder of the timeline indexes


# ------------------------------------------------------------------ worker side


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _as_result(outcome) -> dict:
    """A JobOutcome as the loader's result dict (a dict passes through: jobs of tests)."""
    if isinstance(outcome, dict):
        return outcome
    kind = "parsed" if outcome.kind == "cached" else outcome.kind
    return {
        "kind": kind,
        "ok": outcome.ok,
        "data": outcome.summary,
        "digest": outcome.digest,
        "error": outcome.error,
        "note": outcome.note,
        "engine_called": outcome.parsed,
        "stored": outcome.stored,
        "cached": outcome.kind == "cached",
        "index_path": outcome.index_path,
        "traceback": outcome.traceback,
    }


def _refused(f: TraceFile) -> str:
    return getattr(f, "refused", "") or ""


class _Remote(Exception):
    """Stands for an exception raised in a worker process, under its own type name (for errors.our_bug)."""

    @staticmethod
    def make(type_name: str, message: str) -> BaseException:
        cls = type(type_name if type_name.isidentifier() else "Exception", (_Remote,), {})
        return cls(message)
