"""What one simulated job is: its layout, model, timing model, names, clocks and planted anomalies.

Everything random is drawn from ``seed`` in a fixed order that does not depend on the anomalies, so
the same config with an anomaly removed is the same job without it (the truth's costs rely on that).
"""

from __future__ import annotations

import dataclasses
import re
from typing import List, Optional, Tuple

P2P_MODES = ("shared", "per_peer", "per_direction")
NAME_MODES = ("default", "rank")
ANOMALY_KINDS = ("slow_gpu", "loader", "stall")


@dataclasses.dataclass(frozen=True)
class Anomaly:
    """One planted cause on one rank. slow_gpu: its compute kernels ``value`` % longer; loader: its
    data loader ``value`` ns longer each step; stall: its host thread stops ``value`` ns once a step,
    before the forward of micro-batch ``at`` (no runtime call meanwhile)."""

    kind: str
    rank: int
    value: float
    at: int = 1

    def label(self) -> str:
        if self.kind == "slow_gpu":
            return "slow_gpu rank %d +%g%%" % (self.rank, self.value)
        return "%s rank %d +%.3g ms" % (self.kind, self.rank, self.value / 1e6)


@dataclasses.dataclass(frozen=True)
class SimConfig:
    # layout (Fleet's rank order: rank = (dp * pp_degree + pp) * mp_degree + mp)
    dp: int = 2
    pp: int = 2
    mp: int = 2
    # Paddle's sharding_degree (ZeRO stage 1 in Fleet's order: data, pipe, sharding, model): a stage's
    # gradients reduce-scattered over the sharding group (then all-reduced over DP), its parameters
    # all-gathered after the optimizer
    sharding: int = 1
    hosts: Optional[int] = None  # None: ranks / 8 (at least 1)
    steps: int = 4  # recorded ProfileSteps
    warmup: int = 1  # simulated before them, not recorded
    micro_batches: int = 4
    layers: int = 8  # decoder layers, split over the stages
    kernel_set: str = "full"  # "full" (11 forward kernels a layer) or "lean" (4)
    hidden: int = 4096
    seq: int = 2048
    micro_batch_size: int = 1
    vocab: int = 50304
    dp_buckets: int = 2
    dp_overlap: bool = False  # DP buckets launched during the last backward
    p2p: str = "shared"
    mp_on_compute_stream: bool = False
    one_rank_comms: bool = False  # a degree of 1 still launches its NCCL kernels
    one_rank_axes: str = "mp,dp,ppg"  # ... on these axes
    sync_per_micro_batch: bool = False  # the host waits for the GPU after each micro-batch's backward
    backward_events: bool = True  # "Gradient Backward" around each micro-batch's backward
    # timing model
    kernel_sigma: float = 0.03  # per-kernel lognormal noise
    gpu_sigma: float = 0.01  # per-GPU speed spread (lognormal)
    launch_us: float = 6.0  # median launch latency (runtime call start -> kernel start)
    launch_sigma: float = 0.35
    op_host_us: Tuple[float, float] = (12.0, 30.0)  # host time of one operator around its launch
    nvlink_gbps: float = 180.0  # effective ring bandwidth inside a host
    net_gbps: float = 22.0  # across hosts
    event_gap_us: Tuple[float, float] = (1.6, 4.0)  # a kernel waiting for another stream starts this late
    hop_us: float = 1.5  # per ring step
    end_spread_us: float = 2.0  # members' ends differ by U(0, spread)
    loader_us: float = 400.0  # the data loader on stage-0 ranks
    # names and clocks
    names: str = "default"
    host_prefix: str = "gpunode"
    shuffle_hosts: bool = False  # host names not in Fleet's host order
    clock_skew_ms: float = 2.0  # each host's offset ~ U(-skew, +skew)
    host_offsets_ms: Optional[Tuple[float, ...]] = None
    drift_ppm: float = 0.0  # each host's clock drifts ~ U(-drift, +drift) ppm
    seed: int = 0
    anomalies: Tuple[Anomaly, ...] = ()

    # -- derived
    @property
    def world(self) -> int:
        return self.dp * self.sharding * self.pp * self.mp

    @property
    def dp_lanes(self) -> int:
        """A stage's ranks per MP index: DP x sharding (the engine's lanes are dp_lanes x MP)."""
        return self.dp * self.sharding

    @property
    def n_hosts(self) -> int:
        return self.hosts if self.hosts else max(1, self.world // 8)

    @property
    def gpus_per_host(self) -> int:
        return -(-self.world // self.n_hosts)

    def coords(self, rank: int) -> Tuple[int, int, int]:
        """(dp lane, pp, mp) of a rank in Fleet's order (the dp lane: dp x sharding + its sharding index;
        the dp coordinate itself without sharding)."""
        d, pp, sh, mp = self.coords4(rank)
        return d * self.sharding + sh, pp, mp

    def coords4(self, rank: int) -> Tuple[int, int, int, int]:
        """(dp, pp, sharding, mp) of a rank: rank = ((dp * PP + pp) * SH + sharding) * MP + mp."""
        mp = rank % self.mp
        sh = (rank // self.mp) % self.sharding
        pp = (rank // (self.mp * self.sharding)) % self.pp
        return rank // (self.mp * self.sharding * self.pp), pp, sh, mp

    def rank_of(self, dp: int, pp: int, mp: int) -> int:
        """The rank of dp lane ``dp`` (coords), stage ``pp``, MP index ``mp``."""
        d, sh = divmod(dp, self.sharding)
        return ((d * self.pp + pp) * self.sharding + sh) * self.mp + mp

    def stage_layers(self) -> List[int]:
        base, extra = divmod(self.layers, self.pp)
        return [base + (1 if s < extra else 0) for s in range(self.pp)]

    def without(self, anomaly: Optional[Anomaly] = None) -> "SimConfig":
        """The same job without ``anomaly`` (without any when None)."""
        keep = () if anomaly is None else tuple(a for a in self.anomalies if a != anomaly)
        return dataclasses.replace(self, anomalies=keep)

    def check(self) -> None:
        if min(self.dp, self.pp, self.mp, self.sharding, self.steps, self.micro_batches) < 1:
            raise ValueError("degrees, steps and micro-batches must be >= 1")
        if self.p2p not in P2P_MODES:
            raise ValueError("p2p must be one of %s" % (P2P_MODES,))
        if self.names not in NAME_MODES:
            raise ValueError("names must be one of %s" % (NAME_MODES,))
        if self.kernel_set not in ("full", "lean"):
            raise ValueError("kernel_set must be full or lean")
        if self.layers < self.pp:
            raise ValueError("at least one layer per stage")
        if self.host_offsets_ms is not None and len(self.host_offsets_ms) != self.n_hosts:
            raise ValueError("host_offsets_ms needs one offset per host")
        for a in self.anomalies:
            if a.kind not in ANOMALY_KINDS or not 0 <= a.rank < self.world:
                raise ValueError("bad anomaly %r" % (a,))
            if a.kind == "loader" and self.coords(a.rank)[1] != 0:
                raise ValueError("the data loader runs on stage-0 ranks only (rank %d is not)" % a.rank)


_TIME = re.compile(r"^([0-9.]+)\s*(ns|us|ms|s)?$")
_UNIT = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000, None: 1_000_000}


def parse_ns(text: str) -> int:
    """'3ms', '250us', '0.5' (ms by default) -> ns."""
    m = _TIME.match(text.strip())
    if not m:
        raise ValueError("not a time: %r" % text)
    return int(round(float(m.group(1)) * _UNIT[m.group(2)]))


def parse_anomaly(kind: str, text: str) -> Anomaly:
    """'RANK:10' (slow_gpu, percent) or 'RANK:3ms' (loader, stall; 'RANK:3ms@2' stalls before
    micro-batch 2's forward)."""
    rank_s, _, value = text.partition(":")
    if not value:
        raise ValueError("expected RANK:VALUE, got %r" % text)
    at = 1
    if "@" in value:
        value, at_s = value.split("@", 1)
        at = int(at_s)
    if kind == "slow_gpu":
        return Anomaly(kind, int(rank_s), float(value.rstrip("%")))
    return Anomaly(kind, int(rank_s), float(parse_ns(value)), at)
