"""The display model of one rank: ``summary_display(summary, ...)`` → Display.

Every table the CLI's ``summary`` prints (Paddle 3.3.1's ``Profiler.summary()`` tables) and every table the
per-rank panels show is built here, once: rows, ratios, sort orders, "Others" rows, headers, notes. The
text layout (render/text.py) and the panels only format the cells (display/cells.py, its twin
frontend/src/display/cells.ts) and lay them out. Table and column keys: docs/display.md.

Paddle's definitions, as its ``profiler_statistic`` applies them (the arithmetic in the same order on the
same integers, so that every printed digit is Paddle's):

* CPU ratios of the Overview, Model, Memory Manipulation and UserDefined tables are against the total step
  time; their GPU ratios against ProfileStep's GPU time (Model: kernel-only ``gpu``; the others: all
  device time, ``general_gpu``);
* operators: against the sum over the operators of the table (or thread); inner events against their
  operator; device events against their parent's general GPU time;
* kernels: against the sum over all kernels; launch configurations against their kernel;
* Avg = total / calls; Min has no value without calls; the "Others" rows have no Avg / Max / Min.
"""
from __future__ import annotations

import json
import re
from typing import Iterable, List, Optional, Sequence

from tb_paddle_profile.analysis.memory import THREAD_ROOT
from tb_paddle_profile.analysis.recommendations import LOW_OCCUPANCY, recommendations
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.comm import comm_tables
from tb_paddle_profile.present.display.flops import flops_tables
from tb_paddle_profile.present.display.cells import (
    BYTES,
    COUNT,
    DURATION,
    MISSING,
    NUMBER,
    PERCENT,
    RATIO,
    TEXT,
    fmt,
    num,
    sentence,
    text,
    val,
)

SORTED_KEYS = ("CPUTotal", "CPUAvg", "CPUMax", "CPUMin", "GPUTotal", "GPUAvg", "GPUMax", "GPUMin")
# Paddle's SummaryView names, in the order Paddle prints them; Table.paddle_view holds one of them.
VIEWS = ("DeviceView", "OverView", "ModelView", "DistributedView", "KernelView", "OperatorView",
         "MemoryView", "MemoryManipulationView", "UDFView")
STAGES = ("Dataloader", "Forward", "Backward", "Optimization")
CPU_STATS = "CPU Total / Avg / Max / Min / Ratio(%)"
GPU_STATS = "GPU Total / Avg / Max / Min / Ratio(%)"
ALL_THREADS = "Thread: All threads merged"
_KERNEL_NAME = re.compile(r"(.+?)(<.*>)(\(.*\))")
_INF = float("inf")

DEVICE_NOTE = (
    "Note:\nCPU(Process) Utilization = Current process CPU time over all cpu cores / elapsed time, so max "
    "utilization can be reached 100% * number of cpu cores.\n"
    "CPU(System) Utilization = All processes CPU time over all cpu cores(busy time) / (busy time + idle time).\n"
    "GPU Utilization = Current process GPU time / elapsed time.")
OVERVIEW_NOTE = (
    "Note:\nIn this table, We sum up all collected events in terms of event type.\n"
    "The time of events collected on host are presented as CPU Time, and as GPU Time if on device.\n"
    "Events with different types may overlap or inclusion, e.g. Operator includes OperatorInner, "
    "so the sum of ratios is not 100%.\n"
    "The time of events in the same type with overlap will not calculate twice, and all time is summed "
    "after merged.\n"
    "Example:\n"
    "Thread 1:\n"
    "  Operator: |___________|     |__________|\n"
    "Thread 2:\n"
    "  Operator:   |____________|     |___|\n"
    "After merged:\n"
    "  Result:   |______________|  |__________|\n")
MODEL_NOTE = (
    "Note:\nIn this table, GPU time is the sum of all device(GPU) events called in the phase.\n"
    "Unlike overview summary, if two device(GPU) events execute on different streams with overlap time, "
    "we sum them directly here.\n")
DISTRIBUTED_NOTE = (
    "Note:\nCommunication time: Communication Event time, Communication Op time and its kernel time on gpu.\n"
    "Computation time: Kernel time, except kernels belong to communication(nccl kernels).\n"
    "Overlap time: Communication time intersects with computation time.\n"
    "Example:\n"
    "Communication:\n"
    "  CPU:              |_________________|\n"
    "  GPU:                                  |______________|\n"
    "  Total:            |_________________| |______________|\n"
    "Computation time(Kernel):\n"
    "  GPU:         |________________|\n"
    "Overlap time:       |___________|\n")
NO_STEPS = ("This trace has no ProfileStep events, so (like Paddle) only the device summary is shown: the other "
            "views divide by the total step time.")


# ------------------------------------------------------------------ building blocks


def _col(key: str, header: str, kind: int, *, digits: int = 0, style: str = "", group: str = "",
         description: str = "", text_hidden: bool = False, panel_hidden: bool = False, width: int = 0,
         min_width: int = 0, truncate: bool = False, truncate_depth: int = 0) -> dpb.Column:
    return dpb.Column(key=key, header=header, format=fmt(kind, digits=digits, style=style), group=group,
                      description=description, text_hidden=text_hidden, panel_hidden=panel_hidden,
                      text_width=width, text_min_width=min_width, text_truncate=truncate,
                      text_truncate_depth=truncate_depth)


def _stats_columns(side: str, ratio_description: str, what: str, panel_hidden: bool = False) -> List[dpb.Column]:
    parts = (("total_ns", "Total", DURATION, f"{what}: total"), ("avg_ns", "Avg", DURATION, f"{what}: total / calls"),
             ("max_ns", "Max", DURATION, f"{what}: longest call"), ("min_ns", "Min", DURATION, f"{what}: shortest call"),
             ("ratio", "Ratio(%)", RATIO, ratio_description))
    return [_col(f"{side}_{key}", header, kind, digits=2 if kind == RATIO else 0, group=side, description=desc,
                 panel_hidden=panel_hidden) for key, header, kind, desc in parts]


def _groups(*sides: str) -> List[dpb.ColumnGroup]:
    headers = {"cpu": CPU_STATS, "gpu": GPU_STATS}
    return [dpb.ColumnGroup(key=s, header=headers[s], text_min_width=40, panel_header=s.upper()) for s in sides]


def _stats(ts: pb.TimeStats, calls: int, ratio) -> List[dpb.Cell]:
    """Total / Avg / Max / Min / Ratio of one TimeStats, with Paddle's avg and min semantics."""
    return [num(ts.total_ns), num(ts.total_ns / calls) if calls else MISSING, num(ts.max_ns),
            num(ts.min_ns) if calls else MISSING, num(ratio)]


def _others(total_ns, ratio) -> List[dpb.Cell]:
    return [num(total_ns), MISSING, MISSING, MISSING, num(ratio)]


_NO_CPU = [MISSING] * 5


def _div(a, b) -> float:
    return 0 if b == 0 else float(a) / b


def _row(cells: Sequence[dpb.Cell], depth: int = 0, role: int = dpb.ROW_DATA, id: str = "", link: str = "",
         text_hidden: bool = False) -> dpb.Row:
    return dpb.Row(cells=list(cells), depth=depth, role=role, id=id, link=link, text_hidden=text_hidden)


def _section(title: str, ncols: int) -> dpb.Row:
    return dpb.Row(cells=[text(title)] + [text("")] * (ncols - 1), role=dpb.ROW_SECTION, id=f"section:{title}")


def _layout(*, unit_line: bool = True, closing_separator: bool = True, closing_rule: bool = False,
            head_lines: Iterable[str] = ()) -> dpb.TextLayout:
    return dpb.TextLayout(style="paddle", time_unit_line=unit_line, closing_separator=closing_separator,
                          closing_rule=closing_rule, blank_lines_after=2, head_lines=list(head_lines))


def _table(key: str, title: str, columns, rows, *, groups=(), paddle_view: str = "", text_hidden: bool = False,
           tree: bool = False, layout: Optional[dpb.TextLayout] = None, note: str = "", empty: str = "") -> dpb.Table:
    t = dpb.Table(key=key, title=title, columns=list(columns), groups=list(groups), rows=list(rows), note=note,
                  tree=tree, empty=empty, paddle_view=paddle_view, text_hidden=text_hidden)
    if layout is not None:
        t.text.CopyFrom(layout)
    return t


def display_kernel_name(name: str, width: int = 90) -> str:
    """Paddle's kernel display name: template arguments kept, the argument list dropped, cut at width."""
    m = _KERNEL_NAME.match(name)
    if m:
        name = m.group(1) + m.group(2)
    return name[: width - 3] + "..." if len(name) > width else name


def _kernel_cell(name: str) -> dpb.Cell:
    """Text: Paddle's display form (uncut; the text layout cuts at its width); title: the full name."""
    return text(display_kernel_name(name, width=1 << 30), title=name)


def has_gpu(s: pb.Summary) -> bool:
    return len(s.overview.gpu) > 0 or len(s.kernels.kernels) > 0


def _sort_items(items: Iterable, sorted_by: str, stats=lambda x: x) -> list:
    """Paddle's operator/UDF sort: CPU keys on cpu time, GPU keys on general GPU time (stable)."""
    field = "cpu" if sorted_by.startswith("CPU") else "general_gpu"
    kind = sorted_by[3:]

    def key(item):
        it = stats(item)
        ts = getattr(it, field)
        if kind == "Total":
            return ts.total_ns
        if kind == "Avg":
            return ts.total_ns / it.calls
        if kind == "Max":
            return ts.max_ns
        return ts.min_ns if it.calls else _INF

    return sorted(items, key=key, reverse=(kind != "Min"))


def _sort_kernels(kernels: Iterable[pb.KernelStats], sorted_by: str) -> list:
    """Paddle's Kernel Summary order: GPUAvg / GPUMax / GPUMin as named, anything else by GPU total."""
    kernels = list(kernels)
    if sorted_by == "GPUAvg":
        kernels.sort(key=lambda k: k.gpu.total_ns / k.calls, reverse=True)
    elif sorted_by == "GPUMax":
        kernels.sort(key=lambda k: k.gpu.max_ns, reverse=True)
    elif sorted_by == "GPUMin":
        kernels.sort(key=lambda k: k.gpu.min_ns)
    else:
        kernels.sort(key=lambda k: k.gpu.total_ns, reverse=True)
    return kernels


def _step_item(s: pb.Summary) -> Optional[pb.EventStats]:
    for it in s.model.items:
        if it.name == "ProfileStep":
            return it
    return None


# ------------------------------------------------------------------ overview


def _device_table(s: pb.Summary, total: int) -> dpb.Table:
    cols = [_col("device", "Device", TEXT, width=30),
            _col("utilization", "Utilization (%)", RATIO, digits=2, width=20,
                 description="CPU(Process): the process's CPU time over all cores (can exceed 100%); CPU(System): "
                             "busy / (busy + idle); GPU: merged kernel time / total step time")]
    rows = [_row([text("CPU(Process)"), num(s.device.cpu_process_utilization)], id="CPU(Process)"),
            _row([text("CPU(System)"), num(s.device.cpu_system_utilization)], id="CPU(System)")]
    for gpu in s.device.gpus:
        # Paddle divides even when total_time is 0; keep its ZeroDivisionError out.
        util = float(gpu.kernel_time_ns) / total if total else 0.0
        rows.append(_row([text(f"GPU{gpu.device_id}"), num(util)], id=f"GPU{gpu.device_id}"))
    return _table("device", "Device Summary", cols, rows, paddle_view="DeviceView",
                  layout=_layout(unit_line=False, closing_rule=True), note=DEVICE_NOTE)


def _overview_table(s: pb.Summary, total: int) -> dpb.Table:
    cols = [_col("side", "Side", TEXT, text_hidden=True, panel_hidden=True, description="CPU or GPU events"),
            _col("event_type", "Event Type", TEXT, width=25),
            _col("calls", "Calls", COUNT, width=25),
            _col("time_ns", "CPU Time", DURATION, width=25,
                 description="Merged time of the events of this type (overlaps counted once)"),
            _col("ratio", "Ratio (%)", RATIO, digits=2, width=25, description="time / total step time")]
    rows = []
    for i, r in enumerate(s.overview.cpu):
        rows.append(_row([text("CPU"), text(r.event_type), num(r.calls), num(r.time_ns),
                          num(float(r.time_ns) / total)], depth=0 if i == 0 else 1, id=f"cpu:{r.event_type}"))
    rows.append(_row([text("GPU"), text(""), text("Calls"), text("GPU Time"), text("Ratio (%)")],
                     role=dpb.ROW_HEADER, id="gpu"))
    for r in s.overview.gpu:
        rows.append(_row([text("GPU"), text(r.event_type), num(r.calls), num(r.time_ns),
                          num(float(r.time_ns) / total)], depth=1, id=f"gpu:{r.event_type}"))
    return _table("overview", "Overview Summary", cols, rows, paddle_view="OverView",
                  layout=_layout(closing_rule=True), note=OVERVIEW_NOTE)


def _model_table(s: pb.Summary, total: int) -> Optional[dpb.Table]:
    items = {it.name: it for it in s.model.items}
    if len(items) <= 1:
        return None
    step = items.get("ProfileStep")
    gpu_total = step.gpu.total_ns if step is not None else 0
    cols = ([_col("name", "Name", TEXT, width=15), _col("calls", "Calls", COUNT, min_width=6)]
            + _stats_columns("cpu", "CPU time / total step time", "CPU time")
            + _stats_columns("gpu", "Kernel time / ProfileStep's kernel time", "Kernel time (Paddle's gpu time)",
                             panel_hidden=not has_gpu(s)))  # a CPU-only run: no empty GPU columns in the panel
    rows = []
    acc_cpu = acc_gpu = 0
    for name in ("ProfileStep",) + STAGES:
        it = items.get(name)
        if it is None:
            continue
        rows.append(_row([text(name), num(it.calls)] + _stats(it.cpu, it.calls, float(it.cpu.total_ns) / total)
                         + _stats(it.gpu, it.calls, _div(it.gpu.total_ns, gpu_total)),
                         depth=0 if name == "ProfileStep" else 1, id=f"model:{name}"))
        if name != "ProfileStep":
            acc_cpu += it.cpu.total_ns
            acc_gpu += it.gpu.total_ns
    other, other_gpu = total - acc_cpu, gpu_total - acc_gpu
    rows.append(_row([text("Others"), MISSING] + _others(other, float(other) / total)
                     + _others(other_gpu, _div(other_gpu, gpu_total)), depth=1, role=dpb.ROW_TOTAL, id="model:Others"))
    return _table("model", "Model Summary", cols, rows, groups=_groups("cpu", "gpu"), paddle_view="ModelView",
                  layout=_layout(closing_rule=True), note=MODEL_NOTE)


def _model_steps_table(s: pb.Summary) -> dpb.Table:
    cols = [_col("step", "Step", COUNT, text_hidden=True)]
    for side, what in (("cpu", "step duration"), ("gpu", "kernel time of the step")):
        hidden = side == "gpu" and not has_gpu(s)  # a CPU-only run: no empty GPU columns in the panel
        cols.append(_col(f"{side}_ns", side.upper(), DURATION, text_hidden=True, description=what,
                         panel_hidden=hidden))
        cols.extend(_col(f"{st.lower()}_{side}_ns", st, DURATION, group=side, text_hidden=True, panel_hidden=hidden)
                    for st in STAGES + ("Others",))
    rows = []
    for st in s.model.steps:
        cells = [num(st.step)]
        for side in ("cpu", "gpu"):
            vals = [getattr(st, f"{name.lower()}_{side}_ns") for name in STAGES]
            duration = st.range.end_ns - st.range.start_ns if side == "cpu" else st.gpu_ns
            cells += [num(duration)] + [num(v) for v in vals] + [num(duration - sum(vals))]
        rows.append(_row(cells, id=f"step:{st.step}"))
    return _table("model_steps", "Model stages per step", cols, rows, text_hidden=True,
                  groups=[dpb.ColumnGroup(key="cpu", header="CPU stages", panel_header="CPU"),
                          dpb.ColumnGroup(key="gpu", header="GPU stages", panel_header="GPU")])


def _distributed_table(s: pb.Summary, total: int) -> dpb.Table:
    d = s.distributed
    cols = [_col("name", "Name", TEXT, width=25), _col("time_ns", "Total Time", DURATION, width=25),
            _col("ratio", "Ratio (%)", RATIO, digits=2, width=25, description="time / total step time")]
    rows = [_row([text(name.strip()), num(value), num(float(value) / total)], depth=0 if i == 0 else 1, id=name.strip())
            for i, (name, value) in enumerate((("ProfileStep", total), ("Communication", d.communication_ns),
                                               ("Computation", d.computation_ns), ("Overlap", d.overlap_ns)))]
    t = _table("distributed", "Distribution Summary", cols, rows, paddle_view="DistributedView",
               layout=_layout(closing_rule=True), note=DISTRIBUTED_NOTE)
    t.notes.append(sentence(["Communication calls: ", _count_span(d.cpu_calls), " on CPU, ", _count_span(d.gpu_calls),
                             " on GPU."], key="distributed.calls", level="note"))
    return t


def _count_span(n) -> dpb.Span:
    return dpb.Span(is_value=True, format=fmt(COUNT), value=num(n))


# ------------------------------------------------------------------ operators


def _operator_columns(gpu: bool, flops: bool, shapes: bool = False) -> List[dpb.Column]:
    cols = [_col("name", "Name", TEXT, width=52, truncate=True, truncate_depth=1),
            _col("kind", "Kind", TEXT, text_hidden=True, panel_hidden=True,
                 description="operator | inner (an event inside the operator) | device (a kernel, memcpy or memset)"
                             + (" | shape (one input-shape group of an operator)" if shapes else ""))]
    if shapes:
        cols.append(_col("input_shapes", "Input shapes", TEXT, text_hidden=True))
    cols += [_col("event_type", "Type", TEXT, text_hidden=True, description="Device rows: Kernel, Memcpy or Memset"),
             _col("calls", "Calls", COUNT, min_width=6)]
    cols += _stats_columns("cpu", "Operator: op / all operators. Inner: inner / its operator.", "CPU time")
    cols += _stats_columns("gpu", "All device time (kernels, memcpy, memset). Operator: op / all operators. "
                                  "Below: row / its parent.", "Device time (kernels, memcpy, memset)",
                           panel_hidden=not gpu)
    cols.append(_col("flops", "FLOPs", COUNT, width=10, panel_hidden=not flops))
    return cols


def _device_rows(parent_id: str, devices, parent_gpu: int, depth: int, extra: int) -> List[dpb.Row]:
    rows = []
    for dev in devices:
        ratio = 0 if parent_gpu == 0 else float(dev.gpu.total_ns) / parent_gpu
        rows.append(_row([text(dev.name), text("device")] + [text("")] * extra
                         + [text(dev.event_type), num(dev.calls)] + _NO_CPU + _stats(dev.gpu, dev.calls, ratio)
                         + [MISSING], depth=depth, id=f"{parent_id}\x01d:{dev.name}", link=f"timeline:{dev.name}"))
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
                rows.append(_row([text(it.name), text("shape"), text(shape_text(g.input_shapes, g.input_dtypes)),
                                  text(""), num(st.calls)]
                                 + _stats(st.cpu, st.calls, _div(st.cpu.total_ns, total_cpu))
                                 + _stats(st.general_gpu, st.calls, _div(st.general_gpu.total_ns, total_gpu))
                                 + [num(st.flops)], id=f"{oid}\x01s:{i}", link=f"timeline:{it.name}"))
            continue
        pre = [text("(no input shapes recorded)")] if shapes else []
        rows.append(_row([text(it.name), text("operator")] + pre + [text(""), num(it.calls)]
                         + _stats(it.cpu, it.calls, _div(it.cpu.total_ns, total_cpu))
                         + _stats(it.general_gpu, it.calls, _div(it.general_gpu.total_ns, total_gpu))
                         + [num(it.flops)], id=oid, link=f"timeline:{it.name}"))
        if not op_detail:
            continue
        for inner_node in node.inners:
            inner = inner_node.stats
            iid = f"{oid}\x01i:{inner.name}"
            rows.append(_row([text(inner.name), text("inner")] + [text("")] * extra + [text(""), num(inner.calls)]
                             + _stats(inner.cpu, inner.calls, _div(inner.cpu.total_ns, it.cpu.total_ns))
                             + _stats(inner.general_gpu, inner.calls,
                                      _div(inner.general_gpu.total_ns, it.general_gpu.total_ns))
                             + [MISSING], depth=1, id=iid, link=f"timeline:{inner.name}"))
            rows += _device_rows(iid, inner_node.devices, inner.general_gpu.total_ns, 2, extra)
        rows += _device_rows(oid, node.devices, it.general_gpu.total_ns, 1, extra)
    return rows


def shape_text(shapes_json: str, dtypes_json: str) -> str:
    """"x: [[2,8]] \"float32\", y: [[8,4]]" from the canonical JSON of input shapes (and dtypes when given)."""
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
    groups = ([(f"Thread: {th.thread_id}", th.operators) for th in ops.threads] if thread_sep
              else [(ALL_THREADS, ops.operators)])
    rows: List[dpb.Row] = []
    for title, nodes in groups:
        rows.append(_section(title, len(cols)))
        rows += _operator_rows(nodes, sorted_by, op_detail)
    view.tables.append(_table("operators", "Operator Summary", cols, rows, groups=_groups("cpu", "gpu"),
                              paddle_view="OperatorView", tree=True, layout=_layout(),
                              empty="No operator events in this trace"))
    several = len(ops.threads) > 1
    if several:
        for th in ops.threads:
            view.tables.append(_table(f"operators.thread.{th.thread_id}", f"Operator Summary - Thread {th.thread_id}",
                                      cols, _operator_rows(th.operators, sorted_by, op_detail),
                                      groups=_groups("cpu", "gpu"), tree=True, text_hidden=True))
    if any(n.shapes for n in ops.operators):
        scols = _operator_columns(gpu, flops, shapes=True)
        view.tables.append(_table("operators_by_shape", "Operators by input shape", scols,
                                  _operator_rows(ops.operators, sorted_by, op_detail, shapes=True),
                                  groups=_groups("cpu", "gpu"), tree=True, text_hidden=True))
        if several:
            for th in ops.threads:
                view.tables.append(_table(f"operators_by_shape.thread.{th.thread_id}",
                                          f"Operators by input shape - Thread {th.thread_id}", scols,
                                          _operator_rows(th.operators, sorted_by, op_detail, shapes=True),
                                          groups=_groups("cpu", "gpu"), tree=True, text_hidden=True))
    return view


# ------------------------------------------------------------------ kernels


def _launch_columns() -> List[dpb.Column]:
    return [_col("grid", "Grid", TEXT, group="launch", text_hidden=True),
            _col("block", "Block", TEXT, group="launch", text_hidden=True),
            _col("registers", "Regs", COUNT, group="launch", text_hidden=True, description="Registers per thread"),
            _col("shared_memory_bytes", "Smem (B)", BYTES, group="launch", text_hidden=True,
                 description="Shared memory per block (static + dynamic), bytes"),
            _col("blocks_per_sm", "Blocks/SM", NUMBER, digits=2, group="launch", text_hidden=True),
            _col("warps_per_sm", "Warps/SM", NUMBER, digits=2, group="launch", text_hidden=True),
            _col("occupancy_pct", "Occ. (%)", NUMBER, digits=2, group="launch", text_hidden=True,
                 description="Theoretical achieved occupancy (%)"),
            _col("launches", "Launch configurations", COUNT, text_hidden=True,
                 description="Distinct launch configurations of the kernel")]


def _launch_cells(cfg: Optional[pb.LaunchConfig]) -> List[dpb.Cell]:
    if cfg is None:
        return [MISSING] * 7
    return [text("[" + ", ".join(str(x) for x in cfg.grid) + "]"), text("[" + ", ".join(str(x) for x in cfg.block) + "]"),
            num(cfg.registers_per_thread), num(cfg.shared_memory), num(cfg.blocks_per_sm), num(cfg.warps_per_sm),
            num(cfg.occupancy_pct)]


def _efficiency_columns() -> List[dpb.Column]:
    """Per kernel (docs/kernel-efficiency.md); the panels' own columns."""
    return [_col("tensor_cores", "Tensor Cores", TEXT, group="efficiency", text_hidden=True,
                 description="Yes when the kernel's name marks a Tensor Core kernel on its GPU's architecture"),
            _col("sm_efficiency", "Est. SM eff.", PERCENT, digits=1, group="efficiency", text_hidden=True,
                 description="min(1, blocks / SM count), weighted by the duration of each call"),
            _col("achieved_occupancy", "Occupancy", PERCENT, digits=1, group="efficiency", text_hidden=True,
                 description="Theoretical achieved occupancy, weighted by the duration of each call")]


def _ratio_or_missing(a: float, b: int) -> dpb.Cell:
    return num(float(a) / b) if b else MISSING


def _efficiency_cells(e: pb.KernelEfficiency) -> List[dpb.Cell]:
    return [text("Yes" if e.tensor_core_ns > 0 else "No"), _ratio_or_missing(e.sm_efficiency_ns, e.sm_known_ns),
            _ratio_or_missing(e.occupancy_ns, e.launch_ns)]


def _kernel_efficiency_table(s: pb.Summary) -> dpb.Table:
    """The Overview's "Kernel efficiency" table: the rank's kernels together (docs/kernel-efficiency.md)."""
    e = s.kernels.efficiency
    cols = [_col("metric", "Metric", TEXT),
            _col("value", "Value", PERCENT, digits=1),
            _col("over_ns", "Over kernel time", DURATION, description="The kernel time the value is taken over"),
            _col("definition", "Definition", TEXT)]
    rows = [_row([text("Tensor Core kernels"), _ratio_or_missing(e.tensor_core_ns, e.total_ns), num(e.total_ns),
                  text("time of Tensor Core kernels / all kernel time")], id="tensor_cores"),
            _row([text("Estimated SM efficiency"), _ratio_or_missing(e.sm_efficiency_ns, e.sm_known_ns),
                  num(e.sm_known_ns), text("min(1, blocks / SM count), weighted by kernel duration")],
                 id="sm_efficiency"),
            _row([text("Achieved occupancy"), _ratio_or_missing(e.occupancy_ns, e.launch_ns), num(e.launch_ns),
                  text("theoretical achieved occupancy, weighted by kernel duration")], id="achieved_occupancy")]
    return _table("kernel_efficiency", "Kernel efficiency", cols, rows, text_hidden=True)


def _recommendation_sentences(s: pb.Summary) -> List[dpb.Sentence]:
    """The Overview's single-rank recommendations (analysis/recommendations.py), one sentence each with its
    numbers and threshold; "recommendation.none" when no rule fires on a rank with steps or kernels."""
    def ns(x):
        return val(x, DURATION, style="unit")

    def pct(x):
        return val(x, PERCENT, digits=1)

    out = []
    for r in recommendations(s):
        n, th = r.numbers, r.rule.threshold
        if r.rule.rule == "dataloader_bound":
            spans = ["Data-loader bound: the data loader takes ", ns(n["dataloader_ns"]), " of the ", ns(n["step_ns"]),
                     " step (", pct(r.value), "; threshold ", pct(th), "). Use more DataLoader workers "
                     "(num_workers), pinned memory and prefetching, or lighter preprocessing."]
        elif r.rule.rule == "launch_bound":
            spans = ["Launch bound: CUDA runtime calls other than synchronisations take ", ns(n["runtime_ns"]),
                     " of the ", ns(n["step_ns"]), " step (", pct(r.value), "; threshold ", pct(th), ") for ",
                     val(n["launches"], NUMBER, digits=0), " launches, while kernels run ", ns(n["kernel_ns"]),
                     ". Fuse operators, use larger batches, or capture the step in a CUDA Graph."]
        elif r.rule.rule == "sync_heavy":
            spans = ["Synchronisation heavy: synchronising CUDA calls take ", ns(n["sync_ns"]), " of the ",
                     ns(n["step_ns"]), " step (", pct(r.value), "; threshold ", pct(th), ", ",
                     val(n["sync_calls"], NUMBER, digits=1), " calls per step). Avoid loss.item(), .numpy() and "
                     "printing tensors every step."]
        elif r.rule.rule == "memcpy_heavy":
            spans = ["Memcpy heavy: memcpy and memset take ", ns(n["memory_ns"]), " of the ", ns(n["step_ns"]),
                     " step (", pct(r.value), "; threshold ", pct(th), "). Keep tensors on the GPU between steps, "
                     "load batches into pinned memory and copy asynchronously."]
        else:  # low_occupancy
            spans = ["Low-occupancy kernels: ", val(n["kernels"], COUNT), " compute kernels of time-weighted "
                     "occupancy below ", pct(LOW_OCCUPANCY), " take ", pct(r.value), " of the kernel time (",
                     ns(n["low_ns"]), "; threshold ", pct(th), "); the longest, ", display_kernel_name(r.names[0]),
                     ", runs at ", pct(n["occupancy"]), ". Fewer registers or less shared memory per block, or "
                     "larger blocks, let more warps reside on each SM."]
        out.append(sentence(spans, key=f"recommendation.{r.rule.rule}", level="warning"))
    if not out and (s.parallel.steps or s.kernels.kernels):
        out.append(sentence(["No single-rank recommendation: no rule reaches its threshold "
                             "(docs/kernel-efficiency.md)."], key="recommendation.none", level="info"))
    return out


def _kernels_view(s: pb.Summary, sorted_by: str) -> dpb.View:
    view = dpb.View(key="kernels", title="Kernels")
    kernels = _sort_kernels(s.kernels.kernels, sorted_by)
    if not kernels:
        return view
    total = sum(k.gpu.total_ns for k in kernels)
    name_col = _col("name", "Name", TEXT, width=90, truncate=True, truncate_depth=0,
                    description="Paddle's display name (template arguments kept, arguments dropped); hover: the full name")
    gpu_cols = _stats_columns("gpu", "Kernel time / all kernels' time (launch rows: / the kernel)", "Kernel time")
    cols = [name_col, _col("calls", "Calls", COUNT, min_width=6)] + gpu_cols + _launch_columns() + _efficiency_columns()
    rows = []
    for k in kernels:
        kid = f"k:{k.name}"
        one = k.configs[0] if len(k.configs) == 1 else None
        rows.append(_row([_kernel_cell(k.name), num(k.calls)] + _stats(k.gpu, k.calls, _div(k.gpu.total_ns, total))
                         + _launch_cells(one) + [num(len(k.configs))] + _efficiency_cells(k.efficiency),
                         id=kid, link=f"timeline:{k.name}"))
        if len(k.configs) > 1:
            for i, cfg in enumerate(k.configs):
                rows.append(_row([text(f"launch {i + 1}"), num(cfg.calls), num(cfg.total_ns),
                                  num(cfg.total_ns / cfg.calls) if cfg.calls else MISSING, MISSING, MISSING,
                                  num(_div(cfg.total_ns, k.gpu.total_ns))] + _launch_cells(cfg) + [MISSING] * 4,
                                 depth=1, id=f"{kid}\x01c:{i}", text_hidden=True))
    view.tables.append(_table("kernels", "Kernel Summary", cols, rows,
                              groups=_groups("gpu") + [dpb.ColumnGroup(key="launch", header="Launch configuration"),
                                                        dpb.ColumnGroup(key="efficiency", header="Efficiency")],
                              paddle_view="KernelView", tree=True, layout=_layout()))
    ocols = [name_col, _col("operator", "Operator", TEXT,
                            description="The operator (or host event) whose runtime call launched the kernel"),
             _col("calls", "Calls", COUNT)] + gpu_cols
    orows = []
    for k in kernels:
        for o in k.operators:
            orows.append(_row([_kernel_cell(k.name), text(o.operator or "(thread root)"), num(o.calls)]
                              + _stats(o.gpu, o.calls, _div(o.gpu.total_ns, total)),
                              id=f"k:{k.name}\x01o:{o.operator}", link=f"timeline:{k.name}"))
    view.tables.append(_table("kernels_by_operator", "Kernels by operator", ocols, orows, groups=_groups("gpu"),
                              text_hidden=True))
    return view


# ------------------------------------------------------------------ memory, manipulation, user defined


def _item_columns(gpu: bool) -> List[dpb.Column]:
    return ([_col("name", "Name", TEXT), _col("calls", "Calls", COUNT, min_width=6)]
            + _stats_columns("cpu", "CPU time / total step time", "CPU time")
            + _stats_columns("gpu", "All device time / ProfileStep's device time",
                             "Device time (kernels, memcpy, memset)", panel_hidden=not gpu))


def _item_rows(items, total: int, gpu_total: int, prefix: str) -> List[dpb.Row]:
    return [_row([text(it.name), num(it.calls)] + _stats(it.cpu, it.calls, float(it.cpu.total_ns) / total)
                 + _stats(it.general_gpu, it.calls, _div(it.general_gpu.total_ns, gpu_total)),
                 id=f"{prefix}:{it.name}", link=f"timeline:{it.name}") for it in items]


def _memory_view(s: pb.Summary, total: int, sorted_by: str, thread_sep: bool) -> dpb.View:
    view = dpb.View(key="memory", title="Memory")
    gpu = has_gpu(s)
    step = _step_item(s)
    gpu_total = step.general_gpu.total_ns if step is not None else 0
    if total and s.memory_manipulation:
        view.tables.append(_table("memory_manipulation", "Memory Manipulation Summary", _item_columns(gpu),
                                  _item_rows(s.memory_manipulation, total, gpu_total, "mm"),
                                  groups=_groups("cpu", "gpu"), paddle_view="MemoryManipulationView",
                                  layout=_layout(), empty="No memory manipulation events"))
    udf = s.user_defined
    if total and udf.items:
        cols = _item_columns(gpu)
        sections = ([(f"Thread: {th.thread_id}", th.items) for th in udf.threads] if thread_sep
                    else [(ALL_THREADS, udf.items)])
        rows: List[dpb.Row] = []
        for title, items in sections:
            rows.append(_section(title, len(cols)))
            rows += _item_rows(_sort_items(items, sorted_by), total, gpu_total, "udf")
        view.tables.append(_table("user_defined", "UserDefined Summary", cols, rows, groups=_groups("cpu", "gpu"),
                                  paddle_view="UDFView", layout=_layout(closing_separator=False),
                                  empty="No user-defined events"))
        if len(udf.threads) > 1:
            for th in udf.threads:
                view.tables.append(_table(f"user_defined.thread.{th.thread_id}",
                                          f"UserDefined Summary - Thread {th.thread_id}", cols,
                                          _item_rows(_sort_items(th.items, sorted_by), total, gpu_total, "udf"),
                                          groups=_groups("cpu", "gpu"), text_hidden=True))
    for pl in s.memory.places:
        view.tables.append(_memory_table(pl))
    _memory_insights(s, view)
    return view


def _memory_table(pl: pb.MemoryPlace) -> dpb.Table:
    widths = (50, 12, 15, 15, 15, 15, 15)
    specs = (("name", "Name", TEXT), ("type", "Type", TEXT), ("allocation_count", "Allocation Count", COUNT),
             ("free_count", "Free Count", COUNT), ("allocation_size", "Allocation Size", BYTES),
             ("free_size", "Free Size", BYTES), ("increased_size", "Increased Size", BYTES))
    cols = [_col(k, h, kind, width=w) for (k, h, kind), w in zip(specs, widths)]
    cols[-1].description = "Allocation size - free size"
    for c in cols:
        if c.format.kind == BYTES:  # Paddle prints the integer; the panels print "1.50 MiB" (docs/display.md)
            c.panel_format.CopyFrom(fmt(BYTES, style="human"))
    rows = []
    for kind, items in (("Allocated", pl.allocated), ("Reserved", pl.reserved)):
        # Paddle's order: each kind by increased size, largest first (stable).
        for it in sorted(items, key=lambda it: it.allocation_size - it.free_size, reverse=True):
            rows.append(_row([text(it.name), text(kind), num(it.allocation_count), num(it.free_count),
                              num(it.allocation_size), num(it.free_size), num(it.allocation_size - it.free_size)],
                             id=f"{kind}:{it.name}"))
    return _table(f"memory.{pl.place}", f"Memory Summary - {pl.place}", cols, rows, paddle_view="MemoryView",
                  text_hidden=not pl.allocated,  # Paddle prints no table for a place without allocations
                  layout=_layout(unit_line=False, closing_separator=False,
                                 head_lines=[f"Peak Allocated Memory: {pl.peak_allocated}",
                                             f"Peak Reserved Memory: {pl.peak_reserved}"]),
                  empty="No allocation events at this place")


# ------------------------------------------------------------------ memory insights (not Paddle's)


def _human(key: str, header: str, description: str = "") -> dpb.Column:
    """A bytes column printed "1.50 MiB" everywhere (these tables are not Paddle's; CSV keeps the integer)."""
    return _col(key, header, BYTES, style="human", description=description)


def _memory_insights(s: pb.Summary, view: dpb.View) -> None:
    """The memory insights of every place (analysis/memory.py; docs/panels.md "Memory insights"): the
    table `memory_insights`, per place `memory_steps.<place>` and `memory_alive.<place>`, and a sentence
    per place with steps (`memory.leak.<place>` or `memory.growth.<place>`). All are the panels' own."""
    places = [pl for pl in s.memory.places if pl.fragmentation.peak_allocated or pl.alive_at_peak.allocated
              or pl.growth.steps or pl.curve.events]
    if not places:
        return
    cols = [_col("place", "Place", TEXT), _col("steps", "Steps", COUNT),
            _human("allocated_slope", "Allocated / step", "Least-squares slope of allocated at each step's end"),
            _human("reserved_slope", "Reserved / step", "Least-squares slope of reserved at each step's end"),
            _human("floor_growth_min", "Min floor growth",
                   "The smallest step-to-step growth of the allocated floor (the lowest allocated in a step)"),
            _col("leak", "Leak?", TEXT, description="Leak suspected: the allocated floor grows in every step by more "
                 "than the threshold, over at least the minimum number of steps"),
            _human("fragmentation_at_peak", "Frag. at peak",
                   "Reserved − allocated at the allocated peak (the trace's highest current allocated)"),
            _human("fragmentation_max", "Max frag.", "The largest reserved − allocated"),
            _col("fragmentation_max_ns", "Max frag. at", DURATION, description="When reserved − allocated was largest")]
    rows, notes = [], []
    for pl in places:
        g, f = pl.growth, pl.fragmentation
        n = len(g.steps)
        leak = "-" if n < g.leak_min_steps else ("Yes" if g.leak_suspected else "No")
        rows.append(_row([text(pl.place), num(n), num(g.allocated_slope) if n > 1 else MISSING,
                          num(g.reserved_slope) if n > 1 else MISSING, num(g.floor_growth_min) if n > 1 else MISSING,
                          text(leak), num(f.at_peak_bytes), num(f.max_bytes),
                          num(f.max_time_ns)], id=pl.place))
        if f.at_peak_bytes < 0 or f.max_bytes < 0:
            notes.append(sentence([f"{pl.place}: reserved is below allocated (by up to ",
                                   val(-min(f.at_peak_bytes, f.max_bytes), BYTES, style="human"),
                                   "): this place's allocator does not count reserved memory as the GPU allocator "
                                   "does, so its reserved − allocated is no fragmentation."],
                                  key=f"memory.reserved_below.{pl.place}", level="note"))
    t = _table("memory_insights", "Memory insights", cols, rows, text_hidden=True, empty="No memory events")
    t.notes.extend(notes)
    view.tables.append(t)
    for pl in places:
        if pl.growth.steps:
            view.tables.append(_memory_steps_table(pl))
        if pl.alive_at_peak.allocated or pl.alive_at_peak.groups:
            view.tables.append(_memory_alive_table(pl))
        sent = _growth_sentence(pl)
        if sent is not None:
            view.sentences.append(sent)


def _growth_sentence(pl: pb.MemoryPlace) -> Optional[dpb.Sentence]:
    g = pl.growth
    n = len(g.steps)
    if n < 2:
        return None

    def b(x):
        return val(x, BYTES, style="human")

    if g.leak_suspected:
        return sentence([f"Leak suspected on {pl.place}: the allocated floor (the lowest allocated in a step) grew "
                         f"in each of the {n} steps by at least ", b(g.floor_growth_min), " (threshold ",
                         b(g.leak_threshold_bytes), "); allocated at the step's end grows by ", b(g.allocated_slope),
                         " per step (least squares). Look for tensors kept across steps (a list of losses, "
                         "a cache that grows, graphs retained for backward)."],
                        key=f"memory.leak.{pl.place}", level="warning")
    if round(g.allocated_slope) == 0:
        change = [f"{pl.place}: allocated at the step's end does not change over {n} steps"]
    else:
        change = [f"{pl.place}: allocated at the step's end changes by ", b(g.allocated_slope),
                  f" per step over {n} steps (least squares)"]
    return sentence(change + ["; no leak suspected (that needs the allocated floor to grow by more than ",
                              b(g.leak_threshold_bytes), f" in every step, over at least {g.leak_min_steps} steps)."],
                    key=f"memory.growth.{pl.place}", level="info")


def _memory_steps_table(pl: pb.MemoryPlace) -> dpb.Table:
    cols = [_col("step", "Step", COUNT), _human("allocated_end", "Allocated at end"),
            _human("reserved_end", "Reserved at end"),
            _human("fragmentation_end", "Reserved − allocated at end"),
            _human("allocated_peak", "Allocated peak"), _human("reserved_peak", "Reserved peak"),
            _human("allocated_floor", "Allocated floor", "The lowest allocated in the step"),
            _human("floor_growth", "Floor growth", "Allocated floor − the previous step's"),
            _col("events", "Events", COUNT, description="Memory events of the place in the step")]
    rows, prev = [], None
    for st in pl.growth.steps:
        rows.append(_row([num(st.step), num(st.allocated_end), num(st.reserved_end),
                          num(st.reserved_end - st.allocated_end), num(st.allocated_peak), num(st.reserved_peak),
                          num(st.allocated_floor), MISSING if prev is None else num(st.allocated_floor - prev),
                          num(st.events)], id=f"step:{st.step}"))
        prev = st.allocated_floor
    return _table(f"memory_steps.{pl.place}", f"Memory per step - {pl.place}", cols, rows, text_hidden=True,
                  empty="No steps")


def _memory_alive_table(pl: pb.MemoryPlace) -> dpb.Table:
    al = pl.alive_at_peak
    cols = [_col("operator", "Operator", TEXT, description="The nearest operator above the allocating event, else "
                 "that event"),
            _col("layer", "Layer", TEXT, description="The outermost Forward/Backward layer event around it"),
            _human("bytes", "Bytes"), _col("count", "Allocations", COUNT),
            _col("share", "Of the peak", PERCENT, digits=1, description="Bytes / allocated at the peak")]

    def share(x):
        return num(_div(x, al.allocated))

    rows = [_row([text(g.operator), text(g.layer), num(g.bytes), num(g.count), share(g.bytes)],
                 id=f"alive:{g.operator}|{g.layer}", link="" if g.operator == THREAD_ROOT else f"timeline:{g.operator}")
            for g in al.groups]
    if al.others_count:
        rows.append(_row([text("Others"), text(""), num(al.others_bytes), num(al.others_count), share(al.others_bytes)],
                         role=dpb.ROW_TOTAL, id="alive:others"))
    if al.before_trace:
        rows.append(_row([text("(allocated before the trace)"), text(""), num(al.before_trace), MISSING,
                          share(al.before_trace)], role=dpb.ROW_TOTAL, id="alive:before_trace"))
    rows.append(_row([text("Allocated at the peak"), text(""), num(al.allocated), MISSING, share(al.allocated)],
                     role=dpb.ROW_TOTAL, id="alive:total"))
    t = _table(f"memory_alive.{pl.place}", f"Alive at the allocated peak - {pl.place}", cols, rows, text_hidden=True,
               empty="No allocation alive at the peak")
    parts = ["At ", val(al.time_ns, DURATION, style="unit"), ", allocated ", val(al.allocated, BYTES, style="human"),
             ": the allocations not yet freed then (matched to their frees by address), by operator and layer; "
             "'(allocated before the trace)' is what was allocated before the first event and not freed by then."]
    if al.unaddressed:
        parts.append(f" {al.unaddressed} memory events without a readable address are left out.")
    t.notes.append(sentence(parts, key="memory.alive.note", level="note"))
    return t


# ------------------------------------------------------------------ the display


def summary_display(summary: pb.Summary, sorted_by: str = "CPUTotal", op_detail: bool = True,
                    thread_sep: bool = False, time_unit: str = "ms") -> dpb.Display:
    """Every table of one rank's views ("overview", "operators", "kernels", "memory"); see docs/display.md."""
    if sorted_by not in SORTED_KEYS:
        raise ValueError(f"sorted_by must be one of {', '.join(SORTED_KEYS)}")
    s = summary
    total = s.meta.total_time_ns
    out = dpb.Display(time_unit=time_unit)
    overview = out.views.add(key="overview", title="Overview")
    overview.tables.append(_device_table(s, total))
    if total == 0:
        overview.sentences.append(sentence([NO_STEPS], key="no_steps", level="info"))
    else:
        overview.tables.append(_overview_table(s, total))
        model = _model_table(s, total)
        if model is not None:
            overview.tables.append(model)
            if s.model.steps:
                overview.tables.append(_model_steps_table(s))
        if s.distributed.present:
            overview.tables.append(_distributed_table(s, total))
    if s.kernels.kernels:
        overview.tables.append(_kernel_efficiency_table(s))
    if total:
        overview.sentences.extend(_recommendation_sentences(s))
    comm, findings = comm_tables(s)
    overview.tables.extend(comm)
    overview.sentences.extend(findings)
    fl, fl_sentences = flops_tables(s)
    overview.tables.extend(fl)
    overview.sentences.extend(fl_sentences)
    out.views.append(_operators_view(s, sorted_by, op_detail, thread_sep))
    out.views.append(_kernels_view(s, sorted_by))
    out.views.append(_memory_view(s, total, sorted_by, thread_sep))
    return out


def find_table(display: dpb.Display, key: str, view: str = "") -> Optional[dpb.Table]:
    """The table of that key (in that view when given), or None."""
    for v in display.views:
        if view and v.key != view:
            continue
        for t in v.tables:
            if t.key == key:
                return t
    return None
