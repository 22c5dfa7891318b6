"""The tab at 4,096 ranks (issue 26: "and a 4,096-rank page-weight check"): a generated DP512 x PP4 x MP2
run (one planted slow GPU, the smallest program per rank: 4 layers over 4 stages, one micro-batch, two
steps), preprocessed by the CLI into its own cache, served by a real TensorBoard and opened in Chromium at
1,280 x 800. Asserted: the Distributed view's summary (the verdict naming the planted rank first, the
findings) on the first screen within SUMMARY_DOM_NODES DOM nodes, and the compact timeline within the same
budget with at least 32 rows drawn, the planted rank's first; on both pages no task of the plugin's frame
over 200 ms of main-thread CPU (browser_util.TaskClock: Chrome's trace; the tasks' wall times, which
measure this shared machine's load as much as the page, are printed beside them). Slow: generating and parsing 4,096 files takes
several minutes on two cores."""

from __future__ import annotations

import pytest

from support.browser_util import PageLog, TaskClock, new_page, tensorboard, wait_all_loaded

pytestmark = [pytest.mark.browser, pytest.mark.slow]


from google.protobuf import json_format  # noqa: E402

from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402

from support.scale_run import RUN, make  # noqa: E402
from test_frontend_scale import SUMMARY_DOM_NODES, assert_light_tasks, open_compact, summary_first_and_light  # noqa: E402

DP = 512
SLOW_RANK = 2_077  # dp259 pp2 mp1: a middle stage


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return make(tmp_path_factory.mktemp("scale4096"), dp=DP, slow_rank=SLOW_RANK)


@pytest.fixture(scope="module")
def tb(big, tmp_path_factory):
    work = tmp_path_factory.mktemp("scale4096_tb")
    with tensorboard(big.logdir, work, extra_env={"TB_PADDLE_PROFILE_CACHE": str(big.cache)}) as server:
        wait_all_loaded(server, timeout=900)
        yield server


@pytest.fixture(scope="module")
def analysis(tb) -> plugin_pb2.RunParallel:
    body = tb.get(f"/data/plugin/paddle_profile/parallel?run={RUN}&span=0&format=json", timeout=600)
    return json_format.Parse(body, plugin_pb2.RunParallel(), ignore_unknown_fields=True)


def test_4096_ranks_the_distributed_summary_is_first_and_light(big, tb, analysis, browser):
    assert len(analysis.ranks) == DP * 8 == len(big.manifest["ranks"])
    assert analysis.straggler.stragglers and analysis.straggler.stragglers[0].rank == SLOW_RANK

    def named_first(frame):
        named = [
            int(x)
            for x in frame.eval_on_selector_all('[data-testid="par-straggler"]', "els => els.map(e => e.dataset.rank)")
        ]
        assert named and named[0] == SLOW_RANK, named

    summary_first_and_light(tb, analysis, browser, timeout_ms=300_000, check=named_first)


def test_4096_ranks_the_compact_timeline_is_light(tb, analysis, browser):
    log = PageLog()
    page = new_page(browser, log, width=1280, height=800)
    clock = TaskClock(browser, page)
    try:
        frame = open_compact(page, tb, analysis, f"rank{SLOW_RANK}", timeout_ms=300_000)
        nodes = frame.evaluate("() => document.querySelectorAll('*').length")
        tasks = clock.stop(frame)
        print(f"4,096 ranks, compact timeline: {nodes} DOM nodes")
        assert nodes <= SUMMARY_DOM_NODES, f"{nodes} DOM nodes"
        assert_light_tasks(tasks, "compact timeline, 4,096 ranks")
    finally:
        clock.cancel()
        page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
