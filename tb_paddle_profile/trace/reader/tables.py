"""The reader's answer: the four event tables of numpy columns (HostTable, RuntimeTable, DeviceTable,
MemoryTable) and EventTables, which holds them with the file's metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List

import numpy as np

from tb_paddle_profile.trace.reader.schema import DeviceProp


@dataclass
class HostTable:
    """Host events: one row per complete ("X") event that is neither runtime nor device
    (operators, Python/C++ calls, user ranges, ProfileStep...), in file order."""

    tid: np.ndarray  # thread id (int64; "1234(Python)" read as 1234)
    type: np.ndarray  # event type id (event_types.TYPE_ID; unknown categories are UserDefined)
    name: np.ndarray  # index into EventTables.names (the "[12.3 us]" suffix removed)
    start: np.ndarray  # ns (int64)
    end: np.ndarray  # ns (int64), >= start
    shapes: Dict[int, tuple]  # row → (input_shapes json, input_dtypes json), only where non-empty

    def __len__(self) -> int:
        return len(self.tid)


@dataclass
class RuntimeTable:
    """CUDA runtime / driver API calls (cudaLaunchKernel, cudaMemcpyAsync...), in file order."""

    tid: np.ndarray  # thread id of the caller
    type: np.ndarray  # event_types.RUNTIME_CATS id
    name: np.ndarray  # index into EventTables.names
    start: np.ndarray  # ns
    end: np.ndarray  # ns
    corr: np.ndarray  # correlation id (-1: none); a device event with the same id is its launch

    def __len__(self) -> int:
        return len(self.tid)


@dataclass
class DeviceTable:
    """Device activity (kernels, memcpy, memset), in file order, with the kernels' launch
    parameters (0 where the event does not carry them)."""

    id: np.ndarray  # device id (the event's pid)
    stream: np.ndarray  # stream id (the event's tid)
    type: np.ndarray  # event_types.DEVICE_CATS id (KERNEL, MEMCPY, MEMSET)
    name: np.ndarray  # index into EventTables.names
    start: np.ndarray  # ns
    end: np.ndarray  # ns
    corr: np.ndarray  # correlation id (-1: none)
    grid: np.ndarray  # (n, 3) int32
    block: np.ndarray  # (n, 3) int32
    registers: np.ndarray  # registers per thread
    shared_memory: np.ndarray  # bytes
    blocks_per_sm: np.ndarray
    warps_per_sm: np.ndarray
    occupancy: np.ndarray  # theoretical achieved occupancy, %
    bytes: np.ndarray  # memcpy / memset bytes

    def __len__(self) -> int:
        return len(self.id)


@dataclass
class MemoryTable:
    """Memory events ("i" events: Allocate, Free, ReservedAllocate...), in file order."""

    tid: np.ndarray  # thread id
    type: np.ndarray  # event_types.MEM_TYPE_ID id
    place: np.ndarray  # index into EventTables.names ("Place(gpu:0)"...)
    ts_ns: np.ndarray  # relative ns (from the absolute µs "ts")
    increase: np.ndarray  # bytes (negative for a free)
    current_allocated: np.ndarray  # bytes after the event
    current_reserved: np.ndarray
    peak_allocated: np.ndarray
    peak_reserved: np.ndarray
    addr: np.ndarray  # the block's address (args.addr, a decimal string), -1 when unreadable
    owner: np.ndarray  # host row of the nearest preceding host event of the thread, or -1

    def __len__(self) -> int:
        return len(self.tid)


# The column prefixes of the reader's chunk parts (private dicts) → the tables they make.
_TABLES = (
    ("host", "host", HostTable),
    ("rt", "runtime", RuntimeTable),
    ("dev", "device", DeviceTable),
    ("mem", "memory", MemoryTable),
)


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
