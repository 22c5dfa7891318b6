"""The run-level timeline index (timeline/runindex.py, issue 28.1): a search and a range over a generated
run's ranks answered from it are the answers of the per-rank path (every rank's index opened and
searched, timeline.search_message / range_message), with few or no rank indexes opened; the whole-file
checksum of an index is computed once per file version; through the routes, a search and a range of
a run whose run index exists open no rank index."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from tb_paddle_profile import timeline
from tb_paddle_profile.timeline import storage
from tb_paddle_profile.timeline.runindex import RunIndex, build_run_index, first_k


@dataclass
class _Key:
    value: str

    def digest(self) -> str:
        return self.value


@dataclass
class _File:
    worker: str
    key: _Key
    rank: int = 0
    file_name: str = ""


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    """(files, their opened indexes) of a generated 8-rank run (DP2 x MP2 x PP2)."""
    from tbp_synth import SynthConfig, generate

    root = tmp_path_factory.mktemp("runindex")
    res = generate(
        SynthConfig(
            dp=2, mp=2, pp=2, steps=2, layers=2, micro_batches=2, names="default", gpus_per_node=4, clock_skew_us=2000
        ),
        str(root / "run"),
    )
    files, indexes = [], []
    for i, (_, path) in enumerate(sorted(res.traces.items())):
        out = root / f"r{i}.tl"
        timeline.build_file_index(Path(path).read_bytes, os.path.basename(path), str(out))
        files.append(_File(f"w{i}", _Key(f"{i:064x}"), rank=i, file_name=os.path.basename(path)))
        indexes.append(timeline.TimelineIndex(str(out)))
    return root, files, indexes


def _run_index(root, files, indexes, k):
    path = root / f"run-k{k}.tl"
    build_run_index(str(path), [f.key.digest() for f in files], indexes, k=k)
    return RunIndex(str(path))


def _queries(indexes):
    names = sorted({n for idx in indexes for n in idx.names if n})
    common = max(
        names,
        key=lambda n: sum(int((idx.a["ev_name"] == idx.names.index(n)).sum()) for idx in indexes if n in idx.names),
    )
    return [
        (common, True),
        (common[:5].upper(), False),
        ("a", False),
        ("nccl", False),
        (names[0], True),
        ("no such name", False),
        ("", False),
    ]


def _same_search(a, b):
    assert a.total == b.total and a.base_unix_ns == b.base_unix_ns
    assert [(m.worker, m.id, m.name, m.start_ns, m.end_ns, m.track, m.depth) for m in a.matches] == [
        (m.worker, m.id, m.name, m.start_ns, m.end_ns, m.track, m.depth) for m in b.matches
    ]
    assert (a.first_start_ns, a.last_end_ns) == (b.first_start_ns, b.last_end_ns)


@pytest.mark.parametrize("k", [1, 4, None])
def test_search_from_the_run_index_is_the_per_rank_search(ranks, k):
    root, files, indexes = ranks
    ri = _run_index(root, files, indexes, first_k(len(files)) if k is None else k)
    clock = {f.worker: (i % 3 - 1) * 1_234_567 for i, f in enumerate(files)}
    opened = []

    def open_rank(f):
        opened.append(f.worker)
        return indexes[files.index(f)]

    for query, exact in _queries(indexes):
        for limit in (1, 7, 500, 2000):
            for subset in (files, files[2:5], [files[6]]):
                for base in (None, indexes[0].origin - 10_000):
                    old = timeline.search_message(
                        [(f, indexes[files.index(f)]) for f in subset], query, exact, base, limit, clock=clock
                    )
                    new = timeline.run_search_message(
                        ri, subset, query, exact, base, limit, clock=clock, open_rank=open_rank
                    )
                    _same_search(new, old)
    if k is None:  # the default K: the every-rank searches of 500 (the tab's) open few ranks
        before = len(opened)
        for query, exact in _queries(indexes):
            timeline.run_search_message(ri, files, query, exact, None, 1, clock=clock, open_rank=open_rank)
        assert len(opened) == before, "a search for the first match opened a rank"


def test_range_from_the_run_index_is_the_per_rank_range(ranks):
    root, files, indexes = ranks
    ri = _run_index(root, files, indexes, 4)
    clock = {f.worker: (i % 2) * 2_000_000 for i, f in enumerate(files)}
    base = min(idx.origin - clock[f.worker] for f, idx in zip(files, indexes))
    lo = min(idx.start_ns + idx.origin - clock[f.worker] - base for f, idx in zip(files, indexes))
    hi = max(idx.end_ns + idx.origin - clock[f.worker] - base for f, idx in zip(files, indexes))
    span = hi - lo
    windows = [
        (lo - 1, hi + 1),
        (lo, hi),
        (lo, lo + span // 3),
        (lo + span // 2, hi),
        (hi + 10, hi + 20),
        (lo - 100, lo - 50),
        (lo + span // 4, lo + span // 4),
    ]
    one = files[3].worker
    selections = [
        {f.worker: None for f in files},
        {one: None},
        {one: [0, 1]},
        {f.worker: [t["id"] for t in idx.tracks[:2]] for f, idx in zip(files, indexes)},
    ]
    for ws, we in windows:
        for tracks in selections:
            opened = []

            def open_rank(f):
                opened.append(f.worker)
                return indexes[files.index(f)]

            old = timeline.range_message(list(zip(files, indexes)), ws, we, tracks, None, clock=clock)
            new = timeline.run_range_message(ri, files, ws, we, tracks, None, clock=clock, open_rank=open_rank)
            assert [(r.name, r.type, r.count, r.total_ns, r.overlap_ns) for r in new.rows] == [
                (r.name, r.type, r.count, r.total_ns, r.overlap_ns) for r in old.rows
            ]
            assert new.events == old.events
            if (ws, we) in windows[:2] or we < lo or ws > hi:  # ranks held whole or missed: none opened
                assert opened == [], (ws, we, opened)
            assert set(opened) <= set(tracks)


def test_an_index_is_checksummed_once_per_file_version(ranks, tmp_path):
    root, files, indexes = ranks
    path = tmp_path / "a.tl"
    path.write_bytes((root / "r0.tl").read_bytes())
    old = time.time() - 60
    os.utime(path, (old, old))  # settled (a file changed in the last 2 s is checked at every open)
    storage.forget_verified()
    before = storage.CHECKSUMS[0]
    for _ in range(3):
        timeline.TimelineIndex(str(path))
    assert storage.CHECKSUMS[0] - before == 1
    # a new version (written again: another inode) is checked again; a damaged one is refused
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x40
    tmp = tmp_path / "b.tl"
    tmp.write_bytes(bytes(blob))
    os.utime(tmp, (old, old))
    os.replace(tmp, path)
    with pytest.raises(timeline.CorruptIndex):
        timeline.TimelineIndex(str(path))
    assert storage.CHECKSUMS[0] - before == 2
    with pytest.raises(timeline.CorruptIndex):  # and again: a failed check is never remembered
        timeline.TimelineIndex(str(path))


def test_a_damaged_run_index_is_refused(ranks, tmp_path):
    root, files, indexes = ranks
    path = tmp_path / "run.tl"
    build_run_index(str(path), [f.key.digest() for f in files], indexes, k=4)
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    path.write_bytes(bytes(blob))
    storage.forget_verified()
    with pytest.raises(timeline.CorruptIndex):
        RunIndex(str(path))


# ------------------------------------------------------------------ through the routes


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    from support.plugin_testlib import synth_plugin

    with synth_plugin(tmp_path_factory.mktemp("ri_logdir"), tmp_path_factory.mktemp("ri_cache")) as got:
        yield got


def _get(client, url):
    from support.plugin_testlib import PREFIX

    for _ in range(600):
        r = client.get(PREFIX + url)
        if r.status_code != 202:
            assert r.status_code == 200, (url, r.status_code, r.data[:300])
            return r.data
        time.sleep(0.2)
    raise AssertionError(f"{url}: still 202")


def test_routes_answer_search_and_range_without_opening_the_ranks(plugin):
    from urllib.parse import quote

    from tb_paddle_profile.v1 import timeline_pb2 as tpb

    p, client = plugin
    _get(client, "/timeline?run=gen&span=0")  # the indexes exist
    routes = p._routes
    store = routes._timelines()
    snapshot = routes._snapshot()
    files = [spans["0"] for spans in snapshot.runs["gen"].values()]
    numbers = routes._rank_numbers("gen", snapshot.runs["gen"])
    files.sort(key=lambda f: (numbers.get(f.worker, 1 << 30), f.worker))
    clock = routes._clock("gen", "0", files)
    indexes = [store.get(f)[0] for f in files]
    assert all(idx is not None for idx in indexes)
    base = min(idx.origin - clock.get(f.worker, 0) for f, idx in zip(files, indexes))
    hi = max(idx.end_ns + idx.origin - clock.get(f.worker, 0) - base for f, idx in zip(files, indexes))
    _get(client, "/timeline_search?run=gen&span=0&q=x")  # the run index is built (every index opened once)
    with store._lock:
        store._open.clear()  # no rank index open: any the routes need is opened from its file, and counted
    opens = store.opens
    name = max(indexes[0].names, key=len)
    for q, exact in ((name, True), ("matmul", False), ("nccl", False), ("step", False)):
        got = tpb.TimelineSearch.FromString(
            _get(client, f"/timeline_search?run=gen&span=0&q={quote(q)}{'&exact=1' if exact else ''}&limit=500")
        )
        want = timeline.search_message(list(zip(files, indexes)), q, exact, None, 500, clock=clock)
        _same_search(got, want)
    workers = ",".join(f.worker for f in files[1:3])
    got = tpb.TimelineSearch.FromString(_get(client, f"/timeline_search?run=gen&span=0&q=step&workers={workers}"))
    want = timeline.search_message(
        list(zip(files[1:3], indexes[1:3])), "step", False, None, timeline.MATCH_CAP, clock=clock
    )
    _same_search(got, want)
    got = tpb.TimelineRange.FromString(_get(client, f"/timeline_range?run=gen&span=0&start_ns=-1&end_ns={hi + 1}"))
    want = timeline.range_message(
        list(zip(files, indexes)), -1, hi + 1, {f.worker: None for f in files}, None, clock=clock
    )
    assert [(r.name, r.type, r.count, r.total_ns, r.overlap_ns) for r in got.rows] == [
        (r.name, r.type, r.count, r.total_ns, r.overlap_ns) for r in want.rows
    ] and got.events > 0
    assert store.opens == opens, "a search or a whole-run range opened a rank's index"
    # a range that cuts one rank's tracks opens that rank alone (in the timeline worker process: remote.py)
    from tb_paddle_profile.timeline import remote

    routes._in_pool("views", remote.forget)
    worker_opens = routes._in_pool("views", remote.stats)["opens"]
    w = files[2].worker
    got = tpb.TimelineRange.FromString(
        _get(client, f"/timeline_range?run=gen&span=0&start_ns={hi // 3}&end_ns={hi // 2}&tracks={w}:0,{w}:1")
    )
    want = timeline.range_message(list(zip(files, indexes)), hi // 3, hi // 2, {w: [0, 1]}, None, clock=clock)
    assert [(r.name, r.count, r.overlap_ns) for r in got.rows] == [(r.name, r.count, r.overlap_ns) for r in want.rows]
    assert np.all(np.array([r.count for r in got.rows]) > 0) and store.opens == opens
    assert routes._in_pool("views", remote.stats)["opens"] == worker_opens + 1
