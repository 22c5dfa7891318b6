"""Benchmark of ``preprocess --dask``: the engine's overhead per file, and throughput with 1 and 2 workers.

Reports, as markdown tables:
- overhead: a trivially small trace (the shared 76 KB GPU rank, copied under M names) summarized directly
  (``jobs.run_job`` in this process, one after the other) and through Dask (``local:1``: one worker
  process, one thread, the cluster already started); the difference per file is what the engine adds
  (task submission and scheduling, the worker's checks of the cache, the claim taken, renewed and
  released, the result sent back), split into the part spent inside the task (cache checks and claims)
  and the rest (scheduler and client round trips);
- throughput: a small generated run (the project's generator, DP N x MP1 x PP1) preprocessed with
  ``local:1`` and ``local:2`` into an empty cache folder: traces/s and MB/s of trace, cluster start
  excluded (reported beside), and the bytes each file moves (trace read, entries written).

Usage: python bench/bench_dask.py [--small-copies M] [--ranks N] [--events E] [--workers 1,2,4] [--no-index]
No assertions: it only measures. Numbers depend on the machine (cores shared with other work count).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SMALL = REPO / "tests" / "data" / "traces" / "gpu-synthetic-2rank"


def small_logdir(root: Path, copies: int) -> Path:
    sources = sorted(SMALL.glob("*.paddle_trace.json"))
    if not sources:
        sys.exit(f"no traces in {SMALL}")
    run = root / "small"
    run.mkdir(parents=True)
    data = sources[0].read_bytes()
    for i in range(copies):
        (run / f"rank{i}_time_2026_11_29_00_00_00_{i:06d}.paddle_trace.json").write_bytes(data)
    return root


def generated_logdir(root: Path, ranks: int, events: int) -> Path:
    out = root / "gen"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            str(ranks),
            "--mp",
            "1",
            "--pp",
            "1",
            "--steps",
            "2",
            "--out",
            str(out),
            "--events-per-rank",
            str(events),
        ],
        check=True,
        capture_output=True,
        cwd=REPO,
    )
    for extra in out.glob("synth_*"):
        extra.unlink()
    return root


def files_of(logdir: Path):
    from tb_paddle_profile.pipeline.discovery import Discovery

    d = Discovery(str(logdir), interval=None)
    try:
        return d, d.scan().files
    finally:
        d.stop()


def direct(logdir: Path, cache: Path, index: bool) -> float:
    """Seconds to run every file's job one after the other in this process (the engine's floor)."""
    from tb_paddle_profile.pipeline.jobs import JobSpec, run_job

    d, files = files_of(logdir)
    started = time.perf_counter()
    for f in files:
        out = run_job(
            JobSpec(
                path=f.path,
                file_name=f.file_name,
                key=f.key,
                fs=d.fs,
                cache_dir=str(cache),
                root=d.root,
                index=index,
                return_data=False,
            )
        )
        assert out.ok and out.stored, out
    return time.perf_counter() - started


def through_dask(client, logdir: Path, cache: Path, index: bool):
    """(seconds, report) of preprocess_dask on an already started cluster."""
    from tb_paddle_profile.pipeline import dask as dask_preprocess

    started = time.perf_counter()
    report = dask_preprocess.preprocess_dask(
        str(logdir), "bench", cache_dir=str(cache), timeline=index, progress=None, client=client
    )
    took = time.perf_counter() - started
    assert report.status == 0, report.results
    return took, report


def _warm() -> None:
    """What a worker imports for its first file (about 0.3 s once per process), done before timing."""
    import tb_paddle_profile.analysis.digest  # noqa: F401
    import tb_paddle_profile.pipeline.dask  # noqa: F401
    import tb_paddle_profile.analysis.summarize  # noqa: F401
    import tb_paddle_profile.timeline  # noqa: F401


def cluster(workers: int):
    """(client, cluster, seconds to start it and warm its workers)."""
    from tb_paddle_profile.pipeline.dask import connect

    started = time.perf_counter()
    client, local = connect(f"local:{workers}")
    client.wait_for_workers(workers)
    client.run(_warm)
    return client, local, time.perf_counter() - started


def _compute_s(stream) -> float:
    """Seconds spent computing tasks, from a distributed task stream."""
    return sum(sum(s["stop"] - s["start"] for s in t["startstops"] if s["action"] == "compute") for t in stream.data)


def folder_bytes(folder: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in folder.rglob(pattern))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small-copies", type=int, default=40)
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--events", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-index", action="store_true", help="throughput without the timeline indexes")
    ap.add_argument("--workers", default="1,2", help="worker counts for the throughput table (default 1,2)")
    a = ap.parse_args()
    from distributed import get_task_stream

    root = Path(tempfile.mkdtemp(prefix="bench-dask-"))
    try:
        # -------------------------------------------------- overhead per file
        small = small_logdir(root / "small-logdir", a.small_copies)
        client, local, start_s = cluster(1)
        rows = []
        try:
            for i in range(a.repeat):
                t_direct = direct(small, root / f"cache-direct-{i}", index=False)
                with get_task_stream(client) as ts:
                    t_dask, report = through_dask(client, small, root / f"cache-dask-{i}", index=False)
                inside = _compute_s(ts)
                rows.append((t_direct, t_dask, inside))
        finally:
            client.close()
            local.close()
        n = a.small_copies
        per = [(d / n, k / n, i / n) for d, k, i in rows]
        direct_ms = statistics.median(p[0] for p in per) * 1e3
        dask_ms = statistics.median(p[1] for p in per) * 1e3
        inside_ms = statistics.median(p[2] for p in per) * 1e3
        print(f"## Engine overhead per file ({n} copies of a 76 KB trace, local:1, median of {a.repeat})\n")
        print(
            "| direct run_job | through Dask (wall, per file) | inside the task | overhead per file | of which in the task (cache checks, claim) | scheduler + client |"
        )
        print("|---|---|---|---|---|---|")
        print(
            f"| {direct_ms:.1f} ms | {dask_ms:.1f} ms | {inside_ms:.1f} ms | {dask_ms - direct_ms:.1f} ms | "
            f"{inside_ms - direct_ms:.1f} ms | {dask_ms - inside_ms:.1f} ms |"
        )
        print(f"\n(cluster start and worker imports, not counted: {start_s:.1f} s)\n")

        # -------------------------------------------------- throughput with 1 and 2 workers
        gen = generated_logdir(root / "gen-logdir", a.ranks, a.events)
        traces = sorted(gen.rglob("*.paddle_trace.json"))
        mb = sum(p.stat().st_size for p in traces) / (1 << 20)
        index = not a.no_index
        t_one = direct(gen, root / "cache-gen-direct", index=index)
        print(
            f"## Throughput ({len(traces)} generated ranks, {mb / len(traces):.1f} MB each, ~{a.events} events; "
            f"summary, digest{' and timeline index' if index else ''} per file)\n"
        )
        print(
            "| workers | cluster start + imports | preprocess | inside a task, per file | traces/s | MB/s | speed-up vs 1 worker |"
        )
        print("|---|---|---|---|---|---|---|")
        print(
            f"| direct, in process | - | {t_one:.2f} s | {t_one / len(traces) * 1e3:.0f} ms | "
            f"{len(traces) / t_one:.2f} | {mb / t_one:.1f} | - |"
        )
        base = None
        for w in [int(x) for x in a.workers.split(",")]:
            client, local, start_s = cluster(w)
            try:
                with get_task_stream(client) as ts:
                    took, report = through_dask(client, gen, root / f"cache-gen-{w}", index=index)
                inside = _compute_s(ts)
            finally:
                client.close()
                local.close()
            base = base or took
            print(
                f"| {w} | {start_s:.1f} s | {took:.2f} s | {inside / len(traces) * 1e3:.0f} ms | "
                f"{len(traces) / took:.2f} | {mb / took:.1f} | {base / took:.2f}x |"
            )
        cache = root / "cache-gen-1"
        entries = {
            "summary (.pb)": folder_bytes(cache, "*.pb"),
            "digest (.dg)": folder_bytes(cache, "*.dg"),
            "timeline index (.tl)": folder_bytes(cache, "*.tl"),
        }
        print(
            f"\nBytes per file: trace read {mb * (1 << 20) / len(traces) / 1e6:.2f} MB; written "
            + ", ".join(f"{k} {v / len(traces) / 1e3:.0f} KB" for k, v in entries.items())
            + f"; cores here: {os.cpu_count()}"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
