"""Collectives by kind and the per-step time breakdown of one rank (not a Paddle table).

Paddle's Distributed Summary (distributed.py) knows communication only by the substrings
allreduce/broadcast/rpc (operators) and nccl/xccl (kernels), and reports one union. This
module classifies every communication event into a kind and splits each step's time so that
hybrid-parallel runs can be compared across ranks (analysis/crossrank/). Definitions, also in
docs/distributed.md:

- A *communication kernel* is a kernel whose name holds nccl, xccl or rccl. Its kind comes
  from its name (ncclDevKernel_AllReduce_*, *SendRecv*, ...), else from the host
  communication event that issued it.
- A *host communication event* is a Communication-type event, or an operator whose name
  names a collective (c_allreduce_sum, all_gather, send_v2, recv_v2, alltoall, ...). Only
  the outermost one of a nesting counts.
- An *instance* is a communication kernel, or a host communication event that launched no
  communication kernel (gloo on CPU). Its step is the step of its launch; its ordinal is its
  position among the rank's instances of that step and kind, in launch order.
- Device timeline, per step (every device of the trace merged, clipped to the step):
  compute = union of the other kernels; communication = union of communication kernels;
  hidden = communication ∩ compute; exposed = communication − compute (per kind: that
  kind's union − compute); memory = union of memcpy/memset; exposed memory = memory while no
  kernel runs; idle = no device event. compute + exposed + exposed memory + idle = step.
- Per step also: the data loader's time (union of Dataloader events, clipped to the step) and the
  device's wait for the host's first work (the step's start to its first kernel, memcpy or memset
  starting in it; -1 without any).
- A trace without device events (CPU run) uses the host timeline: communication = union of
  host communication events (they block the calling thread, so all of it is exposed);
  compute = union of the other operators outside communication; idle = the rest.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np

from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.trace.event_tree import gather
from ..v1 import summary_pb2 as pb
from . import ranges
from .host_stalls import mid_step_stalls
from .phases import phase_spans
from .profile import Profile
from .program import build_program

ALL_REDUCE = pb.COLLECTIVE_KIND_ALL_REDUCE
ALL_GATHER = pb.COLLECTIVE_KIND_ALL_GATHER
REDUCE_SCATTER = pb.COLLECTIVE_KIND_REDUCE_SCATTER
BROADCAST = pb.COLLECTIVE_KIND_BROADCAST
SEND_RECV = pb.COLLECTIVE_KIND_SEND_RECV
ALL_TO_ALL = pb.COLLECTIVE_KIND_ALL_TO_ALL
OTHER = pb.COLLECTIVE_KIND_OTHER
NOT_COMMUNICATION = pb.COLLECTIVE_KIND_UNSPECIFIED

KIND_LABELS: Dict[int, str] = {
    ALL_REDUCE: "all_reduce",
    ALL_GATHER: "all_gather",
    REDUCE_SCATTER: "reduce_scatter",
    BROADCAST: "broadcast",
    SEND_RECV: "send_recv",
    ALL_TO_ALL: "all_to_all",
    OTHER: "other",
}

COMMUNICATION_KERNEL_WORDS = ("nccl", "xccl", "rccl")

# Substrings of the name lower-cased with everything but letters and digits removed, in the
# order they are tried ("c_allreduce_sum" → "callreducesum" → all_reduce).
_COMPACT_WORDS = (
    ("reducescatter", REDUCE_SCATTER),
    ("allgather", ALL_GATHER),
    ("allreduce", ALL_REDUCE),
    ("alltoall", ALL_TO_ALL),
    ("globalgather", ALL_TO_ALL),  # MoE dispatch/combine operators
    ("globalscatter", ALL_TO_ALL),
    ("sendrecv", SEND_RECV),
)
# Whole words (split at non-letters and at camelCase humps).
_P2P_WORDS = {
    "send": pb.P2P_DIRECTION_SEND,
    "isend": pb.P2P_DIRECTION_SEND,
    "recv": pb.P2P_DIRECTION_RECV,
    "irecv": pb.P2P_DIRECTION_RECV,
}
# Operators that communicate without naming a kind above (Paddle also counts "rpc" ones).
_OTHER_OPERATOR_PREFIXES = ("c_reduce", "c_scatter", "c_gather", "barrier", "c_barrier")
_NOT_BROADCAST = ("broadcasttensors", "broadcastto", "broadcastshape")
_TOKENS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SYNC_RUNTIME = re.compile(r"synchronize|^cudamemcpy(?:2d|3d)?(?:_|$)|^cumemcpy(?:dtoh|htod|dtod)?(?:_v\d+)?$", re.I)

_DTYPE_BYTES = {
    "float64": 8,
    "double": 8,
    "int64": 8,
    "complex64": 8,
    "uint64": 8,
    "float32": 4,
    "float": 4,
    "int32": 4,
    "uint32": 4,
    "float16": 2,
    "bfloat16": 2,
    "half": 2,
    "int16": 2,
    "uint16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
    "complex128": 16,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}


@functools.lru_cache(maxsize=4096)  # asked for each name up to three times per trace
def kind_of_name(name: str) -> int:
    """The collective kind a name tells, or NOT_COMMUNICATION when it tells none."""
    compact = re.sub(r"[^a-z0-9]", "", name.lower())
    for word, kind in _COMPACT_WORDS:
        if word in compact:
            return kind
    if "broadcast" in compact and not any(w in compact for w in _NOT_BROADCAST):
        return BROADCAST
    if direction_of_name(name) != pb.P2P_DIRECTION_UNSPECIFIED:
        return SEND_RECV
    return NOT_COMMUNICATION


def direction_of_name(name: str) -> int:
    """SEND or RECV when the name holds exactly one of the words send/recv."""
    words = {w.lower() for w in _TOKENS.findall(name)}
    found = {d for w, d in _P2P_WORDS.items() if w in words}
    return found.pop() if len(found) == 1 else pb.P2P_DIRECTION_UNSPECIFIED


def is_communication_kernel(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in COMMUNICATION_KERNEL_WORDS)


def host_kind(name: str, event_type: int) -> int:
    """Kind of a host event: Communication events are always communication (OTHER when the name
    tells no kind); operators only when their name names a collective."""
    kind = kind_of_name(name)
    if event_type == et.COMMUNICATION:
        return kind or OTHER
    if event_type == et.OPERATOR:
        if _is_grad_node(name):
            return NOT_COMMUNICATION
        if kind:
            return kind
        low = name.lower()
        if low.startswith(_OTHER_OPERATOR_PREFIXES) or "rpc" in {w.lower() for w in _TOKENS.findall(name)}:
            return OTHER
    return NOT_COMMUNICATION


def _is_grad_node(name: str) -> bool:
    """An autograd node (``Global_GradNodePyLayer_mp_allreduce_eager``, ``CIdentityGradNode``): it runs
    the backward of an operator whose name may name a collective, but communicates only through the
    kernels and operators it launches (on CPU/gloo Paddle records no event for those at all)."""
    return "gradnode" in name.lower().replace("_", "")


def shape_bytes(shapes_json: str, dtypes_json: str) -> int:
    """Bytes of an operator's inputs from Paddle's input_shapes/input_dtypes (0 when unknown)."""
    try:
        shapes, dtypes = json.loads(shapes_json), json.loads(dtypes_json or "{}")
    except ValueError:
        return 0
    # Any JSON may stand there in a file: only Paddle's {input: [shape, ...]} and {input: [dtype, ...]} count.
    if not isinstance(shapes, dict):
        return 0
    if not isinstance(dtypes, dict):
        dtypes = {}
    total = 0
    for name, shape_list in shapes.items():
        types = dtypes.get(name)
        if not isinstance(shape_list, list) or not isinstance(types, list):
            continue
        for i, shape in enumerate(shape_list):
            size = _DTYPE_BYTES.get(str(types[i]).lower().replace("paddle.", "") if i < len(types) else "", 0)
            if size and isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape):
                count = 1
                for d in shape:  # Python ints: no wrap-around
                    count *= d
                total += count * size
    return min(total, _MAX_BYTES)


_MAX_BYTES = (1 << 63) - 1  # what an int64 column holds


@dataclass
class Instances:
    """Communication instances of one trace as columns (see the module docstring)."""

    kind: np.ndarray
    name: List[str]
    op: List[str]
    start: np.ndarray
    end: np.ndarray
    launch: np.ndarray
    device_id: np.ndarray
    stream: np.ndarray
    on_device: np.ndarray
    nbytes: np.ndarray
    direction: np.ndarray


class CollectiveAnalysis:
    def __init__(self, p: Profile, steps: Sequence[Tuple[int, int, int]]):
        t, tree = p.tables, p.tree
        names = t.names
        self.p = p
        n_host = len(t.host.tid)

        name_kind = np.array([kind_of_name(n) for n in names], dtype=np.int16) if names else np.zeros(0, np.int16)
        comm_name = np.array([is_communication_kernel(n) for n in names], dtype=bool) if names else np.zeros(0, bool)

        # Host communication events, outermost only.
        op_kind = np.array([host_kind(n, et.OPERATOR) for n in names], dtype=np.int16)
        comm_kind = np.array([host_kind(n, et.COMMUNICATION) for n in names], dtype=np.int16)
        host_k = np.zeros(n_host, dtype=np.int16)
        if n_host:
            host_k = np.where(
                t.host.type == et.OPERATOR,
                op_kind[t.host.name],
                np.where(t.host.type == et.COMMUNICATION, comm_kind[t.host.name], 0),
            ).astype(np.int16)
        comm_root = tree.outermost(host_k > 0)
        op_root = tree.outermost_operator
        outer_comm = np.nonzero(comm_root == np.arange(n_host))[0]

        # Communication kernels and the host event that launched each.
        is_kernel = t.device.type == et.KERNEL
        dev_comm = is_kernel & (comm_name[t.device.name] if len(t.device.name) else np.zeros(0, bool))
        dev_host = tree.dev_host
        launcher_comm = gather(comm_root, dev_host, -1)
        launcher_op = gather(op_root, dev_host, -1)
        k_rows = np.nonzero(dev_comm)[0]
        k_kind = name_kind[t.device.name[k_rows]].astype(np.int16)
        k_host = launcher_comm[k_rows]
        fallback = gather(host_k, k_host, OTHER)
        k_kind = np.where(k_kind > 0, k_kind, fallback).astype(np.int16)
        k_rt = tree.dev_rt[k_rows]
        k_launch = np.where(k_rt >= 0, gather(t.runtime.start, k_rt, 0), t.device.start[k_rows])
        k_op_row = np.where(k_host >= 0, k_host, launcher_op[k_rows])

        # Host communication events without a communication kernel are instances themselves.
        kernels_of = np.bincount(k_host[k_host >= 0], minlength=n_host) if n_host else np.zeros(0, np.int64)
        h_rows = outer_comm[kernels_of[outer_comm] == 0]

        op_bytes = np.zeros(n_host, dtype=np.int64)
        for row in outer_comm.tolist():
            if row in t.host.shapes:
                op_bytes[row] = shape_bytes(*t.host.shapes[row])
        one_kernel = kernels_of == 1
        k_bytes = np.where(gather(one_kernel, k_host, False), gather(op_bytes, k_host, 0), 0)

        def op_name(row: int) -> str:
            return names[t.host.name[row]] if row >= 0 else ""

        kind = np.concatenate([k_kind, host_k[h_rows]]).astype(np.int16)
        start = np.concatenate([t.device.start[k_rows], t.host.start[h_rows]])
        order = np.lexsort((start, np.concatenate([k_launch, t.host.start[h_rows]])))
        inst_names = [names[i] for i in t.device.name[k_rows].tolist()] + [
            names[t.host.name[r]] for r in h_rows.tolist()
        ]
        inst_ops = [op_name(r) for r in k_op_row.tolist()] + [names[t.host.name[r]] for r in h_rows.tolist()]
        direction = np.array(
            [direction_of_name(o) if k == SEND_RECV else 0 for o, k in zip(inst_ops, kind.tolist())], dtype=np.int16
        )
        self.instances = Instances(
            kind=kind[order],
            name=[inst_names[i] for i in order.tolist()],
            op=[inst_ops[i] for i in order.tolist()],
            start=start[order],
            end=np.concatenate([t.device.end[k_rows], t.host.end[h_rows]])[order],
            launch=np.concatenate([k_launch, t.host.start[h_rows]])[order],
            device_id=np.concatenate([t.device.id[k_rows], np.full(h_rows.size, -1)])[order],
            stream=np.concatenate([t.device.stream[k_rows], np.full(h_rows.size, -1)])[order],
            on_device=np.concatenate([np.ones(k_rows.size, bool), np.zeros(h_rows.size, bool)])[order],
            nbytes=np.concatenate([k_bytes, op_bytes[h_rows]])[order],
            direction=direction[order],
        )
        self._outer_comm = outer_comm
        self._host_k = host_k
        # per instance: its device row (-1: a host instance) and host row (-1: a kernel), for the program
        self.inst_dev_row = np.concatenate([k_rows, np.full(h_rows.size, -1, np.int64)])[order]
        self.inst_host_row = np.concatenate([np.full(k_rows.size, -1, np.int64), h_rows])[order]
        self.inst_op_row = np.concatenate([k_op_row, h_rows])[order]  # its issuing host event (-1: none)

        # Steps: ProfileSteps, or the whole trace as one pseudo-step.
        if steps:
            self.steps = list(steps)
        else:
            starts = [a.min() for a in (t.host.start, t.runtime.start, t.device.start) if a.size]
            ends = [a.max() for a in (t.host.end, t.runtime.end, t.device.end) if a.size]
            self.steps = [(-1, int(min(starts)), int(max(ends)))] if starts else []
        self.timeline = pb.TIMELINE_DEVICE if len(t.device.id) else pb.TIMELINE_HOST
        self.dev_comm = dev_comm

    def _step_of(self, times: np.ndarray) -> np.ndarray:
        """Index into self.steps of the step holding each time (-1: none)."""
        if not self.steps or times.size == 0:
            return np.full(times.size, -1, dtype=np.int64)
        s = np.array([a for _, a, _ in self.steps], dtype=np.int64)
        e = np.array([b for _, _, b in self.steps], dtype=np.int64)
        order = np.argsort(s, kind="stable")
        i = np.searchsorted(s[order], times, side="right") - 1
        idx = order[np.maximum(i, 0)]
        ok = (i >= 0) & (times < e[idx])
        return np.where(ok, idx, -1)

    def to_pb(self, out: pb.ParallelView) -> None:
        t, tree = self.p.tables, self.p.tree
        inst = self.instances
        out.timeline = self.timeline

        inst_step = self._step_of(inst.launch)
        ordinal = np.zeros(inst.kind.size, dtype=np.int64)
        seen: Dict[Tuple[int, int], int] = {}
        for i, key in enumerate(zip(inst_step.tolist(), inst.kind.tolist())):
            ordinal[i] = seen.get(key, 0)
            seen[key] = ordinal[i] + 1
        step_numbers = np.array([n for n, _, _ in self.steps] + [-1], dtype=np.int64)
        names: Dict[str, int] = {"": 0}
        name_ids = [names.setdefault(n, len(names)) for n in inst.name]
        op_ids = [names.setdefault(n, len(names)) for n in inst.op]
        out.names.extend(names)
        c = out.collectives
        c.kind.extend(inst.kind.tolist())
        c.name.extend(name_ids)
        c.op.extend(op_ids)
        c.step.extend(step_numbers[inst_step].tolist())
        c.ordinal.extend(ordinal.tolist())
        c.start_ns.extend(inst.start.tolist())
        c.duration_ns.extend((inst.end - inst.start).tolist())
        c.device_id.extend(inst.device_id.tolist())
        c.stream.extend(inst.stream.tolist())
        c.bytes.extend(inst.nbytes.tolist())
        c.direction.extend(inst.direction.tolist())

        # Host communication events (outermost) by kind, with their step.
        oc = self._outer_comm
        oc_step = self._step_of(t.host.start[oc])
        oc_kind = self._host_k[oc]
        oc_dur = t.host.end[oc] - t.host.start[oc]

        # Timelines (unions over the whole trace, clipped per step below).
        kinds_present = sorted(set(inst.kind.tolist()) | set(oc_kind.tolist()))
        if self.timeline == pb.TIMELINE_DEVICE:
            kern = t.device.type == et.KERNEL
            compute_m = kern & ~self.dev_comm
            mem_m = (t.device.type == et.MEMCPY) | (t.device.type == et.MEMSET)
            compute = ranges.union(t.device.start[compute_m], t.device.end[compute_m])
            dev_inst = inst.on_device
            comm = ranges.union(inst.start[dev_inst], inst.end[dev_inst])
            kind_u = {
                k: ranges.union(inst.start[dev_inst & (inst.kind == k)], inst.end[dev_inst & (inst.kind == k)])
                for k in kinds_present
            }
            memory = ranges.union(t.device.start[mem_m], t.device.end[mem_m])
            busy = ranges.union(t.device.start, t.device.end)
        else:
            comm = ranges.union(t.host.start[oc], t.host.end[oc])
            kind_u = {
                k: ranges.union(t.host.start[oc[oc_kind == k]], t.host.end[oc[oc_kind == k]]) for k in kinds_present
            }
            ops = (t.host.type == et.OPERATOR) & (self._host_k == 0)
            ops_u = ranges.union(t.host.start[ops], t.host.end[ops])
            compute = _subtract(ops_u, comm)
            memory = ranges.EMPTY
            busy = ranges.union2(comm, compute)
        hidden = ranges.intersect(comm, compute)
        kind_hidden = {k: ranges.intersect(u, compute) for k, u in kind_u.items()}
        mem_hidden = ranges.intersect(memory, ranges.union2(compute, comm))

        # Host side: runtime calls, launches, synchronising calls; kernels by their start.
        sync_name = np.array([bool(_SYNC_RUNTIME.search(n)) for n in t.names], dtype=bool)
        rt_sync = sync_name[t.runtime.name] if len(t.runtime.name) else np.zeros(0, bool)
        rt_launch = (
            np.bincount(tree.dev_rt[tree.dev_rt >= 0], minlength=len(t.runtime.tid)) > 0
            if len(t.runtime.tid)
            else np.zeros(0, bool)
        )
        runtime_u = ranges.union(t.runtime.start, t.runtime.end)
        sync_u = ranges.union(t.runtime.start[rt_sync], t.runtime.end[rt_sync])
        rt_step = self._step_of(t.runtime.start)
        kern_rows = np.nonzero(t.device.type == et.KERNEL)[0]
        kern_step = self._step_of(t.device.start[kern_rows])
        kern_dur = t.device.end[kern_rows] - t.device.start[kern_rows]
        inst_dev_dur = np.where(inst.on_device, inst.end - inst.start, 0)

        dl = t.host.type == et.DATALOADER
        dataloader_u = ranges.union(t.host.start[dl], t.host.end[dl])
        dev_order = np.argsort(t.device.start, kind="stable")
        dev_starts = t.device.start[dev_order]

        def m(r, lo, hi):
            return ranges.measure(ranges.clip(r, lo, hi))

        def first_device(lo, hi) -> int:
            i = int(np.searchsorted(dev_starts, lo, side="left"))
            return int(dev_starts[i] - lo) if i < dev_starts.size and dev_starts[i] < hi else -1

        stalls = mid_step_stalls(self.p, self.steps, dataloader_u)
        for si, (number, lo, hi) in enumerate(self.steps):
            s = out.steps.add(step=number)
            s.range.start_ns, s.range.end_ns = lo, hi
            s.compute_ns = m(compute, lo, hi)
            s.communication_ns = m(comm, lo, hi)
            s.hidden_communication_ns = m(hidden, lo, hi)
            s.exposed_communication_ns = s.communication_ns - s.hidden_communication_ns
            s.memory_ns = m(memory, lo, hi)
            s.exposed_memory_ns = s.memory_ns - m(mem_hidden, lo, hi)
            s.idle_ns = (hi - lo) - m(busy, lo, hi)
            in_step = inst_step == si
            oc_in = oc_step == si
            for k in kinds_present:
                km = in_step & (inst.kind == k)
                hm = oc_in & (oc_kind == k)
                if not km.any() and not hm.any():
                    continue
                s.kinds.add(
                    kind=k,
                    calls=int(km.sum()),
                    device_ns=int(inst_dev_dur[km].sum()),
                    host_ns=int(oc_dur[hm].sum()),
                    exposed_ns=m(kind_u[k], lo, hi) - m(kind_hidden[k], lo, hi),
                    bytes=int(inst.nbytes[km].sum()),
                )
            s.runtime_ns = m(runtime_u, lo, hi)
            rm = rt_step == si
            s.runtime_calls = int(rm.sum())
            s.launches = int((rm & rt_launch).sum()) if rt_launch.size else 0
            s.sync_ns = m(sync_u, lo, hi)
            s.sync_calls = int((rm & rt_sync).sum()) if rt_sync.size else 0
            km = kern_step == si
            s.kernels = int(km.sum())
            s.kernel_ns = int(kern_dur[km].sum())
            s.dataloader_ns = m(dataloader_u, lo, hi)
            s.first_device_ns = first_device(lo, hi)
            s.stall_ns = stalls[si]
        build_program(self.p, self, self.steps, out, _SYNC_RUNTIME)


def _subtract(a, b):
    """a minus b, both unions."""
    if a[0].size == 0 or b[0].size == 0:
        return a
    # complement of b within a's span, intersected with a
    lo = min(int(a[0][0]), int(b[0][0]))
    hi = max(int(a[1][-1]), int(b[1][-1]))
    gaps_s = np.concatenate([[lo], b[1]])
    gaps_e = np.concatenate([b[0], [hi]])
    keep = gaps_e > gaps_s
    return ranges.intersect(a, (gaps_s[keep], gaps_e[keep]))


def parallel_view(p: Profile, steps, out: pb.ParallelView) -> "CollectiveAnalysis":
    """Fill the rank's ParallelView; the analysis is returned for the views built on its
    instances (comm_axes.py and the modules that use it)."""
    ca = CollectiveAnalysis(p, steps)
    ca.to_pb(out)
    # the Forward / Backward phases (phases.py), their names added to the view's
    names = {n: i for i, n in enumerate(out.names)}
    known = len(names)
    phase_spans(p, ca.steps, ca.instances, ca.dev_comm, names, out.phases)
    out.names.extend(list(names)[known:])
    return ca
