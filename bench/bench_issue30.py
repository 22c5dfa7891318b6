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
latency (launch_latency), host stalls (host_stalls), the rank's row across ranks (comm_rank), FLOPs (flops) and
sequences (sequences) by
functions that do nothing before it summarizes; nothing in the package reads a switch. Issue 30's
condition: on / off <= 1.10. Timings are not asserted anywhere; read the output
(docs/benchmarks.md, "The issue-30 analyses on a cold summary").

    python bench/bench_issue30.py --crossrank 128,1024 [--repeat 5] [--inner 3] [--work DIR]

The cross-rank mode: the cross-rank (parallel) analysis, analyze_run, of bench_crossrank.py's runs of N
ranks (MP2 x PP4 x DP N/8, 4 layers, 4 micro-batches, 3 steps) generated with record_shapes (digests kept
under --work), in fresh child processes, the issue-30 cross-rank parts on and off, interleaved. Each child
decodes the digests from their file, runs the analysis once (the first run: imports and caches warm) and
then --inner times; its figures are the median of those, wall-clock and CPU time (the process's: on a
shared machine the wall-clock time of the same work spreads with the load, its CPU time much less). Off: the child replaces, in their modules,
sequences.rank_flops (FLOPs per rank and stage), sequences.fill (tokens per replica, the imbalance's cost
and finding), sequences.stage_flops_text (the stage-imbalance finding in FLOPs), comm_ranks.fill
(communication, launches and host stalls of every rank side by side) and layers.fill (the time per layer
across ranks) by functions that do nothing, and decodes a copy of the digests without the issue-30 fields
(flops, sequences, comm: what the digest keeps for them). Printed per N: medians and best of the analysis
on and off and their ratio, the decode of the digests on and off, and the issue-30 parts' own time inside
the on runs. Issue 30's condition: the cross-rank analysis no slower.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
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
for _name in ("bandwidth_view", "overlap_view", "launch_view", "host_stall_view", "rank_view", "flops_view",
              "sequence_view", "ShapedCalls"):
    setattr(_s, _name, lambda *a: None)
"""

# Prepended when they are on: each one's time inside the cold summary, written at exit to the file
# $BENCH30_TIMES (the share of the cold summary they take, free of the machine's noise between runs).
# A wrapper adding each call's time to _t[name] (both modes' "on" children).
TIMER = r"""
import time
_t = {}
def _timed(name, f):
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            _t[name] = _t.get(name, 0.0) + time.perf_counter() - t
    return g
"""
TIMED = (
    TIMER
    + r"""
import atexit, json, os
from tb_paddle_profile.analysis import summarize as _s
for _name in ("comm_instances", "bandwidth_view", "overlap_view", "launch_view", "host_stall_view", "rank_view",
              "flops_view", "sequence_view", "ShapedCalls"):
    setattr(_s, _name, _timed(_name, getattr(_s, _name)))
atexit.register(lambda: open(os.environ["BENCH30_TIMES"], "w").write(json.dumps(_t)))
"""
)


# The cross-rank child: argv[1] "on"/"off", argv[2] the digests' file; prints one JSON line.
CROSS_CHILD = (
    TIMER
    + r"""
import json, os, statistics, sys
label, path = sys.argv[1], sys.argv[2]
from tb_paddle_profile.analysis.crossrank import analyze_run, comm_ranks, layers, sequences
from tb_paddle_profile.v1 import summary_pb2 as pb
PARTS = ((sequences, "rank_flops", None), (sequences, "fill", None), (sequences, "stage_flops_text", ""),
         (comm_ranks, "fill", None), (layers, "fill", None))
for mod, name, off in PARTS:   # findings.py and build.py call them through their modules
    key = mod.__name__.rsplit(".", 1)[1] + "." + name
    setattr(mod, name, _timed(key, getattr(mod, name)) if label == "on" else (lambda *a, _v=off, **k: _v))
data = open(path, "rb").read()
t0 = time.perf_counter()
ds, pos = [], 0
while pos < len(data):
    n = int.from_bytes(data[pos:pos + 8], "little")
    ds.append(pb.RankDigest.FromString(data[pos + 8:pos + 8 + n]))
    pos += 8 + n
decode = time.perf_counter() - t0
t0 = time.perf_counter()
rp = analyze_run(ds)
first = time.perf_counter() - t0
_t.clear()
runs, cpu = [], []
for _ in range(int(os.environ.get("BENCH30_INNER", "3"))):
    t0, c0 = time.perf_counter(), time.process_time()
    analyze_run(ds)
    runs.append(time.perf_counter() - t0)
    cpu.append(time.process_time() - c0)
inside = sum(_t.values()) / len(runs)
print(json.dumps(dict(seconds=statistics.median(runs), best=min(runs), first=first, decode=decode, inside=inside,
                      cpu=statistics.median(cpu), cpu_best=min(cpu),
                      parts={k: v / len(runs) for k, v in _t.items()}, ranks=len(ds), layers=len(rp.layers.layers))))
"""
)


def _stripped(path: Path) -> Path:
    """A copy of the digests' file without the issue-30 fields (written once)."""
    from tb_paddle_profile.v1 import summary_pb2 as pb

    out = path.with_name(path.stem + "-no30.pb")
    if out.exists():
        return out
    data, pos = path.read_bytes(), 0
    with open(str(out) + ".tmp", "wb") as f:
        while pos < len(data):
            n = int.from_bytes(data[pos : pos + 8], "little")
            d = pb.RankDigest.FromString(data[pos + 8 : pos + 8 + n])
            pos += 8 + n
            for field in ("flops", "sequences", "comm"):
                d.ClearField(field)
            b = d.SerializeToString()
            f.write(len(b).to_bytes(8, "little") + b)
    Path(str(out) + ".tmp").replace(out)
    return out


def crossrank(args) -> None:
    from bench_crossrank import digests_for

    rows = []
    for n in [int(x) for x in args.crossrank.split(",")]:
        digests_for(n, str(args.work), 2, record_shapes=True)  # generated and parsed once, kept under --work
        full = args.work / f"digests{n}-shapes.pb"
        files = {"on": full, "off": _stripped(full)}
        res: dict = {"on": [], "off": []}
        for i in range(args.repeat):
            pair = ("on", "off") if i % 2 == 0 else ("off", "on")
            for label in pair:
                r = run_child(
                    sys.executable, label, files[label], env={"BENCH30_INNER": str(args.inner)}, code=CROSS_CHILD
                )
                if "error" in r:
                    raise SystemExit(f"{n} ranks, {label}: {r['error']}")
                res[label].append(r)
                extra = ""
                if label == "on":
                    extra = (
                        f"; the issue-30 parts {r['inside'] * 1e3:.1f} ms of it ("
                        + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in sorted(r["parts"].items(), key=lambda kv: -kv[1]))
                        + " ms)"
                    )
                print(
                    f"  {n} ranks, run {i + 1} {label}: analysis {r['seconds']:.3f} s (best {r['best']:.3f}, "
                    f"CPU {r['cpu']:.3f}, "
                    f"first {r['first']:.3f}), decode {r['decode']:.3f} s, {r['layers']} layer rows{extra}",
                    flush=True,
                )
        rows.append((n, res))
    print(
        "| ranks | analysis on s (median) | off s | on / off (medians) | on / off (best) | CPU on / off s (medians) "
        "| CPU on / off (medians) | CPU on / off (best) | decode on / off s "
        "| the issue-30 parts inside the on runs (median) |\n|---|---|---|---|---|---|---|---|---|---|"
    )
    for n, res in rows:

        def med(label, key):
            return statistics.median(r[key] for r in res[label])

        best = min(r["best"] for r in res["on"]) / min(r["best"] for r in res["off"])
        share = statistics.median(r["inside"] / r["seconds"] for r in res["on"])
        print(
            f"| {n} | {med('on', 'seconds'):.3f} | {med('off', 'seconds'):.3f} "
            f"| **{med('on', 'seconds') / med('off', 'seconds'):.3f}** | {best:.3f} "
            f"| {med('on', 'cpu'):.3f} / {med('off', 'cpu'):.3f} | **{med('on', 'cpu') / med('off', 'cpu'):.3f}** "
            f"| {min(r['cpu_best'] for r in res['on']) / min(r['cpu_best'] for r in res['off']):.3f} "
            f"| {med('on', 'decode'):.3f} / {med('off', 'decode'):.3f} "
            f"| {med('on', 'inside') * 1e3:.1f} ms ({share:.1%}) |"
        )
    print(
        f"{platform.machine()}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f"; {args.repeat} children each, taken in turn, each the median of {args.inner} runs after a first"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", nargs="?", type=Path)
    ap.add_argument("--events", type=int, default=1_000_000, help="events of the generated rank")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "tbpp-bench")
    ap.add_argument("--crossrank", metavar="RANKS", help="the cross-rank mode: rank counts, e.g. 128,1024")
    ap.add_argument("--inner", type=int, default=3, help="cross-rank mode: timed runs per child")
    args = ap.parse_args()
    if args.crossrank:
        crossrank(args)
        return
    path = args.trace
    if path is None:
        t0 = time.perf_counter()
        path = generate(
            args.work,
            f"issue30-{args.events}",
            [
                "--dp",
                "1",
                "--mp",
                "1",
                "--pp",
                "1",
                "--steps",
                "4",
                "--record-shapes",
                "--one-rank-comms",
                "--events-per-rank",
                str(args.events),
            ],
            3,
        )[0]
        print(f"trace: {path} ({time.perf_counter() - t0:.0f} s to generate or find)", flush=True)
    on, off, inside = [], [], []
    times_file = args.work / "issue30-times.json"
    env = {"BENCH30_TIMES": str(times_file)}
    for i in range(args.repeat):  # interleaved, so that a slower moment of the machine hits both; the
        pair = (("on", on, TIMED + CHILD), ("off", off, OFF + CHILD))  # order alternates, so neither is always first
        for label, runs, code in pair if i % 2 == 0 else pair[::-1]:
            r = run_child(sys.executable, "cold", path, env=env, code=code)
            if "error" in r:
                raise SystemExit(f"{label}: {r['error']}")
            runs.append(r)
            extra = ""
            if label == "on":
                parts = json.loads(times_file.read_text())
                inside.append(sum(parts.values()))
                extra = (
                    f"; the issue-30 analyses {inside[-1]:.3f} s of it ("
                    + ", ".join(f"{k} {v * 1e3:.0f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
                    + " ms)"
                )
            print(
                f"  run {i + 1} {label}: {r['seconds']:.3f} s, {r['cpu_s']:.3f} s CPU, "
                f"{r['maxrss_kb'] / 1024:.0f} MB peak RSS{extra}",
                flush=True,
            )
    m_on, m_off = median_run(on), median_run(off)
    share = sorted(x / r["seconds"] for x, r in zip(inside, on))[(len(on) - 1) // 2]
    best = min(r["seconds"] for r in on) / min(r["seconds"] for r in off)
    size = path.stat().st_size / 1e6
    print(
        f"| trace | MB | events | cold, issue-30 analyses on s | off s | on / off (medians) | on / off (best) "
        f"| CPU on / off s | their share of the on runs (median) | peak RSS on / off MB |\n"
        f"|---|---|---|---|---|---|---|---|---|---|\n"
        f"| {path.name} | {size:.0f} | {args.events if args.trace is None else '?'} | {m_on['seconds']:.3f} "
        f"| {m_off['seconds']:.3f} | **{m_on['seconds'] / m_off['seconds']:.3f}** | {best:.3f} "
        f"| {m_on['cpu_s']:.3f} / {m_off['cpu_s']:.3f} | {share:.1%} "
        f"| {m_on['maxrss_kb'] / 1024:.0f} / {m_off['maxrss_kb'] / 1024:.0f} |"
    )
    print(
        f"{platform.machine()}, Python {platform.python_version()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
        f"; median of {args.repeat} runs each, taken in turn"
    )


if __name__ == "__main__":
    main()
