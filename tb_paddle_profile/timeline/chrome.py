"""The trace_window export: the slices of a window as Chrome-tracing JSON (Paddle's own layout),
sized before it is built (window_size) and refused past $TB_PADDLE_PROFILE_WINDOW_MAX_MB.

Besides the slices ("X"), the window carries what Perfetto needs to show it as Paddle's own trace does:
process names (the host process by its trace's worker, each GPU by its number) and thread names,
launch -> kernel flows ("s" on the CUDA runtime call, "f" on the device event, the correlation id as
the flow id; a flow whose other end lies outside the window is an unpaired end, which viewers ignore),
and the memory of each place: Paddle's "[memory]" instants and a counter track (allocated, reserved)
at each memory event of the window, from the index's memory counters.
"""

from __future__ import annotations

import itertools
import json
from typing import Dict, Generator, Iterable, Iterator, List, Tuple

import numpy as np

from tb_paddle_profile.core import settings
from tb_paddle_profile.trace import event_types as et
from .levels import type_name
from .storage import TimelineIndex
from .tracks import HOST_THREAD, KIND_DEVICE, KIND_HOST, KIND_RUNTIME, TYPE_NAMES


ENV_WINDOW_MAX_MB = settings.WINDOW_MAX_MB
DEFAULT_WINDOW_MAX_MB = 256  # trace_window refuses windows whose JSON may exceed this (0: no bound)


def _window_blocks(idx: TimelineIndex, ws: int, we: int, block: int = 1 << 16) -> Iterator[np.ndarray]:
    """The positions of the events overlapping [ws, we], lane by lane, at most ``block`` at a time (so that
    what a window costs in memory does not grow with the window)."""
    a = idx.a
    for lane in range(idx.n_lanes):
        p0, p1 = int(a["lane_ptr"][lane]), int(a["lane_ptr"][lane + 1])
        st = a["ev_start"][p0:p1]
        lo = p0 + int(np.searchsorted(st, ws - int(a["lane_maxdur"][lane]), "left"))
        hi = p0 + int(np.searchsorted(st, we, "right"))
        for b0 in range(lo, hi, block):
            b1 = min(hi, b0 + block)
            pos = np.nonzero(a["ev_end"][b0:b1] >= ws)[0] + b0
            if len(pos):
                yield pos


def _head_json(file_name: str, ws: int, we: int) -> str:
    head = {
        "displayTimeUnit": "ms",
        "schemaVersion": "1.0.2",
        "ExtraInfo": {"trimmed_from": file_name, "window_ns": f"{ws},{we}"},
    }
    return json.dumps(head)[:-1] + ', "traceEvents": [\n'


def _worker(file_name: str) -> str:
    return file_name.split("_time_")[0] if "_time_" in file_name else file_name


def _meta_events(idx: TimelineIndex, file_name: str = "") -> List[str]:
    pid = idx.header.get("pid", 0)
    out = [
        json.dumps(
            {
                "name": "process_name",
                "ph": "M",
                "pid": pid,
                "args": {"name": f"{_worker(file_name) or 'host'} (pid {pid})"},
            }
        )
    ]
    devices = sorted({tr["device"] for tr in idx.tracks if tr["kind"] != HOST_THREAD})
    out.extend(json.dumps({"name": "process_name", "ph": "M", "pid": d, "args": {"name": f"GPU {d}"}}) for d in devices)
    for tr in idx.tracks:
        if tr["kind"] == HOST_THREAD:
            out.append(
                json.dumps(
                    {"name": "thread_name", "ph": "M", "pid": pid, "tid": tr["tid"], "args": {"name": tr["label"]}}
                )
            )
        else:
            out.append(
                json.dumps(
                    {
                        "name": "thread_name",
                        "ph": "M",
                        "pid": tr["device"],
                        "tid": tr["stream"],
                        "args": {"name": tr["label"]},
                    }
                )
            )
    return out


def _x_event(name, pid, tid, ts, dur, cat, args) -> str:
    return json.dumps({"name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "ph": "X", "cat": cat, "args": args})


def _flow_event(ph: str, corr: int, pid, tid, ts: float) -> str:
    ev = {"name": "launch", "id": corr, "pid": pid, "tid": tid, "ts": ts, "ph": ph, "cat": "async"}
    if ph == "f":
        ev["bp"] = "e"
    return json.dumps(ev)


def _memory_points(idx: TimelineIndex, ws: int, we: int):
    """(place, times, allocated, reserved) of each place's memory counter points in [ws, we] (index-local
    ns; numpy views of the index, nothing copied)."""
    a = idx.a
    if "ctr_ptr" not in a:
        return
    counters = idx.header.get("counters", [])
    for i, c in enumerate(counters):
        if c.get("kind") != "allocated" or i + 1 >= len(counters) or counters[i + 1].get("kind") != "reserved":
            continue
        p0, p1, q0 = int(a["ctr_ptr"][i]), int(a["ctr_ptr"][i + 1]), int(a["ctr_ptr"][i + 1])
        t = a["ctr_t"][p0:p1]
        lo, hi = int(np.searchsorted(t, ws, "left")), int(np.searchsorted(t, we, "right"))
        if hi > lo:
            place = c["label"][: -len(" allocated")] if c["label"].endswith(" allocated") else c["label"]
            yield place, t[lo:hi], a["ctr_v"][p0 + lo : p0 + hi], a["ctr_v"][q0 + lo : q0 + hi]


def _memory_blocks(idx: TimelineIndex, ws: int, we: int, origin_us: float, block: int) -> Iterator[List[str]]:
    """The memory instants and counter samples of the window, ``block`` points at a time, as JSON texts."""
    pid = idx.header.get("pid", 0)
    tid = next((tr["tid"] for tr in idx.tracks if tr["kind"] == HOST_THREAD), 0)  # Paddle's: a host thread
    for place, t, alloc, reserved in _memory_points(idx, ws, we):
        for b0 in range(0, len(t), block):
            points = zip(
                t[b0 : b0 + block].tolist(), alloc[b0 : b0 + block].tolist(), reserved[b0 : b0 + block].tolist()
            )
            yield list(_memory_events_of(pid, tid, place, points, origin_us))


def _memory_events_of(pid, tid, place: str, points, origin_us: float) -> Iterator[str]:
    for t, alloc, reserved in points:
        ts = origin_us + t / 1000.0
        yield json.dumps(
            {
                "name": "[memory]",
                "pid": pid,
                "tid": tid,
                "ts": ts,
                "ph": "i",
                "s": "t",
                "cat": "Memory",
                "args": {"place": place, "current_allocated": alloc, "current_reserved": reserved},
            }
        )
        yield json.dumps(
            {
                "name": f"memory {place}",
                "pid": pid,
                "ts": ts,
                "ph": "C",
                "args": {"allocated": alloc, "reserved": reserved},
            }
        )


def _times(s: int, e: int) -> dict:
    return {"start_time": f"{s / 1000:.3f} us", "end_time": f"{e / 1000:.3f} us"}


def _kernel_args(args: dict, corr, grid, block, regs, smem, bps, wps, occ) -> dict:
    if corr >= 0:
        args["correlation id"] = corr
    args["grid"], args["block"] = grid, block
    args["registers per thread"], args["shared memory"] = regs, smem
    args["blocks per SM"], args["warps per SM"] = bps, wps
    args["theoretical achieved occupancy %"] = occ
    return args


def _chrome_events(idx: TimelineIndex, pos: np.ndarray, pid: int, origin_us: float) -> List[str]:
    """The Chrome-trace "X" events of the index positions ``pos`` (one lane's), as JSON texts."""
    a = idx.a
    names = idx.names
    tr_ids = a["lane_track"][np.searchsorted(a["lane_ptr"], pos, "right") - 1].tolist()
    starts, ends = a["ev_start"][pos].tolist(), a["ev_end"][pos].tolist()
    kinds, rows = a["ev_kind"][pos].tolist(), a["ev_row"][pos].tolist()
    types, name_ids = a["ev_type"][pos].tolist(), a["ev_name"][pos].tolist()
    out = []
    for tr_id, s, e, kind, row, code, nid in zip(tr_ids, starts, ends, kinds, rows, types, name_ids):
        tr = idx.tracks[tr_id]
        args = _times(s, e)
        if kind == KIND_DEVICE:
            corr = int(a["dev_corr"][row])
            if code == et.KERNEL:
                _kernel_args(
                    args,
                    corr,
                    a["dev_grid"][row].tolist(),
                    a["dev_block"][row].tolist(),
                    int(a["dev_registers"][row]),
                    int(a["dev_shared_memory"][row]),
                    float(a["dev_blocks_per_sm"][row]),
                    float(a["dev_warps_per_sm"][row]),
                    float(a["dev_occupancy"][row]),
                )
            else:
                if corr >= 0:
                    args["correlation id"] = corr
                args["bytes"] = int(a["dev_bytes"][row])
            ev_pid, ev_tid = tr["device"], tr["stream"]
            if corr >= 0:
                out.append(_flow_event("f", corr, ev_pid, ev_tid, origin_us + s / 1000.0))
        else:
            ev_pid, ev_tid = pid, tr["tid"]
            if kind == KIND_RUNTIME:
                corr = int(a["rt_corr"][row])
                if corr >= 0:
                    args["correlation id"] = corr
                    out.append(_flow_event("s", corr, ev_pid, ev_tid, origin_us + s / 1000.0))
            else:
                found = idx.shapes(row)
                if found is not None:
                    try:
                        args["input_shapes"] = json.loads(found[0])
                        args["input_dtypes"] = json.loads(found[1])
                    except ValueError:
                        args.pop("input_shapes", None)
        out.append(
            _x_event(names[nid], ev_pid, ev_tid, origin_us + s / 1000.0, (e - s) / 1000.0, type_name(code), args)
        )
    return out


def _worst_cases() -> Dict[str, int]:
    """The longest JSON text an event of each kind can have with an empty name and no shapes (every number
    at its widest), and what a host event's shapes add besides 5 x their stored bytes."""
    i64, i32, f = -(1 << 63), -(1 << 31), -2.2250738585072014e-308  # the widest int64, int32, float repr
    cat = max(TYPE_NAMES + [str(-(1 << 15))], key=len)
    times = _times(i64, i64)
    base = dict(name="", pid=i64, tid=i64, ts=f, dur=f, cat=cat)
    host = _x_event(args=dict(times), **base)
    runtime = _x_event(args=dict(times, **{"correlation id": i64}), **base)
    kernel = _x_event(args=_kernel_args(dict(times), i64, [i32] * 3, [i32] * 3, i32, i64, f, f, f), **base)
    copy = _x_event(args=dict(times, **{"correlation id": i64, "bytes": i64}), **base)
    shapes = _x_event(args=dict(times, input_shapes=None, input_dtypes=None), **base)
    flow = _flow_event("f", i64, i64, i64, f)
    memory = sum(len(x) + 2 for x in _memory_events_of(i64, i64, "", [(i64, i64, i64)], f))
    return {
        "host": len(host),
        "runtime": len(runtime),
        "kernel": len(kernel),
        "copy": len(copy),
        "shapes": len(shapes) - len(host) - 2 * len("null") + 16,
        "flow": len(flow) + 2,
        "memory": memory,
    }


_WORST = _worst_cases()


def window_limit_bytes() -> int:
    """The bound on a trace_window answer, from ``TB_PADDLE_PROFILE_WINDOW_MAX_MB`` (0: none)."""
    return settings.megabytes(ENV_WINDOW_MAX_MB, DEFAULT_WINDOW_MAX_MB)


def window_size(idx: TimelineIndex, ws: int, we: int, file_name: str = "") -> Tuple[int, int]:
    """(events overlapping [ws, we], an upper bound of the bytes :func:`chrome_chunks` writes for them),
    from the index alone, in memory bounded by a block of events."""
    a = idx.a
    if idx._name_extra is None:  # each name's JSON length beyond the empty name's ""
        idx._name_extra = np.array([len(json.dumps(n)) - 2 for n in idx.names], dtype=np.int64)
    extra = idx._name_extra
    shape_rows = a["shape_rows"]
    shape_len = np.diff(a["shape_ptr"]).astype(np.int64)
    meta = _meta_events(idx, file_name)
    total = len(_head_json(file_name, ws, we).encode()) + sum(len(m) + 2 for m in meta) + 8
    for place, t, _, _ in _memory_points(idx, ws, we):
        total += len(t) * (_WORST["memory"] + 2 * len(json.dumps(place)))
    pid_extra = max(0, len(json.dumps(idx.header.get("pid", 0))) - 20)  # a pid wider than an int64
    events = 0
    for pos in _window_blocks(idx, ws, we):
        events += len(pos)
        kind, code = a["ev_kind"][pos], a["ev_type"][pos]
        host = kind == KIND_HOST
        kernel = (kind == KIND_DEVICE) & (code == et.KERNEL)
        n_host, n_rt, n_kernel = int(host.sum()), int((kind == KIND_RUNTIME).sum()), int(kernel.sum())
        n_copy = len(pos) - n_host - n_rt - n_kernel
        total += (
            n_host * _WORST["host"]
            + n_rt * _WORST["runtime"]
            + n_kernel * _WORST["kernel"]
            + n_copy * _WORST["copy"]
            + 2 * len(pos)  # ",\n" between events
            + pid_extra * (n_host + n_rt)
        )
        total += int(extra[a["ev_name"][pos]].sum())
        total += (len(pos) - n_host) * _WORST["flow"]  # a runtime call or device event may carry a flow end
        if len(shape_rows) and n_host:
            rows = a["ev_row"][pos[host]]
            i = np.minimum(np.searchsorted(shape_rows, rows), len(shape_rows) - 1)
            has = shape_rows[i] == rows
            total += int(has.sum()) * _WORST["shapes"] + 5 * int(shape_len[i[has]].sum())
    return events, total


def chrome_chunks(
    idx: TimelineIndex, ws: int, we: int, file_name: str, chunk: int = 1 << 18, block: int = 1024
) -> Generator[bytes, None, None]:
    """A Chrome-trace JSON of the slices overlapping [ws, we] (index-local ns), for Perfetto, as chunks of
    about ``chunk`` bytes: what is held at once is a chunk and a block of ``block`` events, whatever the
    window."""
    pid = idx.header.get("pid", 0)
    origin_us = idx.origin / 1000.0
    buf: List[str] = [_head_json(file_name, ws, we)]
    size = len(buf[0])
    sep = ""

    def emit(texts: Iterable[str]):
        nonlocal sep, size
        for t in texts:
            buf.append(sep)
            buf.append(t)
            sep = ",\n"
            size += len(t) + 2

    emit(_meta_events(idx, file_name))
    memory = _memory_blocks(idx, ws, we, origin_us, block)
    slices = (_chrome_events(idx, pos, pid, origin_us) for pos in _window_blocks(idx, ws, we, block=block))
    for texts in itertools.chain(memory, slices):
        emit(texts)
        if size >= chunk:
            text = "".join(buf)
            buf.clear()
            size = 0
            data = text.encode("utf-8", "surrogatepass")
            del text
            yield data
    buf.append("\n]}\n")
    yield "".join(buf).encode("utf-8", "surrogatepass")


def chrome_subset(idx: TimelineIndex, ws: int, we: int, file_name: str) -> bytes:
    """The whole of :func:`chrome_chunks` as one bytes object (for tests and small windows)."""
    return b"".join(chrome_chunks(idx, ws, we, file_name))
