"""The index file: its layout (a JSON header, 64-byte aligned arrays, a CRC-32 trailer), writing it
(encode_parts, write_index) and opening it memory-mapped and checked (TimelineIndex).

The CRC-32 of a whole file is computed once per file version in this process (``verified``: keyed by
the file's device, inode, size and times, which an atomic rewrite always changes; a file modified in the
last 2 s is checked again at its next open), not on every open: a 4,096-rank search used to checksum
every rank's index on each request."""

from __future__ import annotations

import collections
import json
import math
import mmap
import os
import threading
import time
import zlib
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple, Union

import numpy as np

from tb_paddle_profile.store.files import atomic_write


MAGIC = b"TBPPTL2\n"
TRAILER_MAGIC = b"TBPPTLCK"
_TRAILER = len(TRAILER_MAGIC) + 4 + 8  # magic, CRC-32 of all bytes before the trailer, their count
INDEX_VERSION = 3  # 3: counters (memory, GPU utilization); 2: names with offsets, checksummed trailer (1: names joined by "\0", no checksum)


def encode_parts(header: dict, arrays: Dict[str, np.ndarray]) -> Iterator[Union[bytes, memoryview]]:
    """The index file as chunks (the arrays' own memory, no copy), ending with the checksum trailer."""
    table = {}
    layout: List[Tuple[int, Optional[np.ndarray]]] = []
    offset = 0
    for key, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        pad = (-offset) % 64
        offset += pad
        table[key] = [arr.dtype.str, list(arr.shape), offset]
        layout.append((pad, arr))
        offset += arr.nbytes
    head = dict(header, arrays=table)
    head_bytes = json.dumps(head).encode("utf-8")
    prefix = MAGIC + len(head_bytes).to_bytes(8, "little") + head_bytes
    prefix += b"\0" * ((-len(prefix)) % 64)
    crc, count = 0, 0
    for pad, part in [(0, None)] + layout:
        chunks: List[Union[bytes, memoryview]] = [prefix]
        if part is not None:  # (numpy's stubs give ndarray no __buffer__ before Python 3.12; memoryview takes it)
            chunks = [b"\0" * pad, memoryview(part.reshape(-1).view(np.uint8))]  # type: ignore[arg-type]
        for chunk in chunks:
            if len(chunk):
                crc = zlib.crc32(chunk, crc)
                count += len(chunk)
                yield chunk
    yield TRAILER_MAGIC + crc.to_bytes(4, "little") + count.to_bytes(8, "little")


def encode_index(header: dict, arrays: Dict[str, np.ndarray]) -> bytes:
    return b"".join(bytes(c) for c in encode_parts(header, arrays))


def write_index(target: str, header: dict, arrays: Dict[str, np.ndarray]) -> int:
    size = 0

    def counted():
        nonlocal size
        for chunk in encode_parts(header, arrays):
            size += len(chunk)
            yield chunk

    atomic_write(Path(target), counted())
    return size


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300] or type(err).__name__


class CorruptIndex(ValueError):
    """An index file that is cut short, corrupt or not an index of this version."""


_VERIFIED_MAX = 1 << 16  # file versions remembered as checked (about 100 bytes each)
_verified: "collections.OrderedDict[tuple, bool]" = collections.OrderedDict()
_verified_lock = threading.Lock()
CHECKSUMS = [0]  # whole-file CRC-32s computed by this process (tests count them)


def _version(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def verified(st: os.stat_result) -> bool:
    """Whether this version of a file (its fstat) was checksummed whole already by this process."""
    with _verified_lock:
        return _version(st) in _verified


_SETTLED_NS = 2_000_000_000  # a file modified this recently may change again within the same timestamp


def _remember(st: os.stat_result) -> None:
    # As git does with its index ("racy clean"): a version is remembered only once its modification
    # time is well in the past, since a rewrite in place within the file system's timestamp granularity
    # (a few ms) would keep the same size, inode and times.
    if time.time_ns() - st.st_mtime_ns < _SETTLED_NS:
        return
    with _verified_lock:
        _verified[_version(st)] = True
        while len(_verified) > _VERIFIED_MAX:
            _verified.popitem(last=False)


def forget_verified() -> None:
    """Check every file again at its next open (tests)."""
    with _verified_lock:
        _verified.clear()


def map_arrays(
    mm, st: Optional[os.stat_result] = None, version: Union[int, str, None] = INDEX_VERSION
) -> Tuple[dict, Dict[str, np.ndarray]]:
    """(header, arrays) of a mapped file in the index layout: magic, trailer and length always checked,
    the CRC-32 of the whole file once per file version (``st``: its fstat; None: every time), the
    arrays within the file. CorruptIndex when any check fails."""
    size = len(mm)
    if size < len(MAGIC) + 8 + _TRAILER or mm[: len(MAGIC)] != MAGIC:
        raise CorruptIndex("not a timeline index of this version")
    trailer = mm[size - _TRAILER :]
    if trailer[: len(TRAILER_MAGIC)] != TRAILER_MAGIC:
        raise CorruptIndex("cut short (no trailer)")
    crc = int.from_bytes(trailer[len(TRAILER_MAGIC) : len(TRAILER_MAGIC) + 4], "little")
    count = int.from_bytes(trailer[len(TRAILER_MAGIC) + 4 :], "little")
    if count != size - _TRAILER:
        raise CorruptIndex(f"{size - _TRAILER} bytes before the trailer, {count} expected")
    if st is None or not verified(st):
        with memoryview(mm) as view:
            with view[:count] as covered:
                CHECKSUMS[0] += 1
                if zlib.crc32(covered) != crc:
                    raise CorruptIndex("checksum mismatch (corrupt bytes)")
        if st is not None:
            _remember(st)
    n = int.from_bytes(mm[len(MAGIC) : len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8
    if start + n > count:
        raise CorruptIndex("header beyond the end")
    header = json.loads(mm[start : start + n])
    if version is not None and header.get("version") != version:
        raise CorruptIndex(f"index version {header.get('version')!r}, {version} expected")
    base = start + n + ((-(start + n)) % 64)
    arrays: Dict[str, np.ndarray] = {}
    for key, (dtype, shape, off) in header["arrays"].items():
        dt = np.dtype(dtype)
        if dt.hasobject:
            raise CorruptIndex(f"array {key!r} of objects")
        count_items = math.prod(int(x) for x in shape)  # 1 for a scalar (np.prod: 0.1 ms a call)
        if off < 0 or base + off + count_items * dt.itemsize > count:
            raise CorruptIndex(f"array {key!r} beyond the end")
        arrays[key] = np.frombuffer(mm, dtype=dt, count=count_items, offset=base + off).reshape(shape)
    return header, arrays


def open_mapped(path: str):
    """(mmap, fstat) of a file, read-only; CorruptIndex for an empty one."""
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        try:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), st
        except ValueError:  # an empty file cannot be mapped
            raise CorruptIndex("empty file") from None


_REQUIRED = (
    "ev_start",
    "ev_end",
    "ev_name",
    "ev_kind",
    "ev_type",
    "ev_row",
    "lane_ptr",
    "lane_track",
    "lane_depth",
    "lane_maxdur",
    "names_blob",
    "names_ptr",
    "shape_rows",
    "shape_ptr",
    "shape_blob",
)


class TimelineIndex:
    """A memory-mapped index file, checked whole (CRC-32) at its first open in this process (once per
    file version: map_arrays) and its structure at every open; CorruptIndex when it is damaged,
    or when `trace` (the CacheKey digest of the trace it should index) is not the one its header names
    (an index swapped with another trace's would draw the wrong rank). An index whose header names no
    trace (written before indexes carried one) cannot be told and is taken."""

    def __init__(self, path: str, trace: Optional[str] = None):
        self._mm, st = open_mapped(path)
        self.inode = st.st_ino
        self.mtime_ns = st.st_mtime_ns
        try:
            self._load(st)
            named = self.header.get("trace")
            if trace is not None and named is not None and named != trace:
                raise CorruptIndex(f"the index of another trace ({str(named)[:16]}, {trace[:16]} expected)")
        except CorruptIndex:
            self.close()
            raise
        except (ValueError, KeyError, TypeError, IndexError, OverflowError) as err:
            self.close()
            raise CorruptIndex(f"malformed: {type(err).__name__}: {one_line(err)}") from None

    def _load(self, st: Optional[os.stat_result] = None) -> None:
        self.header, self.a = map_arrays(self._mm, st)
        missing = [k for k in _REQUIRED if k not in self.a]
        if missing:
            raise CorruptIndex(f"arrays missing: {', '.join(missing)}")
        blob = self.a["names_blob"].tobytes()
        offsets = self.a["names_ptr"]
        if (
            not len(offsets)
            or int(offsets[0]) != 0
            or int(offsets[-1]) != len(blob)
            or bool((np.diff(offsets) < 0).any())
        ):
            raise CorruptIndex("name offsets do not fit the name blob")
        ptr = offsets.tolist()
        self.names: List[str] = [blob[i:j].decode("utf-8", "surrogatepass") for i, j in zip(ptr, ptr[1:])]
        if not self.names:
            self.names = [""]
        n_ev = len(self.a["ev_start"])
        lane_ptr = self.a["lane_ptr"]
        if (
            len(lane_ptr) < 1
            or int(lane_ptr[0]) != 0
            or int(lane_ptr[-1]) != n_ev
            or len(lane_ptr) != len(self.a["lane_track"]) + 1
        ):
            raise CorruptIndex("lane offsets do not fit the events")
        if n_ev and not (0 <= int(self.a["ev_name"].min()) and int(self.a["ev_name"].max()) < len(self.names)):
            raise CorruptIndex("name ids beyond the name table")
        self.tracks: List[dict] = self.header["tracks"]
        self.counters: List[dict] = self.header.get("counters", [])
        if (
            len(self.a["ctr_ptr"]) != len(self.counters) + 1
            or int(self.a["ctr_ptr"][-1]) != len(self.a["ctr_t"])
            or len(self.a["ctr_v"]) != len(self.a["ctr_t"])
        ):
            raise CorruptIndex("counter offsets do not fit the counters")
        if len(self.a["lane_track"]) and int(self.a["lane_track"].max()) >= len(self.tracks):
            raise CorruptIndex("lanes of unknown tracks")
        self.origin = int(self.header["origin_unix_ns"])
        self.start_ns = int(self.header["start_ns"])
        self.end_ns = int(self.header["end_ns"])
        self.n_lanes = len(self.a["lane_track"])
        self._lower: Optional[List[str]] = None
        self._name_extra: Optional[np.ndarray] = None  # each name's JSON length (timeline.chrome)
        self.nbytes = len(self._mm)

    def lower_names(self) -> List[str]:
        if self._lower is None:
            self._lower = [s.lower() for s in self.names]
        return self._lower

    def name_mask(self, query: str, exact: bool = False) -> np.ndarray:
        """A bool per name id: does it match the query."""
        if exact:
            return np.array([s == query for s in self.names], dtype=bool)
        q = query.lower()
        return np.array([q in s for s in self.lower_names()], dtype=bool)

    def lanes_in_window(self, ws: int, we: int, lane: int) -> Tuple[int, int, np.ndarray]:
        """Positions [lo, hi) of the lane's events that may overlap [ws, we], and which do."""
        a = self.a
        p0, p1 = int(a["lane_ptr"][lane]), int(a["lane_ptr"][lane + 1])
        st = a["ev_start"][p0:p1]
        lo = p0 + int(np.searchsorted(st, ws - int(a["lane_maxdur"][lane]), "left"))
        hi = p0 + int(np.searchsorted(st, we, "right"))
        keep = a["ev_end"][lo:hi] >= ws
        return lo, hi, keep

    def shapes(self, host_row: int) -> Optional[Tuple[str, str]]:
        rows = self.a["shape_rows"]
        i = int(np.searchsorted(rows, host_row))
        if i >= len(rows) or int(rows[i]) != host_row:
            return None
        p = self.a["shape_ptr"]
        text = self.a["shape_blob"][int(p[i]) : int(p[i + 1])].tobytes().decode("utf-8", "surrogatepass")
        shapes, dtypes = json.loads(text)
        return shapes, dtypes

    def close(self) -> None:
        self.a = {}
        try:
            self._mm.close()
        except BufferError:  # arrays still referenced by a response being built: the GC closes it
            pass
