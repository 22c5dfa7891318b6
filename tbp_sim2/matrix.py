"""The cases of issue 24's table, simulated by tbp_sim2 (docs/sim2.md):

    python -m tbp_sim2.matrix --root DIR [CASE ...] [--list]

writes DIR/<case>/ (traces and sim2_truth.json) for each case not already there;
``python tools/sim2_check.py DIR/*`` then compares the tool with the truth."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from typing import Callable, Dict

from .config import Anomaly, SimConfig
from .generate import generate
from .truth import TRUTH_FILE

MB = 1_000_000


def _base(**kw) -> SimConfig:
    """DP4 x PP4 x MP4 on 8 hosts, 16 layers, 8 micro-batches, send/recv on one shared stream."""
    d = dict(dp=4, pp=4, mp=4, hosts=8, layers=16, micro_batches=8, steps=4)
    d.update(kw)
    return SimConfig(**d)


def _r(cfg: SimConfig, dp: int, pp: int, mp: int) -> int:
    return cfg.rank_of(dp, pp, mp)


def _sharded(kw: dict, anomaly) -> SimConfig:
    """A lean run of three steps with sharding; the anomaly's rank given as (dp, pp, sharding, mp)."""
    cfg = SimConfig(kernel_set="lean", steps=3, **kw)
    kind, (d, p, s, m), value = anomaly
    rank = ((d * cfg.pp + p) * cfg.sharding + s) * cfg.mp + m
    return dataclasses.replace(cfg, anomalies=(Anomaly(kind, rank, value),))


_B = _base()
CASES: Dict[str, Callable[[], SimConfig]] = {
    "dp4pp4mp4-healthy": lambda: _base(),
    "dp4pp4mp4-gpu10-last": lambda: _base(anomalies=(Anomaly("slow_gpu", _r(_B, 1, 3, 2), 10),)),
    "dp4pp4mp4-gpu10-stage1": lambda: _base(anomalies=(Anomaly("slow_gpu", _r(_B, 2, 1, 1), 10),)),
    "dp4pp4mp4-loader3ms": lambda: _base(anomalies=(Anomaly("loader", _r(_B, 2, 0, 3), 3 * MB),)),
    "dp32-gpu20": lambda: SimConfig(
        dp=32,
        pp=1,
        mp=1,
        hosts=4,
        layers=8,
        hidden=2048,
        micro_batches=4,
        steps=4,
        dp_overlap=True,
        dp_buckets=4,
        net_gbps=45.0,
        one_rank_comms=True,
        anomalies=(Anomaly("slow_gpu", 13, 20),),
    ),
    "dp2pp8-mb16": lambda: SimConfig(
        dp=2, pp=8, mp=1, hosts=2, layers=16, micro_batches=16, steps=4, one_rank_comms=True, p2p="per_peer"
    ),
    "dp8pp4mp4-gpu15": lambda: SimConfig(
        dp=8,
        pp=4,
        mp=4,
        hosts=16,
        layers=16,
        micro_batches=8,
        steps=4,
        p2p="per_direction",
        anomalies=(Anomaly("slow_gpu", (5 * 4 + 3) * 4 + 1, 15),),
    ),
    "rank-named-2hosts-gpu10": lambda: SimConfig(
        dp=2,
        pp=2,
        mp=2,
        hosts=2,
        layers=8,
        micro_batches=4,
        steps=4,
        names="rank",
        host_offsets_ms=(0.0, 1.73),
        anomalies=(Anomaly("slow_gpu", 5, 10),),
    ),
    "dp4pp4mp4-gpu5-last": lambda: _base(anomalies=(Anomaly("slow_gpu", _r(_B, 3, 3, 0), 5),)),
    "dp4pp4mp4-two": lambda: _base(
        anomalies=(Anomaly("slow_gpu", _r(_B, 0, 3, 1), 10), Anomaly("loader", _r(_B, 0, 0, 2), 3 * MB))
    ),
    "dp4pp4mp4-stall5ms": lambda: _base(anomalies=(Anomaly("stall", _r(_B, 1, 0, 0), 5 * MB, 0),)),
    "dp16pp8mp8-loader6ms": lambda: SimConfig(
        dp=16,
        pp=8,
        mp=8,
        layers=8,
        micro_batches=8,
        steps=4,
        kernel_set="lean",
        anomalies=(Anomaly("loader", (3 * 8 + 0) * 8 + 5, 6 * MB),),
    ),
}
BIG = {"dp16pp8mp8-loader6ms"}

# Variations of the model beyond issue 24's table (not generated unless named)
VARIANTS: Dict[str, Callable[[], SimConfig]] = {
    # kernels waiting for another stream start the moment it ends (no event latency)
    "v-nogap-gpu10-last": lambda: dataclasses.replace(CASES["dp4pp4mp4-gpu10-last"](), event_gap_us=(0.0, 0.0)),
    "v-gap0.1-gpu10-last": lambda: dataclasses.replace(CASES["dp4pp4mp4-gpu10-last"](), event_gap_us=(0.05, 0.2)),
    "v-gap0.5-gpu10-last": lambda: dataclasses.replace(CASES["dp4pp4mp4-gpu10-last"](), event_gap_us=(0.3, 0.7)),
    "v-spread5-gpu10-last": lambda: dataclasses.replace(CASES["dp4pp4mp4-gpu10-last"](), end_spread_us=5.0),
    "v-spread0.5-loader3ms": lambda: dataclasses.replace(CASES["dp4pp4mp4-loader3ms"](), end_spread_us=0.5),
    "v-drift10-loader3ms": lambda: dataclasses.replace(CASES["dp4pp4mp4-loader3ms"](), drift_ppm=10.0),
    # closer to Fleet: shuffled host names, no Backward events, MP on the compute stream, a stream per
    # neighbour, DP buckets in the last backward
    "v-fleetlike-gpu10-last": lambda: dataclasses.replace(
        CASES["dp4pp4mp4-gpu10-last"](),
        shuffle_hosts=True,
        backward_events=False,
        mp_on_compute_stream=True,
        p2p="per_peer",
        dp_overlap=True,
    ),
    "v-stall3ms-stage1": lambda: _base(anomalies=(Anomaly("stall", _r(_B, 2, 1, 1), 3 * MB, 2),)),
    "v-stall5ms-last": lambda: _base(anomalies=(Anomaly("stall", _r(_B, 2, 3, 1), 5 * MB, 0),)),
    # DP32 with one-rank MP communicators only (no one-rank pipeline group)
    "v-dp32-gpu20-mponly": lambda: dataclasses.replace(CASES["dp32-gpu20"](), one_rank_axes="mp"),
    "v-dp8pp2mp8-gpu10-first": lambda: SimConfig(
        dp=8, pp=2, mp=8, layers=8, micro_batches=8, steps=4, anomalies=(Anomaly("slow_gpu", (3 * 2 + 0) * 8 + 4, 10),)
    ),
    "v-drift2-loader3ms": lambda: dataclasses.replace(CASES["dp4pp4mp4-loader3ms"](), drift_ppm=2.0),
    "v-skew50ms-gpu10-last": lambda: dataclasses.replace(CASES["dp4pp4mp4-gpu10-last"](), clock_skew_ms=50.0),
    "v-rank-named-8hosts-loader3ms": lambda: dataclasses.replace(CASES["dp4pp4mp4-loader3ms"](), names="rank"),
    "v-gpu10-first": lambda: _base(anomalies=(Anomaly("slow_gpu", _r(_B, 1, 0, 2), 10),)),
    "v-two-gpus-last": lambda: _base(
        anomalies=(Anomaly("slow_gpu", _r(_B, 0, 3, 1), 15), Anomaly("slow_gpu", _r(_B, 2, 3, 3), 10))
    ),
    # pure data parallelism over 8 hosts, no one-rank communicators: the world's all-reduces were split
    # by host (the analysis' spreads summed unix nanoseconds in float64)
    "v-dp64-8hosts-gpu15": lambda: SimConfig(
        dp=64, pp=1, mp=1, layers=4, micro_batches=2, kernel_set="lean", anomalies=(Anomaly("slow_gpu", 37, 15),)
    ),
    # the other layouts: more hosts, rank-named files on 8 hosts, shuffled hosts with a stall, a stream per
    # direction and members ending together
    "v-dp8pp8mp2-16hosts-exact-gpu10": lambda: SimConfig(
        dp=8,
        pp=8,
        mp=2,
        layers=16,
        micro_batches=8,
        end_spread_us=0.0,
        kernel_set="lean",
        anomalies=(Anomaly("slow_gpu", 95, 10),),
    ),
    "v-dp4pp2mp8-rank-named-loader3ms": lambda: SimConfig(
        dp=4,
        pp=2,
        mp=8,
        layers=8,
        micro_batches=4,
        names="rank",
        kernel_set="lean",
        anomalies=(Anomaly("loader", 16, 3 * MB),),
    ),
    "v-dp4pp8-32hosts-gpu10-first": lambda: SimConfig(
        dp=4,
        pp=8,
        mp=1,
        hosts=32,
        layers=16,
        micro_batches=16,
        kernel_set="lean",
        anomalies=(Anomaly("slow_gpu", 8, 10),),
    ),
    # 16 pipeline stages: the end noise was measured on three positions and taken for none (docs/sim2.md)
    "v-dp2pp16-mb32-gpu10-mid": lambda: SimConfig(
        dp=2,
        pp=16,
        mp=1,
        hosts=4,
        layers=16,
        micro_batches=32,
        kernel_set="lean",
        steps=3,
        anomalies=(Anomaly("slow_gpu", 9, 10),),
    ),
    "v-dp2pp16-mb8-gpu10-mid": lambda: dataclasses.replace(VARIANTS["v-dp2pp16-mb32-gpu10-mid"](), micro_batches=8),
    # rank-named on 16 hosts, members ending together: two hosts' clocks 1.4 us apart were grouped as one
    "v-dp8pp4mp4-rank-named-16hosts-exact-stall": lambda: SimConfig(
        dp=8,
        pp=4,
        mp=4,
        hosts=16,
        layers=8,
        micro_batches=8,
        names="rank",
        end_spread_us=0.0,
        kernel_set="lean",
        anomalies=(Anomaly("stall", 49, 4 * MB),),
    ),
    # a small model: the host's launches pace the GPU
    "v-hostbound-loader3ms": lambda: dataclasses.replace(
        CASES["dp4pp4mp4-loader3ms"](), hidden=1024, seq=512, vocab=8192
    ),
    # sharding (ZeRO stage 1, PaddleNLP's GPT-3 layouts): reduce-scatter and all-gather over the sharding group
    "v-pp4sh4mp4-gpu10-last": lambda: _sharded(
        dict(dp=1, pp=4, sharding=4, mp=4, hosts=8, layers=16, micro_batches=8), ("slow_gpu", (0, 3, 2, 1), 10)
    ),
    "v-dp2pp2sh4mp2-loader3ms": lambda: _sharded(
        dict(dp=2, pp=2, sharding=4, mp=2, hosts=4, layers=8, micro_batches=4), ("loader", (1, 0, 3, 1), 3 * MB)
    ),
    "v-sh8mp8-gpu15": lambda: _sharded(
        dict(dp=1, pp=1, sharding=8, mp=8, hosts=8, layers=4), ("slow_gpu", (0, 0, 5, 3), 15)
    ),
}
ALL = {**CASES, **VARIANTS}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tbp_sim2.matrix", description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("cases", nargs="*", help="default: every case but the 1,024-rank one")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--force", action="store_true", help="generate again even when present")
    a = ap.parse_args(argv)
    if a.list:
        for name, make in ALL.items():
            c = make()
            print(
                "%-28s DP%d x PP%d x MP%d%s, %d hosts, %s"
                % (
                    name,
                    c.dp,
                    c.pp,
                    c.mp,
                    " x sharding %d" % c.sharding if c.sharding > 1 else "",
                    c.n_hosts,
                    ", ".join(x.label() for x in c.anomalies) or "healthy",
                )
            )
        return 0
    names = a.cases or [n for n in CASES if n not in BIG]
    for name in names:
        if name not in ALL:
            print("unknown case %s" % name, file=sys.stderr)
            return 2
        out = os.path.join(a.root, name)
        if os.path.exists(os.path.join(out, TRUTH_FILE)) and not a.force:
            continue
        t = time.time()
        data = generate(ALL[name](), out, log=lambda m: print("  " + m, file=sys.stderr))
        print(
            "%s: %d ranks, step %.2f ms, %s (%.0f s)"
            % (
                name,
                len(data["ranks"]),
                data["step_ns"] / 1e6,
                json.dumps([(x["label"], round(x["cost_ns_per_step"] / 1e6, 3)) for x in data["anomalies"]]),
                time.time() - t,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
