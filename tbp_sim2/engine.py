"""The discrete-event engine: every stage's program run on all its ranks at once (numpy vectors over
the stage's DP x MP lanes, lane = dp * MP + mp), stages interleaved until every host instruction ran
and every kernel ended.

Timing model (global clock, ns):
- host: each instruction takes its own time (operators U(lo, hi) around their launch, runtime calls
  U(3, 7) us, event marks U(0.2, 1) us); a sync call returns a few us after its kernel ended;
- launch: a kernel is ready launch_us x lognormal(launch_sigma) after its runtime call started;
- streams run in order: start = max(ready, the stream's previous end + 0.4-1 us, the ends of the kernels
  of other streams it waits for + 1.6-4 us);
- compute: base x the GPU's speed (lognormal gpu_sigma; x (1 + x%) for a slow GPU) x lognormal
  (kernel_sigma) per kernel;
- NCCL: the instance starts at its last member's start; its transfer (ring: 2(n-1)/n bytes / bw plus
  a hop per ring step; broadcast and send/recv likewise) x lognormal(0.05); each member ends at
  that + U(0, end_spread_us), so members' ends are apart by at most the spread.
"""

from __future__ import annotations

from typing import Dict, List, Tuple

import numpy as np

from .config import SimConfig
from .program import CLOSE, COLL, COMPUTE, LAUNCH, OPEN, RUNTIME, WORK, StageProgram, build_programs


class Deadlock(RuntimeError):
    pass


class StageRun:
    """One stage's state during the run and its times afterwards (arrays [item, lane], ns)."""

    def __init__(self, cfg: SimConfig, prog: StageProgram, gpu_speed: np.ndarray, host_of: np.ndarray):
        self.cfg, self.p = cfg, prog
        s = prog.stage
        L = cfg.dp_lanes * cfg.mp
        self.L = L
        self.ranks = np.array([cfg.rank_of(d, s, m) for d in range(cfg.dp_lanes) for m in range(cfg.mp)])
        self.speed = gpu_speed[self.ranks]
        self.host = host_of[self.ranks]
        rng = np.random.default_rng([cfg.seed, 7919, s])
        n_ins, n_k = len(prog.ins), len(prog.k_name)
        self.u_ins = rng.random((n_ins, L))
        self.lat = cfg.launch_us * 1000.0 * np.exp(rng.normal(0.0, cfg.launch_sigma, (n_k, L)))
        self.knoise = np.exp(rng.normal(0.0, cfg.kernel_sigma, (n_k, L)))
        self.tnoise = np.exp(rng.normal(0.0, 0.05, (n_k, L)))
        self.spread = rng.random((n_k, L)) * cfg.end_spread_us * 1000.0
        # device gaps: a kernel queued behind another starts 0.25 x this later, one waiting for another
        # stream's event this later
        lo, hi = cfg.event_gap_us
        self.gap = (lo + (hi - lo) * rng.random((n_k, L))) * 1000.0
        self.extra = np.zeros((n_ins, L))  # anomalies' host time per WORK instruction
        self.slow = np.ones(L)
        for a in cfg.anomalies:
            d, st, m = cfg.coords(a.rank)
            if st != s:
                continue
            lane = d * cfg.mp + m
            if a.kind == "slow_gpu":
                self.slow[lane] *= 1.0 + a.value / 100.0
            else:
                for i, (tag, mb) in prog.tags.items():
                    if tag == a.kind and (tag == "loader" or mb == a.at) and prog.ins[i][0] == WORK:
                        self.extra[i, lane] += a.value
        self.e_start = np.zeros((len(prog.e_name), L))
        self.e_end = np.zeros((len(prog.e_name), L))
        self.r_start = np.zeros((len(prog.r_name), L))
        self.r_end = np.zeros((len(prog.r_name), L))
        self.k_ready = np.zeros((n_k, L))
        self.k_start = np.zeros((n_k, L))
        self.k_end = np.zeros((n_k, L))
        self.done = [False] * n_k
        self.arrived = [False] * n_k
        self.host_t = np.zeros(L)
        self.pc = 0
        self.launched = 0  # kernels launched so far (ids are in launch order)
        self.sync_started = False
        self.queues: Dict[int, List[int]] = {}
        for k, st in enumerate(prog.k_stream):
            self.queues.setdefault(st, []).append(k)
        self.head = {st: 0 for st in self.queues}
        self.stream_end = {st: np.zeros(L) for st in self.queues}

    @property
    def finished(self) -> bool:
        return self.pc >= len(self.p.ins) and all(self.head[s] >= len(q) for s, q in self.queues.items())

    def run_host(self) -> bool:
        p, u = self.p, self.u_ins
        ins = p.ins
        n = len(ins)
        start = self.pc
        t = self.host_t
        while self.pc < n:
            i = self.pc
            code, a, b, _ = ins[i]
            if code == WORK:
                t = t + (a + u[i] * (b - a)) + self.extra[i]
            elif code == OPEN:
                t = t + 200.0 + 800.0 * u[i]
                self.e_start[a] = t
            elif code == CLOSE:
                t = t + 200.0 + 800.0 * u[i]
                self.e_end[a] = t
            elif code == RUNTIME:
                self.r_start[a] = t
                t = t + 1500.0 + 1500.0 * u[i]
                self.r_end[a] = t
            elif code == LAUNCH:
                self.r_start[a] = t
                self.k_ready[b] = t + np.maximum(self.lat[b], 1000.0)
                t = t + 3000.0 + 4000.0 * u[i]
                self.r_end[a] = t
                self.launched = b + 1
            else:  # SYNC: launch, then wait for the kernel
                if not self.sync_started:
                    self.r_start[a] = t
                    self.k_ready[b] = t + np.maximum(self.lat[b], 1000.0)
                    self.launched = b + 1
                    self.sync_started = True
                if not self.done[b]:
                    break
                t = np.maximum(t + 4000.0, self.k_end[b] + 2000.0 + 3000.0 * u[i])
                self.r_end[a] = t
                self.sync_started = False
            self.pc += 1
        self.host_t = t
        return self.pc != start or self.sync_started

    def ready_start(self, k: int) -> np.ndarray:
        """Its launch, the stream's previous kernel (+ the device's gap between kernels) and the kernels
        of other streams it waits for (+ the event's latency)."""
        p = self.p
        st = p.k_stream[k]
        g = self.gap[k]
        s = np.maximum(self.k_ready[k], self.stream_end[st] + g * 0.25)
        for d in p.k_deps[k]:
            s = np.maximum(s, self.k_end[d] + (g if p.k_stream[d] != st else g * 0.25))
        return s

    def finish(self, k: int, end: np.ndarray) -> None:
        st = self.p.k_stream[k]
        self.k_end[k] = end
        self.stream_end[st] = end
        self.done[k] = True
        self.head[st] += 1


class Engine:
    def __init__(self, cfg: SimConfig):
        cfg.check()
        self.cfg = cfg
        self.progs = build_programs(cfg)
        rng = np.random.default_rng([cfg.seed, 104729])
        self.gpu_speed = np.exp(rng.normal(0.0, cfg.gpu_sigma, cfg.world))
        gph = cfg.gpus_per_host
        self.host_of = np.arange(cfg.world) // gph
        self.stages = [StageRun(cfg, p, self.gpu_speed, self.host_of) for p in self.progs]
        self.pending: Dict[tuple, Dict[int, int]] = {}
        self._want = {"p2p": 2, "ppg": cfg.pp}

    # -- transfers
    def _bw(self, hosts: np.ndarray, axis: int) -> np.ndarray:
        """Per group: NVLink when all members sit on one host, else the network (bytes per ns)."""
        same = hosts.min(axis=axis) == hosts.max(axis=axis)
        return np.where(same, self.cfg.nvlink_gbps, self.cfg.net_gbps)

    def _transfer(self, ckind: str, n: int, nbytes: float, bw: np.ndarray) -> np.ndarray:
        hop = self.cfg.hop_us * 1000.0
        if n <= 1:
            return np.full(np.shape(bw), 2500.0 + nbytes / 2000.0)
        if ckind == "all_reduce":
            return 2 * (n - 1) * hop + 2.0 * (n - 1) / n * nbytes / bw
        if ckind == "broadcast":
            return (n - 1) * hop + nbytes / bw
        if ckind in ("reduce_scatter", "all_gather"):  # a ring: each member's n - 1 shards
            return (n - 1) * hop + (n - 1) / n * nbytes / bw
        return hop + nbytes / bw

    def _intra(self, st: StageRun, k: int, start: np.ndarray) -> np.ndarray:
        """End times of an MP, DP or sharding collective whose members are all lanes of this stage."""
        cfg, p = self.cfg, st.p
        shape = (cfg.dp, cfg.sharding, cfg.mp)
        axis = {"dp": 0, "sh": 1, "mp": 2}[p.k_axis[k]]
        n = shape[axis]
        T = start.reshape(shape).max(axis=axis, keepdims=True)
        bw = self._bw(st.host.reshape(shape), axis)
        bw = np.expand_dims(bw, axis)
        tr = self._transfer(p.k_ckind[k], n, p.k_base[k], bw)
        noise = st.tnoise[k].reshape(shape).mean(axis=axis, keepdims=True)
        end = np.broadcast_to(T + tr * noise, shape).reshape(-1)  # lanes: (dp x sharding) x MP
        return end + st.spread[k]

    def _cross(self, key: tuple, members: Dict[int, int]) -> None:
        """A send/recv or pipeline-group instance whose member stages have all arrived."""
        sts = [(self.stages[s], k) for s, k in sorted(members.items())]
        starts = np.stack([st.k_start[k] for st, k in sts])
        hosts = np.stack([st.host for st, _ in sts])
        T = starts.max(axis=0)
        st0, k0 = sts[0]
        n = len(sts)
        bw = self._bw(hosts, 0)
        tr = self._transfer(st0.p.k_ckind[k0], n, st0.p.k_base[k0], bw)
        noise = np.mean([st.tnoise[k] for st, k in sts], axis=0)
        base = T + tr * noise
        for st, k in sts:
            st.finish(k, base + st.spread[k])
            st.arrived[k] = False

    def run_streams(self, st: StageRun) -> bool:
        p, moved = st.p, False
        changed = True
        while changed:
            changed = False
            for stream, q in st.queues.items():
                while st.head[stream] < len(q):
                    k = q[st.head[stream]]
                    if k >= st.launched or st.arrived[k]:
                        break
                    if not all(st.done[d] for d in p.k_deps[k]):
                        break
                    start = st.ready_start(k)
                    st.k_start[k] = start
                    if p.k_kind[k] != COLL:
                        dur = p.k_base[k] * st.knoise[k]
                        if p.k_kind[k] == COMPUTE:
                            dur = dur * st.speed * st.slow
                        st.finish(k, start + dur)
                    elif p.k_axis[k] in ("mp", "dp", "sh"):
                        st.finish(k, self._intra(st, k, start))
                    else:
                        key = p.k_key[k]
                        got = self.pending.setdefault(key, {})
                        got[p.stage] = k
                        st.arrived[k] = True
                        want = self._want[p.k_axis[k]]
                        if len(got) == want:
                            del self.pending[key]
                            self._cross(key, got)
                            changed = True
                        moved = True
                        break
                    moved = changed = True
        return moved

    def run(self) -> "Engine":
        while True:
            progress = False
            for st in self.stages:
                progress |= st.run_host()
                progress |= self.run_streams(st)
            if all(st.finished for st in self.stages):
                return self
            if not progress:
                stuck = [
                    (
                        st.p.stage,
                        st.pc,
                        {s: (st.queues[s][h] if h < len(st.queues[s]) else None) for s, h in st.head.items()},
                    )
                    for st in self.stages
                ]
                raise Deadlock("no progress: %s; waiting instances %s" % (stuck, list(self.pending)[:6]))

    # -- results
    def step_bounds(self) -> np.ndarray:
        """[rank, recorded step] -> (start, end) of its ProfileStep, global ns."""
        cfg = self.cfg
        out = np.zeros((cfg.world, cfg.steps, 2))
        for st in self.stages:
            p = st.p
            for e, name in enumerate(p.e_name):
                if p.e_type[e] == "ProfileStep" and p.e_step[e] >= cfg.warmup:
                    j = p.e_step[e] - cfg.warmup
                    out[st.ranks, j, 0] = st.e_start[e]
                    out[st.ranks, j, 1] = st.e_end[e]
        return out

    def step_time_ns(self) -> float:
        """The job's step: the mean over ranks and recorded steps of the ProfileStep durations."""
        b = self.step_bounds()
        return float((b[:, :, 1] - b[:, :, 0]).mean())


def simulate(cfg: SimConfig) -> Engine:
    return Engine(cfg).run()


def step_time(cfg: SimConfig) -> float:
    return simulate(cfg).step_time_ns()


def lane_of(cfg: SimConfig, rank: int) -> Tuple[int, int]:
    """(stage, lane) of a rank."""
    d, s, m = cfg.coords(rank)
    return s, d * cfg.mp + m
