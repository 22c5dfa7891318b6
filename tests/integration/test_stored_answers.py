"""Answers stored with the analysis and memoized (issue 28.2): the what-if answer is read back after a
restart (a new plugin over the same cache answers it without computing it, byte for byte the first
one's), `distributed` is built once per state of its ranks, and a rank's `summary` looks at the other
ranks' timeline indexes once per scan, not at every request."""
from __future__ import annotations

import pytest

from support.plugin_testlib import make_plugin, ready
from test_timeline_runindex import _get  # a route's answer once it stops answering 202

RUN = "gen"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    from tbp_synth import SynthConfig, generate

    root = tmp_path_factory.mktemp("stored_logdir")
    generate(SynthConfig(dp=2, mp=2, pp=2, steps=2, layers=2, micro_batches=2, names="default", gpus_per_node=4),
             str(root / RUN))
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
        assert _get(client, f"/whatif?run={RUN}&span=0&params=1000000000&tokens_per_step=4096"
                            "&peak_tflops=300") == with_mfu
        assert second._routes.analyses.derived_computed == 0
    finally:
        second.close()
        second._routes.close()


def test_distributed_is_built_once_and_summary_looks_at_the_run_once(logdir, tmp_path, monkeypatch):
    plugin, client = _plugin(logdir, tmp_path / "cache", monkeypatch)
    routes = plugin._routes
    try:
        built = []
        make = routes._distributed
        monkeypatch.setattr(routes, "_distributed", lambda *a, **k: built.append(1) or make(*a, **k))
        one = _get(client, f"/distributed?run={RUN}&span=0")
        assert _get(client, f"/distributed?run={RUN}&span=0") == one
        assert _get(client, f"/distributed?run={RUN}&span=0&part=summary") != one
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
