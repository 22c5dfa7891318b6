"""Model FLOPs utilisation (MFU) of a run, where the user tells the model (docs/pipeline-schedule.md, "MFU").

    mfu(ranks, topo=None, params=None, tokens_per_step=None, model_config=None, peak_tflops=None) -> Mfu
    mfu_of(mfu_inputs(ranks, topo), ...) -> Mfu     the same, from the few facts of the ranks it reads

MFU is arithmetic on what the ranks' digests record (their ProfileStep durations, devices, shapes' FLOPs),
never on the replay: :class:`MfuInputs` holds those facts, small enough to store beside a what-if answer
so that the answer for other MFU inputs is made from the stored one (the what-if route, runs.py).

- **Model FLOPs per step** = 6 · N · tokens: 2 · N for the forward and 4 · N for the backward of every
  token (Kaplan et al.; what Megatron and PaddleNLP report as MFU). Attention's quadratic term and
  recomputation are not counted.
- **N** and **tokens per step** come from ``--params`` and ``--tokens-per-step``, or from a PaddleNLP-style
  model config (``model_from_config``): N = num_hidden_layers · (2·h² + 2·h·h_kv + k·h·i) + V·h, with h =
  hidden_size, h_kv = h · num_key_value_heads / num_attention_heads, i = intermediate_size (default 4·h),
  k = 3 for a gated MLP (hidden_act silu / swiglu / swish, as LLaMA's) else 2 (GPT's), V = vocab_size
  (the output head; the input embedding is a lookup and the norms are negligible, neither counted);
  tokens = global_batch_size × max_seq_length (or seq_length / max_seq_len). A flag given beside a
  config wins over it.
- **Step time**: the job's = the mean over ranks and steps of the ProfileStep durations; a rank's =
  the mean over its steps.
- **Peak FLOP/s**: per device, from its name in ``deviceProperties`` (``PEAK_TFLOPS``: dense BF16 tensor
  math, FP16 where the GPU has no BF16), or ``--peak-tflops`` for every device.
- **MFU** (job) = 6 · N · tokens / (step time × Σ peak FLOP/s of the job's devices, one per rank).
  **Per rank**: its share 6 · N · tokens / world (data parallelism splits the tokens, tensor and
  pipeline parallelism the layers, all evenly) / (its step time × its peak).
- **Per stage** (``stage_mfu``, without --params): when the traces record input shapes, each rank's
  own model FLOPs per step from them (analysis/flops.py; docs/flops.md) over its step time × peak,
  the mean over the stage's ranks: the split of MFU by stage that 6 · N · tokens cannot give.
"""

from __future__ import annotations

import json
import os
import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..v1 import schedule_pb2 as spb
from ..v1 import summary_pb2 as pb

# (regular expression on the lower-cased device name, dense TFLOP/s, what it is). First match wins, so
# the more specific names come first. NVIDIA's datasheets; no sparsity.
PEAK_TFLOPS: List[Tuple[str, float, str]] = [
    (r"\bgh200\b", 989.0, "GH200, BF16 dense"),
    (r"\bh200\b", 989.0, "H200, BF16 dense"),
    (r"\bh100\b.*\bpcie\b", 756.0, "H100 PCIe, BF16 dense"),
    (r"\bh100\b.*\bnvl\b", 835.0, "H100 NVL, BF16 dense"),
    (r"\bh100\b", 989.0, "H100 SXM, BF16 dense"),
    (r"\bh800\b.*\bpcie\b", 756.0, "H800 PCIe, BF16 dense"),
    (r"\bh800\b", 989.0, "H800 SXM, BF16 dense"),
    (r"\bh20\b", 148.0, "H20, BF16 dense"),
    (r"\bb200\b", 2250.0, "B200, BF16 dense"),
    (r"\bb100\b", 1750.0, "B100, BF16 dense"),
    (r"\ba100\b", 312.0, "A100, BF16 dense"),
    (r"\ba800\b", 312.0, "A800, BF16 dense"),
    (r"\ba40\b", 149.7, "A40, BF16 dense"),
    (r"\ba30\b", 165.0, "A30, BF16 dense"),
    (r"\ba10\b", 125.0, "A10, BF16 dense"),
    (r"\bl40s\b", 362.0, "L40S, BF16 dense"),
    (r"\bl40\b", 181.0, "L40, BF16 dense"),
    (r"\bl20\b", 119.5, "L20, BF16 dense"),
    (r"\bl4\b", 121.0, "L4, BF16 dense"),
    (r"\bv100s\b", 130.0, "V100S, FP16 tensor"),
    (r"\bv100\b.*\bpcie\b", 112.0, "V100 PCIe, FP16 tensor"),
    (r"\bv100\b", 125.0, "V100 SXM2, FP16 tensor"),
    (r"\bt4\b", 65.0, "T4, FP16 tensor"),
    (r"\brtx\s*4090\b", 165.2, "GeForce RTX 4090, BF16 dense (FP32 accumulate)"),
    (r"\brtx\s*3090\b", 71.0, "GeForce RTX 3090, BF16 dense (FP32 accumulate)"),
]

_GATED = ("silu", "swiglu", "swish")


def peak_of(device_name: str) -> Tuple[float, str]:
    """(peak FLOP/s, which table entry) of a device name; (0, "") when the table does not know it."""
    low = (device_name or "").lower()
    for pattern, tflops, what in PEAK_TFLOPS:
        if re.search(pattern, low):
            return tflops * 1e12, what
    return 0.0, ""


def _load(path: str) -> dict:
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the model config ({exc.strerror or exc})") from None
    data = None
    if path.lower().endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}: not valid JSON ({exc})") from None
    else:
        try:
            import yaml  # PyYAML (setup.py): PaddleNLP / PaddleFleetX configs are YAML
        except ImportError:  # pragma: no cover - installed with the package
            raise ValueError(f"{path}: reading YAML needs PyYAML (pip install pyyaml), or give a .json file") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            first = str(exc).splitlines()[0] if str(exc) else "invalid YAML"
            raise ValueError(f"{path}: not valid YAML ({first})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of config keys")
    return data


def _find(data: dict, *keys: str):
    """The value of the first of ``keys`` found, at the top level or in nested mappings (breadth first:
    PaddleFleetX puts them under Model:, Global:, Data:)."""
    level = [data]
    while level:
        for key in keys:
            for d in level:
                if key in d and d[key] is not None and not isinstance(d[key], (dict, list)):
                    return d[key]
        level = [v for d in level for v in d.values() if isinstance(v, dict)]
    return None


def model_from_config(path: str, dp: int = 0) -> Tuple[float, float, List[str]]:
    """(N, tokens per step, the formulas in words) from a PaddleNLP-style config; 0 for what it lacks.
    ``dp``: the data-parallel degree, used when the config gives a per-device batch instead of the
    global one. Raises ValueError (naming the file) on an unreadable config or a non-numeric value."""
    data = _load(path)

    def num(*keys):
        v = _find(data, *keys)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"{path}: {keys[0]} must be a number, got {v!r}")
        return float(v)

    formulas: List[str] = []
    layers = num("num_hidden_layers", "num_layers", "n_layer")
    h = num("hidden_size", "n_embd")
    vocab = num("vocab_size")
    params = 0.0
    if layers and h and vocab:
        inter = num("intermediate_size", "ffn_hidden_size") or 4 * h
        heads = num("num_attention_heads", "n_head")
        kv = num("num_key_value_heads", "num_kv_heads")
        h_kv = h * kv / heads if heads and kv else h
        act = str(_find(data, "hidden_act") or "").lower()
        arch = " ".join(str(x) for x in [_find(data, "model_type") or ""] + list(data.get("architectures") or []))
        gated = act in _GATED or any(w in arch.lower() for w in ("llama", "qwen", "mistral", "baichuan"))
        k = 3 if gated else 2
        params = layers * (2 * h * h + 2 * h * h_kv + k * h * inter) + vocab * h
        formulas.append(
            f"N = num_hidden_layers · (2·h² + 2·h·h_kv + {k}·h·i) + V·h = {layers:g} · (2·{h:g}² + 2·{h:g}·{h_kv:g} + "
            f"{k}·{h:g}·{inter:g}) + {vocab:g}·{h:g} = {params:.6g} (h = hidden_size, h_kv = h · kv heads / heads, "
            f"i = intermediate_size, {'gated' if gated else 'plain'} MLP, V = vocab_size: the output head; the input "
            "embedding is a lookup and is not counted)"
        )
    seq = num("max_seq_length", "seq_length", "max_seq_len", "max_sequence_length")
    gbs = num("global_batch_size")
    tokens = 0.0
    if seq and gbs:
        tokens = gbs * seq
        formulas.append(f"tokens per step = global_batch_size × max_seq_length = {gbs:g} × {seq:g} = {tokens:.6g}")
    elif seq:
        per = num("per_device_train_batch_size", "micro_batch_size", "local_batch_size")
        acc = num("gradient_accumulation_steps") or 1
        deg = num("data_parallel_degree") or (dp or None)
        if per and deg:
            tokens = per * acc * deg * seq
            formulas.append(
                f"tokens per step = per_device_train_batch_size × gradient_accumulation_steps × "
                f"data-parallel degree × max_seq_length = {per:g} × {acc:g} × {deg:g} × {seq:g} = "
                f"{tokens:.6g}"
            )
    return params, tokens, formulas


def _device_name(r) -> str:
    meta = r.digest.meta
    for d in meta.devices:
        if d.id == r.device_id:
            return d.name
    return meta.devices[0].name if len(meta.devices) else ""


def _step_times(r) -> List[int]:
    return [s.range.end_ns - s.range.start_ns for s in r.steps.values() if s.step >= 0]


class MfuRank(NamedTuple):
    """What MFU reads of one rank: its number, whether its trace has GPU events, its device's name (its
    own, "" without GPU events), its ProfileStep durations, the model FLOPs per step its shapes tell
    (Summary.flops) and its pipeline stage (Topology.stages; 0 without a pipeline)."""

    rank: int
    gpu: bool
    device_name: str
    step_times: Tuple[int, ...]
    flops_per_step: float
    stage: int


class MfuInputs(NamedTuple):
    """The ranks' facts MFU reads (in rank order) and the data-parallel degree (sharding included; 0 when
    unknown) that a model config with a per-device batch needs. :meth:`to_bytes` / :meth:`from_bytes`:
    stored beside a what-if answer."""

    ranks: Tuple[MfuRank, ...]
    dp: int

    def to_bytes(self) -> bytes:
        import msgspec

        return msgspec.msgpack.encode([self.dp, [list(r) for r in self.ranks]])

    @classmethod
    def from_bytes(cls, data: bytes) -> "MfuInputs":
        import msgspec

        dp, ranks = msgspec.msgpack.decode(data)
        return cls(tuple(MfuRank(r[0], r[1], r[2], tuple(r[3]), r[4], r[5]) for r in ranks), dp)


def mfu_inputs(ranks: Sequence, topo=None) -> MfuInputs:
    """The MfuInputs of the run's ranks (crossrank RankData, in rank order) and its Topology."""
    pp = topo.stages(len(ranks)) if topo is not None else []
    out = []
    for r in ranks:
        gpu = r.digest.parallel.timeline == pb.TIMELINE_DEVICE
        stage = pp[r.index] if r.index < len(pp) and pp[r.index] >= 0 else 0
        out.append(
            MfuRank(
                int(r.rank),
                gpu,
                _device_name(r) if gpu else "",
                tuple(_step_times(r)),
                float(r.digest.flops.model_flops_per_step),
                int(stage),
            )
        )
    dp = 0
    if topo is not None and bool(getattr(topo, "dp", 0)):
        dp = topo.dp * max(1, getattr(topo, "sharding", 0) or 1)
    return MfuInputs(tuple(out), dp)


def stage_mfu(ranks: Sequence[MfuRank], peak_tflops: Optional[float], out: spb.Mfu) -> None:
    """Mfu.stages: per pipeline stage (its place in its send/recv chain, Topology.stages, as the pipeline
    view's; one stage without a pipeline), the mean over its ranks of the
    model FLOPs per step the recorded shapes tell (Summary.flops: forward + twice the forward for the
    backward, docs/flops.md), of the step time and of the rank's MFU = its FLOPs per step / (its step
    time × its peak). Nothing when no rank's trace records shapes; needs no --params."""
    if not any(r.flops_per_step > 0 for r in ranks):
        return
    by: Dict[int, List[MfuRank]] = {}
    for r in ranks:
        by.setdefault(r.stage, []).append(r)
    for stage in sorted(by):
        rows = by[stage]
        fl, st, pk, m = [], [], [], []
        for r in rows:
            times = r.step_times
            step = sum(times) / len(times) if times else 0.0
            if peak_tflops:
                peak = float(peak_tflops) * 1e12
            else:
                peak = peak_of(r.device_name)[0] if r.gpu else 0.0
            f = r.flops_per_step
            fl.append(f)
            st.append(step)
            pk.append(peak)
            m.append(f / (step * 1e-9 * peak) if step and peak else 0.0)
        out.stages.add(
            stage=stage,
            ranks=[r.rank for r in rows],
            flops_per_step=sum(fl) / len(fl),
            step_time_ns=int(round(sum(st) / len(st))),
            peak_flops=sum(pk) / len(pk),
            mfu=sum(m) / len(m) if all(pk) else 0.0,
        )


def mfu(
    ranks: Sequence,
    topo=None,
    params: Optional[float] = None,
    tokens_per_step: Optional[float] = None,
    model_config: Optional[str] = None,
    peak_tflops: Optional[float] = None,
) -> spb.Mfu:
    """The Mfu of the run's ranks (crossrank RankData, in rank order). ``topo``: its Topology (its
    pipeline stages; the data-parallel degree for a config with a per-device batch)."""
    return mfu_of(mfu_inputs(ranks, topo), params, tokens_per_step, model_config, peak_tflops)


def mfu_of(
    inputs: MfuInputs,
    params: Optional[float] = None,
    tokens_per_step: Optional[float] = None,
    model_config: Optional[str] = None,
    peak_tflops: Optional[float] = None,
) -> spb.Mfu:
    """The Mfu of the ranks' facts ``inputs`` (mfu_inputs) with the user's MFU inputs."""
    ranks = inputs.ranks
    out = spb.Mfu()
    out.assumptions.extend(
        [
            "6 · N · tokens counts the matrix multiplications of the forward (2·N per token) and the backward (4·N); "
            "attention's quadratic term and recomputed forwards are not counted (model FLOPs, not hardware FLOPs).",
            "Every rank does an equal share of the model FLOPs, 6 · N · tokens / world size: data parallelism splits "
            "the tokens, tensor and pipeline parallelism split the layers evenly.",
            "tokens per step is the global batch: every data-parallel replica's micro-batches together.",
            "The job's step time is the mean over ranks and steps of the ProfileStep durations; one GPU per rank.",
        ]
    )
    out.formulas.append("MFU = 6 · N · tokens per step / (step time × Σ peak FLOP/s of the job's GPUs)")
    n, tok = 0.0, 0.0
    if model_config:
        n, tok, formulas = model_from_config(model_config, inputs.dp)
        out.formulas.extend(formulas)
        name = os.path.basename(model_config)
        if n:
            out.params_source = f"model config {name}"
        if tok:
            out.tokens_source = f"model config {name}"
    if params:
        n, out.params_source = float(params), "--params"
    if tokens_per_step:
        tok, out.tokens_source = float(tokens_per_step), "--tokens-per-step"
    out.params, out.tokens_per_step = n, tok
    stage_mfu(ranks, peak_tflops, out)
    if not n or not tok:
        lack = [
            w
            for w, v in (("the parameter count (--params)", n), ("the tokens per step (--tokens-per-step)", tok))
            if not v
        ]
        out.why_not = (
            "MFU needs " + " and ".join(lack) + ", or a model config (--model-config FILE.yaml) that gives them."
        )
        return out
    if not ranks:
        out.why_not = "No ranks."
        return out
    if not any(r.gpu for r in ranks):
        out.why_not = "A CPU trace (no GPU events): MFU is not applicable."
        return out
    times = [t for r in ranks for t in r.step_times]
    if not times:
        out.why_not = "The traces have no ProfileStep: no step time to divide by."
        return out
    world = len(ranks)
    out.devices = world
    out.step_time_ns = int(round(sum(times) / len(times)))
    out.model_flops_per_step = 6.0 * n * tok
    out.achieved_flops = out.model_flops_per_step / (out.step_time_ns * 1e-9) if out.step_time_ns else 0.0
    share = out.model_flops_per_step / world
    names: Dict[str, int] = {}
    total_peak = 0.0
    unknown: List[str] = []
    for r in ranks:
        name = r.device_name
        if peak_tflops:
            peak, what = float(peak_tflops) * 1e12, "--peak-tflops"
        else:
            peak, what = peak_of(name)
        if not peak:
            unknown.append(name or f"rank {r.rank} (no GPU)")
        total_peak += peak
        names[name] = names.get(name, 0) + 1
        st = r.step_times
        step = int(round(sum(st) / len(st))) if st else 0
        m = out.ranks.add(rank=r.rank, device_name=name, peak_flops=peak, step_time_ns=step, flops_per_step=share)
        m.mfu = share / (step * 1e-9 * peak) if step and peak else 0.0
        if what:
            out.peak_source = what if not out.peak_source or out.peak_source == what else "several devices"
    out.device_name = max(names, key=names.__getitem__) if names else ""
    out.peak_flops_per_device = total_peak / world
    if unknown:
        uniq = sorted(set(unknown))
        more = " …" if len(uniq) > 3 else ""
        out.why_not = (
            f"Unknown device {', '.join(repr(u) for u in uniq[:3])}{more}: its peak FLOP/s is not in the "
            "table; give --peak-tflops."
        )
        return out
    if peak_tflops:
        out.peak_source = f"--peak-tflops {float(peak_tflops):g}"
    out.applicable = True
    out.mfu = out.achieved_flops / total_peak
    return out
