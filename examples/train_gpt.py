"""Train a small GPT decoder under ``paddle.profiler`` and keep Paddle's own summaries.

The profiler is set up the way PaddleNLP's and PaddleFleetX's GPT trainers set it up
(``scheduler=[1, 5]``, ``record_shapes=True``, ``profile_memory=True``,
``on_trace_ready=export_chrome_tracing(profiler_log)``), so the trace this script writes
has the shape of a trace a user of those trainers would open.

Beside each trace it saves the text that ``Profiler.summary()`` printed for several
option sets, plus a JSON manifest that lists them. Tests compare those texts with
the tables ``tb_paddle_profile`` computes from the trace alone.

Single process (CPU, or GPU when Paddle has CUDA and sees a GPU)::

    python examples/train_gpt.py --out profiler_log

Two ranks (gloo on CPU, NCCL with ``DataParallel`` on GPU)::

    python -m paddle.distributed.launch --nproc_per_node 2 examples/train_gpt.py
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import socket
import sys
import time

import numpy as np
import paddle
import paddle.distributed as dist
import paddle.nn as nn
import paddle.nn.functional as F
import paddle.profiler as profiler

TRACE_SUFFIX = ".paddle_trace.json"

# (sorted_by, time_unit, op_detail, thread_sep) of every summary kept beside a trace.
# views is always None (every table), since that is what trainers print.
SUMMARY_OPTIONS = [
    ("CPUTotal", "ms", True, False),
    ("CPUTotal", "us", True, False),
    ("GPUTotal", "ms", True, False),
    ("GPUTotal", "us", True, False),
    ("CPUTotal", "ms", True, True),
    ("CPUTotal", "ms", False, False),
    ("CPUAvg", "us", True, False),
    ("CPUMax", "ms", True, False),
    ("CPUMin", "ns", True, False),
    ("GPUAvg", "s", False, True),
]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", default="profiler_log", help="directory for traces and summaries (default: %(default)s)")
    p.add_argument("--steps", type=int, default=6, help="training steps; ProfileStep#1..#4 are recorded, so at least 5")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--batch", type=int, default=4, help="batch size per rank")
    p.add_argument("--vocab", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument(
        "--worker-name",
        default=None,
        help="trace file prefix; default rank{r} with several ranks, else Paddle's own host_<hostname>pid_<pid>",
    )
    p.add_argument("--cpu", action="store_true", help="stay on CPU even if a GPU is present")
    args = p.parse_args(argv)
    if args.steps < 5:
        p.error("--steps must be at least 5: the profiler records steps 1..4")
    if args.hidden % args.heads:
        p.error("--hidden must be a multiple of --heads")
    return args


# ----------------------------------------------------------------------------- model


class CausalSelfAttention(nn.Layer):
    def __init__(self, hidden, heads, seq_len):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        # Additive mask: 0 on and below the diagonal, -inf-ish above it.
        mask = paddle.triu(paddle.full([seq_len, seq_len], -1e4, "float32"), diagonal=1)
        self.register_buffer("causal_mask", mask, persistable=False)

    def forward(self, x):
        b, t, h = x.shape
        qkv = self.qkv(x).reshape([b, t, 3, self.heads, self.head_dim])
        qkv = qkv.transpose([2, 0, 3, 1, 4])  # 3, b, heads, t, head_dim
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = paddle.matmul(q, k, transpose_y=True) / math.sqrt(self.head_dim)
        scores = scores + self.causal_mask[:t, :t]
        att = F.softmax(scores, axis=-1)
        y = paddle.matmul(att, v).transpose([0, 2, 1, 3]).reshape([b, t, h])
        return self.proj(y)


class MLP(nn.Layer):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class DecoderBlock(nn.Layer):
    def __init__(self, hidden, heads, seq_len):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, seq_len)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Layer):
    def __init__(self, vocab, hidden, heads, layers, seq_len):
        super().__init__()
        self.tok = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(seq_len, hidden)
        self.blocks = nn.LayerList([DecoderBlock(hidden, heads, seq_len) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, vocab, bias_attr=False)

    def forward(self, tokens):
        positions = paddle.arange(tokens.shape[1], dtype="int64")
        x = self.tok(tokens) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class RandomTokens(paddle.io.Dataset):
    """Random token sequences; each sample is (input, next-token target)."""

    def __init__(self, n, seq_len, vocab, seed):
        rng = np.random.RandomState(seed)
        self.data = rng.randint(0, vocab, size=(n, seq_len + 1)).astype("int64")

    def __getitem__(self, i):
        return self.data[i, :-1], self.data[i, 1:]

    def __len__(self):
        return len(self.data)


# ----------------------------------------------------------------------------- helpers


def allreduce_grads_by_hand(params, world_size):
    """Average gradients across ranks inside a Communication-type host event.

    On CPU (gloo) ``DataParallel``'s all-reduce leaves no event in the trace, and
    ``profiler.RecordEvent`` refuses the Communication type, so the C++ recorder is
    used directly; that is what makes Paddle print its Distribution Summary.
    """
    event = paddle.base.core._RecordEvent("allreduce_grads", paddle.base.core.TracerEventType.Communication)
    try:
        with paddle.no_grad():  # in-place scale_ on a leaf's grad needs no_grad
            for p in params:
                if p.grad is not None:
                    dist.all_reduce(p.grad)  # p.grad shares storage: sums in place
                    p.grad.scale_(1.0 / world_size)
    finally:
        event.end()


def tracing_exporter(out_dir, worker_name):
    """``export_chrome_tracing`` plus a record of the file names it wrote.

    Paddle names the file after the export time, so the only reliable way to know
    it is to look at what appeared in the directory; other ranks may write there
    at the same moment, hence the filter on this process's own prefix.
    """
    export = profiler.export_chrome_tracing(out_dir, worker_name=worker_name)
    prefix = (worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}") + "_time_"
    written = []

    def on_trace_ready(prof):
        before = set(os.listdir(out_dir))
        export(prof)
        written.extend(
            sorted(f for f in set(os.listdir(out_dir)) - before if f.startswith(prefix) and f.endswith(TRACE_SUFFIX))
        )

    return on_trace_ready, written


def summary_file_name(stem, sorted_by, time_unit, op_detail, thread_sep):
    name = f"{stem}.summary.{sorted_by}.{time_unit}"
    if not op_detail:
        name += ".no_op_detail"
    if thread_sep:
        name += ".thread_sep"
    return name + ".txt"


def save_summaries(prof, out_dir, trace_name):
    """Capture what ``prof.summary`` prints for each option set, next to the trace."""
    stem = trace_name[: -len(TRACE_SUFFIX)]
    entries = []
    for sorted_by, time_unit, op_detail, thread_sep in SUMMARY_OPTIONS:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            prof.summary(
                sorted_by=getattr(profiler.SortedKeys, sorted_by),
                op_detail=op_detail,
                thread_sep=thread_sep,
                time_unit=time_unit,
                views=None,
            )
        text = buf.getvalue()
        if "Overview Summary" not in text and "Device Summary" not in text:
            raise RuntimeError(f"prof.summary printed nothing capturable: {text[:200]!r}")
        fname = summary_file_name(stem, sorted_by, time_unit, op_detail, thread_sep)
        with open(os.path.join(out_dir, fname), "w", encoding="utf-8") as f:
            f.write(text)
        entries.append(
            {
                "file": fname,
                "sorted_by": sorted_by,
                "time_unit": time_unit,
                "op_detail": op_detail,
                "thread_sep": thread_sep,
                "views": None,
            }
        )
    manifest = {
        "trace": trace_name,
        "paddle_version": paddle.__version__,
        "paddle_commit": paddle.version.commit,
        "summaries": entries,
    }
    with open(os.path.join(out_dir, stem + ".summaries.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return entries


# ----------------------------------------------------------------------------- main


def main(argv=None):
    args = parse_args(argv)
    world_size = int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))
    use_gpu = not args.cpu and paddle.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
    if use_gpu:
        paddle.set_device("gpu")  # under launch: the card in FLAGS_selected_gpus
    else:
        paddle.set_device("cpu")
    if world_size > 1:
        dist.init_parallel_env()
    rank = dist.get_rank() if world_size > 1 else 0
    worker_name = args.worker_name or (f"rank{rank}" if world_size > 1 else None)

    paddle.seed(args.seed)  # same seed on every rank: identical initial weights
    model = TinyGPT(args.vocab, args.hidden, args.heads, args.layers, args.seq_len)
    optimizer = paddle.optimizer.AdamW(learning_rate=args.lr, parameters=model.parameters(), weight_decay=0.01)
    params = model.parameters()
    manual_allreduce = world_size > 1 and not use_gpu
    if world_size > 1 and use_gpu:
        model = paddle.DataParallel(model)

    dataset = RandomTokens(args.steps * args.batch * world_size, args.seq_len, args.vocab, args.seed)
    if world_size > 1:
        sampler = paddle.io.DistributedBatchSampler(dataset, batch_size=args.batch, shuffle=True, drop_last=True)
        loader = paddle.io.DataLoader(dataset, batch_sampler=sampler, num_workers=0)
    else:
        loader = paddle.io.DataLoader(dataset, batch_size=args.batch, shuffle=True, drop_last=True, num_workers=0)

    targets = [profiler.ProfilerTarget.CPU]
    if use_gpu:
        targets.append(profiler.ProfilerTarget.GPU)
    on_trace_ready, written = tracing_exporter(args.out, worker_name)
    prof = profiler.Profiler(
        targets=targets, scheduler=[1, 5], on_trace_ready=on_trace_ready, record_shapes=True, profile_memory=True
    )

    started = time.time()
    prof.start()
    step = 0
    while step < args.steps:
        for tokens, labels in loader:
            with profiler.RecordEvent("train_step"):
                # A user event whose name says memcpy lands in Memory Manipulation Summary.
                with profiler.RecordEvent("memcpy_batch_to_device"):
                    tokens = tokens.cuda() if use_gpu else tokens.cpu()
                    labels = labels.cuda() if use_gpu else labels.cpu()
                with profiler.RecordEvent("fwd_and_loss"):
                    logits = model(tokens)
                    loss = F.cross_entropy(logits.reshape([-1, args.vocab]), labels.reshape([-1]))
                with profiler.RecordEvent("bwd"):
                    loss.backward()
                if manual_allreduce:
                    allreduce_grads_by_hand(params, world_size)
                optimizer.step()
                optimizer.clear_grad()
            prof.step(num_samples=args.batch)
            step += 1
            if step >= args.steps:
                break
    with contextlib.redirect_stdout(sys.stderr):  # keep stdout for our own report
        prof.stop()
    elapsed = time.time() - started

    if not written:
        raise RuntimeError("export_chrome_tracing wrote no trace for this process")
    trace_name = written[-1]  # the trace that prof.summary() describes
    entries = save_summaries(prof, args.out, trace_name)
    checksum = float(sum(float(p.sum()) for p in params))
    print(
        f"rank {rank}/{world_size} {'gpu' if use_gpu else 'cpu'}: {args.steps} steps in "
        f"{elapsed:.2f}s, loss {float(loss):.4f}, param checksum {checksum:.6f}"
    )
    print(
        f"trace: {os.path.join(args.out, trace_name)} "
        f"({os.path.getsize(os.path.join(args.out, trace_name))} bytes), "
        f"{len(entries)} summaries"
    )


if __name__ == "__main__":
    main()
