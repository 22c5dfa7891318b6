"""The timeline: a columnar index of a trace's slices, and the level-of-detail queries over it.

The index is built by the per-file job (jobs.run_job) from the same parse as the trace's summary, and
written as a compact binary index file in the cache folder (``timeline-v2/``), memory-mapped by the
request threads; the store (TimelineStore) only opens these files and asks the loader to run a file's
job again when its index is missing. The file ends with a CRC-32 of everything before it and its length: an index that is cut short,
has flipped bytes or is not an index is a miss (deleted and built again), never drawn. Every query then
touches only the rows of the window it asks for:

- events are grouped into *lanes* (track, depth), each lane sorted by start, with its longest slice,
  so the slices overlapping a window are one ``searchsorted`` pair away;
- slices shorter than a pixel of the window are merged with their short neighbours less than a pixel
  apart into blocks ("merged N events"), so what is sent grows with the pixels, not with the events;
- a lane never sends more than ``LANE_CAP`` items (coarser merging when it would).

Tracks: each host thread (host events nested by depth, CUDA runtime calls one row under the host event
that holds them) and each GPU stream (kernels, memcpy, memset). Event ids are positions in the index
(lane order); they stay valid for one version of one file.

Names are stored as one UTF-8 blob with explicit offsets (``names_ptr``), so any name, ``\0`` and empty
ones included, reads back as it was.
"""
from __future__ import annotations

import collections
import concurrent.futures
import concurrent.futures.process
import json
import logging
import mmap
import os
import tempfile
import threading
import time
import traceback
import zlib
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from . import event_types as et
from .cache import Trimmer, atomic_write, discard, log_once, touch

logger = logging.getLogger(__name__)

MAGIC = b"TBPPTL2\n"
TRAILER_MAGIC = b"TBPPTLCK"
_TRAILER = len(TRAILER_MAGIC) + 4 + 8  # magic, CRC-32 of all bytes before the trailer, their count
INDEX_VERSION = 2  # 2: names with offsets, checksummed trailer (1: names joined by "\0", no checksum)
ENV_WINDOW_MAX_MB = "TB_PADDLE_PROFILE_WINDOW_MAX_MB"
DEFAULT_WINDOW_MAX_MB = 256  # trace_window refuses windows whose JSON may exceed this (0: no bound)
LANE_CAP = 4000  # items per lane and response, at most
MAX_PX = 8192
FLOW_CAP = 2000
MATCH_CAP = 2000
# One timeline window answers at most WINDOW_MAX_RANKS ranks and at most WINDOW_MAX_BYTES of message:
# more ranks are asked for page by page (TimelineWindow.rank_offset / ranks_total; docs/timeline.md).
WINDOW_MAX_RANKS = 32
WINDOW_MAX_BYTES = 2 << 20

KIND_HOST, KIND_RUNTIME, KIND_DEVICE = 0, 1, 2
TYPE_NAMES = list(et.TYPE_NAMES)


# ------------------------------------------------------------------ building (worker process)


def _depths(tables, tree) -> Tuple[np.ndarray, np.ndarray]:
    host_depth = (tree.host_depth - 1).astype(np.int32)
    rt_depth = np.zeros(len(tables.rt_tid), dtype=np.int32)
    owned = tree.rt_host >= 0
    rt_depth[owned] = tree.host_depth[tree.rt_host[owned]].astype(np.int32)
    return host_depth, rt_depth


def build_index(tables, tree) -> Tuple[dict, Dict[str, np.ndarray]]:
    """The index of one trace as (header, arrays)."""
    t = tables
    host_depth, rt_depth = _depths(t, tree)
    threads = sorted(set(t.host_tid.tolist()) | set(t.rt_tid.tolist()))
    # The busiest thread first (the training loop), then by tid.
    busy = {tid: int((t.host_tid == tid).sum()) for tid in threads}
    threads.sort(key=lambda tid: (-busy[tid], tid))
    streams = sorted(set(zip(t.dev_id.tolist(), t.dev_stream.tolist())))
    tracks: List[dict] = []
    thread_track = {}
    for tid in threads:
        thread_track[tid] = len(tracks)
        name = t.thread_names.get(tid, "")
        tracks.append({"id": len(tracks), "kind": 1, "tid": int(tid), "device": -1, "stream": -1,
                       "label": f"thread {tid}" + (f" · {name}" if name and name != str(tid) else "")})
    stream_track = {}
    for dev, stream in streams:
        stream_track[(dev, stream)] = len(tracks)
        tracks.append({"id": len(tracks), "kind": 2, "tid": -1, "device": int(dev), "stream": int(stream),
                       "label": f"GPU {dev} · stream {stream}"})

    def track_of(tids, table):
        lut = thread_track if table != "dev" else None
        if lut is not None:
            keys = np.array(sorted(lut), dtype=np.int64)
            vals = np.array([lut[k] for k in keys.tolist()], dtype=np.int32)
            return vals[np.searchsorted(keys, tids)] if len(tids) else np.zeros(0, np.int32)
        return tids

    n_h, n_r, n_d = len(t.host_tid), len(t.rt_tid), len(t.dev_id)
    h_track = track_of(t.host_tid, "host")
    r_track = track_of(t.rt_tid, "rt")
    if n_d:
        skey = t.dev_id * (1 << 32) + t.dev_stream
        keys = np.array(sorted(d * (1 << 32) + s for d, s in streams), dtype=np.int64)
        vals = np.array([stream_track[(d, s)] for d, s in streams], dtype=np.int32)
        d_track = vals[np.searchsorted(keys, skey)]
    else:
        d_track = np.zeros(0, np.int32)

    track = np.concatenate([h_track, r_track, d_track]).astype(np.int32)
    depth = np.concatenate([host_depth, rt_depth, np.zeros(n_d, np.int32)])
    start = np.concatenate([t.host_start, t.rt_start, t.dev_start]).astype(np.int64)
    end = np.concatenate([t.host_end, t.rt_end, t.dev_end]).astype(np.int64)
    end = np.maximum(end, start)
    name = np.concatenate([t.host_name, t.rt_name, t.dev_name]).astype(np.int32)
    kind = np.concatenate([np.full(n_h, KIND_HOST, np.int8), np.full(n_r, KIND_RUNTIME, np.int8),
                           np.full(n_d, KIND_DEVICE, np.int8)])
    etype = np.concatenate([t.host_type, t.rt_type, t.dev_type]).astype(np.int16)
    row = np.concatenate([np.arange(n_h), np.arange(n_r), np.arange(n_d)]).astype(np.int32)

    order = np.lexsort((-end, start, depth, track))
    track, depth, start, end = track[order], depth[order], start[order], end[order]
    name, kind, etype, row = name[order], kind[order], etype[order], row[order]
    n = len(order)
    lane_key = track.astype(np.int64) * 65536 + depth
    brk = np.nonzero(np.diff(lane_key))[0] + 1 if n else np.zeros(0, np.int64)
    lane_ptr = np.concatenate([[0], brk, [n]]).astype(np.int64) if n else np.zeros(1, np.int64)
    lane_first = lane_ptr[:-1]
    lane_track = track[lane_first].astype(np.int32)
    lane_depth = depth[lane_first].astype(np.int32)
    lane_maxdur = (np.maximum.reduceat(end - start, lane_first) if n else np.zeros(0, np.int64)).astype(np.int64)

    pos = np.empty(n, dtype=np.int32)
    pos[order] = np.arange(n, dtype=np.int32)
    host_pos, rt_pos, dev_pos = pos[:n_h], pos[n_h:n_h + n_r], pos[n_h + n_r:]

    for tr in tracks:
        sel = lane_track == tr["id"]
        tr["depth"] = int(lane_depth[sel].max()) + 1 if sel.any() else 1
        tr["events"] = int((lane_ptr[1:] - lane_ptr[:-1])[sel].sum())

    name_bytes = [n.encode("utf-8", "surrogatepass") for n in t.names]
    names_ptr = np.zeros(len(name_bytes) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in name_bytes], out=names_ptr[1:])
    names_blob = b"".join(name_bytes)
    shape_rows = np.array(sorted(t.host_shapes), dtype=np.int32)
    shape_text = [json.dumps(list(t.host_shapes[r])) for r in shape_rows.tolist()]
    shape_bytes = [s.encode("utf-8", "surrogatepass") for s in shape_text]
    shape_ptr = np.zeros(len(shape_bytes) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in shape_bytes], out=shape_ptr[1:])

    starts = [a.min() for a in (t.host_start, t.rt_start, t.dev_start) if a.size]
    ends = [a.max() for a in (t.host_end, t.rt_end, t.dev_end) if a.size]
    header = {
        "version": INDEX_VERSION,
        "origin_unix_ns": int(t.origin_unix_ns),
        "start_ns": int(min(starts)) if starts else 0,
        "end_ns": int(max(ends)) if ends else 0,
        "pid": int(t.pid),
        "tracks": tracks,
        "devices": {str(d.id): d.name for d in t.devices},
    }
    arrays = {
        "ev_start": start, "ev_end": end, "ev_name": name, "ev_kind": kind, "ev_type": etype, "ev_row": row,
        "lane_ptr": lane_ptr, "lane_track": lane_track, "lane_depth": lane_depth, "lane_maxdur": lane_maxdur,
        "host_pos": host_pos, "rt_pos": rt_pos, "dev_pos": dev_pos,
        "host_parent": tree.host_parent.astype(np.int32), "host_type": t.host_type.astype(np.int16),
        "rt_host": tree.rt_host.astype(np.int32), "rt_corr": t.rt_corr.astype(np.int64),
        "dev_rt": tree.dev_rt.astype(np.int32), "dev_corr": t.dev_corr.astype(np.int64),
        "dev_grid": t.dev_grid.astype(np.int32), "dev_block": t.dev_block.astype(np.int32),
        "dev_registers": t.dev_registers.astype(np.int32), "dev_shared_memory": t.dev_shared_memory.astype(np.int64),
        "dev_blocks_per_sm": t.dev_blocks_per_sm, "dev_warps_per_sm": t.dev_warps_per_sm,
        "dev_occupancy": t.dev_occupancy, "dev_bytes": t.dev_bytes.astype(np.int64),
        "names_blob": np.frombuffer(names_blob, dtype=np.uint8), "names_ptr": names_ptr,
        "shape_rows": shape_rows, "shape_ptr": shape_ptr,
        "shape_blob": np.frombuffer(b"".join(shape_bytes), dtype=np.uint8),
    }
    return header, arrays


def encode_parts(header: dict, arrays: Dict[str, np.ndarray]) -> Iterator[bytes]:
    """The index file as chunks (the arrays' own memory, no copy), ending with the checksum trailer."""
    table = {}
    layout = []
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
    for pad, arr in [(0, None)] + layout:
        chunks = [prefix] if arr is None else [b"\0" * pad, memoryview(arr.reshape(-1).view(np.uint8))]
        for chunk in chunks:
            if len(chunk):
                crc = zlib.crc32(chunk, crc)
                count += len(chunk)
                yield chunk
    yield TRAILER_MAGIC + crc.to_bytes(4, "little") + count.to_bytes(8, "little")


def encode_index(header: dict, arrays: Dict[str, np.ndarray]) -> bytes:
    return b"".join(bytes(c) for c in encode_parts(header, arrays))


def _parse(read_bytes, file_name: str, parse_workers: int = 1):
    from .event_tree import build_tree
    from .reader import read_trace

    # in a box: the reader drops the bytes as soon as the events are read
    from .jobs import _count_parse

    box = [read_bytes()]  # the reader drops the bytes as soon as the events are read
    _count_parse(os.path.basename(file_name))
    tables = read_trace(box, os.path.basename(file_name), parse_workers)
    tree = build_tree(tables)
    return build_index(tables, tree)


def _write(target: str, header: dict, arrays: Dict[str, np.ndarray]) -> int:
    size = 0

    def counted():
        nonlocal size
        for chunk in encode_parts(header, arrays):
            size += len(chunk)
            yield chunk

    atomic_write(Path(target), counted())
    return size


def build_file_index(read_bytes, file_name: str, target: str, parse_workers: int = 1) -> dict:
    """Worker side: parse the trace (`parse_workers` cores reading a large file together) and
    write its index to ``target`` atomically."""
    header, arrays = _parse(read_bytes, file_name, parse_workers)
    size = _write(target, header, arrays)
    return {"events": int(len(arrays["ev_start"])), "bytes": size}


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split())[:300] or type(err).__name__


def index_in_worker(fs, path: str, file_name: str, size: int, target: str, parse_workers: int = 1,
                    root: Optional[str] = None, fallback: Optional[str] = None) -> dict:
    """Runs in a worker process (picklable arguments only): read the trace under the logdir's path policy
    (``root``: the logdir), build its index, write it to ``target`` or, when that folder is not
    writable, to ``fallback``.

    Returns ``{"ok": True, "path", "note", "events", "bytes"}`` or ``{"ok": False, "kind", "error"}`` with
    kind "trace" (the file is not a usable trace: permanent for this version of it), "transient" (the
    store could not be read, nothing could be written, memory: worth retrying; "retry": False when not
    right away) or "bug" (an error of ours: the one line of errors.our_bug, and "traceback")."""
    from .errors import TraceError, TransientError, our_bug
    from .paths import read_checked

    def read() -> bytes:
        try:
            data = read_checked(fs, path, root, file_name)
        except (TraceError, TransientError, MemoryError):
            raise
        except FileNotFoundError:
            raise TransientError(file_name, "the file no longer exists") from None
        except Exception as err:  # OSError, a store's own error types (botocore, gcsfs): the store, not the file
            raise TransientError(file_name, f"cannot read: {_one_line(err)}") from None
        if len(data) != size:
            raise TraceError(file_name, "the file changed while its timeline was being built")
        return data

    try:
        header, arrays = _parse(read, file_name, parse_workers)
    except TraceError as err:
        return {"ok": False, "kind": "trace", "error": str(err)}
    except TransientError as err:
        return {"ok": False, "kind": "transient", "error": str(err)}
    except MemoryError:
        return {"ok": False, "kind": "transient", "retry": False,
                "error": f"{file_name}: out of memory while building its timeline"}
    except Exception as err:
        return {"ok": False, "kind": "bug", "error": our_bug(file_name, err), "traceback": traceback.format_exc()}
    note = ""
    try:
        written, nbytes = target, _write(target, header, arrays)
    except OSError as err:
        if fallback is None:
            return {"ok": False, "kind": "transient",
                    "error": f"{file_name}: cannot write its timeline index: {_one_line(err)}"}
        try:
            written, nbytes = fallback, _write(fallback, header, arrays)
        except OSError as err2:
            return {"ok": False, "kind": "transient",
                    "error": f"{file_name}: cannot write its timeline index (cache folder: {_one_line(err)}; "
                             f"temporary folder: {_one_line(err2)})"}
        note = f"cache folder not writable ({_one_line(err)})"
    except Exception as err:
        return {"ok": False, "kind": "bug", "error": our_bug(file_name, err), "traceback": traceback.format_exc()}
    return {"ok": True, "path": written, "note": note, "events": int(len(arrays["ev_start"])), "bytes": nbytes}


# ------------------------------------------------------------------ reading (request threads)


class CorruptIndex(ValueError):
    """An index file that is cut short, corrupt or not an index of this version."""


_REQUIRED = ("ev_start", "ev_end", "ev_name", "ev_kind", "ev_type", "ev_row", "lane_ptr", "lane_track",
             "lane_depth", "lane_maxdur", "names_blob", "names_ptr", "shape_rows", "shape_ptr", "shape_blob")


class TimelineIndex:
    """A memory-mapped index file, checked whole (CRC-32) when opened; CorruptIndex when it is damaged."""

    def __init__(self, path: str):
        with open(path, "rb") as f:
            self.inode = os.fstat(f.fileno()).st_ino
            try:
                self._mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                raise CorruptIndex("empty file") from None
        try:
            self._load()
        except CorruptIndex:
            self.close()
            raise
        except (ValueError, KeyError, TypeError, IndexError, OverflowError) as err:
            self.close()
            raise CorruptIndex(f"malformed: {type(err).__name__}: {_one_line(err)}") from None

    def _load(self) -> None:
        mm = self._mm
        size = len(mm)
        if size < len(MAGIC) + 8 + _TRAILER or mm[:len(MAGIC)] != MAGIC:
            raise CorruptIndex("not a timeline index of this version")
        trailer = mm[size - _TRAILER:]
        if trailer[:len(TRAILER_MAGIC)] != TRAILER_MAGIC:
            raise CorruptIndex("cut short (no trailer)")
        crc = int.from_bytes(trailer[len(TRAILER_MAGIC):len(TRAILER_MAGIC) + 4], "little")
        count = int.from_bytes(trailer[len(TRAILER_MAGIC) + 4:], "little")
        if count != size - _TRAILER:
            raise CorruptIndex(f"{size - _TRAILER} bytes before the trailer, {count} expected")
        with memoryview(mm) as view:
            with view[:count] as covered:
                if zlib.crc32(covered) != crc:
                    raise CorruptIndex("checksum mismatch (corrupt bytes)")
        n = int.from_bytes(mm[len(MAGIC):len(MAGIC) + 8], "little")
        start = len(MAGIC) + 8
        if start + n > count:
            raise CorruptIndex("header beyond the end")
        self.header = json.loads(mm[start:start + n])
        if self.header.get("version") != INDEX_VERSION:
            raise CorruptIndex(f"index version {self.header.get('version')!r}, {INDEX_VERSION} expected")
        base = start + n + ((-(start + n)) % 64)
        self.a: Dict[str, np.ndarray] = {}
        for key, (dtype, shape, off) in self.header["arrays"].items():
            dt = np.dtype(dtype)
            if dt.hasobject:
                raise CorruptIndex(f"array {key!r} of objects")
            count_items = int(np.prod(shape)) if shape else 1
            if off < 0 or base + off + count_items * dt.itemsize > count:
                raise CorruptIndex(f"array {key!r} beyond the end")
            self.a[key] = np.frombuffer(mm, dtype=dt, count=count_items, offset=base + off).reshape(shape)
        missing = [k for k in _REQUIRED if k not in self.a]
        if missing:
            raise CorruptIndex(f"arrays missing: {', '.join(missing)}")
        blob = self.a["names_blob"].tobytes()
        ptr = self.a["names_ptr"].tolist()
        if not ptr or ptr[0] != 0 or ptr[-1] != len(blob) or any(b < a for a, b in zip(ptr, ptr[1:])):
            raise CorruptIndex("name offsets do not fit the name blob")
        self.names: List[str] = [blob[i:j].decode("utf-8", "surrogatepass") for i, j in zip(ptr, ptr[1:])]
        if not self.names:
            self.names = [""]
        n_ev = len(self.a["ev_start"])
        lane_ptr = self.a["lane_ptr"]
        if len(lane_ptr) < 1 or int(lane_ptr[0]) != 0 or int(lane_ptr[-1]) != n_ev \
                or len(lane_ptr) != len(self.a["lane_track"]) + 1:
            raise CorruptIndex("lane offsets do not fit the events")
        if n_ev and not (0 <= int(self.a["ev_name"].min()) and int(self.a["ev_name"].max()) < len(self.names)):
            raise CorruptIndex("name ids beyond the name table")
        self.tracks: List[dict] = self.header["tracks"]
        if len(self.a["lane_track"]) and int(self.a["lane_track"].max()) >= len(self.tracks):
            raise CorruptIndex("lanes of unknown tracks")
        self.origin = int(self.header["origin_unix_ns"])
        self.start_ns = int(self.header["start_ns"])
        self.end_ns = int(self.header["end_ns"])
        self.n_lanes = len(self.a["lane_track"])
        self._lower = None
        self._name_extra = None
        self.nbytes = len(mm)

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
        text = self.a["shape_blob"][int(p[i]):int(p[i + 1])].tobytes().decode("utf-8", "surrogatepass")
        shapes, dtypes = json.loads(text)
        return shapes, dtypes

    def close(self) -> None:
        self.a = {}
        try:
            self._mm.close()
        except BufferError:  # arrays still referenced by a response being built: the GC closes it
            pass


def merge_lane(start: np.ndarray, end: np.ndarray, name: np.ndarray, pixel: float):
    """Merge slices shorter than ``pixel`` that are less than ``pixel`` apart.

    Returns (first index of each item, count, item start, item end, name or -1 when mixed)."""
    n = len(start)
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z, z, z
    short = (end - start) < pixel
    new = np.ones(n, dtype=bool)
    if n > 1:
        joined = short[1:] & short[:-1] & ((start[1:] - end[:-1]) < pixel)
        new[1:] = ~joined
    first = np.nonzero(new)[0]
    count = np.diff(np.append(first, n))
    s = start[first]
    e = np.maximum.reduceat(end, first)
    nmin = np.minimum.reduceat(name, first)
    nmax = np.maximum.reduceat(name, first)
    nm = np.where(nmin == nmax, nmin, -1)
    return first, count, s, e, nm


def query_lane(idx: TimelineIndex, lane: int, ws: int, we: int, pixel: float, cap: int = LANE_CAP,
               match: Optional[np.ndarray] = None) -> dict:
    """The items of one lane in [ws, we] (index-local ns) at ``pixel`` ns per pixel."""
    a = idx.a
    lo, hi, keep = idx.lanes_in_window(ws, we, lane)
    pos = np.nonzero(keep)[0] + lo
    start, end, name = a["ev_start"][pos], a["ev_end"][pos], a["ev_name"][pos]
    p = max(float(pixel), 1.0)
    for _ in range(40):
        first, count, s, e, nm = merge_lane(start, end, name, p)
        if len(first) <= cap:
            break
        p *= 2.0
    dropped = 0
    if len(first) > cap:  # pathological (nested overlaps): keep the longest
        top = np.sort(np.argsort(-(e - s), kind="stable")[:cap])
        dropped = int(count.sum() - count[top].sum())
        first, count, s, e, nm = first[top], count[top], s[top], e[top], nm[top]
    ids = pos[first] if len(pos) else np.zeros(0, np.int64)
    out = {"ids": ids.astype(np.int64), "count": count, "start": s, "end": e, "name": nm,
           "type": a["ev_type"][ids].astype(np.int64) if len(ids) else np.zeros(0, np.int64),
           "events": int(len(pos)), "dropped": dropped}
    if match is not None:
        hits = match[name].astype(np.int8) if len(name) else np.zeros(0, np.int8)
        out["match"] = np.maximum.reduceat(hits, first) if len(first) else np.zeros(0, np.int8)
    return out


def row_of(idx: TimelineIndex, ev: int) -> Tuple[int, int, int]:
    """(lane, track, depth) of an event id."""
    lane = int(np.searchsorted(idx.a["lane_ptr"], ev, "right")) - 1
    return lane, int(idx.a["lane_track"][lane]), int(idx.a["lane_depth"][lane])


def type_name(code: int) -> str:
    return TYPE_NAMES[code] if 0 <= code < len(TYPE_NAMES) else str(code)


def event_details(idx: TimelineIndex, ev: int) -> dict:
    """Everything about one event: its name, times, arguments, enclosing operator and linked events."""
    a = idx.a
    n = len(a["ev_start"])
    if not 0 <= ev < n:
        raise KeyError(ev)
    kind, row = int(a["ev_kind"][ev]), int(a["ev_row"][ev])
    _, track, depth = row_of(idx, ev)
    out = {"id": ev, "name": idx.names[int(a["ev_name"][ev])], "type": type_name(int(a["ev_type"][ev])),
           "start": int(a["ev_start"][ev]), "end": int(a["ev_end"][ev]), "track": track, "depth": depth,
           "track_label": idx.tracks[track]["label"], "corr": -1, "args": [], "operator": "", "related": []}
    args = out["args"]

    def ref(pos: int, relation: str) -> dict:
        _, tr, dp = row_of(idx, pos)
        return {"id": pos, "name": idx.names[int(a["ev_name"][pos])], "type": type_name(int(a["ev_type"][pos])),
                "start": int(a["ev_start"][pos]), "end": int(a["ev_end"][pos]), "track": tr, "depth": dp,
                "relation": relation}

    def operator_of(host_row: int) -> int:
        r = host_row
        for _ in range(256):
            if r < 0:
                return -1
            if int(a["host_type"][r]) == et.OPERATOR:
                return r
            r = int(a["host_parent"][r])
        return -1

    host_row = -1
    if kind == KIND_HOST:
        host_row = row
        found = idx.shapes(row)
        if found is not None:
            args.append(("input shapes", found[0]))
            args.append(("input dtypes", found[1]))
        parent = int(a["host_parent"][row])
        if parent >= 0:
            out["related"].append(ref(int(a["host_pos"][parent]), "parent"))
        op = operator_of(int(a["host_parent"][row]))
    elif kind == KIND_RUNTIME:
        corr = int(a["rt_corr"][row])
        out["corr"] = corr
        host_row = int(a["rt_host"][row])
        op = operator_of(host_row)
        if host_row >= 0:
            out["related"].append(ref(int(a["host_pos"][host_row]), "parent"))
        devs = np.nonzero(a["dev_rt"] == row)[0][:64]
        for d in devs.tolist():
            out["related"].append(ref(int(a["dev_pos"][d]), "kernel"))
    else:
        corr = int(a["dev_corr"][row])
        out["corr"] = corr
        g, b = a["dev_grid"][row].tolist(), a["dev_block"][row].tolist()
        code = int(a["ev_type"][ev])
        if code == et.KERNEL:
            args += [("grid", ", ".join(map(str, g))), ("block", ", ".join(map(str, b))),
                     ("registers per thread", str(int(a["dev_registers"][row]))),
                     ("shared memory", f"{int(a['dev_shared_memory'][row])} B"),
                     ("blocks per SM", f"{float(a['dev_blocks_per_sm'][row]):.2f}"),
                     ("warps per SM", f"{float(a['dev_warps_per_sm'][row]):.2f}"),
                     ("theoretical achieved occupancy %", f"{float(a['dev_occupancy'][row]):.2f}")]
        else:
            args.append(("bytes", str(int(a["dev_bytes"][row]))))
        rt = int(a["dev_rt"][row])
        op = -1
        if rt >= 0:
            out["related"].append(ref(int(a["rt_pos"][rt]), "launch"))
            op = operator_of(int(a["rt_host"][rt]))
    if kind == KIND_HOST and int(a["host_type"][row]) == et.OPERATOR:
        op = row
    if op >= 0:
        out["operator"] = idx.names[int(a["ev_name"][int(a["host_pos"][op])])]
        if op != host_row or kind != KIND_HOST:
            out["related"].append(ref(int(a["host_pos"][op]), "operator"))
    out["args"] = [{"key": k, "value": v} for k, v in args]
    return out


def search(idx: TimelineIndex, query: str, exact: bool, limit: int = MATCH_CAP) -> Tuple[int, np.ndarray]:
    """(total, first `limit` matching event ids in time order)."""
    mask = idx.name_mask(query, exact)
    if not mask.any():
        return 0, np.zeros(0, np.int64)
    hit = np.nonzero(mask[idx.a["ev_name"]])[0]
    order = np.argsort(idx.a["ev_start"][hit], kind="stable")
    return int(len(hit)), hit[order[:limit]]


def range_sums(idx: TimelineIndex, ws: int, we: int, tracks: Optional[Sequence[int]]) -> Dict[Tuple[str, str], list]:
    """Per (name, type): [count, total ns, overlap ns] of the slices of ``tracks`` overlapping [ws, we]."""
    a = idx.a
    out: Dict[Tuple[int, int], list] = {}
    wanted = None if tracks is None else set(tracks)
    for lane in range(idx.n_lanes):
        if wanted is not None and int(a["lane_track"][lane]) not in wanted:
            continue
        lo, hi, keep = idx.lanes_in_window(ws, we, lane)
        pos = np.nonzero(keep)[0] + lo
        if not len(pos):
            continue
        s, e = a["ev_start"][pos], a["ev_end"][pos]
        key = a["ev_name"][pos].astype(np.int64) * 1024 + a["ev_type"][pos]
        uniq, inv = np.unique(key, return_inverse=True)
        cnt = np.bincount(inv)
        tot = np.bincount(inv, weights=(e - s).astype(np.float64))
        ovl = np.bincount(inv, weights=(np.minimum(e, we) - np.maximum(s, ws)).clip(0).astype(np.float64))
        for k, c, t_, o in zip(uniq.tolist(), cnt.tolist(), tot.tolist(), ovl.tolist()):
            acc = out.setdefault((k // 1024, k % 1024), [0, 0, 0])
            acc[0] += c
            acc[1] += int(t_)
            acc[2] += int(o)
    return {(idx.names[n], type_name(t)): v for (n, t), v in out.items()}


def _window_blocks(idx: TimelineIndex, ws: int, we: int, block: int = 1 << 16) -> Iterator[np.ndarray]:
    """The positions of the events overlapping [ws, we], lane by lane, at most ``block`` at a time (so that
    what a window costs in memory does not grow with the window)."""
    a = idx.a
    for lane in range(idx.n_lanes):
        p0, p1 = int(a["lane_ptr"][lane]), int(a["lane_ptr"][lane + 1])
        st = a["ev_start"][p0:p1]
        lo = p0 + int(np.searchsorted(st, ws - int(a["lane_maxdur"][lane]), "left"))
        hi = p0 + int(np.searchsorted(st, we, "right"))
        for b0 in range(lo, hi, block):
            b1 = min(hi, b0 + block)
            pos = np.nonzero(a["ev_end"][b0:b1] >= ws)[0] + b0
            if len(pos):
                yield pos


def _head_json(file_name: str, ws: int, we: int) -> str:
    head = {"displayTimeUnit": "ms", "schemaVersion": "1.0.2",
            "ExtraInfo": {"trimmed_from": file_name, "window_ns": f"{ws},{we}"}}
    return json.dumps(head)[:-1] + ', "traceEvents": [\n'


def _meta_events(idx: TimelineIndex) -> List[str]:
    pid = idx.header.get("pid", 0)
    out = []
    for tr in idx.tracks:
        if tr["kind"] == 1:
            out.append(json.dumps({"name": "thread_name", "ph": "M", "pid": pid, "tid": tr["tid"],
                                   "args": {"name": tr["label"]}}))
        else:
            out.append(json.dumps({"name": "thread_name", "ph": "M", "pid": tr["device"], "tid": tr["stream"],
                                   "args": {"name": tr["label"]}}))
    return out


def _x_event(name, pid, tid, ts, dur, cat, args) -> str:
    return json.dumps({"name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "ph": "X", "cat": cat,
                       "args": args})


def _times(s: int, e: int) -> dict:
    return {"start_time": f"{s / 1000:.3f} us", "end_time": f"{e / 1000:.3f} us"}


def _kernel_args(args: dict, corr, grid, block, regs, smem, bps, wps, occ) -> dict:
    if corr >= 0:
        args["correlation id"] = corr
    args["grid"], args["block"] = grid, block
    args["registers per thread"], args["shared memory"] = regs, smem
    args["blocks per SM"], args["warps per SM"] = bps, wps
    args["theoretical achieved occupancy %"] = occ
    return args


def _chrome_events(idx: TimelineIndex, pos: np.ndarray, pid: int, origin_us: float) -> List[str]:
    """The Chrome-trace "X" events of the index positions ``pos`` (one lane's), as JSON texts."""
    a = idx.a
    names = idx.names
    tr_ids = a["lane_track"][np.searchsorted(a["lane_ptr"], pos, "right") - 1].tolist()
    starts, ends = a["ev_start"][pos].tolist(), a["ev_end"][pos].tolist()
    kinds, rows = a["ev_kind"][pos].tolist(), a["ev_row"][pos].tolist()
    types, name_ids = a["ev_type"][pos].tolist(), a["ev_name"][pos].tolist()
    out = []
    for tr_id, s, e, kind, row, code, nid in zip(tr_ids, starts, ends, kinds, rows, types, name_ids):
        tr = idx.tracks[tr_id]
        args = _times(s, e)
        if kind == KIND_DEVICE:
            corr = int(a["dev_corr"][row])
            if code == et.KERNEL:
                _kernel_args(args, corr, a["dev_grid"][row].tolist(), a["dev_block"][row].tolist(),
                             int(a["dev_registers"][row]), int(a["dev_shared_memory"][row]),
                             float(a["dev_blocks_per_sm"][row]), float(a["dev_warps_per_sm"][row]),
                             float(a["dev_occupancy"][row]))
            else:
                if corr >= 0:
                    args["correlation id"] = corr
                args["bytes"] = int(a["dev_bytes"][row])
            ev_pid, ev_tid = tr["device"], tr["stream"]
        else:
            ev_pid, ev_tid = pid, tr["tid"]
            if kind == KIND_RUNTIME:
                corr = int(a["rt_corr"][row])
                if corr >= 0:
                    args["correlation id"] = corr
            else:
                found = idx.shapes(row)
                if found is not None:
                    try:
                        args["input_shapes"] = json.loads(found[0])
                        args["input_dtypes"] = json.loads(found[1])
                    except ValueError:
                        args.pop("input_shapes", None)
        out.append(_x_event(names[nid], ev_pid, ev_tid, origin_us + s / 1000.0, (e - s) / 1000.0,
                            type_name(code), args))
    return out


def _worst_cases() -> Dict[str, int]:
    """The longest JSON text an event of each kind can have with an empty name and no shapes (every number
    at its widest), and what a host event's shapes add besides 5 x their stored bytes."""
    i64, i32, f = -(1 << 63), -(1 << 31), -2.2250738585072014e-308  # the widest int64, int32, float repr
    cat = max(TYPE_NAMES + [str(-(1 << 15))], key=len)
    times = _times(i64, i64)
    base = dict(name="", pid=i64, tid=i64, ts=f, dur=f, cat=cat)
    host = _x_event(args=dict(times), **base)
    runtime = _x_event(args=dict(times, **{"correlation id": i64}), **base)
    kernel = _x_event(args=_kernel_args(dict(times), i64, [i32] * 3, [i32] * 3, i32, i64, f, f, f), **base)
    copy = _x_event(args=dict(times, **{"correlation id": i64, "bytes": i64}), **base)
    shapes = _x_event(args=dict(times, input_shapes=None, input_dtypes=None), **base)
    return {"host": len(host), "runtime": len(runtime), "kernel": len(kernel), "copy": len(copy),
            "shapes": len(shapes) - len(host) - 2 * len("null") + 16}


_WORST = _worst_cases()


def window_limit_bytes() -> int:
    """The bound on a trace_window answer, from ``TB_PADDLE_PROFILE_WINDOW_MAX_MB`` (0: none)."""
    text = os.environ.get(ENV_WINDOW_MAX_MB, "").strip()
    try:
        mb = float(text) if text else DEFAULT_WINDOW_MAX_MB
    except ValueError:
        mb = DEFAULT_WINDOW_MAX_MB
    return max(0, int(mb * (1 << 20)))


def window_size(idx: TimelineIndex, ws: int, we: int, file_name: str = "") -> Tuple[int, int]:
    """(events overlapping [ws, we], an upper bound of the bytes :func:`chrome_chunks` writes for them),
    from the index alone, in memory bounded by a block of events."""
    a = idx.a
    if idx._name_extra is None:  # each name's JSON length beyond the empty name's ""
        idx._name_extra = np.array([len(json.dumps(n)) - 2 for n in idx.names], dtype=np.int64)
    extra = idx._name_extra
    shape_rows = a["shape_rows"]
    shape_len = np.diff(a["shape_ptr"]).astype(np.int64)
    meta = _meta_events(idx)
    total = len(_head_json(file_name, ws, we).encode()) + sum(len(m) + 2 for m in meta) + 8
    pid_extra = max(0, len(json.dumps(idx.header.get("pid", 0))) - 20)  # a pid wider than an int64
    events = 0
    for pos in _window_blocks(idx, ws, we):
        events += len(pos)
        kind, code = a["ev_kind"][pos], a["ev_type"][pos]
        host = kind == KIND_HOST
        kernel = (kind == KIND_DEVICE) & (code == et.KERNEL)
        n_host, n_rt, n_kernel = int(host.sum()), int((kind == KIND_RUNTIME).sum()), int(kernel.sum())
        n_copy = len(pos) - n_host - n_rt - n_kernel
        total += (n_host * _WORST["host"] + n_rt * _WORST["runtime"] + n_kernel * _WORST["kernel"]
                  + n_copy * _WORST["copy"] + 2 * len(pos)  # ",\n" between events
                  + pid_extra * (n_host + n_rt))
        total += int(extra[a["ev_name"][pos]].sum())
        if len(shape_rows) and n_host:
            rows = a["ev_row"][pos[host]]
            i = np.minimum(np.searchsorted(shape_rows, rows), len(shape_rows) - 1)
            has = shape_rows[i] == rows
            total += int(has.sum()) * _WORST["shapes"] + 5 * int(shape_len[i[has]].sum())
    return events, total


def chrome_chunks(idx: TimelineIndex, ws: int, we: int, file_name: str, chunk: int = 1 << 18,
                  block: int = 1024) -> Iterator[bytes]:
    """A Chrome-trace JSON of the slices overlapping [ws, we] (index-local ns), for Perfetto, as chunks of
    about ``chunk`` bytes: what is held at once is a chunk and a block of ``block`` events, whatever the
    window."""
    pid = idx.header.get("pid", 0)
    origin_us = idx.origin / 1000.0
    buf: List[str] = [_head_json(file_name, ws, we)]
    size = len(buf[0])
    sep = ""

    def emit(texts: Iterable[str]):
        nonlocal sep, size
        for t in texts:
            buf.append(sep)
            buf.append(t)
            sep = ",\n"
            size += len(t) + 2

    emit(_meta_events(idx))
    for pos in _window_blocks(idx, ws, we, block=block):
        emit(_chrome_events(idx, pos, pid, origin_us))
        if size >= chunk:
            text = "".join(buf)
            buf.clear()
            size = 0
            data = text.encode("utf-8", "surrogatepass")
            del text
            yield data
    buf.append("\n]}\n")
    yield "".join(buf).encode("utf-8", "surrogatepass")


def chrome_subset(idx: TimelineIndex, ws: int, we: int, file_name: str) -> bytes:
    """The whole of :func:`chrome_chunks` as one bytes object (for tests and small windows)."""
    return b"".join(chrome_chunks(idx, ws, we, file_name))


# ------------------------------------------------------------------ the store (plugin side)


class _Job:
    """What the store knows of one file version's index besides an open one."""

    __slots__ = ("future", "attempts", "next_at", "kind", "reason", "path", "fresh")

    def __init__(self):
        self.future = None  # the build in flight
        self.attempts = 0  # builds that failed transiently in the current round
        self.next_at = 0.0  # monotonic time before which no new build starts
        self.kind = ""  # "" (none), "trace", "transient" (given up for now) or "bug"
        self.reason = ""  # the one-line message of that failure
        self.path: Optional[Path] = None  # where the last build wrote the index (the cache or the temp folder)
        self.fresh = False  # built and not opened yet: a failure to open it is ours, not retried


class TimelineStore:
    """Builds indexes in worker processes, on demand, and keeps the built ones open.

    :meth:`get` returns one of:

    - ``(index, "")``: ready;
    - ``(None, "building")``: a build is running, or a failed one is waiting to be retried; ask again;
    - ``(None, reason)``: it cannot be built now; ``reason`` is one line naming the file, and
      :meth:`failure` tells whose fault it is: "trace" (the file is not a usable trace), "transient"
      (the store could not be read or nothing could be written, RETRIES times; a request COOLDOWN_S
      later starts a new round) or "bug" (an error of ours, logged with its traceback, not retried).

    A request never starts a build while one runs, nor right after one failed: a transient failure is
    retried after BACKOFF_S, doubled each time, RETRIES builds at most in a round. When the cache folder
    is not writable (or the cache is off) the indexes are kept in a temporary folder of the process,
    deleted at close. ``root`` is the logdir: traces are read under its path policy (paths.read_checked).
    """

    RETRIES = 3
    BACKOFF_S = 2.0
    COOLDOWN_S = 120.0
    KEEP_OPEN = 64

    def __init__(self, fs, cache_dir: Optional[Path], workers: int = 2, root: Optional[str] = None,
                 runner=None):
        self.fs = fs
        self.root = root
        # runner(file) -> concurrent.futures.Future of a build result (index_in_worker's dict): the
        # plugin's loader (Loader.request_index), whose per-file job makes the summary and the index
        # from one parse. Without one (a store used on its own), builds run in a pool of its own.
        self.runner = runner
        self._tmp = None
        self._spill: Optional[Path] = None  # the temporary folder, when one is used
        self._spill_trimmer = None
        if cache_dir is None:
            cache_dir = self._temp_folder().parent
            self.folder = self._spill
        else:
            self.folder = Path(cache_dir) / f"timeline-v{INDEX_VERSION}"
        self.trimmer = Trimmer(Path(cache_dir))  # the cache folder's bound covers the indexes too
        self.workers = max(1, workers)
        self._lock = threading.Lock()
        self._open: "collections.OrderedDict[str, TimelineIndex]" = collections.OrderedDict()
        self._jobs: Dict[str, _Job] = {}
        self._executor = None
        self._closed = False
        self._clock = time.monotonic  # tests may replace it

    def _temp_folder(self) -> Path:
        if self._spill is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="tbpp-timeline-")
            self._spill = Path(self._tmp.name) / f"timeline-v{INDEX_VERSION}"
            self._spill_trimmer = Trimmer(Path(self._tmp.name))
        return self._spill

    def _path(self, file) -> Path:
        digest = file.key.digest()
        return self.folder / digest[:2] / (digest + ".tl")

    def failure(self, file) -> Optional[Tuple[str, str]]:
        """(kind, reason) when the index of ``file`` cannot be built now (see the class); else None."""
        with self._lock:
            job = self._jobs.get(file.key.digest())
            if job is None or not job.kind or job.future is not None:
                return None
            return job.kind, job.reason

    def get(self, file) -> Tuple[Optional[TimelineIndex], str]:
        """(index, "") when ready; else (None, "building") or (None, reason): see the class."""
        digest = file.key.digest()
        now = self._clock()
        with self._lock:
            idx = self._open.get(digest)
            if idx is not None:
                self._open.move_to_end(digest)
                return idx, ""
            job = self._jobs.get(digest)
            if job is not None:
                if job.future is not None:
                    return None, "building"
                if job.kind in ("trace", "bug"):
                    return None, job.reason
                if job.kind == "transient":
                    if now < job.next_at:
                        return None, job.reason
                    job.kind, job.reason, job.attempts = "", "", 0  # cooled down: a new round
                elif now < job.next_at:
                    return None, "building"  # waiting to retry
            path = job.path if job is not None and job.path is not None else self._path(file)
            fresh = job is not None and job.fresh
        try:
            idx = TimelineIndex(str(path))
        except FileNotFoundError:
            idx = None
            if fresh:  # built, then gone before it was opened (trimmed, folder cleaned): build again
                self._job(digest).fresh = False
        except CorruptIndex as err:
            if fresh:
                return self._give_up(file, digest, "bug", f"{file.file_name}: the timeline index just built "
                                     f"does not read back ({err})", "")
            discard(path, None, str(err), "timeline index")
            idx = None
        except OSError as err:  # unreadable: built again (into the temporary folder if need be)
            if fresh:
                return self._give_up(file, digest, "transient",
                                     f"{file.file_name}: cannot open its timeline index: {_one_line(err)}", "")
            idx = None
        except Exception as err:  # an error of ours reading a whole, intact index
            from .errors import our_bug

            return self._give_up(file, digest, "bug", our_bug(file.file_name, err), traceback.format_exc())
        if idx is not None:
            touch(path)  # used: the last to be trimmed
            with self._lock:
                job = self._jobs.get(digest)
                if job is not None:
                    job.fresh = False
                    job.kind, job.reason, job.attempts = "", "", 0
                known = self._open.get(digest)
                if known is not None:  # another request opened it meanwhile: one copy
                    idx = known
                else:
                    self._open[digest] = idx
                while len(self._open) > self.KEEP_OPEN:
                    # Dropped, not closed: a request may still be reading it (its arrays keep the mapping
                    # alive; the garbage collector unmaps it when the last one is done).
                    self._open.popitem(last=False)
            return idx, ""
        return self._start(file, digest)

    def _job(self, digest: str) -> _Job:
        with self._lock:
            return self._jobs.setdefault(digest, _Job())

    def _give_up(self, file, digest: str, kind: str, reason: str, trace_text: str) -> Tuple[None, str]:
        with self._lock:
            job = self._jobs.setdefault(digest, _Job())
            job.fresh, job.kind, job.reason = False, kind, reason
            job.next_at = self._clock() + (self.COOLDOWN_S if kind == "transient" else 0.0)
        if kind == "bug":
            logger.error("tb_paddle_profile: %s%s", reason, f"\n{trace_text}" if trace_text else "")
        else:
            logger.warning("tb_paddle_profile: %s", reason)
        return None, reason

    def _start(self, file, digest: str) -> Tuple[None, str]:
        with self._lock:
            if self._closed:
                return None, f"{file.file_name}: the timeline store is closed"
            job = self._jobs.setdefault(digest, _Job())
            if job.future is not None:
                return None, "building"
            if self.runner is not None:
                fut, failed = self._run_elsewhere(file)
            else:
                fut, failed = self._run_here(file)
            job.future = fut
        if fut is None:
            self._finish(file, digest, None, failed)
            with self._lock:
                job = self._jobs[digest]
                return None, (job.reason if job.kind else "building")
        fut.add_done_callback(lambda f: self._finish(file, digest, f, None))
        return None, "building"

    def _run_elsewhere(self, file):
        """(future, None) of the runner's build (the loader's job), or (None, the failure)."""
        try:
            return self.runner(file), None
        except Exception as err:  # the loader closed meanwhile, or a bug of ours: said, never raised
            return None, {"ok": False, "kind": "transient",
                          "error": f"{file.file_name}: timeline not built: {_one_line(err)}"}

    def _run_here(self, file):
        """(future, None) of a build in this store's own pool (under the lock), or (None, the failure)."""
        from .reader import parse_workers
        from .workers import process_pool

        target = self._path(file)
        fallback = None
        if self.folder != self._spill:
            spill = self._temp_folder()
            fallback = str(spill / target.relative_to(self.folder))
        try:
            if self._executor is None:
                self._executor = process_pool(self.workers)
            # cores not taken by other builds help decode this file
            building = sum(1 for j in self._jobs.values() if j.future is not None)
            share = max(1, parse_workers() // (building + 1))
            return self._executor.submit(index_in_worker, self.fs, file.path, file.file_name, file.size,
                                         str(target), share, getattr(file, "root", "") or self.root,
                                         fallback), None
        except Exception as err:  # no worker process could be started (resources): transient
            self._executor = None
            return None, {"ok": False, "kind": "transient",
                          "error": f"{file.file_name}: timeline not built: cannot start a worker process: "
                                   f"{_one_line(err)}"}

    def _finish(self, file, digest: str, fut, res: Optional[dict]) -> None:
        """A build ended (in the executor's thread): record its outcome. Never raises."""
        try:
            if res is None:
                try:
                    res = fut.result()
                except concurrent.futures.process.BrokenProcessPool as err:  # a worker died (memory?)
                    res = {"ok": False, "kind": "transient", "broken": True,
                           "error": f"{file.file_name}: timeline not built: the worker process died "
                                    f"({_one_line(err)}; out of memory?)"}
                except concurrent.futures.CancelledError:
                    res = {"ok": False, "kind": "transient", "retry": True,
                           "error": f"{file.file_name}: timeline build cancelled"}
                except Exception as err:  # the call itself failed (arguments, results): ours
                    from .errors import our_bug

                    res = {"ok": False, "kind": "bug", "error": our_bug(file.file_name, err),
                           "traceback": "".join(traceback.format_exception(type(err), err, err.__traceback__))}
            self._record(file, digest, res)
        except Exception:  # whatever happens, the job must not stay "building" forever
            logger.exception("tb_paddle_profile: %s: recording a timeline build failed", file.file_name)
            with self._lock:
                job = self._jobs.setdefault(digest, _Job())
                job.future, job.kind = None, "bug"
                job.reason = f"{file.file_name}: internal error in tb_paddle_profile while building its timeline"

    def _record(self, file, digest: str, res: dict) -> None:
        now = self._clock()
        written = None
        with self._lock:
            job = self._jobs.setdefault(digest, _Job())
            job.future = None
            if self._closed:
                return
            if res.get("broken") and self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=False)
                self._executor = None
            if res["ok"]:
                job.path, job.fresh = Path(res["path"]), True
                job.kind, job.reason, job.attempts = "", "", 0
                written = job.path
            elif res["kind"] == "transient":
                job.attempts += 1
                if job.attempts >= self.RETRIES or res.get("retry") is False:
                    tries = f"{job.attempts} attempt{'s' if job.attempts > 1 else ''}"
                    job.kind = "transient"
                    job.reason = f"{res['error']} (gave up after {tries}; tried again on a request in " \
                                 f"{self.COOLDOWN_S:.0f} s)"
                    job.next_at = now + self.COOLDOWN_S
                else:
                    job.next_at = now + self.BACKOFF_S * (2 ** (job.attempts - 1))
            else:
                job.kind, job.reason = res["kind"], res["error"]
        if res["ok"]:
            if res.get("note"):
                log_once(f"timeline-spill:{self.folder}", logging.WARNING,
                         "tb_paddle_profile: timeline index folder %s: %s; timeline indexes are kept in a "
                         "temporary folder until TensorBoard exits", self.folder, res["note"])
            trimmer = self.trimmer if written.is_relative_to(self.folder) else self._spill_trimmer
            if trimmer is not None:
                trimmer.after_write(written)
        elif res["kind"] == "bug":
            logger.error("tb_paddle_profile: %s%s", res["error"],
                         f"\n{res['traceback']}" if res.get("traceback") else "")
        elif res["kind"] == "transient":
            logger.warning("tb_paddle_profile: %s", job.reason or f"{res['error']} (will retry)")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            # Dropped, not closed: a request still answering keeps its index until it is done.
            self._open.clear()
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
        if self._tmp is not None:
            try:
                self._tmp.cleanup()
            except OSError:  # a file still mapped (Windows): left to the system's temporary-file cleanup
                pass


# ------------------------------------------------------------------ responses


def _deltas(values: np.ndarray, first: int = 0) -> np.ndarray:
    if not len(values):
        return values
    out = np.empty(len(values), dtype=np.int64)
    out[0] = values[0] - first
    out[1:] = np.diff(values)
    return out


def window_message(run: str, span: str, ranks: list, ws: Optional[int], we: Optional[int], px: int,
                   base: Optional[int], query: str = "", flows: bool = False, ranks_total: Optional[int] = None,
                   rank_offset: int = 0, max_bytes: int = WINDOW_MAX_BYTES,
                   clock: Optional[Dict[str, int]] = None):
    """The TimelineWindow of ``ranks`` [(TraceFile, index or None, state)] for [ws, we] at ``px`` pixels.

    ``ws``/``we`` are ns relative to ``base`` (unix ns; default: the earliest origin of the ready ranks);
    None means the whole extent. ``ranks`` is one page (from ``rank_offset``) of the ``ranks_total``
    ranks asked for; a rank whose slices would take the message past ``max_bytes`` is left to the next
    page (the first rank of a page is always answered; one rank's window stays within the bound by the
    lane cap). ``clock``: worker -> its host's clock offset (ns), subtracted from its origin."""
    from .v1 import timeline_pb2 as tpb

    ready = [(f, idx) for f, idx, _ in ranks if idx is not None]
    if base is None:
        base = min((_origin(f.worker, idx, clock) for f, idx in ready), default=0)
    lo_all = min((idx.start_ns + _origin(f.worker, idx, clock) - base for f, idx in ready), default=0)
    hi_all = max((idx.end_ns + _origin(f.worker, idx, clock) - base for f, idx in ready), default=0)
    if ws is None or we is None or we <= ws:
        ws, we = lo_all, max(hi_all, lo_all + 1)
    px = max(1, min(int(px or 1000), MAX_PX))
    pixel = (we - ws) / px
    msg = tpb.TimelineWindow(run=run, span=span, base_unix_ns=base, window_start_ns=ws, window_end_ns=we, px=px,
                             resolution_ns=pixel, range_start_ns=lo_all, range_end_ns=hi_all, query=query)
    msg.types.extend(TYPE_NAMES)
    names = [""]
    name_ids: Dict[Tuple[int, int], int] = {}
    flow_count = 0
    used = 0
    for ri, (f, idx, state) in enumerate(ranks):
        r = msg.ranks.add(worker=f.worker, rank=f.rank, file_name=f.file_name, state=state)
        names_before = len(names)
        if idx is None:
            used += r.ByteSize() + 4
            continue
        off = _origin(f.worker, idx, clock) - base
        r.offset_ns = off
        r.clock_offset_ns = (clock or {}).get(f.worker, 0)
        r.start_ns, r.end_ns = idx.start_ns + off, idx.end_ns + off
        for tr in idx.tracks:
            r.tracks.add(id=tr["id"], kind=tr["kind"], label=tr["label"], depth=tr["depth"], tid=tr["tid"],
                         device=tr["device"], stream=tr["stream"], events=tr["events"])
        lws, lwe = ws - off, we - off  # the window in this index's own times
        match = idx.name_mask(query) if query else None
        total = 0
        lane_items = {}
        for lane in range(idx.n_lanes):
            q = query_lane(idx, lane, lws, lwe, pixel, LANE_CAP, match)
            total += q["events"]
            if not len(q["ids"]):
                continue
            lane_items[lane] = q
            nm = q["name"]
            local = np.zeros(len(nm), dtype=np.int64)
            for j, g in enumerate(nm.tolist()):
                if g < 0:
                    continue
                k = name_ids.get((ri, g))
                if k is None:
                    k = name_ids[(ri, g)] = len(names)
                    names.append(idx.names[g])
                local[j] = k
            lane_msg = r.lanes.add(track=int(idx.a["lane_track"][lane]), depth=int(idx.a["lane_depth"][lane]),
                                   dropped=q["dropped"])
            lane_msg.start_deltas.extend(_deltas(q["start"] + off, ws).tolist())
            lane_msg.durations.extend((q["end"] - q["start"]).tolist())
            lane_msg.names.extend(local.tolist())
            lane_msg.counts.extend(q["count"].tolist())
            lane_msg.id_deltas.extend(_deltas(q["ids"]).tolist())
            lane_msg.types.extend(q["type"].tolist())
            if "match" in q:
                lane_msg.matches.extend(q["match"].tolist())
        r.events_in_window = total
        cost = r.ByteSize() + 8 + sum(len(n.encode("utf-8", "surrogatepass")) + 3 for n in names[names_before:])
        if ri and max_bytes and used + cost > max_bytes:  # left to the next page
            del msg.ranks[-1]
            del names[names_before:]
            for k in [k for k, v in name_ids.items() if v >= names_before]:
                del name_ids[k]
            break
        used += cost
        if flows:
            flow_count += _add_flows(msg, ri, idx, lane_items, off, ws)
    msg.ranks_total = len(ranks) + rank_offset if ranks_total is None else ranks_total
    msg.rank_offset = rank_offset
    # Names are shared across ranks when equal.
    msg.names.extend(names)
    if flow_count > FLOW_CAP:
        msg.flows_dropped = flow_count - len(msg.flows)
    return msg


def _add_flows(msg, ri: int, idx: TimelineIndex, lane_items: dict, off: int, ws: int) -> int:
    """Launch→kernel pairs whose kernel is a visible single slice in the window."""
    a = idx.a
    dev_ids = []
    for lane, q in lane_items.items():
        tr = idx.tracks[int(a["lane_track"][lane])]
        if tr["kind"] != 2:
            continue
        single = q["count"] == 1
        dev_ids.append(q["ids"][single])
    if not dev_ids:
        return 0
    ids = np.concatenate(dev_ids)
    rows = a["ev_row"][ids]
    rts = a["dev_rt"][rows]
    ok = rts >= 0
    ids, rts = ids[ok], rts[ok]
    total = len(ids)
    room = FLOW_CAP - len(msg.flows)
    for dst, rt in zip(ids[:max(room, 0)].tolist(), rts[:max(room, 0)].tolist()):
        src = int(a["rt_pos"][rt])
        _, st, sd = row_of(idx, src)
        _, dt, dd = row_of(idx, dst)
        msg.flows.add(rank=ri, src_track=st, src_depth=sd, src_start_ns=int(a["ev_start"][src]) + off - ws, src_id=src,
                      dst_track=dt, dst_depth=dd, dst_start_ns=int(a["ev_start"][dst]) + off - ws, dst_id=dst)
    return total


def _origin(worker: str, idx: TimelineIndex, clock: Optional[Dict[str, int]]) -> int:
    """The index's origin on the run's common clock: its own origin less its host's clock offset."""
    return idx.origin - (clock or {}).get(worker, 0)


def event_message(worker: str, idx: TimelineIndex, ev: int, base: Optional[int],
                  clock: Optional[Dict[str, int]] = None):
    from .v1 import timeline_pb2 as tpb

    d = event_details(idx, ev)
    origin = _origin(worker, idx, clock)
    base = origin if base is None else base
    off = origin - base
    msg = tpb.TimelineEvent(worker=worker, id=ev, name=d["name"], type=d["type"], start_ns=d["start"] + off,
                            end_ns=d["end"] + off, track=d["track"], depth=d["depth"], track_label=d["track_label"],
                            correlation_id=d["corr"], operator=d["operator"], base_unix_ns=base)
    for arg in d["args"]:
        msg.args.add(key=arg["key"], value=arg["value"])
    for r in d["related"]:
        msg.related.add(worker=worker, id=r["id"], name=r["name"], type=r["type"], start_ns=r["start"] + off,
                        end_ns=r["end"] + off, track=r["track"], depth=r["depth"], relation=r["relation"])
    return msg


def search_message(ranks: list, query: str, exact: bool, base: Optional[int], limit: int = MATCH_CAP,
                   clock: Optional[Dict[str, int]] = None):
    from .v1 import timeline_pb2 as tpb

    ready = [(f, idx) for f, idx in ranks if idx is not None]
    if base is None:
        base = min((_origin(f.worker, idx, clock) for f, idx in ready), default=0)
    msg = tpb.TimelineSearch(query=query, base_unix_ns=base)
    found = []
    for f, idx in ready:
        total, ids = search(idx, query, exact, limit)
        msg.total += total
        off = _origin(f.worker, idx, clock) - base
        a = idx.a
        for ev in ids.tolist():
            found.append((int(a["ev_start"][ev]) + off, f, idx, ev, off))
    found.sort(key=lambda x: x[0])
    for start, f, idx, ev, off in found[:limit]:
        _, tr, dp = row_of(idx, ev)
        msg.matches.add(worker=f.worker, id=ev, name=idx.names[int(idx.a["ev_name"][ev])], start_ns=start,
                        end_ns=int(idx.a["ev_end"][ev]) + off, track=tr, depth=dp)
    if msg.matches:
        msg.first_start_ns = msg.matches[0].start_ns
        msg.last_end_ns = max(m.end_ns for m in msg.matches)
    return msg


def range_message(ranks: list, ws: int, we: int, tracks: Dict[str, Optional[List[int]]], base: Optional[int],
                  clock: Optional[Dict[str, int]] = None):
    """Sums over [ws, we] of the tracks named per worker (None: all its tracks)."""
    from .v1 import timeline_pb2 as tpb

    ready = [(f, idx) for f, idx in ranks if idx is not None]
    if base is None:
        base = min((_origin(f.worker, idx, clock) for f, idx in ready), default=0)
    acc: Dict[Tuple[str, str], list] = {}
    for f, idx in ready:
        if f.worker not in tracks:
            continue
        off = _origin(f.worker, idx, clock) - base
        for key, v in range_sums(idx, ws - off, we - off, tracks[f.worker]).items():
            t = acc.setdefault(key, [0, 0, 0])
            for i in range(3):
                t[i] += v[i]
    msg = tpb.TimelineRange(start_ns=ws, end_ns=we)
    for (name, typ), (c, tot, ovl) in sorted(acc.items(), key=lambda kv: -kv[1][2]):
        msg.rows.add(name=name, type=typ, count=c, total_ns=tot, overlap_ns=ovl)
        msg.events += c
    return msg
