"""The planted ground truth of a generated run, as ``generate()`` writes it beside the traces.

    from tbp_synth.truth import load_truth
    t = load_truth(out_dir)

Two files: ``synth_truth.json`` (config, ranks, steps, planted anomalies, per-stage compute,
host clock offsets) and ``synth_truth.npz`` (numpy columns, compressed: every collective
instance with its members, and the per-rank, per-step times). All times are nanoseconds of the
*global* clock of the simulation; a rank's trace shows ``global + clock_offset_ns`` of its host.

:class:`Truth` attributes

* ``config``: dict of the SynthConfig used (after sizing).
* ``ranks``: one dict per rank in rank order: ``rank``, ``worker`` (the worker name in the
  file name), ``file`` (trace file name; written only for the ranks ``generate`` was asked
  to write, see ``written``), ``written`` (bool), ``hostname``, ``host`` (host index), ``gpu``
  (local device id its kernels run on), ``pid``, ``dp``, ``pp``, ``mp``, ``clock_offset_ns``
  (trace time = global time + offset), ``gpu_speed`` (the factor its GPU's compute kernels
  take longer by, besides a planted slow device: 1 unless ``gpu_speed_sigma`` or
  ``gpu_speed`` is set), ``label`` (``"rank 5 · dp1 pp0 mp1 · gpunode0 GPU5 · pid 30512"``).
* ``steps``: the ProfileStep numbers, in order; ``step_time_ns``, ``step_start_ns``,
  ``step_end_ns``, ``compute_ns``: int64 arrays of shape ``(world, len(steps))`` indexed
  ``[rank, step index]`` (ProfileStep duration, its start and end on the global clock, the sum
  of the rank's compute-kernel durations in the step: every non-NCCL kernel, all on one stream);
  ``caused_wait_ns`` (same shape): the wait the rank caused its peers at the MP and DP
  all-reduces where it arrived last (latest start, the lowest rank among equals): Σ over those
  instances of last start − each other member's start (``SynthResult.caused_wait_ns``).
* ``planted``: list of ``{"type": "device_slow" | "host_stall", "rank", "stage", "factor" |
  "delay_ns", "excess_ns_per_step", "job_cost_ns_per_step", "absorbed"}``.
  ``excess_ns_per_step`` is what the anomaly adds to its own rank per step (host stall: the
  delay; slow device: its compute-kernel time minus the same without the anomaly);
  ``job_cost_ns_per_step`` is the job's mean step time (mean over ranks and steps) minus that
  of the same run (same seed) simulated without this one anomaly; ``absorbed`` is
  ``job_cost_ns_per_step < excess_ns_per_step / 2``. Empty for a control run. Also:
  ``job_cost_max_ns_per_step`` (the same difference of the mean over steps of the longest
  rank's step), ``gpu_speed`` (the rank's own GPU speed factor), ``peer_gpu_speed`` (the
  median of its role peers': the other ranks of its pipeline stage without a planted slow
  device) and ``saving_at_peer_speed_ns_per_step``: the job's mean step time minus that of
  the same run with this rank at its role peers' speed (slow device: no planted factor and
  the peers' GPU speed; host stall: no stall), equal to ``job_cost_ns_per_step`` unless the
  GPUs' speeds differ. Each control is the same run with the same seed, so every kernel and
  host gap has the same noise; a difference of two generated runs' traces gives the same
  number (``tests/unit/test_synth_realism.py``).
* ``structural``: the stage differences every replica shares (structure, never stragglers),
  from the same run simulated without any planted anomaly: ``stage_parts`` (per stage, what
  it holds besides decoder layers: ``"data_loader"``, ``"embedding"`` on the first stage,
  ``"head"``, ``"loss"`` on the last; every stage reads data without ``pipeline_layers``),
  ``stage_layers``, ``stage_compute_ns`` (mean over the stage's ranks and the steps of
  ``compute_ns``), ``stage_compute_excess`` (each stage's compute over the least-computing
  stage's, minus 1), ``stage_step_ns`` (mean step time of the stage's ranks) and
  ``job_step_ns``.
* ``p2p_streams`` (``"per_direction"``, ``"shared"``, ``"per_peer"``) and
  ``one_rank_comms``: the send/recv layout and whether one-rank communicators launch
  kernels (docs/generator.md, "Realism").
* ``changes``: the planted changes that are on (docs/generator.md, "Planted changes"), one
  dict each: ``{"type": "comm_factor", "axis", "factor"}``, ``{"type": "slow_kernel",
  "substring", "factor"}``, ``{"type": "launch_overhead", "factor"}``, ``{"type": "leak",
  "bytes_per_step"}`` or ``{"type": "fragment", "bytes_per_step"}``, each with
  ``job_cost_ns_per_step``: the job's mean step time minus that of the same run simulated
  without this one change (negative when the change makes the job faster). Empty by default.
* ``schedule_name`` (``"1f1b"``, ``"gpipe"``, ``"interleaved"``), ``virtual_stages`` (model
  chunks per stage, 1 unless interleaved), ``chunk_layers[stage]``: per chunk of the stage,
  ``[first decoder layer, layer count]`` (chunk c of stage s is virtual stage c * pp + s).
* ``schedule(rank, step)``: the rank's pipeline slots of that ProfileStep (its number) in
  execution order, each ``{"phase": "F" | "B", "micro_batch", "chunk", "device_start_ns",
  "device_end_ns"}``: the start of the slot's first compute kernel and the end of its last
  (global clock; NCCL kernels are not compute kernels). A slot is one micro-batch's forward
  or backward of one chunk: in the trace, one ``Forward`` event (``GPTForCausalLMPipe``, or
  ``PipelineLayerChunk`` per chunk when interleaved; ``GPTForCausalLM`` when pp = 1) or one
  ``Backward`` event (``Gradient Backward``) on the main thread, in the same order. pp = 1
  runs have slots too (F0 B0 F1 B1 …).
* ``gpu_allocated_end_bytes``, ``gpu_reserved_end_bytes``: ``(world, steps)`` int64, the
  rank's GPU allocator's allocated and reserved bytes at the end of each step (what its last
  memory event in the ProfileStep reports).
* ``job_step_ns``: the job's mean step time, the mean over all ranks and steps of
  ``step_time_ns`` (what ``planted`` and ``changes`` compare); ``step_max_ns``: per step, the
  longest rank's ProfileStep duration (array of ``len(steps)``).
* ``stage_compute_ns``: per pipeline stage, the mean over its ranks and the steps of
  ``compute_ns``; ``stage_layers``: decoder layers per stage.
* ``host_offsets_ns``: per host, its clock offset.
* ``instances``: an iterator of dicts, one per collective instance (see below);
  ``n_instances``; ``columns``: the same as numpy arrays (the npz), for vectorised use.

Instance dicts: ``{"step" (ProfileStep number), "kind" ("all_reduce", "broadcast",
"send_recv"), "axis" ("mp", "dp", "pp" for send/recv between neighbouring stages,
"pp_group" for the clip all-reduce and loss broadcasts over a pipeline's stages), "root"
(the broadcast's source rank, else -1), "transfer_ns", "bytes", "members": [{"rank", "ordinal",
"wait_ns", "start_ns", "end_ns"}]}``. Every member's NCCL kernel ends at the same moment (the
last member's start plus the transfer); its ``wait_ns`` = duration - transfer = last start -
its start. With ``comm_end_noise_us`` each member's ``end_ns`` is its own (that moment plus its
noise, never before its start plus half the transfer), and ``wait_ns`` = duration - transfer. ``ordinal`` is the position of the instance among that rank's instances of the same
step and kind in launch order (``ParallelView.collectives.ordinal``). For send/recv the
members are ``[sender, receiver]``; for the others they are in rank order.

Columns (``t.columns``; ``I`` instances, ``M`` members in all):

=====================  =======  ======  =========================================================
name                   dtype    shape   meaning
=====================  =======  ======  =========================================================
``kind_names``         str      (K,)    names the kind codes index
``axis_names``         str      (A,)    names the axis codes index
``inst_step``          int64    (I,)    ProfileStep number
``inst_kind``          int8     (I,)    index into ``kind_names``
``inst_axis``          int8     (I,)    index into ``axis_names``
``inst_transfer_ns``   int64    (I,)    transfer time
``inst_bytes``         int64    (I,)    bytes it moves (each member's buffer: the transfer is
                                        8 µs + bus factor × bytes ÷ the link's bandwidth, jittered)
``inst_root``          int32    (I,)    broadcast source rank, else -1
``inst_ptr``           int64    (I+1,)  members of instance i are rows ``inst_ptr[i]:inst_ptr[i+1]``
``mem_rank``           int32    (M,)    member rank
``mem_ordinal``        int32    (M,)    ordinal (see above)
``mem_start_ns``       int64    (M,)    its NCCL kernel's start (global clock)
``mem_end_ns``         int64    (M,)    its end (global clock)
``mem_wait_ns``        int64    (M,)    its wait
``step_time_ns`` ...   int64    (R, S)  as the attributes above (also ``gpu_*_end_bytes``)
``sched_rank``         int32    (N,)    schedule slots, sorted by rank, step, execution order
``sched_step``         int64    (N,)    ProfileStep number
``sched_phase``        int8     (N,)    0 = forward, 1 = backward
``sched_micro_batch``  int32    (N,)    micro-batch
``sched_chunk``        int8     (N,)    model chunk of the stage (0 unless interleaved)
``sched_start_ns``     int64    (N,)    the slot's first compute kernel's start (global clock)
``sched_end_ns``       int64    (N,)    its last compute kernel's end
=====================  =======  ======  =========================================================

:func:`simulate_step_time` gives the step times of a config simulated again (no traces), to
compare an estimate with "the generator run again with the change".
"""

from __future__ import annotations

import json
import os
from typing import Dict, Iterable, Iterator, List, Optional

import numpy as np

TRUTH_JSON = "synth_truth.json"
TRUTH_NPZ = "synth_truth.npz"
FORMAT_VERSION = 1

KIND_NAMES = ("all_reduce", "broadcast", "send_recv", "all_gather", "reduce_scatter", "all_to_all")
AXIS_NAMES = ("mp", "dp", "pp", "pp_group")
_STEP_ARRAYS = (
    "step_time_ns",
    "step_start_ns",
    "step_end_ns",
    "compute_ns",
    "caused_wait_ns",
    "gpu_allocated_end_bytes",
    "gpu_reserved_end_bytes",
)


class StepTime:
    """Step times of a simulated run (``simulate_step_time``).

    ``step_time_ns``: ``(world, steps)`` ProfileStep durations; ``mean_ns``: the job's mean
    step time, the mean over ranks and steps (``Truth.job_step_ns``, what ``planted`` uses);
    ``step_max_ns``: per step, the longest rank's duration; ``max_ns``: the mean over steps of
    ``step_max_ns``; ``rank_mean_ns``: per rank, the mean over steps."""

    def __init__(self, step_time_ns: np.ndarray):
        self.step_time_ns = step_time_ns
        self.mean_ns = float(step_time_ns.mean()) if step_time_ns.size else 0.0
        self.step_max_ns = step_time_ns.max(axis=0)
        self.max_ns = float(self.step_max_ns.mean()) if self.step_max_ns.size else 0.0
        self.rank_mean_ns = step_time_ns.mean(axis=1)

    def __repr__(self) -> str:
        return "StepTime(mean %.3f ms, max %.3f ms)" % (self.mean_ns / 1e6, self.max_ns / 1e6)


def simulate_step_time(cfg) -> StepTime:
    """Simulate the run a ``SynthConfig`` describes, without writing traces (the generator's
    phase 1), and return its :class:`StepTime`. With the same config as a generated run,
    ``mean_ns`` equals that run's ``Truth.job_step_ns`` exactly."""
    from .generator import simulate_step_time as _simulate

    return _simulate(cfg)


class Truth:
    """What :func:`load_truth` returns (see the module docstring)."""

    def __init__(self, meta: dict, columns: Dict[str, np.ndarray]):
        self.meta = meta
        self.config: dict = meta["config"]
        self.ranks: List[dict] = meta["ranks"]
        self.steps: List[int] = meta["steps"]
        self.planted: List[dict] = meta["planted"]
        self.stage_compute_ns: List[float] = meta["stage_compute_ns"]
        self.stage_layers: List[int] = meta["stage_layers"]
        self.host_offsets_ns: List[int] = meta["host_offsets_ns"]
        self.columns = columns
        for name in _STEP_ARRAYS:
            setattr(self, name, columns.get(name))
        self.changes: List[dict] = meta.get("changes", [])
        self.structural: dict = meta.get("structural", {})
        self.p2p_streams: str = meta.get("p2p_streams", "per_direction")
        self.one_rank_comms: bool = bool(meta.get("one_rank_comms", False))
        sched = meta.get("schedule") or {"name": "1f1b", "virtual_stages": 1}
        self.schedule_name: str = sched["name"]
        self.virtual_stages: int = sched["virtual_stages"]
        self.chunk_layers: List[List[List[int]]] = sched.get("chunk_layers", [])
        self.job_step_ns: float = meta["job_step_ns"]
        self.step_max_ns: np.ndarray = self.step_time_ns.max(axis=0)
        self.kind_names = [str(x) for x in columns["kind_names"]]
        self.axis_names = [str(x) for x in columns["axis_names"]]

    @property
    def world(self) -> int:
        return len(self.ranks)

    @property
    def n_instances(self) -> int:
        return int(self.columns["inst_step"].size)

    @property
    def instances(self) -> Iterator[dict]:
        c = self.columns
        ptr = c["inst_ptr"].tolist()
        step, kind, axis = c["inst_step"].tolist(), c["inst_kind"].tolist(), c["inst_axis"].tolist()
        xfer, root = c["inst_transfer_ns"].tolist(), c["inst_root"].tolist()
        nbytes = c["inst_bytes"].tolist() if "inst_bytes" in c else [0] * len(step)
        rank, ordinal = c["mem_rank"].tolist(), c["mem_ordinal"].tolist()
        start, end, wait = c["mem_start_ns"].tolist(), c["mem_end_ns"].tolist(), c["mem_wait_ns"].tolist()
        kinds, axes = self.kind_names, self.axis_names
        for i in range(len(step)):
            yield {
                "step": step[i],
                "kind": kinds[kind[i]],
                "axis": axes[axis[i]],
                "root": root[i],
                "transfer_ns": xfer[i],
                "bytes": nbytes[i],
                "members": [
                    {"rank": rank[j], "ordinal": ordinal[j], "wait_ns": wait[j], "start_ns": start[j], "end_ns": end[j]}
                    for j in range(ptr[i], ptr[i + 1])
                ],
            }

    def member_mask(self, kinds: Optional[Iterable[str]] = None) -> np.ndarray:
        """Boolean mask over member rows whose instance's kind or axis is in ``kinds``."""
        c = self.columns
        n = c["mem_rank"].size
        if kinds is None:
            return np.ones(n, dtype=bool)
        want = set(kinds)
        unknown = want - set(self.kind_names) - set(self.axis_names)
        if unknown:
            raise ValueError("unknown collective kinds or axes: %s" % ", ".join(sorted(unknown)))
        ok_kind = np.array([k in want for k in self.kind_names], dtype=bool)
        ok_axis = np.array([a in want for a in self.axis_names], dtype=bool)
        inst_ok = ok_kind[c["inst_kind"]] | ok_axis[c["inst_axis"]]
        return np.repeat(inst_ok, np.diff(c["inst_ptr"]))

    def waits_ns(self, kinds: Optional[Iterable[str]] = None) -> np.ndarray:
        """Per rank (array of ``world``): mean over steps of the Σ wait_ns of its members."""
        c = self.columns
        m = self.member_mask(kinds)
        total = np.bincount(c["mem_rank"][m], weights=c["mem_wait_ns"][m], minlength=self.world)
        return total / max(1, len(self.steps))

    def waits_per_step(self, rank: int, kinds: Optional[Iterable[str]] = None) -> float:
        """Mean over the steps of the Σ wait_ns of ``rank``'s members (only instances whose
        kind or axis is in ``kinds``, when given)."""
        return float(self.waits_ns(kinds)[rank])

    def schedule(self, rank: int, step: int) -> List[dict]:
        """``rank``'s pipeline slots of ProfileStep ``step`` in execution order (see the
        module docstring)."""
        c = self.columns
        rows = np.flatnonzero((c["sched_rank"] == rank) & (c["sched_step"] == step))
        return [
            {
                "phase": "FB"[int(c["sched_phase"][i])],
                "micro_batch": int(c["sched_micro_batch"][i]),
                "chunk": int(c["sched_chunk"][i]),
                "device_start_ns": int(c["sched_start_ns"][i]),
                "device_end_ns": int(c["sched_end_ns"][i]),
            }
            for i in rows
        ]

    def members_of(self, rank: int) -> Dict[str, np.ndarray]:
        """``rank``'s member rows with their instance's step, kind and axis (columns)."""
        c = self.columns
        inst = np.repeat(np.arange(self.n_instances), np.diff(c["inst_ptr"]))
        rows = np.flatnonzero(c["mem_rank"] == rank)
        i = inst[rows]
        return {
            "instance": i,
            "step": c["inst_step"][i],
            "kind": c["inst_kind"][i],
            "axis": c["inst_axis"][i],
            "ordinal": c["mem_ordinal"][rows],
            "start_ns": c["mem_start_ns"][rows],
            "end_ns": c["mem_end_ns"][rows],
            "wait_ns": c["mem_wait_ns"][rows],
            "transfer_ns": c["inst_transfer_ns"][i],
        }


def write_truth(out_dir: str, meta: dict, columns: Dict[str, np.ndarray]) -> None:
    """Write both files (the npz first, each through a temporary name)."""
    meta = dict(meta, format_version=FORMAT_VERSION, columns=TRUTH_NPZ)
    cols = dict(columns)
    cols["kind_names"] = np.array(KIND_NAMES)
    cols["axis_names"] = np.array(AXIS_NAMES)
    tmp = os.path.join(out_dir, TRUTH_NPZ + ".tmp.npz")
    np.savez_compressed(tmp, **cols)
    os.replace(tmp, os.path.join(out_dir, TRUTH_NPZ))
    tmp = os.path.join(out_dir, TRUTH_JSON + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    os.replace(tmp, os.path.join(out_dir, TRUTH_JSON))


def load_truth(out_dir: str) -> Truth:
    """The truth ``generate()`` wrote into ``out_dir``."""
    path = os.path.join(out_dir, TRUTH_JSON)
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError("%s: no generator truth here (written by tbp_synth generate())" % path) from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            "%s: truth format %r, this reader knows %d" % (path, meta.get("format_version"), FORMAT_VERSION)
        )
    with np.load(os.path.join(out_dir, meta["columns"]), allow_pickle=False) as z:
        columns = {k: z[k] for k in z.files}
    return Truth(meta, columns)


def _label(r: dict) -> str:
    return "rank %d · dp%d pp%d mp%d · %s GPU%d · pid %d" % (
        r["rank"],
        r["dp"],
        r["pp"],
        r["mp"],
        r["hostname"],
        r["gpu"],
        r["pid"],
    )


__all__ = [
    "AXIS_NAMES",
    "KIND_NAMES",
    "TRUTH_JSON",
    "TRUTH_NPZ",
    "StepTime",
    "Truth",
    "load_truth",
    "simulate_step_time",
    "write_truth",
]
