"""Paddle Chrome-tracing JSON → columnar event tables.

The events array is read in chunks of a few MB, each by the native scanner
(_scan.c: JSON → fixed records) or, where it declines, by a typed msgspec decode,
and sorted into four tables (host, runtime, device, memory) of numpy columns with
interned names. The reader knows the format, nothing of the analyses.

Format facts (../docs/paddle-trace-format.md): host times come from
``args.start_time`` (µs, relative, float32 printed with 3 decimals) and ``dur``;
device and runtime events the same; memory events only carry an absolute ``ts``
in µs and belong to the nearest preceding host event of their thread in file
order. Paddle writes names without JSON escaping, so a name holding ``"`` or
``\\`` makes the file invalid JSON; such lines are repaired.
"""
from __future__ import annotations

import collections
import concurrent.futures
import gc
import gzip
import multiprocessing
import os
import re
import threading
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

import msgspec
import numpy as np

from . import event_types as et
from .errors import TraceError


class Args(msgspec.Struct, gc=False):
    start_time: Optional[str] = None
    correlation_id: Optional[int] = msgspec.field(default=None, name="correlation id")
    grid: Optional[List[int]] = None
    block: Optional[List[int]] = None
    registers: Optional[int] = msgspec.field(default=None, name="registers per thread")
    shared_memory: Optional[int] = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: Optional[float] = msgspec.field(default=None, name="blocks per SM")
    warps_per_sm: Optional[float] = msgspec.field(default=None, name="warps per SM")
    occupancy: Optional[float] = msgspec.field(default=None, name="theoretical achieved occupancy %")
    bytes: Optional[int] = None
    place: Optional[str] = None
    increase_bytes: Optional[int] = None
    current_allocated: Optional[int] = None
    current_reserved: Optional[int] = None
    peak_allocated: Optional[int] = None
    peak_reserved: Optional[int] = None
    input_shapes: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    input_dtypes: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class Event(msgspec.Struct, gc=False):
    name: str = ""
    ph: str = ""
    cat: str = ""
    pid: Union[int, str] = 0
    tid: Union[int, str] = 0
    ts: float = 0.0
    dur: float = 0.0
    args: Optional[Args] = None


class DeviceProp(msgspec.Struct, rename="camel"):
    id: int = 0
    name: str = ""
    total_global_mem: int = 0
    compute_major: int = 0
    compute_minor: int = 0
    max_threads_per_block: int = 0
    max_threads_per_multiprocessor: int = 0
    regs_per_block: int = 0
    regs_per_multiprocessor: int = 0
    warp_size: int = 0
    shared_mem_per_block: int = 0
    shared_mem_per_multiprocessor: int = 0
    sm_count: int = 0
    shared_mem_per_block_optin: int = 0


class Trace(msgspec.Struct):
    # Kept raw: events are decoded in chunks (bounded memory), see _columns.
    traceEvents: msgspec.Raw
    schemaVersion: Optional[str] = None
    span_index: Optional[Union[str, int]] = None
    span_indx: Optional[Union[str, int]] = None
    displayTimeUnit: Optional[str] = None
    deviceProperties: List[DeviceProp] = []
    ExtraInfo: Dict[str, str] = {}


_DECODER = msgspec.json.Decoder(Trace)
_EVENTS = msgspec.json.Decoder(List[Event])
_SEPARATOR = re.compile(rb"\}\s*,\s*\{")
CHUNK_BYTES = 8 << 20


@dataclass
class EventTables:
    """All events of one trace, as columns. Times are ns relative to Paddle's origin."""

    names: List[str]
    # host events (one row per "X" event that is not runtime or device)
    host_tid: np.ndarray
    host_type: np.ndarray
    host_name: np.ndarray
    host_start: np.ndarray
    host_end: np.ndarray
    host_shapes: Dict[int, tuple]  # row → (input_shapes json, input_dtypes json), only where non-empty
    # runtime events (CudaRuntime...)
    rt_tid: np.ndarray
    rt_type: np.ndarray
    rt_name: np.ndarray
    rt_start: np.ndarray
    rt_end: np.ndarray
    rt_corr: np.ndarray
    # device events (Kernel, Memcpy, Memset)
    dev_id: np.ndarray
    dev_stream: np.ndarray
    dev_type: np.ndarray
    dev_name: np.ndarray
    dev_start: np.ndarray
    dev_end: np.ndarray
    dev_corr: np.ndarray
    dev_grid: np.ndarray       # (n, 3)
    dev_block: np.ndarray      # (n, 3)
    dev_registers: np.ndarray
    dev_shared_memory: np.ndarray
    dev_blocks_per_sm: np.ndarray
    dev_warps_per_sm: np.ndarray
    dev_occupancy: np.ndarray
    dev_bytes: np.ndarray
    # memory events
    mem_tid: np.ndarray
    mem_type: np.ndarray
    mem_place: np.ndarray      # index into names
    mem_ts_ns: np.ndarray      # relative ns (from the µs "ts")
    mem_increase: np.ndarray
    mem_current_allocated: np.ndarray
    mem_current_reserved: np.ndarray
    mem_peak_allocated: np.ndarray
    mem_peak_reserved: np.ndarray
    mem_owner: np.ndarray      # host row of the nearest preceding host event of the thread, or -1
    # metadata
    schema_version: str = ""
    span: str = ""
    extra_info: Dict[str, str] = field(default_factory=dict)
    devices: List[DeviceProp] = field(default_factory=list)
    thread_names: Dict[int, str] = field(default_factory=dict)
    origin_unix_ns: int = 0
    pid: int = -1
    repaired_lines: int = 0


_NAME_LINE = re.compile(rb'^(\s*"name": ")(.*)(", "(?:pid|id)":.*)$')


def _repair(data: bytes) -> "tuple[bytes, int]":
    """Re-escape names that Paddle wrote without JSON escaping; escape raw tabs."""
    out = []
    repaired = 0
    for line in data.split(b"\n"):
        m = _NAME_LINE.match(line)
        if m:
            raw = m.group(2)
            fixed = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\t", b"\\t")
            if fixed != raw:
                repaired += 1
                line = m.group(1) + fixed + m.group(3)
        elif b"\t" in line and b'"' in line:
            repaired += 1
            line = line.replace(b"\t", b"\\t")
        out.append(line)
    return b"\n".join(out), repaired


def _decompress(data: bytes, file_name: str) -> bytes:
    if data[:2] != b"\x1f\x8b":
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as exc:
        reason = "truncated gzip stream" if isinstance(exc, EOFError) else f"corrupt gzip data ({exc})"
        raise TraceError(file_name, reason) from None


_BLANK = re.compile(rb"\s*\Z")


def _split_head(data: bytes):
    """Fast path for Paddle's own layout: cut the traceEvents array out, so that the small rest
    ("head") decodes alone and the events are only decoded once, in chunks. None when the file
    does not look like that (truncated, other key order...): the caller then decodes it whole."""
    key = data.find(b'"traceEvents"')
    info = data.rfind(b'"ExtraInfo"')
    if key < 0 or info < key:
        return None
    open_ = data.find(b"[", key)
    close = data.rfind(b"]", open_, info)
    if open_ < 0 or close < 0:
        return None
    try:
        head = _DECODER.decode(data[:open_] + b"[]" + data[close + 1:])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    head.traceEvents = memoryview(data)[open_:close + 1]
    return head


def decode(data: bytes, file_name: str, repair: bool = False) -> "tuple[Trace, int]":
    """Typed decode of everything but the events (kept raw) with Paddle's quirks tolerated.
    Raises TraceError with a one-line reason."""
    data = _decompress(data, file_name)
    if _BLANK.match(data):
        raise TraceError(file_name, "empty file")
    repaired = 0
    if repair:
        data, repaired = _repair(data)
    trace = _split_head(data)
    if trace is None:
        try:
            trace = _DECODER.decode(data)
        except msgspec.ValidationError as exc:
            raise TraceError(file_name, f"not a Paddle trace: {exc}") from None
        except msgspec.DecodeError as exc:
            if "truncated" in str(exc):
                raise TraceError(file_name, "truncated JSON: the file ends early (cut off or still being written)") \
                    from None
            if not repair:
                return decode(data, file_name, repair=True)
            lead = data.lstrip()[:1]
            what = "not JSON" if lead not in (b"{", b"[") else "invalid JSON"
            raise TraceError(file_name, f"{what}: {exc}") from None
    if not isinstance(trace.schemaVersion, str) or not (
        trace.span_index is not None or trace.span_indx is not None or trace.ExtraInfo
    ):
        raise TraceError(file_name, "not a Paddle trace: no Paddle schemaVersion/span_index/ExtraInfo")
    return trace, repaired


_HEAD_SPAN = re.compile(rb'"span_ind(?:ex|x)"\s*:\s*"?([^",}\s]*)')


def peek_span(head: bytes) -> Optional[str]:
    """The span of a trace from its first kilobytes, without parsing the file."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(31).decompress(head)
        except zlib.error:
            return None
    m = _HEAD_SPAN.search(head)
    return m.group(1).decode("utf-8", "replace") if m else None


def _event_bounds(raw) -> "tuple[memoryview, int, int]":
    """The traceEvents array's bytes and the range between its brackets."""
    mv = memoryview(raw)
    return mv, _first_bracket(mv) + 1, _last_bracket(mv)


def _chunk_ranges(mv: memoryview, start: int, end: int) -> "List[tuple]":
    """mv[start:end] cut at event boundaries about every CHUNK_BYTES: (start, stop) per chunk."""
    ranges = []
    pos = start
    while pos < end:
        cut = pos + CHUNK_BYTES
        m = _SEPARATOR.search(mv, cut, end) if cut < end else None
        stop, nxt = (m.start() + 1, m.end() - 1) if m else (end, end)
        ranges.append((pos, stop))
        pos = nxt
    return ranges


def _decode_chunk(mv: memoryview, pos: int, stop: int, single: bool) -> List[Event]:
    """One chunk's events as structs. A cut that lands inside a string (a name holding "}, {")
    shows as a decode error, and the array is then decoded whole."""
    try:
        return _EVENTS.decode(b"".join((b"[", mv[pos:stop], b"]")))
    except msgspec.DecodeError:
        if single:
            raise
        raise _ChunkSplitError() from None


class _ChunkSplitError(Exception):
    pass


def _first_bracket(mv) -> int:
    for i in range(min(len(mv), 1 << 16)):
        if mv[i] == 0x5B:  # "["
            return i
    raise msgspec.ValidationError("Expected `array` for `$.traceEvents`")


def _last_bracket(mv) -> int:
    for i in range(len(mv) - 1, max(-1, len(mv) - (1 << 16)), -1):
        if mv[i] == 0x5D:  # "]"
            return i
    raise msgspec.ValidationError("Expected `array` for `$.traceEvents`")


def read_trace(data: Union[bytes, List[bytes]], file_name: str, workers: int = 1) -> EventTables:
    """Decode a whole trace file's bytes into EventTables.

    `data` may be a one-item list holding the bytes: the reader then takes them out and drops
    them as soon as the events are read, before the columns are joined, so that a large file's
    bytes and its joined columns are not held at once (the caller keeps no other reference).

    With workers > 1, that many cores read the file's chunks at once: threads running the native
    scanner (which releases the GIL) when it is built, else (msgspec only) forked processes for
    large files (PARALLEL_MIN_BYTES of events per process), each taking a contiguous range of the
    events. The tables are the same as a serial read's; any failure falls back to the serial read."""
    box = data if isinstance(data, list) else [data]
    del data
    # Millions of small acyclic objects: the cyclic GC would only rescan them over and over.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(box, file_name, repair=False, workers=workers)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        raise TraceError(file_name, f"not a Paddle trace: {exc}") from None
    except (TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise TraceError(file_name, f"not a Paddle trace: malformed event ({exc})") from None
    finally:
        if was_enabled:
            gc.enable()


def _read(box: List[bytes], file_name: str, repair: bool, workers: int = 1) -> EventTables:
    trace, repaired = decode(box[0], file_name, repair=repair)
    try:
        if workers > 1 and not repair and native_scanner() is None:
            tables = _parallel_tabulate(trace, repaired, workers)
            if tables is not None:
                return tables
        try:
            mv, start, end = _event_bounds(trace.traceEvents)
            # with the native scanner, the cores read chunks as threads of this process
            parts, names = _column_parts(mv, _chunk_ranges(mv, start, end), threads=1 if repair else workers)
            del mv
        except _ChunkSplitError:
            names = _Interner()
            parts = [_chunk_columns(_EVENTS.decode(trace.traceEvents), names, 0)]
            names = names.names
    except msgspec.DecodeError as exc:
        if repair:
            raise TraceError(file_name, f"invalid JSON: {exc}") from None
        del trace
        return _read(box, file_name, repair=True)  # names Paddle wrote without escaping
    # The events are read: the file's bytes (and the repaired copy) can go before the join.
    trace.traceEvents = None
    box.clear()
    return _assemble(trace, _concat(parts), names, repaired)


# ---------------------------------------------------------------- parallel decode

# Below this many bytes of events per process, forking costs more than it saves.
PARALLEL_MIN_BYTES = 24 << 20
# At most this many by default: each process holds a chunk of decoded events (~50 MB), and past a
# few the parent's serial part (reading, merging, the analyses) dominates anyway.
MAX_PARSE_WORKERS = 8

_SHARED: Optional[memoryview] = None  # the events' bytes, inherited by forked workers


def parse_workers() -> int:
    """Processes a reader may use on this machine: the CPUs this process may run on, at most
    MAX_PARSE_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_PARSE_WORKERS))


def _range_columns(ranges: "List[tuple]") -> "tuple[dict, List[str]]":
    """In a forked worker: the columns of these chunks of _SHARED, names numbered locally."""
    return _columns(_SHARED, ranges)


def _parallel_tabulate(trace: Trace, repaired: int, workers: int) -> Optional[EventTables]:
    """Events decoded by `workers` processes (this one included), or None when not worth it or
    not possible here (no fork, threads running, a worker failed): the caller then reads serially."""
    global _SHARED
    mv, start, end = _event_bounds(trace.traceEvents)
    workers = min(workers, (end - start) // PARALLEL_MIN_BYTES)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods() or threading.active_count() > 1:
        return None
    # The same chunks as a serial read, dealt out in contiguous groups: names are then numbered
    # in the same order (first appearance, chunk by chunk) and the tables are identical.
    chunks = _chunk_ranges(mv, start, end)
    workers = min(workers, len(chunks))
    if workers < 2:
        return None
    groups = [chunks[len(chunks) * i // workers:len(chunks) * (i + 1) // workers] for i in range(workers)]
    _SHARED = mv
    try:
        # fork: the children see the file's bytes without a copy; this process takes the first range.
        with concurrent.futures.ProcessPoolExecutor(workers - 1,
                                                    mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_range_columns, group) for group in groups[1:]]
            results = [_range_columns(groups[0])] + [f.result() for f in futures]
    except Exception:  # a split inside a string, a broken worker...: the serial read decides
        return None
    finally:
        _SHARED = None
    names = _Interner()
    parts = []
    offset = 0
    for part, local_names in results:
        remap = names.many(local_names)
        for key in ("host_name", "rt_name", "dev_name", "mem_place"):
            part[key] = remap[part[key]] if len(remap) else part[key]
        part["host_pos"] += offset
        part["mem_pos"] += offset
        offset += part["n"]
        parts.append(part)
    return _assemble(trace, _concat(parts), names.names, repaired)


_NO_ARGS = Args()


class _Interner:
    def __init__(self):
        self.ids: Dict[str, int] = {}
        self.names: List[str] = []

    def many(self, strings: List[str]) -> np.ndarray:
        ids = self.ids
        known = len(ids)
        # setdefault evaluates len(ids) before inserting: a new string gets the next id
        out = np.array([ids.setdefault(s, len(ids)) for s in strings], dtype=np.int32)
        if len(ids) > known:
            self.names.extend(list(ids)[known:])
        return out


def _thread_ids(tids: list) -> np.ndarray:
    """'1234(Python)' / '1234(C++)' / 1234 → 1234."""
    cache = {t: (t if isinstance(t, int) else int(str(t).split("(", 1)[0])) for t in set(tids)}
    return np.array([cache[t] for t in tids], dtype=np.int64)


def _times(events: list) -> "tuple[np.ndarray, np.ndarray, bool]":
    """Start and end in ns from args.start_time (relative µs text) and dur (µs).

    Returns (start, end, relative); when an event lacks args.start_time (very old files) the
    whole table uses the absolute ``ts`` instead, and relative is False.
    """
    rel = [(e.args or _NO_ARGS).start_time for e in events]
    dur = _ns(np.array([e.dur for e in events], dtype=np.float64))
    if None not in rel:
        # one C-level parse of "12.345 us 67.890 us ..." instead of a float() per event
        values = np.fromstring(" ".join(rel).replace(" us", ""), sep=" ") if rel else np.zeros(0)
        if len(values) != len(rel):  # some other unit or text: parse one by one
            values = np.array([float(r.split(" ", 1)[0]) for r in rel], dtype=np.float64)
        start = _ns(values)
        relative = True
    else:
        start = _ns(np.array([e.ts for e in events], dtype=np.float64))
        relative = False
    return start, start + dur, relative


# µs values beyond this (about 290 years) do not fit int64 ns
_MAX_US = 9.2e15


def _ns(us: np.ndarray) -> np.ndarray:
    """µs (float) → ns (int64, rounded); ValueError for a value that is not a finite time."""
    if len(us) and not (np.abs(us) < _MAX_US).all():  # also false for nan
        raise ValueError("a time out of range (beyond ±9.2e15 µs, or not a number)")
    return np.rint(us * 1000).astype(np.int64)


def _origin(tables) -> Optional[int]:
    """Absolute ns of the relative origin. ts is the absolute start truncated to µs, so each
    ts·1000 − start is a lower bound of the origin; the largest is the best estimate.
    tables: (ts in µs, start ns, relative) per table. None when no table has relative times."""
    best = None
    for ts, start, relative in tables:
        if relative and len(start):
            bound = int((_ns(ts()) - start).max())
            best = bound if best is None else max(best, bound)
    return best


def _memory_owners(host_tid, host_pos, mem_tid, mem_pos) -> np.ndarray:
    """Each memory event's nearest preceding host event of its thread, in file order (-1: none)."""
    owner = np.full(len(mem_tid), -1, dtype=np.int64)
    if not len(mem_tid) or not len(host_tid):
        return owner
    span = int(max(host_pos.max(), mem_pos.max())) + 1
    host_key = host_tid * span + host_pos
    order = np.argsort(host_key, kind="stable")
    sorted_key = host_key[order]
    i = np.searchsorted(sorted_key, mem_tid * span + mem_pos) - 1
    ok = i >= 0
    same_thread = np.zeros(len(mem_tid), dtype=bool)
    same_thread[ok] = host_tid[order[i[ok]]] == mem_tid[ok]
    owner[same_thread] = order[i[same_thread]]
    return owner


# Event kind by "cat" alone (one dict lookup per event): 1 device, 2 runtime, 3 host, 4 memory,
# 0 ignored; host and memory kinds are then confirmed by "ph" ("X" / "i").
_KIND_OF = {c: 1 for c in et.DEVICE_CATS}
_KIND_OF.update({c: 2 for c in et.RUNTIME_CATS})
_KIND_OF.update({c: 4 for c in et.MEM_TYPE_ID})
_KIND_OF.update({"": 0, "async": 0})


def _triples(values) -> np.ndarray:
    out = [tuple(v[:3]) + (0,) * (3 - len(v[:3])) if v else (0, 0, 0) for v in values]
    return np.array(out, dtype=np.int32).reshape(-1, 3)


def _strip_names(events) -> list:
    """'matmul dygraph[12.345 us]' → 'matmul dygraph': the last bracket group is the duration."""
    return [n.rpartition("[")[0] if n[-1:] == "]" and "[" in n else n for n in (e.name for e in events)]


def _chunk_columns(events: List[Event], names: _Interner, offset: int) -> dict:
    """Columns of one chunk of events; `offset` is the chunk's position in the file's event list."""
    get = _KIND_OF.get
    kind = np.array([get(e.cat, 3) for e in events], dtype=np.int8)
    # Metadata, flow and the final {} have no category or "async" and are already 0; confirm
    # the phase only where another tool's event could hide (host and memory categories).
    for k, ph in ((3, "X"), (4, "i")):
        rows = np.nonzero(kind == k)[0]
        odd = [i for i in rows.tolist() if events[i].ph != ph]
        if odd:
            kind[odd] = 0
    picks = {k: np.nonzero(kind == k)[0] for k in (1, 2, 3, 4)}
    dev_ev = [events[i] for i in picks[1].tolist()]
    rt_ev = [events[i] for i in picks[2].tolist()]
    host_ev = [events[i] for i in picks[3].tolist()]
    mem_ev = [events[i] for i in picks[4].tolist()]
    i64 = np.int64
    c: dict = {"host_pos": picks[3].astype(i64) + offset, "mem_pos": picks[4].astype(i64) + offset}

    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]
    c["host_tid"] = _thread_ids([e.tid for e in host_ev])
    c["host_type"] = np.array([type_id.get(e.cat, user_defined) for e in host_ev], dtype=np.int16)
    c["host_name"] = names.many(_strip_names(host_ev))
    c["host_start"], c["host_end"], host_rel = _times(host_ev)
    shapes = {}
    for row, e in enumerate(host_ev):
        a = e.args
        if a is not None and len(a.input_shapes) > 2:
            text = bytes(a.input_shapes).strip()
            if text not in (b"{}", b"null"):
                dtypes = bytes(a.input_dtypes) or b"{}"
                shapes[row] = (text.decode("utf-8", "replace"), dtypes.decode("utf-8", "replace"))
    c["host_shapes"] = shapes

    runtime_cats = et.RUNTIME_CATS
    c["rt_tid"] = _thread_ids([e.tid for e in rt_ev])
    c["rt_type"] = np.array([runtime_cats[e.cat] for e in rt_ev], dtype=np.int16)
    c["rt_name"] = names.many(_strip_names(rt_ev))
    c["rt_start"], c["rt_end"], rt_rel = _times(rt_ev)
    rt_args = [e.args or _NO_ARGS for e in rt_ev]
    c["rt_corr"] = np.array([-1 if a.correlation_id is None else a.correlation_id for a in rt_args], dtype=i64)

    device_cats = et.DEVICE_CATS
    dev_args = [e.args or _NO_ARGS for e in dev_ev]
    c["dev_id"] = np.array([int(e.pid) for e in dev_ev], dtype=i64)
    c["dev_stream"] = np.array([int(e.tid) for e in dev_ev], dtype=i64)
    c["dev_type"] = np.array([device_cats[e.cat] for e in dev_ev], dtype=np.int16)
    c["dev_name"] = names.many(_strip_names(dev_ev))
    c["dev_start"], c["dev_end"], dev_rel = _times(dev_ev)
    c["dev_corr"] = np.array([-1 if a.correlation_id is None else a.correlation_id for a in dev_args], dtype=i64)
    c["dev_grid"] = _triples([a.grid for a in dev_args])
    c["dev_block"] = _triples([a.block for a in dev_args])
    c["dev_registers"] = np.array([a.registers or 0 for a in dev_args], dtype=np.int32)
    c["dev_shared_memory"] = np.array([a.shared_memory or 0 for a in dev_args], dtype=i64)
    c["dev_blocks_per_sm"] = np.array([a.blocks_per_sm or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_warps_per_sm"] = np.array([a.warps_per_sm or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_occupancy"] = np.array([a.occupancy or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_bytes"] = np.array([a.bytes or 0 for a in dev_args], dtype=i64)

    mem_args = [e.args or _NO_ARGS for e in mem_ev]
    c["mem_tid"] = _thread_ids([e.tid for e in mem_ev])
    c["mem_type"] = np.array([et.MEM_TYPE_ID[e.cat] for e in mem_ev], dtype=np.int8)
    c["mem_place"] = names.many([a.place or "" for a in mem_args])
    c["mem_ts_ns"] = _ns(np.array([e.ts for e in mem_ev], dtype=np.float64))
    c["mem_increase"] = np.array([a.increase_bytes or 0 for a in mem_args], dtype=i64)
    c["mem_current_allocated"] = np.array([a.current_allocated or 0 for a in mem_args], dtype=i64)
    c["mem_current_reserved"] = np.array([a.current_reserved or 0 for a in mem_args], dtype=i64)
    c["mem_peak_allocated"] = np.array([a.peak_allocated or 0 for a in mem_args], dtype=i64)
    c["mem_peak_reserved"] = np.array([a.peak_reserved or 0 for a in mem_args], dtype=i64)

    # Relative times are rebased by the origin later only where a table lacked them.
    c["host_abs"] = np.full(len(host_ev), not host_rel)
    c["rt_abs"] = np.full(len(rt_ev), not rt_rel)
    c["dev_abs"] = np.full(len(dev_ev), not dev_rel)
    c["origin"] = _origin(((lambda ev=ev: np.array([e.ts for e in ev], dtype=np.float64), c[f"{t}_start"], rel)
                           for t, ev, rel in (("host", host_ev, host_rel), ("rt", rt_ev, rt_rel),
                                              ("dev", dev_ev, dev_rel))))
    starts = [c[f"{t}_start"] for t, rel in (("host", host_rel), ("rt", rt_rel), ("dev", dev_rel))
              if not rel and len(c[f"{t}_start"])]
    c["abs_min"] = min(int(x.min()) for x in starts) if starts else None
    c["pid"] = next((e.pid for e in host_ev if isinstance(e.pid, int)), -1)
    c["n"] = len(events)
    return c


# ---------------------------------------------------------------- native scanner

# The records of the native scanner (_scan.c, struct record): the same fields in the same order.
_RECORD = np.dtype([(f, "=i8") for f in (
    "pid", "tid", "corr", "shared_memory", "bytes", "increase", "cur_alloc", "cur_reserved",
    "peak_alloc", "peak_reserved", "shapes_start", "shapes_stop", "dtypes_start", "dtypes_stop")]
    + [(f, "=f8") for f in ("ts", "dur", "start", "blocks_per_sm", "warps_per_sm", "occupancy")]
    + [(f, "=i4") for f in ("name", "cat", "ph", "place", "registers")]
    + [("grid", "=i4", (3,)), ("block", "=i4", (3,))]
    + [(f, "u1") for f in ("pid_is_str", "tid_kind", "has_start", "pad_")])

# Set TB_PADDLE_PROFILE_NATIVE=0 to read with msgspec only (the tables are the same).
USE_NATIVE = os.environ.get("TB_PADDLE_PROFILE_NATIVE", "1") != "0"


def native_scanner():
    """The compiled scanner's scan function, or None when it is not built (a pure-Python install),
    does not match this reader, or is switched off (USE_NATIVE)."""
    if not USE_NATIVE:
        return None
    try:
        from . import _scan
    except ImportError:
        return None
    return _scan.scan if _scan.RECORD_SIZE == _RECORD.itemsize else None


def _lut(strings: List[str], used: np.ndarray, value, dtype) -> np.ndarray:
    """value(string) for the strings whose ids are `used` (0 for the others), indexable by the
    chunk's string ids."""
    lut = np.zeros(len(strings), dtype=dtype)
    lut[used] = [value(strings[i]) for i in used.tolist()]
    return lut


def _global_ids(local: np.ndarray, strings: List[str], names: "_Interner") -> np.ndarray:
    """Chunk string ids → the file's name ids, numbering new names in their order of first
    appearance in `local` (what _Interner.many does on the strings themselves)."""
    if not len(local):
        return np.zeros(0, dtype=np.int32)
    uniq, first = np.unique(local, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    lut = np.zeros(len(strings), dtype=np.int32)
    lut[order] = names.many([strings[i] for i in order.tolist()])
    return lut[local]


def _native_times(rec: np.ndarray, rows: np.ndarray) -> "tuple[np.ndarray, np.ndarray, bool]":
    """_times on scanned records."""
    dur = _ns(rec["dur"][rows])
    relative = bool(rec["has_start"][rows].all())
    start = _ns(rec["start" if relative else "ts"][rows])
    return start, start + dur, relative


def _native_chunk_columns(got, mv: memoryview, names: "_Interner", offset: int) -> Optional[dict]:
    """_chunk_columns from the native scanner's answer for a chunk of mv; None where the scanner
    declined the chunk (or the Python reader would reject it): msgspec then reads it."""
    if got is None:
        return None
    n, strings, raw = got
    rec = np.frombuffer(raw, dtype=_RECORD)
    cat, ph = rec["cat"], rec["ph"]
    # categories and phases are a handful of the chunk's strings: look only those up
    cats = np.flatnonzero(np.bincount(cat, minlength=len(strings)))
    phases = np.flatnonzero(np.bincount(ph, minlength=len(strings)))
    kind = _lut(strings, cats, lambda s: _KIND_OF.get(s, 3), np.int8)[cat]
    for k, want in ((3, "X"), (4, "i")):
        kind[(kind == k) & ~_lut(strings, phases, lambda s: s == want, bool)[ph]] = 0
    host, rt, dev, mem = (np.nonzero(kind == k)[0] for k in (3, 2, 1, 4))
    if (rec["tid_kind"][dev] == 2).any():  # int("7(...)") fails in the Python reader: let it say so
        return None
    i64 = np.int64
    c: dict = {"host_pos": host.astype(i64) + offset, "mem_pos": mem.astype(i64) + offset}
    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]

    c["host_tid"] = rec["tid"][host]
    c["host_type"] = _lut(strings, cats, lambda s: type_id.get(s, user_defined), np.int16)[cat[host]]
    c["host_name"] = _global_ids(rec["name"][host], strings, names)
    c["host_start"], c["host_end"], host_rel = _native_times(rec, host)
    shapes = {}
    spans = rec[["shapes_start", "shapes_stop", "dtypes_start", "dtypes_stop"]][host]
    for row in np.nonzero(spans["shapes_stop"] - spans["shapes_start"] > 2)[0].tolist():
        s0, s1, d0, d1 = spans[row].tolist()
        text = bytes(mv[s0:s1]).strip()
        if text not in (b"{}", b"null"):
            dtypes = bytes(mv[d0:d1]) or b"{}"
            shapes[row] = (text.decode("utf-8", "replace"), dtypes.decode("utf-8", "replace"))
    c["host_shapes"] = shapes

    c["rt_tid"] = rec["tid"][rt]
    c["rt_type"] = _lut(strings, cats, lambda s: et.RUNTIME_CATS.get(s, -1), np.int16)[cat[rt]]
    c["rt_name"] = _global_ids(rec["name"][rt], strings, names)
    c["rt_start"], c["rt_end"], rt_rel = _native_times(rec, rt)
    c["rt_corr"] = rec["corr"][rt]

    c["dev_id"] = rec["pid"][dev]
    c["dev_stream"] = rec["tid"][dev]
    c["dev_type"] = _lut(strings, cats, lambda s: et.DEVICE_CATS.get(s, -1), np.int16)[cat[dev]]
    c["dev_name"] = _global_ids(rec["name"][dev], strings, names)
    c["dev_start"], c["dev_end"], dev_rel = _native_times(rec, dev)
    c["dev_corr"] = rec["corr"][dev]
    c["dev_grid"] = rec["grid"][dev]
    c["dev_block"] = rec["block"][dev]
    for key in ("registers", "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy", "bytes"):
        c[f"dev_{key}"] = rec[key][dev]

    c["mem_tid"] = rec["tid"][mem]
    c["mem_type"] = _lut(strings, cats, lambda s: et.MEM_TYPE_ID.get(s, -1), np.int8)[cat[mem]]
    c["mem_place"] = _global_ids(rec["place"][mem], strings, names)
    c["mem_ts_ns"] = _ns(rec["ts"][mem])
    for key, field in (("increase", "increase"), ("current_allocated", "cur_alloc"),
                       ("current_reserved", "cur_reserved"), ("peak_allocated", "peak_alloc"),
                       ("peak_reserved", "peak_reserved")):
        c[f"mem_{key}"] = rec[field][mem]

    c["host_abs"] = np.full(len(host), not host_rel)
    c["rt_abs"] = np.full(len(rt), not rt_rel)
    c["dev_abs"] = np.full(len(dev), not dev_rel)
    c["origin"] = _origin(((lambda rows=rows: rec["ts"][rows], c[f"{t}_start"], rel)
                           for t, rows, rel in (("host", host, host_rel), ("rt", rt, rt_rel),
                                                ("dev", dev, dev_rel))))
    starts = [c[f"{t}_start"] for t, rel in (("host", host_rel), ("rt", rt_rel), ("dev", dev_rel))
              if not rel and len(c[f"{t}_start"])]
    c["abs_min"] = min(int(x.min()) for x in starts) if starts else None
    by_int = host[rec["pid_is_str"][host] == 0]
    c["pid"] = int(rec["pid"][by_int[0]]) if len(by_int) else -1
    c["n"] = n
    return c


def _columns(mv: memoryview, ranges: "List[tuple]", threads: int = 1) -> "tuple[dict, List[str]]":
    """_column_parts joined into one part."""
    parts, names = _column_parts(mv, ranges, threads)
    return _concat(parts), names


def _column_parts(mv: memoryview, ranges: "List[tuple]", threads: int = 1) -> "tuple[List[dict], List[str]]":
    """The columns of these chunks of mv, one part per chunk (event positions counted from the
    first chunk), and the names their ids refer to, in order of first appearance. Each chunk goes
    through the native scanner when it is built and takes the chunk, else through msgspec.
    With threads > 1 the scanner reads that many chunks at once (it runs without the GIL) while
    this thread turns finished ones into columns, in order."""
    names = _Interner()
    parts: List[dict] = []
    offset = 0
    scanner = native_scanner()
    pool = None
    if scanner is not None and threads > 1 and len(ranges) > 1:
        threads = min(threads, len(ranges))
        pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="tbpp-scan")
    try:
        ahead = collections.deque()
        todo = iter(ranges)

        def submit() -> None:
            nxt = next(todo, None)
            if nxt is not None:
                ahead.append(pool.submit(scanner, mv, *nxt))

        if pool is not None:
            for _ in range(threads + 1):  # bounded: a chunk of records per thread, one more ready
                submit()
        for pos, stop in ranges:
            c = None
            if pool is not None:
                got = ahead.popleft().result()
                submit()
                c = _native_chunk_columns(got, mv, names, offset)
            elif scanner is not None:
                c = _native_chunk_columns(scanner(mv, pos, stop), mv, names, offset)
            if c is None:
                c = _chunk_columns(_decode_chunk(mv, pos, stop, len(ranges) == 1), names, offset)
            parts.append(c)
            offset += c["n"]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return parts or [_chunk_columns([], names, 0)], names.names


_SCALARS = ("host_shapes", "origin", "abs_min", "pid", "n")


def _concat(parts: List[dict]) -> dict:
    """Consecutive parts' columns as one part (positions must already be in one numbering)."""
    if len(parts) == 1:
        return parts[0]
    host_rows = [len(p["host_tid"]) for p in parts]
    out = {}
    for k in [k for k in parts[0] if k not in _SCALARS]:
        out[k] = np.concatenate([p[k] for p in parts])
        for p in parts:  # each part's copy goes once joined: one column at a time is held twice
            del p[k]
    host_shapes: Dict[int, tuple] = {}
    host_base = 0
    for p, rows in zip(parts, host_rows):
        for row, v in p["host_shapes"].items():
            host_shapes[host_base + row] = v
        host_base += rows
    out["host_shapes"] = host_shapes
    origins = [p["origin"] for p in parts if p["origin"] is not None]
    out["origin"] = max(origins) if origins else None
    abs_mins = [p["abs_min"] for p in parts if p["abs_min"] is not None]
    out["abs_min"] = min(abs_mins) if abs_mins else None
    out["pid"] = next((p["pid"] for p in parts if p["pid"] >= 0), -1)
    out["n"] = sum(p["n"] for p in parts)
    return out


def _assemble(trace: Trace, part: dict, names: List[str], repaired: int) -> EventTables:
    origin = part["origin"] if part["origin"] is not None else (part["abs_min"] or 0)
    cols = {k: v for k, v in part.items() if k not in _SCALARS}
    for table in ("host", "rt", "dev"):
        absolute = cols.pop(f"{table}_abs")
        if absolute.any():
            cols[f"{table}_start"][absolute] -= origin
            cols[f"{table}_end"][absolute] -= origin
    cols["mem_ts_ns"] -= origin
    host_pos, mem_pos = cols.pop("host_pos"), cols.pop("mem_pos")
    cols["mem_owner"] = _memory_owners(cols["host_tid"], host_pos, cols["mem_tid"], mem_pos)

    span = trace.span_index if trace.span_index is not None else trace.span_indx
    return EventTables(
        names=names, host_shapes=part["host_shapes"], **cols,
        schema_version=trace.schemaVersion or "",
        span="" if span is None else str(span),
        extra_info=dict(trace.ExtraInfo),
        devices=list(trace.deviceProperties),
        thread_names={int(k): v for k, v in trace.ExtraInfo.items() if k.isdigit()},
        origin_unix_ns=origin,
        pid=part["pid"],
        repaired_lines=repaired,
    )
