"""Text from traces made safe to print: control characters shown, never obeyed.

Event, file, folder and host names come from the input. Printed as they are, an ESC starts a terminal
sequence (a window title, an OSC 52 clipboard write, a screen clear), a CR overwrites the line and an
LF forges a line of its own ("0 failed; all good"). :func:`visible` shows each control character
(C0, DEL, C1) as an escape (``\\x1b``, ``\\r``, ``\\n``, ``\\t``): the one place where that is done,
used by every text renderer on its lines and by the CLI on everything it prints (:class:`SafeStream`).
"""
from __future__ import annotations

import re
from typing import Iterable, List

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(m: "re.Match") -> str:
    c = m.group()
    return _NAMED.get(c) or f"\\x{ord(c):02x}"


def visible(text: str) -> str:
    """`text` with every control character shown as an escape: one line, nothing a terminal obeys."""
    return _CONTROL.sub(_shown, text) if _CONTROL.search(text) else text


def visible_all(texts: List[str]) -> List[str]:
    """visible() of each of ``texts``, looked for all at once (a table's column of thousands of cells)."""
    return [visible(t) for t in texts] if _CONTROL.search("".join(texts)) else texts


def visible_lines(lines: Iterable[str]) -> str:
    """The lines joined by newlines, each made visible (a newline inside one stays on its line)."""
    return "\n".join(visible(line) for line in lines)


class SafeStream:
    """A text stream that shows the control characters written to it. `lines`: newlines inside a
    write are kept (rendered text: its lines are already made visible); otherwise only a write's
    final newline is (one record per line: an error message's inner newline is shown as ``\\n``)."""

    def __init__(self, stream, lines: bool):
        self._stream = stream
        self._lines = lines

    def write(self, text: str) -> int:
        if self._lines:
            safe = _CONTROL_BUT_NEWLINE.sub(_shown, text)
        else:
            end = "\n" if text.endswith("\n") else ""
            safe = visible(text[:len(text) - len(end)]) + end
        self._stream.write(safe)
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def raw(stream):
    """The stream under a SafeStream (for a traceback under --debug, whose lines are ours)."""
    return stream._stream if isinstance(stream, SafeStream) else stream
