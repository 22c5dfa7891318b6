"""``python -m tbp_synth``: write synthetic GPU traces of a GPT hybrid-parallel run."""

from __future__ import annotations

import argparse
import os
import sys
import time

from .generator import MANIFEST_NAME, SynthConfig, generate
from .truth import TRUTH_JSON, TRUTH_NPZ


def _ranks(text: str):
    return [int(x) for x in text.split(",") if x.strip()]


def _one_or_more(text: str):
    """``3`` -> 3, ``2,9`` -> (2, 9)."""
    ranks = _ranks(text)
    if not ranks:
        raise argparse.ArgumentTypeError("expected a rank or a comma-separated list of ranks")
    return ranks[0] if len(ranks) == 1 else tuple(ranks)


def main(argv=None) -> int:
    d = SynthConfig()
    p = argparse.ArgumentParser(
        prog="python -m tbp_synth",
        description="Write Paddle-3.3.1-shaped GPU profiler traces of a simulated GPT "
        "DP x MP x PP training run, one per rank, plus the planted ground truth.",
    )
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--dp", type=int, default=d.dp, help="data-parallel degree (default %(default)s)")
    p.add_argument("--mp", type=int, default=d.mp, help="tensor-parallel degree (default %(default)s)")
    p.add_argument("--pp", type=int, default=d.pp, help="pipeline degree (default %(default)s)")
    p.add_argument("--steps", type=int, default=d.steps, help="profiled steps (default %(default)s)")
    p.add_argument(
        "--layers", type=int, default=d.layers, help="decoder layers of the whole model (default %(default)s)"
    )
    p.add_argument(
        "--micro-batches", type=int, default=d.micro_batches, help="micro-batches per step (default %(default)s)"
    )
    p.add_argument(
        "--events-per-rank",
        type=int,
        default=None,
        help="aim for about this many trace events per rank (sets --layers)",
    )
    p.add_argument(
        "--slow-rank",
        type=_one_or_more,
        default=None,
        help="rank (or comma-separated ranks) whose compute kernels are slowed",
    )
    p.add_argument(
        "--slow-factor", type=float, default=1.5, help="compute-kernel slowdown of --slow-rank (default %(default)s)"
    )
    p.add_argument(
        "--slow-host-rank",
        type=_one_or_more,
        default=None,
        help="rank (or comma-separated ranks) whose host stalls: its data loader takes "
        "--host-delay-us longer at "
        "the start of every step, so its kernels (NCCL ones included) start late "
        "while their durations stay normal, and its peers wait for it",
    )
    p.add_argument(
        "--host-delay-us",
        type=float,
        default=20_000.0,
        help="extra data-loader stall per step of --slow-host-rank, in microseconds (default %(default)s)",
    )
    p.add_argument(
        "--control", action="store_true", help="a control run: no anomaly (ignores --slow-rank and --slow-host-rank)"
    )
    p.add_argument(
        "--stage-layers",
        type=_ranks,
        default=None,
        help="decoder layers of each pipeline stage, e.g. 5,3 (sets --layers)",
    )
    p.add_argument(
        "--comm-factor",
        default=None,
        metavar="AXIS=F[,AXIS=F...]",
        help="planted change: scale the transfer time of every collective of an axis "
        "(mp, dp, pp, pp_group) by F, e.g. dp=0 (the DP all-reduce costs nothing "
        "but the wait for its last member) or dp=2",
    )
    p.add_argument(
        "--slow-kernel",
        default=None,
        metavar="SUBSTRING=F[,SUBSTRING=F...]",
        help="planted change: compute kernels whose name contains SUBSTRING take F times longer on every rank",
    )
    p.add_argument(
        "--launch-overhead",
        type=float,
        default=d.launch_overhead,
        metavar="F",
        help="planted change: scale the host time from the host-to-device copies to "
        "loss.item() (operators, CUDA runtime calls, launch latencies, Python "
        "between operators) by F; 0 removes it (default %(default)s)",
    )
    p.add_argument(
        "--leak-bytes-per-step",
        type=int,
        default=d.leak_bytes_per_step,
        metavar="B",
        help="planted change: the GPU allocator keeps B more bytes alive every step",
    )
    p.add_argument(
        "--fragment-bytes-per-step",
        type=int,
        default=d.fragment_bytes_per_step,
        metavar="B",
        help="planted change: reserved minus allocated GPU memory grows by B every step",
    )
    p.add_argument(
        "--record-shapes",
        action="store_true",
        help="write the forward operators' input_shapes and input_dtypes (Paddle 3.3.1 writes them empty)",
    )
    p.add_argument(
        "--dp-seq-lens",
        type=_ranks,
        default=None,
        metavar="L,L,...",
        help="planted sequence imbalance: the sequence length of each data-parallel "
        "replica, one per dp index (default: --seq-len everywhere)",
    )
    p.add_argument(
        "--schedule",
        choices=("1f1b", "gpipe", "interleaved"),
        default=d.schedule,
        help="pipeline schedule (default %(default)s)",
    )
    p.add_argument(
        "--virtual-stages",
        type=int,
        default=d.virtual_stages,
        metavar="V",
        help="model chunks per stage of the interleaved schedule (default "
        "%(default)s; --schedule interleaved needs V >= 2)",
    )
    p.add_argument(
        "--gpus-per-node",
        type=int,
        default=None,
        help="GPUs per host: rank = host * this + local GPU (default %d)" % d.gpus_per_node,
    )
    p.add_argument(
        "--names",
        choices=("rank", "default"),
        default=None,
        help="worker names: rankN (default) or Paddle's default host_<hostname>pid_<pid>",
    )
    p.add_argument(
        "--clock-skew-us",
        type=float,
        default=None,
        help="each host but the first gets a fixed clock offset within +- this many "
        "microseconds (default %s)" % d.clock_skew_us,
    )
    p.add_argument(
        "--host-offsets-us",
        default=None,
        metavar="US,US,...",
        help="the clock offset of each host, in microseconds (instead of --clock-skew-us)",
    )
    p.add_argument(
        "--preset",
        choices=("plain", "realistic"),
        default="plain",
        help="realistic: every realism option below on (SynthConfig.realistic; "
        "options given here still win); plain (default): all off",
    )
    p.add_argument(
        "--kernel-jitter",
        choices=("uniform", "lognormal"),
        default=None,
        help="per-kernel duration noise: uniform +-3 %% (plain) or lognormal with --kernel-sigma",
    )
    p.add_argument(
        "--kernel-sigma",
        type=float,
        default=None,
        help="sigma of the lognormal kernel noise (default %s)" % d.kernel_sigma,
    )
    p.add_argument(
        "--gpu-speed-sigma",
        type=float,
        default=None,
        help="each GPU's own persistent speed factor, lognormal with this sigma (plain: 0; realistic: 0.003)",
    )
    p.add_argument(
        "--p2p-streams",
        choices=("per_direction", "shared", "per_peer"),
        default=None,
        help="send/recv streams: one per direction (plain), one shared stream in 1F1B order, or one per neighbour",
    )
    p.add_argument(
        "--one-rank-comms",
        action="store_true",
        default=None,
        help="mp = 1 or dp = 1 still launch their NCCL kernels on a one-rank communicator",
    )
    p.add_argument(
        "--pipeline-layers",
        action="store_true",
        default=None,
        help="Paddle's PipelineLayer: EmbeddingPipe on the first stage, HeadPipe on "
        "the last, the data read on the first stage only",
    )
    p.add_argument(
        "--host-names",
        choices=("ordered", "shuffled"),
        default=None,
        help="gpunode<N> in Fleet's host order (plain) or numbered in a seeded shuffled order",
    )
    p.add_argument(
        "--export-jitter-us",
        type=float,
        default=None,
        help="each rank exports its trace up to this many microseconds later than "
        "the others (the time in the file name; plain: 0, names in rank order)",
    )
    p.add_argument(
        "--comm-end-noise-us",
        type=float,
        default=None,
        help="each member's NCCL kernel ends N(0, this) microseconds off its "
        "collective's end (default 0: every member ends at the same moment)",
    )
    p.add_argument(
        "--case",
        default=None,
        metavar="NAME",
        help="a case of the truth matrix (tbp_synth.matrix.cases()); the other simulation options are ignored",
    )
    p.add_argument(
        "--no-pp-group-collectives",
        action="store_true",
        help="leave out the loss broadcasts and the gradient-clip all-reduce over each "
        "pipeline's stages (on by default when pp > 1, as in Paddle)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="processes writing traces (default: the CPU count, %(default)s)",
    )
    p.add_argument("--quiet", action="store_true", help="no line per rank")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--first-step", type=int, default=d.first_step, help="number of the first ProfileStep (default %(default)s)"
    )
    p.add_argument("--hidden", type=int, default=d.hidden)
    p.add_argument("--heads", type=int, default=d.heads)
    p.add_argument("--seq-len", type=int, default=d.seq_len)
    p.add_argument(
        "--layout",
        type=int,
        choices=(2, 3),
        default=3,
        help="3: Paddle 3.3.1 writer (default); 2: the 2.x layout VisualDL 2.5.3 reads",
    )
    p.add_argument(
        "--tables", action="store_true", help="also write Paddle's own summary tables beside each trace (needs paddle)"
    )
    p.add_argument(
        "--ranks", type=_ranks, default=None, help="comma-separated ranks to write (all are simulated); default all"
    )
    a = p.parse_args(argv)
    if a.control:
        a.slow_rank = a.slow_host_rank = None
    base = SynthConfig.realistic() if a.preset == "realistic" else d

    def pick(value, name):
        return getattr(base, name) if value is None else value

    offsets = None
    if a.host_offsets_us:
        try:
            offsets = tuple(float(x) for x in a.host_offsets_us.split(","))
        except ValueError:
            p.error("--host-offsets-us: expected comma-separated microseconds, got %r" % a.host_offsets_us)
    cfg = SynthConfig(
        dp=a.dp,
        mp=a.mp,
        pp=a.pp,
        steps=a.steps,
        layers=a.layers,
        micro_batches=a.micro_batches,
        seed=a.seed,
        slow_rank=a.slow_rank,
        slow_factor=a.slow_factor if a.slow_rank is not None else 1.0,
        events_per_rank=a.events_per_rank,
        first_step=a.first_step,
        hidden=a.hidden,
        heads=a.heads,
        seq_len=a.seq_len,
        slow_host_rank=a.slow_host_rank,
        host_delay_us=a.host_delay_us if a.slow_host_rank is not None else 0.0,
        gpus_per_node=pick(a.gpus_per_node, "gpus_per_node"),
        names=pick(a.names, "names"),
        clock_skew_us=pick(a.clock_skew_us, "clock_skew_us"),
        host_offsets_us=offsets,
        kernel_jitter=pick(a.kernel_jitter, "kernel_jitter"),
        kernel_sigma=pick(a.kernel_sigma, "kernel_sigma"),
        gpu_speed_sigma=pick(a.gpu_speed_sigma, "gpu_speed_sigma"),
        p2p_streams=pick(a.p2p_streams, "p2p_streams"),
        one_rank_comms=pick(a.one_rank_comms, "one_rank_comms"),
        pipeline_layers=pick(a.pipeline_layers, "pipeline_layers"),
        host_names=pick(a.host_names, "host_names"),
        export_jitter_us=pick(a.export_jitter_us, "export_jitter_us"),
        comm_end_noise_us=pick(a.comm_end_noise_us, "comm_end_noise_us"),
        pp_group_collectives=not a.no_pp_group_collectives,
        stage_layers=tuple(a.stage_layers) if a.stage_layers else None,
        comm_factor=a.comm_factor,
        slow_kernel=a.slow_kernel,
        launch_overhead=a.launch_overhead,
        leak_bytes_per_step=a.leak_bytes_per_step,
        fragment_bytes_per_step=a.fragment_bytes_per_step,
        schedule=a.schedule,
        virtual_stages=a.virtual_stages,
        record_shapes=a.record_shapes,
        dp_seq_lens=tuple(a.dp_seq_lens) if a.dp_seq_lens else None,
    )
    if a.case:
        from .matrix import cases

        all_cases = cases()
        if a.case not in all_cases:
            p.error("--case: no matrix case %r (one of %s)" % (a.case, ", ".join(all_cases)))
        cfg = all_cases[a.case]
    t0 = time.perf_counter()
    log = lambda msg: print(msg, flush=True)
    quiet = lambda msg: None if msg.startswith("rank ") else log(msg)
    try:
        res = generate(
            cfg, a.out, layout=a.layout, tables=a.tables, ranks=a.ranks, log=quiet if a.quiet else log, jobs=a.jobs
        )
    except ValueError as e:
        p.error(str(e))
    c = res.config
    t = res.timings
    print(
        "%d ranks (dp %d, mp %d, pp %d), %d layers, %d micro-batches, %d steps in %.1fs "
        "(simulation %.1fs, control runs %.1fs, writing %.1fs with %d jobs); ground truth in "
        "%s, %s and %s"
        % (
            c.dp * c.mp * c.pp,
            c.dp,
            c.mp,
            c.pp,
            c.layers,
            c.micro_batches,
            c.steps,
            time.perf_counter() - t0,
            t["simulate"],
            t["controls"],
            t["write"],
            a.jobs,
            MANIFEST_NAME,
            TRUTH_JSON,
            TRUTH_NPZ,
        )
    )
    for entry in res.truth.get("changes", []):
        what = ", ".join("%s %s" % (k, v) for k, v in entry.items() if k not in ("type", "job_cost_ns_per_step"))
        print(
            "planted change %s (%s): the job's step %+.3f ms"
            % (entry["type"], what, entry["job_cost_ns_per_step"] / 1e6)
        )
    for entry in res.truth.get("planted", []):
        print(
            "planted %s on rank %d (stage %d): %.3f ms per step on the rank, costs the job "
            "%.3f ms per step%s"
            % (
                entry["type"],
                entry["rank"],
                entry["stage"],
                entry["excess_ns_per_step"] / 1e6,
                entry["job_cost_ns_per_step"] / 1e6,
                " (absorbed)" if entry["absorbed"] else "",
            )
        )
        if entry.get("saving_at_peer_speed_ns_per_step") != entry["job_cost_ns_per_step"]:
            print(
                "  at its role peers' speed the job would save %.3f ms per step"
                % (entry["saving_at_peer_speed_ns_per_step"] / 1e6)
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
