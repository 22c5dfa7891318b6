"""MFU (analysis/mfu.py) against the formula computed here from the generator's config and its planted step
times, model configs against published parameter counts, the peak table, and the cases it does not apply to."""

import json

import numpy as np
import pytest

from tb_paddle_profile.analysis.crossrank.replay import prepare
from tb_paddle_profile.analysis.mfu import mfu, model_from_config, peak_of
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.present.display.schedule import mfu_tables, schedule_sentences
from tb_paddle_profile.analysis.summarize import summarize_file
from tbp_synth.generator import SynthConfig, generate
from tbp_synth.truth import load_truth

CFG = dict(dp=2, mp=1, pp=2, layers=2, micro_batches=2, steps=2, hidden=1024, heads=8, seq_len=512, vocab=512)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("mfu") / "run"
    generate(SynthConfig(**CFG), str(out))
    prep = prepare([summarize_file(str(f)) for f in sorted(out.glob("*.paddle_trace.json"))])
    return prep, load_truth(str(out))


def _gpt_params(c):
    """The generator's GPT: per decoder layer q, k, v, out (4·h²) and the MLP h → 4h → h (8·h²), plus the
    output head V·h (tbp_synth/generator.py's GEMMs: 2·m·n·k FLOPs each, 2·N per token forward)."""
    h = c["hidden"]
    return c["layers"] * 12 * h * h + c["vocab"] * h


def test_mfu_of_a_generated_run(run):
    prep, t = run
    n = _gpt_params(CFG)
    tokens = CFG["dp"] * CFG["micro_batches"] * CFG["seq_len"]  # micro_batch_size 1
    m = mfu(prep.ranks, prep.topo, params=n, tokens_per_step=tokens)
    assert m.applicable, m.why_not
    world = CFG["dp"] * CFG["mp"] * CFG["pp"]
    step = float(np.mean(t.step_time_ns))  # the job's: mean over ranks and steps
    peak = 989e12  # the generator's GPU: "NVIDIA H100 80GB HBM3" (SXM, BF16 dense)
    assert m.device_name == "NVIDIA H100 80GB HBM3" and m.peak_flops_per_device == peak
    assert m.devices == world
    assert m.step_time_ns == pytest.approx(step, abs=1)
    assert m.model_flops_per_step == 6 * n * tokens
    assert m.mfu == pytest.approx(6 * n * tokens / (step * 1e-9 * world * peak), rel=1e-6)
    assert len(m.ranks) == world
    for r in m.ranks:
        own = float(np.mean(t.step_time_ns[r.rank]))
        assert r.step_time_ns == pytest.approx(own, abs=1)
        assert r.mfu == pytest.approx(6 * n * tokens / world / (own * 1e-9 * peak), rel=1e-6)
    # displayed: the job's table and sentence
    (job, ranks) = mfu_tables(m)
    assert job.rows[0].cells[0].number == pytest.approx(m.mfu)
    assert len(ranks.rows) == world
    text = sentence_text(schedule_sentences(None, m)[0])
    assert text.startswith("MFU %.1f%%" % (100 * m.mfu)), text
    # --peak-tflops overrides the table
    half = mfu(prep.ranks, prep.topo, params=n, tokens_per_step=tokens, peak_tflops=989 / 2)
    assert half.mfu == pytest.approx(2 * m.mfu, rel=1e-9)
    assert half.peak_source == "--peak-tflops 494.5"


def test_model_config_gives_n_and_tokens(run, tmp_path):
    prep, t = run
    # the generator's model as a PaddleNLP-style YAML (GPT: plain MLP, intermediate 4h)
    y = tmp_path / "gpt.yaml"
    y.write_text(f"""
model_type: gpt
num_hidden_layers: {CFG["layers"]}
hidden_size: {CFG["hidden"]}
num_attention_heads: {CFG["heads"]}
intermediate_size: {4 * CFG["hidden"]}
vocab_size: {CFG["vocab"]}
hidden_act: gelu
max_seq_length: {CFG["seq_len"]}
global_batch_size: {CFG["dp"] * CFG["micro_batches"]}
""")
    n, tokens, formulas = model_from_config(str(y))
    assert n == _gpt_params(CFG)
    assert tokens == CFG["dp"] * CFG["micro_batches"] * CFG["seq_len"]
    assert len(formulas) == 2
    m = mfu(prep.ranks, prep.topo, model_config=str(y))
    ref = mfu(prep.ranks, prep.topo, params=n, tokens_per_step=tokens)
    assert m.applicable and m.mfu == ref.mfu
    assert m.params_source == "model config gpt.yaml"
    # a flag beside the config wins
    assert mfu(prep.ranks, prep.topo, model_config=str(y), params=2 * n).mfu == pytest.approx(2 * ref.mfu)
    # a per-device batch: times gradient accumulation and the topology's data-parallel degree
    y2 = tmp_path / "per_device.yaml"
    y2.write_text(
        y.read_text().replace(
            f"global_batch_size: {CFG['dp'] * CFG['micro_batches']}",
            f"per_device_train_batch_size: 1\ngradient_accumulation_steps: {CFG['micro_batches']}",
        )
    )
    assert mfu(prep.ranks, prep.topo, model_config=str(y2)).tokens_per_step == tokens


def test_llama2_7b_config(tmp_path):
    # Llama-2-7b's config.json (Hugging Face / PaddleNLP): 6,738,415,616 parameters, of which the input
    # embedding (32000 × 4096) and the RMSNorm weights (65 × 4096) do no matrix multiplication
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        "seq_length": 4096,
        "global_batch_size": 512,
    }
    p = tmp_path / "llama2-7b.json"
    p.write_text(json.dumps(cfg))
    n, tokens, _ = model_from_config(str(p))
    assert n == 6_738_415_616 - 32000 * 4096 - 65 * 4096
    assert tokens == 512 * 4096
    # grouped-query attention (Llama-2-70b: 8 key/value heads for its 64 query heads): k and v are 8/64 of q
    cfg70 = dict(
        cfg,
        hidden_size=8192,
        intermediate_size=28672,
        num_attention_heads=64,
        num_hidden_layers=80,
        num_key_value_heads=8,
    )
    p.write_text(json.dumps(cfg70))
    n70, _, _ = model_from_config(str(p))
    # 68,976,648,192 parameters in all (its model card's 70B), less the input embedding and 161 norms
    assert n70 == 68_976_648_192 - 32000 * 8192 - 161 * 8192


@pytest.mark.parametrize(
    "name,tflops",
    [
        ("NVIDIA H100 80GB HBM3", 989),
        ("NVIDIA H100 PCIe", 756),
        ("NVIDIA H100 NVL", 835),
        ("NVIDIA H800", 989),
        ("NVIDIA H20", 148),
        ("NVIDIA H200", 989),
        ("NVIDIA A100-SXM4-80GB", 312),
        ("NVIDIA A100-PCIE-40GB", 312),
        ("NVIDIA A800-SXM4-80GB", 312),
        ("Tesla V100-SXM2-32GB", 125),
        ("Tesla V100-PCIE-16GB", 112),
        ("NVIDIA L40S", 362),
        ("NVIDIA L40", 181),
        ("NVIDIA GeForce RTX 4090", 165.2),
        ("NVIDIA A10", 125),
        ("Tesla T4", 65),
        ("NVIDIA L4", 121),
        ("Some Accelerator 9000", 0),
    ],
)
def test_peak_table(name, tflops):
    assert peak_of(name)[0] == pytest.approx(tflops * 1e12)


def test_not_applicable(run, shared_traces, tmp_path):
    prep, _ = run
    m = mfu(prep.ranks, prep.topo)
    assert not m.applicable and "--params" in m.why_not and "--tokens-per-step" in m.why_not
    assert "MFU: not computed" in sentence_text(schedule_sentences(None, m)[0])
    assert mfu_tables(m) == []
    # an unknown device: say so, and --peak-tflops makes it computable
    for r in prep.ranks:
        for d in r.digest.meta.devices:
            d.name = "Some Accelerator 9000"
    try:
        m = mfu(prep.ranks, prep.topo, params=1e9, tokens_per_step=1e4)
        assert not m.applicable and "Unknown device 'Some Accelerator 9000'" in m.why_not
        assert mfu(prep.ranks, prep.topo, params=1e9, tokens_per_step=1e4, peak_tflops=100).applicable
    finally:
        for r in prep.ranks:
            for d in r.digest.meta.devices:
                d.name = "NVIDIA H100 80GB HBM3"
    # real CPU traces (Paddle on CPU, gloo): not applicable, no crash
    for folder in ("cpu-gpt-single", "cpu-gpt-2rank-gloo"):
        files = sorted((shared_traces / folder).glob("*.paddle_trace.json"))
        cpu = prepare([summarize_file(str(f)) for f in files])
        m = mfu(cpu.ranks, cpu.topo, params=1e6, tokens_per_step=1e3)
        assert not m.applicable and "CPU trace" in m.why_not


def test_bad_configs(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("hidden_size: [1, 2\n")
    with pytest.raises(ValueError, match=r"bad\.yaml: not valid YAML"):
        model_from_config(str(bad))
    bad.write_text("num_hidden_layers: many\nhidden_size: 8\nvocab_size: 8\n")
    with pytest.raises(ValueError, match=r"bad\.yaml: num_hidden_layers must be a number"):
        model_from_config(str(bad))
    with pytest.raises(ValueError, match=r"missing\.yaml: cannot read"):
        model_from_config(str(tmp_path / "missing.yaml"))
    j = tmp_path / "bad.json"
    j.write_text("{")
    with pytest.raises(ValueError, match=r"bad\.json: not valid JSON"):
        model_from_config(str(j))
    # keys it does not know: nothing, said by mfu()
    j.write_text('{"foo": 1}')
    assert model_from_config(str(j)) == (0.0, 0.0, [])
