"""Faults while the plugin's loader works, with real worker processes: a worker killed with SIGKILL, a
worker process that cannot be started, a file that vanishes and comes back, a file deleted while it is
parsed, closing during a parse, a FIFO named like a trace, a bug of ours in the engine, the memory
plan of gzipped files, and `preprocess` with a cache folder that cannot be written (even by root)."""

from __future__ import annotations

import dataclasses
import errno
import logging
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from support.paths import REPO
from support.plugin_testlib import (
    GLOO,
    GPU,
    OLD,
    GateFS,
    break_the_engine,
    die_at_start,
    pid_gone,
    place,
    trace_files,
    tree_digest,
    wait_for,
)
from tb_paddle_profile.core import errors, pool as workers
from tb_paddle_profile.store.cache import SummaryCache
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.pipeline import loader as loader_mod
from tb_paddle_profile.pipeline.discovery import Discovery, Snapshot
from tb_paddle_profile.pipeline.loader import FAILED, LOADING, QUEUED, READY, Loader


@pytest.fixture
def make(tmp_path):
    """make(traces, fs=None, workers=2) -> (discovery, loader, {file name: path}) over a fresh logdir;
    everything made is closed at the end."""
    made = []
    names = set()

    def build(traces, fs=None, workers=2, subscribe=True):
        logdir = tmp_path / "logdir"
        paths = {}
        for src in traces:
            paths[src.name] = place(src.read_bytes(), logdir / "run" / src.name, mtime=OLD)
            names.add(src.name)
        discovery = Discovery(str(logdir), interval=None)
        loader = Loader(fs or discovery.fs, SummaryCache(tmp_path / "cache"), workers=workers, root=discovery.root)
        if subscribe:
            discovery.subscribe(loader.update)
        made.append((discovery, loader))
        return discovery, loader, paths

    yield build
    for discovery, loader in made:
        fs = loader.fs
        if isinstance(fs, GateFS):  # a failed test must not leave a worker waiting
            for name in names:
                Path(fs.gates, name).touch()
        discovery.stop()
        loader.close()


def by_name(snapshot):
    return {f.file_name: f for f in snapshot.files}


def closed_within(loader, timeout=60.0) -> bool:
    """Close the loader on another thread; whether it returned within the timeout (a hang detector)."""
    t = threading.Thread(target=loader.close, daemon=True)
    t.start()
    t.join(timeout)
    return not t.is_alive()


def expected_summary(path: Path) -> bytes:
    return summarize_bytes(path.read_bytes(), path.name).SerializeToString()


def test_a_killed_worker_charges_only_its_own_file_and_crashes_are_retried_with_a_limit(
    make, shared_traces, tmp_path, monkeypatch
):
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch.CRASH_RETRY_S", 0.0)
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch.RETRY_BACKOFF_S", 0.0)
    gates = tmp_path / "gates"
    gates.mkdir()
    a_src, b_src = trace_files(shared_traces, GLOO)
    discovery, loader, paths = make([a_src, b_src], fs=GateFS(str(gates)))
    files = by_name(discovery.scan())
    a, b = files[a_src.name], files[b_src.name]
    # Both files are in flight, each on its own process.
    pid_a = wait_for(lambda: loader.job_pid(a), what="a's job to start")
    pid_b = wait_for(lambda: loader.job_pid(b), what="b's job to start")
    assert pid_a != pid_b
    os.kill(pid_a, signal.SIGKILL)  # what the kernel's OOM killer does
    wait_for(lambda: pid_gone(pid_a), what="the killed worker to be reaped")
    # b, whose worker lived, is still being parsed by the same process, and is not charged.
    wait_for(
        lambda: loader.state(a).state != LOADING or loader.job_pid(a) not in (None, pid_a),
        what="a's crash to be noticed",
    )
    assert loader.state(b).state == LOADING and loader.job_pid(b) == pid_b and not pid_gone(pid_b)
    (gates / b.file_name).touch()
    wait_for(lambda: loader.state(b).state == READY, what="b to be ready")
    assert loader.summary_bytes(b) == expected_summary(paths[b.file_name])
    # a is retried (alone) MAX_CRASH_RETRIES times; each retry is killed too: then it is FAILED, not cached.
    killed = {pid_a}
    for _ in range(loader_mod.MAX_CRASH_RETRIES):
        pid = wait_for(
            lambda: (loader.job_pid(a) or 0) not in killed | {0} and loader.job_pid(a), what="a's retry to start"
        )
        os.kill(pid, signal.SIGKILL)
        killed.add(pid)
        wait_for(lambda: pid_gone(pid), what="the killed worker to be reaped")
    wait_for(lambda: loader.state(a).state == FAILED, what="a to fail")
    state = loader.state(a)
    assert "SIGKILL" in state.error and state.error.startswith(a.file_name) and not state.cached
    assert loader.cache.peek(a.key) is None
    assert loader.stats["worker_crashes"] == 1 + loader_mod.MAX_CRASH_RETRIES
    assert loader.state(b).state == READY
    # A later scan tries it again (its backoff is over); this time it is let through.
    (gates / a.file_name).touch()
    discovery.scan()
    assert loader.wait_idle(60)
    assert loader.state(a).state == READY
    assert loader.summary_bytes(a) == expected_summary(paths[a.file_name])


def test_a_worker_process_that_cannot_be_started_is_shown_and_retried(make, shared_traces, monkeypatch):
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch.POOL_RETRY_S", 0.05)
    real = workers.process_context
    broken = {"on": True}

    def context():
        if broken["on"]:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return real()

    monkeypatch.setattr(workers, "process_context", context)
    src = trace_files(shared_traces, GLOO)[0]
    discovery, loader, paths = make([src])
    f = discovery.scan().files[0]
    wait_for(lambda: "Resource temporarily unavailable" in loader.state(f).error, what="the reason to be shown")
    assert loader.state(f).state == QUEUED
    assert loader._thread.is_alive()  # the loader thread goes on
    broken["on"] = False
    assert loader.wait_idle(60)
    assert loader.state(f) == loader_mod.FileState(READY)
    assert loader.summary_bytes(f) == expected_summary(paths[f.file_name])


def test_workers_that_die_before_taking_a_job_end_in_a_shown_failure_not_a_loop(make, shared_traces, monkeypatch):
    """Each worker process starts, then ends before its job (submitting succeeds every time): after
    POOL_MAX_TRIES in a row the queued files are FAILED with the reason, not QUEUED for ever."""
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch.POOL_RETRY_S", 0.01)
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch._worker_init", die_at_start)
    srcs = trace_files(shared_traces, GLOO)
    discovery, loader, paths = make(srcs)
    files = discovery.scan().files
    assert loader.wait_idle(120), loader.counts()
    for f in files:
        state = loader.state(f)
        assert state.state == FAILED and not state.cached, state
        assert state.error.startswith(f.file_name) and "before starting its job" in state.error
    assert loader.stats["pool_failures"] >= loader_mod.POOL_MAX_TRIES


def _tiny_sources(folder: Path, n: int) -> list:
    from test_many_files import _write

    return [_write(folder, "src", rank) for rank in range(n)]


def _count_jobs(monkeypatch) -> list:
    """The files of each job the loader hands its worker pool (a list each), as they are submitted."""
    jobs = []
    real = workers.WorkerPool.submit

    def submit(self, fn, arg):
        jobs.append([s.file_name for s in arg] if isinstance(arg, list) else [arg.file_name])
        return real(self, fn, arg)

    monkeypatch.setattr(workers.WorkerPool, "submit", submit)
    return jobs


def test_small_files_share_a_job_and_a_bad_one_fails_alone_naming_itself(make, tmp_path, monkeypatch):
    """Small files go to a busy worker together (one round trip for all): each still gets its own outcome,
    byte for byte the summary it has alone; a broken one fails with its own one-line error."""
    jobs = _count_jobs(monkeypatch)
    srcs = _tiny_sources(tmp_path / "tiny", 6)
    bad = tmp_path / "tiny" / "src" / "rank9_time_2026_12_02_10_00_00_000009.paddle_trace.json"
    bad.write_bytes(b'{"traceEvents": [{"name": "x", "ph": "X", "ts": "never"} oops')
    discovery, loader, paths = make(srcs + [bad], workers=1)
    files = by_name(discovery.scan())
    assert loader.wait_idle(120), loader.counts()
    assert len(jobs) < len(files) and max(len(j) for j in jobs) > 1, jobs  # one worker: the others joined a job
    for name, f in files.items():
        state = loader.state(f)
        if name == bad.name:
            assert state.state == FAILED and state.error.startswith(bad.name) and "\n" not in state.error, state
            assert not loader.cache.peek(f.key).ok  # the file's own fault: cached as its result
        else:
            assert state.state == READY, state
            assert loader.summary_bytes(f) == expected_summary(paths[name])
    assert sorted(n for j in jobs for n in j) == sorted(files)  # each file parsed once


def test_a_killed_job_of_small_files_loads_each_again_alone_charging_none(make, tmp_path, monkeypatch):
    """Which file a job of several killed its worker is not known: each is loaded again in a job of its own,
    uncharged (a file that kills its worker alone is then charged as ever)."""
    jobs = _count_jobs(monkeypatch)
    gates = tmp_path / "gates"
    gates.mkdir()
    srcs = _tiny_sources(tmp_path / "tiny", 4)
    discovery, loader, paths = make(srcs, fs=GateFS(str(gates)), workers=1)
    files = by_name(discovery.scan())
    # one worker, every file queued at once: they all went in the first job, which waits at its first gate
    pid = wait_for(
        lambda: next((loader.job_pid(f) for f in files.values() if loader.job_pid(f)), None), what="the job to start"
    )
    assert len(jobs) == 1 and sorted(jobs[0]) == sorted(files), jobs
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: pid_gone(pid), what="the killed worker to be reaped")
    for f in files.values():
        (gates / f.file_name).touch()
    assert loader.wait_idle(120), loader.counts()
    for name, f in files.items():
        assert loader.state(f).state == READY, loader.state(f)
        assert loader.summary_bytes(f) == expected_summary(paths[name])
    with loader._cond:
        assert all(e.crashes == 0 and e.solo for e in loader._entries.values())
    assert loader.stats["worker_crashes"] == 1
    assert sorted(jobs[1:]) == sorted([name] for name in files)  # each again, alone


def test_a_file_not_found_when_read_is_ready_once_it_is_back(make, shared_traces, tmp_path):
    """An object store briefly empty: the file is listed, then not found when read; it comes back."""
    gates = tmp_path / "gates"
    gates.mkdir()
    src = trace_files(shared_traces, GLOO)[0]
    discovery, loader, paths = make([src], fs=GateFS(str(gates)))
    f = discovery.scan().files[0]
    path = paths[f.file_name]
    wait_for(lambda: loader.job_pid(f), what="the job to start")
    data, st = path.read_bytes(), path.stat()
    path.unlink()
    (gates / f.file_name).touch()
    assert loader.wait_idle(60)
    state = loader.state(f)
    assert state.state == FAILED and f.file_name in state.error and "found" in state.error
    path.write_bytes(data)  # back, the same object (size and modification time)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert discovery.scan().files[0].key == f.key
    assert loader.wait_idle(60)
    assert loader.state(f).state == READY
    assert loader.summary_bytes(f) == expected_summary(path)


def test_a_file_deleted_while_it_is_parsed_stops_costing_a_worker(make, shared_traces, tmp_path):
    gates = tmp_path / "gates"
    gates.mkdir()
    src = trace_files(shared_traces, GLOO)[0]
    discovery, loader, paths = make([src], fs=GateFS(str(gates)))
    f = discovery.scan().files[0]
    pid = wait_for(lambda: loader.job_pid(f), what="the job to start")
    paths[f.file_name].unlink()
    assert discovery.scan().files == []
    assert loader.wait_idle(60)  # without the gate ever opening: its job was ended
    wait_for(lambda: pid_gone(pid), what="its worker process to end")
    assert loader.counts() == {}


def test_closing_ends_a_parse_in_progress_at_once(make, shared_traces, tmp_path):
    gates = tmp_path / "gates"
    gates.mkdir()
    src = trace_files(shared_traces, GLOO)[0]
    discovery, loader, _ = make([src], fs=GateFS(str(gates)))
    f = discovery.scan().files[0]
    pid = wait_for(lambda: loader.job_pid(f), what="the job to start")
    try:
        assert closed_within(loader), "close() waited for the parse in progress"
        assert pid_gone(pid)  # ended and reaped: no zombie
        assert loader.worker_pids() == []
    finally:
        (gates / f.file_name).touch()


def test_a_fifo_named_like_a_trace_never_blocks_a_worker(make, shared_traces, tmp_path):
    """Discovery refuses FIFOs itself; here the loader is handed one as if it had not (it must defend
    itself: opened without blocking, refused by fstat)."""
    src = trace_files(shared_traces, GLOO)[0]
    discovery, loader, paths = make([src], subscribe=False)
    fifo = tmp_path / "logdir" / "run" / "rank1_time_2026_01_01_00_00_00_000000.paddle_trace.json"
    os.mkfifo(fifo)
    snapshot = discovery.scan()
    runs = {
        run: {w: {s: dataclasses.replace(f, refused="") for s, f in spans.items()} for w, spans in ws.items()}
        for run, ws in snapshot.runs.items()
    }
    handed = Snapshot(snapshot.logdir, snapshot.scanned_at, runs)
    loader.update(handed)
    files = by_name(handed)
    assert len(files) == 2
    try:
        assert loader.wait_idle(60), "a worker is blocked on the FIFO"
        state = loader.state(files[fifo.name])
        assert state.state == FAILED and fifo.name in state.error and "FIFO" in state.error
        assert loader.state(files[src.name]).state == READY
        assert closed_within(loader)
    finally:
        try:  # unblock a reader stuck on it, should there be one
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_a_bug_of_ours_is_reported_as_ours_logged_and_not_cached(make, shared_traces, monkeypatch, caplog):
    monkeypatch.setattr("tb_paddle_profile.pipeline.loader_dispatch._worker_init", break_the_engine)
    src = trace_files(shared_traces, GLOO)[0]
    discovery, loader, _ = make([src])
    with caplog.at_level(logging.ERROR, logger="tb_paddle_profile"):
        f = discovery.scan().files[0]
        assert loader.wait_idle(60)
    state = loader.state(f)
    assert state.state == FAILED and not state.cached
    assert state.error == errors.our_bug(f.file_name, IndexError("list index out of range"))
    logged = [r for r in caplog.records if r.levelno == logging.ERROR and f.file_name in r.getMessage()]
    assert logged and "Traceback" in logged[0].getMessage() and "_buggy_summarize" in logged[0].getMessage()
    assert loader.cache.peek(f.key) is None  # a fixed release parses it again
    parsed = loader.stats["parsed"]
    discovery.scan()
    assert loader.wait_idle(60)
    assert loader.stats["parsed"] == parsed  # not retried in a loop


def test_the_memory_plan_of_a_gzipped_trace_is_from_its_real_size(tmp_path):
    events = b",".join([b'{"name": "op", "ph": "X", "ts": 1, "dur": 1, "pid": 1, "tid": 1}'] * 100_000)
    raw = b'{"traceEvents": [' + events + b"]}"
    logdir = tmp_path / "logdir"
    place(raw, logdir / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json.gz", gz=True)
    place(raw, logdir / "rank1_time_2026_01_01_00_00_00_000000.paddle_trace.json")
    discovery = Discovery(str(logdir), interval=None)
    gz_file, plain = sorted(discovery.scan().files, key=lambda f: f.rank)
    assert gz_file.size * 40 < len(raw)  # compressed more than the 40x once assumed
    loader = Loader(discovery.fs, SummaryCache(None), workers=1, root=discovery.root)
    try:
        loader.update(Snapshot(discovery.root, 1.0, {".": {"x": {"0": gz_file}}}))
        inflated = loader_mod.read_inflated_sizes(discovery.fs, [gz_file], discovery.root)
        assert inflated == {gz_file.key: len(raw)}
        planned = loader_mod.memory_estimate(gz_file, inflated[gz_file.key])
        assert planned >= loader_mod.memory_estimate(plain)  # at least what the same JSON plain needs
        assert planned <= loader_mod.memory_estimate(plain) + gz_file.size
        assert loader.planned_memory(gz_file) == planned
    finally:
        loader.close()


@pytest.mark.parametrize("timeline", [False, True], ids=["no-timeline", "timeline"])
def test_preprocess_with_a_cache_that_cannot_be_written_says_so_and_fails(shared_traces, tmp_path, timeline):
    """The cache folder lies under a regular file: not writable, even by root."""
    logdir = tmp_path / "logdir"
    for src in trace_files(shared_traces, GPU):
        place(src.read_bytes(), logdir / "gpu" / src.name, mtime=OLD)
    (tmp_path / "file").write_bytes(b"a regular file")
    cache = tmp_path / "file" / "cache"
    before = tree_digest(logdir)
    argv = [sys.executable, "-m", "tb_paddle_profile", "preprocess", str(logdir), "--cache-dir", str(cache)]
    proc = subprocess.run(
        argv + ([] if timeline else ["--no-timeline"]), cwd=REPO, capture_output=True, text=True, timeout=240
    )
    assert proc.returncode != 0, proc.stdout + proc.stderr
    errors_shown = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors_shown) == 2 and all("not writable" in line for line in errors_shown), proc.stderr
    assert proc.stdout.strip().startswith("0 of 2 traces")
    assert "leaked" not in proc.stderr and "Traceback" not in proc.stderr
    assert tree_digest(logdir) == before


def test_preprocess_reports_a_timeline_index_that_cannot_be_stored(shared_traces, tmp_path):
    """Summaries can be written, the timeline folder cannot (a regular file in its place)."""
    from tb_paddle_profile.timeline import INDEX_VERSION

    logdir = tmp_path / "logdir"
    for src in trace_files(shared_traces, GPU):
        place(src.read_bytes(), logdir / "gpu" / src.name, mtime=OLD)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / f"timeline-v{INDEX_VERSION}").write_bytes(b"in the way")
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "preprocess", str(logdir), "--cache-dir", str(cache)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode != 0
    assert proc.stderr.count("timeline index not built") == 2, proc.stderr
    assert len(list(cache.glob("v*/*/*.pb"))) == 2  # the summaries are stored
