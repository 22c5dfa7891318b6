"""The model: operators with their inner events, GPT layers, forward and backward passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from .model import BACKWARD, COMMUNICATION, DYGRAPH_KERNEL_LAUNCH, FORWARD, OPERATOR, OPERATOR_INNER, USER_DEFINED
from .config import COMPUTE_STREAM, DP_STREAM


@dataclass
class _Entry:
    """One forward op as autograd remembers it: what its grad node will run."""

    grad: str  # e.g. "Matmul" -> Global_MatmulGradNode
    kernel: str  # e.g. "matmul_grad" -> "matmul_grad infer_meta" / "matmul_grad kernel launch"
    kernels: Tuple[str, ...]
    out_bytes: int
    saved: int  # address freed by the grad node, or 0
    params: int = 0  # parameters whose GradNodeAccumulation follows
    layer: int = -1  # decoder layer it belongs to (for DP buckets)
    comm: bool = False  # the grad kernel is an MP all-reduce


class _Layers:
    """A part of the rank program (:class:`.program._RankProgram`): the model: operators
    with their inner events, GPT layers, forward and backward passes."""

    # -- operators
    def _op(
        self,
        name: str,
        kernels: Sequence[str] = (),
        out: int = 0,
        saved: bool = False,
        grad: Optional[Tuple[str, str, Tuple[str, ...]]] = None,
        params: int = 0,
        pybind: bool = False,
        layer: int = -1,
        grad_comm: bool = False,
    ):
        """``<name> dygraph`` with node_creation, infer_meta and a kernel launch that allocates
        the output and launches ``kernels``; records its grad node on the tape."""
        wrap = None
        if pybind:
            wrap = self._open(name + " pybind_imperative_func", USER_DEFINED)
            self._adv(600, 2400)
        row = self._open(name + " dygraph", OPERATOR)
        if self.cfg.record_shapes and kernels and kernels[0] in self.cat.shapes:
            self.sink.host_shapes(row, *self.cat.shapes[kernels[0]])
        self._adv(400, 1800)
        if grad is not None:
            self._leaf(name + " node_creation", OPERATOR_INNER, 300, 1400)
        self._leaf(name + " infer_meta", OPERATOR_INNER, 200, 1800)
        lrow = self._open(name + " kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1400)
        addr = self._alloc(self.gpu, out) if out else 0
        for key in kernels:
            yield from self._launch(key)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1500)
        self._close(row)
        if wrap is not None:
            self._adv(400, 1600)
            self._close(wrap)
        self._flush_frees()
        keep = saved and grad is not None
        if addr and not keep:
            self.pending_free.append((self.gpu, addr))
        if grad is not None:
            gname, gkernel, gkernels = grad
            self.tape[self.cur_mb].append(
                _Entry(
                    gname, gkernel, gkernels, out or self.cat.act_bytes, addr if keep else 0, params, layer, grad_comm
                )
            )
        self._adv(6000, 22_000)  # Python between ops

    def _comm_shapes(self, row: int, key: str) -> None:
        """record_shapes: a communication operator's input (catalogue ``comm_act``: one activation
        [b, s, H] in bf16; ``comm_scalar``: one float32)."""
        if self.cfg.record_shapes:
            self.sink.host_shapes(row, *self.cat.shapes[key])

    def _allreduce_op(self, nbytes: int):
        """``c_allreduce_sum dygraph``: the MP all-reduce of a row-parallel layer's output."""
        row = self._open("c_allreduce_sum dygraph", OPERATOR)
        self._comm_shapes(row, "comm_act")
        self._adv(400, 1600)
        self._leaf("c_allreduce_sum infer_meta", OPERATOR_INNER, 200, 900)
        lrow = self._open("c_allreduce_sum kernel launch", DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1200)
        end = yield from self._mp_allreduce(nbytes)
        self.compute_wait.append(end)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1200)
        self._close(row)
        self._adv(1500, 5000)

    def _layer(self, name: str) -> int:
        row = self._open(name, FORWARD)
        st = self.fw_stack
        if not st:  # an outermost Forward: its sub-layers are numbered per name from 0
            self.fw_seen = {}
            st.append((name, 0))
        elif len(st) == 1:
            ordinal = self.fw_seen[name] = self.fw_seen.get(name, -1) + 1
            st.append((name, ordinal))
        else:
            st.append((name, -1))
        self._adv(2000, 7000)
        return row

    def _end_layer(self, row: int) -> None:
        self._adv(800, 3000)
        self._flush_frees()
        self._close(row)
        self.fw_stack.pop()

    def _credit_layer(self, start: int, end: int, comm: bool) -> None:
        """Ground truth: a recorded kernel's time to the layer whose forward launched it (the Forward
        just below the outermost open one, else that one): layer_kernels[(name, ordinal)] =
        [kernels, kernel_ns, comm_kernel_ns], all micro-batches and steps."""
        st = self.fw_stack
        if not st:
            return
        key = st[1] if len(st) > 1 else st[0]
        acc = self.layer_kernels.get(key)
        if acc is None:
            acc = self.layer_kernels[key] = [0, 0, 0]
        if comm:
            acc[2] += end - start
        else:
            acc[0] += 1
            acc[1] += end - start

    def _linear(self, cls: str, key: str, layer: int, row_parallel: bool):
        lname = cls if self.mp_comm else "Linear"
        L = self._layer(lname)
        if self.mp_comm and not row_parallel:
            yield from self._op(
                "c_identity", (), grad=("CIdentity", "c_identity_grad", ("nccl",)), layer=layer, grad_comm=True
            )
        yield from self._op(
            "matmul",
            (key,),
            out=self.cat.act_bytes,
            saved=True,
            grad=("Matmul", "matmul_grad", (key + "_dx", key + "_dw")),
            params=1,
            layer=layer,
        )
        if self.mp_comm and row_parallel:
            yield from self._allreduce_op(self.cat.act_bytes)
        yield from self._op(
            "add", ("add",), out=self.cat.act_bytes, grad=("Add", "add_grad", ("bias_grad",)), params=1, layer=layer
        )
        self._end_layer(L)

    def _decoder_layer(self, layer: int):
        act = self.cat.act_bytes
        L = self._layer("GPTDecoderLayer")
        ln = self._layer("LayerNorm")
        yield from self._op(
            "layer_norm",
            ("layer_norm",),
            out=act,
            saved=True,
            pybind=True,
            grad=("LayerNorm", "layer_norm_grad", ("layer_norm_grad", "layer_norm_grad_sb")),
            params=2,
            layer=layer,
        )
        self._end_layer(ln)
        att = self._layer("MultiHeadAttention")
        yield from self._linear("ColumnParallelLinear", "qkv", layer, False)
        yield from self._op("reshape", (), out=0, pybind=True, grad=("Reshape", "reshape_grad", ()), layer=layer)
        yield from self._op(
            "transpose",
            ("transpose",),
            out=act,
            saved=False,
            pybind=True,
            grad=("Transpose", "transpose_grad", ("transpose",)),
            layer=layer,
        )
        yield from self._op(
            "matmul",
            ("qk",),
            out=self.cat.scores_bytes,
            saved=True,
            pybind=True,
            grad=("Matmul", "matmul_grad", ("qk_grad_a", "qk_grad_b")),
            layer=layer,
        )
        yield from self._op(
            "scale", ("scale",), out=self.cat.scores_bytes, grad=("Scale", "scale", ("scale",)), layer=layer
        )
        yield from self._op(
            "softmax",
            ("softmax",),
            out=self.cat.scores_bytes,
            saved=True,
            pybind=True,
            grad=("Softmax", "softmax_grad", ("softmax_grad",)),
            layer=layer,
        )
        dr = self._layer("Dropout")
        yield from self._op(
            "dropout",
            ("dropout_attn",),
            out=self.cat.scores_bytes,
            saved=True,
            grad=("Dropout", "dropout_grad", ("dropout_attn_grad",)),
            layer=layer,
        )
        self._end_layer(dr)
        yield from self._op(
            "matmul",
            ("av",),
            out=act,
            saved=True,
            pybind=True,
            grad=("Matmul", "matmul_grad", ("av_grad_a", "av_grad_b")),
            layer=layer,
        )
        yield from self._op(
            "transpose",
            ("transpose",),
            out=act,
            pybind=True,
            grad=("Transpose", "transpose_grad", ("transpose",)),
            layer=layer,
        )
        yield from self._op("reshape", (), pybind=True, grad=("Reshape", "reshape_grad", ()), layer=layer)
        yield from self._linear("RowParallelLinear", "proj", layer, True)
        self._end_layer(att)
        dr = self._layer("Dropout")
        yield from self._op(
            "dropout",
            ("dropout",),
            out=act,
            saved=True,
            grad=("Dropout", "dropout_grad", ("dropout_grad",)),
            layer=layer,
        )
        self._end_layer(dr)
        yield from self._op("add", ("add",), out=act, grad=("Add", "add_grad", ()), layer=layer)
        ln = self._layer("LayerNorm")
        yield from self._op(
            "layer_norm",
            ("layer_norm",),
            out=act,
            saved=True,
            pybind=True,
            grad=("LayerNorm", "layer_norm_grad", ("layer_norm_grad", "layer_norm_grad_sb")),
            params=2,
            layer=layer,
        )
        self._end_layer(ln)
        mlp = self._layer("GPTMLP")
        yield from self._linear("ColumnParallelLinear", "fc1", layer, False)
        yield from self._op(
            "gelu",
            ("gelu",),
            out=4 * act // self.cfg.mp,
            saved=True,
            pybind=True,
            grad=("Gelu", "gelu_grad", ("gelu_grad",)),
            layer=layer,
        )
        yield from self._linear("RowParallelLinear", "fc2", layer, True)
        self._end_layer(mlp)
        dr = self._layer("Dropout")
        yield from self._op(
            "dropout",
            ("dropout",),
            out=act,
            saved=True,
            grad=("Dropout", "dropout_grad", ("dropout_grad",)),
            layer=layer,
        )
        self._end_layer(dr)
        yield from self._op("add", ("add",), out=act, grad=("Add", "add_grad", ()), layer=layer)
        self._end_layer(L)

    def _embeddings(self):
        act = self.cat.act_bytes
        E = self._layer("EmbeddingPipe" if self.pipe_names else "GPTEmbeddings")
        if self.mp_comm:
            V = self._layer("VocabParallelEmbedding")
            yield from self._op(
                "c_embedding",
                ("embedding",),
                out=act,
                pybind=True,
                grad=("CEmbedding", "c_embedding_grad", ("embedding_grad",)),
                params=1,
            )
            yield from self._allreduce_op(act)
        else:
            V = self._layer("Embedding")
            yield from self._op(
                "embedding",
                ("embedding",),
                out=act,
                pybind=True,
                grad=("Embedding", "embedding_grad", ("embedding_grad",)),
                params=1,
            )
        self._end_layer(V)
        yield from self._op("add", ("add",), out=act, grad=("Add", "add_grad", ()))
        dr = self._layer("Dropout")
        yield from self._op(
            "dropout", ("dropout",), out=act, saved=True, grad=("Dropout", "dropout_grad", ("dropout_grad",))
        )
        self._end_layer(dr)
        self._end_layer(E)

    def _final_norm_and_head(self):
        act, T = self.cat.act_bytes, self.cat.T
        pipe = self._layer("HeadPipe") if self.pipe_names else None
        ln = self._layer("LayerNorm")
        yield from self._op(
            "layer_norm",
            ("layer_norm",),
            out=act,
            saved=True,
            pybind=True,
            grad=("LayerNorm", "layer_norm_grad", ("layer_norm_grad", "layer_norm_grad_sb")),
            params=2,
        )
        self._end_layer(ln)
        head = self._layer("GPTLMHead")
        if self.mp_comm:
            yield from self._op("c_identity", (), grad=("CIdentity", "c_identity_grad", ("nccl",)), grad_comm=True)
        yield from self._op(
            "matmul",
            ("lm_head",),
            out=T * self.cfg.vocab * 2 // self.cfg.mp,
            saved=True,
            grad=("Matmul", "matmul_grad", ("lm_head_dx", "lm_head_dw")),
            params=1,
        )
        self._end_layer(head)
        if pipe is not None:
            self._end_layer(pipe)

    def _criterion(self):
        """GPTPretrainingCriterion: (parallel) cross entropy and the mean loss."""
        T, mp = self.cat.T, self.cfg.mp
        C = self._layer("GPTPretrainingCriterion")
        if self.mp_comm:
            row = self._open("c_softmax_with_cross_entropy dygraph", OPERATOR)
            self._adv(500, 2000)
            self._leaf("c_softmax_with_cross_entropy node_creation", OPERATOR_INNER, 300, 1200)
            self._leaf("c_softmax_with_cross_entropy infer_meta", OPERATOR_INNER, 300, 1500)
            lrow = self._open("c_softmax_with_cross_entropy kernel launch", DYGRAPH_KERNEL_LAUNCH)
            self._adv(300, 1200)
            addr = self._alloc(self.gpu, T * 4)
            saved = self._alloc(self.gpu, T * self.cfg.vocab * 2 // mp)
            # the op reduces max and sum over the model-parallel group on the calc stream
            yield from self._launch("ce")
            yield from self._mp_allreduce(T * 4, "nccl_ce_max", COMPUTE_STREAM)
            yield from self._launch("ce")
            yield from self._mp_allreduce(T * 4, "nccl_ce_sum", COMPUTE_STREAM)
            yield from self._launch("ce")
            self._adv(200, 800)
            self._close(lrow)
            self._adv(300, 1200)
            self._close(row)
            self._flush_frees()
            self.pending_free.append((self.gpu, addr))
            self.tape[self.cur_mb].append(
                _Entry(
                    "CSoftmaxWithCrossEntropy",
                    "c_softmax_with_cross_entropy_grad",
                    ("ce_grad",),
                    T * self.cfg.vocab * 2 // mp,
                    saved,
                )
            )
            self._adv(1500, 5000)
        else:
            yield from self._op(
                "cross_entropy_with_softmax",
                ("ce",),
                out=T * 4,
                saved=True,
                pybind=True,
                grad=("CrossEntropyWithSoftmax", "cross_entropy_with_softmax_grad", ("ce_grad",)),
            )
        yield from self._op("mean", ("mean",), out=256, pybind=True, grad=("Mean", "mean_grad", ("mean_grad",)))
        self._end_layer(C)

    def _forward(self, mb: int):
        self.cur_mb = mb * self.V + self.chunk
        self.tape[self.cur_mb] = []
        # Paddle's interleaved pipeline calls each model chunk (a PipelineLayerChunk)
        model = "PipelineLayerChunk" if self.V > 1 else "GPTForCausalLMPipe" if self.cfg.pp > 1 else "GPTForCausalLM"
        F = self._layer(model)
        if self.vfirst:
            yield from self._embeddings()
        layer0, n_layers = self.chunks[self.chunk]
        for i in range(n_layers):
            yield from self._decoder_layer(layer0 + i)
        if self.vlast:
            yield from self._final_norm_and_head()
        self._end_layer(F)
        if self.vlast:
            yield from self._criterion()

    # -- backward
    def _grad_node(self, e: _Entry):
        g = self._open("Global_%sGradNode" % e.grad, OPERATOR)
        self._adv(300, 1200)
        loc = self._open("Local_%sGradNode" % e.grad, OPERATOR_INNER)
        self._adv(400, 2400)
        self._leaf(e.kernel + " infer_meta", OPERATOR_INNER, 200, 1500)
        lname = ("c_allreduce_sum" if e.comm else e.kernel) + " kernel launch"
        lrow = self._open(lname, DYGRAPH_KERNEL_LAUNCH)
        self._adv(300, 1400)
        addr = self._alloc(self.gpu, e.out_bytes) if e.kernels and not e.comm else 0
        if e.comm:
            end = yield from self._mp_allreduce(self.cat.act_bytes)
            self.compute_wait.append(end)
        else:
            for key in e.kernels:
                yield from self._launch(key)
        self._adv(200, 800)
        self._close(lrow)
        self._adv(300, 1500)
        self._close(loc)
        self._adv(200, 900)
        if e.saved:
            self._free(self.gpu, e.saved)
        self._flush_frees()
        self._close(g)
        if addr:
            self.pending_free.append((self.gpu, addr))
        for _ in range(e.params):
            self._leaf("Global_GradNodeAccumulation", OPERATOR, 600, 2400)
        self._adv(300, 1500)

    def _dp_bucket(self, nbytes: int):
        """The fused gradient all-reduce of one bucket, a Communication event."""
        self.seq["dp"] += 1
        key = ("dp", self.pp_i, self.mp_i, self.step_idx, self.seq["dp"])
        dp = self.cfg.dp
        xfer = self._xfer(key, nbytes, "dp", 2.0 * (dp - 1) / dp)
        row = self._open("allreduce_grads", COMMUNICATION)
        self._adv(800, 3000)
        end = yield from self._nccl("nccl_dp", "dp_allreduce", key, dp, xfer, DP_STREAM)
        self.dp_handles.append(end)
        self._adv(400, 1500)
        self._close(row)

    def _backward(self, mb: int, last: bool):
        """One micro-batch's (chunk's) backward; ``last``: its chunk's last one, after which
        the chunk's gradients are all-reduced over DP."""
        self.cur_mb = mb * self.V + self.chunk
        B = self._open("Gradient Backward", BACKWARD)
        self._adv(3000, 9000)
        tape = self.tape.pop(self.cur_mb)
        dp_on = last and self.dp_comm
        bucket_layers = self.cfg.dp_bucket_layers
        pending = 0  # decoder layers whose gradients are complete but not yet all-reduced
        cur_layer = None
        for e in reversed(tape):
            if dp_on and e.layer != cur_layer:
                if cur_layer is not None and cur_layer >= 0:
                    pending += 1
                    if pending == bucket_layers:
                        yield from self._dp_bucket(pending * self.cat.layer_grad_bytes)
                        pending = 0
                cur_layer = e.layer
            yield from self._grad_node(e)
        if dp_on:
            if cur_layer is not None and cur_layer >= 0:
                pending += 1
            nbytes = pending * self.cat.layer_grad_bytes
            if self.vfirst or self.vlast:
                nbytes += self.cat.embed_grad_bytes
            if nbytes:
                yield from self._dp_bucket(nbytes)
        for addr in self.mb_buffers.pop(self.cur_mb, []):
            self._free(self.gpu, addr)
        self._adv(2000, 6000)
        self._flush_frees()
        self._close(B)
