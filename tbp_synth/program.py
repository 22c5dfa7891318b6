"""One rank's training loop: the mixins of the generator's modules put together."""

from __future__ import annotations

import collections
import random
from typing import Dict, List, Optional, Tuple

from .config import (
    COMPUTE_STREAM,
    DP_STREAM,
    EPOCH_NS,
    MP_STREAM,
    P2P_NEXT_STREAM,
    P2P_PREV_STREAM,
    PP_BWD_RECV_STREAM,
    PP_BWD_STREAM,
    PP_FWD_RECV_STREAM,
    PP_FWD_STREAM,
    PP_GROUP_STREAM,
    SynthConfig,
    Topology,
    host_of,
    host_pids,
)
from .catalog import _Catalog
from .recorder import _Recorder
from .timing import _Timing
from .memory import _Allocator, _Memory
from .layers import _Entry, _Layers
from .parallel import _Parallel
from .schedule import _Schedule, pipeline_order


class _RankProgram(_Recorder, _Timing, _Memory, _Layers, _Parallel, _Schedule):
    """One rank's training loop, run as a generator that yields when it needs the end time
    of a collective whose peers have not reached it yet."""

    def __init__(self, cfg: SynthConfig, topo: Topology, cat: _Catalog, rank: int, sink, book):
        self.cfg, self.topo, self.cat, self.rank = cfg, topo, cat, rank
        self.sink, self.book = sink, book
        c = topo.coords(rank)
        self.dp_i, self.pp_i, self.mp_i = c["dp"], c["pp"], c["mp"]
        if cfg.dp_seq_lens:  # this replica's sequence length: its kernels, bytes and shapes
            self.cat = cat.for_seq(cfg.seq_len_of(self.dp_i))
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
        self.jitter_mu = -(self.jitter_sigma**2) / 2  # mean factor 1
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
        self.stream_free = {
            COMPUTE_STREAM: 0,
            MP_STREAM: 0,
            PP_FWD_STREAM: 0,
            PP_BWD_STREAM: 0,
            DP_STREAM: 0,
            PP_GROUP_STREAM: 0,
            PP_FWD_RECV_STREAM: 0,
            PP_BWD_RECV_STREAM: 0,
            P2P_PREV_STREAM: 0,
            P2P_NEXT_STREAM: 0,
        }
        self.compute_wait: List = []
        self.step_idx = 0
        self.seq: Dict[str, int] = collections.defaultdict(int)
        per_stage = cfg.per_stage_layers()
        self.n_layers = per_stage[self.pp_i]
        self.layer0 = sum(per_stage[: self.pp_i])
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
        # open Forward events as (name, ordinal among its outermost's sub-layers of that name; -1
        # deeper down), the names seen below the outermost one, and each layer's recorded kernels
        self.fw_stack: List[Tuple[str, int]] = []
        self.fw_seen: Dict[str, int] = {}
        self.layer_kernels: Dict[Tuple[str, int], List[int]] = {}
        self.mb_buffers: Dict[int, List[int]] = collections.defaultdict(list)
        self.dp_handles: List = []
        self.batch_cpu: List[int] = []
        self.cur_mb = 0
        # ground truth, filled while recording
        self.steps: List[dict] = []
        self.comm_log: List[Tuple[str, int, int, int, int, int]] = []
        self._spec_ids: Dict[str, Tuple[int, int]] = {}
        self._setup_memory()
