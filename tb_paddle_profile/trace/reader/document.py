"""The document decoded with its events kept raw: the fast cut of Paddle's layout (_split_head), the
whole decode (_decode_whole), the Paddle check, decode(), peek_span(); msgspec's errors located in the
file's bytes (_BadJSON, _json_reason)."""

from __future__ import annotations

import re
import zlib
from typing import Optional

import msgspec
import numpy as np

from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.trace.reader.inflate import GZIP_MAGIC, MAX_GZIP_LAYERS, json_bytes
from tb_paddle_profile.trace.reader.repair import _repair, _Where
from tb_paddle_profile.trace.reader.schema import _DECODER, Trace


_BLANK = re.compile(rb"\s*\Z")
_LEAD = re.compile(rb"\s*(.)", re.S)
_BYTE = re.compile(r"\(byte (\d+)\)")
_EVENT_PATH = re.compile(r"`\$\[(\d+)\]")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
NESTED_TOO_DEEP = (
    "JSON nested too deeply (objects or arrays inside each other beyond the decoder's limit; "
    "a Paddle trace nests fewer than 10)"
)


class _BadJSON(Exception):
    """A msgspec error decoding part of the bytes. `shift`: where that part's offset 0 lies in the
    view decoded (the events' bytes or the whole buffer); `first_event`: the index in traceEvents
    of the part's first event (msgspec's `$[i]` paths are counted from it)."""

    def __init__(self, exc: Exception, shift: int = 0, first_event: Optional[int] = None):
        super().__init__(str(exc))
        self.exc = exc
        self.shift = shift
        self.first_event = first_event
        self.base = 0  # where the view decoded starts in the buffer (set by the reader)

    @property
    def truncated(self) -> bool:
        return "truncated" in str(self.exc)

    def message(self, where: _Where) -> str:
        text = _BYTE.sub(
            lambda m: f"(byte {where.file_offset(self.base + self.shift + int(m.group(1)))})", str(self.exc)
        )
        first = self.first_event
        if first is not None:
            text = _EVENT_PATH.sub(lambda m: f"`$.traceEvents[{first + int(m.group(1))}]", text)
        return text


def _offset_in(buf, part) -> int:
    """Where `part` (a zero-copy view into `buf`: a memoryview slice or a msgspec.Raw) starts in buf."""
    return int(np.frombuffer(part, np.uint8).ctypes.data - np.frombuffer(buf, np.uint8).ctypes.data)


def _split_head(data):
    """Fast path for Paddle's own layout: cut the traceEvents array out, so that the small rest
    ("head") decodes alone and the events are only decoded once, in chunks. None when the file
    does not look like that (truncated, other key order...): the caller then decodes it whole."""
    key = data.find(b'"traceEvents"')
    info = data.rfind(b'"ExtraInfo"')
    if key < 0 or info < key:
        return None
    m = _EVENTS_KEY.match(data, key)  # the value must be an array, not a string holding "["
    if m is None:
        return None
    open_ = m.end() - 1
    close = data.rfind(b"]", open_, info)
    if close < 0:
        return None
    try:
        head = _DECODER.decode(b"".join((memoryview(data)[:open_], b"[]", memoryview(data)[close + 1 :])))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    head.traceEvents = memoryview(data)[open_ : close + 1]
    return head


def _decode_whole(data, file_name: str) -> Trace:
    """The typed decode of the whole document (the events kept raw): TraceError for what no repair
    can change, _BadJSON for malformed JSON."""
    try:
        trace = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(file_name, f"not a Paddle trace: {exc}") from None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise TraceError(
                file_name, "truncated JSON: the file ends early (cut off or still being written)"
            ) from None
        raise _BadJSON(exc) from None
    except RecursionError:
        raise TraceError(file_name, NESTED_TOO_DEEP) from None
    lead = bytes(memoryview(trace.traceEvents)[:1])
    if lead != b"[":
        kind = {b'"': "a string", b"{": "an object", b"t": "a boolean", b"f": "a boolean", b"n": "null"}.get(
            lead, "a number"
        )
        raise TraceError(
            file_name,
            f"not a Paddle trace: traceEvents is {kind}, not an array (byte {_offset_in(data, trace.traceEvents)})",
        )
    return trace


def _check_paddle(trace: Trace, file_name: str) -> None:
    if not isinstance(trace.schemaVersion, str) or not (
        trace.span_index is not None or trace.span_indx is not None or trace.ExtraInfo
    ):
        raise TraceError(file_name, "not a Paddle trace: no Paddle schemaVersion/span_index/ExtraInfo")


def decode(data: bytes, file_name: str, repair: bool = False) -> "tuple[Trace, int]":
    """Typed decode of everything but the events (kept raw) with Paddle's quirks tolerated.
    Raises TraceError with a one-line reason."""
    data = json_bytes(data, file_name)
    if _BLANK.match(data):
        raise TraceError(file_name, "empty file")
    buf, repaired, changed = data, 0, None
    if repair:
        buf, repaired, changed = _repair(data)
    try:
        trace = _split_head(buf)
        if trace is None:
            trace = _decode_whole(buf, file_name)
    except _BadJSON as exc:
        if not repair:
            return decode(data, file_name, repair=True)
        raise TraceError(file_name, _json_reason(data, exc, _Where(data, changed))) from None
    _check_paddle(trace, file_name)
    return trace, repaired


def _json_reason(data, exc: _BadJSON, where: _Where) -> str:
    if isinstance(exc.exc, msgspec.ValidationError):
        return f"not a Paddle trace: {exc.message(where)}"
    m = _LEAD.match(data)
    what = "not JSON" if m is None or m.group(1) not in (b"{", b"[") else "invalid JSON"
    return f"{what}: {exc.message(where)}"


_HEAD_SPAN = re.compile(rb'"span_ind(?:ex|x)"\s*:\s*"?([^",}\s]*)')


def peek_span(head: bytes) -> Optional[str]:
    """The span of a trace from its first kilobytes, without parsing the file."""
    for _ in range(MAX_GZIP_LAYERS):
        if head[:2] != GZIP_MAGIC:
            break
        try:
            head = zlib.decompressobj(31).decompress(head, 1 << 16)
        except zlib.error:
            return None
    m = _HEAD_SPAN.search(head)
    return m.group(1).decode("utf-8", "replace") if m else None
