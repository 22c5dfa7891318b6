"""Device and Overview summaries: merged time per event type (Paddle's TimeRangeSummary).

Values are unions of the ranges of each type, taken over every non-root node;
runtime and device events hanging on a thread root are not counted. The order
of types (and of GPU devices) is the order in which Paddle's walk first meets
them, which decides ties in the Overview's sort and the GPU rows' order.
"""

from __future__ import annotations

from typing import Dict, List

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import summary_pb2 as pb
from . import ranges
from .groupby import split_rows
from .profile import Profile


def _first_seen(rows_of: Dict[int, np.ndarray], order_key: np.ndarray) -> List[int]:
    """The keys of rows_of (key → rows), ordered by the smallest order_key of their rows
    (ties: smaller key first)."""
    first = {k: int(order_key[rows].min()) for k, rows in rows_of.items()}
    return sorted(first, key=lambda k: (first[k], k))


class TimeRanges:
    """Counted host, runtime and device events with their walk order."""

    def __init__(self, p: Profile):
        t, tree = p.tables, p.tree
        self.p = p
        rank = p.walk_rank
        self.rt_mask = tree.rt_host >= 0
        dev_host = tree.dev_host
        self.dev_mask = (tree.dev_rt >= 0) & (dev_host >= 0)

        # Rows of each type, split once instead of a mask per type.
        host_rows = split_rows(t.host.type, np.arange(len(t.host.type)))
        rt_rows = split_rows(t.runtime.type[self.rt_mask], np.nonzero(self.rt_mask)[0])
        # Order keys: a host's own type comes before its runtimes' types.
        first = {ty: int(rank[rows].min()) * 4 for ty, rows in host_rows.items()}
        for ty, rows in rt_rows.items():
            key = int(rank[tree.rt_host[rows]].min()) * 4 + 1
            first[ty] = min(first.get(ty, key), key)
        self.cpu_type_order = sorted(first, key=lambda ty: (first[ty], ty))

        none = np.zeros(0, dtype=np.int64)
        self.calls: Dict[int, int] = {}
        self.cpu_sum: Dict[int, int] = {}
        for ty in self.cpu_type_order:
            hr, rr = host_rows.get(ty, none), rt_rows.get(ty, none)
            self.calls[ty] = int(hr.size + rr.size)
            u = ranges.union(
                np.concatenate([t.host.start[hr], t.runtime.start[rr]]),
                np.concatenate([t.host.end[hr], t.runtime.end[rr]]),
            )
            self.cpu_sum[ty] = ranges.measure(u)

        dev_rows = np.nonzero(self.dev_mask)[0]
        dev_key = rank[dev_host[dev_rows]] * (len(t.device.id) + 1) + dev_rows
        on_dev = split_rows(t.device.id[dev_rows], np.arange(dev_rows.size))  # positions in dev_rows
        self.device_order = _first_seen(on_dev, dev_key)
        self.gpu_union: Dict[int, Dict[int, tuple]] = {}  # device → type → union (starts, ends)
        self.gpu_type_order = {}
        for d in self.device_order:
            of_type = split_rows(t.device.type[dev_rows[on_dev[d]]], on_dev[d])
            order = _first_seen(of_type, dev_key)
            self.gpu_type_order[d] = order
            self.gpu_union[d] = {}
            for ty in order:
                m = dev_rows[of_type[ty]]
                self.gpu_union[d][ty] = ranges.union(t.device.start[m], t.device.end[m])
                self.calls[ty] = self.calls.get(ty, 0) + int(m.size)

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
