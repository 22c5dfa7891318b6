"""The cross-rank analysis on runs of the independent simulator (tbp_sim2, docs/sim2.md: its own timing model,
members' ends up to 2 us apart, a 1 % GPU-speed spread, host stalls anywhere in a step), against its truth
(issue 24, "Done when", on runs the analysis was not tuned on): >= 99 % of the collective instances with
their exact members, every rank's coordinates and the topology, clocks within 2 us, the planted rank(s) and
no other named with their cost within 10 % of the simulator's (the run less the run without the anomaly),
What-if "straggler at its peers' speed" within 5 % of that saving and the unchanged replay within 1 % of the
observed step. The comparison is tools/sim2_check.py's, the way a user runs the tool (summarize_file,
digest_of, analyze_run, analyze_whatif).

Cases (tbp_sim2.matrix): DP4 x PP4 x MP4 on 8 hosts healthy, one GPU 10 % slower on the last stage, a data
loader 3 ms late on a first-stage rank, a host stall of 5 ms in the middle of a first-stage rank's step
(after its data loader and input copy: no CUDA call meanwhile; it was named by nobody before the verdict's
stall figure), two anomalies at once, 8 rank-named ranks on 2 hosts 1.73 ms apart, DP2 x PP8 with 16
micro-batches, and the slow GPU again where a kernel waiting for another stream starts the nanosecond that
stream's kernel ends (Paddle's float32 relative times put it a few ulps before that end: the program missed
the wait, and the slow GPU cost 0.10 ms in the replay against 4.26); DP64 on 8 hosts (its world all-reduces
were split by host: 0 % exact, a grid of 8 x 1 x 8), DP8 x PP8 x MP2 on 16 hosts with members ending together,
DP4 x PP2 x MP8 named rank{r} on 8 hosts with a late data loader, DP8 x PP4 x MP4 named rank{r} on 16 hosts
with members ending together (two hosts' clocks 1.4 us apart were grouped as one host: 98.2 %, a replica's
pipeline cut in two, the verdict uncertain), DP2 x PP16 on 4 hosts with 8 micro-batches (its collectives
once a step over three steps: the end noise was measured as 14 ns, not 450, a replica's link across hosts
missed; 66 % exact, a topology of 1 x 16 x 1), DP2 x PP2 x MP2 with sharding 4 (reduce-scatter and
all-gather over the sharding group: every rank's sharding index checked too)."""

from __future__ import annotations

import pytest

from tbp_sim2.generate import generate
from tbp_sim2.matrix import ALL
from tools.sim2_check import compare

pytestmark = pytest.mark.slow  # fourteen runs generated and analysed: about 5 minutes

RUNS = [
    "dp4pp4mp4-healthy",
    "dp4pp4mp4-gpu10-last",
    "dp4pp4mp4-loader3ms",
    "dp4pp4mp4-stall5ms",
    "dp4pp4mp4-two",
    "rank-named-2hosts-gpu10",
    "dp2pp8-mb16",
    "v-nogap-gpu10-last",
    "v-dp64-8hosts-gpu15",
    "v-dp8pp8mp2-16hosts-exact-gpu10",
    "v-dp4pp2mp8-rank-named-loader3ms",
    "v-dp8pp4mp4-rank-named-16hosts-exact-stall",
    "v-dp2pp16-mb8-gpu10-mid",
    "v-dp2pp2sh4mp2-loader3ms",
]
COST_TOLERANCE = 0.10
WHATIF_TOLERANCE = 0.05
FLOOR_MS = 0.05  # an absorbed anomaly costs the job about nothing: its cost within this
ABSORBED_STEP_SHARE = 0.01  # ... or, named as absorbed, under this share of the step


@pytest.fixture(scope="module", params=RUNS)
def run(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    generate(ALL[request.param](), str(out))
    return request.param, compare(str(out))


def test_instances_topology_and_clocks(run):
    name, res = run
    assert res["exact"] >= 0.99, (name, res["exact"], res["missing_examples"])
    assert res["extra"] <= 0.01 * res["instances"], (name, res["extra"], res["extra_examples"])
    assert res["topology_ok"], (name, res["topology"])
    right, total = (int(x) for x in res["coords"].split()[0].split("/"))
    assert right == total, (name, res["coords_wrong"])
    if res["clock_max_err_us"] is not None:
        assert res["clock_max_err_us"] <= 2.0, (name, res["clock_max_err_us"])


def test_the_planted_ranks_and_no_other_are_named_at_their_cost(run):
    name, res = run
    v = res["verdict"]
    named = {n["rank"]: n for n in v["named"]}
    planted = {p["rank"]: p for p in res["planted"]}
    assert set(named) == set(planted), (name, v["summary"])
    assert not v["uncertain"], (name, v["summary"])
    if any(p["cost_ms"] > FLOOR_MS for p in planted.values()):
        # an anomaly the job hides (the pipeline absorbs a slow GPU's 5 ms but for a third of a
        # millisecond) may be named as absorbed rather than as the step's straggler, when the truth
        # says it costs the job under ABSORBED_STEP_SHARE of its step
        hidden = all(
            named[r].get("absorbed") and p["cost_ms"] < ABSORBED_STEP_SHARE * res["healthy_step_ms"]
            for r, p in planted.items()
        )
        assert v["found"] or hidden, (name, v["summary"])
    for r, p in planted.items():
        assert abs(named[r]["cost_ms"] - p["cost_ms"]) <= max(COST_TOLERANCE * abs(p["cost_ms"]), FLOOR_MS), (
            name,
            r,
            named[r],
            p,
        )
    if name.endswith("stall5ms"):
        assert [n["cause"] for n in v["named"]] == ["host_stall"], v["named"]


def test_whatif_saves_what_the_simulator_does(run):
    name, res = run
    rep, wi = res["replay"], res["whatif"]
    assert abs(rep["replayed_ms"] - rep["observed_ms"]) <= 0.01 * rep["observed_ms"], (name, rep)
    if not res["planted"]:
        assert not wi["applicable"], (name, wi)
        return
    costliest = max(res["planted"], key=lambda p: p["cost_ms"])
    assert wi["applicable"] and wi["rank"] == costliest["rank"], (name, wi)
    assert abs(wi["saving_ms"] - wi["true_saving_ms"]) <= max(WHATIF_TOLERANCE * abs(wi["true_saving_ms"]), FLOOR_MS), (
        name,
        wi,
    )


@pytest.mark.parametrize(
    "case, gone_rank",
    [("dp4pp4mp4-loader3ms", 21), ("dp4pp4mp4-loader3ms", 63), ("dp4pp4mp4-gpu10-last", 21), ("dp32-gpu20", 7)],
)
def test_a_missing_trace_leaves_the_other_ranks_their_numbers_and_coordinates(tmp_path, case, gone_rank):
    """One rank's trace of a DP4 x PP4 x MP4 run on 8 hosts missing (a rank that did not write it, or a file
    the reader rejected), Paddle's default worker names: counting the other files in order numbered every
    later rank one too low (the data loader planted on rank 35 was named as rank 34's), and 63 ranks fit no
    DP x PP x MP grid, so none had coordinates. Now the ranks come from hosts and GPUs, the grid is the
    world's with the gap (incomplete, the missing rank named in a note), every other rank has its
    coordinates and its stage, and the planted rank is named at its cost. Rank 63, the last: no gap in the
    numbers, but its host has one GPU fewer than the others. A slow GPU on the last stage of the replica that
    lacks rank 21: the replay kept the transfers with the missing rank at their traced times and its cost
    stopped there (0.21 ms against 4.24); they are now replayed as its tensor-parallel peers' transfers. DP32
    over 4 hosts without rank 7: the groups' grid (DP 31) numbered every rank after the gap one too low."""
    import json
    import os

    out = tmp_path / "run"
    generate(ALL[case](), str(out))
    truth = json.loads((out / "sim2_truth.json").read_text())
    gone = next(r for r in truth["ranks"] if r["rank"] == gone_rank)
    os.remove(out / gone["file"])
    res = compare(str(out))
    right, total = (int(x) for x in res["coords"].split()[0].split("/"))
    assert right == total == len(truth["ranks"]) - 1, res["coords_wrong"]
    cfg = truth["config"]
    assert res["topology"] == "%dx%dx%d (incomplete)" % (cfg["dp"], cfg["pp"], cfg["mp"]), res["topology"]
    v = res["verdict"]
    assert [n["rank"] for n in v["named"]] == [p["rank"] for p in res["planted"]], v["summary"]
    planted = res["planted"][0]["cost_ms"]
    assert abs(v["named"][0]["cost_ms"] - planted) <= COST_TOLERANCE * planted, (v["named"], planted)
    from tb_paddle_profile.analysis.crossrank import analyze_run
    from tools.sim2_check import digests

    rp = analyze_run(digests(str(out)))
    lead = "Rank(s) %d of the DP %d x PP %d x MP %d grid have no trace" % (gone_rank, cfg["dp"], cfg["pp"], cfg["mp"])
    assert any(n.startswith(lead) for n in rp.topology.notes), list(rp.topology.notes)
    assert gone_rank not in [r.rank for r in rp.ranks] and len(rp.ranks) == len(truth["ranks"]) - 1


def test_a_missing_host_makes_the_verdict_uncertain_and_gives_no_wrong_coordinates(tmp_path):
    """A whole host's traces missing (gpunode6 of a DP4 x PP4 x MP4 run on 8 hosts: a replica's stages 2 and 3),
    Paddle's default worker names: nothing tells that a host is missing (the hosts after it are numbered
    one host too low), so no grid fits and no rank is given coordinates; the replica's pipeline is cut
    where its stage-1 ranks send to the missing ones, no tensor-parallel peer can stand in, and the replay
    cannot carry a change along it (the late data loader of rank 35, in that replica, cost 0.35 ms in it
    against the simulator's 2.17). The verdict named it without saying so; now it is uncertain."""
    import json
    import os

    from tb_paddle_profile.analysis.crossrank import analyze_run
    from tools.sim2_check import digests

    out = tmp_path / "run"
    generate(ALL["dp4pp4mp4-loader3ms"](), str(out))
    truth = json.loads((out / "sim2_truth.json").read_text())
    for r in truth["ranks"]:
        if r["hostname"] == "gpunode6":
            os.remove(out / r["file"])
    rp = analyze_run(digests(str(out)))
    assert len(rp.ranks) == 56
    assert all(m.dp == -1 and m.mp == -1 for m in rp.ranks), [(m.rank, m.dp, m.mp) for m in rp.ranks][:8]
    assert rp.straggler.uncertain, rp.straggler.summary
