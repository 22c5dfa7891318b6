"""The verdict by cost (analysis/crossrank/cost.py): each rank unlike its role peers is replayed at their
speed, and the step it saves is its one cost, in the verdict, the findings and the straggler what-if.

Held to what we did not compute: the generator's planted truth (tbp_synth.truth: per anomaly
``saving_at_peer_speed_ns_per_step``, the job's step minus the same run simulated with that rank at its
role peers' GPU speed and host, and ``job_cost_ns_per_step``, the same against the run without the
anomaly), the generator's simulated step time, and real Paddle 3.3.1 Fleet runs on CPU/gloo (their
info.rank*.json say which rank was slowed; a control run of the same script gives the step time
without it).

Runs: realistic generator options (lognormal kernel noise, a spread of GPU speeds, PipelineLayer stages
with EmbeddingPipe/HeadPipe and the data read on the first stage, Paddle's default worker names, skewed
host clocks) on DP4 x PP4 x MP2 and DP8 x MP2, with stragglers on the first, a middle and the last
stage, a small one, two at once, data-loader and host stalls, and controls.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank.whatif import analyze_whatif
from tb_paddle_profile.analysis.crossrank.model import CAVEAT
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.v1 import whatif_pb2 as wpb
from tbp_synth import SynthConfig, generate
from tbp_synth.truth import load_truth

REAL = Path(__file__).resolve().parents[1] / "data" / "crossrank" / "real-fleet-cpu-gloo"

COST_TOLERANCE = 0.10  # the verdict's cost against the planted saving
WHATIF_TOLERANCE = 0.05  # the straggler what-if's saving against it
REPLAY_TOLERANCE = 0.01  # the unchanged replay against the traced step
# Cases where the replay's saving is known to miss the planted one by more than WHATIF_TOLERANCE (the
# verdict's COST_TOLERANCE still holds there), with what is known of why. None today.
WHATIF_KNOWN_GAP: dict = {}
# a planted anomaly the job pays less than this for (ns per step) may be named as absorbed or not at all
NEGLIGIBLE_NS = 200_000


def _r(dp, pp, mp, PP, MP):
    """Fleet's rank of coordinates (dp, pp, mp)."""
    return (dp * PP + pp) * MP + mp


def _real(**kw) -> SynthConfig:
    # the realistic options whose collectives today's matcher joins completely (one stream per
    # send/recv direction, no one-rank communicators); the default (GPU-bound) model size
    base = dict(
        kernel_jitter="lognormal",
        kernel_sigma=0.02,
        gpu_speed_sigma=0.003,
        pipeline_layers=True,
        names="default",
        clock_skew_us=2000.0,
        steps=2,
    )
    base.update(kw)
    return SynthConfig(**base)


L = dict(dp=4, pp=4, mp=2, layers=8, micro_batches=4)  # 32 ranks on 4 hosts
D = dict(dp=8, pp=1, mp=2, layers=2, micro_batches=2, gpus_per_node=4)  # 16 ranks on 4 hosts
CASES = {
    "gpu10-last": _real(**L, slow_rank=_r(1, 3, 1, 4, 2), slow_factor=1.10),
    "gpu10-first": _real(**L, slow_rank=_r(2, 0, 0, 4, 2), slow_factor=1.10),
    "gpu15-middle": _real(**L, slow_rank=_r(3, 2, 1, 4, 2), slow_factor=1.15),
    "gpu5-last": _real(**L, slow_rank=_r(0, 3, 0, 4, 2), slow_factor=1.05),
    "two-gpu10-last-host8ms-middle": _real(
        **L, slow_rank=_r(2, 3, 0, 4, 2), slow_factor=1.10, slow_host_rank=_r(1, 1, 1, 4, 2), host_delay_us=8000
    ),
    "loader3ms-first": _real(**L, slow_host_rank=_r(3, 0, 1, 4, 2), host_delay_us=3000),
    "host12ms-middle": _real(**L, slow_host_rank=_r(0, 2, 1, 4, 2), host_delay_us=12000),
    # a small model: the 12 ms stall is a third of the step, and the host, once late, paces the kernels
    "host12ms-middle-small": _real(
        **L, slow_host_rank=_r(0, 2, 1, 4, 2), host_delay_us=12000, hidden=2048, heads=16, seq_len=1024, vocab=32000
    ),
    "dp-loader3ms": _real(**D, slow_host_rank=11, host_delay_us=3000),
    "dp-gpu10": _real(**D, slow_rank=6, slow_factor=1.10),
    "control": _real(**L),
    "control-unbalanced": _real(**dict(L, stage_layers=(1, 3, 2, 2))),
}


@pytest.fixture(scope="module", params=list(CASES))
def case(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    res = generate(CASES[request.param], str(out))
    digests = [digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())]
    return (
        request.param,
        load_truth(str(out)),
        analyze_run(digests, request.param, "0"),
        analyze_whatif(digests, request.param, "0"),
    )


def _paid(t):
    """The planted anomalies the job pays for, costliest first."""
    return sorted(
        (p for p in t.planted if p["saving_at_peer_speed_ns_per_step"] >= NEGLIGIBLE_NS),
        key=lambda p: -p["saving_at_peer_speed_ns_per_step"],
    )


def _whatif(w, kind):
    (x,) = [x for x in w.what_ifs if x.kind == kind]
    return x


def test_the_planted_ranks_are_named_first_with_their_cost(case):
    name, t, rp, w = case
    v = rp.straggler
    assert not v.uncertain, (name, v.summary)
    named = [s.rank for s in v.stragglers]
    paid = _paid(t)
    planted = {p["rank"] for p in t.planted}
    # the ranks the job pays for, costliest first, then at most the planted ones it absorbs; no healthy rank
    assert named[: len(paid)] == [p["rank"] for p in paid], (name, named, paid)
    assert set(named) <= planted, (name, named, planted)
    assert v.found == bool(paid)
    for p in paid:
        (s,) = [s for s in v.stragglers if s.rank == p["rank"]]
        want = p["saving_at_peer_speed_ns_per_step"]
        assert abs(s.job_cost_ns - want) <= COST_TOLERANCE * want, (name, s.rank, s.job_cost_ns, want)
        # the run without the anomaly differs from its peers' speed only by the GPUs' own spread
        assert abs(s.job_cost_ns - p["job_cost_ns_per_step"]) <= COST_TOLERANCE * want + 100_000
        expected_cause = (
            "device_compute" if p["type"] == "device_slow" else ("host_dataloader" if p["stage"] == 0 else "host")
        )
        assert s.cause == expected_cause, (name, s.cause, p)
        assert "check its GPU" in v.summary if s.cause == "device_compute" else "check its GPU" not in s.reason
    for s in v.stragglers:
        if s.rank not in {p["rank"] for p in paid}:  # named but absorbed: costs (next to) nothing
            assert s.absorbed and s.job_cost_ns < NEGLIGIBLE_NS


def test_one_cost_in_the_verdict_the_findings_and_the_whatif(case):
    name, t, rp, w = case
    v = rp.straggler
    for s in v.stragglers:
        (f,) = [f for f in rp.findings if f.category == "anomaly" and list(f.ranks) == [s.rank]]
        assert f.cost_ns == s.job_cost_ns
    x = _whatif(w, wpb.WHAT_IF_STRAGGLER)
    paid = _paid(t)
    if not paid:
        assert not x.applicable or x.saving_ns < NEGLIGIBLE_NS
        return
    top = paid[0]
    assert x.applicable and x.rank == top["rank"], (name, x.rank, top)
    assert x.saving_ns == v.stragglers[0].job_cost_ns
    want = top["saving_at_peer_speed_ns_per_step"]
    err = abs(x.saving_ns - want) / want
    if name in WHATIF_KNOWN_GAP:  # strict: fails once the gap closes, so that the entry goes
        assert err > WHATIF_TOLERANCE, f"{name}: the replay now meets the tolerance; drop it from WHATIF_KNOWN_GAP"
        pytest.xfail(f"{name}: the replay misses the saving by {err:.1%} ({WHATIF_KNOWN_GAP[name]})")
    assert err <= WHATIF_TOLERANCE, (name, x.saving_ns, want)


def test_the_unchanged_replay_is_the_traced_step(case):
    name, t, rp, w = case
    cp = w.critical_path
    assert cp.observed_step_ns == pytest.approx(t.job_step_ns, rel=REPLAY_TOLERANCE)
    assert abs(cp.replayed_step_ns - cp.observed_step_ns) <= REPLAY_TOLERANCE * cp.observed_step_ns
    assert not any(n.startswith(CAVEAT) for n in w.notes)


def test_the_stage_imbalance_finding_is_the_balanced_whatif(case):
    name, t, rp, w = case
    x = _whatif(w, wpb.WHAT_IF_BALANCED_STAGES)
    found = [f for f in rp.findings if f.rule == "stage_imbalance"]
    if not found:
        return
    (f,) = found
    assert x.applicable and f.cost_ns == max(0, x.saving_ns)
    comp = t.stage_compute_ns
    assert f.stage == max(range(len(comp)), key=lambda i: comp[i])


def test_healthy_runs_name_nobody_in_bold(case):
    name, t, rp, w = case
    if t.planted:
        return
    assert not rp.straggler.stragglers and not rp.straggler.found
    assert not [f for f in rp.findings if f.category == "anomaly"]
    assert "straggler" not in [a.rule for a in rp.advice]


# ---------------------------------------------------------------- real Paddle Fleet runs on CPU/gloo


def _real_run(folder: Path):
    files = sorted(folder.glob("*.paddle_trace.json.gz"))
    assert files, folder
    digests = [digest_of(summarize_file(str(f))) for f in files]
    infos = [json.loads(p.read_text()) for p in sorted(folder.glob("info.rank*.json"))]
    return digests, infos


REAL_HEALTHY = ["pp2", "dp2pp2", "dp2pp2_defaultname", "dp4pp2", "mp2pp2_shim", "dp2mp2pp2_shim", "dp2pp2_control"]


@pytest.mark.parametrize("folder", REAL_HEALTHY)
def test_real_cpu_fleet_runs_without_a_slowed_rank_name_nobody(folder):
    digests, infos = _real_run(REAL / folder)
    assert not any(i["slow"] for i in infos)
    rp = analyze_run(digests, folder, "0")
    v = rp.straggler
    assert not v.found and not v.stragglers, (folder, v.summary)
    assert "straggler" not in [a.rule for a in rp.advice]
    assert "GPU" not in v.summary


def test_a_real_cpu_fleet_run_with_a_slowed_rank_names_it_with_its_cost():
    """rank 0 of a DP2 x PP2 run multiplies matrices for 60 ms before each train_batch; the control run
    (same script, same machine, nobody slowed) gives the step time without it."""
    digests, infos = _real_run(REAL / "dp2pp2_slow0_compute60ms")
    (slow,) = [i["rank"] for i in infos if i["slow"]]
    control, _ = _real_run(REAL / "dp2pp2_control")

    def mean_step(ds):
        return statistics.mean(s.range.end_ns - s.range.start_ns for d in ds for s in d.parallel.steps)

    truth = mean_step(digests) - mean_step(control)
    rp = analyze_run(digests, "slow", "0")
    v = rp.straggler
    # Paddle on CPU records no collective: nothing tells the roles, so the verdict is uncertain and
    # names the rank without bold and without advice; its cost comes from the step times
    assert v.uncertain and not v.found
    assert [s.rank for s in v.stragglers] == [slow]
    (s,) = v.stragglers
    assert s.cause == "device_compute" and "check its CPU work" in v.summary and "GPU" not in v.summary
    assert abs(s.job_cost_ns - truth) <= 0.25 * truth, (s.job_cost_ns, truth)
    assert any(f.rule == "no_collectives" for f in rp.findings)
    assert "straggler" not in [a.rule for a in rp.advice]
    w = analyze_whatif(digests, "slow", "0")
    x = _whatif(w, wpb.WHAT_IF_STRAGGLER)
    assert x.applicable and x.rank == slow and x.saving_ns == s.job_cost_ns


# ---------------------------------------------------------------- Compare (diff of two runs)


def test_compare_cites_the_verdicts_cost_and_measures_the_same_change(tmp_path):
    """A run with a slow GPU against the same run without it: the step-time change Compare measures and
    the cost the straggler's verdict gives (and Compare cites) are both the planted cost."""
    from tb_paddle_profile.analysis.diff import decompose_runs

    cfg = CASES["dp-gpu10"]
    rps = {}
    for side, c in (("candidate", cfg), ("baseline", cfg.without_anomalies())):
        out = tmp_path / side
        res = generate(c, str(out))
        rps[side] = analyze_run([digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())], side, "0")
    (p,) = load_truth(str(tmp_path / "candidate")).planted
    d = decompose_runs(rps["baseline"], rps["candidate"])
    assert d.change == pytest.approx(p["job_cost_ns_per_step"], rel=0.02)
    (s,) = rps["candidate"].straggler.stragglers
    assert s.rank == p["rank"]
    assert abs(s.job_cost_ns - d.change) <= COST_TOLERANCE * d.change
    (note,) = [n for n in d.notes if n.startswith("The straggler verdicts")]
    assert f"rank {s.rank} {s.job_cost_ns / 1e6:.3g} ms per step" in note and "no straggler" in note


@pytest.mark.parametrize("dp,pp,slow", [(2, 1, 1), (2, 2, 2), (2, 1, None), (2, 2, None)])
def test_few_roles_of_two_ranks_name_the_straggler_and_nobody_else(tmp_path, dp, pp, slow):
    """DP2 (one role of two ranks) and DP2 x PP2 (two roles): the pooled deviation from the role peers
    is the straggler's own there, so the noise is each figure's step-to-step variation. A 1.6x slower
    GPU is named, with the generator's cost; a healthy run (the generator's per-kernel jitter) names
    nobody."""
    out = tmp_path / "few"
    res = generate(
        SynthConfig(
            dp=dp,
            mp=1,
            pp=pp,
            steps=4,
            layers=2,
            micro_batches=2,
            slow_rank=slow,
            slow_factor=1.6 if slow is not None else 1.0,
        ),
        str(out),
    )
    truth = load_truth(str(out))
    rp = analyze_run([digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())])
    named = [s for s in rp.straggler.stragglers if not s.absorbed]
    if slow is None:
        assert not named, rp.straggler.summary
        return
    (planted,) = truth.planted
    assert [s.rank for s in named][:1] == [planted["rank"]], rp.straggler.summary
    want = planted["job_cost_ns_per_step"]
    assert abs(named[0].job_cost_ns - want) <= COST_TOLERANCE * want, (named[0].job_cost_ns, want)
