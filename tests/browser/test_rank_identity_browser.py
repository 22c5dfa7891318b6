"""Paddle's default worker names in the tab (issue 26, item 4), in Chromium against a real TensorBoard: a
generated 24-rank run on 12 hosts (gpunode0 … gpunode11, two GPUs each) with the default names
``host_<host>pid_<pid>``. The ranks the page shows are the generator's (its synth_manifest.json):
the sidebar lists the hosts in natural order and finds a rank by its number first, the worker
picker too, the Distributed table numbers every rank, and What-if's "Show on the timeline" opens
the timeline of the rank whose step ended last."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import PageLog, new_page, tensorboard, wait_all_loaded

pytestmark = [pytest.mark.browser]


REPO = Path(__file__).resolve().parents[2]
RUN = "job"
SLOW_HOST_RANK = 13


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rank_identity_browser")
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "6",
            "--mp",
            "2",
            "--pp",
            "2",
            "--layers",
            "2",
            "--micro-batches",
            "1",
            "--steps",
            "2",
            "--names",
            "default",
            "--gpus-per-node",
            "2",
            "--slow-host-rank",
            str(SLOW_HOST_RANK),
            "--quiet",
            "--out",
            str(root / RUN),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert gen.returncode == 0, gen.stderr[-2000:]
    return root


@pytest.fixture(scope="module")
def manifest(logdir) -> dict:
    return json.loads((logdir / RUN / "synth_manifest.json").read_text())


@pytest.fixture(scope="module")
def tb(logdir, tmp_path_factory):
    with tensorboard(logdir, tmp_path_factory.mktemp("rank_identity_tb")) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def page(browser, request):
    log = PageLog()
    page = new_page(browser, log, width=1280, height=800)
    yield page
    page.context.close()
    if ran(request):
        assert log.page_errors == [] and log.console_errors == [], (log.page_errors, log.console_errors)


def open_view(page, tb, view: str, worker: str):
    keys = {"run": RUN, "worker": worker, "span": "0", "unit": "ms", "view": view}
    page.goto(
        f"{tb.url}/#paddle_profile&"
        + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=60_000)
    return frame


def by_rank(manifest) -> dict:
    return {r["rank"]: r for r in manifest["ranks"]}


def natural(text: str):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def test_sidebar_and_picker_know_the_ranks_of_default_names(tb, manifest, page):
    ranks = by_rank(manifest)
    frame = open_view(page, tb, "overview", ranks[0]["worker"])
    frame.wait_for_selector('[data-testid="file-groups"]', timeout=60_000)
    groups = frame.eval_on_selector_all('[data-testid="file-group"]', "els => els.map(e => e.dataset.group)")
    hosts = sorted({r["hostname"] for r in manifest["ranks"]}, key=natural)
    assert groups == [f"host {h}" for h in hosts]  # gpunode2 before gpunode10
    # the files are named by their rank, not by the raw worker name
    names = frame.eval_on_selector_all(".file-item .file-name", "els => els.map(e => e.textContent)")
    assert names and all(n.startswith("rank ") for n in names), names

    # the order is the runs route's (rank order): the groups in the order of their first rank, each
    # group's files in the route's order; the frontend sorts nothing of its own
    listed = json.loads(tb.get("/data/plugin/paddle_profile/runs?format=json"))
    (entry,) = [r for r in listed["runs"] if r["run"] == RUN]
    route_hosts = list(dict.fromkeys(w["hostname"] for w in entry["workers"]))
    assert groups == [f"host {h}" for h in route_hosts]
    assert [w.get("rank", 0) for w in entry["workers"]] == sorted(ranks)

    # A rank number finds that rank first, before lower ranks whose host or pid holds its digits ("300"
    # listed ranks 49 and 108 first): the number is chosen so that such a lower rank exists.
    def hay(r):
        return f"rank {r['rank']} {r['hostname']} {r['worker']} {Path(r['trace']).name}"

    wanted = next(n for n in sorted(ranks) if n >= 2 and any(str(n) in hay(ranks[m]) for m in range(n)))
    lower = [m for m in range(wanted) if str(wanted) in hay(ranks[m])]
    assert lower, wanted
    frame.fill('[data-testid="file-search"]', str(wanted))
    first = frame.locator(".file-item").first
    first.wait_for(timeout=10_000)
    found = frame.eval_on_selector_all(".file-item", "els => els.map(e => e.dataset.file)")
    assert found[0] == Path(ranks[wanted]["trace"]).name, (wanted, found)
    assert Path(ranks[lower[0]]["trace"]).name in found  # the lower rank is listed too, after it

    frame.click('[data-testid="select-worker-button"]')
    frame.fill('[data-testid="select-worker-search"]', str(wanted))
    options = frame.eval_on_selector_all('[data-testid="select-worker-option"]', "els => els.map(e => e.dataset.value)")
    assert options[0] == ranks[wanted]["worker"] and ranks[lower[0]]["worker"] in options, (wanted, options)
    frame.press('[data-testid="select-worker-search"]', "Enter")
    frame.wait_for_function(
        "(w) => document.querySelector('[data-testid=select-worker]').dataset.value === w", arg=ranks[wanted]["worker"]
    )


def test_distributed_numbers_every_rank(tb, manifest, page):
    ranks = by_rank(manifest)
    frame = open_view(page, tb, "distributed", ranks[0]["worker"])
    frame.wait_for_selector('[data-testid="dist-ranks"] .vt-row', timeout=120_000)
    cells = frame.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="dist-ranks"] .vt-row'))
        .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
        .map((r) => r.querySelector('.vt-td[data-col="rank"]').textContent)""")
    assert cells and "-" not in cells, cells
    assert [int(c) for c in cells] == sorted(int(c) for c in cells)


def test_whatif_show_on_the_timeline_works_on_default_names(tb, manifest, page):
    ranks = by_rank(manifest)
    frame = open_view(page, tb, "whatif", ranks[0]["worker"])
    button = frame.locator('[data-testid="wi-path-timeline"]')
    button.wait_for(timeout=120_000)
    frame.wait_for_function("() => !document.querySelector('[data-testid=wi-path-timeline]').disabled", timeout=60_000)
    whatif = json.loads(tb.get(f"/data/plugin/paddle_profile/whatif?run={RUN}&span=0&format=json", timeout=120))
    end_rank = whatif["criticalPath"]["steps"][0]["endRank"]
    button.click()
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=60_000)
    frame.wait_for_function(
        "(w) => document.querySelector('[data-testid=select-worker]').dataset.value === w",
        arg=ranks[end_rank]["worker"],
        timeout=30_000,
    )


def test_all_steps_per_rank_axis_names_the_ranks_not_the_raw_worker_names(tb, manifest, page):
    """The "All steps, per rank" chart's category axis on default worker names: one "rank N" label per
    rank, in rank order, never a raw ``host_<host>pid_<pid>`` worker name (issue 26: the axis showed
    raw host_gpunode0pid_412301)."""
    ranks = by_rank(manifest)
    frame = open_view(page, tb, "distributed", ranks[0]["worker"])
    frame.wait_for_selector('[data-testid="dist-ranks-chart"][data-drawn="1"]', timeout=120_000)
    frame.wait_for_function(
        """() => { const c = document.querySelector('[data-testid="dist-ranks-chart"]').__tbppChart;
        const x = c && c.getOption().xAxis; return x && x[0].data && x[0].data.length > 0; }""",
        timeout=120_000,
    )
    labels = frame.evaluate("""() => document.querySelector('[data-testid="dist-ranks-chart"]').__tbppChart
        .getOption().xAxis[0].data.map((d) => (typeof d === 'object' ? d.value : d))""")
    raw = {r["worker"] for r in manifest["ranks"]}
    assert not raw & set(labels), labels
    assert labels == [f"rank {r}" for r in sorted(ranks)], labels
    # what the canvas draws: the axis labels ECharts laid out are those labels too (the ones shown)
    drawn = frame.evaluate("""() => { const c = document.querySelector('[data-testid="dist-ranks-chart"]').__tbppChart;
        const axis = c.getModel().getComponent('xAxis', 0).axis; return axis.getViewLabels().map((l) => l.formattedLabel); }""")
    assert drawn and set(drawn) <= set(labels) and not raw & set(drawn), drawn
