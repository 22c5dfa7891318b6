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

# The generator is split by concern, and this module keeps every name it always offered:
# config (SynthConfig, hosts, topology, shared constants), catalog (kernels and their
# durations), the parts of one rank's program put together in program._RankProgram (recorder,
# timing, memory, layers, parallel, schedule) and driver (phases 1 and 2, the truth, generate).
from __future__ import annotations

from .catalog import _Catalog  # noqa: F401
from .config import (
    COMM_AXES,
    COMM_KINDS,
    COMPUTE_STREAM,
    DP_STREAM,
    EPOCH_NS,  # noqa: F401
    KERNEL_JITTERS,
    MANIFEST_NAME,
    MP_STREAM,
    P2P_LAYOUTS,
    P2P_NEXT_STREAM,
    P2P_PREV_STREAM,
    P2P_SHARED_STREAM,
    PP_BWD_RECV_STREAM,
    PP_BWD_STREAM,
    PP_FWD_RECV_STREAM,
    PP_FWD_STREAM,
    PP_GROUP_KIND,
    PP_GROUP_STREAM,
    REALISTIC,
    SCHEDULES,
    TRUTH_KINDS,
    SynthConfig,
    Topology,
    clock_offset_ns,
    config_dict,
    host_gpus,
    host_of,
    host_pids,
    hostname,
    worker_name,
)
from .driver import (  # noqa: F401
    SynthResult,
    _drive_alone,
    _ground_truth,
    _prepare,
    _simulate_together,
    build_rank,
    generate,
    simulate_step_time,
    size_for,
    stage_parts,
)
from .parallel import _LiveBook, _ReplayBook, _SoloBook  # noqa: F401
from .program import _RankProgram  # noqa: F401
from .recorder import _NullSink  # noqa: F401
from .schedule import pipeline_order  # noqa: F401

__all__ = [
    "COMM_AXES",
    "COMM_KINDS",
    "COMPUTE_STREAM",
    "DP_STREAM",
    "EPOCH_NS",
    "KERNEL_JITTERS",
    "MANIFEST_NAME",
    "MP_STREAM",
    "P2P_LAYOUTS",
    "P2P_NEXT_STREAM",
    "P2P_PREV_STREAM",
    "P2P_SHARED_STREAM",
    "PP_BWD_RECV_STREAM",
    "PP_BWD_STREAM",
    "PP_FWD_RECV_STREAM",
    "PP_FWD_STREAM",
    "PP_GROUP_KIND",
    "PP_GROUP_STREAM",
    "REALISTIC",
    "SCHEDULES",
    "TRUTH_KINDS",
    "SynthConfig",
    "SynthResult",
    "Topology",
    "build_rank",
    "clock_offset_ns",
    "config_dict",
    "generate",
    "host_gpus",
    "host_of",
    "host_pids",
    "hostname",
    "pipeline_order",
    "simulate_step_time",
    "size_for",
    "stage_parts",
    "worker_name",
]
