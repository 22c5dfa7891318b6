"""The native scanner's glue: the compiled scanner (tb_paddle_profile.trace._scan, built from
trace/_scan.c) when it is built and switched on (USE_NATIVE), and its fixed records → a chunk's raw
columns (_native_raw)."""

from __future__ import annotations

from typing import List, Optional

import numpy as np

from tb_paddle_profile.core import settings
from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.reader.columns import _KIND_OF, _build_columns, _Interner


# The records of the native scanner (_scan.c, struct record): the same fields in the same order.
_RECORD = np.dtype(
    [
        (f, "=i8")
        for f in (
            "pid",
            "tid",
            "corr",
            "shared_memory",
            "bytes",
            "increase",
            "cur_alloc",
            "cur_reserved",
            "peak_alloc",
            "peak_reserved",
            "addr",
            "shapes_start",
            "shapes_stop",
            "dtypes_start",
            "dtypes_stop",
        )
    ]
    + [(f, "=f8") for f in ("ts", "dur", "start", "blocks_per_sm", "warps_per_sm", "occupancy")]
    + [(f, "=i4") for f in ("name", "cat", "ph", "place", "registers")]
    + [("grid", "=i4", (3,)), ("block", "=i4", (3,))]
    + [(f, "u1") for f in ("pid_is_str", "tid_kind", "has_start", "pad_")]
)

# Set TB_PADDLE_PROFILE_NATIVE=0 to read with msgspec only (the tables are the same).
USE_NATIVE = settings.text(settings.NATIVE, "1") != "0"


def native_scanner():
    """The compiled scanner's scan function, or None when it is not built (a pure-Python install),
    does not match this reader, or is switched off (USE_NATIVE)."""
    if not USE_NATIVE:
        return None
    try:
        from tb_paddle_profile.trace import _scan
    except ImportError:
        return None
    return _scan.scan if _scan.RECORD_SIZE == _RECORD.itemsize else None


def _lut(strings: List[str], used: np.ndarray, value, dtype) -> np.ndarray:
    """value(string) for the strings whose ids are `used` (0 for the others), indexable by the
    chunk's string ids."""
    lut = np.zeros(len(strings), dtype=dtype)
    lut[used] = [value(strings[i]) for i in used.tolist()]
    return lut


def _native_chunk_columns(got, mv: memoryview, names: "_Interner", offset: int) -> Optional[dict]:
    """_chunk_columns from the native scanner's answer for a chunk of mv; None where the scanner
    declined the chunk (or the Python reader would reject it): msgspec then reads it."""
    raw = _native_raw(got, mv)
    return None if raw is None else _build_columns(raw, names, offset)


def _native_raw(got, mv: memoryview) -> Optional[dict]:
    """The native scanner's records of a chunk → its raw columns (see _build_columns); None where
    the scanner declined the chunk (or the Python reader would reject it)."""
    if got is None:
        return None
    n, strings, raw = got
    rec = np.frombuffer(raw, dtype=_RECORD)
    cat, ph = rec["cat"], rec["ph"]
    # categories and phases are a handful of the chunk's strings: look only those up
    cats = np.flatnonzero(np.bincount(cat, minlength=len(strings)))
    phases = np.flatnonzero(np.bincount(ph, minlength=len(strings)))
    kind = _lut(strings, cats, lambda s: _KIND_OF.get(s, 3), np.int8)[cat]
    for k, want in ((3, "X"), (4, "i")):
        kind[(kind == k) & ~_lut(strings, phases, lambda s: s == want, bool)[ph]] = 0
    host, rt, dev, mem = (np.nonzero(kind == k)[0] for k in (3, 2, 1, 4))
    if (rec["tid_kind"][dev] == 2).any():  # int("7(...)") fails in the Python reader: let it say so
        return None
    i64 = np.int64
    c: dict = {"host_pos": host.astype(i64), "mem_pos": mem.astype(i64), "n": n, "strings": strings}
    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]

    def timed(t, rows):
        c[f"{t}_name"] = rec["name"][rows]
        c[f"{t}_ts"], c[f"{t}_dur"] = rec["ts"][rows], rec["dur"][rows]
        c[f"{t}_start"] = rec["start"][rows] if bool(rec["has_start"][rows].all()) else None

    c["host_tid"] = rec["tid"][host]
    c["host_type"] = _lut(strings, cats, lambda s: type_id.get(s, user_defined), np.int16)[cat[host]]
    timed("host", host)
    shapes = {}
    spans = rec[["shapes_start", "shapes_stop", "dtypes_start", "dtypes_stop"]][host]
    for row in np.nonzero(spans["shapes_stop"] - spans["shapes_start"] > 2)[0].tolist():
        s0, s1, d0, d1 = spans[row].tolist()
        text = bytes(mv[s0:s1]).strip()
        if text not in (b"{}", b"null"):
            dtypes = bytes(mv[d0:d1]) or b"{}"
            shapes[row] = (text.decode("utf-8", "replace"), dtypes.decode("utf-8", "replace"))
    c["host_shapes"] = shapes

    c["rt_tid"] = rec["tid"][rt]
    c["rt_type"] = _lut(strings, cats, lambda s: et.RUNTIME_CATS.get(s, -1), np.int16)[cat[rt]]
    timed("rt", rt)
    c["rt_corr"] = rec["corr"][rt]

    c["dev_id"] = rec["pid"][dev]
    c["dev_stream"] = rec["tid"][dev]
    c["dev_type"] = _lut(strings, cats, lambda s: et.DEVICE_CATS.get(s, -1), np.int16)[cat[dev]]
    timed("dev", dev)
    c["dev_corr"] = rec["corr"][dev]
    c["dev_grid"] = rec["grid"][dev]
    c["dev_block"] = rec["block"][dev]
    for key in ("registers", "shared_memory", "blocks_per_sm", "warps_per_sm", "occupancy", "bytes"):
        c[f"dev_{key}"] = rec[key][dev]

    c["mem_tid"] = rec["tid"][mem]
    c["mem_type"] = _lut(strings, cats, lambda s: et.MEM_TYPE_ID.get(s, -1), np.int8)[cat[mem]]
    c["mem_place"] = rec["place"][mem]
    c["mem_ts"] = rec["ts"][mem]
    for key, column in (
        ("increase", "increase"),
        ("current_allocated", "cur_alloc"),
        ("current_reserved", "cur_reserved"),
        ("peak_allocated", "peak_alloc"),
        ("peak_reserved", "peak_reserved"),
        ("addr", "addr"),
    ):
        c[f"mem_{key}"] = rec[column][mem]
    by_int = host[rec["pid_is_str"][host] == 0]
    c["pid"] = int(rec["pid"][by_int[0]]) if len(by_int) else -1
    return c
