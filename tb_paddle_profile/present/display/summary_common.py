"""The building blocks of one rank's views (display/summary.py): Paddle's sort keys and view names, columns,
rows, cells with Paddle's Avg / Min semantics, tables and their text layout, kernel names and sorts."""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import COUNT, DURATION, MISSING, RATIO, fmt, num, text


SORTED_KEYS = ("CPUTotal", "CPUAvg", "CPUMax", "CPUMin", "GPUTotal", "GPUAvg", "GPUMax", "GPUMin")
# Paddle's SummaryView names, in the order Paddle prints them; Table.paddle_view holds one of them.
VIEWS = (
    "DeviceView",
    "OverView",
    "ModelView",
    "DistributedView",
    "KernelView",
    "OperatorView",
    "MemoryView",
    "MemoryManipulationView",
    "UDFView",
)
STAGES = ("Dataloader", "Forward", "Backward", "Optimization")
CPU_STATS = "CPU Total / Avg / Max / Min / Ratio(%)"
GPU_STATS = "GPU Total / Avg / Max / Min / Ratio(%)"
ALL_THREADS = "Thread: All threads merged"
_KERNEL_NAME = re.compile(r"(.+?)(<.*>)(\(.*\))")
_INF = float("inf")


def _col(
    key: str,
    header: str,
    kind: int,
    *,
    digits: int = 0,
    style: str = "",
    group: str = "",
    description: str = "",
    text_hidden: bool = False,
    panel_hidden: bool = False,
    width: int = 0,
    min_width: int = 0,
    truncate: bool = False,
    truncate_depth: int = 0,
) -> dpb.Column:
    return dpb.Column(
        key=key,
        header=header,
        format=fmt(kind, digits=digits, style=style),
        group=group,
        description=description,
        text_hidden=text_hidden,
        panel_hidden=panel_hidden,
        text_width=width,
        text_min_width=min_width,
        text_truncate=truncate,
        text_truncate_depth=truncate_depth,
    )


def _stats_columns(side: str, ratio_description: str, what: str, panel_hidden: bool = False) -> List[dpb.Column]:
    parts = (
        ("total_ns", "Total", DURATION, f"{what}: total"),
        ("avg_ns", "Avg", DURATION, f"{what}: total / calls"),
        ("max_ns", "Max", DURATION, f"{what}: longest call"),
        ("min_ns", "Min", DURATION, f"{what}: shortest call"),
        ("ratio", "Ratio(%)", RATIO, ratio_description),
    )
    return [
        _col(
            f"{side}_{key}",
            header,
            kind,
            digits=2 if kind == RATIO else 0,
            group=side,
            description=desc,
            panel_hidden=panel_hidden,
        )
        for key, header, kind, desc in parts
    ]


def _groups(*sides: str) -> List[dpb.ColumnGroup]:
    headers = {"cpu": CPU_STATS, "gpu": GPU_STATS}
    return [dpb.ColumnGroup(key=s, header=headers[s], text_min_width=40, panel_header=s.upper()) for s in sides]


def _stats(ts: pb.TimeStats, calls: int, ratio) -> List[dpb.Cell]:
    """Total / Avg / Max / Min / Ratio of one TimeStats, with Paddle's avg and min semantics."""
    return [
        num(ts.total_ns),
        num(ts.total_ns / calls) if calls else MISSING,
        num(ts.max_ns),
        num(ts.min_ns) if calls else MISSING,
        num(ratio),
    ]


def _others(total_ns, ratio) -> List[dpb.Cell]:
    return [num(total_ns), MISSING, MISSING, MISSING, num(ratio)]


_NO_CPU = [MISSING] * 5


def _div(a, b) -> float:
    return 0 if b == 0 else float(a) / b


def _row(
    cells: Sequence[dpb.Cell],
    depth: int = 0,
    role: dpb.RowRole = dpb.ROW_DATA,
    id: str = "",
    link: str = "",
    text_hidden: bool = False,
) -> dpb.Row:
    return dpb.Row(cells=list(cells), depth=depth, role=role, id=id, link=link, text_hidden=text_hidden)


def _section(title: str, ncols: int) -> dpb.Row:
    return dpb.Row(cells=[text(title)] + [text("")] * (ncols - 1), role=dpb.ROW_SECTION, id=f"section:{title}")


def _layout(
    *,
    unit_line: bool = True,
    closing_separator: bool = True,
    closing_rule: bool = False,
    head_lines: Iterable[str] = (),
) -> dpb.TextLayout:
    return dpb.TextLayout(
        style="paddle",
        time_unit_line=unit_line,
        closing_separator=closing_separator,
        closing_rule=closing_rule,
        blank_lines_after=2,
        head_lines=list(head_lines),
    )


def _table(
    key: str,
    title: str,
    columns,
    rows,
    *,
    groups=(),
    paddle_view: str = "",
    text_hidden: bool = False,
    tree: bool = False,
    layout: Optional[dpb.TextLayout] = None,
    note: str = "",
    empty: str = "",
) -> dpb.Table:
    t = dpb.Table(
        key=key,
        title=title,
        columns=list(columns),
        groups=list(groups),
        rows=list(rows),
        note=note,
        tree=tree,
        empty=empty,
        paddle_view=paddle_view,
        text_hidden=text_hidden,
    )
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


def _count_span(n) -> dpb.Span:
    return dpb.Span(is_value=True, format=fmt(COUNT), value=num(n))
