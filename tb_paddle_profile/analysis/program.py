"""One rank's program: the nodes and edges of its dependency graph (``ParallelView.program``).

Built in the job that parsed the trace, from its full event tables, so that the critical path
across ranks (``analysis/crossrank/replay.py``, ``critical_path.py``) reads a few hundred nodes per rank and
step instead of every event. Definitions (also in docs/critical-path.md):

* **Host nodes**, on the main thread (the one with the ProfileSteps): each step's start and end, each
  synchronising runtime call (``*Synchronize*``, synchronous ``cudaMemcpy``) and each host
  communication instance (gloo). They form one chain: a host node starts its lag (the host's own
  work) after the previous one ends.
* **Device nodes**: every memcpy, memset and communication kernel is a node; compute kernels are
  merged into **runs**: consecutive kernels of one stream whose start is set by their stream
  predecessor or by their launch, with the same launch anchor and step, broken before a kernel that
  waited for another stream and after a kernel another node waited for.
* **Edges** of a device node, each with a lag (ns from the predecessor's end to the start): the
  previous node of its stream; its launch anchor (the last host node that ended before the
  launching runtime call: the host had not yet launched it); the node of another stream of the same
  device that ended last before it started. The one with the latest end is **binding**: its lag is
  the observed gap, so the unchanged graph replays the trace exactly; the others' lags are the
  observed gap capped at ``FREE_LAG_NS`` (what the edge costs when it binds later). A dependency
  that never bound leaves no trace and is not known.
* A synchronising call that returned after a device node ended inside it waited for that node: its
  end = that node's end + the observed return lag.
* A collective issued by an operator (a synchronous one: ``c_allreduce_sum``, ``recv_v2``,
  ``broadcast``; not a Communication event like the fused data-parallel ``allreduce_grads``, not a
  send) **gates** the next compute kernel launched after it, when that kernel started after it ended:
  a *wait* edge with the free lag, so that the dependency holds after a change even where the host's
  pace hid it in the trace. Likewise every collective kernel waits for the compute kernel launched
  last before it on another stream (NCCL's stream waits for an event recorded on the compute stream).
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from ..v1 import summary_pb2 as pb

COMPUTE, MEMCPY, MEMSET, COLLECTIVE, STEP_START, SYNC, STEP_END, HOST_COLLECTIVE = range(1, 9)
DEVICE_KINDS = (COMPUTE, MEMCPY, MEMSET, COLLECTIVE)
HOST_KINDS = (STEP_START, SYNC, STEP_END, HOST_COLLECTIVE)
# The lag an edge that did not bind is given (a kernel queued behind another starts about a
# microsecond after it ends on current GPUs).
FREE_LAG_NS = 1000
TIE_ULPS = 2  # a time this many float32 ulps (of its value, ns from the trace's origin) from another is a tie


def time_resolution(t: np.ndarray) -> np.ndarray:
    """Per time (ns from the trace's origin), how far it may be off another it equals in the trace:
    TIE_ULPS float32 ulps of its value (Paddle writes relative times through float32: 1 ns up to 2^24 ns,
    16 ns at 0.2 s, 128 ns at 1.5 s), at least 1 ns."""
    e = np.floor(np.log2(np.maximum(np.abs(t).astype(np.float64), 1.0))).astype(np.int64)
    return np.maximum(1, TIE_ULPS * (np.int64(1) << np.maximum(e - 23, 0)))


_PHASES = {et.FORWARD: 1, et.BACKWARD: 2, et.OPTIMIZATION: 3}
_NONE = np.iinfo(np.int64).min // 4


def _main_thread(t) -> int:
    steps = t.host.tid[t.host.type == et.PROFILE_STEP]
    tids = steps if steps.size else t.host.tid
    if not tids.size:
        return -1
    vals, counts = np.unique(tids, return_counts=True)
    return int(vals[np.argmax(counts)])


def build_program(p, coll, steps: Sequence[Tuple[int, int, int]], out: pb.ParallelView, sync_re) -> None:
    """Fill ``out.program`` (and add the names it needs to ``out.names``). ``coll``: the rank's
    CollectiveAnalysis (instances in ParallelView.collectives order)."""
    t, tree = p.tables, p.tree
    main = _main_thread(t)
    inst = coll.instances
    names: Dict[str, int] = {n: i for i, n in enumerate(out.names)}

    def name_id(s: str) -> int:
        i = names.get(s)
        if i is None:
            i = names[s] = len(names)
            out.names.append(s)
        return i

    # ---------------------------------------------------------------- host nodes (main thread)
    rt_main = t.runtime.tid == main
    sync_name = np.array([bool(sync_re.search(n)) for n in t.names], dtype=bool) if t.names else np.zeros(0, bool)
    rt_sync = (sync_name[t.runtime.name] if len(t.runtime.name) else np.zeros(0, bool)) & rt_main

    h_kind: List[int] = []
    h_start: List[int] = []
    h_end: List[int] = []
    h_step: List[int] = []
    h_coll: List[int] = []
    h_rt: List[int] = []
    for number, lo, hi in steps:
        h_kind += [STEP_START, STEP_END]
        h_start += [lo, hi]
        h_end += [lo, hi]
        h_step += [number, number]
        h_coll += [-1, -1]
        h_rt += [-1, -1]
    for r in np.nonzero(rt_sync)[0].tolist():
        h_kind.append(SYNC)
        h_start.append(int(t.runtime.start[r]))
        h_end.append(int(t.runtime.end[r]))
        h_step.append(0)
        h_coll.append(-1)
        h_rt.append(r)
    host_inst = np.nonzero(~inst.on_device)[0]
    host_rows = coll.inst_host_row
    for i in host_inst.tolist():
        if int(t.host.tid[host_rows[i]]) != main:
            continue
        h_kind.append(HOST_COLLECTIVE)
        h_start.append(int(inst.start[i]))
        h_end.append(int(inst.end[i]))
        h_step.append(0)
        h_coll.append(i)
        h_rt.append(-1)
    H = len(h_kind)
    hk = np.array(h_kind, dtype=np.int64)
    hs = np.array(h_start, dtype=np.int64)
    he = np.array(h_end, dtype=np.int64)
    # chain order: by start; at one time a step's end before the next step's start before the rest
    tie = np.select([hk == STEP_END, hk == STEP_START], [0, 1], 2)
    order = np.lexsort((tie, hs))
    keep: List[int] = []
    last_end = _NONE
    for i in order.tolist():
        if hs[i] < last_end and hk[i] not in (STEP_START, STEP_END):
            continue  # nested in the previous host node (a sync inside a host collective): its part
        keep.append(i)
        last_end = max(last_end, int(he[i]))
    hsel = np.array(keep, dtype=np.int64)
    hk, hs, he = hk[hsel], hs[hsel], he[hsel]
    h_step_a = np.array(h_step, dtype=np.int64)[hsel] if H else np.zeros(0, np.int64)
    h_coll_a = np.array(h_coll, dtype=np.int64)[hsel] if H else np.zeros(0, np.int64)
    h_rt_a = np.array(h_rt, dtype=np.int64)[hsel] if H else np.zeros(0, np.int64)
    H = hsel.size
    # the step of a sync / host collective: the step holding its start
    if steps:
        s_lo = np.array([lo for _, lo, _ in steps], dtype=np.int64)
        s_hi = np.array([hi for _, _, hi in steps], dtype=np.int64)
        s_no = np.array([n for n, _, _ in steps], dtype=np.int64)
    else:
        s_lo = s_hi = s_no = np.zeros(0, np.int64)

    def step_of(x: np.ndarray) -> np.ndarray:
        if not s_lo.size:
            return np.full(x.size, -1, np.int64)
        k = np.searchsorted(s_lo, x, side="right") - 1
        ok = (k >= 0) & (x < s_hi[np.maximum(k, 0)])
        return np.where(ok, s_no[np.maximum(k, 0)], -1)

    other = (hk == SYNC) | (hk == HOST_COLLECTIVE)
    h_step_a = np.where(other, step_of(hs), h_step_a)
    # host node ends are non-decreasing along the chain (the anchors of launches)
    h_end_sorted = np.maximum.accumulate(he) if H else he

    # ---------------------------------------------------------------- device events
    D = len(t.device.id)
    dev_inst = np.full(D, -1, dtype=np.int64)
    on_dev = np.nonzero(inst.on_device)[0]
    dev_inst[coll.inst_dev_row[on_dev]] = on_dev
    d_type = t.device.type
    ds, de = t.device.start, t.device.end
    dkind = np.where(
        dev_inst >= 0, COLLECTIVE, np.select([d_type == et.MEMCPY, d_type == et.MEMSET], [MEMCPY, MEMSET], COMPUTE)
    ).astype(np.int64)
    rt = tree.dev_rt
    has_rt = rt >= 0
    rt_s = gather(t.runtime.start, rt, 0)
    rt_e = gather(t.runtime.end, rt, 0)
    rt_on_main = gather(rt_main, rt, False)
    L = np.where(rt_e <= ds, rt_e, rt_s)
    has_L = has_rt & rt_on_main & (L <= ds)
    # launch anchor: the last host node that ended at or before the launch
    anchor = np.searchsorted(h_end_sorted, L, side="right") - 1 if H else np.full(D, -1, np.int64)
    has_L &= anchor >= 0
    anchor = np.where(has_L, anchor, -1)
    anchor_end = gather(he, anchor, 0)

    dorder = np.lexsort((de, ds, t.device.stream, t.device.id))
    sd = t.device.id[dorder]
    ss = t.device.stream[dorder]
    first = np.ones(D, dtype=bool)
    if D:
        first[1:] = (sd[1:] != sd[:-1]) | (ss[1:] != ss[:-1])
    pos = np.empty(D, dtype=np.int64)
    pos[dorder] = np.arange(D)
    sp = np.full(D, -1, dtype=np.int64)  # stream predecessor (device row)
    sp_rows = np.where(~first, np.concatenate([[-1], dorder[:-1]]) if D else dorder, -1)
    sp[dorder] = sp_rows
    e_sp = gather(de, sp, _NONE)

    # another stream's event of the same device that ended last at or before the start, within the
    # trace's resolution: Paddle writes relative times through float32, so a kernel that waited for an
    # event and started the nanosecond it ended can read a few float32 ulps before that end
    tie = time_resolution(ds)
    xp = np.full(D, -1, dtype=np.int64)
    e_x = np.full(D, _NONE, dtype=np.int64)
    if D:
        keys = np.stack([sd, ss], axis=1)
        bounds = np.concatenate([[0], np.nonzero(first)[0][1:], [D]])
        streams = [(int(keys[a, 0]), int(keys[a, 1]), dorder[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        for dev, st, rows in streams:
            ends = de[rows]
            cm = np.maximum.accumulate(ends)
            arg = np.maximum.accumulate(np.where(ends == cm, np.arange(rows.size), 0))
            for dev2, st2, rows2 in streams:
                if dev2 != dev or st2 == st:
                    continue
                k = np.searchsorted(cm, ds[rows2] + tie[rows2], side="right") - 1
                ok = k >= 0
                cand_end = np.where(ok, cm[np.maximum(k, 0)], _NONE)
                cand = np.where(ok, rows[arg[np.maximum(k, 0)]], -1)
                better = cand_end > e_x[rows2]
                e_x[rows2] = np.where(better, cand_end, e_x[rows2])
                xp[rows2] = np.where(better, cand, xp[rows2])
    e_L = np.where(has_L, L, _NONE)
    # binding: the predecessor that ended last (ties: stream, then launch, then the other stream)
    cand = np.stack([e_sp, e_L, e_x], axis=1)
    bind = np.argmax(cand, axis=1) if D else np.zeros(0, np.int64)
    bind_end = cand[np.arange(D), bind] if D else np.zeros(0, np.int64)
    no_pred = bind_end == _NONE
    cross_bind = (bind == 2) & ~no_pred
    # a sync waited for the device event that ended last inside it
    h_xdev = np.full(H, -1, dtype=np.int64)
    if D and H:
        end_order = np.argsort(de, kind="stable")
        ends_sorted = de[end_order]
        for j in np.nonzero(hk == SYNC)[0].tolist():
            k = int(np.searchsorted(ends_sorted, he[j], side="right")) - 1
            if k >= 0 and ends_sorted[k] > hs[j]:
                h_xdev[j] = end_order[k]
    # a collective issued by an operator (sync_op: c_allreduce_sum, recv_v2, broadcast, ...; not a
    # Communication event such as the data-parallel allreduce_grads, not a send) gates the next compute
    # kernel launched after it, when that kernel started after it ended
    wait_dev = np.full(D, -1, dtype=np.int64)
    if D and on_dev.size:
        op_row = coll.inst_op_row[on_dev]
        op_type = gather(t.host.type, op_row, -1)
        gate = (op_type == et.OPERATOR) & (inst.direction[on_dev] != pb.P2P_DIRECTION_SEND)
        crow = coll.inst_dev_row[on_dev][gate]
        krows = np.nonzero((dkind == COMPUTE) & has_L)[0]
        krows = krows[np.argsort(L[krows], kind="stable")]
        if crow.size and krows.size:
            k = np.searchsorted(L[krows], np.where(has_L[crow], L[crow], ds[crow]), side="right")
            ok = k < krows.size
            nxt = krows[np.minimum(k, krows.size - 1)]
            ok &= (t.device.id[nxt] == t.device.id[crow]) & (de[crow] <= ds[nxt])
            ok &= ~(cross_bind[nxt] & (xp[nxt] == crow))
            for c, n in zip(crow[ok].tolist(), nxt[ok].tolist()):
                if wait_dev[n] < 0 or de[c] > de[wait_dev[n]]:
                    wait_dev[n] = c
        # every collective kernel waits for the compute launched before it (NCCL's stream waits for an
        # event recorded on the compute stream at the launch), when that ended before it started
        crow = coll.inst_dev_row[on_dev]
        if crow.size and krows.size:
            k = np.searchsorted(L[krows], np.where(has_L[crow], L[crow], ds[crow]), side="left") - 1
            ok = k >= 0
            prv = krows[np.maximum(k, 0)]
            ok &= (t.device.id[prv] == t.device.id[crow]) & (de[prv] <= ds[crow])
            ok &= ~(cross_bind[crow] & (xp[crow] == prv))
            ok &= t.device.stream[prv] != t.device.stream[crow]
            wait_dev[crow[ok]] = prv[ok]
    waited_on = np.zeros(D, dtype=bool)
    if D:
        waited_on[xp[cross_bind]] = True
        waited_on[h_xdev[h_xdev >= 0]] = True
        waited_on[wait_dev[wait_dev >= 0]] = True

    d_step = step_of(np.where(has_L, L, ds))
    # runs of compute kernels, in stream order
    comp = dkind[dorder] == COMPUTE
    brk = first.copy()
    if D:
        prev_ok = np.concatenate([[False], comp[:-1]])
        same_anchor = np.concatenate([[False], anchor[dorder][1:] == anchor[dorder][:-1]])
        same_step = np.concatenate([[False], d_step[dorder][1:] == d_step[dorder][:-1]])
        prev_waited = np.concatenate([[False], waited_on[dorder][:-1]])
        brk |= ~comp | ~prev_ok | cross_bind[dorder] | ~same_anchor | ~same_step | prev_waited | no_pred[dorder]
        brk |= wait_dev[dorder] >= 0
    run_of_pos = np.cumsum(brk) - 1
    R = int(run_of_pos[-1]) + 1 if D else 0
    run_first = dorder[np.nonzero(brk)[0]]
    run_last = dorder[np.concatenate([np.nonzero(brk)[0][1:] - 1, [D - 1]])] if D else run_first
    run_of = np.empty(D, dtype=np.int64)
    run_of[dorder] = run_of_pos
    dur = de - ds
    busy = np.bincount(run_of_pos, weights=dur[dorder], minlength=R).astype(np.int64) if D else np.zeros(0, np.int64)
    events = np.bincount(run_of_pos, minlength=R) if D else np.zeros(0, np.int64)

    f = run_first
    lag_cap = np.minimum  # the lag of an edge that did not bind: the observed gap, at most FREE_LAG_NS
    r_start = ds[f]
    r_end = de[run_last]
    r_sp = gather(run_of, sp[f], -1)
    r_sp_lag = np.where(bind[f] == 0, r_start - e_sp[f], lag_cap(r_start - e_sp[f], FREE_LAG_NS))
    r_sp_lag = np.where(r_sp >= 0, r_sp_lag, 0)
    r_la = anchor[f]
    la_free = (L[f] - anchor_end[f]) + lag_cap(r_start - L[f], FREE_LAG_NS)
    r_la_lag = np.where(bind[f] == 1, r_start - anchor_end[f], la_free)
    r_la_lag = np.where(r_la >= 0, r_la_lag, 0)
    r_xp = np.where(cross_bind[f], gather(run_of, xp[f], -1), -1)
    r_xp_lag = np.where(r_xp >= 0, np.maximum(r_start - e_x[f], 0), 0)
    r_wp = gather(run_of, wait_dev[f], -1) if D else np.zeros(0, np.int64)
    r_wp = np.where(r_wp == r_sp, -1, r_wp)
    r_wp_lag = np.where(r_wp >= 0, lag_cap(r_start - gather(de, wait_dev[f], 0), FREE_LAG_NS), 0)
    lst = run_last
    t_has = has_L[lst] & (anchor[lst] == r_la)
    tail_lag = np.where(
        t_has,
        np.where(
            bind[lst] == 1,
            ds[lst] - anchor_end[lst],
            (L[lst] - anchor_end[lst]) + lag_cap(ds[lst] - L[lst], FREE_LAG_NS),
        ),
        0,
    )
    tail_ns = np.where(t_has, dur[lst], 0)
    r_kind = dkind[f]
    r_coll = dev_inst[f]
    r_phase_row = gather(tree.outermost(np.isin(t.host.type, list(_PHASES))), gather(tree.rt_host, rt, -1), -1)
    ph_type = gather(t.host.type, r_phase_row, -1)
    phase = np.zeros(D, dtype=np.int64)
    for ty, v in _PHASES.items():
        phase[ph_type == ty] = v
    # the dominant operator of a run (most kernel time), else the event's own name
    op_row = gather(tree.outermost_operator, tree.dev_host, -1)
    op_name = gather(t.host.name, op_row, -1)
    r_name = np.zeros(R, dtype=np.int64)
    if D:
        n_names = max(1, len(t.names))
        key_name = np.where(dkind == COMPUTE, op_name, -1)
        key_name = np.where(key_name >= 0, key_name, n_names + t.device.name)  # beyond: the event's own name
        combined = run_of * (2 * n_names) + key_name
        uk, inv = np.unique(combined, return_inverse=True)
        tot = np.bincount(inv.ravel(), weights=dur, minlength=uk.size)
        u_run, u_name = uk // (2 * n_names), uk % (2 * n_names)
        o = np.lexsort((-tot, u_run))
        firsts = o[np.concatenate([[True], u_run[o][1:] != u_run[o][:-1]])]
        ids: Dict[str, int] = {}
        for run, k in zip(u_run[firsts].tolist(), u_name[firsts].tolist()):
            nm = t.names[k] if k < n_names else t.names[k - n_names]
            if k < n_names and nm.endswith(" dygraph"):
                nm = nm[: -len(" dygraph")]
            r_name[run] = ids.setdefault(nm, name_id(nm))
    r_phase = phase[f]
    r_stream = t.device.stream[f]
    r_step = d_step[f]

    # ---------------------------------------------------------------- host node edges
    h_sp = np.arange(H) - 1
    h_prev_end = np.concatenate([[_NONE], he[:-1]]) if H else he
    h_lag = np.where(h_sp >= 0, hs - h_prev_end, 0)
    h_lag = np.maximum(h_lag, 0)
    h_x = gather(run_of, h_xdev, -1) if D else np.full(H, -1, np.int64)
    h_xlag = np.where(h_x >= 0, he - gather(de, h_xdev, 0), 0)
    h_dur = he - hs
    h_busy = np.where(h_x >= 0, np.minimum(h_dur, h_xlag), h_dur)
    h_name = np.array(
        [
            name_id({STEP_START: "step start", STEP_END: "step end", SYNC: "sync", HOST_COLLECTIVE: "collective"}[k])
            for k in hk.tolist()
        ],
        dtype=np.int64,
    )
    for j in np.nonzero(h_rt_a >= 0)[0].tolist():
        h_name[j] = name_id(t.names[t.runtime.name[h_rt_a[j]]])
    for j in np.nonzero(h_coll_a >= 0)[0].tolist():
        h_name[j] = name_id(inst.name[h_coll_a[j]])

    # ---------------------------------------------------------------- one order, predecessors first
    # device nodes by start, host nodes by end (a sync waits for what ended inside it); host first
    key = np.concatenate([r_start, he])
    tiek = np.concatenate([np.ones(R, np.int64), np.zeros(H, np.int64)])
    sec = np.concatenate([r_end, hs])
    order = np.lexsort((sec, tiek, key))
    N = R + H
    new = np.empty(N, dtype=np.int64)
    new[order] = np.arange(N)

    def remap(a: np.ndarray, base: int) -> np.ndarray:
        return np.where(a >= 0, new[np.maximum(a, 0) + base] if N else a, -1)

    cols = {
        "kind": np.concatenate([r_kind, hk]),
        "step": np.concatenate([r_step, h_step_a]),
        "stream": np.concatenate([r_stream, np.full(H, -1, np.int64)]),
        "start_ns": np.concatenate([r_start, hs]),
        "duration_ns": np.concatenate([r_end - r_start, h_dur]),
        "busy_ns": np.concatenate([busy, h_busy]),
        "events": np.concatenate([events, np.ones(H, np.int64)]),
        "stream_pred": np.concatenate([remap(r_sp, 0), remap(h_sp, R)]),
        "stream_lag_ns": np.concatenate([r_sp_lag, h_lag]),
        "launch_pred": np.concatenate([remap(r_la, R), np.full(H, -1, np.int64)]),
        "launch_lag_ns": np.concatenate([r_la_lag, np.zeros(H, np.int64)]),
        "cross_pred": np.concatenate([remap(r_xp, 0), remap(h_x, 0)]),
        "cross_lag_ns": np.concatenate([r_xp_lag, h_xlag]),
        "wait_pred": np.concatenate([remap(r_wp, 0), np.full(H, -1, np.int64)]),
        "wait_lag_ns": np.concatenate([r_wp_lag, np.zeros(H, np.int64)]),
        "tail_lag_ns": np.concatenate([tail_lag, np.zeros(H, np.int64)]),
        "tail_ns": np.concatenate([tail_ns, np.zeros(H, np.int64)]),
        "collective": np.concatenate([r_coll, h_coll_a]),
        "name": np.concatenate([r_name, h_name]),
        "phase": np.concatenate([r_phase, np.zeros(H, np.int64)]),
    }
    idx = np.arange(N)
    for pred, lag in (
        ("stream_pred", "stream_lag_ns"),
        ("launch_pred", "launch_lag_ns"),
        ("cross_pred", "cross_lag_ns"),
        ("wait_pred", "wait_lag_ns"),
    ):
        a = cols[pred][order]
        bad = a >= idx  # a predecessor must come first (ties of zero-length nodes): drop the edge
        cols[pred] = np.where(bad, -1, a)
        cols[lag] = np.where(bad, 0, cols[lag][order])
    prog = out.program
    edges = (
        "stream_pred",
        "stream_lag_ns",
        "launch_pred",
        "launch_lag_ns",
        "cross_pred",
        "cross_lag_ns",
        "wait_pred",
        "wait_lag_ns",
    )
    for col, values in cols.items():
        getattr(prog, col).extend((values if col in edges else values[order]).tolist())
