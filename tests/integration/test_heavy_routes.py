"""The server under many users (issue 28.2): the timeline queries over many ranks (a window panned or zoomed
to, a search, a range) are computed in the timeline worker process, not in TensorBoard's interpreter, and
answer what the in-process path answers; a cheap answer (a memoized whole-span window, the run list, a
rank's summary, the parallel summary) is given while a heavy request is still in progress, and never opens
a rank's timeline index.

The heavy request is held in progress without any timing: one of its ranks' index files is replaced by a
named pipe, whose open blocks until the test opens it for writing."""

from __future__ import annotations

import os
import threading
import time
from urllib.parse import quote

import pytest
from werkzeug.test import Client

from support.plugin_testlib import PREFIX
from tb_paddle_profile import timeline
from tb_paddle_profile.timeline import remote
from tb_paddle_profile.v1 import timeline_pb2 as tpb


@pytest.fixture
def plugin(tmp_path):
    from support.plugin_testlib import synth_plugin

    with synth_plugin(tmp_path / "logdir", tmp_path / "cache") as got:
        yield got


def _get(client, url, ok=(200,)):
    for _ in range(600):
        r = client.get(PREFIX + url)
        if r.status_code != 202 or 202 in ok:
            assert r.status_code in ok, (url, r.status_code, r.data[:300])
            return r
        time.sleep(0.2)
    raise AssertionError(f"{url}: still 202")


def _files(routes):
    snapshot = routes._snapshot()
    files = [spans["0"] for spans in snapshot.runs["gen"].values()]
    numbers = routes._rank_numbers("gen", snapshot.runs["gen"])
    return sorted(files, key=lambda f: (numbers.get(f.worker, 1 << 30), f.worker))


def _index_path(store, f) -> str:
    digest = f.key.digest()
    return os.path.join(str(store.folder), digest[:2], digest + ".tl")


def test_timeline_queries_are_computed_in_the_worker_process(plugin):
    p, client = plugin
    routes = p._routes
    files = _files(routes)
    whole = tpb.TimelineWindow.FromString(_get(client, "/timeline?run=gen&span=0&px=800").data)
    lo, hi = whole.range_start_ns, whole.range_end_ns
    name = max({n for n in whole.names if n and not n.startswith("merged")}, key=len)
    two = ",".join(f"{f.worker}:{t}" for f in files[2:4] for t in range(3))
    urls = [
        f"/timeline?run=gen&span=0&px=700&start_ns={lo + (hi - lo) // 3}&end_ns={lo + (hi - lo) // 2}",
        f"/timeline_search?run=gen&span=0&q={quote(name[:6])}&limit=500",
        f"/timeline_search?run=gen&span=0&q={quote(name)}&exact=1",
        f"/timeline_range?run=gen&span=0&start_ns={lo - 1}&end_ns={hi + 1}",
        f"/timeline_range?run=gen&span=0&start_ns={lo + (hi - lo) // 4}&end_ns={lo + (hi - lo) // 2}&tracks={two}",
        "/timeline_range?run=gen&span=0&start_ns=0&end_ns=1&format=json",
    ]
    store = routes._timelines()
    remote_answers = []
    for url in urls:
        with store._lock:
            store._open.clear()  # every index either process needs is opened from its file, and counted
        routes._in_pool("views", remote.forget)
        opens, worker_opens = store.opens, routes._in_pool("views", remote.stats)["opens"]
        remote_answers.append(_get(client, url).data)
        assert store.opens == opens, f"{url}: TensorBoard's process opened a rank's index"
        if "start_ns" in url and "tracks" in url or url.startswith("/timeline?"):
            assert routes._in_pool("views", remote.stats)["opens"] > worker_opens, url
    assert routes._in_pool("views", remote.stats)["pid"] != os.getpid()
    # the same answers from this process (no worker process: the store's path)
    routes._procs_failed.add("views")
    routes._bodies = type(routes._bodies)(routes._bodies.limit, routes._bodies._sizeof)
    try:
        for url, got in zip(urls, remote_answers):
            assert _get(client, url).data == got, url
    finally:
        routes._procs_failed.discard("views")


def _fifo_in_place_of(path: str) -> None:
    tmp = path + ".fifo"
    os.mkfifo(tmp)
    os.replace(tmp, path)


def _release(path: str) -> None:
    """Let a reader blocked on the pipe go (it reads nothing: a damaged index), and take the pipe away."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        fd = None
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    if fd is not None:
        os.close(fd)


def test_cheap_answers_while_a_heavy_request_is_in_progress(plugin, monkeypatch):
    monkeypatch.setattr(timeline.TimelineStore, "KEEP_OPEN", 1)  # a rank looked at earlier is opened again
    p, client = plugin
    routes = p._routes
    files = _files(routes)
    cheap_ranks, heavy_ranks = files[:4], files[4:]
    cheap_workers = ",".join(f.worker for f in cheap_ranks)
    heavy_workers = ",".join(f.worker for f in heavy_ranks)
    window = f"/timeline?run=gen&span=0&px=900&workers={cheap_workers}"
    first = _get(client, window).data  # the whole span of these ranks: memoized
    summary = _get(client, "/parallel?run=gen&span=0&part=summary").data
    rank_summary = f"/summary?run=gen&worker={quote(cheap_ranks[1].worker)}&span=0"
    _get(client, rank_summary)  # (its first request has the span's missing indexes made: none is missing)
    whole = tpb.TimelineWindow.FromString(first)
    lo, hi = whole.range_start_ns, whole.range_end_ns
    store = routes._timelines()
    gates = [_index_path(store, cheap_ranks[0]), _index_path(store, heavy_ranks[1])]
    for gate in gates:
        assert os.path.isfile(gate)
        _fifo_in_place_of(gate)
    answers: dict = {}

    def ask(key, url, ok=(200,)):
        answers[key] = _get(Client(client.application), url, ok).status_code

    heavy = threading.Thread(
        target=ask,
        args=(
            "heavy",
            f"/timeline?run=gen&span=0&px=900&workers={heavy_workers}&start_ns={lo}&end_ns={(lo + hi) // 2}",
            (200, 202),
        ),
    )
    try:
        heavy.start()  # it cannot end before the pipe is opened for writing: it opens that rank's index

        def cheap():
            answers["window"] = Client(client.application).get(PREFIX + window).data
            answers["runs"] = _get(Client(client.application), "/runs").status_code
            answers["summary"] = _get(Client(client.application), rank_summary).status_code
            answers["parallel"] = Client(client.application).get(PREFIX + "/parallel?run=gen&span=0&part=summary").data
            # answers not made yet, made in the run views' own worker process, not behind the held query
            answers["details"] = _get(Client(client.application), "/parallel?run=gen&span=0&part=details").status_code
            answers["distributed"] = _get(
                Client(client.application), "/distributed?run=gen&span=0&part=summary"
            ).status_code

        asker = threading.Thread(target=cheap)
        asker.start()
        asker.join(120)  # a guard, not a measure: before, the memoized window waited for the blocked open
        assert not asker.is_alive(), "a cheap answer waited for a rank's index while a heavy request ran"
        assert answers["window"] == first and answers["parallel"] == summary
        assert answers["runs"] == answers["summary"] == answers["details"] == answers["distributed"] == 200
        assert heavy.is_alive(), "the heavy request ended before its rank's index could be opened"
    finally:
        for gate in gates:
            _release(gate)
        heavy.join(120)
    assert not heavy.is_alive() and answers["heavy"] in (200, 202)
