"""A gzip answer made of pieces compressed apart: each piece is compressed once (raw deflate ending in a
sync flush: byte aligned, not final) and kept with its CRC-32, so that an answer made of many kept pieces
and a few new ones (the run list: one piece per run) costs the new pieces, not the whole answer. The pieces'
deflate streams are joined as they are (each refers to its own bytes only), closed by an empty final block,
and the answer's CRC-32 is combined from the pieces' (zlib's crc32_combine, in O(1) per piece with the
operator of each piece's length kept with it). The result is one ordinary gzip member."""

from __future__ import annotations

import struct
import zlib
from typing import List, Sequence

_POLY = 0xEDB88320  # CRC-32, reflected


def _multmodp(a: int, b: int) -> int:
    """a times b modulo the CRC-32 polynomial (zlib's multmodp); ``a`` is never 0 here."""
    m, p = 1 << 31, 0
    while True:
        if a & m:
            p ^= b
            if a & (m - 1) == 0:
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


_X2N = [1 << 30]  # x^(2^k) modulo the polynomial, k = 0..31
for _ in range(31):
    _X2N.append(_multmodp(_X2N[-1], _X2N[-1]))


def _shift_op(length: int) -> int:
    """x^(8 * length) modulo the polynomial: what a CRC is multiplied by when ``length`` bytes follow it."""
    p, k = 1 << 31, 3
    while length:
        if length & 1:
            p = _multmodp(_X2N[k & 31], p)
        length >>= 1
        k += 1
    return p


class Deflated:
    """One piece: its raw deflate stream (sync-flushed), the CRC-32 and length of its bytes."""

    __slots__ = ("data", "crc", "size", "op")

    def __init__(self, raw: bytes, level: int = 3):
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        self.data = c.compress(raw) + c.flush(zlib.Z_SYNC_FLUSH)
        self.crc = zlib.crc32(raw)
        self.size = len(raw)
        self.op = _shift_op(len(raw))


_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # gzip, deflate, no name, mtime 0, OS unknown
_FINAL = b"\x03\x00"  # an empty final block (fixed codes)


def gzip_pieces(pieces: Sequence[Deflated]) -> List[bytes]:
    """The gzip member of the pieces' bytes in order, as a list of byte strings to send one after another."""
    crc = size = 0
    out = [_HEADER]
    for p in pieces:
        out.append(p.data)
        crc = _multmodp(p.op, crc) ^ p.crc
        size += p.size
    out.append(_FINAL)
    out.append(struct.pack("<II", crc, size & 0xFFFFFFFF))
    return out
