"""The Kernels view of one rank: Paddle's Kernel Summary with launch configurations, and ours: the kernels'
efficiency table and the recommendations (sentences of the Overview)."""

from __future__ import annotations

from typing import List, Optional

from tb_paddle_profile.analysis.recommendations import LOW_OCCUPANCY, recommendations
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import (
    BYTES,
    COUNT,
    DURATION,
    MISSING,
    NUMBER,
    PERCENT,
    TEXT,
    num,
    sentence,
    text,
    val,
)
from tb_paddle_profile.present.display.summary_common import (
    _col,
    _stats_columns,
    _groups,
    _stats,
    _div,
    _row,
    _layout,
    _table,
    display_kernel_name,
    _kernel_cell,
    _sort_kernels,
)


def _launch_columns() -> List[dpb.Column]:
    return [
        _col("grid", "Grid", TEXT, group="launch", text_hidden=True),
        _col("block", "Block", TEXT, group="launch", text_hidden=True),
        _col("registers", "Regs", COUNT, group="launch", text_hidden=True, description="Registers per thread"),
        _col(
            "shared_memory_bytes",
            "Smem (B)",
            BYTES,
            group="launch",
            text_hidden=True,
            description="Shared memory per block (static + dynamic), bytes",
        ),
        _col("blocks_per_sm", "Blocks/SM", NUMBER, digits=2, group="launch", text_hidden=True),
        _col("warps_per_sm", "Warps/SM", NUMBER, digits=2, group="launch", text_hidden=True),
        _col(
            "occupancy_pct",
            "Occ. (%)",
            NUMBER,
            digits=2,
            group="launch",
            text_hidden=True,
            description="Theoretical achieved occupancy (%)",
        ),
        _col(
            "launches",
            "Launch configurations",
            COUNT,
            text_hidden=True,
            description="Distinct launch configurations of the kernel",
        ),
    ]


def _launch_cells(cfg: Optional[pb.LaunchConfig]) -> List[dpb.Cell]:
    if cfg is None:
        return [MISSING] * 7
    return [
        text("[" + ", ".join(str(x) for x in cfg.grid) + "]"),
        text("[" + ", ".join(str(x) for x in cfg.block) + "]"),
        num(cfg.registers_per_thread),
        num(cfg.shared_memory),
        num(cfg.blocks_per_sm),
        num(cfg.warps_per_sm),
        num(cfg.occupancy_pct),
    ]


def _efficiency_columns() -> List[dpb.Column]:
    """Per kernel (docs/kernel-efficiency.md); the panels' own columns."""
    return [
        _col(
            "tensor_cores",
            "Tensor Cores",
            TEXT,
            group="efficiency",
            text_hidden=True,
            description="Yes when the kernel's name marks a Tensor Core kernel on its GPU's architecture",
        ),
        _col(
            "sm_efficiency",
            "Est. SM eff.",
            PERCENT,
            digits=1,
            group="efficiency",
            text_hidden=True,
            description="min(1, blocks / SM count), weighted by the duration of each call",
        ),
        _col(
            "achieved_occupancy",
            "Occupancy",
            PERCENT,
            digits=1,
            group="efficiency",
            text_hidden=True,
            description="Theoretical achieved occupancy, weighted by the duration of each call",
        ),
    ]


def _ratio_or_missing(a: float, b: int) -> dpb.Cell:
    return num(float(a) / b) if b else MISSING


def _efficiency_cells(e: pb.KernelEfficiency) -> List[dpb.Cell]:
    return [
        text("Yes" if e.tensor_core_ns > 0 else "No"),
        _ratio_or_missing(e.sm_efficiency_ns, e.sm_known_ns),
        _ratio_or_missing(e.occupancy_ns, e.launch_ns),
    ]


def _kernel_efficiency_table(s: pb.Summary) -> dpb.Table:
    """The Overview's "Kernel efficiency" table: the rank's kernels together (docs/kernel-efficiency.md)."""
    e = s.kernels.efficiency
    cols = [
        _col("metric", "Metric", TEXT),
        _col("value", "Value", PERCENT, digits=1),
        _col("over_ns", "Over kernel time", DURATION, description="The kernel time the value is taken over"),
        _col("definition", "Definition", TEXT),
    ]
    rows = [
        _row(
            [
                text("Tensor Core kernels"),
                _ratio_or_missing(e.tensor_core_ns, e.total_ns),
                num(e.total_ns),
                text("time of Tensor Core kernels / all kernel time"),
            ],
            id="tensor_cores",
        ),
        _row(
            [
                text("Estimated SM efficiency"),
                _ratio_or_missing(e.sm_efficiency_ns, e.sm_known_ns),
                num(e.sm_known_ns),
                text("min(1, blocks / SM count), weighted by kernel duration"),
            ],
            id="sm_efficiency",
        ),
        _row(
            [
                text("Achieved occupancy"),
                _ratio_or_missing(e.occupancy_ns, e.launch_ns),
                num(e.launch_ns),
                text("theoretical achieved occupancy, weighted by kernel duration"),
            ],
            id="achieved_occupancy",
        ),
    ]
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
            spans = [
                "Data-loader bound: the data loader takes ",
                ns(n["dataloader_ns"]),
                " of the ",
                ns(n["step_ns"]),
                " step (",
                pct(r.value),
                "; threshold ",
                pct(th),
                "). Use more DataLoader workers "
                "(num_workers), pinned memory and prefetching, or lighter preprocessing.",
            ]
        elif r.rule.rule == "launch_bound":
            spans = [
                "Launch bound: CUDA runtime calls other than synchronisations take ",
                ns(n["runtime_ns"]),
                " of the ",
                ns(n["step_ns"]),
                " step (",
                pct(r.value),
                "; threshold ",
                pct(th),
                ") for ",
                val(n["launches"], NUMBER, digits=0),
                " launches, while kernels run ",
                ns(n["kernel_ns"]),
                ". Fuse operators, use larger batches, or capture the step in a CUDA Graph.",
            ]
        elif r.rule.rule == "sync_heavy":
            spans = [
                "Synchronisation heavy: synchronising CUDA calls take ",
                ns(n["sync_ns"]),
                " of the ",
                ns(n["step_ns"]),
                " step (",
                pct(r.value),
                "; threshold ",
                pct(th),
                ", ",
                val(n["sync_calls"], NUMBER, digits=1),
                " calls per step). Avoid loss.item(), .numpy() and printing tensors every step.",
            ]
        elif r.rule.rule == "memcpy_heavy":
            spans = [
                "Memcpy heavy: memcpy and memset take ",
                ns(n["memory_ns"]),
                " of the ",
                ns(n["step_ns"]),
                " step (",
                pct(r.value),
                "; threshold ",
                pct(th),
                "). Keep tensors on the GPU between steps, load batches into pinned memory and copy asynchronously.",
            ]
        else:  # low_occupancy
            spans = [
                "Low-occupancy kernels: ",
                val(n["kernels"], COUNT),
                " compute kernels of time-weighted occupancy below ",
                pct(LOW_OCCUPANCY),
                " take ",
                pct(r.value),
                " of the kernel time (",
                ns(n["low_ns"]),
                "; threshold ",
                pct(th),
                "); the longest, ",
                display_kernel_name(r.names[0]),
                ", runs at ",
                pct(n["occupancy"]),
                ". Fewer registers or less shared memory per block, or "
                "larger blocks, let more warps reside on each SM.",
            ]
        out.append(sentence(spans, key=f"recommendation.{r.rule.rule}", level="warning"))
    if not out and (s.parallel.steps or s.kernels.kernels):
        out.append(
            sentence(
                ["No single-rank recommendation: no rule reaches its threshold (docs/kernel-efficiency.md)."],
                key="recommendation.none",
                level="info",
            )
        )
    return out


def _kernels_view(s: pb.Summary, sorted_by: str) -> dpb.View:
    view = dpb.View(key="kernels", title="Kernels")
    kernels = _sort_kernels(s.kernels.kernels, sorted_by)
    if not kernels:
        return view
    total = sum(k.gpu.total_ns for k in kernels)
    name_col = _col(
        "name",
        "Name",
        TEXT,
        width=90,
        truncate=True,
        truncate_depth=0,
        description="Paddle's display name (template arguments kept, arguments dropped); hover: the full name",
    )
    gpu_cols = _stats_columns("gpu", "Kernel time / all kernels' time (launch rows: / the kernel)", "Kernel time")
    cols = [name_col, _col("calls", "Calls", COUNT, min_width=6)] + gpu_cols + _launch_columns() + _efficiency_columns()
    rows = []
    for k in kernels:
        kid = f"k:{k.name}"
        one = k.configs[0] if len(k.configs) == 1 else None
        rows.append(
            _row(
                [_kernel_cell(k.name), num(k.calls)]
                + _stats(k.gpu, k.calls, _div(k.gpu.total_ns, total))
                + _launch_cells(one)
                + [num(len(k.configs))]
                + _efficiency_cells(k.efficiency),
                id=kid,
                link=f"timeline:{k.name}",
            )
        )
        if len(k.configs) > 1:
            for i, cfg in enumerate(k.configs):
                rows.append(
                    _row(
                        [
                            text(f"launch {i + 1}"),
                            num(cfg.calls),
                            num(cfg.total_ns),
                            num(cfg.total_ns / cfg.calls) if cfg.calls else MISSING,
                            MISSING,
                            MISSING,
                            num(_div(cfg.total_ns, k.gpu.total_ns)),
                        ]
                        + _launch_cells(cfg)
                        + [MISSING] * 4,
                        depth=1,
                        id=f"{kid}\x01c:{i}",
                        text_hidden=True,
                    )
                )
    view.tables.append(
        _table(
            "kernels",
            "Kernel Summary",
            cols,
            rows,
            groups=_groups("gpu")
            + [
                dpb.ColumnGroup(key="launch", header="Launch configuration"),
                dpb.ColumnGroup(key="efficiency", header="Efficiency"),
            ],
            paddle_view="KernelView",
            tree=True,
            layout=_layout(),
        )
    )
    ocols = [
        name_col,
        _col(
            "operator",
            "Operator",
            TEXT,
            description="The operator (or host event) whose runtime call launched the kernel",
        ),
        _col("calls", "Calls", COUNT),
    ] + gpu_cols
    orows = []
    for k in kernels:
        for o in k.operators:
            orows.append(
                _row(
                    [_kernel_cell(k.name), text(o.operator or "(thread root)"), num(o.calls)]
                    + _stats(o.gpu, o.calls, _div(o.gpu.total_ns, total)),
                    id=f"k:{k.name}\x01o:{o.operator}",
                    link=f"timeline:{k.name}",
                )
            )
    view.tables.append(
        _table("kernels_by_operator", "Kernels by operator", ocols, orows, groups=_groups("gpu"), text_hidden=True)
    )
    return view
