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

from .analyses import RELOADING, AnalysisBase, _waiting, digest_prior, prior_rank
from .base import _Reloading
from .http import (
    _CSV,
    _CTYPES,
    HttpError,
    _download_name,
    _encode,
    _format,
    _handler,
    _int,
    _param,
    _shown,
    _text,
    respond,
)

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
        order = sorted(
            range(len(facts.files)), key=lambda i: (numbers.get(facts.files[i].worker, 1 << 30), facts.files[i].worker)
        )
        files = [facts.files[i] for i in order]
        states = [facts.states[i] for i in order]
        blocks = [facts.blocking[i] for i in order]
        if not any(b or st.state in (QUEUED, LOADING) for b, st in zip(blocks, states)):
            # Every rank settled: memoized under what the answer is made of (the files' versions and
            # states: facts.sig, the rank numbers, the analysis whose labels it shows), built once, in the
            # answers' worker process from the ranks' digests, and stored with the analysis (a restart reads it back).
            made_of = (
                run,
                span,
                facts.sig,
                tuple(numbers.get(f.worker, f.rank) for f in files),
                self._last_analysis.get(run),
                part,
                fmt,
            )

            def make() -> bytes:
                loader = self._require_loader()
                digests = [loader.digest_bytes(t) if st.state == READY else None for t, st in zip(files, states)]
                if any(d is None and st.state == READY for d, st in zip(digests, states)):
                    raise _Reloading  # a READY rank's digest vanished: it is being loaded again
                labels = self._labels(run)
                priors = [None if t.worker in labels else prior_rank(t, numbers.get(t.worker)) for t in files]
                return self._in_views(
                    distributed_answer,
                    run,
                    span,
                    self._rows(files, states, numbers),
                    digests,
                    labels,
                    priors,
                    run_assembly.missing_ranks(files, states),
                    part,
                    fmt,
                )

            def build() -> bytes:
                return self.analyses.derived(
                    run_assembly.answer_name("distributed-1", facts.key, *made_of), make, memory=False
                )

            try:
                return self._send(request, ("distributed",) + made_of, _CTYPES[fmt], build)
            except _Reloading:
                states = self._states(files)
                blocks = run_assembly.blocking(states)
        out, waiting = self._distributed(run, span, files, states, blocks, numbers, part)
        return respond(
            request, _encode(out, fmt), _CTYPES[fmt], 202 if waiting else 200, [("Retry-After", "1")] if waiting else []
        )

    def _rows(self, files: List[TraceFile], states, numbers: Dict[str, int]) -> List[Tuple[str, int, str, int, str]]:
        """Per rank of a RunDistributed: (worker, state, error, rank number, file version)."""
        return [
            (t.worker, st.state, st.error, numbers.get(t.worker, t.rank), t.key.digest()[:16])
            for t, st in zip(files, states)
        ]

    def _distributed(
        self, run: str, span: str, files: List[TraceFile], states, blocks, numbers: Dict[str, int], part: str
    ):
        """(RunDistributed, the ranks it waits for) while some ranks load: the ranks read so far, in this
        process (their parts and prior labels memoized; the answer is made again at each poll)."""
        loader = self._require_loader()
        parts: List[Optional[bytes]] = []
        waiting = []
        for i, (trace, state, block) in enumerate(zip(files, states, blocks)):
            encoded = self._rank_part(trace) if state.state == READY else None
            if encoded is None and state.state == READY:  # its cache entry vanished; it is being loaded again
                states[i] = state = loader.state(trace)
            parts.append(encoded)
            if block or state.state in (QUEUED, LOADING):
                waiting.append(trace)
        loader.prioritize(waiting, run)
        labels = dict(self._labels(run))  # the analysis's; before there is one, the prior labels (as the run list)
        labels.update(
            {
                t.worker: self._prior_label(t, numbers.get(t.worker), st.state == READY)
                for t, st in zip(files, states)
                if t.worker not in labels
            }
        )
        missing = run_assembly.missing_ranks(files, states) if not waiting else None
        out = run_view(run, span, self._rows(files, states, numbers), parts, labels, missing, part, bool(waiting))
        return out, waiting

    @_handler
    def parallel(self, request: Request) -> Response:
        """The cross-rank hybrid-parallel analysis (RunParallel) of one run and span, summary first
        (without its matched instances: parallel_matched pages through them), once every rank is
        ready; 202 with a note while some are still loading. The answer is stored with the analysis
        (runs.answer_name): a restart reads it back instead of making it again."""
        run, span, facts = self._run_span_facts(request)
        fmt = _format(request)
        got = self._settled(request, run, span, facts, fmt, plugin_pb2.RunParallel)
        if isinstance(got, Response):
            return got
        states, ready, key = got
        files = facts.files
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
            raise HttpError(
                400, f"unknown part {_shown(part)} ({', '.join(PARALLEL_PARTS)}, or none for the whole analysis)"
            )
        # (DETAIL_STEP_ROWS read here and sent: the answers' worker process has its own module)
        rows = DETAIL_STEP_ROWS if part == "details" else 0
        made_of = (run, span, tuple(notes), missing, part, fmt, rows)

        def make() -> bytes:  # the analysis read back (or computed), the answer made in the answers' worker process
            data = self._analysis_data(run, span, ready, key)
            return self._in_views(parallel_answer, data, run, span, notes, missing, part, fmt, rows)

        def build() -> bytes:
            return self.analyses.derived(run_assembly.answer_name("parallel-1", key, *made_of), make, memory=False)

        try:
            answer = self._send(request, ("parallel", key) + made_of, _CTYPES[fmt], build)
        except _Reloading:
            return _waiting(request, plugin_pb2.RunParallel(run=run, span=span), RELOADING, fmt)
        self._used_analysis(run, span, key)
        return answer

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

        return self._send(request, ("matched", key, run, span, rank, step, offset, limit, fmt), _CTYPES[fmt], build)

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

        def stored() -> bytes:  # the replay, once per analysis key, in the analyses' process; read back after a restart
            return self.analyses.derived(
                run_assembly.whatif_name(key, run, span, {}),
                lambda: self._in_process(run_assembly.whatif_blob, self._digest_blobs(ready), run, span),
            )

        def answer() -> bytes:
            if not mfu_args:
                return run_assembly.whatif_of(stored(), {})
            # other MFU inputs: the stored answer's MFU made again (arithmetic, no replay), in the answers' worker process
            return self.analyses.derived(
                run_assembly.whatif_name(key, run, span, mfu_args),
                lambda: self._in_views(run_assembly.whatif_of, stored(), mfu_args),
            )

        def build() -> bytes:
            out = whatif_pb2.RunWhatIf.FromString(answer())
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

        answers: Dict[str, Tuple[Any, Any]] = {  # view → (its route, its message class)
            "parallel": (ParallelRoutes.parallel, plugin_pb2.RunParallel),
            "whatif": (ParallelRoutes.whatif, whatif_pb2.RunWhatIf),
        }
        route, message = answers.get(view, (ParallelRoutes.distributed, plugin_pb2.RunDistributed))
        answer = route.__wrapped__(self, inner)
        if answer.status_code != 200 and answer.status_code != 202:
            return answer
        body = message.FromString(answer.get_data())
        if answer.status_code == 202 or not body.HasField("display"):
            return _text(
                request, f"waiting for the ranks of run {_shown(body.run)} to load", 202, [("Retry-After", "1")]
            )
        table = find_table(body.display, key, view)
        if table is None:
            raise HttpError(404, f"no table {_shown(key)} in view {_shown(view)} of run {_shown(body.run)}")
        name = f"{view}.{body.span or 'span'}.{key}.csv"
        return respond(
            request, to_csv(table).encode("utf-8"), _CSV, headers=[("Content-Disposition", _download_name(name))]
        )

    def _rank_part(self, trace: TraceFile) -> Optional[bytes]:
        """A rank's RankDistributed, from its digest (never its whole Summary)."""
        with self._lock:
            part = self._ranks.get(trace.key)
        if part is not None:
            return part
        data = cast(Loader, self.loader).digest_bytes(trace)  # (files are listed: the plugin has a loader)
        if data is None:
            return None
        part = rank_part(data)
        with self._lock:
            self._ranks.put(trace.key, part)
        return part


def rank_part(digest: bytes) -> bytes:
    """A rank's RankDistributed (its totals, distributed facts and steps) from its serialized RankDigest."""
    d = summary_pb2.RankDigest.FromString(digest)
    rank = plugin_pb2.RankDistributed(total_time_ns=d.meta.total_time_ns)
    rank.distributed.CopyFrom(d.distributed)
    rank.steps.extend(d.steps)
    return rank.SerializeToString()


def run_view(
    run: str,
    span: str,
    rows,
    parts: List[Optional[bytes]],
    labels: Dict[str, str],
    missing: Optional[str],
    part: str,
    partial: bool,
) -> plugin_pb2.RunDistributed:
    """The RunDistributed of a span: per rank its ``rows`` entry (worker, state, error, rank number, file
    version) and its RankDistributed ``parts`` (None while not loaded), the Distributed view's tables with the
    ``labels`` (present/display/distributed.py; ``partial``: the ranks read so far) and the missing-ranks
    sentence; ``part`` "summary": without the per-rank tables (the charts' series stay), "details": every table;
    either without the ranks' own figures, which the tables carry."""
    from tb_paddle_profile.present.display.distributed import CHART_TABLES, distributed_display

    out = plugin_pb2.RunDistributed(run=run, span=span)
    for (worker, state, error, number, version), data in zip(rows, parts):
        rank = out.ranks.add()
        if data is not None:
            rank.MergeFromString(data)
        rank.worker, rank.state, rank.error, rank.rank, rank.file_version = worker, state, error, number, version
    out.display.CopyFrom(distributed_display(out, labels, partial=partial))
    if not partial:
        _add_missing(out.display, "distributed", missing)
        if part:  # the page's: each rank's name, number and state; its figures are the tables' cells
            for r in out.ranks:
                r.ClearField("distributed")
                r.ClearField("steps")
        if (
            part == "summary"
        ):  # the charts' series stay (a row per rank or step; the tables, a row per rank and step, go)
            for view in out.display.views:
                keep = [t for t in view.tables if t.key in CHART_TABLES]
                del view.tables[:]
                view.tables.extend(keep)
    return out


def distributed_answer(
    run: str,
    span: str,
    rows,
    digests: List[Optional[bytes]],
    labels: Dict[str, str],
    priors: List[Optional[int]],
    missing: Optional[str],
    part: str,
    fmt: str,
) -> bytes:
    """The ``distributed`` route's answer once every rank is settled, from the ranks' serialized RankDigests
    (None: not READY), encoded in ``fmt``: run_view, each rank's part made here, and the label of a rank the
    analysis's ``labels`` lack its prior label (``priors``: the rank number it names, analyses.prior_rank),
    else its worker name. In the answers' worker process: at 4,096 ranks, a second of TensorBoard's GIL."""
    labels = dict(labels)
    for (worker, *_), digest, prior in zip(rows, digests, priors):
        if worker not in labels:
            labels[worker] = (digest_prior(digest, prior)[0] if digest is not None else "") or worker
    parts = [rank_part(d) if d is not None else None for d in digests]
    return _encode(run_view(run, span, rows, parts, labels, missing, part, False), fmt)


def parallel_answer(
    data: bytes,
    run: str,
    span: str,
    notes: List[str],
    missing: Optional[str],
    part: str,
    fmt: str,
    detail_rows: int = DETAIL_STEP_ROWS,
) -> bytes:
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
