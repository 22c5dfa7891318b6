"""A simdjson-class scanner (pysimdjson) against our native scanner and the typed msgspec floor, on one trace (issue
28.5: adopt it only where it beats the native scanner, Paddle parity byte-identical).

    python bench/bench_simdjson.py [--events 200000] [--repeat 5] [--work /tmp/bench_speed]

Generates (once, under --work, as bench/bench_speed.py does) one GPU-shaped rank of --events events with
tbp_synth, then measures in fresh processes, in turn, --repeat times each (wall, the file read included):

* floor: msgspec's typed decode of the fields the engine reads (bench_speed's (a));
* scan: our native scanner over the events, fixed records out (bench_speed's (a'));
* simdjson parse: pysimdjson's parser over the bytes and the number of events (its lazy document: no field
  of an event read yet);
* simdjson fields: the same and every field the engine reads taken from each event (name, ph, cat, pid, tid, ts,
  dur and the args it keeps), into Python lists: what a reader on pysimdjson's Python API has to do before the
  columns (the native scanner does it in C);
* cold: our whole cold summary (bench_speed's (b1), one core).

Prints min and median per mode and the ratios to the native scanner. Timings are not asserted anywhere.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_speed import CHILD, ROOT, generate, run_child  # noqa: E402

SIMD_CHILD = r"""
import gc, json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
import simdjson
r = resource.getrusage(resource.RUSAGE_SELF)
CPU0 = r.ru_utime + r.ru_stime
t0 = time.perf_counter()
gc.disable()
with open(path, "rb") as f:
    data = f.read()
parser = simdjson.Parser()
doc = parser.parse(data)
events = doc["traceEvents"]
n = len(events)
if mode == "simdjson-fields":
    cols = {k: [] for k in ("name", "ph", "cat", "pid", "tid", "ts", "dur", "start_time", "corr")}
    for e in events:
        get = e.get
        for k in ("name", "ph", "cat", "pid", "tid", "ts", "dur"):
            cols[k].append(get(k))
        a = get("args")
        cols["start_time"].append(a.get("start_time") if a is not None else None)
        cols["corr"].append(a.get("correlation id") if a is not None else None)
    n = len(cols["name"])
t = time.perf_counter() - t0
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": t, "n": n, "cpu_s": me.ru_utime + me.ru_stime - CPU0}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work", default="/tmp/bench_speed")
    a = ap.parse_args()
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    name = f"{a.events // 1000}k"
    (path,) = generate(
        work, name, ["--dp", "1", "--mp", "1", "--pp", "1", "--steps", "4", "--events-per-rank", str(a.events)], 3
    )
    modes = ["floor", "scan", "simdjson-parse", "simdjson-fields", "cold"]
    times: dict = {m: [] for m in modes}
    for _ in range(a.repeat):
        for m in modes:
            if m.startswith("simdjson"):
                out = subprocess.run(
                    [sys.executable, "-c", SIMD_CHILD, m, str(path)],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                got = json.loads(out.stdout.strip().splitlines()[-1])
            else:
                got = run_child(sys.executable, m, path, code=CHILD)
                if "error" in got:
                    raise SystemExit(f"{m}: {got['error']}")
            times[m].append(got["seconds"])
    scan = statistics.median(times["scan"])
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB, {a.repeat} runs of each in turn")
    print("| mode | min s | median s | median / scan |\n|---|---:|---:|---:|")
    for m in modes:
        med = statistics.median(times[m])
        print(f"| {m} | {min(times[m]):.3f} | {med:.3f} | {med / scan:.2f} |")


if __name__ == "__main__":
    main()
