"""Whether a trace's bytes end before its JSON document does (a file still being written)."""

from __future__ import annotations

from typing import Optional

from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.trace.reader import GZIP_MAGIC, _TooBig, _inflate_bound, _layers

_TAIL = 256


def looks_truncated(data: bytes, max_inflate: Optional[int] = None) -> bool:
    """True when the bytes end before the JSON document does (a file still being written).

    A .gz is inflated as the reader does: in steps of bounded output (zlib's max_length), every
    layer, never past the reader's bound (`max_inflate`, see reader.max_inflate_bytes), keeping
    only the last bytes. A file refused for its size or its layers, or corrupt, is not truncated:
    it is failed at once rather than shown as still being written."""
    if data[:2] == GZIP_MAGIC:
        bound, _ = _inflate_bound(len(data), max_inflate)
        tail = b""
        try:
            stream, first = _layers(data, "", bound)
            tail = bytes(first[-_TAIL:])
            for chunk in stream:
                tail = (tail + bytes(chunk[-_TAIL:]))[-_TAIL:]
        except _TooBig:
            return False  # a bomb, not a file cut short
        except TraceError as err:
            return err.reason == "truncated gzip stream"
        data = tail
    return not data[-_TAIL:].rstrip().endswith((b"}", b"]"))
