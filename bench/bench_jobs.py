#!/usr/bin/env python3
"""One parse per trace: the per-file job (summary + digest + timeline index, jobs.run_job) against a cold
summary alone, on a generated 1M-event rank; and the parallel route of a many-rank run, cached.

    python bench/bench_jobs.py [--work DIR] [--events 1000000] [--repeat 3]
                               [--ranks-dp 512 --ranks-mp 2]   # the parallel part (0: skipped)

Prints a markdown table. The issue's target: the job ≤ 1.2 × the cold summary. No assertions.
"""

from __future__ import annotations

import argparse
import gzip
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def generate(out: Path, args: list) -> None:
    if out.is_dir() and any(out.glob("*.paddle_trace.json")):
        return
    subprocess.run(
        [sys.executable, "-m", "tbp_synth", "--out", str(out), *args],
        check=True,
        capture_output=True,
        cwd=str(Path(__file__).resolve().parents[1]),
    )


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def one_parse(work: Path, events: int, repeat: int) -> list:
    from tb_paddle_profile.pipeline import jobs
    from tb_paddle_profile import timeline
    from tb_paddle_profile.analysis.summarize import summarize_file
    from tb_paddle_profile.pipeline.discovery import Discovery

    folder = work / f"one-{events}"
    generate(folder, ["--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--events-per-rank", str(events)])
    (f,) = [x for x in Discovery(str(folder), interval=None).scan().files]
    summary = _best(lambda: summarize_file(f.path, workers=1), repeat)
    index = _best(
        lambda: timeline.build_file_index(Path(f.path).read_bytes, f.file_name, str(work / "alone.tl")), repeat
    )
    n = [0]

    def job():
        n[0] += 1
        out = jobs.run_job(
            jobs.JobSpec(
                path=f.path,
                file_name=f.file_name,
                key=f.key,
                cache_dir=tempfile.mkdtemp(prefix="cache-", dir=work),
                root=f.root,
            )
        )
        assert out.kind == "parsed", out.kind

    both = _best(job, repeat)

    def cli(*args):
        subprocess.run([sys.executable, "-m", "tb_paddle_profile", *args], check=True, capture_output=True)

    summary_cli = _best(lambda: cli("summary", str(folder), "--jobs", "1", "--no-cache", "--views", "overview"), repeat)
    pre_cli = _best(
        lambda: cli(
            "preprocess", str(folder), "--jobs", "1", "--cache-dir", tempfile.mkdtemp(prefix="cache-pre-", dir=work)
        ),
        repeat,
    )
    return [
        (
            "`tb-paddle-profile summary --no-cache --jobs 1` (process start included)",
            summary_cli,
            summary_cli / summary,
        ),
        (
            "`tb-paddle-profile preprocess --jobs 1` (summary + digest + index; process start included)",
            pre_cli,
            pre_cli / summary,
        ),
        ("preprocess ÷ summary, both from the command line", pre_cli / summary_cli, None),
        ("cold summary alone (1 core)", summary, 1.0),
        ("timeline index alone (its own parse: before)", index, index / summary),
        ("summary + index before (two parses)", summary + index, (summary + index) / summary),
        ("job: summary + digest + index, one parse, written to the cache", both, both / summary),
    ]


def parallel_route(work: Path, dp: int, mp: int) -> list:
    from tb_paddle_profile.pipeline.runs import RunAnalyses, analysis_key, analyze_digests, summary_first
    from tb_paddle_profile.store.cache import SummaryCache
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.pipeline import jobs
    from tb_paddle_profile.v1 import summary_pb2

    folder = work / f"run-{dp}x{mp}"
    generate(
        folder, ["--dp", str(dp), "--mp", str(mp), "--pp", "1", "--layers", "1", "--micro-batches", "1", "--steps", "2"]
    )
    files = Discovery(str(folder), interval=None).scan().files
    cache_dir = Path(tempfile.mkdtemp(prefix=f"cache-run-{dp}x{mp}-", dir=work))
    digests, keys = [], []
    for f in files:
        out = jobs.run_job(
            jobs.JobSpec(
                path=f.path, file_name=f.file_name, key=f.key, cache_dir=str(cache_dir), root=f.root, index=False
            )
        )
        digests.append(summary_pb2.RankDigest.FromString(out.digest))
        keys.append(f.key)
    cache = SummaryCache(cache_dir)
    key = analysis_key(keys)
    t0 = time.perf_counter()
    data = RunAnalyses(cache).get(key, lambda: analyze_digests(digests, "run", "0"))
    cold = time.perf_counter() - t0
    from tb_paddle_profile.v1 import plugin_pb2

    def served():
        d = RunAnalyses(cache).get(key, lambda: None)  # a restarted plugin: read back from disk
        return gzip.compress(summary_first(plugin_pb2.RunParallel.FromString(d), in_place=True).SerializeToString(), 3)

    warm = _best(served, 3)
    body = served()
    full = gzip.compress(data, 3)
    n = len(files)
    return [
        (f"parallel, {n} ranks: analysis computed (cold)", cold, None),
        (f"parallel, {n} ranks: served from the on-disk analysis (read, strip, gzip)", warm, None),
        (f"parallel, {n} ranks: gzipped body summary-first / with matched (MB)", len(body) / 2**20, len(full) / 2**20),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ranks-dp", type=int, default=0)
    ap.add_argument("--ranks-mp", type=int, default=2)
    a = ap.parse_args()
    work = Path(a.work or tempfile.mkdtemp(prefix="bench_jobs_"))
    rows = one_parse(work, a.events, a.repeat)
    print(f"| {a.events:,}-event trace | s (best of {a.repeat}) | × cold summary |")
    print("|---|---|---|")
    for label, s, ratio in rows:
        print(f"| {label} | {s:.2f} | {'' if ratio is None else f'{ratio:.2f}'} |")
    if a.ranks_dp:
        print()
        print("| parallel route | value | |")
        print("|---|---|---|")
        for label, v, w in parallel_route(work, a.ranks_dp, a.ranks_mp):
            print(f"| {label} | {v:.3f} | {'' if w is None else f'{w:.3f}'} |")


if __name__ == "__main__":
    main()
