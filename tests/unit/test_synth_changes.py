"""The generator's planted changes (comm_factor, slow_kernel, launch_overhead, leaks) and
pipeline schedules (1F1B, GPipe, interleaved), each checked from the written traces with the
project's reader against the same run without the change, and the schedule truth against the
traces' Forward/Backward events. docs/generator.md describes each."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tb_paddle_profile.trace import event_types as et_types
from tb_paddle_profile.trace.reader import read_trace
from tbp_synth import SynthConfig, generate
from tbp_synth.generator import COMPUTE_STREAM, DP_STREAM, pipeline_order
from tbp_synth.truth import load_truth, simulate_step_time

TINY = dict(hidden=512, heads=8, seq_len=256, vocab=8192)
SMALL = dict(dp=2, mp=2, pp=2, steps=2, layers=2, micro_batches=2, **TINY)
MODEL_EVENTS = ("GPTForCausalLMPipe", "GPTForCausalLM", "PipelineLayerChunk")

# sha256 of the files the generator wrote at commit 0bd295f (before the planted changes and
# schedules existed) for these configs: a default run must still write exactly these bytes.
BASE_CONFIGS = {
    "pp2": dict(dp=2, mp=2, pp=2, layers=2, micro_batches=2, steps=2),
    "pp4": dict(dp=1, mp=1, pp=4, micro_batches=5, steps=2, stage_layers=(2, 1, 1, 1)),
}
BASE_HASHES = {
    "pp2": {
        "rank0_time_2026_11_29_07_18_00_115963.paddle_trace.json": "06acc5e48ca73af377f2ab2193df0f825a85f0fc1096e232b27775894d5b573d",
        "rank1_time_2026_11_29_07_18_00_115915.paddle_trace.json": "1842dbec08ef36b18b5e76e293e185638defe98d8955b8b73056ef8c18d7b68b",
        "rank2_time_2026_11_29_07_18_00_116072.paddle_trace.json": "198b4cd2d6d1a73a50e5aa02d8d547dec7abcdf2758ce58a1788ea3368e9a9df",
        "rank3_time_2026_11_29_07_18_00_116007.paddle_trace.json": "ee229814fb36340961f28dc7213b3ed13e4f67dd639778f6f37dfac9adeeeb69",
        "rank4_time_2026_11_29_07_18_00_115946.paddle_trace.json": "457c973c455f2f22c9b91a9c8986398eab3263277fa5af09d0dc45eaa63ceca1",
        "rank5_time_2026_11_29_07_18_00_115899.paddle_trace.json": "70d557974ffa6118b164714214b638ac855abbe9661cbd94558765d5190d4ae0",
        "rank6_time_2026_11_29_07_18_00_116109.paddle_trace.json": "0da9a4749677a47ef4ac150b99b631a3de487b2bfb60d201f7d8fa4ef164e93b",
        "rank7_time_2026_11_29_07_18_00_116004.paddle_trace.json": "c539510c8e48f6709667fd38242a6fc50cf315b9541d0613f900165c350b1eb9",
        "synth_manifest.json": "51a30c5135cd57b32ce26002994b2ecc427b1f8f158405737fbf8b88702c511c",
    },
    "pp4": {
        "rank0_time_2026_11_29_07_18_00_339217.paddle_trace.json": "e84deda66d51b87b83fb1ce0ec130ebf5ceff1d1ebe06b1dfb0743f872953164",
        "rank1_time_2026_11_29_07_18_00_335125.paddle_trace.json": "ed8fb01caf346190d7f300bfd75fedf79115344615e2864aef5d538b849bfa79",
        "rank2_time_2026_11_29_07_18_00_335106.paddle_trace.json": "84fd85bfa229200c66f48bafced1edf73616667dcbf316242dc51c9d57102955",
        "rank3_time_2026_11_29_07_18_00_335967.paddle_trace.json": "85b0a7bc681b0f3414fe8bb028547d20f1eac6d05b8e9117ee8440bf66746343",
        "synth_manifest.json": "e89e1b3355ae0b930589e3b4b22a0c3a4ad504aad86df2193816b26459bd1ce9",
    },
}
NEUTRAL = dict(
    comm_factor={"dp": 1.0, "mp": 1},
    slow_kernel=None,
    launch_overhead=1.0,
    leak_bytes_per_step=0,
    fragment_bytes_per_step=0,
    schedule="1f1b",
    virtual_stages=1,
)


def _hashes(directory):
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(directory).iterdir())
        if p.name.endswith(".paddle_trace.json") or p.name == "synth_manifest.json"
    }


@pytest.mark.parametrize("name", sorted(BASE_CONFIGS))
@pytest.mark.parametrize("explicit", [False, True], ids=["defaults", "explicit-neutral"])
def test_default_and_neutral_runs_write_the_bytes_they_wrote_before(tmp_path, name, explicit):
    cfg = SynthConfig(**BASE_CONFIGS[name], **(NEUTRAL if explicit else {}))
    generate(cfg, str(tmp_path))
    assert _hashes(tmp_path) == BASE_HASHES[name]


# ----------------------------------------------------------------------------- helpers


def _run(tmp_path_factory, name, **changes):
    out = tmp_path_factory.mktemp(name)
    cfg = SynthConfig(**dict(SMALL, **changes))
    res = generate(cfg, str(out), jobs=2)
    return res, load_truth(str(out)), {r: read_trace(Path(p).read_bytes(), Path(p).name) for r, p in res.traces.items()}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return _run(tmp_path_factory, "base")


def _kernels(et, stream=None):
    """{kernel name: durations in file order} (optionally of one stream)."""
    d = et.device
    out = {}
    for i in np.flatnonzero(d.type == et_types.KERNEL):
        if stream is None or d.stream[i] == stream:
            out.setdefault(et.names[d.name[i]], []).append(int(d.end[i] - d.start[i]))
    return {k: np.array(v) for k, v in out.items()}


# ----------------------------------------------------------------------------- comm_factor


@pytest.mark.parametrize("factor", [0.0, 2.0])
def test_comm_factor_scales_the_dp_all_reduce_transfer(tmp_path_factory, base, factor):
    res, truth, traces = _run(tmp_path_factory, "dp%g" % factor, comm_factor={"dp": factor})
    _, btruth, btraces = base
    dp = btruth.axis_names.index("dp")
    assert truth.n_instances == btruth.n_instances  # the same collectives, in the same order
    x = truth.columns["inst_transfer_ns"]
    bx = btruth.columns["inst_transfer_ns"]
    on = truth.columns["inst_axis"] == dp
    assert on.any()
    assert np.array_equal(x[on], np.round(bx[on] * factor).astype(np.int64))
    assert np.array_equal(x[~on], bx[~on])  # the other axes keep their transfers
    # In the traces: each DP all-reduce kernel lasts its wait plus the transfer, so the
    # member that arrived last (no wait) shows the transfer alone.
    for r, et in traces.items():
        m = truth.members_of(r)
        sel = m["axis"] == dp
        durs = _kernels(et, DP_STREAM)
        ((name, got),) = durs.items()
        assert "AllReduce_Sum_bf16_RING_LL128" in name
        assert np.array_equal(got, m["wait_ns"][sel] + m["transfer_ns"][sel])
        bgot = next(iter(_kernels(btraces[r], DP_STREAM).values()))
        bm = btruth.members_of(r)
        bsel = bm["axis"] == dp
        # the transfer part (duration - wait) scales by the factor, kernel by kernel
        assert np.array_equal(got - m["wait_ns"][sel], np.round((bgot - bm["wait_ns"][bsel]) * factor).astype(np.int64))
    (change,) = truth.changes
    assert change["type"] == "comm_factor" and change["axis"] == "dp"
    assert change["factor"] == factor
    assert (change["job_cost_ns_per_step"] < 0) == (factor < 1)
    assert change["job_cost_ns_per_step"] == pytest.approx(truth.job_step_ns - btruth.job_step_ns)


def test_cli_flags_of_the_changes_and_schedules(tmp_path):
    from tbp_synth.__main__ import main as synth_main

    small = [
        "--dp",
        "2",
        "--mp",
        "1",
        "--pp",
        "2",
        "--steps",
        "1",
        "--layers",
        "4",
        "--micro-batches",
        "2",
        "--hidden",
        "512",
        "--heads",
        "8",
        "--seq-len",
        "256",
        "--quiet",
        "--jobs",
        "1",
        "--ranks",
        "",
    ]
    synth_main(
        ["--out", str(tmp_path / "a")]
        + small
        + [
            "--comm-factor",
            "dp=0,pp=1.5",
            "--slow-kernel",
            "LayerNormForward=2,Softmax=3",
            "--launch-overhead",
            "0.5",
            "--leak-bytes-per-step",
            "1024",
            "--fragment-bytes-per-step",
            "2048",
        ]
    )
    t = load_truth(str(tmp_path / "a"))
    assert t.config["comm_factor"] == {"dp": 0.0, "pp": 1.5}
    assert t.config["slow_kernel"] == {"LayerNormForward": 2.0, "Softmax": 3.0}
    assert sorted((c["type"], c.get("axis", c.get("substring"))) for c in t.changes) == [
        ("comm_factor", "dp"),
        ("comm_factor", "pp"),
        ("fragment", None),
        ("launch_overhead", None),
        ("leak", None),
        ("slow_kernel", "LayerNormForward"),
        ("slow_kernel", "Softmax"),
    ]
    dp = t.axis_names.index("dp")
    assert set(t.columns["inst_transfer_ns"][t.columns["inst_axis"] == dp].tolist()) == {0}
    synth_main(["--out", str(tmp_path / "b")] + small + ["--schedule", "interleaved", "--virtual-stages", "2"])
    t = load_truth(str(tmp_path / "b"))
    assert (t.schedule_name, t.virtual_stages, t.changes) == ("interleaved", 2, [])
    assert len(t.schedule(0, t.steps[0])) == 2 * 2 * 2
    with pytest.raises(SystemExit):  # a one-line argparse error
        synth_main(["--out", str(tmp_path / "c")] + small + ["--virtual-stages", "2"])
    with pytest.raises(ValueError, match="unknown axis 'tp'"):
        SynthConfig(comm_factor={"tp": 2}).validate()
    with pytest.raises(ValueError, match="NAME=FACTOR"):
        SynthConfig(comm_factor="dp").validate()
    with pytest.raises(ValueError, match="must not be negative"):
        SynthConfig(comm_factor={"dp": -1}).validate()


# ----------------------------------------------------------------------------- slow_kernel


def test_slow_kernel_lengthens_that_kernel_only(tmp_path_factory, base):
    res, truth, traces = _run(tmp_path_factory, "slowk", slow_kernel={"LayerNormForward": 2.5})
    _, _, btraces = base
    for r, et in traces.items():
        got, want = _kernels(et, COMPUTE_STREAM), _kernels(btraces[r], COMPUTE_STREAM)
        assert got.keys() == want.keys()
        slowed = [k for k in got if "LayerNormForward" in k]
        assert len(slowed) == 1
        for k in got:
            if k in slowed:
                # each instance F times its duration in the run without the change (to the
                # nanosecond each duration is truncated to, times F)
                assert np.abs(got[k] - want[k] * 2.5).max() <= 2.5
                assert got[k].mean() == pytest.approx(2.5 * want[k].mean(), abs=2.5)
            elif not k.startswith("ncclDevKernel"):  # (NCCL kernels: their waits move)
                assert np.array_equal(got[k], want[k]), k
    (change,) = truth.changes
    assert change == dict(change, type="slow_kernel", substring="LayerNormForward", factor=2.5)
    # (TINY is host-bound: a slower small kernel is hidden behind the host, cost 0 here)
    assert change["job_cost_ns_per_step"] == pytest.approx(truth.job_step_ns - base[1].job_step_ns)
    with pytest.raises(ValueError, match="no compute kernel name contains 'NoSuchKernel'"):
        simulate_step_time(SynthConfig(slow_kernel={"NoSuchKernel": 2}, **SMALL))


# ----------------------------------------------------------------------------- launch_overhead


def test_launch_overhead_zero_leaves_kernels_waiting_for_their_stream_only(tmp_path_factory, base):
    res, truth, traces = _run(tmp_path_factory, "launch0", launch_overhead=0.0)
    _, btruth, btraces = base
    launch = "cudaLaunchKernel_v7000"
    for r, et in traces.items():
        rt = et.runtime
        names = np.array(et.names, dtype=object)[rt.name]
        # every launch call takes the minimum 2 ns (the host side is gone)
        assert set((rt.end - rt.start)[names == launch].tolist()) == {2}

        # compute kernels: how long after the stream's previous kernel each one starts. With
        # the host cost gone almost all follow it at the device's own 0.7-1.6 us gap (the
        # rest wait for a collective or a receive); in the host-bound run the launches set
        # the pace instead
        def stream_gaps(e):
            d = e.device
            rows = np.flatnonzero((d.type == et_types.KERNEL) & (d.stream == COMPUTE_STREAM))
            rows = rows[np.argsort(d.start[rows], kind="stable")]
            return d.start[rows[1:]] - d.end[rows[:-1]]

        back_to_back = (stream_gaps(et) <= 1600).mean()
        assert back_to_back > 0.8
        assert back_to_back > (stream_gaps(btraces[r]) <= 1600).mean() + 0.15
    # TINY is host-bound: removing the host cost shortens the step a lot
    assert truth.job_step_ns < 0.8 * btruth.job_step_ns
    (change,) = truth.changes
    assert change["type"] == "launch_overhead" and change["factor"] == 0.0
    assert change["job_cost_ns_per_step"] == pytest.approx(truth.job_step_ns - btruth.job_step_ns)


# ----------------------------------------------------------------------------- memory


def _gpu_at_step_ends(et):
    """Per ProfileStep: (allocated, reserved) of the GPU place's last memory event in it."""
    h, m = et.host, et.memory
    steps = np.flatnonzero(h.type == et_types.PROFILE_STEP)
    steps = steps[np.argsort(h.start[steps])]
    places = np.array(et.names, dtype=object)[m.place]
    gpu = np.flatnonzero([p.startswith("Place(gpu:") for p in places])
    out = []
    for s in steps:
        inside = gpu[(m.ts_ns[gpu] >= h.start[s]) & (m.ts_ns[gpu] <= h.end[s])]
        last = inside[np.argsort(m.ts_ns[inside], kind="stable")[-1]]  # (ties: file order)
        out.append((int(m.current_allocated[last]), int(m.current_reserved[last])))
    return np.array(out)


@pytest.fixture(scope="module")
def three_steps(tmp_path_factory):
    return _run(tmp_path_factory, "steps3", steps=3)


def test_a_leak_grows_allocated_by_its_bytes_every_step(tmp_path_factory, three_steps):
    leak = 48 << 20
    res, truth, traces = _run(tmp_path_factory, "leak", steps=3, leak_bytes_per_step=leak)
    _, btruth, btraces = three_steps
    k = np.arange(1, 4)
    for r, et in traces.items():
        got, want = _gpu_at_step_ends(et), _gpu_at_step_ends(btraces[r])
        # allocated at each step's end: the run without the leak's plus B per step so far
        assert np.array_equal(got[:, 0] - want[:, 0], k * leak)
        assert np.array_equal(got[:, 0], truth.gpu_allocated_end_bytes[r])
        assert np.array_equal(got[:, 1], truth.gpu_reserved_end_bytes[r])
    (change,) = truth.changes
    assert change == dict(change, type="leak", bytes_per_step=leak)


def test_fragmentation_grows_reserved_minus_allocated(tmp_path_factory, three_steps):
    frag = 3 << 30
    res, truth, traces = _run(tmp_path_factory, "frag", steps=3, fragment_bytes_per_step=frag)
    _, btruth, btraces = three_steps
    k = np.arange(1, 4)
    for r, et in traces.items():
        got, want = _gpu_at_step_ends(et), _gpu_at_step_ends(btraces[r])
        assert np.array_equal(got[:, 0], want[:, 0])  # allocated as without it
        assert np.array_equal(got[:, 1] - want[:, 1], k * frag)
        assert np.array_equal(got[:, 1], truth.gpu_reserved_end_bytes[r])
    (change,) = truth.changes
    assert change == dict(change, type="fragment", bytes_per_step=frag)


# ----------------------------------------------------------------------------- schedules


def _trace_slots(et, truth, rank):
    """Per Forward / Backward slot event of the trace in order: (step, phase, first compute
    kernel's start, last one's end) on the truth's global clock. A forward slot's kernels are
    those launched inside its model event (and the loss's GPTPretrainingCriterion event right
    after it on the last stage); a backward's, those launched inside "Gradient Backward"."""
    h, d = et.host, et.device
    names = np.array(et.names, dtype=object)
    hn = names[h.name]
    ps = np.flatnonzero(h.type == et_types.PROFILE_STEP)
    ps = ps[np.argsort(h.start[ps])]
    offset = int(truth.step_start_ns[rank, 0]) - int(h.start[ps[0]])
    slots = np.flatnonzero(
        ((h.type == et_types.FORWARD) & np.isin(hn, MODEL_EVENTS))
        | ((h.type == et_types.BACKWARD) & (hn == "Gradient Backward"))
    )
    slots = slots[np.argsort(h.start[slots])]
    crit = np.flatnonzero((h.type == et_types.FORWARD) & (hn == "GPTPretrainingCriterion"))
    lr = et.launches()
    k = np.flatnonzero(
        (d.type == et_types.KERNEL)
        & (d.stream == COMPUTE_STREAM)
        & ~np.char.startswith(names[d.name].astype(str), "ncclDevKernel")
    )
    k_launch = et.runtime.start[lr[k]]
    out = []
    for i, s in enumerate(slots):
        lo, hi = h.start[s], h.end[s]
        nxt = h.start[slots[i + 1]] if i + 1 < len(slots) else np.iinfo(np.int64).max
        after = crit[(h.start[crit] > hi) & (h.start[crit] < nxt)]
        if len(after) and h.type[s] == et_types.FORWARD:
            hi = h.end[after[0]]
        mine = k[(k_launch >= lo) & (k_launch <= hi)]
        step = int(np.searchsorted(h.start[ps], lo, side="right")) - 1
        out.append(
            (
                truth.steps[step],
                "F" if h.type[s] == et_types.FORWARD else "B",
                int(d.start[mine].min()) + offset,
                int(d.end[mine].max()) + offset,
            )
        )
    return out


def _truth_slots(truth, rank):
    return [
        (s, x["phase"], x["device_start_ns"], x["device_end_ns"]) for s in truth.steps for x in truth.schedule(rank, s)
    ]


def _same_slots(trace_slots, truth_slots):
    """The same slots in the same order, times equal to the few ns the trace's microsecond
    timestamps (floating point) keep."""
    assert [x[:2] for x in trace_slots] == [x[:2] for x in truth_slots]
    got = np.array([x[2:] for x in trace_slots], dtype=np.int64)
    want = np.array([x[2:] for x in truth_slots], dtype=np.int64)
    assert np.abs(got - want).max() <= 4


def test_1f1b_schedule_truth_is_the_traces_event_order(base):
    res, truth, traces = base
    assert truth.schedule_name == "1f1b" and truth.virtual_stages == 1
    for r, et in traces.items():
        _same_slots(_trace_slots(et, truth, r), _truth_slots(truth, r))
        stage = truth.ranks[r]["pp"]
        # stage 0 warms up with one forward, the last stage alternates from the start
        phases = "".join(x["phase"] for x in truth.schedule(r, truth.steps[0]))
        assert phases == ("FFBB" if stage == 0 else "FBFB")


@pytest.fixture(scope="module")
def gpipe(tmp_path_factory):
    return _run(tmp_path_factory, "gpipe", dp=1, mp=1, pp=4, layers=4, micro_batches=3, schedule="gpipe")


def test_gpipe_runs_every_forward_then_every_backward(gpipe):
    res, truth, traces = gpipe
    assert truth.schedule_name == "gpipe"
    for r, et in traces.items():
        for s in truth.steps:
            slots = truth.schedule(r, s)
            assert [(x["phase"], x["micro_batch"]) for x in slots] == [("F", m) for m in range(3)] + [
                ("B", m) for m in range(3)
            ]
        _same_slots(_trace_slots(et, truth, r), _truth_slots(truth, r))
    # causality across stages: micro-batch m's forward on stage p starts after it ended on
    # p - 1, and its backward after the one on p + 1
    _check_dataflow(truth, pp=4, V=1)


def _check_dataflow(truth, pp, V):
    for s in truth.steps:
        by = {}
        for r in range(truth.world):
            p = truth.ranks[r]["pp"]
            if truth.ranks[r]["dp"] or truth.ranks[r]["mp"]:
                continue
            for x in truth.schedule(r, s):
                by[(x["phase"], x["micro_batch"], x["chunk"] * pp + p)] = x
        last = pp * V - 1
        for (phase, mb, vs), x in by.items():
            if phase == "F" and vs > 0:
                assert x["device_start_ns"] > by[("F", mb, vs - 1)]["device_end_ns"]
            if phase == "B" and vs < last:
                assert x["device_start_ns"] > by[("B", mb, vs + 1)]["device_end_ns"]
            if phase == "B":
                assert x["device_start_ns"] > by[("F", mb, vs)]["device_end_ns"]


@pytest.fixture(scope="module")
def interleaved(tmp_path_factory):
    return _run(
        tmp_path_factory,
        "interleaved",
        dp=1,
        mp=2,
        pp=2,
        layers=8,
        micro_batches=4,
        schedule="interleaved",
        virtual_stages=2,
    )


def test_interleaved_stages_hold_v_chunks_in_megatrons_order(interleaved):
    res, truth, traces = interleaved
    pp, V, M = 2, 2, 4
    assert truth.schedule_name == "interleaved" and truth.virtual_stages == V
    # layers split evenly: chunk c of stage s is virtual stage c * pp + s
    assert truth.chunk_layers == [[[0, 2], [4, 2]], [[2, 2], [6, 2]]]
    for r, et in traces.items():
        stage = truth.ranks[r]["pp"]
        for s in truth.steps:
            slots = truth.schedule(r, s)
            for phase in "FB":
                mine = sorted((x["micro_batch"], x["chunk"]) for x in slots if x["phase"] == phase)
                assert mine == [(m, c) for m in range(M) for c in range(V)]
            # Megatron's warm-up: (pp - stage - 1) * 2 + (V - 1) * pp forwards, then one
            # forward and one backward in turn; a chunk's forwards take pp micro-batches at a time
            first_b = next(i for i, x in enumerate(slots) if x["phase"] == "B")
            assert first_b == (pp - stage - 1) * 2 + (V - 1) * pp + 1
            assert "".join(x["phase"] for x in slots[first_b - 1 :]).startswith("FBFB")
            fwd = [(x["micro_batch"], x["chunk"]) for x in slots if x["phase"] == "F"]
            assert fwd[:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]
        _same_slots(_trace_slots(et, truth, r), _truth_slots(truth, r))
        # each chunk's forward is one PipelineLayerChunk event holding its 2 decoder layers
        h = et.host
        names = np.array(et.names, dtype=object)[h.name]
        chunks = np.flatnonzero((h.type == et_types.FORWARD) & (names == "PipelineLayerChunk"))
        layers = np.flatnonzero((h.type == et_types.FORWARD) & (names == "GPTDecoderLayer"))
        assert len(chunks) == M * V * len(truth.steps)
        for c in chunks:
            inside = (h.start[layers] > h.start[c]) & (h.end[layers] < h.end[c])
            assert inside.sum() == 2
    _check_dataflow(truth, pp=pp, V=V)
    # send/recv between virtual stages v and v + 1 (forward) and back: with pp = 2 and V = 2,
    # per micro-batch and pipeline 0->1, 1->0 (the wrap-around: stage 1's chunk 0 sends to
    # stage 0's chunk 1), 0->1 forward and the reverse backward
    stage_of = {x["rank"]: x["pp"] for x in truth.ranks}
    pairs = {}
    for inst in truth.instances:
        if inst["kind"] == "send_recv":
            a, b = inst["members"]  # sender, receiver
            key = (stage_of[a["rank"]], stage_of[b["rank"]])
            pairs[key] = pairs.get(key, 0) + 1
    pipelines = 2  # mp = 2
    assert pairs == {(0, 1): 3 * M * pipelines * len(truth.steps), (1, 0): 3 * M * pipelines * len(truth.steps)}


@pytest.mark.parametrize("pp,V,M", [(2, 3, 2), (4, 2, 4), (4, 2, 8), (3, 2, 6)])
def test_interleaved_schedules_run_without_deadlock(tmp_path, pp, V, M):
    cfg = SynthConfig(
        dp=1, mp=1, pp=pp, layers=pp * V, micro_batches=M, steps=1, schedule="interleaved", virtual_stages=V, **TINY
    )
    generate(cfg, str(tmp_path), ranks=[])
    truth = load_truth(str(tmp_path))
    for r in range(pp):
        assert [
            (x["phase"] == "B", x["micro_batch"], x["chunk"]) for x in truth.schedule(r, truth.steps[0])
        ] == pipeline_order("interleaved", pp, r, M, V)
    _check_dataflow(truth, pp=pp, V=V)


def test_schedule_validation():
    with pytest.raises(ValueError, match="divisible by pp"):
        SynthConfig(pp=2, micro_batches=3, layers=4, schedule="interleaved", virtual_stages=2).validate()
    with pytest.raises(ValueError, match="virtual_stages >= 2"):
        SynthConfig(pp=2, schedule="interleaved").validate()
    with pytest.raises(ValueError, match="needs schedule='interleaved'"):
        SynthConfig(virtual_stages=2).validate()
    with pytest.raises(ValueError, match="schedule must be one of"):
        SynthConfig(schedule="zb").validate()


# ----------------------------------------------------------------------------- simulate_step_time


def test_simulate_step_time_is_the_generated_runs_step_time(base, tmp_path_factory):
    res, truth, _ = base
    cfg = SynthConfig(**SMALL)
    st = simulate_step_time(cfg)
    assert st.mean_ns == truth.job_step_ns == pytest.approx(truth.step_time_ns.mean())
    assert np.array_equal(st.step_time_ns, truth.step_time_ns)
    assert np.array_equal(st.step_max_ns, truth.step_max_ns)
    assert st.max_ns == pytest.approx(truth.step_time_ns.max(axis=0).mean())
    assert st.max_ns >= st.mean_ns
    # with a change: what generate() writes for the changed config
    dp0 = simulate_step_time(replace(cfg, comm_factor={"dp": 0}))
    _, t0, _ = _run(tmp_path_factory, "dp0sim", comm_factor={"dp": 0})
    assert dp0.mean_ns == t0.job_step_ns
    assert t0.changes[0]["job_cost_ns_per_step"] == pytest.approx(dp0.mean_ns - st.mean_ns)
