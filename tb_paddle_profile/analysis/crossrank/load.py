"""Digests → RankData, numbered by rank.

Ranks come from the file names (``rank3_…``) when every file tells one and no two tell the same;
otherwise from Fleet's order: hosts in natural order (gpunode2 < gpunode10), then the GPU (device
id), then the pid, then the worker and file name. Paddle's launcher numbers ranks host by host and
GPU by GPU, so that order is the rank order of a job started by ``paddle.distributed.launch``.
"""

from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

from ...v1 import summary_pb2 as pb
from ..digest import digest_of
from .labels import natural_key
from .model import RankData


def as_digests(inputs: Sequence) -> List[pb.RankDigest]:
    out = []
    for x in inputs:
        out.append(x if isinstance(x, pb.RankDigest) else digest_of(x))
    return out


def load_ranks(digests: Sequence[pb.RankDigest]) -> Tuple[List[RankData], List[str]]:
    notes: List[str] = []
    told = [d.meta.rank for d in digests]
    inferred = any(r < 0 for r in told) or len(set(told)) != len(told)
    if inferred:
        order = sorted(range(len(digests)), key=lambda i: (
            natural_key(digests[i].meta.hostname), digests[i].device_id, digests[i].meta.pid,
            natural_key(digests[i].meta.worker), digests[i].meta.file_name))
        ranks = [0] * len(digests)
        for r, i in enumerate(order):
            ranks[i] = r
        notes.append("The file names do not tell every rank (or tell one twice): ranks are numbered in Fleet's "
                     "order, hosts in natural order, then the GPU (device id), then the pid.")
    else:
        ranks = told
    hosts = sorted({d.meta.hostname for d in digests}, key=natural_key)
    host_index = {h: i for i, h in enumerate(hosts)}
    out: List[RankData] = []
    for d, r in zip(digests, ranks):
        c = d.parallel.collectives
        origin = d.meta.origin_unix_ns
        start = np.asarray(c.start_ns, dtype=np.int64) + origin
        end = start + np.asarray(c.duration_ns, dtype=np.int64)
        n = start.size
        stream = np.asarray(c.stream, dtype=np.int64) if len(c.stream) == n else np.full(n, -1, np.int64)
        out.append(RankData(
            index=0, rank=int(r), rank_inferred=inferred, worker=d.meta.worker, file_name=d.meta.file_name,
            hostname=d.meta.hostname, pid=int(d.meta.pid), device_id=int(d.device_id), origin_unix_ns=origin,
            digest=d, steps={st.step: st for st in d.parallel.steps},
            kind=np.asarray(c.kind, dtype=np.int64), name=np.asarray(c.name, dtype=np.int64),
            op=np.asarray(c.op, dtype=np.int64) if len(c.op) == n else np.zeros(n, np.int64),
            step=np.asarray(c.step, dtype=np.int64), ordinal=np.asarray(c.ordinal, dtype=np.int64),
            start=start, end=end,
            direction=np.asarray(c.direction, dtype=np.int64) if len(c.direction) == n else np.zeros(n, np.int64),
            nbytes=np.asarray(c.bytes, dtype=np.int64) if len(c.bytes) == n else np.zeros(n, np.int64),
            names=list(d.parallel.names) or [""], stream=stream, host=host_index[d.meta.hostname]))
    out.sort(key=lambda r: r.rank)
    for i, r in enumerate(out):
        r.index = i
        r.wait = np.zeros(r.kind.size, dtype=np.int64)
        r.transfer = np.zeros(r.kind.size, dtype=np.int64)
        r.group = np.full(r.kind.size, -1, dtype=np.int64)
    return out, notes
