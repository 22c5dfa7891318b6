"""Cost of the critical path and the what-if replays (analysis/crossrank/replay.py, critical_path.py, whatif.py) from
digests, by rank count.

    python bench/bench_whatif.py [--ranks 128,1024] [--work /tmp/bench_whatif] [--repeat 1]

The runs are bench_crossrank.py's (MP2 x PP4 x DP N/8 on hosts of 8 GPUs, skewed clocks, Paddle's default
worker names, 4 layers, 4 micro-batches, 3 steps), generated and parsed once under --work. Timed, in one
process: ``prepare`` (load, match, clocks, topology: what the parallel analysis does too), the graph
(``Graph``: columns and the levels), the critical path (one replay and the path of every step) and the
five what-ifs (four replays and the bubble model); best of --repeat.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_crossrank import digests_for  # noqa: E402
from tb_paddle_profile.analysis.crossrank import critical_path as C  # noqa: E402
from tb_paddle_profile.analysis.crossrank import replay as R  # noqa: E402
from tb_paddle_profile.analysis.crossrank import whatif as W  # noqa: E402
from tb_paddle_profile.v1 import whatif_pb2 as wpb  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="128,1024")
    ap.add_argument("--work", default="/tmp/bench_whatif")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    print(
        "| ranks | nodes | nodes per rank and step | levels | prepare | graph | critical path | what-ifs | "
        "replay error |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in [int(x) for x in a.ranks.split(",")]:
        ds = digests_for(n, a.work, a.jobs)
        best = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            prep = R.prepare(ds)
            t1 = time.perf_counter()
            g = R.Graph(prep)
            t2 = time.perf_counter()
            cp = wpb.CriticalPath()
            s, e = C.critical_path(g, cp)
            t3 = time.perf_counter()
            W.what_ifs(g, g.job_step(s, e), s, e)
            t4 = time.perf_counter()
            row = (t1 - t0, t2 - t1, t3 - t2, t4 - t3)
            best = row if best is None or sum(row) < sum(best) else best
        steps = max(1, len(cp.steps))
        print(
            f"| {n:,} | {g.n:,} | {g.n / n / steps:.0f} | {g.n_levels:,} | {best[0]:.2f} s | {best[1]:.2f} s | "
            f"{best[2]:.2f} s | {best[3]:.2f} s | {cp.replay_error:.2e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
