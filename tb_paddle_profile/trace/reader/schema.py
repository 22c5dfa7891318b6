"""The trace file's typed form for msgspec: the document (Trace: the events kept raw, decoded in
chunks), an event (Event, Args) and a device's properties (DeviceProp, the ranges of the Summary's
fields that they go into)."""

from __future__ import annotations

from typing import Annotated, Dict, List, Optional, Union

import msgspec


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


_NO_ARGS = Args()
