"""Rebuild Paddle's per-thread event tree from the event tables.

The rules (validated against Paddle 3.3.1's own tables; docs/trace-format.md §4):
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
from functools import cached_property
from typing import Dict, List

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.reader import EventTables


def gather(values: np.ndarray, index: np.ndarray, fill=-1) -> np.ndarray:
    """values[index] where index >= 0, `fill` elsewhere: np.where(index >= 0, values[max(index, 0)],
    fill) without its values[0], which fails when values is empty (a trace without host or runtime
    events, say) even though no index then points into it."""
    index = np.asarray(index)
    out = np.full(index.shape, fill, dtype=values.dtype)  # what np.where gives for a fill that fits
    ok = index >= 0
    out[ok] = values[index[ok]]
    return out


def _csr(owner: np.ndarray, n_owners: int, order_key: np.ndarray):
    """Group rows by owner (rows with owner < 0 are left out), each group sorted by order_key."""
    rows = np.nonzero(owner >= 0)[0]
    rows = rows[np.lexsort((order_key[rows], owner[rows]))]
    counts = np.bincount(owner[rows], minlength=n_owners)
    ptr = np.zeros(n_owners + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, rows


def _distinct(*cols: np.ndarray) -> List[int]:
    """Sorted distinct values of a few columns that hold few values in long runs (thread ids)."""
    runs = [c[np.r_[True, c[1:] != c[:-1]]] for c in cols if c.size]  # one value per run
    return sorted(set(np.concatenate(runs).tolist())) if runs else []


@dataclass
class EventTree:
    tables: EventTables
    threads: List[int]  # ascending tids: Paddle's node-tree dict order
    host_parent: np.ndarray  # host row → parent host row, -1 for the thread root
    host_depth: np.ndarray  # 1 for children of the root
    child_ptr: np.ndarray  # CSR over host rows: children in time order
    child_idx: np.ndarray
    root_children: Dict[int, np.ndarray]
    rt_host: np.ndarray  # runtime row → host row, -1 for the thread root
    host_rt_ptr: np.ndarray  # CSR over host rows: runtime rows in time order
    host_rt_idx: np.ndarray
    root_runtimes: Dict[int, np.ndarray]
    dev_rt: np.ndarray  # device row → runtime row, -1 when unmatched
    rt_dev_ptr: np.ndarray  # CSR over runtime rows: device rows in file order
    rt_dev_idx: np.ndarray
    walk: Dict[int, np.ndarray]  # tid → host rows in Paddle's stack-walk order (root excluded)
    by_depth: np.ndarray  # host rows by depth (roots ascending, then breadth-first);
    depth_ptr: np.ndarray  # depth d is by_depth[depth_ptr[d - 1]:depth_ptr[d]]

    def children(self, row: int) -> np.ndarray:
        return self.child_idx[self.child_ptr[row] : self.child_ptr[row + 1]]

    def runtimes(self, row: int) -> np.ndarray:
        return self.host_rt_idx[self.host_rt_ptr[row] : self.host_rt_ptr[row + 1]]

    def devices(self, rt_row: int) -> np.ndarray:
        return self.rt_dev_idx[self.rt_dev_ptr[rt_row] : self.rt_dev_ptr[rt_row + 1]]

    @property
    def max_depth(self) -> int:
        return len(self.depth_ptr) - 1

    def level(self, depth: int) -> np.ndarray:
        """Host rows at this depth (1: children of the thread roots)."""
        return self.by_depth[self.depth_ptr[depth - 1] : self.depth_ptr[depth]]

    # ---- columns derived from the tree, computed once (on first use) and shared by the analyses

    @cached_property
    def child_pos(self) -> np.ndarray:
        """Host row → its position in child_idx (a sort key: a parent's children in time order); 0 for
        the roots."""
        return _positions(self.child_idx, len(self.host_parent))

    @cached_property
    def rt_pos(self) -> np.ndarray:
        """Runtime row → its position in host_rt_idx (a sort key: a host event's runtime calls in time
        order); 0 for the roots' calls."""
        return _positions(self.host_rt_idx, len(self.rt_host))

    @cached_property
    def dev_pos(self) -> np.ndarray:
        """Device row → its position in rt_dev_idx (a sort key: a runtime call's device events in file
        order); 0 when unmatched."""
        return _positions(self.rt_dev_idx, len(self.dev_rt))

    @cached_property
    def dev_host(self) -> np.ndarray:
        """Device row → the host row whose runtime call launched it, -1: a root's call or unmatched."""
        return gather(self.rt_host, self.dev_rt, -1)

    @cached_property
    def is_operator(self) -> np.ndarray:
        """Host row → whether it is an Operator event."""
        return self.tables.host.type == et.OPERATOR

    @cached_property
    def nearest_operator(self) -> np.ndarray:
        """Host row → the nearest Operator at or above it (itself when it is one), -1: none."""
        is_op = self.is_operator
        nearest = np.where(is_op, np.arange(len(is_op)), -1)
        for d in range(2, self.max_depth + 1):  # top down: a row without its own takes its parent's
            level = self.level(d)
            level = level[~is_op[level]]
            nearest[level] = nearest[self.host_parent[level]]
        return nearest

    @cached_property
    def outermost_operator(self) -> np.ndarray:
        """Host row → the outermost Operator at or above it, -1: none."""
        return self.outermost(self.is_operator)

    def outermost(self, mark: np.ndarray) -> np.ndarray:
        """For each host row, the outermost marked row among itself and its ancestors (-1: none)."""
        out = np.where(mark, np.arange(len(mark)), -1)
        for d in range(2, self.max_depth + 1):
            rows = self.level(d)
            up = out[self.host_parent[rows]]
            out[rows] = np.where(up >= 0, up, out[rows])
        return out


def _positions(idx: np.ndarray, n: int) -> np.ndarray:
    """Positions of rows in a CSR index list (0 for rows not in it)."""
    pos = np.zeros(n, dtype=np.int64)
    pos[idx] = np.arange(len(idx))
    return pos


def _float32_tolerance(end_ns: np.ndarray) -> np.ndarray:
    """Two float32 ulps of each end time (Paddle wrote times as float32 µs), in ns."""
    us = np.abs(end_ns.astype(np.float64) / 1000.0).astype(np.float32)
    return np.spacing(us).astype(np.float64) * 2000.0


def nest(tid, start, end, tol, rt_tid, rt_start, rt_end):
    """Parents of host events and owners of runtime events, as host rows (-1: the thread root)."""
    parent, owner, _ = _nest(tid, start, end, tol, rt_tid, rt_start, rt_end)
    return parent, owner


def _nest(tid, start, end, tol, rt_tid, rt_start, rt_end):
    """nest(), plus the host rows sorted by (tid, start asc, end desc) (a preorder of the forest).

    Paddle's nesting is a stack sweep over each thread's events sorted by (start asc, end
    desc): an event is a child of the stack top iff it starts before the top ends and ends
    within the top's end plus tolerance. For nested events that parent is the nearest earlier
    event containing it, always on the chain previous event → its parent → its parent ...;
    this climbs that chain for all events at once. An unresolved candidate's own candidate is
    never above its parent, so jumping to it is safe, and jumps double like pointer jumping.
    A runtime event's owner is the innermost host event containing it, found by climbing from
    the last host event sorted before it.
    """
    n, m = len(tid), len(rt_tid)
    packed = _pack_thread_start(tid, start, rt_tid, rt_start)
    if packed is None:
        order = np.lexsort((-end, start, tid))
    else:
        key, rt_key = packed
        order = _sort_with_ties(key, -end)
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
    parent[order] = gather(order, cand, -1)

    # runtime owners: climb from the last host sorted at or before each runtime event
    owner = np.full(m, -1, dtype=np.int64)
    if m and n:
        # Rows of the query's thread (a contiguous range of the sorted hosts), narrowed to
        # those of equal start when (tid, start) is packed into one key.
        if packed is None:
            lo, hi = np.searchsorted(t, rt_tid, side="left"), np.searchsorted(t, rt_tid, side="right")
        else:
            key = key[order]
            lo, hi = np.searchsorted(key, rt_key, side="left"), np.searchsorted(key, rt_key, side="right")
        rc = _hosts_up_to(s, e, lo, hi, rt_start, rt_end) - 1
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
        owner = gather(order, rc, -1)
    return parent, owner, order


def _pack_thread_start(tid, start, q_tid, q_start):
    """(tid, start) of hosts and of queries as one int64 each, ordered like the pairs:
    thread index * span + start. None when that would not fit."""
    if len(tid) == 0:
        return None
    tids = np.array(_distinct(tid, q_tid), dtype=np.int64)
    base = min(int(a.min()) for a in (start, q_start) if a.size)
    span = max(int(a.max()) for a in (start, q_start) if a.size) - base + 1
    if len(tids) * span >= 2**62:
        return None
    return (np.searchsorted(tids, tid) * span + (start - base), np.searchsorted(tids, q_tid) * span + (q_start - base))


def _sort_with_ties(key: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """np.lexsort((tiebreak, key)), faster when keys are mostly distinct: a stable sort by key
    (quick on nearly sorted keys), then only the runs of equal keys sorted by tiebreak."""
    order = np.argsort(key, kind="stable")
    k = key[order]
    tie = np.zeros(len(k), dtype=bool)
    tie[1:] = k[1:] == k[:-1]  # equal to the previous position
    in_run = tie.copy()
    in_run[:-1] |= tie[1:]  # ... or to the next one
    pos = np.nonzero(in_run)[0]
    if pos.size:
        run = np.cumsum(~tie[pos])  # a run starts where a position is not a tie
        pos_sorted = pos[np.lexsort((tiebreak[order[pos]], run))]
        order[pos] = order[pos_sorted]
    return order


def _hosts_up_to(s, e, lo, hi, q_start, q_end) -> np.ndarray:
    """For each query, lo + how many hosts of [lo, hi) sort at or before it by (start asc, end
    desc): a binary search per query within its own range (hosts in it sorted that way)."""
    lo, hi = lo.copy(), hi.copy()
    act = np.nonzero(lo < hi)[0]
    while act.size:
        mid = (lo[act] + hi[act]) // 2
        qs = q_start[act]
        before = (s[mid] < qs) | ((s[mid] == qs) & (e[mid] >= q_end[act]))
        lo[act[before]] = mid[before] + 1
        hi[act[~before]] = mid[~before]
        act = act[lo[act] < hi[act]]
    return lo


def _levels(parent: np.ndarray, child_ptr: np.ndarray, child_idx: np.ndarray):
    """Depth of each host row (1: children of the thread root), and the rows level by level
    (by_depth, with depth d at by_depth[ptr[d - 1]:ptr[d]]): a breadth-first walk of the CSR
    children, one level per step."""
    depth = np.zeros(len(parent), dtype=np.int64)
    level = np.nonzero(parent < 0)[0]
    levels = []
    while level.size:
        levels.append(level)
        depth[level] = len(levels)
        # the next level: the CSR slices of this level's rows, gathered in one go
        first, count = child_ptr[level], child_ptr[level + 1] - child_ptr[level]
        slice_start = np.cumsum(count) - count  # where each slice goes in the output
        level = child_idx[np.repeat(first - slice_start, count) + np.arange(int(count.sum()))]
    ptr = np.zeros(len(levels) + 1, dtype=np.int64)
    np.cumsum([lv.size for lv in levels], out=ptr[1:])
    by_depth = np.concatenate(levels) if levels else np.zeros(0, dtype=np.int64)
    return depth, by_depth, ptr


def build_tree(t: EventTables) -> EventTree:
    n_host, n_rt = len(t.host.tid), len(t.runtime.tid)
    tol = _float32_tolerance(t.host.end)
    threads = _distinct(t.host.tid, t.runtime.tid, t.memory.tid)
    h, r = t.host, t.runtime
    parent, rt_host, pre_order = _nest(h.tid, h.start, h.end, tol, r.tid, r.start, r.end)
    child_ptr, child_idx = _csr(parent, n_host, t.host.start)
    depth, by_depth, depth_ptr = _levels(parent, child_ptr, child_idx)
    host_rt_ptr, host_rt_idx = _csr(rt_host, n_host, t.runtime.start)

    # roots and root runtimes by (tid, start): slices of one array per thread
    roots = by_depth[: depth_ptr[1]] if n_host else np.zeros(0, np.int64)
    roots = roots[np.lexsort((t.host.start[roots], t.host.tid[roots]))]
    root_children = _split_by_thread(roots, t.host.tid[roots], threads)
    root_rts_rows = np.nonzero(rt_host < 0)[0]
    root_rts_rows = root_rts_rows[np.lexsort((t.runtime.start[root_rts_rows], t.runtime.tid[root_rts_rows]))]
    root_runtimes = _split_by_thread(root_rts_rows, t.runtime.tid[root_rts_rows], threads)

    dev_rt = t.launches()  # device → runtime by correlation id
    rt_dev_ptr, rt_dev_idx = _csr(dev_rt, n_rt, np.arange(len(dev_rt)))

    # Paddle's walk (a stack that pushes children in time order) is the reverse of the
    # postorder; in a forest listed in preorder, postorder rank = pre + subtree size - depth.
    # The forest here is all threads' trees, threads ascending, so each thread's postorder
    # ranks are one contiguous range, in thread order.
    pre = np.empty(n_host, dtype=np.int64)
    pre[pre_order] = np.arange(n_host)
    size = np.ones(n_host, dtype=np.int64)
    for d in range(len(depth_ptr) - 1, 1, -1):
        rows = by_depth[depth_ptr[d - 1] : depth_ptr[d]]
        np.add.at(size, parent[rows], size[rows])
    post = pre + size - depth
    by_post = np.empty(n_host, dtype=np.int64)
    by_post[post] = np.arange(n_host)  # post is a permutation: invert it, no sort
    # each thread's rows, by descending postorder
    walk = {tid: rows[::-1] for tid, rows in _split_by_thread(by_post, t.host.tid[by_post], threads).items()}

    return EventTree(
        tables=t,
        threads=threads,
        host_parent=parent,
        host_depth=depth,
        child_ptr=child_ptr,
        child_idx=child_idx,
        root_children=root_children,
        rt_host=rt_host,
        host_rt_ptr=host_rt_ptr,
        host_rt_idx=host_rt_idx,
        root_runtimes=root_runtimes,
        dev_rt=dev_rt,
        rt_dev_ptr=rt_dev_ptr,
        rt_dev_idx=rt_dev_idx,
        walk=walk,
        by_depth=by_depth,
        depth_ptr=depth_ptr,
    )


def _split_by_thread(rows: np.ndarray, tids: np.ndarray, threads: List[int]) -> Dict[int, np.ndarray]:
    """rows sorted by tid → {tid: its rows}, every thread present (maybe empty)."""
    out = {}
    for tid in threads:
        lo, hi = np.searchsorted(tids, tid, side="left"), np.searchsorted(tids, tid, side="right")
        out[tid] = rows[lo:hi]
    return out


@dataclass
class NodeTimes:
    """Paddle's per-node statistics (HostStatisticNode.cal_statistic), as columns."""

    cpu: np.ndarray  # host: end - start
    gpu: np.ndarray  # host: kernel time in the subtree
    general_gpu: np.ndarray  # host: kernel + memcpy + memset time in the subtree
    rt_gpu: np.ndarray  # runtime: its kernels' time
    rt_general_gpu: np.ndarray


def node_times(tree: EventTree) -> NodeTimes:
    t = tree.tables
    n_host, n_rt = len(t.host.tid), len(t.runtime.tid)
    dur = t.device.end - t.device.start
    matched = tree.dev_rt >= 0
    kernel = matched & (t.device.type == et.KERNEL)
    rt_gpu = np.bincount(tree.dev_rt[kernel], weights=dur[kernel], minlength=n_rt).astype(np.int64)
    rt_general = np.bincount(tree.dev_rt[matched], weights=dur[matched], minlength=n_rt).astype(np.int64)
    owned = tree.rt_host >= 0
    gpu = np.bincount(tree.rt_host[owned], weights=rt_gpu[owned], minlength=n_host).astype(np.int64)
    general = np.bincount(tree.rt_host[owned], weights=rt_general[owned], minlength=n_host).astype(np.int64)
    # Subtree sums, deepest level first.
    for d in range(tree.max_depth, 1, -1):
        rows = tree.level(d)
        np.add.at(gpu, tree.host_parent[rows], gpu[rows])
        np.add.at(general, tree.host_parent[rows], general[rows])
    return NodeTimes(
        cpu=t.host.end - t.host.start, gpu=gpu, general_gpu=general, rt_gpu=rt_gpu, rt_general_gpu=rt_general
    )
