"""The one Python formatter of the display model's cells and sentences (display.proto).

Its twin is frontend/src/display/cells.ts; both are tested on the same cases
(tests/data/cell_cases.json, whose expected strings come from Python's own formatting, the
operations Paddle's profiler_statistic applies). The rules, per CellKind:

* DURATION: ns in the format's unit (or the reader's ``time_unit``), ``'{:.2f}'`` of ``ns / divisor``
  (``ns`` itself for "ns"), "-" when missing or infinite; style "unit" appends " <unit>";
* RATIO: ``'{:.{digits}f}'`` of ``fraction * 100``; PERCENT: the same and a "%" sign;
* COUNT: ``str(int)``; BYTES: the integer, or style "human": "1.50 MiB" (binary units), "-1.50 MiB", "-" for 0;
* NUMBER: ``'{:.{digits}f}'``, or style "g": ``'{:g}'``; TEXT: the text;
* a number that prints as zero prints no sign ("0%", not "-0%": Python 3.11's ``'{:z.2f}'``).
"""

from __future__ import annotations

import math
from typing import Callable, Iterable, List, TypeVar, Union

from tb_paddle_profile.v1 import display_pb2 as dpb

TEXT, DURATION, RATIO, PERCENT, COUNT, BYTES, NUMBER = (
    dpb.CELL_TEXT,
    dpb.CELL_DURATION,
    dpb.CELL_RATIO,
    dpb.CELL_PERCENT,
    dpb.CELL_COUNT,
    dpb.CELL_BYTES,
    dpb.CELL_NUMBER,
)
TIME_UNITS = ("s", "ms", "us", "ns")
_DIVISOR = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": None}


# The binary units of a human size, largest first (display/cells.ts BYTE_UNITS is the same ladder; the
# Memory panel's axes take their unit from it, so an axis and its labels name the same unit).
BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def byte_unit(n: float) -> tuple:
    """(name, divisor) of the binary unit that ``n`` bytes print in: the largest that ``|n|`` reaches."""
    for unit, div in BYTE_UNITS:
        if abs(n) >= div:
            return unit, div
    return "B", 1


def human_bytes(n: int) -> str:
    """ "-" for 0, else B / KiB / MiB / GiB with 2 decimals (an integer of B), a negative size with its sign."""
    if not n:
        return "-"
    sign, n = ("-" if n < 0 else ""), abs(n)
    unit, div = byte_unit(n)
    return f"{sign}{n} B" if div == 1 else f"{sign}{n / div:.2f} {unit}"


def _fixed(x: float, digits: int) -> str:
    """'{:.{digits}f}', without the sign of a value that prints as zero (a '-0%' reads as a change)."""
    s = "{:.{}f}".format(x, digits)
    return s[1:] if s.startswith("-") and not s.strip("-0.") else s


def format_value(fmt: dpb.Format, cell: dpb.Cell, time_unit: str = "ms") -> str:
    """The printed text of one cell under its column's (or span's) format."""
    return value_formatter(fmt, time_unit)(cell)


def value_formatter(fmt: dpb.Format, time_unit: str = "ms") -> Callable[[dpb.Cell], str]:
    """format_value's function of a cell under ``fmt``, made once for a column of many cells."""
    kind, digits, style = fmt.kind, fmt.digits, fmt.style
    text: Callable[[float], str]
    if kind == TEXT:
        return lambda cell: "-" if cell.missing else cell.text
    if kind == DURATION:
        unit = fmt.unit or time_unit
        div = _DIVISOR.get(unit)
        suffix = f" {unit}" if style == "unit" else ""

        def text(x: float) -> str:
            if unit not in _DIVISOR:
                raise ValueError(f"time unit must be one of {', '.join(TIME_UNITS)}, not {unit!r}")
            if math.isinf(x):
                return "-"
            return _fixed(x / div if div is not None else x, 2) + suffix
    elif kind == RATIO:
        text = lambda x: _fixed(x * 100, digits)  # noqa: E731
    elif kind == PERCENT:
        text = lambda x: _fixed(x * 100, digits) + "%"  # noqa: E731
    elif kind == COUNT:
        text = lambda x: str(int(x))  # noqa: E731
    elif kind == BYTES:
        text = (lambda x: human_bytes(int(x))) if style == "human" else (lambda x: str(int(x)))
    elif kind == NUMBER:
        text = (lambda x: "{:g}".format(x) if x else "0") if style == "g" else (lambda x: _fixed(x, digits))
    else:

        def text(x: float) -> str:
            raise ValueError(f"unknown cell kind {kind}")

    return lambda cell: "-" if cell.missing else text(cell.number)


def format_cell(column: dpb.Column, cell: dpb.Cell, time_unit: str = "ms") -> str:
    return format_value(column.format, cell, time_unit)


def span_text(span: dpb.Span, time_unit: str = "ms") -> str:
    if span.is_value:
        return format_value(span.format, span.value, time_unit)
    return span.text


def sentence_text(sentence: dpb.Sentence, time_unit: str = "ms") -> str:
    """A sentence as plain text: its spans one after the other."""
    return "".join(span_text(s, time_unit) for s in sentence.spans)


# ------------------------------------------------------------------ builders (for display/*.py)


def fmt(kind: int, unit: str = "", digits: int = 0, style: str = "") -> dpb.Format:
    # (protoc's stubs take only the CellKind type for an enum field; the field holds the int)
    return dpb.Format(kind=kind, unit=unit, digits=digits, style=style)  # type: ignore[arg-type]


def num(x, title: str = "") -> dpb.Cell:
    """A numeric cell; None (or an infinite minimum) is missing."""
    if x is None:
        return dpb.Cell(missing=True)
    return dpb.Cell(number=float(x), title=title)


def text(s: str, title: str = "") -> dpb.Cell:
    return dpb.Cell(text=s, title=title)


MISSING = dpb.Cell(missing=True)


def lit(s: str) -> dpb.Span:
    return dpb.Span(text=s)


def val(x, kind: int, unit: str = "", digits: int = 0, style: str = "") -> dpb.Span:
    return dpb.Span(is_value=True, format=fmt(kind, unit, digits, style), value=num(x))


def rank(r: int, label: str) -> dpb.Span:
    return dpb.Span(is_rank=True, rank=int(r), text=label)


def sentence(spans: Iterable, key: str = "", level: str = "info", title: str = "", section: str = "") -> dpb.Sentence:
    """A Sentence from spans; plain strings become literal spans."""
    out = dpb.Sentence(key=key, level=level, title=title, section=section)
    out.spans.extend(lit(s) if isinstance(s, str) else s for s in spans)
    return out


_Placed = TypeVar("_Placed", bound=Union[dpb.Sentence, dpb.Table])


def placed(items: Iterable[_Placed], section: str, part: str = "") -> List[_Placed]:
    """`items` (sentences or tables) placed in `section` of their view, as `part` of it."""
    out = list(items)
    for x in out:
        x.section, x.part = section, part
    return out
