"""The data the questions of the cross-rank analysis share (the contract between its modules).

    digests ──load_ranks──▶ [RankData] ──clocks──▶ offsets ──match──▶ [Group] ──topology──▶ Topology
                                                                         │
                                       waits ◀───────────────────────────┘──▶ verdict, pipeline, findings, advice

* ``RankData``: one rank, loaded from its ``RankDigest`` (instance columns as numpy arrays).
* ``Group``: one matched collective instance (or send/recv pair) with its exact members. The
  analysis keeps all groups as columns instead (``match.Flat``: per group its step and kind, CSR
  offsets into the members' rank index and instance index columns, members by rank index), so
  that nothing is done per group in Python; ``Flat.group(i)`` gives one as a ``Group``.
* ``MatchResult``: every group, the clock offsets that were applied, coverage, notes (the fields
  the modules exchange are returned directly by ``steps._match_with_clocks``).
* ``Topology``: process groups and each rank's coordinate.

Times are ns. ``start``/``end`` are absolute (origin_unix_ns + relative) **before** any clock
correction; ``RankData.offset_ns`` is the host clock offset found by ``clocks``, and the
corrected times are ``start - offset_ns`` / ``end - offset_ns`` (``RankData.cstart``/``cend``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np

from ...v1 import summary_pb2 as pb

# Said before a limit of the traces' evidence (collectives the replay could not match), in the what-ifs' notes
# and the findings: a caveat to keep in mind, not an error of the analysis.
CAVEAT = "Caveat of the evidence: "


@dataclass
class RankData:
    index: int  # position in the analysis' rank list (sorted by rank)
    rank: int  # the rank number (from the file name, else inferred)
    rank_inferred: bool
    worker: str
    file_name: str
    hostname: str
    pid: int
    device_id: int
    origin_unix_ns: int
    digest: pb.RankDigest
    steps: Dict[int, pb.ParallelStep]
    # one entry per collective instance (ParallelView.collectives), in the trace's order
    kind: np.ndarray
    name: np.ndarray  # index into names
    op: np.ndarray  # index into names
    step: np.ndarray
    ordinal: np.ndarray
    start: np.ndarray  # absolute, uncorrected
    end: np.ndarray  # absolute, uncorrected
    direction: np.ndarray
    nbytes: np.ndarray
    names: List[str]
    stream: Optional[np.ndarray] = None  # device stream per instance (-1: host instance)
    host: int = 0  # index of its host in MatchResult.clocks order (one clock per host)
    offset_ns: int = 0  # this rank's (host's) clock offset, subtracted from its times
    # filled by the waits: per instance
    wait: Optional[np.ndarray] = None
    transfer: Optional[np.ndarray] = None
    group: Optional[np.ndarray] = None  # index of its Group in MatchResult.groups, -1 unmatched

    @property
    def cstart(self) -> np.ndarray:
        return self.start - self.offset_ns

    @property
    def cend(self) -> np.ndarray:
        return self.end - self.offset_ns


@dataclass
class Group:
    step: int
    kind: int  # CollectiveKind
    ranks: np.ndarray  # RankData.index of each member, ascending
    insts: np.ndarray  # the member's instance index in its RankData columns
    axis: str = ""  # "mp", "dp", "pp", "pp_group", "sharding", "world", "other" (topology)
    communicator: int = -1  # index into MatchResult.communicators (the member set)


@dataclass
class MatchResult:
    groups: List[Group]
    # distinct member sets (sorted tuples of RankData.index) and how many groups each had
    communicators: List[Tuple[int, ...]] = field(default_factory=list)
    # per host: (hostname, offset_ns, spread_ns, samples, ranks (indexes), reference)
    clocks: List[Tuple[str, int, int, int, List[int], bool]] = field(default_factory=list)
    method: str = ""
    end_tolerance_ns: int = 0
    notes: List[str] = field(default_factory=list)
    # per group: index into communicators
    group_comm: Optional[np.ndarray] = None


@dataclass
class Topology:
    dp: int = 0
    pp: int = 0
    mp: int = 0
    sharding: int = 0
    # per RankData.index: coordinate, -1 unknown
    coord_dp: List[int] = field(default_factory=list)
    coord_pp: List[int] = field(default_factory=list)
    coord_mp: List[int] = field(default_factory=list)
    coord_sharding: List[int] = field(default_factory=list)
    # (axis, member indexes, instances, kinds)
    groups: List[Tuple[str, Tuple[int, ...], int, Tuple[int, ...]]] = field(default_factory=list)
    # pipelines: ordered chains of RankData.index, stage 0 first
    pipelines: List[List[int]] = field(default_factory=list)
    method: str = ""
    complete: bool = False
    matches_fleet_order: bool = False
    # share of the matched instances whose members are exactly one of the grid's groups
    fit: float = 0.0
    # rank numbers of the grid without a trace (the grid then has coordinates but is not complete)
    missing: List[int] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    def stages(self, n: int) -> List[int]:
        """Per RankData.index (n ranks): its pipeline stage, its place in its chain (stage 0 first), -1 in
        none; known from the matched send/recv alone, with or without a DP x PP x MP grid. Where a rank
        of the grid has no trace (``missing``) its pipeline is cut in two, and the stages are the grid's."""
        if self.missing and self.pp > 1 and len(self.coord_pp) == n and all(c >= 0 for c in self.coord_pp):
            return list(self.coord_pp)
        out = [-1] * n
        for chain in self.pipelines:
            for stage, x in enumerate(chain):
                out[x] = stage
        return out

    def role(self, i: int) -> Tuple[int, int]:
        """The role of rank index i: (stage, mp index); ranks of one role differ only in dp (and
        sharding) and should do the same work."""
        return (self.coord_pp[i], self.coord_mp[i])
