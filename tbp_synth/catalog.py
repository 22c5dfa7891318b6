"""Kernel launch configurations and durations of one model shard."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Dict, Tuple

from .model import KernelSpec
from .config import SynthConfig


def _ew(name: str, numel: int, regs: int = 28) -> KernelSpec:
    return KernelSpec(name, (max(1, min(65535, -(-numel // 2048))), 1, 1), (512, 1, 1), regs)


def _gemm(name: str, m: int, n: int, tile_n: int = 256) -> KernelSpec:
    return KernelSpec(
        name,
        (max(1, -(-m // 128)), max(1, -(-n // tile_n)), 1),
        (384, 1, 1),
        168,
        0,
        213248 if tile_n == 256 else 164864,
    )


_BF16 = "phi::dtype::bfloat16"

_EW_ARGS = "(phi::Array<char const* __restrict__, %d>, phi::Array<char*, 1>, long, long, int, %s)"


def _vectorized(functor: str, arity: int) -> str:
    return "void phi::funcs::VectorizedElementwiseKernel<%s, %s, %d, 1, 4>" % (_BF16, functor, arity) + _EW_ARGS % (
        arity,
        functor,
    )


def _nccl(coll: str) -> str:
    return "ncclDevKernel_%s(ncclDevComm*, unsigned long, ncclWork*)" % coll


class _Catalog:
    """Kernel launch configurations and durations of one model shard (times in ns)."""

    TFLOPS = 330e12  # sustained bf16 tensor-core rate of the simulated GPU
    HBM = 2.4e12  # bytes/s for memory-bound kernels

    def __init__(self, cfg: SynthConfig):
        self.cfg = cfg
        self.seq_len = cfg.seq_len
        self._variants: Dict[int, "_Catalog"] = {}
        T = cfg.seq_len * cfg.micro_batch_size
        H, mp, V = cfg.hidden, cfg.mp, cfg.vocab
        heads = cfg.heads // mp
        self.T, self.H = T, H
        act = T * H
        g_tn = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
        g_nn = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"
        g_nt = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
        bmm = (
            "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x5_tn_align8>"
            "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x5_tn_align8::Params)"
        )
        self.spec: Dict[str, KernelSpec] = {}
        self.ns: Dict[str, int] = {}

        def gemm(key, name, m, n, k, tile_n=256):
            self.spec[key] = _gemm(name, m, n, tile_n)
            self.ns[key] = int(2 * m * n * k / self.TFLOPS * 1e9) + 4000

        def ew(key, name, numel, bytes_per, regs=28):
            self.spec[key] = _ew(name, numel, regs)
            self.ns[key] = int(numel * bytes_per / self.HBM * 1e9) + 2500

        gemm("qkv", g_tn, T, 3 * H // mp, H)
        gemm("qkv_dx", g_nn, T, H, 3 * H // mp)
        gemm("qkv_dw", g_nt, H, 3 * H // mp, T, 128)
        gemm("proj", g_tn, T, H, H // mp)
        gemm("proj_dx", g_nn, T, H // mp, H)
        gemm("proj_dw", g_nt, H // mp, H, T, 128)
        gemm("fc1", g_tn, T, 4 * H // mp, H)
        gemm("fc1_dx", g_nn, T, H, 4 * H // mp)
        gemm("fc1_dw", g_nt, H, 4 * H // mp, T, 128)
        gemm("fc2", g_tn, T, H, 4 * H // mp)
        gemm("fc2_dx", g_nn, T, 4 * H // mp, H)
        gemm("fc2_dw", g_nt, 4 * H // mp, H, T, 128)
        gemm("lm_head", g_tn, T, V // mp, H)
        gemm("lm_head_dx", g_nn, T, H, V // mp)
        gemm("lm_head_dw", g_nt, H, V // mp, T, 128)
        hd = H // cfg.heads
        for key in ("qk", "qk_grad_a", "qk_grad_b", "av", "av_grad_a", "av_grad_b"):
            self.spec[key] = KernelSpec(bmm, (T // 128 or 1, T // 128 or 1, heads), (128, 1, 1), 230, 0, 81920)
            self.ns[key] = int(2 * T * T * hd * heads / self.TFLOPS * 1e9) + 4000
        scores = heads * T * T
        ew("add", _vectorized("phi::funcs::AddFunctor<%s>" % _BF16, 2), act, 6)
        ew(
            "bias_grad",
            "void phi::funcs::ReduceHigherDimKernel<%s, float, phi::kps::AddFunctor<float>, "
            "phi::kps::IdentityFunctor<%s, float>, int>(%s const*, %s*, phi::kps::AddFunctor<float>, "
            "phi::kps::IdentityFunctor<%s, float>, float, int, int, int, phi::kps::DimConfig, bool)"
            % (_BF16, _BF16, _BF16, _BF16, _BF16),
            act,
            2,
            40,
        )
        ew("gelu", _vectorized("phi::GeluWithApproximateFunctor<%s>" % _BF16, 1), 4 * act // mp, 4)
        ew("gelu_grad", _vectorized("phi::GeluWithApproximateGradFunctor<%s>" % _BF16, 2), 4 * act // mp, 6)
        ew("scale", _vectorized("phi::funcs::ScaleFunctor<%s, float>" % _BF16, 1), scores, 4)
        ew(
            "softmax",
            "void phi::funcs::WarpSoftmaxForward<%s, float, 11, 4, 32, 1, false>(%s*, %s const*, "
            "int, int, int)" % (_BF16, _BF16, _BF16),
            scores,
            4,
            64,
        )
        ew(
            "softmax_grad",
            "void phi::funcs::WarpSoftmaxBackward<%s, float, 11, 4, 32, 1, false>(%s*, "
            "%s const*, %s const*, int, int, int)" % (_BF16, _BF16, _BF16, _BF16),
            scores,
            6,
            64,
        )
        ew(
            "dropout",
            "void phi::funcs::VectorizedRandomGenerator<%s>(unsigned long, unsigned long, %s const*, "
            "%s*, unsigned char*, float, float, bool, unsigned long, unsigned long)" % (_BF16, _BF16, _BF16),
            act,
            5,
            38,
        )
        ew("dropout_attn", self.spec["dropout"].name, scores, 5, 38)
        ew("dropout_grad", _vectorized("phi::funcs::DropoutGradFunctor<%s>" % _BF16, 2), act, 5)
        ew("dropout_attn_grad", self.spec["dropout_grad"].name, scores, 5)
        ew(
            "transpose",
            "void phi::funcs::TilingSwapDim1And2<%s, 32, 8, long>(%s const*, phi::Dim3, %s*)" % (_BF16, _BF16, _BF16),
            act // mp,
            4,
            32,
        )
        ew(
            "layer_norm",
            "void phi::funcs::LayerNormForward<%s, float, 1024, true>(%s const*, float const*, "
            "float const*, %s*, float*, float*, float, long)" % (_BF16, _BF16, _BF16),
            act,
            4,
            40,
        )
        ew(
            "layer_norm_grad",
            "void phi::funcs::LayerNormBackwardGradientAll<%s, float, 1024, true>(%s const*, "
            "%s const*, float const*, float const*, float const*, float*, float*, %s*, float, long, long)"
            % (_BF16, _BF16, _BF16, _BF16),
            act,
            6,
            48,
        )
        ew(
            "layer_norm_grad_sb",
            "void phi::funcs::LayerNormBackwardSumGradGammaBeta<float, 1024, 8, 64>"
            "(float const*, float*, float*, long, long)",
            H * 32,
            8,
            32,
        )
        ew(
            "embedding",
            "void phi::EmbeddingFW<%s, long, false>(%s*, %s const*, long const*, long, long, "
            "long, long)" % (_BF16, _BF16, _BF16),
            act,
            4,
            24,
        )
        ew(
            "embedding_grad",
            "void phi::EmbeddingGrad<%s, long>(%s*, %s const*, long const*, long, long, long)" % (_BF16, _BF16, _BF16),
            act,
            6,
            30,
        )
        ew(
            "ce",
            "void phi::SoftmaxWithCrossEntropyHardLabel<%s, long, false>(%s*, long const*, %s*, "
            "%s const*, long, long, long, int)" % (_BF16, _BF16, _BF16, _BF16),
            T * V // mp,
            4,
            56,
        )
        ew(
            "ce_grad",
            "void phi::SoftmaxWithCrossEntropyGradHardLabel<%s, long>(%s*, %s const*, long const*, "
            "%s const*, long, long, long, int)" % (_BF16, _BF16, _BF16, _BF16),
            T * V // mp,
            6,
            40,
        )
        ew(
            "mean",
            "void phi::funcs::ReduceAnyKernel<float, float, phi::kps::AddFunctor<float>, "
            "phi::kps::DivideFunctor<float, float>, int, float, phi::funcs::IndexCalculator, "
            "phi::funcs::IndexCalculator, true>(float const*, float*, phi::kps::AddFunctor<float>, "
            "phi::kps::DivideFunctor<float, float>, phi::kps::IdentityFunctor<float, float>, int, int, "
            "int, int, phi::funcs::IndexCalculator, phi::funcs::IndexCalculator, int, bool, float*, bool)",
            T,
            4,
            32,
        )
        ew("mean_grad", _vectorized("phi::funcs::ScaleFunctor<float, float>", 1), T, 4)
        layer_params = 12 * H * H // mp
        ew(
            "adamw",
            "void phi::AdamWKernelREG<%s, float, float>(float, float, float, float, float, float, "
            "float, float const*, float const*, float, float const*, float*, float const*, float*, %s const*, "
            "%s*, float const*, float*, long)" % (_BF16, _BF16, _BF16),
            layer_params // 6,
            20,
            46,
        )
        self.spec["nccl_mp"] = KernelSpec(_nccl("AllReduce_Sum_bf16_RING_LL"), (8, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_ce_max"] = KernelSpec(_nccl("AllReduce_Max_f32_RING_LL"), (2, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_ce_sum"] = KernelSpec(_nccl("AllReduce_Sum_f32_RING_LL"), (2, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_pp"] = KernelSpec(_nccl("SendRecv"), (1, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_dp"] = KernelSpec(_nccl("AllReduce_Sum_bf16_RING_LL128"), (16, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_clip"] = KernelSpec(_nccl("AllReduce_Sum_f32_RING_LL"), (1, 1, 1), (640, 1, 1), 96)
        self.spec["nccl_bcast"] = KernelSpec(_nccl("Broadcast_RING_LL"), (1, 1, 1), (640, 1, 1), 96)
        ew(
            "squared_l2_norm",
            "void phi::SquaredL2NormKernel<float, 256>(float const*, float*, long)",
            layer_params,
            2,
            32,
        )
        # bytes moved per call, and the link each kind uses (bytes/s)
        self.act_bytes = act * 2
        self.layer_grad_bytes = layer_params * 2
        self.embed_grad_bytes = V // mp * H * 2
        self.bw = {"mp": 180e9, "pp": 90e9, "dp": 140e9}
        # memory: bf16 params + fp32 master + two fp32 moments + bf16 grads per parameter
        self.layer_params = layer_params
        self.scores_bytes = scores * 2
        # slow_kernel: catalogue keys whose kernel name holds a substring -> duration factor
        self.kernel_factor: Dict[str, float] = {}
        for sub, f in cfg.slow_kernels().items():
            keys = [
                k for k, spec in self.spec.items() if sub in spec.name and not spec.name.startswith("ncclDevKernel")
            ]
            if not keys:
                raise ValueError("slow_kernel: no compute kernel name contains %r" % sub)
            for k in keys:
                self.kernel_factor[k] = self.kernel_factor.get(k, 1.0) * f
        self._shapes(cfg)

    def for_seq(self, seq_len: int) -> "_Catalog":
        """The catalogue of a replica whose sequences are ``seq_len`` long (dp_seq_lens): this one
        when it is the config's, else one made once."""
        if seq_len == self.seq_len:
            return self
        c = self._variants.get(seq_len)
        if c is None:
            c = self._variants[seq_len] = _Catalog(replace(self.cfg, seq_len=seq_len, dp_seq_lens=None))
        return c

    def _shapes(self, cfg: SynthConfig) -> None:
        """``shapes``: per catalogue key, the (input_shapes, input_dtypes) JSON its forward operator
        records with ``record_shapes`` (Paddle's argument names); ``flops``: the forward FLOPs of
        the GEMMs among them, 2 · m · n · k (the planted truth of docs/flops.md)."""
        b, s, H, mp, V = cfg.micro_batch_size, cfg.seq_len, cfg.hidden, cfg.mp, cfg.vocab
        h, hd = cfg.heads // mp, cfg.hidden // cfg.heads
        self.shapes: Dict[str, Tuple[str, str]] = {}
        self.flops: Dict[str, int] = {}

        def put(key, shapes, dtypes):
            self.shapes[key] = (json.dumps(shapes), json.dumps(dtypes))

        bf = ["bfloat16"]
        for key, k, n in (
            ("qkv", H, 3 * H // mp),
            ("proj", H // mp, H),
            ("fc1", H, 4 * H // mp),
            ("fc2", 4 * H // mp, H),
            ("lm_head", H, V // mp),
        ):
            put(key, {"x": [[b, s, k]], "y": [[k, n]]}, {"x": bf, "y": bf})
            self.flops[key] = 2 * b * s * k * n
        # attention scores q · kᵀ (transpose_y) and scores · v, per head
        put("qk", {"x": [[b, h, s, hd]], "y": [[b, h, s, hd]]}, {"x": bf, "y": bf})
        self.flops["qk"] = 2 * b * h * s * s * hd
        put("av", {"x": [[b, h, s, s]], "y": [[b, h, s, hd]]}, {"x": bf, "y": bf})
        self.flops["av"] = 2 * b * h * s * s * hd
        put("embedding", {"x": [[b, s]], "weight": [[V // mp if mp > 1 else V, H]]}, {"x": ["int64"], "weight": bf})
        put(
            "layer_norm",
            {"x": [[b, s, H]], "scale": [[H]], "bias": [[H]]},
            {"x": bf, "scale": ["float32"], "bias": ["float32"]},
        )
        put("add", {"x": [[b, s, H]], "y": [[b, s, H]]}, {"x": bf, "y": bf})
        put("gelu", {"x": [[b, s, 4 * H // mp]]}, {"x": bf})
        put("softmax", {"x": [[b, h, s, s]]}, {"x": bf})
        # the communication operators' inputs (send_v2, c_allreduce_sum of an activation; the pipeline
        # group's 4-byte loss and gradient-norm scalars): their bytes are the instances' planted bytes
        put("comm_act", {"x": [[b, s, H]]}, {"x": bf})
        put("comm_scalar", {"x": [[1]]}, {"x": ["float32"]})

    def layer_flops(self) -> int:
        """Forward FLOPs of one decoder layer's GEMMs (one micro-batch)."""
        return sum(self.flops[k] for k in ("qkv", "proj", "fc1", "fc2", "qk", "av"))
