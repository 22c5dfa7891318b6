"""Whether a trace's bytes end before its JSON document does (a file still being written)."""
from __future__ import annotations

import zlib


def looks_truncated(data: bytes) -> bool:
    """True when the bytes end before the JSON document does (a file still being written)."""
    if data[:2] == b"\x1f\x8b":
        inflater = zlib.decompressobj(wbits=31)
        tail = b""
        try:
            for i in range(0, len(data), 1 << 20):
                out = inflater.decompress(data[i:i + (1 << 20)])
                tail = (tail + out)[-256:]
        except zlib.error:
            return False  # corrupt rather than cut short
        if not inflater.eof:
            return True
        data = tail
    return not data[-256:].rstrip().endswith((b"}", b"]"))
