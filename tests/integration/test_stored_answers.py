"""Answers stored with the analysis and memoized (issue 28.2): the what-if, `parallel` and `distributed`
answers are read back after a restart (a new plugin over the same cache answers them without computing
them, byte for byte the first one's), a what-if with other MFU inputs is made from the stored one without
a new replay (the same answer as one computed from the digests with those inputs), `distributed` is built
once per state of its ranks, and a rank's `summary` looks at the other ranks' timeline indexes once per
scan, not at every request. What is computed is counted where the routes hand it to their worker
processes (``_in_pool``: the function and its name, whichever process then runs it)."""

from __future__ import annotations

import pytest

from support.plugin_testlib import make_plugin, ready
from test_timeline_runindex import _get  # a route's answer once it stops answering 202

RUN = "gen"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    from tbp_synth import SynthConfig, generate

    root = tmp_path_factory.mktemp("stored_logdir")
    generate(
        SynthConfig(dp=2, mp=2, pp=2, steps=2, layers=2, micro_batches=2, names="default", gpus_per_node=4),
        str(root / RUN),
    )
    for extra in (root / RUN).glob("*.json"):
        if not extra.name.endswith(".paddle_trace.json"):
            extra.unlink()
    return root


def _plugin(logdir, cache, env):
    env.setenv("TB_PADDLE_PROFILE_CACHE", str(cache))
    plugin, client = make_plugin(str(logdir))
    ready(plugin)
    return plugin, client


def test_whatif_is_read_back_after_a_restart(logdir, tmp_path, monkeypatch):
    from tb_paddle_profile.present.display import whatif as display_whatif
    from tb_paddle_profile.v1 import whatif_pb2

    cache = tmp_path / "cache"
    first, client = _plugin(logdir, cache, monkeypatch)
    try:
        want = _get(client, f"/whatif?run={RUN}&span=0")
        with_mfu = _get(client, f"/whatif?run={RUN}&span=0&params=1000000000&tokens_per_step=4096&peak_tflops=300")
        assert first._routes.analyses.derived_computed == 2
    finally:
        first.close()
        first._routes.close()
    assert len(whatif_pb2.RunWhatIf.FromString(want).what_ifs) > 0
    assert with_mfu != want  # the MFU inputs are part of what is stored

    def never(*args, **kwargs):
        raise AssertionError("the what-if answer was computed again after the restart")

    monkeypatch.setattr(display_whatif, "whatif_answer", never)
    second, client = _plugin(logdir, cache, monkeypatch)
    try:
        assert _get(client, f"/whatif?run={RUN}&span=0") == want
        assert (
            _get(client, f"/whatif?run={RUN}&span=0&params=1000000000&tokens_per_step=4096&peak_tflops=300") == with_mfu
        )
        assert second._routes.analyses.derived_computed == 0
    finally:
        second.close()
        second._routes.close()


def _count(routes, monkeypatch) -> list:
    """The names of the functions the routes hand to their worker processes, in order."""
    asked: list = []
    in_pool = routes._in_pool
    monkeypatch.setattr(routes, "_in_pool", lambda which, fn, *a: asked.append(fn.__name__) or in_pool(which, fn, *a))
    return asked


def _close(plugin) -> None:
    plugin.close()
    plugin._routes.close()


VIEWS = [
    "/distributed?run=gen&span=0&part=summary",
    "/parallel?run=gen&span=0&part=summary",
    "/distributed?run=gen&span=0&part=summary",
    "/distributed?run=gen&span=0",
    "/parallel?run=gen&span=0",
    "/parallel?run=gen&span=0&format=json",
    "/whatif?run=gen&span=0",
    "/whatif?run=gen&span=0&params=1000000000&tokens_per_step=4096&peak_tflops=300",
]


def test_run_views_are_read_back_after_a_restart(logdir, tmp_path, monkeypatch):
    """After a restart the first `parallel` and `distributed` answers were made again from the stored analysis
    and the digests (3.4 s and 1.3 s at 4,096 ranks, while every client of the first second waited). Now they
    are stored with the analysis: the new plugin reads them back, computing nothing."""
    cache = tmp_path / "cache"
    first, client = _plugin(logdir, cache, monkeypatch)
    try:
        asked = _count(first._routes, monkeypatch)
        want = [_get(client, v) for v in VIEWS]
        assert {"analysis_blobs", "parallel_answer", "distributed_answer", "whatif_blob", "whatif_of"} <= set(asked)
    finally:
        _close(first)
    assert want[0] != want[2]  # the labels of the analysis, once there is one (as before a restart)
    second, client = _plugin(logdir, cache, monkeypatch)
    try:
        asked = _count(second._routes, monkeypatch)
        for view, body in zip(VIEWS, want):
            assert _get(client, view) == body, view
        assert asked == [], f"computed again after the restart: {asked}"
        assert second._routes.analyses.computed == second._routes.analyses.derived_computed == 0
    finally:
        _close(second)


def test_whatif_with_other_mfu_inputs_is_made_without_a_replay(logdir, tmp_path, monkeypatch):
    """Each new MFU input (params, tokens, peak) replayed the whole run again (7-10 s each at 4,096 ranks, one
    after the other in the analyses' process: 11 time-outs under 50 clients). MFU is arithmetic on the
    ranks' recorded steps: the stored answer's MFU is made again. The answers are those of the CLI's
    computation from the digests with the same inputs."""
    from tb_paddle_profile.present.display.whatif import whatif_answer
    from tb_paddle_profile.v1 import summary_pb2, whatif_pb2

    plugin, client = _plugin(logdir, tmp_path / "cache", monkeypatch)
    routes = plugin._routes
    try:
        asked = _count(routes, monkeypatch)
        inputs = [
            {},
            {"params": 1e9, "tokens_per_step": 4096.0, "peak_tflops": 300.0},
            {"params": 7e9, "tokens_per_step": 8192.0},
            {"peak_tflops": 150.0},
        ]
        got = []
        for args in inputs:
            query = "".join(f"&{k}={v}" for k, v in args.items())
            got.append(whatif_pb2.RunWhatIf.FromString(_get(client, f"/whatif?run={RUN}&span=0{query}")))
        assert asked.count("whatif_blob") == 1, asked  # one replay
        assert asked.count("whatif_of") == 3, asked  # each other input: the stored answer's MFU again
        facts = routes._span_facts(RUN, "0")
        digests = [summary_pb2.RankDigest.FromString(routes.loader.digest_bytes(t)) for t in facts.ready]
        for args, answer in zip(inputs, got):
            assert answer == whatif_answer(digests, RUN, "0", **args), args
        assert got[1].mfu.applicable and got[1].mfu.params == 1e9 and got[1].mfu.peak_flops_per_device == 300e12
        assert got[1].what_ifs == got[0].what_ifs and got[1].mfu != got[0].mfu
        assert not got[3].mfu.applicable and got[3].mfu.why_not.startswith("MFU needs")
    finally:
        _close(plugin)


def test_distributed_is_built_once_and_summary_looks_at_the_run_once(logdir, tmp_path, monkeypatch):
    plugin, client = _plugin(logdir, tmp_path / "cache", monkeypatch)
    routes = plugin._routes
    try:
        asked = _count(routes, monkeypatch)
        built = [1 for name in asked if name == "distributed_answer"]
        one = _get(client, f"/distributed?run={RUN}&span=0")
        assert _get(client, f"/distributed?run={RUN}&span=0") == one
        assert _get(client, f"/distributed?run={RUN}&span=0&part=summary") != one
        built = [1 for name in asked if name == "distributed_answer"]
        assert len(built) == 2  # the whole answer once, the summary part once

        asked = []
        cache = routes.loader.cache
        has_index = cache.has_index
        monkeypatch.setattr(cache, "has_index", lambda key: asked.append(key) or has_index(key))
        workers = [w for w in routes._snapshot().runs[RUN]]
        _get(client, f"/summary?run={RUN}&worker={workers[0]}&span=0")
        assert len(asked) == len(workers)  # every rank's index looked for, once
        for w in workers[1:]:
            _get(client, f"/summary?run={RUN}&worker={w}&span=0")
        assert len(asked) == len(workers), "a rank's summary looked at every rank's index again"
    finally:
        plugin.close()
        routes.close()
