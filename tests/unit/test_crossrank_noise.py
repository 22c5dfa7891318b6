"""Cross-rank inference when the members of one collective do not end at the same moment (issue 24,
point 1): real NCCL kernels of one collective end microseconds apart on its members. The generator
plants that (SynthConfig.comm_end_noise_us: each member's end N(0, sigma) off its collective's end)
on truth-matrix runs; the analysis measures the noise on the communicators it finds and widens its
tolerances with it, while members still come from the communicators' order. Asserted against the
generator's planted truth (tbp_synth.truth): every instance with its exact members, every rank's
coordinates, the clocks; and the model selection of the topology (topology.select_model) against the
truth's grid. Rank-named files (rank{r}, no host in the names) across skewed hosts: the hosts are
grouped from the ranks' clock offsets (issue 24, point 3), each rank with its host-mates."""

from dataclasses import replace

import numpy as np
import pytest

from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank.topology import explained, factorizations, fleet_coords
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tbp_synth import SynthConfig, generate, matrix
from tbp_synth.truth import load_truth
from test_crossrank_inference import (
    MIN_EXACT,
    _assert_clocks,
    _assert_coordinates,
    _assert_hosts,
    _exact_share,
    _truth_of,
)


def _rank_named(dp, pp, mp, hosts, **kw):
    """A realistic run of rank{r} files on `hosts` hosts, each with its own clock (within +-2 ms)."""
    return SynthConfig.realistic(
        dp=dp, pp=pp, mp=mp, steps=4, layers=4, micro_batches=4, names="rank", gpus_per_node=dp * pp * mp // hosts, **kw
    )


# (matrix case or config, light, end noise sigma in us)
RUNS = {
    "dp4pp4mp4-1us": ("dp4pp4mp4-control", True, 1.0),
    "dp4pp4mp4-3us": ("dp4pp4mp4-control", True, 3.0),
    "dp2pp8-mb16-1us": ("dp2pp8-mb16-control", False, 1.0),  # 16 micro-batches
    "dp2pp8-mb16-3us": ("dp2pp8-mb16-control", False, 3.0),
    # eight lock-step replicas: the wide blocks' median is their drift (2.25 us), measured again
    "dp8pp4mp4-1us": ("dp8pp4mp4-gpu15-middle", True, 1.0),
    # the same at 3 us: tensor-parallel partners' transfers co-end with each other's partners (a partner's
    # link outweighed the true one: p2p lanes), and a replica whose data-parallel blocks joined two stages'
    # groups was 380 us off (aligned where its collectives co-end: align.py); was 91 % exact, no grid
    "dp8pp4mp4-3us": ("dp8pp4mp4-gpu15-middle", True, 3.0),
    # rank-named: the ranks' first offsets (some from once-a-step collectives of lock-step pipelines)
    # drift by several sigma, the hosts' clocks are milliseconds apart
    "rank-named-dp4pp2mp2-4hosts-1us": (_rank_named(4, 2, 2, 4), True, 1.0),
    "rank-named-dp8pp2-4hosts-gpu10-1us": (_rank_named(8, 2, 1, 4, slow_rank=13, slow_factor=1.10), True, 1.0),
    "rank-named-dp8pp2-2hosts-gpu10-3us": (_rank_named(8, 2, 1, 2, slow_rank=13, slow_factor=1.10), True, 3.0),
    # two tensor-parallel partners' pipelines in lock-step on each host: their send/recv co-end across
    # too (a straggler on the first stage, and 3 us of noise)
    "rank-named-dp4pp2mp2-4hosts-gpu10-1us": (_rank_named(4, 2, 2, 4, slow_rank=0, slow_factor=1.10), True, 1.0),
    "rank-named-dp4pp2mp2-4hosts-3us": (_rank_named(4, 2, 2, 4), True, 3.0),
    # the realistic preset (Paddle's default worker names, shuffled host numbers, shared-stream 1F1B,
    # one-rank communicators) with one GPU 10 % slower on stage 3: a replica reaches the others only by
    # its stages' data-parallel all-reduces, whose lock-step groups the first clocks leave 15 us off
    "realistic-dp4pp4mp4-gpu10-3us": (
        SynthConfig.realistic(dp=4, pp=4, mp=4, steps=4, layers=4, micro_batches=4, slow_rank=60, slow_factor=1.10),
        True,
        3.0,
    ),
    # DP2 x PP8, one GPU 15 % slower on the last stage (22.9 ms a step): 16 of 4,352 send/recv are left
    # unmatched, which made the verdict uncertain
    "realistic-dp2pp8-gpu15-last-2us": (
        SynthConfig.realistic(dp=2, pp=8, mp=1, steps=4, layers=8, micro_batches=8, slow_rank=15, slow_factor=1.15),
        True,
        2.0,
    ),
    # DP2 x PP8 x MP4 at 3 us, send/recv on one shared stream: lock-step stages end their transfers
    # together, a receive co-ended closer with its other neighbour's send (to the next stage) than with
    # its own sender's; the pair taken left two transfers without one (98.3 % exact; augmenting paths)
    "realistic-dp2pp8mp4-gpu10-3us": (
        SynthConfig.realistic(dp=2, pp=8, mp=4, steps=4, layers=8, micro_batches=8, slow_rank=40, slow_factor=1.10),
        True,
        3.0,
    ),
    # DP8 x PP2 x MP8 on 16 hosts (a tensor-parallel group a host), one GPU 15 % slower: a pipeline's two
    # hosts were tied to the others by blocks of two stages' groups alone, one host 2.36 ms off (two
    # crossing edges agreed against the tree's one; no send/recv pair within the first window)
    "realistic-dp8pp2mp8-16hosts-gpu15-2us": (
        SynthConfig.realistic(dp=8, pp=2, mp=8, steps=4, layers=4, micro_batches=4, slow_rank=77, slow_factor=1.15),
        True,
        2.0,
    ),
    # DP16 x PP2 x MP4: a replica a host, the hosts tied only by the data-parallel all-reduces, whose shape
    # blocks join the two stages' groups (each member against its block's first: edges 50-120 us wide, nine
    # hosts up to 640 us off); a data loader 4 ms late on rank 70
    "realistic-dp16pp2mp4-loader4ms-3us": (
        SynthConfig.realistic(
            dp=16, pp=2, mp=4, steps=4, layers=4, micro_batches=4, slow_host_rank=70, host_delay_us=4000
        ),
        True,
        3.0,
    ),
}
# Clocks below the goal, measured (none now: DP4 x PP4 x MP4 at 3 us was up to 2.9 us off, each host
# pair's offset a median of end differences of sigma 4.6 us; 1.6 us since a host pair under noise needs
# three matched groups and the join outvotes a wrong pair)
SHORT_CLOCKS: set = set()


def _generate(tmp_path_factory, key):
    name, light, sigma = RUNS[key]
    out = str(tmp_path_factory.mktemp(key))
    cfg = name if isinstance(name, SynthConfig) else matrix.case(name, light=light)
    res = generate(replace(cfg, comm_end_noise_us=sigma), out)
    digests = [digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())]
    return load_truth(out), analyze_run(digests, run=key, span="0")


@pytest.fixture(scope="module", params=list(RUNS))
def noisy(request, tmp_path_factory):
    return request.param, _generate(tmp_path_factory, request.param)


def _short_clocks(key):
    if key in SHORT_CLOCKS:
        pytest.xfail("clocks below the goal, measured: " + key)


@pytest.mark.slow
def test_the_planted_noise_is_in_the_truth_and_measured(noisy):
    """The truth's members of one collective end apart by the planted sigma (the members' ends less
    their instance's mean, over the instances of more than one member, not send/recv: its sender's
    end is held to at least half the transfer after its start), and the analysis says it measured it
    (a note with its tolerances)."""
    key, (t, rp) = noisy
    sigma = RUNS[key][2] * 1000
    c = t.columns
    ptr, end, kind = c["inst_ptr"], c["mem_end_ns"].astype(np.float64), c["inst_kind"]
    size = np.diff(ptr)
    sel = np.flatnonzero((size > 1) & (kind != 2))
    owner = np.repeat(np.arange(size.size), size)
    mean = np.bincount(owner, weights=end, minlength=size.size) / np.maximum(size, 1)
    dev = end - mean[owner]
    m = np.isin(owner, sel)
    n = size[owner][m]
    got = np.sqrt(np.mean(dev[m] ** 2 * n / (n - 1)))
    assert abs(got - sigma) <= 0.15 * sigma, (key, got)
    assert any("apart (end noise" in x for x in rp.notes), key


@pytest.mark.slow
def test_instances_keep_their_exact_members_under_end_noise(noisy):
    key, (t, rp) = noisy
    share, wrong = _exact_share(t, rp)
    assert share >= MIN_EXACT, (key, share)
    assert len(wrong) <= (1 - MIN_EXACT) * t.n_instances, (key, len(wrong))


@pytest.mark.slow
def test_once_a_step_pipeline_group_collectives_keep_their_members(noisy):
    """The pipeline group's collectives (once a step: too rare for a shape) of replicas kept in
    lock-step end within the noise of each other; split along the pipelines the send/recv pairs show
    (prior.py), every one of them has its exact members."""
    key, (t, rp) = noisy
    tx = _truth_of(t, rp)
    ours = {(KIND_LABELS[m.kind], frozenset((tx[x.rank]["rank"], x.ordinal) for x in m.members)) for m in rp.matched}
    planted = [
        (i["kind"], frozenset((m["rank"], m["ordinal"]) for m in i["members"]))
        for i in t.instances
        if i["axis"] == "pp_group" and i["kind"] != "send_recv"
    ]
    assert planted, key
    missed = [(i[0], sorted(i[1])[:4]) for i in planted if i not in ours]
    assert not missed, (key, len(missed), len(planted), missed[:3])


@pytest.mark.slow
def test_coordinates_and_clocks_under_end_noise(noisy):
    key, (t, rp) = noisy
    _assert_coordinates(key, t, rp)
    _short_clocks(key)
    _assert_clocks(key, t, rp)
    if key.startswith("rank-named"):
        _assert_hosts(key, t, rp)


@pytest.mark.slow
def test_the_planted_straggler_is_named_under_end_noise(noisy):
    """The planted slow rank(s) (the truth's) and no other, where the case plants one."""
    key, (t, rp) = noisy
    if not t.planted:
        pytest.skip("a healthy control")
    tx = _truth_of(t, rp)
    assert sorted(tx[s.rank]["rank"] for s in rp.straggler.stragglers) == sorted(p["rank"] for p in t.planted), key
    if not any(p["absorbed"] for p in t.planted):
        # a costly one is named for certain, at its cost (within 10 % of the generator's saving at its peers' speed)
        assert rp.straggler.found and not rp.straggler.uncertain, (key, rp.straggler.summary)
        want = max(p["saving_at_peer_speed_ns_per_step"] for p in t.planted)
        assert abs(rp.straggler.stragglers[0].job_cost_ns - want) <= 0.1 * want, (key, want)


@pytest.mark.slow
def test_every_rank_has_its_coordinates_or_none_has(noisy):
    """All or nothing, in every run (also where the matching falls short): either every rank's
    (stage, mp) is the truth's, or no rank has an mp or dp coordinate."""
    key, (t, rp) = noisy
    tx = _truth_of(t, rp)
    right = [(r.pipeline_stage, r.mp) == (tx[r.rank]["pp"], tx[r.rank]["mp"]) for r in rp.ranks]
    none = all(r.dp == -1 and r.mp == -1 for r in rp.ranks)
    assert all(right) or none, (key, sum(right), len(right))
    if none:
        assert not rp.topology.complete
        assert any("no rank is given coordinates" in x for x in rp.topology.notes), key


@pytest.mark.slow
def test_the_true_grid_alone_explains_every_planted_instance(noisy):
    """topology.explained on the planted instances (their member sets, ranks numbered by Fleet's
    formula as the generator lays them out): the truth's DP x PP x MP explains all of them, every
    other factorization of the world fewer; fleet_coords gives the truth's coordinates."""
    key, (t, _) = noisy
    cfg = t.config
    world = cfg["dp"] * cfg["pp"] * cfg["mp"]
    sets = {}
    for i in t.instances:
        k = (tuple(sorted(m["rank"] for m in i["members"])), i["kind"] == "send_recv")
        sets[k] = sets.get(k, 0) + 1
    comms = [k[0] for k in sets]
    p2p = np.array([k[1] for k in sets], dtype=bool)
    counts = list(sets.values())
    rank = np.arange(world)
    true_shape = (cfg["dp"], cfg["pp"], cfg["mp"])
    coords = fleet_coords(rank, true_shape)
    by_rank = {x["rank"]: x for x in t.ranks}
    assert all(
        (coords[0][r], coords[1][r], coords[2][r]) == (by_rank[r]["dp"], by_rank[r]["pp"], by_rank[r]["mp"])
        for r in range(world)
    )
    assert explained(comms, counts, p2p, coords, true_shape) == 1.0
    for shape in factorizations(world):
        if shape != true_shape:
            assert explained(comms, counts, p2p, fleet_coords(rank, shape), shape) < 1.0, (key, shape)


def test_few_positions_of_noisy_members_are_not_taken_for_an_exact_run():
    """A collective once a step over three recorded steps: members whose ends are spread uniformly over
    2 us (tbp_sim2's timing model) have a median residual of a few nanoseconds now and then (one of three
    residuals is the median's own zero). The run's noise is still theirs (sigma of a uniform over 2 us:
    577 ns), not that of the members which happened to look exact (a DP2 x PP16 run was measured at 14 ns
    and matched at a tolerance that missed a replica's link across hosts). A run whose members end
    together stays exact. (Three positions' median residual underestimates the noise, about half: the
    tolerances of six sigmas still hold the members.)"""
    from tb_paddle_profile.analysis.crossrank.shapes import end_noise

    rng = np.random.default_rng(7)
    C, P = 64, 3
    steps = np.arange(P, dtype=np.int64)[None, :] * 200_000_000 + 10**18
    blocks = np.repeat(np.arange(C // 2), 2)
    ends = [
        steps
        + rng.integers(0, 50_000_000, size=(C // 2, 1)).repeat(2, axis=0)
        + rng.uniform(0, 2000, (C, P)).astype(np.int64)
        for _ in range(4)
    ]
    sigma = end_noise([None] * len(ends), ends, [blocks] * len(ends))
    assert 200 <= sigma <= 800, sigma
    exact = [E[::2].repeat(2, axis=0) + rng.integers(0, 3, (C, P)) for E in ends]  # members end together
    assert end_noise([None] * len(exact), exact, [blocks] * len(exact)) <= 5
