"""Hardening, second round, what the first pass left (issue 29): each attack reproduced against the fix that
holds it. CSV records that stayed several lines (an LF in a name), `export` inflating a .gz whole, the
bound not divided among a Dask worker's threads or the timeline store's own builds, names with control
characters written raw into TensorBoard's log, and a rank selection too long for a request's parameter."""

from __future__ import annotations

import csv
import io
import re

from support.paths import REPO

EXAMPLE2 = sorted((REPO / "examples" / "profiler_log" / "gpt-2rank").glob("*.paddle_trace.json"))
# An operator name and a worker name that set the window title, clear the screen and forge a line.
EVIL = "\x1b]0;pwned\x07\x1b[2J\r0 failed; all good\nOK\x9b"
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _cli(capsys, *argv):
    from tb_paddle_profile.cli.commands import main

    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _evil_run(root):
    """gpt-2rank with EVIL in some operator names and in each worker's name."""
    import json

    root.mkdir(parents=True)
    for f in EXAMPLE2:
        text = f.read_text()
        assert text.count('"name": "matmul') >= 3
        text = text.replace('"name": "matmul', '"name": ' + json.dumps("=" + EVIL)[:-1] + "matmul", 3)
        head, tail = f.name.split("_time_")
        (root / f"{head}{EVIL}_time_{tail}").write_text(text)
    return root


def _one_line_per_record(text: str) -> list:
    assert not _CONTROL.findall(text), sorted(set(_CONTROL.findall(text)))
    lines = [line for line in text.splitlines() if line and not line.startswith("# ")]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    assert len(rows) == len(lines), "a record over several lines"
    return rows


def test_csv_is_one_line_per_record(capsys, tmp_path):
    """An LF in an operator's or a worker's name was written inside its quoted cell: the record took two
    lines on the terminal (and in grep, wc -l, a line-by-line reader), the second one starting 'OK'."""
    run = _evil_run(tmp_path / "run")
    rc, out, err = _cli(
        capsys, "summary", "--no-cache", "--format", "csv", "--table", "operators", str(sorted(run.iterdir())[0])
    )
    assert rc == 0, err
    rows = _one_line_per_record(out)
    names = [c for row in rows for c in row if "matmul" in c and "pwned" in c]
    assert names and all(c.startswith("'=\\x1b]0;pwned\\x07\\x1b[2J\\r0 failed; all good\\nOK\\x9b") for c in names)
    rc, out, err = _cli(capsys, "parallel", "--no-cache", "--format", "csv", str(run))
    assert rc == 0, err
    rows = _one_line_per_record(out)
    assert sum("\\nOK\\x9b_time_" in c for row in rows for c in row) >= 2  # the worker names, escaped


def test_export_inflates_within_the_bound(capsys, tmp_path):
    """`export` read each rank again with gzip.open and json.load: whole, whatever it inflated to. A rank
    swapped for a gzip bomb of the same size and time (the cache still names it a good trace) took the
    memory of all it inflated to; it now fails with the reader's one-line refusal, its bound held."""
    import gzip
    import os
    import tracemalloc
    import zlib

    run = tmp_path / "run"
    run.mkdir()
    for f in EXAMPLE2:
        (run / (f.name + ".gz")).write_bytes(gzip.compress(f.read_bytes()))
    cache = tmp_path / "cache"
    rc, out, err = _cli(capsys, "preprocess", "--cache-dir", str(cache), str(run))
    assert rc == 0, err
    victim = sorted(run.iterdir())[1]
    st = victim.stat()
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = b'{"displayTimeUnit": "ms", "schemaVersion": "1.0.2", "span_index": "0", "traceEvents": ['
    bomb = c.compress(head) + c.compress(b" " * (st.st_size * 900)) + c.flush()
    assert len(bomb) <= st.st_size  # ~1000:1, padded with zeros to the same size (read as gzip padding)
    victim.write_bytes(bomb + b"\0" * (st.st_size - len(bomb)))
    os.utime(victim, ns=(st.st_atime_ns, st.st_mtime_ns))
    tracemalloc.start()
    try:
        rc, out, err = _cli(capsys, "export", str(run), "-o", str(tmp_path / "merged.json"), "--cache-dir", str(cache))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rc == 2, (out, err)
    assert err.strip().splitlines() == [
        f"error: {victim.name}: inflates more than 200 x its size (a gzip bomb? "
        f"real traces compress 10-15 x; gunzip it to read it)"
    ], err
    assert st.st_size * 900 > 96 << 20  # what it inflates to: past the bound
    assert peak < 90 << 20, peak  # the bound (64 MB at this size), not the bomb (twice its size before)


def test_dask_divides_the_bound_among_a_machines_threads(tmp_path, monkeypatch):
    """preprocess --dask gave every task the bound of one parse per machine (half its memory): a Dask
    worker of N threads, or N worker processes on one machine (local:N), inflated N bombs at half the
    memory each. The bound is now divided among the cluster's threads on one machine."""
    from distributed import Client, LocalCluster

    from test_hardening_2 import _bomb
    from tb_paddle_profile.pipeline import dask
    from tb_paddle_profile.trace import reader

    monkeypatch.delenv(reader.MAX_INFLATE_ENV, raising=False)
    monkeypatch.setattr(reader.inflate, "physical_memory", lambda: 256 << 20)
    logdir = tmp_path / "logs" / "run"
    logdir.mkdir(parents=True)
    (logdir / "rank0.paddle_trace.json.gz").write_bytes(_bomb(48))
    with (
        LocalCluster(processes=False, n_workers=2, threads_per_worker=2, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):  # in this process: the monkeypatched memory holds on its workers
        report = dask.preprocess_dask(
            str(tmp_path / "logs"), "in-process", cache_dir=str(tmp_path / "cache"), client=client, progress=None
        )
    [(_, ok, message)] = report.results
    assert not ok and "inflates beyond 0.0336 GB" in message, message  # 128 MB / 4 threads (was 128 MB)
    assert (
        dask.threads_per_host(
            {
                "tcp://a:1": {"host": "a", "nthreads": 2},
                "tcp://a:2": {"host": "a", "nthreads": 2},
                "tcp://b:1": {"host": "b", "nthreads": 3},
            }
        )
        == 4
    )


def test_timeline_store_builds_divide_the_bound_among_its_workers(tmp_path, monkeypatch):
    """A timeline store on its own (no loader) built indexes in a pool of its own workers, each reading
    its .gz with the bound of one parse per machine (half the memory): N builds of N bombs took it all."""
    import concurrent.futures
    import time

    import fsspec

    from test_hardening_2 import _bomb
    from tb_paddle_profile.core import pool
    from tb_paddle_profile.pipeline.discovery import TraceFile
    from tb_paddle_profile.timeline import TimelineStore
    from tb_paddle_profile.trace import reader

    monkeypatch.delenv(reader.MAX_INFLATE_ENV, raising=False)
    monkeypatch.setattr(reader.inflate, "physical_memory", lambda: 256 << 20)
    # the builds in threads of this process: the monkeypatched memory holds in them
    monkeypatch.setattr(pool, "process_pool", lambda n: concurrent.futures.ThreadPoolExecutor(n))
    logdir = tmp_path / "logs"
    logdir.mkdir()
    path = logdir / "rank0.paddle_trace.json.gz"
    path.write_bytes(_bomb(48))
    st = path.stat()
    f = TraceFile(
        run=".",
        worker="rank0",
        span="0",
        file_name=path.name,
        path=str(path),
        source=str(path),
        size=st.st_size,
        version=str(st.st_mtime_ns),
        mtime=st.st_mtime,
        root=str(logdir),
    )
    store = TimelineStore(fsspec.filesystem("file"), tmp_path / "cache", workers=4, root=str(logdir))
    try:
        deadline = time.monotonic() + 60
        while (got := store.get(f))[1] == "building" and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        store.close()
    assert got[0] is None and "inflates beyond 0.0336 GB" in got[1], got  # 128 MB / 4 builds (was 128 MB)


def test_log_records_show_the_controls_of_names(tmp_path, monkeypatch, caplog):
    """TensorBoard's log is a terminal too: a file named with an OSC sequence and an LF that failed to
    build its timeline was logged as it is (its title set, a forged line); every logger of the package
    now shows the controls of its records' arguments, and a traceback keeps its lines."""
    import concurrent.futures
    import importlib
    import logging
    import pkgutil
    import time

    import fsspec

    import tb_paddle_profile
    from tb_paddle_profile.core import pool, terminal
    from tb_paddle_profile.pipeline.discovery import TraceFile
    from tb_paddle_profile.timeline import TimelineStore

    monkeypatch.setattr(pool, "process_pool", lambda n: concurrent.futures.ThreadPoolExecutor(n))
    name = f"rank0{EVIL}.paddle_trace.json"
    f = TraceFile(
        run=".",
        worker="rank0",
        span="0",
        file_name=name,
        path=str(tmp_path / name),
        source=str(tmp_path / name),
        size=10,
        version="1",
        mtime=0.0,
        root=str(tmp_path),
    )
    store = TimelineStore(fsspec.filesystem("file"), tmp_path / "cache", workers=1, root=str(tmp_path))
    caplog.set_level(logging.WARNING, logger="tb_paddle_profile")
    try:
        deadline = time.monotonic() + 30
        while (
            store.get(f)[1] == "building"
            and time.monotonic() < deadline
            and not any("no longer exists" in r.getMessage() for r in caplog.records)
        ):
            time.sleep(0.05)
    finally:
        store.close()
    logged = [r.getMessage() for r in caplog.records if "no longer exists" in r.getMessage()]
    assert logged, [r.getMessage() for r in caplog.records]
    for line in logged:
        assert not _CONTROL.findall(line) and "\n" not in line, line
        assert "rank0\\x1b]0;pwned\\x07\\x1b[2J\\r0 failed; all good\\nOK\\x9b.paddle_trace.json" in line
    record = logging.LogRecord("x", logging.ERROR, "", 0, "%s\n%s", (name, terminal.Lines("Traceback:\n  x\x1b")), None)
    terminal.logger("tb_paddle_profile.test").filter(record)
    assert record.getMessage().split("\n")[1:] == ["Traceback:", "  x\\x1b"]  # a traceback's lines kept
    for m in pkgutil.walk_packages(tb_paddle_profile.__path__, "tb_paddle_profile."):
        if m.name.endswith("__main__"):
            continue
        module = importlib.import_module(m.name)
        for value in vars(module).values():  # every logger a module of the package holds has the filter
            if isinstance(value, logging.Logger):
                assert terminal._FILTER in value.filters, m.name


def test_the_largest_rank_selection_the_tab_sends_passes(tmp_path):
    """The tab sends at most MAX_RANKS (32) workers by name; a file's name is at most 255 bytes. 32 ranks
    named as long as a file may be, in two-byte characters (each percent-encoded to 6 characters), make
    the longest selection the tab sends: it passes the parameter's cap (was 1,024 characters) and the
    request line's own (64 KB in werkzeug's server)."""
    import os
    import re as re_
    import time
    from urllib.parse import quote

    from support.plugin_testlib import PREFIX, generate_rank, make_plugin, ready
    from tb_paddle_profile.v1 import timeline_pb2 as tpb

    max_ranks = int(
        re_.search(
            r"export const MAX_RANKS = (\d+);", (REPO / "frontend/src/panels/timeline/ranks.tsx").read_text()
        ).group(1)
    )
    assert max_ranks == 32
    src = generate_rank(tmp_path / "gen", 2000).read_bytes()
    run = tmp_path / "logs" / "run"
    run.mkdir(parents=True)
    names = []
    for n in range(max_ranks):
        tail = f"pid_{1000 + n}_time_2026_11_29_09_29_12_650159.paddle_trace.json"
        worker_host = "é" * ((255 - len("host_") - len(tail)) // 2)
        file_name = f"host_{worker_host}{tail}"
        assert 254 <= len(file_name.encode()) <= 255
        (run / file_name).write_bytes(src)
        names.append(f"host_{worker_host}pid_{1000 + n}")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path / "cache")
    plugin, client = make_plugin(tmp_path / "logs")
    try:
        ready(plugin)
        workers = set(plugin.discovery.scan().runs["run"])
        assert set(names) <= workers, sorted(workers)[:2]
        url = f"{PREFIX}/timeline?run=run&span=0&px=800&workers={quote(','.join(names), safe='')}"
        assert 15_000 < len(url) < 60_000
        deadline = time.monotonic() + 60
        while (r := client.get(url)).status_code in (202, 503) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert r.status_code == 200, r.data[:300]
        assert [x.worker for x in tpb.TimelineWindow.FromString(r.data).ranks] == names
    finally:
        plugin.close()
        os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)


def test_csv_route_neutralises_formulas_and_controls(tmp_path):
    """The panels' CSV download (the csv route) wrote the operator name's ESC, BEL, CR and LF as they are:
    a formula neutralised, but a file that, printed, set the terminal's title and took two lines."""
    import os

    from support.plugin_testlib import PREFIX, make_plugin, ready

    run = _evil_run(tmp_path / "logs" / "run")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path / "cache")
    plugin, client = make_plugin(tmp_path / "logs")
    try:
        ready(plugin)
        worker = sorted(plugin.discovery.scan().runs["run"])[0]
        r = client.get(
            f"{PREFIX}/csv",
            query_string={"run": "run", "worker": worker, "span": "0", "view": "operators", "table": "operators"},
        )
        assert r.status_code == 200, r.data[:300]
        rows = _one_line_per_record(r.data.decode())
        cells = [c for row in rows for c in row if "pwned" in c]
        assert cells and all(c.startswith("'=\\x1b]0;pwned\\x07") for c in cells), cells[:2]
        assert run.is_dir()
    finally:
        plugin.close()
        os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)


def test_json_output_is_json_with_the_names_as_they_are(capsys, tmp_path):
    """`--format json` printed through the CLI's SafeStream, which shows a control character as ``\\x..``:
    JSON escapes C0 itself (``\\u001b``), but DEL and C1 (``\\x9b``, a terminal's CSI) are legal raw in a JSON
    string, so they reached the stream and came out as ``\\x9b``, an invalid escape: json.loads failed. Each
    command's JSON must parse and give the names as the trace has them, with nothing a terminal obeys."""
    import json

    run = _evil_run(tmp_path / "run")
    rank0 = str(sorted(run.iterdir())[0])
    for argv in (
        ("summary", "--no-cache", "--format", "json", rank0),
        ("parallel", "--no-cache", "--format", "json", str(run)),
        ("whatif", "--no-cache", "--format", "json", str(run)),
    ):
        rc, out, err = _cli(capsys, *argv)
        assert rc == 0, (argv, err)
        assert not _CONTROL.findall(out), (argv[0], sorted(set(_CONTROL.findall(out))))
        strings = []
        _strings(json.loads(out), strings)
        if argv[0] == "summary":
            assert any(s.startswith("=" + EVIL + "matmul") for s in strings)  # an operator's name
        else:
            assert any(EVIL + "_time_" in s for s in strings), argv[0]  # a worker's file name


def _strings(value, out: list) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)
