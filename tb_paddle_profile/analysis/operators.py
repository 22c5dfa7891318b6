"""Paddle's Operator Summary: every Operator node by name, with its inner events and kernels.

For each operator call (profiler_statistic.EventSummary.OperatorItem): its direct
children that are not operators become inner items by name (infer_meta, kernel
launch, node_creation, user events...), and the device events of its own runtime
calls become device items by name; each inner item likewise carries the device
events of its own runtime calls. Nested operators also count as their own item.
Items keep the order in which Paddle's walk meets them; sorting is the renderer's.
Computed as group-bys over the tables (groupby.py), keyed by thread; the view over
all threads merges the threads' groups.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import summary_pb2 as pb
from .groupby import Groups, group, host_values, merge, write_stats
from .profile import Profile
from .stats import EventAcc


def _devices(msg_list, names, types, g: Groups, rows) -> None:
    for i in rows:
        d = msg_list.add(
            name=names[g.keys[-1][i]], event_type=et.TYPE_NAMES[types[g.first_row[i]]], calls=int(g.counts[i])
        )
        d.gpu.total_ns, d.gpu.max_ns, d.gpu.min_ns = int(g.sums["d"][i]), int(g.maxs["d"][i]), int(g.mins["d"][i])


def operator_view(p: Profile, out: pb.OperatorView) -> None:
    t, tree = p.tables, p.tree
    names = t.names
    rank = p.walk_rank
    is_op = tree.is_operator
    # positions of children among their siblings, runtimes in their host, devices in their runtime
    child_pos, rt_pos, dev_pos = tree.child_pos, tree.rt_pos, tree.dev_pos

    ops = np.nonzero(is_op)[0]
    parent = tree.host_parent
    inner = np.nonzero(~is_op & (parent >= 0))[0]
    inner = inner[is_op[parent[inner]]]
    inner_op = parent[inner]

    dev_rows = np.nonzero(tree.dev_rt >= 0)[0]
    dev_host = tree.rt_host[tree.dev_rt[dev_rows]]
    dev_rows, dev_host = dev_rows[dev_host >= 0], dev_host[dev_host >= 0]
    dur = t.device.end - t.device.start
    # devices of an operator's own runtime calls
    own = is_op[dev_host]
    od_rows, od_op = dev_rows[own], dev_host[own]
    # devices of an inner event's own runtime calls
    in_inner = ~is_op[dev_host] & (parent[dev_host] >= 0)
    in_inner[in_inner] = is_op[parent[dev_host[in_inner]]]
    id_rows, id_inner = dev_rows[in_inner], dev_host[in_inner]
    id_op = parent[id_inner]

    # Grouped by thread first; the view over all threads merges the threads' groups.
    tid = t.host.tid
    by_thread = (
        group([tid[ops], t.host.name[ops]], [rank[ops]], host_values(p, ops)),
        group(
            [tid[inner_op], t.host.name[inner_op], t.host.name[inner]],
            [rank[inner_op], child_pos[inner]],
            host_values(p, inner),
        ),
        group(
            [tid[od_op], t.host.name[od_op], t.device.name[od_rows]],
            [rank[od_op], rt_pos[tree.dev_rt[od_rows]], dev_pos[od_rows]],
            {"d": dur[od_rows]},
        ),
        group(
            [tid[id_op], t.host.name[id_op], t.host.name[id_inner], t.device.name[id_rows]],
            [rank[id_op], child_pos[id_inner], rt_pos[tree.dev_rt[id_rows]], dev_pos[id_rows]],
            {"d": dur[id_rows]},
        ),
    )
    for thread_key in (False, True):
        g_op, g_in, g_od, g_id = by_thread if thread_key else (merge(g, 0) for g in by_thread)

        inners_of = defaultdict(list)
        for i in range(len(g_in)):
            inners_of[(int(g_in.keys[0][i]), int(g_in.keys[1][i]))].append(i)
        op_devs = defaultdict(list)
        for i in range(len(g_od)):
            op_devs[(int(g_od.keys[0][i]), int(g_od.keys[1][i]))].append(i)
        inner_devs = defaultdict(list)
        for i in range(len(g_id)):
            inner_devs[(int(g_id.keys[0][i]), int(g_id.keys[1][i]), int(g_id.keys[2][i]))].append(i)

        lists: Dict[int, Any] = {}  # thread → its operators (a repeated field)
        for i in range(len(g_op)):
            op_tid, name = int(g_op.keys[0][i]), int(g_op.keys[1][i])
            if thread_key:
                target = lists.get(op_tid)
                if target is None:
                    target = lists[op_tid] = out.threads.add(thread_id=op_tid).operators
            else:
                target = out.operators
            node = target.add()
            write_stats(node.stats, names[name], g_op, i)
            for j in inners_of.get((op_tid, name), ()):
                inner_node = node.inners.add()
                inner_name = int(g_in.keys[2][j])
                write_stats(inner_node.stats, names[inner_name], g_in, j)
                _devices(inner_node.devices, names, t.device.type, g_id, inner_devs.get((op_tid, name, inner_name), ()))
            _devices(node.devices, names, t.device.type, g_od, op_devs.get((op_tid, name), ()))
    _shape_groups(p, out)


def _shape_groups(p: Profile, out: pb.OperatorView) -> None:
    """Per operator name, calls grouped by input shapes (only where the trace recorded shapes)."""
    t, tm = p.tables, p.times
    if not t.host.shapes:
        return
    groups: dict = {}
    for row in sorted(t.host.shapes, key=lambda r: p.walk_rank[r]):
        if t.host.type[row] != et.OPERATOR:
            continue
        key = (int(t.host.name[row]), t.host.shapes[row])
        acc = groups.get(key)
        if acc is None:
            acc = groups[key] = EventAcc(t.names[key[0]])
        acc.add(int(tm.cpu[row]), int(tm.gpu[row]), int(tm.general_gpu[row]))
    nodes = {node.stats.name: node for node in out.operators}
    for (name_id, (shapes, dtypes)), acc in groups.items():
        node = nodes.get(t.names[name_id])
        if node is not None:
            acc.to_pb(node.shapes.add(input_shapes=shapes, input_dtypes=dtypes).stats)
