"""A rank's digest: what the views across ranks read of one trace (``RankDigest``).

It is projected from the rank's Summary in the job that parsed the trace, and cached beside it,
so that the cross-rank analysis and the run routes of a run with thousands of ranks read a few KB
per rank instead of whole Summaries. Nothing here is computed anew: every field is a
copy of a Summary field, except ``device_id``, the GPU most of the rank's kernels ran on (and
``flops`` keeps Summary.flops without its per-operator rows, ``comm`` of Summary.comm its axes, its
bandwidth rows with bytes and the rank's row across ranks, CommView.rank).
"""

from __future__ import annotations

from collections import Counter

from ..v1 import summary_pb2 as pb

# Bump when a field changes meaning; part of the digest's cache key.
DIGEST_SCHEMA = 8


def device_id_of(summary: pb.Summary) -> int:
    """The device id most of the rank's communication kernels carry, else its busiest GPU; -1
    for a trace without kernels."""
    ids = Counter(d for d in summary.parallel.collectives.device_id if d >= 0)
    if ids:
        return ids.most_common(1)[0][0]
    gpus = [g for g in summary.device.gpus if g.kernel_time_ns > 0]
    if gpus:
        return int(max(gpus, key=lambda g: g.kernel_time_ns).device_id)
    return -1


def digest_of(summary: pb.Summary) -> pb.RankDigest:
    d = pb.RankDigest(digest_schema=DIGEST_SCHEMA)
    d.meta.CopyFrom(summary.meta)
    del d.meta.threads[:]
    d.parallel.CopyFrom(summary.parallel)
    d.distributed.CopyFrom(summary.distributed)
    d.steps.extend(summary.model.steps)
    d.device_id = device_id_of(summary)
    d.flops.CopyFrom(summary.flops)
    del d.flops.operators[:]
    d.sequences.CopyFrom(summary.sequences)
    c = summary.comm  # what crossrank/comm_ranks.py reads: axes, bandwidth and the rank's row
    d.comm.axes.CopyFrom(c.axes)
    d.comm.bandwidth.extend(b for b in c.bandwidth if b.calls_with_bytes and b.duration_ns)  # (the rows it reads)
    if c.HasField("rank"):
        d.comm.rank.CopyFrom(c.rank)
    return d
