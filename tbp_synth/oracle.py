"""Paddle's own summary tables for a synthetic rank, as ``Profiler.summary()`` would print them.

The node trees handed to Paddle's ``StatisticData`` and ``_build_table`` are built from the
generator's in-memory model (not from the JSON), with the nesting Paddle's C++ applies
(:func:`.model.build_node_trees`). They are duck-typed stand-ins for ``HostPythonNode``,
``DevicePythonNode`` and ``MemPythonNode`` carrying every attribute those classes expose;
types are the real ``paddle.base.core`` enums. Paddle is imported lazily, so the generator and
writer work without it; this module is for tests and reference tables.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Dict, List, Optional, Sequence

from .model import EVENT_TYPE_NAMES, KERNEL, MEM_TYPE_NAMES, ROOT, ULLONG_MAX, NodeTrees, RankTrace
from .writer import TRACE_SUFFIX, kernel_metrics

# The option sets written beside every synthetic trace: (sorted_by, time_unit).
REFERENCE_OPTIONS = (("CPUTotal", "ms"), ("CPUTotal", "us"), ("GPUTotal", "ms"), ("GPUTotal", "us"))


def _paddle():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import paddle  # noqa: F401  (initialises paddle.base.core)
        from paddle.base import core
        from paddle.profiler import profiler, profiler_statistic
    return paddle, core, profiler, profiler_statistic


class HostNode:
    """Stand-in for ``paddle.base.core.HostPythonNode`` (host and CUDA runtime nodes)."""

    __slots__ = (
        "name",
        "type",
        "start_ns",
        "end_ns",
        "process_id",
        "thread_id",
        "correlation_id",
        "input_shapes",
        "dtypes",
        "callstack",
        "attributes",
        "op_id",
        "children_node",
        "runtime_node",
        "device_node",
        "mem_node",
    )

    def __init__(self, name, etype, start_ns, end_ns, process_id, thread_id, correlation_id=0):
        self.name = name
        self.type = etype
        self.start_ns = start_ns
        self.end_ns = end_ns
        self.process_id = process_id
        self.thread_id = thread_id
        self.correlation_id = correlation_id
        # Paddle 3.3.1 records no shapes, dtypes or call stacks (see the format notes)
        self.input_shapes = {}
        self.dtypes = {}
        self.callstack = ""
        self.attributes = {}
        self.op_id = 0
        self.children_node = []
        self.runtime_node = []
        self.device_node = []
        self.mem_node = []


class DeviceNode:
    """Stand-in for ``paddle.base.core.DevicePythonNode``."""

    __slots__ = (
        "name",
        "type",
        "start_ns",
        "end_ns",
        "device_id",
        "context_id",
        "stream_id",
        "correlation_id",
        "block_x",
        "block_y",
        "block_z",
        "grid_x",
        "grid_y",
        "grid_z",
        "shared_memory",
        "registers_per_thread",
        "blocks_per_sm",
        "warps_per_sm",
        "occupancy",
        "num_bytes",
        "value",
    )


class MemNode:
    """Stand-in for ``paddle.base.core.MemPythonNode``."""

    __slots__ = (
        "type",
        "place",
        "addr",
        "increase_bytes",
        "current_allocated",
        "current_reserved",
        "peak_allocated",
        "peak_reserved",
        "process_id",
        "thread_id",
        "timestamp_ns",
    )


def paddle_node_trees(trace: RankTrace, trees: NodeTrees) -> Dict[int, HostNode]:
    """``{thread_id: root}`` shaped like ``ProfilerResult.get_data()``."""
    _, core, _, _ = _paddle()
    etypes = [getattr(core.TracerEventType, n) for n in EVENT_TYPE_NAMES]
    mtypes = [getattr(core.TracerMemEventType, n) for n in MEM_TYPE_NAMES]
    names = trace.names
    pid = trace.pid
    dev = trace.device

    def host(h: int) -> HostNode:
        return HostNode(
            names[trace.h_name[h]], etypes[trace.h_type[h]], trace.h_start[h], trace.h_end[h], pid, trace.h_tid[h]
        )

    def device(d: int) -> DeviceNode:
        n = DeviceNode()
        n.name = names[trace.d_name[d]]
        n.type = etypes[trace.d_type[d]]
        n.start_ns, n.end_ns = trace.d_start[d], trace.d_end[d]
        n.device_id, n.context_id, n.stream_id = dev.id, 1, trace.d_stream[d]
        n.correlation_id = trace.d_corr[d]
        n.num_bytes = n.value = 0
        n.grid_x = n.grid_y = n.grid_z = n.block_x = n.block_y = n.block_z = 0
        n.shared_memory = n.registers_per_thread = 0
        n.blocks_per_sm = n.warps_per_sm = n.occupancy = 0.0
        if trace.d_type[d] == KERNEL:
            spec = trace.kernel_specs[trace.d_arg[d]]
            n.grid_x, n.grid_y, n.grid_z = spec.grid
            n.block_x, n.block_y, n.block_z = spec.block
            n.shared_memory = spec.static_smem + spec.dynamic_smem
            n.registers_per_thread = spec.registers
            n.blocks_per_sm, n.warps_per_sm, n.occupancy = map(float, kernel_metrics(spec, dev))
        else:
            n.num_bytes = trace.d_arg[d]
        return n

    def runtime(r: int) -> HostNode:
        n = HostNode(
            names[trace.r_name[r]], etypes[3], trace.r_start[r], trace.r_end[r], pid, trace.r_tid[r], trace.r_corr[r]
        )
        n.device_node = [device(d) for d in trees.dev_by_rt.get(r, ())]
        return n

    def mem(m: int) -> MemNode:
        n = MemNode()
        n.type = mtypes[trace.m_type[m]]
        n.place = trace.places[trace.m_place[m]]
        n.addr = trace.m_addr[m]
        n.increase_bytes = trace.m_inc[m]
        n.current_allocated, n.current_reserved = trace.m_cur_alloc[m], trace.m_cur_res[m]
        n.peak_allocated, n.peak_reserved = trace.m_peak_alloc[m], trace.m_peak_res[m]
        n.process_id, n.thread_id, n.timestamp_ns = pid, trace.m_tid[m], trace.m_ts[m]
        return n

    roots: Dict[int, HostNode] = {}
    for tid in trees.threads:
        root = HostNode("root node", etypes[7], 0, ULLONG_MAX, 0, 0)
        root.runtime_node = [runtime(r) for r in trees.root_rt[tid]]
        root.mem_node = [mem(m) for m in trees.root_mem[tid]]
        made: Dict[int, HostNode] = {}
        for h in trees.bfs[tid]:  # parents come before children in BFS order
            node = made[h] = host(h)
            node.runtime_node = [runtime(r) for r in trees.rt_by_owner.get(h, ())]
            node.mem_node = [mem(m) for m in trees.mem_by_owner.get(h, ())]
            parent = trees.host_parent[h]
            (root if parent == ROOT else made[parent]).children_node.append(node)
        roots[tid] = root
    return roots


def statistic_data(trace: RankTrace, trees: NodeTrees):
    """Paddle's ``StatisticData`` for the rank (reusable for several tables)."""
    _, _, _, ps = _paddle()
    return ps.StatisticData(paddle_node_trees(trace, trees), trace.extra_info())


def summary_text(
    data,
    sorted_by: str = "CPUTotal",
    time_unit: str = "ms",
    op_detail: bool = True,
    thread_sep: bool = False,
    views: Optional[Sequence[str]] = None,
) -> str:
    """What ``Profiler.summary()`` prints (``_build_table`` plus print's newline).

    ``data`` is a :func:`statistic_data` result; ``views`` are ``SummaryView`` names.
    """
    _, _, profiler, ps = _paddle()
    view_list = None if views is None else [getattr(profiler.SummaryView, v) for v in views]
    table = ps._build_table(
        data,
        sorted_by=getattr(ps.SortedKeys, sorted_by),
        op_detail=op_detail,
        thread_sep=thread_sep,
        time_unit=time_unit,
        views=view_list,
    )
    return table + "\n"


def summary_file_name(
    stem: str, sorted_by: str, time_unit: str, op_detail: bool = True, thread_sep: bool = False
) -> str:
    """The naming the project's real-Paddle example uses for captured summaries."""
    name = "%s.summary.%s.%s" % (stem, sorted_by, time_unit)
    if not op_detail:
        name += ".no_op_detail"
    if thread_sep:
        name += ".thread_sep"
    return name + ".txt"


def write_reference_tables(
    trace: RankTrace, trees: NodeTrees, out_dir: str, trace_name: str, options=REFERENCE_OPTIONS
) -> List[dict]:
    """Write Paddle's tables for each option set beside the trace, plus the
    ``<stem>.summaries.json`` manifest that lists them; returns the manifest's entries."""
    paddle, _, _, _ = _paddle()
    stem = trace_name[: -len(TRACE_SUFFIX)] if trace_name.endswith(TRACE_SUFFIX) else trace_name
    data = statistic_data(trace, trees)
    entries = []
    for sorted_by, time_unit in options:
        fname = summary_file_name(stem, sorted_by, time_unit)
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8") as f:
            f.write(summary_text(data, sorted_by, time_unit))
        entries.append(
            {
                "file": fname,
                "sorted_by": sorted_by,
                "time_unit": time_unit,
                "op_detail": True,
                "thread_sep": False,
                "views": None,
            }
        )
    manifest = {
        "trace": trace_name,
        "paddle_version": paddle.__version__,
        "paddle_commit": paddle.version.commit,
        "source": "tbp_synth oracle: Paddle's StatisticData and _build_table on the generator's node trees",
        "summaries": entries,
    }
    with open(os.path.join(out_dir, stem + ".summaries.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return entries
