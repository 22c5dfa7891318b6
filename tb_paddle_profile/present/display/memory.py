"""The Memory view of one rank: Paddle's Memory, Memory Manipulation and UserDefined tables, and our memory
insights (growth over steps, the memory alive at the peak)."""

from __future__ import annotations

from typing import List, Optional

from tb_paddle_profile.analysis.memory import THREAD_ROOT
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import (
    BYTES,
    COUNT,
    DURATION,
    MISSING,
    PERCENT,
    TEXT,
    fmt,
    num,
    sentence,
    text,
    val,
)
from tb_paddle_profile.present.display.summary_common import (
    ALL_THREADS,
    _col,
    _stats_columns,
    _groups,
    _stats,
    _div,
    _row,
    _section,
    _layout,
    _table,
    has_gpu,
    _sort_items,
    _step_item,
)


def _item_columns(gpu: bool) -> List[dpb.Column]:
    return (
        [_col("name", "Name", TEXT), _col("calls", "Calls", COUNT, min_width=6)]
        + _stats_columns("cpu", "CPU time / total step time", "CPU time")
        + _stats_columns(
            "gpu",
            "All device time / ProfileStep's device time",
            "Device time (kernels, memcpy, memset)",
            panel_hidden=not gpu,
        )
    )


def _item_rows(items, total: int, gpu_total: int, prefix: str) -> List[dpb.Row]:
    return [
        _row(
            [text(it.name), num(it.calls)]
            + _stats(it.cpu, it.calls, float(it.cpu.total_ns) / total)
            + _stats(it.general_gpu, it.calls, _div(it.general_gpu.total_ns, gpu_total)),
            id=f"{prefix}:{it.name}",
            link=f"timeline:{it.name}",
        )
        for it in items
    ]


def _memory_view(s: pb.Summary, total: int, sorted_by: str, thread_sep: bool) -> dpb.View:
    view = dpb.View(key="memory", title="Memory")
    gpu = has_gpu(s)
    step = _step_item(s)
    gpu_total = step.general_gpu.total_ns if step is not None else 0
    if total and s.memory_manipulation:
        view.tables.append(
            _table(
                "memory_manipulation",
                "Memory Manipulation Summary",
                _item_columns(gpu),
                _item_rows(s.memory_manipulation, total, gpu_total, "mm"),
                groups=_groups("cpu", "gpu"),
                paddle_view="MemoryManipulationView",
                layout=_layout(),
                empty="No memory manipulation events",
            )
        )
    udf = s.user_defined
    if total and udf.items:
        cols = _item_columns(gpu)
        sections = (
            [(f"Thread: {th.thread_id}", th.items) for th in udf.threads] if thread_sep else [(ALL_THREADS, udf.items)]
        )
        rows: List[dpb.Row] = []
        for title, items in sections:
            rows.append(_section(title, len(cols)))
            rows += _item_rows(_sort_items(items, sorted_by), total, gpu_total, "udf")
        view.tables.append(
            _table(
                "user_defined",
                "UserDefined Summary",
                cols,
                rows,
                groups=_groups("cpu", "gpu"),
                paddle_view="UDFView",
                layout=_layout(closing_separator=False),
                empty="No user-defined events",
            )
        )
        if len(udf.threads) > 1:
            for th in udf.threads:
                view.tables.append(
                    _table(
                        f"user_defined.thread.{th.thread_id}",
                        f"UserDefined Summary - Thread {th.thread_id}",
                        cols,
                        _item_rows(_sort_items(th.items, sorted_by), total, gpu_total, "udf"),
                        groups=_groups("cpu", "gpu"),
                        text_hidden=True,
                    )
                )
    for pl in s.memory.places:
        view.tables.append(_memory_table(pl))
    _memory_insights(s, view)
    return view


def _memory_table(pl: pb.MemoryPlace) -> dpb.Table:
    widths = (50, 12, 15, 15, 15, 15, 15)
    specs = (
        ("name", "Name", TEXT),
        ("type", "Type", TEXT),
        ("allocation_count", "Allocation Count", COUNT),
        ("free_count", "Free Count", COUNT),
        ("allocation_size", "Allocation Size", BYTES),
        ("free_size", "Free Size", BYTES),
        ("increased_size", "Increased Size", BYTES),
    )
    cols = [_col(k, h, kind, width=w) for (k, h, kind), w in zip(specs, widths)]
    cols[-1].description = "Allocation size - free size"
    for c in cols:
        if c.format.kind == BYTES:  # Paddle prints the integer; the panels print "1.50 MiB" (docs/display.md)
            c.panel_format.CopyFrom(fmt(BYTES, style="human"))
    rows = []
    for kind, items in (("Allocated", pl.allocated), ("Reserved", pl.reserved)):
        # Paddle's order: each kind by increased size, largest first (stable).
        for it in sorted(items, key=lambda it: it.allocation_size - it.free_size, reverse=True):
            rows.append(
                _row(
                    [
                        text(it.name),
                        text(kind),
                        num(it.allocation_count),
                        num(it.free_count),
                        num(it.allocation_size),
                        num(it.free_size),
                        num(it.allocation_size - it.free_size),
                    ],
                    id=f"{kind}:{it.name}",
                )
            )
    return _table(
        f"memory.{pl.place}",
        f"Memory Summary - {pl.place}",
        cols,
        rows,
        paddle_view="MemoryView",
        text_hidden=not pl.allocated,  # Paddle prints no table for a place without allocations
        layout=_layout(
            unit_line=False,
            closing_separator=False,
            head_lines=[f"Peak Allocated Memory: {pl.peak_allocated}", f"Peak Reserved Memory: {pl.peak_reserved}"],
        ),
        empty="No allocation events at this place",
    )


# ------------------------------------------------------------------ memory insights (not Paddle's)


def _human(key: str, header: str, description: str = "") -> dpb.Column:
    """A bytes column printed "1.50 MiB" everywhere (these tables are not Paddle's; CSV keeps the integer)."""
    return _col(key, header, BYTES, style="human", description=description)


def _memory_insights(s: pb.Summary, view: dpb.View) -> None:
    """The memory insights of every place (analysis/memory.py; docs/panels.md "Memory insights"): the
    table `memory_insights`, per place `memory_steps.<place>` and `memory_alive.<place>`, and a sentence
    per place with steps (`memory.leak.<place>` or `memory.growth.<place>`). All are the panels' own."""
    places = [
        pl
        for pl in s.memory.places
        if pl.fragmentation.peak_allocated or pl.alive_at_peak.allocated or pl.growth.steps or pl.curve.events
    ]
    if not places:
        return
    cols = [
        _col("place", "Place", TEXT),
        _col("steps", "Steps", COUNT),
        _human("allocated_slope", "Allocated / step", "Least-squares slope of allocated at each step's end"),
        _human("reserved_slope", "Reserved / step", "Least-squares slope of reserved at each step's end"),
        _human(
            "floor_growth_min",
            "Min floor growth",
            "The smallest step-to-step growth of the allocated floor (the lowest allocated in a step)",
        ),
        _col(
            "leak",
            "Leak?",
            TEXT,
            description="Leak suspected: the allocated floor grows in every step by more "
            "than the threshold, over at least the minimum number of steps",
        ),
        _human(
            "fragmentation_at_peak",
            "Frag. at peak",
            "Reserved − allocated at the allocated peak (the trace's highest current allocated)",
        ),
        _human("fragmentation_max", "Max frag.", "The largest reserved − allocated"),
        _col("fragmentation_max_ns", "Max frag. at", DURATION, description="When reserved − allocated was largest"),
    ]
    rows, notes = [], []
    for pl in places:
        g, f = pl.growth, pl.fragmentation
        n = len(g.steps)
        leak = "-" if n < g.leak_min_steps else ("Yes" if g.leak_suspected else "No")
        rows.append(
            _row(
                [
                    text(pl.place),
                    num(n),
                    num(g.allocated_slope) if n > 1 else MISSING,
                    num(g.reserved_slope) if n > 1 else MISSING,
                    num(g.floor_growth_min) if n > 1 else MISSING,
                    text(leak),
                    num(f.at_peak_bytes),
                    num(f.max_bytes),
                    num(f.max_time_ns),
                ],
                id=pl.place,
            )
        )
        if f.at_peak_bytes < 0 or f.max_bytes < 0:
            notes.append(
                sentence(
                    [
                        f"{pl.place}: reserved is below allocated (by up to ",
                        val(-min(f.at_peak_bytes, f.max_bytes), BYTES, style="human"),
                        "): this place's allocator does not count reserved memory as the GPU allocator "
                        "does, so its reserved − allocated is no fragmentation.",
                    ],
                    key=f"memory.reserved_below.{pl.place}",
                    level="note",
                )
            )
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
        return sentence(
            [
                f"Leak suspected on {pl.place}: the allocated floor (the lowest allocated in a step) grew "
                f"in each of the {n} steps by at least ",
                b(g.floor_growth_min),
                " (threshold ",
                b(g.leak_threshold_bytes),
                "); allocated at the step's end grows by ",
                b(g.allocated_slope),
                " per step (least squares). Look for tensors kept across steps (a list of losses, "
                "a cache that grows, graphs retained for backward).",
            ],
            key=f"memory.leak.{pl.place}",
            level="warning",
        )
    if round(g.allocated_slope) == 0:
        change = [f"{pl.place}: allocated at the step's end does not change over {n} steps"]
    else:
        change = [
            f"{pl.place}: allocated at the step's end changes by ",
            b(g.allocated_slope),
            f" per step over {n} steps (least squares)",
        ]
    return sentence(
        change
        + [
            "; no leak suspected (that needs the allocated floor to grow by more than ",
            b(g.leak_threshold_bytes),
            f" in every step, over at least {g.leak_min_steps} steps).",
        ],
        key=f"memory.growth.{pl.place}",
        level="info",
    )


def _memory_steps_table(pl: pb.MemoryPlace) -> dpb.Table:
    cols = [
        _col("step", "Step", COUNT),
        _human("allocated_end", "Allocated at end"),
        _human("reserved_end", "Reserved at end"),
        _human("fragmentation_end", "Reserved − allocated at end"),
        _human("allocated_peak", "Allocated peak"),
        _human("reserved_peak", "Reserved peak"),
        _human("allocated_floor", "Allocated floor", "The lowest allocated in the step"),
        _human("floor_growth", "Floor growth", "Allocated floor − the previous step's"),
        _col("events", "Events", COUNT, description="Memory events of the place in the step"),
    ]
    rows, prev = [], None
    for st in pl.growth.steps:
        rows.append(
            _row(
                [
                    num(st.step),
                    num(st.allocated_end),
                    num(st.reserved_end),
                    num(st.reserved_end - st.allocated_end),
                    num(st.allocated_peak),
                    num(st.reserved_peak),
                    num(st.allocated_floor),
                    MISSING if prev is None else num(st.allocated_floor - prev),
                    num(st.events),
                ],
                id=f"step:{st.step}",
            )
        )
        prev = st.allocated_floor
    return _table(
        f"memory_steps.{pl.place}", f"Memory per step - {pl.place}", cols, rows, text_hidden=True, empty="No steps"
    )


def _memory_alive_table(pl: pb.MemoryPlace) -> dpb.Table:
    al = pl.alive_at_peak
    cols = [
        _col(
            "operator", "Operator", TEXT, description="The nearest operator above the allocating event, else that event"
        ),
        _col("layer", "Layer", TEXT, description="The outermost Forward/Backward layer event around it"),
        _human("bytes", "Bytes"),
        _col("count", "Allocations", COUNT),
        _col("share", "Of the peak", PERCENT, digits=1, description="Bytes / allocated at the peak"),
    ]

    def share(x):
        return num(_div(x, al.allocated))

    rows = [
        _row(
            [text(g.operator), text(g.layer), num(g.bytes), num(g.count), share(g.bytes)],
            id=f"alive:{g.operator}|{g.layer}",
            link="" if g.operator == THREAD_ROOT else f"timeline:{g.operator}",
        )
        for g in al.groups
    ]
    if al.others_count:
        rows.append(
            _row(
                [text("Others"), text(""), num(al.others_bytes), num(al.others_count), share(al.others_bytes)],
                role=dpb.ROW_TOTAL,
                id="alive:others",
            )
        )
    if al.before_trace:
        rows.append(
            _row(
                [text("(allocated before the trace)"), text(""), num(al.before_trace), MISSING, share(al.before_trace)],
                role=dpb.ROW_TOTAL,
                id="alive:before_trace",
            )
        )
    rows.append(
        _row(
            [text("Allocated at the peak"), text(""), num(al.allocated), MISSING, share(al.allocated)],
            role=dpb.ROW_TOTAL,
            id="alive:total",
        )
    )
    t = _table(
        f"memory_alive.{pl.place}",
        f"Alive at the allocated peak - {pl.place}",
        cols,
        rows,
        text_hidden=True,
        empty="No allocation alive at the peak",
    )
    parts = [
        "At ",
        val(al.time_ns, DURATION, style="unit"),
        ", allocated ",
        val(al.allocated, BYTES, style="human"),
        ": the allocations not yet freed then (matched to their frees by address), by operator and layer; "
        "'(allocated before the trace)' is what was allocated before the first event and not freed by then.",
    ]
    if al.unaddressed:
        parts.append(f" {al.unaddressed} memory events without a readable address are left out.")
    t.notes.append(sentence(parts, key="memory.alive.note", level="note"))
    return t
