"""All ranks of a run side by side (analysis/crossrank/) and `tb-paddle-profile parallel` (alias `distributed`).

The straggler, the waits and the pipeline stages are checked against what the synthetic
generator planted (its manifest), the real 2-rank example against counts by hand from its JSON.
"""

import contextlib
import io
import json
import re
import statistics

import pytest

from support.paths import REPO, SHARED_TRACES
from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank.thresholds import (
    ANOMALY_MIN_EXCESS_FRACTION,
    COMPUTE_EXCESS_THRESHOLD,
    STRAGGLER_MIN_WAIT_FRACTION,
)
from tb_paddle_profile.cli.commands import main
from tb_paddle_profile.analysis.summarize import summarize_file
from tbp_synth import SynthConfig, generate
from tb_paddle_profile.v1 import summary_pb2 as pb

EXAMPLE_2RANK = REPO / "examples" / "profiler_log" / "gpt-2rank"
GPU_2RANK = SHARED_TRACES / "gpu-synthetic-2rank"


def _run(tmp_path_factory, name, **cfg):
    # the scenario these tests were written for: no PP-group collectives (synth default since issue 13)
    res = generate(SynthConfig(pp_group_collectives=False, **cfg), str(tmp_path_factory.mktemp(name)))
    summaries = [summarize_file(p) for _, p in sorted(res.traces.items())]
    return res.manifest, analyze_run(summaries, run=name, span="0")


HOST_DELAY_US = 20_000  # about a fifth of the step: beyond stage 1's pipeline fill at step start


@pytest.fixture(scope="module", params=[5, 2], ids=["slow-rank5-stage0", "slow-rank2-stage1"])
def slow(request, tmp_path_factory):
    return _run(
        tmp_path_factory, f"slow{request.param}", dp=2, mp=2, pp=2, steps=3, slow_rank=request.param, slow_factor=1.5
    )


@pytest.fixture(scope="module")
def even(tmp_path_factory):
    return _run(tmp_path_factory, "even", dp=2, mp=2, pp=2, steps=3)


@pytest.fixture(scope="module", params=[5, 2], ids=["slow-host-rank5-stage0", "slow-host-rank2-stage1"])
def host(request, tmp_path_factory):
    """A host-side straggler: the rank's data loader stalls HOST_DELAY_US every step, its kernels
    keep their durations. Also returns the generator's planted caused waits (per rank, per step)."""
    res = generate(
        SynthConfig(
            dp=2,
            mp=2,
            pp=2,
            steps=3,
            slow_host_rank=request.param,
            host_delay_us=HOST_DELAY_US,
            pp_group_collectives=False,
        ),
        str(tmp_path_factory.mktemp(f"host{request.param}")),
    )
    summaries = [summarize_file(p) for _, p in sorted(res.traces.items())]
    return res.manifest, analyze_run(summaries, run="host", span="0"), res.caused_wait_ns


def test_the_slowed_rank_is_named_the_straggler(slow):
    manifest, rp = slow
    v = rp.straggler
    assert v.found
    assert [s.rank for s in v.stragglers] == [manifest["slow_rank"]]
    (s,) = v.stragglers
    assert s.longer_compute  # the generator slows its compute kernels
    assert s.compute_excess == pytest.approx(manifest["slow_factor"] - 1, abs=0.05)
    assert f"rank {s.rank}" in v.summary and f"rank {s.rank}" in s.reason
    assert rp.advice[0].rule == "straggler" and list(rp.advice[0].ranks) == [s.rank]
    trigger = rp.advice[0].triggers[0]
    assert trigger.value >= trigger.threshold == pytest.approx(ANOMALY_MIN_EXCESS_FRACTION)


def test_no_straggler_when_no_rank_is_slowed(even):
    _, rp = even
    assert not rp.straggler.found and not rp.straggler.stragglers
    assert rp.straggler.summary.startswith("No straggler")
    assert "straggler" not in [a.rule for a in rp.advice]


def test_the_late_host_rank_is_named_the_straggler_with_normal_compute(host, even):
    manifest, rp, _ = host
    _, rp_even = even
    v = rp.straggler
    assert v.found
    assert [s.rank for s in v.stragglers] == [manifest["slow_host_rank"]]
    assert manifest["slow_rank"] is None
    (s,) = v.stragglers
    assert not s.longer_compute  # its kernels run as fast as its peers'
    assert abs(s.compute_excess) < COMPUTE_EXCESS_THRESHOLD
    assert s.compute_ns == pytest.approx(s.peer_compute_ns, rel=COMPUTE_EXCESS_THRESHOLD)
    assert "late arrival with normal compute" in v.summary and "longer compute" not in v.summary
    assert f"rank {s.rank}" in s.reason and "host-side reasons" in s.reason
    assert s.net_caused_wait_ns >= STRAGGLER_MIN_WAIT_FRACTION * statistics.median(m.step_time_ns for m in rp.ranks)
    advice = rp.advice[0]
    assert advice.rule == "straggler" and list(advice.ranks) == [s.rank]
    assert "Check its host" in advice.text and "Check its GPU" not in advice.text
    trigger = advice.triggers[0]
    assert trigger.value >= trigger.threshold == pytest.approx(ANOMALY_MIN_EXCESS_FRACTION)
    # Only the host stalled: every rank computes what it computes in the same run without the stall,
    # and every step is longer.
    for m, m_even in zip(rp.ranks, rp_even.ranks):
        assert m.compute_ns == pytest.approx(m_even.compute_ns, rel=1e-4)
        assert m.step_time_ns > m_even.step_time_ns
    assert rp_even.straggler.stragglers == []


def test_host_straggler_caused_waits_match_the_planted_ones(host):
    """The wait the straggler causes its peers (it arrives last, the others' NCCL kernels wait) is
    what the generator planted at the instances where it arrived last."""
    manifest, rp, planted = host
    steps = len(manifest["ranks"][0]["steps"])
    _check_waits(manifest, rp)
    (s,) = rp.straggler.stragglers
    m = rp.ranks[s.rank]
    assert m.rank == s.rank and s.caused_wait_ns == m.caused_wait_ns
    # per step, 1 % or 1 µs per instance it arrived last at (the JSON prints float32 µs)
    truth = sum(planted[s.rank]) / steps
    assert abs(m.caused_wait_ns - truth) <= max(0.01 * truth, 1000 * m.last_arrivals / steps)
    assert truth > 0.5 * HOST_DELAY_US * 1000  # the stall, less what a pipeline fill hides
    # Every rank's caused wait, and all of them together: each wait is caused by someone. (In the
    # stage-1 case two data-parallel groups lined up together, {0,4} and {1,5}, end 79 ns apart in
    # one step; they are told apart as the same position is in the other steps.)
    for x in rp.ranks:
        truth_x = sum(planted[x.rank]) / steps
        assert abs(x.caused_wait_ns - truth_x) <= max(0.01 * truth_x, 1000 * x.last_arrivals / steps + 1), x.rank
    total = sum(map(sum, planted.values())) / steps
    got = sum(x.caused_wait_ns for x in rp.ranks)
    assert abs(got - total) <= max(0.01 * total, 1000 * sum(x.last_arrivals for x in rp.ranks) / steps)


def test_waits_match_the_planted_waits(slow):
    """wait = duration − the instance's shortest duration; the generator planted the time each
    NCCL kernel spent waiting for the last member of its collective."""
    manifest, rp = slow
    _check_waits(manifest, rp)


def _check_waits(manifest, rp):
    assert rp.matching.matched_instances == rp.matching.instances
    for entry, m in zip(manifest["ranks"], rp.ranks):
        assert m.rank == entry["rank"]
        kinds = {KIND_LABELS[k.kind]: k for k in m.kinds}
        planted_ar = sum(
            s["comm"]["mp_allreduce"]["wait_ns"] + s["comm"]["dp_allreduce"]["wait_ns"] for s in entry["steps"]
        )
        planted_pp = sum(s["comm"]["pp_sendrecv"]["wait_ns"] for s in entry["steps"])
        ar, pp = kinds["all_reduce"], kinds["send_recv"]
        # 1 %, or 1 µs per instance: the JSON prints float32 µs
        assert abs(ar.wait_ns - planted_ar) <= max(0.01 * planted_ar, 1000 * ar.matched)
        assert abs(pp.wait_ns - planted_pp) <= max(0.01 * planted_pp, 1000 * pp.matched)
        assert ar.matched == ar.calls and pp.matched == pp.calls


def test_heatmaps_match_the_planted_step_figures(slow):
    manifest, rp = slow
    steps = list(rp.steps)
    assert steps == [s["step"] for s in manifest["ranks"][0]["steps"]]
    for i, entry in enumerate(manifest["ranks"]):
        row = slice(i * len(steps), (i + 1) * len(steps))
        for got, truth in zip(rp.step_time.values_ns[row], entry["steps"]):
            assert got == pytest.approx(truth["step_time_ns"], rel=0.01)
        for got, truth in zip(rp.exposed_communication.values_ns[row], entry["steps"]):
            assert got == pytest.approx(truth["exposed_comm_ns"], rel=0.01)


def test_pipeline_stages_follow_the_topology(slow):
    manifest, rp = slow
    pv = rp.pipeline
    assert pv.present and pv.pipelines == len(manifest["groups"]["pp"])
    by_stage = {}
    for entry in manifest["ranks"]:
        by_stage.setdefault(entry["coords"]["pp"], []).append(entry["rank"])
    assert {s.stage: list(s.ranks) for s in pv.stages} == by_stage
    for m in rp.ranks:
        entry = manifest["ranks"][m.rank]
        planted = statistics.mean(s["comm"]["pp_sendrecv"]["exposed_ns"] for s in entry["steps"])
        assert m.pipeline_stage == entry["coords"]["pp"]
        assert m.bubble_ns == pytest.approx(planted, rel=0.01)
        assert m.bubble_ratio == pytest.approx(m.bubble_ns / m.step_time_ns)


def test_peers_are_the_model_and_data_parallel_groups(even):
    manifest, rp = even
    for m in rp.ranks:
        expected = set()
        for kind in ("mp", "dp"):
            for g in manifest["groups"][kind]:
                if m.rank in g:
                    expected.update(g)
        expected.discard(m.rank)
        assert set(m.peers) == expected


# ------------------------------------------------------------ matching rules on small made-up runs


def _summary(rank, instances, steps=((1, 0, 10_000_000),), origin=0):
    s = pb.Summary()
    s.meta.rank, s.meta.worker, s.meta.origin_unix_ns = rank, f"rank{rank}", origin
    s.parallel.timeline = pb.TIMELINE_DEVICE
    for n, lo, hi in steps:
        st = s.parallel.steps.add(step=n, compute_ns=hi - lo)
        st.range.start_ns, st.range.end_ns = lo, hi
    s.parallel.names.extend(["", "nccl"])
    counters = {}
    c = s.parallel.collectives
    for kind, start, end, *direction in instances:
        step = next(n for n, lo, hi in steps if lo <= start < hi)
        o = counters.get((step, kind), 0)
        counters[(step, kind)] = o + 1
        for column, value in (
            (c.kind, kind),
            (c.name, 1),
            (c.op, 0),
            (c.step, step),
            (c.ordinal, o),
            (c.start_ns, start),
            (c.duration_ns, end - start),
            (c.device_id, 0),
            (c.stream, 7),
            (c.bytes, 0),
            (c.direction, direction[0] if direction else 0),
        ):
            column.append(value)
    return s


AR, SR = pb.COLLECTIVE_KIND_ALL_REDUCE, pb.COLLECTIVE_KIND_SEND_RECV


def test_a_line_up_holding_two_groups_is_split_by_end_time():
    # Ranks 0,1 form one group (ending at 500 µs), ranks 2,3 another (ending at 800 µs).
    runs = [
        _summary(0, [(AR, 100_000, 500_000)]),
        _summary(1, [(AR, 300_000, 500_000)]),
        _summary(2, [(AR, 200_000, 800_000)]),
        _summary(3, [(AR, 650_000, 800_000)]),
    ]
    rp = analyze_run(runs)
    groups = sorted(sorted((x.rank, x.wait_ns) for x in m.members) for m in rp.matched)
    assert groups == [[(0, 200_000), (1, 0)], [(2, 450_000), (3, 0)]]
    assert sorted(m.last_rank for m in rp.matched) == [1, 3]
    assert [m.transfer_ns for m in sorted(rp.matched, key=lambda m: m.last_rank)] == [200_000, 150_000]


def test_ranks_whose_clocks_disagree_are_lined_up_by_ordinal():
    # Same program, rank 1's clock 777 µs ahead: no two ends agree, so the line-up stays whole.
    runs = [_summary(0, [(AR, 100_000, 400_000)]), _summary(1, [(AR, 150_000, 400_000)], origin=777_000)]
    rp = analyze_run(runs)
    (m,) = rp.matched
    assert m.transfer_ns == 250_000 and m.last_rank == 1
    assert sorted((x.rank, x.wait_ns) for x in m.members) == [(0, 50_000), (1, 0)]


def test_send_and_recv_pair_up_by_end_time():
    send, recv = pb.P2P_DIRECTION_SEND, pb.P2P_DIRECTION_RECV
    runs = [
        _summary(0, [(SR, 100_000, 300_000, send), (SR, 400_000, 600_000, send)]),
        _summary(1, [(SR, 50_000, 300_000, recv), (SR, 550_000, 600_000, recv)]),
    ]
    rp = analyze_run(runs)
    assert len(rp.matched) == 2 and rp.matching.matched_instances == 4
    assert [s.stage for s in rp.pipeline.stages] == [0, 1]
    assert [list(s.ranks) for s in rp.pipeline.stages] == [[0], [1]]  # rank 0 sends first


# ------------------------------------------------------------ shared and real traces


def _x_events(path):
    return [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]


def test_shared_gpu_traces_across_ranks(shared_traces):
    """Rank 1's clock is 777 µs off rank 0's: the all-reduces line up by ordinal; both ranks only
    send (no recv), so no send/recv pairs up."""
    paths = sorted(GPU_2RANK.glob("*.paddle_trace.json"))
    per_rank = [sum(1 for e in _x_events(p) if e["cat"] == "Kernel" and "_AllReduce_" in e["name"]) for p in paths]
    rp = analyze_run([summarize_file(str(p)) for p in paths])
    ar = next(k for k in rp.kinds if k.kind == AR)
    assert per_rank == [4, 4] and ar.calls == 8 and ar.matched == 8
    assert len([m for m in rp.matched if m.kind == AR]) == 4
    assert ar.wait_ns == 0  # both ranks took exactly as long
    assert not rp.pipeline.stages and any("no pair matched" in n for n in rp.notes)


def _cli(*args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(list(args))
    return code, buf.getvalue()


def test_cli_distributed_on_the_real_2rank_example():
    code, text = _cli("distributed", str(EXAMPLE_2RANK), "--jobs", "1")
    assert code == 0
    for heading in (
        "Per-rank step breakdown",
        "Step time by rank and step",
        "Collectives by kind",
        "Straggler verdict",
        "Advice",
    ):
        assert heading in text
    assert "all_reduce" in text and "No straggler" in text
    assert "exposed_all_reduce" in text  # a 60 ms gloo all-reduce in a 80 ms step
    assert "{ns:" not in text  # every time token of the sentences printed in the unit

    # The sentences follow --time-unit like the tables: the verdict's median step, in us, is the
    # "Step" table's median printed in us.
    code, text_us = _cli("distributed", str(EXAMPLE_2RANK), "--jobs", "1", "--time-unit", "us")
    verdict = text_us.split("Straggler verdict")[1].split("(A rank")[0]
    assert code == 0 and re.search(r"[0-9] us\b", verdict) and not re.search(r"[0-9] ms\b", verdict)
    assert "{ns:" not in text_us

    code, out = _cli("distributed", str(EXAMPLE_2RANK), "--jobs", "1", "--format", "json")
    assert code == 0
    rp = json.loads(out)
    paths = sorted(EXAMPLE_2RANK.glob("*.paddle_trace.json"))
    comm = [sorted(round(e["dur"] * 1000) for e in _x_events(p) if e["cat"] == "Communication") for p in paths]
    step_times = [
        [round(e["dur"] * 1000) for e in sorted(_x_events(p), key=lambda e: e["ts"]) if e["cat"] == "ProfileStep"]
        for p in paths
    ]
    assert [r.get("rank", 0) for r in rp["ranks"]] == [0, 1]
    assert [int(s) for s in rp["steps"]] == [1, 2, 3, 4]
    assert [int(v) for v in rp["stepTime"]["valuesNs"]] == step_times[0] + step_times[1]
    (kind,) = rp["kinds"]
    assert kind["kind"] == "COLLECTIVE_KIND_ALL_REDUCE"
    assert int(kind["calls"]) == len(comm[0]) + len(comm[1]) == 8
    assert int(kind["hostNs"]) == sum(comm[0]) + sum(comm[1])
    assert int(kind["matched"]) == 8


def test_cli_distributed_errors(tmp_path):
    code, _ = _cli("distributed", str(tmp_path))
    assert code == 2
    code, _ = _cli("distributed", str(EXAMPLE_2RANK), "--span", "7", "--jobs", "1")
    assert code == 2
