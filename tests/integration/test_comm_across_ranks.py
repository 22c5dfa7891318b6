"""Communication per communicator and phase, launches and host stalls of every rank side by side
(RunParallel.comm, issue 30.1/30.2/30.4 across ranks): against the generator's truth (each rank's exposed
time per kind and step, the planted data-loader stall) and the real Paddle traces (CPU: no launches)."""

import csv
import io
import subprocess
import sys

import numpy as np
import pytest

from support.paths import EXTRA_TRACES, SHARED_TRACES
from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.v1 import summary_pb2 as pb
from tbp_synth.config import SynthConfig
from tbp_synth.driver import generate
from tbp_synth.truth import load_truth

CFG = SynthConfig(
    dp=2,
    mp=2,
    pp=2,
    steps=3,
    layers=2,
    micro_batches=2,
    hidden=512,
    heads=8,
    seq_len=256,
    vocab=1024,
    slow_host_rank=5,
    host_delay_us=3000,
)
# the truth's kinds (manifest steps' "comm") and the communicator the rule gives them
KIND_AXIS = {
    "mp_allreduce": pb.COMM_AXIS_MP,
    "dp_allreduce": pb.COMM_AXIS_DP,
    "pp_sendrecv": pb.COMM_AXIS_PP,
    "pp_group": pb.COMM_AXIS_PP_GROUP,
}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("comm_ranks")
    res = generate(CFG, str(d))
    truth = load_truth(str(d))
    summaries = [summarize_file(str(d / r["file"])) for r in truth.ranks]
    return d, res.manifest, truth, analyze_run(summaries)


def test_exposed_time_per_rank_and_communicator_is_the_truths(run):
    _, manifest, _, rp = run
    got = {r.rank: r for r in rp.comm.ranks}
    assert sorted(got) == list(range(CFG.world()))
    for entry in manifest["ranks"]:
        r = got[entry["rank"]]
        exposed = {}
        for x in r.axes:
            exposed[x.axis] = exposed.get(x.axis, 0) + x.exposed_ns
        for kind, axis in KIND_AXIS.items():
            want = np.mean([s["comm"][kind]["exposed_ns"] for s in entry["steps"] if kind in s["comm"]])
            assert exposed.get(axis, 0) == pytest.approx(want, rel=0.02, abs=20_000), (entry["rank"], kind)


def test_across_ranks_means_maxima_and_bandwidth_rows(run):
    _, _, _, rp = run
    for a in rp.comm.axes:
        rows = [(r.rank, x) for r in rp.comm.ranks for x in r.axes if (x.axis, x.phase) == (a.axis, a.phase)]
        assert a.ranks == len(rows)
        assert a.exposed_ns == pytest.approx(np.mean([x.exposed_ns for _, x in rows]), abs=1)
        assert a.max_exposed_ns == pytest.approx(max(x.exposed_ns for _, x in rows), abs=1)
        assert a.max_exposed_rank in [rk for rk, x in rows if abs(x.exposed_ns - a.max_exposed_ns) <= 1]
        assert a.algbw == 0  # the generator's collectives record no shapes


def test_the_planted_host_stall_shows_on_its_rank_only(run):
    _, _, truth, rp = run
    (stall,) = [p for p in truth.planted if p["type"] == "host_stall"]
    for r in rp.comm.ranks:
        assert r.steps == len(truth.steps)
        if r.rank == stall["rank"]:
            assert r.stall_steps == r.steps and r.stalled_ns_per_step >= stall["delay_ns"]
        else:
            assert r.stall_steps == 0
        assert r.starved_stream >= 0 and 0 <= r.starved_share <= 1 and r.max_queue >= 1


def test_tables_and_csv(run):
    d, _, _, rp = run
    keys = {t.key for v in parallel_display(rp).views for t in v.tables}
    assert {"comm_axes", "comm_ranks"} <= keys
    text = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "parallel", str(d), "--no-cache", "--table", "comm_ranks"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = {int(r["rank"]): r for r in csv.DictReader(io.StringIO(text))}
    for r in rp.comm.ranks:
        assert int(rows[r.rank]["exposed_dp"]) == sum(x.exposed_ns for x in r.axes if x.axis == pb.COMM_AXIS_DP)


def _real_runs():
    runs = [SHARED_TRACES / "cpu-gpt-2rank-gloo", SHARED_TRACES / "gpu-synthetic-2rank"]
    fleet = EXTRA_TRACES / "real-fleet-cpu-gloo"
    if fleet.is_dir():
        runs += sorted(x for x in fleet.iterdir() if x.is_dir())
    return runs


@pytest.mark.parametrize("folder", _real_runs(), ids=lambda d: d.name)
def test_real_traces(folder):
    summaries = [summarize_file(str(p)) for p in sorted(folder.glob("*.paddle_trace.json*"))]
    rp = analyze_run(summaries)
    cpu = all(s.parallel.timeline == pb.TIMELINE_HOST for s in summaries)
    for r in rp.comm.ranks:
        if cpu:  # no CUDA runtime call: no launch and no stall to measure
            assert r.starved_stream == -1 and r.stall_steps == 0
        for x in r.axes:
            assert 0 <= x.hidden_ns <= x.time_ns and x.exposed_ns == x.time_ns - x.hidden_ns
    # Paddle 3.3.1 writes no input shapes (the real traces asked for them): no bytes, so no bandwidth
    if "synthetic" not in folder.name:
        assert all(not any(s.parallel.collectives.bytes) for s in summaries)
        assert all(a.algbw == 0 and a.busbw == 0 for a in rp.comm.axes)
    parallel_display(rp)
