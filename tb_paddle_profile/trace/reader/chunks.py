"""The events array cut at event boundaries about every CHUNK_BYTES, each chunk read by the native
scanner or decoded by msgspec, into one part of columns per chunk (_column_parts); threads run the
scanner over several chunks at once."""

from __future__ import annotations

import collections
import concurrent.futures
import re
from typing import Deque, List

import msgspec

from tb_paddle_profile.trace.reader.assemble import _concat
from tb_paddle_profile.trace.reader.columns import _chunk_columns, _Interner
from tb_paddle_profile.trace.reader.document import _BadJSON
from tb_paddle_profile.trace.reader.native import _native_chunk_columns, native_scanner
from tb_paddle_profile.trace.reader.schema import _EVENTS, Event


_SEPARATOR = re.compile(rb"\}\s*,\s*\{")
CHUNK_BYTES = 8 << 20


def _event_bounds(raw) -> "tuple[memoryview, int, int]":
    """The traceEvents array's bytes and the range between its brackets."""
    mv = memoryview(raw)
    if len(mv) < 2 or mv[0] != 0x5B or mv[-1] != 0x5D:  # "[" ... "]"
        raise AssertionError("traceEvents is not an array")  # checked where the head is decoded
    return mv, 1, len(mv) - 1


def _chunk_ranges(mv: memoryview, start: int, end: int) -> "List[tuple]":
    """mv[start:end] cut at event boundaries about every CHUNK_BYTES: (start, stop) per chunk."""
    ranges = []
    pos = start
    while pos < end:
        cut = pos + CHUNK_BYTES
        m = _SEPARATOR.search(mv, cut, end) if cut < end else None
        stop, nxt = (m.start() + 1, m.end() - 1) if m else (end, end)
        ranges.append((pos, stop))
        pos = nxt
    return ranges


def _decode_chunk(mv: memoryview, pos: int, stop: int, single: bool, first_event: int = 0) -> List[Event]:
    """One chunk's events as structs. A cut that lands inside a string (a name holding "}, {")
    shows as a decode error, and the array is then decoded whole."""
    try:
        return _EVENTS.decode(b"".join((b"[", mv[pos:stop], b"]")))
    except RecursionError:
        raise _Nested() from None
    except msgspec.DecodeError as exc:
        if single:
            raise _BadJSON(exc, shift=pos - 1, first_event=first_event) from None  # "[" stands at pos - 1
        raise _ChunkSplitError() from None


def _decode_events(raw) -> List[Event]:
    """The whole traceEvents array decoded at once."""
    try:
        return _EVENTS.decode(raw)
    except RecursionError:
        raise _Nested() from None
    except msgspec.DecodeError as exc:
        raise _BadJSON(exc, first_event=0) from None


class _ChunkSplitError(Exception):
    pass


class _Nested(Exception):
    pass


def _columns(mv: memoryview, ranges: "List[tuple]", threads: int = 1) -> "tuple[dict, List[str]]":
    """_column_parts joined into one part."""
    parts, names = _column_parts(mv, ranges, threads)
    return _concat(parts), names


def _column_parts(mv: memoryview, ranges: "List[tuple]", threads: int = 1) -> "tuple[List[dict], List[str]]":
    """The columns of these chunks of mv, one part per chunk (event positions counted from the
    first chunk), and the names their ids refer to, in order of first appearance. Each chunk goes
    through the native scanner when it is built and takes the chunk, else through msgspec.
    With threads > 1 the scanner reads that many chunks at once (it runs without the GIL) while
    this thread turns finished ones into columns, in order."""
    names = _Interner()
    parts: List[dict] = []
    offset = 0
    scanner = native_scanner()
    pool = None
    if scanner is not None and threads > 1 and len(ranges) > 1:
        threads = min(threads, len(ranges))
        pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="tbpp-scan")
    try:
        ahead: Deque[concurrent.futures.Future] = collections.deque()
        todo = iter(ranges)

        def submit() -> None:  # (called only with a pool)
            nxt = next(todo, None)
            if nxt is not None and pool is not None:
                ahead.append(pool.submit(scanner, mv, *nxt))

        if pool is not None:
            for _ in range(threads + 1):  # bounded: a chunk of records per thread, one more ready
                submit()
        for pos, stop in ranges:
            c = None
            if pool is not None:
                got = ahead.popleft().result()
                submit()
                c = _native_chunk_columns(got, mv, names, offset)
            elif scanner is not None:
                c = _native_chunk_columns(scanner(mv, pos, stop), mv, names, offset)
            if c is None:
                c = _chunk_columns(_decode_chunk(mv, pos, stop, len(ranges) == 1, offset), names, offset)
            parts.append(c)
            offset += c["n"]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return parts or [_chunk_columns([], names, 0)], names.names
