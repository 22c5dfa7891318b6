"""The timeline's tracks and event kinds.

A track is a host thread (kind HOST_THREAD: host events nested by depth, each CUDA runtime call one row
under the host event that holds it) or a GPU stream (kind GPU_STREAM: kernels, memcpy, memset); the
kinds are the protobuf's TrackKind, stored in the index header as those numbers. The busiest thread
comes first (the training loop), then the other threads by tid, then the streams by (device, stream).

Each event of the index has an event kind (EVENT_HOST, EVENT_RUNTIME, EVENT_DEVICE: which table of
the reader it comes from, stored in ``ev_kind``) and its row in that table (``ev_row``)."""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import timeline_pb2 as tpb


# Track kinds (TimelineTrack.kind)
HOST_THREAD = int(tpb.HOST_THREAD)
GPU_STREAM = int(tpb.GPU_STREAM)

# Event kinds (the index's ev_kind column): the reader's table the event comes from
EVENT_HOST, EVENT_RUNTIME, EVENT_DEVICE = 0, 1, 2
KIND_HOST, KIND_RUNTIME, KIND_DEVICE = EVENT_HOST, EVENT_RUNTIME, EVENT_DEVICE  # the names used before
TYPE_NAMES = list(et.TYPE_NAMES)


def tracks_of(t) -> Tuple[List[dict], Dict[int, int], Dict[Tuple[int, int], int]]:
    """The tracks of a trace's tables (dicts as stored in the index header, without their depth and
    event count), and the track of each thread and of each (device, stream)."""
    threads = sorted(set(t.host.tid.tolist()) | set(t.runtime.tid.tolist()))
    # The busiest thread first (the training loop), then by tid.
    busy = {tid: int((t.host.tid == tid).sum()) for tid in threads}
    threads.sort(key=lambda tid: (-busy[tid], tid))
    streams = sorted(set(zip(t.device.id.tolist(), t.device.stream.tolist())))
    tracks: List[dict] = []
    thread_track = {}
    for tid in threads:
        thread_track[tid] = len(tracks)
        name = t.thread_names.get(tid, "")
        tracks.append(
            {
                "id": len(tracks),
                "kind": HOST_THREAD,
                "tid": int(tid),
                "device": -1,
                "stream": -1,
                "label": f"thread {tid}" + (f" · {name}" if name and name != str(tid) else ""),
            }
        )
    stream_track = {}
    for dev, stream in streams:
        stream_track[(dev, stream)] = len(tracks)
        tracks.append(
            {
                "id": len(tracks),
                "kind": GPU_STREAM,
                "tid": -1,
                "device": int(dev),
                "stream": int(stream),
                "label": f"GPU {dev} · stream {stream}",
            }
        )
    return tracks, thread_track, stream_track


def thread_track_of(tids: np.ndarray, thread_track: Dict[int, int]) -> np.ndarray:
    """The track of each thread id (every one of them must have a track)."""
    keys = np.array(sorted(thread_track), dtype=np.int64)
    vals = np.array([thread_track[k] for k in keys.tolist()], dtype=np.int32)
    return vals[np.searchsorted(keys, tids)] if len(tids) else np.zeros(0, np.int32)


def stream_track_of(device: np.ndarray, stream: np.ndarray, stream_track: Dict[Tuple[int, int], int]) -> np.ndarray:
    """The track of each (device, stream) pair."""
    if not len(device):
        return np.zeros(0, np.int32)
    streams = list(stream_track)
    skey = device * (1 << 32) + stream
    keys = np.array(sorted(d * (1 << 32) + s for d, s in streams), dtype=np.int64)
    vals = np.array([stream_track[(d, s)] for d, s in streams], dtype=np.int32)
    return vals[np.searchsorted(keys, skey)]
