"""The run views' routes, across the ranks of a run and span: ``distributed`` (every rank's
RankDistributed and the view's tables), ``parallel`` (the cross-rank analysis, summary first),
``parallel_matched`` (a page of its matched instances), ``rank_banner`` (what the stored analysis says
of one rank) and ``whatif`` (the critical path and the what-if estimates); 202 while ranks load. And
their tables as CSV (the ``csv`` route without a worker)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, cast

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.pipeline import runs as run_assembly
from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.pipeline.loader import FAILED, LOADING, QUEUED, READY, Loader
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

from .analyses import _NO_PROCESS, RELOADING, AnalysisBase, _waiting
from .base import _Reloading
from .http import (_CSV, _CTYPES, HttpError, _download_name, _encode, _format, _handler, _int, _param, _shown,
                   _text, respond)

# The tables of the parallel view that its summary draws (the rest are per rank: thousands of rows)
SUMMARY_TABLES = ("stragglers", "findings", "outliers", "advice_triggers", "topology")
# part=details leaves out the per-step breakdown beyond this many bars (a row per rank and step): the page opens
# its breakdown chart on the ranks' means then (parallel/ChartCards.tsx MAX_PER_STEP_BARS) and asks for the
# table (part=breakdown_steps) when the per-step bars are picked
DETAIL_STEP_ROWS = 160
PARALLEL_PARTS = ("summary", "details", "breakdown_steps")


class ParallelRoutes(AnalysisBase):
    """distributed, parallel, rank_banner, parallel_matched, whatif."""

    @_handler
    def distributed(self, request: Request) -> Response:
        run, span, facts = self._run_span_facts(request)
        fmt = _format(request)
        # part=summary: the charts' series without the view's per-rank tables (what a folded Distributed view
        # of many ranks draws before its details are opened); part=details: every table (what the page draws
        # once they are opened); both without the ranks' own figures, which the tables carry
        part = _param(request, "part", required=False)
        if part not in ("", "summary", "details"):
            raise HttpError(400, f"unknown part {_shown(part)} (summary, details, or none for the whole answer)")
        self._require_loader()
        numbers = self._rank_numbers(run, self._run(self._snapshot(), request, refused=True)[1])
        order = sorted(range(len(facts.files)), key=lambda i: (numbers.get(facts.files[i].worker, 1 << 30),
                                                                facts.files[i].worker))
        files = [facts.files[i] for i in order]
        states = [facts.states[i] for i in order]
        blocks = [facts.blocking[i] for i in order]
        if not any(b or st.state in (QUEUED, LOADING) for b, st in zip(blocks, states)):
            # Every rank settled: memoized under what the answer is made of (the files' versions and
            # states: facts.sig, the rank numbers, the analysis whose labels it shows), built once.
            memo = ("distributed", run, span, facts.sig, tuple(numbers.get(f.worker, f.rank) for f in files),
                    self._last_analysis.get(run), part, fmt)
            try:
                return self._send(request, memo, _CTYPES[fmt],
                                  lambda: _encode(self._distributed(run, span, files, states, blocks, numbers, part,
                                                                    settled=True)[0], fmt))
            except _Reloading:  # a READY rank's digest vanished: it is being loaded again
                states = self._states(files)
                blocks = run_assembly.blocking(states)
        out, waiting = self._distributed(run, span, files, states, blocks, numbers, part)
        return respond(request, _encode(out, fmt), _CTYPES[fmt], 202 if waiting else 200,
                       [("Retry-After", "1")] if waiting else [])

    def _distributed(self, run: str, span: str, files: List[TraceFile], states, blocks, numbers: Dict[str, int],
                     part: str, settled: bool = False):
        """(RunDistributed, the ranks it waits for); ``settled``: _Reloading instead of waiting."""
        loader = self._require_loader()
        out = plugin_pb2.RunDistributed(run=run, span=span)
        waiting = []
        for trace, state, block in zip(files, states, blocks):
            rank = out.ranks.add()
            encoded = self._rank_part(trace) if state.state == READY else None
            if encoded is not None:
                rank.MergeFromString(encoded)
            elif state.state == READY:  # its cache entry vanished; it is being loaded again
                if settled:
                    raise _Reloading
                state = loader.state(trace)
            rank.worker, rank.state, rank.error = trace.worker, state.state, state.error
            rank.rank = numbers.get(trace.worker, trace.rank)
            rank.file_version = trace.key.digest()[:16]
            if block or state.state in (QUEUED, LOADING):
                waiting.append(trace)
        loader.prioritize(waiting, run)
        # The Distributed view's tables once every rank is ready; while some load, the charts' series of the
        # ranks read so far, marked partial (present/display/distributed.py)
        from tb_paddle_profile.present.display.distributed import CHART_TABLES, distributed_display

        labels = dict(self._labels(run))  # the analysis's; before there is one, the prior labels (as the run list)
        labels.update({t.worker: self._prior_label(t, numbers.get(t.worker), st.state == READY)
                       for t, st in zip(files, states) if t.worker not in labels})
        out.display.CopyFrom(distributed_display(out, labels, partial=bool(waiting)))
        if not waiting:
            _add_missing(out.display, "distributed", run_assembly.missing_ranks(files, states))
            if part:  # the page's: each rank's name, number and state; its figures are the tables' cells
                for r in out.ranks:
                    r.ClearField("distributed")
                    r.ClearField("steps")
            if part == "summary":  # the charts' series stay (a row per rank or step; the tables, a row per rank and step, go)
                for view in out.display.views:
                    keep = [t for t in view.tables if t.key in CHART_TABLES]
                    del view.tables[:]
                    view.tables.extend(keep)
        return out, waiting

    @_handler
    def parallel(self, request: Request) -> Response:
        """The cross-rank hybrid-parallel analysis (RunParallel) of one run and span, summary first
        (without its matched instances: parallel_matched pages through them), once every rank is
        ready; 202 with a note while some are still loading."""
        got = self._analysis(request)
        if isinstance(got, Response):
            return got
        run, span, files, states, key, data = got
        fmt = _format(request)
        workers = self._run(self._snapshot(), request, refused=True)[1]
        notes = [f"left out: {st.error}" for st, t in zip(states, files) if st.state == FAILED]
        notes += run_assembly.duplicate_notes(workers, span)
        missing = run_assembly.missing_ranks(files, states)
        # part=summary: what the top of the Distributed view draws (the verdict, the findings, the
        # outliers, the rank grid) without the per-rank tables, step breakdowns and matrices, so that a
        # 1,024-rank page decodes a tenth of the answer before its first screen; part=details: what the
        # page draws once the details are opened (_details_part); part=breakdown_steps: that table alone
        part = _param(request, "part", required=False)
        if part not in ("",) + PARALLEL_PARTS:
            raise HttpError(400, f"unknown part {_shown(part)} ({', '.join(PARALLEL_PARTS)}, or none for the "
                                 "whole analysis)")

        def build() -> bytes:  # in the views' worker process (4,096 ranks: seconds of this one's GIL)
            # (DETAIL_STEP_ROWS read here and sent: the worker process has its own module)
            args = (data, run, span, notes, missing, part, fmt, DETAIL_STEP_ROWS)
            got = self._in_pool("views", parallel_answer, *args)
            return parallel_answer(*args) if got is _NO_PROCESS else got

        return self._send(request, ("parallel", key, run, span, tuple(notes), missing, part, fmt), _CTYPES[fmt], build)

    @_handler
    def rank_banner(self, request: Request) -> Response:
        """What the stored cross-rank analysis of the run and span says of one rank (display View
        "rank_banner", present/display/parallel.rank_banner): the straggler, a role peer of it, or no
        sentence. Only an analysis already stored (in memory or in the cache) for the span's ranks as
        they are is read; none is ever computed here, so while ranks load or before anyone opened the
        run views the answer is an empty view."""
        run, span, facts = self._run_span_facts(request)
        worker = _param(request, "worker")
        fmt = _format(request)
        from tb_paddle_profile.present.display.straggler import rank_banner
        from tb_paddle_profile.v1 import display_pb2

        if self.loader is None or not facts.ready or any(facts.blocking):
            return respond(request, _encode(display_pb2.View(key="rank_banner"), fmt), _CTYPES[fmt])
        key = facts.key
        data = self.analyses.peek(key)
        if data is None:  # not stored (yet): nothing to say, nothing memoized
            return respond(request, _encode(display_pb2.View(key="rank_banner"), fmt), _CTYPES[fmt])

        def build() -> bytes:
            return _encode(rank_banner(plugin_pb2.RunParallel.FromString(data), worker), fmt)

        return self._send(request, ("rank_banner", key, worker, fmt), _CTYPES[fmt], build)

    @_handler
    def parallel_matched(self, request: Request) -> Response:
        """A page of the analysis's matched instances (MatchedPage): ``rank`` (a member), ``step``,
        ``offset``, ``limit`` (at most runs.MATCHED_LIMIT)."""
        rank, step = _int(request, "rank"), _int(request, "step")
        offset, limit = _int(request, "offset") or 0, _int(request, "limit") or 100
        got = self._analysis(request, matched=True)
        if isinstance(got, Response):
            return got
        run, span, _, _, key, data = got
        fmt = _format(request)

        def build() -> bytes:
            page = run_assembly.matched_page(data, rank, step, offset, limit, run=run, span=span, analysis_key=key)
            return _encode(page, fmt)

        return self._send(request, ("matched", key, run, span, rank, step, offset, limit, fmt), _CTYPES[fmt],
                          build)

    @_handler
    def whatif(self, request: Request) -> Response:
        """The critical path across ranks and the what-if estimates (RunWhatIf, analysis/crossrank/whatif.py;
        docs/critical-path.md) of one run and span, once every rank is ready; 202 with a note while some
        load. MFU inputs: ``params``, ``tokens_per_step``, ``peak_tflops`` (numbers; no config file here)."""
        from tb_paddle_profile.v1 import whatif_pb2

        run, span, facts = self._run_span_facts(request)
        files = list(facts.files)
        fmt = _format(request)
        mfu_args = {}
        for name in ("params", "tokens_per_step", "peak_tflops"):
            value = _param(request, name, required=False)
            if value:
                try:
                    mfu_args[name] = float(value)
                except ValueError:
                    raise HttpError(400, f"parameter '{name}' must be a number, not {_shown(value)}") from None
                if not mfu_args[name] > 0 or mfu_args[name] == float("inf"):
                    raise HttpError(400, f"parameter '{name}' must be a positive number")
        got = self._settled(request, run, span, facts, fmt, whatif_pb2.RunWhatIf)
        if isinstance(got, Response):
            return got
        states, ready, key = got
        notes = [f"left out: {st.error}" for st, t in zip(states, files) if st.state == FAILED]
        missing = run_assembly.missing_ranks(files, states)

        def compute() -> bytes:  # the digests are read only when the answer is neither in memory nor stored
            return self._in_process(run_assembly.whatif_blob, self._digest_blobs(ready), run, span, mfu_args)

        def build() -> bytes:
            # stored with the analysis (runs.whatif_name): the first open after a restart reads it back
            out = whatif_pb2.RunWhatIf.FromString(
                self.analyses.derived(run_assembly.whatif_name(key, run, span, mfu_args), compute))
            out.notes.extend(notes)
            _add_missing(out.display, "whatif", missing)
            return _encode(out, fmt)

        memo = ("whatif", key, run, span, tuple(sorted(mfu_args.items())), tuple(notes), missing, fmt)
        try:
            return self._send(request, memo, _CTYPES[fmt], build)
        except _Reloading:
            return _waiting(request, whatif_pb2.RunWhatIf(run=run, span=span), RELOADING, fmt)

    def _run_csv(self, request: Request, view: str, key: str) -> Response:
        """A run view's table: the `parallel` / `distributed` answer (built and cached by those routes),
        its Display's table as CSV; their 202 while ranks load."""
        from tb_paddle_profile.present.display.export import to_csv
        from tb_paddle_profile.present.display.summary import find_table

        environ = dict(request.environ)
        environ.pop("HTTP_ACCEPT_ENCODING", None)  # the inner answer uncompressed
        inner = Request(environ)
        from tb_paddle_profile.v1 import whatif_pb2

        answers: Dict[str, Tuple[Any, Any]] = {   # view → (its route, its message class)
            "parallel": (ParallelRoutes.parallel, plugin_pb2.RunParallel),
            "whatif": (ParallelRoutes.whatif, whatif_pb2.RunWhatIf)}
        route, message = answers.get(view, (ParallelRoutes.distributed, plugin_pb2.RunDistributed))
        answer = route.__wrapped__(self, inner)
        if answer.status_code != 200 and answer.status_code != 202:
            return answer
        body = message.FromString(answer.get_data())
        if answer.status_code == 202 or not body.HasField("display"):
            return _text(request, f"waiting for the ranks of run {_shown(body.run)} to load", 202,
                         [("Retry-After", "1")])
        table = find_table(body.display, key, view)
        if table is None:
            raise HttpError(404, f"no table {_shown(key)} in view {_shown(view)} of run {_shown(body.run)}")
        name = f"{view}.{body.span or 'span'}.{key}.csv"
        return respond(request, to_csv(table).encode("utf-8"), _CSV,
                       headers=[("Content-Disposition", _download_name(name))])

    def _rank_part(self, trace: TraceFile) -> Optional[bytes]:
        """A rank's RankDistributed, from its digest (never its whole Summary)."""
        with self._lock:
            part = self._ranks.get(trace.key)
        if part is not None:
            return part
        data = cast(Loader, self.loader).digest_bytes(trace)   # (files are listed: the plugin has a loader)
        if data is None:
            return None
        digest = summary_pb2.RankDigest.FromString(data)
        rank = plugin_pb2.RankDistributed(total_time_ns=digest.meta.total_time_ns)
        rank.distributed.CopyFrom(digest.distributed)
        rank.steps.extend(digest.steps)
        part = rank.SerializeToString()
        with self._lock:
            self._ranks.put(trace.key, part)
        return part


def parallel_answer(data: bytes, run: str, span: str, notes: List[str], missing: Optional[str], part: str,
                    fmt: str, detail_rows: int = DETAIL_STEP_ROWS) -> bytes:
    """The ``parallel`` route's answer from the stored RunParallel ``data``: summary first, with its notes,
    the view's tables and sentences (display.proto) and the missing-ranks sentence; ``part`` "summary":
    what the top of the Distributed view draws, "details": what the page draws once they are opened,
    "breakdown_steps": that table alone; ``detail_rows``: the most rows of the per-step breakdown "details"
    keeps. Encoded in ``fmt``."""
    from tb_paddle_profile.present.display.parallel import parallel_display

    out = run_assembly.summary_first(plugin_pb2.RunParallel.FromString(data), in_place=True)
    out.run, out.span = run, span
    out.notes.extend(notes)
    out.display.CopyFrom(parallel_display(out))
    _add_missing(out.display, "parallel", missing)
    if part == "summary":
        _summary_part(out)
    elif part == "details":
        _details_part(out, detail_rows)
    elif part == "breakdown_steps":
        _table_part(out, part)
    return _encode(out, fmt)


def _raw_series_dropped(out: plugin_pb2.RunParallel) -> None:
    """Without the figures the display's tables carry for the page (breakdown_*, *_heat, step_time,
    exposed_comm_by_step, rank_kinds): every rank's per-step breakdowns and kinds, the rank × step matrices."""
    for r in out.ranks:
        r.ClearField("step_breakdown")
        r.ClearField("kinds")
    for f in ("step_time", "exposed_communication"):
        out.ClearField(f)


def _details_part(out: plugin_pb2.RunParallel, detail_rows: int) -> None:
    """RunParallel reduced in place to what the page draws from it once the details are open: the display
    whole but the per-step breakdown beyond DETAIL_STEP_ROWS rows (part=breakdown_steps), the raw series
    the tables carry dropped."""
    _raw_series_dropped(out)
    for view in out.display.views:
        keep = [t for t in view.tables if t.key != "breakdown_steps" or len(t.rows) <= detail_rows]
        del view.tables[:]
        view.tables.extend(keep)


def _table_part(out: plugin_pb2.RunParallel, key: str) -> None:
    """RunParallel reduced in place to one table of its display (with the run, span and analysis key)."""
    keep = plugin_pb2.RunParallel(run=out.run, span=out.span, analysis_key=out.analysis_key)
    keep.display.time_unit = out.display.time_unit
    for view in out.display.views:
        keep.display.views.add(key=view.key, title=view.title).tables.extend(t for t in view.tables if t.key == key)
    out.CopyFrom(keep)


def _summary_part(out: plugin_pb2.RunParallel) -> None:
    """RunParallel reduced in place to what the summary draws: every rank's totals and coordinates kept
    (the rank grid, the links), their per-step breakdowns, the matrices and the per-rank tables dropped."""
    _raw_series_dropped(out)
    out.ClearField("memory")
    for view in out.display.views:
        keep = [t for t in view.tables if t.key in SUMMARY_TABLES]
        del view.tables[:]
        view.tables.extend(keep)


def _add_missing(display, view_key: str, text: Optional[str]) -> None:
    """Put the missing-ranks sentence (runs.missing_ranks) first in the view ``view_key`` of ``display``:
    key and section "missing", level "warning"; the panels show it as a banner above everything else."""
    if not text:
        return
    from tb_paddle_profile.v1 import display_pb2

    for view in display.views:
        if view.key == view_key:
            s = display_pb2.Sentence(key="missing", level="warning", title="Missing ranks", section="missing")
            s.spans.add(text=text)
            view.sentences.insert(0, s)
