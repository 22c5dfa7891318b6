"""Text from traces made safe to print: control characters shown, never obeyed.

Event, file, folder and host names come from the input. Printed as they are, an ESC starts a terminal
sequence (a window title, an OSC 52 clipboard write, a screen clear), a CR overwrites the line and an
LF forges a line of its own ("0 failed; all good"). :func:`visible` shows each control character
(C0, DEL, C1) as an escape (``\\x1b``, ``\\r``, ``\\n``, ``\\t``): the one place where that is done,
used by every text renderer on its lines, by the CLI on everything it prints (:class:`SafeStream`) and
by every logger of the package on its records' arguments (:func:`logger`: TensorBoard's log is a
terminal too).
"""

from __future__ import annotations

import logging
import numbers
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


_DEL_C1 = re.compile("[\x7f-\x9f]")


def visible_json(data: bytes) -> bytes:
    """UTF-8 JSON with DEL and the C1 controls written as ``\\u`` escapes: the same JSON values, nothing a
    terminal obeys. (A JSON encoder escapes C0 itself but may leave DEL and C1 raw in a string, where
    :func:`visible`'s ``\\x9b`` would make the JSON invalid; outside strings JSON has none of them.) Looked
    for in the bytes first (C1 is ``\\xc2`` then 0x80-0x9f): tens of MB at thousands of ranks."""
    if b"\x7f" not in data and not _has_c1(data):
        return data
    return _DEL_C1.sub(lambda m: f"\\u{ord(m.group()):04x}", data.decode("utf-8")).encode("utf-8")


def _has_c1(data: bytes) -> bool:
    at = data.find(b"\xc2")
    while at >= 0:  # (a \xc2 is mostly another Latin-1 letter, such as the µ of µs)
        if 0x80 <= data[at + 1] <= 0x9F:
            return True
        at = data.find(b"\xc2", at + 2)
    return False


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
            safe = visible(text[: len(text) - len(end)]) + end
        self._stream.write(safe)
        return len(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def raw(stream):
    """The stream under a SafeStream (for a traceback under --debug, whose lines are ours)."""
    return stream._stream if isinstance(stream, SafeStream) else stream


class Lines(str):
    """A log argument of several lines of ours (a traceback): each line made visible, the newlines kept."""


def _visible_arg(arg):
    if isinstance(arg, numbers.Number):  # numpy's too: %d and %.0f need a number
        return arg
    if isinstance(arg, Lines):
        return visible_lines(arg.split("\n"))
    return visible(arg if isinstance(arg, str) else str(arg))


class _VisibleArgs(logging.Filter):
    """Shows the control characters of a record's arguments (names from the input, errors naming them):
    a file name can neither send a sequence to the terminal of TensorBoard's log nor forge a line of it.
    The format strings are ours and stay as they are."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args:
            record.args = tuple(_visible_arg(a) for a in args)
        elif isinstance(args, dict) and args:
            record.args = {k: _visible_arg(v) for k, v in args.items()}
        return True


_FILTER = _VisibleArgs()


def logger(name: str) -> logging.Logger:
    """logging.getLogger(name) with the filter that makes its records' arguments visible (every logger
    of the package is made here)."""
    log = logging.getLogger(name)
    if _FILTER not in log.filters:
        log.addFilter(_FILTER)
    return log
