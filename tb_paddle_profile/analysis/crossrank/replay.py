"""The cross-rank replay: every rank's program (``ParallelView.program``) as one graph joined at the matched
collectives, replayed with or without changes (critical_path.py finds the path that sets each step's time,
whatif.py and cost.py replay changes).

Definitions and assumptions (also in docs/critical-path.md):

* **The graph**: every rank's nodes and edges (analysis/program.py); across ranks, the members of one
  matched collective (match.py's groups, clock-corrected times) end together.
* **The replay**: each node starts at max over its predecessors of (their end + the edge's lag);
  a compute run ends after its kernel time (scaled by a what-if) plus its gaps, and not before its
  last kernel was launched and ran; a collective member ends when the group's last member started
  plus the group's transfer (the shortest member duration, waits.py); a synchronising call ends
  at the end of the device node it waited for plus its return lag; the first node of each rank
  starts when it did. The unchanged graph replays the trace (tested within 1 %).
* Levels: nodes are ordered once so that every node comes after its predecessors across ranks
  (rounds over every rank's next node); a replay then walks the levels with numpy, so that a run of
  thousands of ranks is replayed in well under a second per what-if.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import program as P
from . import topology
from .steps import _match_with_clocks
from .load import as_digests, load_ranks, packed_columns
from .match import SEND_RECV, Flat, split_pipeline_unions
from .model import RankData, Topology
from .waits import Waits, communicators

_NEG = -1e30


@dataclass
class Prepared:
    """The cross-rank analysis' first half (what build.analyze computes before the message)."""

    ranks: List[RankData]
    flat: Flat
    waits: Waits
    topo: Topology
    g_axis: np.ndarray
    notes: List[str] = field(default_factory=list)


def prepare(inputs: Sequence) -> Prepared:
    """Load the ranks, match their collectives with the hosts' clocks, find the topology."""
    digests = as_digests(inputs)
    ranks, notes = load_ranks(digests)
    flat, _, _ = _match_with_clocks(ranks, notes)
    chains, _ = topology.pipelines(ranks, flat, [])
    flat = split_pipeline_unions(flat, chains)
    w = Waits(ranks, flat)
    comms, g_comm, counts = communicators(flat)
    topo, _, g_axis = topology.build(ranks, flat, comms, g_comm, counts, notes)
    return Prepared(ranks, flat, w, topo, np.asarray(g_axis), notes)


REPLAY_CUT_SHARE = 0.1  # a rank with more of its send/recv unjoined than this has its pipeline cut


def _stand_ins(
    ranks: Sequence[RankData], topo: Topology, coll: np.ndarray, rank_ptr: np.ndarray, grp: np.ndarray
) -> int:
    """Send/recv nodes left without a group because their partner rank has no trace (topo.missing): each
    joins the group of the same send/recv of a tensor-parallel peer of its rank (same dp and stage, a rank
    whose program is the same instance for instance), whose partner is the missing rank's tensor-parallel
    peer: the lanes of one stage run in lock-step, so the peer's transfer stands in for the missing one's,
    and a change is carried through the pipeline instead of stopping at a transfer kept at its traced
    time. grp (per node, -1 none) is filled in place; returns how many nodes joined a group."""
    n = len(ranks)
    if not topo.missing or topo.pp <= 1 or len(topo.coord_pp) != n or min(topo.coord_pp, default=-1) < 0:
        return 0
    joined = 0
    at = {(topo.coord_dp[i], topo.coord_pp[i], topo.coord_mp[i]): i for i in range(n)}

    def gap_beside(d: int, p: int, m: int) -> bool:
        """Whether a pipeline neighbour of grid place (d, p, m) is a place without a trace."""
        return any(0 <= q < topo.pp and (d, q, m) not in at for q in (p - 1, p + 1))

    for x in range(n):
        d, p, m = topo.coord_dp[x], topo.coord_pp[x], topo.coord_mp[x]
        if not gap_beside(d, p, m):
            continue
        a, b = int(rank_ptr[x]), int(rank_ptr[x + 1])
        lost = np.flatnonzero((coll[a:b] >= 0) & (grp[a:b] < 0)) + a
        lost = lost[ranks[x].kind[coll[lost]] == SEND_RECV]
        if not lost.size:
            continue
        for mm in range(topo.mp):
            y = at.get((d, p, mm), -1)
            if mm == m or y < 0 or gap_beside(d, p, mm):
                continue
            ry, rx = ranks[y], ranks[x]
            if not (np.array_equal(ry.kind, rx.kind) and np.array_equal(ry.step, rx.step)):
                continue
            ya, yb = int(rank_ptr[y]), int(rank_ptr[y + 1])
            node_of = np.full(ry.kind.size, -1, dtype=np.int64)
            cy = coll[ya:yb]
            node_of[cy[cy >= 0]] = np.flatnonzero(cy >= 0) + ya
            peer = node_of[coll[lost]]
            ok = (peer >= 0) & (grp[np.maximum(peer, 0)] >= 0)
            grp[lost[ok]] = grp[peer[ok]]
            joined += int(ok.sum())
            break
    return joined


def _program_fields() -> Dict[int, Tuple[str, bool]]:
    """ParallelProgram's fields (all packed varints) for load.packed_columns, from its descriptor."""
    from google.protobuf.descriptor import FieldDescriptor as F

    from ...v1 import summary_pb2 as spb

    return {f.number: (f.name, f.type in (F.TYPE_SINT64, F.TYPE_SINT32)) for f in spb.ParallelProgram.DESCRIPTOR.fields}


PROGRAM_FIELDS = _program_fields()


class Graph:
    """Every rank's program as global columns (node i of rank r at rank_ptr[r] + i)."""

    def __init__(self, prep: Prepared):
        ranks = prep.ranks
        self.prep = prep
        progs = [r.digest.parallel.program for r in ranks]
        counts = np.array([len(p.kind) for p in progs], dtype=np.int64)
        self.rank_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        N = self.n = int(self.rank_ptr[-1])
        self.rank = np.repeat(np.arange(len(ranks), dtype=np.int64), counts)
        base = min((r.origin_unix_ns for r in ranks), default=0)
        self.base_unix_ns = base
        self.shift = np.array([r.origin_unix_ns - base - r.offset_ns for r in ranks], dtype=np.int64)

        fast = packed_columns(progs, PROGRAM_FIELDS) if N else None

        def col(name, dtype=np.int64, default=0):
            if not N:
                return np.zeros(0, dtype)
            if fast is not None and name in fast and np.array_equal(fast[name][1], counts):
                return fast[name][0].astype(dtype, copy=False)
            parts = [getattr(p, name) for p in progs]
            if any(len(a) != c for a, c in zip(parts, counts.tolist())):  # a digest without the column
                parts = [a if len(a) == c else [default] * c for a, c in zip(parts, counts.tolist())]
            # one pass over every rank's values (np.asarray per repeated field costs ~20 us each)
            return np.fromiter(itertools.chain.from_iterable(parts), dtype=dtype, count=N)

        off = np.repeat(self.rank_ptr[:-1], counts)

        def pred(name):
            a = col(name, default=-1)
            return np.where(a >= 0, a + off, -1)

        self.kind = col("kind")
        self.step = col("step")
        self.obs_start = (col("start_ns") + self.shift[self.rank]).astype(np.float64)
        self.dur = col("duration_ns").astype(np.float64)
        self.busy = col("busy_ns").astype(np.float64)
        self.sp, self.sl = pred("stream_pred"), col("stream_lag_ns").astype(np.float64)
        self.lp, self.ll = pred("launch_pred"), col("launch_lag_ns").astype(np.float64)
        self.xp, self.xl = pred("cross_pred"), col("cross_lag_ns").astype(np.float64)
        self.wp, self.wl = pred("wait_pred"), col("wait_lag_ns").astype(np.float64)
        self.tl, self.tn = col("tail_lag_ns").astype(np.float64), col("tail_ns").astype(np.float64)
        self.coll = col("collective")
        self._col = col  # the columns only the paths and some what-ifs read, on first use (properties below)
        self.obs_end = self.obs_start + self.dur
        # the matched group of each collective node (-1: unmatched or not a collective)
        grp = np.full(N, -1, dtype=np.int64)
        ck = np.zeros(N, dtype=np.int64)
        isc = self.coll >= 0
        for i, r in enumerate(ranks):
            a, b = self.rank_ptr[i], self.rank_ptr[i + 1]
            c = self.coll[a:b]
            m = c >= 0
            if m.any() and r.group is not None:
                ok = c[m] < r.group.size
                idx = np.nonzero(m)[0][ok] + a
                grp[idx] = r.group[c[m][ok]]
                ck[idx] = r.kind[c[m][ok]]
        self.stood_in = _stand_ins(ranks, prep.topo, self.coll, self.rank_ptr, grp)
        self.group = np.where(isc, grp, -1)
        self.ckind = ck
        # collectives no group joins to their peers: the replay keeps them as traced (their wait
        # included), so no change is carried through them; a caveat of the evidence, reported (unmatched())
        self.unmatched_nodes = np.nonzero(isc & (self.group < 0))[0]
        w = prep.waits
        self.transfer = np.asarray(w.transfer, dtype=np.float64) if prep.flat.n else np.zeros(0)
        self.g_axis = prep.g_axis
        self.is_device = np.isin(self.kind, P.DEVICE_KINDS)
        self._levels()

    stream = property(lambda self: self._lazy("stream"))
    name = property(lambda self: self._lazy("name"))
    phase = property(lambda self: self._lazy("phase"))
    events = property(lambda self: self._lazy("events"))

    def _lazy(self, key: str) -> np.ndarray:
        got = self.__dict__.setdefault("_lazy_cols", {})
        if key not in got:
            got[key] = self._col(key)
        return got[key]

    # ------------------------------------------------------------------ levels (once)
    def _levels(self) -> None:
        N = self.n
        lev_s = np.full(N, -1, dtype=np.int64)
        lev_e = np.full(N, -1, dtype=np.int64)
        grouped = self.group >= 0
        G = self.transfer.size
        g_nodes = np.nonzero(grouped)[0]
        g_of = self.group[g_nodes]
        gsize = np.bincount(g_of, minlength=G)
        arrived = np.zeros(G, dtype=np.int64)
        gmax = np.full(G, -1, dtype=np.int64)
        order = np.argsort(g_of, kind="stable")
        g_sorted_nodes = g_nodes[order]
        g_ptr = np.concatenate([[0], np.cumsum(gsize)])
        ptr = self.rank_ptr[:-1].copy()
        end = self.rank_ptr[1:]
        preds = np.stack([self.sp, self.lp, self.xp, self.wp], axis=1) if N else np.zeros((0, 4), np.int64)
        self.stalled = False
        while True:
            act = np.nonzero(ptr < end)[0]
            if not act.size:
                break
            cur = ptr[act]
            pr = preds[cur]
            pe = np.where(pr >= 0, lev_e[np.maximum(pr, 0)], -2)  # -2: no predecessor
            ready = ~(pe == -1).any(axis=1)
            if not ready.any():
                self.stalled = True  # cannot happen for a trace's own order; keep the rest unreplayed
                break
            c = cur[ready]
            ls = np.maximum(pe[ready].max(axis=1) + 1, 0)
            lev_s[c] = ls
            gm = grouped[c]
            lev_e[c[~gm]] = ls[~gm]
            if gm.any():
                gg = self.group[c[gm]]
                np.add.at(arrived, gg, 1)
                np.maximum.at(gmax, gg, ls[gm])
                done = np.unique(gg[arrived[gg] == gsize[gg]])
                if done.size:
                    lev_e[g_sorted_nodes[_ranges(g_ptr[done], gsize[done])]] = np.repeat(gmax[done], gsize[done])
            ptr[act[ready]] += 1
        self._schedule(lev_s, lev_e, g_ptr, g_sorted_nodes, gsize, arrived, gmax)

    def _schedule(self, lev_s, lev_e, g_ptr, g_sorted_nodes, gsize, arrived, gmax) -> None:
        """Per level: the nodes that start in it, and the groups that end in it with their members."""
        N = self.n
        G = gsize.size
        self.lev_s, self.lev_e = lev_s, lev_e
        valid = lev_s >= 0
        # replay schedule: per level, the nodes starting and the groups ending
        o = np.nonzero(valid)[0]
        o = o[np.argsort(lev_s[o], kind="stable")]
        nl = int(lev_s.max()) + 1 if N and valid.any() else 0
        self.n_levels = nl
        self.lev_ptr = np.searchsorted(lev_s[o], np.arange(nl + 1))
        self.lev_nodes = o
        gl = gmax.copy()
        gl[arrived < gsize] = -1
        go = np.nonzero(gl >= 0)[0]
        go = go[np.argsort(gl[go], kind="stable")]
        self.glev_ptr = np.searchsorted(gl[go], np.arange(nl + 1))
        self.glev_groups = go
        self.g_ptr, self.g_sorted_nodes = g_ptr, g_sorted_nodes
        # the members of the groups of each level, side by side (groups in glev order), and where each
        # group's members begin in that list
        sizes = gsize[go]
        mem = g_sorted_nodes[_ranges(g_ptr[go], sizes)]
        self.glev_members = mem
        self.glev_mptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.glev_sizes = sizes
        self.g_complete = arrived == gsize
        # each member's end after the group's last arrival (its transfer; host collectives of gloo end
        # one after the other): the replay keeps it, scaled with the group's transfer
        self.m_lag = np.zeros(N)
        if g_sorted_nodes.size:
            nz = gsize > 0
            starts = g_ptr[:-1][nz]
            last = np.zeros(G)
            last[nz] = np.maximum.reduceat(self.obs_start[g_sorted_nodes], starts)
            lag = self.obs_end[g_sorted_nodes] - last[self.group[g_sorted_nodes]]
            tr = self.transfer[self.group[g_sorted_nodes]]
            self.m_lag[g_sorted_nodes] = np.where(lag >= 0, lag, tr)

    # ------------------------------------------------------------------ replay
    def replay(
        self,
        scale: Optional[np.ndarray] = None,
        transfer: Optional[np.ndarray] = None,
        launch_lag: Optional[np.ndarray] = None,
        host_lag: Optional[np.ndarray] = None,
        tail_lag: Optional[np.ndarray] = None,
        gaps: Optional[np.ndarray] = None,
    ) -> Tuple[np.ndarray, np.ndarray]:
        """(start, end) of every node with the given changes: ``scale`` multiplies each node's busy
        (kernel) time, ``transfer`` replaces each group's transfer, the lags replace the launch,
        host-chain (stream lag of host nodes) and tail lags, ``gaps`` the time inside each node beyond its
        busy time (a compute run's gaps between its kernels)."""
        s, e = self.replay_many(
            [
                dict(
                    scale=scale,
                    transfer=transfer,
                    launch_lag=launch_lag,
                    host_lag=host_lag,
                    tail_lag=tail_lag,
                    gaps=gaps,
                )
            ]
        )
        return s[0], e[0]

    def replay_many(self, changes: Sequence[Dict[str, Optional[np.ndarray]]]) -> Tuple[np.ndarray, np.ndarray]:
        """Several replays at once, one per dict of ``replay``'s changes (a missing or None entry: as
        traced): (start, end), each of shape (len(changes), nodes). One walk over the levels serves them
        all, so that K replays cost little more than one at many ranks."""
        N = self.n
        K = len(changes)
        o = self.lev_nodes  # every replayed node, level by level
        sent = self._sentinels()

        def rows(key, default):
            """(K or 1, len(o)): the change per replay, in level order (one row when none changes it)."""
            got = [c.get(key) for c in changes]
            if all(g is None for g in got):
                return default[o][None, :]
            return np.stack([(default if g is None else g)[o] for g in got])

        f = rows("scale", np.ones(N))
        SL = rows("host_lag", self.sl).copy()
        SL[:, sent["root"]] = self.obs_start[o][sent["root"]]  # a rank's first node starts when it did
        LL = rows("launch_lag", self.ll)
        TL = rows("tail_lag", self.tl)
        extra = rows("gaps", self.dur - self.busy).copy()
        extra[:, sent["sync"]] = 0.0  # a sync: its own minimum, or its wait (the cross edge)
        XL, WL, BUSY, TN = self.xl[o], self.wl[o], self.busy[o], self.tn[o]
        SP, LP, XP, WP, TP, XE = sent["SP"], sent["LP"], sent["XP"], sent["WP"], sent["TP"], sent["XE"]
        start = np.repeat(self.obs_start[None, :], K, axis=0)
        end = np.concatenate(
            [np.repeat(self.obs_end[None, :], K, axis=0), np.full((K, 1), _NEG), np.zeros((K, 1))], axis=1
        )  # N: "no predecessor", N + 1: time 0
        ptr = self.lev_ptr
        trs = [c.get("transfer") for c in changes]
        if all(x is None for x in trs):
            ratio_all = np.where(self.transfer > 0, 1.0, 0.0)[None, :]
        else:
            ratio_all = np.stack(
                [
                    np.where(
                        self.transfer > 0, (self.transfer if x is None else x) / np.maximum(self.transfer, 1e-9), 0.0
                    )
                    for x in trs
                ]
            )
        for v in range(self.n_levels):
            a, b = ptr[v], ptr[v + 1]
            if b > a:
                s = np.maximum(
                    np.maximum(end[:, SP[a:b]] + SL[:, a:b], end[:, LP[a:b]] + LL[:, a:b]),
                    np.maximum(end[:, XP[a:b]] + XL[a:b], end[:, WP[a:b]] + WL[a:b]),
                )
                fb = f[:, a:b]
                e = np.maximum(s + fb * BUSY[a:b] + extra[:, a:b], end[:, TP[a:b]] + TL[:, a:b] + fb * TN[a:b])
                e = np.maximum(e, end[:, XE[a:b]] + XL[a:b])
                c = o[a:b]
                start[:, c] = s
                end[:, c] = e
            a0, a1 = self.glev_ptr[v], self.glev_ptr[v + 1]
            if a1 > a0:
                gs = self.glev_groups[a0:a1]
                sizes = self.glev_sizes[a0:a1]
                m0, m1 = self.glev_mptr[a0], self.glev_mptr[a1]
                idx = self.glev_members[m0:m1]
                m = np.maximum.reduceat(start[:, idx], self.glev_mptr[a0:a1] - m0, axis=1)
                end[:, idx] = np.repeat(m, sizes, axis=1) + self.m_lag[idx] * np.repeat(ratio_all[:, gs], sizes, axis=1)
        return start, end[:, :N]

    def unmatched(self) -> Tuple[int, int, int]:
        """(send/recv nodes, other collective nodes) no matched group joins, and all collective nodes."""
        p2p = int((self.ckind[self.unmatched_nodes] == SEND_RECV).sum())
        return p2p, int(self.unmatched_nodes.size) - p2p, int((self.coll >= 0).sum())

    def cut_ranks(self) -> List[int]:
        """Rank indexes more than REPLAY_CUT_SHARE of whose send/recv no group joins: their pipeline is cut
        there (a neighbour without a trace and no tensor-parallel peer to stand in), so a change cannot travel
        along it, however few such transfers the run has in all (end noise leaves a few here and there)."""
        isp = (self.coll >= 0) & (self.ckind == SEND_RECV)
        if not isp.any():
            return []
        n = len(self.rank_ptr) - 1
        um = self.unmatched_nodes[self.ckind[self.unmatched_nodes] == SEND_RECV]
        left = np.bincount(self.rank[um], minlength=n)
        total = np.bincount(self.rank[isp], minlength=n)
        return np.flatnonzero(left > REPLAY_CUT_SHARE * np.maximum(total, 1)).tolist()

    def unmatched_note(self) -> str:
        """The unmatched collectives in one sentence ("" without any): a caveat of the evidence (the traces do
        not say whom they wait for), not a failure of the analysis, said (after CAVEAT, or in the verdict's
        "Uncertain:") wherever the replay's numbers are."""
        p2p, other, total = self.unmatched()
        stood = (
            f"{self.stood_in} send/recv instances with ranks that have no trace are replayed as their "
            "tensor-parallel peers' transfers. "
            if self.stood_in
            else ""
        )
        if not p2p and not other:
            return stood.strip()
        return stood + (
            f"{p2p} send/recv and {other} other collective instances of {total} could not be "
            "matched to their peers; the replay keeps them at their traced times (waits included), so changes "
            "do not travel through them: replayed costs and what-ifs are uncertain."
        )

    def _sentinels(self) -> Dict[str, np.ndarray]:
        """The predecessors of the replayed nodes in level order, -1 replaced by N (end -inf: none) and,
        for a node without any, the start predecessor by N + 1 (end 0, its lag its traced start)."""
        got = getattr(self, "_sent", None)
        if got is not None:
            return got
        N, o = self.n, self.lev_nodes
        dev = self.is_device[o]

        def fix(a, keep=None):
            a = a[o]
            ok = a >= 0 if keep is None else (a >= 0) & keep
            return np.where(ok, a, N)

        SP, LP, XP, WP = fix(self.sp), fix(self.lp), fix(self.xp, dev), fix(self.wp)
        root = (SP == N) & (LP == N) & (XP == N) & (WP == N)
        SP = np.where(root, N + 1, SP)
        sync = self.kind[o] == P.SYNC
        TP = fix(self.lp, self.tn[o] > 0)
        XE = fix(self.xp, sync)
        self._sent = {"SP": SP, "LP": LP, "XP": XP, "WP": WP, "TP": TP, "XE": XE, "root": root, "sync": sync}
        return self._sent

    # ------------------------------------------------------------------ steps
    def step_nodes(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rank, step, start node, end node) of every rank's steps."""
        got = getattr(self, "_steps", None)
        if got is None:
            got = self._steps = self._step_nodes()
        return got

    def _step_nodes(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        ks = np.nonzero(self.kind == P.STEP_START)[0]
        ke = np.nonzero(self.kind == P.STEP_END)[0]
        a = {(int(r), int(s)): i for r, s, i in zip(self.rank[ks], self.step[ks], ks)}
        rows = [
            (int(self.rank[i]), int(self.step[i]), a[(int(self.rank[i]), int(self.step[i]))], int(i))
            for i in ke.tolist()
            if (int(self.rank[i]), int(self.step[i])) in a
        ]
        if not rows:
            z = np.zeros(0, np.int64)
            return z, z, z, z
        m = np.array(rows, dtype=np.int64)
        return m[:, 0], m[:, 1], m[:, 2], m[:, 3]

    def job_step(self, start: np.ndarray, end: np.ndarray) -> float:
        """The job's mean step time: mean over ranks and steps of the ProfileStep durations."""
        _, _, s, e = self.step_nodes()
        return float((end[e] - start[s]).mean()) if s.size else 0.0

    def job_steps(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """``job_step`` of each row of replay_many's (start, end)."""
        _, _, s, e = self.step_nodes()
        return (end[:, e] - start[:, s]).mean(axis=1) if s.size else np.zeros(start.shape[0])


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """starts[i] .. starts[i] + sizes[i] - 1 for every i, side by side."""
    total = int(sizes.sum())
    if not total:
        return np.zeros(0, np.int64)
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.repeat(starts - offs, sizes) + np.arange(total)
