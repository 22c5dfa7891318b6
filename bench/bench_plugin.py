"""Benchmark of the plugin on an 8-rank run: cold load, and answers from a warm cache.

Reports, as a markdown table:
- cold: seconds from the plugin's start until every rank is READY (empty cache, worker processes);
- warm: with every rank already in the cache, a restarted plugin's first scan, then the time to answer
  the run list, one rank's summary and the cross-rank view (first request, and the median of repeats),
  through TensorBoard's own WSGI routing in this process (no network).

Usage: python bench/bench_plugin.py [--logdir DIR | --synth-events N] [--repeat N]
Without --logdir, an 8-rank run is made in a temporary folder: with --synth-events, by the project's
GPU-shaped generator (DP2 x MP2 x PP2, about N events per rank); otherwise from the shared traces beside
the repo (each rank a copy of one of the real 2-rank gloo traces). No assertions: it only measures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO / "tests" / "data" / "traces" / "cpu-gpt-2rank-gloo"


def make_run(root: Path, ranks: int = 8) -> Path:
    sources = sorted(SHARED.glob("*.paddle_trace.json"))
    if not sources:
        sys.exit(f"no traces in {SHARED}; pass --logdir")
    run = root / "gpt-8rank"
    run.mkdir(parents=True)
    for r in range(ranks):
        src = sources[r % len(sources)]
        (run / f"rank{r}_time_2026_11_29_07_19_39_{450900 + r:06d}.paddle_trace.json").write_bytes(src.read_bytes())
    return root


def make_synth_run(root: Path, events: int) -> Path:
    run = root / "gpt-8rank-synth"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--out",
            str(run),
            "--dp",
            "2",
            "--mp",
            "2",
            "--pp",
            "2",
            "--events-per-rank",
            str(events),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=str(REPO),
    )
    return root


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logdir", help="a logdir whose first run has the ranks to measure")
    ap.add_argument("--synth-events", type=int, default=0, help="make the 8 ranks with the synth generator")
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args()

    from tensorboard.backend import application
    from tensorboard.plugins import base_plugin
    from werkzeug.test import Client

    from tb_paddle_profile.plugin import PaddleProfilePlugin
    from tb_paddle_profile.pipeline.loader import default_workers

    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as tmp:
        tmp = Path(tmp)
        if args.logdir:
            logdir = Path(args.logdir)
        elif args.synth_events:
            logdir = make_synth_run(tmp / "logdir", args.synth_events)
        else:
            logdir = make_run(tmp / "logdir")
        os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp / "cache")
        os.environ.pop("TB_PADDLE_PROFILE_SIDECAR", None)
        context = base_plugin.TBContext(logdir=str(logdir), flags=argparse.Namespace(reload_interval=0))

        started = time.perf_counter()
        cold = PaddleProfilePlugin(context)
        cold.discovery.wait_first_scan(None)
        cold.loader.wait_idle()
        cold_s = time.perf_counter() - started
        files = cold.discovery.snapshot().files
        states = cold.loader.counts()
        cold.close()

        started = time.perf_counter()
        warm = PaddleProfilePlugin(context)
        warm.discovery.wait_first_scan(None)
        warm.loader.wait_idle()
        warm_scan_s = time.perf_counter() - started
        client = Client(application.TensorBoardWSGI([warm]))
        run = warm.discovery.snapshot().runs
        first_run = next(iter(run))
        worker = next(iter(run[first_run]))
        span = next(iter(run[first_run][worker]))
        base = "/data/plugin/paddle_profile"
        routes = {
            "run list (protobuf)": f"{base}/runs",
            "summary, one rank (protobuf)": f"{base}/summary?run={first_run}&worker={worker}&span={span}",
            "summary, one rank (gzip)": (f"{base}/summary?run={first_run}&worker={worker}&span={span}", "gzip"),
            f"distributed, {len(run[first_run])} ranks": f"{base}/distributed?run={first_run}&span={span}",
        }
        rows = []
        for label, target in routes.items():
            url, enc = target if isinstance(target, tuple) else (target, "")
            headers = {"Accept-Encoding": enc} if enc else {}

            def once():
                r = client.get(url, headers=headers)
                assert r.status_code == 200, (url, r.status_code, r.get_data()[:200])
                return len(r.get_data())

            first_s, size = timed(once)
            times = [timed(once)[0] for _ in range(args.repeat)]
            rows.append((label, first_s, statistics.median(times), size))
        parsed_on_restart = warm.loader.stats["parsed"]
        warm.close()

    sizes = sum(f.size for f in files)
    print(
        f"logdir: {len(files)} trace files, {sizes / 1e6:.1f} MB; worker processes: {default_workers()}; "
        f"states after cold load: {states}\n"
    )
    print("| measure | first (ms) | median of repeats (ms) | bytes |")
    print("|---|---:|---:|---:|")
    print(f"| cold: start until all ranks READY | {cold_s * 1e3:.0f} | | |")
    print(f"| warm restart: first scan + cache lookup (parsed {parsed_on_restart}) | {warm_scan_s * 1e3:.0f} | | |")
    for label, first_s, median_s, size in rows:
        print(f"| warm: {label} | {first_s * 1e3:.1f} | {median_s * 1e3:.2f} | {size} |")


if __name__ == "__main__":
    main()
