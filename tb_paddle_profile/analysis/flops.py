"""FLOPs per operator and layer from the recorded input shapes (``Summary.flops``; formulas in
docs/flops.md). The calls read here also give sequences.py the tokens of each micro-batch.

Only Operator events whose ``input_shapes`` the trace records count (Paddle 3.3.1 writes them empty:
then both views are empty). Per call, by the operator's name (Paddle's suffixes " dygraph",
" compute", " pybind_imperative_func" stripped):

- **GEMM** (``matmul``, ``matmul_v2``, ``mm``, ``bmm``, ``linear``, ``fused_gemm_epilogue``, ...):
  x ``[..., m, k]``, y ``[..., k, n]``: 2 · batch · m · n · k, batch the larger product of the two
  inputs' leading dimensions. The trace records no ``transpose_x`` / ``transpose_y``: k is the
  dimension the shapes share (y ``[..., n, k]`` when y's last dimension matches x's, x
  ``[..., k, m]`` when only the next-to-last ones match).
- **attention** (``flash_attn``, ``memory_efficient_attention``, ``scaled_dot_product_attention``,
  ...): q ``[b, s, h, d]``, k ``[b, s_k, h_k, d]``: 4 · b · h · s · s_k · d (q·kᵀ and the scores
  times v); a causal mask is not recorded, so it is not halved.
- **embedding** (``embedding``, ``c_embedding``, ``lookup_table_v2``): a lookup, 0 FLOPs; its ids
  tell the tokens.

Other operators (element-wise, norms, softmax) are not counted. A call whose shapes do not fit its
formula counts as *unresolved* (0 FLOPs). The backward's FLOPs are not read from the trace (grad
nodes record no shapes): ``model_flops_per_step`` counts them as twice the forward (a GEMM's
backward is two GEMMs of its size, dX and dW), as 6 · N · tokens does.

A call's **layer** is the Forward event just below the outermost Forward above it (the model's
sub-layers: embeddings, each decoder layer, the head), or that outermost Forward when there is none
below (a loss function called after the model), numbered by its position among the layers of that
name in its outermost Forward.

A layer's **time** is that of the kernels its Forward events launched (by correlation id, the event
tree's ``dev_host``): compute kernels in ``kernel_ns`` (communication kernels apart, in
``comm_kernel_ns``); achieved FLOP/s = forward FLOPs / kernel_ns, MFU = that / the GPU's peak
(mfu.peak_of), docs/flops.md "Time per layer".

"""

from __future__ import annotations

import json
import math
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from ..v1 import summary_pb2 as pb
from .collectives import is_communication_kernel
from .mfu import peak_of
from .profile import Profile

GEMM = frozenset(
    {"matmul", "matmul_v2", "mm", "bmm", "linear", "fused_gemm_epilogue", "fused_linear", "addmm", "fc", "fused_matmul"}
)
ATTENTION = frozenset(
    {
        "flash_attn",
        "flash_attn_v3",
        "flashmask_attention",
        "memory_efficient_attention",
        "scaled_dot_product_attention",
        "fused_dot_product_attention",
    }
)
EMBEDDING = frozenset({"embedding", "c_embedding", "lookup_table_v2", "lookup_table"})
_SUFFIXES = (" dygraph", " compute", " pybind_imperative_func")
# what the backward adds to the forward (model FLOPs = (1 + BACKWARD_FACTOR) × forward)
BACKWARD_FACTOR = 2.0

_X = ("x", "input", "a")
_Y = ("y", "weight", "w", "b", "mat2", "other")
_Q, _K = ("q", "query"), ("k", "key")
_IDS = ("x", "ids", "input")


def base_name(name: str) -> str:
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def formula_of(name: str) -> str:
    """'gemm', 'attention', 'embedding' or '' (not counted) for an operator's name."""
    b = base_name(name)
    if b in GEMM:
        return "gemm"
    if b in ATTENTION:
        return "attention"
    if b in EMBEDDING:
        return "embedding"
    return ""


def _first(shapes: dict, keys: Sequence[str]) -> Optional[List[int]]:
    """The first shape of the first input among ``keys`` (case-insensitive), None without one."""
    low = {str(k).lower(): v for k, v in shapes.items()}
    for k in keys:
        v = low.get(k)
        if isinstance(v, list) and v and isinstance(v[0], list) and all(isinstance(d, int) and d >= 0 for d in v[0]):
            return v[0]
    return None


def gemm_flops(x: List[int], y: List[int]) -> Tuple[float, int]:
    """(FLOPs, rows of x) of x @ y from their shapes (-1 FLOPs: the shapes do not fit)."""
    if len(x) < 2 or len(y) < 2:
        return -1.0, 0
    if y[-2] == x[-1]:
        m, k, n = x[-2], x[-1], y[-1]
    elif y[-1] == x[-1]:  # transpose_y
        m, k, n = x[-2], x[-1], y[-2]
    elif y[-2] == x[-2]:  # transpose_x
        m, k, n = x[-1], x[-2], y[-1]
    else:
        return -1.0, 0
    batch = max(math.prod(x[:-2]), math.prod(y[:-2]))
    return 2.0 * batch * m * n * k, math.prod(x[:-1])


def call_flops(formula: str, shapes: dict) -> Tuple[float, int, bool]:
    """(forward FLOPs, tokens it tells (0: none), resolved) of one call."""
    if formula == "gemm":
        x, y = _first(shapes, _X), _first(shapes, _Y)
        if x is None or y is None:
            return 0.0, 0, False
        f, rows = gemm_flops(x, y)
        if f < 0:
            return 0.0, 0, False
        return f, rows if len(y) == 2 else 0, True
    if formula == "attention":
        q, k = _first(shapes, _Q), _first(shapes, _K)
        if q is None or k is None or len(q) != 4 or len(k) != 4:
            return 0.0, 0, False
        b, s, h, d = q
        return 4.0 * b * h * s * k[1] * d, 0, True
    if formula == "embedding":
        ids = _first(shapes, _IDS)
        return 0.0, (math.prod(ids) if ids else 0), ids is not None
    return 0.0, 0, False


class ShapedCalls:
    """The Operator calls whose shapes the trace records and whose name has a formula, as columns:
    ``rows`` (host rows, by start), ``formula`` (0 gemm, 1 attention, 2 embedding), ``flops``,
    ``tokens`` and ``resolved``; ``shaped``: how many Operator events record shapes."""

    CODES = {"gemm": 0, "attention": 1, "embedding": 2}

    def __init__(self, p: Profile):
        t = p.tables
        h = t.host
        shaped = np.fromiter(h.shapes, dtype=np.int64, count=len(h.shapes)) if h.shapes else np.zeros(0, np.int64)
        shaped = shaped[h.type[shaped] == et.OPERATOR]
        self.shaped = int(shaped.size)
        # the operators' formulas name by name, then only the calls of names that have one, in row order
        names, of_name = np.unique(h.name[shaped], return_inverse=True)
        per_name = [formula_of(t.names[n]) for n in names.tolist()]
        with_formula = np.array([bool(f) for f in per_name], dtype=bool)[of_name.ravel()]
        cache: Dict[Tuple[int, str], Tuple[float, int, bool, int]] = {}
        rows, fl, tok, ok, code = [], [], [], [], []
        name_ids = names.tolist()
        for r, j in zip(shaped[with_formula].tolist(), of_name.ravel()[with_formula].tolist()):
            nid, f = name_ids[j], per_name[j]
            text = h.shapes[r][0]
            got = cache.get((nid, text))
            if got is None:
                try:
                    shapes = json.loads(text)
                except ValueError:
                    shapes = None
                if isinstance(shapes, dict):
                    v, k, good = call_flops(f, shapes)
                else:
                    v, k, good = 0.0, 0, False
                got = cache[(nid, text)] = (v, k, good, self.CODES[f])
            rows.append(r)
            fl.append(got[0])
            tok.append(got[1])
            ok.append(got[2])
            code.append(got[3])
        rows_a = np.array(rows, dtype=np.int64)
        order = np.argsort(h.start[rows_a], kind="stable") if rows_a.size else rows_a
        self.rows = rows_a[order]
        self.flops = np.array(fl, dtype=np.float64)[order]
        self.tokens = np.array(tok, dtype=np.int64)[order]
        self.resolved = np.array(ok, dtype=bool)[order]
        self.formula = np.array(code, dtype=np.int64)[order]


def _layers(p: Profile, rows: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(layer row, its outermost Forward row) of each host row (-1, -1: outside any Forward)."""
    h, tree = p.tables.host, p.tree
    parent = tree.host_parent
    is_fw = h.type == et.FORWARD
    outer = np.full(rows.size, -1, dtype=np.int64)
    below = np.full(rows.size, -1, dtype=np.int64)
    cur = rows.copy()
    for _ in range(tree.max_depth + 2):  # the row itself first (a Forward that launched a kernel itself)
        live = cur >= 0
        if not live.any():
            break
        hit = live & is_fw[np.maximum(cur, 0)]
        below = np.where(hit, outer, below)
        outer = np.where(hit, cur, outer)
        cur = np.where(live, parent[np.maximum(cur, 0)], -1)
    return np.where(below >= 0, below, outer), outer


def flops_view(p: Profile, steps: Sequence[Tuple[int, int, int]], calls: ShapedCalls, out: pb.FlopsView) -> None:
    t = p.tables
    h = t.host
    out.shaped_operators = calls.shaped
    rows = calls.rows
    out.steps = max(1, len(steps))
    if not rows.size:
        return
    names = np.asarray(h.name)[rows]
    # per operator name, in the order of first call
    uniq, first, inv = np.unique(names, return_index=True, return_inverse=True)
    inv = inv.ravel()
    calls_n = np.bincount(inv, minlength=uniq.size)
    unresolved = np.bincount(inv, weights=(~calls.resolved).astype(float), minlength=uniq.size)
    fsum = np.bincount(inv, weights=calls.flops, minlength=uniq.size)
    labels = {v: k for k, v in ShapedCalls.CODES.items()}
    for j in np.argsort(first, kind="stable").tolist():
        out.operators.add(
            name=base_name(t.names[int(uniq[j])]),
            formula=labels[int(calls.formula[first[j]])],
            calls=int(calls_n[j]),
            unresolved=int(unresolved[j]),
            flops=float(fsum[j]),
        )
    # per step: the calls inside a step
    if steps:
        s_start = np.array([a for _, a, _ in steps], dtype=np.int64)
        s_end = np.array([b for _, _, b in steps], dtype=np.int64)
        o = np.argsort(s_start, kind="stable")
        st = h.start[rows]
        i = np.searchsorted(s_start[o], st, side="right") - 1
        inside = (i >= 0) & (st < s_end[o][np.maximum(i, 0)])
        fwd = float(calls.flops[inside].sum())
    else:
        fwd = float(calls.flops.sum())
    out.forward_flops_per_step = fwd / out.steps
    out.model_flops_per_step = out.forward_flops_per_step * (1.0 + BACKWARD_FACTOR)
    # per layer (name, ordinal among its outermost Forward's layers of that name)
    counted = calls.flops > 0
    c_rows = rows[counted]
    layer, outer = _layers(p, c_rows)
    has = layer >= 0
    if not has.any():
        return
    lrows, louter = np.unique(np.stack([layer[has], outer[has]]), axis=1)
    lname = np.asarray(h.name)[lrows]
    o = np.lexsort((h.start[lrows], lname, louter))
    ls, lo, ln = lrows[o], louter[o], lname[o]
    new_grp = np.r_[True, (lo[1:] != lo[:-1]) | (ln[1:] != ln[:-1])]
    grp_start = np.maximum.accumulate(np.where(new_grp, np.arange(ls.size), 0))
    ordinal = np.arange(ls.size) - grp_start
    lay, fl = layer[has], calls.flops[counted][has]
    by_row = np.argsort(ls, kind="stable")
    ord_of = ordinal[by_row][np.searchsorted(ls[by_row], lay)]
    key = np.asarray(h.name)[lay].astype(np.int64) * (int(ord_of.max()) + 1) + ord_of
    uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    inv = inv.ravel()
    n_calls = np.bincount(inv, minlength=uk.size)
    f_sum = np.bincount(inv, weights=fl, minlength=uk.size)
    by_first = np.argsort(first, kind="stable")
    for j in by_first.tolist():  # by first call
        r = int(lay[first[j]])
        out.layers.add(
            name=t.names[int(h.name[r])], ordinal=int(ord_of[first[j]]), calls=int(n_calls[j]), flops=float(f_sum[j])
        )
    # each layer row's message: its key's position among the layers written
    ord_l = np.empty(ls.size, dtype=np.int64)
    ord_l[o] = ordinal
    msg_of = np.empty(uk.size, dtype=np.int64)
    msg_of[by_first] = np.arange(uk.size)
    lkey = np.asarray(h.name)[lrows].astype(np.int64) * (int(ord_of.max()) + 1) + ord_l
    _layer_kernels(p, lrows, msg_of[np.searchsorted(uk, lkey)], out)


def _layer_kernels(p: Profile, lrows: np.ndarray, msg: np.ndarray, out: pb.FlopsView) -> None:
    """Each layer's kernels: those whose launching runtime call (correlation id; EventTree.dev_host,
    as the Operator and Kernel views attribute them) lies in the subtree of one of its Forward events
    ``lrows`` (sorted; ``msg``: the index of each one's FlopsLayer); their time, the FLOP/s achieved and
    the MFU against the peak of the GPU most of that time ran on (mfu.peak_of)."""
    t, tree = p.tables, p.tree
    dv = t.device
    krows = np.nonzero((dv.type == et.KERNEL) & (tree.dev_host >= 0))[0]
    if not krows.size:
        return
    klayer, _ = _layers(p, tree.dev_host[krows])
    i = np.minimum(np.searchsorted(lrows, klayer), lrows.size - 1)
    mine = (klayer >= 0) & (lrows[i] == klayer)
    krows, kmsg = krows[mine], msg[i[mine]]
    if not krows.size:
        return
    kname = dv.name[krows]
    names, inv = np.unique(kname, return_inverse=True)
    comm = np.array([is_communication_kernel(t.names[int(n)]) for n in names], dtype=bool)[inv.ravel()]
    dur = (dv.end[krows] - dv.start[krows]).astype(np.int64)
    n = len(out.layers)
    calls = np.bincount(kmsg[~comm], minlength=n)
    k_ns = np.zeros(n, dtype=np.int64)
    np.add.at(k_ns, kmsg[~comm], dur[~comm])
    c_ns = np.zeros(n, dtype=np.int64)
    np.add.at(c_ns, kmsg[comm], dur[comm])
    if (~comm).any():  # the GPU with most of the layers' compute time
        ids, dinv = np.unique(dv.id[krows[~comm]], return_inverse=True)
        busiest = int(ids[np.argmax(np.bincount(dinv.ravel(), weights=dur[~comm]))])
        out.device_name = next((d.name for d in t.devices if d.id == busiest), "")
        out.peak_flops = peak_of(out.device_name)[0]
    for j, layer in enumerate(out.layers):
        layer.kernels, layer.kernel_ns, layer.comm_kernel_ns = int(calls[j]), int(k_ns[j]), int(c_ns[j])
        if layer.kernel_ns:
            layer.achieved_flops = layer.flops / (layer.kernel_ns * 1e-9)
            if out.peak_flops:
                layer.mfu = layer.achieved_flops / out.peak_flops
