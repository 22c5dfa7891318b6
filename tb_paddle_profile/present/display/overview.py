"""The Overview view of one rank: the Device, Overview, Model (with its steps) and Distribution tables,
with Paddle's notes."""

from __future__ import annotations

from typing import Optional

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import COUNT, DURATION, MISSING, RATIO, TEXT, num, sentence, text
from tb_paddle_profile.present.display.summary_common import (
    STAGES,
    _col,
    _stats_columns,
    _groups,
    _stats,
    _others,
    _div,
    _row,
    _layout,
    _table,
    has_gpu,
    _count_span,
)


DEVICE_NOTE = (
    "Note:\nCPU(Process) Utilization = Current process CPU time over all cpu cores / elapsed time, so max "
    "utilization can be reached 100% * number of cpu cores.\n"
    "CPU(System) Utilization = All processes CPU time over all cpu cores(busy time) / (busy time + idle time).\n"
    "GPU Utilization = Current process GPU time / elapsed time."
)
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
    "  Result:   |______________|  |__________|\n"
)
MODEL_NOTE = (
    "Note:\nIn this table, GPU time is the sum of all device(GPU) events called in the phase.\n"
    "Unlike overview summary, if two device(GPU) events execute on different streams with overlap time, "
    "we sum them directly here.\n"
)
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
    "Overlap time:       |___________|\n"
)


def _device_table(s: pb.Summary, total: int) -> dpb.Table:
    cols = [
        _col("device", "Device", TEXT, width=30),
        _col(
            "utilization",
            "Utilization (%)",
            RATIO,
            digits=2,
            width=20,
            description="CPU(Process): the process's CPU time over all cores (can exceed 100%); CPU(System): "
            "busy / (busy + idle); GPU: merged kernel time / total step time",
        ),
    ]
    rows = [
        _row([text("CPU(Process)"), num(s.device.cpu_process_utilization)], id="CPU(Process)"),
        _row([text("CPU(System)"), num(s.device.cpu_system_utilization)], id="CPU(System)"),
    ]
    for gpu in s.device.gpus:
        # Paddle divides even when total_time is 0; keep its ZeroDivisionError out.
        util = float(gpu.kernel_time_ns) / total if total else 0.0
        rows.append(_row([text(f"GPU{gpu.device_id}"), num(util)], id=f"GPU{gpu.device_id}"))
    return _table(
        "device",
        "Device Summary",
        cols,
        rows,
        paddle_view="DeviceView",
        layout=_layout(unit_line=False, closing_rule=True),
        note=DEVICE_NOTE,
    )


def _overview_table(s: pb.Summary, total: int) -> dpb.Table:
    cols = [
        _col("side", "Side", TEXT, text_hidden=True, panel_hidden=True, description="CPU or GPU events"),
        _col("event_type", "Event Type", TEXT, width=25),
        _col("calls", "Calls", COUNT, width=25),
        _col(
            "time_ns",
            "CPU Time",
            DURATION,
            width=25,
            description="Merged time of the events of this type (overlaps counted once)",
        ),
        _col("ratio", "Ratio (%)", RATIO, digits=2, width=25, description="time / total step time"),
    ]
    rows = []
    for i, r in enumerate(s.overview.cpu):
        rows.append(
            _row(
                [text("CPU"), text(r.event_type), num(r.calls), num(r.time_ns), num(float(r.time_ns) / total)],
                depth=0 if i == 0 else 1,
                id=f"cpu:{r.event_type}",
            )
        )
    rows.append(
        _row([text("GPU"), text(""), text("Calls"), text("GPU Time"), text("Ratio (%)")], role=dpb.ROW_HEADER, id="gpu")
    )
    for r in s.overview.gpu:
        rows.append(
            _row(
                [text("GPU"), text(r.event_type), num(r.calls), num(r.time_ns), num(float(r.time_ns) / total)],
                depth=1,
                id=f"gpu:{r.event_type}",
            )
        )
    return _table(
        "overview",
        "Overview Summary",
        cols,
        rows,
        paddle_view="OverView",
        layout=_layout(closing_rule=True),
        note=OVERVIEW_NOTE,
    )


def _model_table(s: pb.Summary, total: int) -> Optional[dpb.Table]:
    items = {it.name: it for it in s.model.items}
    if len(items) <= 1:
        return None
    step = items.get("ProfileStep")
    gpu_total = step.gpu.total_ns if step is not None else 0
    cols = (
        [_col("name", "Name", TEXT, width=15), _col("calls", "Calls", COUNT, min_width=6)]
        + _stats_columns("cpu", "CPU time / total step time", "CPU time")
        + _stats_columns(
            "gpu",
            "Kernel time / ProfileStep's kernel time",
            "Kernel time (Paddle's gpu time)",
            panel_hidden=not has_gpu(s),
        )
    )  # a CPU-only run: no empty GPU columns in the panel
    rows = []
    acc_cpu = acc_gpu = 0
    for name in ("ProfileStep",) + STAGES:
        it = items.get(name)
        if it is None:
            continue
        rows.append(
            _row(
                [text(name), num(it.calls)]
                + _stats(it.cpu, it.calls, float(it.cpu.total_ns) / total)
                + _stats(it.gpu, it.calls, _div(it.gpu.total_ns, gpu_total)),
                depth=0 if name == "ProfileStep" else 1,
                id=f"model:{name}",
            )
        )
        if name != "ProfileStep":
            acc_cpu += it.cpu.total_ns
            acc_gpu += it.gpu.total_ns
    other, other_gpu = total - acc_cpu, gpu_total - acc_gpu
    rows.append(
        _row(
            [text("Others"), MISSING]
            + _others(other, float(other) / total)
            + _others(other_gpu, _div(other_gpu, gpu_total)),
            depth=1,
            role=dpb.ROW_TOTAL,
            id="model:Others",
        )
    )
    return _table(
        "model",
        "Model Summary",
        cols,
        rows,
        groups=_groups("cpu", "gpu"),
        paddle_view="ModelView",
        layout=_layout(closing_rule=True),
        note=MODEL_NOTE,
    )


def _model_steps_table(s: pb.Summary) -> dpb.Table:
    cols = [_col("step", "Step", COUNT, text_hidden=True)]
    for side, what in (("cpu", "step duration"), ("gpu", "kernel time of the step")):
        hidden = side == "gpu" and not has_gpu(s)  # a CPU-only run: no empty GPU columns in the panel
        cols.append(_col(f"{side}_ns", side.upper(), DURATION, text_hidden=True, description=what, panel_hidden=hidden))
        cols.extend(
            _col(f"{st.lower()}_{side}_ns", st, DURATION, group=side, text_hidden=True, panel_hidden=hidden)
            for st in STAGES + ("Others",)
        )
    rows = []
    for st in s.model.steps:
        cells = [num(st.step)]
        for side in ("cpu", "gpu"):
            vals = [getattr(st, f"{name.lower()}_{side}_ns") for name in STAGES]
            duration = st.range.end_ns - st.range.start_ns if side == "cpu" else st.gpu_ns
            cells += [num(duration)] + [num(v) for v in vals] + [num(duration - sum(vals))]
        rows.append(_row(cells, id=f"step:{st.step}"))
    return _table(
        "model_steps",
        "Model stages per step",
        cols,
        rows,
        text_hidden=True,
        groups=[
            dpb.ColumnGroup(key="cpu", header="CPU stages", panel_header="CPU"),
            dpb.ColumnGroup(key="gpu", header="GPU stages", panel_header="GPU"),
        ],
    )


def _distributed_table(s: pb.Summary, total: int) -> dpb.Table:
    d = s.distributed
    cols = [
        _col("name", "Name", TEXT, width=25),
        _col("time_ns", "Total Time", DURATION, width=25),
        _col("ratio", "Ratio (%)", RATIO, digits=2, width=25, description="time / total step time"),
    ]
    rows = [
        _row([text(name.strip()), num(value), num(float(value) / total)], depth=0 if i == 0 else 1, id=name.strip())
        for i, (name, value) in enumerate(
            (
                ("ProfileStep", total),
                ("Communication", d.communication_ns),
                ("Computation", d.computation_ns),
                ("Overlap", d.overlap_ns),
            )
        )
    ]
    t = _table(
        "distributed",
        "Distribution Summary",
        cols,
        rows,
        paddle_view="DistributedView",
        layout=_layout(closing_rule=True),
        note=DISTRIBUTED_NOTE,
    )
    t.notes.append(
        sentence(
            ["Communication calls: ", _count_span(d.cpu_calls), " on CPU, ", _count_span(d.gpu_calls), " on GPU."],
            key="distributed.calls",
            level="note",
        )
    )
    return t
