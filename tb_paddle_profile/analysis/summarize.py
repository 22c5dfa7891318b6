"""Trace bytes → Summary protobuf: reader → event tree → analyses.

This is the one entry point the CLI, the cache and the plugin's workers call.
"""

from __future__ import annotations

import os
from typing import Callable

from tb_paddle_profile.core.version import __version__
from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.analysis.collectives import parallel_view
from tb_paddle_profile.analysis.comm_axes import comm_instances
from tb_paddle_profile.analysis.comm_bandwidth import bandwidth_view
from tb_paddle_profile.analysis.comm_overlap import overlap_view
from tb_paddle_profile.analysis.comm_rank import rank_view
from tb_paddle_profile.analysis.host_stalls import host_stall_view
from tb_paddle_profile.analysis.launch_latency import launch_view
from tb_paddle_profile.analysis.distributed import DistributedAnalysis
from tb_paddle_profile.analysis.flops import ShapedCalls, flops_view
from tb_paddle_profile.analysis.sequences import sequence_view
from tb_paddle_profile.analysis.kernels import kernel_view
from tb_paddle_profile.analysis.memory import memory_view, rank_memory
from tb_paddle_profile.analysis.model import ModelAnalysis
from tb_paddle_profile.analysis.operators import operator_view
from tb_paddle_profile.analysis.profile import Profile
from tb_paddle_profile.analysis.time_ranges import TimeRanges, device_view, overview_view
from tb_paddle_profile.analysis.user_defined import user_defined_views
from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.core.naming import parse_file_name
from tb_paddle_profile.trace.reader import EventTables, read_trace
from tb_paddle_profile.v1 import summary_pb2 as pb

# Bump when the analyses change what they put into a Summary (part of the cache key).
SUMMARY_SCHEMA = 12


def summarize_tables(tables: EventTables, file_name: str, file_size: int = 0) -> pb.Summary:
    return summarize_profile(Profile.build(tables), file_name, file_size)


def summarize_profile(p: Profile, file_name: str, file_size: int = 0) -> pb.Summary:
    """The Summary of a built Profile (its tables and tree stay usable: jobs.py builds the timeline
    index from the same ones, so that a trace is parsed once)."""
    s = pb.Summary()
    _meta(p, file_name, file_size, s.meta)

    tr = TimeRanges(p)
    s.meta.total_time_ns = tr.total_time
    dist = DistributedAnalysis(p)
    model = ModelAnalysis(p)
    device_view(tr, s.device)
    overview_view(tr, model.stage_items(), dist, s.overview)
    model.to_pb(s.model)
    dist.to_pb(s.distributed, model.steps)
    operator_view(p, s.operators)
    kernel_view(p, s.kernels)
    memory_view(p, s.memory, model.steps)
    user_defined_views(p, s.memory_manipulation, s.user_defined)
    ca = parallel_view(p, model.steps, s.parallel)
    rank_memory(s.memory, s.parallel.memory)
    axis, phase = comm_instances(p, ca, s.comm.instances)
    bandwidth_view(ca.instances, axis, s.comm.bandwidth)
    overlap_view(p, ca, axis, phase, s.comm.overlap, s.comm.axes)
    launch_view(p, s.comm.launch)
    host_stall_view(p, ca.steps, s.comm.host_stalls)
    rank_view(s.comm, s.parallel)
    calls = ShapedCalls(p)
    flops_view(p, ca.steps, calls, s.flops)
    sequence_view(p, calls, s.parallel.phases, s.sequences)
    return s


def summarize_bytes(data: bytes, file_name: str, workers: int = 1) -> pb.Summary:
    """Summarize one trace file's bytes (plain or gzip). Raises TraceError on bad input; any other
    exception is a bug of ours.
    `workers` > 1 lets that many processes decode a large file's events together
    (reader.read_trace); the Summary is the same."""
    base = os.path.basename(file_name)
    return _summarize(read_trace(data, base, workers), base, len(data))


def summarize_reader(read: Callable[[], bytes], file_name: str, workers: int = 1) -> pb.Summary:
    """Like summarize_bytes, for bytes that `read()` returns: they are freed as soon as the event
    tables are built, before the analyses, so that peak memory is the larger of the two phases
    instead of their sum."""
    base = os.path.basename(file_name)
    tables, size = _tables(read, base, workers)
    return _summarize(tables, base, size)


def summarize_file(path: str, workers: int = 1) -> pb.Summary:
    def read() -> bytes:
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise TraceError(os.path.basename(path), exc.strerror or str(exc)) from None

    return summarize_reader(read, path, workers)


def _tables(read: Callable[[], bytes], base: str, workers: int):
    box = [read()]  # the reader takes the bytes out and drops them once the events are read
    size = len(box[0])
    return read_trace(box, base, workers), size


def _summarize(tables: EventTables, base: str, size: int) -> pb.Summary:
    # No exception is turned into a TraceError here: the reader refuses what is not a usable trace,
    # so whatever the analyses raise on tables it accepted is a bug of ours (errors.our_bug).
    return summarize_tables(tables, base, size)


def _meta(p: Profile, file_name: str, file_size: int, m: pb.TraceMeta) -> None:
    t, tree = p.tables, p.tree
    w = parse_file_name(file_name)
    m.summary_schema = SUMMARY_SCHEMA
    m.tool_version = __version__
    m.file_name = file_name
    m.file_size = file_size
    m.worker = w.worker
    m.export_time = w.export_time
    m.rank = w.rank
    m.hostname = w.hostname
    m.pid = w.pid if w.pid >= 0 else t.pid
    m.span = t.span
    m.schema_version = t.schema_version
    m.origin_unix_ns = int(t.origin_unix_ns)
    m.repaired_lines = t.repaired_lines
    starts = [a.min() for a in (t.host.start, t.runtime.start, t.device.start) if a.size]
    ends = [a.max() for a in (t.host.end, t.runtime.end, t.device.end) if a.size]
    m.start_ns = int(min(starts)) if starts else 0
    m.end_ns = int(max(ends)) if ends else 0
    c = m.counts
    c.host, c.runtime, c.device, c.memory = len(t.host.tid), len(t.runtime.tid), len(t.device.id), len(t.memory.tid)
    c.kernels = int((t.device.type == et.KERNEL).sum())
    c.memcpy = int((t.device.type == et.MEMCPY).sum())
    c.memset = int((t.device.type == et.MEMSET).sum())
    for tid in tree.threads:
        m.threads.add(
            tid=int(tid),
            name=t.thread_names.get(tid, ""),
            host_events=int((t.host.tid == tid).sum()),
            runtime_events=int((t.runtime.tid == tid).sum()),
            memory_events=int((t.memory.tid == tid).sum()),
        )
    for d in t.devices:
        m.devices.add(
            id=d.id,
            name=d.name,
            total_global_mem=d.total_global_mem,
            compute_major=d.compute_major,
            compute_minor=d.compute_minor,
            max_threads_per_block=d.max_threads_per_block,
            max_threads_per_multiprocessor=d.max_threads_per_multiprocessor,
            regs_per_block=d.regs_per_block,
            regs_per_multiprocessor=d.regs_per_multiprocessor,
            warp_size=d.warp_size,
            shared_mem_per_block=d.shared_mem_per_block,
            shared_mem_per_multiprocessor=d.shared_mem_per_multiprocessor,
            sm_count=d.sm_count,
            shared_mem_per_block_optin=d.shared_mem_per_block_optin,
        )
