#!/usr/bin/env python3
"""Cost per file as the number of files grows: listing, the loader's bookkeeping, the cheap routes, memory.

    python bench/bench_files.py                          # 1,000 / 10,000 / 100,000 files
    python bench/bench_files.py --files 1000,10000 --requests 5

One logdir of tiny Paddle traces (bench_soak.py's, ~1.3 kB each, runs of 1,000 ranks) under /tmp, grown
to each size in turn; each size measured in a fresh child process (so that its RSS is its own):

* **scan**: ``Discovery.scan()`` the first time (every file new: listed, path policy, head read) and again
  with nothing changed (listed only), per file;
* **track**: ``Loader.track`` of the scan's files (cache headers peeked, gzip trailers, entries queued);
* **load**: the loader's own work per file from queued to READY (pick, start, submit, finish) with a pool
  whose jobs answer at once with one real tiny trace's outcome: no parse, so what is left is the
  dispatcher's bookkeeping, run until every file is READY;
* **status**, **runs**: one request through the routes (werkzeug's test client, JSON): the first, the same
  again with nothing changed, and after one file's state changed (a new loader version), ms per request;
  with its body size; and ``runs`` after one run's state changed (that run's version moved: its part of
  the list made again), as JSON, protobuf and gzipped protobuf (what the frontend asks for);
* **memory**: bytes held per file by the scan's snapshot and by the loader's entries (tracemalloc), and
  the child's RSS after the scan, after track and after loading, per file.

Nothing is asserted: it prints what it measured (docs/benchmarks.md quotes it). The files are deleted
at the end.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_soak import RUN_SIZE, tiny_trace  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def grow_logdir(root: Path, have: int, want: int) -> None:
    for i in range(have, want):
        run, rank = f"run{i // RUN_SIZE:03d}", i % RUN_SIZE
        folder = root / run
        if rank == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"rank{rank}_time_2026_12_02_10_00_00_{rank:06d}.paddle_trace.json").write_bytes(
            tiny_trace(rank, 1000 + rank)
        )


class InstantPool:
    """A stand-in for core/pool.WorkerPool whose jobs end at once with one fixed outcome."""

    def __init__(self, outcome):
        self.outcome = outcome
        self.submitted = 0

    def submit(self, fn, spec):
        from tb_paddle_profile.core.pool import Job

        del fn, spec
        job = Job()
        job.pid = os.getpid()
        job.future.set_result(self.outcome)
        self.submitted += 1
        return job

    def cancel(self, job) -> bool:
        return False

    def pids(self):
        return []

    def shutdown(self) -> None:
        pass


def one_outcome(work: Path):
    """The real job's outcome of one tiny trace (its summary and digest), stored in a cache of its own."""
    from tb_paddle_profile.pipeline.jobs import JobSpec, run_job
    from tb_paddle_profile.store.cache import CacheKey

    path = work / "one.paddle_trace.json"
    path.write_bytes(tiny_trace(0, 1000))
    st = path.stat()
    out = run_job(
        JobSpec(
            path=str(path),
            file_name=path.name,
            key=CacheKey(str(path), st.st_size, "1"),
            cache_dir=str(work / "one-cache"),
            index=False,
        )
    )
    if not out.ok:
        raise SystemExit(f"the tiny trace did not parse: {out.error}")
    return out


def request_ms(client, url: str, headers=None) -> tuple:
    t = time.perf_counter()
    r = client.get(url, headers=headers or {})
    took = (time.perf_counter() - t) * 1e3
    if r.status_code != 200:
        raise SystemExit(f"{url}: {r.status_code} {r.get_data()[:200]!r}")
    return took, len(r.get_data())


def measure(root: Path, n: int, requests: int) -> dict:
    """One size, in this (fresh) process."""
    from werkzeug.test import Client

    from tb_paddle_profile.pipeline import loader as loader_mod
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.plugin.routes import Routes
    from tb_paddle_profile.store.cache import SummaryCache

    out = {"files": n}
    one = Path(tempfile.mkdtemp(prefix="tbpp_one_"))
    try:
        outcome = one_outcome(one)
    finally:
        shutil.rmtree(one, ignore_errors=True)
    gc.collect()
    out["rss_start_mb"] = rss_mb()

    d = Discovery(str(root), interval=None)
    t = time.perf_counter()
    snap = d.scan()
    out["scan_first_s"] = time.perf_counter() - t
    files = snap.files
    if len(files) != n:
        raise SystemExit(f"listed {len(files)} of {n} files")
    t = time.perf_counter()
    d.scan()
    out["scan_again_s"] = time.perf_counter() - t
    gc.collect()
    out["rss_scanned_mb"] = rss_mb()

    def loader():
        L = loader_mod.Loader(d.fs, SummaryCache(None), workers=2, root=d.root, index=False)
        L._executor = InstantPool(outcome)
        with L._cond:
            L._pool_retry_at = float("inf")  # nothing starts until the load is measured
        return L

    L = loader()
    pool = L._executor
    t = time.perf_counter()
    L.update(d.snapshot())
    out["track_s"] = time.perf_counter() - t
    gc.collect()
    out["rss_tracked_mb"] = rss_mb()

    # memory held per file (tracemalloc slows what it watches: measured apart, on a second scan and loader)
    tracemalloc.start()
    d2 = Discovery(str(root), interval=None)
    d2.scan()
    out["snapshot_bytes"] = tracemalloc.get_traced_memory()[0]
    L2 = loader()
    before = tracemalloc.get_traced_memory()[0]
    L2.update(d2.snapshot())
    out["entries_bytes"] = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    L2.close()
    del d2, L2
    gc.collect()

    routes = Routes(d, L)
    apps = routes.apps()
    status, runs = Client(apps["/status"]), Client(apps["/runs"])
    for name, client, url in (("status", status, "/?format=json"), ("runs", runs, "/?format=json")):
        first, size = request_ms(client, url)
        again = min(request_ms(client, url)[0] for _ in range(requests))
        out[f"{name}_first_ms"], out[f"{name}_again_ms"], out[f"{name}_bytes"] = first, again, size

    t = time.perf_counter()
    cpu = time.process_time()
    with L._cond:
        L._pool_retry_at = 0.0
        L._cond.notify_all()
    if not L.wait_idle(600):
        raise SystemExit("the loader did not finish within 600 s")
    out["load_s"] = time.perf_counter() - t
    out["load_cpu_s"] = time.process_time() - cpu
    out["submitted"] = pool.submitted
    out["ready"] = L.counts().get("READY", 0)
    gc.collect()
    out["rss_loaded_mb"] = rss_mb()

    # after one file's state changed: the loader's version moved, the scan's generation did not
    for name, client, url in (("status", status, "/?format=json"), ("runs", runs, "/?format=json")):
        times = []
        for _ in range(requests):
            with L._cond:
                L._touch()
            times.append(request_ms(client, url)[0])
        out[f"{name}_changed_ms"] = min(times)

    # after one file of one run changed state (that run's version moved): JSON, protobuf, protobuf gzipped
    # (what the frontend asks for); the run list's part of that run is made again, the others kept
    run = next(iter(d.snapshot().runs))
    for case, url, headers in (
        ("json", "/?format=json", {}),
        ("pb", "/", {}),
        ("gz", "/", {"Accept-Encoding": "gzip"}),
    ):
        request_ms(runs, url)  # the answer of this format made once before: parts kept
        times = []
        for _ in range(requests):
            with L._cond:
                L._tally.runs[run] += 1
                L._touch()
            took, size = request_ms(runs, url, headers)
            times.append(took)
        out[f"runs_run_{case}_ms"], out[f"runs_run_{case}_bytes"] = min(times), size
    L.close()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", default="1000,10000,100000", help="sizes, comma-separated")
    ap.add_argument("--requests", type=int, default=3, help="requests per route and case (best of)")
    ap.add_argument("--work", default="", help="a folder to keep the logdir in (default: a new one, deleted)")
    ap.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(Path(args.work), args.one, args.requests)))
        return 0
    sizes = sorted(int(s) for s in args.files.split(","))
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="tbpp_files_"))
    root = work / "logs"
    root.mkdir(parents=True, exist_ok=True)
    rows, have = [], 0
    try:
        for n in sizes:
            t = time.time()
            grow_logdir(root, have, n)
            have = n
            print(f"{n} files on disk ({time.time() - t:.1f} s to write); measuring", file=sys.stderr, flush=True)
            got = subprocess.run(
                [sys.executable, __file__, "--one", str(n), "--work", str(root), "--requests", str(args.requests)],
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if got.returncode != 0:
                print(got.stdout, got.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(got.stdout.strip().splitlines()[-1]))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    us = lambda r, k: r[k] / r["files"] * 1e6  # noqa: E731 - per file, µs
    print(
        "| files | scan first µs/file | scan again µs/file | track µs/file | load µs/file (CPU) "
        "| status first / again / changed ms | status MB | runs first / again / changed ms | runs MB "
        "| snapshot B/file | entries B/file | RSS MB start / scanned / tracked / loaded | RSS KB/file |"
    )
    print("|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---|---:|")
    for r in rows:
        print(
            f"| {r['files']:,} | {us(r, 'scan_first_s'):.0f} | {us(r, 'scan_again_s'):.0f} | {us(r, 'track_s'):.0f} "
            f"| {us(r, 'load_s'):.0f} ({us(r, 'load_cpu_s'):.0f}) "
            f"| {r['status_first_ms']:.1f} / {r['status_again_ms']:.1f} / {r['status_changed_ms']:.1f} "
            f"| {r['status_bytes'] / 1e6:.2f} "
            f"| {r['runs_first_ms']:.1f} / {r['runs_again_ms']:.1f} / {r['runs_changed_ms']:.1f} "
            f"| {r['runs_bytes'] / 1e6:.2f} | {r['snapshot_bytes'] / r['files']:.0f} "
            f"| {r['entries_bytes'] / r['files']:.0f} "
            f"| {r['rss_start_mb']:.0f} / {r['rss_scanned_mb']:.0f} / {r['rss_tracked_mb']:.0f} / "
            f"{r['rss_loaded_mb']:.0f} | {(r['rss_loaded_mb'] - r['rss_start_mb']) * 1e3 / r['files']:.2f} |"
        )
    print()
    print("| files | runs after one run's state changed: JSON ms (MB) | protobuf ms (MB) | protobuf gzip ms (MB) |")
    print("|---:|---|---|---|")
    for r in rows:
        print(
            f"| {r['files']:,} | "
            + " | ".join(
                f"{r[f'runs_run_{c}_ms']:.1f} ({r[f'runs_run_{c}_bytes'] / 1e6:.2f})" for c in ("json", "pb", "gz")
            )
            + " |"
        )
    for r in rows:
        if r["ready"] != r["files"] or r["submitted"] != r["files"]:
            print(f"note: {r['files']} files: {r['ready']} READY, {r['submitted']} jobs submitted")
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
