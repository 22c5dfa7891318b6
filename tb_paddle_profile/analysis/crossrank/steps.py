"""Per-step rows of every rank (_Steps), per (rank, kind) sums (_RankKinds) and the clock-corrected
matching (match_with_clocks): the inputs that the RunParallel's assembly (build.py), the critical path and
What-if share, kept apart from build.py so that those modules import it without importing each other."""

from __future__ import annotations

import operator
from typing import List, Sequence

import numpy as np

from . import comms, verdict
from .model import RankData

PER_STEP_FIELDS = (
    "compute_ns",
    "communication_ns",
    "hidden_communication_ns",
    "exposed_communication_ns",
    "memory_ns",
    "exposed_memory_ns",
    "idle_ns",
    "runtime_ns",
    "sync_ns",
    "kernel_ns",
    "launches",
    "dataloader_ns",
    "stall_ns",
)


_STEP_FIELDS = operator.attrgetter("step", "range.start_ns", "range.end_ns", "first_device_ns", *PER_STEP_FIELDS)


class _Steps:
    """Every rank's steps (RankData.steps, in its order) as rows: rank i's are [ptr[i], ptr[i+1])."""

    def __init__(self, ranks: Sequence[RankData]):
        rows = [_STEP_FIELDS(s) for r in ranks for s in r.steps.values()]
        self.count = np.array([len(r.steps) for r in ranks], dtype=np.int64)
        self.ptr = np.concatenate([[0], np.cumsum(self.count)]).astype(np.int64)
        a = np.array(rows, dtype=np.int64).reshape(len(rows), 4 + len(PER_STEP_FIELDS))
        self.rank = np.repeat(np.arange(len(ranks), dtype=np.int64), self.count)
        self.step = a[:, 0]
        self.time = a[:, 2] - a[:, 1]
        self.first_device = a[:, 3]
        self.fields = a[:, 4:]

    def col(self, name: str) -> np.ndarray:
        """The PER_STEP_FIELDS column ``name`` of every step row."""
        return self.fields[:, PER_STEP_FIELDS.index(name)]


_sums, _round_div = verdict.segment_sums, verdict.round_div


class _RankKinds:
    """Per (rank, kind): the step kinds' sums and the matched instances' waits, for every rank at once."""

    STEP = ("calls", "device_ns", "host_ns", "exposed_ns", "bytes")

    def __init__(self, ranks: Sequence[RankData], p, matched: np.ndarray):
        get = operator.attrgetter("kind", *self.STEP)
        rows = [get(k) for r in ranks for s in r.steps.values() for k in s.kinds]
        per_rank = [sum(len(s.kinds) for s in r.steps.values()) for r in ranks]
        owner = np.repeat(np.arange(len(ranks), dtype=np.int64), per_rank)
        a = np.array(rows, dtype=np.int64).reshape(len(rows), 1 + len(self.STEP))
        n = len(ranks)
        kinds = np.unique(np.concatenate([a[:, 0], p.kind]))
        K = max(1, kinds.size)
        sk = owner * K + np.searchsorted(kinds, a[:, 0])
        ik = p.rank_of * K + np.searchsorted(kinds, p.kind)
        present = np.zeros(n * K, bool)
        present[sk] = True
        present[ik] = True
        size = n * K
        cols = {}
        for j, f in enumerate(self.STEP):
            cols[f] = _bincount_int(sk, a[:, 1 + j], size)
        cols["wait_ns"] = _bincount_int(ik[matched], p.wait[matched], size)
        cols["transfer_ns"] = _bincount_int(ik[matched], p.transfer[matched], size)
        cols["matched"] = np.bincount(ik[matched], minlength=size).astype(np.int64)
        self.kinds, self.K, self.present = kinds, K, present.reshape(n, K)
        self.cols = {f: v.reshape(n, K) for f, v in cols.items()}
        self.names = list(self.STEP) + ["wait_ns", "transfer_ns", "matched"]

    def rows(self) -> List[List[dict]]:
        """Per rank index, its RankKind fields by kind."""
        ri, kj = np.nonzero(self.present)  # by rank, then kind
        vals = np.stack([self.cols[f][ri, kj] for f in self.names], axis=1).tolist()
        out: List[List[dict]] = [[] for _ in range(self.present.shape[0])]
        names = self.names
        for i, k, v in zip(ri.tolist(), self.kinds[kj].tolist(), vals):
            row = dict(zip(names, v))
            row["kind"] = k
            out[i].append(row)
        return out

    def across(self, rank_no: List[int]):
        """(KindAggregate fields, ranks having it) per kind any rank has, by kind."""
        for j in np.nonzero(self.present.any(axis=0))[0].tolist():
            have = self.present[:, j]
            row = {f: int(self.cols[f][have, j].sum()) for f in self.names}
            yield dict(kind=int(self.kinds[j]), **row), [rank_no[i] for i in np.nonzero(have)[0].tolist()]


def _bincount_int(index: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Exact int64 sums of values per index (bincount's weights are float64)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, index, values)
    return out


def _match_with_clocks(ranks: List[RankData], notes: List[str]):
    """Communicators, clocks and every matched instance (comms.match_run)."""
    return comms.match_run(ranks, notes)
