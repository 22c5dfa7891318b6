"""The generator's cross-rank ground truth (tbp_synth.truth) against the traces.

The truth is the contract the cross-rank analysis is tested on, so it is checked here against
what the project's reader (engine.summarize_file) finds in each written trace, and against the
traces' own fields (file names, pids, device ids, timestamps), for runs with Paddle's default
worker names, several hosts and skewed host clocks.
"""

import collections
import re
from pathlib import Path

import msgspec
import numpy as np
import pytest

from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.summarize import summarize_file
from tbp_synth import SynthConfig, generate
from tbp_synth.__main__ import main as synth_main
from tbp_synth.generator import PP_GROUP_STREAM, Topology
from tbp_synth.truth import load_truth

TINY = dict(hidden=512, heads=8, seq_len=256, vocab=8192)
SKEW_US = 1730
DEFAULT_NAME = re.compile(r"^host_(gpunode\d+)pid_(\d+)_time_\d{4}(_\d\d){5}_\d{6}\.paddle_trace\.json$")


def _load(path):
    return msgspec.json.decode(Path(path).read_bytes())


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    """DP2 x PP2 x MP2 on two hosts of 4 GPUs whose clocks differ, Paddle's default worker
    names, a host stall on rank 5 (host 1, stage 0)."""
    out = tmp_path_factory.mktemp("skewed")
    cfg = SynthConfig(
        dp=2,
        mp=2,
        pp=2,
        steps=2,
        layers=2,
        micro_batches=3,
        gpus_per_node=4,
        names="default",
        clock_skew_us=SKEW_US,
        slow_host_rank=5,
        host_delay_us=400,
        **TINY,
    )
    res = generate(cfg, str(out), jobs=2)
    return res, load_truth(str(out)), {r: summarize_file(p) for r, p in res.traces.items()}


@pytest.fixture(scope="module")
def pp4(tmp_path_factory):
    """DP2 x PP4 x MP2 on two hosts of 8 GPUs (Fleet's layout), 6 micro-batches."""
    out = tmp_path_factory.mktemp("pp4")
    cfg = SynthConfig(dp=2, mp=2, pp=4, steps=1, layers=4, micro_batches=6, gpus_per_node=8, **TINY)
    res = generate(cfg, str(out))
    return res, load_truth(str(out))


def _reader_collectives(summary):
    """{(step, kind, ordinal): (start_ns, duration_ns, stream, name)} as our reader sees it."""
    c, names = summary.parallel.collectives, summary.parallel.names
    out = {}
    for i in range(len(c.kind)):
        key = (c.step[i], KIND_LABELS[c.kind[i]], c.ordinal[i])
        assert key not in out
        out[key] = (c.start_ns[i], c.duration_ns[i], c.stream[i], names[c.name[i]])
    return out


def _truth_members(truth, rank):
    out = {}
    for inst in truth.instances:
        for m in inst["members"]:
            if m["rank"] == rank:
                key = (inst["step"], inst["kind"], m["ordinal"])
                assert key not in out
                out[key] = (inst, m)
    return out


# ----------------------------------------------------------------------------- truth vs traces


def test_every_instance_is_the_readers_instance_with_its_wait(skewed):
    res, truth, summaries = skewed
    assert sorted(summaries) == list(range(8))
    for rank, s in summaries.items():
        seen = _reader_collectives(s)
        planted = _truth_members(truth, rank)
        # same instances per (step, kind), same ordinals
        assert collections.Counter(k[:2] for k in seen) == collections.Counter(k[:2] for k in planted)
        assert set(seen) == set(planted)
        # the reader's times are relative to the trace's start: compare from the first step's
        step0_seen, step0 = s.parallel.steps[0].range.start_ns, int(truth.step_start_ns[rank][0])
        for key, (start, dur, _, _) in seen.items():
            inst, m = planted[key]
            assert m["end_ns"] - m["start_ns"] == m["wait_ns"] + inst["transfer_ns"]
            # the JSON prints float32 microseconds relative to the trace start: ns-exact here
            assert abs(dur - (m["wait_ns"] + inst["transfer_ns"])) <= 2, (rank, key)
            assert abs((start - step0_seen) - (m["start_ns"] - step0)) <= 2, (rank, key)


def test_every_instance_has_its_groups_members_ending_together(skewed):
    res, truth, _ = skewed
    topo = Topology(2, 2, 2)
    groups = {axis: {tuple(g) for g in gs} for axis, gs in topo.groups().items()}
    by_axis = collections.Counter()
    for inst in truth.instances:
        ranks = [m["rank"] for m in inst["members"]]
        ends = {m["end_ns"] for m in inst["members"]}
        assert len(ends) == 1
        last = max(m["start_ns"] for m in inst["members"])
        assert ends.pop() == last + inst["transfer_ns"]
        assert min(m["wait_ns"] for m in inst["members"]) == 0
        axis = inst["axis"]
        by_axis[axis, inst["kind"]] += 1
        if axis == "pp":  # [sender, receiver] on neighbouring stages of one pipeline
            assert inst["kind"] == "send_recv" and len(ranks) == 2
            assert any(set(ranks) <= set(g) for g in groups["pp"])
        else:
            assert tuple(ranks) in groups["pp" if axis == "pp_group" else axis]
        if inst["kind"] == "broadcast":
            assert inst["root"] == ranks[-1]  # the last stage sends the loss
    steps, mb = 2, 3
    assert by_axis["pp_group", "broadcast"] == 2 * 4 * steps  # 2 per pipeline and step
    assert by_axis["pp_group", "all_reduce"] == 4 * steps
    assert by_axis["pp", "send_recv"] == 4 * 2 * mb * steps  # activations and gradients
    # waits: the truth's per-rank means are the members' sums
    for r in range(8):
        total = sum(m["wait_ns"] for i in truth.instances for m in i["members"] if m["rank"] == r)
        assert truth.waits_per_step(r) == pytest.approx(total / steps)
    assert sum(truth.waits_per_step(r, ["mp", "dp", "pp", "pp_group"]) for r in range(8)) == pytest.approx(
        sum(truth.waits_per_step(r) for r in range(8))
    )


def test_step_times_are_the_traces_profile_steps(skewed):
    res, truth, summaries = skewed
    assert truth.steps == [1, 2]
    for rank, s in summaries.items():
        base_seen, base = s.parallel.steps[0].range.start_ns, int(truth.step_start_ns[rank][0])
        got = [(st.step, st.range.start_ns - base_seen, st.range.end_ns - base_seen) for st in s.parallel.steps]
        want = [
            (n, a - base, b - base)
            for n, a, b in zip(truth.steps, truth.step_start_ns[rank].tolist(), truth.step_end_ns[rank].tolist())
        ]
        assert len(got) == len(want)
        for (gs, ga, gb), (ws, wa, wb) in zip(got, want):
            assert gs == ws and abs(ga - wa) <= 2 and abs(gb - wb) <= 2
        assert (truth.step_time_ns[rank] == truth.step_end_ns[rank] - truth.step_start_ns[rank]).all()


# ----------------------------------------------------------------------------- identity


def test_default_worker_names_hosts_pids_devices_and_clock_offsets(skewed):
    res, truth, _ = skewed
    offsets = truth.host_offsets_ns
    assert len(offsets) == 2 and offsets[0] == 0 and 0 < abs(offsets[1]) <= SKEW_US * 1000
    pids_by_host = collections.defaultdict(dict)
    for r in truth.ranks:
        rank = r["rank"]
        path = Path(res.traces[rank])
        m = DEFAULT_NAME.match(path.name)
        assert m, path.name
        host = rank // 4
        assert (m.group(1), int(m.group(2))) == ("gpunode%d" % host, r["pid"])
        assert r["worker"] == "host_gpunode%dpid_%d" % (host, r["pid"]) and r["file"] == path.name
        assert (r["hostname"], r["gpu"], r["clock_offset_ns"]) == ("gpunode%d" % host, rank % 4, offsets[host])
        assert (r["dp"], r["pp"], r["mp"]) == (rank // 4, rank // 2 % 2, rank % 2)
        pids_by_host[host][r["gpu"]] = r["pid"]
        d = _load(path)
        assert [p["id"] for p in d["deviceProperties"]] == [0, 1, 2, 3]  # the node's GPUs
        events = d["traceEvents"][:-1]
        host_pids = {e["pid"] for e in events if e.get("cat") in ("Operator", "CudaRuntime", "ProfileStep")}
        assert host_pids == {r["pid"]}
        kernel_pids = {e["pid"] for e in events if e.get("cat") == "Kernel"}
        assert kernel_pids == {r["gpu"]}  # kernels on the rank's local device
        # every timestamp on the host's clock: the first ProfileStep starts at global + offset
        first = min(e["ts"] for e in events if e.get("cat") == "ProfileStep")
        assert first == (int(truth.step_start_ns[rank][0]) + offsets[host]) // 1000
    for host, pids in pids_by_host.items():
        by_gpu = [pids[g] for g in sorted(pids)]
        assert len(set(by_gpu)) == 4 and by_gpu != sorted(by_gpu)  # only the GPU gives the order


def test_dp_groups_cross_hosts_in_fleets_layout(pp4):
    res, truth = pp4
    host = {r["rank"]: r["hostname"] for r in truth.ranks}
    assert len(set(host.values())) == 2
    dp = [i for i in truth.instances if i["axis"] == "dp"]
    mp = [i for i in truth.instances if i["axis"] == "mp"]
    assert dp and mp
    for inst in dp:
        assert len({host[m["rank"]] for m in inst["members"]}) == 2
    for inst in mp:
        assert len({host[m["rank"]] for m in inst["members"]}) == 1


# ----------------------------------------------------------------------------- pipeline


def _phases(path):
    """The rank's sequence of top-level forward ('F') and backward ('B') passes, and the
    micro-batch count of its run."""
    events = [e for e in _load(path)["traceEvents"][:-1] if e.get("ph") == "X"]
    out = []
    for e in sorted(events, key=lambda e: e["ts"]):
        if e.get("cat") == "Forward" and e["name"].startswith("GPTForCausalLMPipe["):
            out.append("F")
        elif e.get("cat") == "Backward" and e["name"].startswith("Gradient Backward["):
            out.append("B")
    return "".join(out)


def test_pp4_schedule_is_1f1b(pp4):
    res, truth = pp4
    pp, M = 4, 6
    for r in truth.ranks:
        stage = r["pp"]
        warm = min(pp - stage - 1, M)
        want = "F" * warm + "FB" * (M - warm) + "B" * warm
        assert _phases(res.traces[r["rank"]]) == want, (r["rank"], stage)
    # micro-batch b's activations reach stage s+1 after stage s computed them: each forward
    # send/recv pair ends after its sender launched it, and a stage's receives come in order
    recv = collections.defaultdict(list)
    for inst in truth.instances:
        if inst["axis"] == "pp":
            sender, receiver = inst["members"]
            assert sender["end_ns"] == receiver["end_ns"] >= max(sender["start_ns"], receiver["start_ns"])
            recv[receiver["rank"]].append(receiver["end_ns"])
    assert all(v == sorted(v) for v in recv.values())


def test_pp_group_collectives_on_their_stream_with_stage0_last(tmp_path):
    """Without any anomaly the last stage waits for stage 0 at the loss broadcasts (1F1B ends
    on stage 0), and both show as Paddle's operators on the pipeline group's stream."""
    cfg = SynthConfig(dp=1, mp=1, pp=2, steps=2, layers=2, micro_batches=4, **TINY)
    res = generate(cfg, str(tmp_path))
    truth = load_truth(str(tmp_path))
    assert truth.planted == []
    waits = {r: truth.waits_per_step(r, ["pp_group"]) for r in (0, 1)}
    assert waits[1] > 10_000 and waits[0] < waits[1] / 10
    for rank, path in res.traces.items():
        events = _load(path)["traceEvents"][:-1]
        ops = collections.Counter(e["name"].split("[")[0] for e in events if e.get("cat") == "Operator")
        assert ops["broadcast dygraph"] == 2 * 2 and ops["c_allreduce_sum dygraph"] == 2
        on_stream = collections.Counter(
            e["name"].split("(")[0] for e in events if e.get("cat") == "Kernel" and e["tid"] == PP_GROUP_STREAM
        )
        assert on_stream == {"ncclDevKernel_Broadcast_RING_LL": 4, "ncclDevKernel_AllReduce_Sum_f32_RING_LL": 2}
    off = generate(
        SynthConfig(dp=1, mp=1, pp=2, steps=2, layers=2, micro_batches=4, pp_group_collectives=False, **TINY),
        str(tmp_path / "off"),
        ranks=[],
    )
    assert off.manifest["comm_streams"].get("pp_group") is None
    assert not [i for i in load_truth(str(tmp_path / "off")).instances if i["axis"] == "pp_group"]


# ----------------------------------------------------------------------------- anomalies


def test_absorbed_stall_costs_less_than_a_stage0_stall(tmp_path):
    """3 ms host stalls (GPU-bound model size): on stage 1 the pipeline fill hides it, on
    stage 0 the whole job pays about the delay. The cost is checked against a control run
    generated separately (--control), from the step times of both."""
    common = [
        "--dp",
        "2",
        "--mp",
        "2",
        "--pp",
        "2",
        "--steps",
        "2",
        "--layers",
        "4",
        "--micro-batches",
        "4",
        "--ranks",
        "",
        "--quiet",
        "--jobs",
        "1",
    ]
    assert (
        synth_main(common + ["--out", str(tmp_path / "run"), "--slow-host-rank", "2,4", "--host-delay-us", "3000"]) == 0
    )
    assert synth_main(common + ["--out", str(tmp_path / "control"), "--control", "--slow-host-rank", "2"]) == 0
    run, control = load_truth(str(tmp_path / "run")), load_truth(str(tmp_path / "control"))
    assert control.planted == []
    planted = {p["rank"]: p for p in run.planted}
    assert set(planted) == {2, 4}
    absorbed, paid = planted[2], planted[4]
    assert (absorbed["type"], absorbed["stage"], absorbed["delay_ns"]) == ("host_stall", 1, 3_000_000)
    assert (paid["stage"], paid["delay_ns"]) == (0, 3_000_000)
    assert absorbed["absorbed"] and absorbed["job_cost_ns_per_step"] < 0.5 * absorbed["delay_ns"]
    assert not paid["absorbed"] and paid["job_cost_ns_per_step"] > 0.8 * paid["delay_ns"]
    # the stage-1 stall is absorbed: the job with both costs what the stage-0 one costs alone
    total = run.step_time_ns.mean() - control.step_time_ns.mean()
    assert total == pytest.approx(
        paid["job_cost_ns_per_step"] + absorbed["job_cost_ns_per_step"], abs=0.05 * paid["delay_ns"]
    )


def test_slow_device_and_stage_imbalance(tmp_path):
    cfg = SynthConfig(
        dp=2, mp=1, pp=2, steps=2, stage_layers=(3, 1), micro_batches=2, slow_rank=1, slow_factor=1.5, **TINY
    )
    res = generate(cfg, str(tmp_path), ranks=[0, 1, 2])
    truth = load_truth(str(tmp_path))
    assert truth.stage_layers == [3, 1] and truth.config["layers"] == 4
    (p,) = truth.planted
    assert (p["type"], p["rank"], p["stage"], p["factor"]) == ("device_slow", 1, 1, 1.5)
    assert p["excess_ns_per_step"] > 0
    # compute per step (non-NCCL kernels) as the traces show it
    for rank in (0, 1, 2):
        events = _load(res.traces[rank])["traceEvents"][:-1]
        steps = [(e["ts"], e["ts"] + e["dur"] + 1) for e in events if e.get("cat") == "ProfileStep"]
        per_step = [
            sum(e["dur"] for e in events if e.get("cat") == "Kernel" and "nccl" not in e["name"] and a <= e["ts"] < b)
            * 1000
            for a, b in steps
        ]
        assert per_step == pytest.approx(truth.compute_ns[rank].tolist(), rel=1e-4)
    stage = np.array([r["pp"] for r in truth.ranks])
    for st in (0, 1):
        assert truth.stage_compute_ns[st] == pytest.approx(truth.compute_ns[stage == st].mean())
    decoder = lambda r: sum(
        1
        for e in _load(res.traces[r])["traceEvents"][:-1]
        if e.get("cat") == "Forward" and e["name"].startswith("GPTDecoderLayer[")
    )
    assert decoder(0) == 3 * 2 * 2 and decoder(1) == 1 * 2 * 2  # layers x micro-batches x steps
    # stage 0 computes more, even against the slowed stage-1 rank 1
    assert truth.compute_ns[0].mean() > truth.compute_ns[1].mean()


def _schedule_from_truth(truth, rank, pp):
    """A rank's F/B sequence from its send/recv members in ordinal (launch) order: a forward on
    stage s > 0 begins by receiving activations (stage 0: ends by sending them), a backward on
    stage s < pp - 1 begins by receiving gradients (the last stage: ends by sending them)."""
    stage = truth.ranks[rank]["pp"]
    seq = []
    for inst in truth.instances:
        if inst["axis"] != "pp":
            continue
        sender, receiver = inst["members"]
        forward = truth.ranks[sender["rank"]]["pp"] < truth.ranks[receiver["rank"]]["pp"]
        for m, role in ((sender, "send"), (receiver, "recv")):
            if m["rank"] != rank:
                continue
            if forward and (role == "recv" or stage == 0):
                seq.append((inst["step"], m["ordinal"], "F"))
            elif not forward and (role == "recv" or stage == pp - 1):
                seq.append((inst["step"], m["ordinal"], "B"))
    return "".join(x for _, _, x in sorted(seq))


@pytest.mark.parametrize("pp,M", [(8, 10), (8, 3)])
def test_pp8_schedule_is_1f1b(tmp_path, pp, M):
    cfg = SynthConfig(dp=1, mp=1, pp=pp, steps=1, layers=pp, micro_batches=M, **TINY)
    generate(cfg, str(tmp_path), ranks=[])  # simulated, nothing written
    truth = load_truth(str(tmp_path))
    assert not any(r["written"] for r in truth.ranks)
    for r in truth.ranks:
        warm = min(pp - r["pp"] - 1, M)
        assert _schedule_from_truth(truth, r["rank"], pp) == "F" * warm + "FB" * (M - warm) + "B" * warm


def test_caused_waits_are_the_last_arrivals_share(skewed):
    """caused_wait_ns: at each MP/DP all-reduce, the member that started last made every other
    member wait; the host-stalled rank 5 causes most of it."""
    res, truth, _ = skewed
    want = np.zeros((8, 2), dtype=np.int64)
    for inst in truth.instances:
        if inst["axis"] in ("mp", "dp"):
            last = min(inst["members"], key=lambda m: (-m["start_ns"], m["rank"]))
            want[last["rank"], truth.steps.index(inst["step"])] += sum(m["wait_ns"] for m in inst["members"])
    assert (truth.caused_wait_ns == want).all()
    assert {r: list(v) for r, v in res.caused_wait_ns.items()} == {r: want[r].tolist() for r in range(8)}
    assert want.sum(axis=1).argmax() == 5
