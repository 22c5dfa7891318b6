"""The timeline: a columnar index of a trace's slices, and the level-of-detail queries over it.

The index is built by the per-file job (jobs.run_job) from the same parse as the trace's summary, and
written as a compact binary index file in the cache folder (``timeline-v3/``), memory-mapped by the
request threads; the store (TimelineStore) only opens these files and asks the loader to run a file's
job again when its index is missing. The file ends with a CRC-32 of everything before it and its length: an index that is cut short,
has flipped bytes or is not an index is a miss (deleted and built again), never drawn. Every query then
touches only the rows of the window it asks for:

- events are grouped into *lanes* (track, depth), each lane sorted by start, with its longest slice,
  so the slices overlapping a window are one ``searchsorted`` pair away;
- slices shorter than a pixel of the window are merged with their short neighbours less than a pixel
  apart into blocks ("merged N events"), so what is sent grows with the pixels, not with the events;
- a lane never sends more than ``LANE_CAP`` items (coarser merging when it would).

Tracks: each host thread (host events nested by depth, CUDA runtime calls one row under the host event
that holds them) and each GPU stream (kernels, memcpy, memset). Event ids are positions in the index
(lane order); they stay valid for one version of one file.

Names are stored as one UTF-8 blob with explicit offsets (``names_ptr``), so any name, ``\0`` and empty
ones included, reads back as it was.

The package, one module per job (``from tb_paddle_profile.timeline import X`` works for every
name below):

- ``tracks``: the tracks (host threads, GPU streams; kinds named by the protobuf's TrackKind) and
  the event kinds of the index;
- ``counters``: the counter tracks (memory allocated / reserved per place, GPU utilization per
  device): built with the index, answered one value per pixel bin (``counters_of``, ``counter_bins``);
- ``build``: a trace's index from its tables and tree (``build_index``), in the per-file job or in a
  worker process (``index_in_worker``, ``build_file_index``);
- ``storage``: the index file (layout, ``encode_parts``, ``write_index``, ``TimelineIndex``);
- ``levels``: windows and levels of detail over an open index (``query_lane``, ``merge_lane``),
  an event's details, search, range sums;
- ``chrome``: the ``trace_window`` export as Chrome-tracing JSON, sized and bounded;
- ``store``: ``TimelineStore``, the plugin's open indexes and their builds;
- ``messages``: the protobuf answers of the timeline routes.
- ``runindex``: the run-level index of a span's ranks (names → ranks and first events, per-rank sums
  and extents) that ``timeline_search`` and ``timeline_range`` answer from (``RunIndex``,
  ``run_search_message``, ``run_range_message``; ``TimelineStore.run_index``);
- ``remote``: the queries over many ranks (a window panned to, a search, a range, a run index's build)
  answered in the plugin's timeline worker process from the index files, out of TensorBoard's GIL;
- ``members``: the matched collective instance of a selected slice, with each member rank's slice
  (``instance_of``, ``event_at``, ``instance_message``; route ``timeline_instance``);
- ``compact``: the compact multi-rank timeline, one row of compute / communication / idle bins per rank
  over one step, in the server's order (``row_bins``, ``compact_message``; route ``timeline_compact``).
"""

from __future__ import annotations

from .counters import counter_bins, counters_of
from .build import build_file_index, build_index, index_in_worker
from .chrome import (
    DEFAULT_WINDOW_MAX_MB,
    ENV_WINDOW_MAX_MB,
    chrome_chunks,
    chrome_subset,
    window_limit_bytes,
    window_size,
)
from .levels import (
    FLOW_CAP,
    LANE_CAP,
    MATCH_CAP,
    MAX_PX,
    event_details,
    merge_lane,
    query_lane,
    range_sums,
    row_of,
    search,
    type_name,
)
from .members import event_at, instance_message, instance_of
from .runindex import RunIndex, build_run_index
from .runindex import range_message as run_range_message
from .runindex import search_message as run_search_message
from .messages import WINDOW_MAX_BYTES, WINDOW_MAX_RANKS, event_message, range_message, search_message, window_message
from .storage import (
    INDEX_VERSION,
    MAGIC,
    TRAILER_MAGIC,
    CorruptIndex,
    TimelineIndex,
    encode_index,
    encode_parts,
    write_index,
)
from .store import TimelineStore
from .tracks import (
    EVENT_DEVICE,
    EVENT_HOST,
    EVENT_RUNTIME,
    GPU_STREAM,
    HOST_THREAD,
    KIND_DEVICE,
    KIND_HOST,
    KIND_RUNTIME,
    TYPE_NAMES,
)

__all__ = [
    "counter_bins",
    "counters_of",
    "build_file_index",
    "build_index",
    "index_in_worker",
    "DEFAULT_WINDOW_MAX_MB",
    "ENV_WINDOW_MAX_MB",
    "chrome_chunks",
    "chrome_subset",
    "window_limit_bytes",
    "window_size",
    "FLOW_CAP",
    "LANE_CAP",
    "MATCH_CAP",
    "MAX_PX",
    "event_details",
    "merge_lane",
    "query_lane",
    "range_sums",
    "row_of",
    "search",
    "type_name",
    "event_at",
    "instance_message",
    "instance_of",
    "RunIndex",
    "build_run_index",
    "run_range_message",
    "run_search_message",
    "WINDOW_MAX_BYTES",
    "WINDOW_MAX_RANKS",
    "event_message",
    "range_message",
    "search_message",
    "window_message",
    "INDEX_VERSION",
    "MAGIC",
    "TRAILER_MAGIC",
    "CorruptIndex",
    "TimelineIndex",
    "encode_index",
    "encode_parts",
    "write_index",
    "TimelineStore",
    "EVENT_DEVICE",
    "EVENT_HOST",
    "EVENT_RUNTIME",
    "GPU_STREAM",
    "HOST_THREAD",
    "KIND_DEVICE",
    "KIND_HOST",
    "KIND_RUNTIME",
    "TYPE_NAMES",
]
