"""The path policy of tb_paddle_profile/core/paths.py where a logdir is read: discovery, the loader, every route
and the CLI's folder walk, with real symbolic links, a FIFO and device files.

Policy: a link is followed only when its target lies inside the logdir's real location; only regular
files are read; folders that are links are not walked. A refused file is listed FAILED with the reason
and nothing of it is read or served. Every wait here is bounded: a FIFO that blocked a reader would fail
the test, not hang it (see _unjam).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from support.plugin_testlib import GPU, PREFIX, make_plugin, place, ready, trace_files
from tb_paddle_profile.core import paths
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.pipeline.discovery import Discovery
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

READY, FAILED = plugin_pb2.READY, plugin_pb2.FAILED
SECRET = b"root:x:0:0:a secret outside the logdir:/root:/bin/sh\n"
NAME = "{}_time_2026_01_01_00_00_00_000000.paddle_trace.json"
REFUSED = {  # worker -> what the reason says
    "passwd": "outside the logdir",
    "relative": "outside the logdir",
    "trace": "outside the logdir",
    "zero": "a device file",
    "fifo": "a FIFO",
    "dangling": "leads to nothing",
    "loopy": "in a loop",
}
REPO = Path(__file__).resolve().parents[2]


def _unjam(fifo: Path) -> None:
    """Release any reader blocked on the FIFO (a writer opens and closes it), so a failure stays bounded."""
    for _ in range(20):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            return  # no reader left


def build_logdir(root: Path, shared_traces: Path) -> dict:
    logdir, outside = root / "logdir", root / "outside"
    gpu = trace_files(shared_traces, GPU)
    good = place(gpu[0].read_bytes(), logdir / "good" / gpu[0].name)
    swap = place(gpu[1].read_bytes(), logdir / "swap" / gpu[1].name)
    secret = outside / "secret.txt"
    secret.parent.mkdir(parents=True)
    secret.write_bytes(SECRET)
    foreign = place(gpu[1].read_bytes(), outside / "runs" / NAME.format("rank5"))  # a real trace, outside
    links = logdir / "links"
    links.mkdir()

    def link(worker, target):
        (links / NAME.format(worker)).symlink_to(target)

    link("passwd", secret)
    link("relative", os.path.relpath(secret, links))
    link("trace", foreign)
    link("zero", "/dev/zero")
    link("dangling", links / "nothing-here")
    link("loopy", links / NAME.format("loopy"))  # a link to itself
    link("inside", os.path.relpath(good, links))  # stays in the logdir: followed
    os.mkfifo(links / NAME.format("fifo"))
    (logdir / "outdir").symlink_to(foreign.parent, target_is_directory=True)  # a folder out of the logdir
    (links / "up").symlink_to("..", target_is_directory=True)  # a loop
    return {
        "logdir": logdir,
        "good": good,
        "swap": swap,
        "secret": secret,
        "foreign": foreign,
        "fifo": links / NAME.format("fifo"),
    }


@pytest.fixture(scope="module")
def env(shared_traces, tmp_path_factory):
    root = tmp_path_factory.mktemp("policy")
    env = build_logdir(root, shared_traces)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TB_PADDLE_PROFILE_CACHE", str(root / "cache"))
        mp.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
        mp.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
        plugin, client = make_plugin(str(env["logdir"]))
        env.update(plugin=plugin, client=client)
        try:
            ready(plugin, timeout=60)
            yield env
        finally:
            _unjam(env["fifo"])
            plugin.close()


def get(env, route, method="GET", **params):
    return env["client"].open(f"{PREFIX}/{route}?{urlencode(params)}", method=method)


def test_refused_files_are_listed_failed_with_the_reason_and_never_read(env):
    rl = plugin_pb2.RunList.FromString(get(env, "runs").get_data())
    runs = {r.run: r for r in rl.runs}
    assert sorted(runs) == ["good", "links", "swap"]  # neither the folder link out nor the loop is walked
    spans = {w.worker: w.spans for w in runs["links"].workers}
    assert sorted(spans) == sorted(list(REFUSED) + ["inside"])
    for worker, reason in REFUSED.items():
        (entry,) = spans[worker]
        assert entry.state == FAILED and entry.span == "?", worker  # not even its head was read
        assert entry.error.startswith(NAME.format(worker) + ": ") and reason in entry.error, entry.error
        assert "\n" not in entry.error
    (inside,) = spans["inside"]
    assert inside.state == READY and inside.span == "0" and inside.file_size == env["good"].stat().st_size

    status = get(env, "status").get_json()
    by_worker = {f["worker"]: f for f in status["files"] if f["run"] == "links"}
    for worker, reason in REFUSED.items():
        assert by_worker[worker]["state"] == "FAILED" and reason in by_worker[worker]["refused"]
        assert reason in by_worker[worker]["error"]
    assert by_worker["inside"]["refused"] == "" and by_worker["inside"]["state"] == "READY"
    assert status["stats"]["parsed"] == 3  # good, swap and the link inside: nothing refused was parsed


def test_nothing_refused_is_served_by_any_route(env):
    for worker in REFUSED:
        one = {"run": "links", "worker": worker, "span": "?"}
        for route, code in (("trace", 403), ("summary", 422), ("timeline_event", 403), ("trace_window", 403)):
            for method in ("GET", "HEAD"):
                r = get(env, route, method, **one, id="0")
                body = r.get_data()
                assert r.status_code == code, (route, worker, r.status_code, body[:300])
                assert SECRET not in body and b"traceEvents" not in body and len(body) < 2000
                assert r.headers["X-Content-Type-Options"] == "nosniff"
                if method == "GET":
                    assert REFUSED[worker] in r.get_data(as_text=True), (route, worker)
        for route in ("timeline", "timeline_search", "timeline_range"):
            r = get(env, route, run="links", span="?", workers=worker, q="x", start_ns="0", end_ns="10")
            assert r.status_code == 404 and SECRET not in r.get_data(), (route, worker)
    # The run's views show the refused ranks with their reasons.
    dist = plugin_pb2.RunDistributed.FromString(get(env, "distributed", run="links", span="?").get_data())
    assert {r.worker: r.state for r in dist.ranks} == {w: FAILED for w in REFUSED}
    assert all(REFUSED[r.worker] in r.error for r in dist.ranks)
    par = get(env, "parallel", run="links", span="?")
    assert par.status_code == 200 and SECRET not in par.get_data()


def test_a_link_inside_the_logdir_is_followed(env):
    good = env["good"].read_bytes()
    r = get(env, "trace", run="links", worker="inside", span="0")
    assert r.status_code == 200 and r.get_data() == good
    assert r.headers["Content-Length"] == str(len(good))
    r = get(env, "summary", run="links", worker="inside", span="0")
    assert r.status_code == 200
    expected = summarize_bytes(good, NAME.format("inside"))
    served = summary_pb2.Summary.FromString(r.get_data())
    assert served.operators == expected.operators and served.meta.total_time_ns == expected.meta.total_time_ns


ATTACKS = [
    "..",
    "../outside/secret.txt",
    "../../outside/secret.txt",
    "links/../../outside",
    "/etc/passwd",
    "~",
    "links/passwd_time_2026_01_01_00_00_00_000000.paddle_trace.json",
    "links/up",
    "links/up/links",
    "outdir",
    "outdir/rank5",
    "links%2F..%2F..%2Foutside",
    "..%2F..%2Foutside%2Fsecret.txt",
    "%2e%2e%2f%2e%2e%2f",
    "..\\..\\outside\\secret.txt",
    "links\x00",
    "\x00",
    "passwd\x00",
    "%00",
    "links%00",
    "file:///etc/passwd",
    "/dev/zero",
    "\u2025/outside",
]


def test_path_attacks_in_every_parameter_of_every_route(env):
    secret, foreign = str(env["secret"]), str(env["foreign"])
    payloads = ATTACKS + [secret, foreign, os.path.relpath(secret, env["logdir"]), env["secret"].as_uri()]
    valid = {
        "run": "links",
        "worker": "inside",
        "span": "0",
        "workers": "inside",
        "q": "x",
        "id": "0",
        "start_ns": "0",
        "end_ns": "10",
        "tracks": "inside:1",
    }
    routes = {
        "summary": ("run", "worker", "span"),
        "trace": ("run", "worker", "span"),
        "distributed": ("run", "span"),
        "parallel": ("run", "span"),
        "timeline": ("run", "span", "workers"),
        "timeline_event": ("run", "worker", "span"),
        "timeline_search": ("run", "span", "workers"),
        "timeline_range": ("run", "span", "tracks"),
        "trace_window": ("run", "worker", "span"),
    }
    for route, names in routes.items():
        for name in names:
            for payload in payloads:
                for encoded in (quote(payload, safe=""), quote(quote(payload, safe=""), safe="")):
                    query = "&".join(f"{k}={quote(v)}" for k, v in valid.items() if k != name)
                    r = env["client"].get(f"{PREFIX}/{route}?{query}&{name}={encoded}")
                    body = r.get_data()
                    assert r.status_code in (400, 404), (route, name, payload, r.status_code, body[:200])
                    assert SECRET not in body and b"traceEvents" not in body and len(body) < 2000
                    assert r.headers["X-Content-Type-Options"] == "nosniff"
    for path in ("../../outside/secret.txt", "..%2F..%2F..%2Foutside%2Fsecret.txt", secret, "%2F" + secret[1:]):
        r = env["client"].get(f"{PREFIX}/{path}")
        assert r.status_code == 404 and SECRET not in r.get_data(), path


def test_zz_a_file_swapped_for_a_link_after_the_scan_is_not_served(env):
    """Between a scan and a request the file becomes a link out of the logdir: the open file is checked."""
    swap, plugin = env["swap"], env["plugin"]
    q = {"run": "swap", "worker": "rank1", "span": "0"}
    assert get(env, "trace", **q).status_code == 200
    tmp = swap.with_name("tmp-link")
    tmp.symlink_to(env["secret"])
    os.replace(tmp, swap)
    r = get(env, "trace", **q)  # the listing still says it is a plain file
    assert r.status_code == 403 and "outside the logdir" in r.get_data(as_text=True)
    assert SECRET not in r.get_data()
    plugin.discovery.scan()
    (run,) = [r for r in plugin_pb2.RunList.FromString(get(env, "runs").get_data()).runs if r.run == "swap"]
    entry = run.workers[0].spans[0]
    assert entry.state == FAILED and "outside the logdir" in entry.error


# ------------------------------------------------------------------ discovery and paths.py directly


def test_discovery_walks_no_folder_link_and_reads_no_refused_head(shared_traces, tmp_path, monkeypatch):
    env = build_logdir(tmp_path, shared_traces)
    opened = []
    real_open = paths.open_checked

    def spy(fs, path, root, file_name=None):
        opened.append(os.path.basename(path))
        return real_open(fs, path, root, file_name)

    monkeypatch.setattr(paths, "open_checked", spy)
    discovery = Discovery(str(env["logdir"]), interval=None)
    done = []
    scanner = threading.Thread(target=lambda: done.append(discovery.scan()), daemon=True)
    scanner.start()
    scanner.join(60)
    _unjam(env["fifo"])
    assert done, "the scan blocked"
    snapshot = done[0]
    assert sorted(snapshot.runs) == ["good", "links", "swap"]
    files = {f.worker: f for f in snapshot.runs["links"].values() for f in f.values()}
    for worker, reason in REFUSED.items():
        assert reason in files[worker].refused and files[worker].span == "?"
        assert NAME.format(worker) not in opened  # its head was not read
    assert files["inside"].refused == "" and files["inside"].span == "0"
    assert files["inside"].root == discovery.root
    # A followed link is described by its target (fsspec gives the link's own mtime).
    assert files["inside"].mtime == pytest.approx(env["good"].stat().st_mtime)


def _in_thread(fn, timeout=20.0):
    box = []

    def run():
        try:
            box.append(("ok", fn()))
        except BaseException as exc:  # noqa: B902 - the test looks at it
            box.append(("error", exc))

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert box, "blocked"
    return box[0]


def test_open_checked_refuses_without_blocking_and_follows_a_named_file(shared_traces, tmp_path):
    env = build_logdir(tmp_path, shared_traces)
    logdir, links = str(env["logdir"]), env["logdir"] / "links"
    try:
        for worker, reason in REFUSED.items():
            path = str(links / NAME.format(worker))
            assert reason in (paths.refusal(None, path, logdir) or ""), worker
            kind, value = _in_thread(lambda: paths.read_checked(None, path, logdir))
            assert kind == "error" and isinstance(value, TraceError), (worker, value)
            assert reason in str(value) and str(value).startswith(NAME.format(worker))
        inside = str(links / NAME.format("inside"))
        assert paths.refusal(None, inside, logdir) is None
        assert paths.read_checked(None, inside, logdir) == env["good"].read_bytes()
        # Named by the user (root None): links are followed, but never to a FIFO or a device.
        assert paths.read_checked(None, str(links / NAME.format("passwd")), None) == SECRET
        for worker in ("fifo", "zero"):
            kind, value = _in_thread(lambda: paths.read_checked(None, str(links / NAME.format(worker)), None))
            assert kind == "error" and isinstance(value, TraceError), (worker, value)
        # A logdir reached through a link of its own is compared by its real location.
        alias = tmp_path / "alias"
        alias.symlink_to(env["logdir"], target_is_directory=True)
        assert (
            paths.read_checked(None, str(alias / "links" / NAME.format("inside")), str(alias))
            == env["good"].read_bytes()
        )
    finally:
        _unjam(env["fifo"])


# ------------------------------------------------------------------ the CLI's folder walk


def cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def test_cli_folder_walk_follows_the_policy(shared_traces, tmp_path):
    env = build_logdir(tmp_path, shared_traces)
    try:
        r = cli("summary", str(env["logdir"]), "--views", "overview", "--jobs", "1")
        assert r.returncode == 2, r.stderr
        errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == len(REFUSED) and len(r.stderr.splitlines()) == len(REFUSED), r.stderr
        for worker, reason in REFUSED.items():
            assert any(NAME.format(worker) in e and reason in e for e in errors), (worker, r.stderr)
        headers = [line for line in r.stdout.splitlines() if line.startswith("==> ")]
        shown = sorted(os.path.relpath(h[4:-4], env["logdir"]) for h in headers)
        assert shown == ["good/" + env["good"].name, "links/" + NAME.format("inside"), "swap/" + env["swap"].name]
        assert "secret" not in r.stdout

        # The logdir holds three runs (good/, links/, swap/): distributed names them and analyses none.
        r = cli("distributed", str(env["logdir"]), "--span", "0", "--jobs", "1")
        assert r.returncode == 2 and SECRET.decode() not in r.stdout + r.stderr and not r.stdout, r.stdout
        assert "3 runs here: good (1 trace), links (8 traces), swap (1 trace)" in r.stderr, r.stderr
        # The folder given is the root: from links/, the link to ../good leads outside it.
        r = cli("distributed", str(env["logdir"] / "links"), "--jobs", "1")
        assert r.returncode == 2 and SECRET.decode() not in r.stdout + r.stderr
        assert f"{NAME.format('inside')}: {paths.OUTSIDE}" in r.stderr, r.stderr
        errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == len(REFUSED) + 2, r.stderr  # every refused link, the one inside, and the run
        assert errors[-1].endswith("links: none of its 8 trace files could be read"), r.stderr
        for worker, reason in REFUSED.items():
            assert any(NAME.format(worker) in e and reason in e for e in errors), (worker, r.stderr)

        # A file named explicitly is followed, wherever it leads, but a FIFO or a device is refused.
        r = cli("summary", str(env["logdir"] / "links" / NAME.format("trace")), "--views", "overview")
        assert r.returncode == 0, r.stderr
        for worker, reason in (("fifo", "a FIFO"), ("zero", "a device file")):
            r = cli("summary", str(env["logdir"] / "links" / NAME.format(worker)), timeout=60)
            assert r.returncode == 2 and reason in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    finally:
        _unjam(env["fifo"])
