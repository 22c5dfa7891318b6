"""Device and Overview summaries: merged time per event type (Paddle's TimeRangeSummary).

Values are unions of the ranges of each type, taken over every non-root node;
runtime and device events hanging on a thread root are not counted. The order
of types (and of GPU devices) is the order in which Paddle's walk first meets
them, which decides ties in the Overview's sort and the GPU rows' order.
"""
from __future__ import annotations

from typing import Dict, List

import numpy as np

from .. import event_types as et
from ..v1 import summary_pb2 as pb
from . import ranges
from .profile import Profile


def _first_seen(keys: np.ndarray, order_key: np.ndarray) -> List[int]:
    """Distinct values of keys, ordered by the smallest order_key at which each occurs."""
    if keys.size == 0:
        return []
    uniq, inverse = np.unique(keys, return_inverse=True)
    first = np.full(uniq.size, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, inverse, order_key)
    return uniq[np.argsort(first, kind="stable")].tolist()


class TimeRanges:
    """Counted host, runtime and device events with their walk order."""

    def __init__(self, p: Profile):
        t, tree = p.tables, p.tree
        self.p = p
        rank = p.walk_rank
        self.rt_mask = tree.rt_host >= 0
        dev_host = np.where(tree.dev_rt >= 0, tree.rt_host[np.maximum(tree.dev_rt, 0)], -1)
        self.dev_mask = (tree.dev_rt >= 0) & (dev_host >= 0)

        # Order keys: a host's own type comes before its runtimes' types.
        host_key = rank * 4
        rt_key = rank[tree.rt_host[self.rt_mask]] * 4 + 1
        types = np.concatenate([t.host_type.astype(np.int64), t.rt_type[self.rt_mask].astype(np.int64)])
        self.cpu_type_order = _first_seen(types, np.concatenate([host_key, rt_key]))

        self.calls: Dict[int, int] = {}
        for ty in self.cpu_type_order:
            self.calls[ty] = int((t.host_type == ty).sum() + (t.rt_type[self.rt_mask] == ty).sum())
        self.cpu_sum: Dict[int, int] = {}
        for ty in self.cpu_type_order:
            hm = t.host_type == ty
            rm = self.rt_mask & (t.rt_type == ty)
            u = ranges.union(np.concatenate([t.host_start[hm], t.rt_start[rm]]),
                             np.concatenate([t.host_end[hm], t.rt_end[rm]]))
            self.cpu_sum[ty] = ranges.measure(u)

        dm = self.dev_mask
        dev_key = rank[dev_host[dm]] * (len(t.dev_id) + 1) + np.nonzero(dm)[0]
        self.device_order = _first_seen(t.dev_id[dm], dev_key)
        self.gpu_union = {}      # device → type → union
        self.gpu_type_order = {}
        for d in self.device_order:
            on_dev = dm & (t.dev_id == d)
            order = _first_seen(t.dev_type[on_dev].astype(np.int64), dev_key[on_dev[dm]])
            self.gpu_type_order[d] = order
            self.gpu_union[d] = {}
            for ty in order:
                m = on_dev & (t.dev_type == ty)
                self.gpu_union[d][ty] = ranges.union(t.dev_start[m], t.dev_end[m])
                self.calls[ty] = self.calls.get(ty, 0) + int(m.sum())

        self.total_time = self.cpu_sum.get(et.PROFILE_STEP, 0)


def device_view(tr: TimeRanges, out: pb.DeviceView) -> None:
    info = tr.p.tables.extra_info
    out.cpu_process_utilization = float(info.get("Process Cpu Utilization", "0") or 0)
    out.cpu_system_utilization = float(info.get("System Cpu Utilization", "0") or 0)
    for d in tr.device_order:
        kernel = tr.gpu_union[d].get(et.KERNEL, ranges.EMPTY)
        out.gpus.add(device_id=int(d), kernel_time_ns=ranges.measure(kernel))


def overview_view(tr: TimeRanges, model_items: dict, dist, out: pb.OverviewView) -> None:
    """Paddle's Overview rows, in display order.

    model_items: stage type → EventAcc of outermost stage events (Model Summary).
    dist: the DistributedAnalysis (communication replaces the Communication row).
    """
    cpu_time: Dict[int, int] = {}
    calls = dict(tr.calls)
    for ty in tr.cpu_type_order:
        if ty != et.COMMUNICATION:
            cpu_time[ty] = tr.cpu_sum[ty]
    if dist.cpu_comm[0].size:
        cpu_time[et.COMMUNICATION] = ranges.measure(dist.cpu_comm)
        calls[et.COMMUNICATION] = dist.cpu_calls
    for ty in et.MODEL_STAGES:
        if ty in calls and ty in model_items:
            calls[ty] = model_items[ty].calls
            cpu_time[ty] = model_items[ty].cpu.total
    for ty, value in sorted(cpu_time.items(), key=lambda kv: kv[1], reverse=True):
        out.cpu.add(event_type=et.TYPE_NAMES[ty], calls=calls.get(ty, 0), time_ns=int(value))

    gpu_types: Dict[int, list] = {}
    for d in tr.device_order:
        for ty in tr.gpu_type_order[d]:
            gpu_types.setdefault(ty, []).append(tr.gpu_union[d][ty])
    for ty, unions in gpu_types.items():
        merged = ranges.union(np.concatenate([u[0] for u in unions]), np.concatenate([u[1] for u in unions]))
        out.gpu.add(event_type=et.TYPE_NAMES[ty], calls=tr.calls.get(ty, 0), time_ns=ranges.measure(merged))
    if dist.gpu_comm[0].size:
        out.gpu.add(event_type="Communication", calls=dist.gpu_calls, time_ns=ranges.measure(dist.gpu_comm))
