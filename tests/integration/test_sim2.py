"""tbp_sim2, the independent simulator (docs/sim2.md): its own invariants, not the analysis' accuracy
(tools/sim2_check.py reports that).

- the members of every collective and send/recv end within the configured spread on the global clock,
  in the simulator and in the files written (each rank's times less its host's clock offset);
- the truth's ordinals and steps are the tool's per-rank instances (ParallelView.collectives), rank by
  rank, and its worker and host names are those the tool reads;
- each anomaly's cost is the step with it less the step without it, bounded by what the anomaly adds;
- every send/recv layout runs to the end (no deadlock) with the same instances;
- `tb-paddle-profile summary` reads every file; the CLI writes a run and rejects a bad anomaly.
"""

import collections
import dataclasses
import json

import numpy as np
import pytest

from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.cli import commands as cli
from tbp_sim2 import Anomaly, SimConfig
from tbp_sim2.__main__ import main as sim_main
from tbp_sim2.engine import simulate, step_time
from tbp_sim2.generate import generate
from tbp_sim2.program import COMPUTE, COMPUTE_STREAM
from tbp_sim2.truth import TRUTH_FILE, costs, instances, load

SPREAD_US = 3.0
# DP2 x PP2 x MP2 on two hosts 1.2 ms apart, Paddle's default worker names, rank 5 (stage 0) 20 % slower
SMALL = SimConfig(
    dp=2,
    pp=2,
    mp=2,
    hosts=2,
    layers=4,
    micro_batches=4,
    steps=2,
    end_spread_us=SPREAD_US,
    host_offsets_ms=(0.4, -0.8),
    anomalies=(Anomaly("slow_gpu", 5, 20),),
)


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("sim2")
    truth = generate(SMALL, str(out))
    digests = {p.name: digest_of(summarize_file(str(p))) for p in sorted(out.glob("*.paddle_trace.json"))}
    return out, load(str(out)), truth, digests


def test_members_end_within_the_spread_on_the_global_clock():
    eng = simulate(SMALL)
    inst = instances(eng)
    kinds = collections.Counter((i["kind"], i["axis"]) for i in inst)
    assert set(kinds) == {
        ("all_reduce", "mp"),
        ("all_reduce", "dp"),
        ("all_reduce", "ppg"),
        ("broadcast", "ppg"),
        ("send_recv", "p2p"),
    }
    spreads = np.array([i["end_spread_ns"] for i in inst])
    assert spreads.max() <= SPREAD_US * 1000
    assert spreads.max() > SPREAD_US * 1000 / 2 and np.median(spreads) > 0  # not all at one nanosecond


def test_ends_in_the_files_less_the_host_offsets_agree(small_run):
    """Each member's end as its file has it (origin + start + duration), less its host's planted offset:
    the members of one instance within the spread, plus the us the origin's truncated ts may lose."""
    _, t, _, digests = small_run
    ends = {}
    for name, d in digests.items():
        r = t.by_file()[name]
        c = d.parallel.collectives
        for kind, step, ordinal, start, dur in zip(c.kind, c.step, c.ordinal, c.start_ns, c.duration_ns):
            ends[(r["rank"], step, KIND_LABELS[kind], ordinal)] = (
                d.meta.origin_unix_ns + start + dur - r["clock_offset_mid_ns"]
            )
    worst = 0
    for i in t.instances:
        e = [ends[(m["rank"], i["step"], i["kind"], m["ordinal"])] for m in i["members"]]
        worst = max(worst, max(e) - min(e))
    assert 0 < worst <= SPREAD_US * 1000 + 1_200


def test_truth_ordinals_are_the_tools_instances_rank_by_rank(small_run):
    _, t, _, digests = small_run
    assert len(digests) == SMALL.world
    want = collections.defaultdict(collections.Counter)
    for i in t.instances:
        for m in i["members"]:
            want[m["rank"]][(i["step"], i["kind"], m["ordinal"])] += 1
    for name, d in digests.items():
        r = t.by_file()[name]
        c = d.parallel.collectives
        got = collections.Counter((s, KIND_LABELS[k], o) for k, s, o in zip(c.kind, c.step, c.ordinal))
        assert got == want[r["rank"]], name
        assert (d.meta.worker, d.meta.hostname) == (r["worker"], r["hostname"])
        assert d.device_id == r["gpu"]
        assert sorted({s.step for s in d.parallel.steps}) == list(range(SMALL.warmup, SMALL.warmup + SMALL.steps))


def test_the_cost_is_the_step_with_less_the_step_without(small_run):
    _, t, truth, _ = small_run
    (a,) = t.anomalies
    assert t.step_ns == step_time(SMALL) and t.healthy_step_ns == step_time(SMALL.without())
    assert a["cost_ns_per_step"] == pytest.approx(t.step_ns - t.healthy_step_ns)
    assert step_time(SMALL) == step_time(SMALL)  # deterministic: the same seed, the same job
    # the job cannot lose more than the slow rank's own extra compute
    eng = simulate(SMALL)
    st = eng.stages[SMALL.coords(5)[1]]
    lane = SMALL.coords(5)[0] * SMALL.mp + SMALL.coords(5)[2]
    rec = [k for k in range(len(st.p.k_name)) if st.p.k_kind[k] == COMPUTE and st.p.k_step[k] >= SMALL.warmup]
    extra = (st.k_end[rec, lane] - st.k_start[rec, lane]).sum() / SMALL.steps * (0.2 / 1.2)
    assert 0 < a["cost_ns_per_step"] <= extra


def test_two_anomalies_marginal_and_alone_costs():
    """Loader +3 ms on a stage-0 rank and a 15 % slower GPU on the last stage: each one's cost is the step
    with both less the step without it; alone, less the healthy step; a loader costs at most its delay."""
    cfg = dataclasses.replace(
        SMALL, steps=2, layers=2, micro_batches=2, anomalies=(Anomaly("loader", 0, 3e6), Anomaly("slow_gpu", 7, 15))
    )
    both = step_time(cfg)
    c = costs(cfg, both)
    assert c["healthy_step_ns"] == step_time(cfg.without())
    for a, x in zip(cfg.anomalies, c["anomalies"]):
        assert x["cost_ns_per_step"] == pytest.approx(both - step_time(cfg.without(a)))
        alone = dataclasses.replace(cfg, anomalies=(a,))
        assert x["alone_cost_ns_per_step"] == pytest.approx(step_time(alone) - c["healthy_step_ns"])
        assert x["alone_cost_ns_per_step"] > 0
    assert c["anomalies"][0]["alone_cost_ns_per_step"] <= 3e6 * 1.001


@pytest.mark.parametrize("p2p", ["shared", "per_peer", "per_direction"])
def test_every_send_recv_layout_runs_to_the_end(p2p):
    """Four stages, three micro-batches (an odd number, so that warm-up and steady phases differ by stage)."""
    cfg = SimConfig(dp=1, pp=4, mp=1, layers=4, micro_batches=3, steps=1, p2p=p2p, one_rank_comms=True)
    eng = simulate(cfg)
    inst = instances(eng)
    pairs = sorted(
        (i["step"], tuple((m["rank"], m["ordinal"], m["direction"]) for m in i["members"]))
        for i in inst
        if i["kind"] == "send_recv"
    )
    assert len(pairs) == 2 * 3 * (cfg.pp - 1)
    streams = {st.p.k_stream[k] for st in eng.stages for k in range(len(st.p.k_name)) if st.p.k_axis[k] == "p2p"}
    assert len(streams) == (1 if p2p == "shared" else 2)
    shared = instances(simulate(dataclasses.replace(cfg, p2p="shared")))
    assert pairs == sorted(
        (i["step"], tuple((m["rank"], m["ordinal"], m["direction"]) for m in i["members"]))
        for i in shared
        if i["kind"] == "send_recv"
    )


def test_compute_waits_for_the_mp_all_reduce_and_streams_run_in_order():
    eng = simulate(SMALL)
    for st in eng.stages:
        p = st.p
        for k, deps in enumerate(p.k_deps):
            for d in deps:
                assert (st.k_start[k] >= st.k_end[d]).all()
        for q in st.queues.values():
            assert (st.k_start[q[1:]] >= st.k_end[q[:-1]]).all()
        comp = st.queues[COMPUTE_STREAM]
        assert (st.k_start[comp] >= st.k_ready[comp]).all()


def test_summary_reads_every_file(small_run, capsys):
    out, *_ = small_run
    assert cli.main(["summary", str(out), "--no-cache"]) == 0
    assert capsys.readouterr().out.count("Overview Summary") == SMALL.world


def test_cli_writes_a_run_and_rejects_a_bad_anomaly(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        sim_main(
            [
                "--out",
                str(out),
                "--dp",
                "1",
                "--pp",
                "2",
                "--mp",
                "1",
                "--layers",
                "2",
                "--micro-batches",
                "2",
                "--steps",
                "1",
                "--names",
                "rank",
                "--loader",
                "0:2ms",
            ]
        )
        == 0
    )
    assert sorted(p.name.split("_time_")[0] for p in out.glob("*.paddle_trace.json")) == ["rank0", "rank1"]
    truth = json.loads((out / TRUTH_FILE).read_text())
    assert truth["anomalies"][0]["kind"] == "loader" and truth["anomalies"][0]["rank"] == 0
    capsys.readouterr()
    assert sim_main(["--out", str(tmp_path / "bad"), "--dp", "1", "--pp", "2", "--mp", "1", "--loader", "1:3ms"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tbp_sim2: the data loader runs on stage-0 ranks only (rank 1 is not)"]
    assert not (tmp_path / "bad").exists()


def test_overlapped_dp_buckets_run_beside_the_backward_and_gate_the_optimizer():
    """dp_overlap: a bucket's all-reduce starts during the last backward, the backward's next kernels do not
    wait for it, the optimizer's first kernel does (the backward used to wait for every bucket)."""
    cfg = SimConfig(dp=4, pp=1, mp=1, hosts=2, layers=4, micro_batches=2, steps=1, dp_overlap=True, dp_buckets=2)
    eng = simulate(cfg)
    st = eng.stages[0]
    p = st.p
    rec = [k for k in range(len(p.k_name)) if p.k_step[k] == cfg.warmup]
    dp = [k for k in rec if p.k_axis[k] == "dp"]
    assert len(dp) == 2
    norm = next(k for k in rec if p.k_name[k].startswith("void phi::funcs::ReduceAnyKernel"))
    assert all((st.k_start[norm] > st.k_end[k]).all() for k in dp)
    # compute kernels launched after the first bucket and before the optimizer, running while it transfers
    after = [k for k in rec if dp[0] < k < norm and p.k_kind[k] == COMPUTE]
    assert after and (st.k_start[after[0]] < st.k_end[dp[0]]).all()
