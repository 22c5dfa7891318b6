"""A collective's instance on its member ranks, the default rank set at 128 ranks and the dark canvas,
on the Timeline (issue 16, point 1), in Debian's Chromium through Playwright against a real TensorBoard.

- Selecting an NCCL all-reduce kernel of rank 1 (not rank 0) shows its matched instance: the member
  ranks, waits, durations and transfer equal the instance that ``tb-paddle-profile parallel --format
  json`` prints (the CLI, its own process and cache); a flow is drawn from the last arrival to every
  other member shown; member ranks not shown are added by the card's button.
- With 128 ranks (tbp_synth DP16 × PP4 × MP2 and a planted ``--slow-rank``), the timeline opens on the
  planted straggler and its role peers (the ranks of its stage and mp index, by the generator's rank
  order); with a worker named, on that worker and its role peers.
- In TensorBoard's dark mode (the browser's prefers-color-scheme, which TensorBoard follows) the
  canvas pixels are dark; in light mode light.

At 1,280 and 1,440 px; screenshots to browser_util.SHOTS.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

from support.browser_util import SHOTS, PageLog, save_screenshot, tensorboard, wait_all_loaded

browser_test = [pytest.mark.browser]


def _browser(fn):
    for mark in browser_test:
        fn = mark(fn)
    return fn


REPO = Path(__file__).resolve().parents[2]
RUN = "gen"
DP, MP, PP = 4, 2, 2  # 16 ranks: every rank is shown by default
SLOW = 5
WIDTHS = [1280, 1440]
PREFIX = "/data/plugin/paddle_profile"


def _generate(out: Path, dp: int, mp: int, pp: int, slow: int, layers: int, micro: int) -> None:
    got = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            str(dp),
            "--mp",
            str(mp),
            "--pp",
            str(pp),
            "--layers",
            str(layers),
            "--steps",
            "2",
            "--micro-batches",
            str(micro),
            "--slow-rank",
            str(slow),
            "--quiet",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert got.returncode == 0, got.stderr[-2000:]


@pytest.fixture(scope="module")
def gen_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tlm_gen") / "logdir"
    _generate(root / RUN, DP, MP, PP, SLOW, 2, 2)
    return root


@pytest.fixture(scope="module")
def gen(gen_dir, tmp_path_factory):
    root = gen_dir
    # The CLI's analysis of the same traces, in its own process and cache folder.
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "parallel",
            str(root / RUN),
            "--format",
            "json",
            "--cache-dir",
            str(tmp_path_factory.mktemp("tlm_cli_cache")),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert cli.returncode == 0, cli.stderr[-2000:]
    with tensorboard(root, tmp_path_factory.mktemp("tlm_tb")) as server:
        wait_all_loaded(server)
        yield server, json.loads(cli.stdout)


def _page(browser, width: int, dark: bool, log: PageLog, height: int = 900):
    context = browser.new_context(
        viewport={"width": width, "height": height}, device_scale_factor=1, color_scheme="dark" if dark else "light"
    )
    page = context.new_page()
    context.on("request", lambda req: log.requests.append(req.url))
    page.on("console", lambda msg: log.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda err: log.page_errors.append(str(err)))
    return page


def _close(page, log: PageLog):
    page.context.close()
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
    assert log.outside_requests() == [], log.outside_requests()


def _open(page, tb, run: str, worker: str = "", extra: dict = None):
    keys = dict(run=run, span="0", unit="ms", view="timeline")
    if worker:
        keys["worker"] = worker
    keys.update(extra or {})
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    page.goto(f"{tb.url}/#{'&'.join(parts)}")
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    frame.wait_for_selector('[data-testid="app"]', timeout=60_000)
    return frame


def _wait_drawn(frame, timeout=120_000):
    frame.wait_for_function(
        "() => { const t = window.__tbppTimeline; const d = t && t.data();"
        " return d && d.items > 0 && JSON.stringify(d.ranks.map((r) => r.worker)) === JSON.stringify(t.workers())"
        " && d.ranks.every((r) => r.state === '' && r.tracks.length > 0); }",
        timeout=timeout,
    )


def fmt_dur(ns: float) -> str:
    """The page's fmtDur (panels/timeline/data.ts)."""
    a = abs(ns)
    if a >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if a >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if a >= 1e3:
        return f"{ns / 1e3:.3f} µs"
    return f"{round(ns)} ns"


def _dp_instance(analysis: dict, rank: int) -> dict:
    """A data-parallel all-reduce of the CLI's matched instances with ``rank`` among its members, not
    arriving last, with every other member of its DP group."""
    for m in analysis["matched"]:
        ranks = [x["rank"] for x in m["members"]]
        if (
            m["kind"] == "COLLECTIVE_KIND_ALL_REDUCE"
            and len(ranks) == DP
            and rank in ranks
            and m.get("lastRank", 0) != rank
        ):
            return m
    raise AssertionError("no data-parallel all-reduce of rank %d among the CLI's matched instances" % rank)


def _slice_id(tb, worker: str, inst: dict, analysis: dict) -> int:
    """The event id of ``worker``'s slice of ``inst``: the timeline's search for its name on that rank,
    the occurrence whose start (base + start, on the rank's own clock) is the member's start."""
    rank = int(worker[4:])
    member = next(x for x in inst["members"] if x["rank"] == rank)
    clock = {r["worker"]: int(r.get("clockOffsetNs", 0)) for r in analysis["ranks"]}
    from tb_paddle_profile.v1 import timeline_pb2 as tpb

    got = tpb.TimelineSearch.FromString(
        tb.get(f"{PREFIX}/timeline_search?run={RUN}&span=0&workers={worker}&exact=1&limit=2000&q={quote(inst['name'])}")
    )
    for m in got.matches:
        if got.base_unix_ns + m.start_ns + clock.get(worker, 0) == int(member["startUnixNs"]):
            return int(m.id)
    raise AssertionError(f"no slice of {worker} starts at {member['startUnixNs']}")


_CANVAS_LUMA = """() => { const c = document.querySelector('[data-testid="timeline-canvas"]');
  const img = c.getContext('2d').getImageData(0, 0, c.width, c.height).data; let sum = 0, n = 0;
  for (let i = 0; i < img.length; i += 16) { sum += 0.2126 * img[i] + 0.7152 * img[i + 1] + 0.0722 * img[i + 2]; n++; }
  return sum / n; }"""


def _members_shown(frame) -> list:
    return frame.evaluate("""() => [...document.querySelectorAll('[data-testid="timeline-instance-member"]')].map((tr) => ({
        rank: Number(tr.dataset.rank), worker: tr.dataset.worker, last: tr.dataset.last === '1', shown: tr.dataset.shown === '1',
        wait: tr.dataset.waitNs, dur: tr.dataset.durationNs, transfer: tr.dataset.transferNs, start: tr.dataset.startUnixNs,
        cells: [...tr.querySelectorAll('td')].map((td) => td.textContent) }))""")


def _check_against_cli(frame, inst: dict, analysis: dict) -> list:
    shown = _members_shown(frame)
    want = {x["rank"]: x for x in inst["members"]}
    assert sorted(m["rank"] for m in shown) == sorted(want)
    # arrivals on the run's common clock: each member's start less its clock offset (rank-named files: each
    # rank's own estimate, nanoseconds here), after the first member's
    clock = {int(r.get("rank", 0)): int(r.get("clockOffsetNs", 0)) for r in analysis["ranks"]}
    common = {r: int(x["startUnixNs"]) - clock.get(r, 0) for r, x in want.items()}
    first = min(common.values())
    for m in shown:
        w = want[m["rank"]]
        assert int(m["wait"]) == int(w.get("waitNs", 0)) and int(m["dur"]) == int(w["durationNs"]), (m, w)
        assert int(m["transfer"]) == int(inst["transferNs"]) and int(m["start"]) == int(w["startUnixNs"])
        assert m["last"] == (m["rank"] == inst.get("lastRank", 0))
        # the text: wait, duration and transfer as the page prints times
        assert m["cells"][2] == fmt_dur(int(w.get("waitNs", 0))) and m["cells"][3] == fmt_dur(int(w["durationNs"]))
        assert m["cells"][4] == fmt_dur(int(inst["transferNs"]))
        assert m["cells"][1] == "+" + fmt_dur(common[m["rank"]] - first)
    return shown


@_browser
@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def test_a_collectives_instance_on_every_member_rank(gen, browser, width, dark):
    tb, analysis = gen
    inst = _dp_instance(analysis, 1)
    sid = _slice_id(tb, "rank1", inst, analysis)
    log = PageLog()
    page = _page(browser, width, dark, log)
    frame = _open(page, tb, RUN, "rank1", {"tlsel": f"rank1:{sid}"})
    _wait_drawn(frame)
    frame.wait_for_selector('[data-testid="timeline-instance"]', timeout=60_000)
    shown = _check_against_cli(frame, inst, analysis)
    assert all(m["shown"] for m in shown)  # 16 ranks: all drawn
    # a flow from the last arrival to each other member, all of them on the canvas
    frame.wait_for_function("(n) => window.__tbppTimeline.memberFlows === n", arg=len(shown) - 1, timeout=10_000)
    assert frame.get_attribute('[data-testid="timeline-canvas"]', "data-member-flows") == str(len(shown) - 1)
    if (
        width == 1440 and not dark
    ):  # the documentation's picture (docs/timeline.md): rank 1's slice, its wait, the flow to it
        page.wait_for_timeout(200)
        save_screenshot(frame.locator('[data-testid="panel-timeline"]'), "timeline-members")
    # each member's slice is the instance's: selecting a member's row opens its slice on its rank
    other = next(m for m in shown if m["rank"] != 1)
    frame.click(f'[data-testid="timeline-instance-member"][data-rank="{other["rank"]}"] button')
    frame.wait_for_function(
        '(w) => { const t = document.querySelector(\'[data-testid="timeline-details"] td[data-key="track"]\');'
        " return t && t.textContent.startsWith(w + ' · '); }",
        arg=other["worker"],
        timeout=20_000,
    )
    assert frame.text_content('[data-testid="timeline-detail-name"]') == inst["name"]
    start = frame.evaluate("() => window.__tbppTimeline.selected().start")
    base = int(frame.evaluate("() => window.__tbppTimeline.data().base"))
    clock = {r["worker"]: int(r.get("clockOffsetNs", 0)) for r in analysis["ranks"]}
    member = next(x for x in inst["members"] if x["rank"] == other["rank"])
    assert base + round(start) + clock.get(other["worker"], 0) == int(member["startUnixNs"])
    frame.wait_for_selector('[data-testid="timeline-instance"]', timeout=20_000)  # the same instance again
    _check_against_cli(frame, inst, analysis)
    # the canvas follows TensorBoard's mode
    frame.wait_for_function("(d) => document.documentElement.classList.contains('tbpp-dark') === d", arg=dark)
    page.wait_for_timeout(200)
    luma = frame.evaluate(_CANVAS_LUMA)
    assert (luma < 90) if dark else (luma > 170), luma
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"timeline-members-{width}-{'dark' if dark else 'light'}.png"))
    _close(page, log)


@_browser
@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def test_member_ranks_not_shown_are_added_and_then_flows_reach_them(gen, browser, width):
    tb, analysis = gen
    inst = _dp_instance(analysis, 1)
    sid = _slice_id(tb, "rank1", inst, analysis)
    log = PageLog()
    page = _page(browser, width, False, log)
    frame = _open(page, tb, RUN, "rank1", {"tlsel": f"rank1:{sid}", "tlranks": "rank0,rank1"})
    _wait_drawn(frame)
    frame.wait_for_selector('[data-testid="timeline-instance"]', timeout=60_000)
    shown = _check_against_cli(frame, inst, analysis)
    members = {f"rank{x['rank']}" for x in inst["members"]}
    hidden = members - {"rank0", "rank1"}
    assert {m["worker"] for m in shown if not m["shown"]} == hidden
    assert frame.get_attribute('[data-testid="timeline-instance"]', "data-hidden") == str(len(hidden))
    # the last arrival is not shown (rank 1 did not arrive last): no flow yet
    frame.wait_for_function("() => window.__tbppTimeline.memberFlows === 0", timeout=10_000)
    frame.click('[data-testid="timeline-instance-show"]')
    frame.wait_for_function("(ws) => ws.every((w) => window.__tbppTimeline.workers().includes(w))", arg=sorted(members))
    _wait_drawn(frame)
    frame.wait_for_function("(n) => window.__tbppTimeline.memberFlows === n", arg=len(members) - 1, timeout=30_000)
    assert all(m["shown"] for m in _check_against_cli(frame, inst, analysis))
    assert frame.evaluate("() => window.__tbppTimeline.workers()") == sorted(
        members | {"rank0"}, key=lambda w: int(w[4:])
    )
    page.screenshot(path=str(SHOTS / f"timeline-members-added-{width}.png"))
    _close(page, log)


# ---------------------------------------------------------------- the route, in-process


@pytest.fixture(scope="module")
def routes(gen_dir, tmp_path_factory):
    import os
    from support.plugin_testlib import make_plugin, ready

    old = os.environ.get("TB_PADDLE_PROFILE_CACHE")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path_factory.mktemp("tlm_route_cache"))
    plugin, client = make_plugin(str(gen_dir))
    try:
        ready(plugin)
        yield client
    finally:
        plugin.close()
        store = getattr(plugin._routes, "_timeline_store", None)
        if store is not None:
            store.close()
        if old is None:
            os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)
        else:
            os.environ["TB_PADDLE_PROFILE_CACHE"] = old


def _get(client, url: str):
    import time

    for _ in range(600):
        r = client.get(PREFIX + url)
        if r.status_code != 202:
            return r
        time.sleep(0.2)
    raise AssertionError(f"{url}: still 202")


def test_the_instance_route_answers_the_clis_matched_instances_with_each_members_slice(gen_dir, routes):
    """Every kind (all-reduce of the mp and dp groups, send/recv of the pipeline): from any member's
    slice, the route's instance is the CLI's, and each member's slice starts at its member's start."""
    from tb_paddle_profile.analysis.collectives import KIND_LABELS
    from tb_paddle_profile.v1 import summary_pb2, timeline_pb2 as tpb

    analysis = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tb_paddle_profile",
                "parallel",
                str(gen_dir / RUN),
                "--format",
                "json",
                "--cache-dir",
                str(gen_dir.parent / "route_cli_cache"),
            ],
            capture_output=True,
            text=True,
            cwd=str(REPO),
            check=True,
        ).stdout
    )
    clock = {r["worker"]: int(r.get("clockOffsetNs", 0)) for r in analysis["ranks"]}
    # one instance of each kind and group size, step 1 and 2
    sample, seen = [], set()
    for m in analysis["matched"]:
        key = (m["kind"], len(m["members"]), m["step"])
        if key not in seen:
            seen.add(key)
            sample.append(m)
    assert {m["kind"] for m in sample} >= {"COLLECTIVE_KIND_ALL_REDUCE", "COLLECTIVE_KIND_SEND_RECV"}
    ids = {}
    for m in sample:
        for x in m["members"]:
            w = f"rank{x['rank']}"
            got = tpb.TimelineSearch.FromString(
                _get(
                    routes, f"/timeline_search?run={RUN}&span=0&workers={w}&exact=1&limit=2000&q={quote(m['name'])}"
                ).data
            )
            hit = [t for t in got.matches if got.base_unix_ns + t.start_ns + clock.get(w, 0) == int(x["startUnixNs"])]
            if not hit:  # a send/recv member's kernel may carry the other name of the pair: any slice starting there
                continue
            ids[(id(m), x["rank"])] = int(hit[0].id)
    assert len(ids) >= sum(len(m["members"]) for m in sample) // 2
    checked = set()
    for m in sample:
        for x in m["members"]:
            if (id(m), x["rank"]) not in ids:
                continue
            r = _get(routes, f"/timeline_instance?run={RUN}&span=0&worker=rank{x['rank']}&id={ids[(id(m), x['rank'])]}")
            assert r.status_code == 200, r.data[:300]
            inst = tpb.TimelineInstance.FromString(r.data)
            assert inst.matched and inst.name == m["name"] and inst.step == int(m["step"])
            checked.add(m["kind"])
            assert inst.kind == KIND_LABELS[summary_pb2.CollectiveKind.Value(m["kind"])]
            assert inst.transfer_ns == int(m["transferNs"]) and inst.last_rank == m.get("lastRank", 0)
            want = {y["rank"]: y for y in m["members"]}
            assert [y.rank for y in inst.members] == [y["rank"] for y in m["members"]]
            for y in inst.members:
                w = want[y.rank]
                assert (y.wait_ns, y.duration_ns, y.start_unix_ns, y.ordinal) == (
                    int(w.get("waitNs", 0)),
                    int(w["durationNs"]),
                    int(w["startUnixNs"]),
                    w.get("ordinal", 0),
                )
                assert y.worker == f"rank{y.rank}" and y.last == (y.rank == inst.last_rank) and y.found
                assert y.direction == {"P2P_DIRECTION_SEND": "send", "P2P_DIRECTION_RECV": "recv"}.get(
                    w.get("direction"), ""
                )
                assert y.start_ns + inst.base_unix_ns + clock.get(y.worker, 0) == y.start_unix_ns
                # its arrival after the first member's, on the corrected clocks (the card's "Arrival")
                first = min(int(v["startUnixNs"]) - clock.get(f"rank{v['rank']}", 0) for v in m["members"])
                assert y.arrival_ns == int(w["startUnixNs"]) - clock.get(y.worker, 0) - first
                if (id(m), y.rank) in ids:
                    assert y.id == ids[(id(m), y.rank)]
                ev = tpb.TimelineEvent.FromString(
                    _get(
                        routes,
                        f"/timeline_event?run={RUN}&span=0&worker={y.worker}"
                        f"&id={y.id}&base_unix_ns={inst.base_unix_ns}",
                    ).data
                )
                assert (ev.start_ns, ev.track, ev.depth) == (y.start_ns, y.track, y.depth)
                assert ev.type in ("Kernel", "Communication", "Operator")
    assert checked >= {"COLLECTIVE_KIND_ALL_REDUCE", "COLLECTIVE_KIND_SEND_RECV"}, checked
    # the members' slices are looked up only on the ranks asked for (and the selected one)
    m = sample[0]
    x = next(y for y in m["members"] if (id(m), y["rank"]) in ids)
    inst = tpb.TimelineInstance.FromString(
        _get(
            routes,
            f"/timeline_instance?run={RUN}&span=0&worker=rank{x['rank']}"
            f"&id={ids[(id(m), x['rank'])]}&workers=rank{x['rank']}",
        ).data
    )
    assert [y.found for y in inst.members] == [y.rank == x["rank"] for y in inst.members]
    # a slice in no instance: matched false, with the reason; an unknown event: 404
    step = tpb.TimelineSearch.FromString(
        _get(routes, f"/timeline_search?run={RUN}&span=0&workers=rank1&q=ProfileStep").data
    )
    inst = tpb.TimelineInstance.FromString(
        _get(routes, f"/timeline_instance?run={RUN}&span=0&worker=rank1&id={step.matches[0].id}").data
    )
    assert not inst.matched and not inst.members and "not a member" in inst.note
    assert _get(routes, f"/timeline_instance?run={RUN}&span=0&worker=rank1&id=999999999").status_code == 404
    assert _get(routes, f"/timeline_instance?run={RUN}&span=0&worker=nobody&id=1").status_code == 404


# ---------------------------------------------------------------- 128 ranks: the default rank set

S_DP, S_MP, S_PP, S_SLOW = 16, 2, 4, 45


def _role_peers(manifest: dict, rank: int) -> set:
    """The rank and its role peers by the generator's planted coordinates: the ranks of its stage and mp index."""
    coords = {r["rank"]: r["coords"] for r in manifest["ranks"]}
    me = coords[rank]
    return {r for r, c in coords.items() if (c["pp"], c["mp"]) == (me["pp"], me["mp"])}


@pytest.fixture(scope="module")
def scale(tmp_path_factory):
    root = tmp_path_factory.mktemp("tlm_scale")
    _generate(root / "logdir" / "scale", S_DP, S_MP, S_PP, S_SLOW, 4, 1)
    manifest = json.loads((root / "logdir" / "scale" / "synth_manifest.json").read_text())
    pre = subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "preprocess",
            str(root / "logdir"),
            "--cache-dir",
            str(root / "cache"),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert pre.returncode == 0, pre.stderr[-2000:]
    with tensorboard(
        root / "logdir",
        tmp_path_factory.mktemp("tlm_scale_tb"),
        extra_env={"TB_PADDLE_PROFILE_CACHE": str(root / "cache")},
    ) as server:
        wait_all_loaded(server, timeout=300)
        yield server, manifest


@_browser
@pytest.mark.parametrize("width", WIDTHS, ids=[f"{w}px" for w in WIDTHS])
def test_at_128_ranks_the_timeline_opens_on_the_straggler_and_its_role_peers(scale, browser, width):
    tb, manifest = scale
    assert manifest["slow_rank"] == S_SLOW and len(manifest["ranks"]) == S_DP * S_MP * S_PP
    log = PageLog()
    page = _page(browser, width, False, log)
    frame = _open(
        page, tb, "scale", extra={"tlmode": "detail"}
    )  # no worker named; the detailed view (not the compact one)
    frame.wait_for_function(
        "() => (document.querySelector('[data-testid=timeline-ranks-why]') || {}).textContent?.includes('straggler')",
        timeout=180_000,
    )
    _wait_drawn(frame, timeout=180_000)
    shown = [int(w[4:]) for w in frame.evaluate("() => window.__tbppTimeline.workers()")]
    peers = _role_peers(manifest, S_SLOW)
    assert S_SLOW in shown and len(shown) == 16
    # its role peers, and the current rank (rank 0, what the tab selects when none is named) kept in
    assert set(shown) <= peers | {0}, shown
    assert len(set(shown) & peers) >= 15
    assert frame.evaluate("() => window.__tbppTimeline.data().ranks.map((r) => r.worker)") == [
        f"rank{r}" for r in sorted(shown)
    ]
    # it opens on the straggler: its rank header at the top of the canvas (or as far down as the scroll goes)
    frame.wait_for_function(
        """(w) => { const t = window.__tbppTimeline; const h = t.rows().find((r) => r.kind === 'rank' && r.worker === w);
        const box = document.querySelector('.tl-scroll'); const most = box.scrollHeight - box.clientHeight;
        return h && (Math.abs(t.scrollTop() - h.y) <= 1 || Math.abs(t.scrollTop() - most) <= 1); }""",
        arg=f"rank{S_SLOW}",
        timeout=20_000,
    )
    page.wait_for_timeout(200)
    page.screenshot(path=str(SHOTS / f"timeline-128-default-{width}.png"))

    _close(page, log)

    # a worker named: that worker and its role peers, not the straggler
    log = PageLog()
    page = _page(browser, width, False, log)
    frame = _open(page, tb, "scale", "rank66", {"tlmode": "detail"})
    frame.wait_for_function(
        "() => (document.querySelector('[data-testid=timeline-ranks-why]') || {}).textContent?.includes('rank named')",
        timeout=120_000,
    )
    _wait_drawn(frame)
    shown = [int(w[4:]) for w in frame.evaluate("() => window.__tbppTimeline.workers()")]
    assert 66 in shown and len(shown) == 16 and set(shown) <= _role_peers(manifest, 66), shown
    assert S_SLOW not in shown
    _close(page, log)
