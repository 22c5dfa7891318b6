"""python -m tbp_sim2 --out DIR --dp 4 --pp 4 --mp 4 --hosts 8 --slow-gpu RANK:10 --loader RANK:3ms ...

Simulates one GPT hybrid-parallel job and writes its Paddle traces and sim2_truth.json into DIR
(earlier traces in DIR are removed). docs/sim2.md says what is modelled."""

from __future__ import annotations

import argparse
import sys

from .config import SimConfig, parse_anomaly
from .generate import generate


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m tbp_sim2", description=__doc__.split("\n\n")[1])
    ap.add_argument("--out", required=True)
    d = SimConfig()
    for name, help_ in (
        ("dp", "data-parallel degree"),
        ("pp", "pipeline stages"),
        ("mp", "tensor-parallel degree"),
        ("sharding", "sharding degree (ZeRO stage 1: reduce-scatter, all-gather)"),
        ("steps", "recorded steps"),
        ("warmup", "steps simulated before the recorded ones"),
        ("micro-batches", "micro-batches per step"),
        ("layers", "decoder layers over all stages"),
        ("hidden", "hidden size"),
        ("seq", "sequence length"),
        ("dp-buckets", "DP all-reduce buckets"),
        ("seed", "random seed"),
    ):
        ap.add_argument("--" + name, type=int, default=getattr(d, name.replace("-", "_")), help=help_)
    ap.add_argument("--hosts", type=int, help="hosts (default ranks / 8)")
    ap.add_argument("--kernel-set", choices=("full", "lean"), default=d.kernel_set)
    ap.add_argument(
        "--p2p",
        choices=("shared", "per_peer", "per_direction"),
        default=d.p2p,
        help="send/recv streams: one shared in 1F1B order, one per neighbour, one per direction",
    )
    ap.add_argument(
        "--names",
        choices=("default", "rank"),
        default=d.names,
        help="worker names: Paddle's host_<host>pid_<pid> or rank<r>",
    )
    ap.add_argument("--shuffle-hosts", action="store_true", help="host names not in Fleet's host order")
    ap.add_argument("--one-rank-comms", action="store_true", help="a degree of 1 still launches NCCL kernels")
    ap.add_argument("--one-rank-axes", default=d.one_rank_axes, help="on these axes (mp,dp,ppg)")
    ap.add_argument("--dp-overlap", action="store_true", help="DP buckets launched during the last backward")
    ap.add_argument("--mp-on-compute-stream", action="store_true")
    ap.add_argument("--no-backward-events", action="store_true", help="no 'Gradient Backward' events (as Fleet PP)")
    for name in (
        "kernel-sigma",
        "gpu-sigma",
        "launch-us",
        "nvlink-gbps",
        "net-gbps",
        "end-spread-us",
        "loader-us",
        "clock-skew-ms",
        "drift-ppm",
    ):
        ap.add_argument("--" + name, type=float, default=getattr(d, name.replace("-", "_")))
    ap.add_argument("--host-offsets-ms", help="comma-separated offset per host (ms)")
    ap.add_argument(
        "--slow-gpu", action="append", default=[], metavar="RANK:PCT", help="that rank's compute kernels PCT %% longer"
    )
    ap.add_argument(
        "--loader",
        action="append",
        default=[],
        metavar="RANK:TIME",
        help="that stage-0 rank's data loader TIME longer each step (3ms, 500us)",
    )
    ap.add_argument(
        "--stall",
        action="append",
        default=[],
        metavar="RANK:TIME[@MB]",
        help="that rank's host stops TIME once a step, before micro-batch MB's forward (default 1)",
    )
    ap.add_argument("--no-costs", action="store_true", help="skip the runs without each anomaly")
    return ap


def config_from(a: argparse.Namespace) -> SimConfig:
    anomalies = tuple(
        [parse_anomaly("slow_gpu", x) for x in a.slow_gpu]
        + [parse_anomaly("loader", x) for x in a.loader]
        + [parse_anomaly("stall", x) for x in a.stall]
    )
    offsets = tuple(float(x) for x in a.host_offsets_ms.split(",")) if a.host_offsets_ms else None
    return SimConfig(
        dp=a.dp,
        pp=a.pp,
        mp=a.mp,
        sharding=a.sharding,
        hosts=a.hosts,
        steps=a.steps,
        warmup=a.warmup,
        micro_batches=a.micro_batches,
        layers=a.layers,
        kernel_set=a.kernel_set,
        hidden=a.hidden,
        seq=a.seq,
        dp_buckets=a.dp_buckets,
        dp_overlap=a.dp_overlap,
        p2p=a.p2p,
        mp_on_compute_stream=a.mp_on_compute_stream,
        one_rank_comms=a.one_rank_comms,
        one_rank_axes=a.one_rank_axes,
        backward_events=not a.no_backward_events,
        kernel_sigma=a.kernel_sigma,
        gpu_sigma=a.gpu_sigma,
        launch_us=a.launch_us,
        nvlink_gbps=a.nvlink_gbps,
        net_gbps=a.net_gbps,
        end_spread_us=a.end_spread_us,
        loader_us=a.loader_us,
        names=a.names,
        shuffle_hosts=a.shuffle_hosts,
        clock_skew_ms=a.clock_skew_ms,
        host_offsets_ms=offsets,
        drift_ppm=a.drift_ppm,
        seed=a.seed,
        anomalies=anomalies,
    )


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    try:
        cfg = config_from(a)
        cfg.check()
    except ValueError as e:
        print("tbp_sim2: %s" % e, file=sys.stderr)
        return 2
    data = generate(cfg, a.out, with_costs=not a.no_costs, log=lambda m: print(m, file=sys.stderr))
    print(
        "%d ranks (DP%d x PP%d x MP%d on %d hosts), step %.2f ms"
        % (cfg.world, cfg.dp, cfg.pp, cfg.mp, cfg.n_hosts, data["step_ns"] / 1e6)
    )
    if data.get("healthy_step_ns"):
        print("healthy step %.2f ms" % (data["healthy_step_ns"] / 1e6))
    for x in data["anomalies"]:
        if "cost_ns_per_step" in x:
            print(
                "%s: costs %.3f ms/step (alone %.3f)"
                % (x["label"], x["cost_ns_per_step"] / 1e6, x["alone_cost_ns_per_step"] / 1e6)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
