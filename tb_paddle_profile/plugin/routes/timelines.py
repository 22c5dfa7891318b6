"""The timeline's routes (tb_paddle_profile.timeline): ``timeline`` (level-of-detail slices of a window,
a page of ranks), ``timeline_event``, ``timeline_search``, ``timeline_range``, ``timeline_instance`` (the
matched collective instance of a slice), ``timeline_compact`` (one row per rank over a step) and
``trace_window`` (a Chrome-trace JSON of one worker's window, streamed); 202 while an index is built."""

from __future__ import annotations

import zlib
from typing import Dict, Generator, Iterable, List, Optional, Tuple

from werkzeug.wrappers import Request, Response

from tb_paddle_profile import timeline
from tb_paddle_profile.pipeline import runs as run_assembly
from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.timeline import remote
from tb_paddle_profile.v1 import plugin_pb2, timeline_pb2

from .analyses import _NO_PROCESS, AnalysisBase
from .http import (
    _CTYPES,
    _MAX_LIST_PARAM,
    JSON,
    HttpError,
    _accepts_gzip,
    _download_name,
    _encode,
    _format,
    _handler,
    _int,
    _param,
    _shown,
    respond,
)


class TimelineRoutes(AnalysisBase):
    """timeline, timeline_event, timeline_search, timeline_range, timeline_instance, timeline_compact,
    trace_window."""

    def _span_files(self, request: Request, many: str = "workers") -> Tuple[str, str, List[TraceFile]]:
        """The run's files of one span: all workers, or those named (comma-separated) in ``many``."""
        snapshot = self._snapshot()
        run, workers = self._run(snapshot, request)
        span = _param(request, "span")
        names = [w for w in _param(request, many, required=False, most=_MAX_LIST_PARAM).split(",") if w]
        for w in names:
            if w not in workers:
                raise HttpError(404, f"unknown worker {_shown(w)} in run {_shown(run)}")
        chosen = names or list(workers)
        files = [workers[w][span] for w in chosen if span in workers[w]]
        if not files:
            raise HttpError(404, f"unknown span {_shown(span)} in run {_shown(run)}")
        numbers = self._rank_numbers(run, workers)
        files.sort(key=lambda f: (numbers.get(f.worker, 1 << 30), f.worker))
        return run, span, files

    def _indexes(self, files: List[TraceFile]) -> list:
        store = self._timelines()
        return [(f,) + store.get(f) for f in files]

    @_handler
    def timeline(self, request: Request) -> Response:
        """Level-of-detail slices of a window (TimelineWindow); 202 while an index is being built."""
        run, span, files = self._span_files(request)
        fmt = _format(request)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        px = _int(request, "px") or 1000
        base = _int(request, "base_unix_ns")
        query = _param(request, "q", required=False, nul=True)
        flows = _param(request, "flows", required=False) in ("1", "true")
        # One page of ranks (timeline.WINDOW_MAX_RANKS, and WINDOW_MAX_BYTES of message): only the
        # indexes of that page are opened.
        offset = _int(request, "rank_offset") or 0
        total = len(files)
        if offset and offset >= total:
            raise HttpError(400, f"rank_offset {offset} is past the {total} ranks asked for")
        clock = self._clock(run, span, files)
        files = files[offset : offset + timeline.WINDOW_MAX_RANKS]
        budget = timeline.WINDOW_MAX_BYTES - (64 << 10) - (timeline.FLOW_CAP * 48 if flows else 0)
        numbers = self._rank_numbers(run, self._run(self._snapshot(), request)[1])
        # The whole span (the view every user opens first) is memoized under all it is made of, looked up
        # before any index is opened; a window panned or zoomed to is one user's.
        whole = ws is None and we is None
        memo = (
            "timeline",
            run,
            span,
            tuple((f.worker, f.key, clock.get(f.worker, 0), numbers.get(f.worker, f.rank)) for f in files),
            total,
            offset,
            px,
            base,
            query,
            flows,
            fmt,
        )
        if whole:
            hit = self._memoized(request, memo, _CTYPES[fmt])
            if hit is not None:
                return hit
        refs = [self._ref(f, numbers) for f in files]
        folder = str(self._timelines().folder)
        body = self._heavy.run(
            "timeline",
            lambda: self._remote(
                timeline_pb2.TimelineWindow,
                fmt,
                remote.window,
                folder,
                refs,
                run,
                span,
                ws,
                we,
                px,
                base,
                query,
                flows,
                total,
                offset,
                budget,
                clock,
            ),
        )
        if body is not None:  # every index of the page was there: answered by the timeline worker process
            return self._memoize(request, memo, _CTYPES[fmt], body) if whole else respond(request, body, _CTYPES[fmt])
        # Here through the store: it has a missing index built (202 meanwhile) and says why one cannot be.
        ranks = self._indexes(files)
        building = any(state == "building" for _, _, state in ranks)
        if not building and all(idx is None for _, idx, _ in ranks):  # not one rank can be drawn: say why
            store = self._timelines()
            code = max(self._failure_code(store, f) for f, _, _ in ranks)
            raise HttpError(code, "; ".join(state for _, _, state in ranks))

        def build() -> bytes:
            msg = timeline.window_message(
                run, span, ranks, ws, we, px, base, query, flows, total, offset, budget, clock=clock
            )
            for r in msg.ranks:  # default worker names: the rank the run list gives them
                r.rank = numbers.get(r.worker, r.rank)
            return _encode(msg, fmt)

        body = self._heavy.run("timeline", build)
        if whole and all(idx is not None for _, idx, _ in ranks):
            return self._memoize(request, memo, _CTYPES[fmt], body)
        return respond(
            request, body, _CTYPES[fmt], 202 if building else 200, [("Retry-After", "1")] if building else []
        )

    @staticmethod
    def _ref(f: TraceFile, numbers: Dict[str, int]) -> remote.RankRef:
        return remote.RankRef(f.worker, numbers.get(f.worker, f.rank), f.file_name, f.key.digest())

    def _remote(self, message, fmt: str, fn, *args) -> Optional[bytes]:
        """The answer of the timeline query ``fn(*args)`` (timeline/remote.py) made in the timeline worker
        process, encoded in ``fmt``; None when there is no such process or an index it needs is not there
        (the caller answers through the store)."""
        got = self._in_pool("views", fn, *args)
        if got is _NO_PROCESS or got is None:
            return None
        return got if fmt == "pb" else _encode(message.FromString(got), fmt)

    @staticmethod
    def _failure_code(store, trace: TraceFile) -> int:
        """The status of a timeline that cannot be built: 422 a file that is not a usable trace, 503 the
        store or cache failing (retried later), 500 a bug of ours."""
        kind = (store.failure(trace) or ("transient", ""))[0]
        return {"trace": 422, "transient": 503, "bug": 500}.get(kind, 500)

    def _one_index(self, request: Request):
        trace = self._file(request)
        store = self._timelines()
        idx, state = store.get(trace)
        if idx is None:
            if state == "building":
                raise HttpError(503, f"{trace.file_name}: its timeline is being built; try again shortly")
            raise HttpError(self._failure_code(store, trace), state)
        return trace, idx

    @_handler
    def timeline_event(self, request: Request) -> Response:
        trace, idx = self._one_index(request)
        fmt = _format(request)
        ev = _int(request, "id")
        if ev is None or not 0 <= ev < len(idx.a["ev_start"]):
            raise HttpError(404, f"no event {_shown(_param(request, 'id', required=False))} in {trace.file_name}")
        msg = timeline.event_message(
            trace.worker, idx, ev, _int(request, "base_unix_ns"), clock=self._clock(trace.run, trace.span)
        )
        return respond(request, _encode(msg, fmt), _CTYPES[fmt])

    @_handler
    def timeline_search(self, request: Request) -> Response:
        run, span, files = self._span_files(request)
        fmt = _format(request)
        query = _param(request, "q", nul=True)
        if not query:
            raise HttpError(400, "empty query")
        exact = _param(request, "exact", required=False) in ("1", "true")
        limit = max(1, min(_int(request, "limit") or timeline.MATCH_CAP, timeline.MATCH_CAP))
        base, whole = _int(request, "base_unix_ns"), self._whole_span(request, run, span)

        return respond(
            request,
            self._span_query(
                "timeline_search",
                run,
                span,
                files,
                whole,
                fmt,
                timeline_pb2.TimelineSearch,
                (remote.search, (query, exact, base, limit)),
                lambda ri, clock, open_rank: timeline.run_search_message(
                    ri, files, query, exact, base, limit, clock=clock, open_rank=open_rank
                ),
                lambda ranks, clock: timeline.search_message(ranks, query, exact, base, limit, clock=clock),
            ),
            _CTYPES[fmt],
        )

    def _span_query(
        self,
        what: str,
        run: str,
        span: str,
        files: List[TraceFile],
        whole: List[TraceFile],
        fmt: str,
        message,
        in_worker,
        from_run_index,
        per_rank,
    ) -> bytes:
        """A search or a range over ``files`` (on the heavy executor), encoded: from the run index of the span's
        ranks (``whole``; names -> ranks: no rank opened per request), in the timeline worker process
        (``in_worker``: remote.search or range_ and its arguments, the clock offsets added), else here
        (``from_run_index(ri, clock, open_rank)``); while that index cannot be made, from the ranks' own
        indexes (``per_rank(ranks, clock)``)."""

        def answer() -> bytes:
            clock = self._clock(run, span, files)
            store = self._timelines()
            ri = store.run_index(whole, self._run_builder(store))
            if ri is not None:
                fn, args = in_worker
                body = self._remote_query(message, fmt, fn, files, store, ri, *args, clock)
                if body is not None:
                    return body
                return _encode(from_run_index(ri, clock, lambda f: store.get(f)[0]), fmt)
            ranks = [(f, idx) for f, idx, _ in self._indexes(files)]  # an index not ready: the ranks' own
            return _encode(per_rank(ranks, clock), fmt)

        return self._heavy.run(what, answer)

    def _packed(self, files: List[TraceFile]) -> Tuple[str, bytes]:
        """remote.pack of the files' RankRefs, made once per set of files (4,096 ranks: 26 ms a request)."""
        key = tuple(f.key.digest() for f in files)
        with self._lock:
            got = self._refs.get(key)
        if got is None:
            got = remote.pack([self._ref(f, {}) for f in files])
            with self._lock:
                self._refs.put(key, got)
        return got

    def _run_builder(self, store):
        """The run index built in the timeline worker process (remote.build_run): None when there is none."""

        def build(files: List[TraceFile], target: str) -> bool:
            got = self._in_pool("views", remote.build_run, str(store.folder), [self._ref(f, {}) for f in files], target)
            return got is True

        return build

    def _remote_query(self, message, fmt: str, fn, files: List[TraceFile], store, ri, *args) -> Optional[bytes]:
        """A search or range (remote.search, remote.range_) over ``files`` from the run index ``ri``, in the
        timeline worker process; the ranks it could not open there are asked of the store (which has their
        index built, as a query here does, and leaves them out meanwhile). None: answer here."""
        got = self._in_pool("views", fn, str(store.folder), ri.path, self._packed(files), *args)
        if got is _NO_PROCESS or got[0] is None:
            return None
        body, missed = got
        if missed:
            by_digest = {f.key.digest(): f for f in files}
            for digest in missed:
                store.get(by_digest[digest])
        return body if fmt == "pb" else _encode(message.FromString(body), fmt)

    def _whole_span(self, request: Request, run: str, span: str) -> List[TraceFile]:
        """Every file of the run's span (the run index covers them all; a request may name some)."""
        return run_assembly.span_files(self._run(self._snapshot(), request)[1], span)

    @_handler
    def timeline_range(self, request: Request) -> Response:
        run, span, files = self._span_files(request)
        fmt = _format(request)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        if ws is None or we is None or we < ws:
            raise HttpError(400, "start_ns and end_ns are required, start_ns <= end_ns")
        by_worker = {f.worker: f for f in files}
        tracks: Dict[str, Optional[List[int]]] = {}
        for item in [t for t in _param(request, "tracks", required=False).split(",") if t]:
            worker, _, tid = item.rpartition(":")
            if worker not in by_worker or not (tid.isascii() and tid.isdigit() and len(tid) <= 18):
                raise HttpError(400, f"invalid track {_shown(item)}: use worker:track")
            lst = tracks.setdefault(worker, [])
            if lst is not None:
                lst.append(int(tid))
        if not tracks:
            tracks = {w: None for w in by_worker}
        base, whole = _int(request, "base_unix_ns"), self._whole_span(request, run, span)

        return respond(
            request,
            self._span_query(
                "timeline_range",
                run,
                span,
                files,
                whole,
                fmt,
                timeline_pb2.TimelineRange,
                (remote.range_, (ws, we, tracks, base)),  # ranks held whole or missed: not opened
                lambda ri, clock, open_rank: timeline.run_range_message(
                    ri, files, ws, we, tracks, base, clock=clock, open_rank=open_rank
                ),
                lambda ranks, clock: timeline.range_message(ranks, ws, we, tracks, base, clock=clock),
            ),
            _CTYPES[fmt],
        )

    @_handler
    def timeline_instance(self, request: Request) -> Response:
        """The matched collective instance the slice ``worker``/``id`` is a member of (TimelineInstance),
        from the run's cross-rank analysis (its matched table: nothing derived again), each member with its
        slice on the timeline; 202 while ranks load (timeline/members.py)."""
        from tb_paddle_profile.analysis.crossrank.encode import MatchedTable
        from tb_paddle_profile.timeline import members as tm

        trace, idx = self._one_index(request)
        ev = _int(request, "id")
        if ev is None or not 0 <= ev < len(idx.a["ev_start"]):
            raise HttpError(404, f"no event {_shown(_param(request, 'id', required=False))} in {trace.file_name}")
        got = self._analysis(request, matched=True)
        if isinstance(got, Response):
            return got
        run, span, files, _, key, data = got
        fmt = _format(request)
        table = MatchedTable.from_bytes(data)
        rank_of = {f.worker: f.rank for f in files}
        if any(r < 0 for r in rank_of.values()):  # ranks the analysis inferred: its own numbering
            rank_of = {
                r.worker: r.rank for r in plugin_pb2.RunParallel.FromString(self.analyses.peek(key) or b"").ranks
            }
        rank = rank_of.get(trace.worker, trace.rank)
        group = tm.instance_of(table, rank, idx.origin + int(idx.a["ev_start"][ev]))
        members, note = {}, ""
        if group is None:
            note = "not a member of a collective instance that the cross-rank analysis matched"
        else:
            by_rank = {r: f for f in files for r in [rank_of.get(f.worker, f.rank)]}
            # Only the indexes of the ranks shown (``workers``, default all) are opened for the members' slices.
            shown = {
                w for w in _param(request, "workers", required=False, most=_MAX_LIST_PARAM).split(",") if w
            } or None
            store = self._timelines()
            for r in table.rank[int(table.ptr[group]) : int(table.ptr[group + 1])].tolist():
                f = by_rank.get(int(r))
                opened = f is not None and (shown is None or f.worker in shown or f.worker == trace.worker)
                members[int(r)] = (f.worker if f is not None else "", store.get(f)[0] if opened else None)
        msg = tm.instance_message(
            run,
            span,
            key,
            table,
            group,
            members,
            _int(request, "base_unix_ns"),
            clock=self._clock(run, span, files),
            note=note,
        )
        return respond(request, _encode(msg, fmt), _CTYPES[fmt])

    @_handler
    def timeline_compact(self, request: Request) -> Response:
        """The compact multi-rank timeline (TimelineCompact, timeline/compact.py): one row of ``bins``
        bins per rank over one step (``step``, default the median one), each row aligned on its rank's
        start of the step (``align=step``), on the first row's (``align=clock``), on each row's first
        matched instance of ``kind`` (``align=collective``) or on one matched instance (``align=instance``:
        the one rank ``instance_worker`` runs at ``instance_ns``, unix ns on the corrected clock, picked on
        the canvas; each member row on its member's start); every rank in the
        server's order (the straggler and its role peers first), the rows of order[rank_offset :
        rank_offset + rank_limit] (at most compact.PAGE_ROWS: only their indexes are opened; order_only=1:
        the order alone, no row, what the detailed timeline takes its default ranks from), the stored critical path
        on them; ``focus`` (a worker): that rank and its role peers first in place of the straggler. 202
        while ranks load or indexes are built."""
        from tb_paddle_profile.timeline import compact

        run, span, files = self._span_files(request)
        fmt = _format(request)
        align = _param(request, "align", required=False) or "step"
        if align not in ("step", "clock", "collective", "instance"):
            raise HttpError(400, f"unknown align {_shown(align)} (step, clock, collective or instance)")
        instance = None
        if align == "instance":
            at = _int(request, "instance_ns")
            worker = _param(request, "instance_worker", required=False)
            if at is None or not worker:
                raise HttpError(400, "align=instance needs instance_worker and instance_ns")
            instance = (worker, at)
        kind = _param(request, "kind", required=False)
        bins = _int(request, "bins") or 1000
        step, offset = _int(request, "step"), _int(request, "rank_offset") or 0
        limit = min(_int(request, "rank_limit") or 64, compact.PAGE_ROWS)
        if _param(request, "order_only", required=False) in ("1", "true"):
            limit = 0  # the order alone: no row, no index opened
        focus = _param(request, "focus", required=False)
        if focus and focus not in {f.worker for f in files}:
            raise HttpError(404, f"unknown worker {_shown(focus)} in run {_shown(run)}")
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        got = self._analysis(request)
        if isinstance(got, Response):  # ranks still loading: a TimelineCompact that says so, no rows yet
            if got.status_code != 202:
                return got
            from tb_paddle_profile.v1 import timeline_pb2

            wait = timeline_pb2.TimelineCompact(
                run=run,
                span=span,
                align=align,
                note="waiting for the ranks to load (the order and the step come from the cross-rank analysis)",
            )
            return respond(request, _encode(wait, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        _, _, _, _, key, data = got
        with self._lock:
            facts = self._compact_facts.get(key)
        if facts is None:
            facts = compact.Facts(plugin_pb2.RunParallel.FromString(data))
            with self._lock:
                self._compact_facts.put(key, facts)
        order = facts.order_for(focus)
        place = {w: i for i, w in enumerate(order[0])}
        files = [f for _, f in sorted(enumerate(files), key=lambda x: (place.get(x[1].worker, len(place)), x[0]))]
        if offset and offset >= len(files):
            raise HttpError(400, f"rank_offset {offset} is past the {len(files)} ranks")
        rows = self._indexes(files[offset : offset + limit]) if limit else []
        building = any(state == "building" for _, _, state in rows)
        first = self._timelines().get(files[0])[0] if align == "clock" and limit else None
        blob = self.analyses.peek_derived(run_assembly.whatif_name(key, run, span, {}))

        def table():  # the matched instances, stored with the analysis (align "collective")
            from tb_paddle_profile.analysis.crossrank.encode import MatchedTable

            got = self._analysis(request, matched=True)  # stored with the RunParallel above: read, not computed
            return MatchedTable.from_bytes(got[5]) if not isinstance(got, Response) else MatchedTable.empty()

        def build() -> bytes:
            from tb_paddle_profile.v1 import whatif_pb2

            critical = whatif_pb2.RunWhatIf.FromString(run_assembly.whatif_of(blob, {})) if blob is not None else None
            return _encode(
                compact.compact_message(
                    run,
                    span,
                    key,
                    facts,
                    files,
                    rows,
                    offset,
                    step,
                    align,
                    ws,
                    we,
                    bins,
                    critical,
                    first,
                    kind,
                    table,
                    instance,
                    order,
                ),
                fmt,
            )

        body = self._heavy.run("timeline_compact", build)
        return respond(
            request, body, _CTYPES[fmt], 202 if building else 200, [("Retry-After", "1")] if building else []
        )

    @staticmethod
    def _gzip_chunks(chunks) -> Generator[bytes, None, None]:
        """The gzip stream of ``chunks``, compressed as they come."""
        deflate = zlib.compressobj(3, zlib.DEFLATED, 31)
        try:
            for chunk in chunks:
                out = deflate.compress(chunk)
                if out:
                    yield out
            yield deflate.flush()
        finally:
            chunks.close()

    @_handler
    def trace_window(self, request: Request) -> Response:
        """A Chrome-trace JSON of one worker's slices in a window, for Perfetto or chrome://tracing."""
        trace, idx = self._one_index(request)
        base = _int(request, "base_unix_ns")
        off = idx.origin - (idx.origin if base is None else base)
        ws, we = _int(request, "start_ns"), _int(request, "end_ns")
        ws = idx.start_ns if ws is None else ws - off
        we = idx.end_ns if we is None else we - off
        if we < ws:
            raise HttpError(400, "end_ns is before start_ns")
        # Bounded: the answer's size is estimated from the index (an upper bound) before anything is sent.
        events, upper = timeline.window_size(idx, ws, we, trace.file_name)
        limit = timeline.window_limit_bytes()
        if limit and upper > limit:
            raise HttpError(
                413,
                f"{trace.file_name}: the window holds {events:,} events, up to "
                f"{upper / (1 << 20):,.1f} MB of JSON, over the {limit / (1 << 20):,.4g} MB that "
                f"trace_window sends at most ({timeline.ENV_WINDOW_MAX_MB}): narrow the window "
                f"(zoom in) and download again",
            )
        stem = trace.file_name[:-3] if trace.file_name.endswith(".gz") else trace.file_name
        stem = stem[:-5] if stem.endswith(".json") else stem
        name = f"{stem}.window_{max(ws, 0) // 1000}us_{max(we, 0) // 1000}us.json"
        headers = [
            ("Content-Disposition", _download_name(name)),
            ("X-Content-Type-Options", "nosniff"),
            ("Cache-Control", "no-cache, must-revalidate"),
            ("Vary", "Accept-Encoding"),
        ]
        # Streamed: one block of events is formatted at a time, whatever the window.
        chunks = timeline.chrome_chunks(idx, ws, we, trace.file_name)
        if _accepts_gzip(request):
            headers.append(("Content-Encoding", "gzip"))
            chunks = self._gzip_chunks(chunks)
        body: Iterable[bytes] = chunks
        if request.method == "HEAD":
            chunks.close()
            body = []
        return Response(body, headers=headers, content_type=JSON, direct_passthrough=True)
