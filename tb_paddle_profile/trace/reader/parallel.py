"""Without the native scanner: a large file's chunks read by forked processes, each taking a contiguous
range of them, and the parts' names renumbered as a serial read numbers them (_parallel_tabulate);
how many processes a reader may use (parse_workers)."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import threading
from typing import List, Optional, cast

from tb_paddle_profile.trace.reader.assemble import _assemble, _concat
from tb_paddle_profile.trace.reader.chunks import _chunk_ranges, _columns, _event_bounds
from tb_paddle_profile.trace.reader.columns import _Interner
from tb_paddle_profile.trace.reader.schema import Trace
from tb_paddle_profile.trace.reader.tables import EventTables


# Below this many bytes of events per process, forking costs more than it saves.
PARALLEL_MIN_BYTES = 24 << 20
# At most this many by default: each process holds a chunk of decoded events (~50 MB), and past a
# few the parent's serial part (reading, merging, the analyses) dominates anyway.
MAX_PARSE_WORKERS = 8

_SHARED: Optional[memoryview] = None  # the events' bytes, inherited by forked workers


def parse_workers() -> int:
    """Processes a reader may use on this machine: the CPUs this process may run on, at most
    MAX_PARSE_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_PARSE_WORKERS))


def _range_columns(ranges: "List[tuple]") -> "tuple[dict, List[str]]":
    """In a forked worker: the columns of these chunks of _SHARED, names numbered locally."""
    return _columns(cast(memoryview, _SHARED), ranges)  # (set before the workers fork)


def _parallel_tabulate(trace: Trace, repaired: int, workers: int) -> Optional[EventTables]:
    """Events decoded by `workers` processes (this one included), or None when not worth it or
    not possible here (no fork, threads running, a worker failed): the caller then reads serially."""
    global _SHARED
    mv, start, end = _event_bounds(trace.traceEvents)
    workers = min(workers, (end - start) // PARALLEL_MIN_BYTES)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return None
    # The same chunks as a serial read, dealt out in contiguous groups: names are then numbered
    # in the same order (first appearance, chunk by chunk) and the tables are identical.
    chunks = _chunk_ranges(mv, start, end)
    workers = min(workers, len(chunks))
    if workers < 2:
        return None
    groups = [chunks[len(chunks) * i // workers : len(chunks) * (i + 1) // workers] for i in range(workers)]
    _SHARED = mv
    try:
        # fork: the children see the file's bytes without a copy; this process takes the first range.
        with concurrent.futures.ProcessPoolExecutor(
            workers - 1, mp_context=multiprocessing.get_context("fork")
        ) as pool:
            futures = [pool.submit(_range_columns, group) for group in groups[1:]]
            results = [_range_columns(groups[0])] + [f.result() for f in futures]
    except Exception:  # a split inside a string, a broken worker...: the serial read decides
        return None
    finally:
        _SHARED = None
    names = _Interner()
    parts = []
    offset = 0
    for part, local_names in results:
        remap = names.many(local_names)
        for key in ("host_name", "rt_name", "dev_name", "mem_place"):
            part[key] = remap[part[key]] if len(remap) else part[key]
        part["host_pos"] += offset
        part["mem_pos"] += offset
        offset += part["n"]
        parts.append(part)
    return _assemble(trace, _concat(parts), names.names, repaired)
