"""Paddle's Operator Summary: every Operator node by name, with its inner events and kernels.

For each operator call (profiler_statistic.EventSummary.OperatorItem): its direct
children that are not operators become inner items by name (infer_meta, kernel
launch, node_creation, user events...), and the device events of its own runtime
calls become device items by name; each inner item likewise carries the device
events of its own runtime calls. Nested operators also count as their own item.
Items are kept in the order Paddle's walk meets them; sorting is the renderer's.
"""
from __future__ import annotations

from typing import Dict

from .. import event_types as et
from ..v1 import summary_pb2 as pb
from .profile import Profile
from .stats import DeviceAcc, EventAcc


def _add_devices(p: Profile, row: int, devices: Dict[int, DeviceAcc]) -> None:
    t, tree = p.tables, p.tree
    for rt in tree.runtimes(row).tolist():
        for d in tree.devices(rt).tolist():
            key = int(t.dev_name[d])
            acc = devices.get(key)
            if acc is None:
                acc = devices[key] = DeviceAcc(t.names[key], et.TYPE_NAMES[t.dev_type[d]])
            acc.add(int(t.dev_end[d] - t.dev_start[d]))


def _add_operator(p: Profile, items: Dict[int, EventAcc], row: int) -> None:
    t, tree, tm = p.tables, p.tree, p.times
    key = int(t.host_name[row])
    item = items.get(key)
    if item is None:
        item = items[key] = EventAcc(t.names[key])
    item.add(int(tm.cpu[row]), int(tm.gpu[row]), int(tm.general_gpu[row]))
    for child in tree.children(row).tolist():
        if t.host_type[child] == et.OPERATOR:
            continue
        ckey = int(t.host_name[child])
        inner = item.inners.get(ckey)
        if inner is None:
            inner = item.inners[ckey] = EventAcc(t.names[ckey])
        inner.add(int(tm.cpu[child]), int(tm.gpu[child]), int(tm.general_gpu[child]))
        _add_devices(p, child, inner.devices)
    _add_devices(p, row, item.devices)
    shapes = t.host_shapes.get(row)
    if shapes is not None:
        group = item.shapes.get(shapes)
        if group is None:
            group = item.shapes[shapes] = EventAcc(item.name)
        group.add(int(tm.cpu[row]), int(tm.gpu[row]), int(tm.general_gpu[row]))


def _write(items: Dict[int, EventAcc], out) -> None:
    for item in items.values():
        node = out.add()
        item.to_pb(node.stats)
        for inner in item.inners.values():
            n = node.inners.add()
            inner.to_pb(n.stats)
            for dev in inner.devices.values():
                dev.to_pb(n.devices.add())
        for dev in item.devices.values():
            dev.to_pb(node.devices.add())
        for (shapes, dtypes), group in item.shapes.items():
            g = node.shapes.add(input_shapes=shapes, input_dtypes=dtypes)
            group.to_pb(g.stats)


def operator_view(p: Profile, out: pb.OperatorView) -> None:
    merged: Dict[int, EventAcc] = {}
    t = p.tables
    for tid in p.tree.threads:
        per_thread: Dict[int, EventAcc] = {}
        for row in p.tree.walk[tid].tolist():
            if t.host_type[row] == et.OPERATOR:
                _add_operator(p, merged, row)
                _add_operator(p, per_thread, row)
        if per_thread:
            th = out.threads.add(thread_id=int(tid))
            _write(per_thread, th.operators)
    _write(merged, out.operators)
