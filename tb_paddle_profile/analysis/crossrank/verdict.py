"""Each rank against its role peers: its figures, the peers' medians (cost.py turns them into a cost).

* **Role peers** of a rank: the other ranks of the same pipeline stage and mp index (they differ
  only in dp and do the same work). Without a topology: the other ranks of the same stage.
* **Figures** per step (means over the rank's steps): compute, data loader, launch (CUDA runtime
  time outside synchronising calls), memcpy/memset, the host's stalls in the middle of the step (its
  main thread without a CUDA call for over a millisecond after the step's first one, less the data
  loader: ParallelStep.stall_ns) and the device's wait for the step's first work.
  A rank's **excess** in each is its figure minus the median of its role peers'.
* Its **cause** is the figure with the largest excess beyond the noise: compute → device_compute,
  data loader → host_dataloader, launch → launch_overhead, memcpy → memcpy, stall → host_stall; the
  first-work wait alone → host.
* Its **cost to the job** is cost.py's: the replayed step with the rank at its role peers' speed.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Sequence, Tuple

import numpy as np

from .model import RankData, Topology

FIGURES = ("compute", "dataloader", "launch", "memcpy", "stall", "first_device")
CAUSE = {
    "compute": "device_compute",
    "dataloader": "host_dataloader",
    "launch": "launch_overhead",
    "memcpy": "memcpy",
    "stall": "host_stall",
    "first_device": "host",
}
WHAT = {
    "compute": "computes",
    "dataloader": "stalls in the data loader",
    "launch": "spends in kernel launches",
    "memcpy": "copies memory",
    "stall": "stalls its host in the middle of the step (no CUDA call)",
    "first_device": "leaves its GPU waiting for the step's first work",
}


def segment_sums(values: np.ndarray, ptr: np.ndarray, n: int) -> np.ndarray:
    """Per segment [ptr[i], ptr[i+1]) of values (i < n), its sum (0 for an empty one); int64."""
    c = np.concatenate([[0], np.cumsum(values, dtype=np.int64)]) if values.size else np.zeros(1, np.int64)
    return (c[ptr[1:]] - c[ptr[:-1]]).astype(np.int64)


def round_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """int(round(a / b)) elementwise (a float's rounding, half to even, as Python's round)."""
    return np.rint(np.asarray(a, dtype=np.int64) / np.asarray(b, dtype=np.int64)).astype(np.int64)


def figures(st) -> List[Dict[str, int]]:
    """Per rank index, its figures: means over its steps (0 without any). ``st``: the steps of every
    rank as rows (steps._Steps: ``ptr``, ``count``, ``first_device``, ``col(field)``)."""
    n = st.count.size
    steps = np.maximum(1, st.count)

    def mean(values):
        return round_div(segment_sums(values, st.ptr, n), steps)

    vals = step_values(st)
    fd_ok = vals["first_device"] >= 0
    cols = {f: mean(vals[f]) for f in FIGURES if f != "first_device"}
    cols["first_device"] = round_div(
        segment_sums(np.where(fd_ok, vals["first_device"], 0), st.ptr, n),
        np.maximum(1, segment_sums(fd_ok.astype(np.int64), st.ptr, n)),
    )
    return [dict(zip(FIGURES, row)) for row in np.stack([cols[x] for x in FIGURES], axis=1).tolist()]


def step_values(st) -> Dict[str, np.ndarray]:
    """Per figure, its value in every step row of ``st`` (as :func:`figures` averages them; the first
    work -1 where the step has no device event)."""
    return {
        "compute": st.col("compute_ns"),
        "dataloader": st.col("dataloader_ns"),
        "launch": np.maximum(0, st.col("runtime_ns") - st.col("sync_ns")),
        "memcpy": st.col("memory_ns"),
        "stall": st.col("stall_ns"),
        "first_device": np.where(st.first_device >= 0, st.first_device, -1),
    }


def roles(ranks: Sequence[RankData], topo: Topology) -> List[Tuple[int, int]]:
    return [
        (topo.coord_pp[i] if topo.coord_pp else 0, topo.coord_mp[i] if topo.coord_mp else 0) for i in range(len(ranks))
    ]


def _median_without(v: List[int], k: int) -> float:
    """Median of sorted v without its element k (statistics.median's convention)."""
    m = len(v) - 1

    def at(i):  # element i of v without v[k]
        return v[i] if i < k else v[i + 1]

    return float(at(m // 2)) if m % 2 else (at(m // 2 - 1) + at(m // 2)) / 2


def peer_medians(ranks: Sequence[RankData], topo: Topology, figs: List[Dict[str, int]]) -> List[Dict[str, int]]:
    """Per rank and figure, the median over its role peers (the rank itself left out; its own
    value where it has no role peer), in O(N log N): one sort per role and figure."""
    by: Dict[Tuple[int, int], List[int]] = defaultdict(list)
    for i, r in enumerate(roles(ranks, topo)):
        by[r].append(i)
    out: List[Dict[str, int]] = [dict() for _ in ranks]
    for members in by.values():
        for f in FIGURES:
            if len(members) < 2:
                for i in members:
                    out[i][f] = figs[i][f]
                continue
            order = sorted(members, key=lambda i: figs[i][f])
            v = [figs[i][f] for i in order]
            for k, i in enumerate(order):
                out[i][f] = int(_median_without(v, k))
    return out


def has_peers(ranks: Sequence[RankData], topo: Topology) -> List[bool]:
    count: Dict[Tuple[int, int], int] = defaultdict(int)
    rl = roles(ranks, topo)
    for r in rl:
        count[r] += 1
    return [count[r] > 1 for r in rl]
