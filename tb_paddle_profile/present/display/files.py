"""The groups of a run's files in the sidebar (WorkerEntry.group): beyond FLAT_FILES files, by host where the
names tell hosts, else by blocks of ranks (RANK_BLOCK, or a larger power of two so that there are at most
MAX_GROUPS blocks), the workers without either together."""

from __future__ import annotations

from tb_paddle_profile.v1 import plugin_pb2 as ppb

# At most this many files are listed flat.
FLAT_FILES = 16
RANK_BLOCK = 16
MAX_GROUPS = 32


def group_files(entry: ppb.RunEntry) -> None:
    """Sets each worker's ``group`` of ``entry`` (left empty up to FLAT_FILES files)."""
    workers = entry.workers
    if sum(len(w.spans) for w in workers) <= FLAT_FILES:
        return
    any_host = any(w.hostname for w in workers)
    block = RANK_BLOCK
    while len(workers) / block > MAX_GROUPS:
        block *= 2
    for w in workers:
        if any_host:
            w.group = f"host {w.hostname}" if w.hostname else "no host in the name"
        elif w.rank >= 0:
            lo = w.rank // block * block
            w.group = f"ranks {lo}–{lo + block - 1}"
        else:
            w.group = "other workers"
