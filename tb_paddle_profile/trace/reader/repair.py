"""Names that Paddle wrote without JSON escaping, re-escaped line by line (_repair), and offsets in the
repaired copy told as offsets in the file (_Where)."""

from __future__ import annotations

import bisect
import re
from typing import Optional


_NAME_LINE = re.compile(rb'^(\s*"name": ")(.*)(", "(?:pid|id)":.*)$')


def _repair(data: bytes) -> "tuple[bytes, int, list]":
    """Re-escape names that Paddle wrote without JSON escaping; escape raw tabs.

    Returns the repaired copy, how many lines changed, and where: (start in the copy, start in
    `data`, length in `data`) of each changed line, so that an offset in the copy can be told as
    an offset in the file (_Where)."""
    out = []
    repaired = 0
    changed = []
    here = there = 0  # line starts in data and in the copy
    for line in data.split(b"\n"):
        fixed = line
        m = _NAME_LINE.match(line)
        if m:
            raw = m.group(2)
            escaped = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\t", b"\\t")
            if escaped != raw:
                fixed = m.group(1) + escaped + m.group(3)
        elif b"\t" in line and b'"' in line:
            fixed = line.replace(b"\t", b"\\t")
        if fixed is not line:
            repaired += 1
            changed.append((there, here, len(line)))
        out.append(fixed)
        here += len(line) + 1
        there += len(fixed) + 1
    return b"\n".join(out), repaired, changed


class _Where:
    """Offsets in the bytes being decoded (the file's bytes, or their repaired copy) → offsets
    in the file's (decompressed) bytes."""

    def __init__(self, data, changed: Optional[list] = None):
        self.data = data
        self.changed = changed or []

    def file_offset(self, off: int) -> int:
        if not self.changed:
            return off
        i = bisect.bisect_right([c[0] for c in self.changed], off) - 1
        if i < 0:
            return off
        there, here, length = self.changed[i]
        line = bytes(self.data[here : here + length])
        col = off - there
        m = _NAME_LINE.match(line)
        lo, hi, special = (m.start(2), m.end(2), b'\\"\t') if m else (0, length, b"\t")
        width = 0
        for j in range(length):  # each byte of the original line, and how wide the repair made it
            w = 2 if lo <= j < hi and line[j] in special else 1
            if width + w > col:
                return here + j
            width += w
        return here + length + (col - width)  # on the newline or after: the line's growth undone
