"""A .gz trace inflated in bounded steps, once (a gzip inside a gzip in the same pass, a third layer
refused), refused past MAX_GZIP_RATIO x its size or past $TB_PADDLE_PROFILE_MAX_INFLATE_GB; the
inflated size told for memory planning (inflated_size); a UTF-8 byte order mark blanked (json_bytes)."""

from __future__ import annotations

import itertools
import math
import os
import re
import zlib
from typing import Optional, cast

from tb_paddle_profile.core import settings
from tb_paddle_profile.core.errors import TraceError


GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
# deflate's best case (runs of one byte: 258-byte matches in about 2 bits) is about 1032:1
DEFLATE_MAX_RATIO = 1032
# Real traces compress 10-15 x (the sample and synthetic ones: 9-15 x at gzip -1..-9). Past this
# ratio a .gz is refused as a gzip bomb once its output is beyond RATIO_FREE_BYTES.
MAX_GZIP_RATIO = 200
RATIO_FREE_BYTES = 64 << 20
# A gzip inside a gzip is inflated in the same streaming pass; a third layer is refused.
MAX_GZIP_LAYERS = 2
# Default bound of a .gz's inflated size, and the variable that sets it (GB, 0: no bound).
DEFAULT_MAX_INFLATE_GB = 16
MAX_INFLATE_ENV = settings.MAX_INFLATE_GB
_INFLATE_STEP = 1 << 20  # output of one decompress call
_INFLATE_PIECE = 1 << 16  # input of one decompress call (unconsumed input is copied per call)
_GB = 10**9


def physical_memory() -> Optional[int]:
    """Bytes of memory of this machine (None where it cannot be told)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return memory if memory > 0 else None


def max_inflate_bytes(share: int = 1) -> int:
    """How far a .gz trace may inflate (0: no bound): $TB_PADDLE_PROFILE_MAX_INFLATE_GB, else
    DEFAULT_MAX_INFLATE_GB but at most half of this machine's memory divided among the `share`
    parses that may run at once (the inflated bytes are held in memory and the parse needs about
    1.4 x them: N workers each inflating a bomb to its bound then still leave half the memory)."""
    value = os.environ.get(MAX_INFLATE_ENV, "").strip()
    if value:
        try:
            gb = float(value)
        except ValueError:
            gb = -1.0
        if gb == 0:
            return 0
        if gb > 0 and math.isfinite(gb):
            return int(gb * _GB)
    limit = DEFAULT_MAX_INFLATE_GB * _GB
    memory = physical_memory()
    if memory:
        limit = min(limit, memory // (2 * max(1, share)))
    return limit


def _inflate_bound(compressed_size: int, limit: Optional[int] = None) -> "tuple[int, str]":
    """The most bytes a .gz of that size may inflate to (`limit`: the bound on any .gz, by default
    max_inflate_bytes()), and the refusal that names the bound. Counted in bytes inflated, never
    taken from the gzip trailer (a multi-member file's trailer tells only its last member)."""
    if limit is None:
        limit = max_inflate_bytes()
    by_ratio = max(RATIO_FREE_BYTES, MAX_GZIP_RATIO * compressed_size)
    if limit and limit <= by_ratio:
        return limit, (f"inflates beyond {limit / _GB:.3g} GB (the bound for a .gz trace; {MAX_INFLATE_ENV} sets it)")
    return by_ratio, (
        f"inflates more than {MAX_GZIP_RATIO} x its size (a gzip bomb? real traces compress "
        f"10-15 x; gunzip it to read it)"
    )


class _TooBig(Exception):
    pass


def _pieces(chunks, size: int = _INFLATE_PIECE):
    """The bytes of `chunks` in slices of at most `size` (zlib copies a call's unconsumed input)."""
    for chunk in chunks:
        mv = memoryview(chunk)
        for i in range(0, len(mv), size):
            yield mv[i : i + size]


def _gunzip(pieces, file_name: str, bound: int, partial: bool = False):
    """The inflated bytes of the gzip stream given in pieces, in steps of at most _INFLATE_STEP
    (members one after another, zero padding after the last ignored). _TooBig past `bound`
    bytes; a TraceError for corrupt or (unless `partial`) truncated data."""
    d = None
    started = False
    total = 0
    for piece in pieces:
        data = piece
        while data:
            if d is None:
                if started:  # after a member: another member, or zero padding
                    data = bytes(data).lstrip(b"\0")
                    if not data:
                        break
                d = zlib.decompressobj(31)
                started = True
            out = _inflate_step(d, data, file_name)
            data = d.unconsumed_tail
            while out:
                total += len(out)
                if total > bound:
                    raise _TooBig()
                yield out
                # a full step with the input used up: zlib may hold more output
                if len(out) < _INFLATE_STEP or data or d.eof:
                    break
                out = _inflate_step(d, b"", file_name)
            if d.eof:
                data = d.unused_data
                d = None
    if not started or (d is not None and not partial):
        raise TraceError(file_name, "truncated gzip stream")


def _inflate_step(d, data, file_name: str) -> bytes:
    try:
        return d.decompress(data, _INFLATE_STEP)
    except zlib.error as exc:
        raise TraceError(file_name, f"corrupt gzip data ({exc})") from None


def _layers(data, file_name: str, bound: int, partial: bool = False):
    """The innermost inflated stream of a .gz (a gzip in a gzip: both layers in one pass), and the
    first bytes of its output."""
    stream = _gunzip(_pieces([data]), file_name, bound, partial)
    for layer in range(1, MAX_GZIP_LAYERS + 1):
        first = b""
        for chunk in stream:
            first += chunk
            if len(first) >= 2:
                break
        if first[:2] != GZIP_MAGIC:
            return stream, first
        if layer == MAX_GZIP_LAYERS:
            raise TraceError(
                file_name, f"compressed more than {MAX_GZIP_LAYERS} times (gzip inside gzip inside gzip): refused"
            )
        stream = _gunzip(_pieces(itertools.chain([first], stream)), file_name, bound, partial)
    raise AssertionError("unreachable")


_JSON_START = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*")


def _inflate(data, file_name: str, limit: Optional[int] = None) -> bytearray:
    """A .gz trace's bytes inflated in bounded steps (at most _inflate_bound), gzip in gzip in the
    same pass. Refused as soon as the output cannot start a JSON document."""
    bound, refusal = _inflate_bound(len(data), limit)
    try:
        stream, first = _layers(data, file_name, bound)
        out = bytearray(first)
        checked = _starts_json(out, file_name)
        for chunk in stream:
            out += chunk
            checked = checked or _starts_json(out, file_name)
        return out
    except _TooBig:
        raise TraceError(file_name, refusal) from None


def _starts_json(out: bytearray, file_name: str) -> bool:
    """True once the inflated bytes show their first character (which must open a JSON value's
    object or array: else the rest is not inflated)."""
    lead = cast("re.Match[bytes]", _JSON_START.match(out)).end()  # (it matches the empty string too)
    if lead == len(out):
        return False
    if out[lead] not in b"{[":
        raise TraceError(file_name, f"not JSON (inside the gzip): invalid character (byte {lead})")
    return True


def inflated_size(head: bytes, tail: bytes, compressed_size: int) -> int:
    """For memory planning: about how many bytes a .gz trace inflates to, from its first bytes
    (`head`, a MB or so), its last 4 (`tail`: gzip's ISIZE, the size mod 2**32) and its size;
    never more than the reader inflates before it refuses the file (_inflate_bound).

    The size is ISIZE + k * 2**32 for some k with at most DEFLATE_MAX_RATIO x the compressed size;
    k is chosen by the compression ratio of the head. For a gzip in a gzip (ISIZE is then the
    inner layer's compressed size) and for a head that does not inflate, the head's ratio alone
    decides. Not gzip: the size itself."""
    if head[:2] != GZIP_MAGIC or len(tail) < 4:
        return compressed_size
    bound, _ = _inflate_bound(compressed_size)
    fed = [0]

    def counted(pieces):
        for p in pieces:
            fed[0] += len(p)
            yield p

    out = 0
    nested = False
    try:
        stream = _gunzip(counted(_pieces([head])), "", bound, partial=True)
        first = next(stream, b"")
        nested = first[:2] == GZIP_MAGIC
        if nested:
            stream = _gunzip(_pieces(itertools.chain([first], stream)), "", bound, partial=True)
            first = b""
        out = len(first)
        for chunk in stream:
            out += len(chunk)
            if out >= 8 << 20:
                break
    except (TraceError, _TooBig):
        pass
    ratio = out / fed[0] if fed[0] and out else None
    estimate = int(ratio * compressed_size) if ratio else None
    isize = int.from_bytes(bytes(tail[-4:]), "little")
    if nested or isize > DEFLATE_MAX_RATIO * compressed_size:
        size = estimate if estimate is not None else compressed_size
    else:
        most = (DEFLATE_MAX_RATIO * compressed_size - isize) >> 32
        candidates = [isize + (k << 32) for k in range(most + 1)]
        if estimate is None:
            size = next((c for c in candidates if c >= compressed_size), candidates[-1])
        else:
            size = min(candidates, key=lambda c: abs(c - estimate))
    return max(0, min(max(size, out), bound))


def json_bytes(data, file_name: str, max_inflate: Optional[int] = None):
    """The file's JSON bytes: a .gz inflated (bounded, once, every layer), a UTF-8 byte order mark
    blanked to spaces (so that byte offsets stay those of the file). Whatever reads a trace's JSON
    takes it from here (the reader, `export`), so that no path inflates past the bound."""
    if data[:2] == GZIP_MAGIC:
        data = _inflate(data, file_name, max_inflate)
    if data[:3] == _BOM:
        if isinstance(data, bytearray):
            data[:3] = b"   "
        else:
            data = b"".join((b"   ", memoryview(data)[3:]))
    return data
