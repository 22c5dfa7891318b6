"""The one label of a rank, used by the analysis, the CLI text and (through RankParallel.label and
WorkerEntry.label) the tab:

    rank 5 · dp1 pp0 mp1 · gpunode1 GPU1 · pid 305113

Parts that are unknown are left out (no coordinates before the analysis, no host for a worker
name that tells none, no GPU for a CPU trace, no pid when the name gives none).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

SEP = " · "

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> Tuple:
    """Sort key that orders numbers inside names by value: gpunode2 < gpunode10."""
    return tuple(int(p) if p.isdigit() else p.lower() for p in _DIGITS.split(text or ""))


def label(
    rank: int,
    hostname: str = "",
    device_id: int = -1,
    pid: int = -1,
    dp: int = -1,
    pp: int = -1,
    mp: int = -1,
    sharding: int = -1,
    worker: str = "",
) -> str:
    parts: List[str] = []
    parts.append(f"rank {rank}" if rank is not None and rank >= 0 else (worker or "rank ?"))
    coords = [
        f"{n}{v}" for n, v in (("dp", dp), ("pp", pp), ("sharding", sharding), ("mp", mp)) if v is not None and v >= 0
    ]
    if coords:
        parts.append(" ".join(coords))
    where = " ".join(
        x for x in (hostname or "", f"GPU{device_id}" if device_id is not None and device_id >= 0 else "") if x
    )
    if where:
        parts.append(where)
    if pid is not None and pid >= 0:
        parts.append(f"pid {pid}")
    return SEP.join(parts)


def prior_label(meta, device_id: int = -1, rank: Optional[int] = None) -> str:
    """The label of a rank before the run's analysis exists (no coordinates): from its TraceMeta
    (worker name: rank, host, pid) and the GPU of its digest. `rank` overrides meta.rank (e.g. a
    rank numbered in Fleet's order by the run list)."""
    r = meta.rank if rank is None else rank
    return label(
        r if r is not None and r >= 0 else -1,
        hostname=meta.hostname,
        device_id=device_id,
        pid=meta.pid if meta.pid > 0 else -1,
        worker=meta.worker,
    )
