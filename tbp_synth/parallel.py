"""Collectives of the hybrid-parallel groups: the books that match and time their instances
(phase 1, all ranks live) or replay those times (phase 2, one rank alone), and the part of the
rank program that launches MP all-reduces, pipeline send/recv and the pipeline group's
collectives."""

from __future__ import annotations

import collections
import math
import zlib
from array import array
from typing import TYPE_CHECKING, Dict, List, Sequence, Tuple

import numpy as np

from .model import DYGRAPH_KERNEL_LAUNCH, OPERATOR, OPERATOR_INNER
from .config import (
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
    _KEY_KIND,
)

if TYPE_CHECKING:
    from .program import _RankProgram


_M64 = (1 << 64) - 1


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
    (:mod:`.truth`): ``ordinal`` counts a rank's launches per (step, kind) in launch order.

    ``end_noise_ns`` (SynthConfig.comm_end_noise_us): each member's kernel ends N(0, that)
    off the collective's end (drawn from the instance's key and the rank, so that the same
    instance of a control run gets the same noise), never before its start plus half the
    transfer."""

    def __init__(self, record: bool = True, end_noise_ns: float = 0.0, seed: int = 0):
        self.end_noise_ns = float(end_noise_ns)
        self.seed = seed
        self.open: Dict[tuple, list] = {}
        self.times: Dict[int, list] = collections.defaultdict(list)
        self.woken: List[int] = []
        self.caused: Dict[int, Dict[int, int]] = collections.defaultdict(lambda: collections.defaultdict(int))
        self.record = record
        self.seen: Dict[int, Dict[tuple, int]] = collections.defaultdict(dict)
        self.inst_step = array("q")
        self.inst_kind = array("b")
        self.inst_axis = array("b")
        self.inst_xfer = array("q")
        self.inst_bytes = array("q")
        self.nbytes: Dict[tuple, int] = {}  # the payload of each open instance (timing._xfer)
        self.inst_root = array("i")
        self.inst_ptr = array("q", [0])
        self.mem_rank = array("i")
        self.mem_ordinal = array("i")
        self.mem_start = array("q")
        self.mem_end = array("q")
        self.info: Dict[int, dict] = {}

    def launch(self, rank: int, key: tuple, size: int, start: int, xfer: int, step: int = 0, role: int = 0):
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
            nbytes = self.nbytes.pop(key, 0)
            members = inst[2]
            end = max(m[1] for m in members) + xfer
            if key[0] in ("mp", "dp"):  # (kind, group coords..., step index, sequence)
                last_rank, last_start = max(((m[0], m[1]) for m in members), key=lambda m: (m[1], -m[0]))
                self.caused[last_rank][key[3]] += sum(last_start - m[1] for m in members)
            ends = {}
            for r, s, h, slot, _, _ in members:
                e = ends[r] = end if not self.end_noise_ns else self._noisy_end(key, r, s, end, xfer)
                h.end = e
                self.times[r][slot] = (s, e)
                self.woken.extend(h.waiters)
                h.waiters = []
            if self.record:
                members.sort(key=lambda m: (m[4], m[0]) if kind == 2 else (m[0],))
                self.inst_step.append(step)
                self.inst_kind.append(kind)
                self.inst_axis.append(axis)
                self.inst_xfer.append(xfer)
                self.inst_bytes.append(nbytes)
                self.inst_root.append(next((m[0] for m in members if m[4] == 0), -1) if kind == 1 else -1)
                for r, s, _, _, _, o in members:
                    self.mem_rank.append(r)
                    self.mem_ordinal.append(o)
                    self.mem_start.append(s)
                    self.mem_end.append(ends[r])
                self.inst_ptr.append(len(self.mem_rank))
        return handle

    def _noisy_end(self, key: tuple, rank: int, start: int, end: int, xfer: int) -> int:
        # crc32 is linear: mixed (splitmix64's finaliser) so that members' draws are independent
        h = (zlib.crc32(repr((self.seed, key, rank)).encode()) + 0x9E3779B97F4A7C15) & _M64
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _M64
        h ^= h >> 31
        u1, u2 = ((h & 0xFFFFFFFF) + 0.5) / 2.0**32, ((h >> 32) + 0.5) / 2.0**32
        z = math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2)
        return max(start + xfer // 2, end + int(round(z * self.end_noise_ns)))

    def finished(self, prog: "_RankProgram") -> None:
        """Keep what the truth needs of a rank whose program ended."""
        self.info[prog.rank] = {
            "pid": prog.pid,
            "end_t": prog.t,
            "steps": [(s["start_ns"], s["end_ns"]) for s in prog.steps],
            "compute_ns": list(prog.compute_ns),
            "slots": prog.slots,
            "mem_end": prog.mem_end,
        }

    def step_arrays(self, world: int) -> Dict[str, np.ndarray]:
        st = np.array([[a for a, _ in self.info[r]["steps"]] for r in range(world)], dtype=np.int64)
        en = np.array([[b for _, b in self.info[r]["steps"]] for r in range(world)], dtype=np.int64)
        comp = np.array([self.info[r]["compute_ns"] for r in range(world)], dtype=np.int64)
        return {"step_start_ns": st, "step_end_ns": en, "step_time_ns": en - st, "compute_ns": comp}

    def schedule_columns(self, world: int, first_step: int) -> Dict[str, np.ndarray]:
        """Every rank's pipeline slots (rank, step, execution order) and its GPU memory at
        each step's end, as the truth's columns."""
        per = [np.array(self.info[r]["slots"], dtype=np.int64).reshape(-1, 6) for r in range(world)]
        a = np.concatenate(
            [np.repeat(np.arange(world, dtype=np.int64), [len(x) for x in per])[:, None], np.concatenate(per)], axis=1
        )
        mem = np.array([self.info[r]["mem_end"] for r in range(world)], dtype=np.int64).reshape(world, -1, 2)
        return {
            "sched_rank": a[:, 0].astype(np.int32),
            "sched_step": a[:, 1] + first_step,
            "sched_phase": a[:, 2].astype(np.int8),
            "sched_micro_batch": a[:, 3].astype(np.int32),
            "sched_chunk": a[:, 4].astype(np.int8),
            "sched_start_ns": a[:, 5],
            "sched_end_ns": a[:, 6],
            "gpu_allocated_end_bytes": mem[:, :, 0],
            "gpu_reserved_end_bytes": mem[:, :, 1],
        }

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
        return {
            "inst_step": np_(self.inst_step, np.int64),
            "inst_kind": np_(self.inst_kind, np.int8),
            "inst_axis": np_(self.inst_axis, np.int8),
            "inst_transfer_ns": xfer,
            "inst_bytes": np_(self.inst_bytes, np.int64),
            "inst_root": np_(self.inst_root, np.int32),
            "inst_ptr": ptr,
            "mem_rank": np_(self.mem_rank, np.int32),
            "mem_ordinal": np_(self.mem_ordinal, np.int32),
            "mem_start_ns": start,
            "mem_end_ns": end,
            "mem_wait_ns": wait,
        }


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


class _Parallel:
    """A part of the rank program (:class:`.program._RankProgram`): collectives of the
    hybrid-parallel groups: MP all-reduces, pipeline send/recv, the pipeline group's
    collectives."""

    def _mp_key(self) -> tuple:
        self.seq["mp"] += 1
        return ("mp", self.dp_i, self.pp_i, self.step_idx, self.seq["mp"])

    def _mp_allreduce(self, nbytes: int, spec_key: str = "nccl_mp", stream: int = MP_STREAM):
        key = self._mp_key()
        mp = self.cfg.mp
        xfer = self._xfer(key, nbytes, "mp", 2.0 * (mp - 1) / mp)
        return (yield from self._nccl(spec_key, "mp_allreduce", key, mp, xfer, stream))

    # -- pipeline
    def _p2p(self, send: bool, fwd: bool, mb: int):
        """``send_v2``/``recv_v2`` of one micro-batch's activations (fwd) or gradients."""
        vs = self.chunk * self.cfg.pp + self.pp_i  # the virtual stage (the stage, if V = 1)
        link = vs if (send == fwd) else vs - 1
        key = ("pf" if fwd else "pb", self.dp_i, self.mp_i, link, self.step_idx, mb)
        xfer = self._xfer(key, self.cat.act_bytes, "pp")
        name = "send_v2" if send else "recv_v2"
        row = self._open(name + " dygraph", OPERATOR)
        if send:  # recv_v2 has no input tensor
            self._comm_shapes(row, "comm_act")
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
        end = yield from self._nccl("nccl_pp", "pp_sendrecv", key, 2, xfer, stream, 0 if send else 1)
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
        self._comm_shapes(row, "comm_scalar")
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
