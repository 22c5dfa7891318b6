#!/usr/bin/env python3
"""The cost of the issue-30 analyses on the cold summary of a large trace, measured side by side.

    python bench/bench_issue30.py [--events 1000000] [--repeat 3] [--work DIR] [TRACE]

Generates (once, under --work) a GPU-shaped single-rank GPT trace with `python -m tbp_synth`
(--record-shapes and --one-rank-comms, so that every issue-30 analysis has work: input shapes,
MP and DP all-reduce kernels on their own streams), unless a TRACE is given. Then the cold summary
(read, tables, tree, every view, the serialized Summary: bench_speed.py's "cold" child) runs in
fresh child processes, the issue-30 analyses on and off, --repeat times each, interleaved (the
order alternating). Printed: the medians and their ratio, the best runs' ratio, and the time the
issue-30 analyses took inside each "on" run (their share of it: the part of the difference that
the noise of a shared machine does not blur). Off: the child replaces, in analysis/summarize.py,
the communicator rule (comm_axes), bandwidth (comm_bandwidth), overlap (comm_overlap), launch
latency (launch_latency), host stalls (host_stalls), FLOPs (flops) and sequences (sequences) by
functions that do nothing before it summarizes; nothing in the package reads a switch. Issue 30's
condition: on / off <= 1.10. Timings are not asserted anywhere; read the output
(docs/benchmarks.md, "The issue-30 analyses on a cold summary").
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_speed import CHILD, generate, median_run, run_child  # noqa: E402

# Prepended to the cold child when the analyses are off: summarize_profile reads these names from
# its module, so replacing them there leaves every other view as it is.
OFF = r"""
from tb_paddle_profile.analysis import summarize as _s
_s.comm_instances = lambda *a: (None, None)
for _name in ("bandwidth_view", "overlap_view", "launch_view", "host_stall_view", "flops_view", "sequence_view",
              "ShapedCalls"):
    setattr(_s, _name, lambda *a: None)
"""

# Prepended when they are on: each one's time inside the cold summary, written at exit to the file
# $BENCH30_TIMES (the share of the cold summary they take, free of the machine's noise between runs).
TIMED = r"""
import atexit, json, os, time
from tb_paddle_profile.analysis import summarize as _s
_t = {}
def _timed(name, f):
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            _t[name] = _t.get(name, 0.0) + time.perf_counter() - t
    return g
for _name in ("comm_instances", "bandwidth_view", "overlap_view", "launch_view", "host_stall_view", "flops_view",
              "sequence_view", "ShapedCalls"):
    setattr(_s, _name, _timed(_name, getattr(_s, _name)))
atexit.register(lambda: open(os.environ["BENCH30_TIMES"], "w").write(json.dumps(_t)))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path)
    ap.add_argument("--events", type=int, default=1_000_000, help="events of the generated rank")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tbpp-bench")
    args = ap.parse_args()
    path = args.trace
    if path is None:
        t0 = time.perf_counter()
        path = generate(args.work, f"issue30-{args.events}", [
            "--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--record-shapes", "--one-rank-comms",
            "--events-per-rank", str(args.events)], 3)[0]
        print(f"trace: {path} ({time.perf_counter() - t0:.0f} s to generate or find)", flush=True)
    on, off, inside = [], [], []
    times_file = args.work / "issue30-times.json"
    env = {"BENCH30_TIMES": str(times_file)}
    for i in range(args.repeat):   # interleaved, so that a slower moment of the machine hits both; the
        pair = (("on", on, TIMED + CHILD), ("off", off, OFF + CHILD))   # order alternates, so neither is always first
        for label, runs, code in (pair if i % 2 == 0 else pair[::-1]):
            r = run_child(sys.executable, "cold", path, env=env, code=code)
            if "error" in r:
                raise SystemExit(f"{label}: {r['error']}")
            runs.append(r)
            extra = ""
            if label == "on":
                parts = json.loads(times_file.read_text())
                inside.append(sum(parts.values()))
                extra = f"; the issue-30 analyses {inside[-1]:.3f} s of it (" + ", ".join(
                    f"{k} {v * 1e3:.0f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])) + " ms)"
            print(f"  run {i + 1} {label}: {r['seconds']:.3f} s, {r['cpu_s']:.3f} s CPU, "
                  f"{r['maxrss_kb'] / 1024:.0f} MB peak RSS{extra}", flush=True)
    m_on, m_off = median_run(on), median_run(off)
    share = sorted(x / r["seconds"] for x, r in zip(inside, on))[(len(on) - 1) // 2]
    best = min(r["seconds"] for r in on) / min(r["seconds"] for r in off)
    size = path.stat().st_size / 1e6
    print(f"| trace | MB | events | cold, issue-30 analyses on s | off s | on / off (medians) | on / off (best) "
          f"| CPU on / off s | their share of the on runs (median) | peak RSS on / off MB |\n"
          f"|---|---|---|---|---|---|---|---|---|---|\n"
          f"| {path.name} | {size:.0f} | {args.events if args.trace is None else '?'} | {m_on['seconds']:.3f} "
          f"| {m_off['seconds']:.3f} | **{m_on['seconds'] / m_off['seconds']:.3f}** | {best:.3f} "
          f"| {m_on['cpu_s']:.3f} / {m_off['cpu_s']:.3f} | {share:.1%} "
          f"| {m_on['maxrss_kb'] / 1024:.0f} / {m_off['maxrss_kb'] / 1024:.0f} |")
    print(f"{platform.machine()}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"; median of {args.repeat} runs each, taken in turn")


if __name__ == "__main__":
    main()
