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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_speed import run_child  # noqa: E402  (one measuring child for all benchmarks)

MODES = ("floor", "cold", "python-json")


def measure(mode: str, path: Path, repeat: int) -> dict:
    runs = [run_child(sys.executable, mode, path) for _ in range(repeat)]
    bad = [r for r in runs if "error" in r]
    if bad:
        raise SystemExit(f"{mode} on {path.name}: {bad[0]['error']}")
    return min(runs, key=lambda r: r["seconds"])


def default_traces() -> list[Path]:
    shared = ROOT.parent / "shared" / "traces"
    found = (
        sorted(shared.glob("*/*.paddle_trace.json"))[:2]
        + sorted((ROOT / "examples" / "profiler_log").rglob("*.paddle_trace.json"))[:1]
    )
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    args = ap.parse_args()
    traces = args.traces or default_traces()
    lines = [
        "| trace | size (MB) | floor (s) | cold (s) | json.loads (s) | cold / floor | peak RSS cold (MB) "
        "| peak RSS / size |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for path in traces:
        size = path.stat().st_size
        r = {m: measure(m, path, args.repeat) for m in MODES}
        rss = r["cold"]["maxrss_kb"] * 1024
        lines.append(
            f"| {path.name} | {size / 1e6:.1f} | {r['floor']['seconds']:.3f} | {r['cold']['seconds']:.3f} "
            f"| {r['python-json']['seconds']:.3f} | {r['cold']['seconds'] / r['floor']['seconds']:.2f} "
            f"| {rss / 1e6:.0f} | {rss / size:.2f} |"
        )
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print()
    print(table)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(table + "\n")


if __name__ == "__main__":
    main()
