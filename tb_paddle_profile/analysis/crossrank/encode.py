"""RunParallel.matched written straight in protobuf's wire format with numpy.

Building one MatchedCollective and its members per instance through the protobuf API costs a few
microseconds each, which at thousands of ranks is most of the analysis. The wire format of these
two messages is simple (varints and length-delimited fields), so the bytes of every instance are
assembled column by column and parsed once (RunParallel.MergeFromString appends to `matched`).
Field numbers follow plugin.proto (MatchedCollective, CollectiveMember); a test compares the
result with the same messages built through the API.
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

VARINT, LEN = 0, 2


def _varints(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(n × w bytes, n × w mask, w ≤ 10 as the largest value needs) of the varint of each value (int64: negatives as 10 bytes)."""
    v = np.asarray(values, dtype=np.int64).view(np.uint64)
    top = int(v.max()) if v.size else 0
    width = max(1, (top.bit_length() + 6) // 7)  # enough 7-bit groups for the largest value
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    groups = (v[:, None] >> shifts[None, :]) & np.uint64(0x7F)
    # number of bytes: 1 + index of the last non-zero 7-bit group
    nz = groups != 0
    last = np.where(nz.any(axis=1), width - 1 - np.argmax(nz[:, ::-1], axis=1), 0)
    idx = np.arange(width)[None, :]
    mask = idx <= last[:, None]
    cont = idx < last[:, None]
    out = (groups | np.where(cont, np.uint64(0x80), np.uint64(0))).astype(np.uint8)
    return out, mask


def _fields(cols: Sequence[Tuple[int, np.ndarray]], n: int) -> Tuple[np.ndarray, np.ndarray]:
    """Varint fields (number, values) of n rows → (bytes matrix, mask) with the tags in front."""
    mats, masks = [], []
    for number, values in cols:
        tag = np.full((n, 1), (number << 3) | VARINT, dtype=np.uint8)
        b, m = _varints(values)
        mats += [tag, b]
        masks += [np.ones((n, 1), bool), m]
    return np.hstack(mats), np.hstack(masks)


def _len_prefix(number: int, lengths: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    n = lengths.size
    tag = np.full((n, 1), (number << 3) | LEN, dtype=np.uint8)
    b, m = _varints(lengths)
    return np.hstack([tag, b]), np.hstack([np.ones((n, 1), bool), m])


def _interleave(a: np.ndarray, a_len: np.ndarray, b: np.ndarray, b_len: np.ndarray) -> np.ndarray:
    """Row i of the result = a's bytes of row i, then b's bytes of row i (both flattened by row)."""
    total = a_len + b_len
    start = np.concatenate([[0], np.cumsum(total)[:-1]]).astype(np.int64)
    out = np.empty(int(total.sum()), dtype=np.uint8)
    a_start = np.concatenate([[0], np.cumsum(a_len)[:-1]]).astype(np.int64)
    b_start = np.concatenate([[0], np.cumsum(b_len)[:-1]]).astype(np.int64)
    pa = np.repeat(start - a_start, a_len) + np.arange(a.size)
    pb_ = np.repeat(start + a_len - b_start, b_len) + np.arange(b.size)
    out[pa] = a
    out[pb_] = b
    return out


CHUNK_GROUPS = 8192  # groups encoded at a time: the temporaries stay small (and in cache)


def matched_bytes(
    step: np.ndarray,
    kind: np.ndarray,
    name_id: np.ndarray,
    names: List[str],
    transfer: np.ndarray,
    last_rank: np.ndarray,
    ptr: np.ndarray,
    m_rank: np.ndarray,
    m_ordinal: np.ndarray,
    m_dur: np.ndarray,
    m_wait: np.ndarray,
    m_start: np.ndarray,
    m_dir: np.ndarray,
    field_number: int = 8,
) -> bytes:
    """The bytes of `field_number` (RunParallel.matched) repeated once per group."""
    out = []
    for a in range(0, step.size, CHUNK_GROUPS):
        b = min(step.size, a + CHUNK_GROUPS)
        lo, hi = int(ptr[a]), int(ptr[b])
        out.append(
            _matched_chunk(
                step[a:b],
                kind[a:b],
                name_id[a:b],
                names,
                transfer[a:b],
                last_rank[a:b],
                ptr[a : b + 1] - lo,
                m_rank[lo:hi],
                m_ordinal[lo:hi],
                m_dur[lo:hi],
                m_wait[lo:hi],
                m_start[lo:hi],
                m_dir[lo:hi],
                field_number,
            )
        )
    return b"".join(out)


def _matched_chunk(
    step, kind, name_id, names, transfer, last_rank, ptr, m_rank, m_ordinal, m_dur, m_wait, m_start, m_dir, field_number
) -> bytes:
    n, m = step.size, m_rank.size
    if n == 0:
        return b""
    # members: CollectiveMember fields 1..6, each prefixed as MatchedCollective.members (6)
    mb, mm = _fields([(1, m_rank), (2, m_ordinal), (3, m_dur), (4, m_wait), (5, m_start), (6, m_dir)], m)
    m_len = mm.sum(axis=1)
    pb_, pm = _len_prefix(6, m_len)
    chunk = np.hstack([pb_, mb])[np.hstack([pm, mm])]
    chunk_len = pm.sum(axis=1) + m_len
    per_group = np.add.reduceat(chunk_len, ptr[:-1]) if m else np.zeros(n, np.int64)
    # group header: step 1, kind 2, name 3, transfer 4, last_rank 5
    hb, hm = _fields([(1, step), (2, kind)], n)
    enc = [s.encode("utf-8") for s in names]
    width = max(1, max((len(e) for e in enc), default=1))
    table = np.zeros((len(enc), width), dtype=np.uint8)
    tmask = np.zeros((len(enc), width), dtype=bool)
    for i, e in enumerate(enc):
        table[i, : len(e)] = np.frombuffer(e, dtype=np.uint8)
        tmask[i, : len(e)] = True
    nlen = np.array([len(e) for e in enc], dtype=np.int64)[name_id]
    nb, nm = _len_prefix(3, nlen)
    tb, tm = _fields([(4, transfer), (5, last_rank)], n)
    head = np.hstack([hb, nb, table[name_id], tb])
    hmask = np.hstack([hm, nm, tmask[name_id], tm])
    head_len = hmask.sum(axis=1)
    body_len = head_len + per_group
    ob, om = _len_prefix(field_number, body_len)
    head = np.hstack([ob, head])[np.hstack([om, hmask])]
    head_len = head_len + om.sum(axis=1)
    return _interleave(head, head_len, chunk, per_group).tobytes()


class MatchedTable:
    """Every matched instance of an analysis as columns (RunParallel.matched, not yet encoded).

    Per group g: step, kind, name (index into ``names``), transfer_ns, last_rank; its members are
    [ptr[g], ptr[g+1]) of the member columns rank, ordinal, duration_ns, wait_ns, start_unix_ns,
    direction. The analysis keeps this beside its RunParallel (runs.RunAnalyses stores it as bytes,
    :meth:`to_bytes`) and the matched instances are encoded only for what is asked: a page
    (:meth:`select`, :meth:`encode` of those groups) or all of them (``analyze_run``)."""

    GROUP = ("step", "kind", "name", "transfer", "last_rank")
    MEMBER = ("rank", "ordinal", "dur", "wait", "start", "dir")
    # the columns, set by __init__ (by name, from GROUP and MEMBER)
    step: np.ndarray
    kind: np.ndarray
    name: np.ndarray
    transfer: np.ndarray
    last_rank: np.ndarray
    rank: np.ndarray
    ordinal: np.ndarray
    dur: np.ndarray
    wait: np.ndarray
    start: np.ndarray
    dir: np.ndarray

    def __init__(self, names: List[str], ptr: np.ndarray, **cols: np.ndarray):
        self.names = list(names)
        self.ptr = _ints(ptr)
        for f in self.GROUP + self.MEMBER:  # as narrow as stored: the encoder widens what it encodes
            setattr(self, f, _ints(cols[f]))

    @property
    def n(self) -> int:
        return self.step.size

    @classmethod
    def empty(cls) -> "MatchedTable":
        z = np.zeros(0, np.int64)
        return cls([], np.zeros(1, np.int64), **{f: z for f in cls.GROUP + cls.MEMBER})

    @classmethod
    def from_message(cls, matched) -> "MatchedTable":
        """From MatchedCollective messages (an analysis that wrote them itself)."""
        names: dict = {}
        g: Dict[str, List[int]] = {f: [] for f in cls.GROUP}
        m: Dict[str, List[int]] = {f: [] for f in cls.MEMBER}
        sizes = []
        for mc in matched:
            for f, v in zip(
                cls.GROUP, (mc.step, mc.kind, names.setdefault(mc.name, len(names)), mc.transfer_ns, mc.last_rank)
            ):
                g[f].append(v)
            sizes.append(len(mc.members))
            for x in mc.members:
                for f, v in zip(
                    cls.MEMBER, (x.rank, x.ordinal, x.duration_ns, x.wait_ns, x.start_unix_ns, x.direction)
                ):
                    m[f].append(v)
        ptr = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        return cls(list(names), ptr, **{k: np.array(v, dtype=np.int64) for k, v in {**g, **m}.items()})

    def select(self, rank=None, step=None) -> np.ndarray:
        """Indexes of the groups of ``step`` with ``rank`` among their members (both optional), in order."""
        keep = np.ones(self.n, bool)
        if step is not None:
            keep &= self.step == int(step)
        if rank is not None and self.n:
            hits = np.concatenate([[0], np.cumsum(self.rank == int(rank))])  # members of rank, per group
            keep &= hits[self.ptr[1:]] > hits[self.ptr[:-1]]
        return np.nonzero(keep)[0]

    def encode(self, groups: Optional[np.ndarray] = None, field_number: int = 8) -> bytes:
        """The wire bytes of the groups (all when None) as `field_number` repeated MatchedCollective."""
        mem: Union[slice, np.ndarray]
        g: Union[slice, np.ndarray]
        if groups is None:
            ptr, mem = self.ptr, slice(None)
            g = slice(None)
        else:
            groups = np.asarray(groups, dtype=np.int64)
            sizes = self.ptr[groups + 1] - self.ptr[groups]
            ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
            starts = self.ptr[groups]
            mem = (
                (np.repeat(starts - ptr[:-1], sizes) + np.arange(int(ptr[-1])))
                if groups.size
                else np.zeros(0, np.int64)
            )
            g = groups
        return matched_bytes(
            self.step[g],
            self.kind[g],
            self.name[g],
            self.names,
            self.transfer[g],
            self.last_rank[g],
            ptr,
            self.rank[mem],
            self.ordinal[mem],
            self.dur[mem],
            self.wait[mem],
            self.start[mem],
            self.dir[mem],
            field_number,
        )

    def json_value(self) -> List[dict]:
        """Every instance as RunParallel.matched's proto3 JSON values (core.protojson: the same as the
        encoded messages' to_value), made from the columns."""
        from tb_paddle_profile.core.protojson import columns_value
        from tb_paddle_profile.v1 import plugin_pb2

        members = columns_value(
            plugin_pb2.CollectiveMember.DESCRIPTOR,
            {
                "rank": self.rank.tolist(),
                "ordinal": self.ordinal.tolist(),
                "duration_ns": self.dur.tolist(),
                "wait_ns": self.wait.tolist(),
                "start_unix_ns": self.start.tolist(),
                "direction": self.dir.tolist(),
            },
        )
        ptr = self.ptr.tolist()
        return columns_value(
            plugin_pb2.MatchedCollective.DESCRIPTOR,
            {
                "step": self.step.tolist(),
                "kind": self.kind.tolist(),
                "name": [self.names[i] for i in self.name.tolist()],
                "transfer_ns": self.transfer.tolist(),
                "last_rank": self.last_rank.tolist(),
                "members": [members[a:b] for a, b in zip(ptr[:-1], ptr[1:])],
            },
        )

    def to_bytes(self) -> bytes:
        """A magic line, a JSON line [[column, dtype, count], ...], then the columns' bytes (each as
        narrow as its values allow): read back without copying by from_bytes."""
        enc = [s.encode("utf-8") for s in self.names]
        arrays = {f: getattr(self, f) for f in self.GROUP + self.MEMBER}
        arrays["ptr"] = self.ptr
        arrays["name_len"] = np.array([len(e) for e in enc], dtype=np.int64)
        arrays["name_bytes"] = np.frombuffer(b"".join(enc), dtype=np.uint8)
        cols = {k: _narrow(v) for k, v in arrays.items()}
        head = json.dumps([[k, v.dtype.str, int(v.size)] for k, v in cols.items()]).encode("ascii")
        return b"".join([_TABLE_MAGIC, head, b"\n"] + [v.tobytes() for v in cols.values()])

    @staticmethod
    def is_table(data: bytes) -> bool:
        """Whether ``data`` starts as to_bytes writes."""
        return data.startswith(_TABLE_MAGIC)

    @classmethod
    def from_bytes(cls, data: bytes) -> "MatchedTable":
        if not data.startswith(_TABLE_MAGIC):
            raise ValueError("not a matched-instances table")
        nl = data.index(b"\n", len(_TABLE_MAGIC))
        cols, at = {}, nl + 1
        for name, dtype, count in json.loads(data[len(_TABLE_MAGIC) : nl]):
            dt = np.dtype(dtype)
            cols[name] = np.frombuffer(data, dtype=dt, count=count, offset=at)
            at += dt.itemsize * count
        raw = cols.pop("name_bytes").tobytes()
        ends = np.cumsum(cols.pop("name_len")).tolist()
        names = [raw[a:b].decode("utf-8") for a, b in zip([0] + ends[:-1], ends)]
        return cls(names, cols.pop("ptr"), **cols)


_TABLE_MAGIC = b"TBPPMT1\n"


def _ints(v) -> np.ndarray:
    a = np.asarray(v)
    return a if a.dtype.kind == "i" else a.astype(np.int64)


def _narrow(v: np.ndarray) -> np.ndarray:
    """The smallest of int8/16/32/64 (or uint8 for bytes) that holds every value: the stored blob stays small."""
    if v.dtype == np.uint8 or not v.size:
        return v
    lo, hi = int(v.min()), int(v.max())
    for t in (np.int8, np.int16, np.int32):
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return v.astype(t)
    return v
