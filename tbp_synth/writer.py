"""Write a :class:`~.model.RankTrace` in the byte layout of Paddle's ChromeTracingLogger.

Layout 3 is Paddle 3.3.1 (schema 1.0.2, ``"span_index"``, ``"displayTimeUnit"`` first, no
trailing blanks): its format strings were read out of the 3.3.1 ``libpaddle.so``, except the
``deviceProperties`` block, which a CPU build does not contain and which follows the
``LogDeviceProperty`` of the same source generation. Layout 2 is the 2.x writer (schema 1.0.1,
``"span_indx"``, the ``"Deivce"`` typo, trailing blanks) that VisualDL 2.5.3 reads.

Numbers are computed the way the C++ does: ``ts`` is integer microseconds truncated, ``dur``
and the relative ``start_time``/``end_time`` go through float32, the ``[<dur>]`` name suffix is
``%.3f ms`` above one float32 millisecond and ``%.3f us`` otherwise. The output is streamed
in chunks, never held as one string.
"""

from __future__ import annotations

import datetime as _dt
from typing import List, TextIO

import numpy as np

from .model import EVENT_TYPE_NAMES, KERNEL, MEM_TYPE_NAMES, MEMCPY, OPERATOR, PYTHON_SIDE_TYPES, NodeTrees, RankTrace

TRACE_SUFFIX = ".paddle_trace.json"
_CHUNK = 65536  # host events formatted per batch
_NO_SHAPES = ("{}", "{}")  # Paddle 3.3.1's input_shapes / input_dtypes (record_shapes: RankTrace.h_shapes)


def trace_file_name(worker: str, export_time_ns: int) -> str:
    """``<worker>_time_<YYYY_MM_DD_HH_MM_SS_ffffff>.paddle_trace.json``, as export_chrome_tracing
    names it (the time is taken as UTC here, so names do not depend on the machine)."""
    when = _dt.datetime.fromtimestamp(export_time_ns // 1000 / 1e6, tz=_dt.timezone.utc)
    return "%s_time_%s%s" % (worker, when.strftime("%Y_%m_%d_%H_%M_%S_%f"), TRACE_SUFFIX)


class _Layout:
    """The format strings of one writer generation (C ``%lld``/``%llu`` become ``%d``)."""

    def __init__(self, version: int):
        if version not in (2, 3):
            raise ValueError("layout must be 2 or 3, not %r" % (version,))
        sp = "" if version == 3 else " "  # the blanks 2.x leaves at line ends
        self.version = version
        self.schema = "1.0.2" if version == 3 else "1.0.1"
        if version == 3:
            self.header = '\n  {\n    "displayTimeUnit": "ms",\n    "schemaVersion": "%s",\n    "span_index": "%d",'
            self.dev_open = '\n    "deviceProperties": [\n    '
            body = (
                '"id": %d, "name": "%s", "totalGlobalMem": %d,\n'
                '{i}"computeMajor": %d, "computeMinor": %d,\n'
                '{i}"maxThreadsPerBlock": %d, "maxThreadsPerMultiprocessor": %d,\n'
                '{i}"regsPerBlock": %d, "regsPerMultiprocessor": %d, "warpSize": %d,\n'
                '{i}"sharedMemPerBlock": %d, "sharedMemPerMultiprocessor": %d,\n'
                '{i}"smCount": %d, "sharedMemPerBlockOptin": %d\n'
            )
            self.dev_mid = "\n    {\n      " + body.format(i="      ") + "    },\n  "
            self.dev_last = "\n      {\n        " + body.format(i="        ") + "      }],\n    "
            self.device_process = "Device"
        else:
            self.header = '\n  { \n    "schemaVersion": "%s",\n    "displayTimeUnit": "ms",\n    "span_indx": "%d",\n  '
            self.dev_open = '\n    "deviceProperties": [\n  '
            body = (
                '"id": %d, "name": "%s", "totalGlobalMem": %d,\n'
                '      "computeMajor": %d, "computeMinor": %d,\n'
                '      "maxThreadsPerBlock": %d, "maxThreadsPerMultiprocessor": %d,\n'
                '      "regsPerBlock": %d, "regsPerMultiprocessor": %d, "warpSize": %d,\n'
                '      "sharedMemPerBlock": %d, "sharedMemPerMultiprocessor": %d,\n'
                '      "smCount": %d, "sharedMemPerBlockOptin": %d\n'
            )
            self.dev_mid = "\n    {\n       " + body + "    },\n  "
            self.dev_last = "\n    {\n       " + body + "    }],\n  "
            self.device_process = "Deivce"
        self.events_open = '\n    "traceEvents": [\n  '
        head = "\n  {" + sp + '\n    "name": "%s[%s]", "pid": %d, "tid": '
        timing = '\n    "ts": %d, "dur": %.3f,\n    "ph": "X", "cat": "%s",' + sp + "\n"
        rel = '      "start_time": "%.3f us",\n      "end_time": "%.3f us"'
        self.host_python = (
            head
            + '"%d(Python)",'
            + timing
            + '    "cname": "thread_state_runnable",\n    "args": {\n'
            + rel
            + "\n    }\n  },\n  "
        )
        self.host_cpp = (
            head
            + '"%d(C++)",'
            + timing
            + '    "cname": "thread_state_runnable",\n    "args": {\n'
            + rel
            + "\n    }\n  },\n  "
        )
        self.host_operator = (
            head
            + '"%d(C++)",'
            + timing
            + '    "cname": "thread_state_runnable",\n    "args": {\n'
            + rel
            + ',\n      "input_shapes": %s,\n      "input_dtypes": %s,'
            '\n      "callstack": "%s"\n    }\n  },\n  '
        )
        self.runtime = (
            head
            + '"%d(C++)",'
            + timing
            + '    "cname": "thread_state_running",\n    "args": {\n'
            + '      "correlation id": %d,\n'
            + rel
            + "\n    }\n  },\n  "
        )
        self.flow_s = (
            "\n  {" + sp + '\n    "name": "launch", "id": %d, "pid": %d, "tid": "%d(C++)",'
            '\n    "ts": %d,' + sp + '\n    "ph": "s", "cat": "async"\n  },\n  '
        )
        self.flow_f = (
            "\n  {" + sp + '\n    "name": "launch", "id": %d, "pid": %d, "tid": %d,'
            '\n    "ts": %d,' + sp + '\n    "ph": "f", "cat": "async"\n  },\n  '
        )
        self.flow_f_bp = (
            "\n  {" + sp + '\n    "name": "launch", "id": %d, "pid": %d, "tid": %d,'
            '\n    "ts": %d,' + sp + '\n    "ph": "f", "cat": "async", "bp": "e"'
            "\n  },\n  "
        )
        dev_head = '\n    "name": "%s[%s]", "pid": %d, "tid": %d,' + timing
        self.kernel = (
            "\n  {"
            + sp
            + dev_head
            + '    "cname": "cq_build_failed",\n    "args": {\n'
            + rel
            + ',\n      "device": %d, "context": %d,'
            '\n      "stream": %d, "correlation id": %d,'
            '\n      "registers per thread": %d,\n      "shared memory": %d,'
            '\n      "blocks per SM": %s,\n      "warps per SM": %s,'
            '\n      "grid": [%d, %d, %d],\n      "block": [%d, %d, %d],'
            '\n      "theoretical achieved occupancy %%": %s\n    }\n  },\n  '
        )
        # Memcpy and Memset open with a bare "{" in both generations.
        self.memcpy = (
            "\n  {"
            + dev_head
            + '    "cname": "cq_build_failed",\n    "args": {\n'
            + rel
            + ',\n      "stream": %d, "correlation id": %d,'
            '\n      "bytes": %d, "memory bandwidth (GB/s)": %.3f\n    }\n  },\n  '
        )
        self.memset = (
            "\n  {"
            + dev_head
            + '    "cname": "cq_build_failed",\n    "args": {\n'
            + rel
            + ',\n      "device": %d, "context": %d,'
            '\n      "stream": %d, "correlation id": %d,'
            '\n      "bytes": %d, "value": %d\n    }\n  },\n  '
        )
        self.mem = (
            "\n  {" + sp + '\n    "name": "[memory]", "pid": %d, "tid": "%d(C++)",'
            '\n    "ts": %d,'
            + sp
            + '\n    "ph": "i", "cat": "%s",'
            + sp
            + '\n    "args": {\n      "place": "%s",\n      "addr": "%d",'
            '\n      "increase_bytes": %d,\n      "current_allocated": %d,'
            '\n      "current_reserved": %d,\n      "peak_allocated": %d,'
            '\n      "peak_reserved": %d\n    }\n  },\n  '
        )
        m = '\n    "ph": "M",' + sp + '\n    "args": {\n'
        self.meta_thread = (
            '\n  {\n    "name": "process_name", "pid": %d, "tid": "%d(Python)",'
            + m
            + '      "name": "Process %d (CPU)"\n    }\n  },'
            '\n  {\n    "name": "process_name", "pid": %d, "tid": "%d(C++)",'
            + m
            + '      "name": "Process %d (CPU)"\n    }\n  },'
            '\n   {\n    "name": "thread_name", "pid": %d, "tid": "%d(Python)",'
            + m
            + '      "name": "thread %d:%s(Python)"\n    }\n  },'
            '\n  {\n    "name": "thread_name", "pid": %d, "tid": "%d(C++)",'
            + m
            + '      "name": "thread %d:%s(C++)"\n    }\n  },'
            '\n  {\n    "name": "process_sort_index", "pid": %d, "tid": %d,'
            + m
            + '      "sort_index": %d\n    }\n  },'
            + sp
            + sp
            + '\n  {\n    "name": "thread_sort_index", "pid": %d, "tid": "%d(Python)",'
            + m
            + '      "sort_index": %d\n    }\n  },'
            '\n  {\n    "name": "thread_sort_index", "pid": %d, "tid": "%d(C++)",'
            + m
            + '      "sort_index": %d\n    }\n  },\n  '
        )
        self.meta_device = (
            '\n  {\n    "name": "process_name", "pid": %d, "tid": %d,'
            + m
            + '      "name": "'
            + self.device_process
            + ' %d (%s)"\n    }\n  },'
            '\n   {\n    "name": "thread_name", "pid": %d, "tid": %d,' + m + '      "name": "stream %d"\n    }\n  },'
            '\n  {\n    "name": "process_sort_index", "pid": %d, "tid": %d,'
            + m
            + '      "sort_index": %d\n    }\n  },'
            + sp
            + sp
            + '\n  {\n    "name": "thread_sort_index", "pid": %d, "tid": %d,'
            + m
            + '      "sort_index": %d\n    }\n  },'
            + sp
            + sp
            + "\n  "
        )
        self.events_close = "\n  {}\n  ],\n  "
        self.extra_open = '\n  "ExtraInfo": {'
        self.extra_item = '\n     "%s": "%s",\n   '
        self.extra_last = '\n     "%s": "%s"\n   '
        self.extra_close = "\n  }"
        self.end = "\n  }\n  "


def _f32_us(ns: np.ndarray) -> np.ndarray:
    """``static_cast<float>(ns) / 1000`` on unsigned 64-bit differences."""
    return ns.view(np.uint64).astype(np.float32) / np.float32(1000)


def _timing(start: np.ndarray, end: np.ndarray, t0: int):
    """Per-event (ts, dur, name suffix, start_time, end_time) exactly as the C++ computes them."""
    dur_us = _f32_us(end - start)
    dur_ms = dur_us / np.float32(1000)  # nsToMsFloat: float(ns) / 1000 / 1000
    shown_us = dur_ms * np.float32(1000)
    suffix = [("%.3f ms" % ms) if ms > 1.0 else ("%.3f us" % us) for ms, us in zip(dur_ms.tolist(), shown_us.tolist())]
    return ((start // 1000).tolist(), dur_us.tolist(), suffix, _f32_us(start - t0).tolist(), _f32_us(end - t0).tolist())


def _column(col) -> np.ndarray:
    return np.frombuffer(col, dtype=np.int64) if len(col) else np.zeros(0, dtype=np.int64)


def kernel_metrics(spec, dev):
    """Blocks per SM, warps per SM and estimated occupancy (a fraction) as float32, the way
    Paddle derives them (cupti_data_process.cc and CalculateEstOccupancy)."""
    f32 = np.float32
    gx, gy, gz = spec.grid
    block = spec.block[0] * spec.block[1] * spec.block[2]
    blocks_per_sm = f32(gx * gy * gz) / f32(dev.sm_count)
    warps_per_sm = blocks_per_sm * f32(block) / f32(32)
    active = _active_blocks_per_sm(spec, dev)
    resident = f32(active) if active < blocks_per_sm else blocks_per_sm
    return blocks_per_sm, warps_per_sm, resident * f32(block) / f32(dev.max_threads_per_sm)


def _kernel_args(spec, dev) -> tuple:
    blocks_per_sm, warps_per_sm, occupancy = kernel_metrics(spec, dev)
    return (
        spec.registers,
        spec.static_smem + spec.dynamic_smem,
        "%f" % float(blocks_per_sm),
        "%f" % float(warps_per_sm),
        *spec.grid,
        *spec.block,
        "%.3f" % float(occupancy * np.float32(100)),
    )


def _active_blocks_per_sm(spec, dev) -> int:
    """A small version of cudaOccMaxActiveBlocksPerMultiprocessor (threads, registers,
    shared memory and the 32-block limit of sm_90)."""
    block = spec.block[0] * spec.block[1] * spec.block[2]
    warps = -(-block // dev.warp_size)
    limit = min(32, (dev.max_threads_per_sm // dev.warp_size) // max(warps, 1))
    if spec.registers:
        regs_per_warp = -(-spec.registers * dev.warp_size // 256) * 256
        limit = min(limit, (dev.regs_per_sm // regs_per_warp) // max(warps, 1))
    smem = spec.static_smem + spec.dynamic_smem
    if smem:
        per_block = -(-(smem + 1024) // 128) * 128
        limit = min(limit, dev.smem_per_sm // per_block)
    return limit


class _Sink:
    """Collects formatted pieces and hands them to the file in large writes."""

    def __init__(self, out: TextIO, limit: int = 4096):
        self.out = out
        self.parts: List[str] = []
        self.limit = limit

    def add(self, text: str) -> None:
        self.parts.append(text)
        if len(self.parts) >= self.limit:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.out.write("".join(self.parts))
            self.parts.clear()


def write_trace(trace: RankTrace, trees: NodeTrees, out: TextIO, layout: int = 3) -> int:
    """Write ``trace`` to ``out`` in the given layout; returns the number of trace events
    written (``X``, ``s``, ``f``, ``i`` and ``M`` records, not the closing ``{}``)."""
    L = _Layout(layout)
    sink = _Sink(out)
    dev = trace.device
    sink.add(L.header % (L.schema, trace.span_index))
    sink.add(L.dev_open)
    listed = trace.devices or [dev]
    for i, p in enumerate(listed):
        props = (
            p.id,
            p.name,
            p.total_global_mem,
            p.compute_major,
            p.compute_minor,
            p.max_threads_per_block,
            p.max_threads_per_sm,
            p.regs_per_block,
            p.regs_per_sm,
            p.warp_size,
            p.smem_per_block,
            p.smem_per_sm,
            p.sm_count,
            p.smem_per_block_optin,
        )
        sink.add((L.dev_last if i == len(listed) - 1 else L.dev_mid) % props)
    sink.add(L.events_open)

    t0 = trees.start_time_ns
    h_start, h_end = _column(trace.h_start), _column(trace.h_end)
    r_ts, r_dur, r_sfx, r_rs, r_re = _timing(_column(trace.r_start), _column(trace.r_end), t0)
    d_ts, d_dur, d_sfx, d_rs, d_re = _timing(_column(trace.d_start), _column(trace.d_end), t0)
    names = trace.names
    cats = EVENT_TYPE_NAMES
    pid = trace.pid
    kargs = [_kernel_args(spec, dev) for spec in trace.kernel_specs]
    places = trace.places
    mem_cats = MEM_TYPE_NAMES
    h_name, h_type = trace.h_name, trace.h_type
    h_shapes = getattr(trace, "h_shapes", None)
    r_name, r_corr, r_start, r_end = trace.r_name, trace.r_corr, trace.r_start, trace.r_end
    d_name, d_type, d_stream, d_corr, d_arg = (trace.d_name, trace.d_type, trace.d_stream, trace.d_corr, trace.d_arg)
    d_start, d_end = trace.d_start, trace.d_end
    rt_by_owner, mem_by_owner, dev_by_rt = trees.rt_by_owner, trees.mem_by_owner, trees.dev_by_rt
    dev_id = dev.id
    count = 0
    pid_tids = set()
    dev_streams = set()
    add = sink.add

    def runtimes(rows: List[int], tid: int) -> int:
        n = 0
        for r in rows:
            corr = r_corr[r]
            add(
                L.runtime
                % (names[r_name[r]], r_sfx[r], pid, tid, r_ts[r], r_dur[r], "CudaRuntime", corr, r_rs[r], r_re[r])
            )
            add(L.flow_s % (corr, pid, tid, ((r_start[r] + r_end[r]) >> 1) // 1000))
            n += 2
            for d in dev_by_rt.get(r, ()):
                stream = d_stream[d]
                dtype = d_type[d]
                dname = names[d_name[d]]
                if dtype == KERNEL:
                    add(
                        L.kernel
                        % (
                            (
                                dname,
                                d_sfx[d],
                                dev_id,
                                stream,
                                d_ts[d],
                                d_dur[d],
                                cats[dtype],
                                d_rs[d],
                                d_re[d],
                                dev_id,
                                1,
                                stream,
                                d_corr[d],
                            )
                            + kargs[d_arg[d]]
                        )
                    )
                elif dtype == MEMCPY:
                    span = d_end[d] - d_start[d]
                    bw = float(np.float32(d_arg[d] * 1.0 / span)) if span > 0 else 0.0
                    add(
                        L.memcpy
                        % (
                            dname,
                            d_sfx[d],
                            dev_id,
                            stream,
                            d_ts[d],
                            d_dur[d],
                            cats[dtype],
                            d_rs[d],
                            d_re[d],
                            stream,
                            d_corr[d],
                            d_arg[d],
                            bw,
                        )
                    )
                else:
                    add(
                        L.memset
                        % (
                            dname,
                            d_sfx[d],
                            dev_id,
                            stream,
                            d_ts[d],
                            d_dur[d],
                            cats[dtype],
                            d_rs[d],
                            d_re[d],
                            dev_id,
                            1,
                            stream,
                            d_corr[d],
                            d_arg[d],
                            0,
                        )
                    )
                if d_end[d] - d_start[d] < 1000:
                    add(L.flow_f % (d_corr[d], dev_id, stream, d_start[d] // 1000))
                else:
                    add(L.flow_f_bp % (d_corr[d], dev_id, stream, ((d_start[d] + d_end[d]) >> 1) // 1000))
                dev_streams.add((dev_id, stream))
                n += 2
        return n

    def mems(rows: List[int]) -> int:
        for m in rows:
            add(
                L.mem
                % (
                    pid,
                    trace.m_tid[m],
                    trace.m_ts[m] // 1000,
                    mem_cats[trace.m_type[m]],
                    places[trace.m_place[m]],
                    trace.m_addr[m],
                    trace.m_inc[m],
                    trace.m_cur_alloc[m],
                    trace.m_cur_res[m],
                    trace.m_peak_alloc[m],
                    trace.m_peak_res[m],
                )
            )
        return len(rows)

    for tid in trees.threads:
        pid_tids.add((pid, tid))
        count += runtimes(trees.root_rt[tid], tid)
        count += mems(trees.root_mem[tid])
        order = trees.bfs[tid]
        # host timings are formatted a chunk at a time, in file order, to bound memory
        for lo in range(0, len(order), _CHUNK):
            rows = order[lo : lo + _CHUNK]
            idx = np.asarray(rows, dtype=np.int64)
            h_ts, h_dur, h_sfx, h_rs, h_re = _timing(h_start[idx], h_end[idx], t0)
            for i, h in enumerate(rows):
                etype = h_type[h]
                if etype == OPERATOR:
                    shp, dts = h_shapes.get(h, _NO_SHAPES) if h_shapes else _NO_SHAPES
                    add(
                        L.host_operator
                        % (
                            names[h_name[h]],
                            h_sfx[i],
                            pid,
                            tid,
                            h_ts[i],
                            h_dur[i],
                            cats[etype],
                            h_rs[i],
                            h_re[i],
                            shp,
                            dts,
                            "",
                        )
                    )
                else:
                    tmpl = L.host_python if etype in PYTHON_SIDE_TYPES else L.host_cpp
                    add(tmpl % (names[h_name[h]], h_sfx[i], pid, tid, h_ts[i], h_dur[i], cats[etype], h_rs[i], h_re[i]))
                count += 1
                owned = rt_by_owner.get(h)
                if owned:
                    count += runtimes(owned, tid)
                owned = mem_by_owner.get(h)
                if owned:
                    count += mems(owned)

    info = trace.extra_info()
    for p, tid in sorted(pid_tids):
        tname = info.get(str(tid), "")
        add(
            L.meta_thread
            % (
                p,
                tid,
                p,
                p,
                tid,
                p,
                p,
                tid,
                tid,
                tname,
                p,
                tid,
                tid,
                tname,
                p,
                tid,
                p,
                p,
                tid,
                tid * 2,
                p,
                tid,
                tid * 2 + 1,
            )
        )
        count += 7
    for d, s in sorted(dev_streams):
        add(L.meta_device % (d, s, d, "GPU", d, s, s, d, s, d + 0x10000000, d, s, s))
        count += 4
    add(L.events_close)
    add(L.extra_open)
    items = list(info.items())
    for i, (k, v) in enumerate(items):
        add((L.extra_item if i < len(items) - 1 else L.extra_last) % (k, v))
    add(L.extra_close)
    add(L.end)
    sink.flush()
    return count


def count_trace_events(trace: RankTrace, trees: NodeTrees) -> int:
    """How many trace events :func:`write_trace` writes for ``trace``, without writing."""
    n_dev = sum(len(v) for v in trees.dev_by_rt.values())
    streams = {trace.d_stream[d] for v in trees.dev_by_rt.values() for d in v}
    return trace.n_host + 2 * trace.n_runtime + 2 * n_dev + trace.n_mem + 7 * len(trees.threads) + 4 * len(streams)
