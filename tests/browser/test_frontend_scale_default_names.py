"""The tab for a 1,024-rank job with Paddle's default worker names (issue 26, "Done when"), in Debian's Chromium
against a real ``tensorboard``: the run of the issue, DP16 x PP8 x MP8 on 128 hosts of 8 GPUs, workers named
``host_<host>pid_<pid>``, one data loader stalled 20 ms per step (tbp_synth --slow-host-rank 300 --names
default), preprocessed by the CLI into its own cache.

Checked against what we did not write for it: the generator's manifest (each rank's worker, host and planted
rank) and the routes' own answers (the verdict and its cost, the What-if critical path):

* Distributed: summary first (the verdict naming the planted rank first, the findings on the first screen),
  <= 3,000 DOM nodes, no task of the plugin's frame over 200 ms of main-thread CPU (browser_util.TaskClock);
* the compact timeline: >= 32 rank rows on a 1,280 x 800 screen, the planted rank's first and its 15 role peers
  (the ranks of its stage and mp index) next, labelled so, <= 3,000 nodes, no task over 200 ms of CPU; the
  detailed view's default ranks the same 16, each header saying the straggler or a role peer;
* What-if on default names: "Show on the timeline" opens the timeline on the rank that ended the step, a row
  of the critical path by rank opens that rank; the page within 3,000 nodes;
* the straggler's Overview: the banner names it the straggler with the verdict's cost, and its button opens
  Compare against its role peers' median; the sidebar lists the hosts in natural order (gpunode2 before
  gpunode10) and finds rank 300 first when "300" is typed;
* every text the sidebar or the header cuts at 1,280 px (the worker picker, its options, the files, the crumbs)
  whole in the title around it.

The analysis behind it: the generator's DP16 x PP8 x MP8 grid inferred complete, every rank's (stage, mp) the
generator's, so that a rank's role peers are the other ranks of its stage and mp index (the grid was not inferred
on this run before the send/recv lanes: 97.5 % of the instances fit, and a rank's role peers were its whole stage).
Slow: about a minute to generate and preprocess 1,024 traces.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.report import ran
from support.browser_util import PageLog, TaskClock, new_page, tensorboard, wait_all_loaded

pytestmark = [pytest.mark.browser]

from google.protobuf import json_format  # noqa: E402

from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402

from support.scale_run import RUN, make  # noqa: E402
from test_frontend_scale import (
    SUMMARY_DOM_NODES,
    assert_light_tasks,
    dom_nodes,
    open_compact,  # noqa: E402
    open_view,
    summary_first_and_light,
)

SLOW = 300  # dp4 pp5 mp4: gpunode37, GPU 4


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    return make(
        tmp_path_factory.mktemp("scale_default_names"),
        dp=16,
        mp=8,
        pp=8,
        layers=8,
        names="default",
        slow_host_rank=SLOW,
    )


@pytest.fixture(scope="module")
def workers(job) -> dict:
    """rank -> worker name, from the generator's manifest."""
    return {r["rank"]: r["worker"] for r in job.manifest["ranks"]}


@pytest.fixture(scope="module")
def tb(job, tmp_path_factory):
    with tensorboard(
        job.logdir,
        tmp_path_factory.mktemp("scale_default_names_tb"),
        extra_env={"TB_PADDLE_PROFILE_CACHE": str(job.cache)},
    ) as server:
        wait_all_loaded(server, timeout=600)
        yield server


@pytest.fixture(scope="module")
def analysis(tb) -> plugin_pb2.RunParallel:
    """The parallel route's answer (the analysis is stored from then on: the banner reads it)."""
    body = tb.get(f"/data/plugin/paddle_profile/parallel?run={RUN}&span=0&format=json", timeout=600)
    return json_format.Parse(body, plugin_pb2.RunParallel(), ignore_unknown_fields=True)


@pytest.fixture
def page(browser, request):
    log = PageLog()
    page = new_page(browser, log, width=1280, height=800)
    yield page
    page.context.close()
    if not ran(request):
        return
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)
    assert log.outside_requests() == [], log.outside_requests()


def current_worker(frame) -> str:
    return frame.get_attribute('[data-testid="select-worker"]', "data-value")


def test_the_grid_is_the_generators(job, analysis):
    """Every rank's (stage, mp index), the role a rank's peers share (analysis/peers.role), is the generator's."""
    truth = {r["worker"]: r["coords"] for r in job.manifest["ranks"]}
    tv = analysis.topology
    assert (tv.dp, tv.pp, tv.mp, tv.complete) == (16, 8, 8, True), (tv.dp, tv.pp, tv.mp, list(tv.notes))
    wrong = [
        r.rank for r in analysis.ranks if (r.pipeline_stage, r.mp) != (truth[r.worker]["pp"], truth[r.worker]["mp"])
    ]
    assert not wrong, wrong[:8]


def test_the_distributed_summary_is_first_and_light(workers, tb, analysis, browser):
    assert len(workers) == len(analysis.ranks) == 1024 and workers[0].startswith("host_gpunode0pid_")
    assert analysis.straggler.stragglers[0].rank == SLOW

    def named_first(frame):
        named = [
            int(x)
            for x in frame.eval_on_selector_all('[data-testid="par-straggler"]', "els => els.map(e => e.dataset.rank)")
        ]
        assert named and named[0] == SLOW, named
        link = frame.locator(f'[data-testid="par-verdict-sentence"] a.rank-link[data-rank="{SLOW}"]').first
        assert link.inner_text().startswith(f"rank {SLOW} ")  # its rank, not its raw worker name

    summary_first_and_light(tb, analysis, browser, timeout_ms=300_000, check=named_first, worker=workers[0])


@pytest.fixture(scope="module")
def role_peers(job) -> set:
    """The generator's ranks of the straggler's stage and mp index, the straggler aside (15 of DP16)."""
    coords = {r["rank"]: r["coords"] for r in job.manifest["ranks"]}
    mine = coords[SLOW]
    return {
        r["worker"]
        for r in job.manifest["ranks"]
        if r["rank"] != SLOW and (coords[r["rank"]]["pp"], coords[r["rank"]]["mp"]) == (mine["pp"], mine["mp"])
    }


def test_the_compact_timeline_shows_32_ranks_the_straggler_first(workers, role_peers, tb, analysis, browser):
    """The compact rows: >= 32 on the screen, the straggler's first, then its role peers labelled so (the ranks of
    its stage and mp index: its whole stage, 127 ranks, before the grid was inferred); the detailed view's default
    ranks are the same 16, their headers saying the straggler and each role peer."""
    log = PageLog()
    page = new_page(browser, log, width=1280, height=800)
    clock = TaskClock(browser, page)
    try:
        frame = open_compact(page, tb, analysis, workers[SLOW], timeout_ms=300_000, worker=workers[0])
        labels = frame.evaluate("() => window.__tbppCompact.visibleRows()")
        assert len(labels) >= 32 and labels[0] == workers[SLOW]
        nodes = dom_nodes(frame)
        tasks = clock.stop(frame)
        assert nodes <= SUMMARY_DOM_NODES, f"{nodes} DOM nodes"
        assert_light_tasks(tasks, "compact timeline, 1,024 default-named ranks")
        assert len(role_peers) == 15
        drawn = frame.evaluate("() => window.__tbppCompact.labels()")
        assert drawn[0]["worker"] == workers[SLOW] and drawn[0]["full"].startswith("straggler · "), drawn[0]
        peers = [d for d in drawn if d["full"].startswith("role peer · ")]
        assert {d["worker"] for d in peers} == role_peers, sorted(d["full"] for d in peers)
        assert [d["worker"] for d in drawn[1:16]] == [d["worker"] for d in peers]  # right after the straggler
        assert all(d["text"].endswith(" · peer") for d in peers), [d["text"] for d in peers]

        frame.click('[data-testid="timeline-compact-detail"]')
        frame.wait_for_function(
            "() => { const d = window.__tbppTimeline && window.__tbppTimeline.data();"
            " return d && d.ranks.length >= 16 && d.ranks.every((r) => !r.state); }",
            timeout=120_000,
        )
        heads = {
            r["worker"]: r["label"]
            for r in frame.evaluate("() => window.__tbppTimeline.rows().filter((r) => r.kind === 'rank')")
        }
        assert set(heads) == role_peers | {workers[SLOW]}, sorted(heads.values())
        assert heads[workers[SLOW]].startswith(f"rank {SLOW} ") and heads[workers[SLOW]].endswith(" ★ straggler"), (
            heads[workers[SLOW]]
        )
        assert all(heads[w].endswith(" · role peer") for w in role_peers), sorted(heads.values())
        assert "the straggler and its role peers" in frame.inner_text('[data-testid="timeline-ranks-why"]')
    finally:
        clock.cancel()
        page.context.close()
    assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)


def test_whatif_links_open_the_timeline_on_default_names(workers, tb, analysis, page):
    whatif = json.loads(tb.get(f"/data/plugin/paddle_profile/whatif?run={RUN}&span=0&format=json", timeout=600))
    path = whatif["criticalPath"]
    frame = open_view(page, tb, "whatif", worker=workers[0])
    button = frame.locator('[data-testid="wi-path-timeline"]')
    button.wait_for(timeout=300_000)
    frame.wait_for_function("() => !document.querySelector('[data-testid=wi-path-timeline]').disabled", timeout=60_000)
    assert dom_nodes(frame) <= SUMMARY_DOM_NODES
    # the headline names the straggler by its rank, and its saving with the unit (the panel leaves out the
    # CLI's "Times in ms." line: the cards' heads say their unit, the headline above them did not: "13.34 (33.6%)")
    headline = " ".join(frame.inner_text('[data-testid="wi-headline"]').split())
    assert f"rank {SLOW}" in headline
    (own,) = [x for x in whatif["whatIfs"] if x["kind"] == "WHAT_IF_STRAGGLER"]
    assert f"{float(own['savingNs']) / 1e6:.2f} ms (" in headline, headline
    button.click()
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=60_000)
    end = workers[path["steps"][0].get("endRank", 0)]
    frame.wait_for_function(
        "(w) => document.querySelector('[data-testid=select-worker]').dataset.value === w", arg=end, timeout=60_000
    )

    # a row of the critical path by rank opens that rank
    page.go_back()
    row = frame.locator('[data-testid="dt-critical_path_ranks"] .vt-row.linked').first
    row.wait_for(timeout=60_000)
    label = row.locator(".vt-name").text_content()
    m = re.match(r"rank (\d+) ", label)
    assert m, label  # the rank's label, never host_<host>pid_<pid>
    row.click()
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=60_000)
    frame.wait_for_function(
        "(w) => document.querySelector('[data-testid=select-worker]').dataset.value === w",
        arg=workers[int(m.group(1))],
        timeout=60_000,
    )


def natural(text: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def test_the_stragglers_overview_has_the_banner_and_compares_with_its_peers(job, workers, tb, analysis, page):
    (s,) = [x for x in analysis.straggler.stragglers if x.rank == SLOW]
    cost_ms = f"{s.job_cost_ns / 1e6:.2f} ms"
    frame = open_view(page, tb, "overview", worker=workers[SLOW])
    banner = frame.locator('[data-testid="rank-banner"]')
    banner.wait_for(timeout=120_000)
    text = " ".join(banner.inner_text().split())
    assert "straggler" in text and cost_ms in text and "data loader" in text, (text, cost_ms)

    # the sidebar: hosts in natural order, rank 300 found first by its number
    groups = frame.eval_on_selector_all('[data-testid="file-group"]', "els => els.map(e => e.dataset.group)")
    hosts = sorted({r["hostname"] for r in job.manifest["ranks"]}, key=natural)
    assert groups == [f"host {h}" for h in hosts]
    frame.fill('[data-testid="file-search"]', str(SLOW))
    frame.locator(".file-item").first.wait_for(timeout=10_000)
    first = frame.eval_on_selector_all(".file-item", "els => els.map(e => e.dataset.file)")[0]
    assert first == Path(next(r["trace"] for r in job.manifest["ranks"] if r["rank"] == SLOW)).name

    frame.click('[data-testid="rank-banner-compare"]')
    frame.wait_for_selector('[data-testid="cmp-body"][data-mode="peers"]', timeout=300_000)
    assert frame.get_attribute('[data-testid="cmp-candidate"]', "data-worker") == workers[SLOW]
    assert frame.get_attribute('[data-testid="cmp-baseline"]', "data-worker") == "~peers"
    frame.wait_for_selector('[data-testid="cmp-tables"]', timeout=300_000)
    assert current_worker(frame) == workers[SLOW]


# every element of the sidebar and the header whose text its box cuts (an ellipsis), with the nearest title around it
_CUT_WITHOUT_TITLE = """() => {
  const out = [];
  const roots = [document.querySelector('[data-testid=sidebar]'), document.querySelector('.main-head')];
  for (const root of roots) for (const el of root ? root.querySelectorAll('*') : []) {
    if (el.children.length || !el.textContent.trim() || el.scrollWidth <= el.clientWidth + 1) continue;
    const text = el.textContent.trim();
    const titled = el.closest('[title]');
    const title = titled ? titled.getAttribute('title') : '';
    if (!title.split('\\n').some((line) => line.includes(text))) out.push({ text, title, sw: el.scrollWidth, cw: el.clientWidth });
  }
  return out;
}"""


def test_cut_labels_in_the_sidebar_and_the_header_have_their_full_text_on_hover(workers, tb, analysis, page):
    """The straggler's Overview opened by a link: its file in view in the sidebar (it was 38 host groups down,
    out of sight). At 1,280 px the sidebar cuts the long default-name labels ("rank 300 · dp4 pp5 mp4 · gpunode37 GPU4 · pid
    6605 · span 0") and the header its rank and file name: each cut text is whole in the title of its element or
    of the nearest one around it (the worker picker's button and options, the files, the crumbs)."""
    frame = open_view(page, tb, "overview", worker=workers[SLOW])
    frame.locator('[data-testid="rank-banner"]').wait_for(timeout=120_000)
    frame.locator(".file-item.current").wait_for(timeout=60_000)
    # the current file is in view in the sidebar (its host group, gpunode37, the 38th of 128: below the fold)
    frame.wait_for_timeout(300)
    box = frame.evaluate("""() => { const side = document.querySelector('[data-testid=sidebar]').getBoundingClientRect();
        const cur = document.querySelector('.file-item.current').getBoundingClientRect();
        return { top: cur.top, bottom: cur.bottom, sideTop: side.top, sideBottom: Math.min(side.bottom, innerHeight) }; }""")
    assert box["top"] >= box["sideTop"] and box["bottom"] <= box["sideBottom"], box
    cut = frame.evaluate(_CUT_WITHOUT_TITLE)
    assert cut == [], cut
    cut_texts = frame.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=sidebar] *, .main-head *'))"
        ".filter((e) => !e.children.length && e.scrollWidth > e.clientWidth + 1).length"
    )
    assert cut_texts >= 3  # the picker's button, the current file, the crumbs: cut at this width
    frame.click('[data-testid="select-worker-button"]')
    frame.fill('[data-testid="select-worker-search"]', "gpunode37")
    frame.locator('[data-testid="select-worker-option"]').first.wait_for(timeout=10_000)
    cut = frame.evaluate(_CUT_WITHOUT_TITLE)
    assert cut == [], cut
