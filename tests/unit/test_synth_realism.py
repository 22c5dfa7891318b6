"""The generator's realism options (docs/generator.md, "Realism"), checked from the written
traces: one global clock on which every member of a collective ends it at the same moment
(also across skewed hosts and with rank-named files), lock-step replicas whose groups end
microseconds apart, send/recv on one shared stream in Paddle's 1F1B order or on one stream per
neighbour, one-rank communicators, structural stage differences (embedding and data on the
first stage, head and loss on the last), and each planted anomaly's cost as the difference of
two generated runs. The matrix of tbp_synth.matrix is checked without generating its big
cases, except in the one slow test."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import msgspec
import numpy as np
import pytest

from tb_paddle_profile.trace import event_types as et_types
from tb_paddle_profile.trace.reader import read_trace
from tbp_synth import SynthConfig, generate
from tbp_synth.generator import (
    COMPUTE_STREAM,
    DP_STREAM,
    MP_STREAM,
    P2P_NEXT_STREAM,
    P2P_PREV_STREAM,
    P2P_SHARED_STREAM,
    PP_BWD_STREAM,
    PP_FWD_STREAM,
    clock_offset_ns,
    host_of,
)
from tbp_synth.matrix import BIG, cases, small_cases
from tbp_synth.truth import load_truth

TINY = dict(hidden=512, heads=8, seq_len=256, vocab=8192)
RANK_FILE = re.compile(r"^rank\d+_time_\d{4}(_\d\d){5}_\d{6}\.paddle_trace\.json$")


def _gen(out, cfg, jobs=2):
    res = generate(cfg, str(out), jobs=jobs)
    truth = load_truth(str(out))
    traces = {r: read_trace(Path(p).read_bytes(), Path(p).name) for r, p in res.traces.items()}
    return res, truth, traces


def _names(et, col):
    return np.array(et.names, dtype=object)[col].astype(str)


def _nccl_rows(et):
    d = et.device
    return np.flatnonzero((d.type == et_types.KERNEL) & np.char.startswith(_names(et, d.name), "ncclDevKernel"))


def _file_offset(path, truth, rank):
    """The rank's clock offset as its file shows it: its first ProfileStep's timestamp (the
    JSON's absolute ``ts``, whole microseconds) minus the truth's global start of that step."""
    events = msgspec.json.decode(Path(path).read_bytes())["traceEvents"]
    ts = min(int(e["ts"]) for e in events if e.get("cat") == "ProfileStep")
    return ts * 1000 - int(truth.step_start_ns[rank, 0])


def _to_global(et, truth, rank):
    """What to add to the reader's (origin-relative) times of a rank to get global ones: the
    truth's start of its first step minus the trace's."""
    h = et.host
    ps = np.flatnonzero(h.type == et_types.PROFILE_STEP)
    return int(truth.step_start_ns[rank, 0]) - int(h.start[ps].min())


def _matched_members(et, truth, rank):
    """The rank's NCCL kernels in the trace, in start order, paired with its truth member rows
    in start order: (trace start, trace end, stream, instance index) per kernel, global clock."""
    d = et.device
    rows = _nccl_rows(et)
    rows = rows[np.argsort(d.start[rows], kind="stable")]
    shift = _to_global(et, truth, rank)
    m = truth.members_of(rank)
    order = np.argsort(m["start_ns"], kind="stable")
    assert len(rows) == len(order), "rank %d: %d NCCL kernels, truth has %d members" % (rank, len(rows), len(order))
    return (
        d.start[rows] + shift,
        d.end[rows] + shift,
        d.stream[rows],
        m["instance"][order],
        m["start_ns"][order],
        m["end_ns"][order],
    )


# ----------------------------------------------------------------------------- clocks


@pytest.fixture(scope="module")
def rank_named(tmp_path_factory):
    """8 ranks named rank{r} on 2 hosts whose clocks are 1.73 ms apart, every realism option
    on, a GPU 10 % slower on rank 5."""
    cfg = SynthConfig.realistic(
        dp=2,
        mp=2,
        pp=2,
        steps=2,
        layers=2,
        micro_batches=3,
        gpus_per_node=4,
        names="rank",
        host_offsets_us=(412.0, 2142.0),
        slow_rank=5,
        slow_factor=1.1,
        **TINY,
    )
    return _gen(tmp_path_factory.mktemp("rank_named"), cfg)


def test_members_end_together_on_the_global_clock_across_skewed_hosts(rank_named):
    res, truth, traces = rank_named
    ends = {}
    for r, et in traces.items():
        start, end, _, inst, t_start, t_end = _matched_members(et, truth, r)
        # the trace's kernels, moved to the global clock by the host's offset, are the truth's
        assert np.array_equal(start, t_start) and np.array_equal(end, t_end)
        for i, e in zip(inst.tolist(), end.tolist()):
            ends.setdefault(i, set()).add(e)
    assert len(ends) == truth.n_instances
    assert all(len(e) == 1 for e in ends.values()), "members of an instance end apart"


def test_rank_named_files_carry_no_host_and_show_each_hosts_offset(rank_named):
    res, truth, traces = rank_named
    for r, path in res.traces.items():
        name = Path(path).name
        assert RANK_FILE.match(name) and name.startswith("rank%d_" % r), name
        assert "gpunode" not in name
    seen = {r: _file_offset(p, truth, r) for r, p in res.traces.items()}
    for r, off in seen.items():  # within the microsecond the file's timestamps keep
        assert abs(off - truth.host_offsets_ns[host_of(res.config, r)]) < 1000
    assert abs(seen[4] - seen[0] - 1_730_000) < 2000
    assert truth.host_offsets_ns[1] - truth.host_offsets_ns[0] == 1_730_000


def test_every_host_has_its_own_offset(tmp_path):
    """8 hosts of one GPU each, Paddle's default worker names: 8 distinct offsets, each the
    one the host's trace shows."""
    cfg = SynthConfig.realistic(dp=8, mp=1, pp=1, steps=1, layers=1, micro_batches=1, gpus_per_node=1, **TINY)
    res, truth, traces = _gen(tmp_path / "realistic", cfg)
    seen = {r: _file_offset(p, truth, r) for r, p in res.traces.items()}
    for r, off in seen.items():
        assert abs(off - truth.host_offsets_ns[r]) < 1000
    assert len(set(truth.host_offsets_ns)) == 8
    assert min(np.diff(sorted(seen.values()))) > 2000  # told apart by the files alone
    # Paddle's default names, with host numbers that do not follow Fleet's host order and
    # export times (in the file names) that do not follow the ranks
    hosts = []
    stamps = []
    for r, path in res.traces.items():
        m = re.match(
            r"^host_gpunode(\d+)pid_(\d+)_time_(\d{4}(?:_\d\d){5}_\d{6})\.paddle_trace\.json$", Path(path).name
        )
        assert m and truth.ranks[r]["hostname"] == "gpunode" + m.group(1)
        assert int(m.group(2)) == truth.ranks[r]["pid"]
        hosts.append(int(m.group(1)))
        stamps.append(m.group(3))
    assert sorted(hosts) == list(range(8)) and hosts != list(range(8))
    assert stamps != sorted(stamps)
    plain = replace(cfg, host_names="ordered", export_jitter_us=0.0)
    res, _, _ = _gen(tmp_path / "plain", plain, jobs=1)
    names = [Path(res.traces[r]).name for r in range(8)]
    assert [n.split("pid_")[0] for n in names] == ["host_gpunode%d" % r for r in range(8)]


def test_lock_step_replicas_end_different_groups_microseconds_apart(tmp_path):
    """DP4 x MP2, the default (GPU-bound) model: the replicas' MP all-reduces are different
    instances that often end within a few microseconds of each other, on the global clock."""
    cfg = SynthConfig.realistic(dp=4, mp=2, pp=1, steps=4, layers=2, micro_batches=2)
    res, truth, traces = _gen(tmp_path, cfg)
    ends, group = [], []
    for r, et in traces.items():
        start, end, stream, inst, _, _ = _matched_members(et, truth, r)
        mp = stream == MP_STREAM
        ends.append(end[mp])
        group.append(np.full(mp.sum(), truth.ranks[r]["dp"]))
    ends, group = np.concatenate(ends), np.concatenate(group)
    o = np.argsort(ends, kind="stable")
    ends, group = ends[o], group[o]
    # per MP kernel end, the nearest end of another replica's MP kernel
    nearest = np.full(len(ends), np.iinfo(np.int64).max)
    for g in range(4):
        mine, other = group == g, ends[group != g]
        j = np.searchsorted(other, ends[mine])
        lo = np.abs(ends[mine] - other[np.clip(j - 1, 0, len(other) - 1)])
        hi = np.abs(other[np.clip(j, 0, len(other) - 1)] - ends[mine])
        nearest[mine] = np.minimum(lo, hi)
    assert np.mean(nearest < 10_000) > 0.10
    assert np.mean(nearest < 2_000) > 0.01
    assert nearest.min() > 0  # never the same moment: these are different instances


# ----------------------------------------------------------------------------- send / recv


def _p2p_sequence(et):
    """Per slot of the trace (Forward model event or Gradient Backward) in order, its phase,
    and the send_v2 / recv_v2 operators between it and the next slot ("s" / "r")."""
    h = et.host
    hn = _names(et, h.name)
    slot = np.flatnonzero(
        ((h.type == et_types.FORWARD) & (hn == "GPTForCausalLMPipe"))
        | ((h.type == et_types.BACKWARD) & (hn == "Gradient Backward"))
    )
    slot = slot[np.argsort(h.start[slot])]
    ops = np.flatnonzero(np.isin(hn, ("send_v2 dygraph", "recv_v2 dygraph")))
    ops = ops[np.argsort(h.start[ops])]
    out = []
    for i, s in enumerate(slot):
        nxt = h.start[slot[i + 1]] if i + 1 < len(slot) else np.iinfo(np.int64).max
        between = ops[(h.start[ops] > h.end[s]) & (h.start[ops] < nxt)]
        out.append(
            (
                "F" if h.type[s] == et_types.FORWARD else "B",
                "".join("s" if hn[o].startswith("send") else "r" for o in between),
            )
        )
    return out


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    cfg = SynthConfig.realistic(dp=1, mp=1, pp=4, steps=1, layers=4, micro_batches=6, gpus_per_node=2, **TINY)
    return _gen(tmp_path_factory.mktemp("shared"), cfg)


def test_shared_stream_send_recv_follow_1f1b_order(shared):
    """All of a stage's sends and receives on one stream; between two slots with one
    neighbour the activations go first (F then B: send first; B then F: receive first);
    with both neighbours even stages send first and odd stages receive first."""
    res, truth, traces = shared
    for r, et in traces.items():
        stage = truth.ranks[r]["pp"]
        _, _, stream, _, _, _ = _matched_members(et, truth, r)
        sendrecv = stream[np.isin(stream, (P2P_SHARED_STREAM, PP_BWD_STREAM, P2P_PREV_STREAM, P2P_NEXT_STREAM))]
        assert len(sendrecv) and set(sendrecv.tolist()) == {P2P_SHARED_STREAM}
        seq = _p2p_sequence(et)
        assert len(seq) == 12
        checked = 0
        for (ph, ops), (nph, _) in zip(seq, seq[1:]):
            if len(ops) != 2:
                continue
            checked += 1
            if ph != nph:
                assert ops == ("sr" if ph == "F" else "rs"), (stage, seq)
            else:
                assert ops == ("rs" if stage % 2 else "sr"), (stage, seq)
        if 0 < stage < 3:
            assert checked >= 8


def _pairs_in_order(truth, rank_a, rank_b, inst_of):
    return [i for i in inst_of[rank_a] if i in set(inst_of[rank_b])]


def test_send_recv_is_fifo_and_in_one_order_per_pair(shared):
    """Each neighbour pair meets its send/recv instances in the same order on both sides
    (the k-th send from a to b is b's k-th receive from a), as their kernels start."""
    res, truth, traces = shared
    inst_of = {}
    for r, et in traces.items():
        _, _, stream, inst, _, _ = _matched_members(et, truth, r)
        inst_of[r] = inst[stream == P2P_SHARED_STREAM].tolist()
    c = truth.columns
    for a in range(3):
        b = a + 1
        on_a = _pairs_in_order(truth, a, b, inst_of)
        on_b = _pairs_in_order(truth, b, a, inst_of)
        assert on_a == on_b and len(on_a) == 2 * 6
        for direction in ((a, b), (b, a)):
            sent = [i for i in on_a if c["mem_rank"][c["inst_ptr"][i]] == direction[0]]
            assert len(sent) == 6  # 6 micro-batches: activations one way, gradients back


def test_per_peer_streams_are_one_per_neighbour(tmp_path):
    cfg = SynthConfig.realistic(
        dp=1, mp=1, pp=3, steps=1, layers=3, micro_batches=4, gpus_per_node=3, p2p_streams="per_peer", **TINY
    )
    res, truth, traces = _gen(tmp_path, cfg)
    c = truth.columns
    _, _, stream, inst, _, _ = _matched_members(traces[1], truth, 1)  # the middle stage
    seen = set()
    for s, i in zip(stream.tolist(), inst.tolist()):
        if truth.kind_names[c["inst_kind"][i]] != "send_recv":
            continue
        peer = (set(c["mem_rank"][c["inst_ptr"][i] : c["inst_ptr"][i + 1]].tolist()) - {1}).pop()
        assert s == {0: P2P_PREV_STREAM, 2: P2P_NEXT_STREAM}[peer]
        seen.add(s)
    assert seen == {P2P_PREV_STREAM, P2P_NEXT_STREAM}


def test_per_direction_streams_carry_activations_and_gradients(tmp_path):
    cfg = SynthConfig.realistic(
        dp=1, mp=1, pp=3, steps=1, layers=3, micro_batches=4, gpus_per_node=3, p2p_streams="per_direction", **TINY
    )
    res, truth, traces = _gen(tmp_path, cfg)
    c = truth.columns
    _, _, stream, inst, _, _ = _matched_members(traces[1], truth, 1)
    for s, i in zip(stream.tolist(), inst.tolist()):
        if truth.kind_names[c["inst_kind"][i]] != "send_recv":
            continue
        sender, receiver = c["mem_rank"][c["inst_ptr"][i] : c["inst_ptr"][i + 1]].tolist()
        assert s == (PP_FWD_STREAM if receiver > sender else PP_BWD_STREAM)


# ----------------------------------------------------------------------------- communicators


def test_one_rank_communicators_launch_nccl_kernels(tmp_path):
    cfg = SynthConfig.realistic(dp=1, mp=1, pp=2, steps=2, layers=2, micro_batches=2, gpus_per_node=2, **TINY)
    res, truth, traces = _gen(tmp_path / "on", cfg)
    c = truth.columns
    sizes = np.diff(c["inst_ptr"])
    axis = np.array(truth.axis_names)[c["inst_axis"]]
    one = sizes == 1
    assert set(axis[one].tolist()) == {"mp", "dp"} and (sizes[axis == "mp"] == 1).all()
    for r, et in traces.items():
        _, _, stream, inst, _, _ = _matched_members(et, truth, r)
        alone = one[inst]
        assert alone.sum() > 0
        assert set(stream[alone].tolist()) <= {MP_STREAM, DP_STREAM, COMPUTE_STREAM}
        assert (stream == DP_STREAM).sum() == ((axis[inst] == "dp") & alone).sum() > 0
    res, truth, traces = _gen(tmp_path / "off", replace(cfg, one_rank_comms=False))
    assert (np.diff(truth.columns["inst_ptr"]) >= 2).all()
    for r, et in traces.items():
        streams = set(et.device.stream[_nccl_rows(et)].tolist())
        assert MP_STREAM not in streams and DP_STREAM not in streams


# ----------------------------------------------------------------------------- structure


def test_first_stage_embeds_and_reads_last_stage_heads_and_computes_more(tmp_path):
    """DP2 x PP4, a control: EmbeddingPipe and the data loader on stage 0 only, HeadPipe and
    the cross-entropy kernels on stage 3 only; stage 3 computes more than the middle stages
    on every replica; the truth calls it structure and plants nothing."""
    cfg = SynthConfig.realistic(dp=2, mp=1, pp=4, steps=2, layers=4, micro_batches=4, gpus_per_node=4, **TINY)
    res, truth, traces = _gen(tmp_path, cfg)
    assert truth.planted == []
    compute = {}
    for r, et in traces.items():
        stage = truth.ranks[r]["pp"]
        h, d = et.host, et.device
        hn, dn = _names(et, h.name), _names(et, d.name)
        fwd = set(hn[h.type == et_types.FORWARD].tolist())
        assert ("EmbeddingPipe" in fwd) == (stage == 0)
        assert ("HeadPipe" in fwd) == (stage == 3)
        assert (h.type == et_types.DATALOADER).any() == (stage == 0)
        ce = np.char.find(dn.astype(str), "CrossEntropy") >= 0
        assert ce.any() == (stage == 3)
        k = (d.type == et_types.KERNEL) & ~np.char.startswith(dn, "ncclDevKernel")
        compute[r] = int((d.end[k] - d.start[k]).sum())
    for dp in range(2):
        by_stage = {truth.ranks[r]["pp"]: v for r, v in compute.items() if truth.ranks[r]["dp"] == dp}
        assert by_stage[3] > 1.2 * max(by_stage[1], by_stage[2])
    s = truth.structural
    assert s["stage_parts"] == [["data_loader", "embedding"], [], [], ["head", "loss"]]
    assert s["stage_compute_excess"][3] > 0.2 and min(s["stage_compute_excess"]) == 0.0
    mean_trace = [
        np.mean([v for r, v in compute.items() if truth.ranks[r]["pp"] == p]) / len(truth.steps) for p in range(4)
    ]
    assert np.allclose(mean_trace, s["stage_compute_ns"], rtol=1e-9)


# ----------------------------------------------------------------------------- costs


def _job_step(traces):
    """The job's mean step time from the traces: mean over ranks and steps of the
    ProfileStep durations."""
    d = []
    for et in traces.values():
        h = et.host
        ps = h.type == et_types.PROFILE_STEP
        d.extend((h.end[ps] - h.start[ps]).tolist())
    return float(np.mean(d))


def test_each_planted_cost_is_the_difference_of_two_generated_runs(tmp_path):
    """Two anomalies at once (a 20 % slower GPU on the last stage and a host stall on
    stage 0 of the same pipeline, 2 ms) with a spread of GPU speeds: each one's job_cost is this run's mean step minus
    that of the run generated without it, its saving at its role peers' speed the same against
    the run where it has its stage peers' median GPU speed."""
    cfg = SynthConfig.realistic(
        dp=2,
        mp=2,
        pp=2,
        steps=4,
        layers=2,
        micro_batches=2,
        gpus_per_node=4,
        gpu_speed_sigma=0.02,
        slow_rank=3,
        slow_factor=1.2,
        slow_host_rank=1,
        host_delay_us=2000,
    )
    _, truth, traces = _gen(tmp_path / "both", cfg)
    job = _job_step(traces)
    assert job == pytest.approx(truth.job_step_ns, abs=2)
    by_type = {p["type"]: p for p in truth.planted}
    assert set(by_type) == {"device_slow", "host_stall"}
    slow, stall = by_type["device_slow"], by_type["host_stall"]
    _, _, t_noslow = _gen(tmp_path / "noslow", replace(cfg, slow_rank=None))
    _, _, t_nostall = _gen(tmp_path / "nostall", replace(cfg, slow_host_rank=None))
    assert slow["job_cost_ns_per_step"] == pytest.approx(job - _job_step(t_noslow), abs=4)
    assert stall["job_cost_ns_per_step"] == pytest.approx(job - _job_step(t_nostall), abs=4)
    assert slow["job_cost_ns_per_step"] > 1e5 and stall["job_cost_ns_per_step"] > 1e5
    # at its role peers' speed: the median GPU speed of the other ranks of stage 1
    peers = [cfg.gpu_speed_of(r) for r in range(8) if r != 3 and truth.ranks[r]["pp"] == 1]
    assert slow["peer_gpu_speed"] == pytest.approx(float(np.median(peers)))
    assert slow["gpu_speed"] != slow["peer_gpu_speed"]
    _, _, t_peer = _gen(tmp_path / "peer", replace(cfg, slow_rank=None, gpu_speed={3: float(np.median(peers))}))
    saving = job - _job_step(t_peer)
    assert slow["saving_at_peer_speed_ns_per_step"] == pytest.approx(saving, abs=4)
    assert slow["saving_at_peer_speed_ns_per_step"] != slow["job_cost_ns_per_step"]


def test_same_seed_same_noise_in_the_control(tmp_path):
    """The control of a slow-GPU run has every other rank's kernels exactly as long (the noise
    is drawn in program order, not from the timing)."""
    cfg = SynthConfig.realistic(
        dp=2, mp=1, pp=1, steps=2, layers=1, micro_batches=1, gpus_per_node=2, slow_rank=1, slow_factor=1.3, **TINY
    )
    _, _, a = _gen(tmp_path / "a", cfg)
    _, _, b = _gen(tmp_path / "b", replace(cfg, slow_rank=None))
    for r in (0, 1):
        da, db = a[r].device, b[r].device
        ka = (da.type == et_types.KERNEL) & ~np.char.startswith(_names(a[r], da.name), "nccl")
        kb = (db.type == et_types.KERNEL) & ~np.char.startswith(_names(b[r], db.name), "nccl")
        dur_a, dur_b = (da.end - da.start)[ka], (db.end - db.start)[kb]
        if r == 0:
            assert np.array_equal(dur_a, dur_b)
        else:
            assert np.allclose(dur_a, dur_b * 1.3, rtol=1e-6, atol=2)


# ----------------------------------------------------------------------------- matrix


def test_the_matrix_has_every_case_realistic_and_consistent():
    all_ = cases()
    want = {
        "dp4pp4mp4-control",
        "dp4pp4mp4-gpu10-last",
        "dp4pp4mp4-gpu10-stage1",
        "dp4pp4mp4-loader3ms-first",
        "dp32-control",
        "dp32-gpu20",
        "dp2pp8-mb16-control",
        "dp8pp4mp4-gpu15-middle",
        "dp16pp8mp8-loader6ms-first",
        "rank-named-2hosts-control",
        "rank-named-2hosts-gpu10",
        "dp4pp4mp4-gpu5-last",
    }
    assert want <= set(all_)
    assert BIG <= set(all_) and not (BIG & set(small_cases()))
    assert any("two" in n for n in all_)
    stages = {"first": set(), "middle": set(), "last": set()}
    for name, cfg in all_.items():
        cfg.validate()
        assert cfg.steps >= 4 and cfg.kernel_jitter == "lognormal" and cfg.one_rank_comms
        assert cfg.pipeline_layers
        n_hosts = host_of(cfg, cfg.world() - 1) + 1
        offsets = [clock_offset_ns(cfg, h) for h in range(n_hosts)]
        assert len(set(offsets)) == n_hosts, name
        planted = list(cfg.slow_ranks()) + list(cfg.slow_host_ranks())
        assert bool(planted) == ("control" not in name), name
        for r in planted:
            pp = (r // cfg.mp) % cfg.pp
            stages["first" if pp == 0 else "last" if pp == cfg.pp - 1 else "middle"].add(
                "gpu" if r in cfg.slow_ranks() else "loader"
            )
    assert all(v == {"gpu", "loader"} for v in stages.values()), stages
    big = all_["dp16pp8mp8-loader6ms-first"]
    assert big.world() == 1024 and host_of(big, 1023) + 1 == 128
    assert host_of(all_["dp4pp4mp4-control"], 63) + 1 == 8
    assert host_of(all_["dp32-control"], 31) + 1 == 4
    light = cases(light=True)
    assert list(light) == list(all_)
    for name, cfg in light.items():
        cfg.validate()
        full = all_[name].micro_batches
        assert cfg.micro_batches == (max(2, full // 2) if full > 2 else full)
    named = all_["rank-named-2hosts-control"]
    assert named.names == "rank" and clock_offset_ns(named, 1) - clock_offset_ns(named, 0) == 1_730_000


@pytest.mark.slow
def test_the_1024_rank_case_generates_with_its_truth(tmp_path):
    import os

    cfg = cases()["dp16pp8mp8-loader6ms-first"]
    res = generate(cfg, str(tmp_path), jobs=os.cpu_count() or 1)
    truth = load_truth(str(tmp_path))
    assert len(res.traces) == 1024 and truth.world == 1024
    (p,) = truth.planted
    assert p["type"] == "host_stall" and p["stage"] == 0 and p["job_cost_ns_per_step"] > 3e6
    excess = truth.structural["stage_compute_excess"]
    assert excess[7] > 0.2 and max(excess[1:7]) < 0.05


def test_cli_preset_and_case(tmp_path, capsys):
    from tbp_synth.__main__ import main as synth_main

    out = tmp_path / "preset"
    assert (
        synth_main(
            [
                "--out",
                str(out),
                "--preset",
                "realistic",
                "--dp",
                "1",
                "--mp",
                "1",
                "--pp",
                "2",
                "--layers",
                "2",
                "--micro-batches",
                "2",
                "--steps",
                "1",
                "--hidden",
                "512",
                "--heads",
                "8",
                "--seq-len",
                "256",
                "--p2p-streams",
                "per_peer",
                "--quiet",
                "--jobs",
                "1",
            ]
        )
        == 0
    )
    cfg = load_truth(str(out)).config
    assert cfg["kernel_jitter"] == "lognormal" and cfg["one_rank_comms"]
    assert cfg["p2p_streams"] == "per_peer" and cfg["names"] == "default"  # the flag wins
    out = tmp_path / "case"
    assert synth_main(["--out", str(out), "--case", "rank-named-2hosts-gpu10", "--quiet", "--jobs", "2"]) == 0
    truth = load_truth(str(out))
    assert [(p["type"], p["rank"]) for p in truth.planted] == [("device_slow", 5)]
    assert truth.host_offsets_ns == [412_000, 2_142_000]
    assert "rank 5 (stage 0)" in capsys.readouterr().out


@pytest.mark.parametrize("layout", ["shared", "per_peer"])
def test_truth_ordinals_are_the_readers_on_realistic_runs(tmp_path, layout):
    """With send/recv paired and on one or two streams, each member's ordinal (position among
    the rank's instances of its step and kind) is still the one the project's reader gives the
    trace's kernel, with the same duration (wait + transfer)."""
    from tb_paddle_profile.analysis.collectives import KIND_LABELS
    from tb_paddle_profile.analysis.summarize import summarize_file

    cfg = SynthConfig.realistic(
        dp=2, mp=1, pp=4, steps=2, layers=4, micro_batches=5, gpus_per_node=4, p2p_streams=layout, **TINY
    )
    res = generate(cfg, str(tmp_path), jobs=2)
    truth = load_truth(str(tmp_path))
    members = {}
    for inst in truth.instances:
        for m in inst["members"]:
            members[(m["rank"], inst["step"], inst["kind"], m["ordinal"])] = (inst, m)
    for r, path in res.traces.items():
        s = summarize_file(path)
        c = s.parallel.collectives
        seen = {(r, c.step[i], KIND_LABELS[c.kind[i]], c.ordinal[i]): c.duration_ns[i] for i in range(len(c.kind))}
        assert set(seen) == {k for k in members if k[0] == r}
        for key, dur in seen.items():
            inst, m = members[key]
            assert abs(dur - (m["wait_ns"] + inst["transfer_ns"])) <= 2
