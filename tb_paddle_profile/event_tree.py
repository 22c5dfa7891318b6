"""Rebuild Paddle's per-thread event tree from the event tables.

The rules (validated against Paddle 3.3.1's own tables, format doc §6):
- per thread, host events sorted by (start asc, end desc) nest with a stack; an
  event is a child of the stack top iff it starts before the top ends and ends
  no later than the top's end plus two float32 ulps (times were float32 µs);
- a runtime event belongs to the innermost host event containing it, else to
  the thread root; a device event belongs to the runtime event with its
  correlation id (unmatched device events are not in Paddle's tree);
- memory events belong to their owner found by the reader (file order).

The tree is arrays (parent, CSR children, CSR runtime and device lists), plus
each thread's host rows in the order Paddle's statistics walk them: a stack
walk from the root that pushes children in time order, i.e. a preorder that
visits the later children first. Many of Paddle's tables list items in the
order this walk first meets them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List

import numpy as np

from . import event_types as et
from .reader import EventTables


def _csr(owner: np.ndarray, n_owners: int, order_key: np.ndarray):
    """Group rows by owner (rows with owner < 0 are left out), each group sorted by order_key."""
    rows = np.nonzero(owner >= 0)[0]
    rows = rows[np.lexsort((order_key[rows], owner[rows]))]
    counts = np.bincount(owner[rows], minlength=n_owners)
    ptr = np.zeros(n_owners + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, rows


@dataclass
class EventTree:
    tables: EventTables
    threads: List[int]                 # ascending tids: Paddle's node-tree dict order
    host_parent: np.ndarray            # host row → parent host row, -1 for the thread root
    host_depth: np.ndarray             # 1 for children of the root
    child_ptr: np.ndarray              # CSR over host rows: children in time order
    child_idx: np.ndarray
    root_children: Dict[int, np.ndarray]
    rt_host: np.ndarray                # runtime row → host row, -1 for the thread root
    host_rt_ptr: np.ndarray            # CSR over host rows: runtime rows in time order
    host_rt_idx: np.ndarray
    root_runtimes: Dict[int, np.ndarray]
    dev_rt: np.ndarray                 # device row → runtime row, -1 when unmatched
    rt_dev_ptr: np.ndarray             # CSR over runtime rows: device rows in file order
    rt_dev_idx: np.ndarray
    walk: Dict[int, np.ndarray]        # tid → host rows in Paddle's stack-walk order (root excluded)

    def children(self, row: int) -> np.ndarray:
        return self.child_idx[self.child_ptr[row]:self.child_ptr[row + 1]]

    def runtimes(self, row: int) -> np.ndarray:
        return self.host_rt_idx[self.host_rt_ptr[row]:self.host_rt_ptr[row + 1]]

    def devices(self, rt_row: int) -> np.ndarray:
        return self.rt_dev_idx[self.rt_dev_ptr[rt_row]:self.rt_dev_ptr[rt_row + 1]]


def _float32_tolerance(end_ns: np.ndarray) -> np.ndarray:
    """Two float32 ulps of each end time (Paddle wrote times as float32 µs), in ns."""
    us = np.abs(end_ns.astype(np.float64) / 1000.0).astype(np.float32)
    return np.spacing(us).astype(np.float64) * 2000.0


def nest(tid, start, end, tol, rt_tid, rt_start, rt_end):
    """Parents of host events and owners of runtime events, as host rows (-1: the thread root).

    Paddle's nesting is a stack sweep over each thread's events sorted by (start asc, end
    desc): an event is a child of the stack top iff it starts before the top ends and ends
    within the top's end plus tolerance. For nested events that parent is the nearest earlier
    event containing it, always on the chain previous event → its parent → its parent ...;
    this climbs that chain for all events at once. An unresolved candidate's own candidate is
    never above its parent, so jumping to it is safe, and jumps double like pointer jumping.
    A runtime event's owner is the innermost host event containing it, found by climbing from
    the last host event sorted before it.
    """
    n = len(tid)
    order = np.lexsort((-end, start, tid))
    s, e, v, t = start[order], end[order], end[order] + tol[order], tid[order]
    cand = np.arange(n, dtype=np.int64) - 1
    if n:
        cand[1:][t[1:] != t[:-1]] = -1
        cand[0] = -1
    pending = np.nonzero(cand >= 0)[0]
    while pending.size:
        c = cand[pending]
        fits = (s[pending] < e[c]) & (e[pending] <= v[c])
        pending, c = pending[~fits], c[~fits]
        cand[pending] = cand[c]
        pending = pending[cand[pending] >= 0]
    parent = np.full(n, -1, dtype=np.int64)
    parent[order] = np.where(cand >= 0, order[np.maximum(cand, 0)], -1)

    # runtime owners: climb from the last host sorted at or before each runtime event
    m = len(rt_tid)
    owner = np.full(m, -1, dtype=np.int64)
    if m and n:
        all_tid = np.concatenate([t, rt_tid])
        all_start = np.concatenate([s, rt_start])
        all_end = np.concatenate([e, rt_end])
        kind = np.concatenate([np.zeros(n, np.int8), np.ones(m, np.int8)])
        merged = np.lexsort((kind, -all_end, all_start, all_tid))
        hosts_before = np.cumsum(kind[merged] == 0) - 1
        is_rt = merged >= n
        rc = np.empty(m, dtype=np.int64)
        rc[merged[is_rt] - n] = hosts_before[is_rt]
        valid = rc >= 0
        valid[valid] = t[rc[valid]] == rt_tid[valid]
        rc[~valid] = -1
        pending = np.nonzero(rc >= 0)[0]
        while pending.size:
            c = rc[pending]
            fits = (s[c] <= rt_start[pending]) & (rt_start[pending] < e[c]) & (rt_end[pending] <= v[c])
            pending, c = pending[~fits], c[~fits]
            rc[pending] = cand[c]
            pending = pending[rc[pending] >= 0]
        owner = np.where(rc >= 0, order[np.maximum(rc, 0)], -1)
    return parent, owner


def _depth(parent: np.ndarray) -> np.ndarray:
    depth = np.ones(len(parent), dtype=np.int64)
    anc = parent.copy()
    live = np.nonzero(anc >= 0)[0]
    while live.size:
        depth[live] += 1
        anc[live] = parent[anc[live]]
        live = live[anc[live] >= 0]
    return depth


def build_tree(t: EventTables) -> EventTree:
    n_host, n_rt = len(t.host_tid), len(t.rt_tid)
    tol = _float32_tolerance(t.host_end)
    threads = sorted(set(t.host_tid.tolist()) | set(t.rt_tid.tolist()) | set(t.mem_tid.tolist()))
    parent, rt_host = nest(t.host_tid, t.host_start, t.host_end, tol, t.rt_tid, t.rt_start, t.rt_end)
    depth = _depth(parent)

    child_ptr, child_idx = _csr(parent, n_host, t.host_start)
    host_rt_ptr, host_rt_idx = _csr(rt_host, n_host, t.rt_start)

    roots = np.nonzero(parent < 0)[0]
    roots = roots[np.lexsort((t.host_start[roots], t.host_tid[roots]))]
    root_children = {tid: roots[t.host_tid[roots] == tid] for tid in threads}
    root_rts_rows = np.nonzero(rt_host < 0)[0]
    root_rts_rows = root_rts_rows[np.lexsort((t.rt_start[root_rts_rows], t.rt_tid[root_rts_rows]))]
    root_runtimes = {tid: root_rts_rows[t.rt_tid[root_rts_rows] == tid] for tid in threads}

    # Device → runtime by correlation id (first runtime with that id wins).
    dev_rt = np.full(len(t.dev_id), -1, dtype=np.int64)
    if n_rt and len(dev_rt):
        rt_order = np.argsort(t.rt_corr, kind="stable")
        sorted_corr = t.rt_corr[rt_order]
        pos = np.searchsorted(sorted_corr, t.dev_corr)
        pos_clipped = np.minimum(pos, n_rt - 1)
        hit = (pos < n_rt) & (sorted_corr[pos_clipped] == t.dev_corr) & (t.dev_corr >= 0)
        dev_rt[hit] = rt_order[pos_clipped[hit]]
    rt_dev_ptr, rt_dev_idx = _csr(dev_rt, n_rt, np.arange(len(dev_rt)))

    # Paddle's walk (a stack that pushes children in time order) is the reverse of the
    # postorder; in a forest listed in preorder, postorder rank = pre + subtree size - depth.
    pre = np.empty(n_host, dtype=np.int64)
    pre[np.lexsort((-t.host_end, t.host_start, t.host_tid))] = np.arange(n_host)
    size = np.ones(n_host, dtype=np.int64)
    if n_host:
        for d in range(int(depth.max()), 1, -1):
            rows = np.nonzero(depth == d)[0]
            np.add.at(size, parent[rows], size[rows])
    post = pre + size - depth
    walk = {}
    by_post = np.argsort(-post, kind="stable")
    tid_sorted = t.host_tid[by_post]
    for tid in threads:
        walk[tid] = by_post[tid_sorted == tid]

    return EventTree(
        tables=t, threads=threads, host_parent=parent, host_depth=depth,
        child_ptr=child_ptr, child_idx=child_idx, root_children=root_children,
        rt_host=rt_host, host_rt_ptr=host_rt_ptr, host_rt_idx=host_rt_idx,
        root_runtimes=root_runtimes, dev_rt=dev_rt, rt_dev_ptr=rt_dev_ptr,
        rt_dev_idx=rt_dev_idx, walk=walk,
    )


@dataclass
class NodeTimes:
    """Paddle's per-node statistics (HostStatisticNode.cal_statistic), as columns."""

    cpu: np.ndarray          # host: end - start
    gpu: np.ndarray          # host: kernel time in the subtree
    general_gpu: np.ndarray  # host: kernel + memcpy + memset time in the subtree
    rt_gpu: np.ndarray       # runtime: its kernels' time
    rt_general_gpu: np.ndarray


def node_times(tree: EventTree) -> NodeTimes:
    t = tree.tables
    n_host, n_rt = len(t.host_tid), len(t.rt_tid)
    dur = t.dev_end - t.dev_start
    matched = tree.dev_rt >= 0
    kernel = matched & (t.dev_type == et.KERNEL)
    rt_gpu = np.bincount(tree.dev_rt[kernel], weights=dur[kernel], minlength=n_rt).astype(np.int64)
    rt_general = np.bincount(tree.dev_rt[matched], weights=dur[matched], minlength=n_rt).astype(np.int64)
    owned = tree.rt_host >= 0
    gpu = np.bincount(tree.rt_host[owned], weights=rt_gpu[owned], minlength=n_host).astype(np.int64)
    general = np.bincount(tree.rt_host[owned], weights=rt_general[owned], minlength=n_host).astype(np.int64)
    # Subtree sums, deepest level first.
    if n_host:
        for d in range(int(tree.host_depth.max()), 1, -1):
            rows = np.nonzero(tree.host_depth == d)[0]
            np.add.at(gpu, tree.host_parent[rows], gpu[rows])
            np.add.at(general, tree.host_parent[rows], general[rows])
    return NodeTimes(cpu=t.host_end - t.host_start, gpu=gpu, general_gpu=general,
                     rt_gpu=rt_gpu, rt_general_gpu=rt_general)
