"""Each rank's trace in the byte layout of Paddle 3.3.1's ChromeTracingLogger (schema 1.0.2):
host events in breadth-first order, each followed by its runtime calls and their device events with
the flow arrows, then the metadata records and ExtraInfo. Times are the rank's own clock (its host's
offset and drift from the global clock), ``ts`` integer us truncated, ``dur`` and the relative
``start_time``/``end_time`` through float32 as the C++ does."""

from __future__ import annotations

import datetime as _dt
from typing import Dict, List, TextIO

import numpy as np

from .program import PYTHON_SIDE

EPOCH_NS = 1_780_000_000_000_000_000

_HEAD = (
    '\n  {\n    "displayTimeUnit": "ms",\n    "schemaVersion": "1.0.2",\n    "span_index": "0",'
    '\n    "deviceProperties": [\n      {\n        "id": %d, "name": "NVIDIA H100 80GB HBM3", '
    '"totalGlobalMem": 85045379072,\n        "computeMajor": 9, "computeMinor": 0,\n'
    '        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,\n'
    '        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,\n'
    '        "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 233472,\n'
    '        "smCount": 132, "sharedMemPerBlockOptin": 232448\n      }],\n    '
    '\n    "traceEvents": [\n  '
)
_X = '\n  {\n    "name": "%s[%s]", "pid": %d, "tid": "%d(%s)",\n    "ts": %d, "dur": %.3f,\n    "ph": "X", "cat": "%s",\n'
_HOST = _X + (
    '    "cname": "thread_state_runnable",\n    "args": {\n      "start_time": "%.3f us",\n'
    '      "end_time": "%.3f us"\n    }\n  },\n  '
)
_OPER = _X + (
    '    "cname": "thread_state_runnable",\n    "args": {\n      "start_time": "%.3f us",\n'
    '      "end_time": "%.3f us",\n      "input_shapes": {},\n      "input_dtypes": {},\n'
    '      "callstack": ""\n    }\n  },\n  '
)
_RT = _X + (
    '    "cname": "thread_state_running",\n    "args": {\n      "correlation id": %d,\n'
    '      "start_time": "%.3f us",\n      "end_time": "%.3f us"\n    }\n  },\n  '
)
_FLOW_S = '\n  {\n    "name": "launch", "id": %d, "pid": %d, "tid": "%d(C++)",\n    "ts": %d,\n    "ph": "s", "cat": "async"\n  },\n  '
_FLOW_F = '\n  {\n    "name": "launch", "id": %d, "pid": %d, "tid": %d,\n    "ts": %d,\n    "ph": "f", "cat": "async"\n  },\n  '
_FLOW_FB = (
    '\n  {\n    "name": "launch", "id": %d, "pid": %d, "tid": %d,\n    "ts": %d,\n'
    '    "ph": "f", "cat": "async", "bp": "e"\n  },\n  '
)
_DEV = '\n  {\n    "name": "%s[%s]", "pid": %d, "tid": %d,\n    "ts": %d, "dur": %.3f,\n    "ph": "X", "cat": "%s",\n'
_KERNEL = _DEV + (
    '    "cname": "cq_build_failed",\n    "args": {\n      "start_time": "%.3f us",\n'
    '      "end_time": "%.3f us",\n      "device": %d, "context": 1,\n'
    '      "stream": %d, "correlation id": %d,\n      "registers per thread": %d,\n'
    '      "shared memory": %d,\n      "blocks per SM": %s,\n      "warps per SM": %s,\n'
    '      "grid": [%d, 1, 1],\n      "block": [%d, 1, 1],\n'
    '      "theoretical achieved occupancy %%": %s\n    }\n  },\n  '
)
_MEMCPY = _DEV + (
    '    "cname": "cq_build_failed",\n    "args": {\n      "start_time": "%.3f us",\n'
    '      "end_time": "%.3f us",\n      "stream": %d, "correlation id": %d,\n'
    '      "bytes": %d, "memory bandwidth (GB/s)": %.3f\n    }\n  },\n  '
)
_META_T = "".join(
    '\n  {\n    "name": "%s", "pid": %%d, "tid": "%%d(%s)",\n    "ph": "M",\n    "args": {\n      %s\n    }\n  },'
    % (n, side, a)
    for n, side, a in (
        ("process_name", "Python", '"name": "Process %d (CPU)"'),
        ("process_name", "C++", '"name": "Process %d (CPU)"'),
        ("thread_name", "Python", '"name": "thread %d:MainThread(Python)"'),
        ("thread_name", "C++", '"name": "thread %d:MainThread(C++)"'),
    )
) + (
    '\n  {\n    "name": "process_sort_index", "pid": %d, "tid": %d,\n    "ph": "M",\n    "args": {\n'
    '      "sort_index": %d\n    }\n  },'
    '\n  {\n    "name": "thread_sort_index", "pid": %d, "tid": "%d(Python)",\n    "ph": "M",\n    "args": {\n'
    '      "sort_index": %d\n    }\n  },'
    '\n  {\n    "name": "thread_sort_index", "pid": %d, "tid": "%d(C++)",\n    "ph": "M",\n    "args": {\n'
    '      "sort_index": %d\n    }\n  },\n  '
)
_META_D = (
    '\n  {\n    "name": "process_name", "pid": %d, "tid": %d,\n    "ph": "M",\n    "args": {\n'
    '      "name": "Device %d (GPU)"\n    }\n  },'
    '\n  {\n    "name": "thread_name", "pid": %d, "tid": %d,\n    "ph": "M",\n    "args": {\n'
    '      "name": "stream %d"\n    }\n  },'
    '\n  {\n    "name": "process_sort_index", "pid": %d, "tid": %d,\n    "ph": "M",\n    "args": {\n'
    '      "sort_index": %d\n    }\n  },'
    '\n  {\n    "name": "thread_sort_index", "pid": %d, "tid": %d,\n    "ph": "M",\n    "args": {\n'
    '      "sort_index": %d\n    }\n  },\n  '
)
_TAIL = (
    '\n  {}\n  ],\n  \n  "ExtraInfo": {\n     "%d": "MainThread",\n   \n'
    '     "Process Cpu Utilization": "1.203000",\n   \n     "System Cpu Utilization": "0.287000"\n   \n  }\n  }\n'
)


def file_name(worker: str, export_ns: int) -> str:
    when = _dt.datetime.fromtimestamp(export_ns // 1000 / 1e6, tz=_dt.timezone.utc)
    return "%s_time_%s.paddle_trace.json" % (worker, when.strftime("%Y_%m_%d_%H_%M_%S_%f"))


def _timing(start: np.ndarray, end: np.ndarray, t0: int):
    """(ts, dur us, name suffix, start_time, end_time) as Paddle's C++ computes them."""
    dur_us = (end - start).astype(np.float32) / np.float32(1000)
    dur_ms = dur_us / np.float32(1000)
    shown = dur_ms * np.float32(1000)
    sfx = [("%.3f ms" % m) if m > 1.0 else ("%.3f us" % u) for m, u in zip(dur_ms.tolist(), shown.tolist())]
    rel_s = (start - t0).astype(np.float32) / np.float32(1000)
    rel_e = (end - t0).astype(np.float32) / np.float32(1000)
    return (start // 1000).tolist(), dur_us.tolist(), sfx, rel_s.tolist(), rel_e.tolist()


class _Out:
    def __init__(self, f: TextIO):
        self.f, self.parts = f, []

    def add(self, s: str) -> None:
        self.parts.append(s)
        if len(self.parts) > 4096:
            self.flush()

    def flush(self) -> None:
        self.f.write("".join(self.parts))
        self.parts = []


def write_rank(f: TextIO, st, lane: int, to_local, pid: int, device: int, first_step: int) -> Dict[str, int]:
    """Write one rank (lane ``lane`` of StageRun ``st``) recorded steps to ``f``; ``to_local`` maps global
    ns arrays to this rank's absolute clock (int64 ns). Returns counts."""
    p = st.p
    ev = [e for e in range(len(p.e_name)) if p.e_step[e] >= first_step]
    ev.sort(key=lambda e: (p.e_depth[e], st.e_start[e, lane]))
    h_s = to_local(st.e_start[ev, lane])
    h_e = to_local(st.e_end[ev, lane])
    t0 = int(h_s.min())
    rts = [r for r in range(len(p.r_name)) if p.e_step[p.r_parent[r]] >= first_step]
    r_s = to_local(st.r_start[rts, lane])
    r_e = to_local(st.r_end[rts, lane])
    ks = [p.r_kernel[r] for r in rts if p.r_kernel[r] >= 0]
    k_s = to_local(st.k_start[ks, lane])
    k_e = to_local(st.k_end[ks, lane])
    H = _timing(h_s, h_e, t0)
    R = _timing(r_s, r_e, t0)
    D = _timing(k_s, k_e, t0)
    r_row = {r: i for i, r in enumerate(rts)}
    k_row = {k: i for i, k in enumerate(ks)}
    by_parent: Dict[int, List[int]] = {}
    for r in rts:
        by_parent.setdefault(p.r_parent[r], []).append(r)
    out = _Out(f)
    out.add(_HEAD % device)
    tid = pid
    streams = set()
    corr0 = 1000
    for i, e in enumerate(ev):
        et = p.e_type[e]
        if et == "Operator":
            out.add(_OPER % (p.e_name[e], H[2][i], pid, tid, "C++", H[0][i], H[1][i], et, H[3][i], H[4][i]))
        else:
            out.add(
                _HOST
                % (
                    p.e_name[e],
                    H[2][i],
                    pid,
                    tid,
                    "Python" if et in PYTHON_SIDE else "C++",
                    H[0][i],
                    H[1][i],
                    et,
                    H[3][i],
                    H[4][i],
                )
            )
        for r in by_parent.get(e, ()):
            j = r_row[r]
            corr = corr0 + r
            out.add(
                _RT % (p.r_name[r], R[2][j], pid, tid, "C++", R[0][j], R[1][j], "CudaRuntime", corr, R[3][j], R[4][j])
            )
            out.add(_FLOW_S % (corr, pid, tid, int(r_s[j] + r_e[j]) // 2 // 1000))
            k = p.r_kernel[r]
            if k < 0:
                continue
            d = k_row[k]
            stream = p.k_stream[k]
            streams.add(stream)
            if p.k_cat[k] == "Memcpy":
                span = int(k_e[d] - k_s[d])
                nbytes = int(p.k_base[k] * 24)
                out.add(
                    _MEMCPY
                    % (
                        p.k_name[k],
                        D[2][d],
                        device,
                        stream,
                        D[0][d],
                        D[1][d],
                        "Memcpy",
                        D[3][d],
                        D[4][d],
                        stream,
                        corr,
                        nbytes,
                        nbytes / max(span, 1),
                    )
                )
            else:
                gx, _, _, block = p.k_grid[k]
                bps = np.float32(gx) / np.float32(132)
                wps = bps * np.float32(block) / np.float32(32)
                occ = min(1.0, float(wps) * 32 / 2048) * 100
                out.add(
                    _KERNEL
                    % (
                        p.k_name[k],
                        D[2][d],
                        device,
                        stream,
                        D[0][d],
                        D[1][d],
                        "Kernel",
                        D[3][d],
                        D[4][d],
                        device,
                        stream,
                        corr,
                        96 if p.k_ckind[k] else 168,
                        0 if p.k_ckind[k] else 98304,
                        "%f" % bps,
                        "%f" % wps,
                        gx,
                        block,
                        "%.3f" % occ,
                    )
                )
            if k_e[d] - k_s[d] < 1000:
                out.add(_FLOW_F % (corr, device, stream, int(k_s[d]) // 1000))
            else:
                out.add(_FLOW_FB % (corr, device, stream, int(k_s[d] + k_e[d]) // 2 // 1000))
    out.add(
        _META_T
        % (
            pid,
            tid,
            pid,
            pid,
            tid,
            pid,
            pid,
            tid,
            tid,
            pid,
            tid,
            tid,
            pid,
            tid,
            pid,
            pid,
            tid,
            2 * tid,
            pid,
            tid,
            2 * tid + 1,
        )
    )
    for s in sorted(streams):
        out.add(_META_D % (device, s, device, device, s, s, device, s, device + 0x10000000, device, s, s))
    out.add(_TAIL % tid)
    out.flush()
    return {"host": len(ev), "runtime": len(rts), "device": len(ks), "t0": t0, "t_end": int(max(h_e.max(), k_e.max()))}
