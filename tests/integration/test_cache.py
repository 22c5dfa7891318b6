"""The summary cache: a restart on a cached logdir parses nothing; sidecars are off unless asked for."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.plugin_testlib import GLOO, GPU, OLD, make_plugin, place, ready, trace_files, tree_digest
from tb_paddle_profile.store.cache import SIDECAR_SUFFIX, CachedResult, CacheKey, SummaryCache, encode_entry
from tb_paddle_profile.store.cache_store import open_cache
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.pipeline.preprocess import preprocess
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2


@pytest.fixture
def logdir(shared_traces, tmp_path) -> Path:
    root = tmp_path / "logdir"
    for src in trace_files(shared_traces, GLOO):
        place(src.read_bytes(), root / "gloo" / src.name)
    for src in trace_files(shared_traces, GPU):
        place(src.read_bytes(), root / "gpu" / src.name)
    place(b'{"traceEvents": [', root / "gpu" / "rank7_time_2026_01_01_00_00_00_000000.paddle_trace.json", mtime=OLD)
    return root


def start(logdir: Path, monkeypatch, cache: Path, sidecar: bool = False):
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(cache))
    monkeypatch.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
    if sidecar:
        monkeypatch.setenv("TB_PADDLE_PROFILE_SIDECAR", "1")
    else:
        monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    plugin, client = make_plugin(str(logdir))
    ready(plugin)
    return plugin


def states(plugin):
    files = plugin.discovery.snapshot().files
    return {(f.run, f.worker, f.span): s for f, s in zip(files, plugin.loader.states(files))}


def summaries(plugin):
    return {(f.run, f.worker, f.span): plugin.loader.summary_bytes(f) for f in plugin.discovery.snapshot().files}


def test_restart_on_a_cached_logdir_parses_nothing(logdir, tmp_path, monkeypatch):
    before = tree_digest(logdir)
    first = start(logdir, monkeypatch, tmp_path / "cache")
    try:
        assert first.loader.stats["parsed"] == 5
        first_states, first_summaries = states(first), summaries(first)
    finally:
        first.close()
    assert [s.state for s in first_states.values()].count(plugin_pb2.READY) == 4
    failed = first_states[("gpu", "rank7", "?")]
    assert failed.state == plugin_pb2.FAILED and "truncated JSON" in failed.error

    second = start(logdir, monkeypatch, tmp_path / "cache")
    try:
        assert second.loader.stats["parsed"] == 0
        assert second.loader.stats["cache_hits"] == 5
        again = states(second)
        assert {k: (s.state, s.error) for k, s in again.items()} == {
            k: (s.state, s.error) for k, s in first_states.items()
        }
        assert all(s.cached for s in again.values())
        assert summaries(second) == first_summaries
        for f in second.discovery.snapshot().files:
            if again[(f.run, f.worker, f.span)].state == plugin_pb2.READY:
                served = summary_pb2.Summary.FromString(second.loader.summary_bytes(f))
                assert served == summarize_bytes(Path(f.path).read_bytes(), f.file_name)
    finally:
        second.close()
    assert tree_digest(logdir) == before  # the sidecar is off by default: nothing written into the logdir
    assert not list(logdir.rglob("*" + SIDECAR_SUFFIX))


def test_a_changed_trace_is_parsed_again(logdir, tmp_path, monkeypatch):
    start(logdir, monkeypatch, tmp_path / "cache").close()
    touched = next((logdir / "gloo").glob("rank1_*"))
    os.utime(touched, (OLD + 10, OLD + 10))
    plugin = start(logdir, monkeypatch, tmp_path / "cache")
    try:
        assert plugin.loader.stats["parsed"] == 1
        assert plugin.loader.stats["cache_hits"] == 4
    finally:
        plugin.close()


def test_sidecars_let_a_second_user_parse_nothing(logdir, tmp_path, monkeypatch):
    first = start(logdir, monkeypatch, tmp_path / "cache-a", sidecar=True)
    first.close()
    sidecars = sorted(p.name for p in logdir.rglob("*" + SIDECAR_SUFFIX))
    assert len(sidecars) == 5  # the failure too, so nobody parses the broken file again
    # A teammate with an empty cache of their own, sharing the logdir:
    second = start(logdir, monkeypatch, tmp_path / "cache-b", sidecar=True)
    try:
        assert second.loader.stats["parsed"] == 0 and second.loader.stats["sidecar_hits"] == 5
        assert [s.state for s in states(second).values()].count(plugin_pb2.READY) == 4
    finally:
        second.close()
    # With the option off, sidecars are neither read nor written.
    third = start(logdir, monkeypatch, tmp_path / "cache-c")
    try:
        assert third.loader.stats["parsed"] == 5 and third.loader.stats["sidecar_hits"] == 0
    finally:
        third.close()
    assert sorted(p.name for p in logdir.rglob("*" + SIDECAR_SUFFIX)) == sidecars


def test_preprocess_fills_the_cache(logdir, tmp_path, monkeypatch):
    before = tree_digest(logdir)
    results = preprocess(str(logdir), cache_dir=str(tmp_path / "cache"), jobs=1)
    assert len(results) == 5
    by_name = {Path(p).name: (ok, msg) for p, ok, msg in results}
    assert by_name["rank7_time_2026_01_01_00_00_00_000000.paddle_trace.json"][0] is False
    assert "truncated JSON" in by_name["rank7_time_2026_01_01_00_00_00_000000.paddle_trace.json"][1]
    assert sorted(msg for ok, msg in by_name.values() if ok) == ["parsed"] * 4
    assert all(Path(p).is_absolute() for p, _, _ in results)
    assert tree_digest(logdir) == before
    assert [m for _, _, m in preprocess(str(logdir), cache_dir=str(tmp_path / "cache"))].count("cached") == 4

    plugin = start(logdir, monkeypatch, tmp_path / "cache")
    try:
        assert plugin.loader.stats["parsed"] == 0
    finally:
        plugin.close()


def test_summaries_served_from_a_url_cache_parse_nothing_until_a_timeline_is_opened(logdir, tmp_path, monkeypatch):
    """A cache at a URL has no folder for timeline indexes (cache_store.UrlSummaryCache): looking at a rank's
    summary used to ask for the index of every rank of its span, each file's job run again (a TensorBoard
    over a cache `preprocess --dask` filled parsed the whole run). They are built at the first Timeline view."""
    from urllib.parse import urlencode

    from support.plugin_testlib import PREFIX

    url = "file://" + str(tmp_path / "shared-cache")
    start(logdir, monkeypatch, url).close()  # fills the cache at the URL (its own parses)
    assert len(list((tmp_path / "shared-cache").rglob("*.pb"))) == 5
    parses = tmp_path / "parses.log"
    monkeypatch.setenv("TB_PADDLE_PROFILE_PARSE_LOG", str(parses))  # counted in the loader's processes too
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", url)
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        assert plugin.loader.cache.cache_dir is None  # a URL cache: no folder
        assert plugin.loader.stats["cache_hits"] == 5 and plugin.loader.stats["parsed"] == 0
        ranks = [f for f in plugin.discovery.snapshot().files if f.worker != "rank7"]
        for f in ranks:
            r = client.get(f"{PREFIX}/summary?{urlencode({'run': f.run, 'worker': f.worker, 'span': f.span})}")
            assert r.status_code == 200
            assert summary_pb2.Summary.FromString(r.data) == summarize_bytes(Path(f.path).read_bytes(), f.file_name)
        assert plugin.loader.wait_idle(60)  # any job a summary asked for has run
        assert plugin.loader.stats["parsed"] == 0 and not parses.exists()  # failed before: 4 parsed
        # The Timeline view of a rank builds its index then (into a temporary folder): that one rank parsed.
        first = ranks[0]
        q = urlencode({"run": first.run, "span": first.span, "workers": first.worker, "px": 800})
        for _ in range(300):
            r = client.get(f"{PREFIX}/timeline?{q}")
            if r.status_code != 202:
                break
            plugin.loader.wait_idle(5)
        assert r.status_code == 200, r.data[:300]
        assert parses.read_text().split() == [first.file_name]
    finally:
        plugin.close()
        plugin._routes.close()


def test_cache_entries_are_validated_and_written_atomically(tmp_path):
    cache = SummaryCache(tmp_path / "c")
    key = CacheKey("file:///x/rank0_time_1.paddle_trace.json", 123, "1700000000.5")
    assert cache.get(key) is None
    assert cache.put(key, CachedResult(True, b"\x0a\x02\x08\x01", ""))
    assert cache.get(key) == CachedResult(True, b"\x0a\x02\x08\x01", "")
    assert cache.peek(key) == CachedResult(True, b"", "")
    for other in (
        CacheKey(key.source, 124, key.version),
        CacheKey(key.source, 123, "1700000001.0"),
        CacheKey("file:///y/rank0_time_1.paddle_trace.json", 123, key.version),
    ):
        assert cache.get(other) is None
    files = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert len(files) == 1 and not files[0].name.startswith(".tmp-")
    files[0].write_bytes(files[0].read_bytes()[:20])  # a cut entry is ignored, not trusted
    assert cache.get(key) is None
    assert cache.put(key, CachedResult(False, b"", "x.json: empty file"))
    assert cache.get(key) == CachedResult(False, b"", "x.json: empty file")

    off = open_cache(cache_dir="off")
    assert off.cache_dir is None and not off.put(key, CachedResult(True, b"", ""))


def test_cache_location_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "here"))
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    cache = open_cache()
    assert cache.cache_dir == tmp_path / "here" and cache.sidecar is False
    monkeypatch.delenv("TB_PADDLE_PROFILE_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert open_cache().cache_dir == tmp_path / "home" / ".cache" / "tb_paddle_profile"
    monkeypatch.setenv("TB_PADDLE_PROFILE_SIDECAR", "1")
    assert open_cache().sidecar is True


def test_the_cache_folder_is_bounded_least_recently_used_first(tmp_path, monkeypatch):
    """Over TB_PADDLE_PROFILE_CACHE_MAX_MB, the entries used longest ago go (a read counts as a use),
    down to 90 % of the bound; the entry just written and files that are not entries stay."""
    from tb_paddle_profile.store import trim as trim_mod

    monkeypatch.setattr(trim_mod, "TRIM_INTERVAL_S", 0.0)
    root = tmp_path / "c"
    keys = [CacheKey(f"file:///x/rank{i}_time_1.paddle_trace.json", 100 + i, "1") for i in range(10)]
    payload = b"\x00" * 100_000
    big = SummaryCache(root, limit=0)  # unbounded: fill it first
    for i, key in enumerate(keys):
        assert big.put(key, CachedResult(True, payload, ""))
        os.utime(big._path(key), (1_700_000_000 + i, 1_700_000_000 + i))  # rank0 oldest ... rank9 newest
    index = root / "timeline-v1" / "ab" / ("ab" + "0" * 62 + ".tl")
    index.parent.mkdir(parents=True)
    index.write_bytes(b"\x00" * 100_000)
    os.utime(index, (1_700_000_000 + 2.5, 1_700_000_000 + 2.5))
    stranger = root / "notes.txt"
    stranger.write_bytes(b"\x00" * 300_000)  # not an entry: never counted, never deleted
    os.utime(stranger, (1_000_000_000, 1_000_000_000))

    assert big.get(keys[1]) is not None  # a read: rank1 is now the most recently used
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE_MAX_MB", str(700_000 / (1 << 20)))
    bounded = SummaryCache(root)
    assert bounded.trimmer.limit == 700_000
    newest = CacheKey("file:///x/rank10_time_1.paddle_trace.json", 110, "1")
    assert bounded.put(newest, CachedResult(True, payload, ""))

    left = {k.source.split("/")[-1][:6].rstrip("_") for k in keys + [newest] if bounded.get(k) is not None}
    # 12 entries of ~100 KB against 630 KB (90 %): the six least recently used went, the index among them
    assert left == {"rank1", "rank6", "rank7", "rank8", "rank9", "rank10"}, left
    assert not index.exists() and stranger.exists()
    sizes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p != stranger)
    assert sizes <= 630_000

    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE_MAX_MB", "0")
    assert trim_mod.cache_limit_bytes() == 0
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE_MAX_MB", "junk")
    assert trim_mod.cache_limit_bytes() == trim_mod.DEFAULT_CACHE_MAX_MB << 20


def test_the_trim_walks_a_bounded_slice_per_tick_and_still_bounds_the_folder(tmp_path, monkeypatch):
    """Issue 29: every tick walked every entry of the folder (seconds at 400,000 entries). Now the first
    tick walks the whole folder, the next ones SLICE_ENTRIES entries each (whole subfolders), the process
    counting what it writes; what another process wrote is found within a round of the folder, and past
    the bound the whole folder is trimmed to 90 % as before (the entry just written kept); .tmp-*.part
    files a kill left behind still go."""
    import time

    from tb_paddle_profile.store import trim as trim_mod

    monkeypatch.setattr(trim_mod, "TRIM_INTERVAL_S", 0.0)
    monkeypatch.setattr(trim_mod, "SLICE_ENTRIES", 40, raising=False)
    root = tmp_path / "c"
    subs = [root / "digest-v1" / f"{i:02x}" for i in range(16)]
    for sub in subs:
        sub.mkdir(parents=True)
    counter = {"n": 0}

    def entry(i: int, size: int = 1000, old: bool = False) -> Path:
        path = subs[i % 16] / f"{i:06d}.dg"
        path.write_bytes(b"\x00" * size)
        if old:
            os.utime(path, (1_600_000_000 + i, 1_600_000_000 + i))
        return path

    for i in range(400):
        entry(i)
    real = os.scandir

    def counted(path="."):
        it = real(path)
        inside = str(path).startswith(str(root / "digest-v1") + os.sep)

        class Counting:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                it.close()

            def __iter__(self):
                for e in it:
                    counter["n"] += inside
                    yield e

        return Counting()

    monkeypatch.setattr(os, "scandir", counted)
    folder = lambda: sum(p.stat().st_size for p in root.rglob("*.dg"))  # noqa: E731
    trimmer = trim_mod.Trimmer(root, limit=1_000_000)

    def tick(path: Path) -> int:
        counter["n"] = 0
        trimmer.after_write(path)
        return counter["n"]

    assert tick(entry(400)) == 401  # the first tick: the whole folder
    seen = [tick(entry(i)) for i in range(401, 411)]
    assert all(0 < n <= 40 + 26 for n in seen), seen  # a slice: 40 entries and the rest of a subfolder
    assert folder() == 411_000

    # another process writes 700 entries (older than ours): the folder passes its bound unseen by this
    # process's own count; within a round of slices it is found and trimmed, each tick still a slice
    for i in range(1000, 1700):
        entry(i, old=True)
    for i in range(411, 480):
        n = tick(entry(i))
        if folder() <= 900_000:
            break
        assert n <= 40 + 70, n
    else:
        raise AssertionError("the folder was never trimmed")
    assert 850_000 <= folder() <= 900_000
    assert all((subs[j % 16] / f"{j:06d}.dg").exists() for j in range(400, i + 1))  # the older ones went first

    # this process's own writes past the bound: the next tick trims, keeping the entry just written
    big = entry(5000, size=300_000)
    counter["n"] = 0
    trimmer.after_write(big)
    assert big.exists() and folder() <= 900_000

    # a part a kill left behind, in a subfolder: removed by a slice within a round
    part = subs[3] / ".tmp-killed.part"
    part.write_bytes(b"x" * 10)
    then = time.time() - trim_mod.STALE_PART_S - 60
    os.utime(part, (then, then))
    for i in range(6000, 6040):
        assert tick(entry(i, size=10)) <= 40 + 70
        if not part.exists():
            break
    assert not part.exists()


def test_a_bounded_cache_still_serves_every_file(logdir, tmp_path, monkeypatch):
    """A bound smaller than one summary: entries are dropped as soon as others are written, and every
    file is still served (from memory, or parsed again after a restart), equal to the engine's."""
    from tb_paddle_profile.store import trim as trim_mod

    monkeypatch.setattr(trim_mod, "TRIM_INTERVAL_S", 0.0)
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE_MAX_MB", "0.001")
    for _ in range(2):
        plugin = start(logdir, monkeypatch, tmp_path / "cache")
        try:
            entries = [p for p in (tmp_path / "cache").rglob("*.pb")]
            assert len(entries) <= 1  # all but the last written were trimmed away
            for f in plugin.discovery.snapshot().files:
                data = plugin.loader.summary_bytes(f)
                for _ in range(3):  # an entry trimmed away is parsed again (the route answers 202 meanwhile)
                    if data is not None or f.worker == "rank7":
                        break
                    assert plugin.loader.wait_idle(60)
                    data = plugin.loader.summary_bytes(f)
                if f.worker != "rank7":
                    assert summary_pb2.Summary.FromString(data) == summarize_bytes(
                        Path(f.path).read_bytes(), f.file_name
                    )
        finally:
            plugin.close()


# ------------------------------------------------------------------ damaged entries (issue 17, defect 5)


def _cut_body(blob: bytes) -> bytes:
    return blob[: len(blob) - 3]  # the header (and its checksum) kept, the body cut


def _flip_body(blob: bytes) -> bytes:
    return blob[:-2] + bytes([blob[-2] ^ 0x01]) + blob[-1:]


def _garbage(blob: bytes) -> bytes:
    return bytes((b * 7 + 3) % 256 for b in blob)


def _empty(blob: bytes) -> bytes:
    return b""


DAMAGES = [_cut_body, _flip_body, _garbage, _empty]


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_summary_entry_is_a_miss_deleted_and_written_again(damage, tmp_path, caplog):
    import logging

    cache = SummaryCache(tmp_path / "c")
    key = CacheKey("file:///x/rank0_time_1.paddle_trace.json", 123, "1700000000.5")
    body = b"\x0a\x04\x08\x01\x10\x02" * 20
    assert cache.put(key, CachedResult(True, body, ""))
    path = cache._path(key)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING):
        if damage is not _flip_body:  # cut, garbage, empty: seen from the header and the length alone
            assert cache.peek(key) is None
            assert not path.exists()
            path.write_bytes(damage(encode_entry(key, CachedResult(True, body, ""))))  # damaged again, for get
        assert cache.get(key) is None  # never the damaged body
    assert not path.exists(), "a damaged entry is deleted"
    damaged = [r for r in caplog.records if "is damaged" in r.getMessage()]
    assert damaged and all(str(path) in r.getMessage() for r in damaged)
    assert 1 <= len(damaged) <= (1 if damage is _flip_body else 2)  # at most once per damaged read
    assert cache.put(key, CachedResult(True, body, ""))
    assert cache.get(key) == CachedResult(True, body, "")
    assert cache.peek(key) == CachedResult(True, b"", "")


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_sidecar_is_ignored(damage, tmp_path):
    from tb_paddle_profile.store.cache import read_sidecar, sidecar_path, write_sidecar
    import fsspec

    fs = fsspec.filesystem("file")
    trace = tmp_path / "rank0_time_1.paddle_trace.json"
    trace.write_bytes(b"{}")
    key = CacheKey("file://" + str(trace), 2, "1")
    body = b"\x0a\x04\x08\x01\x10\x02" * 10
    assert write_sidecar(fs, str(trace), key, CachedResult(True, body, "")) == ""
    assert read_sidecar(fs, str(trace), key) == CachedResult(True, body, "")
    side = Path(sidecar_path(str(trace)))
    side.write_bytes(damage(side.read_bytes()))
    assert read_sidecar(fs, str(trace), key) is None


def test_a_sidecar_that_is_a_fifo_is_not_read(tmp_path):
    """A FIFO named like a sidecar used to block the worker reading it forever."""
    import threading

    import fsspec

    from tb_paddle_profile.store.cache import read_sidecar, sidecar_path

    fs = fsspec.filesystem("file")
    trace = tmp_path / "rank0_time_1.paddle_trace.json"
    trace.write_bytes(b"{}")
    fifo = sidecar_path(str(trace))
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(
        target=lambda: got.append(read_sidecar(fs, str(trace), CacheKey("x", 2, "1"))), daemon=True
    )
    reader.start()
    reader.join(30)  # a hang guard: the read is refused at once
    blocked = reader.is_alive()
    if blocked:  # release the blocked reader before failing
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        reader.join(5)
    assert not blocked, "reading the sidecar blocked on a FIFO"
    assert got == [None]


def test_damaged_cache_entries_are_summarized_again_never_served(logdir, tmp_path, monkeypatch):
    """Entries cut after their header, or with a flipped byte: the views of the run (summary, distributed,
    parallel) never answer 500 nor a wrong summary; the damaged files are parsed again."""
    from urllib.parse import urlencode

    from support.plugin_testlib import PREFIX

    start(logdir, monkeypatch, tmp_path / "cache").close()
    entries = sorted((tmp_path / "cache").rglob("*.pb"))
    assert len(entries) == 5
    damaged = 0
    for path in entries:
        blob = path.read_bytes()
        if len(blob) > 2000:  # summaries (not the cached failure)
            path.write_bytes(_cut_body(blob) if damaged % 2 == 0 else _flip_body(blob))
            damaged += 1
    assert damaged == 4
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        for run in ("gloo", "gpu"):
            for route in ("parallel", "distributed"):
                for _ in range(60):
                    r = client.get(f"{PREFIX}/{route}?{urlencode({'run': run, 'span': '0'})}")
                    assert r.status_code in (200, 202), (route, r.status_code, r.data[:300])
                    if r.status_code == 200:
                        break
                    assert plugin.loader.wait_idle(60)
                assert r.status_code == 200
                msg = (plugin_pb2.RunParallel if route == "parallel" else plugin_pb2.RunDistributed).FromString(r.data)
                assert len(msg.ranks) == 2, (run, route)  # every rank in it, none left out for its damaged entry
        for f in plugin.discovery.snapshot().files:
            if f.worker == "rank7":
                continue
            for _ in range(3):
                data = plugin.loader.summary_bytes(f)
                if data is not None:
                    break
                assert plugin.loader.wait_idle(60)
            assert summary_pb2.Summary.FromString(data) == summarize_bytes(Path(f.path).read_bytes(), f.file_name)
        assert plugin.loader.stats["parsed"] == damaged
    finally:
        plugin.close()
