"""What a trace's file name tells: worker, export time, rank, host and pid.

Paddle names files ``<worker>_time_<YYYY_MM_DD_HH_MM_SS_ffffff>.paddle_trace.json``
(``export_chrome_tracing``), with the default worker ``host_<hostname>pid_<pid>``
(no separator before ``pid``); the C++ default is ``pid_<pid>_time_<%F-%X>.paddle_trace.json``.
User worker names such as ``rank3``, ``worker_1`` or ``trainer-2`` carry the rank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRACE_SUFFIXES = (".paddle_trace.json", ".paddle_trace.json.gz")

_FILE = re.compile(r"^(?P<worker>.+?)_time_(?P<time>.+)\.paddle_trace\.json(?:\.gz)?$")
_DEFAULT_WORKER = re.compile(r"^host_(?P<host>.*)pid_(?P<pid>\d+)$")
_CPP_WORKER = re.compile(r"^pid_(?P<pid>\d+)$")
_RANK = re.compile(r"(?:^|[^a-z])(?:rank|worker|trainer|card|gpu|device)[_\-.]?(?P<rank>\d+)(?:$|[^0-9])", re.I)


@dataclass(frozen=True)
class WorkerName:
    worker: str
    export_time: str
    rank: int = -1
    hostname: str = ""
    pid: int = -1


def is_trace_file(name: str) -> bool:
    return name.endswith(TRACE_SUFFIXES)


def parse_file_name(file_name: str) -> WorkerName:
    """Split a trace file name (no folder) into its parts; unknown parts stay empty or -1."""
    m = _FILE.match(file_name)
    if not m:
        stem = file_name
        for suffix in TRACE_SUFFIXES:
            if stem.endswith(suffix):
                stem = stem[: -len(suffix)]
        return WorkerName(worker=stem, export_time="")
    worker, export_time = m.group("worker"), m.group("time")
    d = _DEFAULT_WORKER.match(worker)
    if d:
        return WorkerName(worker, export_time, hostname=d.group("host"), pid=int(d.group("pid")))
    c = _CPP_WORKER.match(worker)
    if c:
        return WorkerName(worker, export_time, pid=int(c.group("pid")))
    r = _RANK.search(worker)
    rank = int(r.group("rank")) if r else -1
    return WorkerName(worker, export_time, rank=rank)
