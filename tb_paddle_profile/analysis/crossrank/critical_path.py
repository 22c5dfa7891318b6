"""The critical path across ranks: the longest path through the replay of every rank's program
(replay.py: the graph joined at the matched collectives, its replay) that sets each step's time.

Definitions (also in docs/critical-path.md):

* **Critical path** of a step: from the end of the step on the rank whose step ended last (clock-
  corrected) back through the binding predecessor of every node (for a collective: the member
  that arrived last, on its rank), until the start of that rank's step. Each stretch is compute,
  communication (a transfer, by kind), memcpy, host (host work, launch lags, a sync's return) or
  waiting (a device gap between a node and the one it waited for). The stretches tile the step.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np

from ...v1 import whatif_pb2 as wpb
from .. import program as P
from ..collectives import KIND_LABELS
from .replay import Graph

MAX_SEGMENTS = 4000  # segments returned for the timeline (merged beyond)
PATH_TOP = 16  # entries of the by-rank and by-operator breakdowns


def path_of(graph: Graph, n0: int, lo: float, start: np.ndarray, end: np.ndarray):
    """The stretches (node rank, start, end, PathKind, collective kind, node) from node n0's end
    back to time lo."""
    out = []
    n = n0
    guard = 0
    while n >= 0 and guard < 10 * graph.n + 10:
        guard += 1
        k = int(graph.kind[n])
        e = end[n]
        g = int(graph.group[n])
        # -- what set its end
        if g >= 0:
            mem = graph.g_sorted_nodes[graph.g_ptr[g] : graph.g_ptr[g + 1]]
            m = int(mem[np.argmax(start[mem])])
            out.append((int(graph.rank[m]), start[m], e, wpb.PATH_COMMUNICATION, int(graph.ckind[m]), m))
            n = m
            if start[n] <= lo:
                break
        else:
            lp = int(graph.lp[n])
            if (
                k == P.SYNC
                and graph.xp[n] >= 0
                and abs(end[int(graph.xp[n])] + graph.xl[n] - e) < 0.5
                and end[int(graph.xp[n])] + graph.xl[n] >= start[n] + graph.busy[n]
            ):
                x = int(graph.xp[n])
                out.append((int(graph.rank[n]), end[x], e, wpb.PATH_HOST, 0, n))
                n = x
                if end[n] <= lo:
                    break
                continue
            if lp >= 0 and graph.tn[n] > 0 and k == P.COMPUTE:
                t0 = end[lp] + graph.tl[n]
                own = start[n] + graph.dur[n]
                if t0 + graph.tn[n] > own + 0.5 and abs(t0 + graph.tn[n] - e) < graph.tn[n]:
                    out.append((int(graph.rank[n]), e - graph.tn[n], e, wpb.PATH_COMPUTE, 0, n))
                    out.append((int(graph.rank[n]), end[lp], e - graph.tn[n], wpb.PATH_HOST, 0, n))
                    n = lp
                    if end[n] <= lo:
                        break
                    continue
            kind = _NODE_PATH.get(k, wpb.PATH_HOST)
            ck = int(graph.ckind[n]) if k in (P.COLLECTIVE, P.HOST_COLLECTIVE) else 0
            if e > start[n]:
                out.append((int(graph.rank[n]), start[n], e, kind, ck, n))
            if start[n] <= lo:
                break
        # -- what set its start
        cands = []
        if graph.sp[n] >= 0:
            cands.append((end[graph.sp[n]] + graph.sl[n], int(graph.sp[n]), 0))
        if graph.lp[n] >= 0:
            cands.append((end[graph.lp[n]] + graph.ll[n], int(graph.lp[n]), 1))
        if graph.xp[n] >= 0 and graph.is_device[n]:
            cands.append((end[graph.xp[n]] + graph.xl[n], int(graph.xp[n]), 2))
        if graph.wp[n] >= 0:
            cands.append((end[graph.wp[n]] + graph.wl[n], int(graph.wp[n]), 3))
        if not cands:
            break
        _, p, which = max(cands)
        host = which == 1 or not graph.is_device[n]
        if start[n] > end[p]:
            out.append(
                (int(graph.rank[n]), end[p], start[n], wpb.PATH_HOST if host else wpb.PATH_WAITING, 0, p if host else n)
            )
        n = p
        if end[n] <= lo:
            break
    # clip at lo
    clipped = []
    for r, a, b, kind, ck, node in out:
        if b <= lo:
            continue
        clipped.append((r, max(a, lo), b, kind, ck, node))
    return clipped


_NODE_PATH = {
    P.COMPUTE: wpb.PATH_COMPUTE,
    P.MEMCPY: wpb.PATH_MEMCPY,
    P.MEMSET: wpb.PATH_MEMCPY,
    P.COLLECTIVE: wpb.PATH_COMMUNICATION,
    P.HOST_COLLECTIVE: wpb.PATH_COMMUNICATION,
    P.STEP_START: wpb.PATH_HOST,
    P.STEP_END: wpb.PATH_HOST,
    P.SYNC: wpb.PATH_HOST,
}
_KIND_KEY: Dict[int, str] = {
    wpb.PATH_COMPUTE: "compute",
    wpb.PATH_COMMUNICATION: "communication",
    wpb.PATH_MEMCPY: "memcpy",
    wpb.PATH_HOST: "host",
    wpb.PATH_WAITING: "waiting",
}


def kind_key(kind: int, ck: int) -> str:
    if kind == wpb.PATH_COMMUNICATION:
        return "communication:" + KIND_LABELS.get(ck, "other")
    return _KIND_KEY[kind]


def node_name(graph: Graph, n: int) -> str:
    r = graph.prep.ranks[int(graph.rank[n])]
    names = r.digest.parallel.names
    i = int(graph.name[n])
    return names[i] if 0 <= i < len(names) else ""


def _breakdown(segs, graph: Graph, out: wpb.PathBreakdown, labels: Dict[int, str]) -> None:
    total = sum(b - a for _, a, b, _, _, _ in segs)
    out.length_ns = int(round(total))
    by_kind: Dict[Tuple[int, int], float] = {}
    by_rank: Dict[int, float] = {}
    by_op: Dict[str, float] = {}
    for r, a, b, kind, ck, node in segs:
        d = b - a
        by_kind[(kind, ck)] = by_kind.get((kind, ck), 0.0) + d
        by_rank[r] = by_rank.get(r, 0.0) + d
        if kind == wpb.PATH_COMPUTE:
            nm = node_name(graph, node)
            by_op[nm] = by_op.get(nm, 0.0) + d
    frac = lambda d: d / total if total else 0.0
    for (kind, ck), d in sorted(by_kind.items(), key=lambda x: -x[1]):
        out.by_kind.add(
            key=kind_key(kind, ck), rank=-1, kind=kind, collective_kind=ck, ns=int(round(d)), fraction=frac(d)
        )
    ranks = graph.prep.ranks
    for r, d in sorted(by_rank.items(), key=lambda x: -x[1])[:PATH_TOP]:
        out.by_rank.add(
            key=labels.get(r, f"rank {ranks[r].rank}"), rank=ranks[r].rank, ns=int(round(d)), fraction=frac(d)
        )
    for nm, d in sorted(by_op.items(), key=lambda x: -x[1])[:PATH_TOP]:
        out.by_operator.add(key=nm, rank=-1, kind=wpb.PATH_COMPUTE, ns=int(round(d)), fraction=frac(d))


def critical_path(
    graph: Graph, out: wpb.CriticalPath, labels: Optional[Dict[int, str]] = None
) -> Tuple[np.ndarray, np.ndarray]:
    """Fill ``out`` (steps, breakdowns, segments); returns the unchanged replay's (start, end)."""
    labels = labels or {}
    start, end = graph.replay()
    out.nodes = graph.n
    rk, st, sn, en = graph.step_nodes()
    if not sn.size:
        return start, end
    obs = graph.obs_end[en] - graph.obs_start[sn]
    rep = end[en] - start[sn]
    out.observed_step_ns = int(round(obs.mean()))
    out.replayed_step_ns = int(round(rep.mean()))
    out.replay_error = float(abs(rep.mean() - obs.mean()) / obs.mean()) if obs.mean() > 0 else 0.0
    all_segs: List[tuple] = []
    ranks = graph.prep.ranks
    for s in sorted(set(st.tolist())):
        m = np.nonzero(st == s)[0]
        j = m[np.argmax(end[en[m]])]
        n0, lo = int(en[j]), float(start[sn[j]])
        segs = path_of(graph, n0, lo, start, end)
        sp = out.steps.add(
            step=int(s), end_rank=ranks[int(rk[j])].rank, observed_ns=int(round(obs[j])), replayed_ns=int(round(rep[j]))
        )
        _breakdown(segs, graph, sp.breakdown, labels)
        all_segs.extend((int(s),) + x for x in reversed(segs))
    _breakdown([x[1:] for x in all_segs], graph, out.total, labels)
    _segments(graph, all_segs, out)
    return start, end


def _segments(graph: Graph, segs, out: wpb.CriticalPath) -> None:
    """The stretches as timeline segments on each rank's own clock; merged beyond MAX_SEGMENTS."""
    rows = []
    for step, r, a, b, kind, ck, node in segs:
        rows.append([step, r, a, b, kind, ck, node, 1])
    if len(rows) > MAX_SEGMENTS:  # merge neighbours on one rank, shortest first, until under the cap
        merged: List[list] = []
        for row in rows:
            if (
                merged
                and merged[-1][1] == row[1]
                and merged[-1][0] == row[0]
                and (merged[-1][4] == row[4] or len(rows) > 2 * MAX_SEGMENTS)
            ):
                m = merged[-1]
                m[2], m[3] = min(m[2], row[2]), max(m[3], row[3])
                m[7] += row[7]
            else:
                merged.append(row)
        rows = merged
        out.segments_capped = True
        if len(rows) > MAX_SEGMENTS:
            rows = sorted(rows, key=lambda x: -(x[3] - x[2]))[:MAX_SEGMENTS]
            rows.sort(key=lambda x: (x[0], x[2]))
    ranks = graph.prep.ranks
    for step, r, a, b, kind, ck, node, cnt in rows:
        sh = graph.base_unix_ns + int(ranks[r].offset_ns)
        nm = node_name(graph, node) if kind != wpb.PATH_WAITING else "wait"
        if kind == wpb.PATH_COMMUNICATION and not nm:
            nm = KIND_LABELS.get(ck, "other")
        out.segments.add(
            rank=ranks[r].rank,
            step=step,
            start_unix_ns=int(round(a)) + sh,
            end_unix_ns=int(round(b)) + sh,
            kind=kind,
            collective_kind=ck,
            name=nm,
            stream=int(graph.stream[node]),
            merged=cnt,
            worker=ranks[r].worker,
        )
