"""`tb-paddle-profile parallel` from the cache against the analysis it prints, side by side (issue 28: the text and
the JSON within 1.5x the analysis time).

    python bench/bench_parallel_cli.py [--ranks 1024,4096] [--repeat 5] [--work /tmp/bench_server]

Uses the runs of bench/bench_server.py (generated and preprocessed under --work the first time: tbp_synth DP N/8 x
MP2 x PP4, 4 layers, 1 micro-batch, 2 steps). For each N, after one `parallel` that stores the analysis in the
cache, --repeat rounds, each in turn:

* analysis: `runs.analyze_split` of the run's digests (read from the cache once, before), in this process, wall
  and CPU (what `parallel` computes when the cache holds no analysis);
* text: `tb-paddle-profile parallel RUN --cache-dir CACHE` as a fresh process (interpreter, imports, the ranks'
  digests looked up in the cache, the stored analysis read back, the text printed to a file), wall; run with
  bytecode written, as an installed package is (PYTHONDONTWRITEBYTECODE left out);
* json: the same with `--format json` (every matched instance encoded, proto3 JSON), wall, and its size;
* with ``--base-python PY`` (the interpreter of another checkout's environment, whose editable install is that
  checkout's code): its text and json too, in the same rounds, so that two versions are compared side by side.

Prints min and median of each and the ratios text / analysis and json / analysis (medians, and min over min).
Timings are not asserted anywhere.
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
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import prepare  # noqa: E402

# as an installed package runs: its modules compiled once (.pyc), not at every start
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cli(run: Path, cache: Path, out: Path, *extra: str, python: str = sys.executable) -> float:
    t = time.perf_counter()
    with open(out, "wb") as f:
        subprocess.run(
            [
                python,
                "-m",
                "tb_paddle_profile",
                "parallel",
                str(run),
                "--cache-dir",
                str(cache),
                "--no-progress",
                *extra,
            ],
            check=True,
            stdout=f,
            cwd=str(Path(out).parent),
            env=ENV,
        )
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1024,4096")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default="/tmp/bench_server")
    ap.add_argument("--base-python", default="", help="another checkout's interpreter, timed in the same rounds")
    a = ap.parse_args()
    from tb_paddle_profile.pipeline import runs
    from tb_paddle_profile.pipeline.batch import LoadOptions, load_run

    rows = []
    for n in [int(x) for x in a.ranks.split(",")]:
        logdir, cache = prepare(Path(a.work), n)
        run = logdir / "run"
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            cli(run, cache, out)  # the analysis stored in the cache
            loaded = load_run(str(run), None, LoadOptions(cache_dir=str(cache)), analyze=False)
            digests, span = loaded.digests, loaded.span
            times: dict = {"analysis": [], "cpu": [], "text": [], "json": [], "base text": [], "base json": []}
            size = 0
            for _ in range(a.repeat):
                t, c = time.perf_counter(), time.process_time()
                runs.analyze_split(digests, ".", span)
                times["analysis"].append(time.perf_counter() - t)
                times["cpu"].append(time.process_time() - c)
                times["text"].append(cli(run, cache, out))
                times["json"].append(cli(run, cache, out, "--format", "json"))
                size = os.path.getsize(out)
                if a.base_python:
                    times["base text"].append(cli(run, cache, out, python=a.base_python))
                    times["base json"].append(cli(run, cache, out, "--format", "json", python=a.base_python))
        med = {k: statistics.median(v) for k, v in times.items() if v}
        best = {k: min(v) for k, v in times.items() if v}
        rows.append((n, best, med, size))
        print(
            f"  {n} ranks: analysis {med['analysis']:.2f} s, text {med['text']:.2f} s, json {med['json']:.2f} s "
            f"(medians)",
            file=sys.stderr,
            flush=True,
        )
    print(
        "| ranks | analysis s min / median (CPU median) | text s min / median | json s min / median | json MB "
        "| text / analysis (medians; mins) | json / analysis (medians; mins) |"
    )
    print("|---:|---|---|---|---:|---|---|")
    for n, best, med, size in rows:
        print(
            f"| {n:,} | {best['analysis']:.3f} / {med['analysis']:.3f} ({med['cpu']:.3f}) | {best['text']:.3f} / "
            f"{med['text']:.3f} | {best['json']:.3f} / {med['json']:.3f} | {size / 1e6:.1f} | "
            f"{med['text'] / med['analysis']:.2f}; {best['text'] / best['analysis']:.2f} | "
            f"{med['json'] / med['analysis']:.2f}; {best['json'] / best['analysis']:.2f} |"
        )
    if a.base_python:
        print(f"\nThe same rounds with {a.base_python}:\n")
        print(
            "| ranks | base text s min / median | base json s min / median | text / analysis (medians; mins) "
            "| json / analysis (medians; mins) |"
        )
        print("|---:|---|---|---|---|")
        for n, best, med, _ in rows:
            print(
                f"| {n:,} | {best['base text']:.3f} / {med['base text']:.3f} | {best['base json']:.3f} / "
                f"{med['base json']:.3f} | {med['base text'] / med['analysis']:.2f}; "
                f"{best['base text'] / best['analysis']:.2f} | {med['base json'] / med['analysis']:.2f}; "
                f"{best['base json'] / best['analysis']:.2f} |"
            )


if __name__ == "__main__":
    main()
