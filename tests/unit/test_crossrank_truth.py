"""The cross-rank analysis (analysis/crossrank/) against the generator's planted ground truth.

Each run goes the way of a real one: generate() writes Paddle traces, engine.summarize_file
parses each, digest_of projects the digest, analyze_run reads only the digests. The truth
(synth/truth.py: every collective instance with its members and waits, the hosts' clock offsets,
the ranks' coordinates and labels, the planted anomalies with their cost to the job, measured by
the generator against the same run simulated without them) is what the results are held to.
"""

import pytest

from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank.labels import SEP, prior_label
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tbp_synth import SynthConfig, generate
from tbp_synth.truth import load_truth

# The traces write times as microseconds with three decimals (1 ns), and the members of one
# collective end at the same global nanosecond: offsets come out within a few ns; 1 µs leaves room
# for the rounding of many samples while staying far below the skew (ms) and the 100 ns end-time cut.
OFFSET_TOLERANCE_NS = 1_000
WAIT_TOLERANCE_NS = 500_000  # per rank and step (issue 13)


def _analyse(tmp_path_factory, name, **cfg):
    out = str(tmp_path_factory.mktemp(name))
    res = generate(SynthConfig(**cfg), out)
    digests = [digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())]
    return load_truth(out), digests, analyze_run(digests, run=name, span="0")


@pytest.fixture(scope="module")
def host_stage0(tmp_path_factory):
    """DP4 x MP2 x PP2 on two hosts whose clocks differ by milliseconds, Paddle's default worker
    names; rank 9 (host 1, stage 0) stalls 15 ms per step in its data loader."""
    return _analyse(
        tmp_path_factory,
        "host0",
        dp=4,
        mp=2,
        pp=2,
        steps=3,
        names="default",
        clock_skew_us=3000,
        slow_host_rank=9,
        host_delay_us=15_000,
    )


@pytest.fixture(scope="module")
def absorbed(tmp_path_factory):
    """DP2 x MP2 x PP2: rank 2 (stage 1) stalls 8 ms per step in its data loader, which the
    pipeline's fill mostly hides."""
    return _analyse(
        tmp_path_factory, "absorbed", dp=2, mp=2, pp=2, steps=3, names="default", slow_host_rank=2, host_delay_us=8_000
    )


@pytest.fixture(scope="module")
def device32(tmp_path_factory):
    """32 ranks (DP8 x MP2 x PP2) on four skewed hosts; rank 21's GPU computes 30 % slower."""
    return _analyse(
        tmp_path_factory,
        "device32",
        dp=8,
        mp=2,
        pp=2,
        steps=3,
        names="default",
        clock_skew_us=3000,
        slow_rank=21,
        slow_factor=1.3,
    )


@pytest.fixture(scope="module")
def control(tmp_path_factory):
    """No anomaly; the stages hold 3 and 1 decoder layers."""
    return _analyse(tmp_path_factory, "control", dp=2, mp=2, pp=2, steps=3, names="rank", stage_layers=(3, 1))


RUNS = ["host_stage0", "absorbed", "device32", "control"]


@pytest.fixture(params=RUNS)
def run(request):
    return request.getfixturevalue(request.param)


def _truth_instances(t):
    return {(i["step"], i["kind"], frozenset((m["rank"], m["ordinal"]) for m in i["members"])) for i in t.instances}


def test_every_instance_is_recovered_with_its_exact_members(run):
    t, _, rp = run
    ours = {(m.step, KIND_LABELS[m.kind], frozenset((x.rank, x.ordinal) for x in m.members)) for m in rp.matched}
    truth = _truth_instances(t)
    assert len(rp.matched) == len(ours) == rp.matched_total
    assert ours == truth
    assert rp.matching.matched_instances == rp.matching.instances
    assert all(c.matched == c.instances for c in rp.matching.coverage)
    assert all(r.coverage == 1.0 for r in rp.ranks)
    assert not rp.straggler.uncertain and rp.straggler.min_rank_coverage == 1.0


def test_each_ranks_wait_is_the_planted_one(run):
    t, _, rp = run
    for r in rp.ranks:
        ours = sum(k.wait_ns for k in r.kinds) / r.steps
        assert abs(ours - t.waits_per_step(r.rank)) <= WAIT_TOLERANCE_NS, r.rank
        coll = [k for k in ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all")]
        assert abs(r.wait_ns - t.waits_per_step(r.rank, coll)) <= WAIT_TOLERANCE_NS, r.rank


def test_labels_and_coordinates_are_the_generators(run):
    t, digests, rp = run
    assert [r.rank for r in rp.ranks] == [x["rank"] for x in t.ranks]

    def truth_label(x, hostname):
        # a worker named rankN tells no host: the label has none to show
        return x["label"] if hostname else x["label"].replace(f"{x['hostname']} ", "")

    for r in rp.ranks:
        x = t.ranks[r.rank]
        assert (r.dp, r.pipeline_stage, r.mp) == (x["dp"], x["pp"], x["mp"]), r.rank
        assert r.label == truth_label(x, r.hostname)
        assert r.hostname in ("", x["hostname"]) and (r.device_id, r.pid) == (x["gpu"], x["pid"])
    cfg = t.config
    tv = rp.topology
    assert (tv.dp, tv.pp, tv.mp) == (cfg["dp"], cfg["pp"], cfg["mp"])
    assert tv.complete and tv.matches_fleet_order
    # every pipeline found, in stage order: one per (dp, mp)
    by = {}
    for x in t.ranks:
        by.setdefault((x["dp"], x["mp"]), {})[x["pp"]] = x["rank"]
    truth_pipes = {tuple(p[s] for s in range(cfg["pp"])) for p in by.values()}
    assert rp.pipeline.pipelines == len(truth_pipes)
    assert {tuple(g.ranks) for g in tv.groups if g.axis == "pp"} == {tuple(sorted(p)) for p in truth_pipes}
    # process groups of each axis are the generator's
    for axis in ("mp", "dp", "pp_group"):
        truth_sets = {tuple(sorted(m["rank"] for m in i["members"])) for i in t.instances if i["axis"] == axis}
        assert {tuple(g.ranks) for g in tv.groups if g.axis == axis} == truth_sets, axis
    # the label before the analysis: the same without the coordinates
    by_file = {r.file_name: r for r in rp.ranks}
    for d in digests:
        r = by_file[d.meta.file_name]
        parts = truth_label(t.ranks[r.rank], r.hostname).split(SEP)
        assert prior_label(d.meta, d.device_id, r.rank) == SEP.join(p for p in parts if not p.startswith("dp"))


def test_host_clocks_are_the_planted_offsets(host_stage0, device32):
    for t, _, rp in (host_stage0, device32):
        offsets = t.host_offsets_ns
        host_of = {x["hostname"]: x["host"] for x in t.ranks}
        assert len(rp.clocks) == len(offsets) > 1
        ref = next(c for c in rp.clocks if c.reference)
        truth_ref = offsets[host_of[ref.hostname]]
        for c in rp.clocks:
            truth = offsets[host_of[c.hostname]] - truth_ref
            assert abs(c.offset_ns - truth) <= OFFSET_TOLERANCE_NS, c.hostname
            assert c.reference or c.samples > 0
            assert c.spread_ns <= OFFSET_TOLERANCE_NS
        assert max(abs(o) for o in offsets) > 100 * OFFSET_TOLERANCE_NS  # the skew is real
        for r in rp.ranks:
            c = next(c for c in rp.clocks if c.hostname == r.hostname)
            assert r.clock_offset_ns == c.offset_ns and r.rank in c.ranks


def _planted(t):
    (p,) = t.planted
    return p


def _check_named(t, rp, cause):
    p = _planted(t)
    v = rp.straggler
    assert [s.rank for s in v.stragglers] == [p["rank"]]
    (s,) = v.stragglers
    assert s.cause == cause
    assert s.absorbed == p["absorbed"]
    # the cost to the whole job per step, not summed over the peers
    assert s.job_cost_ns == pytest.approx(p["job_cost_ns_per_step"], rel=0.1, abs=500_000)
    assert s.label == t.ranks[p["rank"]]["label"]
    (f,) = [f for f in rp.findings if f.category == "anomaly"]
    assert list(f.ranks) == [p["rank"]] and f.cause == cause and f.cost_ns == s.job_cost_ns
    assert f.rule == ("absorbed_stall" if p["absorbed"] else "straggler")
    assert f.excess_ns == pytest.approx(p["excess_ns_per_step"], rel=0.05)
    return s, f


def test_host_straggler_on_stage0_across_skewed_hosts(host_stage0):
    t, _, rp = host_stage0
    s, f = _check_named(t, rp, "host_dataloader")
    assert not s.absorbed and rp.straggler.found
    assert not s.longer_compute and abs(s.compute_excess) < 0.02
    assert "late arrival with normal compute" in rp.straggler.summary


def test_absorbed_stall_is_named_with_its_small_cost(absorbed):
    t, _, rp = absorbed
    p = _planted(t)
    assert p["absorbed"] and p["stage"] == 1
    s, f = _check_named(t, rp, "host_dataloader")
    assert s.absorbed and f.absorbed and s.job_cost_ns < p["excess_ns_per_step"] / 2
    assert "hides most of it" in f.text and f"rank {p['rank']}" in rp.straggler.summary


def test_device_straggler_at_32_ranks(device32):
    t, _, rp = device32
    s, _ = _check_named(t, rp, "device_compute")
    assert s.longer_compute and s.compute_excess == pytest.approx(0.3, abs=0.05)
    assert "longer compute" in rp.straggler.summary


def test_control_run_names_nobody_and_reports_the_stage_imbalance(control):
    t, _, rp = control
    assert t.planted == []
    v = rp.straggler
    assert not v.found and not v.stragglers and v.summary.startswith("No straggler")
    assert not [f for f in rp.findings if f.category == "anomaly"]
    assert "straggler" not in [a.rule for a in rp.advice]
    comp = t.stage_compute_ns
    hi, lo = max(range(len(comp)), key=lambda i: comp[i]), min(range(len(comp)), key=lambda i: comp[i])
    (f,) = [f for f in rp.findings if f.rule == "stage_imbalance"]
    assert f.category == "structure" and f.stage == hi
    assert f"{comp[hi] / comp[lo] - 1:.0%} more than stage {lo}" in f.text
    # structural waits (stage 1 waits for stage 0 at the pipeline-group collectives) are no straggler
    assert all(f.category != "anomaly" for f in rp.findings)


def test_structural_waits_are_findings_not_stragglers(host_stage0, control):
    for t, _, rp in (host_stage0, control):
        st = sorted((f for f in rp.findings if f.rule == "structural_wait"), key=lambda f: -f.excess_ns)
        pp_group_wait = {}
        for r in t.ranks:
            pp_group_wait.setdefault(r["pp"], []).append(t.waits_per_step(r["rank"], ["pp_group"]))
        worst = max(pp_group_wait, key=lambda s: sum(pp_group_wait[s]))
        assert st and st[0].stage == worst and st[0].category == "structure"
        assert all(s.rank not in st[0].ranks for s in rp.straggler.stragglers)


def test_cli_text_shows_labels_topology_clocks_and_findings(host_stage0):
    from tb_paddle_profile.present.render.parallel_text import render

    t, _, rp = host_stage0
    text = render(rp, "ms")
    cfg = t.config
    assert f"Topology: DP {cfg['dp']} x PP {cfg['pp']} x MP {cfg['mp']} (complete, Fleet's rank order)" in text
    assert "Host clocks" in text and "Findings" in text and "{ns:" not in text
    p = _planted(t)
    assert t.ranks[p["rank"]]["label"] in text
    for x in t.ranks:
        # the per-rank table names every rank by its coordinates and GPU (the truth's label less the rank
        # number, the row's first cell, and the pid)
        short = x["label"].split(" · ", 1)[1].rsplit(" · pid", 1)[0]
        assert any(line.startswith(f"{x['rank']} ") and short in line for line in text.splitlines()), short
