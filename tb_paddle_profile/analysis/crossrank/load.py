"""Digests → RankData, numbered by rank.

Ranks come from the file names (``rank3_…``) when every file tells one and no two tell the same;
otherwise from Fleet's order: hosts in natural order (gpunode2 < gpunode10), then the GPU (device
id), then the pid, then the worker and file name. Paddle's launcher numbers ranks host by host and
GPU by GPU, so that order is the rank order of a job started by ``paddle.distributed.launch``.

Every rank's instance columns are read at once, straight from the digests' wire bytes (``_packed``),
into one Pool of columns end to end; each RankData's columns are views into it, so that the other
modules gather per-member values of all ranks with one index (``Pool.at``) instead of a loop per rank.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ...core import settings
from ...v1 import summary_pb2 as pb

try:
    from ...trace import _scan
except ImportError:  # a pure-Python install: numpy reads the columns
    _scan = None  # type: ignore[assignment]  # (the module's name, None when it is not built)
from ..digest import digest_of
from . import thresholds as T
from .labels import natural_key
from .model import RankData


def as_digests(inputs: Sequence) -> List[pb.RankDigest]:
    out = []
    for x in inputs:
        out.append(x if isinstance(x, pb.RankDigest) else digest_of(x))
    return out


def _lane_ranks(digests: Sequence[pb.RankDigest]) -> Optional[List[int]]:
    """Fleet's ranks from hosts and GPUs when files are missing: paddle.distributed.launch starts the same
    number of processes on every host (rank = host x per-host + local rank, one GPU each), so a host
    with fewer traces than the others lacks some, and counting the files in order would shift every
    later rank by one (the verdict would name the wrong GPU). Each rank is its host's place (natural
    order) times the GPUs seen, plus its GPU's place among them. None without a host and a GPU for
    every file, or when two files of one host share a GPU."""
    if not digests or any(not d.meta.hostname or d.device_id < 0 for d in digests):
        return None
    if len({(d.meta.hostname, d.device_id) for d in digests}) != len(digests):
        return None
    hosts = {h: i for i, h in enumerate(sorted({d.meta.hostname for d in digests}, key=natural_key))}
    lanes = {g: i for i, g in enumerate(sorted({int(d.device_id) for d in digests}))}
    return [hosts[d.meta.hostname] * len(lanes) + lanes[int(d.device_id)] for d in digests]


def load_ranks(digests: Sequence[pb.RankDigest]) -> Tuple[List[RankData], List[str]]:
    notes: List[str] = []
    told = [d.meta.rank for d in digests]
    inferred = any(r < 0 for r in told) or len(set(told)) != len(told)
    if inferred:
        order = sorted(
            range(len(digests)),
            key=lambda i: (
                natural_key(digests[i].meta.hostname),
                digests[i].device_id,
                digests[i].meta.pid,
                natural_key(digests[i].meta.worker),
                digests[i].meta.file_name,
            ),
        )
        ranks = [0] * len(digests)
        for r, i in enumerate(order):
            ranks[i] = r
        notes.append(
            "The file names do not tell every rank (or tell one twice): ranks are numbered in Fleet's "
            "order, hosts in natural order, then the GPU (device id), then the pid."
        )
        by_lane = _lane_ranks(digests)
        # a few traces missing, not hosts on GPUs of their own (then the count of files stands)
        if by_lane is not None and by_lane != ranks and len(digests) >= T.WORLD_MIN_PRESENT * (max(by_lane) + 1):
            ranks = by_lane
            present = set(ranks)
            gone = [r for r in range(max(ranks) + 1) if r not in present]
            notes.append(
                f"No trace of rank(s) {', '.join(map(str, gone[:16]))}{', …' if len(gone) > 16 else ''}: "
                "each host runs as many ranks as the largest, one per GPU, so the ranks are numbered "
                "host by host, the GPU's place among the GPUs seen, and the missing ones left out."
            )
    else:
        ranks = told
    hosts = sorted({d.meta.hostname for d in digests}, key=natural_key)
    host_index = {h: i for i, h in enumerate(hosts)}
    # every rank's instance columns, concatenated in rank order: each RankData's columns are views
    # into them (match.pool), so that per-member values of all ranks are gathered at once
    cols = [d.parallel.collectives for d in digests]
    order = sorted(range(len(digests)), key=lambda i: ranks[i])
    sizes = np.array([len(cols[i].start_ns) for i in order], dtype=np.int64)
    base = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    total = int(base[-1])

    packed = _packed([cols[i] for i in order])

    def column(field: str, default: int, required: bool = False) -> np.ndarray:
        got = packed.get(field) if packed is not None else None
        if got is not None:
            values, counts = got
            whole = counts == sizes
            if whole.all():
                return values
            # a rank without this column (or with another length): its default
            out = np.full(total, default, dtype=np.int64)
            vb = np.concatenate([[0], np.cumsum(counts)])
            for j in np.nonzero(whole | (required & (counts > 0)))[0].tolist():
                out[base[j] : base[j + 1]] = values[vb[j] : vb[j + 1]]
            return out
        out = np.full(total, default, dtype=np.int64)
        for j, i in enumerate(order):
            v = getattr(cols[i], field)
            if len(v) == sizes[j] or (required and len(v)):
                out[base[j] : base[j + 1]] = v
        return out

    origin = np.repeat(np.array([digests[i].meta.origin_unix_ns for i in order], dtype=np.int64), sizes)
    start = column("start_ns", 0, True) + origin
    end = start + column("duration_ns", 0, True)
    kind, name, step, ordinal = (column(f, 0, True) for f in ("kind", "name", "step", "ordinal"))
    op, stream, direction, nbytes = column("op", 0), column("stream", -1), column("direction", 0), column("bytes", 0)
    wait, transfer, group = np.zeros(total, np.int64), np.zeros(total, np.int64), np.full(total, -1, np.int64)
    out = RankList()
    for j, i in enumerate(order):
        d, r = digests[i], ranks[i]
        a, b = int(base[j]), int(base[j + 1])
        out.append(
            RankData(
                index=j,
                rank=int(r),
                rank_inferred=inferred,
                worker=d.meta.worker,
                file_name=d.meta.file_name,
                hostname=d.meta.hostname,
                pid=int(d.meta.pid),
                device_id=int(d.device_id),
                origin_unix_ns=d.meta.origin_unix_ns,
                digest=d,
                steps={st.step: st for st in d.parallel.steps},
                kind=kind[a:b],
                name=name[a:b],
                op=op[a:b],
                step=step[a:b],
                ordinal=ordinal[a:b],
                start=start[a:b],
                end=end[a:b],
                direction=direction[a:b],
                nbytes=nbytes[a:b],
                names=list(d.parallel.names) or [""],
                stream=stream[a:b],
                host=host_index[d.meta.hostname],
                wait=wait[a:b],
                transfer=transfer[a:b],
                group=group[a:b],
            )
        )
    out.pool = Pool(
        base,
        kind,
        name,
        op,
        step,
        ordinal,
        start,
        end,
        direction,
        stream,
        wait,
        transfer,
        group,
        np.array([r.host for r in out], dtype=np.int64),
    )
    return out, notes


# CollectiveInstances' packed fields: number -> (name, zigzag-encoded); all are varints
_FIELDS = {
    1: ("kind", False),
    2: ("name", False),
    3: ("op", False),
    4: ("step", True),
    5: ("ordinal", False),
    6: ("start_ns", False),
    7: ("duration_ns", False),
    8: ("device_id", True),
    9: ("stream", True),
    10: ("bytes", False),
    11: ("direction", False),
}


def _packed(msgs: Sequence[pb.CollectiveInstances]):
    """CollectiveInstances' columns (:func:`packed_columns` with _FIELDS)."""
    return packed_columns(msgs, _FIELDS)


def packed_columns(msgs: Sequence, fields: Dict[int, Tuple[str, bool]]):
    """{field name: (the values of every message end to end, int64; count per message)} read from
    the messages' wire bytes with numpy (converting protobuf's repeated fields value by value costs
    ~0.1 µs each, most of loading at thousands of ranks). ``fields``: field number -> (name,
    zigzag-encoded), every one a packed varint field; None when the bytes hold anything else (then
    the caller reads the fields through the protobuf API)."""
    bufs = [m.SerializeToString() for m in msgs]
    lens = np.fromiter((len(b) for b in bufs), dtype=np.int64, count=len(bufs))
    native = native_packed()
    if native is not None and max(fields) < 64:
        got = native(
            b"".join(bufs),
            lens,
            sum(1 << f for f in fields),
            sum(1 << f for f, (_, zigzag) in fields.items() if zigzag),
        )
        if got is None:
            return None
        return {
            name: (np.frombuffer(got[f][0], dtype=np.int64), np.frombuffer(got[f][1], dtype=np.int64))
            for f, (name, _) in fields.items()
        }
    msg_end = np.cumsum(lens)
    pos = msg_end - lens
    data = np.frombuffer(b"".join(bufs) + bytes(16), dtype=np.uint8)  # padded: varints read ahead
    nf = max(fields)
    known = np.zeros(nf + 1, dtype=bool)
    known[list(fields)] = True
    seg_start = np.zeros((nf + 1, len(bufs)), dtype=np.int64)
    seg_end = np.zeros((nf + 1, len(bufs)), dtype=np.int64)
    # the messages' top-level fields, one field of every message at a time (at most one per number)
    for _ in range(len(fields) + 1):
        live = np.nonzero(pos < msg_end)[0]
        if not live.size:
            break
        p = pos[live]
        tag, tw = _length_varints(data, p)
        if tw is None:
            return None
        field = tag >> 3
        if ((tag & 7) != 2).any() or (field < 1).any() or (field > nf).any() or not known[field].all():
            return None
        n, width = _length_varints(data, p + tw)
        if width is None or (seg_end[field, live] > 0).any():
            return None
        a = p + tw + width
        seg_start[field, live] = a
        seg_end[field, live] = a + n
        pos[live] = a + n
    if (pos != msg_end).any():
        return None
    data = data[:-16]
    # every field is a packed varint one: the whole buffer is a sequence of varints (tags, lengths,
    # values); decode them all at once, then gather each field's values message by message
    value, start = _varints(data)
    if value is None:
        return None
    lo = np.searchsorted(start, seg_start[1:])  # per field and message: its values [lo, hi)
    hi = np.searchsorted(start, seg_end[1:])
    out = {}
    for f, (name, zigzag) in fields.items():
        size = hi[f - 1] - lo[f - 1]
        shift = lo[f - 1] - (np.cumsum(size) - size)
        v = value[np.arange(int(size.sum()), dtype=np.int64) + np.repeat(shift, size)]
        if zigzag:
            v = (v >> np.uint64(1)) ^ (np.uint64(0) - (v & np.uint64(1)))
        out[name] = (v.view(np.int64), hi[f - 1] - lo[f - 1])
    return out


def native_packed():
    """The compiled scanner's packed-varint reader (trace/_scan.c ``packed``), or None when it is not
    built or switched off (TB_PADDLE_PROFILE_NATIVE=0); then numpy reads the same columns."""
    if settings.text(settings.NATIVE, "1") == "0":
        return None
    return getattr(_scan, "packed", None)


def _varints(data: np.ndarray):
    """(values as uint64, start offsets) of the varints that make up ``data``; (None, None) when it
    does not end with a whole one or one is longer than 10 bytes."""
    if not data.size:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    stop = data < 0x80
    if not stop[-1]:
        return None, None
    ends = np.flatnonzero(stop)
    start = np.empty_like(ends)
    start[0] = 0
    start[1:] = ends[:-1] + 1
    width = ends - start + 1
    if int(width.max()) > 10:
        return None, None
    value = (data[start] & 0x7F).astype(np.uint64)
    sel = np.flatnonzero(width > 1)  # the longer ones, fewer at each byte
    at, w = start[sel], width[sel]
    for k in range(1, int(width.max())):
        keep = w > k
        sel, at, w = sel[keep], at[keep], w[keep]
        value[sel] |= (data[at + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
    return value, start


def _length_varints(data: np.ndarray, at: np.ndarray):
    """(values, widths) of the varints (at most 5 bytes: lengths) starting at each position; widths
    None when one is longer."""
    b = data[at[:, None] + np.arange(5)[None, :]].astype(np.int64)
    stop = b < 0x80
    if not stop.any(axis=1).all():
        return None, None
    width = np.argmax(stop, axis=1) + 1
    keep = np.arange(5)[None, :] < width[:, None]
    value = ((b & 0x7F) << (7 * np.arange(5))[None, :]) * keep
    return value.sum(axis=1), width


class Pool:
    """All ranks' instance columns end to end (rank index order): rank i's instances are
    [base[i], base[i+1]); each RankData's columns are views into these."""

    def __init__(self, base, kind, name, op, step, ordinal, start, end, direction, stream, wait, transfer, group, host):
        self.base, self.kind, self.name, self.op, self.step, self.ordinal = base, kind, name, op, step, ordinal
        self.start, self.end, self.direction, self.stream = start, end, direction, stream
        self.wait, self.transfer, self.group, self.host = wait, transfer, group, host
        self.sizes = np.diff(base)
        self.rank_of = np.repeat(np.arange(self.sizes.size, dtype=np.int64), self.sizes)

    def at(self, rows: np.ndarray, inst: np.ndarray) -> np.ndarray:
        """Positions in the pool of (rank index, instance index) pairs."""
        return self.base[rows] + inst


class RankList(list):
    """The ranks of one analysis (a list of RankData by index) with their Pool."""

    pool: Optional[Pool] = None


def pool_of(ranks: Sequence[RankData]) -> Pool:
    """The Pool of ``ranks`` (load_ranks makes one; other lists of RankData get one here, their
    columns replaced by views of it, the same values)."""
    p = getattr(ranks, "pool", None)
    if p is not None:
        return p
    sizes = [r.kind.size for r in ranks]
    base = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def cat(f, default):
        parts = [getattr(r, f) if getattr(r, f) is not None else np.full(r.kind.size, default, np.int64) for r in ranks]
        return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64)

    fields = (
        "kind",
        "name",
        "op",
        "step",
        "ordinal",
        "start",
        "end",
        "direction",
        "stream",
        "wait",
        "transfer",
        "group",
    )
    defaults = (0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, -1)
    arrays = [cat(f, dv) for f, dv in zip(fields, defaults)]
    for i, r in enumerate(ranks):
        a, b = int(base[i]), int(base[i + 1])
        for f, arr in zip(fields, arrays):
            setattr(r, f, arr[a:b])
    kind, name, op, step, ordinal, start, end, direction, stream, wait, transfer, group = arrays
    p = Pool(
        base,
        kind,
        name,
        op,
        step,
        ordinal,
        start,
        end,
        direction,
        stream,
        wait,
        transfer,
        group,
        np.array([r.host for r in ranks], dtype=np.int64),
    )
    if isinstance(ranks, RankList):
        ranks.pool = p
    return p
