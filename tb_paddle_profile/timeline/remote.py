"""The timeline queries that read many ranks (a window panned or zoomed to, a search, a range) answered in a
worker process from the index files, so that their work runs out of TensorBoard's interpreter: under 50
clients at 1,024 ranks these held its one GIL while the cheap answers waited (cached p99 1.3 s, issue 28).

The plugin (routes/timelines.py) sends what a query is made of: the folder of the rank indexes (the
store's ``folder``: ``<digest[:2]>/<digest>.tl``), the run index's path, one ``RankRef`` per rank (plain
tuples: a few hundred bytes a rank, not a TraceFile), the clock offsets and the query's parameters; the
worker opens the indexes itself (kept open, ``KEEP_OPEN`` of them, as the store does) and returns the
serialized answer (the message's protobuf bytes). When an index it needs is not there (not built yet,
trimmed, damaged, or kept in another folder) it answers ``None`` or names the ranks it could not open, and
the plugin answers in its own process through the store, which has them built (202 while it does): what
is answered is the same either way, from the same functions (messages.window_message,
runindex.search_message and range_message)."""

from __future__ import annotations

import collections
import hashlib
import os
import pickle
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

from tb_paddle_profile.store.files import touch

from .runindex import RunIndex
from .runindex import range_message as run_range_message
from .runindex import search_message as run_search_message
from .storage import CorruptIndex, TimelineIndex

KEEP_OPEN = 64  # rank indexes kept open in a worker (the store keeps as many in the plugin's process)
KEEP_RUNS = 8
TOUCH_EVERY_NS = 60_000_000_000  # (the store's: an index used is the last to be trimmed)


class _Key(str):
    """A digest standing for a TraceFile's CacheKey (``.digest()`` is all the queries ask of it)."""

    def digest(self) -> str:
        return str(self)


class RankRef(NamedTuple):
    """What a query needs of a rank's TraceFile: its worker, rank number (as the run list numbers it), file
    name and the digest of its cache key (which names its index)."""

    worker: str
    rank: int
    file_name: str
    digest: str

    @property
    def key(self) -> _Key:
        return _Key(self.digest)


_refs: "collections.OrderedDict[str, List[RankRef]]" = collections.OrderedDict()
_open: "collections.OrderedDict[str, TimelineIndex]" = collections.OrderedDict()
_runs: "collections.OrderedDict[str, RunIndex]" = collections.OrderedDict()
_stats = {"opens": 0, "pid": os.getpid()}


def stats() -> Dict[str, int]:
    """Rank indexes opened from their files by this process, and its pid (tests)."""
    return dict(_stats, pid=os.getpid())


def forget() -> None:
    """Let go of the open indexes: the next query opens what it needs from the files (tests)."""
    _open.clear()
    _runs.clear()


def pack(refs: List[RankRef]) -> Tuple[str, bytes]:
    """``refs`` as the queries take them: (a token naming them, their pickle), made once per set of ranks by
    the plugin; a worker unpickles a set once (thousands of ranks: milliseconds at every request)."""
    blob = pickle.dumps(refs, protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.sha1(blob).hexdigest(), blob


def _unpack(packed: Tuple[str, bytes]) -> List[RankRef]:
    token, blob = packed
    refs = _refs.get(token)
    if refs is None:
        refs = _refs[token] = pickle.loads(blob)
        while len(_refs) > KEEP_RUNS:
            _refs.popitem(last=False)
    else:
        _refs.move_to_end(token)
    return refs


def _index(folder: str, digest: str) -> Optional[TimelineIndex]:
    """The rank index of ``digest`` under ``folder``, opened once (its checksum once per file version);
    None when it is not there or does not read back (the store deals with it)."""
    path = os.path.join(folder, digest[:2], digest + ".tl")
    idx = _open.get(path)
    if idx is not None:
        _open.move_to_end(path)
        return idx
    try:
        idx = TimelineIndex(path, trace=digest)
    except (OSError, CorruptIndex):
        return None
    _stats["opens"] += 1
    if time.time_ns() - idx.mtime_ns > TOUCH_EVERY_NS:
        touch(Path(path))
    _open[path] = idx
    while len(_open) > KEEP_OPEN:
        _open.popitem(last=False)  # dropped, not closed (its arrays keep the mapping while in use)
    return idx


def _run_index(path: str) -> Optional[RunIndex]:
    """The run index at ``path`` (its name is the key of the ranks it indexes: runindex.run_key)."""
    ri = _runs.get(path)
    if ri is None:
        try:
            ri = RunIndex(path)
        except (OSError, CorruptIndex):
            return None
        _runs[path] = ri
        while len(_runs) > KEEP_RUNS:
            _runs.popitem(last=False)
    else:
        _runs.move_to_end(path)
    return ri


def build_run(folder: str, refs: List[RankRef], target: str) -> bool:
    """Write the run index of ``refs`` at ``target`` (runindex.build_run_index) from their indexes under
    ``folder``; False when one is not there (the store builds it, having the missing index made)."""
    from .runindex import build_run_index

    class Missing(Exception):
        pass

    def indexes():  # each opened once and let go (thousands of ranks: not all kept open at once)
        for ref in refs:
            idx = _transient(folder, ref.digest)
            if idx is None:
                raise Missing
            yield idx

    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        build_run_index(target, [ref.digest for ref in refs], indexes())
    except (Missing, OSError, CorruptIndex):
        return False
    return True


def _transient(folder: str, digest: str) -> Optional[TimelineIndex]:
    """The index of ``digest`` opened without keeping it (a run index's build reads every rank once)."""
    idx = _open.get(os.path.join(folder, digest[:2], digest + ".tl"))
    if idx is not None:
        return idx
    try:
        idx = TimelineIndex(os.path.join(folder, digest[:2], digest + ".tl"), trace=digest)
    except (OSError, CorruptIndex):
        return None
    _stats["opens"] += 1
    return idx


def window(
    folder: str,
    refs: List[RankRef],
    run: str,
    span: str,
    ws: Optional[int],
    we: Optional[int],
    px: int,
    base: Optional[int],
    query: str,
    flows: bool,
    total: int,
    offset: int,
    budget: int,
    clock: Dict[str, int],
) -> Optional[bytes]:
    """messages.window_message of one page of ranks (every one's index ready), serialized; None when an
    index is not there."""
    from .messages import window_message

    ranks = []
    for ref in refs:
        idx = _index(folder, ref.digest)
        if idx is None:
            return None
        ranks.append((ref, idx, ""))
    return window_message(
        run, span, ranks, ws, we, px, base, query, flows, total, offset, budget, clock=clock
    ).SerializeToString()


def _query(folder: str, run_path: str, answer) -> Tuple[Optional[bytes], List[str]]:
    ri = _run_index(run_path)
    if ri is None:
        return None, []
    missed: List[str] = []

    def open_rank(ref: RankRef) -> Optional[TimelineIndex]:
        idx = _index(folder, ref.digest)
        if idx is None:
            missed.append(ref.digest)
        return idx

    return answer(ri, open_rank).SerializeToString(), missed


def search(
    folder: str,
    run_path: str,
    packed: Tuple[str, bytes],
    query: str,
    exact: bool,
    base: Optional[int],
    limit: int,
    clock: Dict[str, int],
) -> Tuple[Optional[bytes], List[str]]:
    """runindex.search_message over the ranks ``packed`` (pack) from the run index at ``run_path``, serialized
    (None when that cannot be opened), and the digests of the ranks it would have opened and could not."""
    refs = _unpack(packed)
    return _query(
        folder,
        run_path,
        lambda ri, open_rank: run_search_message(ri, refs, query, exact, base, limit, clock=clock, open_rank=open_rank),
    )


def range_(
    folder: str,
    run_path: str,
    packed: Tuple[str, bytes],
    ws: int,
    we: int,
    tracks: Dict[str, Optional[List[int]]],
    base: Optional[int],
    clock: Dict[str, int],
) -> Tuple[Optional[bytes], List[str]]:
    """runindex.range_message over the ranks ``packed``, as ``search``."""
    refs = _unpack(packed)
    return _query(
        folder,
        run_path,
        lambda ri, open_rank: run_range_message(ri, refs, ws, we, tracks, base, clock=clock, open_rank=open_rank),
    )
