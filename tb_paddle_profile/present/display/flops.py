"""One rank's FLOPs and tokens tables (ours, not Paddle's): docs/flops.md.

Built from Summary.flops (analysis/flops.py) and Summary.sequences (analysis/sequences.py) and appended
to the Overview by summary_display, like the communication tables (comm.py): no paddle_view, so
Paddle's printed summary is unchanged; ``summary --format csv --table KEY`` and the API's frames read
them. A trace without input shapes (Paddle 3.3.1) has none of them.
"""

from __future__ import annotations

from typing import List, Tuple

from tb_paddle_profile.analysis.flops import BACKWARD_FACTOR
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import (
    COUNT,
    DURATION,
    NUMBER,
    PERCENT,
    TEXT,
    fmt,
    num,
    sentence,
    text,
    val,
)

OPERATORS_NOTE = (
    "Forward FLOPs from the recorded input shapes: GEMM 2·m·n·k (batch included), attention "
    "4·b·h·s·s_k·d, embedding 0 (a lookup; its ids give the tokens); other operators are not counted. "
    "Unresolved: calls whose shapes do not fit the formula (0 FLOPs). docs/flops.md."
)
LAYERS_NOTE = (
    "Layer: the Forward event just below the outermost one (or that one when none is below), numbered "
    "among the layers of its name. Per step: all steps' FLOPs / steps. Model FLOPs count the backward "
    f"as {BACKWARD_FACTOR:g}x the forward."
)
LAYERS_TIME_NOTE = (
    " Kernel time: the compute kernels launched below the layer's Forward events (by correlation id); "
    "TFLOP/s = forward FLOPs / kernel time, MFU = TFLOP/s / the GPU's peak (analysis/mfu.py)."
)
SEQUENCES_NOTE = (
    "Tokens of each micro-batch (forward phase): its first embedding's ids, else its first GEMM with a "
    "2-D weight (the activation's rows)."
)


def _col(key: str, header: str, kind: int, digits: int = 0, style: str = "", description: str = "") -> dpb.Column:
    return dpb.Column(key=key, header=header, format=fmt(kind, digits=digits, style=style), description=description)


def _table(key: str, title: str, cols, rows, note: str) -> dpb.Table:
    return dpb.Table(key=key, title=title, columns=cols, rows=rows, note=note, text_hidden=True)


def _operators_table(f: pb.FlopsView) -> dpb.Table:
    total = sum(o.flops for o in f.operators)
    steps = max(1, f.steps)
    cols = [
        _col("name", "Operator", TEXT),
        _col("formula", "Formula", TEXT),
        _col("calls", "Calls", COUNT),
        _col("unresolved", "Unresolved", COUNT),
        _col("flops", "FLOPs", NUMBER, style="g"),
        _col("tflop_per_step", "TFLOP per step", NUMBER, 3),
        _col("share", "Share", PERCENT, 1),
    ]
    rows = [
        dpb.Row(
            cells=[
                text(o.name),
                text(o.formula),
                num(o.calls),
                num(o.unresolved),
                num(o.flops),
                num(o.flops / steps / 1e12),
                num(o.flops / total if total else 0.0),
            ],
            id=o.name,
        )
        for o in f.operators
    ]
    return _table("flops_operators", "Forward FLOPs by operator (from input shapes)", cols, rows, OPERATORS_NOTE)


def _layers_table(f: pb.FlopsView) -> dpb.Table:
    total = sum(x.flops for x in f.layers)
    steps = max(1, f.steps)
    cols = [
        _col("layer", "Layer", TEXT),
        _col("ordinal", "#", COUNT),
        _col("calls", "Calls", COUNT),
        _col("flops", "FLOPs", NUMBER, style="g"),
        _col("tflop_per_step", "TFLOP per step", NUMBER, 3),
        _col("share", "Share", PERCENT, 1),
    ]
    timed = any(x.kernel_ns for x in f.layers)  # a CPU trace has no kernels: no time columns
    if timed:
        cols += [
            _col("kernels", "Kernels", COUNT, description="compute kernels its forward launched, all steps"),
            _col(
                "kernel_ns",
                "Kernel time",
                DURATION,
                description="their summed device time, all steps (communication kernels apart)",
            ),
            _col(
                "comm_kernel_ns",
                "Comm kernel time",
                DURATION,
                description="communication kernels its forward launched (not in TFLOP/s)",
            ),
            _col("tflops", "TFLOP/s", NUMBER, 1, description="forward FLOPs / kernel time"),
        ]
    if timed and f.peak_flops:
        cols.append(
            _col(
                "mfu",
                "MFU",
                PERCENT,
                1,
                description=f"TFLOP/s / the peak of {f.device_name} ({f.peak_flops / 1e12:g} TFLOP/s)",
            )
        )
    rows = []
    for x in f.layers:
        cells = [
            text(x.name),
            num(x.ordinal),
            num(x.calls),
            num(x.flops),
            num(x.flops / steps / 1e12),
            num(x.flops / total if total else 0.0),
        ]
        if timed:
            cells += [
                num(x.kernels),
                num(x.kernel_ns),
                num(x.comm_kernel_ns),
                num(x.achieved_flops / 1e12 if x.kernel_ns else None),
            ]
        if timed and f.peak_flops:
            cells.append(num(x.mfu if x.kernel_ns else None))
        rows.append(dpb.Row(cells=cells, id=f"{x.name}:{x.ordinal}"))
    note = LAYERS_NOTE + (LAYERS_TIME_NOTE if timed else "")
    return _table("flops_layers", "Forward FLOPs by layer", cols, rows, note)


def _sequences_table(sq: pb.SequenceView) -> dpb.Table:
    cols = [
        _col("step", "Step", COUNT),
        _col("micro_batch", "Micro-batch", COUNT),
        _col("tokens", "Tokens", COUNT),
        _col("source", "From", TEXT),
    ]
    rows = [
        dpb.Row(cells=[num(s), num(m), num(k), text(sq.names[i] if i < len(sq.names) else "")], id=f"{s}:{m}")
        for s, m, k, i in zip(sq.step, sq.micro_batch, sq.tokens, sq.source)
    ]
    return _table("sequences", "Tokens per micro-batch (from input shapes)", cols, rows, SEQUENCES_NOTE)


def flops_tables(s: pb.Summary) -> Tuple[List[dpb.Table], List[dpb.Sentence]]:
    """The tables of Summary.flops and Summary.sequences, and one sentence with the FLOPs per step
    (nothing for a trace without shapes)."""
    f, sq = s.flops, s.sequences
    tables: List[dpb.Table] = []
    out: List[dpb.Sentence] = []
    if f.operators:
        tables.append(_operators_table(f))
    if f.layers:
        tables.append(_layers_table(f))
    if len(sq.tokens):
        tables.append(_sequences_table(sq))
    if f.model_flops_per_step > 0:
        out.append(
            sentence(
                [
                    "FLOPs from the recorded shapes: ",
                    val(f.forward_flops_per_step / 1e12, NUMBER, digits=3),
                    " TFLOP forward per step, ",
                    val(f.model_flops_per_step / 1e12, NUMBER, digits=3),
                    f" TFLOP with the backward ({f.steps} steps).",
                ],
                key="flops.per_step",
                level="info",
            )
        )
    return tables, out
