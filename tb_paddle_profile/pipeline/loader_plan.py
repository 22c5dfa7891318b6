"""How much the loader may run at once: its worker processes (default_workers), the memory available
(available_memory) against each file's planned peak (memory_estimate, from a gzipped file's inflated size:
read_inflated_sizes), small files sharing a job (BATCH_FILES, BATCH_BYTES), how long a truncated file
counts as still being written (growing_window_s)."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from tb_paddle_profile.core import paths, settings
from tb_paddle_profile.store.cache import CacheKey
from tb_paddle_profile.trace.reader import inflated_size
from tb_paddle_profile.pipeline.discovery import TraceFile
from tb_paddle_profile.pipeline.loader_state import logger


ENV_WORKERS = settings.WORKERS
ENV_GROWING_S = settings.GROWING_S
DEFAULT_GROWING_S = 300.0  # a truncated file modified within this time is still being written
MAX_DEFAULT_WORKERS = 8


MEMORY_FRACTION = 0.6  # of the memory available, for the files in flight
# Peak memory of one parse: a worker's own base plus a multiple of the JSON's size (the bytes, the decoded
# tables, the summary); a gzipped file also holds its compressed bytes while they are inflated.
# Measured: a 70 MB trace peaks at about 2.5x its size above the base.
WORKER_BASE_MEMORY = 150 << 20
JSON_MEMORY_FACTOR = 3
INFLATE_HEAD_BYTES = 64 << 10  # of a .gz, inflated to tell how much ISIZE wrapped
GZIP_FALLBACK_RATIO = 10  # inflated/compressed, when a gzip trailer cannot be read (JSON traces: about 10)


# Small files share a worker job, up to BATCH_FILES of them and BATCH_BYTES together (each at most that
# big, not gzipped): one round trip to the worker, its watcher and the loader's lock for all of them, not
# one each (tiny traces: the round trip cost ten times the parse under TensorBoard's request threads). Each
# file still has its own outcome; a batch whose worker died is run again one file a job (none charged).
BATCH_FILES = 16
BATCH_BYTES = 256 << 10


def default_workers() -> int:
    env = os.environ.get(ENV_WORKERS, "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


def available_memory() -> Optional[int]:
    """Bytes of memory available now, within the container's limit where there is one."""
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        try:
            avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            avail = None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
        with open("/sys/fs/cgroup/memory.current") as f:
            used = int(f.read().strip())
        if limit.isdigit():
            room = int(limit) - used
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail


def read_inflated_sizes(fs, files: List[TraceFile], root: Optional[str]) -> Dict[CacheKey, int]:
    """The inflated sizes of gzipped files (reader.inflated_size: the trailer's ISIZE, its wrap past 4 GiB
    told by the compression ratio of the first INFLATE_HEAD_BYTES); two small ranged reads each,
    concurrent on object stores; files that cannot be read are left out (their reader will say why)."""
    files = [f for f in files if f.gzipped and f.size >= 18]
    if not files:
        return {}
    parts: Dict[CacheKey, Tuple[bytes, bytes]] = {}
    if paths.is_local(fs):
        for f in files:
            try:
                with paths.open_checked(fs, f.path, root, f.file_name) as handle:
                    head = handle.read(min(INFLATE_HEAD_BYTES, f.size))
                    handle.seek(f.size - 4)
                    parts[f.key] = (head, handle.read(4))
            except Exception:  # gone, refused, unreadable
                continue
    else:
        n = len(files)
        try:
            got = fs.cat_ranges(
                [f.path for f in files] * 2,
                [0] * n + [f.size - 4 for f in files],
                [min(INFLATE_HEAD_BYTES, f.size) for f in files] + [f.size for f in files],
                on_error="return",
            )
        except Exception as err:
            logger.debug("tb_paddle_profile: gzip heads and trailers not read: %s", err)
            got = []
        for f, head, tail in zip(files, got[:n], got[n:]):
            if isinstance(head, bytes) and isinstance(tail, bytes):
                parts[f.key] = (head, tail)
    return {
        key: inflated_size(head, tail, size)
        for key, (head, tail), size in ((f.key, parts[f.key], f.size) for f in files if f.key in parts)
    }


def memory_estimate(file: TraceFile, inflated: Optional[int] = None) -> int:
    """Planned peak memory of parsing `file`; `inflated`: a gzipped file's real inflated size."""
    if not file.gzipped:
        return WORKER_BASE_MEMORY + JSON_MEMORY_FACTOR * file.size
    if inflated is None:
        inflated = GZIP_FALLBACK_RATIO * file.size
    return WORKER_BASE_MEMORY + file.size + JSON_MEMORY_FACTOR * inflated


def growing_window_s() -> float:
    try:
        return float(os.environ.get(ENV_GROWING_S, DEFAULT_GROWING_S))
    except ValueError:
        return DEFAULT_GROWING_S
