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

The views are built in display/overview.py, operators.py, kernels.py and memory.py, from the building
blocks of display/summary_common.py; this module puts them together (``summary_display``) and finds a
table by key (``find_table``).
"""

from __future__ import annotations

from typing import Optional

from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import sentence
from tb_paddle_profile.present.display.comm import comm_tables
from tb_paddle_profile.present.display.flops import flops_tables
from tb_paddle_profile.present.display.kernels import _kernel_efficiency_table, _kernels_view, _recommendation_sentences
from tb_paddle_profile.present.display.memory import _memory_view
from tb_paddle_profile.present.display.operators import _operators_view
from tb_paddle_profile.present.display.overview import (
    _device_table,
    _distributed_table,
    _model_steps_table,
    _model_table,
    _overview_table,
)
from tb_paddle_profile.present.display.summary_common import SORTED_KEYS


NO_STEPS = (
    "This trace has no ProfileStep events, so (like Paddle) only the device summary is shown: the other "
    "views divide by the total step time."
)


def summary_display(
    summary: pb.Summary,
    sorted_by: str = "CPUTotal",
    op_detail: bool = True,
    thread_sep: bool = False,
    time_unit: str = "ms",
) -> dpb.Display:
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
