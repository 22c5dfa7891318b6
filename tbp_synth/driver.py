"""Running the ranks together (phase 1) and alone (phase 2), the ground truth and generate()."""

from __future__ import annotations

import collections
import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from . import writer as _writer
from . import truth as _truth
from .model import KERNEL, DeviceProps, RankTrace, build_node_trees
from .config import (
    COMM_KINDS,
    COMPUTE_STREAM,
    DP_STREAM,
    MANIFEST_NAME,
    MP_STREAM,
    P2P_NEXT_STREAM,
    P2P_PREV_STREAM,
    P2P_SHARED_STREAM,
    PP_BWD_RECV_STREAM,
    PP_BWD_STREAM,
    PP_FWD_RECV_STREAM,
    PP_FWD_STREAM,
    PP_GROUP_KIND,
    PP_GROUP_STREAM,
    SynthConfig,
    Topology,
    clock_offset_ns,
    config_dict,
    export_delay_ns,
    host_gpus,
    host_of,
    hostname,
    worker_name,
)
from .catalog import _Catalog
from .recorder import _NullSink
from .parallel import _LiveBook, _ReplayBook, _SoloBook
from .program import _RankProgram


def _drive_alone(prog: _RankProgram) -> None:
    for pending in prog.run():
        raise AssertionError("rank %d waited on a collective while re-run alone" % prog.rank)


def _simulate_together(cfg: SynthConfig, topo: Topology, cat: _Catalog, record: bool = True) -> _LiveBook:
    """Phase 1: run every rank's program, unrecorded, until all collectives are timed
    (``record``: also keep every instance with its members, for the truth)."""
    book = _LiveBook(record, end_noise_ns=cfg.comm_end_noise_us * 1000.0, seed=cfg.seed)
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
        raise RuntimeError("the simulated ranks deadlocked; open collectives: %s" % sorted(book.open)[:8])
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
            comm[kind] = {
                "calls": len(rows),
                "kernel_ns": sum(c[4] - c[3] for c in rows),
                "wait_ns": sum(c[4] - c[3] - c[5] for c in rows),
                "exposed_ns": _length(iv) - _overlap(iv, cu),
            }
        ac = _union(all_comm)
        out.append(
            {
                "step": s["step"],
                "start_ns": s["start_ns"],
                "end_ns": s["end_ns"],
                "step_time_ns": s["end_ns"] - s["start_ns"],
                "compute_busy_ns": _length(cu),
                "gpu_busy_ns": _length(_union(busy)),
                "exposed_comm_ns": _length(ac) - _overlap(ac, cu),
                "comm": comm,
            }
        )
    return out


# ----------------------------------------------------------------------------- driver


def build_rank(
    cfg: SynthConfig,
    rank: int,
    times: Sequence[Tuple[int, int]],
    topo: Optional[Topology] = None,
    cat: Optional[_Catalog] = None,
) -> Tuple[RankTrace, _RankProgram]:
    """Phase 2 for one rank: re-run it with its collectives' times and record every event."""
    topo = topo or Topology(cfg.dp, cfg.mp, cfg.pp)
    cat = cat or _Catalog(cfg)
    probe = _RankProgram(cfg, topo, cat, rank, _NullSink(), _SoloBook())
    threads = {probe.main_tid: "MainThread", probe.pin_tid: "Dataloader_%d" % (140_000_000_000_000 + probe.pid * 4096)}
    rng = random.Random(cfg.seed * 7919 + rank)
    trace = RankTrace(
        probe.pid,
        DeviceProps(probe.device_id),
        threads,
        process_cpu_util=1.1 + rng.random(),
        system_cpu_util=0.05 + 0.2 * rng.random(),
    )
    if cfg.names == "default":  # CUPTI lists every GPU the process sees: the node's
        trace.devices = [DeviceProps(i) for i in range(host_gpus(cfg, host_of(cfg, rank)))]
    prog = _RankProgram(cfg, topo, cat, rank, trace, _ReplayBook(times) if times is not None else _SoloBook())
    _drive_alone(prog)
    return trace, prog


def _events_of(cfg: SynthConfig, layers_per_stage: int) -> int:
    c = replace(
        cfg,
        layers=layers_per_stage * cfg.pp,
        steps=1,
        events_per_rank=None,
        schedule="1f1b" if cfg.schedule == "interleaved" else cfg.schedule,
        virtual_stages=1,
    )
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
        ident = {
            "rank": r,
            "worker": worker,
            "file": _writer.trace_file_name(worker, info["end_t"] + 50_000_000 + export_delay_ns(cfg, r) + off),
            "written": r in chosen,
            "hostname": hostname(host, cfg),
            "host": host,
            "gpu": r % cfg.gpus_per_node,
            "pid": info["pid"],
            **topo.coords(r),
            "clock_offset_ns": off,
            "gpu_speed": cfg.gpu_speed_of(r),
        }
        ident["label"] = _truth._label(ident)
        out.append(ident)
    return out


def _peer_speed(cfg: SynthConfig, topo: Topology, rank: int) -> float:
    """The median GPU speed factor of ``rank``'s role peers: the other ranks of its pipeline
    stage (they run the same program) that carry no planted slow device."""
    stage = topo.coords(rank)["pp"]
    slow = set(cfg.slow_ranks())
    peers = [
        cfg.gpu_speed_of(p) for p in range(topo.world) if p != rank and p not in slow and topo.coords(p)["pp"] == stage
    ]
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


def _planted(
    cfg: SynthConfig,
    topo: Topology,
    cat: _Catalog,
    book: _LiveBook,
    steps: Dict[str, np.ndarray],
    controls: "_Controls",
) -> List[dict]:
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
            control = replace(cfg, slow_rank=rest) if kind == "device_slow" else replace(cfg, slow_host_rank=rest)
            cbook = controls.book(control)
            csteps = cbook.step_arrays(world)
            cost = job - cbook.job_step_ns(world)
            entry = {"type": kind, "rank": r, "stage": topo.coords(r)["pp"]}
            if kind == "device_slow":
                entry["factor"] = cfg.slow_factor
                excess = float((steps["compute_ns"][r] - csteps["compute_ns"][r]).mean())
                # at its role peers' speed: no planted factor and the peers' GPU speed
                peer = _peer_speed(cfg, topo, r)
                at_peers = (
                    control
                    if peer == cfg.gpu_speed_of(r)
                    else replace(control, gpu_speed={**(control.gpu_speed or {}), r: peer})
                )
            else:
                entry["delay_ns"] = cfg.host_delay_ns(r)
                excess = float(entry["delay_ns"])
                peer, at_peers = cfg.gpu_speed_of(r), control
            pbook = controls.book(at_peers)
            entry.update(
                excess_ns_per_step=excess,
                job_cost_ns_per_step=cost,
                absorbed=bool(cost < excess / 2),
                job_cost_max_ns_per_step=job_max - _step_max_mean(cbook, world),
                saving_at_peer_speed_ns_per_step=job - pbook.job_step_ns(world),
                gpu_speed=cfg.gpu_speed_of(r),
                peer_gpu_speed=peer,
            )
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
    return {
        "stage_parts": [stage_parts(cfg, p) for p in range(cfg.pp)],
        "stage_layers": cfg.per_stage_layers(),
        "stage_compute_ns": comp,
        "stage_compute_excess": [c / lo - 1.0 if lo else 0.0 for c in comp],
        "stage_step_ns": step,
        "job_step_ns": float(base["step_time_ns"].mean()),
    }


def _shape_truth(cfg: SynthConfig, topo: Topology, cat: _Catalog, book: _LiveBook, controls: "_Controls") -> dict:
    """What record_shapes and dp_seq_lens plant, per rank: its replica's sequence length, the tokens
    of each micro-batch (micro_batch_size × that length, every micro-batch alike), and the forward
    FLOPs of its GEMMs per micro-batch (2 · m · n · k from the shapes it writes): per decoder layer,
    the head's (last stage), the stage's total; and per step (× micro-batches). With dp_seq_lens,
    the imbalance's cost: the job's mean step minus that of the same run (same seed) with every
    replica at the mean length (balanced_seq_len, balanced_job_step_ns, imbalance_cost_ns_per_step)."""
    ranks = []
    for r in range(topo.world):
        c = topo.coords(r)
        rc = cat.for_seq(cfg.seq_len_of(c["dp"]))
        layers = sum(n for _, n in cfg.chunk_layers(c["pp"]))
        head = rc.flops["lm_head"] if c["pp"] == cfg.pp - 1 else 0
        fwd = layers * rc.layer_flops() + head
        ranks.append(
            {
                "rank": r,
                "dp": c["dp"],
                "pp": c["pp"],
                "seq_len": rc.seq_len,
                "tokens_per_micro_batch": cfg.micro_batch_size * rc.seq_len,
                "tokens_per_step": cfg.micro_batch_size * rc.seq_len * cfg.micro_batches,
                "decoder_layers": layers,
                "layer_forward_flops": rc.layer_flops(),
                "head_forward_flops": head,
                "forward_flops_per_micro_batch": fwd,
                "forward_flops_per_step": fwd * cfg.micro_batches,
                "op_forward_flops": dict(rc.flops),
            }
        )
    out = {
        "record_shapes": bool(cfg.record_shapes),
        "micro_batches": cfg.micro_batches,
        "micro_batch_size": cfg.micro_batch_size,
        "ranks": ranks,
    }
    if cfg.dp_seq_lens:  # the imbalance's cost: the same run with every replica at the mean length
        mean = int(round(sum(cfg.dp_seq_lens) / len(cfg.dp_seq_lens)))
        control = replace(cfg, dp_seq_lens=(mean,) * cfg.dp)
        job = book.job_step_ns(topo.world)
        balanced = controls.book(control).job_step_ns(topo.world)
        out.update(balanced_seq_len=mean, balanced_job_step_ns=balanced, imbalance_cost_ns_per_step=job - balanced)
    return out


_JOB: Optional[tuple] = None  # what forked writer processes read (set before the fork)


def _write_rank(r: int) -> dict:
    cfg, topo, cat, times, out_dir, layout, tables, idents, host_straggler = _JOB
    trace, prog = build_rank(cfg, r, times[r], topo, cat)
    ident = idents[r]
    entry = {
        "rank": r,
        "coords": topo.coords(r),
        "trace": ident["file"],
        "pid": trace.pid,
        "device_id": trace.device.id,
        "is_slow": r in cfg.slow_ranks(),
        "worker": ident["worker"],
        "hostname": ident["hostname"],
        "clock_offset_ns": ident["clock_offset_ns"],
    }
    steps = _ground_truth(prog, trace)
    if ident["clock_offset_ns"]:
        trace.shift_times(ident["clock_offset_ns"])
    trees = build_node_trees(trace)
    path = os.path.join(out_dir, ident["file"])
    with open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20) as f:
        n_events = _writer.write_trace(trace, trees, f, layout)
    entry["trace_events"] = n_events
    entry["steps"] = steps
    if cfg.record_shapes:  # the kernels each layer's forward launched (docs/flops.md, "Time per layer")
        entry["layer_kernels"] = [
            {"name": n, "ordinal": o, "kernels": k, "kernel_ns": ns, "comm_kernel_ns": c}
            for (n, o), (k, ns, c) in prog.layer_kernels.items()
        ]
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
        cfg = replace(
            cfg, stage_layers=tuple(int(x) for x in cfg.stage_layers), layers=sum(int(x) for x in cfg.stage_layers)
        )
    if cfg.dp_seq_lens is not None:
        cfg = replace(cfg, dp_seq_lens=tuple(int(x) for x in cfg.dp_seq_lens))
    if cfg.comm_factor is not None or cfg.slow_kernel is not None:
        cfg = replace(cfg, comm_factor=cfg.comm_factors() or None, slow_kernel=cfg.slow_kernels() or None)
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
_NEUTRAL = {
    "comm_factor": None,
    "slow_kernel": None,
    "launch_overhead": 1.0,
    "leak_bytes_per_step": 0,
    "fragment_bytes_per_step": 0,
    "schedule": "1f1b",
    "virtual_stages": 1,
    "kernel_jitter": "uniform",
    "kernel_sigma": 0.02,
    "gpu_speed_sigma": 0.0,
    "gpu_speed": None,
    "p2p_streams": "per_direction",
    "one_rank_comms": False,
    "pipeline_layers": False,
    "host_offsets_us": None,
    "host_names": "ordered",
    "export_jitter_us": 0.0,
    "comm_end_noise_us": 0.0,
    "record_shapes": False,
    "dp_seq_lens": None,
}


def generate(
    cfg: SynthConfig,
    out_dir: str,
    layout: int = 3,
    tables: bool = False,
    ranks: Optional[Iterable[int]] = None,
    log=None,
    jobs: int = 1,
) -> SynthResult:
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
    result.caused_wait_ns = {r: [book.caused[r][si] for si in range(cfg.steps)] for r in range(world)}
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
    layer_kernels = {e["rank"]: e.pop("layer_kernels") for e in rank_entries if "layer_kernels" in e}

    groups = topo.groups()
    config = asdict(cfg)
    if not host_straggler:
        del config["slow_host_rank"], config["host_delay_us"]
    for k, neutral in _NEUTRAL.items():
        if config[k] == neutral:
            del config[k]
    pp_streams = {
        "per_direction": [PP_FWD_STREAM, PP_BWD_STREAM],
        "shared": [P2P_SHARED_STREAM],
        "per_peer": [P2P_PREV_STREAM, P2P_NEXT_STREAM],
    }[cfg.p2p_streams]
    if cfg.virtual_stages > 1:
        pp_streams += [PP_FWD_RECV_STREAM, PP_BWD_RECV_STREAM]
    comm_streams = {
        "mp_allreduce": MP_STREAM,
        "pp_sendrecv": pp_streams,
        "dp_allreduce": DP_STREAM,
        "compute": COMPUTE_STREAM,
    }
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
        **({"slow_host_rank": cfg.slow_host_rank, "host_delay_us": cfg.host_delay_us} if host_straggler else {}),
        "truth": [_truth.TRUTH_JSON, _truth.TRUTH_NPZ],
        "definitions": {
            "step_time_ns": "ProfileStep#N duration on the rank's main thread",
            "kernel_ns": "sum of the kind's NCCL kernel durations in the step",
            "wait_ns": "part of kernel_ns spent waiting for the collective's last member",
            "exposed_ns": "time the kind's NCCL kernels run while no compute kernel runs on the GPU",
            "exposed_comm_ns": "the same for all NCCL kernels together",
            "start_ns": "global clock (a trace shows it plus its host's clock_offset_ns)",
            **(
                {
                    "host_delay_ns": "extra time the rank's data loader (host thread) stalls at the start "
                    "of every step; its kernels keep their normal durations"
                }
                if host_straggler
                else {}
            ),
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
        "schedule": {
            "name": cfg.schedule,
            "virtual_stages": cfg.virtual_stages,
            "chunk_layers": [[list(c) for c in cfg.chunk_layers(p)] for p in range(cfg.pp)],
        },
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
    if cfg.record_shapes or cfg.dp_seq_lens:
        meta["shapes"] = _shape_truth(cfg, topo, cat, book, controls)
        for r in meta["shapes"]["ranks"]:
            if r["rank"] in layer_kernels:
                r["layer_kernels"] = layer_kernels[r["rank"]]
    caused = np.array([[book.caused[r][si] for si in range(cfg.steps)] for r in range(world)], dtype=np.int64).reshape(
        world, cfg.steps
    )
    _truth.write_truth(
        out_dir,
        meta,
        {**book.columns(), **steps, "caused_wait_ns": caused, **book.schedule_columns(world, cfg.first_step)},
    )
    result.truth = meta
    timings["total"] = time.perf_counter() - t_start
    result.timings = timings
    return result
