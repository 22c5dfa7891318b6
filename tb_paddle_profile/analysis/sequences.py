"""The tokens of each micro-batch of one rank, from the recorded input shapes (``Summary.sequences``;
docs/flops.md, "Sequence imbalance").

A micro-batch is a forward phase of ParallelView.phases (phases.py). Its tokens are read from its first
embedding call (the product of the ids' dimensions), else from its first GEMM with a 2-D weight (the
product of x's dimensions but the last: the rows of the activation; a pipeline stage without the
embedding). The calls are flops.py's (Operator events whose shapes the trace records); a trace without
shapes (Paddle 3.3.1) has no tokens. The comparison across data-parallel ranks is
crossrank/sequences.py's.
"""

from __future__ import annotations

from typing import Dict

import numpy as np

from ..v1 import summary_pb2 as pb
from .flops import ShapedCalls, base_name
from .profile import Profile


def sequence_view(p: Profile, calls: ShapedCalls, phases: pb.PhaseSpans, out: pb.SequenceView) -> None:
    """The tokens of each forward phase (micro-batch) with a token-telling call inside it."""
    if not calls.rows.size or not len(phases.phase):
        return
    h = p.tables.host
    ph = np.asarray(phases.phase, dtype=np.int64)
    fw = np.nonzero(ph == 1)[0]
    if not fw.size:
        return
    hs = np.asarray(phases.host_start_ns, dtype=np.int64)[fw]
    he = np.asarray(phases.host_end_ns, dtype=np.int64)[fw]
    step = np.asarray(phases.step, dtype=np.int64)[fw]
    tokens = np.zeros(fw.size, dtype=np.int64)
    source = np.full(fw.size, -1, dtype=np.int64)
    tells = calls.tokens > 0
    for code in (ShapedCalls.CODES["embedding"], ShapedCalls.CODES["gemm"]):  # embeddings first
        sel = np.nonzero(tells & (calls.formula == code))[0]
        if not sel.size:
            continue
        st = h.start[calls.rows[sel]]
        j = np.searchsorted(st, hs, side="left")
        found = (j < st.size) & (tokens == 0)
        jj = np.minimum(j, st.size - 1)
        found &= st[jj] < he
        tokens = np.where(found, calls.tokens[sel][jj], tokens)
        source = np.where(found, calls.rows[sel][jj], source)
    keep = tokens > 0
    if not keep.any():
        return
    # the micro-batch's position among its step's forward phases (by start)
    o = np.lexsort((hs, step))
    pos = np.zeros(fw.size, dtype=np.int64)
    s_o = step[o]
    new = np.r_[True, s_o[1:] != s_o[:-1]]
    first = np.maximum.accumulate(np.where(new, np.arange(o.size), 0))
    pos[o] = np.arange(o.size) - first
    names: Dict[str, int] = {}
    src = []
    for r in source[keep].tolist():
        src.append(names.setdefault(base_name(p.tables.names[int(h.name[r])]), len(names)))
    out.step.extend(step[keep].tolist())
    out.micro_batch.extend(pos[keep].tolist())
    out.tokens.extend(tokens[keep].tolist())
    out.source.extend(src)
    out.names.extend(list(names))
    # what the view across ranks reads of it (crossrank/sequences.py): Σ tokens ÷ the steps (integer sums:
    # exact in a float) and the micro-batches of each step, by step
    steps_kept, per_step = np.unique(step[keep], return_counts=True)
    out.tokens_per_step = float(sum(out.tokens)) / steps_kept.size
    out.step_micro_batches.extend(per_step.tolist())
