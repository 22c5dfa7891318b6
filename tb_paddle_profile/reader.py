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


def _rel_us_to_ns(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    return round(float(text.split(" ", 1)[0]) * 1000)


def read_trace(data: bytes, file_name: str) -> EventTables:
    """Decode a whole trace file's bytes into EventTables."""
    trace, repaired = decode(data, file_name)
    try:
        return _tabulate(trace, repaired)
    except (TypeError, ValueError, AttributeError) as exc:
        raise TraceError(file_name, f"not a Paddle trace: malformed event ({exc})") from None


def _tabulate(trace: Trace, repaired: int) -> EventTables:
    names: List[str] = []
    name_ids: Dict[str, int] = {}

    def intern(s: str) -> int:
        i = name_ids.get(s)
        if i is None:
            i = name_ids[s] = len(names)
            names.append(s)
        return i

    tid_cache: Dict[object, int] = {}

    def thread_of(tid) -> int:
        t = tid_cache.get(tid)
        if t is None:
            t = tid if isinstance(tid, int) else int(str(tid).split("(", 1)[0])
            tid_cache[tid] = t
        return t

    def strip(name: str) -> str:
        if name.endswith("]"):
            i = name.rfind("[")
            if i >= 0:
                return name[:i]
        return name

    host = ([], [], [], [], [])          # tid, type, name, start, end
    host_shapes: Dict[int, tuple] = {}
    rt = ([], [], [], [], [], [])        # tid, type, name, start, end, corr
    dev = ([], [], [], [], [], [], [])   # id, stream, type, name, start, end, corr
    dev_cfg = ([], [], [], [], [], [], [], [])  # grid, block, regs, smem, bps, wps, occ, bytes
    mem = ([], [], [], [], [], [], [], [], [], [])
    last_host: Dict[int, int] = {}
    thread_names: Dict[int, str] = {}
    origin_candidates = []
    missing_rel = []  # (table, row, ts) where args.start_time is missing
    pid = -1
    type_id = et.TYPE_ID
    device_cats = et.DEVICE_CATS
    runtime_cats = et.RUNTIME_CATS
    mem_type_id = et.MEM_TYPE_ID

    for ev in trace.traceEvents:
        ph = ev.ph
        if ph == "X":
            cat = ev.cat
            args = ev.args
            start = _rel_us_to_ns(args.start_time) if args is not None else None
            dur = round(ev.dur * 1000)
            if start is None:  # no relative time: use the absolute one, rebased below
                start = round(ev.ts * 1000)
                missing_rel.append((dev if cat in device_cats else rt if cat in runtime_cats else host,
                                    len((dev if cat in device_cats else rt if cat in runtime_cats else host)[0])))
            elif len(origin_candidates) < 64:
                origin_candidates.append(round(ev.ts * 1000) - start)
            name = intern(strip(ev.name))
            dtype = device_cats.get(cat)
            if dtype is not None:
                dev[0].append(int(ev.pid))
                dev[1].append(int(ev.tid))
                dev[2].append(dtype)
                dev[3].append(name)
                dev[4].append(start)
                dev[5].append(start + dur)
                corr = args.correlation_id if args is not None else None
                dev[6].append(-1 if corr is None else corr)
                if args is not None:
                    g = args.grid or (0, 0, 0)
                    b = args.block or (0, 0, 0)
                    dev_cfg[0].append(tuple(g[:3]) + (0,) * (3 - len(g[:3])))
                    dev_cfg[1].append(tuple(b[:3]) + (0,) * (3 - len(b[:3])))
                    dev_cfg[2].append(args.registers or 0)
                    dev_cfg[3].append(args.shared_memory or 0)
                    dev_cfg[4].append(args.blocks_per_sm or 0.0)
                    dev_cfg[5].append(args.warps_per_sm or 0.0)
                    dev_cfg[6].append(args.occupancy or 0.0)
                    dev_cfg[7].append(args.bytes or 0)
                else:
                    for col, v in zip(dev_cfg, ((0, 0, 0), (0, 0, 0), 0, 0, 0.0, 0.0, 0.0, 0)):
                        col.append(v)
                continue
            tid = thread_of(ev.tid)
            rtype = runtime_cats.get(cat)
            if rtype is not None:
                rt[0].append(tid)
                rt[1].append(rtype)
                rt[2].append(name)
                rt[3].append(start)
                rt[4].append(start + dur)
                corr = args.correlation_id if args is not None else None
                rt[5].append(-1 if corr is None else corr)
                continue
            htype = type_id.get(cat)
            if htype is None:
                htype = type_id["UserDefined"]
            row = len(host[0])
            host[0].append(tid)
            host[1].append(htype)
            host[2].append(name)
            host[3].append(start)
            host[4].append(start + dur)
            if pid < 0 and isinstance(ev.pid, int):
                pid = ev.pid
            last_host[tid] = row
            if args is not None and len(args.input_shapes) > 2:
                shapes = bytes(args.input_shapes)
                if shapes.strip() not in (b"{}", b"null", b""):
                    dtypes = bytes(args.input_dtypes) or b"{}"
                    host_shapes[row] = (shapes.decode("utf-8", "replace"), dtypes.decode("utf-8", "replace"))
        elif ph == "i":
            mtype = mem_type_id.get(ev.cat)
            if mtype is None:
                continue
            tid = thread_of(ev.tid)
            a = ev.args or Args()
            mem[0].append(tid)
            mem[1].append(mtype)
            mem[2].append(intern(a.place or ""))
            mem[3].append(round(ev.ts * 1000))
            mem[4].append(a.increase_bytes or 0)
            mem[5].append(a.current_allocated or 0)
            mem[6].append(a.current_reserved or 0)
            mem[7].append(a.peak_allocated or 0)
            mem[8].append(a.peak_reserved or 0)
            mem[9].append(last_host.get(tid, -1))
        elif ph == "M" and ev.name == "thread_name" and ev.args is not None:
            pass  # thread names come from ExtraInfo, which holds them unsuffixed

    if origin_candidates:
        origin = min(origin_candidates)
    else:
        starts = [tbl[3 if tbl is not dev else 4][row] for tbl, row in missing_rel]
        origin = min(starts) if starts else 0
    for tbl, row in missing_rel:
        s_col, e_col = (4, 5) if tbl is dev else (3, 4)
        tbl[s_col][row] -= origin
        tbl[e_col][row] -= origin
    for key, value in trace.ExtraInfo.items():
        if key.isdigit():
            thread_names[int(key)] = value

    i64 = np.int64
    span = trace.span_index if trace.span_index is not None else trace.span_indx
    tables = EventTables(
        names=names,
        host_tid=np.array(host[0], dtype=i64), host_type=np.array(host[1], dtype=np.int16),
        host_name=np.array(host[2], dtype=np.int32), host_start=np.array(host[3], dtype=i64),
        host_end=np.array(host[4], dtype=i64), host_shapes=host_shapes,
        rt_tid=np.array(rt[0], dtype=i64), rt_type=np.array(rt[1], dtype=np.int16),
        rt_name=np.array(rt[2], dtype=np.int32), rt_start=np.array(rt[3], dtype=i64),
        rt_end=np.array(rt[4], dtype=i64), rt_corr=np.array(rt[5], dtype=i64),
        dev_id=np.array(dev[0], dtype=i64), dev_stream=np.array(dev[1], dtype=i64),
        dev_type=np.array(dev[2], dtype=np.int16), dev_name=np.array(dev[3], dtype=np.int32),
        dev_start=np.array(dev[4], dtype=i64), dev_end=np.array(dev[5], dtype=i64),
        dev_corr=np.array(dev[6], dtype=i64),
        dev_grid=np.array(dev_cfg[0], dtype=np.int32).reshape(-1, 3),
        dev_block=np.array(dev_cfg[1], dtype=np.int32).reshape(-1, 3),
        dev_registers=np.array(dev_cfg[2], dtype=np.int32),
        dev_shared_memory=np.array(dev_cfg[3], dtype=i64),
        dev_blocks_per_sm=np.array(dev_cfg[4], dtype=np.float64),
        dev_warps_per_sm=np.array(dev_cfg[5], dtype=np.float64),
        dev_occupancy=np.array(dev_cfg[6], dtype=np.float64),
        dev_bytes=np.array(dev_cfg[7], dtype=i64),
        mem_tid=np.array(mem[0], dtype=i64), mem_type=np.array(mem[1], dtype=np.int8),
        mem_place=np.array(mem[2], dtype=np.int32),
        mem_ts_ns=np.array(mem[3], dtype=i64) - origin,
        mem_increase=np.array(mem[4], dtype=i64),
        mem_current_allocated=np.array(mem[5], dtype=i64),
        mem_current_reserved=np.array(mem[6], dtype=i64),
        mem_peak_allocated=np.array(mem[7], dtype=i64),
        mem_peak_reserved=np.array(mem[8], dtype=i64),
        mem_owner=np.array(mem[9], dtype=i64),
        schema_version=trace.schemaVersion or "",
        span="" if span is None else str(span),
        extra_info=dict(trace.ExtraInfo),
        devices=list(trace.deviceProperties),
        thread_names=thread_names,
        origin_unix_ns=origin,
        pid=pid,
        repaired_lines=repaired,
    )
    return tables
