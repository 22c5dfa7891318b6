"""The program one pipeline stage runs: host instructions (events, operators, launches, waits) and
the kernels they launch, the same on every rank of the stage (its DP x MP lanes), built once per stage.

Fleet's 1F1B pipeline (PipelineParallel.forward_backward_pipeline): warm-up forwards, steady
one-forward-one-backward with combined send/recv (even stages send first, odd stages receive first),
cool-down backwards; the embedding on the first stage, the head and the parallel cross-entropy on the
last; the MP all-reduces of the row-parallel layers forward and of the column-parallel layers'
input gradients backward; the loss broadcast over the pipeline group; the DP gradient all-reduce in
buckets; the clip-norm all-reduces (MP group, then pipeline group) and AdamW in the optimizer; the loss
copied to the host, which waits for it (logging), at the end of every step.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from .config import SimConfig

# host event types (Paddle's TracerEventType names)
OPERATOR, DATALOADER, PROFILESTEP, USERDEFINED = "Operator", "Dataloader", "ProfileStep", "UserDefined"
FORWARD, BACKWARD, OPTIMIZATION = "Forward", "Backward", "Optimization"
PYTHON_SIDE = {PROFILESTEP, DATALOADER, FORWARD, BACKWARD, OPTIMIZATION, "PythonUserDefined", "PythonOp"}

# instructions
OPEN, CLOSE, WORK, LAUNCH, RUNTIME, SYNC = range(6)
# kernel kinds
COMPUTE, COLL, MEMCPY = range(3)

COMPUTE_STREAM, MP_STREAM, DP_STREAM, PPG_STREAM, P2P_STREAM = 7, 13, 14, 15, 16

NCCL_ARGS = "(ncclDevComm*, unsigned long, ncclWork*)"
AR_BF16 = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL" + NCCL_ARGS
AR_F32 = "ncclDevKernel_AllReduce_Sum_f32_RING_LL" + NCCL_ARGS
AR_MAX = "ncclDevKernel_AllReduce_Max_f32_RING_LL" + NCCL_ARGS
BCAST = "ncclDevKernel_Broadcast_RING_LL" + NCCL_ARGS
RS_BF16 = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL" + NCCL_ARGS
AG_BF16 = "ncclDevKernel_AllGather_RING_LL" + NCCL_ARGS
SENDRECV = "ncclDevKernel_SendRecv" + NCCL_ARGS

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
GEMM_NT = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
K = {
    "ln": "void phi::funcs::LayerNormForward<phi::dtype::bfloat16, float, 1024, false>(phi::dtype::bfloat16 const*, float const*, float const*, phi::dtype::bfloat16*, float*, float*, float, long)",
    "ln_grad": "void phi::funcs::LayerNormBackwardGradientAll<phi::dtype::bfloat16, float, 1024, false>(phi::dtype::bfloat16 const*, phi::dtype::bfloat16 const*, float*, float*, float const*, float const*, float const*, float, long, long)",
    "attn": "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, true, false, false, false, false, false>(Flash_fwd_params)",
    "attn_grad": "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, cutlass::bfloat16_t> >, true, false, false, false, false>(Flash_bwd_params)",
    "add": "void phi::funcs::VectorizedElementwiseKernel<phi::dtype::bfloat16, phi::funcs::AddFunctor<phi::dtype::bfloat16>, 2, 1, 4>(phi::Array<char const*, 2>, phi::Array<char*, 1>, long, long, int, phi::funcs::AddFunctor<phi::dtype::bfloat16>)",
    "gelu": "void phi::funcs::VectorizedElementwiseKernel<phi::dtype::bfloat16, phi::GeluWithApproximateFunctor<phi::dtype::bfloat16>, 1, 1, 4>(phi::Array<char const*, 1>, phi::Array<char*, 1>, long, long, int, phi::GeluWithApproximateFunctor<phi::dtype::bfloat16>)",
    "gelu_grad": "void phi::funcs::VectorizedElementwiseKernel<phi::dtype::bfloat16, phi::GeluWithApproximateGradFunctor<phi::dtype::bfloat16>, 2, 1, 4>(phi::Array<char const*, 2>, phi::Array<char*, 1>, long, long, int, phi::GeluWithApproximateGradFunctor<phi::dtype::bfloat16>)",
    "embed": "void phi::EmbeddingFW<phi::dtype::bfloat16, long>(phi::dtype::bfloat16*, phi::dtype::bfloat16 const*, long const*, long, long, long, long)",
    "embed_grad": "void phi::EmbeddingGrad<phi::dtype::bfloat16, long>(phi::dtype::bfloat16*, phi::dtype::bfloat16 const*, long const*, long, long, long)",
    "ce_max": "void phi::ReduceMaxWithSubtract<phi::dtype::bfloat16>(phi::dtype::bfloat16 const*, float*, long, long)",
    "ce_softmax": "void phi::CalculateExpAndSum<phi::dtype::bfloat16>(phi::dtype::bfloat16 const*, float const*, float*, long, long)",
    "ce_loss": "void phi::SoftmaxWithCrossEntropyHardLabel<float, long>(float*, float const*, long const*, long, long, long)",
    "ce_grad": "void phi::SoftmaxWithCrossEntropyGradHardLabel<phi::dtype::bfloat16, long>(phi::dtype::bfloat16*, float const*, float const*, long const*, long, long, long)",
    "norm": "void phi::funcs::ReduceAnyKernel<float, float, kps::AddFunctor<float>, kps::SquareFunctor<float, float>, int, false>(float const*, float*, kps::AddFunctor<float>, kps::SquareFunctor<float, float>, float, int, phi::kps::details::ReduceConfig<float>)",
    "scale": "void phi::funcs::VectorizedElementwiseKernel<float, phi::funcs::MultiplyFunctor<float>, 2, 1, 4>(phi::Array<char const*, 2>, phi::Array<char*, 1>, long, long, int, phi::funcs::MultiplyFunctor<float>)",
    "adamw": "void phi::AdamwDenseKernelREG<float, float, 4>(float, float, float, float, float, float, float, float const*, float const*, float*, float const*, float*, float const*, float*, float const*, float*, float const*, float*, float*, float*, phi::dtype::bfloat16*, bool, long)",
}

PYLAYER_MP = "Global_GradNodePyLayer_c_identity_eager"


def _flops_ns(flops: float, tflops: float) -> float:
    return flops / (tflops * 1e3)  # tflops TFLOP/s -> flops per ns = tflops * 1e3


def _bytes_ns(nbytes: float, gbps: float) -> float:
    return nbytes / gbps  # GB/s = bytes per ns


class StageProgram:
    """One stage's instructions and kernels (parallel lists; times filled by the engine)."""

    def __init__(self, cfg: SimConfig, stage: int):
        self.cfg = cfg
        self.stage = stage
        # kernels
        self.k_name: List[str] = []
        self.k_cat: List[str] = []  # Kernel / Memcpy
        self.k_stream: List[int] = []
        self.k_kind: List[int] = []
        self.k_base: List[float] = []  # compute duration, or the transfer's bytes for COLL
        self.k_deps: List[Tuple[int, ...]] = []
        self.k_axis: List[str] = []  # "", mp, dp, ppg, p2p
        self.k_key: List[Optional[tuple]] = []
        self.k_ckind: List[str] = []  # "", all_reduce, broadcast, send_recv
        self.k_dir: List[str] = []  # send / recv for p2p
        self.k_step: List[int] = []
        self.k_ordinal: List[int] = []  # per (step, ckind), launch order
        self.k_grid: List[Tuple[int, int, int, int]] = []
        self.k_runtime: List[int] = []
        # host events
        self.e_name: List[str] = []
        self.e_type: List[str] = []
        self.e_step: List[int] = []
        self.e_depth: List[int] = []
        self.e_open: List[int] = []  # instruction indices
        self.e_close: List[int] = []
        # runtime calls
        self.r_name: List[str] = []
        self.r_parent: List[int] = []
        self.r_kernel: List[int] = []
        self.r_ins: List[int] = []
        # instructions: (code, a, b, c)
        self.ins: List[tuple] = []
        self._stack: List[int] = []
        self._step = 0
        self._ordinals: Dict[Tuple[int, str], int] = {}
        self._last_compute: Optional[int] = None
        self._pending: List[int] = []  # kernels the next compute kernel waits for
        self.tags: Dict[int, Tuple[str, int]] = {}  # WORK instruction -> (tag, micro-batch)

    # -- host side
    def open(self, name: str, etype: str) -> int:
        e = len(self.e_name)
        self.e_name.append(name)
        self.e_type.append(etype)
        self.e_step.append(self._step)
        self.e_depth.append(len(self._stack))
        self.e_open.append(len(self.ins))
        self.e_close.append(-1)
        self.ins.append((OPEN, e, 0, 0))
        self._stack.append(e)
        return e

    def close(self) -> None:
        e = self._stack.pop()
        self.e_close[e] = len(self.ins)
        self.ins.append((CLOSE, e, 0, 0))

    def work(self, lo_ns: float, hi_ns: float, tag: Optional[Tuple[str, int]] = None) -> None:
        if tag is not None:
            self.tags[len(self.ins)] = tag
        self.ins.append((WORK, lo_ns, hi_ns, 0))

    def _runtime(self, name: str, kernel: int, code: int) -> int:
        r = len(self.r_name)
        self.r_name.append(name)
        self.r_parent.append(self._stack[-1] if self._stack else -1)
        self.r_kernel.append(kernel)
        self.r_ins.append(len(self.ins))
        self.ins.append((code, r, kernel, 0))
        return r

    def runtime(self, name: str) -> None:
        self._runtime(name, -1, RUNTIME)

    # -- kernels
    def _kernel(
        self,
        name: str,
        stream: int,
        kind: int,
        base: float,
        deps=(),
        axis: str = "",
        key=None,
        ckind: str = "",
        direction: str = "",
        cat: str = "Kernel",
        grid=(132, 1, 1, 256),
    ) -> int:
        k = len(self.k_name)
        self.k_name.append(name)
        self.k_cat.append(cat)
        self.k_stream.append(stream)
        self.k_kind.append(kind)
        self.k_base.append(float(base))
        self.k_deps.append(tuple(d for d in deps if d is not None))
        self.k_axis.append(axis)
        self.k_key.append(key)
        self.k_ckind.append(ckind)
        self.k_dir.append(direction)
        self.k_step.append(self._step)
        if ckind:
            o = self._ordinals.get((self._step, ckind), 0)
            self._ordinals[(self._step, ckind)] = o + 1
            self.k_ordinal.append(o)
        else:
            self.k_ordinal.append(-1)
        self.k_grid.append(grid)
        self.k_runtime.append(-1)
        return k

    def _launch(self, k: int, rt: str = "cudaLaunchKernel_v7000", sync: bool = False) -> None:
        r = self._runtime(rt, k, SYNC if sync else LAUNCH)
        self.k_runtime[k] = r

    def compute(self, op: str, kname: str, dur_ns: float, grid=(132, 1, 1, 256), slow: bool = True) -> int:
        """An operator launching one compute kernel on the compute stream."""
        lo, hi = self.cfg.op_host_us
        self.open(op, OPERATOR)
        self.work(lo * 700, hi * 700)
        deps = tuple(self._pending) + ((self._last_compute,) if self._last_compute is not None else ())
        k = self._kernel(kname, COMPUTE_STREAM, COMPUTE if slow else MEMCPY, dur_ns, deps=deps, grid=grid)
        self._pending = []
        self._launch(k)
        self.work(lo * 300, hi * 300)
        self.close()
        self._last_compute = k
        return k

    def comm(
        self,
        op: str,
        kname: str,
        stream: int,
        nbytes: float,
        axis: str,
        key,
        ckind: str,
        direction: str = "",
        wrap: Optional[str] = None,
        block: bool = True,
    ) -> int:
        """An operator launching one NCCL kernel on ``stream`` after the compute stream's last kernel
        (an event waited for); with ``block`` the next compute kernel waits for it."""
        lo, hi = self.cfg.op_host_us
        if wrap:
            self.open(wrap, OPERATOR)
            self.work(lo * 300, hi * 300)
        self.open(op, OPERATOR)
        self.work(lo * 500, hi * 500)
        if stream != COMPUTE_STREAM:
            self.runtime("cudaEventRecord_v3020")
            self.runtime("cudaStreamWaitEvent_v3020")
        deps = (self._last_compute,) if self._last_compute is not None else ()
        if stream == COMPUTE_STREAM:
            deps = deps + tuple(self._pending)
            self._pending = []
        k = self._kernel(
            kname,
            stream,
            COLL,
            nbytes,
            deps=deps,
            axis=axis,
            key=key,
            ckind=ckind,
            direction=direction,
            grid=(8 if ckind != "send_recv" else 1, 1, 1, 512),
        )
        self._launch(k)
        if block and stream != COMPUTE_STREAM:
            self._pending.append(k)
        elif stream == COMPUTE_STREAM:
            self._last_compute = k
        self.work(lo * 200, hi * 200)
        self.close()
        if wrap:
            self.work(lo * 100, hi * 100)
            self.close()
        return k


class _Builder:
    """Fills a StageProgram for one stage of ``cfg``."""

    def __init__(self, cfg: SimConfig, stage: int):
        self.cfg = cfg
        self.s = stage
        self.p = StageProgram(cfg, stage)
        c = cfg
        self.T = c.micro_batch_size * c.seq
        self.first, self.last = stage == 0, stage == c.pp - 1
        self.n_layers = c.stage_layers()[stage]
        one = set(c.one_rank_axes.split(",")) if c.one_rank_comms else set()
        self.mp_on = c.mp > 1 or "mp" in one
        self.dp_on = c.dp > 1 or "dp" in one
        self.sh_on = c.sharding > 1
        self.ppg_on = c.pp > 1 or "ppg" in one
        self.mp_stream = COMPUTE_STREAM if c.mp_on_compute_stream else MP_STREAM
        self._mp_seq = 0
        self._dp_kernels: List[int] = []

    # durations
    def mm(self, m, k, n) -> float:
        return _flops_ns(2.0 * m * k * n / self.cfg.mp, 430.0)

    def mem(self, nbytes) -> float:
        return _bytes_ns(nbytes, 2600.0)

    def mp_ar(self, nbytes: float, wrap: Optional[str] = None, kname: str = AR_BF16) -> None:
        if not self.mp_on:
            return
        key = ("mp", self.p._step, self._mp_seq)
        self._mp_seq += 1
        self.p.comm("c_allreduce_sum dygraph", kname, self.mp_stream, nbytes, "mp", key, "all_reduce", wrap=wrap)

    # -- model pieces
    def layer_fwd(self) -> None:
        c, p, T, h = self.cfg, self.p, self.T, self.cfg.hidden
        act = T * h * 2
        p.open("DecoderBlockPipe", FORWARD)
        if c.kernel_set == "full":
            p.compute("layer_norm dygraph", K["ln"], self.mem(2 * act))
            p.compute("matmul dygraph", GEMM, self.mm(T, h, 3 * h))
            p.compute("flash_attn dygraph", K["attn"], _flops_ns(2.0 * T * T * h / c.mp, 300.0))
            p.compute("matmul dygraph", GEMM, self.mm(T, h, h))
            self.mp_ar(act)
            p.compute("add dygraph", K["add"], self.mem(3 * act))
            p.compute("layer_norm dygraph", K["ln"], self.mem(2 * act))
            p.compute("matmul dygraph", GEMM, self.mm(T, h, 4 * h))
            p.compute("gelu dygraph", K["gelu"], self.mem(8 * act / c.mp))
            p.compute("matmul dygraph", GEMM, self.mm(T, 4 * h, h))
            self.mp_ar(act)
            p.compute("add dygraph", K["add"], self.mem(3 * act))
        else:
            p.compute("matmul dygraph", GEMM, self.mm(T, h, 3 * h) + self.mem(2 * act))
            p.compute("flash_attn dygraph", K["attn"], _flops_ns(2.0 * T * T * h / c.mp, 300.0))
            p.compute("matmul dygraph", GEMM, self.mm(T, h, h))
            self.mp_ar(act)
            p.compute("matmul dygraph", GEMM, self.mm(T, h, 4 * h) + self.mem(4 * act / c.mp))
            p.compute("matmul dygraph", GEMM, self.mm(T, 4 * h, h))
            self.mp_ar(act)
        p.close()

    def layer_bwd(self) -> None:
        c, p, T, h = self.cfg, self.p, self.T, self.cfg.hidden
        act = T * h * 2
        g = "Global_MatmulGradNode"
        if c.kernel_set == "full":
            p.compute("Global_AddGradNode", K["add"], self.mem(3 * act))
            p.compute(g, GEMM_NT, self.mm(T, 4 * h, h))
            p.compute(g, GEMM, self.mm(T, 4 * h, h))
            p.compute("Global_GeluGradNode", K["gelu_grad"], self.mem(12 * act / c.mp))
            p.compute(g, GEMM_NT, self.mm(T, h, 4 * h))
            p.compute(g, GEMM, self.mm(T, h, 4 * h))
            self.mp_ar(act, wrap=PYLAYER_MP)
            p.compute("Global_LayerNormGradNode", K["ln_grad"], self.mem(4 * act))
            p.compute(g, GEMM_NT, self.mm(T, h, h))
            p.compute(g, GEMM, self.mm(T, h, h))
            p.compute("Global_FlashAttnGradNode", K["attn_grad"], _flops_ns(5.0 * T * T * h / c.mp, 260.0))
            p.compute(g, GEMM_NT, self.mm(T, h, 3 * h))
            p.compute(g, GEMM, self.mm(T, h, 3 * h))
            self.mp_ar(act, wrap=PYLAYER_MP)
            p.compute("Global_LayerNormGradNode", K["ln_grad"], self.mem(4 * act))
        else:
            p.compute(g, GEMM_NT, 2 * self.mm(T, 4 * h, h))
            p.compute(g, GEMM_NT, 2 * self.mm(T, h, 4 * h) + self.mem(6 * act / c.mp))
            self.mp_ar(act, wrap=PYLAYER_MP)
            p.compute(g, GEMM_NT, 2 * self.mm(T, h, h))
            p.compute("Global_FlashAttnGradNode", K["attn_grad"], _flops_ns(5.0 * T * T * h / c.mp, 260.0))
            p.compute(g, GEMM_NT, 2 * self.mm(T, h, 3 * h))
            self.mp_ar(act, wrap=PYLAYER_MP)

    def forward(self, mb: int) -> None:
        c, p, T, h = self.cfg, self.p, self.T, self.cfg.hidden
        p.work(c.op_host_us[0] * 1000, c.op_host_us[1] * 2000, tag=("stall", mb))
        if self.first:
            p.open("EmbeddingPipe", FORWARD)
            p.compute("embedding dygraph", K["embed"], self.mem(T * h * 2 * 2 / c.mp) + 4000)
            self.mp_ar(T * h * 2)
            p.close()
        for _ in range(self.n_layers):
            self.layer_fwd()
        if self.last:
            v = c.vocab
            p.open("HeadPipe", FORWARD)
            p.compute("layer_norm dygraph", K["ln"], self.mem(4 * T * h))
            p.compute("matmul dygraph", GEMM, self.mm(T, h, v))
            p.close()
            p.open("GPTLoss", FORWARD)
            p.compute("c_softmax_with_cross_entropy dygraph", K["ce_max"], self.mem(2 * T * v / c.mp))
            self.mp_ar(T * 4, kname=AR_MAX)
            p.compute("c_softmax_with_cross_entropy dygraph", K["ce_softmax"], self.mem(6 * T * v / c.mp))
            self.mp_ar(T * 4, kname=AR_F32)
            p.compute("c_softmax_with_cross_entropy dygraph", K["ce_loss"], self.mem(4 * T * v / c.mp))
            p.close()

    def backward(self, mb: int) -> None:
        c, p, T, h = self.cfg, self.p, self.T, self.cfg.hidden
        if c.backward_events:
            p.open("Gradient Backward", BACKWARD)
        if self.last:
            v = c.vocab
            p.compute("Global_CSoftmaxWithCrossEntropyGradNode", K["ce_grad"], self.mem(6 * T * v / c.mp))
            p.compute("Global_MatmulGradNode", GEMM_NT, self.mm(T, v, h))
            p.compute("Global_MatmulGradNode", GEMM, self.mm(T, v, h))
            self.mp_ar(T * h * 2, wrap=PYLAYER_MP)
            p.compute("Global_LayerNormGradNode", K["ln_grad"], self.mem(8 * T * h))
        for i in range(self.n_layers):
            self.layer_bwd()
            if c.dp_overlap and mb == c.micro_batches - 1:
                self._overlap_buckets(i)
        if self.first:
            p.compute("Global_EmbeddingGradNode", K["embed_grad"], self.mem(T * h * 2 * 6 / c.mp) + 6000)
        if c.backward_events:
            p.close()
        if c.sync_per_micro_batch:
            self.sync_copy()

    def sync_copy(self) -> None:
        """A synchronous device-to-host copy after the compute stream's work (loss.item())."""
        p = self.p
        p.open("GpuMemcpySync:GPU->CPU", USERDEFINED)
        p.work(2000, 4000)
        k = p._kernel(
            "MEMCPY_DtoH", COMPUTE_STREAM, MEMCPY, 2500, deps=tuple(p._pending) + (p._last_compute,), cat="Memcpy"
        )
        p._pending = []
        p._launch(k, "cudaMemcpy_v3020", sync=True)
        p.work(1000, 2000)
        p.close()
        p._last_compute = k

    # -- parameters and the DP all-reduce
    def params(self) -> float:
        c, h = self.cfg, self.cfg.hidden
        n = self.n_layers * 12.0 * h * h / c.mp
        if self.first or self.last:
            n += c.vocab * h / c.mp
        return n

    def _bucket_bytes(self) -> float:
        return self.params() * 2.0 / max(1, self.cfg.dp_buckets)

    def _dp_ar(self, b: int) -> None:
        """One bucket's all-reduce; the optimizer waits for it (overlapped: the backward goes on). With
        sharding: the bucket reduce-scattered over the sharding group, then its shard all-reduced over DP."""
        if self.sh_on:
            k = self.p.comm(
                "reduce_scatter dygraph",
                RS_BF16,
                DP_STREAM,
                self._bucket_bytes(),
                "sh",
                ("sh", self.p._step, "rs", b),
                "reduce_scatter",
                block=not self.cfg.dp_overlap,
            )
            self._dp_kernels.append(k)
            if not self.dp_on:
                return
        k = self.p.comm(
            "c_allreduce_sum dygraph",
            AR_BF16,
            DP_STREAM,
            self._bucket_bytes() / self.cfg.sharding,
            "dp",
            ("dp", self.p._step, b),
            "all_reduce",
            block=not self.cfg.dp_overlap,
        )
        self._dp_kernels.append(k)

    def _overlap_buckets(self, layer_done: int) -> None:
        # bucket b holds the gradients of the last layers first: launched when its layers are done
        nb, nl = max(1, self.cfg.dp_buckets), self.n_layers
        for b in range(nb):
            if (b + 1) * nl // nb - 1 == layer_done and (self.dp_on or self.sh_on):
                self._dp_ar(b)

    # -- one step
    def p2p(self, what: str, mb: int) -> None:
        """send_fwd / recv_fwd / send_bwd / recv_bwd of micro-batch ``mb``; the instance is keyed by its
        sending stage, so both ends find it."""
        c, p, s = self.cfg, self.p, self.s
        nbytes = self.T * c.hidden * 2
        send = what.startswith("send")
        fwd = what.endswith("fwd")
        peer = s + 1 if fwd == send else s - 1
        sender = s if send else peer
        key = ("p2p", p._step, mb, "fwd" if fwd else "bwd", sender)
        if c.p2p == "shared":
            stream = P2P_STREAM
        elif c.p2p == "per_peer":
            stream = P2P_STREAM + (1 if peer > s else 0)
        else:
            stream = P2P_STREAM + (0 if send else 1)
        p.comm(
            "send_v2 dygraph" if send else "recv_v2 dygraph",
            SENDRECV,
            stream,
            nbytes,
            "p2p",
            key,
            "send_recv",
            direction="send" if send else "recv",
            block=not send,
        )

    def pair(self, first: Tuple[str, int], second: Tuple[str, int]) -> None:
        """A combined send/recv: even stages send first, odd stages receive first."""
        a, b = (first, second) if first[0].startswith("send") else (second, first)  # a: the send
        order = (a, b) if self.s % 2 == 0 else (b, a)
        for what, mb in order:
            self.p2p(what, mb)

    def step(self, step: int) -> None:
        c, p = self.cfg, self.p
        p._step = step
        self._mp_seq = 0
        P, M, s = c.pp, c.micro_batches, self.s
        p.open("ProfileStep#%d" % step, PROFILESTEP)
        if self.first:
            p.open("_DataLoaderIterSingleProcess", DATALOADER)
            p.work(c.loader_us * 900, c.loader_us * 1100, tag=("loader", 0))
            p.close()
            p.open("GpuMemcpyAsync:CPU->GPU", USERDEFINED)
            p.work(3000, 6000)
            k = p._kernel("MEMCPY_HtoD", COMPUTE_STREAM, MEMCPY, 2000 + self.T * 8 * M / 24.0, cat="Memcpy")
            p._launch(k, "cudaMemcpyAsync_v3020")
            p.work(2000, 4000)
            p.close()
            p._last_compute = k
        else:
            p.work(20_000, 40_000)
        has_prev, has_next = s > 0, s < P - 1
        warm = min(P - s - 1, M)
        steady = M - warm

        def recv_fwd(i):
            if has_prev:
                self.p2p("recv_fwd", i)

        def send_fwd(i):
            if has_next:
                self.p2p("send_fwd", i)

        def recv_bwd(i):
            if has_next:
                self.p2p("recv_bwd", i)

        def send_bwd(i):
            if has_prev:
                self.p2p("send_bwd", i)

        for i in range(warm):
            recv_fwd(i)
            self.forward(i)
            send_fwd(i)
        if steady > 0:
            recv_fwd(warm)
        for i in range(steady):
            f = warm + i
            self.forward(f)
            if has_next:
                self.pair(("send_fwd", f), ("recv_bwd", i))
            self.backward(i)
            if i == steady - 1:
                send_bwd(i)
            elif has_prev:
                self.pair(("send_bwd", i), ("recv_fwd", f + 1))
        for i in range(warm):
            b = steady + i
            recv_bwd(b)
            self.backward(b)
            send_bwd(b)
        # the loss to every stage, the DP gradients, the optimizer
        if self.ppg_on:
            p.compute("mean dygraph", K["scale"], 3000)
            p.comm("c_broadcast dygraph", BCAST, PPG_STREAM, 4, "ppg", ("ppg", step, 0), "broadcast")
        if (self.dp_on or self.sh_on) and not c.dp_overlap:
            for b in range(max(1, c.dp_buckets)):
                p.compute("scale dygraph", K["scale"], self.mem(self._bucket_bytes() * 3))
                self._dp_ar(b)
        p.open("Optimization Step", OPTIMIZATION)
        p._pending.extend(k for k in self._dp_kernels if k not in p._pending)
        self._dp_kernels = []
        p.compute("squared_l2_norm dygraph", K["norm"], self.mem(self.params() * 2) + 3000)
        if self.mp_on:
            self._mp_seq += 1
            p.comm("c_allreduce_sum dygraph", AR_F32, self.mp_stream, 4, "mp", ("mp", step, "clip"), "all_reduce")
        if self.ppg_on:
            p.comm("c_allreduce_sum dygraph", AR_F32, PPG_STREAM, 4, "ppg", ("ppg", step, 1), "all_reduce")
        p.compute("clip_by_norm dygraph", K["scale"], 4000)
        chunks = max(2, self.n_layers)
        for _ in range(chunks):
            p.compute("adamw_ dygraph", K["adamw"], self.mem(self.params() * 18.0 / chunks / c.sharding))
        if self.sh_on:  # every rank's updated shard to the others of its sharding group
            for b in range(max(1, c.dp_buckets)):
                p.comm(
                    "all_gather dygraph",
                    AG_BF16,
                    DP_STREAM,
                    self._bucket_bytes(),
                    "sh",
                    ("sh", step, "ag", b),
                    "all_gather",
                )
        p.close()
        p.work(30_000, 60_000)
        self.sync_copy()
        p.work(40_000, 90_000)
        p.close()


def build_programs(cfg: SimConfig) -> List[StageProgram]:
    """One StageProgram per pipeline stage, covering the warm-up and the recorded steps."""
    out = []
    for s in range(cfg.pp):
        b = _Builder(cfg, s)
        for step in range(cfg.warmup + cfg.steps):
            b.step(step)
        out.append(b.p)
    return out
