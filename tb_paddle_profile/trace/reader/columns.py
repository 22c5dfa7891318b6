"""THE column builder (_build_columns): one chunk's raw columns → the reader's columns (names in the
file's numbering, times in ns, checked); the raw columns of msgspec's structs (_msgspec_raw) and the
checks of the values as the file gives them (_Malformed)."""

from __future__ import annotations

from typing import Dict, List, Optional, cast

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.reader.schema import _NO_ARGS, Event


class _Malformed(Exception):
    """An event value that decoded but cannot be one Paddle writes (a time out of range, a thread
    id that is not a number...): read_trace reports it as the file's one-line TraceError."""


class _Interner:
    def __init__(self):
        self.ids: Dict[str, int] = {}
        self.names: List[str] = []

    def many(self, strings: List[str]) -> np.ndarray:
        ids = self.ids
        known = len(ids)
        # setdefault evaluates len(ids) before inserting: a new string gets the next id
        out = np.array([ids.setdefault(s, len(ids)) for s in strings], dtype=np.int32)
        if len(ids) > known:
            self.names.extend(list(ids)[known:])
        return out


def _int_of(value, what: str) -> int:
    """int(value) for an id written as a number or a string of digits; _Malformed otherwise."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except ValueError:
        raise _Malformed(f"{what} {_quoted(value)} is not a number") from None


def _quoted(value, most: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= most else text[:most] + "..."


def _int_array(values, dtype, what: str) -> np.ndarray:
    """np.array(values, dtype) for integers read from the file; _Malformed for one that does not fit."""
    try:
        return np.array(values, dtype=dtype)
    except OverflowError as exc:
        raise _Malformed(f"{what}: {exc}") from None


def _addr(raw: bytes) -> int:
    """A memory event's args.addr: Paddle writes the address as a decimal string ("94064963207168");
    a bare integer is taken too. Addresses of 2^63 and more wrap into int64 (as a C uint64 read as
    int64 would); anything else (missing, null, another form) is -1, and never rejects the file."""
    text = raw.strip()
    if text[:1] == b'"' and text[-1:] == b'"' and len(text) >= 2:
        text = text[1:-1]
    if not text.isdigit() or len(text) > 20:
        return -1
    v = int(text)
    if v >= 1 << 64:
        return -1
    return v - (1 << 64) if v >= 1 << 63 else v


def _thread_ids(tids: list) -> np.ndarray:
    """'1234(Python)' / '1234(C++)' / 1234 → 1234."""
    cache = {t: _int_of(t if isinstance(t, int) else str(t).split("(", 1)[0], "thread id") for t in set(tids)}
    return _int_array([cache[t] for t in tids], np.int64, "thread id")


def _start_time(text: str) -> float:
    """'12.345 us' (or a bare number) → 12.345; _Malformed for anything else."""
    parts = text.split()
    try:
        if len(parts) == 1 or (len(parts) == 2 and parts[1] == "us"):
            return float(parts[0])
    except ValueError:
        pass
    raise _Malformed(f"start_time {_quoted(text)} is not a time in µs")


def _end(start: np.ndarray, dur: np.ndarray, names) -> np.ndarray:
    """start + dur (ns); _Malformed for a negative duration (the time algebra of the analyses
    needs end >= start: one such event would cancel others' time), or an end out of range."""
    if len(dur) and dur.min() < 0:
        i = int(np.argmin(dur))
        name = names(i)  # the name without its "[... us]" suffix, as the tables keep it
        raise _Malformed(f"a negative duration ({dur[i] / 1000:.3f} µs) for the event {_quoted(name)}")
    end = start + dur
    if len(end) and np.abs(end).max() >= _MAX_NS:
        raise _Malformed(f"a time out of range (beyond ±{_MAX_US:.3g} µs, or not a number)")
    return end


# |µs| below this: every time, start + duration and difference of two fits int64 ns (2**62 ns,
# about 146 years from Paddle's origin or from 1970)
_MAX_US = 4.6e15
_MAX_NS = 1 << 62


def _ns(us: np.ndarray) -> np.ndarray:
    """µs (float) → ns (int64, rounded); _Malformed for a value that is not a finite time."""
    if len(us) and not (np.abs(us) < _MAX_US).all():  # also false for nan
        raise _Malformed(f"a time out of range (beyond ±{_MAX_US:.3g} µs, or not a number)")
    return np.rint(us * 1000).astype(np.int64)


def _origin(tables) -> Optional[int]:
    """Absolute ns of the relative origin. ts is the absolute start truncated to µs, so each
    ts·1000 − start is a lower bound of the origin; the largest is the best estimate.
    tables: (ts in µs, start ns, relative) per table. None when no table has relative times."""
    best = None
    for ts, start, relative in tables:
        if relative and len(start):
            bound = int((_ns(ts()) - start).max())
            best = bound if best is None else max(best, bound)
    return best


# Event kind by "cat" alone (one dict lookup per event): 1 device, 2 runtime, 3 host, 4 memory,
# 0 ignored; host and memory kinds are then confirmed by "ph" ("X" / "i").
_KIND_OF = {c: 1 for c in et.DEVICE_CATS}
_KIND_OF.update({c: 2 for c in et.RUNTIME_CATS})
_KIND_OF.update({c: 4 for c in et.MEM_TYPE_ID})
_KIND_OF.update({"": 0, "async": 0})


def _triples(values) -> np.ndarray:
    out = [tuple(v[:3]) + (0,) * (3 - len(v[:3])) if v else (0, 0, 0) for v in values]
    return _int_array(out, np.int32, "grid or block").reshape(-1, 3)


def _strip_names(events) -> list:
    """'matmul dygraph[12.345 us]' → 'matmul dygraph': the last bracket group is the duration."""
    return [n.rpartition("[")[0] if n[-1:] == "]" and "[" in n else n for n in (e.name for e in events)]


def _chunk_columns(events: List[Event], names: _Interner, offset: int) -> dict:
    """Columns of one chunk of events decoded by msgspec; `offset` is the chunk's position in the
    file's event list."""
    return _build_columns(_msgspec_raw(events), names, offset)


def _msgspec_raw(events: List[Event]) -> dict:
    """One chunk's msgspec structs → its raw columns (see _build_columns), every value checked as
    the file gives it (thread ids, integers that must fit, start_time texts)."""
    get = _KIND_OF.get
    kind = np.array([get(e.cat, 3) for e in events], dtype=np.int8)
    # Metadata, flow and the final {} have no category or "async" and are already 0; confirm
    # the phase only where another tool's event could hide (host and memory categories).
    for k, ph in ((3, "X"), (4, "i")):
        rows = np.nonzero(kind == k)[0]
        odd = [i for i in rows.tolist() if events[i].ph != ph]
        if odd:
            kind[odd] = 0
    picks = {k: np.nonzero(kind == k)[0] for k in (1, 2, 3, 4)}
    dev_ev = [events[i] for i in picks[1].tolist()]
    rt_ev = [events[i] for i in picks[2].tolist()]
    host_ev = [events[i] for i in picks[3].tolist()]
    mem_ev = [events[i] for i in picks[4].tolist()]
    i64 = np.int64
    local = _Interner()  # the chunk's strings, numbered as the scanner numbers its own
    c: dict = {"host_pos": picks[3].astype(i64), "mem_pos": picks[4].astype(i64), "n": len(events)}

    type_id = et.TYPE_ID
    user_defined = type_id["UserDefined"]
    c["host_tid"] = _thread_ids([e.tid for e in host_ev])
    c["host_type"] = np.array([type_id.get(e.cat, user_defined) for e in host_ev], dtype=np.int16)
    c["host_name"] = local.many(_strip_names(host_ev))
    c["host_ts"], c["host_dur"], c["host_start"] = _msgspec_times(host_ev)
    shapes = {}
    for row, e in enumerate(host_ev):
        a = e.args
        if a is not None and len(a.input_shapes) > 2:
            text = bytes(a.input_shapes).strip()
            if text not in (b"{}", b"null"):
                dtypes = bytes(a.input_dtypes) or b"{}"
                shapes[row] = (text.decode("utf-8", "replace"), dtypes.decode("utf-8", "replace"))
    c["host_shapes"] = shapes

    runtime_cats = et.RUNTIME_CATS
    c["rt_tid"] = _thread_ids([e.tid for e in rt_ev])
    c["rt_type"] = np.array([runtime_cats[e.cat] for e in rt_ev], dtype=np.int16)
    c["rt_name"] = local.many(_strip_names(rt_ev))
    c["rt_ts"], c["rt_dur"], c["rt_start"] = _msgspec_times(rt_ev)
    rt_args = [e.args or _NO_ARGS for e in rt_ev]
    c["rt_corr"] = _int_array(
        [-1 if a.correlation_id is None else a.correlation_id for a in rt_args], i64, "correlation id"
    )

    device_cats = et.DEVICE_CATS
    dev_args = [e.args or _NO_ARGS for e in dev_ev]
    c["dev_id"] = _int_array([_int_of(e.pid, "device id") for e in dev_ev], i64, "device id")
    c["dev_stream"] = _int_array([_int_of(e.tid, "stream id") for e in dev_ev], i64, "stream id")
    c["dev_type"] = np.array([device_cats[e.cat] for e in dev_ev], dtype=np.int16)
    c["dev_name"] = local.many(_strip_names(dev_ev))
    c["dev_ts"], c["dev_dur"], c["dev_start"] = _msgspec_times(dev_ev)
    c["dev_corr"] = _int_array(
        [-1 if a.correlation_id is None else a.correlation_id for a in dev_args], i64, "correlation id"
    )
    c["dev_grid"] = _triples([a.grid for a in dev_args])
    c["dev_block"] = _triples([a.block for a in dev_args])
    c["dev_registers"] = _int_array([a.registers or 0 for a in dev_args], np.int32, "registers per thread")
    c["dev_shared_memory"] = _int_array([a.shared_memory or 0 for a in dev_args], i64, "shared memory")
    c["dev_blocks_per_sm"] = np.array([a.blocks_per_sm or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_warps_per_sm"] = np.array([a.warps_per_sm or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_occupancy"] = np.array([a.occupancy or 0.0 for a in dev_args], dtype=np.float64)
    c["dev_bytes"] = _int_array([a.bytes or 0 for a in dev_args], i64, "bytes")

    mem_args = [e.args or _NO_ARGS for e in mem_ev]
    c["mem_tid"] = _thread_ids([e.tid for e in mem_ev])
    c["mem_type"] = np.array([et.MEM_TYPE_ID[e.cat] for e in mem_ev], dtype=np.int8)
    c["mem_place"] = local.many([a.place or "" for a in mem_args])
    c["mem_ts"] = np.array([e.ts for e in mem_ev], dtype=np.float64)
    c["mem_increase"] = _int_array([a.increase_bytes or 0 for a in mem_args], i64, "increase_bytes")
    c["mem_current_allocated"] = _int_array([a.current_allocated or 0 for a in mem_args], i64, "current_allocated")
    c["mem_current_reserved"] = _int_array([a.current_reserved or 0 for a in mem_args], i64, "current_reserved")
    c["mem_peak_allocated"] = _int_array([a.peak_allocated or 0 for a in mem_args], i64, "peak_allocated")
    c["mem_peak_reserved"] = _int_array([a.peak_reserved or 0 for a in mem_args], i64, "peak_reserved")
    c["mem_addr"] = np.array([_addr(bytes(a.addr)) for a in mem_args], dtype=i64)
    c["strings"] = local.names
    c["pid"] = next((e.pid for e in host_ev if isinstance(e.pid, int)), -1)
    return c


def _msgspec_times(events: list) -> "tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]":
    """(ts, dur, start) in µs of a table's events: start from args.start_time (relative µs text),
    None when an event lacks it (very old files: the whole table then uses the absolute ts)."""
    rel = [(e.args or _NO_ARGS).start_time for e in events]
    dur = np.array([e.dur for e in events], dtype=np.float64)
    ts = np.array([e.ts for e in events], dtype=np.float64)
    if None in rel:
        return ts, dur, None
    texts = cast(List[str], rel)  # (no None: just checked)
    # one C-level parse of "12.345 us 67.890 us ..." instead of a float() per event
    try:
        values = np.fromstring(" ".join(texts).replace(" us", ""), sep=" ") if texts else np.zeros(0)
    except ValueError:  # text that is not a number (numpy >= 2.3 says so; older ones stop short)
        values = np.zeros(0)
    if len(values) != len(texts):  # some other unit or text: parse one by one
        values = np.array([_start_time(r) for r in texts], dtype=np.float64)
    return ts, dur, values


# The raw columns' tables with times: (prefix, what the scanner and msgspec give per table).
_TIMED = ("host", "rt", "dev")


def _build_columns(raw: dict, names: "_Interner", offset: int) -> dict:
    """THE column builder: one chunk's raw columns, from the native scanner (_native_raw) or from
    msgspec (_msgspec_raw), → the reader's columns of that chunk (a part; _concat joins parts,
    _assemble makes the EventTables).

    `raw` holds, per table, the columns as the file gives them, names as ids into raw["strings"]
    (the chunk's own numbering), and for the timed tables `ts`, `dur` and `start` in µs (`start`
    None when the table is to use the absolute ts); memory events `ts` in µs. Here the names are
    renumbered into the file's (`names`, in order of first appearance: host, runtime, device names,
    then memory places), times become ns with end = start + dur (checked), and the chunk's
    estimate of Paddle's origin, its earliest absolute time, its pid and event count are kept."""
    strings = raw.pop("strings")
    c: dict = {"host_pos": raw.pop("host_pos") + offset, "mem_pos": raw.pop("mem_pos") + offset}
    times = {}
    for t in _TIMED:
        local = raw.pop(f"{t}_name")
        c[f"{t}_name"] = _global_ids(local, strings, names)
        ts, dur, start_us = raw.pop(f"{t}_ts"), raw.pop(f"{t}_dur"), raw.pop(f"{t}_start")
        relative = start_us is not None
        dur = _ns(dur)
        start = _ns(start_us if relative else ts)
        c[f"{t}_start"] = start
        c[f"{t}_end"] = _end(start, dur, names=lambda i, local=local: strings[local[i]])
        times[t] = (ts, start, relative)
    c["mem_place"] = _global_ids(raw.pop("mem_place"), strings, names)
    c["mem_ts_ns"] = _ns(raw.pop("mem_ts"))
    pid, n = raw.pop("pid"), raw.pop("n")
    c.update(raw)  # the other columns as given

    # Relative times are rebased by the origin later only where a table lacked them.
    for t in _TIMED:
        c[f"{t}_abs"] = np.full(len(c[f"{t}_start"]), not times[t][2])
    c["origin"] = _origin(((lambda ts=ts: ts, start, rel) for ts, start, rel in times.values()))
    starts = [start for _, start, rel in times.values() if not rel and len(start)]
    c["abs_min"] = min(int(x.min()) for x in starts) if starts else None
    c["pid"] = pid
    c["n"] = n
    return c


def _global_ids(local: np.ndarray, strings: List[str], names: "_Interner") -> np.ndarray:
    """Chunk string ids → the file's name ids, numbering new names in their order of first
    appearance in `local` (what _Interner.many does on the strings themselves)."""
    if not len(local):
        return np.zeros(0, dtype=np.int32)
    uniq, first = np.unique(local, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    lut = np.zeros(len(strings), dtype=np.int32)
    lut[order] = names.many([strings[i] for i in order.tolist()])
    return lut[local]
