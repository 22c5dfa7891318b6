"""Paddle Chrome-tracing JSON → columnar event tables.

The events array is read in chunks of a few MB, each by the native scanner
(_scan.c: JSON → fixed records) or, where it declines, by a typed msgspec decode,
and sorted into four tables (host, runtime, device, memory) of numpy columns with
interned names. The reader knows the format, nothing of the analyses.

Format facts (docs/trace-format.md): host times come from
``args.start_time`` (µs, relative, float32 printed with 3 decimals) and ``dur``;
device and runtime events the same; memory events only carry an absolute ``ts``
in µs and belong to the nearest preceding host event of their thread in file
order. Paddle writes names without JSON escaping, so a name holding ``"`` or
``\\`` makes the file invalid JSON; such lines are repaired.

Hostile input is refused with a one-line TraceError: a .gz is inflated in bounded steps, once
(a gzip inside a gzip in the same pass, a third layer refused), and refused past MAX_GZIP_RATIO x
its size (beyond 64 MB) or past $TB_PADDLE_PROFILE_MAX_INFLATE_GB; nesting beyond the decoder's
limit, a traceEvents that is not an array, a negative duration, a time beyond ±4.6e15 µs and
integers that do not fit their columns are refused too. A UTF-8 byte order mark is read as blanks.
Byte offsets in messages count the file's (decompressed) bytes. Anything else raised while reading
is a bug of ours and is not turned into a TraceError.
"""
from __future__ import annotations

import bisect
import collections
import concurrent.futures
import gc
import itertools
import math
import multiprocessing
import os
import re
import threading
import zlib
from dataclasses import dataclass, field
from typing import Annotated, Dict, List, Optional, Union

import msgspec
import numpy as np

from tb_paddle_profile.core import settings
from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.core.errors import TraceError


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
    # a decimal string in Paddle's files; kept raw so that no other form rejects the file (_addr)
    addr: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
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


# The ranges of the Summary's fields that these values go into (TraceMeta.devices): a value beyond
# them is not a device property, and the one-line error says which.
_I32 = Annotated[int, msgspec.Meta(ge=-(1 << 31), le=(1 << 31) - 1)]
_I64 = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]
_U64 = Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]  # (msgspec bounds stop at int64)


class DeviceProp(msgspec.Struct, rename="camel"):
    id: _I64 = 0
    name: str = ""
    total_global_mem: _U64 = 0
    compute_major: _I32 = 0
    compute_minor: _I32 = 0
    max_threads_per_block: _I32 = 0
    max_threads_per_multiprocessor: _I32 = 0
    regs_per_block: _I32 = 0
    regs_per_multiprocessor: _I32 = 0
    warp_size: _I32 = 0
    shared_mem_per_block: _U64 = 0
    shared_mem_per_multiprocessor: _U64 = 0
    sm_count: _I32 = 0
    shared_mem_per_block_optin: _U64 = 0


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
class HostTable:
    """Host events: one row per complete ("X") event that is neither runtime nor device
    (operators, Python/C++ calls, user ranges, ProfileStep...), in file order."""

    tid: np.ndarray       # thread id (int64; "1234(Python)" read as 1234)
    type: np.ndarray      # event type id (event_types.TYPE_ID; unknown categories are UserDefined)
    name: np.ndarray      # index into EventTables.names (the "[12.3 us]" suffix removed)
    start: np.ndarray     # ns (int64)
    end: np.ndarray       # ns (int64), >= start
    shapes: Dict[int, tuple]  # row → (input_shapes json, input_dtypes json), only where non-empty

    def __len__(self) -> int:
        return len(self.tid)


@dataclass
class RuntimeTable:
    """CUDA runtime / driver API calls (cudaLaunchKernel, cudaMemcpyAsync...), in file order."""

    tid: np.ndarray       # thread id of the caller
    type: np.ndarray      # event_types.RUNTIME_CATS id
    name: np.ndarray      # index into EventTables.names
    start: np.ndarray     # ns
    end: np.ndarray       # ns
    corr: np.ndarray      # correlation id (-1: none); a device event with the same id is its launch

    def __len__(self) -> int:
        return len(self.tid)


@dataclass
class DeviceTable:
    """Device activity (kernels, memcpy, memset), in file order, with the kernels' launch
    parameters (0 where the event does not carry them)."""

    id: np.ndarray             # device id (the event's pid)
    stream: np.ndarray         # stream id (the event's tid)
    type: np.ndarray           # event_types.DEVICE_CATS id (KERNEL, MEMCPY, MEMSET)
    name: np.ndarray           # index into EventTables.names
    start: np.ndarray          # ns
    end: np.ndarray            # ns
    corr: np.ndarray           # correlation id (-1: none)
    grid: np.ndarray           # (n, 3) int32
    block: np.ndarray          # (n, 3) int32
    registers: np.ndarray      # registers per thread
    shared_memory: np.ndarray  # bytes
    blocks_per_sm: np.ndarray
    warps_per_sm: np.ndarray
    occupancy: np.ndarray      # theoretical achieved occupancy, %
    bytes: np.ndarray          # memcpy / memset bytes

    def __len__(self) -> int:
        return len(self.id)


@dataclass
class MemoryTable:
    """Memory events ("i" events: Allocate, Free, ReservedAllocate...), in file order."""

    tid: np.ndarray                # thread id
    type: np.ndarray               # event_types.MEM_TYPE_ID id
    place: np.ndarray              # index into EventTables.names ("Place(gpu:0)"...)
    ts_ns: np.ndarray              # relative ns (from the absolute µs "ts")
    increase: np.ndarray           # bytes (negative for a free)
    current_allocated: np.ndarray  # bytes after the event
    current_reserved: np.ndarray
    peak_allocated: np.ndarray
    peak_reserved: np.ndarray
    addr: np.ndarray               # the block's address (args.addr, a decimal string), -1 when unreadable
    owner: np.ndarray              # host row of the nearest preceding host event of the thread, or -1

    def __len__(self) -> int:
        return len(self.tid)


# The column prefixes of the reader's chunk parts (private dicts) → the tables they make.
_TABLES = (("host", "host", HostTable), ("rt", "runtime", RuntimeTable), ("dev", "device", DeviceTable),
           ("mem", "memory", MemoryTable))


@dataclass
class EventTables:
    """All events of one trace as four typed tables of numpy columns plus the file's metadata.
    Times are ns relative to Paddle's origin; names are ids into `names`."""

    names: List[str]
    host: HostTable
    runtime: RuntimeTable
    device: DeviceTable
    memory: MemoryTable
    # metadata
    schema_version: str = ""
    span: str = ""
    extra_info: Dict[str, str] = field(default_factory=dict)
    devices: List[DeviceProp] = field(default_factory=list)
    thread_names: Dict[int, str] = field(default_factory=dict)
    origin_unix_ns: int = 0
    pid: int = -1
    repaired_lines: int = 0

    def launches(self) -> np.ndarray:
        """Device row → the runtime row that launched it (the first runtime event with its
        correlation id), -1 when none: the one join of the device and runtime tables."""
        rt_corr, dev_corr = self.runtime.corr, self.device.corr
        n_rt = len(rt_corr)
        out = np.full(len(dev_corr), -1, dtype=np.int64)
        if n_rt and len(out):
            rt_order = np.argsort(rt_corr, kind="stable")
            sorted_corr = rt_corr[rt_order]
            pos = np.searchsorted(sorted_corr, dev_corr)
            pos_clipped = np.minimum(pos, n_rt - 1)
            hit = (pos < n_rt) & (sorted_corr[pos_clipped] == dev_corr) & (dev_corr >= 0)
            out[hit] = rt_order[pos_clipped[hit]]
        return out


_NAME_LINE = re.compile(rb'^(\s*"name": ")(.*)(", "(?:pid|id)":.*)$')


def _repair(data: bytes) -> "tuple[bytes, int, list]":
    """Re-escape names that Paddle wrote without JSON escaping; escape raw tabs.

    Returns the repaired copy, how many lines changed, and where: (start in the copy, start in
    `data`, length in `data`) of each changed line, so that an offset in the copy can be told as
    an offset in the file (_Where)."""
    out = []
    repaired = 0
    changed = []
    here = there = 0  # line starts in data and in the copy
    for line in data.split(b"\n"):
        fixed = line
        m = _NAME_LINE.match(line)
        if m:
            raw = m.group(2)
            escaped = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\t", b"\\t")
            if escaped != raw:
                fixed = m.group(1) + escaped + m.group(3)
        elif b"\t" in line and b'"' in line:
            fixed = line.replace(b"\t", b"\\t")
        if fixed is not line:
            repaired += 1
            changed.append((there, here, len(line)))
        out.append(fixed)
        here += len(line) + 1
        there += len(fixed) + 1
    return b"\n".join(out), repaired, changed


class _Where:
    """Offsets in the bytes being decoded (the file's bytes, or their repaired copy) → offsets
    in the file's (decompressed) bytes."""

    def __init__(self, data, changed: Optional[list] = None):
        self.data = data
        self.changed = changed or []

    def file_offset(self, off: int) -> int:
        if not self.changed:
            return off
        i = bisect.bisect_right([c[0] for c in self.changed], off) - 1
        if i < 0:
            return off
        there, here, length = self.changed[i]
        line = bytes(self.data[here:here + length])
        col = off - there
        m = _NAME_LINE.match(line)
        lo, hi, special = (m.start(2), m.end(2), b'\\"\t') if m else (0, length, b"\t")
        width = 0
        for j in range(length):  # each byte of the original line, and how wide the repair made it
            w = 2 if lo <= j < hi and line[j] in special else 1
            if width + w > col:
                return here + j
            width += w
        return here + length + (col - width)  # on the newline or after: the line's growth undone


# ---------------------------------------------------------------- gzip

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
_INFLATE_STEP = 1 << 20   # output of one decompress call
_INFLATE_PIECE = 1 << 16  # input of one decompress call (unconsumed input is copied per call)
_GB = 10 ** 9


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
        return limit, (f"inflates beyond {limit / _GB:.3g} GB (the bound for a .gz trace; "
                       f"{MAX_INFLATE_ENV} sets it)")
    return by_ratio, (f"inflates more than {MAX_GZIP_RATIO} x its size (a gzip bomb? real traces compress "
                      f"10-15 x; gunzip it to read it)")


class _TooBig(Exception):
    pass


def _pieces(chunks, size: int = _INFLATE_PIECE):
    """The bytes of `chunks` in slices of at most `size` (zlib copies a call's unconsumed input)."""
    for chunk in chunks:
        mv = memoryview(chunk)
        for i in range(0, len(mv), size):
            yield mv[i:i + size]


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
            raise TraceError(file_name, f"compressed more than {MAX_GZIP_LAYERS} times (gzip inside gzip "
                                        f"inside gzip): refused")
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
    lead = _JSON_START.match(out).end()
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


def _prepare(data, file_name: str, max_inflate: Optional[int] = None):
    """The file's JSON bytes: a .gz inflated (bounded, once, every layer), a UTF-8 byte order mark
    blanked to spaces (so that byte offsets stay those of the file)."""
    if data[:2] == GZIP_MAGIC:
        data = _inflate(data, file_name, max_inflate)
    if data[:3] == _BOM:
        if isinstance(data, bytearray):
            data[:3] = b"   "
        else:
            data = b"".join((b"   ", memoryview(data)[3:]))
    return data


# ---------------------------------------------------------------- decoding, errors located

_BLANK = re.compile(rb"\s*\Z")
_LEAD = re.compile(rb"\s*(.)", re.S)
_BYTE = re.compile(r"\(byte (\d+)\)")
_EVENT_PATH = re.compile(r"`\$\[(\d+)\]")
_EVENTS_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
NESTED_TOO_DEEP = ("JSON nested too deeply (objects or arrays inside each other beyond the decoder's limit; "
                   "a Paddle trace nests fewer than 10)")


class _BadJSON(Exception):
    """A msgspec error decoding part of the bytes. `shift`: where that part's offset 0 lies in the
    view decoded (the events' bytes or the whole buffer); `first_event`: the index in traceEvents
    of the part's first event (msgspec's `$[i]` paths are counted from it)."""

    def __init__(self, exc: Exception, shift: int = 0, first_event: Optional[int] = None):
        super().__init__(str(exc))
        self.exc = exc
        self.shift = shift
        self.first_event = first_event
        self.base = 0  # where the view decoded starts in the buffer (set by the reader)

    @property
    def truncated(self) -> bool:
        return "truncated" in str(self.exc)

    def message(self, where: _Where) -> str:
        text = _BYTE.sub(lambda m: f"(byte {where.file_offset(self.base + self.shift + int(m.group(1)))})",
                         str(self.exc))
        if self.first_event is not None:
            text = _EVENT_PATH.sub(lambda m: f"`$.traceEvents[{self.first_event + int(m.group(1))}]", text)
        return text


class _Malformed(Exception):
    """An event value that decoded but cannot be one Paddle writes (a time out of range, a thread
    id that is not a number...): read_trace reports it as the file's one-line TraceError."""


def _offset_in(buf, part) -> int:
    """Where `part` (a zero-copy view into `buf`: a memoryview slice or a msgspec.Raw) starts in buf."""
    return int(np.frombuffer(part, np.uint8).ctypes.data - np.frombuffer(buf, np.uint8).ctypes.data)


def _split_head(data):
    """Fast path for Paddle's own layout: cut the traceEvents array out, so that the small rest
    ("head") decodes alone and the events are only decoded once, in chunks. None when the file
    does not look like that (truncated, other key order...): the caller then decodes it whole."""
    key = data.find(b'"traceEvents"')
    info = data.rfind(b'"ExtraInfo"')
    if key < 0 or info < key:
        return None
    m = _EVENTS_KEY.match(data, key)  # the value must be an array, not a string holding "["
    if m is None:
        return None
    open_ = m.end() - 1
    close = data.rfind(b"]", open_, info)
    if close < 0:
        return None
    try:
        head = _DECODER.decode(b"".join((memoryview(data)[:open_], b"[]", memoryview(data)[close + 1:])))
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    head.traceEvents = memoryview(data)[open_:close + 1]
    return head


def _decode_whole(data, file_name: str) -> Trace:
    """The typed decode of the whole document (the events kept raw): TraceError for what no repair
    can change, _BadJSON for malformed JSON."""
    try:
        trace = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        raise TraceError(file_name, f"not a Paddle trace: {exc}") from None
    except msgspec.DecodeError as exc:
        if "truncated" in str(exc):
            raise TraceError(file_name, "truncated JSON: the file ends early (cut off or still being written)") \
                from None
        raise _BadJSON(exc) from None
    except RecursionError:
        raise TraceError(file_name, NESTED_TOO_DEEP) from None
    lead = bytes(memoryview(trace.traceEvents)[:1])
    if lead != b"[":
        kind = {b'"': "a string", b"{": "an object", b"t": "a boolean", b"f": "a boolean", b"n": "null"}.get(
            lead, "a number")
        raise TraceError(file_name, f"not a Paddle trace: traceEvents is {kind}, not an array "
                                    f"(byte {_offset_in(data, trace.traceEvents)})")
    return trace


def _check_paddle(trace: Trace, file_name: str) -> None:
    if not isinstance(trace.schemaVersion, str) or not (
        trace.span_index is not None or trace.span_indx is not None or trace.ExtraInfo
    ):
        raise TraceError(file_name, "not a Paddle trace: no Paddle schemaVersion/span_index/ExtraInfo")


def decode(data: bytes, file_name: str, repair: bool = False) -> "tuple[Trace, int]":
    """Typed decode of everything but the events (kept raw) with Paddle's quirks tolerated.
    Raises TraceError with a one-line reason."""
    data = _prepare(data, file_name)
    if _BLANK.match(data):
        raise TraceError(file_name, "empty file")
    buf, repaired, changed = data, 0, None
    if repair:
        buf, repaired, changed = _repair(data)
    try:
        trace = _split_head(buf)
        if trace is None:
            trace = _decode_whole(buf, file_name)
    except _BadJSON as exc:
        if not repair:
            return decode(data, file_name, repair=True)
        raise TraceError(file_name, _json_reason(data, exc, _Where(data, changed))) from None
    _check_paddle(trace, file_name)
    return trace, repaired


def _json_reason(data, exc: _BadJSON, where: _Where) -> str:
    if isinstance(exc.exc, msgspec.ValidationError):
        return f"not a Paddle trace: {exc.message(where)}"
    m = _LEAD.match(data)
    what = "not JSON" if m is None or m.group(1) not in (b"{", b"[") else "invalid JSON"
    return f"{what}: {exc.message(where)}"


_HEAD_SPAN = re.compile(rb'"span_ind(?:ex|x)"\s*:\s*"?([^",}\s]*)')


def peek_span(head: bytes) -> Optional[str]:
    """The span of a trace from its first kilobytes, without parsing the file."""
    for _ in range(MAX_GZIP_LAYERS):
        if head[:2] != GZIP_MAGIC:
            break
        try:
            head = zlib.decompressobj(31).decompress(head, 1 << 16)
        except zlib.error:
            return None
    m = _HEAD_SPAN.search(head)
    return m.group(1).decode("utf-8", "replace") if m else None


def _event_bounds(raw) -> "tuple[memoryview, int, int]":
    """The traceEvents array's bytes and the range between its brackets."""
    mv = memoryview(raw)
    if len(mv) < 2 or mv[0] != 0x5B or mv[-1] != 0x5D:  # "[" ... "]"
        raise AssertionError("traceEvents is not an array")  # checked where the head is decoded
    return mv, 1, len(mv) - 1


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


def _decode_chunk(mv: memoryview, pos: int, stop: int, single: bool, first_event: int = 0) -> List[Event]:
    """One chunk's events as structs. A cut that lands inside a string (a name holding "}, {")
    shows as a decode error, and the array is then decoded whole."""
    try:
        return _EVENTS.decode(b"".join((b"[", mv[pos:stop], b"]")))
    except RecursionError:
        raise _Nested() from None
    except msgspec.DecodeError as exc:
        if single:
            raise _BadJSON(exc, shift=pos - 1, first_event=first_event) from None  # "[" stands at pos - 1
        raise _ChunkSplitError() from None


def _decode_events(raw) -> List[Event]:
    """The whole traceEvents array decoded at once."""
    try:
        return _EVENTS.decode(raw)
    except RecursionError:
        raise _Nested() from None
    except msgspec.DecodeError as exc:
        raise _BadJSON(exc, first_event=0) from None


class _ChunkSplitError(Exception):
    pass


class _Nested(Exception):
    pass


def read_trace(data: Union[bytes, List[bytes]], file_name: str, workers: int = 1,
               max_inflate: Optional[int] = None) -> EventTables:
    """Decode a whole trace file's bytes into EventTables.

    `data` may be a one-item list holding the bytes: the reader then takes them out and drops
    them as soon as the events are read, before the columns are joined, so that a large file's
    bytes and its joined columns are not held at once (the caller keeps no other reference).

    With workers > 1, that many cores read the file's chunks at once: threads running the native
    scanner (which releases the GIL) when it is built, else (msgspec only) forked processes for
    large files (PARALLEL_MIN_BYTES of events per process), each taking a contiguous range of the
    events. The tables are the same as a serial read's; any failure falls back to the serial read.

    `max_inflate`: the bound of a .gz's inflated bytes (None: max_inflate_bytes(), for one parse).

    Bad input raises TraceError (one line naming the file and the reason, byte offsets counted in
    the file's decompressed bytes); any other exception is a bug of ours."""
    box = data if isinstance(data, list) else [data]
    del data
    # Millions of small acyclic objects: the cyclic GC would only rescan them over and over.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(box, file_name, workers=workers, max_inflate=max_inflate)
    except _Malformed as exc:
        raise TraceError(file_name, f"not a Paddle trace: malformed event ({exc})") from None
    except _Nested:
        raise TraceError(file_name, NESTED_TOO_DEEP) from None
    finally:
        if was_enabled:
            gc.enable()


def _read(box: list, file_name: str, workers: int = 1, max_inflate: Optional[int] = None) -> EventTables:
    box[0] = data = _prepare(box[0], file_name, max_inflate)  # inflated once; the compressed bytes go
    if _BLANK.match(data):
        raise TraceError(file_name, "empty file")
    buf, repaired, changed = data, 0, None
    while True:
        try:
            trace, parts, names = _read_buffer(buf, file_name, workers if not repaired else 1, repaired)
        except _BadJSON as exc:
            error = exc
        else:
            if isinstance(parts, EventTables):
                return parts
            # The events are read: the file's bytes (and the repaired copy) can go before the join.
            trace.traceEvents = None
            del buf, data
            box.clear()
            return _assemble(trace, _concat(parts), names, repaired)
        if repaired or error.truncated:
            break
        fixed, count, changed = _repair(data)  # names Paddle wrote without escaping
        if not count:
            break
        buf, repaired = fixed, count
    raise TraceError(file_name, _json_reason(data, error, _Where(data, changed)))


def _read_buffer(buf, file_name: str, workers: int, repaired: int):
    """(head, event columns in parts, names) of the trace in `buf`; _BadJSON when it is not JSON.
    First the fast cut of Paddle's layout, then (when the events do not decode in that cut, or it
    does not apply) the whole document's decode, which decides."""
    trace = _split_head(buf)
    if trace is not None:
        _check_paddle(trace, file_name)
        try:
            return (trace,) + _event_parts(trace, workers, repaired)
        except _BadJSON:
            pass  # the cut may be wrong (another key after the events...)
    trace = _decode_whole(buf, file_name)
    _check_paddle(trace, file_name)
    try:
        return (trace,) + _event_parts(trace, workers, repaired)
    except _BadJSON as exc:
        exc.base = _offset_in(buf, trace.traceEvents)
        raise


def _event_parts(trace: Trace, workers: int, repaired: int):
    """The events' columns in parts (or, read by forked processes, the whole EventTables)."""
    if workers > 1 and not repaired and native_scanner() is None:
        tables = _parallel_tabulate(trace, repaired, workers)
        if tables is not None:
            return tables, None
    mv, start, end = _event_bounds(trace.traceEvents)
    try:
        # with the native scanner, the cores read chunks as threads of this process
        return _column_parts(mv, _chunk_ranges(mv, start, end), threads=workers)
    except _ChunkSplitError:
        names = _Interner()
        parts = [_chunk_columns(_decode_events(trace.traceEvents), names, 0)]
        return parts, names.names


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


def _int_of(value, what: str) -> int:
    """int(value) for an id written as a number or a string of digits; _Malformed otherwise."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise _Malformed(f"{what} {_quoted(value)} is not a number") from None


def _quoted(value, most: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."


def _int_array(values, dtype, what: str) -> np.ndarray:
    """np.array(values, dtype) for integers read from the file; _Malformed for one that does not fit."""
    try:
        return np.array(values, dtype=dtype)
    except OverflowError as exc:
        raise _Malformed(f"{what}: {exc}") from None


def _addr(raw: bytes) -> int:
    """A memory event's args.addr: Paddle writes the address as a decimal string ("94064963207168");
    a bare integer is taken too. Addresses of 2^63 and more wrap into int64 (as a C uint64 read as
    int64 would); anything else (missing, null, another form) is -1, and never rejects the file."""
    text = raw.strip()
    if text[:1] == b'"' and text[-1:] == b'"' and len(text) >= 2:
        text = text[1:-1]
    if not text.isdigit() or len(text) > 20:
        return -1
    v = int(text)
    if v >= 1 << 64:
        return -1
    return v - (1 << 64) if v >= 1 << 63 else v


def _thread_ids(tids: list) -> np.ndarray:
    """'1234(Python)' / '1234(C++)' / 1234 → 1234."""
    cache = {t: _int_of(t if isinstance(t, int) else str(t).split("(", 1)[0], "thread id") for t in set(tids)}
    return _int_array([cache[t] for t in tids], np.int64, "thread id")


def _start_time(text: str) -> float:
    """'12.345 us' (or a bare number) → 12.345; _Malformed for anything else."""
    parts = text.split()
    try:
        if len(parts) == 1 or (len(parts) == 2 and parts[1] == "us"):
            return float(parts[0])
    except ValueError:
        pass
    raise _Malformed(f"start_time {_quoted(text)} is not a time in µs")


def _end(start: np.ndarray, dur: np.ndarray, names) -> np.ndarray:
    """start + dur (ns); _Malformed for a negative duration (the time algebra of the analyses
    needs end >= start: one such event would cancel others' time), or an end out of range."""
    if len(dur) and dur.min() < 0:
        i = int(np.argmin(dur))
        name = names(i)  # the name without its "[... us]" suffix, as the tables keep it
        raise _Malformed(f"a negative duration ({dur[i] / 1000:.3f} µs) for the event {_quoted(name)}")
    end = start + dur
    if len(end) and np.abs(end).max() >= _MAX_NS:
        raise _Malformed(f"a time out of range (beyond ±{_MAX_US:.3g} µs, or not a number)")
    return end


# |µs| below this: every time, start + duration and difference of two fits int64 ns (2**62 ns,
# about 146 years from Paddle's origin or from 1970)
_MAX_US = 4.6e15
_MAX_NS = 1 << 62


def _ns(us: np.ndarray) -> np.ndarray:
    """µs (float) → ns (int64, rounded); _Malformed for a value that is not a finite time."""
    if len(us) and not (np.abs(us) < _MAX_US).all():  # also false for nan
        raise _Malformed(f"a time out of range (beyond ±{_MAX_US:.3g} µs, or not a number)")
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
    if max(abs(int(host_tid.min())), abs(int(host_tid.max())), abs(int(mem_tid.min())),
           abs(int(mem_tid.max()))) + 1 >= (1 << 62) // span:
        # thread ids too large for tid * span + pos to fit int64: their ranks keep the same order
        rank = np.unique(np.concatenate([host_tid, mem_tid]), return_inverse=True)[1].reshape(-1)
        host_tid, mem_tid = rank[:len(host_tid)], rank[len(host_tid):]
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
    return _int_array(out, np.int32, "grid or block").reshape(-1, 3)


def _strip_names(events) -> list:
    """'matmul dygraph[12.345 us]' → 'matmul dygraph': the last bracket group is the duration."""
    return [n.rpartition("[")[0] if n[-1:] == "]" and "[" in n else n for n in (e.name for e in events)]


def _chunk_columns(events: List[Event], names: _Interner, offset: int) -> dict:
    """Columns of one chunk of events decoded by msgspec; `offset` is the chunk's position in the
    file's event list."""
    return _build_columns(_msgspec_raw(events), names, offset)


def _msgspec_raw(events: List[Event]) -> dict:
    """One chunk's msgspec structs → its raw columns (see _build_columns), every value checked as
    the file gives it (thread ids, integers that must fit, start_time texts)."""
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
    local = _Interner()  # the chunk's strings, numbered as the scanner numbers its own
    c: dict = {"host_pos": picks[3].astype(i64), "mem_pos": picks[4].astype(i64), "n": len(events)}

    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]
    c["host_tid"] = _thread_ids([e.tid for e in host_ev])
    c["host_type"] = np.array([type_id.get(e.cat, user_defined) for e in host_ev], dtype=np.int16)
    c["host_name"] = local.many(_strip_names(host_ev))
    c["host_ts"], c["host_dur"], c["host_start"] = _msgspec_times(host_ev)
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
    c["rt_name"] = local.many(_strip_names(rt_ev))
    c["rt_ts"], c["rt_dur"], c["rt_start"] = _msgspec_times(rt_ev)
    rt_args = [e.args or _NO_ARGS for e in rt_ev]
    c["rt_corr"] = _int_array([-1 if a.correlation_id is None else a.correlation_id for a in rt_args], i64,
                              "correlation id")

    device_cats = et.DEVICE_CATS
    dev_args = [e.args or _NO_ARGS for e in dev_ev]
    c["dev_id"] = _int_array([_int_of(e.pid, "device id") for e in dev_ev], i64, "device id")
    c["dev_stream"] = _int_array([_int_of(e.tid, "stream id") for e in dev_ev], i64, "stream id")
    c["dev_type"] = np.array([device_cats[e.cat] for e in dev_ev], dtype=np.int16)
    c["dev_name"] = local.many(_strip_names(dev_ev))
    c["dev_ts"], c["dev_dur"], c["dev_start"] = _msgspec_times(dev_ev)
    c["dev_corr"] = _int_array([-1 if a.correlation_id is None else a.correlation_id for a in dev_args], i64,
                               "correlation id")
    c["dev_grid"] = _triples([a.grid for a in dev_args])
    c["dev_block"] = _triples([a.block for a in dev_args])
    c["dev_registers"] = _int_array([a.registers or 0 for a in dev_args], np.int32, "registers per thread")
    c["dev_shared_memory"] = _int_array([a.shared_memory or 0 for a in dev_args], i64, "shared memory")
    c["dev_blocks_per_sm"] = np.array([a.blocks_per_sm or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_warps_per_sm"] = np.array([a.warps_per_sm or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_occupancy"] = np.array([a.occupancy or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_bytes"] = _int_array([a.bytes or 0 for a in dev_args], i64, "bytes")

    mem_args = [e.args or _NO_ARGS for e in mem_ev]
    c["mem_tid"] = _thread_ids([e.tid for e in mem_ev])
    c["mem_type"] = np.array([et.MEM_TYPE_ID[e.cat] for e in mem_ev], dtype=np.int8)
    c["mem_place"] = local.many([a.place or "" for a in mem_args])
    c["mem_ts"] = np.array([e.ts for e in mem_ev], dtype=np.float64)
    c["mem_increase"] = _int_array([a.increase_bytes or 0 for a in mem_args], i64, "increase_bytes")
    c["mem_current_allocated"] = _int_array([a.current_allocated or 0 for a in mem_args], i64, "current_allocated")
    c["mem_current_reserved"] = _int_array([a.current_reserved or 0 for a in mem_args], i64, "current_reserved")
    c["mem_peak_allocated"] = _int_array([a.peak_allocated or 0 for a in mem_args], i64, "peak_allocated")
    c["mem_peak_reserved"] = _int_array([a.peak_reserved or 0 for a in mem_args], i64, "peak_reserved")
    c["mem_addr"] = np.array([_addr(bytes(a.addr)) for a in mem_args], dtype=i64)
    c["strings"] = local.names
    c["pid"] = next((e.pid for e in host_ev if isinstance(e.pid, int)), -1)
    return c


def _msgspec_times(events: list) -> "tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]":
    """(ts, dur, start) in µs of a table's events: start from args.start_time (relative µs text),
    None when an event lacks it (very old files: the whole table then uses the absolute ts)."""
    rel = [(e.args or _NO_ARGS).start_time for e in events]
    dur = np.array([e.dur for e in events], dtype=np.float64)
    ts = np.array([e.ts for e in events], dtype=np.float64)
    if None in rel:
        return ts, dur, None
    # one C-level parse of "12.345 us 67.890 us ..." instead of a float() per event
    try:
        values = np.fromstring(" ".join(rel).replace(" us", ""), sep=" ") if rel else np.zeros(0)
    except ValueError:  # text that is not a number (numpy >= 2.3 says so; older ones stop short)
        values = np.zeros(0)
    if len(values) != len(rel):  # some other unit or text: parse one by one
        values = np.array([_start_time(r) for r in rel], dtype=np.float64)
    return ts, dur, values


# The raw columns' tables with times: (prefix, what the scanner and msgspec give per table).
_TIMED = ("host", "rt", "dev")


def _build_columns(raw: dict, names: "_Interner", offset: int) -> dict:
    """THE column builder: one chunk's raw columns, from the native scanner (_native_raw) or from
    msgspec (_msgspec_raw), → the reader's columns of that chunk (a part; _concat joins parts,
    _assemble makes the EventTables).

    `raw` holds, per table, the columns as the file gives them, names as ids into raw["strings"]
    (the chunk's own numbering), and for the timed tables `ts`, `dur` and `start` in µs (`start`
    None when the table is to use the absolute ts); memory events `ts` in µs. Here the names are
    renumbered into the file's (`names`, in order of first appearance: host, runtime, device names,
    then memory places), times become ns with end = start + dur (checked), and the chunk's
    estimate of Paddle's origin, its earliest absolute time, its pid and event count are kept."""
    strings = raw.pop("strings")
    c: dict = {"host_pos": raw.pop("host_pos") + offset, "mem_pos": raw.pop("mem_pos") + offset}
    times = {}
    for t in _TIMED:
        local = raw.pop(f"{t}_name")
        c[f"{t}_name"] = _global_ids(local, strings, names)
        ts, dur, start_us = raw.pop(f"{t}_ts"), raw.pop(f"{t}_dur"), raw.pop(f"{t}_start")
        relative = start_us is not None
        dur = _ns(dur)
        start = _ns(start_us if relative else ts)
        c[f"{t}_start"] = start
        c[f"{t}_end"] = _end(start, dur, names=lambda i, local=local: strings[local[i]])
        times[t] = (ts, start, relative)
    c["mem_place"] = _global_ids(raw.pop("mem_place"), strings, names)
    c["mem_ts_ns"] = _ns(raw.pop("mem_ts"))
    pid, n = raw.pop("pid"), raw.pop("n")
    c.update(raw)  # the other columns as given

    # Relative times are rebased by the origin later only where a table lacked them.
    for t in _TIMED:
        c[f"{t}_abs"] = np.full(len(c[f"{t}_start"]), not times[t][2])
    c["origin"] = _origin(((lambda ts=ts: ts, start, rel) for ts, start, rel in times.values()))
    starts = [start for _, start, rel in times.values() if not rel and len(start)]
    c["abs_min"] = min(int(x.min()) for x in starts) if starts else None
    c["pid"] = pid
    c["n"] = n
    return c


# ---------------------------------------------------------------- native scanner

# The records of the native scanner (_scan.c, struct record): the same fields in the same order.
_RECORD = np.dtype([(f, "=i8") for f in (
    "pid", "tid", "corr", "shared_memory", "bytes", "increase", "cur_alloc", "cur_reserved",
    "peak_alloc", "peak_reserved", "addr", "shapes_start", "shapes_stop", "dtypes_start", "dtypes_stop")]
    + [(f, "=f8") for f in ("ts", "dur", "start", "blocks_per_sm", "warps_per_sm", "occupancy")]
    + [(f, "=i4") for f in ("name", "cat", "ph", "place", "registers")]
    + [("grid", "=i4", (3,)), ("block", "=i4", (3,))]
    + [(f, "u1") for f in ("pid_is_str", "tid_kind", "has_start", "pad_")])

# Set TB_PADDLE_PROFILE_NATIVE=0 to read with msgspec only (the tables are the same).
USE_NATIVE = settings.text(settings.NATIVE, "1") != "0"


def native_scanner():
    """The compiled scanner's scan function, or None when it is not built (a pure-Python install),
    does not match this reader, or is switched off (USE_NATIVE)."""
    if not USE_NATIVE:
        return None
    try:
        from tb_paddle_profile.trace import _scan
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


def _native_chunk_columns(got, mv: memoryview, names: "_Interner", offset: int) -> Optional[dict]:
    """_chunk_columns from the native scanner's answer for a chunk of mv; None where the scanner
    declined the chunk (or the Python reader would reject it): msgspec then reads it."""
    raw = _native_raw(got, mv)
    return None if raw is None else _build_columns(raw, names, offset)


def _native_raw(got, mv: memoryview) -> Optional[dict]:
    """The native scanner's records of a chunk → its raw columns (see _build_columns); None where
    the scanner declined the chunk (or the Python reader would reject it)."""
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
    c: dict = {"host_pos": host.astype(i64), "mem_pos": mem.astype(i64), "n": n, "strings": strings}
    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]

    def timed(t, rows):
        c[f"{t}_name"] = rec["name"][rows]
        c[f"{t}_ts"], c[f"{t}_dur"] = rec["ts"][rows], rec["dur"][rows]
        c[f"{t}_start"] = rec["start"][rows] if bool(rec["has_start"][rows].all()) else None

    c["host_tid"] = rec["tid"][host]
    c["host_type"] = _lut(strings, cats, lambda s: type_id.get(s, user_defined), np.int16)[cat[host]]
    timed("host", host)
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
    timed("rt", rt)
    c["rt_corr"] = rec["corr"][rt]

    c["dev_id"] = rec["pid"][dev]
    c["dev_stream"] = rec["tid"][dev]
    c["dev_type"] = _lut(strings, cats, lambda s: et.DEVICE_CATS.get(s, -1), np.int16)[cat[dev]]
    timed("dev", dev)
    c["dev_corr"] = rec["corr"][dev]
    c["dev_grid"] = rec["grid"][dev]
    c["dev_block"] = rec["block"][dev]
    for key in ("registers", "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy", "bytes"):
        c[f"dev_{key}"] = rec[key][dev]

    c["mem_tid"] = rec["tid"][mem]
    c["mem_type"] = _lut(strings, cats, lambda s: et.MEM_TYPE_ID.get(s, -1), np.int8)[cat[mem]]
    c["mem_place"] = rec["place"][mem]
    c["mem_ts"] = rec["ts"][mem]
    for key, column in (("increase", "increase"), ("current_allocated", "cur_alloc"),
                        ("current_reserved", "cur_reserved"), ("peak_allocated", "peak_alloc"),
                        ("peak_reserved", "peak_reserved"), ("addr", "addr")):
        c[f"mem_{key}"] = rec[column][mem]
    by_int = host[rec["pid_is_str"][host] == 0]
    c["pid"] = int(rec["pid"][by_int[0]]) if len(by_int) else -1
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
                c = _chunk_columns(_decode_chunk(mv, pos, stop, len(ranges) == 1, offset), names, offset)
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

    cols["host_shapes"] = part["host_shapes"]
    tables = {attr: cls(**{f: cols.pop(f"{prefix}_{f}") for f in cls.__dataclass_fields__})
              for prefix, attr, cls in _TABLES}
    assert not cols, sorted(cols)
    span = trace.span_index if trace.span_index is not None else trace.span_indx
    return EventTables(
        names=names, **tables,
        schema_version=trace.schemaVersion or "",
        span="" if span is None else str(span),
        extra_info=dict(trace.ExtraInfo),
        devices=list(trace.deviceProperties),
        thread_names={int(k): v for k, v in trace.ExtraInfo.items() if k.isascii() and k.isdigit()},
        origin_unix_ns=origin,
        pid=part["pid"],
        repaired_lines=repaired,
    )
