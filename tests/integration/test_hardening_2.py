"""Hardening, second round (issue 29): each attack of the audit reproduced, against the fix that holds it.

Gzip bombs bounded by the bytes inflated (never by the trailer) in the reader and the truncation check,
the default bound divided among the workers; control characters in names made visible wherever the CLI
prints them; CSV cells neutralised against formula injection; shared caches honouring the umask; the
loader's dispatcher at a cost per file that does not grow with the queue; and the smaller items."""

import gzip
import os
import tracemalloc
import zlib

import pytest

from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.trace import reader
from tb_paddle_profile.trace.truncation import looks_truncated

MB = 1 << 20


def _deflate_members(*payloads) -> bytes:
    """A multi-member .gz, one member per payload (an iterable of byte chunks), compressed in steps."""
    out = []
    for chunks in payloads:
        c = zlib.compressobj(1, zlib.DEFLATED, 31)
        for chunk in chunks:
            out.append(c.compress(chunk))
        out.append(c.flush())
    return b"".join(out)


def _bomb(inflated_mb: int) -> bytes:
    """JSON-looking output about 60 x smaller compressed (under the 200 x ratio refusal), and a tiny
    last member whose size trailer says 7 bytes: the trailer lies about the whole file."""
    block = (b" " * 1000 + os.urandom(24)) * 1024  # 1 MB, about 60:1 at deflate -1
    big = [b'{"traceEvents": ['] + [block] * inflated_mb
    return _deflate_members(big, [b"]}    \n"])


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return _bomb(48)


def _peak(fn, *args, **kw):
    tracemalloc.start()
    try:
        try:
            result = fn(*args, **kw)
        except TraceError as err:
            result = err
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bomb_trailer_lies_and_the_plan_is_small(bomb):
    """The attack: the size trailer says 7 bytes, and the ratio alone does not refuse the file."""
    assert int.from_bytes(bomb[-4:], "little") == 7
    assert len(bomb) * reader.MAX_GZIP_RATIO > 48 * MB  # not refused by the ratio: only a bound on bytes holds it


def test_default_bound_is_divided_among_workers(monkeypatch):
    monkeypatch.delenv(reader.MAX_INFLATE_ENV, raising=False)
    monkeypatch.setattr(reader.inflate, "physical_memory", lambda: 256 * MB)
    assert reader.max_inflate_bytes() == 128 * MB
    assert reader.max_inflate_bytes(4) == 32 * MB  # 4 workers x 32 MB (x 1.4 to parse) leave the host half
    monkeypatch.setenv(reader.MAX_INFLATE_ENV, "0.5")
    assert reader.max_inflate_bytes(4) == 500_000_000  # an explicit bound is the user's


def test_bomb_refused_at_the_per_worker_bound_counted_in_bytes(bomb, monkeypatch):
    """With 4 workers on 256 MB the bound is 32 MB; the 48 MB bomb (old: inflated whole, 128 MB allowed)
    is refused, and no more than the bound was ever held."""
    from tb_paddle_profile.pipeline.jobs import JobSpec, run_job
    from tb_paddle_profile.store.cache import CacheKey
    import tempfile

    monkeypatch.delenv(reader.MAX_INFLATE_ENV, raising=False)
    monkeypatch.setattr(reader.inflate, "physical_memory", lambda: 256 * MB)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rank0.paddle_trace.json.gz")
        with open(path, "wb") as f:
            f.write(bomb)
        st = os.stat(path)
        spec = JobSpec(
            path=path,
            file_name="rank0.paddle_trace.json.gz",
            key=CacheKey(path, st.st_size, str(st.st_mtime_ns)),
            index=False,
            inflate_share=4,
        )
        out, peak = _peak(run_job, spec)
    assert not out.ok and out.error_kind == "trace", out
    assert "inflates beyond 0.0336 GB" in out.error, out.error
    assert peak < 48 * MB, peak


def test_reader_bound_counts_output_not_trailer(bomb):
    got, peak = _peak(reader.read_trace, bomb, "bomb.json.gz", max_inflate=16 * MB)
    assert isinstance(got, TraceError) and "inflates beyond" in str(got), got
    assert peak < 24 * MB, peak


def test_truncation_check_inflates_with_an_output_limit(bomb):
    """The check of a recently modified file (old: each 1 MB of input inflated in one call, then the
    whole file) keeps a few MB at most, and a bomb is not 'still being written'."""
    got, peak = _peak(looks_truncated, bomb, 16 * MB)
    assert got is False
    assert peak < 8 * MB, peak
    got, peak = _peak(looks_truncated, bomb, 0)  # no bound: still bounded steps
    assert got is False  # complete stream, ends with ]}
    assert peak < 8 * MB, peak


def test_truncation_check_layers():
    doc = b'{"traceEvents": [], "schemaVersion": "1.0.2"}\n'
    one, two, three = (
        gzip.compress(doc),
        gzip.compress(gzip.compress(doc)),
        gzip.compress(gzip.compress(gzip.compress(doc))),
    )
    assert not looks_truncated(one) and not looks_truncated(two)
    assert looks_truncated(one[:-10]) and looks_truncated(two[:-10]) and looks_truncated(doc[:-5])
    assert not looks_truncated(three)  # refused by the reader: failed at once, never GROWING
    assert not looks_truncated(b"\x1f\x8b" + b"\xff" * 40)  # corrupt


def test_recent_three_layer_gzip_fails_instead_of_growing(tmp_path):
    from tb_paddle_profile.pipeline.jobs import JobSpec, run_job
    from tb_paddle_profile.store.cache import CacheKey

    doc = b'{"traceEvents": [], "schemaVersion": "1.0.2"}\n'
    path = tmp_path / "rank0.paddle_trace.json.gz"
    path.write_bytes(gzip.compress(gzip.compress(gzip.compress(doc))))
    st = path.stat()
    spec = JobSpec(
        path=str(path),
        file_name=path.name,
        key=CacheKey(str(path), st.st_size, str(st.st_mtime_ns)),
        index=False,
        recent=True,
    )
    out = run_job(spec)
    assert out.kind == "parsed" and not out.ok and "compressed more than" in out.error, out


# ---------------------------------------------------------------- terminal injection, CSV formulas

from support.paths import REPO  # noqa: E402

EXAMPLE = sorted((REPO / "examples" / "profiler_log" / "gpt-single").glob("*.paddle_trace.json"))[0]
# An operator name that sets the window title, writes the clipboard (OSC 52), clears the screen, returns
# the carriage and forges a line; a spreadsheet would evaluate it as a formula.
EVIL = "=HYPERLINK(\\u0022http://x\\u0022)\\u001b]0;pwned\\u0007\\u001b]52;c;ZXZpbA==\\u0007\\u001b[2J\\r0failed\\nOK\\u009b"
_CONTROLS = [chr(c) for c in list(range(0, 9)) + list(range(11, 32)) + list(range(0x7F, 0xA0))]


@pytest.fixture(scope="module")
def evil_trace(tmp_path_factory):
    text = EXAMPLE.read_text()
    assert text.count('"adamw_ ') >= 3
    path = tmp_path_factory.mktemp("evil") / EXAMPLE.name
    path.write_text(text.replace('"adamw_ ', '"' + EVIL + "adamw_ "))
    return path


def _cli(capsys, *argv):
    from tb_paddle_profile.cli.commands import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _no_controls(text: str, newlines: bool = True) -> None:
    bad = sorted({repr(c) for c in text if c in _CONTROLS or (not newlines and c == "\n")})
    assert not bad, bad


def test_visible_shows_every_control_character():
    from tb_paddle_profile.core.terminal import visible

    assert visible("a\x1b]0;t\x07b\r\nc\t\x9b\x7f") == "a\\x1b]0;t\\x07b\\r\\nc\\t\\x9b\\x7f"
    assert visible("plain µs – ok") == "plain µs – ok"


def test_summary_text_shows_controls_of_names(capsys, evil_trace):
    rc, out, err = _cli(capsys, "summary", "--no-cache", str(evil_trace))
    assert rc == 0, err
    _no_controls(out + err)
    assert "\\x1b]0;pwned\\x07" in out
    assert "\\r0failed\\nOK\\x9badamw_" in out  # one row, one line
    assert not any(line.startswith(("OK", "0failed")) for line in out.splitlines())


def test_summary_csv_neutralises_formulas_and_controls(capsys, evil_trace):
    import csv as csvmod
    import io

    rc, out, err = _cli(capsys, "summary", "--no-cache", "--format", "csv", "--table", "operators", str(evil_trace))
    assert rc == 0, err
    _no_controls(out)
    cells = [c for row in csvmod.reader(io.StringIO(out)) for c in row if "HYPERLINK" in c]
    assert cells and all(c.startswith("'=HYPERLINK") for c in cells), cells[:3]


def test_to_csv_formula_leads():
    from tb_paddle_profile.present.display.export import to_csv
    from tb_paddle_profile.v1 import display_pb2 as dpb
    from tb_paddle_profile.present.display.cells import TEXT

    t = dpb.Table(key="t")
    t.columns.add(key="name").format.kind = TEXT
    for name in ["=1+1", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "relu", "a=b"]:
        t.rows.add().cells.add(text=name)
    import csv as csvmod
    import io

    got = [row[0] for row in csvmod.reader(io.StringIO(to_csv(t), newline=""))][1:]
    assert got == ["'=1+1", "'+cmd", "'-2+3", "'@SUM(A1)", "'\\tx", "'\\rx", "relu", "a=b"], got


def test_error_lines_cannot_forge_lines(capsys, tmp_path):
    """A file name with an LF and an OSC sequence forged '0 failed; all good' in preprocess's errors."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    (logdir / "ok.paddle_trace.json").write_bytes(EXAMPLE.read_bytes())
    (logdir / "x\n0 failed; all good\x1b]0;t\x07.paddle_trace.json").write_bytes(b'{"traceEvents": [')
    rc, out, err = _cli(capsys, "preprocess", "--cache-dir", str(tmp_path / "cache"), str(logdir))
    assert rc == 2
    _no_controls(out + err)
    errors = err.splitlines()
    assert len(errors) == 1 and errors[0].startswith("error: ") and "x\\n0 failed; all good\\x1b]0;t\\x07" in errors[0]
    assert not any(line.startswith("0 failed") for line in (out + err).splitlines())


# ---------------------------------------------------------------- shared caches, temporary files


@pytest.fixture
def umask_002():
    old = os.umask(0o002)
    try:
        yield
    finally:
        os.umask(old)


def test_cache_entries_and_sidecars_honour_the_umask(tmp_path, umask_002):
    """Team members sharing a cache (umask 002, a group folder) read each other's entries: mkstemp's
    0600 made every entry private, so each parsed everything again."""
    import fsspec

    from tb_paddle_profile.store.cache import CacheKey, CachedResult, SummaryCache, sidecar_path, write_sidecar
    from tb_paddle_profile.store.cache_store import CacheStore

    trace = tmp_path / "r.paddle_trace.json"
    trace.write_bytes(b"{}")
    key = CacheKey(str(trace), 2, "1")
    cache = SummaryCache(tmp_path / "cache")
    assert cache.put(key, CachedResult(True, b"summary", ""))
    assert cache.put_digest(key, b"digest")
    assert cache.put_index(key, [b"index"])
    assert write_sidecar(fsspec.filesystem("file"), str(trace), key, CachedResult(True, b"summary", "")) == ""
    made = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()] + [tmp_path / sidecar_path(trace.name)]
    assert len(made) == 4
    for p in made:
        assert p.stat().st_mode & 0o777 == 0o664, (p, oct(p.stat().st_mode))
    store = CacheStore(str(tmp_path / "cache"))
    assert store._create(str(tmp_path / "cache" / "claim-test"), b"x")
    assert (tmp_path / "cache" / "claim-test").stat().st_mode & 0o777 == 0o664


def test_temporary_parts_left_by_a_kill_are_trimmed(tmp_path):
    import time

    from tb_paddle_profile.store.cache import CacheKey, CachedResult, SummaryCache
    from tb_paddle_profile.store.trim import STALE_PART_S, trim

    cache = SummaryCache(tmp_path)
    key = CacheKey("file:///x", 2, "1")
    cache.put(key, CachedResult(True, b"s", ""))
    folder = tmp_path / "timeline-v3" / "ab"
    folder.mkdir(parents=True)
    old, fresh = folder / ".tmp-killed.part", folder / ".tmp-writing.part"
    old.write_bytes(b"x" * 100_000)
    fresh.write_bytes(b"y" * 100)
    then = time.time() - STALE_PART_S - 60
    os.utime(old, (then, then))
    assert trim(tmp_path, 1 << 30) == 100_000  # the folder is far under its bound: the part goes all the same
    assert not old.exists() and fresh.exists()
    assert cache.get(key) is not None


# ---------------------------------------------------------------- the loader's dispatcher


class _Counting(dict):
    """A dict that counts the scans of it (values(), items(), iteration)."""

    scans = 0

    def values(self):
        _Counting.scans += 1
        return super().values()

    def items(self):
        _Counting.scans += 1
        return super().items()

    def __iter__(self):
        _Counting.scans += 1
        return super().__iter__()


def test_dispatcher_cost_per_file_does_not_grow_with_the_queue():
    """Picking the next file scanned every queued entry (and every known one for index-only jobs):
    1.4 / 17.9 / 151 ms per file started at 1k / 10k / 100k queued. Now no scan: heaps, O(log n)."""
    import time

    from tb_paddle_profile.pipeline import loader as loader_mod
    from tb_paddle_profile.pipeline.discovery import TraceFile
    from tb_paddle_profile.store.cache import SummaryCache

    L = loader_mod.Loader(None, SummaryCache(None), workers=4)
    try:
        with L._cond:
            n = 3000
            files = [
                TraceFile(
                    run=f"run{i % 3}",
                    worker=f"w{i}",
                    span="0",
                    file_name=f"r{i}.json",
                    path=f"/x/r{i}",
                    source=f"file:///x/r{i}",
                    size=100,
                    version="1",
                    mtime=0.0,
                )
                for i in range(n)
            ]
            for f in files:
                e = L._entries[f.key] = loader_mod._Entry(f, next(L._seq), 0.0)
                L._enqueue(e)
            L._run_order = {"run2": 0, "run0": 1, "run1": 2}
            L._reorder()
            L.prioritize([files[2999], files[5]], run="run1")
            ranks = calls = 0
            real_rank = L._rank

            def counted(e):
                nonlocal ranks
                ranks += 1
                return real_rank(e)

            L._rank = counted
            L._pending, L._entries = _Counting(L._pending), _Counting(L._entries)
            _Counting.scans = 0
            picked = []
            for _ in range(400):
                now = time.monotonic()
                e = L._pick(now)
                L._next_wake(now)
                del L._pending[e.file.key]
                picked.append(e.file)
                calls += 1
            assert _Counting.scans == 0, "a scan of the queue per file started"
            assert ranks <= calls, ranks
            # the documented order: asked for, then the run looked at, then the run order, then discovery
            order = {"run2": 0, "run0": 1, "run1": 2}
            want = sorted(
                files,
                key=lambda f: (
                    0 if f in (files[2999], files[5]) else 1 if f.run == "run1" else 2,
                    order[f.run],
                    files.index(f),
                ),
            )[:400]
            assert picked == want
            L._closed = True
            L._cond.notify_all()
    finally:
        L.close()


# ---------------------------------------------------------------- the timeline's routes

HOST = "gke-training-pool-a100-80gb-spot-5f3c9e1d-" + "x7k2" * 7  # a ~70-character Kubernetes host name


@pytest.fixture(scope="module")
def k8s_plugin(tmp_path_factory):
    from support.plugin_testlib import generate_rank, make_plugin, ready

    src = generate_rank(tmp_path_factory.mktemp("gen"), 3000).read_bytes()
    root = tmp_path_factory.mktemp("k8s_logdir")
    (root / "k8s").mkdir()
    names = []
    for n in range(16):
        worker = f"host_{HOST}pid_{1000 + n}"
        (root / "k8s" / f"{worker}_time_2026_11_29_09_29_12_650159.paddle_trace.json").write_bytes(src)
        names.append(worker)
    old = os.environ.get("TB_PADDLE_PROFILE_CACHE")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path_factory.mktemp("k8s_cache"))
    plugin, client = make_plugin(root)
    try:
        ready(plugin)
        yield plugin, client, names
    finally:
        plugin.close()
        if old is None:
            os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)
        else:
            os.environ["TB_PADDLE_PROFILE_CACHE"] = old


def _get_built(client, url):
    import time

    deadline = time.monotonic() + 60
    while True:
        r = client.get(url)
        if r.status_code not in (202, 503) or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


def test_timeline_of_16_ranks_with_long_host_names(k8s_plugin):
    """The chosen workers, joined into one parameter, passed 1,024 characters: '400 invalid value'."""
    from urllib.parse import quote

    from support.plugin_testlib import PREFIX
    from tb_paddle_profile.v1 import timeline_pb2 as tpb

    _, client, names = k8s_plugin
    joined = ",".join(names)
    assert len(joined) > 1024
    r = _get_built(client, f"{PREFIX}/timeline?run=k8s&span=0&px=800&workers={quote(joined)}")
    assert r.status_code == 200, r.data[:300]
    msg = tpb.TimelineWindow.FromString(r.data)
    assert len(msg.ranks) == 16
    r = _get_built(client, f"{PREFIX}/timeline_search?run=k8s&span=0&workers={quote(joined)}&q=Step")
    assert r.status_code == 200, r.data[:300]


def test_a_search_may_hold_a_nul(k8s_plugin):
    from support.plugin_testlib import PREFIX

    _, client, _ = k8s_plugin
    r = _get_built(client, f"{PREFIX}/timeline_search?run=k8s&span=0&q=a%00b")
    assert r.status_code == 200, r.data[:300]  # found nothing, but searched (was 400)
    r = client.get(f"{PREFIX}/timeline?run=k%00s&span=0")
    assert r.status_code == 400  # a NUL elsewhere is still refused


# ---------------------------------------------------------------- preprocess


def test_preprocess_cache_off_with_sidecars_counts_the_sidecar(capsys, tmp_path):
    """'0 of 1' and exit 2 although the sidecar was written: the index had nowhere to go."""
    from tb_paddle_profile.store.cache import sidecar_path

    logdir = tmp_path / "logs"
    logdir.mkdir()
    trace = logdir / EXAMPLE.name
    trace.write_bytes(EXAMPLE.read_bytes())
    rc, out, err = _cli(capsys, "preprocess", "--cache-dir", "off", "--sidecar", str(logdir))
    assert rc == 0, (out, err)
    assert out.startswith("1 of 1 traces"), out
    assert os.path.getsize(sidecar_path(str(trace))) > 0


def _synth_two_hosts(out, offset_us: int):
    import subprocess
    import sys

    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "2",
            "--mp",
            "1",
            "--pp",
            "1",
            "--gpus-per-node",
            "1",
            "--names",
            "default",
            "--host-offsets-us",
            f"0,{offset_us}",
            "--steps",
            "3",
            "--events-per-rank",
            "3000",
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
        cwd=str(REPO),
    )
    return sorted(out.glob("*.paddle_trace.json"))


def test_clock_corrections_follow_a_reexported_host(tmp_path):
    """After host 1's traces were exported again with its clock 5 ms further off, the timeline kept
    the old offset until the Distributed view was opened."""
    from support.plugin_testlib import PREFIX, make_plugin, ready
    from tb_paddle_profile.v1 import timeline_pb2 as tpb

    first = _synth_two_hosts(tmp_path / "g1", 2000)
    second = _synth_two_hosts(tmp_path / "g2", 7000)
    root = tmp_path / "logs"
    (root / "run").mkdir(parents=True)
    for f in first:
        (root / "run" / f.name).write_bytes(f.read_bytes())
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path / "cache")
    plugin, client = make_plugin(root)
    try:
        ready(plugin)

        def offsets():
            r = _get_built(client, f"{PREFIX}/timeline?run=run&span=0&px=800")
            assert r.status_code == 200, r.data[:300]
            return [x.clock_offset_ns for x in tpb.TimelineWindow.FromString(r.data).ranks]

        assert _get_built(client, f"{PREFIX}/parallel?run=run&span=0").status_code == 200  # the Distributed view
        before = offsets()
        assert abs(abs(before[1] - before[0]) - 2_000_000) < 200_000, before  # the planted 2 ms
        host1 = [f for f in second if "gpunode1" in f.name]
        assert len(host1) == 1
        for old in (root / "run").glob("*gpunode1*"):
            old.unlink()
        (root / "run" / host1[0].name).write_bytes(host1[0].read_bytes())
        plugin.discovery.scan()
        ready(plugin)
        after = offsets()  # the Distributed view not opened again
        assert abs(abs(after[1] - after[0]) - 7_000_000) < 200_000, after  # the planted 7 ms
    finally:
        plugin.close()
        os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)


def test_timeline_ready_as_soon_as_a_grown_file_is(tmp_path):
    """Viewed while it was still being written, a file's timeline stayed 503 for COOLDOWN_S (2 minutes)
    after it settled: the 'still growing' answer was taken for a failed build."""
    from support.plugin_testlib import PREFIX, make_plugin, ready
    from tb_paddle_profile.pipeline.loader import GROWING, READY
    from tb_paddle_profile.timeline.store import TimelineStore

    data = EXAMPLE.read_bytes()
    root = tmp_path / "logs"
    (root / "run").mkdir(parents=True)
    path = root / "run" / EXAMPLE.name
    path.write_bytes(data[: len(data) // 2])
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path / "cache")
    plugin, client = make_plugin(root)
    try:
        plugin.discovery.wait_first_scan(60)
        path.write_bytes(data)  # it grows: the next scan sees another size
        snap = plugin.discovery.scan()
        f = next(iter(next(iter(snap.runs["run"].values())).values()))
        assert plugin.loader.state(f).state == GROWING
        url = f"{PREFIX}/timeline?run=run&span=0&px=800"
        for _ in range(2):
            r = client.get(url)
            assert r.status_code in (202, 503), r.status_code
        plugin.discovery.scan()  # settled: parsed now
        ready(plugin)
        assert plugin.loader.state(f).state == READY
        store = plugin._routes._timelines()
        real = store._clock
        store._clock = lambda: real() + TimelineStore.GROWING_S + 1  # a moment later, far less than COOLDOWN_S
        assert TimelineStore.GROWING_S + 1 < TimelineStore.COOLDOWN_S
        r = _get_built(client, url)
        assert r.status_code == 200, r.data[:300]
    finally:
        plugin.close()
        os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)


def test_swapped_timeline_indexes_are_told_apart(tmp_path):
    """Two .tl files swapped in the cache served each rank the other's timeline: an index now names
    its trace (its cache key's digest), and one naming another trace is rebuilt."""
    import shutil

    from support.plugin_testlib import PREFIX, make_plugin, ready
    from tb_paddle_profile.store.cache import SummaryCache
    from tb_paddle_profile.timeline import CorruptIndex, TimelineIndex

    root = tmp_path / "logs"
    (root / "run").mkdir(parents=True)
    for f in _synth_two_hosts(tmp_path / "g", 2000):
        shutil.copy(f, root / "run" / f.name)
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path / "cache")
    try:
        plugin, client = make_plugin(root)
        try:
            ready(plugin)
            files = sorted(
                (f for spans in plugin.discovery.scan().runs["run"].values() for f in spans.values()),
                key=lambda f: f.worker,
            )
            assert _get_built(client, f"{PREFIX}/timeline?run=run&span=0&px=800").status_code == 200
        finally:
            plugin.close()
        cache = SummaryCache(tmp_path / "cache")
        a, b = (cache.index_path(f.key) for f in files)
        assert TimelineIndex(str(a), trace=files[0].key.digest()).header["trace"] == files[0].key.digest()
        swap = tmp_path / "swap.tl"
        a.rename(swap)
        b.rename(a)
        swap.rename(b)
        with pytest.raises(CorruptIndex, match="another trace"):
            TimelineIndex(str(a), trace=files[0].key.digest())
        plugin, client = make_plugin(root)
        try:
            ready(plugin)
            assert _get_built(client, f"{PREFIX}/timeline?run=run&span=0&px=800").status_code == 200
        finally:
            plugin.close()
        for f in files:  # rebuilt, each its own
            assert TimelineIndex(str(cache.index_path(f.key))).header["trace"] == f.key.digest()
    finally:
        os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)


def test_concurrent_preprocess_runs_parse_each_trace_once(tmp_path):
    """TensorBoard plus two preprocess on one cache parsed 15 files 37 times (the README says once):
    each job now takes the file's claim in the cache; another process waits for its entry."""
    import subprocess
    import sys

    from support.plugin_testlib import make_plugin, ready

    logdir = tmp_path / "logs"
    logdir.mkdir()
    data = EXAMPLE.read_bytes()
    names = [f"host_n{i}pid_{100 + i}_time_2026_11_29_09_29_12_650159.paddle_trace.json" for i in range(8)]
    for name in names:
        (logdir / name).write_bytes(data)
    log = tmp_path / "parses.log"
    env = dict(os.environ, TB_PADDLE_PROFILE_PARSE_LOG=str(log), TB_PADDLE_PROFILE_CACHE=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "tb_paddle_profile", "preprocess", "--jobs", "2", str(logdir)]
    procs = [
        subprocess.Popen(cmd, env=env, cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)
    ]
    saved = {k: os.environ.get(k) for k in ("TB_PADDLE_PROFILE_PARSE_LOG", "TB_PADDLE_PROFILE_CACHE")}
    os.environ.update(TB_PADDLE_PROFILE_PARSE_LOG=str(log), TB_PADDLE_PROFILE_CACHE=str(tmp_path / "cache"))
    try:
        plugin, _ = make_plugin(logdir)  # TensorBoard at the same time
        try:
            ready(plugin)
        finally:
            plugin.close()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
        assert out.decode().startswith("8 of 8 traces"), out.decode()
    parsed = log.read_text().splitlines()
    assert sorted(parsed) == sorted(names), parsed  # once each


def test_cache_writes_fsync_only_when_asked(tmp_path, monkeypatch):
    """6 fsyncs per trace were a third of a small trace's job: off by default (an entry a power loss cut
    is caught by its checksum), on with TB_PADDLE_PROFILE_CACHE_FSYNC=1; the file is whole either way."""
    from tb_paddle_profile.store import files as files_mod

    calls = []
    real = os.fsync
    monkeypatch.setattr(files_mod.os, "fsync", lambda fd: calls.append(fd) or real(fd))
    monkeypatch.delenv("TB_PADDLE_PROFILE_CACHE_FSYNC", raising=False)
    files_mod.atomic_write(tmp_path / "a" / "x.bin", b"abc" * 1000)
    assert calls == [] and (tmp_path / "a" / "x.bin").read_bytes() == b"abc" * 1000
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE_FSYNC", "1")
    files_mod.atomic_write(tmp_path / "a" / "y.bin", [b"ab", b"cd"])
    assert len(calls) == 2 and (tmp_path / "a" / "y.bin").read_bytes() == b"abcd"  # the file, then its folder
    assert not list((tmp_path / "a").glob(".tmp-*"))
