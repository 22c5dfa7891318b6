"""Paddle Chrome-tracing JSON → columnar event tables.

One typed msgspec decode of the whole file, then one pass over the events that
sorts them into four tables (host, runtime, device, memory) of numpy columns
with interned names. The reader knows the format, nothing of the analyses.

Format facts (../docs/paddle-trace-format.md): host times come from
``args.start_time`` (µs, relative, float32 printed with 3 decimals) and ``dur``;
device and runtime events the same; memory events only carry an absolute ``ts``
in µs and belong to the nearest preceding host event of their thread in file
order. Paddle writes names without JSON escaping, so a name holding ``"`` or
``\\`` makes the file invalid JSON; such lines are repaired.
"""
from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

import msgspec
import numpy as np

from . import event_types as et
from .errors import TraceError


class Args(msgspec.Struct):
    start_time: Optional[str] = None
    end_time: Optional[str] = None
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


class Event(msgspec.Struct):
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
    traceEvents: List[Event]
    schemaVersion: Optional[str] = None
    span_index: Optional[Union[str, int]] = None
    span_indx: Optional[Union[str, int]] = None
    displayTimeUnit: Optional[str] = None
    deviceProperties: List[DeviceProp] = []
    ExtraInfo: Dict[str, str] = {}


_DECODER = msgspec.json.Decoder(Trace)


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


def decode(data: bytes, file_name: str) -> "tuple[Trace, int]":
    """Typed decode with Paddle's quirks tolerated. Raises TraceError with a one-line reason."""
    data = _decompress(data, file_name)
    if not data.strip():
        raise TraceError(file_name, "empty file")
    repaired = 0
    try:
        trace = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(file_name, f"not a Paddle trace: {exc}") from None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise TraceError(file_name, "truncated JSON: the file ends early (cut off or still being written)") from None
        fixed, repaired = _repair(data)
        try:
            trace = _DECODER.decode(fixed)
        except msgspec.ValidationError as exc2:
            raise TraceError(file_name, f"not a Paddle trace: {exc2}") from None
        except msgspec.DecodeError:
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


def read_trace(data: bytes, file_name: str) -> EventTables:
    """Decode a whole trace file's bytes into EventTables."""
    trace, repaired = decode(data, file_name)
    try:
        return _tabulate(trace, repaired)
    except (TypeError, ValueError, AttributeError) as exc:
        raise TraceError(file_name, f"not a Paddle trace: malformed event ({exc})") from None


_NO_ARGS = Args()


class _Interner:
    def __init__(self):
        self.ids: Dict[str, int] = {}
        self.names: List[str] = []

    def many(self, strings: List[str]) -> np.ndarray:
        ids = self.ids
        get = ids.get
        out = []
        append = out.append
        for s in strings:
            i = get(s)
            if i is None:
                i = ids[s] = len(ids)
                self.names.append(s)
            append(i)
        return np.array(out, dtype=np.int32)


def _thread_ids(tids: list) -> np.ndarray:
    """'1234(Python)' / '1234(C++)' / 1234 → 1234."""
    cache = {t: (t if isinstance(t, int) else int(str(t).split("(", 1)[0])) for t in set(tids)}
    return np.array([cache[t] for t in tids], dtype=np.int64)


def _strip_duration(name: str) -> str:
    """'matmul dygraph[12.345 us]' → 'matmul dygraph' (only the last bracket group goes)."""
    if name.endswith("]"):
        i = name.rfind("[")
        if i >= 0:
            return name[:i]
    return name


def _times(events: list) -> "tuple[np.ndarray, np.ndarray, bool]":
    """Start and end in ns from args.start_time (relative µs text) and dur (µs).

    Returns (start, end, relative); when an event lacks args.start_time (very old files) the
    whole table uses the absolute ``ts`` instead, and relative is False.
    """
    rel = [(e.args or _NO_ARGS).start_time for e in events]
    dur = np.rint(np.array([e.dur for e in events], dtype=np.float64) * 1000).astype(np.int64)
    if None not in rel:
        start = np.rint(np.array([float(r.split(" ", 1)[0]) for r in rel], dtype=np.float64) * 1000)
        relative = True
    else:
        start = np.rint(np.array([e.ts for e in events], dtype=np.float64) * 1000)
        relative = False
    start = start.astype(np.int64)
    return start, start + dur, relative


def _origin(tables) -> int:
    """Absolute ns of the relative origin: ts·1000 − start over a few events (ts is truncated µs)."""
    candidates = []
    absolute = []
    for events, start, relative in tables:
        if relative:
            k = min(len(events), 64)
            candidates.extend(round(events[i].ts * 1000) - int(start[i]) for i in range(k))
        elif len(start):
            absolute.append(int(start.min()))
    if candidates:
        return min(candidates)
    return min(absolute) if absolute else 0


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


def _tabulate(trace: Trace, repaired: int) -> EventTables:
    events = trace.traceEvents
    host_ev: list = []
    rt_ev: list = []
    dev_ev: list = []
    mem_ev: list = []
    host_pos: list = []   # file positions, to find each memory event's owner
    mem_pos: list = []
    device_cats = et.DEVICE_CATS
    runtime_cats = et.RUNTIME_CATS
    mem_cats = et.MEM_TYPE_ID
    for i, ev in enumerate(events):
        ph = ev.ph
        if ph == "X":
            cat = ev.cat
            if cat in device_cats:
                dev_ev.append(ev)
            elif cat in runtime_cats:
                rt_ev.append(ev)
            else:
                host_ev.append(ev)
                host_pos.append(i)
        elif ph == "i" and ev.cat in mem_cats:
            mem_ev.append(ev)
            mem_pos.append(i)

    names = _Interner()
    i64 = np.int64

    # host
    host_tid = _thread_ids([e.tid for e in host_ev])
    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]
    host_type = np.array([type_id.get(e.cat, user_defined) for e in host_ev], dtype=np.int16)
    host_name = names.many([_strip_duration(e.name) for e in host_ev])
    host_start, host_end, host_rel = _times(host_ev)
    host_shapes: Dict[int, tuple] = {}
    for row, e in enumerate(host_ev):
        a = e.args
        if a is not None and len(a.input_shapes) > 2:
            shapes = bytes(a.input_shapes).strip()
            if shapes not in (b"{}", b"null"):
                dtypes = bytes(a.input_dtypes) or b"{}"
                host_shapes[row] = (shapes.decode("utf-8", "replace"), dtypes.decode("utf-8", "replace"))

    # runtime
    rt_tid = _thread_ids([e.tid for e in rt_ev])
    rt_type = np.array([runtime_cats[e.cat] for e in rt_ev], dtype=np.int16)
    rt_name = names.many([_strip_duration(e.name) for e in rt_ev])
    rt_start, rt_end, rt_rel = _times(rt_ev)
    rt_args = [e.args or _NO_ARGS for e in rt_ev]
    rt_corr = np.array([-1 if a.correlation_id is None else a.correlation_id for a in rt_args], dtype=i64)

    # device
    dev_args = [e.args or _NO_ARGS for e in dev_ev]
    dev_start, dev_end, dev_rel = _times(dev_ev)

    def triple(values):
        return np.array([tuple((v or (0, 0, 0))[:3]) + (0,) * (3 - len((v or (0, 0, 0))[:3])) for v in values],
                        dtype=np.int32).reshape(-1, 3)

    # memory
    mem_args = [e.args or _NO_ARGS for e in mem_ev]
    mem_tid = _thread_ids([e.tid for e in mem_ev])

    timed = ((host_ev, host_start, host_rel), (rt_ev, rt_start, rt_rel), (dev_ev, dev_start, dev_rel))
    origin = _origin(timed)
    if not (host_rel and rt_rel and dev_rel):
        for (_, start, relative), end in zip(timed, (host_end, rt_end, dev_end)):
            if not relative:
                start -= origin
                end -= origin

    mem_owner = _memory_owners(host_tid, np.array(host_pos, dtype=i64), mem_tid, np.array(mem_pos, dtype=i64))

    thread_names = {int(k): v for k, v in trace.ExtraInfo.items() if k.isdigit()}
    pid = next((e.pid for e in host_ev if isinstance(e.pid, int)), -1)
    span = trace.span_index if trace.span_index is not None else trace.span_indx
    return EventTables(
        names=names.names,
        host_tid=host_tid, host_type=host_type, host_name=host_name, host_start=host_start, host_end=host_end,
        host_shapes=host_shapes,
        rt_tid=rt_tid, rt_type=rt_type, rt_name=rt_name, rt_start=rt_start, rt_end=rt_end, rt_corr=rt_corr,
        dev_id=np.array([int(e.pid) for e in dev_ev], dtype=i64),
        dev_stream=np.array([int(e.tid) for e in dev_ev], dtype=i64),
        dev_type=np.array([device_cats[e.cat] for e in dev_ev], dtype=np.int16),
        dev_name=names.many([_strip_duration(e.name) for e in dev_ev]),
        dev_start=dev_start, dev_end=dev_end,
        dev_corr=np.array([-1 if a.correlation_id is None else a.correlation_id for a in dev_args], dtype=i64),
        dev_grid=triple([a.grid for a in dev_args]),
        dev_block=triple([a.block for a in dev_args]),
        dev_registers=np.array([a.registers or 0 for a in dev_args], dtype=np.int32),
        dev_shared_memory=np.array([a.shared_memory or 0 for a in dev_args], dtype=i64),
        dev_blocks_per_sm=np.array([a.blocks_per_sm or 0.0 for a in dev_args], dtype=np.float64),
        dev_warps_per_sm=np.array([a.warps_per_sm or 0.0 for a in dev_args], dtype=np.float64),
        dev_occupancy=np.array([a.occupancy or 0.0 for a in dev_args], dtype=np.float64),
        dev_bytes=np.array([a.bytes or 0 for a in dev_args], dtype=i64),
        mem_tid=mem_tid,
        mem_type=np.array([mem_cats[e.cat] for e in mem_ev], dtype=np.int8),
        mem_place=names.many([a.place or "" for a in mem_args]),
        mem_ts_ns=np.rint(np.array([e.ts for e in mem_ev], dtype=np.float64) * 1000).astype(i64) - origin,
        mem_increase=np.array([a.increase_bytes or 0 for a in mem_args], dtype=i64),
        mem_current_allocated=np.array([a.current_allocated or 0 for a in mem_args], dtype=i64),
        mem_current_reserved=np.array([a.current_reserved or 0 for a in mem_args], dtype=i64),
        mem_peak_allocated=np.array([a.peak_allocated or 0 for a in mem_args], dtype=i64),
        mem_peak_reserved=np.array([a.peak_reserved or 0 for a in mem_args], dtype=i64),
        mem_owner=mem_owner,
        schema_version=trace.schemaVersion or "",
        span="" if span is None else str(span),
        extra_info=dict(trace.ExtraInfo),
        devices=list(trace.deviceProperties),
        thread_names=thread_names,
        origin_unix_ns=origin,
        pid=pid,
        repaired_lines=repaired,
    )
