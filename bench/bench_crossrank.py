"""Cost of the cross-rank analysis (analysis/crossrank.analyze_run) from digests, by rank count.

    python bench/bench_crossrank.py [--ranks 8,128,1024,4096] [--work /tmp/bench_crossrank] [--repeat 3]

For each rank count N it generates (once; kept under --work) a GPT run of N ranks, MP2 x PP4 x
DP N/8 on hosts of 8 GPUs with skewed clocks and Paddle's default worker names (the same small
program per rank at every N: 4 layers, 4 micro-batches, 3 steps), parses each trace once
(engine.summarize_file) and keeps its RankDigest. Then it times analyze_run over the loaded digests
(best of --repeat, one process, one core) and prints a table: instances, time, per-rank cost and the
growth of the per-rank cost against the smallest N. Issue 12's targets: <= 1 s at 1,024 ranks,
<= 5 s at 4,096, per-rank cost constant within 25 % from 128 to 4,096 ranks.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tb_paddle_profile.analysis.crossrank import analyze_run  # noqa: E402
from tb_paddle_profile.analysis.digest import digest_of  # noqa: E402
from tb_paddle_profile.v1 import summary_pb2 as pb  # noqa: E402


def digests_for(n: int, work: str, jobs: int, record_shapes: bool = False):
    """The digests of the run of n ranks (record_shapes: the forward operators' input shapes written,
    the issue-30 analyses given work; kept apart from the run without)."""
    tag = "-shapes" if record_shapes else ""
    out = os.path.join(work, f"run{n}{tag}")
    cache = os.path.join(work, f"digests{n}{tag}.pb")
    if os.path.exists(cache):
        data = open(cache, "rb").read()
        ds, pos = [], 0
        while pos < len(data):
            size = int.from_bytes(data[pos : pos + 8], "little")
            ds.append(pb.RankDigest.FromString(data[pos + 8 : pos + 8 + size]))
            pos += 8 + size
        return ds
    from tb_paddle_profile.analysis.summarize import summarize_file
    from tbp_synth import SynthConfig, generate

    mp, pp = (2, 4) if n >= 8 else (1, 1)
    cfg = SynthConfig(
        dp=max(1, n // (mp * pp)),
        mp=mp,
        pp=pp,
        layers=4,
        micro_batches=4,
        steps=3,
        names="default",
        clock_skew_us=3000,
        gpus_per_node=8,
        record_shapes=record_shapes,
    )
    t0 = time.perf_counter()
    res = generate(cfg, out, jobs=jobs)
    t1 = time.perf_counter()
    ds = []
    with open(cache + ".tmp", "wb") as f:
        for _, path in sorted(res.traces.items()):
            d = digest_of(summarize_file(path))
            b = d.SerializeToString()
            f.write(len(b).to_bytes(8, "little") + b)
            ds.append(d)
            os.remove(path)  # the digests are what the bench needs; keep the disk free
    os.replace(cache + ".tmp", cache)
    print(f"  generated {n} ranks in {t1 - t0:.0f} s, parsed in {time.perf_counter() - t1:.0f} s", file=sys.stderr)
    return ds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="8,128,1024,4096")
    ap.add_argument("--work", default="/tmp/bench_crossrank")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2, help="processes for generating the traces")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rows = []
    for n in [int(x) for x in a.ranks.split(",")]:
        ds = digests_for(n, a.work, a.jobs)
        best = None
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            rp = analyze_run(ds)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        inst = sum(len(d.parallel.collectives.kind) for d in ds)
        rows.append((n, inst, rp.matching.matched_instances, best, rp.straggler.found, rp.topology.complete))
    base = None
    print(f"{'ranks':>6} {'instances':>10} {'matched':>9} {'time s':>8} {'ms/rank':>8} {'growth':>7}  topology")
    for n, inst, matched, dt, found, complete in rows:
        per = dt / n * 1000
        if base is None and n >= 128:
            base = per
        growth = f"{per / base:.2f}" if base else "-"
        print(
            f"{n:>6} {inst:>10} {matched:>9} {dt:>8.3f} {per:>8.3f} {growth:>7}  "
            f"{'complete' if complete else 'incomplete'}"
        )


if __name__ == "__main__":
    main()
