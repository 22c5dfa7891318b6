"""Building a trace's index from its tables and tree (build_index), in the per-file job or in a
worker process (index_in_worker)."""

from __future__ import annotations

import json
import os
import traceback
from typing import Dict, Optional, Tuple

import numpy as np

from .counters import counters_of
from .storage import INDEX_VERSION, one_line, write_index
from .tracks import KIND_DEVICE, KIND_HOST, KIND_RUNTIME, stream_track_of, thread_track_of, tracks_of


def _depths(tables, tree) -> Tuple[np.ndarray, np.ndarray]:
    host_depth = (tree.host_depth - 1).astype(np.int32)
    rt_depth = np.zeros(len(tables.runtime.tid), dtype=np.int32)
    owned = tree.rt_host >= 0
    rt_depth[owned] = tree.host_depth[tree.rt_host[owned]].astype(np.int32)
    return host_depth, rt_depth


def build_index(tables, tree) -> Tuple[dict, Dict[str, np.ndarray]]:
    """The index of one trace as (header, arrays)."""
    t = tables
    host_depth, rt_depth = _depths(t, tree)
    tracks, thread_track, stream_track = tracks_of(t)

    n_h, n_r, n_d = len(t.host.tid), len(t.runtime.tid), len(t.device.id)
    h_track = thread_track_of(t.host.tid, thread_track)
    r_track = thread_track_of(t.runtime.tid, thread_track)
    d_track = stream_track_of(t.device.id, t.device.stream, stream_track)

    track = np.concatenate([h_track, r_track, d_track]).astype(np.int32)
    depth = np.concatenate([host_depth, rt_depth, np.zeros(n_d, np.int32)])
    start = np.concatenate([t.host.start, t.runtime.start, t.device.start]).astype(np.int64)
    end = np.concatenate([t.host.end, t.runtime.end, t.device.end]).astype(np.int64)
    end = np.maximum(end, start)
    name = np.concatenate([t.host.name, t.runtime.name, t.device.name]).astype(np.int32)
    kind = np.concatenate(
        [np.full(n_h, KIND_HOST, np.int8), np.full(n_r, KIND_RUNTIME, np.int8), np.full(n_d, KIND_DEVICE, np.int8)]
    )
    etype = np.concatenate([t.host.type, t.runtime.type, t.device.type]).astype(np.int16)
    row = np.concatenate([np.arange(n_h), np.arange(n_r), np.arange(n_d)]).astype(np.int32)

    order = np.lexsort((-end, start, depth, track))
    track, depth, start, end = track[order], depth[order], start[order], end[order]
    name, kind, etype, row = name[order], kind[order], etype[order], row[order]
    n = len(order)
    lane_key = track.astype(np.int64) * 65536 + depth
    brk = np.nonzero(np.diff(lane_key))[0] + 1 if n else np.zeros(0, np.int64)
    lane_ptr = np.concatenate([[0], brk, [n]]).astype(np.int64) if n else np.zeros(1, np.int64)
    lane_first = lane_ptr[:-1]
    lane_track = track[lane_first].astype(np.int32)
    lane_depth = depth[lane_first].astype(np.int32)
    lane_maxdur = (np.maximum.reduceat(end - start, lane_first) if n else np.zeros(0, np.int64)).astype(np.int64)

    pos = np.empty(n, dtype=np.int32)
    pos[order] = np.arange(n, dtype=np.int32)
    host_pos, rt_pos, dev_pos = pos[:n_h], pos[n_h : n_h + n_r], pos[n_h + n_r :]

    for tr in tracks:
        sel = lane_track == tr["id"]
        tr["depth"] = int(lane_depth[sel].max()) + 1 if sel.any() else 1
        tr["events"] = int((lane_ptr[1:] - lane_ptr[:-1])[sel].sum())

    name_bytes = [n.encode("utf-8", "surrogatepass") for n in t.names]
    names_ptr = np.zeros(len(name_bytes) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in name_bytes], out=names_ptr[1:])
    names_blob = b"".join(name_bytes)
    shape_rows = np.array(sorted(t.host.shapes), dtype=np.int32)
    shape_text = [json.dumps(list(t.host.shapes[r])) for r in shape_rows.tolist()]
    shape_bytes = [s.encode("utf-8", "surrogatepass") for s in shape_text]
    shape_ptr = np.zeros(len(shape_bytes) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in shape_bytes], out=shape_ptr[1:])

    counters, counter_arrays = counters_of(t)
    starts = [a.min() for a in (t.host.start, t.runtime.start, t.device.start) if a.size]
    ends = [a.max() for a in (t.host.end, t.runtime.end, t.device.end) if a.size]
    header = {
        "version": INDEX_VERSION,
        "origin_unix_ns": int(t.origin_unix_ns),
        "start_ns": int(min(starts)) if starts else 0,
        "end_ns": int(max(ends)) if ends else 0,
        "pid": int(t.pid),
        "tracks": tracks,
        "devices": {str(d.id): d.name for d in t.devices},
        "counters": counters,
    }
    arrays = {
        "ev_start": start,
        "ev_end": end,
        "ev_name": name,
        "ev_kind": kind,
        "ev_type": etype,
        "ev_row": row,
        "lane_ptr": lane_ptr,
        "lane_track": lane_track,
        "lane_depth": lane_depth,
        "lane_maxdur": lane_maxdur,
        "host_pos": host_pos,
        "rt_pos": rt_pos,
        "dev_pos": dev_pos,
        "host_parent": tree.host_parent.astype(np.int32),
        "host_type": t.host.type.astype(np.int16),
        "rt_host": tree.rt_host.astype(np.int32),
        "rt_corr": t.runtime.corr.astype(np.int64),
        "dev_rt": tree.dev_rt.astype(np.int32),
        "dev_corr": t.device.corr.astype(np.int64),
        "dev_grid": t.device.grid.astype(np.int32),
        "dev_block": t.device.block.astype(np.int32),
        "dev_registers": t.device.registers.astype(np.int32),
        "dev_shared_memory": t.device.shared_memory.astype(np.int64),
        "dev_blocks_per_sm": t.device.blocks_per_sm,
        "dev_warps_per_sm": t.device.warps_per_sm,
        "dev_occupancy": t.device.occupancy,
        "dev_bytes": t.device.bytes.astype(np.int64),
        "names_blob": np.frombuffer(names_blob, dtype=np.uint8),
        "names_ptr": names_ptr,
        "shape_rows": shape_rows,
        "shape_ptr": shape_ptr,
        "shape_blob": np.frombuffer(b"".join(shape_bytes), dtype=np.uint8),
        **counter_arrays,
    }
    return header, arrays


def _parse(read_bytes, file_name: str, parse_workers: int = 1, inflate_share: int = 1):
    from tb_paddle_profile.trace.event_tree import build_tree
    from tb_paddle_profile.trace.reader import max_inflate_bytes, read_trace

    # in a box: the reader drops the bytes as soon as the events are read
    from tb_paddle_profile.core.settings import note_parse

    box = [read_bytes()]  # the reader drops the bytes as soon as the events are read
    note_parse(os.path.basename(file_name))
    tables = read_trace(box, os.path.basename(file_name), parse_workers, max_inflate=max_inflate_bytes(inflate_share))
    tree = build_tree(tables)
    return build_index(tables, tree)


def build_file_index(read_bytes, file_name: str, target: str, parse_workers: int = 1, trace: str = "") -> dict:
    """Worker side: parse the trace (`parse_workers` cores reading a large file together) and
    write its index to ``target`` atomically (``trace``: the CacheKey digest the index names)."""
    header, arrays = _parse(read_bytes, file_name, parse_workers)
    if trace:
        header = dict(header, trace=trace)
    size = write_index(target, header, arrays)
    return {"events": int(len(arrays["ev_start"])), "bytes": size}


def index_in_worker(
    fs,
    path: str,
    file_name: str,
    size: int,
    target: str,
    parse_workers: int = 1,
    root: Optional[str] = None,
    fallback: Optional[str] = None,
    trace: str = "",
    inflate_share: int = 1,
) -> dict:
    """Runs in a worker process (picklable arguments only): read the trace under the logdir's path policy
    (``root``: the logdir), build its index, write it to ``target`` or, when that folder is not
    writable, to ``fallback``. ``trace``: the CacheKey digest the index names (TimelineIndex checks it).
    ``inflate_share``: the builds that may run at once, among which a .gz's inflate bound divides the
    memory (reader.max_inflate_bytes).

    Returns ``{"ok": True, "path", "note", "events", "bytes"}`` or ``{"ok": False, "kind", "error"}`` with
    kind "trace" (the file is not a usable trace: permanent for this version of it), "transient" (the
    store could not be read, nothing could be written, memory: worth retrying; "retry": False when not
    right away) or "bug" (an error of ours: the one line of errors.our_bug, and "traceback")."""
    from tb_paddle_profile.core.errors import TraceError, TransientError, our_bug
    from tb_paddle_profile.core.paths import read_checked

    def read() -> bytes:
        try:
            data = read_checked(fs, path, root, file_name)
        except (TraceError, TransientError, MemoryError):
            raise
        except FileNotFoundError:
            raise TransientError(file_name, "the file no longer exists") from None
        except Exception as err:  # OSError, a store's own error types (botocore, gcsfs): the store, not the file
            raise TransientError(file_name, f"cannot read: {one_line(err)}") from None
        if len(data) != size:
            raise TraceError(file_name, "the file changed while its timeline was being built")
        return data

    try:
        header, arrays = _parse(read, file_name, parse_workers, inflate_share)
        if trace:
            header = dict(header, trace=trace)
    except TraceError as err:
        return {"ok": False, "kind": "trace", "error": str(err)}
    except TransientError as err:
        return {"ok": False, "kind": "transient", "error": str(err)}
    except MemoryError:
        return {
            "ok": False,
            "kind": "transient",
            "retry": False,
            "error": f"{file_name}: out of memory while building its timeline",
        }
    except Exception as err:
        return {"ok": False, "kind": "bug", "error": our_bug(file_name, err), "traceback": traceback.format_exc()}
    note = ""
    try:
        written, nbytes = target, write_index(target, header, arrays)
    except OSError as err:
        if fallback is None:
            return {
                "ok": False,
                "kind": "transient",
                "error": f"{file_name}: cannot write its timeline index: {one_line(err)}",
            }
        try:
            written, nbytes = fallback, write_index(fallback, header, arrays)
        except OSError as err2:
            return {
                "ok": False,
                "kind": "transient",
                "error": f"{file_name}: cannot write its timeline index (cache folder: {one_line(err)}; "
                f"temporary folder: {one_line(err2)})",
            }
        note = f"cache folder not writable ({one_line(err)})"
    except Exception as err:
        return {"ok": False, "kind": "bug", "error": our_bug(file_name, err), "traceback": traceback.format_exc()}
    return {"ok": True, "path": written, "note": note, "events": int(len(arrays["ev_start"])), "bytes": nbytes}
