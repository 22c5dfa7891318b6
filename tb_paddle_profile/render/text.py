"""Summary protobuf → the text tables Paddle's ``Profiler.summary()`` prints.

The layout (titles centred in dashes, left-aligned columns padded by two spaces,
widths that grow with the content, the notes under each table) and the numeric
formatting (``%.2f`` of the value divided by the unit, ratios times 100, ``-``
for an infinite minimum) follow Paddle 3.3.1's ``profiler_statistic._build_table``;
the arithmetic is done in the same order on the same integers so that every
printed digit is the same.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence

from ..v1 import summary_pb2 as pb

SORTED_KEYS = ("CPUTotal", "CPUAvg", "CPUMax", "CPUMin", "GPUTotal", "GPUAvg", "GPUMax", "GPUMin")
TIME_UNITS = ("s", "ms", "us", "ns")
VIEWS = ("DeviceView", "OverView", "ModelView", "DistributedView", "KernelView", "OperatorView",
         "MemoryView", "MemoryManipulationView", "UDFView")
_UNIT_DIVISOR = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": None}
_KERNEL_NAME = re.compile(r"(.+?)(<.*>)(\(.*\))")
INF = float("inf")
CPU_STATS = "CPU Total / Avg / Max / Min / Ratio(%)"
GPU_STATS = "GPU Total / Avg / Max / Min / Ratio(%)"


def format_time(ns, unit: str) -> str:
    if ns == INF:
        return "-"
    value = float(ns)
    div = _UNIT_DIVISOR[unit]
    if div is not None:
        value /= div
    return "{:.2f}".format(value)


def format_ratio(ratio) -> str:
    return "{:.2f}".format(ratio * 100)


class _Table:
    """Column layout as Paddle builds it: '{:<w}' plus two spaces per column."""

    def __init__(self, widths: Sequence[int]):
        self.widths = list(widths)
        self.row_format = "".join("{:<" + str(w) + "}  " for w in widths)
        self.sep = "".join("-" * w + "  " for w in widths)
        self.length = sum(w + 2 for w in widths) - 2

    def row(self, values) -> str:
        return self.row_format.format(*values)

    def title(self, text: str) -> str:
        left = self.length - len(text)
        half = left // 2
        return "-" * half + text + "-" * (left - half)

    def head(self, out: "_Out", title: str, unit: Optional[str], headers) -> None:
        """Title, time unit line (when given) and the column headers between separators."""
        out(self.title(title))
        if unit is not None:
            out(f"Time unit: {unit}")
        out(self.sep)
        out(self.row(headers))
        out(self.sep)


class _Stats:
    """Calls and total/max/min of one TimeStats, with Paddle's avg and min semantics."""

    __slots__ = ("total", "max", "min", "calls")

    def __init__(self, ts: pb.TimeStats, calls: int):
        self.total = ts.total_ns
        self.max = ts.max_ns
        self.min = ts.min_ns if calls else INF
        self.calls = calls

    @property
    def avg(self):
        return self.total / self.calls

    def cells(self, unit: str, ratio) -> str:
        return "{} / {} / {} / {} / {}".format(format_time(self.total, unit), format_time(self.avg, unit),
                                               format_time(self.max, unit), format_time(self.min, unit),
                                               format_ratio(ratio))


def _sort_items(items: Iterable, sorted_by: str, stats=lambda x: x) -> list:
    """Paddle's operator/UDF sort: CPU keys on cpu time, GPU keys on general GPU time (stable)."""
    items = list(items)
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
        return ts.min_ns if it.calls else INF

    return sorted(items, key=key, reverse=(kind != "Min"))


def _calls_width(rows) -> int:
    width = 6
    for r in rows:
        if isinstance(r, list) and isinstance(r[1], int) and len(str(r[1])) > width:
            width = len(str(r[1]))
    return width


def _text_width(rows, col: int, minimum: int) -> int:
    width = minimum
    for r in rows:
        if isinstance(r, list) and len(r[col]) > width:
            width = len(r[col])
    return width


class _Out:
    def __init__(self):
        self.parts: List[str] = []

    def __call__(self, s: str) -> None:
        self.parts.append(s)
        self.parts.append("\n")

    def text(self) -> str:
        return "".join(self.parts)


def render(summary: pb.Summary, sorted_by: str = "CPUTotal", time_unit: str = "ms", op_detail: bool = True,
           thread_sep: bool = False, views: Optional[Sequence[str]] = None) -> str:
    """The text of Paddle's summary for these options (what ``print(_build_table(...))`` writes, minus print's newline)."""
    if sorted_by not in SORTED_KEYS:
        raise ValueError(f"sorted_by must be one of {', '.join(SORTED_KEYS)}")
    if time_unit not in TIME_UNITS:
        raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}")
    want = set(views) if views else set(VIEWS)
    out = _Out()
    total = summary.meta.total_time_ns
    if "DeviceView" in want:
        _device(summary, out, total)
        if total == 0:
            return out.text()
    if "OverView" in want:
        _overview(summary, out, total, time_unit)
    if "ModelView" in want:
        _model(summary, out, total, time_unit)
    if "DistributedView" in want:
        _distributed(summary, out, total, time_unit)
    if "OperatorView" in want:
        _operators(summary, out, time_unit, sorted_by, op_detail, thread_sep)
    if "KernelView" in want:
        _kernels(summary, out, time_unit, sorted_by)
    if "MemoryManipulationView" in want:
        _memory_manipulation(summary, out, total, time_unit)
    if "UDFView" in want:
        _user_defined(summary, out, total, time_unit, sorted_by, thread_sep)
    if "MemoryView" in want:
        _memory(summary, out)
    return out.text()


def _device(s: pb.Summary, out: _Out, total: int) -> None:
    t = _Table([30, 20])
    t.head(out, "Device Summary", None, ["Device", "Utilization (%)"])
    out(t.row(["CPU(Process)", format_ratio(s.device.cpu_process_utilization)]))
    out(t.row(["CPU(System)", format_ratio(s.device.cpu_system_utilization)]))
    for gpu in s.device.gpus:
        # Paddle divides even when total_time is 0; keep its ZeroDivisionError out of a CLI.
        util = float(gpu.kernel_time_ns) / total if total else 0.0
        out(t.row([f"GPU{gpu.device_id}", format_ratio(util)]))
    out(t.sep)
    out("Note:\nCPU(Process) Utilization = Current process CPU time over all cpu cores / elapsed time, so max "
        "utilization can be reached 100% * number of cpu cores.\n"
        "CPU(System) Utilization = All processes CPU time over all cpu cores(busy time) / (busy time + idle time).\n"
        "GPU Utilization = Current process GPU time / elapsed time.")
    out("-" * t.length)
    out("")
    out("")


def _overview(s: pb.Summary, out: _Out, total: int, unit: str) -> None:
    t = _Table([25] * 4)
    t.head(out, "Overview Summary", unit, ["Event Type", "Calls", "CPU Time", "Ratio (%)"])
    for i, row in enumerate(s.overview.cpu):
        name = row.event_type if i == 0 else "  " + row.event_type
        out(t.row([name, row.calls, format_time(row.time_ns, unit), format_ratio(float(row.time_ns) / total)]))
    out(t.sep)
    out(t.row(["", "Calls", "GPU Time", "Ratio (%)"]))
    out(t.sep)
    for row in s.overview.gpu:
        out(t.row(["  " + row.event_type, row.calls, format_time(row.time_ns, unit),
                   format_ratio(float(row.time_ns) / total)]))
    out(t.sep)
    out("Note:\nIn this table, We sum up all collected events in terms of event type.\n"
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
    out("-" * t.length)
    out("")
    out("")


def _model(s: pb.Summary, out: _Out, total: int, unit: str) -> None:
    items = {it.name: it for it in s.model.items}
    if len(items) <= 1:
        return
    rows = []
    step = items.get("ProfileStep")
    gpu_total = step.gpu.total_ns if step is not None else 0
    acc_cpu = acc_gpu = 0
    for name in ("ProfileStep", "Dataloader", "Forward", "Backward", "Optimization"):
        it = items.get(name)
        if it is None:
            continue
        gpu_ratio = 0 if gpu_total == 0 else float(it.gpu.total_ns) / gpu_total
        cpu = _Stats(it.cpu, it.calls)
        gpu = _Stats(it.gpu, it.calls)
        rows.append([name if name == "ProfileStep" else "  " + name, it.calls,
                     cpu.cells(unit, float(it.cpu.total_ns) / total), gpu.cells(unit, gpu_ratio)])
        if name != "ProfileStep":
            acc_cpu += it.cpu.total_ns
            acc_gpu += it.gpu.total_ns
    other = total - acc_cpu
    other_gpu = gpu_total - acc_gpu
    gpu_ratio = 0 if gpu_total == 0 else float(other_gpu) / gpu_total
    rows.append(["  Others", "-",
                 f"{format_time(other, unit)} / - / - / - / {format_ratio(float(other) / total)}",
                 f"{format_time(other_gpu, unit)} / - / - / - / {format_ratio(gpu_ratio)}"])
    t = _Table([15, _calls_width(rows), _text_width(rows, 2, 40), _text_width(rows, 3, 40)])
    t.head(out, "Model Summary", unit, ["Name", "Calls", CPU_STATS, GPU_STATS])
    for r in rows:
        out(t.row(r))
    out(t.sep)
    out("Note:\nIn this table, GPU time is the sum of all device(GPU) events called in the phase.\n"
        "Unlike overview summary, if two device(GPU) events execute on different streams with overlap time, "
        "we sum them directly here.\n")
    out("-" * t.length)
    out("")
    out("")


def _distributed(s: pb.Summary, out: _Out, total: int, unit: str) -> None:
    d = s.distributed
    if not d.present:
        return
    t = _Table([25] * 3)
    t.head(out, "Distribution Summary", unit, ["Name", "Total Time", "Ratio (%)"])
    for name, value in (("ProfileStep", total), ("  Communication", d.communication_ns),
                        ("  Computation", d.computation_ns), ("  Overlap", d.overlap_ns)):
        out(t.row([name, format_time(value, unit), format_ratio(float(value) / total)]))
    out(t.sep)
    out("Note:\nCommunication time: Communication Event time, Communication Op time and its kernel time on gpu.\n"
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
    out("-" * t.length)
    out("")
    out("")


def _truncate(name: str, indent: int, width: int) -> str:
    if len(name) + indent > width:
        return name[: width - indent - 3] + "..."
    return name


def _operators(s: pb.Summary, out: _Out, unit: str, sorted_by: str, op_detail: bool, thread_sep: bool) -> None:
    if not s.operators.operators:
        return
    name_width = 52
    groups = ([(f"Thread: {th.thread_id}", th.operators) for th in s.operators.threads] if thread_sep
              else [("Thread: All threads merged", s.operators.operators)])
    rows: list = []
    for title, nodes in groups:
        rows.append(title)
        ordered = _sort_items(nodes, sorted_by, stats=lambda n: n.stats)
        total_cpu = sum(n.stats.cpu.total_ns for n in ordered)
        total_gpu = sum(n.stats.general_gpu.total_ns for n in ordered)
        for node in ordered:
            it = node.stats
            cpu_ratio = 0 if total_cpu == 0 else float(it.cpu.total_ns) / total_cpu
            gpu_ratio = 0 if total_gpu == 0 else float(it.general_gpu.total_ns) / total_gpu
            rows.append([it.name, it.calls, _Stats(it.cpu, it.calls).cells(unit, cpu_ratio),
                         _Stats(it.general_gpu, it.calls).cells(unit, gpu_ratio), it.flops])
            if not op_detail:
                continue
            for inner_node in node.inners:
                inner = inner_node.stats
                cpu_ratio = 0 if it.cpu.total_ns == 0 else float(inner.cpu.total_ns) / it.cpu.total_ns
                gpu_ratio = (0 if it.general_gpu.total_ns == 0
                             else float(inner.general_gpu.total_ns) / it.general_gpu.total_ns)
                rows.append(["  " + _truncate(inner.name, 2, name_width), inner.calls,
                             _Stats(inner.cpu, inner.calls).cells(unit, cpu_ratio),
                             _Stats(inner.general_gpu, inner.calls).cells(unit, gpu_ratio), "-"])
                for dev in inner_node.devices:
                    ratio = (0 if inner.general_gpu.total_ns == 0
                             else float(dev.gpu.total_ns) / inner.general_gpu.total_ns)
                    rows.append(["    " + _truncate(dev.name, 4, name_width), dev.calls, "- / - / - / - / -",
                                 _Stats(dev.gpu, dev.calls).cells(unit, ratio), "-"])
            for dev in node.devices:
                ratio = 0 if it.general_gpu.total_ns == 0 else float(dev.gpu.total_ns) / it.general_gpu.total_ns
                rows.append(["  " + _truncate(dev.name, 2, name_width), dev.calls, "- / - / - / - / -",
                             _Stats(dev.gpu, dev.calls).cells(unit, ratio), "-"])
    t = _Table([name_width, _calls_width(rows), _text_width(rows, 2, 40), _text_width(rows, 3, 40), 10])
    t.head(out, "Operator Summary", unit, ["Name", "Calls", CPU_STATS, GPU_STATS,
               "FLOPs"])
    for r in rows:
        out(t.title(r) if isinstance(r, str) else t.row(r))
    out(t.sep)
    out("")
    out("")


def _kernels(s: pb.Summary, out: _Out, unit: str, sorted_by: str) -> None:
    kernels = list(s.kernels.kernels)
    if not kernels:
        return
    if sorted_by == "GPUAvg":
        kernels.sort(key=lambda k: k.gpu.total_ns / k.calls, reverse=True)
    elif sorted_by == "GPUMax":
        kernels.sort(key=lambda k: k.gpu.max_ns, reverse=True)
    elif sorted_by == "GPUMin":
        kernels.sort(key=lambda k: k.gpu.min_ns)
    else:
        kernels.sort(key=lambda k: k.gpu.total_ns, reverse=True)
    total = sum(k.gpu.total_ns for k in kernels)
    rows = []
    for k in kernels:
        ratio = 0 if total == 0 else float(k.gpu.total_ns) / total
        rows.append([k.name, k.calls, _Stats(k.gpu, k.calls).cells(unit, ratio)])
    name_width = 90
    t = _Table([name_width, _calls_width(rows), _text_width(rows, 2, 40)])
    t.head(out, "Kernel Summary", unit, ["Name", "Calls", GPU_STATS])
    for r in rows:
        out(t.row([display_kernel_name(r[0], name_width)] + r[1:]))
    out(t.sep)
    out("")
    out("")


def display_kernel_name(name: str, width: int = 90) -> str:
    """Paddle's kernel display name: template arguments kept, the argument list dropped, cut at width."""
    m = _KERNEL_NAME.match(name)
    if m:
        name = m.group(1) + m.group(2)
    return name[: width - 3] + "..." if len(name) > width else name


def _general_rows(items, total: int, gpu_total: int, unit: str) -> list:
    rows = []
    for it in items:
        gpu_ratio = 0 if gpu_total == 0 else float(it.general_gpu.total_ns) / gpu_total
        rows.append([it.name, it.calls, _Stats(it.cpu, it.calls).cells(unit, float(it.cpu.total_ns) / total),
                     _Stats(it.general_gpu, it.calls).cells(unit, gpu_ratio)])
    return rows


def _step_general_gpu(s: pb.Summary) -> int:
    for it in s.model.items:
        if it.name == "ProfileStep":
            return it.general_gpu.total_ns
    raise KeyError("ProfileStep")  # Paddle fails the same way without a ProfileStep item


def _name_width(rows) -> int:
    return max((len(r[0]) for r in rows if isinstance(r, list)), default=0)


def _memory_manipulation(s: pb.Summary, out: _Out, total: int, unit: str) -> None:
    if not s.memory_manipulation:
        return
    rows = _general_rows(s.memory_manipulation, total, _step_general_gpu(s), unit)
    t = _Table([_name_width(rows), _calls_width(rows), _text_width(rows, 2, 40), _text_width(rows, 3, 40)])
    t.head(out, "Memory Manipulation Summary", unit, ["Name", "Calls", CPU_STATS, GPU_STATS])
    for r in rows:
        out(t.row(r))
    out(t.sep)
    out("")
    out("")


def _user_defined(s: pb.Summary, out: _Out, total: int, unit: str, sorted_by: str, thread_sep: bool) -> None:
    if not s.user_defined.items:
        return
    gpu_total = _step_general_gpu(s)
    groups = ([(f"Thread: {th.thread_id}", th.items) for th in s.user_defined.threads] if thread_sep
              else [("Thread: All threads merged", s.user_defined.items)])
    rows: list = []
    for title, items in groups:
        rows.append(title)
        rows.extend(_general_rows(_sort_items(items, sorted_by), total, gpu_total, unit))
    t = _Table([_name_width(rows), _calls_width(rows), _text_width(rows, 2, 40), _text_width(rows, 3, 40)])
    t.head(out, "UserDefined Summary", unit, ["Name", "Calls", CPU_STATS, GPU_STATS])
    for r in rows:
        out(t.title(r) if isinstance(r, str) else t.row(r))
    out("")
    out("")


def _memory(s: pb.Summary, out: _Out) -> None:
    places = [pl for pl in s.memory.places if pl.allocated]
    if not s.memory.places:
        return
    t = _Table([50, 12, 15, 15, 15, 15, 15])
    for pl in places:
        rows = []
        for kind, items in (("Allocated", pl.allocated), ("Reserved", pl.reserved)):
            ordered = sorted(items, key=lambda it: it.allocation_size - it.free_size, reverse=True)
            for it in ordered:
                rows.append([it.name, kind, it.allocation_count, it.free_count, it.allocation_size, it.free_size,
                             it.allocation_size - it.free_size])
        out(t.title(f"Memory Summary - {pl.place}"))
        out(f"Peak Allocated Memory: {pl.peak_allocated}")
        out(f"Peak Reserved Memory: {pl.peak_reserved}")
        out(t.sep)
        out(t.row(["Name", "Type", "Allocation Count", "Free Count", "Allocation Size", "Free Size",
                   "Increased Size"]))
        out(t.sep)
        for r in rows:
            out(t.row(r))
        out("")
        out("")
