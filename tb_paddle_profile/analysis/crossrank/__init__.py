"""The cross-rank analysis: all ranks of one run and span, from their digests only.

    analyze_run(inputs, run="", span="") -> RunParallel            (with every matched instance)
    build.analyze(inputs, run="", span="") -> (RunParallel, MatchedTable)   (the instances apart)

`inputs` are RankDigest messages (a Summary is converted with analysis.digest.digest_of). The
questions are answered by one module each (definitions in their docstrings and in
docs/distributed.md):

    load.py       digests → RankData, numbered by rank (file names, else Fleet's order)
    comms.py      communicators by shape (end increments that agree at every position), the clocks
                  from their members, then every instance by its order (match_run)
    shapes.py     channel shapes and the run's end noise
    clock_edges.py  clock edges from the communicators' member pairs; hosts from per-rank offsets
    p2p.py        send/recv: links, pairs, and the hosts' clock edges they give
    prior.py      the communicators a run already shows, for collectives too rare for a shape
    match.py      channels, line-ups, cuts by end time (short and host-side line-ups), residue
    clocks.py     joining clock offsets; the coarse estimate for line-ups without a shape
    waits.py      transfer and wait per member; communicators
    topology.py   pipelines, process groups, DP/PP/MP coordinates
    labels.py     the one label of a rank
    verdict.py    each rank against its role peers: anomalies, cause, cost to the job
    findings.py   straggler, absorbed stall, stage imbalance, structural waits, evidence
    pipeline.py   bubbles per rank and stage
    advice.py     rules as data
    encode.py     the matched instances as columns (MatchedTable), encoded in protobuf's wire format
                  for a page or for all of them
    build.py      the RunParallel message
"""

from __future__ import annotations

from .build import analyze_run  # noqa: F401
from .thresholds import *  # noqa: F401,F403
