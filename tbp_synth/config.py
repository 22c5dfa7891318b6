"""What to simulate (SynthConfig, its realistic preset), the hosts and the hybrid topology, and
the constants the generator's modules share (streams, collective kinds, runtime call names)."""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, replace
from typing import Dict, List, Optional, Tuple


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
_KEY_KIND = {"mp": (0, 0), "dp": (0, 1), "pf": (2, 2), "pb": (2, 2), "clip": (0, 3), "bcast": (1, 3)}

TRUTH_KINDS = ("all_reduce", "broadcast", "send_recv")

_KEY_AXIS = {"mp": "mp", "dp": "dp", "pf": "pp", "pb": "pp", "clip": "pp_group", "bcast": "pp_group"}

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
                raise ValueError("%s: expected NAME=FACTOR[,NAME=FACTOR...], got %r" % (what, item)) from None
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
    host_names: str = "ordered"  # or "shuffled": gpunode numbers not in Fleet's host order
    export_jitter_us: float = 0.0  # a rank's export time (file name) drawn in [0, this] us
    comm_end_noise_us: float = 0.0  # each member's NCCL kernel ends N(0, this) us off its collective's end
    # shapes (docs/generator.md, "Shapes and sequences"): record_shapes writes the forward
    # operators' input_shapes / input_dtypes (Paddle 3.3.1 writes them empty); dp_seq_lens gives
    # each data-parallel replica its own sequence length (one per dp index; its kernels' times
    # follow its tokens), instead of seq_len everywhere
    record_shapes: bool = False
    dp_seq_lens: Optional[Tuple[int, ...]] = None

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
        for name in (
            "dp",
            "mp",
            "pp",
            "steps",
            "layers",
            "micro_batches",
            "hidden",
            "heads",
            "seq_len",
            "micro_batch_size",
            "vocab",
            "dp_bucket_layers",
            "gpus_per_node",
        ):
            if getattr(self, name) < 1:
                raise ValueError("%s must be at least 1" % name)
        if self.stage_layers is not None:
            if len(self.stage_layers) != self.pp or min(self.stage_layers) < 1:
                raise ValueError(
                    "stage_layers must give at least one layer for each of the %d pipeline stages" % self.pp
                )
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
                raise ValueError("comm_factor: unknown axis %r (one of %s)" % (axis, ", ".join(COMM_AXES)))
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
            raise ValueError("leak_bytes_per_step and fragment_bytes_per_step must not be negative")
        if self.schedule not in SCHEDULES:
            raise ValueError("schedule must be one of %s" % ", ".join(SCHEDULES))
        if self.schedule == "interleaved":
            V = self.virtual_stages
            if V < 2 or self.pp < 2:
                raise ValueError("the interleaved schedule needs pp >= 2 and virtual_stages >= 2")
            if self.micro_batches % self.pp:
                raise ValueError(
                    "the interleaved schedule needs micro_batches divisible by pp "
                    "(%d %% %d != 0)" % (self.micro_batches, self.pp)
                )
            if self.stage_layers is not None:
                raise ValueError(
                    "stage_layers is for the 1f1b and gpipe schedules; the "
                    "interleaved one splits layers evenly over its chunks"
                )
            if self.layers % (self.pp * V):
                raise ValueError(
                    "the interleaved schedule splits layers evenly over pp x "
                    "virtual_stages = %d model chunks: %d layers do not divide" % (self.pp * V, self.layers)
                )
        elif self.virtual_stages != 1:
            raise ValueError("virtual_stages > 1 needs schedule='interleaved'")
        if self.kernel_jitter not in KERNEL_JITTERS:
            raise ValueError("kernel_jitter must be one of %s" % ", ".join(KERNEL_JITTERS))
        if not 0 <= self.kernel_sigma < 1 or not 0 <= self.gpu_speed_sigma < 1:
            raise ValueError("kernel_sigma and gpu_speed_sigma must be in [0, 1)")
        for r, f in (self.gpu_speed or {}).items():
            if not 0 <= int(r) < world or not float(f) > 0:
                raise ValueError("gpu_speed: rank %r must be below %d, its factor positive" % (r, world))
        if self.p2p_streams not in P2P_LAYOUTS:
            raise ValueError("p2p_streams must be one of %s" % ", ".join(P2P_LAYOUTS))
        if self.p2p_streams != "per_direction" and self.schedule == "interleaved":
            raise ValueError(
                "p2p_streams=%r is for the 1f1b and gpipe schedules (the "
                "interleaved one has its own four streams)" % self.p2p_streams
            )
        if self.host_names not in ("ordered", "shuffled"):
            raise ValueError("host_names must be 'ordered' or 'shuffled'")
        if self.export_jitter_us < 0:
            raise ValueError("export_jitter_us must not be negative")
        if not self.comm_end_noise_us >= 0:
            raise ValueError("comm_end_noise_us must not be negative")
        if self.dp_seq_lens is not None:
            if len(self.dp_seq_lens) != self.dp or min(int(x) for x in self.dp_seq_lens) < 1:
                raise ValueError(
                    "dp_seq_lens must give a sequence length of at least 1 for each "
                    "of the %d data-parallel replicas" % self.dp
                )
        if self.host_offsets_us is not None:
            n_hosts = host_of(self, world - 1) + 1
            if len(self.host_offsets_us) != n_hosts:
                raise ValueError("host_offsets_us must give one offset for each of the %d hosts" % n_hosts)

    def slow_ranks(self) -> Tuple[int, ...]:
        return _rank_tuple(self.slow_rank)

    def comm_factors(self) -> Dict[str, float]:
        """The axes whose collectives' transfer times are scaled, with their factor (axes
        at 1 left out)."""
        return {a: float(f) for a, f in _factor_dict(self.comm_factor, "comm_factor").items() if float(f) != 1.0}

    def slow_kernels(self) -> Dict[str, float]:
        """Kernel-name substrings whose compute kernels are slowed, with their factor."""
        return {k: float(f) for k, f in _factor_dict(self.slow_kernel, "slow_kernel").items() if float(f) != 1.0}

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

    def seq_len_of(self, dp_index: int) -> int:
        """The sequence length of data-parallel replica ``dp_index``: ``dp_seq_lens`` when
        given, else ``seq_len``."""
        return int(self.dp_seq_lens[dp_index]) if self.dp_seq_lens else self.seq_len

    def per_stage_layers(self) -> List[int]:
        if self.stage_layers is not None:
            return [int(n) for n in self.stage_layers]
        return [self.layers // self.pp + (1 if p < self.layers % self.pp else 0) for p in range(self.pp)]

    def pp_group_on(self) -> bool:
        return bool(self.pp_group_collectives) and self.pp > 1

    def world(self) -> int:
        return self.dp * self.mp * self.pp

    def changes(self) -> List[dict]:
        """The planted changes that are on, each with the config that lacks only it."""
        out = []
        for axis, f in sorted(self.comm_factors().items()):
            rest = {a: v for a, v in self.comm_factors().items() if a != axis} or None
            out.append(({"type": "comm_factor", "axis": axis, "factor": f}, replace(self, comm_factor=rest)))
        for sub, f in sorted(self.slow_kernels().items()):
            rest = {k: v for k, v in self.slow_kernels().items() if k != sub} or None
            out.append(({"type": "slow_kernel", "substring": sub, "factor": f}, replace(self, slow_kernel=rest)))
        if float(self.launch_overhead) != 1.0:
            out.append(
                ({"type": "launch_overhead", "factor": float(self.launch_overhead)}, replace(self, launch_overhead=1.0))
            )
        if self.leak_bytes_per_step:
            out.append(
                (
                    {"type": "leak", "bytes_per_step": int(self.leak_bytes_per_step)},
                    replace(self, leak_bytes_per_step=0),
                )
            )
        if self.fragment_bytes_per_step:
            out.append(
                (
                    {"type": "fragment", "bytes_per_step": int(self.fragment_bytes_per_step)},
                    replace(self, fragment_bytes_per_step=0),
                )
            )
        return out

    def without_anomalies(self) -> "SynthConfig":
        return replace(self, slow_rank=None, slow_factor=1.0, slow_host_rank=None, host_delay_us=0.0)


# SynthConfig.realistic(): every realism option on
REALISTIC = dict(
    kernel_jitter="lognormal",
    kernel_sigma=0.02,
    gpu_speed_sigma=0.003,
    p2p_streams="shared",
    one_rank_comms=True,
    pipeline_layers=True,
    names="default",
    clock_skew_us=2000.0,
    gpus_per_node=8,
    host_names="shuffled",
    export_jitter_us=40_000.0,
)

# ----------------------------------------------------------------------------- hosts


def host_of(cfg: SynthConfig, rank: int) -> int:
    """Fleet's layout: rank = host * gpus_per_node + local GPU."""
    return rank // cfg.gpus_per_node


def hostname(host: int, cfg: Optional["SynthConfig"] = None) -> str:
    """Host ``host``'s name: ``gpunode<host>``, or with ``host_names="shuffled"`` the number of
    a seeded permutation of the hosts, so that the names do not give Fleet's host order."""
    if cfg is not None and cfg.host_names == "shuffled":
        n = host_of(cfg, cfg.world() - 1) + 1
        key = (cfg.seed, n)
        perm = _HOST_PERM.get(key)
        if perm is None:
            perm = list(range(n))
            random.Random(cfg.seed * 5_915_587 + 31).shuffle(perm)
            _HOST_PERM[key] = perm
        host = perm[host]
    return "gpunode%d" % host


_HOST_PERM: Dict[tuple, List[int]] = {}


def export_delay_ns(cfg: "SynthConfig", rank: int) -> int:
    """How long after its last step a rank's profiler exports its trace, beyond the fixed
    50 ms (the time in the file name): ``rank`` us (so that names stay in rank order), or with
    ``export_jitter_us`` a seeded draw in [0, that] us."""
    if not cfg.export_jitter_us:
        return rank * 1000
    u = random.Random(cfg.seed * 3_267_000_013 + rank * 101 + 7).random()
    return int(u * cfg.export_jitter_us * 1000)


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
        return "host_%spid_%d" % (hostname(host_of(cfg, rank), cfg), pid)
    return "rank%d" % rank


class Topology:
    """Rank layout of Paddle's hybrid topology (order dp, pp, mp; mp varies fastest)."""

    def __init__(self, dp: int, mp: int, pp: int):
        self.dp, self.mp, self.pp = dp, mp, pp
        self.world = dp * mp * pp

    def coords(self, rank: int) -> Dict[str, int]:
        return {"dp": rank // (self.mp * self.pp), "pp": (rank // self.mp) % self.pp, "mp": rank % self.mp}

    def rank(self, dp: int, pp: int, mp: int) -> int:
        return (dp * self.pp + pp) * self.mp + mp

    def groups(self) -> Dict[str, List[List[int]]]:
        """The communicators: mp and dp groups, and the pipeline of each (dp, mp) pair."""
        r = self.rank
        return {
            "mp": [[r(d, p, m) for m in range(self.mp)] for d in range(self.dp) for p in range(self.pp)],
            "pp": [[r(d, p, m) for p in range(self.pp)] for d in range(self.dp) for m in range(self.mp)],
            "dp": [[r(d, p, m) for d in range(self.dp)] for p in range(self.pp) for m in range(self.mp)],
        }


def config_dict(cfg: SynthConfig) -> dict:
    """The config as plain JSON values (rank lists as lists)."""
    d = asdict(cfg)
    for k in ("slow_rank", "slow_host_rank", "stage_layers", "host_offsets_us", "dp_seq_lens"):
        if isinstance(d[k], tuple):
            d[k] = list(d[k])
    return d
