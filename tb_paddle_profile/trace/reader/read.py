"""read_trace: a trace file's bytes → EventTables; the file prepared, its head decoded, the events read
in chunks (or by forked processes) and repaired once when they do not decode."""

from __future__ import annotations

import gc
from typing import List, Optional, Union

from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.trace.reader.assemble import _assemble, _concat
from tb_paddle_profile.trace.reader.chunks import (
    _chunk_ranges,
    _ChunkSplitError,
    _column_parts,
    _decode_events,
    _event_bounds,
    _Nested,
)
from tb_paddle_profile.trace.reader.columns import _chunk_columns, _Interner, _Malformed
from tb_paddle_profile.trace.reader.document import (
    _BLANK,
    NESTED_TOO_DEEP,
    _BadJSON,
    _check_paddle,
    _decode_whole,
    _json_reason,
    _offset_in,
    _split_head,
)
from tb_paddle_profile.trace.reader.inflate import json_bytes
from tb_paddle_profile.trace.reader.native import native_scanner
from tb_paddle_profile.trace.reader.parallel import _parallel_tabulate
from tb_paddle_profile.trace.reader.repair import _repair, _Where
from tb_paddle_profile.trace.reader.schema import Trace
from tb_paddle_profile.trace.reader.tables import EventTables


def read_trace(
    data: Union[bytes, List[bytes]], file_name: str, workers: int = 1, max_inflate: Optional[int] = None
) -> EventTables:
    """Decode a whole trace file's bytes into EventTables.

    `data` may be a one-item list holding the bytes: the reader then takes them out and drops
    them as soon as the events are read, before the columns are joined, so that a large file's
    bytes and its joined columns are not held at once (the caller keeps no other reference).

    With workers > 1, that many cores read the file's chunks at once: threads running the native
    scanner (which releases the GIL) when it is built, else (msgspec only) forked processes for
    large files (PARALLEL_MIN_BYTES of events per process), each taking a contiguous range of the
    events. The tables are the same as a serial read's; any failure falls back to the serial read.

    `max_inflate`: the bound of a .gz's inflated bytes (None: max_inflate_bytes(), for one parse).

    Bad input raises TraceError (one line naming the file and the reason, byte offsets counted in
    the file's decompressed bytes); any other exception is a bug of ours."""
    box = data if isinstance(data, list) else [data]
    del data
    # Millions of small acyclic objects: the cyclic GC would only rescan them over and over.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(box, file_name, workers=workers, max_inflate=max_inflate)
    except _Malformed as exc:
        raise TraceError(file_name, f"not a Paddle trace: malformed event ({exc})") from None
    except _Nested:
        raise TraceError(file_name, NESTED_TOO_DEEP) from None
    finally:
        if was_enabled:
            gc.enable()


def _read(box: list, file_name: str, workers: int = 1, max_inflate: Optional[int] = None) -> EventTables:
    box[0] = data = json_bytes(box[0], file_name, max_inflate)  # inflated once; the compressed bytes go
    if _BLANK.match(data):
        raise TraceError(file_name, "empty file")
    buf, repaired, changed = data, 0, None
    while True:
        try:
            trace, parts, names = _read_buffer(buf, file_name, workers if not repaired else 1, repaired)
        except _BadJSON as exc:
            error = exc
        else:
            if isinstance(parts, EventTables):
                return parts
            # The events are read: the file's bytes (and the repaired copy) can go before the join.
            trace.traceEvents = None
            del buf, data
            box.clear()
            return _assemble(trace, _concat(parts), names, repaired)
        if repaired or error.truncated:
            break
        fixed, count, changed = _repair(data)  # names Paddle wrote without escaping
        if not count:
            break
        buf, repaired = fixed, count
    raise TraceError(file_name, _json_reason(data, error, _Where(data, changed)))


def _read_buffer(buf, file_name: str, workers: int, repaired: int):
    """(head, event columns in parts, names) of the trace in `buf`; _BadJSON when it is not JSON.
    First the fast cut of Paddle's layout, then (when the events do not decode in that cut, or it
    does not apply) the whole document's decode, which decides."""
    trace = _split_head(buf)
    if trace is not None:
        _check_paddle(trace, file_name)
        try:
            return (trace,) + _event_parts(trace, workers, repaired)
        except _BadJSON:
            pass  # the cut may be wrong (another key after the events...)
    trace = _decode_whole(buf, file_name)
    _check_paddle(trace, file_name)
    try:
        return (trace,) + _event_parts(trace, workers, repaired)
    except _BadJSON as exc:
        exc.base = _offset_in(buf, trace.traceEvents)
        raise


def _event_parts(trace: Trace, workers: int, repaired: int):
    """The events' columns in parts (or, read by forked processes, the whole EventTables)."""
    if workers > 1 and not repaired and native_scanner() is None:
        tables = _parallel_tabulate(trace, repaired, workers)
        if tables is not None:
            return tables, None
    mv, start, end = _event_bounds(trace.traceEvents)
    try:
        # with the native scanner, the cores read chunks as threads of this process
        return _column_parts(mv, _chunk_ranges(mv, start, end), threads=workers)
    except _ChunkSplitError:
        names = _Interner()
        parts = [_chunk_columns(_decode_events(trace.traceEvents), names, 0)]
        return parts, names.names
