"""The Operators view of one rank: Paddle's Operator Summary (operators, their inner events and kernels;
per thread with thread_sep) and the input shapes."""

from __future__ import annotations

import json
from typing import List

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import COUNT, MISSING, TEXT, num, text
from tb_paddle_profile.present.display.summary_common import (
    ALL_THREADS,
    _col,
    _stats_columns,
    _groups,
    _stats,
    _NO_CPU,
    _div,
    _row,
    _section,
    _layout,
    _table,
    has_gpu,
    _sort_items,
)


def _operator_columns(gpu: bool, flops: bool, shapes: bool = False) -> List[dpb.Column]:
    cols = [
        _col("name", "Name", TEXT, width=52, truncate=True, truncate_depth=1),
        _col(
            "kind",
            "Kind",
            TEXT,
            text_hidden=True,
            panel_hidden=True,
            description="operator | inner (an event inside the operator) | device (a kernel, memcpy or memset)"
            + (" | shape (one input-shape group of an operator)" if shapes else ""),
        ),
    ]
    if shapes:
        cols.append(_col("input_shapes", "Input shapes", TEXT, text_hidden=True))
    cols += [
        _col("event_type", "Type", TEXT, text_hidden=True, description="Device rows: Kernel, Memcpy or Memset"),
        _col("calls", "Calls", COUNT, min_width=6),
    ]
    cols += _stats_columns("cpu", "Operator: op / all operators. Inner: inner / its operator.", "CPU time")
    cols += _stats_columns(
        "gpu",
        "All device time (kernels, memcpy, memset). Operator: op / all operators. Below: row / its parent.",
        "Device time (kernels, memcpy, memset)",
        panel_hidden=not gpu,
    )
    cols.append(_col("flops", "FLOPs", COUNT, width=10, panel_hidden=not flops))
    return cols


def _device_rows(parent_id: str, devices, parent_gpu: int, depth: int, extra: int) -> List[dpb.Row]:
    rows = []
    for dev in devices:
        ratio = 0 if parent_gpu == 0 else float(dev.gpu.total_ns) / parent_gpu
        rows.append(
            _row(
                [text(dev.name), text("device")]
                + [text("")] * extra
                + [text(dev.event_type), num(dev.calls)]
                + _NO_CPU
                + _stats(dev.gpu, dev.calls, ratio)
                + [MISSING],
                depth=depth,
                id=f"{parent_id}\x01d:{dev.name}",
                link=f"timeline:{dev.name}",
            )
        )
    return rows


def _operator_rows(nodes, sorted_by: str, op_detail: bool, shapes: bool = False) -> List[dpb.Row]:
    """One table section: operators in Paddle's order, with their inner and device rows (op_detail)."""
    ordered = _sort_items(nodes, sorted_by, stats=lambda n: n.stats)
    total_cpu = sum(n.stats.cpu.total_ns for n in ordered)
    total_gpu = sum(n.stats.general_gpu.total_ns for n in ordered)
    extra = 1 if shapes else 0
    rows: List[dpb.Row] = []
    for node in ordered:
        it = node.stats
        oid = f"op:{it.name}"
        if shapes and node.shapes:
            for i, g in enumerate(node.shapes):
                st = g.stats
                rows.append(
                    _row(
                        [
                            text(it.name),
                            text("shape"),
                            text(shape_text(g.input_shapes, g.input_dtypes)),
                            text(""),
                            num(st.calls),
                        ]
                        + _stats(st.cpu, st.calls, _div(st.cpu.total_ns, total_cpu))
                        + _stats(st.general_gpu, st.calls, _div(st.general_gpu.total_ns, total_gpu))
                        + [num(st.flops)],
                        id=f"{oid}\x01s:{i}",
                        link=f"timeline:{it.name}",
                    )
                )
            continue
        pre = [text("(no input shapes recorded)")] if shapes else []
        rows.append(
            _row(
                [text(it.name), text("operator")]
                + pre
                + [text(""), num(it.calls)]
                + _stats(it.cpu, it.calls, _div(it.cpu.total_ns, total_cpu))
                + _stats(it.general_gpu, it.calls, _div(it.general_gpu.total_ns, total_gpu))
                + [num(it.flops)],
                id=oid,
                link=f"timeline:{it.name}",
            )
        )
        if not op_detail:
            continue
        for inner_node in node.inners:
            inner = inner_node.stats
            iid = f"{oid}\x01i:{inner.name}"
            rows.append(
                _row(
                    [text(inner.name), text("inner")]
                    + [text("")] * extra
                    + [text(""), num(inner.calls)]
                    + _stats(inner.cpu, inner.calls, _div(inner.cpu.total_ns, it.cpu.total_ns))
                    + _stats(inner.general_gpu, inner.calls, _div(inner.general_gpu.total_ns, it.general_gpu.total_ns))
                    + [MISSING],
                    depth=1,
                    id=iid,
                    link=f"timeline:{inner.name}",
                )
            )
            rows += _device_rows(iid, inner_node.devices, inner.general_gpu.total_ns, 2, extra)
        rows += _device_rows(oid, node.devices, it.general_gpu.total_ns, 1, extra)
    return rows


def shape_text(shapes_json: str, dtypes_json: str) -> str:
    """ "x: [[2,8]] \"float32\", y: [[8,4]]" from the canonical JSON of input shapes (and dtypes when given)."""
    try:
        shapes = json.loads(shapes_json or "{}")
        dtypes = json.loads(dtypes_json or "{}")
        parts = []
        for k, v in shapes.items():
            part = f"{k}: {_js(v)}"
            if k in dtypes:
                part += f" {_js(dtypes[k])}"
            parts.append(part)
        return ", ".join(parts) if parts else "(no inputs)"
    except (ValueError, AttributeError, TypeError):
        return shapes_json


def _js(v) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _operators_view(s: pb.Summary, sorted_by: str, op_detail: bool, thread_sep: bool) -> dpb.View:
    view = dpb.View(key="operators", title="Operators")
    ops = s.operators
    if not ops.operators:
        return view
    gpu = has_gpu(s)
    flops = any(n.stats.flops > 0 for n in ops.operators)
    cols = _operator_columns(gpu, flops)
    groups = (
        [(f"Thread: {th.thread_id}", th.operators) for th in ops.threads]
        if thread_sep
        else [(ALL_THREADS, ops.operators)]
    )
    rows: List[dpb.Row] = []
    for title, nodes in groups:
        rows.append(_section(title, len(cols)))
        rows += _operator_rows(nodes, sorted_by, op_detail)
    view.tables.append(
        _table(
            "operators",
            "Operator Summary",
            cols,
            rows,
            groups=_groups("cpu", "gpu"),
            paddle_view="OperatorView",
            tree=True,
            layout=_layout(),
            empty="No operator events in this trace",
        )
    )
    several = len(ops.threads) > 1
    if several:
        for th in ops.threads:
            view.tables.append(
                _table(
                    f"operators.thread.{th.thread_id}",
                    f"Operator Summary - Thread {th.thread_id}",
                    cols,
                    _operator_rows(th.operators, sorted_by, op_detail),
                    groups=_groups("cpu", "gpu"),
                    tree=True,
                    text_hidden=True,
                )
            )
    if any(n.shapes for n in ops.operators):
        scols = _operator_columns(gpu, flops, shapes=True)
        view.tables.append(
            _table(
                "operators_by_shape",
                "Operators by input shape",
                scols,
                _operator_rows(ops.operators, sorted_by, op_detail, shapes=True),
                groups=_groups("cpu", "gpu"),
                tree=True,
                text_hidden=True,
            )
        )
        if several:
            for th in ops.threads:
                view.tables.append(
                    _table(
                        f"operators_by_shape.thread.{th.thread_id}",
                        f"Operators by input shape - Thread {th.thread_id}",
                        scols,
                        _operator_rows(th.operators, sorted_by, op_detail, shapes=True),
                        groups=_groups("cpu", "gpu"),
                        tree=True,
                        text_hidden=True,
                    )
                )
    return view
