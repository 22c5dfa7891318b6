"""One training step: data loading, the pipeline slots in schedule order, the optimizer,
loss.item()."""

from __future__ import annotations

from typing import List, Tuple

from .model import (
    DATALOADER,
    DYGRAPH_KERNEL_LAUNCH,
    MEMCPY,
    MEMSET,
    OPERATOR,
    OPERATOR_INNER,
    OPTIMIZATION,
    PROFILE_STEP,
    PYTHON_USER_DEFINED,
    USER_DEFINED,
)
from .config import COMPUTE_STREAM, _MEMCPY_ASYNC, _MEMCPY_SYNC, _MEMSET_ASYNC, _STREAM_SYNC


def pipeline_order(
    schedule: str, pp: int, stage: int, micro_batches: int, virtual_stages: int = 1
) -> List[Tuple[int, int, int]]:
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


class _Schedule:
    """A part of the rank program (:class:`.program._RankProgram`): one training step: data
    loading, the pipeline slots in schedule order, the optimizer, loss.item()."""

    def _set_chunk(self, chunk: int) -> None:
        self.chunk = chunk
        vs = chunk * self.cfg.pp + self.pp_i
        self.vfirst = vs == 0
        self.vlast = vs == self.cfg.pp * self.V - 1

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
            self.sink.device_event(
                self.sink.name_id("MEMCPY_HtoD"), MEMCPY, COMPUTE_STREAM, start, end, corr, self.cat.T * 8
            )
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
            start = yield from self._ready_after(
                rt_end + self._scd(700), (self.stream_free[COMPUTE_STREAM],), self._kernel_gap()
            )
            nbytes = self.cat.layer_grad_bytes * max(1, self.n_layers) // 2
            end = start + 2000 + int(nbytes / 2.8e12 * 1e9)
            self.stream_free[COMPUTE_STREAM] = end
            self.sink.device_event(self.sink.name_id("MEMSET"), MEMSET, COMPUTE_STREAM, start, end, corr, nbytes)
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
        start = yield from self._ready_after(
            rt_start + self._scd(2500), (self.stream_free[COMPUTE_STREAM],), self._kernel_gap()
        )
        end = start + 500 + int(self.rng.random() * 450)  # a 4-byte copy: under 1 us
        self.stream_free[COMPUTE_STREAM] = end
        self.t = max(self.t + self._sc(4000), end + self._sc(2000 + int(self.rng.random() * 2000))) & ~1
        self.sink.runtime(self.sink.name_id(_MEMCPY_SYNC), self.main_tid, rt_start, self.t, corr)
        self.sink.device_event(self.sink.name_id("MEMCPY_DtoH"), MEMCPY, COMPUTE_STREAM, start, end, corr, 4)
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
                if (
                    self.paired_p2p
                    and k + 1 < len(order)
                    and self._has_send(phase)
                    and self._has_recv(order[k + 1][0])
                    and self._recv_first(phase, order[k + 1][0])
                ):
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
            self.steps.append(
                {
                    "step": cfg.first_step + si,
                    "start_ns": start,
                    "end_ns": self.t,
                    "device_rows": (row0, self.sink.n_device),
                }
            )
            self._adv(8000, 30_000)
