"""Simulated GPT hybrid-parallel (DP x MP x PP) training spans, written as Paddle GPU traces.

Each rank runs the same kind of program a PaddleNLP GPT trainer runs under ``paddle.profiler``:
per ``ProfileStep#N`` a dataloader fetch, host-to-device copies, forward and backward passes
(1F1B over micro-batches when pp > 1), the optimizer and a synchronising ``loss.item()``.
Every operator has Paddle's inner events (``node_creation``, ``infer_meta``, ``kernel launch``)
whose CUDA runtime calls launch device work on streams, linked by correlation id.

Timing is simulated, not drawn: the host issues work asynchronously, each stream runs in
order, a kernel waits for what it depends on, and an NCCL kernel ends when the last member of
its collective has arrived plus the transfer time, so a late rank lengthens its peers' NCCL
kernels. Ranks are first simulated together (without recording) so collective instances can be
matched; then each rank is re-run alone, recorded, written and dropped, so memory stays bounded
by one rank (``jobs`` > 1: in forked processes). The planted ground truth (step times, exposed
communication by kind, the slow rank) goes into a manifest beside the traces, and the
cross-rank truth (every collective instance with its members' ordinals and waits, ranks'
hosts, pids and clock offsets, planted anomalies with their cost to the job) into the files
of :mod:`.truth`.

Ranks sit on hosts in Fleet's layout (``rank = host * gpus_per_node + GPU``), named ``rankN``
or, with ``names="default"``, ``host_<hostname>pid_<pid>`` as Paddle names workers;
``clock_skew_us`` shifts every timestamp of each host's traces by a fixed offset. With pp > 1
each step also has the loss broadcasts and the gradient-clip all-reduce over each pipeline's
stages (``pp_group_collectives``). docs/generator.md describes every option.

Two kinds of straggler can be planted (each on one rank or several). ``slow_rank`` runs its
compute kernels ``slow_factor`` times longer (a slower GPU). ``slow_host_rank`` keeps normal
kernels but its host stalls
``host_delay_us`` longer in the data loader at the start of every step (a slow input pipeline,
CPU contention): its GPU, idle since the previous step's ``loss.item()``, gets its first work
that much later, so its kernels, NCCL ones included, start late and its peers wait for it at
the collectives they share.

Planted changes (off by default; a run without them writes exactly what it wrote before they
existed): ``comm_factor`` scales the transfer time of an axis's collectives, ``slow_kernel``
slows the compute kernels whose name holds a substring, ``launch_overhead`` scales the host
time from the host-to-device copies to ``loss.item()``, ``leak_bytes_per_step`` and
``fragment_bytes_per_step`` grow allocated and reserved-minus-allocated GPU memory. The pipeline
``schedule`` is ``"1f1b"``, ``"gpipe"`` or ``"interleaved"`` (``virtual_stages`` chunks per
stage); :func:`pipeline_order` gives a stage's slots, :func:`simulate_step_time` a config's
step times without writing anything.
"""

from __future__ import annotations

import collections
import json
import math
import os
import random
import time
import zlib
from array import array
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import writer as _writer
from . import truth as _truth
from .model import (ALLOCATE, BACKWARD, COMMUNICATION, DATALOADER, DYGRAPH_KERNEL_LAUNCH,
                    FORWARD, FREE, KERNEL, MEMCPY, MEMSET, OPERATOR, OPERATOR_INNER,
                    OPTIMIZATION, PROFILE_STEP, PYTHON_USER_DEFINED, RESERVED_ALLOCATE,
                    RESERVED_FREE, USER_DEFINED, DeviceProps, KernelSpec, RankTrace,
                    build_node_trees)

EPOCH_NS = 1_795_936_680_000_000_000  # 2026-11-29, where the recorded span starts
MANIFEST_NAME = "synth_manifest.json"

# CUDA streams as CUPTI numbers them: the compute stream and one per communicator.
COMPUTE_STREAM = 7
MP_STREAM = 13
PP_FWD_STREAM = 14
PP_BWD_STREAM = 15
DP_STREAM = 16
PP_GROUP_STREAM = 17  # the pipeline group's communicator (clip all-reduce, loss broadcast)

PP_FWD_RECV_STREAM = 18  # interleaved schedule only: receives on their own streams
PP_BWD_RECV_STREAM = 19

# p2p_streams="shared": every send/recv on one stream; "per_peer": one stream per neighbour
P2P_SHARED_STREAM = PP_FWD_STREAM
P2P_PREV_STREAM = 20
P2P_NEXT_STREAM = 21
P2P_LAYOUTS = ("per_direction", "shared", "per_peer")
KERNEL_JITTERS = ("uniform", "lognormal")

COMM_KINDS = ("mp_allreduce", "pp_sendrecv", "dp_allreduce")
COMM_AXES = ("mp", "dp", "pp", "pp_group")  # what comm_factor scales (truth.AXIS_NAMES)
SCHEDULES = ("1f1b", "gpipe", "interleaved")
PP_GROUP_KIND = "pp_group"

# key[0] of a collective -> (kind code, axis code) of the truth (truth.KIND_NAMES, AXIS_NAMES)
_KEY_KIND = {"mp": (0, 0), "dp": (0, 1), "pf": (2, 2), "pb": (2, 2), "clip": (0, 3),
             "bcast": (1, 3)}
TRUTH_KINDS = ("all_reduce", "broadcast", "send_recv")
_KEY_AXIS = {"mp": "mp", "dp": "dp", "pf": "pp", "pb": "pp", "clip": "pp_group",
             "bcast": "pp_group"}

_LAUNCH = "cudaLaunchKernel_v7000"
_MEMCPY_ASYNC = "cudaMemcpyAsync_v3020"
_MEMCPY_SYNC = "cudaMemcpy_v3020"
_MEMSET_ASYNC = "cudaMemsetAsync_v3020"
_STREAM_SYNC = "cudaStreamSynchronize_v3020"


def _factor_dict(x, what: str) -> Dict[str, float]:
    """None, a mapping or ``"a=1.5,b=2"`` as a dict of name -> factor."""
    if not x:
        return {}
    if isinstance(x, str):
        out = {}
        for item in x.split(","):
            if not item.strip():
                continue
            name, sep, f = item.rpartition("=")
            try:
                if not sep:
                    raise ValueError
                out[name.strip()] = float(f)
            except ValueError:
                raise ValueError("%s: expected NAME=FACTOR[,NAME=FACTOR...], got %r"
                                 % (what, item)) from None
        return out
    return {str(k): float(v) for k, v in dict(x).items()}


def _rank_tuple(x) -> Tuple[int, ...]:
    """None, one rank or several (a sequence or "2,9") as a tuple of ranks."""
    if x is None:
        return ()
    if isinstance(x, str):
        return tuple(int(v) for v in x.split(",") if v.strip())
    if isinstance(x, int):
        return (x,)
    return tuple(int(v) for v in x)


@dataclass
class SynthConfig:
    """What to simulate. ``layers`` counts decoder layers of the whole model; each pipeline
    stage holds ``layers / pp`` of them (the first stages take the remainder), unless
    ``stage_layers`` gives the count of each stage.

    ``slow_rank`` and ``slow_host_rank`` take one rank or a sequence of ranks. ``names``:
    ``"rank"`` names workers ``rankN``; ``"default"`` uses Paddle's default worker name
    ``host_<hostname>pid_<pid>``. ``clock_skew_us`` gives each host but host 0 a fixed clock
    offset within +-that many microseconds. ``pp_group_collectives`` (with pp > 1): the loss
    broadcasts and the gradient-clip all-reduce over each pipeline's stages."""

    dp: int = 2
    mp: int = 2
    pp: int = 2
    steps: int = 4
    layers: int = 4
    micro_batches: int = 4
    seed: int = 0
    slow_rank: Optional[object] = None
    slow_factor: float = 1.0
    events_per_rank: Optional[int] = None
    first_step: int = 1
    hidden: int = 4096
    heads: int = 32
    seq_len: int = 2048
    micro_batch_size: int = 1
    vocab: int = 50304
    dp_bucket_layers: int = 2
    gpus_per_node: int = 8
    slow_host_rank: Optional[object] = None
    host_delay_us: float = 0.0
    names: str = "rank"
    clock_skew_us: float = 0.0
    pp_group_collectives: bool = True
    stage_layers: Optional[Tuple[int, ...]] = None
    # planted changes (docs/generator.md, "Planted changes"); the defaults change nothing
    comm_factor: Optional[Dict[str, float]] = None
    slow_kernel: Optional[Dict[str, float]] = None
    launch_overhead: float = 1.0
    leak_bytes_per_step: int = 0
    fragment_bytes_per_step: int = 0
    # the pipeline schedule: "1f1b", "gpipe" or "interleaved" (virtual_stages model chunks)
    schedule: str = "1f1b"
    virtual_stages: int = 1
    # realism (docs/generator.md, "Realism"); the defaults write what the generator always
    # wrote, SynthConfig.realistic() turns them all on
    kernel_jitter: str = "uniform"  # "uniform" (+-3 %) or "lognormal" (kernel_sigma)
    kernel_sigma: float = 0.02
    gpu_speed_sigma: float = 0.0  # per-GPU persistent speed spread (lognormal sigma)
    gpu_speed: Optional[Dict[int, float]] = None  # explicit per-rank speed factors
    p2p_streams: str = "per_direction"  # or "shared", "per_peer"
    one_rank_comms: bool = False  # mp = 1 / dp = 1 still launch NCCL kernels
    pipeline_layers: bool = False  # EmbeddingPipe / HeadPipe, data read on the first stage
    host_offsets_us: Optional[Tuple[float, ...]] = None  # explicit clock offset per host

    @classmethod
    def realistic(cls, **overrides) -> "SynthConfig":
        """A config with every realism option on (docs/generator.md, "Realism"): lognormal
        kernel noise, a 0.3 % spread of GPU speeds, send/recv on one shared stream in
        1F1B order, one-rank communicators, Paddle's PipelineLayer names with the data read
        on the first stage, Paddle's default worker names and host clocks within +-2 ms.
        ``overrides`` set any field (also these)."""
        kw = dict(REALISTIC)
        kw.update(overrides)
        return cls(**kw)

    def validate(self) -> None:
        for name in ("dp", "mp", "pp", "steps", "layers", "micro_batches", "hidden", "heads",
                     "seq_len", "micro_batch_size", "vocab", "dp_bucket_layers",
                     "gpus_per_node"):
            if getattr(self, name) < 1:
                raise ValueError("%s must be at least 1" % name)
        if self.stage_layers is not None:
            if len(self.stage_layers) != self.pp or min(self.stage_layers) < 1:
                raise ValueError("stage_layers must give at least one layer for each of the "
                                 "%d pipeline stages" % self.pp)
        elif self.layers < self.pp:
            raise ValueError("need at least one decoder layer per pipeline stage")
        if self.hidden % self.heads or self.heads % self.mp or self.hidden % self.mp:
            raise ValueError("hidden and heads must divide by mp, hidden by heads")
        world = self.dp * self.mp * self.pp
        for r in self.slow_ranks():
            if not 0 <= r < world:
                raise ValueError("slow_rank must be a rank below %d" % world)
        if self.slow_factor <= 0:
            raise ValueError("slow_factor must be positive")
        for r in self.slow_host_ranks():
            if not 0 <= r < world:
                raise ValueError("slow_host_rank must be a rank below %d" % world)
        if self.host_delay_us < 0:
            raise ValueError("host_delay_us must not be negative")
        if self.names not in ("rank", "default"):
            raise ValueError("names must be 'rank' or 'default'")
        if self.clock_skew_us < 0:
            raise ValueError("clock_skew_us must not be negative")
        for axis, f in _factor_dict(self.comm_factor, "comm_factor").items():
            if axis not in COMM_AXES:
                raise ValueError("comm_factor: unknown axis %r (one of %s)"
                                 % (axis, ", ".join(COMM_AXES)))
            if not f >= 0:
                raise ValueError("comm_factor: the factor of %s must not be negative" % axis)
        for sub, f in _factor_dict(self.slow_kernel, "slow_kernel").items():
            if not sub:
                raise ValueError("slow_kernel: empty kernel-name substring")
            if not f > 0:
                raise ValueError("slow_kernel: the factor of %r must be positive" % sub)
        if not self.launch_overhead >= 0:
            raise ValueError("launch_overhead must not be negative")
        if self.leak_bytes_per_step < 0 or self.fragment_bytes_per_step < 0:
            raise ValueError("leak_bytes_per_step and fragment_bytes_per_step must not be "
                             "negative")
        if self.schedule not in SCHEDULES:
            raise ValueError("schedule must be one of %s" % ", ".join(SCHEDULES))
        if self.schedule == "interleaved":
            V = self.virtual_stages
            if V < 2 or self.pp < 2:
                raise ValueError("the interleaved schedule needs pp >= 2 and virtual_stages >= 2")
            if self.micro_batches % self.pp:
                raise ValueError("the interleaved schedule needs micro_batches divisible by pp "
                                 "(%d %% %d != 0)" % (self.micro_batches, self.pp))
            if self.stage_layers is not None:
                raise ValueError("stage_layers is for the 1f1b and gpipe schedules; the "
                                 "interleaved one splits layers evenly over its chunks")
            if self.layers % (self.pp * V):
                raise ValueError("the interleaved schedule splits layers evenly over pp x "
                                 "virtual_stages = %d model chunks: %d layers do not divide"
                                 % (self.pp * V, self.layers))
        elif self.virtual_stages != 1:
            raise ValueError("virtual_stages > 1 needs schedule='interleaved'")
        if self.kernel_jitter not in KERNEL_JITTERS:
            raise ValueError("kernel_jitter must be one of %s" % ", ".join(KERNEL_JITTERS))
        if not 0 <= self.kernel_sigma < 1 or not 0 <= self.gpu_speed_sigma < 1:
            raise ValueError("kernel_sigma and gpu_speed_sigma must be in [0, 1)")
        for r, f in (self.gpu_speed or {}).items():
            if not 0 <= int(r) < world or not float(f) > 0:
                raise ValueError("gpu_speed: rank %r must be below %d, its factor positive"
                                 % (r, world))
        if self.p2p_streams not in P2P_LAYOUTS:
            raise ValueError("p2p_streams must be one of %s" % ", ".join(P2P_LAYOUTS))
        if self.p2p_streams != "per_direction" and self.schedule == "interleaved":
            raise ValueError("p2p_streams=%r is for the 1f1b and gpipe schedules (the "
                             "interleaved one has its own four streams)" % self.p2p_streams)
        if self.host_offsets_us is not None:
            n_hosts = host_of(self, world - 1) + 1
            if len(self.host_offsets_us) != n_hosts:
                raise ValueError("host_offsets_us must give one offset for each of the %d "
                                 "hosts" % n_hosts)

    def slow_ranks(self) -> Tuple[int, ...]:
        return _rank_tuple(self.slow_rank)

    def comm_factors(self) -> Dict[str, float]:
        """The axes whose collectives' transfer times are scaled, with their factor (axes
        at 1 left out)."""
        return {a: float(f) for a, f in _factor_dict(self.comm_factor, "comm_factor").items()
                if float(f) != 1.0}

    def slow_kernels(self) -> Dict[str, float]:
        """Kernel-name substrings whose compute kernels are slowed, with their factor."""
        return {k: float(f) for k, f in _factor_dict(self.slow_kernel, "slow_kernel").items()
                if float(f) != 1.0}

    def chunk_layers(self, stage: int) -> List[Tuple[int, int]]:
        """Per model chunk of ``stage`` (one, except with the interleaved schedule): its first
        decoder layer and its layer count. Chunk c of stage s is virtual stage c * pp + s."""
        if self.schedule != "interleaved":
            per_stage = self.per_stage_layers()
            return [(sum(per_stage[:stage]), per_stage[stage])]
        n = self.layers // (self.pp * self.virtual_stages)
        return [((c * self.pp + stage) * n, n) for c in range(self.virtual_stages)]

    def slow_host_ranks(self) -> Tuple[int, ...]:
        return _rank_tuple(self.slow_host_rank)

    def host_delay_ns(self, rank: int) -> int:
        """The extra data-loader stall per step of ``rank`` (even, as host times are)."""
        if rank not in self.slow_host_ranks():
            return 0
        return int(round(self.host_delay_us * 1000)) & ~1

    def compute_factor(self, rank: int) -> float:
        """How much longer ``rank``'s compute kernels take: its planted slow_factor times its
        GPU's own speed (:meth:`gpu_speed_of`)."""
        f = self.slow_factor if rank in self.slow_ranks() else 1.0
        g = self.gpu_speed_of(rank)
        return f if g == 1.0 else f * g

    def gpu_speed_of(self, rank: int) -> float:
        """``rank``'s GPU speed factor (its compute kernels' durations are multiplied by it):
        ``gpu_speed[rank]`` when given, else drawn once per GPU from the seed (lognormal,
        ``gpu_speed_sigma``; 1 when that is 0)."""
        if self.gpu_speed and rank in self.gpu_speed:
            return float(self.gpu_speed[rank])
        if not self.gpu_speed_sigma:
            return 1.0
        rng = random.Random(self.seed * 91_138_233 + rank * 7 + 5)
        return math.exp(rng.gauss(0.0, self.gpu_speed_sigma))

    def per_stage_layers(self) -> List[int]:
        if self.stage_layers is not None:
            return [int(n) for n in self.stage_layers]
        return [self.layers // self.pp + (1 if p < self.layers % self.pp else 0)
                for p in range(self.pp)]

    def pp_group_on(self) -> bool:
        return bool(self.pp_group_collectives) and self.pp > 1

    def world(self) -> int:
        return self.dp * self.mp * self.pp

    def changes(self) -> List[dict]:
        """The planted changes that are on, each with the config that lacks only it."""
        out = []
        for axis, f in sorted(self.comm_factors().items()):
            rest = {a: v for a, v in self.comm_factors().items() if a != axis} or None
            out.append(({"type": "comm_factor", "axis": axis, "factor": f},
                        replace(self, comm_factor=rest)))
        for sub, f in sorted(self.slow_kernels().items()):
            rest = {k: v for k, v in self.slow_kernels().items() if k != sub} or None
            out.append(({"type": "slow_kernel", "substring": sub, "factor": f},
                        replace(self, slow_kernel=rest)))
        if float(self.launch_overhead) != 1.0:
            out.append(({"type": "launch_overhead", "factor": float(self.launch_overhead)},
                        replace(self, launch_overhead=1.0)))
        if self.leak_bytes_per_step:
            out.append(({"type": "leak", "bytes_per_step": int(self.leak_bytes_per_step)},
                        replace(self, leak_bytes_per_step=0)))
        if self.fragment_bytes_per_step:
            out.append(({"type": "fragment", "bytes_per_step": int(self.fragment_bytes_per_step)},
                        replace(self, fragment_bytes_per_step=0)))
        return out

    def without_anomalies(self) -> "SynthConfig":
        return replace(self, slow_rank=None, slow_factor=1.0, slow_host_rank=None,
                       host_delay_us=0.0)


# SynthConfig.realistic(): every realism option on
REALISTIC = dict(kernel_jitter="lognormal", kernel_sigma=0.02, gpu_speed_sigma=0.003,
                 p2p_streams="shared", one_rank_comms=True, pipeline_layers=True,
                 names="default", clock_skew_us=2000.0, gpus_per_node=8)


# ----------------------------------------------------------------------------- hosts


def host_of(cfg: SynthConfig, rank: int) -> int:
    """Fleet's layout: rank = host * gpus_per_node + local GPU."""
    return rank // cfg.gpus_per_node


def hostname(host: int) -> str:
    return "gpunode%d" % host


def host_gpus(cfg: SynthConfig, host: int) -> int:
    return max(0, min(cfg.gpus_per_node, cfg.world() - host * cfg.gpus_per_node))


_PID_CACHE: Dict[tuple, List[int]] = {}


def host_pids(cfg: SynthConfig, host: int) -> List[int]:
    """The pids of one host's ranks, by local GPU: distinct and never in GPU order, so only
    the device id tells Fleet's rank order (as when processes start in any order)."""
    n = host_gpus(cfg, host)
    key = (cfg.seed, host, n)
    pids = _PID_CACHE.get(key)
    if pids is None:
        rng = random.Random(cfg.seed * 2_654_435_761 + host * 7919 + 4242)
        pids = rng.sample(range(2000, 4_000_000), n)
        if n > 1 and pids == sorted(pids):
            pids[0], pids[1] = pids[1], pids[0]
        _PID_CACHE[key] = pids
    return pids


def clock_offset_ns(cfg: SynthConfig, host: int) -> int:
    """How far host ``host``'s clock is ahead of the global one (even ns; host 0: 0)."""
    if cfg.host_offsets_us is not None:
        return int(round(float(cfg.host_offsets_us[host]) * 1000)) & ~1
    if host == 0 or not cfg.clock_skew_us:
        return 0
    u = random.Random(cfg.seed * 7_368_787 + host * 31 + 977).random()
    return int(round(cfg.clock_skew_us * 1000 * (2 * u - 1))) & ~1


def worker_name(cfg: SynthConfig, rank: int, pid: int) -> str:
    if cfg.names == "default":
        return "host_%spid_%d" % (hostname(host_of(cfg, rank)), pid)
    return "rank%d" % rank


class Topology:
    """Rank layout of Paddle's hybrid topology (order dp, pp, mp; mp varies fastest)."""

    def __init__(self, dp: int, mp: int, pp: int):
        self.dp, self.mp, self.pp = dp, mp, pp
        self.world = dp * mp * pp

    def coords(self, rank: int) -> Dict[str, int]:
        return {"dp": rank // (self.mp * self.pp), "pp": (rank // self.mp) % self.pp,
                "mp": rank % self.mp}

    def rank(self, dp: int, pp: int, mp: int) -> int:
        return (dp * self.pp + pp) * self.mp + mp

    def groups(self) -> Dict[str, List[List[int]]]:
        """The communicators: mp and dp groups, and the pipeline of each (dp, mp) pair."""
        r = self.rank
        return {
            "mp": [[r(d, p, m) for m in range(self.mp)]
                   for d in range(self.dp) for p in range(self.pp)],
            "pp": [[r(d, p, m) for p in range(self.pp)]
                   for d in range(self.dp) for m in range(self.mp)],
            "dp": [[r(d, p, m) for d in range(self.dp)]
                   for p in range(self.pp) for m in range(self.mp)],
        }


# ----------------------------------------------------------------------------- kernels


def _ew(name: str, numel: int, regs: int = 28) -> KernelSpec:
    return KernelSpec(name, (max(1, min(65535, -(-numel // 2048))), 1, 1), (512, 1, 1), regs)


def _gemm(name: str, m: int, n: int, tile_n: int = 256) -> KernelSpec:
    return KernelSpec(name, (max(1, -(-m // 128)), max(1, -(-n // tile_n)), 1), (384, 1, 1),
                      168, 0, 213248 if tile_n == 256 else 164864)


_BF16 = "phi::dtype::bfloat16"
_EW_ARGS = "(phi::Array<char const* __restrict__, %d>, phi::Array<char*, 1>, long, long, int, %s)"


def _vectorized(functor: str, arity: int) -> str:
    return ("void phi::funcs::VectorizedElementwiseKernel<%s, %s, %d, 1, 4>" % (_BF16, functor, arity)
            + _EW_ARGS % (arity, functor))


def _nccl(coll: str) -> str:
    return "ncclDevKernel_%s(ncclDevComm*, unsigned long, ncclWork*)" % coll


class _Catalog:
    """Kernel launch configurations and durations of one model shard (times in ns)."""

    TFLOPS = 330e12  # sustained bf16 tensor-core rate of the simulated GPU
    HBM = 2.4e12  # bytes/s for memory-bound kernels

    def __init__(self, cfg: SynthConfig):
        T = cfg.seq_len * cfg.micro_batch_size
        H, mp, V = cfg.hidden, cfg.mp, cfg.vocab
        heads = cfg.heads // mp
        self.T, self.H = T, H
        act = T * H
        g_tn = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
        g_nn = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
        g_nt = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
        bmm = ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x5_tn_align8>"
               "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x5_tn_align8::Params)")
        self.spec: Dict[str, KernelSpec] = {}
        self.ns: Dict[str, int] = {}

        def gemm(key, name, m, n, k, tile_n=256):
            self.spec[key] = _gemm(name, m, n, tile_n)
            self.ns[key] = int(2 * m * n * k / self.TFLOPS * 1e9) + 4000

        def ew(key, name, numel, bytes_per, regs=28):
            self.spec[key] = _ew(name, numel, regs)
            self.ns[key] = int(numel * bytes_per / self.HBM * 1e9) + 2500

        gemm("qkv", g_tn, T, 3 * H // mp, H)
        gemm("qkv_dx", g_nn, T, H, 3 * H // mp)
        gemm("qkv_dw", g_nt, H, 3 * H // mp, T, 128)
        gemm("proj", g_tn, T, H, H // mp)
        gemm("proj_dx", g_nn, T, H // mp, H)
        gemm("proj_dw", g_nt, H // mp, H, T, 128)
        gemm("fc1", g_tn, T, 4 * H // mp, H)
        gemm("fc1_dx", g_nn, T, H, 4 * H // mp)
        gemm("fc1_dw", g_nt, H, 4 * H // mp, T, 128)
        gemm("fc2", g_tn, T, H, 4 * H // mp)
        gemm("fc2_dx", g_nn, T, 4 * H // mp, H)
        gemm("fc2_dw", g_nt, 4 * H // mp, H, T, 128)
        gemm("lm_head", g_tn, T, V // mp, H)
        gemm("lm_head_dx", g_nn, T, H, V // mp)
        gemm("lm_head_dw", g_nt, H, V // mp, T, 128)
        hd = H // cfg.heads
        for key in ("qk", "qk_grad_a", "qk_grad_b", "av", "av_grad_a", "av_grad_b"):
            self.spec[key] = KernelSpec(bmm, (T // 128 or 1, T // 128 or 1, heads), (128, 1, 1),
                                        230, 0, 81920)
            self.ns[key] = int(2 * T * T * hd * heads / self.TFLOPS * 1e9) + 4000
        scores = heads * T * T
        ew("add", _vectorized("phi::funcs::AddFunctor<%s>" % _BF16, 2), act, 6)
        ew("bias_grad", "void phi::funcs::ReduceHigherDimKernel<%s, float, phi::kps::AddFunctor<float>, "
           "phi::kps::IdentityFunctor<%s, float>, int>(%s const*, %s*, phi::kps::AddFunctor<float>, "
           "phi::kps::IdentityFunctor<%s, float>, float, int, int, int, phi::kps::DimConfig, bool)"
           % (_BF16, _BF16, _BF16, _BF16, _BF16), act, 2, 40)
        ew("gelu", _vectorized("phi::GeluWithApproximateFunctor<%s>" % _BF16, 1), 4 * act // mp, 4)
        ew("gelu_grad", _vectorized("phi::GeluWithApproximateGradFunctor<%s>" % _BF16, 2),
           4 * act // mp, 6)
        ew("scale", _vectorized("phi::funcs::ScaleFunctor<%s, float>" % _BF16, 1), scores, 4)
        ew("softmax", "void phi::funcs::WarpSoftmaxForward<%s, float, 11, 4, 32, 1, false>(%s*, %s const*, "
           "int, int, int)" % (_BF16, _BF16, _BF16), scores, 4, 64)
        ew("softmax_grad", "void phi::funcs::WarpSoftmaxBackward<%s, float, 11, 4, 32, 1, false>(%s*, "
           "%s const*, %s const*, int, int, int)" % (_BF16, _BF16, _BF16, _BF16), scores, 6, 64)
        ew("dropout", "void phi::funcs::VectorizedRandomGenerator<%s>(unsigned long, unsigned long, %s const*, "
           "%s*, unsigned char*, float, float, bool, unsigned long, unsigned long)"
           % (_BF16, _BF16, _BF16), act, 5, 38)
        ew("dropout_attn", self.spec["dropout"].name, scores, 5, 38)
        ew("dropout_grad", _vectorized("phi::funcs::DropoutGradFunctor<%s>" % _BF16, 2), act, 5)
        ew("dropout_attn_grad", self.spec["dropout_grad"].name, scores, 5)
        ew("transpose", "void phi::funcs::TilingSwapDim1And2<%s, 32, 8, long>(%s const*, phi::Dim3, %s*)"
           % (_BF16, _BF16, _BF16), act // mp, 4, 32)
        ew("layer_norm", "void phi::funcs::LayerNormForward<%s, float, 1024, true>(%s const*, float const*, "
           "float const*, %s*, float*, float*, float, long)" % (_BF16, _BF16, _BF16), act, 4, 40)
        ew("layer_norm_grad", "void phi::funcs::LayerNormBackwardGradientAll<%s, float, 1024, true>(%s const*, "
           "%s const*, float const*, float const*, float const*, float*, float*, %s*, float, long, long)"
           % (_BF16, _BF16, _BF16, _BF16), act, 6, 48)
        ew("layer_norm_grad_sb", "void phi::funcs::LayerNormBackwardSumGradGammaBeta<float, 1024, 8, 64>"
           "(float const*, float*, float*, long, long)", H * 32, 8, 32)
        ew("embedding", "void phi::EmbeddingFW<%s, long, false>(%s*, %s const*, long const*, long, long, "
           "long, long)" % (_BF16, _BF16, _BF16), act, 4, 24)
        ew("embedding_grad", "void phi::EmbeddingGrad<%s, long>(%s*, %s const*, long const*, long, long, "
           "long)" % (_BF16, _BF16, _BF16), act, 6, 30)
        ew("ce", "void phi::SoftmaxWithCrossEntropyHardLabel<%s, long, false>(%s*, long const*, %s*, "
           "%s const*, long, long, long, int)" % (_BF16, _BF16, _BF16, _BF16), T * V // mp, 4, 56)
        ew("ce_grad", "void phi::SoftmaxWithCrossEntropyGradHardLabel<%s, long>(%s*, %s const*, long const*, "
           "%s const*, long, long, long, int)" % (_BF16, _BF16, _BF16, _BF16), T * V // mp, 6, 40)
        ew("mean", "void phi::funcs::ReduceAnyKernel<float, float, phi::kps::AddFunctor<float>, "
           "phi::kps::DivideFunctor<float, float>, int, float, phi::funcs::IndexCalculator, "
           "phi::funcs::IndexCalculator, true>(float const*, float*, phi::kps::AddFunctor<float>, "
           "phi::kps::DivideFunctor<float, float>, phi::kps::IdentityFunctor<float, float>, int, int, "
           "int, int, phi::funcs::IndexCalculator, phi::funcs::IndexCalculator, int, bool, float*, bool)",
           T, 4, 32)
        ew("mean_grad", _vectorized("phi::funcs::ScaleFunctor<float, float>", 1), T, 4)
        layer_params = 12 * H * H // mp
        ew("adamw", "void phi::AdamWKernelREG<%s, float, float>(float, float, float, float, float, float, "
           "float, float const*, float const*, float, float const*, float*, float const*, float*, %s const*, "
           "%s*, float const*, float*, long)" % (_BF16, _BF16, _BF16), layer_params // 6, 20, 46)
        self.spec["nccl_mp"] = KernelSpec(_nccl("AllReduce_Sum_bf16_RING_LL"), (8, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_ce_max"] = KernelSpec(_nccl("AllReduce_Max_f32_RING_LL"), (2, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_ce_sum"] = KernelSpec(_nccl("AllReduce_Sum_f32_RING_LL"), (2, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_pp"] = KernelSpec(_nccl("SendRecv"), (1, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_dp"] = KernelSpec(_nccl("AllReduce_Sum_bf16_RING_LL128"), (16, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_clip"] = KernelSpec(_nccl("AllReduce_Sum_f32_RING_LL"), (1, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_bcast"] = KernelSpec(_nccl("Broadcast_RING_LL"), (1, 1, 1), (640, 1, 1), 96)
        ew("squared_l2_norm", "void phi::SquaredL2NormKernel<float, 256>(float const*, float*, long)",
           layer_params, 2, 32)
        # bytes moved per call, and the link each kind uses (bytes/s)
        self.act_bytes = act * 2
        self.layer_grad_bytes = layer_params * 2
        self.embed_grad_bytes = V // mp * H * 2
        self.bw = {"mp": 180e9, "pp": 90e9, "dp": 140e9}
        # memory: bf16 params + fp32 master + two fp32 moments + bf16 grads per parameter
        self.layer_params = layer_params
        self.scores_bytes = scores * 2
        # slow_kernel: catalogue keys whose kernel name holds a substring -> duration factor
        self.kernel_factor: Dict[str, float] = {}
        for sub, f in cfg.slow_kernels().items():
            keys = [k for k, spec in self.spec.items()
                    if sub in spec.name and not spec.name.startswith("ncclDevKernel")]
            if not keys:
                raise ValueError("slow_kernel: no compute kernel name contains %r" % sub)
            for k in keys:
                self.kernel_factor[k] = self.kernel_factor.get(k, 1.0) * f


# ----------------------------------------------------------------------------- collectives


class _Pending:
    """The end time of an NCCL kernel whose collective has not met all its members yet."""

    __slots__ = ("end", "waiters")

    def __init__(self):
        self.end = None
        self.waiters: List[int] = []


class _LiveBook:
    """Phase 1: matches collective instances across the simulated ranks and times them.

    ``caused[rank][step index]`` is the planted wait a rank caused its peers at collectives
    other than send/recv: at each instance the member that arrived last (latest start; the
    lowest rank among equals) made each other member wait its start minus theirs.

    Every completed instance is also recorded, with its members, for the truth file
    (:mod:`.truth`): ``ordinal`` counts a rank's launches per (step, kind) in launch order."""

    def __init__(self, record: bool = True):
        self.open: Dict[tuple, list] = {}
        self.times: Dict[int, list] = collections.defaultdict(list)
        self.woken: List[int] = []
        self.caused: Dict[int, Dict[int, int]] = collections.defaultdict(
            lambda: collections.defaultdict(int))
        self.record = record
        self.seen: Dict[int, Dict[tuple, int]] = collections.defaultdict(dict)
        self.inst_step = array("q")
        self.inst_kind = array("b")
        self.inst_axis = array("b")
        self.inst_xfer = array("q")
        self.inst_root = array("i")
        self.inst_ptr = array("q", [0])
        self.mem_rank = array("i")
        self.mem_ordinal = array("i")
        self.mem_start = array("q")
        self.mem_end = array("q")
        self.info: Dict[int, dict] = {}

    def launch(self, rank: int, key: tuple, size: int, start: int, xfer: int, step: int = 0,
               role: int = 0):
        inst = self.open.get(key)
        if inst is None:
            inst = self.open[key] = [size, xfer, []]
        elif inst[0] != size or inst[1] != xfer:
            raise AssertionError("collective %r launched differently by its members" % (key,))
        handle = _Pending()
        slots = self.times[rank]
        kind, axis = _KEY_KIND[key[0]]
        ordinal = 0
        if self.record:
            seen = self.seen[rank]
            ordinal = seen.get((step, kind), 0)
            seen[(step, kind)] = ordinal + 1
        inst[2].append((rank, start, handle, len(slots), role, ordinal))
        slots.append(None)
        if len(inst[2]) == size:
            del self.open[key]
            members = inst[2]
            end = max(m[1] for m in members) + xfer
            if key[0] in ("mp", "dp"):  # (kind, group coords..., step index, sequence)
                last_rank, last_start = max(((m[0], m[1]) for m in members),
                                            key=lambda m: (m[1], -m[0]))
                self.caused[last_rank][key[3]] += sum(last_start - m[1] for m in members)
            for r, s, h, slot, _, _ in members:
                h.end = end
                self.times[r][slot] = (s, end)
                self.woken.extend(h.waiters)
                h.waiters = []
            if self.record:
                members.sort(key=lambda m: (m[4], m[0]) if kind == 2 else (m[0],))
                self.inst_step.append(step)
                self.inst_kind.append(kind)
                self.inst_axis.append(axis)
                self.inst_xfer.append(xfer)
                self.inst_root.append(next((m[0] for m in members if m[4] == 0), -1)
                                      if kind == 1 else -1)
                for r, s, _, _, _, o in members:
                    self.mem_rank.append(r)
                    self.mem_ordinal.append(o)
                    self.mem_start.append(s)
                    self.mem_end.append(end)
                self.inst_ptr.append(len(self.mem_rank))
        return handle

    def finished(self, prog: "_RankProgram") -> None:
        """Keep what the truth needs of a rank whose program ended."""
        self.info[prog.rank] = {"pid": prog.pid, "end_t": prog.t,
                                "steps": [(s["start_ns"], s["end_ns"]) for s in prog.steps],
                                "compute_ns": list(prog.compute_ns), "slots": prog.slots,
                                "mem_end": prog.mem_end}

    def step_arrays(self, world: int) -> Dict[str, np.ndarray]:
        st = np.array([[a for a, _ in self.info[r]["steps"]] for r in range(world)], dtype=np.int64)
        en = np.array([[b for _, b in self.info[r]["steps"]] for r in range(world)], dtype=np.int64)
        comp = np.array([self.info[r]["compute_ns"] for r in range(world)], dtype=np.int64)
        return {"step_start_ns": st, "step_end_ns": en, "step_time_ns": en - st,
                "compute_ns": comp}

    def schedule_columns(self, world: int, first_step: int) -> Dict[str, np.ndarray]:
        """Every rank's pipeline slots (rank, step, execution order) and its GPU memory at
        each step's end, as the truth's columns."""
        per = [np.array(self.info[r]["slots"], dtype=np.int64).reshape(-1, 6) for r in range(world)]
        a = np.concatenate([np.repeat(np.arange(world, dtype=np.int64), [len(x) for x in per])[:, None],
                            np.concatenate(per)], axis=1)
        mem = np.array([self.info[r]["mem_end"] for r in range(world)],
                       dtype=np.int64).reshape(world, -1, 2)
        return {"sched_rank": a[:, 0].astype(np.int32), "sched_step": a[:, 1] + first_step,
                "sched_phase": a[:, 2].astype(np.int8), "sched_micro_batch": a[:, 3].astype(np.int32),
                "sched_chunk": a[:, 4].astype(np.int8), "sched_start_ns": a[:, 5],
                "sched_end_ns": a[:, 6], "gpu_allocated_end_bytes": mem[:, :, 0],
                "gpu_reserved_end_bytes": mem[:, :, 1]}

    def job_step_ns(self, world: int) -> float:
        """The job's mean step time: mean over ranks and steps of the ProfileStep durations."""
        a = self.step_arrays(world)["step_time_ns"]
        return float(a.mean()) if a.size else 0.0

    def columns(self) -> Dict[str, np.ndarray]:
        def np_(col, dtype):
            return np.frombuffer(col, dtype=dtype).copy() if len(col) else np.zeros(0, dtype)
        start, end = np_(self.mem_start, np.int64), np_(self.mem_end, np.int64)
        xfer = np_(self.inst_xfer, np.int64)
        ptr = np_(self.inst_ptr, np.int64)
        wait = end - start - np.repeat(xfer, np.diff(ptr))
        return {"inst_step": np_(self.inst_step, np.int64), "inst_kind": np_(self.inst_kind, np.int8),
                "inst_axis": np_(self.inst_axis, np.int8), "inst_transfer_ns": xfer,
                "inst_root": np_(self.inst_root, np.int32), "inst_ptr": ptr,
                "mem_rank": np_(self.mem_rank, np.int32),
                "mem_ordinal": np_(self.mem_ordinal, np.int32), "mem_start_ns": start,
                "mem_end_ns": end, "mem_wait_ns": wait}


class _ReplayBook:
    """Phase 2: a rank re-run alone reads its NCCL kernels' times from phase 1."""

    def __init__(self, times: Sequence[Tuple[int, int]]):
        self.times = times
        self.i = 0

    def launch(self, rank, key, size, start, xfer, step=0, role=0):
        s, e = self.times[self.i]
        self.i += 1
        if s != start:
            raise AssertionError("rank %d re-ran collective %r differently" % (rank, key))
        return e


class _SoloBook:
    """For sizing only: every collective completes as if its peers were already there."""

    def launch(self, rank, key, size, start, xfer, step=0, role=0):
        return start + xfer


class _NullSink:
    """Stands in for a RankTrace while ranks are only being timed."""

    n_device = 0

    def name_id(self, name):
        return 0

    def spec_id(self, spec):
        return 0

    def place_id(self, place):
        return 0

    def host_open(self, name_id, etype, tid, start):
        return -1

    def host_close(self, row, end):
        pass

    def runtime(self, *a):
        pass

    def device_event(self, *a):
        return -1

    def mem(self, *a):
        pass


# ----------------------------------------------------------------------------- memory


class _Allocator:
    """One place's allocator: live blocks, current/peak counters and reserved chunks."""

    def __init__(self, place: str, base: int, allocated: int, reserved: int, chunk: int):
        self.place = place
        self.cur = allocated
        self.res = max(reserved, allocated)
        self.peak = self.cur
        self.peak_res = self.res
        self.chunk = chunk
        self.base = base
        self.top = base
        self.free_blocks: Dict[int, List[int]] = collections.defaultdict(list)
        self.size_of: Dict[int, int] = {}
        self.frag = 0  # reserved bytes no allocation can use (fragment_bytes_per_step)


@dataclass
class _Entry:
    """One forward op as autograd remembers it: what its grad node will run."""

    grad: str  # e.g. "Matmul" -> Global_MatmulGradNode
    kernel: str  # e.g. "matmul_grad" -> "matmul_grad infer_meta" / "matmul_grad kernel launch"
    kernels: Tuple[str, ...]
    out_bytes: int
    saved: int  # address freed by the grad node, or 0
    params: int = 0  # parameters whose GradNodeAccumulation follows
    layer: int = -1  # decoder layer it belongs to (for DP buckets)
    comm: bool = False  # the grad kernel is an MP all-reduce


# ----------------------------------------------------------------------------- one rank


class _RankProgram:
    """One rank's training loop, run as a generator that yields when it needs the end time
    of a collective whose peers have not reached it yet."""

    def __init__(self, cfg: SynthConfig, topo: Topology, cat: _Catalog, rank: int, sink, book):
        self.cfg, self.topo, self.cat, self.rank = cfg, topo, cat, rank
        self.sink, self.book = sink, book
        c = topo.coords(rank)
        self.dp_i, self.pp_i, self.mp_i = c["dp"], c["pp"], c["mp"]
        self.rng = random.Random(cfg.seed * 1_000_003 + rank)
        rnd = self._rnd = self.rng.random
        self.pid = 30000 + 1000 * rank + int(rnd() * 900)
        self.device_id = rank % cfg.gpus_per_node
        if cfg.names == "default":  # the draw above still happens: other times stay the same
            self.pid = host_pids(cfg, host_of(cfg, rank))[self.device_id]
        self.main_tid = self.pid
        self.pin_tid = self.pid + 17 + int(rnd() * 60)
        self.slow = cfg.compute_factor(rank)
        self.lognormal = cfg.kernel_jitter == "lognormal"
        self.jitter_sigma = float(cfg.kernel_sigma)
        self.jitter_mu = -self.jitter_sigma ** 2 / 2  # mean factor 1
        # one_rank_comms: the tensor-parallel layers and the DP gradient all-reduce keep
        # their NCCL kernels on a communicator of one rank when mp or dp is 1
        self.mp_comm = cfg.mp > 1 or bool(cfg.one_rank_comms)
        self.dp_comm = cfg.dp > 1 or bool(cfg.one_rank_comms)
        self.pipe_names = bool(cfg.pipeline_layers) and cfg.pp > 1
        self.p2p_layout = cfg.p2p_streams
        self.paired_p2p = self.p2p_layout != "per_direction"
        self.comm_f = cfg.comm_factors()
        # launch_overhead: the host-time factor, in force from the host-to-device copies to
        # loss.item() (self.hf is 1 elsewhere); 1 leaves every draw and time as it was
        self.lo_f = float(cfg.launch_overhead)
        self.hf = 1.0
        self.leak = int(cfg.leak_bytes_per_step)
        self.frag = int(cfg.fragment_bytes_per_step)
        self.mem_end: List[Tuple[int, int]] = []  # (allocated, reserved) at each step's end
        self.pp_group = cfg.pp_group_on()
        self.compute_ns = [0] * cfg.steps
        self.host_delay = cfg.host_delay_ns(rank)
        self.t = EPOCH_NS + (int(rnd() * 200_000) & ~1)
        self.corr = 1000 + int(rnd() * 500)
        self.stream_free = {COMPUTE_STREAM: 0, MP_STREAM: 0, PP_FWD_STREAM: 0, PP_BWD_STREAM: 0,
                            DP_STREAM: 0, PP_GROUP_STREAM: 0, PP_FWD_RECV_STREAM: 0,
                            PP_BWD_RECV_STREAM: 0, P2P_PREV_STREAM: 0, P2P_NEXT_STREAM: 0}
        self.compute_wait: List = []
        self.step_idx = 0
        self.seq: Dict[str, int] = collections.defaultdict(int)
        per_stage = cfg.per_stage_layers()
        self.n_layers = per_stage[self.pp_i]
        self.layer0 = sum(per_stage[:self.pp_i])
        self.first_stage = self.pp_i == 0
        self.last_stage = self.pp_i == cfg.pp - 1
        # the pipeline schedule: model chunks of this stage and the (phase, micro-batch,
        # chunk) slots of a step in execution order; the chunk now running is virtual stage
        # chunk * pp + stage (vfirst / vlast: the model's first / last virtual stage)
        self.V = cfg.virtual_stages
        self.chunks = cfg.chunk_layers(self.pp_i)
        self.order = pipeline_order(cfg.schedule, cfg.pp, self.pp_i, cfg.micro_batches, self.V)
        self.chunk = 0
        self.vfirst, self.vlast = self.first_stage, self.last_stage
        self.slot: Optional[list] = None  # [first compute kernel's start, last one's end]
        # (step index, phase 0 = F / 1 = B, micro-batch, chunk, device start, device end)
        self.slots: List[Tuple[int, int, int, int, int, int]] = []
        self.leaked: List[int] = []
        self.pending_free: List[Tuple[_Allocator, int]] = []
        self.tape: Dict[int, List[_Entry]] = {}
        self.mb_buffers: Dict[int, List[int]] = collections.defaultdict(list)
        self.dp_handles: List = []
        self.batch_cpu: List[int] = []
        self.cur_mb = 0
        # ground truth, filled while recording
        self.steps: List[dict] = []
        self.comm_log: List[Tuple[str, int, int, int, int, int]] = []
        self._spec_ids: Dict[str, Tuple[int, int]] = {}
        self._setup_memory()

    # -- small helpers
    def _adv(self, lo: int, hi: int) -> None:
        v = (lo + int(self._rnd() * (hi - lo))) & ~1
        self.t += v if self.hf == 1.0 else int(v * self.hf) & ~1

    def _sc(self, v: int) -> int:
        """A host duration under launch_overhead (even; may be 0)."""
        return v if self.hf == 1.0 else int(v * self.hf) & ~1

    def _scd(self, v: int) -> int:
        """A launch latency (host call's end to the kernel's earliest start) under
        launch_overhead."""
        return v if self.hf == 1.0 else int(v * self.hf)

    # Host times stay even and memory timestamps odd, so a memory event never sits on a host
    # event's boundary and every nesting is unambiguous for Paddle's tree rules.
    def _open(self, name: str, etype: int) -> int:
        t = self.t = self.t + 2 + self._sc(int(self._rnd() * 600) & ~1)
        sink = self.sink
        return sink.host_open(sink.name_id(name), etype, self.main_tid, t)

    def _close(self, row: int) -> None:
        t = self.t = self.t + 2 + self._sc(int(self._rnd() * 600) & ~1)
        self.sink.host_close(row, t)

    def _leaf(self, name: str, etype: int, lo: int, hi: int) -> None:
        rnd, sink = self._rnd, self.sink
        sc = self._sc
        t = self.t + 2 + sc(int(rnd() * 600) & ~1)
        row = sink.host_open(sink.name_id(name), etype, self.main_tid, t)
        t += sc((lo + int(rnd() * (hi - lo))) & ~1)
        t += 2 + sc(int(rnd() * 600) & ~1)
        self.t = t
        sink.host_close(row, t)

    def _spec(self, key: str) -> Tuple[int, int]:
        ids = self._spec_ids.get(key)
        if ids is None:
            spec = self.cat.spec[key]
            ids = self._spec_ids[key] = (self.sink.name_id(spec.name), self.sink.spec_id(spec))
        return ids

    def _next_corr(self) -> int:
        self.corr += 1
        return self.corr

    def _runtime(self, name: str, lo: int, hi: int) -> Tuple[int, int, int]:
        start = self.t
        self._adv(lo, hi)
        if self.t == start:  # launch_overhead 0: still a 2 ns call, inside its operator
            self.t += 2
        corr = self._next_corr()
        self.sink.runtime(self.sink.name_id(name), self.main_tid, start, self.t, corr)
        return start, self.t, corr

    @staticmethod
    def _resolve(x):
        while x.end is None:
            yield x
        return x.end

    def _ready_after(self, t: int, deps: Iterable, gap: int = 0):
        """The later of ``t`` and each dependency's end plus ``gap``, waiting for any end
        still pending."""
        for d in deps:
            v = (d if type(d) is int else (yield from self._resolve(d))) + gap
            if v > t:
                t = v
        return t

    def _kernel_gap(self) -> int:
        return 700 + int(self.rng.random() * 900)

    def _xfer(self, key: tuple, nbytes: float, kind: str, factor: float = 1.0) -> int:
        jitter = (zlib.crc32(repr((self.cfg.seed,) + key).encode()) % 1000) / 1000.0
        x = int(8000 + factor * nbytes / self.cat.bw[kind] * 1e9 * (0.97 + 0.06 * jitter))
        cf = self.comm_f.get(_KEY_AXIS[key[0]])
        if cf is not None:  # comm_factor: the whole transfer (latency included) scales
            x = int(round(x * cf))
        return x

    # -- memory
    def _setup_memory(self) -> None:
        cfg, cat, rnd = self.cfg, self.cat, self.rng.random
        params = cat.layer_params * self.n_layers
        if self.first_stage or self.last_stage:
            params += cfg.vocab // cfg.mp * cfg.hidden
        static = params * 16
        per_layer = 14 * cat.act_bytes + 3 * cat.scores_bytes  # saved for backward
        budget = 60 * 1024 ** 3
        need = static + per_layer * self._inflight_layers()
        self.mem_scale = min(1.0, budget / need)
        chunk = 1 << 30
        base = 0x7F3A00000000 + (self.rank << 36)
        static = int(static * self.mem_scale)
        self.gpu = _Allocator("Place(gpu:%d)" % self.device_id, base, static,
                              -(-static // chunk) * chunk + chunk, chunk)
        host_now = 180_000_000 + int(rnd() * 20_000_000)  # what the process already holds
        self.cpu = _Allocator("Place(cpu)", 0x55D000000000 + (self.rank << 32), host_now,
                              host_now, 64 << 20)
        self.pinned = _Allocator("Place(gpu_pinned)", 0x7F9000000000 + (self.rank << 32), 0, 0,
                                 32 << 20)
        self.pinned_live: collections.deque = collections.deque()

    def _inflight_layers(self) -> int:
        """Decoder layers' activations alive at once at the schedule's peak (sizes memory)."""
        cfg = self.cfg
        if cfg.schedule == "gpipe":
            return self.n_layers * cfg.micro_batches
        if cfg.schedule == "interleaved":
            peak, live = 0, 0
            for phase, _, _ in self.order:
                live += 1 if phase == 0 else -1
                peak = max(peak, live)
            return self.n_layers // self.V * peak
        inflight = min(cfg.micro_batches, cfg.pp - self.pp_i) if cfg.pp > 1 else 1
        return self.n_layers * inflight

    def _set_chunk(self, chunk: int) -> None:
        self.chunk = chunk
        vs = chunk * self.cfg.pp + self.pp_i
        self.vfirst = vs == 0
        self.vlast = vs == self.cfg.pp * self.V - 1

    def _mem_event(self, a: _Allocator, mtype: int, addr: int, inc: int, tid: int) -> None:
        self.sink.mem(mtype, tid, self.t + 1, self.sink.place_id(a.place), addr, inc, a.cur,
                      a.res, a.peak, a.peak_res)
        self.t += 2

    def _alloc(self, a: _Allocator, size: int, tid: int = 0, raw: bool = False) -> int:
        tid = tid or self.main_tid
        if raw:  # exactly this many bytes (rounded up to the allocator's 256)
            size = max(256, -(-int(size) // 256) * 256)
        else:
            size = max(256, -(-int(size * (self.mem_scale if a is self.gpu else 1.0)) // 256)
                       * 256)
        while a.cur + size > a.res - a.frag:
            grow = max(a.chunk, -(-(a.cur + size - a.res) // a.chunk) * a.chunk)
            a.res += grow
            a.peak_res = max(a.peak_res, a.res)
            self._mem_event(a, RESERVED_ALLOCATE, a.top, grow, tid)
        blocks = a.free_blocks.get(size)
        if blocks:
            addr = blocks.pop()
        else:
            addr = a.top
            a.top += size
        a.size_of[addr] = size
        a.cur += size
        if a.cur > a.peak:
            a.peak = a.cur
        self._mem_event(a, ALLOCATE, addr, size, tid)
        return addr

    def _free(self, a: _Allocator, addr: int, tid: int = 0) -> None:
        size = a.size_of.pop(addr)
        a.cur -= size
        a.free_blocks[size].append(addr)
        self._mem_event(a, FREE, addr, -size, tid or self.main_tid)

    def _trim(self, a: _Allocator) -> None:
        """Give one cached chunk back when much more is reserved than allocated."""
        if a.res - a.cur - a.frag > 3 * a.chunk:
            a.res -= a.chunk
            self._mem_event(a, RESERVED_FREE, a.base + a.res, -a.chunk, self.main_tid)

    def _fragment(self, nbytes: int) -> None:
        """fragment_bytes_per_step: the allocator reserves a segment for a temporary that is
        freed at once, and the segment stays cached but unusable (reserved - allocated grows
        by ``nbytes``, rounded up to 256)."""
        a = self.gpu
        n = max(256, -(-int(nbytes) // 256) * 256)
        addr = a.top
        a.res += n
        a.peak_res = max(a.peak_res, a.res)
        a.frag += n
        self._mem_event(a, RESERVED_ALLOCATE, addr, n, self.main_tid)
        a.top += n
        a.cur += n
        a.peak = max(a.peak, a.cur)
        self._mem_event(a, ALLOCATE, addr, n, self.main_tid)
        a.cur -= n
        self._mem_event(a, FREE, addr, -n, self.main_tid)

    def _flush_frees(self) -> None:
        for a, addr in self.pending_free:
            self._free(a, addr)
        self.pending_free.clear()

    # -- device work
    def _kdur(self, key: str) -> int:
        """A compute kernel's duration: the catalogue's, jittered, slowed on the slow rank
        and by ``slow_kernel``."""
        if self.lognormal:
            d = self.cat.ns[key] * self.rng.lognormvariate(self.jitter_mu, self.jitter_sigma) \
                * self.slow
        else:
            d = self.cat.ns[key] * (0.97 + 0.06 * self.rng.random()) * self.slow
        f = self.cat.kernel_factor.get(key)
        if f is not None:
            d *= f
        return int(d)

    def _launch(self, key: str):
        """cudaLaunchKernel of one compute kernel on the compute stream."""
        _, rt_end, corr = self._runtime(_LAUNCH, 2400, 5200)
        ready = rt_end + self._scd(400 + int(self.rng.random() * 1200))
        free = self.stream_free[COMPUTE_STREAM]
        deps = self.compute_wait
        if deps:
            self.compute_wait = []
            ready = yield from self._ready_after(ready, deps, self._kernel_gap())
        # a queued kernel starts a little after the one before it, as on real GPUs
        ready = yield from self._ready_after(ready, (free,), self._kernel_gap())
        end = ready + self._kdur(key)
        self.compute_ns[self.step_idx] += end - ready
        self.stream_free[COMPUTE_STREAM] = end
        nid, sid = self._spec(key)
        self.sink.device_event(nid, KERNEL, COMPUTE_STREAM, ready, end, corr, sid)
        if self.slot is not None:
            if self.slot[0] is None:
                self.slot[0] = ready
            self.slot[1] = end
        self.t += self._sc(200 + (int(self.rng.random() * 600) & ~1))

    def _nccl(self, spec_key: str, kind: str, key: tuple, size: int, xfer: int, stream: int,
              role: int = 0):
        """cudaLaunchKernel of an NCCL kernel; returns its end (or a pending end).

        On a communication stream the kernel first waits for the compute stream (Paddle
        records an event there so the data it sends is ready)."""
        _, rt_end, corr = self._runtime(_LAUNCH, 2800, 6400)
        ready = rt_end + self._scd(500 + int(self.rng.random() * 1500))
        gap = self._kernel_gap()
        deps = [self.stream_free[stream]]
        if stream != COMPUTE_STREAM:
            deps.append(self.stream_free[COMPUTE_STREAM])
        elif self.compute_wait:
            deps.extend(self.compute_wait)
            self.compute_wait = []
        start = yield from self._ready_after(ready, deps, gap)
        end = self.book.launch(self.rank, key, size, start, xfer, self.cfg.first_step + self.step_idx,
                               role)
        self.stream_free[stream] = end
        nid, sid = self._spec(spec_key)
        row = self.sink.device_event(nid, KERNEL, stream, start, end, corr, sid)
        if row >= 0:
            self.comm_log.append((kind, self.step_idx, row, start, end, xfer))
        self.t += self._sc(200 + (int(self.rng.random() * 600) & ~1))
        return end

    def _mp_key(self) -> tuple:
        self.seq["mp"] += 1
        return ("mp", self.dp_i, self.pp_i, self.step_idx, self.seq["mp"])

    def _mp_allreduce(self, nbytes: int, spec_key: str = "nccl_mp", stream: int = MP_STREAM):
        key = self._mp_key()
        mp = self.cfg.mp
        xfer = self._xfer(key, nbytes, "mp", 2.0 * (mp - 1) / mp)
        return (yield from self._nccl(spec_key, "mp_allreduce", key, mp, xfer, stream))

    # -- operators
    def _op(self, name: str, kernels: Sequence[str] = (), out: int = 0, saved: bool = False,
            grad: Optional[Tuple[str, str, Tuple[str, ...]]] = None, params: int = 0,
            pybind: bool = False, layer: int = -1, grad_comm: bool = False):
        """``<name> dygraph`` with node_creation, infer_meta and a kernel launch that allocates
        the output and launches ``kernels``; records its grad node on the tape."""
        wrap = None
        if pybind:
            wrap = self._open(name + " pybind_imperative_func", USER_DEFINED)
            self._adv(600, 2400)
        row = self._open(name + " dygraph", OPERATOR)
        self._adv(400, 1800)
        if grad is not None:
            self._leaf(name + " node_creation", OPERATOR_INNER, 300, 1400)
        self._leaf(name + " infer_meta", OPERATOR_INNER, 200, 1800)
        lrow = self._open(name + " kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1400)
        addr = self._alloc(self.gpu, out) if out else 0
        for key in kernels:
            yield from self._launch(key)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1500)
        self._close(row)
        if wrap is not None:
            self._adv(400, 1600)
            self._close(wrap)
        self._flush_frees()
        keep = saved and grad is not None
        if addr and not keep:
            self.pending_free.append((self.gpu, addr))
        if grad is not None:
            gname, gkernel, gkernels = grad
            self.tape[self.cur_mb].append(_Entry(gname, gkernel, gkernels,
                                                 out or self.cat.act_bytes, addr if keep else 0,
                                                 params, layer, grad_comm))
        self._adv(6000, 22_000)  # Python between ops

    def _allreduce_op(self, nbytes: int):
        """``c_allreduce_sum dygraph``: the MP all-reduce of a row-parallel layer's output."""
        row = self._open("c_allreduce_sum dygraph", OPERATOR)
        self._adv(400, 1600)
        self._leaf("c_allreduce_sum infer_meta", OPERATOR_INNER, 200, 900)
        lrow = self._open("c_allreduce_sum kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1200)
        end = yield from self._mp_allreduce(nbytes)
        self.compute_wait.append(end)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1200)
        self._close(row)
        self._adv(1500, 5000)

    def _layer(self, name: str) -> int:
        row = self._open(name, FORWARD)
        self._adv(2000, 7000)
        return row

    def _end_layer(self, row: int) -> None:
        self._adv(800, 3000)
        self._flush_frees()
        self._close(row)

    def _linear(self, cls: str, key: str, layer: int, row_parallel: bool):
        cfg = self.cfg
        lname = cls if self.mp_comm else "Linear"
        L = self._layer(lname)
        if self.mp_comm and not row_parallel:
            yield from self._op("c_identity", (), grad=("CIdentity", "c_identity_grad", ("nccl",)),
                                layer=layer, grad_comm=True)
        yield from self._op("matmul", (key,), out=self.cat.act_bytes, saved=True,
                            grad=("Matmul", "matmul_grad", (key + "_dx", key + "_dw")), params=1,
                            layer=layer)
        if self.mp_comm and row_parallel:
            yield from self._allreduce_op(self.cat.act_bytes)
        yield from self._op("add", ("add",), out=self.cat.act_bytes,
                            grad=("Add", "add_grad", ("bias_grad",)), params=1, layer=layer)
        self._end_layer(L)

    def _decoder_layer(self, layer: int):
        act = self.cat.act_bytes
        L = self._layer("GPTDecoderLayer")
        ln = self._layer("LayerNorm")
        yield from self._op("layer_norm", ("layer_norm",), out=act, saved=True, pybind=True,
                            grad=("LayerNorm", "layer_norm_grad",
                                  ("layer_norm_grad", "layer_norm_grad_sb")), params=2,
                            layer=layer)
        self._end_layer(ln)
        att = self._layer("MultiHeadAttention")
        yield from self._linear("ColumnParallelLinear", "qkv", layer, False)
        yield from self._op("reshape", (), out=0, pybind=True,
                            grad=("Reshape", "reshape_grad", ()), layer=layer)
        yield from self._op("transpose", ("transpose",), out=act, saved=False, pybind=True,
                            grad=("Transpose", "transpose_grad", ("transpose",)), layer=layer)
        yield from self._op("matmul", ("qk",), out=self.cat.scores_bytes, saved=True, pybind=True,
                            grad=("Matmul", "matmul_grad", ("qk_grad_a", "qk_grad_b")), layer=layer)
        yield from self._op("scale", ("scale",), out=self.cat.scores_bytes,
                            grad=("Scale", "scale", ("scale",)), layer=layer)
        yield from self._op("softmax", ("softmax",), out=self.cat.scores_bytes, saved=True,
                            pybind=True, grad=("Softmax", "softmax_grad", ("softmax_grad",)),
                            layer=layer)
        dr = self._layer("Dropout")
        yield from self._op("dropout", ("dropout_attn",), out=self.cat.scores_bytes, saved=True,
                            grad=("Dropout", "dropout_grad", ("dropout_attn_grad",)), layer=layer)
        self._end_layer(dr)
        yield from self._op("matmul", ("av",), out=act, saved=True, pybind=True,
                            grad=("Matmul", "matmul_grad", ("av_grad_a", "av_grad_b")), layer=layer)
        yield from self._op("transpose", ("transpose",), out=act, pybind=True,
                            grad=("Transpose", "transpose_grad", ("transpose",)), layer=layer)
        yield from self._op("reshape", (), pybind=True, grad=("Reshape", "reshape_grad", ()),
                            layer=layer)
        yield from self._linear("RowParallelLinear", "proj", layer, True)
        self._end_layer(att)
        dr = self._layer("Dropout")
        yield from self._op("dropout", ("dropout",), out=act, saved=True,
                            grad=("Dropout", "dropout_grad", ("dropout_grad",)), layer=layer)
        self._end_layer(dr)
        yield from self._op("add", ("add",), out=act, grad=("Add", "add_grad", ()), layer=layer)
        ln = self._layer("LayerNorm")
        yield from self._op("layer_norm", ("layer_norm",), out=act, saved=True, pybind=True,
                            grad=("LayerNorm", "layer_norm_grad",
                                  ("layer_norm_grad", "layer_norm_grad_sb")), params=2,
                            layer=layer)
        self._end_layer(ln)
        mlp = self._layer("GPTMLP")
        yield from self._linear("ColumnParallelLinear", "fc1", layer, False)
        yield from self._op("gelu", ("gelu",), out=4 * act // self.cfg.mp, saved=True, pybind=True,
                            grad=("Gelu", "gelu_grad", ("gelu_grad",)), layer=layer)
        yield from self._linear("RowParallelLinear", "fc2", layer, True)
        self._end_layer(mlp)
        dr = self._layer("Dropout")
        yield from self._op("dropout", ("dropout",), out=act, saved=True,
                            grad=("Dropout", "dropout_grad", ("dropout_grad",)), layer=layer)
        self._end_layer(dr)
        yield from self._op("add", ("add",), out=act, grad=("Add", "add_grad", ()), layer=layer)
        self._end_layer(L)

    def _embeddings(self):
        act = self.cat.act_bytes
        E = self._layer("EmbeddingPipe" if self.pipe_names else "GPTEmbeddings")
        if self.mp_comm:
            V = self._layer("VocabParallelEmbedding")
            yield from self._op("c_embedding", ("embedding",), out=act, pybind=True,
                                grad=("CEmbedding", "c_embedding_grad", ("embedding_grad",)),
                                params=1)
            yield from self._allreduce_op(act)
        else:
            V = self._layer("Embedding")
            yield from self._op("embedding", ("embedding",), out=act, pybind=True,
                                grad=("Embedding", "embedding_grad", ("embedding_grad",)), params=1)
        self._end_layer(V)
        yield from self._op("add", ("add",), out=act, grad=("Add", "add_grad", ()))
        dr = self._layer("Dropout")
        yield from self._op("dropout", ("dropout",), out=act, saved=True,
                            grad=("Dropout", "dropout_grad", ("dropout_grad",)))
        self._end_layer(dr)
        self._end_layer(E)

    def _final_norm_and_head(self):
        act, T = self.cat.act_bytes, self.cat.T
        pipe = self._layer("HeadPipe") if self.pipe_names else None
        ln = self._layer("LayerNorm")
        yield from self._op("layer_norm", ("layer_norm",), out=act, saved=True, pybind=True,
                            grad=("LayerNorm", "layer_norm_grad",
                                  ("layer_norm_grad", "layer_norm_grad_sb")), params=2)
        self._end_layer(ln)
        head = self._layer("GPTLMHead")
        if self.mp_comm:
            yield from self._op("c_identity", (), grad=("CIdentity", "c_identity_grad", ("nccl",)),
                                grad_comm=True)
        yield from self._op("matmul", ("lm_head",), out=T * self.cfg.vocab * 2 // self.cfg.mp,
                            saved=True, grad=("Matmul", "matmul_grad", ("lm_head_dx", "lm_head_dw")),
                            params=1)
        self._end_layer(head)
        if pipe is not None:
            self._end_layer(pipe)

    def _criterion(self):
        """GPTPretrainingCriterion: (parallel) cross entropy and the mean loss."""
        T, mp = self.cat.T, self.cfg.mp
        C = self._layer("GPTPretrainingCriterion")
        if self.mp_comm:
            row = self._open("c_softmax_with_cross_entropy dygraph", OPERATOR)
            self._adv(500, 2000)
            self._leaf("c_softmax_with_cross_entropy node_creation", OPERATOR_INNER, 300, 1200)
            self._leaf("c_softmax_with_cross_entropy infer_meta", OPERATOR_INNER, 300, 1500)
            lrow = self._open("c_softmax_with_cross_entropy kernel launch", DYGRAPH_KERNEL_LAUNCH)
            self._adv(300, 1200)
            addr = self._alloc(self.gpu, T * 4)
            saved = self._alloc(self.gpu, T * self.cfg.vocab * 2 // mp)
            # the op reduces max and sum over the model-parallel group on the calc stream
            yield from self._launch("ce")
            yield from self._mp_allreduce(T * 4, "nccl_ce_max", COMPUTE_STREAM)
            yield from self._launch("ce")
            yield from self._mp_allreduce(T * 4, "nccl_ce_sum", COMPUTE_STREAM)
            yield from self._launch("ce")
            self._adv(200, 800)
            self._close(lrow)
            self._adv(300, 1200)
            self._close(row)
            self._flush_frees()
            self.pending_free.append((self.gpu, addr))
            self.tape[self.cur_mb].append(_Entry("CSoftmaxWithCrossEntropy",
                                                 "c_softmax_with_cross_entropy_grad", ("ce_grad",),
                                                 T * self.cfg.vocab * 2 // mp, saved))
            self._adv(1500, 5000)
        else:
            yield from self._op("cross_entropy_with_softmax", ("ce",), out=T * 4, saved=True,
                                pybind=True, grad=("CrossEntropyWithSoftmax",
                                                   "cross_entropy_with_softmax_grad", ("ce_grad",)))
        yield from self._op("mean", ("mean",), out=256, pybind=True,
                            grad=("Mean", "mean_grad", ("mean_grad",)))
        self._end_layer(C)

    def _forward(self, mb: int):
        self.cur_mb = mb * self.V + self.chunk
        self.tape[self.cur_mb] = []
        # Paddle's interleaved pipeline calls each model chunk (a PipelineLayerChunk)
        model = ("PipelineLayerChunk" if self.V > 1 else
                 "GPTForCausalLMPipe" if self.cfg.pp > 1 else "GPTForCausalLM")
        F = self._layer(model)
        if self.vfirst:
            yield from self._embeddings()
        layer0, n_layers = self.chunks[self.chunk]
        for i in range(n_layers):
            yield from self._decoder_layer(layer0 + i)
        if self.vlast:
            yield from self._final_norm_and_head()
        self._end_layer(F)
        if self.vlast:
            yield from self._criterion()

    # -- backward
    def _grad_node(self, e: _Entry):
        g = self._open("Global_%sGradNode" % e.grad, OPERATOR)
        self._adv(300, 1200)
        loc = self._open("Local_%sGradNode" % e.grad, OPERATOR_INNER)
        self._adv(400, 2400)
        self._leaf(e.kernel + " infer_meta", OPERATOR_INNER, 200, 1500)
        lname = ("c_allreduce_sum" if e.comm else e.kernel) + " kernel launch"
        lrow = self._open(lname, DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1400)
        addr = self._alloc(self.gpu, e.out_bytes) if e.kernels and not e.comm else 0
        if e.comm:
            end = yield from self._mp_allreduce(self.cat.act_bytes)
            self.compute_wait.append(end)
        else:
            for key in e.kernels:
                yield from self._launch(key)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1500)
        self._close(loc)
        self._adv(200, 900)
        if e.saved:
            self._free(self.gpu, e.saved)
        self._flush_frees()
        self._close(g)
        if addr:
            self.pending_free.append((self.gpu, addr))
        for _ in range(e.params):
            self._leaf("Global_GradNodeAccumulation", OPERATOR, 600, 2400)
        self._adv(300, 1500)

    def _dp_bucket(self, nbytes: int):
        """The fused gradient all-reduce of one bucket, a Communication event."""
        self.seq["dp"] += 1
        key = ("dp", self.pp_i, self.mp_i, self.step_idx, self.seq["dp"])
        dp = self.cfg.dp
        xfer = self._xfer(key, nbytes, "dp", 2.0 * (dp - 1) / dp)
        row = self._open("allreduce_grads", COMMUNICATION)
        self._adv(800, 3000)
        end = yield from self._nccl("nccl_dp", "dp_allreduce", key, dp, xfer, DP_STREAM)
        self.dp_handles.append(end)
        self._adv(400, 1500)
        self._close(row)

    def _backward(self, mb: int, last: bool):
        """One micro-batch's (chunk's) backward; ``last``: its chunk's last one, after which
        the chunk's gradients are all-reduced over DP."""
        self.cur_mb = mb * self.V + self.chunk
        B = self._open("Gradient Backward", BACKWARD)
        self._adv(3000, 9000)
        tape = self.tape.pop(self.cur_mb)
        dp_on = last and self.dp_comm
        bucket_layers = self.cfg.dp_bucket_layers
        pending = 0  # decoder layers whose gradients are complete but not yet all-reduced
        cur_layer = None
        for e in reversed(tape):
            if dp_on and e.layer != cur_layer:
                if cur_layer is not None and cur_layer >= 0:
                    pending += 1
                    if pending == bucket_layers:
                        yield from self._dp_bucket(pending * self.cat.layer_grad_bytes)
                        pending = 0
                cur_layer = e.layer
            yield from self._grad_node(e)
        if dp_on:
            if cur_layer is not None and cur_layer >= 0:
                pending += 1
            nbytes = pending * self.cat.layer_grad_bytes
            if self.vfirst or self.vlast:
                nbytes += self.cat.embed_grad_bytes
            if nbytes:
                yield from self._dp_bucket(nbytes)
        for addr in self.mb_buffers.pop(self.cur_mb, []):
            self._free(self.gpu, addr)
        self._adv(2000, 6000)
        self._flush_frees()
        self._close(B)

    # -- pipeline
    def _p2p(self, send: bool, fwd: bool, mb: int):
        """``send_v2``/``recv_v2`` of one micro-batch's activations (fwd) or gradients."""
        vs = self.chunk * self.cfg.pp + self.pp_i  # the virtual stage (the stage, if V = 1)
        link = vs if (send == fwd) else vs - 1
        key = ("pf" if fwd else "pb", self.dp_i, self.mp_i, link, self.step_idx, mb)
        xfer = self._xfer(key, self.cat.act_bytes, "pp")
        name = "send_v2" if send else "recv_v2"
        row = self._open(name + " dygraph", OPERATOR)
        self._adv(500, 2000)
        self._leaf(name + " infer_meta", OPERATOR_INNER, 200, 1000)
        lrow = self._open(name + " kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1200)
        addr = 0 if send else self._alloc(self.gpu, self.cat.act_bytes)
        stream = PP_FWD_STREAM if fwd else PP_BWD_STREAM
        if self.p2p_layout == "shared":
            stream = P2P_SHARED_STREAM
        elif self.p2p_layout == "per_peer":  # the neighbour is the next stage when
            stream = P2P_NEXT_STREAM if send == fwd else P2P_PREV_STREAM  # sending forward
        elif self.V > 1 and not send:
            # interleaved: a stage sends to and receives from both neighbours in one
            # direction, so receives run on their own streams (no cycle of stream order)
            stream = PP_FWD_RECV_STREAM if fwd else PP_BWD_RECV_STREAM
        end = yield from self._nccl("nccl_pp", "pp_sendrecv", key, 2, xfer, stream,
                                    0 if send else 1)
        if not send:
            self.compute_wait.append(end)
            self.mb_buffers[mb * self.V + self.chunk].append(addr)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1200)
        self._close(row)
        self._adv(2000, 6000)

    def _pp_group_op(self, op: str, spec_key: str, key0: str, nbytes: int, role: int = 0):
        """One collective over the pipeline's stages (dygraph operator ``op``) on the pipeline
        group's stream; the compute stream waits for its result (``sync_op=True``)."""
        self.seq[key0] += 1
        key = (key0, self.dp_i, self.mp_i, self.step_idx, self.seq[key0])
        pp = self.cfg.pp
        factor = 2.0 * (pp - 1) / pp if key0 == "clip" else 1.0
        xfer = self._xfer(key, nbytes, "pp", factor)
        row = self._open(op + " dygraph", OPERATOR)
        self._adv(500, 2000)
        self._leaf(op + " infer_meta", OPERATOR_INNER, 200, 1000)
        lrow = self._open(op + " kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1200)
        end = yield from self._nccl(spec_key, PP_GROUP_KIND, key, pp, xfer, PP_GROUP_STREAM, role)
        self.compute_wait.append(end)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1200)
        self._close(row)
        self._adv(2000, 6000)

    def _broadcast_final_loss(self):
        """PipelineParallel._broadcast_final_loss: the last stage broadcasts whether the loss
        is fp32, then the loss, to every stage of its pipeline."""
        role = 0 if self.last_stage else 1
        yield from self._pp_group_op("broadcast", "nccl_bcast", "bcast", 4, role)
        yield from self._pp_group_op("broadcast", "nccl_bcast", "bcast", 4, role)

    def _clip_global_norm(self):
        """HybridParallelClipGrad: the squared norms of this stage's gradients, summed over
        the pipeline group by an all-reduce."""
        row = self._open("squared_l2_norm dygraph", OPERATOR)
        self._adv(500, 2000)
        self._leaf("squared_l2_norm infer_meta", OPERATOR_INNER, 200, 1000)
        lrow = self._open("squared_l2_norm kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1200)
        yield from self._launch("squared_l2_norm")
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1200)
        self._close(row)
        self._adv(2000, 6000)
        yield from self._pp_group_op("c_allreduce_sum", "nccl_clip", "clip", 4)

    # A slot is its receive (of activations before a forward, of gradients before a
    # backward), its compute and its send. With p2p_streams "shared" or "per_peer" the send
    # after a slot and the receive before the next go out together, as in Paddle's
    # send_forward_recv_backward / send_backward_recv_forward, in an order both neighbours
    # keep (a blocked NCCL kernel holds its stream): with one neighbour, the activations
    # first, then the gradients; with both (warm-up, GPipe, cool-down), even stages send
    # first and odd stages receive first.
    def _recv_first(self, phase: int, next_phase: int) -> bool:
        if phase != next_phase:  # F then B: both with the next stage; B then F: the previous
            return phase == 1
        return self.pp_i % 2 == 1
    def _has_recv(self, phase: int) -> bool:
        return not (self.vfirst if phase == 0 else self.vlast)

    def _has_send(self, phase: int) -> bool:
        return not (self.vlast if phase == 0 else self.vfirst)

    def _recv(self, phase: int, mb: int):
        if self._has_recv(phase):
            yield from self._p2p(False, phase == 0, mb)

    def _send(self, phase: int, mb: int):
        if self._has_send(phase):
            yield from self._p2p(True, phase == 0, mb)

    def _pp_forward(self, mb: int, recv: bool = True):
        if recv:
            yield from self._recv(0, mb)
        yield from self._forward(mb)

    def _pp_backward(self, mb: int, last: bool, recv: bool = True):
        if recv:
            yield from self._recv(1, mb)
        yield from self._backward(mb, last)

    # -- step pieces
    def _dataloader(self):
        row = self._open("_DataLoaderIterMultiProcess", DATALOADER)
        self._adv(20_000, 60_000)
        # a host-side straggler waits this much longer for its batch (no random draw, so the
        # other ranks' and the default output's events stay exactly as they were)
        self.t += self.host_delay
        # the pin-memory thread prepared this batch a moment ago; it frees the batch before last
        pin_t = self.t
        self.t -= 18_000
        if len(self.pinned_live) >= 4:
            for _ in range(2):
                self._free(self.pinned, self.pinned_live.popleft(), self.pin_tid)
        for _ in range(2):
            self.pinned_live.append(self._alloc(self.pinned, self.cat.T * 8, self.pin_tid))
        self.t = pin_t
        if self.batch_cpu:
            for addr in self.batch_cpu:
                self._free(self.cpu, addr)
        self.batch_cpu = [self._alloc(self.cpu, self.cat.T * 8) for _ in range(2)]
        self._adv(40_000, 160_000)
        self._close(row)
        self._adv(3000, 9000)

    def _h2d(self, copies: int = 2):
        addrs = []
        for _ in range(copies):  # input ids and labels
            row = self._open("GpuMemcpyAsync:CPU->GPU", USER_DEFINED)
            self._adv(800, 2500)
            addrs.append(self._alloc(self.gpu, self.cat.T * 8))
            _, rt_end, corr = self._runtime(_MEMCPY_ASYNC, 3000, 7000)
            ready = rt_end + self._scd(800)
            free = self.stream_free[COMPUTE_STREAM]
            start = yield from self._ready_after(ready, (free,), self._kernel_gap())
            end = start + 1500 + int(self.cat.T * 8 / 22e9 * 1e9)
            self.stream_free[COMPUTE_STREAM] = end
            self.sink.device_event(self.sink.name_id("MEMCPY_HtoD"), MEMCPY, COMPUTE_STREAM,
                                   start, end, corr, self.cat.T * 8)
            self._adv(500, 1500)
            self._close(row)
        if copies:
            self._adv(3000, 8000)
        return addrs

    def _optimizer(self):
        O = self._open("Optimization Step", OPTIMIZATION)
        self._adv(20_000, 60_000)
        self.compute_wait.extend(self.dp_handles)
        self.dp_handles = []
        if self.pp_group:
            yield from self._clip_global_norm()
        n_params = 12 * self.n_layers + (2 if self.first_stage else 0) + (3 if self.last_stage else 0)
        for _ in range(n_params):
            w = self._open("adamw_ pybind_imperative_func", USER_DEFINED)
            self._adv(600, 2000)
            row = self._open("adamw_ dygraph", OPERATOR)
            self._adv(1500, 6000)
            self._leaf("adamw_ infer_meta", OPERATOR_INNER, 400, 2000)
            lrow = self._open("adamw kernel launch", DYGRAPH_KERNEL_LAUNCH)
            self._adv(300, 1200)
            yield from self._launch("adamw")
            self._adv(200, 800)
            self._close(lrow)
            self._adv(300, 1500)
            self._close(row)
            self._adv(300, 1200)
            self._close(w)
            self._adv(1500, 5000)
        # clear_grad: zero the fused gradient buffer
        row = self._open("full_ dygraph", OPERATOR)
        self._adv(500, 2000)
        self._leaf("full_ infer_meta", OPERATOR_INNER, 200, 1000)
        lrow = self._open("full kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1200)
        for _ in range(2):
            _, rt_end, corr = self._runtime(_MEMSET_ASYNC, 2500, 5000)
            start = yield from self._ready_after(rt_end + self._scd(700),
                                                 (self.stream_free[COMPUTE_STREAM],),
                                                 self._kernel_gap())
            nbytes = self.cat.layer_grad_bytes * max(1, self.n_layers) // 2
            end = start + 2000 + int(nbytes / 2.8e12 * 1e9)
            self.stream_free[COMPUTE_STREAM] = end
            self.sink.device_event(self.sink.name_id("MEMSET"), MEMSET, COMPUTE_STREAM, start, end,
                                   corr, nbytes)
            self._adv(300, 900)
        self._close(lrow)
        self._adv(300, 1200)
        self._close(row)
        self._adv(5000, 15_000)
        self._close(O)

    def _loss_sync(self):
        """``loss.item()``: a synchronous device-to-host copy that waits for the GPU."""
        row = self._open("GpuMemcpySync:GPU->CPU", USER_DEFINED)
        self._adv(800, 2500)
        addr = self._alloc(self.cpu, 4)
        rt_start = self.t
        corr = self._next_corr()
        start = yield from self._ready_after(rt_start + self._scd(2500),
                                             (self.stream_free[COMPUTE_STREAM],),
                                             self._kernel_gap())
        end = start + 500 + int(self.rng.random() * 450)  # a 4-byte copy: under 1 us
        self.stream_free[COMPUTE_STREAM] = end
        self.t = max(self.t + self._sc(4000),
                     end + self._sc(2000 + int(self.rng.random() * 2000))) & ~1
        self.sink.runtime(self.sink.name_id(_MEMCPY_SYNC), self.main_tid, rt_start, self.t, corr)
        self.sink.device_event(self.sink.name_id("MEMCPY_DtoH"), MEMCPY, COMPUTE_STREAM, start, end,
                               corr, 4)
        self._adv(300, 900)
        self._runtime(_STREAM_SYNC, 1200, 3000)
        self._adv(300, 900)
        self._close(row)
        self._adv(2000, 6000)
        return addr

    def run(self):
        cfg = self.cfg
        for si in range(cfg.steps):
            self.step_idx = si
            self.seq.clear()
            row0 = self.sink.n_device
            ps = self._open("ProfileStep#%d" % (cfg.first_step + si), PROFILE_STEP)
            start = self.t
            self._adv(5000, 15_000)
            if self.pipe_names and not self.first_stage:
                # pipeline_layers: only the first stage reads the batch; a host stall
                # still holds this rank's host at the start of the step
                self.t += self.host_delay
            else:
                self._dataloader()
            self.hf = self.lo_f  # launch_overhead: from here to loss.item()
            # the first stage copies the input ids and labels to the GPU; with
            # pipeline_layers the last one copies the labels, the middle ones nothing
            copies = 2 if not self.pipe_names or self.first_stage else int(self.last_stage)
            inputs = yield from self._h2d(copies)
            M = cfg.micro_batches
            order = self.order
            received = False  # this slot's receive went out with the slot before's send
            for k, (phase, mb, chunk) in enumerate(order):
                self._set_chunk(chunk)
                self.slot = [None, None]
                if phase == 0:
                    yield from self._pp_forward(mb, not received)
                else:
                    yield from self._pp_backward(mb, mb == M - 1, not received)
                received = False
                if (self.paired_p2p and k + 1 < len(order) and self._has_send(phase)
                        and self._has_recv(order[k + 1][0])
                        and self._recv_first(phase, order[k + 1][0])):
                    yield from self._recv(order[k + 1][0], order[k + 1][1])
                    received = True
                yield from self._send(phase, mb)
                self.slots.append((si, phase, mb, chunk, self.slot[0], self.slot[1]))
                self.slot = None
            if self.pp_group:
                yield from self._broadcast_final_loss()
            yield from self._optimizer()
            loss = yield from self._loss_sync()
            self.hf = 1.0
            L = self._open("log_metrics", PYTHON_USER_DEFINED)
            self._adv(20_000, 80_000)
            self._free(self.cpu, loss)
            if self.leak:  # a planted leak: a GPU tensor kept (e.g. in a metrics list) per step
                self.leaked.append(self._alloc(self.gpu, self.leak, raw=True))
            if self.frag:
                self._fragment(self.frag)
            for addr in inputs:
                self._free(self.gpu, addr)
            self._trim(self.gpu)
            self.mem_end.append((self.gpu.cur, self.gpu.res))
            self._adv(3000, 9000)
            self._close(L)
            self._adv(5000, 20_000)
            self._close(ps)
            self.steps.append({"step": cfg.first_step + si, "start_ns": start,
                               "end_ns": self.t, "device_rows": (row0, self.sink.n_device)})
            self._adv(8000, 30_000)


def pipeline_order(schedule: str, pp: int, stage: int, micro_batches: int,
                   virtual_stages: int = 1) -> List[Tuple[int, int, int]]:
    """A stage's slots of one step in execution order: (phase 0 = forward / 1 = backward,
    micro-batch, model chunk).

    * ``1f1b``: min(pp - stage - 1, M) warm-up forwards, then one forward and one backward
      in turn, then the remaining backwards (PipelineParallel.forward_backward_pipeline).
    * ``gpipe``: every forward, then every backward, micro-batches in order.
    * ``interleaved`` (PipelineParallelWithInterleave, Megatron's interleaved 1F1B): M x V
      virtual micro-steps; step k runs micro-batch (k // (pp V)) pp + k % pp on chunk
      (k % (pp V)) // pp (backwards: V - 1 minus that); (pp - stage - 1) * 2 + (V - 1) pp
      warm-up forwards (all M V of them when M == pp), then 1F1B, then the rest.
    """
    M, V = micro_batches, virtual_stages
    if schedule == "gpipe":
        return [(0, m, 0) for m in range(M)] + [(1, m, 0) for m in range(M)]
    if schedule == "1f1b":
        warm = min(pp - stage - 1, M)
        out = [(0, m, 0) for m in range(warm)]
        for j in range(M - warm):
            out += [(0, warm + j, 0), (1, j, 0)]
        return out + [(1, j, 0) for j in range(M - warm, M)]
    if schedule != "interleaved":
        raise ValueError("unknown schedule %r" % schedule)
    total = M * V

    def slot(k: int, fwd: bool) -> Tuple[int, int, int]:
        group, i = divmod(k, pp * V)
        c = i // pp
        return (0 if fwd else 1, group * pp + i % pp, c if fwd else V - 1 - c)

    warm = total if M == pp else min((pp - stage - 1) * 2 + (V - 1) * pp, total)
    out = [slot(k, True) for k in range(warm)]
    for k in range(total - warm):
        out += [slot(k + warm, True), slot(k, False)]
    return out + [slot(k, False) for k in range(total - warm, total)]


def _drive_alone(prog: _RankProgram) -> None:
    for pending in prog.run():
        raise AssertionError("rank %d waited on a collective while re-run alone" % prog.rank)


def _simulate_together(cfg: SynthConfig, topo: Topology, cat: _Catalog,
                       record: bool = True) -> _LiveBook:
    """Phase 1: run every rank's program, unrecorded, until all collectives are timed
    (``record``: also keep every instance with its members, for the truth)."""
    book = _LiveBook(record)
    progs = [_RankProgram(cfg, topo, cat, r, _NullSink(), book) for r in range(topo.world)]
    gens = [p.run() for p in progs]
    runnable = collections.deque(range(topo.world))
    done = 0
    while runnable:
        r = runnable.popleft()
        try:
            pending = next(gens[r])
        except StopIteration:
            done += 1
            book.finished(progs[r])
            progs[r] = gens[r] = None
        else:
            if pending.end is None:
                pending.waiters.append(r)
            else:
                runnable.append(r)
        if book.woken:
            runnable.extend(book.woken)
            book.woken.clear()
    if done != topo.world:
        raise RuntimeError("the simulated ranks deadlocked; open collectives: %s"
                           % sorted(book.open)[:8])
    return book


# ----------------------------------------------------------------------------- ground truth


def _union(iv: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    out: List[List[int]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _length(iv: List[Tuple[int, int]]) -> int:
    return sum(e - s for s, e in iv)


def _overlap(a: List[Tuple[int, int]], b: List[Tuple[int, int]]) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        s = max(a[i][0], b[j][0])
        e = min(a[i][1], b[j][1])
        if e > s:
            total += e - s
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _ground_truth(prog: _RankProgram, trace: RankTrace) -> List[dict]:
    """Per step: its time, and per communication kind the NCCL kernels' time, the part spent
    waiting for peers, and the part not hidden behind compute kernels on this GPU."""
    comm_rows = {c[2]: c for c in prog.comm_log}
    out = []
    for s in prog.steps:
        lo, hi = s["device_rows"]
        kinds = COMM_KINDS + ((PP_GROUP_KIND,) if prog.pp_group else ())
        compute, by_kind = [], {k: [] for k in kinds}
        busy = []
        for d in range(lo, hi):
            iv = (trace.d_start[d], trace.d_end[d])
            busy.append(iv)
            c = comm_rows.get(d)
            if c is not None:
                by_kind[c[0]].append(c)
            elif trace.d_type[d] == KERNEL:
                compute.append(iv)
        cu = _union(compute)
        comm = {}
        all_comm = []
        for kind, rows in by_kind.items():
            iv = _union([(c[3], c[4]) for c in rows])
            all_comm.extend(iv)
            comm[kind] = {"calls": len(rows), "kernel_ns": sum(c[4] - c[3] for c in rows),
                          "wait_ns": sum(c[4] - c[3] - c[5] for c in rows),
                          "exposed_ns": _length(iv) - _overlap(iv, cu)}
        ac = _union(all_comm)
        out.append({"step": s["step"], "start_ns": s["start_ns"], "end_ns": s["end_ns"],
                    "step_time_ns": s["end_ns"] - s["start_ns"],
                    "compute_busy_ns": _length(cu), "gpu_busy_ns": _length(_union(busy)),
                    "exposed_comm_ns": _length(ac) - _overlap(ac, cu), "comm": comm})
    return out


# ----------------------------------------------------------------------------- driver


def build_rank(cfg: SynthConfig, rank: int, times: Sequence[Tuple[int, int]],
               topo: Optional[Topology] = None,
               cat: Optional[_Catalog] = None) -> Tuple[RankTrace, _RankProgram]:
    """Phase 2 for one rank: re-run it with its collectives' times and record every event."""
    topo = topo or Topology(cfg.dp, cfg.mp, cfg.pp)
    cat = cat or _Catalog(cfg)
    probe = _RankProgram(cfg, topo, cat, rank, _NullSink(), _SoloBook())
    threads = {probe.main_tid: "MainThread",
               probe.pin_tid: "Dataloader_%d" % (140_000_000_000_000 + probe.pid * 4096)}
    rng = random.Random(cfg.seed * 7919 + rank)
    trace = RankTrace(probe.pid, DeviceProps(probe.device_id), threads,
                      process_cpu_util=1.1 + rng.random(), system_cpu_util=0.05 + 0.2 * rng.random())
    if cfg.names == "default":  # CUPTI lists every GPU the process sees: the node's
        trace.devices = [DeviceProps(i) for i in range(host_gpus(cfg, host_of(cfg, rank)))]
    prog = _RankProgram(cfg, topo, cat, rank, trace,
                        _ReplayBook(times) if times is not None else _SoloBook())
    _drive_alone(prog)
    return trace, prog


def _events_of(cfg: SynthConfig, layers_per_stage: int) -> int:
    c = replace(cfg, layers=layers_per_stage * cfg.pp, steps=1, events_per_rank=None,
                schedule="1f1b" if cfg.schedule == "interleaved" else cfg.schedule,
                virtual_stages=1)
    trace, _ = build_rank(c, 0, None)
    return _writer.count_trace_events(trace, build_node_trees(trace))


def size_for(cfg: SynthConfig) -> SynthConfig:
    """Choose layers (and, past 96 layers per stage, micro-batches) so rank 0 writes about
    ``cfg.events_per_rank`` trace events."""
    if not cfg.events_per_rank or cfg.stage_layers is not None:
        return cfg
    target = cfg.events_per_rank / cfg.steps
    while True:
        e1, e2 = _events_of(cfg, 1), _events_of(cfg, 2)
        per_layer = max(1, e2 - e1)
        n = max(1, round((target - (e1 - per_layer)) / per_layer))
        if n <= 96 or cfg.micro_batches >= 512:
            V = cfg.virtual_stages  # interleaved: layers split evenly over pp x V chunks
            return replace(cfg, layers=-(-n // V) * V * cfg.pp)
        cfg = replace(cfg, micro_batches=min(512, cfg.micro_batches * math.ceil(n / 96)))


@dataclass
class SynthResult:
    out_dir: str
    config: SynthConfig
    traces: Dict[int, str] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)
    # Per rank (all simulated ranks), per step in order: the wait it caused its peers at
    # collectives other than send/recv by arriving last (not written to the manifest, which
    # stays as it was).
    caused_wait_ns: Dict[int, List[int]] = field(default_factory=dict)
    # Wall seconds of each phase ("simulate", "controls", "write", "total").
    timings: Dict[str, float] = field(default_factory=dict)
    # The truth's metadata (what synth_truth.json holds); load_truth(out_dir) reads it all.
    truth: dict = field(default_factory=dict)


def _identities(cfg: SynthConfig, topo: Topology, book: _LiveBook, chosen) -> List[dict]:
    """Per rank: worker name, trace file name, host, GPU, pid, coordinates, clock offset."""
    chosen = set(chosen)
    out = []
    for r in range(topo.world):
        info = book.info[r]
        host = host_of(cfg, r)
        off = clock_offset_ns(cfg, host)
        worker = worker_name(cfg, r, info["pid"])
        ident = {"rank": r, "worker": worker,
                 "file": _writer.trace_file_name(worker, info["end_t"] + 50_000_000 + r * 1000 + off),
                 "written": r in chosen, "hostname": hostname(host), "host": host,
                 "gpu": r % cfg.gpus_per_node, "pid": info["pid"], **topo.coords(r),
                 "clock_offset_ns": off, "gpu_speed": cfg.gpu_speed_of(r)}
        ident["label"] = _truth._label(ident)
        out.append(ident)
    return out


def _peer_speed(cfg: SynthConfig, topo: Topology, rank: int) -> float:
    """The median GPU speed factor of ``rank``'s role peers: the other ranks of its pipeline
    stage (they run the same program) that carry no planted slow device."""
    stage = topo.coords(rank)["pp"]
    slow = set(cfg.slow_ranks())
    peers = [cfg.gpu_speed_of(p) for p in range(topo.world)
             if p != rank and p not in slow and topo.coords(p)["pp"] == stage]
    return float(np.median(peers)) if peers else 1.0


class _Controls:
    """Phase-1 simulations of variants of a run (no traces), each simulated once."""

    def __init__(self, cfg: SynthConfig, topo: Topology, cat: _Catalog, book: _LiveBook):
        self.topo, self.cat = topo, cat
        self.books = {_config_key(cfg): book}

    def book(self, cfg: SynthConfig) -> _LiveBook:
        key = _config_key(cfg)
        b = self.books.get(key)
        if b is None:
            b = self.books[key] = _simulate_together(cfg, self.topo, self.cat, record=False)
        return b


def _config_key(cfg: SynthConfig) -> str:
    """Configs that simulate the same run have the same key (a factor without ranks is
    none)."""
    d = config_dict(cfg)
    if not cfg.slow_ranks():
        d["slow_factor"], d["slow_rank"] = 1.0, None
    if not cfg.slow_host_ranks():
        d["host_delay_us"], d["slow_host_rank"] = 0.0, None
    return json.dumps(d, sort_keys=True, default=str)


def _step_max_mean(book: _LiveBook, world: int) -> float:
    a = book.step_arrays(world)["step_time_ns"]
    return float(a.max(axis=0).mean()) if a.size else 0.0


def _planted(cfg: SynthConfig, topo: Topology, cat: _Catalog, book: _LiveBook,
             steps: Dict[str, np.ndarray], controls: "_Controls") -> List[dict]:
    """Each planted anomaly with its cost to the job, from a control simulation without it
    (the same seed, so the same noise of every kernel and host gap), and the saving if the
    rank ran at its role peers' speed."""
    world = topo.world
    job = book.job_step_ns(world)
    job_max = _step_max_mean(book, world)
    out = []
    slow, hosts = cfg.slow_ranks(), cfg.slow_host_ranks()
    for kind, ranks in (("device_slow", slow), ("host_stall", hosts)):
        for r in ranks:
            rest = tuple(x for x in ranks if x != r) or None
            control = (replace(cfg, slow_rank=rest) if kind == "device_slow"
                       else replace(cfg, slow_host_rank=rest))
            cbook = controls.book(control)
            csteps = cbook.step_arrays(world)
            cost = job - cbook.job_step_ns(world)
            entry = {"type": kind, "rank": r, "stage": topo.coords(r)["pp"]}
            if kind == "device_slow":
                entry["factor"] = cfg.slow_factor
                excess = float((steps["compute_ns"][r] - csteps["compute_ns"][r]).mean())
                # at its role peers' speed: no planted factor and the peers' GPU speed
                peer = _peer_speed(cfg, topo, r)
                at_peers = (control if peer == cfg.gpu_speed_of(r) else
                            replace(control, gpu_speed={**(control.gpu_speed or {}), r: peer}))
            else:
                entry["delay_ns"] = cfg.host_delay_ns(r)
                excess = float(entry["delay_ns"])
                peer, at_peers = cfg.gpu_speed_of(r), control
            pbook = controls.book(at_peers)
            entry.update(excess_ns_per_step=excess, job_cost_ns_per_step=cost,
                         absorbed=bool(cost < excess / 2),
                         job_cost_max_ns_per_step=job_max - _step_max_mean(cbook, world),
                         saving_at_peer_speed_ns_per_step=job - pbook.job_step_ns(world),
                         gpu_speed=cfg.gpu_speed_of(r), peer_gpu_speed=peer)
            out.append(entry)
    return out


def stage_parts(cfg: SynthConfig, stage: int) -> List[str]:
    """What a pipeline stage holds besides its decoder layers, by construction: the first
    ``"data_loader"`` (with ``pipeline_layers``; every stage reads data without it) and
    ``"embedding"``, the last ``"head"`` and ``"loss"``."""
    parts = []
    if stage == 0 or not (cfg.pipeline_layers and cfg.pp > 1):
        parts.append("data_loader")
    if stage == 0:
        parts.append("embedding")
    if stage == cfg.pp - 1:
        parts += ["head", "loss"]
    return parts


def _structure(cfg: SynthConfig, topo: Topology, controls: "_Controls") -> dict:
    """The stage differences every replica shares (structure, not stragglers): per stage
    its parts, its layers, and its compute per step in the same run without any planted
    anomaly (mean over the stage's ranks and the steps)."""
    world = topo.world
    base = controls.book(cfg.without_anomalies()).step_arrays(world)
    stage_of = np.array([topo.coords(r)["pp"] for r in range(world)])
    comp = [float(base["compute_ns"][stage_of == p].mean()) for p in range(cfg.pp)]
    step = [float(base["step_time_ns"][stage_of == p].mean()) for p in range(cfg.pp)]
    lo = min(comp)
    return {"stage_parts": [stage_parts(cfg, p) for p in range(cfg.pp)],
            "stage_layers": cfg.per_stage_layers(),
            "stage_compute_ns": comp,
            "stage_compute_excess": [c / lo - 1.0 if lo else 0.0 for c in comp],
            "stage_step_ns": step,
            "job_step_ns": float(base["step_time_ns"].mean())}


_JOB: Optional[tuple] = None  # what forked writer processes read (set before the fork)


def _write_rank(r: int) -> dict:
    cfg, topo, cat, times, out_dir, layout, tables, idents, host_straggler = _JOB
    trace, prog = build_rank(cfg, r, times[r], topo, cat)
    ident = idents[r]
    entry = {"rank": r, "coords": topo.coords(r), "trace": ident["file"], "pid": trace.pid,
             "device_id": trace.device.id, "is_slow": r in cfg.slow_ranks(),
             "worker": ident["worker"], "hostname": ident["hostname"],
             "clock_offset_ns": ident["clock_offset_ns"]}
    steps = _ground_truth(prog, trace)
    if ident["clock_offset_ns"]:
        trace.shift_times(ident["clock_offset_ns"])
    trees = build_node_trees(trace)
    path = os.path.join(out_dir, ident["file"])
    with open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        n_events = _writer.write_trace(trace, trees, f, layout)
    entry["trace_events"] = n_events
    entry["steps"] = steps
    if host_straggler:
        entry["is_slow_host"] = r in cfg.slow_host_ranks()
        entry["host_delay_ns"] = cfg.host_delay_ns(r)
    if tables:
        from .oracle import write_reference_tables
        entry["summaries"] = write_reference_tables(trace, trees, out_dir, ident["file"])
    return entry


def _prepare(cfg: SynthConfig) -> SynthConfig:
    """Validate; the config as simulated (stage_layers' sum as layers, factors as dicts,
    sized for events_per_rank)."""
    cfg.validate()
    if cfg.stage_layers is not None:
        cfg = replace(cfg, stage_layers=tuple(int(x) for x in cfg.stage_layers),
                      layers=sum(int(x) for x in cfg.stage_layers))
    if cfg.comm_factor is not None or cfg.slow_kernel is not None:
        cfg = replace(cfg, comm_factor=cfg.comm_factors() or None,
                      slow_kernel=cfg.slow_kernels() or None)
    return size_for(cfg)


def simulate_step_time(cfg: SynthConfig) -> "_truth.StepTime":
    """The step times of the run ``cfg`` describes, simulated (phase 1 only: no trace is
    built or written). See :class:`.truth.StepTime`."""
    cfg = _prepare(cfg)
    topo = Topology(cfg.dp, cfg.mp, cfg.pp)
    book = _simulate_together(cfg, topo, _Catalog(cfg), record=False)
    return _truth.StepTime(book.step_arrays(topo.world)["step_time_ns"])


def _changes(cfg: SynthConfig, topo: Topology, book: _LiveBook) -> List[dict]:
    """Each planted change that is on, with its cost to the job: the job's mean step time
    minus that of the same run simulated without this one change."""
    job = book.job_step_ns(topo.world)
    out = []
    for entry, control in cfg.changes():
        cbook = _simulate_together(control, topo, _Catalog(control), record=False)
        out.append(dict(entry, job_cost_ns_per_step=job - cbook.job_step_ns(topo.world)))
    return out


# The SynthConfig fields of the planted changes and the schedule, with their neutral values:
# a run that leaves them there writes the manifest it always wrote (without these keys).
_NEUTRAL = {"comm_factor": None, "slow_kernel": None, "launch_overhead": 1.0,
            "leak_bytes_per_step": 0, "fragment_bytes_per_step": 0, "schedule": "1f1b",
            "virtual_stages": 1, "kernel_jitter": "uniform", "kernel_sigma": 0.02,
            "gpu_speed_sigma": 0.0, "gpu_speed": None, "p2p_streams": "per_direction",
            "one_rank_comms": False, "pipeline_layers": False, "host_offsets_us": None}


def generate(cfg: SynthConfig, out_dir: str, layout: int = 3, tables: bool = False,
             ranks: Optional[Iterable[int]] = None, log=None, jobs: int = 1) -> SynthResult:
    """Simulate every rank, then write the chosen ranks' traces, the ground-truth manifest,
    the truth files (:mod:`.truth`) and, with ``tables``, Paddle's expected summary tables
    beside each trace. ``jobs`` > 1 writes the traces in that many forked processes."""
    global _JOB
    t_start = time.perf_counter()
    cfg = _prepare(cfg)
    topo = Topology(cfg.dp, cfg.mp, cfg.pp)
    cat = _Catalog(cfg)
    os.makedirs(out_dir, exist_ok=True)
    book = _simulate_together(cfg, topo, cat)
    world = topo.world
    timings = {"simulate": time.perf_counter() - t_start}
    if log:
        log("simulated %d ranks together in %.1fs" % (world, timings["simulate"]))
    chosen = sorted(set(range(world) if ranks is None else ranks))
    result = SynthResult(out_dir, cfg)
    result.caused_wait_ns = {r: [book.caused[r][si] for si in range(cfg.steps)]
                             for r in range(world)}
    idents = _identities(cfg, topo, book, chosen)
    steps = book.step_arrays(world)
    t1 = time.perf_counter()
    controls = _Controls(cfg, topo, cat, book)
    planted = _planted(cfg, topo, cat, book, steps, controls)
    structural = _structure(cfg, topo, controls)
    changes = _changes(cfg, topo, book)
    timings["controls"] = time.perf_counter() - t1
    if log and planted:
        log("simulated %d control runs in %.1fs" % (len(planted), timings["controls"]))

    # The host-side straggler's keys appear only when one is planted, so that a run without one
    # writes exactly the manifest it always wrote.
    host_straggler = bool(cfg.slow_host_ranks())
    t2 = time.perf_counter()
    _JOB = (cfg, topo, cat, book.times, out_dir, layout, tables, idents, host_straggler)
    rank_entries = []
    try:
        jobs = max(1, min(int(jobs or 1), len(chosen)))
        if jobs == 1:
            entries = map(_write_rank, chosen)
        else:
            import multiprocessing
            pool = multiprocessing.get_context("fork").Pool(jobs)
            entries = pool.imap(_write_rank, chosen, chunksize=max(1, min(16, len(chosen) // (4 * jobs))))
        for entry in entries:
            rank_entries.append(entry)
            r = entry["rank"]
            result.traces[r] = os.path.join(out_dir, entry["trace"])
            if log:
                log("rank %d: %d events -> %s" % (r, entry["trace_events"], result.traces[r]))
        if jobs > 1:
            pool.close()
            pool.join()
    finally:
        if jobs > 1:
            pool.terminate()
        _JOB = None
    timings["write"] = time.perf_counter() - t2

    groups = topo.groups()
    config = asdict(cfg)
    if not host_straggler:
        del config["slow_host_rank"], config["host_delay_us"]
    for k, neutral in _NEUTRAL.items():
        if config[k] == neutral:
            del config[k]
    pp_streams = {"per_direction": [PP_FWD_STREAM, PP_BWD_STREAM],
                  "shared": [P2P_SHARED_STREAM],
                  "per_peer": [P2P_PREV_STREAM, P2P_NEXT_STREAM]}[cfg.p2p_streams]
    if cfg.virtual_stages > 1:
        pp_streams += [PP_FWD_RECV_STREAM, PP_BWD_RECV_STREAM]
    comm_streams = {"mp_allreduce": MP_STREAM, "pp_sendrecv": pp_streams,
                    "dp_allreduce": DP_STREAM, "compute": COMPUTE_STREAM}
    if cfg.pp_group_on():
        comm_streams[PP_GROUP_KIND] = PP_GROUP_STREAM
    manifest = {
        "generator": "tbp_synth",
        "format_version": 1,
        "layout": layout,
        "config": config,
        "world_size": world,
        "groups": groups,
        "comm_streams": comm_streams,
        "slow_rank": cfg.slow_rank,
        "slow_factor": cfg.slow_factor if cfg.slow_ranks() else 1.0,
        **({"slow_host_rank": cfg.slow_host_rank, "host_delay_us": cfg.host_delay_us}
           if host_straggler else {}),
        "truth": [_truth.TRUTH_JSON, _truth.TRUTH_NPZ],
        "definitions": {
            "step_time_ns": "ProfileStep#N duration on the rank's main thread",
            "kernel_ns": "sum of the kind's NCCL kernel durations in the step",
            "wait_ns": "part of kernel_ns spent waiting for the collective's last member",
            "exposed_ns": "time the kind's NCCL kernels run while no compute kernel runs on the GPU",
            "exposed_comm_ns": "the same for all NCCL kernels together",
            "start_ns": "global clock (a trace shows it plus its host's clock_offset_ns)",
            **({"host_delay_ns": "extra time the rank's data loader (host thread) stalls at the start "
                                 "of every step; its kernels keep their normal durations"}
               if host_straggler else {}),
        },
        "ranks": rank_entries,
    }
    with open(os.path.join(out_dir, MANIFEST_NAME), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1 if world <= 256 else None)
        f.write("\n")
    result.manifest = manifest

    stage_of = np.array([topo.coords(r)["pp"] for r in range(world)])
    n_hosts = host_of(cfg, world - 1) + 1
    meta = {
        "generator": "tbp_synth",
        "config": config_dict(cfg),
        "world_size": world,
        "gpus_per_node": cfg.gpus_per_node,
        "ranks": idents,
        "steps": [cfg.first_step + i for i in range(cfg.steps)],
        "planted": planted,
        "changes": changes,
        "schedule": {"name": cfg.schedule, "virtual_stages": cfg.virtual_stages,
                     "chunk_layers": [[list(c) for c in cfg.chunk_layers(p)]
                                      for p in range(cfg.pp)]},
        "stage_layers": cfg.per_stage_layers(),
        "stage_compute_ns": [float(steps["compute_ns"][stage_of == p].mean()) for p in range(cfg.pp)],
        "host_offsets_ns": [clock_offset_ns(cfg, h) for h in range(n_hosts)],
        "job_step_ns": book.job_step_ns(world),
        "pp_group_collectives": cfg.pp_group_on(),
        "groups": groups,
        "streams": comm_streams,
        "p2p_streams": cfg.p2p_streams,
        "one_rank_comms": bool(cfg.one_rank_comms),
        "structural": structural,
    }
    caused = np.array([[book.caused[r][si] for si in range(cfg.steps)] for r in range(world)],
                      dtype=np.int64).reshape(world, cfg.steps)
    _truth.write_truth(out_dir, meta, {**book.columns(), **steps, "caused_wait_ns": caused,
                                       **book.schedule_columns(world, cfg.first_step)})
    result.truth = meta
    timings["total"] = time.perf_counter() - t_start
    result.timings = timings
    return result


def config_dict(cfg: SynthConfig) -> dict:
    """The config as plain JSON values (rank lists as lists)."""
    d = asdict(cfg)
    for k in ("slow_rank", "slow_host_rank", "stage_layers", "host_offsets_us"):
        if isinstance(d[k], tuple):
            d[k] = list(d[k])
    return d
