#!/usr/bin/env python3
"""Cold summary time and peak memory of the engine, beside the parse floor of the same bytes.

    python bench/bench_engine.py [TRACE ...] [--repeat 3] [--out bench/out/engine.md]

Each measurement runs in a fresh child process (so peak RSS is that job's alone) and the best
of --repeat runs is kept; all modes run on the same file in the same invocation:
- floor: read the file and decode it with msgspec into typed structs holding only the fields the
  engine needs, garbage collector off: the fastest plain decode of those bytes;
- cold: read, build the event tables and tree, compute every view, serialize the Summary protobuf;
- python-json: json.loads of the same bytes, for scale.
Prints a markdown table of times, peak RSS and the ratios cold/floor and peak RSS / file size.
With no TRACE, uses the shared traces and examples/profiler_log.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import gc, json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
from typing import List, Optional, Union
import msgspec
from tb_paddle_profile.engine import summarize_file  # imports are not part of any timing
if mode == "floor":
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
    t0 = time.perf_counter()
    gc.disable()
    with open(path, "rb") as f:
        data = f.read()
    n = len(msgspec.json.decode(data, type=T).traceEvents)
elif mode == "python-json":
    t0 = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    n = len(json.loads(data)["traceEvents"])
elif mode == "cold":
    t0 = time.perf_counter()
    n = len(summarize_file(path).SerializeToString())
t = time.perf_counter() - t0
print(json.dumps({"seconds": t, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "n": n}))
"""

MODES = ("floor", "cold", "python-json")


def measure(mode: str, path: Path, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], cwd=ROOT, capture_output=True,
                             text=True, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if best is None or r["seconds"] < best["seconds"]:
            best = r
    return best


def default_traces() -> list[Path]:
    shared = ROOT.parent / "shared" / "traces"
    found = sorted(shared.glob("*/*.paddle_trace.json"))[:2] + sorted((ROOT / "examples" / "profiler_log").rglob(
        "*.paddle_trace.json"))[:1]
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    args = ap.parse_args()
    traces = args.traces or default_traces()
    lines = ["| trace | size (MB) | floor (s) | cold (s) | json.loads (s) | cold / floor | peak RSS cold (MB) "
             "| peak RSS / size |", "|---|---|---|---|---|---|---|---|"]
    for path in traces:
        size = path.stat().st_size
        r = {m: measure(m, path, args.repeat) for m in MODES}
        rss = r["cold"]["maxrss_kb"] * 1024
        lines.append(f"| {path.name} | {size / 1e6:.1f} | {r['floor']['seconds']:.3f} | {r['cold']['seconds']:.3f} "
                     f"| {r['python-json']['seconds']:.3f} | {r['cold']['seconds'] / r['floor']['seconds']:.2f} "
                     f"| {rss / 1e6:.0f} | {rss / size:.2f} |")
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print()
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
