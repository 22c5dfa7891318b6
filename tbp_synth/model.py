"""Columnar event tables of one rank's profile, and the node trees Paddle builds from them.

The generator fills a :class:`RankTrace` the way Paddle's collectors gather events (host,
CUDA runtime, device and memory records, each flat); :func:`build_node_trees` then nests them
by the rules of Paddle's ``NodeTrees::BuildTreeRelationship`` (event_node.cc). The writer
walks that tree to reproduce the Chrome-tracing file order, and the oracle turns it into the
Python node objects Paddle's own table code reads, so both see the same tree.

Columns are ``array`` objects, not an object per event: a million-event rank stays at a few
tens of megabytes.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

# paddle.base.core.TracerEventType values of Paddle 3.3.1; the JSON "cat" is the enum name.
OPERATOR = 0
DATALOADER = 1
PROFILE_STEP = 2
CUDA_RUNTIME = 3
KERNEL = 4
MEMCPY = 5
MEMSET = 6
USER_DEFINED = 7
OPERATOR_INNER = 8
FORWARD = 9
BACKWARD = 10
OPTIMIZATION = 11
COMMUNICATION = 12
PYTHON_OP = 13
PYTHON_USER_DEFINED = 14
DYGRAPH_KERNEL_LAUNCH = 15
STATIC_KERNEL_LAUNCH = 16

EVENT_TYPE_NAMES = (
    "Operator",
    "Dataloader",
    "ProfileStep",
    "CudaRuntime",
    "Kernel",
    "Memcpy",
    "Memset",
    "UserDefined",
    "OperatorInner",
    "Forward",
    "Backward",
    "Optimization",
    "Communication",
    "PythonOp",
    "PythonUserDefined",
    "DygraphKernelLaunch",
    "StaticKernelLaunch",
)

# Host types the writer puts on the "<tid>(Python)" track (LogHostTraceEventNode's switch).
PYTHON_SIDE_TYPES = frozenset(
    (PROFILE_STEP, FORWARD, BACKWARD, DATALOADER, OPTIMIZATION, PYTHON_OP, PYTHON_USER_DEFINED)
)

# paddle.base.core.TracerMemEventType values.
ALLOCATE = 0
FREE = 1
RESERVED_ALLOCATE = 2
RESERVED_FREE = 3
MEM_TYPE_NAMES = ("Allocate", "Free", "ReservedAllocate", "ReservedFree")

ROOT = -1  # owner index meaning "the thread's synthetic root node"
ULLONG_MAX = 2**64 - 1


@dataclass(frozen=True)
class KernelSpec:
    """Launch configuration of one kernel, as CUPTI reports it."""

    name: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    registers: int
    static_smem: int = 0
    dynamic_smem: int = 0


@dataclass(frozen=True)
class DeviceProps:
    """The cudaDeviceProp fields Paddle writes in ``deviceProperties``."""

    id: int
    name: str = "NVIDIA H100 80GB HBM3"
    total_global_mem: int = 85045379072
    compute_major: int = 9
    compute_minor: int = 0
    max_threads_per_block: int = 1024
    max_threads_per_sm: int = 2048
    regs_per_block: int = 65536
    regs_per_sm: int = 65536
    warp_size: int = 32
    smem_per_block: int = 49152
    smem_per_sm: int = 233472
    sm_count: int = 132
    smem_per_block_optin: int = 232448


class RankTrace:
    """Every event of one rank's profiled span, one column per field.

    Times are absolute nanoseconds. Host rows keep their type (``h_type``); device rows keep
    their type and, in ``d_arg``, the kernel-spec index (Kernel) or the byte count
    (Memcpy/Memset).
    """

    def __init__(
        self,
        pid: int,
        device: DeviceProps,
        threads: Dict[int, str],
        process_cpu_util: float,
        system_cpu_util: float,
        span_index: int = 0,
    ):
        self.pid = pid
        self.device = device
        self.devices: List[DeviceProps] = [device]  # deviceProperties, in order
        self.threads = dict(threads)  # tid -> thread name, as in ExtraInfo
        self.process_cpu_util = process_cpu_util
        self.system_cpu_util = system_cpu_util
        self.span_index = span_index
        self.names: List[str] = []
        self._name_ids: Dict[str, int] = {}
        self.kernel_specs: List[KernelSpec] = []
        self._spec_ids: Dict[KernelSpec, int] = {}
        self.places: List[str] = []
        self._place_ids: Dict[str, int] = {}
        # host events
        self.h_name = array("i")
        self.h_type = array("b")
        self.h_tid = array("q")
        self.h_start = array("q")
        self.h_end = array("q")
        self.h_shapes: Dict[int, Tuple[str, str]] = {}  # row -> (input_shapes, input_dtypes) JSON
        # CUDA runtime events
        self.r_name = array("i")
        self.r_tid = array("q")
        self.r_start = array("q")
        self.r_end = array("q")
        self.r_corr = array("q")
        # device events
        self.d_name = array("i")
        self.d_type = array("b")
        self.d_stream = array("q")
        self.d_start = array("q")
        self.d_end = array("q")
        self.d_corr = array("q")
        self.d_arg = array("q")
        # memory events
        self.m_type = array("b")
        self.m_tid = array("q")
        self.m_ts = array("q")
        self.m_place = array("i")
        self.m_addr = array("Q")
        self.m_inc = array("q")
        self.m_cur_alloc = array("q")
        self.m_cur_res = array("q")
        self.m_peak_alloc = array("q")
        self.m_peak_res = array("q")

    # -- interning
    def name_id(self, name: str) -> int:
        nid = self._name_ids.get(name)
        if nid is None:
            nid = self._name_ids[name] = len(self.names)
            self.names.append(name)
        return nid

    def spec_id(self, spec: KernelSpec) -> int:
        sid = self._spec_ids.get(spec)
        if sid is None:
            sid = self._spec_ids[spec] = len(self.kernel_specs)
            self.kernel_specs.append(spec)
            self.name_id(spec.name)
        return sid

    def place_id(self, place: str) -> int:
        pid = self._place_ids.get(place)
        if pid is None:
            pid = self._place_ids[place] = len(self.places)
            self.places.append(place)
        return pid

    # -- recording (the generator's sink)
    def host_open(self, name_id: int, etype: int, tid: int, start: int) -> int:
        self.h_name.append(name_id)
        self.h_type.append(etype)
        self.h_tid.append(tid)
        self.h_start.append(start)
        self.h_end.append(start)
        return len(self.h_start) - 1

    def host_close(self, row: int, end: int) -> None:
        self.h_end[row] = end

    def host_shapes(self, row: int, shapes: str, dtypes: str) -> None:
        """An Operator row's input_shapes and input_dtypes JSON (record_shapes)."""
        self.h_shapes[row] = (shapes, dtypes)

    def runtime(self, name_id: int, tid: int, start: int, end: int, corr: int) -> None:
        self.r_name.append(name_id)
        self.r_tid.append(tid)
        self.r_start.append(start)
        self.r_end.append(end)
        self.r_corr.append(corr)

    def device_event(self, name_id: int, etype: int, stream: int, start: int, end: int, corr: int, arg: int) -> int:
        self.d_name.append(name_id)
        self.d_type.append(etype)
        self.d_stream.append(stream)
        self.d_start.append(start)
        self.d_end.append(end)
        self.d_corr.append(corr)
        self.d_arg.append(arg)
        return len(self.d_start) - 1

    def mem(
        self,
        mtype: int,
        tid: int,
        ts: int,
        place_id: int,
        addr: int,
        inc: int,
        cur_alloc: int,
        cur_res: int,
        peak_alloc: int,
        peak_res: int,
    ) -> None:
        self.m_type.append(mtype)
        self.m_tid.append(tid)
        self.m_ts.append(ts)
        self.m_place.append(place_id)
        self.m_addr.append(addr)
        self.m_inc.append(inc)
        self.m_cur_alloc.append(cur_alloc)
        self.m_cur_res.append(cur_res)
        self.m_peak_alloc.append(peak_alloc)
        self.m_peak_res.append(peak_res)

    def shift_times(self, ns: int) -> None:
        """Add ``ns`` to every timestamp (a host clock ahead of the global one by ``ns``)."""
        for col in (self.h_start, self.h_end, self.r_start, self.r_end, self.d_start, self.d_end, self.m_ts):
            if len(col):
                np.frombuffer(col, dtype=np.int64)[:] += ns

    # -- sizes
    @property
    def n_host(self) -> int:
        return len(self.h_start)

    @property
    def n_runtime(self) -> int:
        return len(self.r_start)

    @property
    def n_device(self) -> int:
        return len(self.d_start)

    @property
    def n_mem(self) -> int:
        return len(self.m_ts)

    def extra_info(self) -> Dict[str, str]:
        """ExtraInfo as Paddle stores it: thread names by tid, then the CPU utilisations."""
        info = {str(tid): name for tid, name in sorted(self.threads.items())}
        info["Process Cpu Utilization"] = "%f" % self.process_cpu_util
        info["System Cpu Utilization"] = "%f" % self.system_cpu_util
        return info


class NodeTrees:
    """The per-thread trees of one :class:`RankTrace`, in index form.

    ``host_parent[h]`` is the parent host row of host row ``h`` or :data:`ROOT`.
    ``bfs[tid]`` lists a thread's host rows in ``Traverse(true)`` order, root excluded (each
    level is in start order, so a parent always precedes its children and siblings keep
    Paddle's order). ``rt_by_owner``/``mem_by_owner`` map a host row to its runtime/memory
    rows, ``root_rt``/``root_mem`` hold those of a thread's root, and ``dev_by_rt`` maps a
    runtime row to the device rows sharing its correlation id.
    """

    def __init__(
        self, threads, bfs, host_parent, rt_by_owner, root_rt, mem_by_owner, root_mem, dev_by_rt, start_time_ns
    ):
        self.threads: List[int] = threads
        self.bfs: Dict[int, List[int]] = bfs
        self.host_parent = host_parent
        self.rt_by_owner: Dict[int, List[int]] = rt_by_owner
        self.root_rt: Dict[int, List[int]] = root_rt
        self.mem_by_owner: Dict[int, List[int]] = mem_by_owner
        self.root_mem: Dict[int, List[int]] = root_mem
        self.dev_by_rt: Dict[int, List[int]] = dev_by_rt
        self.start_time_ns: int = start_time_ns


def _sorted_rows(tids: np.ndarray, tid: int, primary: np.ndarray, secondary: Optional[np.ndarray] = None) -> List[int]:
    rows = np.flatnonzero(tids == tid)
    if secondary is None:
        order = np.argsort(primary[rows], kind="stable")
    else:  # primary ascending, secondary descending
        order = np.lexsort((-secondary[rows], primary[rows]))
    return rows[order].tolist()


def build_node_trees(trace: RankTrace) -> NodeTrees:
    """Nest ``trace``'s events the way Paddle's C++ profiler does.

    Per thread, host events sorted by (start asc, end desc) nest with a stack: an event is a
    child of the stack top when it starts before the top ends. Each runtime event belongs to
    the deepest host event that contains it, each memory event to the first host event in
    post-order whose closed range holds its timestamp (that is, the deepest), and each device
    event to the runtime event with its correlation id.

    The generator keeps its events unambiguous for these rules (no runtime event straddling a
    host boundary, no memory timestamp on a host boundary, no overlapping siblings); anything
    else raises ``ValueError`` rather than being guessed.
    """
    h_tid = np.frombuffer(trace.h_tid, dtype=np.int64)
    h_start = np.frombuffer(trace.h_start, dtype=np.int64)
    h_end = np.frombuffer(trace.h_end, dtype=np.int64)
    r_tid = np.frombuffer(trace.r_tid, dtype=np.int64)
    r_start = np.frombuffer(trace.r_start, dtype=np.int64)
    r_end = np.frombuffer(trace.r_end, dtype=np.int64)
    m_tid = np.frombuffer(trace.m_tid, dtype=np.int64)
    m_ts = np.frombuffer(trace.m_ts, dtype=np.int64)

    threads = sorted(set(h_tid.tolist()) | set(r_tid.tolist()) | set(m_tid.tolist()))
    host_parent = array("q", [ROOT]) * trace.n_host
    rt_by_owner: Dict[int, List[int]] = {}
    root_rt: Dict[int, List[int]] = {}
    mem_by_owner: Dict[int, List[int]] = {}
    root_mem: Dict[int, List[int]] = {}
    bfs: Dict[int, List[int]] = {}
    hs = trace.h_start
    he = trace.h_end
    rs = trace.r_start
    re_ = trace.r_end
    ms = trace.m_ts
    start_time = None

    for tid in threads:
        hosts = _sorted_rows(h_tid, tid, h_start, h_end)
        rts = _sorted_rows(r_tid, tid, r_start, r_end)
        mems = _sorted_rows(m_tid, tid, m_ts)
        by_depth: List[List[int]] = []  # host rows per nesting depth, in start order
        t_root_rt: List[int] = []
        t_root_mem: List[int] = []
        root_rt[tid] = t_root_rt
        root_mem[tid] = t_root_mem
        stack: List[int] = []  # open host rows; the root is implicit below it
        inf = 1 << 62
        hi = ri = mi = 0
        nh, nr, nm = len(hosts), len(rts), len(mems)
        while hi < nh or ri < nr or mi < nm:
            th = hs[hosts[hi]] if hi < nh else inf
            tr = rs[rts[ri]] if ri < nr else inf
            tm = ms[mems[mi]] if mi < nm else inf
            if th <= tr and th <= tm:  # a host event opens
                h = hosts[hi]
                hi += 1
                while stack and he[stack[-1]] <= th:
                    stack.pop()
                if stack:
                    top = stack[-1]
                    if he[h] > he[top]:
                        raise ValueError(
                            "host events %r and %r overlap on thread %d"
                            % (trace.names[trace.h_name[top]], trace.names[trace.h_name[h]], tid)
                        )
                    host_parent[h] = top
                depth = len(stack)
                if depth == len(by_depth):
                    by_depth.append([])
                by_depth[depth].append(h)
                stack.append(h)
            elif tr <= tm:  # a runtime event: deepest host event containing it
                r = rts[ri]
                ri += 1
                while stack and he[stack[-1]] <= tr:
                    stack.pop()
                if stack:
                    top = stack[-1]
                    if re_[r] > he[top]:
                        raise ValueError(
                            "runtime event %r straddles host event %r"
                            % (trace.names[trace.r_name[r]], trace.names[trace.h_name[top]])
                        )
                    rt_by_owner.setdefault(top, []).append(r)
                else:
                    t_root_rt.append(r)
            else:  # a memory event: deepest host event whose closed range holds it
                m = mems[mi]
                mi += 1
                while stack and he[stack[-1]] < tm:
                    stack.pop()
                if stack:
                    top = stack[-1]
                    if tm == he[top] or tm == hs[top]:
                        raise ValueError("memory event at %d ns sits on a host boundary" % tm)
                    mem_by_owner.setdefault(top, []).append(m)
                else:
                    t_root_mem.append(m)

        # Breadth-first order is level by level; within a level, children of earlier parents
        # come first and parents do not overlap, so each level is simply in start order.
        order: List[int] = []
        for level in by_depth:
            order.extend(level)
        bfs[tid] = order
        # LogNodeTrees: the earliest first BFS host node, else the root's first runtime node.
        first = hs[order[0]] if order else (rs[t_root_rt[0]] if t_root_rt else None)
        if first is not None and (start_time is None or first < start_time):
            start_time = first

    corr_to_rt: Dict[int, int] = {}
    for r, corr in enumerate(trace.r_corr):
        corr_to_rt[corr] = r
    dev_by_rt: Dict[int, List[int]] = {}
    for d, corr in enumerate(trace.d_corr):
        r = corr_to_rt.get(corr)
        if r is not None:
            dev_by_rt.setdefault(r, []).append(d)

    return NodeTrees(
        threads,
        bfs,
        host_parent,
        rt_by_owner,
        root_rt,
        mem_by_owner,
        root_mem,
        dev_by_rt,
        start_time if start_time is not None else 0,
    )
