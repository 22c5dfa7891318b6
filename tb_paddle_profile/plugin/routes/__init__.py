"""The plugin's HTTP routes (WSGI), served by TensorBoard under ``/data/plugin/paddle_profile/``.

Every request parameter is looked up among the runs, workers and spans of the latest scan: a value from
the client is only ever a dictionary key, never part of a filesystem path. Unknown values get 400/404
with a one-line message. Responses are gzip-compressed when the client accepts it. Nothing here parses a
trace: summaries come finished from the loader.

A file that the path policy (tb_paddle_profile/core/paths.py) refuses is listed FAILED with the reason, is
never handed to the timeline, and is never served (403); the raw trace is opened with
paths.open_checked. Every response carries ``X-Content-Type-Options: nosniff``; an exception of our
own code is answered 500 with a one-line message saying it is a bug of the tool, and logged with its
traceback.

One module per concern, ``Routes`` made of one class per family of routes:

- ``http``: responses, the error answers (``_handler``), the request's parameters;
- ``base``: the shared state, the lookups of run, worker, span and file, the memoized answers;
- ``analyses``: rank numbers, labels, clock offsets and the cross-rank analysis every family asks for;
- ``runs``: runs, status, asset; ``summary``: summary, display, csv; ``parallel``: distributed,
  parallel, rank_banner, parallel_matched, whatif; ``diff``: diff; ``timelines``: timeline,
  timeline_event/search/range/instance/compact, trace_window; ``trace``: the raw trace's download.
"""

from __future__ import annotations

from typing import Callable, Dict

from .base import HEAVY_PROCESSES, HEAVY_WORKERS, PLUGIN_NAME, STATIC_DIR
from .diff import PEERS_WORKER, DiffRoutes
from .http import _GZIP_MIN, JSON, PROTOBUF, HttpError, _encode, internal_error, respond
from .parallel import SUMMARY_TABLES, ParallelRoutes
from .runs import FALLBACK_MODULE, RunsRoutes
from .summary import SummaryRoutes
from .timelines import TimelineRoutes
from .trace import TraceRoutes

__all__ = [
    "FALLBACK_MODULE",
    "HEAVY_PROCESSES",
    "HEAVY_WORKERS",
    "JSON",
    "PEERS_WORKER",
    "PLUGIN_NAME",
    "PROTOBUF",
    "STATIC_DIR",
    "SUMMARY_TABLES",
    "HttpError",
    "Routes",
    "_GZIP_MIN",
    "_encode",
    "internal_error",
    "respond",
]


class Routes(RunsRoutes, SummaryRoutes, ParallelRoutes, DiffRoutes, TimelineRoutes, TraceRoutes):
    """The WSGI apps; ``apps()`` is what the plugin's ``get_plugin_apps()`` returns."""

    def apps(self) -> Dict[str, Callable]:
        return {
            "/runs": self.runs,
            "/summary": self.summary,
            "/display": self.display,
            "/csv": self.csv,
            "/distributed": self.distributed,
            "/parallel": self.parallel,
            "/parallel_matched": self.parallel_matched,
            "/rank_banner": self.rank_banner,
            "/whatif": self.whatif,
            "/diff": self.diff,
            "/trace": self.trace,
            "/timeline": self.timeline,
            "/timeline_event": self.timeline_event,
            "/timeline_search": self.timeline_search,
            "/timeline_range": self.timeline_range,
            "/timeline_instance": self.timeline_instance,
            "/timeline_compact": self.timeline_compact,
            "/trace_window": self.trace_window,
            "/status": self.status,
            "/index.js": self.asset,
            "/*": self.asset,
        }
