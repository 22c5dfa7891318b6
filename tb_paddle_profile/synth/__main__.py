"""``python -m tb_paddle_profile.synth``: write synthetic GPU traces of a GPT hybrid-parallel run."""

from __future__ import annotations

import argparse
import sys
import time

from .generator import MANIFEST_NAME, SynthConfig, generate


def _ranks(text: str):
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    d = SynthConfig()
    p = argparse.ArgumentParser(
        prog="python -m tb_paddle_profile.synth",
        description="Write Paddle-3.3.1-shaped GPU profiler traces of a simulated GPT "
                    "DP x MP x PP training run, one per rank, plus the planted ground truth.")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--dp", type=int, default=d.dp, help="data-parallel degree (default %(default)s)")
    p.add_argument("--mp", type=int, default=d.mp, help="tensor-parallel degree (default %(default)s)")
    p.add_argument("--pp", type=int, default=d.pp, help="pipeline degree (default %(default)s)")
    p.add_argument("--steps", type=int, default=d.steps, help="profiled steps (default %(default)s)")
    p.add_argument("--layers", type=int, default=d.layers,
                   help="decoder layers of the whole model (default %(default)s)")
    p.add_argument("--micro-batches", type=int, default=d.micro_batches,
                   help="micro-batches per step (default %(default)s)")
    p.add_argument("--events-per-rank", type=int, default=None,
                   help="aim for about this many trace events per rank (sets --layers)")
    p.add_argument("--slow-rank", type=int, default=None, help="rank whose compute is slowed")
    p.add_argument("--slow-factor", type=float, default=1.5,
                   help="compute-kernel slowdown of --slow-rank (default %(default)s)")
    p.add_argument("--slow-host-rank", type=int, default=None,
                   help="rank whose host stalls: its data loader takes --host-delay-us longer at "
                        "the start of every step, so its kernels (NCCL ones included) start late "
                        "while their durations stay normal, and its peers wait for it")
    p.add_argument("--host-delay-us", type=float, default=20_000.0,
                   help="extra data-loader stall per step of --slow-host-rank, in microseconds "
                        "(default %(default)s)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--first-step", type=int, default=d.first_step,
                   help="number of the first ProfileStep (default %(default)s)")
    p.add_argument("--hidden", type=int, default=d.hidden)
    p.add_argument("--heads", type=int, default=d.heads)
    p.add_argument("--seq-len", type=int, default=d.seq_len)
    p.add_argument("--layout", type=int, choices=(2, 3), default=3,
                   help="3: Paddle 3.3.1 writer (default); 2: the 2.x layout VisualDL 2.5.3 reads")
    p.add_argument("--tables", action="store_true",
                   help="also write Paddle's own summary tables beside each trace (needs paddle)")
    p.add_argument("--ranks", type=_ranks, default=None,
                   help="comma-separated ranks to write (all are simulated); default all")
    a = p.parse_args(argv)
    cfg = SynthConfig(dp=a.dp, mp=a.mp, pp=a.pp, steps=a.steps, layers=a.layers,
                      micro_batches=a.micro_batches, seed=a.seed, slow_rank=a.slow_rank,
                      slow_factor=a.slow_factor if a.slow_rank is not None else 1.0,
                      events_per_rank=a.events_per_rank, first_step=a.first_step,
                      hidden=a.hidden, heads=a.heads, seq_len=a.seq_len,
                      slow_host_rank=a.slow_host_rank,
                      host_delay_us=a.host_delay_us if a.slow_host_rank is not None else 0.0)
    t0 = time.perf_counter()
    try:
        res = generate(cfg, a.out, layout=a.layout, tables=a.tables, ranks=a.ranks,
                       log=lambda msg: print(msg, flush=True))
    except ValueError as e:
        p.error(str(e))
    c = res.config
    print("%d ranks (dp %d, mp %d, pp %d), %d layers, %d micro-batches, %d steps in %.1fs; "
          "ground truth in %s" % (c.dp * c.mp * c.pp, c.dp, c.mp, c.pp, c.layers,
                                  c.micro_batches, c.steps, time.perf_counter() - t0,
                                  MANIFEST_NAME))
    return 0


if __name__ == "__main__":
    sys.exit(main())
