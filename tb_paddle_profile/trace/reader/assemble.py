"""The chunks' parts of columns joined (_concat) and made into EventTables (_assemble): times rebased
by Paddle's origin where a table lacked relative ones, memory events given their owner host rows."""

from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from tb_paddle_profile.trace.reader.schema import Trace
from tb_paddle_profile.trace.reader.tables import _TABLES, EventTables


def _memory_owners(host_tid, host_pos, mem_tid, mem_pos) -> np.ndarray:
    """Each memory event's nearest preceding host event of its thread, in file order (-1: none)."""
    owner = np.full(len(mem_tid), -1, dtype=np.int64)
    if not len(mem_tid) or not len(host_tid):
        return owner
    span = int(max(host_pos.max(), mem_pos.max())) + 1
    if (
        max(abs(int(host_tid.min())), abs(int(host_tid.max())), abs(int(mem_tid.min())), abs(int(mem_tid.max()))) + 1
        >= (1 << 62) // span
    ):
        # thread ids too large for tid * span + pos to fit int64: their ranks keep the same order
        rank = np.unique(np.concatenate([host_tid, mem_tid]), return_inverse=True)[1].reshape(-1)
        host_tid, mem_tid = rank[: len(host_tid)], rank[len(host_tid) :]
    host_key = host_tid * span + host_pos
    order = np.argsort(host_key, kind="stable")
    sorted_key = host_key[order]
    i = np.searchsorted(sorted_key, mem_tid * span + mem_pos) - 1
    ok = i >= 0
    same_thread = np.zeros(len(mem_tid), dtype=bool)
    same_thread[ok] = host_tid[order[i[ok]]] == mem_tid[ok]
    owner[same_thread] = order[i[same_thread]]
    return owner


_SCALARS = ("host_shapes", "origin", "abs_min", "pid", "n")


def _concat(parts: List[dict]) -> dict:
    """Consecutive parts' columns as one part (positions must already be in one numbering)."""
    if len(parts) == 1:
        return parts[0]
    host_rows = [len(p["host_tid"]) for p in parts]
    out: Dict[str, Any] = {}  # columns and the _SCALARS
    for k in [k for k in parts[0] if k not in _SCALARS]:
        out[k] = np.concatenate([p[k] for p in parts])
        for p in parts:  # each part's copy goes once joined: one column at a time is held twice
            del p[k]
    host_shapes: Dict[int, tuple] = {}
    host_base = 0
    for p, rows in zip(parts, host_rows):
        for row, v in p["host_shapes"].items():
            host_shapes[host_base + row] = v
        host_base += rows
    out["host_shapes"] = host_shapes
    origins = [p["origin"] for p in parts if p["origin"] is not None]
    out["origin"] = max(origins) if origins else None
    abs_mins = [p["abs_min"] for p in parts if p["abs_min"] is not None]
    out["abs_min"] = min(abs_mins) if abs_mins else None
    out["pid"] = next((p["pid"] for p in parts if p["pid"] >= 0), -1)
    out["n"] = sum(p["n"] for p in parts)
    return out


def _assemble(trace: Trace, part: dict, names: List[str], repaired: int) -> EventTables:
    origin = part["origin"] if part["origin"] is not None else (part["abs_min"] or 0)
    cols = {k: v for k, v in part.items() if k not in _SCALARS}
    for table in ("host", "rt", "dev"):
        absolute = cols.pop(f"{table}_abs")
        if absolute.any():
            cols[f"{table}_start"][absolute] -= origin
            cols[f"{table}_end"][absolute] -= origin
    cols["mem_ts_ns"] -= origin
    host_pos, mem_pos = cols.pop("host_pos"), cols.pop("mem_pos")
    cols["mem_owner"] = _memory_owners(cols["host_tid"], host_pos, cols["mem_tid"], mem_pos)

    cols["host_shapes"] = part["host_shapes"]
    tables: Dict[str, Any] = {
        attr: cls(**{f: cols.pop(f"{prefix}_{f}") for f in cls.__dataclass_fields__}) for prefix, attr, cls in _TABLES
    }
    assert not cols, sorted(cols)
    span = trace.span_index if trace.span_index is not None else trace.span_indx
    return EventTables(
        names=names,
        **tables,
        schema_version=trace.schemaVersion or "",
        span="" if span is None else str(span),
        extra_info=dict(trace.ExtraInfo),
        devices=list(trace.deviceProperties),
        thread_names={int(k): v for k, v in trace.ExtraInfo.items() if k.isascii() and k.isdigit()},
        origin_unix_ns=origin,
        pid=part["pid"],
        repaired_lines=repaired,
    )
