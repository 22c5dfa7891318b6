"""The routes of one rank: ``summary`` (its Summary), ``display`` (the display model of its views) and
``csv`` (one display table as CSV: a rank's, or a run view's through ParallelRoutes._run_csv, or the
comparison's through DiffRoutes._diff_csv); 202 with the rank's SpanEntry while it loads."""

from __future__ import annotations

from typing import Callable, List, Optional, Tuple

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.pipeline.loader import FAILED, READY
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

from .analyses import AnalysisBase
from .http import (
    _CSV,
    _CTYPES,
    HttpError,
    _download_name,
    _encode,
    _format,
    _handler,
    _param,
    _shown,
    _sorted_by,
    respond,
)


class SummaryRoutes(AnalysisBase):
    """summary, display, csv."""

    # csv hands a run view's and the comparison's tables to their families (all of them are Routes)
    _run_csv: Callable[[Request, str, str], Response]  # ParallelRoutes._run_csv
    _diff_csv: Callable[[Request, str], Response]  # DiffRoutes._diff_csv

    @_handler
    def summary(self, request: Request) -> Response:
        trace = self._file(request, refused=True)
        fmt = _format(request)

        def build(data: bytes) -> bytes:
            return data if fmt == "pb" else _encode(summary_pb2.Summary.FromString(data), fmt)

        return self._from_summary(request, trace, fmt, ("summary", trace.key, fmt), _CTYPES[fmt], build)

    @_handler
    def display(self, request: Request) -> Response:
        """The display model of one rank (display/summary.py): every table of its views."""
        trace = self._file(request, refused=True)
        fmt = _format(request)
        sorted_by = _sorted_by(request)

        def build(data: bytes) -> bytes:
            from tb_paddle_profile.present.display.summary import summary_display

            return _encode(summary_display(summary_pb2.Summary.FromString(data), sorted_by=sorted_by), fmt)

        return self._from_summary(request, trace, fmt, ("display", trace.key, sorted_by, fmt), _CTYPES[fmt], build)

    @_handler
    def csv(self, request: Request) -> Response:
        """One display table as CSV (display/export.py): ``run, worker, span, view, table[, sorted_by]`` for a
        rank's table; ``run, span, view=parallel|distributed|whatif, table`` (no worker) for a run view's."""
        from tb_paddle_profile.present.display.export import to_csv

        view, key = _param(request, "view"), _param(request, "table")
        if view == "diff":  # a table of the `diff` answer, with its six parameters
            return self._diff_csv(request, key)
        if not request.args.get("worker") and view in ("parallel", "distributed", "whatif"):
            return self._run_csv(request, view, key)
        trace = self._file(request, refused=True)
        sorted_by = _sorted_by(request)
        name = f"{trace.file_name.split('.')[0]}.{view}.{key}.csv"

        def build(data: bytes) -> bytes:
            from tb_paddle_profile.present.display.summary import find_table, summary_display

            table = find_table(summary_display(summary_pb2.Summary.FromString(data), sorted_by=sorted_by), key, view)
            if table is None:
                raise HttpError(404, f"no table {_shown(key)} in view {_shown(view)} of {trace.file_name}")
            return to_csv(table).encode("utf-8")

        return self._from_summary(
            request,
            trace,
            "json",
            ("csv", trace.key, sorted_by, view, key),
            _CSV,
            build,
            [("Content-Disposition", _download_name(name))],
        )

    def _from_summary(
        self,
        request: Request,
        trace: TraceFile,
        fmt: str,
        memo_key: tuple,
        ctype: str,
        build: Callable[[bytes], bytes],
        headers: Optional[List[Tuple[str, str]]] = None,
    ) -> Response:
        """An answer built from the rank's Summary (memoized under memo_key); while it loads, 202 with its
        SpanEntry (in ``fmt``); 422 when it failed."""
        loader = self._require_loader()
        state = self._states([trace])[0]
        if state.state == READY:
            data = loader.summary_bytes(trace)
            if data is not None:
                loader.prioritize((), trace.run)
                self._prewarm_timelines(trace)
                return self._send(request, memo_key, ctype, lambda: build(data), headers)
            state = loader.state(trace)
        if state.state == FAILED:
            raise HttpError(422, state.error or f"{trace.file_name}: failed")
        loader.prioritize([trace], trace.run)
        entry = plugin_pb2.SpanEntry(
            span=trace.span,
            file_name=trace.file_name,
            file_size=trace.size,
            state=state.state,
            error=state.error,
            cached=state.cached,
            loading_since_unix_s=state.loading_since,
        )
        return respond(request, _encode(entry, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
