"""The run-level index of a span's ranks: what ``timeline_search`` and ``timeline_range`` answer from
without opening every rank's timeline index on every request.

Built once per set of rank indexes (its key: the ranks' trace digests) from the per-rank indexes, and
stored next to them (``timeline-v3/runs/<key>.tlr``, the index file layout of storage.py, memory-mapped).
It holds, for every rank:

- the names (one table for the run: ranks running the same program share their names) and, per name,
  its number of events and its first ``K`` events in time (start, end, position in the rank's index;
  ``K`` larger for fewer ranks);
- its lanes (first position, track, depth), so that a position gives its track and row;
- its extent (first start, last end) and, per (track, name, type), the count and total time of its
  slices: a range that holds a rank whole, or misses it, is answered from these.

A search takes its matches from the stored first events; only a rank some of whose matches may fall
among the answer's first ``limit`` beyond what is stored is opened (``open_rank``). A range opens only
the ranks it cuts. Both give what the per-rank path (levels.search, levels.range_sums over every
index) gives: tests/integration/test_timeline_runindex.py compares them.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np

from .levels import MATCH_CAP, range_sums, row_of, search, type_name
from .storage import CorruptIndex, TimelineIndex, map_arrays, open_mapped, write_index

RUN_INDEX_VERSION = "run-1"
_TYPE_BITS = 12  # event type codes < 4,096 (the index stores int16)
_NAME_BITS = 32


def first_k(ranks: int) -> int:
    """Events kept per (rank, name): enough that a search of every rank for the default MATCH_CAP
    matches rarely needs a rank opened (each rank gives about MATCH_CAP / ranks of them)."""
    return int(max(4, min(64, -(-2 * MATCH_CAP // max(1, ranks)))))


def run_key(digests: Sequence[str]) -> str:
    text = "\0".join([RUN_INDEX_VERSION] + list(digests))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


class _Builder:
    """Collects the ranks' parts, then the arrays of the run index."""

    def __init__(self, k: int):
        self.k = k
        self.gid: Dict[str, int] = {}
        self.names: List[Optional[str]] = []  # by global id (None until a rank names it)
        self.parts: List[dict] = []

    def add(self, idx: TimelineIndex) -> None:
        a = idx.a
        local = np.fromiter(
            (self.gid.setdefault(n, len(self.gid)) for n in idx.names), dtype=np.int64, count=len(idx.names)
        )
        if len(self.names) < len(self.gid):
            self.names.extend([None] * (len(self.gid) - len(self.names)))
            for name, g in zip(idx.names, local.tolist()):
                if self.names[g] is None:
                    self.names[g] = name
        n = len(a["ev_start"])
        start, end = a["ev_start"].astype(np.int64), a["ev_end"].astype(np.int64)
        g = local[a["ev_name"].astype(np.int64)] if n else np.zeros(0, np.int64)
        ids = np.arange(n, dtype=np.int64)
        order = np.lexsort((ids, start, g))
        gs = g[order]
        brk = np.flatnonzero(np.diff(gs)) + 1 if n else np.zeros(0, np.int64)
        first = np.concatenate([[0], brk]).astype(np.int64) if n else np.zeros(0, np.int64)
        counts = np.diff(np.append(first, n)).astype(np.int64)
        within = ids - np.repeat(first, counts) if n else ids
        kept = order[within < self.k]
        lane_ptr = a["lane_ptr"].astype(np.int64)
        lane_of = np.repeat(np.arange(len(lane_ptr) - 1, dtype=np.int64), np.diff(lane_ptr))
        track = a["lane_track"].astype(np.int64)[lane_of]
        key = (track << (_NAME_BITS + _TYPE_BITS)) | (g << _TYPE_BITS) | (a["ev_type"].astype(np.int64) & 0xFFF)
        uniq, inv = np.unique(key, return_inverse=True)
        self.parts.append(
            {
                "origin": idx.origin,
                "first": int(start.min()) if n else 0,
                "last": int(end.max()) if n else 0,
                "e_name": gs[first],
                "e_count": counts,
                "e_len": np.minimum(counts, self.k),
                "l_start": start[kept],
                "l_end": end[kept],
                "l_id": kept,
                "l_name": gs[within < self.k],
                "lane_first": lane_ptr[:-1],
                "lane_track": a["lane_track"].astype(np.int32),
                "lane_depth": a["lane_depth"].astype(np.int32),
                "s_track": (uniq >> (_NAME_BITS + _TYPE_BITS)).astype(np.int32),
                "s_name": ((uniq >> _TYPE_BITS) & ((1 << _NAME_BITS) - 1)).astype(np.int64),
                "s_type": (uniq & 0xFFF).astype(np.int16),
                "s_count": np.bincount(inv, minlength=len(uniq)).astype(np.int64),
                "s_total": np.bincount(inv, weights=(end - start).astype(np.float64), minlength=len(uniq)).astype(
                    np.int64
                ),
            }
        )

    def arrays(self) -> Dict[str, np.ndarray]:
        parts = self.parts

        def cat(key, dtype):
            return np.concatenate([p[key] for p in parts]).astype(dtype) if parts else np.zeros(0, dtype)

        def ptr(key):
            out = np.zeros(len(parts) + 1, np.int64)
            np.cumsum([len(p[key]) for p in parts], out=out[1:])
            return out

        e_len = cat("e_len", np.int64)
        e_list = np.zeros(len(e_len) + 1, np.int64)
        np.cumsum(e_len, out=e_list[1:])
        names = cast(List[str], self.names)  # (every global id named by the rank that brought it)
        name_bytes = [n.encode("utf-8", "surrogatepass") for n in names]
        names_ptr = np.zeros(len(name_bytes) + 1, np.int64)
        np.cumsum([len(b) for b in name_bytes], out=names_ptr[1:])
        return {
            "names_blob": np.frombuffer(b"".join(name_bytes), dtype=np.uint8),
            "names_ptr": names_ptr,
            "r_origin": np.array([p["origin"] for p in parts], np.int64),
            "r_first": np.array([p["first"] for p in parts], np.int64),
            "r_last": np.array([p["last"] for p in parts], np.int64),
            "e_ptr": ptr("e_name"),
            "e_name": cat("e_name", np.int32),
            "e_count": cat("e_count", np.int64),
            "e_list": e_list,
            "l_start": cat("l_start", np.int64),
            "l_end": cat("l_end", np.int64),
            "l_id": cat("l_id", np.int64),
            "l_name": cat("l_name", np.int32),
            "lane_ptr": ptr("lane_first"),
            "lane_first": cat("lane_first", np.int64),
            "lane_track": cat("lane_track", np.int32),
            "lane_depth": cat("lane_depth", np.int32),
            "s_ptr": ptr("s_track"),
            "s_track": cat("s_track", np.int32),
            "s_name": cat("s_name", np.int32),
            "s_type": cat("s_type", np.int16),
            "s_count": cat("s_count", np.int64),
            "s_total": cat("s_total", np.int64),
        }


def build_run_index(target: str, digests: Sequence[str], indexes, k: Optional[int] = None) -> int:
    """Write the run index of the ranks whose trace digests are ``digests`` (in that order), from
    ``indexes`` (an iterable of their TimelineIndex, in the same order, each used once and let go);
    the file's size."""
    k = first_k(len(digests)) if k is None else k
    b = _Builder(k)
    for idx in indexes:
        b.add(idx)
    if len(b.parts) != len(digests):
        raise ValueError(f"{len(b.parts)} rank indexes for {len(digests)} ranks")
    return write_index(target, {"version": RUN_INDEX_VERSION, "k": k, "traces": list(digests)}, b.arrays())


class RunIndex:
    """An open run index (memory-mapped; checksummed once per file version, as a rank's index)."""

    def __init__(self, path: str):
        self.path = path
        self._mm, st = open_mapped(path)
        try:
            self.header, self.a = map_arrays(self._mm, st, version=RUN_INDEX_VERSION)
            a = self.a
            self.traces: List[str] = list(self.header["traces"])
            self.k = int(self.header["k"])
            blob, ptr = a["names_blob"].tobytes(), a["names_ptr"].tolist()
            self.names = [blob[i:j].decode("utf-8", "surrogatepass") for i, j in zip(ptr, ptr[1:])]
            r = len(self.traces)
            for key in ("r_origin", "r_first", "r_last"):
                if len(a[key]) != r:
                    raise CorruptIndex(f"{key}: {len(a[key])} ranks, {r} expected")
            for key, data in (("e_ptr", "e_name"), ("lane_ptr", "lane_first"), ("s_ptr", "s_track")):
                p = a[key]
                if len(p) != r + 1 or int(p[0]) != 0 or int(p[-1]) != len(a[data]) or np.any(np.diff(p) < 0):
                    raise CorruptIndex(f"{key} does not fit {data}")
            e = len(a["e_name"])
            n_kept = len(a["l_start"])
            if (
                len(a["e_list"]) != e + 1
                or int(a["e_list"][-1]) != n_kept
                or len(a["e_count"]) != e
                or np.any(np.diff(a["e_list"]) < 0)
                or not (len(a["l_end"]) == len(a["l_id"]) == len(a["l_name"]) == n_kept)
            ):
                raise CorruptIndex("e_list does not fit the events kept")
            for key in ("e_name", "s_name", "l_name"):
                if len(a[key]) and (int(a[key].min()) < 0 or int(a[key].max()) >= len(self.names)):
                    raise CorruptIndex("name ids beyond the name table")
        except CorruptIndex:
            self.close()
            raise
        except (ValueError, KeyError, TypeError, IndexError, OverflowError) as err:
            self.close()
            raise CorruptIndex(f"malformed run index: {type(err).__name__}: {err}") from None
        self.slot = {d: i for i, d in enumerate(self.traces)}
        self._lower: Optional[List[str]] = None
        self._entry_rank = np.repeat(np.arange(r, dtype=np.int64), np.diff(a["e_ptr"]))
        self.nbytes = len(self._mm)

    def name_mask(self, query: str, exact: bool) -> np.ndarray:
        if exact:
            return np.array([s == query for s in self.names], dtype=bool)
        if self._lower is None:
            self._lower = [s.lower() for s in self.names]
        q = query.lower()
        return np.array([q in s for s in self._lower], dtype=bool)

    def row_of(self, slot: int, ev: int) -> Tuple[int, int]:
        """(track, depth) of position ``ev`` in rank ``slot``'s index."""
        a = self.a
        p0, p1 = int(a["lane_ptr"][slot]), int(a["lane_ptr"][slot + 1])
        lane = p0 + int(np.searchsorted(a["lane_first"][p0:p1], ev, "right")) - 1
        return int(a["lane_track"][lane]), int(a["lane_depth"][lane])

    def close(self) -> None:
        self.a = {}
        try:
            self._mm.close()
        except BufferError:
            pass


def _origins(ri: RunIndex, files: list, clock: Optional[Dict[str, int]]) -> Tuple[np.ndarray, np.ndarray]:
    slots = np.array([ri.slot[f.key.digest()] for f in files], np.int64)
    return ri.a["r_origin"][slots] - np.array([(clock or {}).get(f.worker, 0) for f in files], np.int64), slots


def search_message(
    ri: RunIndex,
    files: list,
    query: str,
    exact: bool,
    base: Optional[int],
    limit: int = MATCH_CAP,
    clock: Optional[Dict[str, int]] = None,
    open_rank: Optional[Callable] = None,
):
    """messages.search_message over ``files`` (each in ``ri``), from the run index; ``open_rank(file)``
    gives a rank's TimelineIndex (or None) when its stored first matches may not be enough."""
    from ..v1 import timeline_pb2 as tpb

    a = ri.a
    origins, slots = _origins(ri, files, clock)
    if base is None:
        base = int(origins.min()) if len(files) else 0
    msg = tpb.TimelineSearch(query=query, base_unix_ns=base)
    if not len(files):
        return msg
    mask = ri.name_mask(query, exact)
    pos_of_slot = np.full(len(ri.traces), -1, np.int64)
    pos_of_slot[slots] = np.arange(len(files))
    epos = pos_of_slot[ri._entry_rank]
    sel = np.flatnonzero(mask[a["e_name"]] & (epos >= 0))
    msg.total = int(a["e_count"][sel].sum())
    if not len(sel):
        return msg
    off = origins - base  # per request position
    l0, l1 = a["e_list"][sel], a["e_list"][sel + 1]
    lens = l1 - l0
    el = _ranges(l0, l1)
    el_pos = np.repeat(epos[sel], lens)
    c_start = a["l_start"][el] + off[el_pos]
    c_end = a["l_end"][el] + off[el_pos]
    c_id = a["l_id"][el]
    c_name = a["l_name"][el]
    c_pos = el_pos
    # per position, the last stored key of each of its truncated names: beyond it, matches unseen
    cut = lens < a["e_count"][sel]
    bound: Dict[int, Tuple[int, int]] = {}
    if cut.any():
        last = (l1 - 1)[cut]
        bpos = epos[sel][cut]
        for p, s, i in zip(bpos.tolist(), (a["l_start"][last] + off[bpos]).tolist(), a["l_id"][last].tolist()):
            if p not in bound or (s, i) < bound[p]:
                bound[p] = (s, i)
    order = np.lexsort((c_id, c_pos, c_start))
    if len(order) >= limit:
        j = order[limit - 1]
        cutoff = (int(c_start[j]), int(c_pos[j]), int(c_id[j]))
    else:
        cutoff = None  # fewer than limit known: every truncated rank may add some
    opened: Dict[int, TimelineIndex] = {}
    for p, (s, i) in sorted(bound.items()):
        if cutoff is not None and (s, p, i) >= cutoff:
            continue
        idx = open_rank(files[p]) if open_rank is not None else None
        if idx is not None:
            opened[p] = idx
    if opened:
        keep = ~np.isin(c_pos, np.array(list(opened), np.int64))
        starts, ends, ids, poss = [c_start[keep]], [c_end[keep]], [c_id[keep]], [c_pos[keep]]
        gnames = [c_name[keep]]
        for p, idx in opened.items():
            _, hit = search(idx, query, exact, limit)
            starts.append(idx.a["ev_start"][hit].astype(np.int64) + off[p])
            ends.append(idx.a["ev_end"][hit].astype(np.int64) + off[p])
            ids.append(hit.astype(np.int64))
            poss.append(np.full(len(hit), p, np.int64))
            gnames.append(np.full(len(hit), -1, np.int64))  # named from the opened index
        c_start, c_end, c_id, c_pos, c_name = (np.concatenate(x) for x in (starts, ends, ids, poss, gnames))
        order = np.lexsort((c_id, c_pos, c_start))
    for j in order[:limit].tolist():
        p, ev = int(c_pos[j]), int(c_id[j])
        idx = opened.get(p)
        if idx is not None:
            _, tr, dp = row_of(idx, ev)
            name = idx.names[int(idx.a["ev_name"][ev])]
        else:
            tr, dp = ri.row_of(int(slots[p]), ev)
            name = ri.names[int(c_name[j])]
        msg.matches.add(
            worker=files[p].worker, id=ev, name=name, start_ns=int(c_start[j]), end_ns=int(c_end[j]), track=tr, depth=dp
        )
    if msg.matches:
        msg.first_start_ns = msg.matches[0].start_ns
        msg.last_end_ns = max(m.end_ns for m in msg.matches)
    return msg


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The positions [lo[i], hi[i]) of every i, concatenated."""
    lens = hi - lo
    return np.repeat(lo - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(int(lens.sum()))


def _whole_sums(
    ri: RunIndex,
    names: np.ndarray,
    types: np.ndarray,
    counts: np.ndarray,
    totals: np.ndarray,
    acc: Dict[Tuple[str, str], list],
) -> None:
    """acc[(name, type)] = [count, total, total] summed over the stored sums given: by (name, type) in bins when
    their ids are dense (a sort of millions of sums at 4,096 ranks was most of a whole-run range), else sorted."""
    if not len(names):
        return
    names, types = names.astype(np.int64), types.astype(np.int64)
    span = int(types.max()) + 1
    key = names * span + types
    bins = int(key.max()) + 1
    if int(types.min()) < 0 or bins > 4 * len(key) + (1 << 20):
        key = (names << _TYPE_BITS) | types
        uniq, inv = np.unique(key, return_inverse=True)
        cnt = np.bincount(inv, weights=counts, minlength=len(uniq))
        tot = np.zeros(len(uniq), np.int64)
        np.add.at(tot, inv, totals)
        keys = [(k >> _TYPE_BITS, k & 0xFFF) for k in uniq.tolist()]
    else:
        uniq = np.flatnonzero(np.bincount(key, minlength=bins))
        cnt = np.bincount(key, weights=counts, minlength=bins)[uniq]
        all_tot = np.zeros(bins, np.int64)
        np.add.at(all_tot, key, totals)
        tot = all_tot[uniq]
        keys = [divmod(k, span) for k in uniq.tolist()]
    for (n, t), c, total in zip(keys, cnt.astype(np.int64).tolist(), tot.tolist()):
        acc[(ri.names[n], type_name(t))] = [c, total, total]


def range_message(
    ri: RunIndex,
    files: list,
    ws: int,
    we: int,
    tracks: Dict[str, Optional[List[int]]],
    base: Optional[int],
    clock: Optional[Dict[str, int]] = None,
    open_rank: Optional[Callable] = None,
):
    """messages.range_message over ``files`` (each in ``ri``): a rank the range holds whole is summed
    from the run index, one it misses is skipped, only one it cuts is opened (``open_rank``)."""
    from .messages import range_rows

    a = ri.a
    origins, slots = _origins(ri, files, clock)
    if base is None:
        base = int(origins.min()) if len(files) else 0
    asked = np.array([f.worker in tracks for f in files], bool)
    off = origins - base
    first, last = a["r_first"][slots] + off, a["r_last"][slots] + off  # each rank's extent, on the common clock
    hit = asked & ~((we < first) | (ws > last))
    whole = hit & (ws <= first) & (we >= last)
    acc: Dict[Tuple[str, str], list] = {}
    held = np.flatnonzero(whole)
    if len(held):  # every rank held whole at once: their stored sums per (track, name, type)
        sl = slots[held]
        picked = [tracks[files[p].worker] for p in held.tolist()]
        el: Any = slice(None)  # every rank of the run index, in its order: its sums as they are
        if any(t is not None for t in picked) or not np.array_equal(sl, np.arange(len(ri.traces))):
            el = _ranges(a["s_ptr"][sl], a["s_ptr"][sl + 1])
            owner = np.repeat(held, a["s_ptr"][sl + 1] - a["s_ptr"][sl])
            if any(t is not None for t in picked):  # tracks named: only theirs
                keep = np.ones(len(el), bool)
                for p, t in zip(held.tolist(), picked):
                    if t is not None:
                        mine = owner == p
                        keep[mine] = np.isin(a["s_track"][el[mine]], np.array(t, np.int64))
                el = el[keep]
        _whole_sums(ri, a["s_name"][el], a["s_type"][el], a["s_count"][el], a["s_total"][el], acc)
    for p in np.flatnonzero(hit & ~whole).tolist():  # the ranks the range cuts: their own index
        f = files[p]
        idx = open_rank(f) if open_rank is not None else None
        if idx is None:
            continue
        o = int(off[p])
        for key, v in range_sums(idx, ws - o, we - o, tracks[f.worker]).items():
            t = acc.setdefault(key, [0, 0, 0])
            for i in range(3):
                t[i] += v[i]
    return range_rows(acc, ws, we)
