#!/usr/bin/env python3
"""Speed and memory against the parse floor and VisualDL, measured side by side in one run.

    python bench/bench_speed.py [--quick] [--out docs/benchmarks.md] [--work DIR] [--no-visualdl]

Generates GPU-shaped GPT traces with `python -m tbp_synth` (one rank of ~200k
events, one of ~1M events, and an 8-rank DP2 x MP2 x PP2 run of ~200k events per rank; each
also in Paddle 2.x layout for VisualDL), then, per file, in fresh child processes, each
measurement --repeat times (default 3) taken in turn, the median reported:
  (a) floor   - read the bytes and msgspec-decode them into typed structs holding only the fields
                the engine needs, GC off: the fastest decode of those bytes with a JSON library;
  (a') scan    - read the bytes and run our native scanner (tb_paddle_profile/trace/_scan.c) over the
                events, chunk by chunk, and nothing else: the floor of our own reader;
  (b) cold    - our whole path: read, tables, tree, every view, serialized Summary; once in one
                process (b1) and once with the file's chunks read by all cores (bN: threads
                running the native scanner; the Summary is the same); and once
                more in one process with the native scanner switched off (b1 msgspec), to show
                what it gains;
  (c) warm    - the same Summary from the plugin's cache (key lookup, read, parse);
  (d) visualdl- VisualDL 2.5.3's own loader (load_profiler_json + ProfilerData) on the 2.x copy,
                from its own virtual environment (created under --work from PyPI if missing).
and reports wall time, peak RSS, and the ratios (b)/(a), (d)/(b), peak RSS / file size; then the
time until all 8 ranks are summarized from cold with one worker process per core, against
(sum of single-file cold times) / cores. Timings are not asserted anywhere; read the table.
With the traces and VisualDL's environment already under --work it runs in about 4 minutes on a
2-core machine (from scratch: see docs/benchmarks.md); --with-2gb adds about 1 (4 more the
first time, to write the file).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
CPU0 = 0.0
def start():
    global CPU0
    r = resource.getrusage(resource.RUSAGE_SELF)
    CPU0 = r.ru_utime + r.ru_stime
    return time.perf_counter()
if mode == "floor":
    from typing import List, Optional, Union
    import msgspec
    class A(msgspec.Struct, gc=False):
        start_time: Optional[str] = None
        corr: Optional[int] = msgspec.field(default=None, name="correlation id")
        place: Optional[str] = None
        increase_bytes: Optional[int] = None
        current_allocated: Optional[int] = None
        current_reserved: Optional[int] = None
        peak_allocated: Optional[int] = None
        peak_reserved: Optional[int] = None
    class E(msgspec.Struct, gc=False):
        name: str = ""
        ph: str = ""
        cat: str = ""
        pid: Union[int, str] = 0
        tid: Union[int, str] = 0
        ts: float = 0.0
        dur: float = 0.0
        args: Optional[A] = None
    class T(msgspec.Struct):
        traceEvents: List[E]
    dec = msgspec.json.Decoder(T)
    t0 = start()
    gc.disable()
    with open(path, "rb") as f:
        n = len(dec.decode(f.read()).traceEvents)
elif mode == "scan":
    from tb_paddle_profile.trace import reader
    scan = reader.native_scanner()
    assert scan is not None, "the native scanner is not built"
    t0 = start()
    gc.disable()
    with open(path, "rb") as f:
        data = f.read()
    trace, _ = reader.decode(data, path)
    mv, s, e = reader._event_bounds(trace.traceEvents)
    n = sum(scan(mv, a, b)[0] for a, b in reader._chunk_ranges(mv, s, e))
elif mode == "python-json":
    t0 = start()
    with open(path, "rb") as f:
        n = len(json.loads(f.read())["traceEvents"])
elif mode == "cold":
    import os
    from tb_paddle_profile.analysis.summarize import summarize_file
    t0 = start()
    n = len(summarize_file(path, workers=int(os.environ.get("BENCH_WORKERS", "1"))).SerializeToString())
elif mode == "warm":
    import os
    from tb_paddle_profile.store.cache import SummaryCache
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.v1 import summary_pb2
    t0 = start()
    # what the plugin does for a cached file: list, build the key, read and parse the entry
    snap = Discovery(os.path.dirname(path), interval=None).scan()
    entry = [f for f in snap.files if f.file_name == os.path.basename(path)][0]
    hit = SummaryCache(os.environ["BENCH_CACHE"]).get(entry.key)
    n = len(summary_pb2.Summary.FromString(hit.data).operators.operators)
elif mode == "ready":
    # what the plugin does in a running TensorBoard: files found -> all summaries ready, from an
    # empty cache; the worker processes' start-up is included
    import os
    from tb_paddle_profile.store.cache import SummaryCache
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.pipeline.loader import Loader
    t0 = start()
    discovery = Discovery(path, interval=None)
    loader = Loader(discovery.fs, SummaryCache(os.environ["BENCH_CACHE"]), workers=os.cpu_count())
    discovery.subscribe(loader.update)
    n = len(discovery.scan().files)
    loader.wait_idle()
    t = time.perf_counter() - t0
    loader.close()
    discovery.stop()
    t0 = time.perf_counter() - t
elif mode == "visualdl":
    from visualdl.component.profiler.parser.event_node import load_profiler_json
    from visualdl.component.profiler.profiler_data import ProfilerData
    t0 = start()
    result = load_profiler_json(path)
    data = ProfilerData("run", "worker", result.get_span_idx(), result)
    n = 1
t = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": t, "maxrss_kb": me.ru_maxrss, "n": n,
                  # CPU of this process (from t0) and of its forked decode workers
                  "cpu_s": me.ru_utime + me.ru_stime - CPU0 + kids.ru_utime + kids.ru_stime,
                  "worker_maxrss_kb": kids.ru_maxrss}))
"""


def run_child(python: str, mode: str, path: Path, env=None, timeout=900, code: str = CHILD) -> dict:
    """One measurement in a fresh process: ``code`` (CHILD, or CHILD after a prelude) in ``mode``."""
    e = dict(os.environ, PYTHONPATH=str(ROOT))
    e.update(env or {})
    out = subprocess.run(
        [python, "-c", code, mode, str(path)], cwd=ROOT, capture_output=True, text=True, env=e, timeout=timeout
    )
    if out.returncode != 0:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def generate(work: Path, name: str, args: list, layout: int) -> list:
    out = work / f"{name}-v{layout}"
    if not out.exists():
        subprocess.run(
            [sys.executable, "-m", "tbp_synth", "--out", str(out), "--layout", str(layout), *args],
            cwd=ROOT,
            check=True,
            capture_output=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
    return sorted(out.glob("*.paddle_trace.json"))


def visualdl_python(work: Path) -> str:
    venv = work / "venv-visualdl"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "visualdl==2.5.3"], check=True)
    return str(py)


def prime_cache(folder: Path, cache_dir: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "preprocess",
            str(folder),
            "--no-timeline",
            "--cache-dir",
            str(cache_dir),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )


def median_run(runs: list) -> dict:
    """The run with the median time (its other figures with it), peak RSS the largest of all."""
    ok = sorted((r for r in runs if "error" not in r), key=lambda r: r["seconds"])
    if not ok:
        return runs[0]
    best = dict(ok[(len(ok) - 1) // 2])
    for key in ("maxrss_kb", "worker_maxrss_kb"):
        best[key] = max(r.get(key, 0) for r in ok)
    return best


def fmt(r: dict, key="seconds") -> str:
    return "error: " + r["error"] if "error" in r else f"{r[key]:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tbpp-bench")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help="smaller traces (a minute instead of several)")
    ap.add_argument("--no-visualdl", action="store_true")
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of each measurement, interleaved; the table shows the median (default 3)",
    )
    ap.add_argument(
        "--with-2gb",
        action="store_true",
        help="also summarize a ~2 GB single-rank trace (cold path only; ~5 more minutes)",
    )
    args = ap.parse_args()
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    scale = 0.1 if args.quick else 1.0
    single = [
        (
            "200k",
            ["--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--events-per-rank", str(int(200_000 * scale))],
        ),
        (
            "1M",
            ["--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--events-per-rank", str(int(1_000_000 * scale))],
        ),
    ]
    vdl = None if args.no_visualdl else visualdl_python(work)
    cache_dir = work / "cache"
    cores = os.cpu_count() or 1
    rows = []
    for label, gen_args in single + [
        (
            "8-rank rank0",
            ["--dp", "2", "--mp", "2", "--pp", "2", "--steps", "4", "--events-per-rank", str(int(200_000 * scale))],
        )
    ]:
        v3 = generate(work, label.split()[0], gen_args, 3)
        v2 = generate(work, label.split()[0], gen_args, 2) if vdl else []
        path = v3[0]
        size = path.stat().st_size
        prime_cache(path.parent, cache_dir)
        runs = {
            "floor": ("floor", {}),
            "scan": ("scan", {}),
            "cold1": ("cold", {}),
            "cold_py": ("cold", {"TB_PADDLE_PROFILE_NATIVE": "0"}),
            "coldn": ("cold", {"BENCH_WORKERS": str(cores)}),
            "warm": ("warm", {"BENCH_CACHE": str(cache_dir)}),
        }
        got = {k: [] for k in runs}
        for _ in range(args.repeat):  # interleaved, so that a slow minute hits every measurement alike
            for k, (mode, env) in runs.items():
                got[k].append(run_child(sys.executable, mode, path, env=env))
        floor, scan, cold1, cold_py, coldn, warm = (median_run(got[k]) for k in runs)
        # VisualDL's own run is long enough that the machine's swings average out within it; on
        # the 1M trace (about a minute) it runs once
        vis = (
            median_run(
                [run_child(vdl, "visualdl", v2[0], timeout=1800) for _ in range(1 if size > 200e6 else args.repeat)]
            )
            if vdl
            else {"error": "skipped"}
        )
        nan = float("nan")
        f_s, s_s, c1_s, cn_s = (r.get("seconds", nan) for r in (floor, scan, cold1, coldn))
        v_s = vis.get("seconds", nan)
        rss = max(cold1.get("maxrss_kb", 0), coldn.get("maxrss_kb", 0)) * 1024
        rss_worker = coldn.get("worker_maxrss_kb", 0) * 1024
        rows.append(
            f"| {label} | {size / 1e6:.0f} | {fmt(floor)} | {fmt(scan)} | {fmt(cold1)} | {fmt(coldn)} "
            f"({coldn.get('cpu_s', nan):.2f} CPU) | {fmt(cold_py)} | {fmt(warm)} | {fmt(vis)} "
            f"| **{c1_s / f_s:.2f}** / **{cn_s / f_s:.2f}** | {c1_s / s_s:.2f} / {cn_s / s_s:.2f} "
            f"| **{v_s / c1_s:.1f}** / **{v_s / cn_s:.1f}** "
            f"| {rss / 1e6:.0f}{f' / {rss_worker / 1e6:.0f}' if rss_worker else ''} "
            f"| {vis.get('maxrss_kb', 0) * 1024 / 1e6:.0f} "
            f"| {rss / size:.2f} |"
        )
        print(rows[-1], flush=True)

    # 8 ranks from cold, one worker process per core, through the plugin's preprocess
    ranks = sorted((work / "8-rank-v3").glob("*.paddle_trace.json"))
    fresh = work / "cache-8rank"
    single_runs, ready_runs = {p: [] for p in ranks}, []
    for _ in range(args.repeat):
        for p in ranks:
            single_runs[p].append(run_child(sys.executable, "cold", p))
        shutil.rmtree(fresh, ignore_errors=True)
        ready_runs.append(run_child(sys.executable, "ready", work / "8-rank-v3", env={"BENCH_CACHE": str(fresh)}))
    singles = [median_run(single_runs[p])["seconds"] for p in ranks]
    ready = median_run(ready_runs)
    shutil.rmtree(fresh, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "preprocess",
            str(work / "8-rank-v3"),
            "--cache-dir",
            str(fresh),
            "--jobs",
            str(cores),
            "--no-timeline",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    all_ready = time.perf_counter() - t0
    target = sum(singles) / cores * 1.2

    big_rows = []
    if args.with_2gb:
        big = generate(
            work, "2GB", ["--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--events-per-rank", "6000000"], 3
        )[0]
        size = big.stat().st_size
        big_rows = [""]
        for w in (1, cores):
            r = run_child(sys.executable, "cold", big, env={"BENCH_WORKERS": str(w)}, timeout=3600)
            big_rows.append(
                f"~2 GB trace ({size / 1e9:.2f} GB, one rank), {w} core(s) reading it: cold summary in {fmt(r)} s, "
                f"peak RSS {r.get('maxrss_kb', 0) * 1024 / 1e9:.2f} GB ({r.get('maxrss_kb', 0) * 1024 / size:.2f} x "
                f"the file)"
                + (
                    f", largest forked worker {r['worker_maxrss_kb'] * 1024 / 1e9:.2f} GB."
                    if r.get("worker_maxrss_kb")
                    else "."
                )
            )

    header = [
        f"Measured on {platform.machine()}, {cores} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; generated GPU-shaped GPT traces (`tbp_synth`). Each time is "
        f"the median of {args.repeat} runs taken in turn (VisualDL on the 1M trace: one run of about a minute).",
        "",
        f"(b1) is the cold path on one core; (b{cores}) lets {cores} cores read the file together (`workers`: threads "
        "running the native scanner, what the CLI and a lone file in the plugin use), with the CPU time beside it. "
        f"Ratios are given as b1 / b{cores}. (b1) msgspec only is the same cold path with the native scanner "
        "switched off (`TB_PADDLE_PROFILE_NATIVE=0`). Peak RSS is the largest of the two runs' process (and, after a slash, of a "
        "forked decode worker, which only the msgspec-only path uses).",
        "",
        f"| trace | MB | (a) floor s | (a') scan s | (b1) cold s | (b{cores}) cold s | (b1) msgspec only s "
        "| (c) warm s | (d) VisualDL s | (b)/(a) | (b)/(a') | (d)/(b) | peak RSS cold MB | peak RSS VisualDL MB "
        "| RSS cold / size |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    footer = [
        "",
        f"8-rank run (DP2 x MP2 x PP2, {len(ranks)} files), empty cache, {cores} worker processes: all ranks "
        f"summarized in {fmt(ready)} s in a running process as in TensorBoard (files found -> all ready, worker "
        f"start-up included), {all_ready:.2f} s as a fresh `tb-paddle-profile preprocess` command (interpreter "
        f"start-up and imports too); sum of single-file cold times (b1) / cores + 20 % = {target:.2f} s.",
    ]
    table = "\n".join(header + rows + footer + big_rows)
    print()
    print(table)
    if args.out:
        args.out.write_text("# Benchmarks\n\n" + __doc__.split("\n\n", 2)[2].strip() + "\n\n" + table + "\n")


if __name__ == "__main__":
    main()
