"""RunParallel.matched written straight in protobuf's wire format with numpy.

Building one MatchedCollective and its members per instance through the protobuf API costs a few
microseconds each, which at thousands of ranks is most of the analysis. The wire format of these
two messages is simple (varints and length-delimited fields), so the bytes of every instance are
assembled column by column and parsed once (RunParallel.MergeFromString appends to `matched`).
Field numbers follow plugin.proto (MatchedCollective, CollectiveMember); a test compares the
result with the same messages built through the API.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

VARINT, LEN = 0, 2


def _varints(values: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(n × w bytes, n × w mask, w ≤ 10 as the largest value needs) of the varint of each value (int64: negatives as 10 bytes)."""
    v = np.asarray(values, dtype=np.int64).view(np.uint64)
    top = int(v.max()) if v.size else 0
    width = max(1, (top.bit_length() + 6) // 7)   # enough 7-bit groups for the largest value
    shifts = (np.arange(width, dtype=np.uint64) * np.uint64(7))
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


CHUNK_GROUPS = 8192   # groups encoded at a time: the temporaries stay small (and in cache)


def matched_bytes(step: np.ndarray, kind: np.ndarray, name_id: np.ndarray, names: List[str], transfer: np.ndarray,
                  last_rank: np.ndarray, ptr: np.ndarray, m_rank: np.ndarray, m_ordinal: np.ndarray,
                  m_dur: np.ndarray, m_wait: np.ndarray, m_start: np.ndarray, m_dir: np.ndarray,
                  field_number: int = 8) -> bytes:
    """The bytes of `field_number` (RunParallel.matched) repeated once per group."""
    out = []
    for a in range(0, step.size, CHUNK_GROUPS):
        b = min(step.size, a + CHUNK_GROUPS)
        lo, hi = int(ptr[a]), int(ptr[b])
        out.append(_matched_chunk(step[a:b], kind[a:b], name_id[a:b], names, transfer[a:b], last_rank[a:b],
                                  ptr[a:b + 1] - lo, m_rank[lo:hi], m_ordinal[lo:hi], m_dur[lo:hi], m_wait[lo:hi],
                                  m_start[lo:hi], m_dir[lo:hi], field_number))
    return b"".join(out)


def _matched_chunk(step, kind, name_id, names, transfer, last_rank, ptr, m_rank, m_ordinal, m_dur, m_wait, m_start,
                   m_dir, field_number) -> bytes:
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
        table[i, :len(e)] = np.frombuffer(e, dtype=np.uint8)
        tmask[i, :len(e)] = True
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
