"""Run assembly and the cross-rank analysis of a run, the same for the TensorBoard tab and the CLI.

**Which files form a run, a rank and a span.** A run is a folder holding traces (the tab: each folder
under the logdir, named by its path relative to it, "." for the logdir itself; the CLI's
``distributed``: every trace under the folder it is given). Within a run, a worker is the name Paddle
gave the file (``rank3``, ``host_<hostname>pid_<pid>``, ...), and a span the ``span_indx`` the trace
records. One worker has at most one file per span.

**A worker that exported the same span twice** (a training restarted in the same folder, a profiler
exporting again): the **latest export** (the export time in the file name, then the name) is that
worker's file of the span, the one the run's views and the CLI use. The earlier exports stay listed,
under the span names ``<span>@1`` (the oldest), ``<span>@2``, ... so that they can still be looked at
one by one, and the run's analysis says which files it left out (:func:`duplicate_notes`).

**The cross-rank analysis** of a run and span (:class:`RunAnalyses`) reads the ranks' digests only
(analysis/digest.py, a few KB per rank), is stored in the cache under a key made of the analysis schema
and the sorted cache keys of the ranks' digests (:func:`analysis_key`, also ``RunParallel.analysis_key``),
is computed once per key however many requests ask at the same time (single flight), serves both
formats from the one stored message, and is read back from disk after a restart. A changed trace has
another cache key, hence another analysis key. It is stored in two parts, one blob on disk: the
RunParallel without its matched instances (what ``parallel`` serves) and those instances as columns
(``analysis.crossrank.encode.MatchedTable``), of which ``parallel_matched`` encodes only the page it
answers (:func:`matched_page`).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from tb_paddle_profile.store.lru import SizedLRU
from tb_paddle_profile.core import terminal

logger = terminal.logger(__name__)

# Bump when the analysis changes what it puts into a RunParallel (part of the analysis key).
# 2: the matched instances are stored apart (MATCHED_SUFFIX), not in the RunParallel.
# 5: runs without end noise matched at EXACT_TOL_NS; rank-named clocks refined from the matched groups.
# 6: under end noise, rare collectives split along the communicators the run shows (prior.py), the noise
#    measured again on tighter blocks (shapes.measure_noise).
# 7: RunParallel.layers (the time per layer across ranks, crossrank/layers.py).
# 8: under end noise, clocks refined once from the matched groups, send/recv host edges from a wide window
#    for hosts the first missed, the clock outvote by edges too, the prior's local-GPU candidate; the verdict
#    uncertain only past 1 % of unmatched replay nodes; balanced sequences not replayed.
# 9: CommAxisAcross.busbw (each communicator's bus bandwidth across ranks).
# 10: send/recv lanes, hosts placed where their collectives co-end, pairs grown by augmenting paths; the
#     verdict's host-stall figure (RankParallel.stall_ns).
# 11: the replay's unmatched collectives said as a caveat of the evidence (notes, finding), not an error.
ANALYSIS_SCHEMA = 11
MATCHED_SUFFIX = "-matched"  # the analysis' matched instances: stored under analysis key + this
ANALYSIS_LRU_BYTES = 64 << 20  # analyses kept in memory, serialized


def span_order(span: str):
    base, _, n = span.partition("@")
    return (0, int(base), n, span) if base.isdigit() else (1, 0, n, span)


def _worker_order(item):
    name, spans = item
    rank = next(iter(spans.values())).rank
    return (rank if rank >= 0 else 1 << 30, name)


def assemble(traces: Iterable[Any]) -> Dict[str, Dict[str, Dict[str, Any]]]:
    """run -> worker -> span -> file, in display order (runs by name, workers by rank then name, spans
    by number), with the latest-export rule of the module's docstring. ``traces`` are
    discovery.TraceFile (their ``recorded_span`` is the span the trace records; typed Any: discovery
    imports this module)."""
    grouped: Dict[str, Dict[str, Dict[str, list]]] = {}
    for t in traces:
        recorded = getattr(t, "recorded_span", "") or t.span
        grouped.setdefault(t.run, {}).setdefault(t.worker, {}).setdefault(recorded, []).append(t)
    runs: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for run in sorted(grouped):
        workers = {}
        for worker, by_span in grouped[run].items():
            spans = {}
            for span, files in by_span.items():
                files.sort(key=lambda t: (t.export_time, t.file_name))
                *older, latest = files
                spans[span] = _named(latest, span)
                for i, t in enumerate(older, 1):
                    spans[f"{span}@{i}"] = _named(t, f"{span}@{i}")
            workers[worker] = dict(sorted(spans.items(), key=lambda kv: span_order(kv[0])))
        runs[run] = dict(sorted(workers.items(), key=_worker_order))
    return runs


def _named(t, span: str):
    return t if t.span == span else replace(t, span=span)


def rank_order(f) -> tuple:
    return (f.rank if f.rank >= 0 else 1 << 30, f.worker)


def span_files(workers: Mapping[str, Mapping[str, Any]], span: str) -> List:
    """One file per worker that recorded ``span`` (its latest export), ordered by rank then worker."""
    files = [spans[span] for spans in workers.values() if span in spans]
    files.sort(key=rank_order)
    return files


def duplicate_notes(workers: Mapping[str, Mapping[str, Any]], span: str) -> List[str]:
    """Notes naming the earlier exports of ``span`` that the run's views leave out."""
    notes = []
    for worker, spans in workers.items():
        older = [f for s, f in spans.items() if s.partition("@")[0] == span and "@" in s]
        if older and span in spans:
            notes.append(
                f"{worker} exported span {span} {len(older) + 1} times: the latest "
                f"({spans[span].file_name}) is used; left out: {', '.join(f.file_name for f in older)}."
            )
    return notes


def missing_ranks(files: Sequence, states: Sequence) -> Optional[str]:
    """The one sentence a cross-rank view (Parallel, Distributed) shows when some of its ranks failed or
    are still being written (``states``: the loader's FileState of each of ``files``): which ranks are
    missing and why, and that the view covers the others; None when none is missing. A rank still being
    written (GROWING) does not hold the view back: it is left out until it is complete, and said so."""
    gone = [(f, st) for f, st in zip(files, states) if st.state in (_FAILED, _GROWING)]
    if not gone:
        return None

    def why(f, st) -> str:
        if st.state == _GROWING:
            return f"still being written: {st.error}" if st.error else f"{f.file_name}: still being written"
        return st.error or f.file_name + ": failed"

    named = "; ".join(f"{_rank_name(f)} ({why(f, st)})" for f, st in gone)
    left = len(files) - len(gone)
    verb = "is" if len(gone) == 1 else "are"
    text = (
        f"{len(gone)} of {len(files)} ranks {verb} missing: {named}. "
        f"This view covers the other {left} rank{'' if left == 1 else 's'}."
    )
    if any(st.state == _GROWING for _, st in gone):
        text += " It is computed again once the files being written are complete."
    return text


def blocking(states: Sequence) -> List[bool]:
    """Which ranks a cross-rank view waits for: those queued or being parsed (ready in moments). A rank
    still being written (GROWING: its size changes, or it is truncated JSON modified recently) may stay
    so for minutes, so the view runs on the others without it (missing_ranks), unless no rank is ready."""
    wait = [st.state in (_QUEUED, _LOADING) for st in states]
    if not any(st.state == _READY for st in states):
        wait = [w or st.state == _GROWING for w, st in zip(wait, states)]
    return wait


def _rank_name(f) -> str:
    return f"rank {f.rank}" if f.rank >= 0 else f.worker


# LoadState values (plugin.proto), without importing the protobuf module here
_QUEUED, _LOADING, _READY, _FAILED, _GROWING = 1, 2, 3, 4, 5


# ------------------------------------------------------------------ the analysis


def analysis_key(digest_keys: Iterable) -> str:
    """hash(analysis schema, digest schema, the sorted cache keys of the ranks' digests)."""
    from tb_paddle_profile.analysis.digest import DIGEST_SCHEMA

    parts = sorted(k.digest() if hasattr(k, "digest") else str(k) for k in digest_keys)
    text = "\0".join([f"analysis-{ANALYSIS_SCHEMA}", f"digest-{DIGEST_SCHEMA}"] + parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def analyze_digests(digests: Sequence, run: str, span: str):
    """RunParallel of the ranks' RankDigests: the hybrid-parallel analysis (analysis.crossrank)."""
    from tb_paddle_profile.analysis.crossrank import analyze_run

    return analyze_run(list(digests), run, span)


def analyze_split(digests: Sequence, run: str, span: str):
    """(RunParallel without its matched instances, ``matched_total`` set; those instances as a
    MatchedTable): what RunAnalyses stores, the matched instances apart (the ``parallel`` route
    never sends them; ``parallel_matched`` encodes only the page it answers)."""
    from tb_paddle_profile.analysis.crossrank.build import analyze

    return analyze(list(digests), run, span)


def analysis_blobs(digests: Sequence[bytes], run: str, span: str, key: str) -> Tuple[bytes, bytes]:
    """analyze_split of serialized RankDigests, serialized as RunAnalyses stores it (``key`` its analysis
    key): what a worker process returns (the plugin computes analyses out of its request threads' GIL)."""
    from tb_paddle_profile.v1 import summary_pb2

    message, table = analyze_split([summary_pb2.RankDigest.FromString(d) for d in digests], run, span)
    message.analysis_key = key
    return message.SerializeToString(), table.to_bytes()


def whatif_blob(digests: Sequence[bytes], run: str, span: str) -> bytes:
    """What RunAnalyses.derived stores under whatif_name(..., {}), from serialized RankDigests: the serialized
    RunWhatIf without MFU inputs (present/display/whatif.whatif_answer) and the ranks' MfuInputs, in one blob
    (whatif_of reads it). Run in a worker process by the plugin: the replay, once per analysis key."""
    from tb_paddle_profile.analysis.crossrank.whatif import whatif_parts
    from tb_paddle_profile.present.display.whatif import with_mfu
    from tb_paddle_profile.v1 import summary_pb2

    out, facts = whatif_parts([summary_pb2.RankDigest.FromString(d) for d in digests], run, span)
    return _pair(_WHATIF_MAGIC, with_mfu(out, facts).SerializeToString(), facts.to_bytes() if facts else b"")


def whatif_of(stored: bytes, args: Mapping[str, Any]) -> bytes:
    """The serialized what-if answer for the MFU inputs ``args`` from the blob whatif_blob made: the stored
    answer itself without them, else its MFU made again from the stored MfuInputs (arithmetic on the
    ranks' recorded steps: no replay) and its Display with it."""
    from tb_paddle_profile.analysis.mfu import MfuInputs
    from tb_paddle_profile.present.display.whatif import with_mfu
    from tb_paddle_profile.v1 import whatif_pb2

    parts = _unpair(_WHATIF_MAGIC, stored)
    if parts is None:
        raise ValueError("not a stored what-if answer")
    answer, facts = parts
    if not args:
        return answer
    out = whatif_pb2.RunWhatIf.FromString(answer)
    return with_mfu(out, MfuInputs.from_bytes(facts) if facts else None, **args).SerializeToString()


def summary_first(message, in_place: bool = False):
    """The RunParallel without its matched instances (``matched_total`` says how many there are);
    ``in_place``: strip ``message`` itself (a message just parsed for it) instead of a copy. A
    stored analysis has none already (RunAnalyses keeps them apart) and keeps its matched_total."""
    out = message
    if not in_place:
        out = type(message)()
        out.CopyFrom(message)
    if len(out.matched):
        out.matched_total = len(out.matched)
        del out.matched[:]
    return out


MATCHED_LIMIT = 1000  # instances per parallel_matched page, at most


def matched_page(
    table,
    rank: Optional[int] = None,
    step: Optional[int] = None,
    offset: int = 0,
    limit: int = 100,
    run: str = "",
    span: str = "",
    analysis_key: str = "",
):
    """A MatchedPage of the analysis's matched instances ``table`` (a MatchedTable, its bytes as
    RunAnalyses stores them, or a RunParallel holding them): instances with ``rank`` among their
    members and of ``step`` (both optional), from ``offset``, at most ``limit`` (capped at
    MATCHED_LIMIT). Only the page's instances are encoded."""
    from tb_paddle_profile.analysis.crossrank.encode import MatchedTable
    from tb_paddle_profile.v1 import plugin_pb2

    if isinstance(table, (bytes, bytearray, memoryview)):
        table = MatchedTable.from_bytes(bytes(table))
    elif not isinstance(table, MatchedTable):  # a RunParallel with its matched instances
        run, span, analysis_key = run or table.run, span or table.span, analysis_key or table.analysis_key
        table = MatchedTable.from_message(table.matched)
    limit = max(1, min(int(limit), MATCHED_LIMIT))
    offset = max(0, int(offset))
    chosen = table.select(rank, step)
    page = plugin_pb2.MatchedPage(run=run, span=span, analysis_key=analysis_key, total=chosen.size, offset=offset)
    page.MergeFromString(table.encode(chosen[offset : offset + limit], field_number=6))  # MatchedPage.matched
    return page


class RunAnalyses:
    """Cross-rank analyses by analysis key: in memory (bounded), in the cache folder, computed once.

    An analysis is two parts: the RunParallel without its matched instances, and those instances
    (a MatchedTable's bytes, for matched_page). Both are computed together; in memory they are two
    entries (the key, the key + MATCHED_SUFFIX), on disk one blob under the key (:func:`pack`)."""

    def __init__(self, cache=None, limit: int = ANALYSIS_LRU_BYTES):
        self.cache = cache
        self._memory = SizedLRU(limit)
        self._lock = threading.Lock()
        self._flights: Dict[str, threading.Lock] = {}
        self.computed = 0  # analyses computed by this process (not read back): for tests and status
        self.derived_computed = 0  # what-if answers (derived) computed by this process

    def peek(self, key: str) -> Optional[bytes]:
        """The stored analysis (serialized RunParallel) of ``key`` if it is in memory or in the cache;
        never computes."""
        return self._peek(key, False)

    def _peek(self, key: str, matched: bool) -> Optional[bytes]:
        want = key + MATCHED_SUFFIX if matched else key
        with self._lock:
            data = self._memory.get(want)
        if data is None and self.cache is not None:
            parts = unpack(self.cache.get_analysis(key))
            if parts is not None:
                with self._lock:
                    self._memory.put(key, parts[0])
                    self._memory.put(key + MATCHED_SUFFIX, parts[1])
                data = parts[matched]
        return data

    def get(self, key: str, compute: Callable[[], object]) -> bytes:
        """The serialized RunParallel of ``key`` (without its matched instances); ``compute()`` returns
        runs.analyze_split's pair (or a whole RunParallel) when it is neither in memory nor in the
        cache: once, however many threads ask at the same time."""
        return self._get(key, False, compute)

    def matched(self, key: str, compute: Callable[[], object]) -> bytes:
        """The matched instances of the analysis ``key`` (MatchedTable bytes, for matched_page),
        computed with the analysis (``compute`` as for get) when they are not stored."""
        return self._get(key, True, compute)

    def _get(self, key: str, matched: bool, compute: Callable[[], object]) -> bytes:
        data = self._peek(key, matched)
        if data is not None:
            return data
        with self._lock:
            flight = self._flights.setdefault(key, threading.Lock())
        try:
            with flight:
                data = self._peek(key, matched)
                if data is None:
                    parts = self._compute(key, compute)
                    data = parts[matched]
                    with self._lock:
                        self.computed += 1
                        self._memory.put(key, parts[0])
                        self._memory.put(key + MATCHED_SUFFIX, parts[1])
                    if self.cache is not None:
                        self.cache.put_analysis(key, pack(*parts))
        finally:
            with self._lock:
                if self._flights.get(key) is flight:
                    del self._flights[key]
        return data

    def peek_derived(self, name: str, memory: bool = True) -> Optional[bytes]:
        """The bytes stored under ``name`` by :meth:`derived` (in memory or in the cache); never computes."""
        with self._lock:
            data = self._memory.get(name)
        if data is None and self.cache is not None:
            data = self.cache.get_analysis(name)
            if data is not None and memory:
                with self._lock:
                    self._memory.put(name, data)
        return data

    def derived(self, name: str, compute: Callable[[], bytes], memory: bool = True) -> bytes:
        """Bytes made from an analysis's inputs and stored with it (the what-if answer: whatif_name; the run
        views' answers: answer_name), by ``name``: in memory, in the cache folder (so a restart reads them
        back), or ``compute()``d once however many threads ask at the same time. ``memory`` False: not kept
        in this map's memory (an answer the route memoizes itself, encoded)."""
        data = self.peek_derived(name, memory)
        if data is not None:
            return data
        with self._lock:
            flight = self._flights.setdefault(name, threading.Lock())
        try:
            with flight:
                with self._lock:
                    data = self._memory.get(name)
                if data is None:
                    data = compute()
                    with self._lock:
                        self.derived_computed += 1
                        if memory:
                            self._memory.put(name, data)
                    if self.cache is not None:
                        self.cache.put_analysis(name, data)
        finally:
            with self._lock:
                if self._flights.get(name) is flight:
                    del self._flights[name]
        return data

    @staticmethod
    def _compute(key: str, compute: Callable[[], Any]) -> Tuple[bytes, bytes]:
        from tb_paddle_profile.analysis.crossrank.encode import MatchedTable

        got = compute()
        if isinstance(got, tuple) and isinstance(got[0], bytes):  # analysis_blobs: serialized already
            return got[0], got[1]
        if isinstance(got, tuple):
            message, table = got
        else:  # a whole RunParallel: its matched instances apart
            message = got
            table = MatchedTable.from_message(message.matched)
            summary_first(message, in_place=True)
        message.analysis_key = key
        return message.SerializeToString(), table.to_bytes()


@functools.lru_cache(maxsize=1)
def _code() -> str:
    """A digest of the package's sources (its generated protobuf modules, hence the schemas, included): an
    answer stored with an analysis (the what-if, the run views') is never served by another version of the
    code that makes it. (A list of the modules that matter was short of one at each change.)"""
    root = Path(__file__).resolve().parents[1]  # the package
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        try:
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
        except OSError:  # an installation without its sources: the version alone
            h.update(path.name.encode())
    return h.hexdigest()[:16]


def whatif_name(analysis: str, run: str, span: str, args: Mapping[str, float]) -> str:
    """The name a run's what-if answer (RunWhatIf, before the route's notes) is stored under: its
    inputs' analysis key, the run and span it names, the MFU inputs and the code it comes from. Without
    MFU inputs, whatif_blob's (the answer and the ranks' MfuInputs); with them, the answer alone."""
    return answer_name("whatif-2", analysis, run, span, *[f"{k}={float(v)!r}" for k, v in sorted(args.items())])


def answer_name(kind: str, analysis: str, *made_of: Any) -> str:
    """The name an answer made from the analysis ``analysis`` (or the ranks whose key it is) is stored under
    (RunAnalyses.derived): its kind, that key, what else it is made of (their reprs) and the code."""
    from tb_paddle_profile.core.version import __version__

    text = "\0".join([kind, __version__, _code(), analysis] + [repr(x) for x in made_of])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:40]


_PACK_MAGIC = b"TBPPRA2\n"
_WHATIF_MAGIC = b"TBPPWI1\n"


def _pair(magic: bytes, first: bytes, second: bytes) -> bytes:
    """``magic``, the length of ``first`` (8 bytes, little endian), ``first``, ``second``."""
    return magic + len(first).to_bytes(8, "little") + first + second


def _unpair(magic: bytes, blob: Optional[bytes]) -> Optional[Tuple[bytes, bytes]]:
    head = len(magic) + 8
    if not blob or len(blob) < head or not blob.startswith(magic):
        return None
    n = int.from_bytes(blob[len(magic) : head], "little")
    if head + n > len(blob):
        return None
    return blob[head : head + n], blob[head + n :]


def pack(analysis: bytes, matched: bytes) -> bytes:
    """The one blob an analysis is stored as: a magic line, the RunParallel's length (8 bytes, little
    endian), the RunParallel, the matched instances."""
    return _pair(_PACK_MAGIC, analysis, matched)


def unpack(blob: Optional[bytes]) -> Optional[Tuple[bytes, bytes]]:
    """(RunParallel bytes, matched instances bytes) of a pack()ed blob; None for anything else (it is
    then computed again and stored over)."""
    from tb_paddle_profile.analysis.crossrank.encode import MatchedTable

    parts = _unpair(_PACK_MAGIC, blob)
    if parts is None or not MatchedTable.is_table(parts[1][:64]):
        return None
    return parts
