"""The run views at 8, 128, 1,024 and 4,096 ranks: analysis, cached `parallel` answer, a matched page.

    python bench/bench_scale.py [--ranks 8,128,1024,4096] [--work /tmp/bench_crossrank] [--repeat 3]

Uses the digests bench/bench_crossrank.py keeps under --work (it generates and parses the runs the
first time: MP2 x PP4 x DP N/8 on hosts of 8 GPUs, skewed clocks, Paddle's default worker names, the
same small program per rank at every N). For each N, in this one process, one core:

* analysis: what the plugin and the CLI compute once per run and span and store (runs.analyze_split:
  the RunParallel without its matched instances, and those as columns, serialized as RunAnalyses
  stores them), best of --repeat, wall and CPU time;
* with matched: analyze_run, the RunParallel with every matched instance encoded in it (what tests
  and `--format json` get), best of --repeat;
* cached answer: what the `parallel` route does on a cache hit (runs.summary_first on the stored
  RunParallel, serialize, gzip), best of --repeat; its bytes raw and gzipped;
* a page: what `parallel_matched` does on a cache hit (runs.matched_page over the stored matched
  instances: decode them, select one rank's instances, encode 100), best of --repeat;
* the stored analysis in bytes (RunParallel + matched instances), and the digests' total bytes.

Prints a Markdown table with growth factors per rank against the smallest N. No timing is asserted
anywhere; read the table (docs/benchmarks.md keeps one run).
"""

from __future__ import annotations

import argparse
import gzip
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_crossrank import digests_for  # noqa: E402

from tb_paddle_profile.pipeline import runs  # noqa: E402
from tb_paddle_profile.analysis.crossrank import analyze_run  # noqa: E402
from tb_paddle_profile.v1 import plugin_pb2  # noqa: E402


def best(fn, repeat: int):
    """(best wall s, best CPU s, result) of repeat calls."""
    out, times, cpu = None, [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(times), min(cpu), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="8,128,1024,4096")
    ap.add_argument("--work", default="/tmp/bench_crossrank")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    rows = []
    for n in [int(x) for x in a.ranks.split(",")]:
        ds = digests_for(n, a.work, a.jobs)

        def stored_analysis():
            rp, table = runs.analyze_split(ds, "run", "0")
            return rp.SerializeToString(), table.to_bytes()

        t_an, c_an, (stored, matched) = best(stored_analysis, a.repeat)
        t_full, _, full = best(lambda: analyze_run(ds, "run", "0"), a.repeat)
        rp = plugin_pb2.RunParallel.FromString(stored)

        def answer():
            out = runs.summary_first(plugin_pb2.RunParallel.FromString(stored), in_place=True)
            raw = out.SerializeToString()
            return raw, gzip.compress(raw, 6)

        t_ans, _, (raw, gz) = best(answer, a.repeat)
        slow = max(rp.ranks, key=lambda r: r.caused_wait_ns).rank
        t_page, _, page = best(lambda: runs.matched_page(matched, slow, None, 0, 100), a.repeat)
        assert len(page.matched) == min(100, page.total) and full.matched_total == rp.matched_total
        rows.append(
            (
                n,
                sum(d.ByteSize() for d in ds),
                t_an,
                c_an,
                t_full,
                len(stored) + len(matched),
                t_ans,
                len(raw),
                len(gz),
                rp.matched_total,
                t_page,
            )
        )
        print(
            f"  {n} ranks: analysis {t_an:.3f} s (cpu {c_an:.3f}), with matched {t_full:.3f} s, answer "
            f"{t_ans * 1000:.0f} ms, page {t_page * 1000:.1f} ms, {len(gz) / 1e6:.2f} MB gz",
            file=sys.stderr,
        )
    base = rows[0]
    print(
        "| ranks | digests MB | analysis s | CPU s | per rank ms | growth | with matched s | stored MB | matched "
        "| cached answer ms | answer MB | gzipped MB | per rank KB gz | page ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, dbytes, t_an, c_an, t_full, stored, t_ans, raw, gz, matched, t_page in rows:
        per = t_an / n * 1000
        growth = per / (base[2] / base[0] * 1000)
        print(
            f"| {n:,} | {dbytes / 1e6:.1f} | {t_an:.3f} | {c_an:.3f} | {per:.2f} | {growth:.2f}× | {t_full:.3f} "
            f"| {stored / 1e6:.1f} | {matched:,} | {t_ans * 1000:.0f} | {raw / 1e6:.2f} | {gz / 1e6:.2f} "
            f"| {gz / n / 1e3:.2f} | {t_page * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
