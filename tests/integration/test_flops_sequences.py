"""FLOPs per operator, layer and stage, and sequence imbalance across DP ranks (issue 30.3, 30.5).

A generated run records its operators' input shapes (record_shapes) and gives its two data-parallel
replicas different sequence lengths (dp_seq_lens); every figure is checked against what the generator
planted (synth_truth.json's "shapes": tokens, forward FLOPs of every rank, the cost of the imbalance from
a control run with every replica at the mean length) or recomputed from the trace JSON. The real Paddle
traces (CPU runs: no shapes, or a few on ops without a formula) give empty views and a reason, never a
crash.
"""

import csv
import gzip
import io
import json
import math
import statistics
from pathlib import Path

import pytest

from support.paths import EXTRA_TRACES, SHARED_TRACES
from support.grid import take_the_grid_away
from tb_paddle_profile.analysis import flops as F
from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank.whatif import analyze_whatif
from tb_paddle_profile.analysis.mfu import peak_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.display.summary import summary_display
from tb_paddle_profile.v1 import whatif_pb2 as wpb
from tbp_synth import SynthConfig, generate
from tbp_synth.model import DeviceProps
from tbp_synth.truth import load_truth

SEQ = (2048, 1024)


def _run(tmp_path_factory, name, seq):
    out = tmp_path_factory.mktemp(name)
    generate(
        SynthConfig(dp=2, mp=2, pp=2, layers=2, micro_batches=2, steps=2, record_shapes=True, dp_seq_lens=seq), str(out)
    )
    truth = load_truth(str(out))
    files = sorted(out.glob("*.paddle_trace.json"))
    by_rank = {int(p.name.split("_")[0][4:]): p for p in files}
    summaries = {r: summarize_file(str(p)) for r, p in by_rank.items()}
    return out, truth, by_rank, summaries


@pytest.fixture(scope="module")
def uneven(tmp_path_factory):
    return _run(tmp_path_factory, "uneven", SEQ)


@pytest.fixture(scope="module")
def even(tmp_path_factory):
    return _run(tmp_path_factory, "even", (1536, 1536))


def _shape_truth(truth):
    return {r["rank"]: r for r in truth.meta["shapes"]["ranks"]}


def test_forward_flops_per_step_and_per_layer_are_the_planted_ones(uneven):
    _, truth, _, summaries = uneven
    st = _shape_truth(truth)
    mb = truth.meta["shapes"]["micro_batches"]
    for r, s in summaries.items():
        t = st[r]
        assert s.flops.steps == len(truth.steps)
        assert s.flops.forward_flops_per_step == t["forward_flops_per_step"]
        assert s.flops.model_flops_per_step == 3 * t["forward_flops_per_step"]
        layers = {(x.name, x.ordinal): x.flops / s.flops.steps for x in s.flops.layers}
        decoder = {k: v for k, v in layers.items() if k[0] == "GPTDecoderLayer"}
        assert len(decoder) == t["decoder_layers"]
        assert all(v == t["layer_forward_flops"] * mb for v in decoder.values())
        head = layers.get(("GPTLMHead", 0), 0.0)
        assert head == t["head_forward_flops"] * mb
        assert sum(layers.values()) == t["forward_flops_per_step"]


def _check_layer_times(truth, summaries):
    """Each layer's kernels, kernel time and communication kernel time are those the generator credited to
    it while recording (synth_truth.json "shapes" → ranks → layer_kernels); TFLOP/s and MFU follow."""
    st = _shape_truth(truth)
    for r, s in summaries.items():
        planted = {(x["name"], x["ordinal"]): x for x in st[r]["layer_kernels"]}
        assert s.flops.layers
        device = summaries[r].meta.devices[0].name
        assert s.flops.device_name == device and s.flops.peak_flops == peak_of(device)[0] > 0
        for x in s.flops.layers:
            want = planted[(x.name, x.ordinal)]
            assert (x.kernels, x.kernel_ns, x.comm_kernel_ns) == (
                want["kernels"],
                want["kernel_ns"],
                want["comm_kernel_ns"],
            ), (r, x.name, x.ordinal)
            assert x.kernel_ns > 0
            assert x.achieved_flops == pytest.approx(x.flops / (want["kernel_ns"] * 1e-9), rel=1e-12)
            assert x.mfu == pytest.approx(x.achieved_flops / s.flops.peak_flops, rel=1e-12)


def test_forward_kernel_time_per_layer_is_the_planted_one(uneven):
    _, truth, _, summaries = uneven
    _check_layer_times(truth, summaries)
    # the MP all-reduces of the tensor-parallel layers are their communication kernels
    assert all(x.comm_kernel_ns > 0 for s in summaries.values() for x in s.flops.layers if x.name == "GPTDecoderLayer")


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    generate(SynthConfig(dp=1, mp=1, pp=1, layers=3, micro_batches=2, steps=2, record_shapes=True), str(out))
    path = next(out.glob("*.paddle_trace.json"))
    return out, load_truth(str(out)), path, summarize_file(str(path))


def test_layer_time_of_a_single_gpu_run_with_several_layers(single):
    _, truth, _, s = single
    _check_layer_times(truth, {0: s})
    assert sorted(x.ordinal for x in s.flops.layers if x.name == "GPTDecoderLayer") == [0, 1, 2]
    table = next(t for v in summary_display(s).views for t in v.tables if t.key == "flops_layers")
    keys = [c.key for c in table.columns]
    assert keys[-5:] == ["kernels", "kernel_ns", "comm_kernel_ns", "tflops", "mfu"]
    for row, x in zip(table.rows, s.flops.layers):
        cell = dict(zip(keys, row.cells))
        assert cell["kernel_ns"].number == x.kernel_ns
        assert cell["tflops"].number == pytest.approx(x.flops / x.kernel_ns * 1e9 / 1e12)
        assert cell["mfu"].number == x.mfu


def _without_kernels(path: Path, tmp_path: Path):
    """The Summary of the trace at ``path`` without its Kernel events."""
    doc = json.loads(path.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") != "Kernel"]
    bare = tmp_path / path.name
    bare.write_text(json.dumps(doc))
    return summarize_file(str(bare))


def test_layers_without_kernels_have_no_time(single, tmp_path):
    """The same trace without its Kernel events: FLOPs per layer stay, time, TFLOP/s and MFU are absent."""
    _, _, path, s = single
    b = _without_kernels(path, tmp_path)
    assert [(x.name, x.ordinal, x.flops) for x in b.flops.layers] == [
        (x.name, x.ordinal, x.flops) for x in s.flops.layers
    ]
    assert all(
        x.kernels == x.kernel_ns == x.comm_kernel_ns == 0 and x.achieved_flops == x.mfu == 0 for x in b.flops.layers
    )
    assert b.flops.peak_flops == 0 and not b.flops.device_name
    table = next(t for v in summary_display(b).views for t in v.tables if t.key == "flops_layers")
    assert not {"kernel_ns", "tflops", "mfu"} & {c.key for c in table.columns}


def _check_stage_layers(truth, rp):
    """RunParallel.layers against the planted truth: per pipeline stage, each layer's median (over the stage's
    ranks) of the forward kernel time the generator credited to it per step, the fastest, the slowest rank and
    its time, the median FLOPs; TFLOP/s and MFU follow."""
    st = _shape_truth(truth)
    steps = len(truth.steps)
    mb = truth.meta["shapes"]["micro_batches"]
    assert rp.layers.present and not rp.layers.why_not
    stage_of = {x["rank"]: x["pp"] for x in truth.ranks}
    by_stage = {}
    for x in rp.layers.layers:
        by_stage.setdefault(x.stage, []).append(x)
    assert sorted(by_stage) == list(range(truth.config["pp"]))
    for stage, rows in by_stage.items():
        ranks = sorted(r for r, p in stage_of.items() if p == stage)
        t0 = st[ranks[0]]
        want_keys = [("GPTDecoderLayer", i) for i in range(t0["decoder_layers"])]
        if t0["head_forward_flops"]:
            want_keys.append(("GPTLMHead", 0))
        assert [(x.name, x.ordinal) for x in rows] == want_keys
        for x in rows:
            assert list(x.ranks) == ranks
            planted = {
                r: next(k for k in st[r]["layer_kernels"] if (k["name"], k["ordinal"]) == (x.name, x.ordinal))
                for r in ranks
            }
            times = {r: k["kernel_ns"] / steps for r, k in planted.items()}
            flops = {
                r: mb * (st[r]["layer_forward_flops"] if x.name == "GPTDecoderLayer" else st[r]["head_forward_flops"])
                for r in ranks
            }
            slowest = max(ranks, key=lambda r: (times[r], -r))
            assert x.slowest_rank == slowest, (stage, x.name, x.ordinal)
            assert x.slowest_kernel_ns == round(times[slowest])
            assert x.median_kernel_ns == round(statistics.median(times.values()))
            assert x.min_kernel_ns == round(min(times.values()))
            assert x.median_comm_kernel_ns == round(
                statistics.median(k["comm_kernel_ns"] / steps for k in planted.values())
            )
            assert x.flops == pytest.approx(statistics.median(flops.values()), rel=1e-12)
            assert x.achieved_flops == pytest.approx(x.flops / (statistics.median(times.values()) * 1e-9), rel=1e-9)
            assert x.slowest_achieved_flops == pytest.approx(flops[slowest] / (times[slowest] * 1e-9), rel=1e-9)
            assert x.mfu == pytest.approx(x.achieved_flops / peak_of(DeviceProps(0).name)[0], rel=1e-9)  # planted GPU
    return by_stage


def test_time_per_layer_across_ranks_is_the_planted_one(uneven):
    _, truth, _, summaries = uneven
    _check_stage_layers(truth, analyze_run(list(summaries.values())))


@pytest.fixture(scope="module")
def slow_gpu(tmp_path_factory):
    """DP2 x MP2 x PP2, 4 layers (2 a stage), with rank 5 (stage 0) planted 1.5x slower on its compute kernels."""
    out = tmp_path_factory.mktemp("slow_gpu")
    generate(
        SynthConfig(
            dp=2, mp=2, pp=2, layers=4, micro_batches=2, steps=2, record_shapes=True, slow_rank=5, slow_factor=1.5
        ),
        str(out),
    )
    truth = load_truth(str(out))
    return out, truth, [summarize_file(str(p)) for p in sorted(out.glob("*.paddle_trace.json"))]


def test_a_planted_slow_gpu_is_the_slowest_rank_of_its_stage_layers(slow_gpu):
    out, truth, summaries = slow_gpu
    assert next(x["pp"] for x in truth.ranks if x["rank"] == 5) == 0
    by_stage = _check_stage_layers(truth, analyze_run(summaries))
    assert len(by_stage[0]) == 2 and all(x.slowest_rank == 5 for x in by_stage[0])
    # its layers take the planted factor longer than the stage's median (the kernels' noise aside)
    assert all(1.4 < x.slowest_kernel_ns / x.median_kernel_ns < 1.6 for x in by_stage[0])
    assert all(x.slowest_kernel_ns / x.median_kernel_ns < 1.1 for x in by_stage[1])
    # the parallel view's table, its CSV and the API's frame name it as the truth does
    import subprocess
    import sys
    from tb_paddle_profile import api as tbp

    got = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "parallel", str(out), "--no-cache", "--table", "stage_layers"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = list(csv.DictReader(io.StringIO(got)))
    assert [(r["stage"], r["layer"], r["ordinal"], r["slowest_rank"]) for r in rows] == [
        (str(x.stage), x.name, str(x.ordinal), str(x.slowest_rank)) for s in sorted(by_stage) for x in by_stage[s]
    ]
    assert all(r["slowest_rank"] == "5" for r in rows if r["stage"] == "0")
    frame = tbp.load_run(str(out), cache=False).layers
    slow = frame[frame["stage"] == 0]
    assert list(slow["slowest_rank"]) == [5, 5]
    assert list(slow["slowest_ns"]) == [x.slowest_kernel_ns for x in by_stage[0]]


def test_time_per_layer_across_ranks_without_kernels_or_shapes(single, tmp_path):
    """A trace with shapes but no kernels, and one without shapes: no table, and the reason."""
    _, _, path, s = single
    rp = analyze_run([_without_kernels(path, tmp_path)])
    assert not rp.layers.present and not rp.layers.layers and "no kernels" in rp.layers.why_not
    assert "stage_layers" not in {t.key for v in parallel_display(rp).views for t in v.tables}
    rp = analyze_run([s])
    assert rp.layers.present and [x.stage for x in rp.layers.layers] == [-1] * len(s.flops.layers)


def test_gemm_flops_against_the_shapes_in_the_json(uneven):
    """Each matmul's x [b, s, k] · y [k, n] (or the attention's batched [b, h, s, d] pairs) from the JSON."""
    _, _, by_rank, summaries = uneven
    doc = json.loads(by_rank[2].read_text())
    total, calls = 0, 0
    for e in doc["traceEvents"]:
        if e.get("cat") != "Operator" or e["name"].split("[")[0] != "matmul dygraph":
            continue
        x, y = e["args"]["input_shapes"]["x"][0], e["args"]["input_shapes"]["y"][0]
        k = x[-1]
        n = y[-1] if y[-2] == k else y[-2]
        total += 2 * math.prod(x[:-1]) * k * n
        calls += 1
    op = {o.name: o for o in summaries[2].flops.operators}["matmul"]
    assert (op.calls, op.unresolved, op.flops) == (calls, 0, total)


def test_tokens_per_micro_batch_are_the_planted_sequence_lengths(uneven):
    _, truth, _, summaries = uneven
    st = _shape_truth(truth)
    mb = truth.meta["shapes"]["micro_batches"]
    for r, s in summaries.items():
        sq = s.sequences
        assert len(sq.tokens) == mb * len(truth.steps)
        assert set(sq.tokens) == {st[r]["tokens_per_micro_batch"]}
        assert sorted(set(sq.micro_batch)) == list(range(mb))
        # the first stage reads them from the embedding's ids, the others from the first GEMM
        assert list(sq.names) == (["c_embedding"] if truth.ranks[r]["pp"] == 0 else ["matmul"])


def test_sequence_imbalance_across_dp_replicas_with_its_cost(uneven):
    _, truth, _, summaries = uneven
    st = _shape_truth(truth)
    rp = analyze_run(list(summaries.values()))
    sb = rp.sequences
    assert sb.present
    per_dp = {}
    for t in st.values():
        per_dp.setdefault(t["dp"], set()).add(t["tokens_per_step"])
    assert {r.dp: r.tokens_per_step for r in sb.replicas} == {d: v.pop() for d, v in per_dp.items()}
    assert {r.dp: sorted(r.ranks) for r in sb.replicas} == {
        d: sorted(x["rank"] for x in truth.ranks if x["dp"] == d) for d in per_dp
    }
    assert sb.spread == pytest.approx(max(SEQ) / min(SEQ) - 1)
    assert sb.method == "replay"
    cost = truth.meta["shapes"]["imbalance_cost_ns_per_step"]
    assert cost > 0
    assert sb.cost_ns == pytest.approx(cost, rel=0.25)
    found = [f for f in rp.findings if f.rule == "sequence_imbalance"]
    assert len(found) == 1 and found[0].cost_ns == sb.cost_ns
    longest = max(SEQ)
    assert sorted(found[0].ranks) == sorted(x["rank"] for x in truth.ranks if st[x["rank"]]["seq_len"] == longest)
    for m in rp.ranks:
        assert m.tokens_per_step == st[m.rank]["tokens_per_step"]
        assert m.flops_per_step == 3 * st[m.rank]["forward_flops_per_step"]
    # the what-if replays the same change
    w = analyze_whatif(list(summaries.values()))
    x = [x for x in w.what_ifs if x.kind == wpb.WHAT_IF_BALANCED_SEQUENCES]
    assert len(x) == 1 and x[0].applicable and x[0].saving_ns == sb.cost_ns


def test_balanced_sequences_have_no_finding(even):
    _, _, _, summaries = even
    rp = analyze_run(list(summaries.values()))
    assert rp.sequences.present and rp.sequences.spread == 0
    assert abs(rp.sequences.cost_ns) <= 0.01 * rp.sequences.step_ns
    assert not [f for f in rp.findings if f.rule == "sequence_imbalance"]


def test_balanced_sequences_are_not_replayed(even, monkeypatch):
    """Every replica at the mean tokens: nothing to replay (the cost is nil by construction), so the
    sequences ask for no replay and no graph of their own (issue 30: the cross-rank analysis no slower)."""
    from tb_paddle_profile.analysis.crossrank import sequences

    _, _, _, summaries = even
    asked = []
    real = sequences._replay_saving

    def counting(*a, **kw):
        asked.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(sequences, "_replay_saving", counting)
    rp = analyze_run(list(summaries.values()))
    sb = rp.sequences
    assert sb.method == "balanced" and sb.cost_ns == 0 and sb.step_ns == sb.balanced_step_ns > 0
    assert not asked


def test_stage_flops_mfu_per_stage_and_the_stage_imbalance_in_flops(uneven):
    _, truth, _, summaries = uneven
    st = _shape_truth(truth)
    rp = analyze_run(list(summaries.values()))
    for s in rp.pipeline.stages:
        want = [3 * st[r]["forward_flops_per_step"] for r in s.ranks]
        assert s.flops_per_step == pytest.approx(sum(want) / len(want))
    imb = [f for f in rp.findings if f.rule == "stage_imbalance"]
    if imb:
        assert "TFLOP per step" in imb[0].text
    w = analyze_whatif(list(summaries.values()))
    assert len(w.mfu.stages) == truth.config["pp"]
    steps = {r: [x.range.end_ns - x.range.start_ns for x in s.model.steps if x.step >= 0] for r, s in summaries.items()}
    for sm in w.mfu.stages:
        ranks = list(sm.ranks)
        assert sorted(ranks) == sorted(x["rank"] for x in truth.ranks if x["pp"] == sm.stage)
        mine = []
        for r in ranks:
            peak = peak_of(summaries[r].meta.devices[0].name)[0]
            step = sum(steps[r]) / len(steps[r])
            mine.append(3 * st[r]["forward_flops_per_step"] / (step * 1e-9 * peak))
        assert sm.mfu == pytest.approx(sum(mine) / len(mine), rel=1e-6)


def test_mfu_per_stage_without_a_grid_keeps_the_pipelines_stages(uneven, monkeypatch):
    """A run whose DP x PP x MP grid is not inferred still has its pipelines (matched send/recv chains):
    the MFU per stage groups the ranks by them, as the pipeline view does. On the 1,024-rank DP16 x PP8 x
    MP8 run with Paddle's default names (no grid inferred) the What-if view drew one row "stage 0, ranks
    0-1023" under an 8-stage pipeline schedule; here the grid is taken away after its inference."""
    _, truth, _, summaries = uneven
    take_the_grid_away(monkeypatch)
    w = analyze_whatif(list(summaries.values()))
    assert sorted((sm.stage, sorted(sm.ranks)) for sm in w.mfu.stages) == sorted(
        (s, sorted(x["rank"] for x in truth.ranks if x["pp"] == s)) for s in range(truth.config["pp"])
    )


def test_tables_csv_and_frames(uneven, tmp_path):
    from tb_paddle_profile import api as tbp

    out, truth, by_rank, summaries = uneven
    d = summary_display(summaries[0])
    keys = {t.key for v in d.views for t in v.tables}
    assert {"flops_operators", "flops_layers", "sequences"} <= keys
    pd = parallel_display(analyze_run(list(summaries.values())))
    pkeys = {t.key for v in pd.views for t in v.tables}
    assert {"sequences", "rank_flops", "stage_layers"} <= pkeys
    import subprocess
    import sys

    got = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "parallel", str(out), "--no-cache", "--table", "sequences"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = list(csv.DictReader(io.StringIO(got)))
    st = _shape_truth(truth)
    assert {int(r["dp"]): float(r["tokens_per_step"]) for r in rows} == {
        t["dp"]: float(t["tokens_per_step"]) for t in st.values()
    }
    run = tbp.load_run(str(out), cache=False)
    frame = tbp.tidy(run.table("rank_flops"))
    assert dict(zip(frame["rank"], frame["tflop_per_step"])) == pytest.approx(
        {r: 3 * t["forward_flops_per_step"] / 1e12 for r, t in st.items()}
    )


def test_the_formulas_on_shapes():
    assert F.call_flops("gemm", {"X": [[4, 8, 16]], "Y": [[16, 32]]}) == (2.0 * 4 * 8 * 16 * 32, 32, True)
    # transpose_y and transpose_x told by the dimension the shapes share
    assert F.call_flops("gemm", {"x": [[8, 16]], "y": [[32, 16]]})[0] == 2.0 * 8 * 16 * 32
    assert F.call_flops("gemm", {"x": [[16, 8]], "y": [[16, 32]]})[0] == 2.0 * 8 * 16 * 32
    assert F.call_flops("gemm", {"x": [[8, 16]], "y": [[7, 9]]}) == (0.0, 0, False)
    assert F.call_flops("attention", {"q": [[2, 128, 8, 64]], "k": [[2, 256, 8, 64]], "v": [[2, 256, 8, 64]]}) == (
        4.0 * 2 * 8 * 128 * 256 * 64,
        0,
        True,
    )
    assert F.call_flops("embedding", {"x": [[4, 512]], "weight": [[50304, 1024]]}) == (0.0, 2048, True)
    assert F.formula_of("matmul_v2 dygraph") == "gemm" and F.formula_of("flash_attn") == "attention"
    assert F.formula_of("softmax dygraph") == ""


def _real_runs():
    runs = [d for d in (SHARED_TRACES / "cpu-gpt-2rank-gloo", SHARED_TRACES / "cpu-gpt-single")]
    fleet = EXTRA_TRACES / "real-fleet-cpu-gloo"
    if fleet.is_dir():
        runs += sorted(d for d in fleet.iterdir() if d.is_dir())
    return runs


def _shaped_operators(path: Path) -> int:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    return sum(
        1 for e in doc["traceEvents"] if e.get("cat") == "Operator" and len(e.get("args", {}).get("input_shapes") or {})
    )


@pytest.mark.parametrize("run", _real_runs(), ids=lambda d: d.name)
def test_real_paddle_traces_have_no_flops_nor_tokens_and_say_so(run):
    files = sorted(run.glob("*.paddle_trace.json*"))
    assert files
    summaries = []
    for p in files:
        s = summarize_file(str(p))
        # Paddle 3.3.1's dygraph operators record none; a static-graph run's few split ops do (no formula)
        assert s.flops.shaped_operators == _shaped_operators(p)
        assert not s.flops.operators and not s.flops.layers and not len(s.sequences.tokens)
        assert s.flops.peak_flops == 0 and not s.flops.device_name  # no kernels: no time per layer
        keys = {t.key for v in summary_display(s).views for t in v.tables}
        assert not keys & {"flops_operators", "flops_layers", "sequences"}
        summaries.append(s)
    rp = analyze_run(summaries)
    assert not rp.sequences.present and "input shapes" in rp.sequences.why_not
    assert not rp.layers.present and not rp.layers.layers and "input shapes" in rp.layers.why_not
    assert not [f for f in rp.findings if f.rule == "sequence_imbalance"]
    assert all(m.flops_per_step == 0 and m.tokens_per_step == 0 for m in rp.ranks)
    w = analyze_whatif(summaries)
    assert not w.mfu.stages
    x = [x for x in w.what_ifs if x.kind == wpb.WHAT_IF_BALANCED_SEQUENCES]
    assert all(not y.applicable and y.reason for y in x)
