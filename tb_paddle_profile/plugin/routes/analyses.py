"""What the routes of every family ask of the cross-rank analysis of a run and span: the workers' rank
numbers and labels (the analysis's, or before there is one, Fleet's order and the prior labels from the
ranks' digests), the hosts' clock offsets that the timeline draws on, and the analysis itself, computed
once per analysis key in the heavy worker process (runs.RunAnalyses stores it)."""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
from typing import Dict, List, Mapping, Optional, Tuple

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.pipeline import runs as run_assembly
from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.pipeline.loader import READY
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2
from tb_paddle_profile.core import terminal

from .base import HEAVY_PROCESSES, RoutesBase, SpanFacts, _Reloading
from .http import _CTYPES, _encode, _format, _shown, respond

logger = terminal.logger(__name__)


class AnalysisBase(RoutesBase):
    """RoutesBase with the cross-rank analyses at hand; every family of routes derives from it."""

    def _rank_numbers(self, run: str, workers: Mapping[str, Mapping[str, TraceFile]]) -> Dict[str, int]:
        """worker -> its rank number, as the cross-rank analysis numbers them (analysis/crossrank/load.py):
        from the file names when every one tells a rank and no two the same; else the run's last
        analysis's; before there is one, Fleet's order computed here (hosts in natural order, then the
        GPU of the rank's digest when it is loaded, then the pid), so that Paddle's default worker names
        (host_<host>pid_<pid>) have a rank, a label and links in every view before any analysis."""
        # Made again only when what they come from may have changed (the workers of the scan, the run's last
        # analysis, the states of the files: the GPU of a loaded digest): O(ranks) at each request before.
        # (The loader's version, read without its lock: the run list asks for every run's numbers.)
        made_of = (workers, self._last_analysis.get(run), self.loader.version if self.loader else None)
        with self._lock:
            hit = self._numbers.get(run)
        if hit is not None and hit[0][0] is workers and hit[0][1:] == made_of[1:]:
            return hit[1]
        numbers = self._make_rank_numbers(run, workers)
        with self._lock:
            self._numbers[run] = (made_of, numbers)
        return numbers

    def _make_rank_numbers(self, run: str, workers: Mapping[str, Mapping[str, TraceFile]]) -> Dict[str, int]:
        from tb_paddle_profile.analysis.crossrank.labels import natural_key

        firsts = {w: next(iter(spans.values())) for w, spans in workers.items() if spans}
        told = [f.rank for f in firsts.values()]
        if all(r >= 0 for r in told) and len(set(told)) == len(told):
            return {w: f.rank for w, f in firsts.items()}
        known = self._analysis_facts(self._last_analysis.get(run))[2]
        if known and set(firsts) <= set(known):
            return {w: known[w] for w in firsts}
        order = sorted(
            firsts,
            key=lambda w: (
                natural_key(firsts[w].hostname),
                self._prior(firsts[w])[1],
                firsts[w].pid,
                natural_key(w),
                firsts[w].file_name,
            ),
        )
        return {w: i for i, w in enumerate(order)}

    def _analysis_facts(self, key: Optional[str]) -> Tuple[Dict[str, str], Dict[str, int], Dict[str, int]]:
        """(worker -> label, worker -> clock offset ns, worker -> rank number) of the stored analysis
        ``key`` (in memory or on disk); empty when there is none. Never computes an analysis."""
        if not key:
            return {}, {}, {}
        facts = self._facts.get(key)
        if facts is None:
            data = self.analyses.peek(key)
            if data is None:
                return {}, {}, {}
            msg = plugin_pb2.RunParallel.FromString(data)
            facts = (
                {r.worker: r.label for r in msg.ranks if r.label},
                {r.worker: r.clock_offset_ns for r in msg.ranks if r.clock_offset_ns},
                {r.worker: r.rank for r in msg.ranks},
            )
            self._facts.put(key, facts)
        return facts

    def _labels(self, run: str) -> Dict[str, str]:
        """worker -> label from the run's last cross-rank analysis, when there is one (in memory or on disk)."""
        return self._analysis_facts(self._last_analysis.get(run))[0]

    def _clock(self, run: str, span: str, files: Optional[List[TraceFile]] = None) -> Dict[str, int]:
        """worker -> its host's clock offset from the cross-rank analysis of this run and span (the
        timeline draws every rank on the corrected clock: the span's analysis is read back, or made now
        when none is stored for its ranks as they are; each rank on its own clock only while a rank is
        still being parsed or when the analysis fails)."""
        del files  # the offsets come from every rank of the span, whichever are drawn
        if self.loader is None:
            return {}
        facts = self._span_facts(run, span)  # (refused ranks are FAILED: neither blocking nor ready)
        if not facts.files or any(facts.blocking):
            return {}  # a rank being parsed: the inputs of the offsets are not known yet
        ready = list(facts.ready)
        if not ready:
            return {}
        # Keyed by the inputs the offsets come from: a host's traces exported again (new keys) give
        # another key, whose analysis is made now rather than the old one's offsets applied.
        key = facts.key
        if key != self._last_span_analysis.get((run, span)) and self.analyses.peek(key) is None:
            try:
                self.analyses.get(key, lambda: self._compute_analysis(ready, run, span))
            except _Reloading:
                return {}
            except Exception:  # an offset is never worth a failed timeline: drawn on each rank's clock
                logger.exception("tb_paddle_profile: no clock offsets for %s span %s", _shown(run), _shown(span))
                return {}
            self._last_span_analysis[(run, span)] = key
        return self._analysis_facts(key)[1]

    def _digest_blobs(self, ready: List[TraceFile]) -> List[bytes]:
        digests = []
        for trace in ready:
            data = self._require_loader().digest_bytes(trace)
            if data is None:  # never an analysis without it (it would be stored as the run's)
                raise _Reloading
            digests.append(data)
        return digests

    def _compute_analysis(self, ready: List[TraceFile], run: str, span: str):
        """The analysis of ``ready`` (runs.analysis_blobs, the matched instances apart), in the heavy
        worker process."""
        key = run_assembly.analysis_key(t.key for t in ready)
        return self._in_process(run_assembly.analysis_blobs, self._digest_blobs(ready), run, span, key)

    def _in_process(self, fn, *args):
        """``fn(*args)`` in the analyses' worker process (HEAVY_PROCESSES: its pool queues the others), out of
        the request threads' GIL; on the heavy executor of this process when no process can be started."""
        got = self._in_pool("analyses", fn, *args)
        if got is _NO_PROCESS:
            return self._heavy.run(getattr(fn, "__name__", "analysis"), lambda: fn(*args))
        return got

    def _in_views(self, fn, *args):
        """``fn(*args)`` in the run views' worker process (an answer made from a stored analysis or the ranks'
        digests), here when no process can be started. Not the timeline queries' process: at 4,096 ranks
        under 50 clients those took 7-13 s each and the page's answers waited behind them (cached p99 3.8 s)."""
        got = self._in_pool("answers", fn, *args)
        return fn(*args) if got is _NO_PROCESS else got

    def _in_pool(self, which: str, fn, *args):
        """``fn(*args)`` in the worker process of ``which`` ("analyses": the cross-rank analyses and what-ifs;
        "views": the timeline queries over many ranks; "answers": the run views' answers made from a stored
        analysis; neither waits behind an analysis, nor the answers behind a timeline query), started when
        first needed, at a lower priority than TensorBoard's (nice 5, as the loader's: cheap answers first);
        _NO_PROCESS when none can be started or it died (once: the next call starts another)."""
        with self._lock:
            pool = self._procs.get(which)
            if pool is None and which not in self._procs_failed:
                try:
                    from tb_paddle_profile.core.pool import lower_priority, process_pool

                    pool = self._procs[which] = process_pool(HEAVY_PROCESSES, lower_priority)
                except Exception:  # no process (resources, platform): computed in this process
                    logger.warning(
                        "tb_paddle_profile: no worker process for %s; computing in TensorBoard's process",
                        which,
                        exc_info=True,
                    )
                    self._procs_failed.add(which)
        if pool is None:
            return _NO_PROCESS
        try:
            return pool.submit(fn, *args).result()
        except concurrent.futures.process.BrokenProcessPool:  # the process died (memory?): this one here
            with self._lock:
                if self._procs.get(which) is pool:
                    del self._procs[which]
            logger.warning(
                "tb_paddle_profile: the %s worker process died; computing %s here", which, getattr(fn, "__name__", "it")
            )
            return _NO_PROCESS

    def _prior_label(self, trace: TraceFile, rank: Optional[int] = None, ready: Optional[bool] = None) -> str:
        """The label before any analysis: analysis.crossrank.labels.prior_label of the rank's digest (when
        it is at hand; ``rank``: its number in Fleet's order when the name tells none), else the worker name."""
        label = self._prior(trace, rank, ready)[0]
        return label or trace.worker

    def _prior(self, trace: TraceFile, rank: Optional[int] = None, ready: Optional[bool] = None) -> Tuple[str, int]:
        """(the rank's prior label or "", its GPU or -1) from its digest, when it is loaded. ``ready``: whether
        the file is READY, when the caller has its state already (the run list: one lock for the run's files,
        not one per file that is not loaded yet, which the loader's dispatcher then queues behind)."""
        rank = prior_rank(trace, rank)
        memo = (trace.key, rank)
        got = self._priors.get(memo)
        if got is not None:
            return got
        got = ("", -1)
        if ready is None:
            ready = self.loader is not None and self.loader.states([trace])[0].state == READY
        if self.loader is not None and ready:
            data = self.loader.digest_bytes(trace)
            if data is not None:
                got = digest_prior(data, rank, trace.file_name)
                self._priors.put(memo, got)
        return got

    def _analysis(self, request: Request, matched: bool = False):
        """(run, span, files, states, analysis key, serialized RunParallel) of the run and span named by
        the request, or a 202 Response while ranks load; see runs.RunAnalyses. ``matched``: the
        analysis's matched instances (MatchedTable bytes) instead of the RunParallel."""
        run, span, facts = self._run_span_facts(request)
        files = list(facts.files)
        fmt = _format(request)
        got = self._settled(request, run, span, facts, fmt, plugin_pb2.RunParallel)
        if isinstance(got, Response):
            return got
        states, ready, key = got
        try:
            data = self._analysis_data(run, span, ready, key, matched)
        except _Reloading:
            return _waiting(request, plugin_pb2.RunParallel(run=run, span=span), RELOADING, fmt)
        return run, span, files, states, key, data

    def _analysis_data(self, run: str, span: str, ready: List[TraceFile], key: str, matched: bool = False) -> bytes:
        """The analysis ``key`` of the ``ready`` ranks (read back, or computed once in the heavy worker process),
        the run's and span's last from now on; _Reloading when a rank's digest went away."""

        def compute():
            return self._compute_analysis(ready, run, span)

        data = self.analyses.matched(key, compute) if matched else self.analyses.get(key, compute)
        self._used_analysis(run, span, key)
        return data

    def _used_analysis(self, run: str, span: str, key: str) -> None:
        """The analysis ``key`` (stored) is the run's and the span's last: its labels and clock offsets."""
        self._last_analysis[run] = key
        self._last_span_analysis[(run, span)] = key

    def _settled(self, request: Request, run: str, span: str, facts: SpanFacts, fmt: str, message):
        """(the files' states, the READY files, their analysis key) once no rank blocks the span's
        analysis; else a 202 answering ``message`` (RunParallel, RunWhatIf) with a note, the ranks that
        block it loaded first."""
        loader = self._require_loader()
        files = facts.files
        waiting = [t for t, block in zip(files, facts.blocking) if block]
        if waiting:
            loader.prioritize(waiting, run)
            return _waiting(
                request, message(run=run, span=span), f"waiting for {len(waiting)} of {len(files)} ranks to load", fmt
            )
        return list(facts.states), list(facts.ready), facts.key


RELOADING = "waiting for a rank whose cached digest is being computed again"


def prior_rank(trace: TraceFile, rank: Optional[int]) -> Optional[int]:
    """The rank number a prior label names: ``rank`` (Fleet's order, when the file name tells none), else
    the file name's, else none."""
    if rank is None or rank == trace.rank:
        return trace.rank if trace.rank >= 0 else None
    return rank


def digest_prior(data: bytes, rank: Optional[int], file_name: str = "") -> Tuple[str, int]:
    """(the prior label, the GPU) of a rank from its serialized RankDigest (labels.prior_label; ``rank``:
    prior_rank's); ("", -1) when it cannot be made (a label is never worth a failed answer)."""
    try:
        from tb_paddle_profile.analysis.crossrank.labels import prior_label

        d = summary_pb2.RankDigest.FromString(data)
        return prior_label(d.meta, d.device_id, rank), int(d.device_id)
    except Exception:
        logger.debug("tb_paddle_profile: no label for %s", file_name, exc_info=True)
        return "", -1


_NO_PROCESS = object()  # _in_pool: no worker process to compute it in


def _waiting(request: Request, out, note: str, fmt: str) -> Response:
    """The 202 of a run view while ranks load: its message ``out`` with the ``note`` saying so."""
    out.notes.append(note)
    return respond(request, _encode(out, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
