"""A rank's Overview knows the run's verdict (issue 26.3), in Chromium against a real TensorBoard: a generated
DP4 x PP2 x MP2 run with a data-loader stall planted on one rank (tbp_synth --slow-host-rank). Once the run's
cross-rank analysis is stored, the planted rank's Overview opens with a banner that names it the straggler
with its cost to the job (the parallel route's numbers), a role peer's (same stage and MP index) names "a role
peer of rank N" with a link to it, and a rank of another role has none. Before any analysis is stored the
banner route answers nothing and computes nothing (the stored analysis only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from support.browser_util import SHOTS, save_screenshot, tensorboard, wait_all_loaded

pytestmark = [pytest.mark.browser]


from test_rank_identity_browser import page  # noqa: E402,F401  (1,280 x 800, no page or console error)

REPO = Path(__file__).resolve().parents[2]
RUN = "job"
SLOW = 5


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rank_banner_browser")
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "4",
            "--mp",
            "2",
            "--pp",
            "2",
            "--layers",
            "2",
            "--micro-batches",
            "2",
            "--steps",
            "3",
            "--slow-host-rank",
            str(SLOW),
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
    with tensorboard(logdir, tmp_path_factory.mktemp("rank_banner_tb")) as server:  # a cache of its own
        wait_all_loaded(server)
        yield server


def open_overview(page, tb, worker: str):  # noqa: F811 (the fixture)
    """The Overview of ``worker``, once the page has had the banner route's answer."""
    keys = {"run": RUN, "worker": worker, "span": "0", "unit": "ms", "view": "overview"}
    page.goto("about:blank")  # a page load each time (the same link twice is no navigation)
    with page.expect_response(
        lambda r: "/rank_banner?" in r.url and f"worker={worker}&" in r.url + "&", timeout=60_000
    ) as answer:
        page.goto(
            f"{tb.url}/#paddle_profile&"
            + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
        )
    assert answer.value.status == 200
    frame = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    ).content_frame()
    frame.wait_for_selector('[data-testid="panel-overview"]', timeout=60_000)
    frame.wait_for_timeout(200)  # the answer drawn
    return frame


def banner_route(tb, worker: str) -> dict:
    return json.loads(tb.get(f"/data/plugin/paddle_profile/rank_banner?run={RUN}&worker={worker}&span=0&format=json"))


def role_of(r: dict):
    return (r["coords"]["pp"], r["coords"]["mp"])


def test_the_overview_names_the_straggler_and_its_role_peers(tb, manifest, page):  # noqa: F811
    ranks = {r["rank"]: r for r in manifest["ranks"]}
    assert manifest["slow_host_rank"] == SLOW
    peers = [n for n, r in ranks.items() if n != SLOW and role_of(r) == role_of(ranks[SLOW])]
    other = next(n for n, r in ranks.items() if role_of(r) != role_of(ranks[SLOW]))
    assert peers and other is not None

    # No stored analysis yet: no banner, and asking for one computes none
    assert banner_route(tb, ranks[SLOW]["worker"]).get("sentences", []) == []
    frame = open_overview(page, tb, ranks[SLOW]["worker"])
    assert frame.locator('[data-testid="rank-banner"]').count() == 0
    assert banner_route(tb, ranks[SLOW]["worker"]).get("sentences", []) == []

    # The run's analysis (what the Distributed view asks for), stored from now on
    rp = json.loads(tb.get(f"/data/plugin/paddle_profile/parallel?run={RUN}&span=0&format=json", timeout=120))
    verdict = rp["straggler"]
    assert verdict.get("found") and not verdict.get("uncertain"), verdict.get("summary")
    (s,) = [x for x in verdict["stragglers"] if x.get("rank", 0) == SLOW]
    cost_ms = f"{int(s['jobCostNs']) / 1e6:.2f} ms"

    frame = open_overview(page, tb, ranks[SLOW]["worker"])
    banner = frame.locator('[data-testid="rank-banner"]')
    banner.wait_for(timeout=10_000)
    text = " ".join(banner.inner_text().split())
    assert "straggler" in text and cost_ms in text, (text, cost_ms)
    assert "data loader" in text, text  # its cause, as the verdict names it (host_dataloader)
    assert banner.get_attribute("data-level") == "warning"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "rank-banner-straggler-1280.png"))

    # A role peer: "a role peer of rank 5", the rank a link that opens it
    frame = open_overview(page, tb, ranks[peers[0]]["worker"])
    banner = frame.locator('[data-testid="rank-banner"]')
    banner.wait_for(timeout=10_000)
    text = " ".join(banner.inner_text().split())
    assert f"role peer of rank {SLOW}" in text and cost_ms in text, text
    page.screenshot(path=str(SHOTS / "rank-banner-peer-1280.png"))
    banner.locator(f'a.rank-link[data-rank="{SLOW}"]').click()
    frame.wait_for_function(
        "(w) => document.querySelector('[data-testid=select-worker]').dataset.value === w",
        arg=ranks[SLOW]["worker"],
        timeout=30_000,
    )
    frame.locator('[data-testid="rank-banner"]').wait_for(timeout=30_000)
    assert "straggler" in frame.locator('[data-testid="rank-banner"]').inner_text()

    # Another role: nothing to say
    frame = open_overview(page, tb, ranks[other]["worker"])
    assert frame.locator('[data-testid="rank-banner"]').count() == 0
    assert banner_route(tb, ranks[other]["worker"]).get("sentences", []) == []


def open_view(page, tb, worker: str, view: str):  # noqa: F811 (the fixture)
    """A rank's page (``view``: overview, operators, kernels, memory) once drawn."""
    keys = {"run": RUN, "worker": worker, "span": "0", "unit": "ms", "view": view}
    page.goto("about:blank")
    page.goto(
        f"{tb.url}/#paddle_profile&"
        + "&".join(f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items())
    )
    frame = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    ).content_frame()
    frame.wait_for_selector(f'[data-testid="panel-{view}"]', timeout=60_000)
    return frame


def test_every_page_of_the_straggler_has_the_banner_and_compares_it_with_its_role_peers(tb, manifest, page):  # noqa: F811
    """The banner on the straggler's Operators, Kernels and Memory pages too (one request per rank, not per
    page), its cause a sentence; its button opens Compare with the straggler against the median of its role
    peers, the kernels table the diff route's rows (the peers' median itself: tests/integration/test_peers_diff.py)."""
    from support.browser_util import read_virtual_table

    ranks = {r["rank"]: r for r in manifest["ranks"]}
    worker = ranks[SLOW]["worker"]
    tb.get(f"/data/plugin/paddle_profile/parallel?run={RUN}&span=0&format=json", timeout=120)  # stored
    asked: list = []
    page.on("request", lambda r: asked.append(r.url) if "/rank_banner?" in r.url else None)
    frame = open_view(page, tb, worker, "operators")
    banner = frame.locator('[data-testid="rank-banner"]')
    banner.wait_for(timeout=30_000)
    text = " ".join(banner.inner_text().split())
    assert "straggler" in text and "its data loader takes" in text and "more per step than its role peers'" in text, (
        text
    )
    assert "host:" not in text, text  # a sentence, not the panel's tag
    n = len(asked)
    for view in ("kernels", "memory"):  # other pages of the same rank: the same banner, asked for no more
        frame.click(f'[data-testid="views"] button[data-view="{view}"]')
        frame.wait_for_selector(f'[data-testid="panel-{view}"]', timeout=60_000)
        frame.locator('[data-testid="rank-banner"]').wait_for(timeout=10_000)
        if view == "kernels":
            page.screenshot(path=str(SHOTS / "rank-banner-kernels-1280.png"))
    assert len(asked) == n, asked

    frame = open_view(page, tb, worker, "kernels")
    frame.locator('[data-testid="rank-banner"]').wait_for(timeout=30_000)
    frame.click('[data-testid="rank-banner-compare"]')
    frame.wait_for_selector('[data-testid="cmp-body"][data-mode="peers"]', timeout=120_000)
    assert frame.locator('[data-testid="cmp-baseline"]').get_attribute("data-worker") == "~peers"
    assert frame.locator('[data-testid="cmp-candidate"]').get_attribute("data-worker") == worker
    label = frame.locator('[data-testid="cmp-baseline-label"]').inner_text()
    assert "median of 3 role peers" in label, label
    frame.click('[data-testid="cmp-views"] button[data-value="kernels"]')
    frame.wait_for_selector('[data-testid="cmp-tables"][data-view="kernels"]')
    q = (
        f"baseline_run={RUN}&baseline_worker=~peers&baseline_span=0&candidate_run={RUN}"
        f"&candidate_worker={worker}&candidate_span=0&format=json"
    )
    answer = json.loads(tb.get(f"/data/plugin/paddle_profile/diff?{q}"))
    (table,) = [t for v in answer["display"]["views"] if v["key"] == "kernels" for t in v["tables"]]
    keys = [c["key"] for c in table["columns"]]
    drawn = read_virtual_table(frame, "dt-kernels-kernels")
    assert [r["name"] for r in drawn] == [r["cells"][keys.index("name")]["text"] for r in table["rows"]]
    first = table["rows"][0]["cells"]
    for side in ("baseline", "candidate"):  # the straggler's and the peers' median GPU time per step, in ms
        ns = first[keys.index(f"gpu_total_ns_{side}")].get("number", 0)
        assert drawn[0]["cells"][f"gpu_total_ns_{side}"] == f"{ns / 1e6:.2f}", (side, drawn[0])
    page.screenshot(path=str(SHOTS / "rank-vs-role-peers-1280.png"))
    save_screenshot(page, "rank-vs-role-peers")  # the README's
