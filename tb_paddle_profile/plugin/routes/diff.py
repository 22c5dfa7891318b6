"""The ``diff`` route: two ranks, two runs, or a rank against the median of its role peers compared
(RunDiff, present/display/diff.py; docs/diff.md), each side looked up as the rank and run routes look it
up; 202 while a side loads. And its tables as CSV (the ``csv`` route's view "diff")."""

from __future__ import annotations

from typing import Tuple, cast

from werkzeug.wrappers import Request, Response

from tb_paddle_profile.pipeline.loader import FAILED, READY, Loader
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

# The `diff` route's baseline worker that stands for the median of the candidate rank's role peers.
PEERS_WORKER = "~peers"


class DiffRoutes(AnalysisBase):
    """diff (and the comparison's CSV)."""

    @_handler
    def diff(self, request: Request) -> Response:
        """Two ranks or two runs compared (RunDiff, display/diff.py; docs/diff.md): ``baseline_run``,
        ``baseline_worker``, ``baseline_span`` and the same ``candidate_*`` (both workers empty: the two runs'
        cross-rank analyses), ``sorted_by``; each side looked up as the rank routes and ``parallel`` look it
        up; 202 with the sides while one loads."""
        from tb_paddle_profile.present.display.diff import rank_diff, run_diff
        from tb_paddle_profile.v1 import diff_pb2

        fmt, sorted_by = _format(request), _sorted_by(request)
        sides = [
            tuple(_param(request, f"{side}_{p}", required=p != "worker") for p in ("run", "worker", "span"))
            for side in ("baseline", "candidate")
        ]
        if sides[0][1] == PEERS_WORKER:
            return self._peers_diff(request, sides[1], fmt)
        if bool(sides[0][1]) != bool(sides[1][1]):
            raise HttpError(400, "give a worker on both sides (two ranks) or on neither (two runs)")
        inner = [self._side_request(request, run, worker, span) for run, worker, span in sides]
        waiting = diff_pb2.RunDiff(mode="rank" if sides[0][1] else "run")
        for msg, (run, worker, span) in zip((waiting.baseline, waiting.candidate), sides):
            msg.run, msg.worker, msg.span = run, worker, span
        if sides[0][1]:  # two ranks: their Summaries
            traces = [self._file(r) for r in inner]
            loader = cast(Loader, self.loader)  # (files are listed: the plugin has a loader)
            datas, labels = [], []
            for trace in traces:
                state = self._states([trace])[0]
                data = loader.summary_bytes(trace) if state.state == READY else None
                if state.state == FAILED:
                    raise HttpError(422, state.error or f"{trace.file_name}: failed")
                if data is None:
                    loader.prioritize([trace], trace.run)
                    waiting.alignment.append(f"waiting for {trace.file_name} to load")
                datas.append(data)
                number = self._rank_numbers(trace.run, self._snapshot().runs.get(trace.run) or {}).get(trace.worker)
                labels.append(self._labels(trace.run).get(trace.worker) or self._prior_label(trace, number))
            if any(d is None for d in datas):
                return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])

            def build_ranks() -> bytes:
                named = [(run, worker, span, label) for (run, worker, span), label in zip(sides, labels)]
                baseline, candidate = (summary_pb2.Summary.FromString(d) for d in datas)
                return _encode(rank_diff(baseline, candidate, named, sorted_by=sorted_by), fmt)

            return self._send(
                request,
                ("diff", traces[0].key, traces[1].key, tuple(labels), sorted_by, fmt),
                _CTYPES[fmt],
                build_ranks,
            )
        got = [self._analysis(r) for r in inner]  # two runs: their cross-rank analyses (computed once, stored)
        for g, (run, _, span) in zip(got, sides):
            if isinstance(g, Response):
                waiting.alignment.append(f"waiting for the ranks of run {run} span {span} to load")
        if any(isinstance(g, Response) for g in got):
            return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])

        def build_runs() -> bytes:
            named = [(run, "", span, f"{run} span {span}") for run, _, span in sides]
            baseline, candidate = (plugin_pb2.RunParallel.FromString(g[5]) for g in got)
            return _encode(run_diff(baseline, candidate, named), fmt)

        return self._send(request, ("diff", got[0][4], got[1][4], tuple(sides), fmt), _CTYPES[fmt], build_runs)

    def _peers_diff(self, request: Request, side: Tuple[str, ...], fmt: str) -> Response:
        """The candidate rank against the median of its role peers (baseline_worker "~peers"; RunDiff mode
        "peers", present/display/diff.peers_diff): the peers from the run's cross-rank analysis (computed
        and stored as the parallel route does), each peer's Summary; 202 while any loads."""
        from tb_paddle_profile.analysis.peers import role_peers
        from tb_paddle_profile.present.display.diff import peers_diff
        from tb_paddle_profile.v1 import diff_pb2

        run, worker, span = side
        if not worker:
            raise HttpError(400, "the role peers' median is compared with one rank: give candidate_worker")
        waiting = diff_pb2.RunDiff(mode="peers")
        waiting.baseline.run, waiting.baseline.worker, waiting.baseline.span = run, PEERS_WORKER, span
        waiting.candidate.run, waiting.candidate.worker, waiting.candidate.span = run, worker, span
        got = self._analysis(self._side_request(request, run, "", span))
        if isinstance(got, Response):
            waiting.alignment.append(f"waiting for the ranks of run {run} span {span} to load")
            return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        key, rp = got[4], plugin_pb2.RunParallel.FromString(got[5])
        peers, where = role_peers(rp, worker)
        if not peers:
            raise HttpError(422, f"no role peers to compare this rank with ({where})")
        trace = self._file(self._side_request(request, run, worker, span))
        workers = self._snapshot().runs.get(run) or {}
        files = [trace] + [workers[p.worker][span] for p in peers if span in workers.get(p.worker, {})]
        states = self._states(files)
        if states[0].state == FAILED:
            raise HttpError(422, states[0].error or f"{trace.file_name}: failed")
        # a peer that cannot be read is left out (the median is of the others), never waited for
        files = [files[0]] + [t for t, st in zip(files[1:], states[1:]) if st.state != FAILED]
        states = [states[0]] + [st for st in states[1:] if st.state != FAILED]
        if len(files) < 2:
            raise HttpError(422, f"none of this rank's role peers ({where}) could be read")
        loader = cast(Loader, self.loader)  # (files are listed: the plugin has a loader)
        datas = [loader.summary_bytes(t) if st.state == READY else None for t, st in zip(files, states)]
        if any(d is None for d in datas):
            loader.prioritize([t for t, d in zip(files, datas) if d is None], run)
            waiting.alignment.append(f"waiting for {sum(d is None for d in datas)} summaries to load")
            return respond(request, _encode(waiting, fmt), _CTYPES[fmt], 202, [("Retry-After", "1")])
        number = self._rank_numbers(run, workers).get(worker)
        label = self._labels(run).get(worker) or self._prior_label(trace, number)
        named = [
            (run, PEERS_WORKER, span, f"median of {len(files) - 1} role peers ({where})"),
            (run, worker, span, label),
        ]

        def build() -> bytes:
            summaries = [summary_pb2.Summary.FromString(d) for d in datas]
            read = {t.worker for t in files[1:]}
            return _encode(
                peers_diff(summaries[0], summaries[1:], named, where, [p.rank for p in peers if p.worker in read]), fmt
            )

        return self._send(request, ("diff.peers", key, tuple(t.key for t in files), label, fmt), _CTYPES[fmt], build)

    @staticmethod
    def _side_request(request: Request, run: str, worker: str, span: str) -> Request:
        """A request naming one side of a comparison as the rank and run routes take it (run, worker, span)."""
        from urllib.parse import urlencode

        environ = dict(request.environ)
        query = {"run": run, "span": span, **({"worker": worker} if worker else {})}
        environ["QUERY_STRING"] = urlencode(query)
        environ.pop("HTTP_ACCEPT_ENCODING", None)
        return Request(environ)

    def _diff_csv(self, request: Request, key: str) -> Response:
        """A table of the `diff` answer as CSV; its 202 while a side loads."""
        from tb_paddle_profile.present.display.export import to_csv
        from tb_paddle_profile.present.display.summary import find_table
        from tb_paddle_profile.v1 import diff_pb2

        from urllib.parse import urlencode

        environ = dict(request.environ)
        environ.pop("HTTP_ACCEPT_ENCODING", None)  # the inner answer: uncompressed protobuf
        environ["QUERY_STRING"] = urlencode([(k, v) for k, v in request.args.items(multi=True) if k != "format"])
        answer = DiffRoutes.diff.__wrapped__(self, Request(environ))
        if answer.status_code != 200:
            return answer
        table = find_table(diff_pb2.RunDiff.FromString(answer.get_data()).display, key)
        if table is None:
            raise HttpError(404, f"no table {_shown(key)} in the comparison")
        return respond(
            request,
            to_csv(table).encode("utf-8"),
            _CSV,
            headers=[("Content-Disposition", _download_name(f"diff.{key}.csv"))],
        )
