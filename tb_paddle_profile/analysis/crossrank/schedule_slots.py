"""The slots of the pipeline schedule (schedule.py, whose docstring defines the terms): each rank's phases
as slots, the send/recv partner of every instance, each slot's sender on a neighbouring stage, its
micro-batch and chunk from the pairing (or the order), and the recognised order replayed with balanced
stages (the idle that is fill/drain)."""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple, cast

import numpy as np

from .load import pool_of
from .match import RECV, SEND, SEND_RECV, Flat
from .model import RankData

F, B = 1, 2  # PhaseSpans.phase


class _RankSlots:
    """One rank's phases as slots (columns), clock-corrected unix ns."""

    def __init__(self, r: RankData):
        ph = r.digest.parallel.phases
        self.n = n = len(ph.phase)

        def col(f):
            v = getattr(ph, f)
            return np.fromiter(v, dtype=np.int64, count=len(v))

        self.phase = col("phase")
        self.step = col("step")
        hs, he = col("host_start_ns"), col("host_end_ns")
        ds, de = col("device_start_ns"), col("device_end_ns")
        kern = col("kernels")
        dev = kern > 0
        base = int(r.origin_unix_ns) - int(r.offset_ns)
        self.host_start = hs + base
        self.start = np.where(dev, ds, hs) + base
        self.end = np.where(dev, de, he) + base
        self.busy = np.where(dev, col("kernel_ns"), he - hs)
        self.on_device = bool(dev.any())
        # instance index → slot
        self.inst_slot = np.full(r.kind.size, -1, dtype=np.int64)
        ptr = col("p2p_ptr") if len(ph.p2p_ptr) == n + 1 else np.zeros(n + 1, np.int64)
        idx = col("p2p")
        if not (idx.size and ptr[-1] == idx.size and (idx >= 0).all() and (idx < r.kind.size).all()):
            ptr, idx = np.zeros(n + 1, np.int64), np.zeros(0, np.int64)  # none (or not this trace's)
        self.p2p_ptr, self.p2p_idx = ptr, idx  # slot i's send/recv: p2p_idx[p2p_ptr[i]:p2p_ptr[i+1]]
        self.inst_slot[idx] = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))


class _StageStep:
    def __init__(self, stage: int, rank: int, rows: np.ndarray):
        self.stage, self.rank, self.rows = stage, rank, rows  # rows: slot rows of the rank, host order
        self.mb = np.full(rows.size, -1, dtype=np.int64)
        self.chunk = np.full(rows.size, -1, dtype=np.int64)
        self.pred: List[Optional[Tuple[int, int]]] = [None] * rows.size  # (stage, position) it receives from
        self.lag = np.zeros(rows.size, dtype=np.int64)  # the transfer of what it receives (waits.py)


class _Partners:
    """For every instance of every rank (the pool's positions), its send/recv partner's rank index and
    instance (-1: not in a matched pair)."""

    def __init__(self, ranks: Sequence[RankData], flat: Flat):
        p = pool_of(ranks)
        self.base = p.base
        self.rank = np.full(p.kind.size, -1, dtype=np.int64)
        self.inst = np.full(p.kind.size, -1, dtype=np.int64)
        if flat.n:
            two = np.nonzero((flat.sizes == 2) & (flat.g_kind == SEND_RECV))[0]
            a, b = flat.ptr[two], flat.ptr[two] + 1
            for x, y in ((a, b), (b, a)):
                at = p.at(flat.m_rank[x], flat.m_inst[x])
                self.rank[at], self.inst[at] = flat.m_rank[y], flat.m_inst[y]


def _preds(
    pipe: List[int],
    ranks: Sequence[RankData],
    slots: Dict[int, "_RankSlots"],
    partners: _Partners,
    cells: Dict[int, "_StageStep"],
) -> None:
    """For each slot of one pipeline-step (cells: stage → _StageStep), the slot of the same phase on
    another stage of the pipeline whose send it receives, and that edge's latency."""
    pos_of: Dict[Tuple[int, int], Tuple[int, int]] = {}  # (rank index, slot row) → (stage, position)
    for s, c in cells.items():
        for k, row in enumerate(c.rows.tolist()):
            pos_of[(c.rank, row)] = (s, k)
    in_pipe = set(pipe)
    for s, c in cells.items():
        r, rs = ranks[c.rank], slots[c.rank]
        transfer = cast(np.ndarray, r.transfer)  # set when the ranks are loaded (load.py)
        base = int(partners.base[c.rank])
        for k, row in enumerate(c.rows.tolist()):
            for j in rs.p2p_idx[rs.p2p_ptr[row] : rs.p2p_ptr[row + 1]].tolist():
                xr, xi = int(partners.rank[base + j]), int(partners.inst[base + j])
                if xr < 0 or xr == c.rank or xr not in in_pipe:
                    continue
                x_slot = int(slots[xr].inst_slot[xi])
                other = pos_of.get((xr, x_slot))
                if other is None:
                    continue
                d, xd = int(r.direction[j]), int(ranks[xr].direction[xi])
                receives = d == RECV or (d != SEND and xd == SEND)
                if d not in (SEND, RECV) and xd not in (SEND, RECV):  # no direction: the earlier one sent
                    receives = slots[xr].start[x_slot] < rs.start[row]
                if not receives or rs.phase[row] != slots[xr].phase[x_slot]:
                    continue
                c.pred[k] = other
                # the edge's latency: from the sender's slot's end to its send kernel's start (the send's
                # launch), then the transfer (waits.py); a receive posted late is the receiver's doing
                sender = ranks[xr]
                launch = int(sender.start[xi]) - int(sender.offset_ns) - int(slots[xr].end[x_slot])
                c.lag[k] = max(int(c.lag[k]), int(transfer[j]) + max(0, launch))


def _identify(cells: Dict[int, _StageStep], slots: Dict[int, _RankSlots], pp: int) -> Tuple[bool, int]:
    """Micro-batch and chunk of every slot from the pairing (True) or, failing that, from the order
    (False); the number of chunks."""

    def phase(c, k):
        return int(slots[c.rank].phase[c.rows[k]])

    for c in cells.values():
        c.mb[:] = -1
        c.chunk[:] = -1
    # roots: stage 0's forwards without a sender
    if 0 in cells:
        c0 = cells[0]
        n = 0
        for k in range(c0.rows.size):
            if phase(c0, k) == F and c0.pred[k] is None:
                c0.mb[k], c0.chunk[k] = n, 0
                n += 1

    def propagate(ph: int) -> None:
        for _ in range(4 * pp + 4):
            changed = False
            for s, c in cells.items():
                for k in range(c.rows.size):
                    pred = c.pred[k]
                    if c.mb[k] >= 0 or phase(c, k) != ph or pred is None:
                        continue
                    ps, pk = pred
                    oc = cells[ps]
                    if oc.mb[pk] < 0:
                        continue
                    step = 0
                    if ph == F and ps == pp - 1 and s == 0:
                        step = 1
                    elif ph == B and ps == 0 and s == pp - 1:
                        step = -1
                    c.mb[k], c.chunk[k] = oc.mb[pk], oc.chunk[pk] + step
                    changed = True
            if not changed:
                return

    propagate(F)
    v = 1 + max((int(c.chunk.max()) for c in cells.values() if c.chunk.size), default=0)
    if pp - 1 in cells:
        cl = cells[pp - 1]
        n = 0
        for k in range(cl.rows.size):
            if phase(cl, k) == B and cl.pred[k] is None:
                cl.mb[k], cl.chunk[k] = n, v - 1
                n += 1
    propagate(B)
    if all((c.mb >= 0).all() for c in cells.values()):
        return True, v
    for c in cells.values():  # the order alone
        seen = {F: 0, B: 0}
        for k in range(c.rows.size):
            p = phase(c, k)
            c.mb[k], c.chunk[k] = seen[p], 0
            seen[p] += 1
    return False, 1


def _replay(
    cells: Dict[int, _StageStep], slots: Dict[int, _RankSlots], pp: int, v: int, tf: float, tb: float
) -> Optional[Dict[int, List[int]]]:
    """The ideal idle before each slot (and after the last) of every stage: the recognised order with
    balanced durations, each slot also waiting for the transfer of what it receives; None when the
    order cannot be replayed (a dependency never met)."""
    end_of: Dict[Tuple[int, int, int, int], float] = {}
    keys = {
        s: [(int(slots[c.rank].phase[c.rows[k]]), int(c.mb[k]), int(c.chunk[k])) for k in range(c.rows.size)]
        for s, c in cells.items()
    }
    present = {(s, *key) for s, ks in keys.items() for key in ks}

    lag = {(s, *key): int(c.lag[k]) for s, c in cells.items() for k, key in enumerate(keys[s])}

    def dep(s, ph, mb, ch):
        if ph == F:
            d = (s - 1, F, mb, ch) if s > 0 else ((pp - 1, F, mb, ch - 1) if ch > 0 else None)
        elif s < pp - 1:
            d = (s + 1, B, mb, ch)
        elif ch < v - 1:
            d = (0, B, mb, ch + 1)
        else:
            d = (s, F, mb, ch)
        return d if d in present else None

    pos = {s: 0 for s in cells}
    free = {s: 0.0 for s in cells}
    starts = {s: [0.0] * len(keys[s]) for s in cells}
    ends = {s: [0.0] * len(keys[s]) for s in cells}
    left = sum(len(k) for k in keys.values())
    while left:
        progressed = False
        for s in cells:
            while pos[s] < len(keys[s]):
                ph, mb, ch = keys[s][pos[s]]
                d = dep(s, ph, mb, ch)
                if d is not None and d not in end_of:
                    break
                t0 = max(free[s], end_of[d] + lag[(s, ph, mb, ch)] if d is not None else 0.0)
                t1 = t0 + (tf if ph == F else tb)
                starts[s][pos[s]], ends[s][pos[s]] = t0, t1
                end_of[(s, ph, mb, ch)] = t1
                free[s] = t1
                pos[s] += 1
                left -= 1
                progressed = True
        if not progressed:
            return None
    span = max((e[-1] for e in ends.values() if e), default=0.0)
    out: Dict[int, List[int]] = {}
    for s in cells:
        gaps, prev = [], 0.0
        for a, b in zip(starts[s], ends[s]):
            gaps.append(int(round(max(0.0, a - prev))))
            prev = max(prev, b)
        gaps.append(int(round(max(0.0, span - prev))))
        out[s] = gaps
    return out
