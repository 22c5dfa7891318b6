"""A real ``tensorboard`` process on 127.0.0.1 over examples/profiler_log: the tab is listed, every route
answers, the summaries equal the engine's, and the logdir is left untouched."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlencode

import pytest

from support.paths import REPO
from support.plugin_testlib import free_port, place, stop, tree_digest, wait_http
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

pytest.importorskip("tensorboard")
EXAMPLES = REPO / "examples" / "profiler_log"
DEADLINE_S = 120


def fetch(url: str, headers=None):
    """(status, headers, body) without raising on 4xx."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def descendants(pid: int):
    """Process ids whose parent chain leads to ``pid`` (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    stat = f.read()
                parents[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            except (OSError, ValueError):
                continue
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, shared_traces):
    if any(EXAMPLES.rglob("*.paddle_trace.json")):
        return EXAMPLES
    root = tmp_path_factory.mktemp("e2e-logdir")
    for src in (shared_traces / "cpu-gpt-2rank-gloo").glob("*.paddle_trace.json"):
        place(src.read_bytes(), root / "gpt-2rank" / src.name)
    return root


@pytest.fixture(scope="module")
def server(logdir, tmp_path_factory):
    before = tree_digest(logdir)
    port = free_port()
    env = dict(os.environ)
    env.update(TB_PADDLE_PROFILE_CACHE=str(tmp_path_factory.mktemp("e2e-cache")), TB_PADDLE_PROFILE_WORKERS="2")
    env.pop("TB_PADDLE_PROFILE_SIDECAR", None)
    log = tmp_path_factory.mktemp("e2e-log") / "tensorboard.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tensorboard.main",
                "--logdir",
                str(logdir),
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(tmp_path_factory.mktemp("e2e-cwd")),
        )
    base = f"http://127.0.0.1:{port}"
    try:
        try:
            wait_http(f"{base}/data/plugins_listing", proc, DEADLINE_S)
        except AssertionError:
            raise AssertionError(log.read_text()[-3000:])
        yield base, proc
    finally:
        children = descendants(proc.pid)
        stop(proc)
        left = [p for p in children if os.path.exists(f"/proc/{p}")]
        for _ in range(100):  # worker processes notice their parent is gone and exit
            left = [p for p in left if os.path.exists(f"/proc/{p}") and _not_zombie(p)]
            if not left:
                break
            time.sleep(0.1)
        assert tree_digest(logdir) == before, "the logdir changed"
        assert not left, f"processes left behind: {left}"


def _not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] != "Z"
    except OSError:
        return False


def api(base: str, route: str, **params):
    query = f"?{urlencode(params)}" if params else ""
    return fetch(f"{base}/data/plugin/paddle_profile/{route}{query}")


def wait_all_loaded(base: str) -> plugin_pb2.RunList:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        status, _, body = api(base, "runs")
        assert status == 200
        runs = plugin_pb2.RunList.FromString(body)
        states = [s.state for r in runs.runs for w in r.workers for s in w.spans]
        if states and all(s in (plugin_pb2.READY, plugin_pb2.FAILED) for s in states):
            return runs
        assert time.monotonic() < deadline, f"not loaded in time: {states}"
        time.sleep(0.2)


def test_tensorboard_serves_every_route(server, logdir):
    base, proc = server
    status, _, body = fetch(f"{base}/data/plugins_listing")
    listing = json.loads(body)["paddle_profile"]
    assert listing["enabled"] is True and listing["tab_name"] == "Paddle Profile"
    assert listing["loading_mechanism"]["module_path"] == "/data/plugin/paddle_profile/index.js"

    runs = wait_all_loaded(base)
    expected_runs = sorted({str(p.parent.relative_to(logdir)) for p in logdir.rglob("*.paddle_trace.json")})
    assert [r.run for r in runs.runs] == expected_runs

    checked = 0
    for run in runs.runs:
        for w in run.workers:
            for s in w.spans:
                assert s.state == plugin_pb2.READY, s
                q = {"run": run.run, "worker": w.worker, "span": s.span}
                path = logdir / run.run / s.file_name
                status, headers, body = api(base, "summary", **q)
                assert status == 200 and headers["Content-Type"] == "application/x-protobuf"
                assert summary_pb2.Summary.FromString(body) == summarize_bytes(path.read_bytes(), path.name)
                status, headers, body = api(base, "summary", format="json", **q)
                assert status == 200 and json.loads(body)["meta"]["fileName"] == path.name
                status, headers, body = api(base, "trace", **q)
                assert status == 200 and body == path.read_bytes()
                assert path.name in headers["Content-Disposition"]
                checked += 1
        status, _, body = api(base, "distributed", run=run.run, span=run.workers[0].spans[0].span)
        assert status == 200
        dist = plugin_pb2.RunDistributed.FromString(body)
        assert [r.worker for r in dist.ranks] == [w.worker for w in run.workers]
        assert all(r.state == plugin_pb2.READY and r.steps for r in dist.ranks)
    assert checked >= 1

    first = runs.runs[0]
    status, headers, body = fetch(
        f"{base}/data/plugin/paddle_profile/summary?"
        + urlencode({"run": first.run, "worker": first.workers[0].worker, "span": first.workers[0].spans[0].span}),
        headers={"Accept-Encoding": "gzip"},
    )
    assert headers["Content-Encoding"] == "gzip" and summary_pb2.Summary.FromString(gzip.decompress(body))

    status, _, body = api(base, "status")
    assert status == 200 and json.loads(body)["counts"] == {"READY": checked}
    status, headers, body = fetch(f"{base}/data/plugin/paddle_profile/index.js")
    assert status == 200 and "javascript" in headers["Content-Type"]
    status, _, body = fetch(f"{base}/data/plugin_entry.html?name=paddle_profile")
    assert status == 200 and b"index.js" in body
    status, _, body = api(base, "summary", run="../" + first.run, worker="rank0", span="0")
    assert status == 404 and b"unknown run" in body
    status, _, _ = fetch(f"{base}/data/plugin/paddle_profile/..%2f..%2fsetup.py")
    assert status == 404
    assert proc.poll() is None
