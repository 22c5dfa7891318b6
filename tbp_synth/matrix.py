"""The truth matrix: named runs that look like real jobs (``SynthConfig.realistic``), for the
cross-rank analysis' accuracy tests (issue 24, point 7).

``cases()`` returns every case by name, in a stable order; ``case(name)`` one of them;
``generate_case(name, out_dir)`` writes it. Each case is a ``SynthConfig`` with every realism
option on (lognormal kernel noise, a GPU-speed spread, send/recv on one shared stream in 1F1B
order, one-rank communicators, ``EmbeddingPipe`` / ``HeadPipe`` with the data read on the
first stage, Paddle's default worker names, 8 GPUs per host, host clocks within +-2 ms), at
least 4 steps, and the default (GPU-bound) model size. The planted truth of each run is in
its ``synth_truth.json`` (``tbp_synth.truth.load_truth``); a name says what is planted, the
configs are the only source of it.

Names: ``<layout>-<what>``; ``control`` plants nothing; ``gpuN-<stage>`` makes one GPU N %
slower; ``loaderNms-<stage>`` stalls one rank's host (its data loader on stage 0) N ms per
step; ``hostNms-<stage>`` the same off the first stage, where no data loader runs (a host
stall); ``<stage>`` is ``first``, ``middle`` (or ``stageK``) or ``last``; ``balanced``: stage
layers set by hand so that the last stage's head does not make it the bottleneck.

``BIG`` names the cases too big for a quick test (1,024 ranks: about two minutes to generate
on one core of a small machine)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Dict, Optional

from .generator import SynthConfig, generate

BIG = frozenset({"dp16pp8mp8-loader6ms-first"})


def _rank(dp: int, pp: int, mp: int, PP: int, MP: int) -> int:
    """Fleet's rank of coordinates (dp, pp, mp) in a DP x PP x MP job."""
    return (dp * PP + pp) * MP + mp


def cases(light: bool = False) -> Dict[str, SynthConfig]:
    """Every case of the matrix, by name (see the module docstring). ``light``: half the
    micro-batches (at least 2) of each case, about half the events and generation time; the
    planted anomalies' costs change with it (each run's truth has its own)."""

    def R(**kw):
        if light and kw.get("micro_batches", 1) > 2:
            kw["micro_batches"] = max(2, kw["micro_batches"] // 2)
        return SynthConfig.realistic(**kw)

    out: Dict[str, SynthConfig] = OrderedDict()

    # DP4 x PP4 x MP4: 64 ranks on 8 hosts
    L4 = dict(dp=4, pp=4, mp=4, steps=4, layers=8, micro_batches=8)

    def r4(dp, pp, mp):
        return _rank(dp, pp, mp, 4, 4)

    out["dp4pp4mp4-control"] = R(**L4)
    out["dp4pp4mp4-gpu10-last"] = R(**L4, slow_rank=r4(1, 3, 2), slow_factor=1.10)
    out["dp4pp4mp4-gpu10-stage1"] = R(**L4, slow_rank=r4(2, 1, 1), slow_factor=1.10)
    out["dp4pp4mp4-gpu10-first"] = R(**L4, slow_rank=r4(3, 0, 2), slow_factor=1.10)
    out["dp4pp4mp4-gpu5-last"] = R(**L4, slow_rank=r4(2, 3, 3), slow_factor=1.05)
    out["dp4pp4mp4-loader3ms-first"] = R(**L4, slow_host_rank=r4(3, 0, 3), host_delay_us=3000)
    # host stalls off the first stage (no data loader there): hidden by the pipeline fill up
    # to a few ms, then not
    out["dp4pp4mp4-host3ms-middle"] = R(**L4, slow_host_rank=r4(1, 2, 0), host_delay_us=3000)
    out["dp4pp4mp4-host3ms-last"] = R(**L4, slow_host_rank=r4(0, 3, 1), host_delay_us=3000)
    out["dp4pp4mp4-host12ms-middle"] = R(**L4, slow_host_rank=r4(2, 1, 3), host_delay_us=12000)
    out["dp4pp4mp4-two-gpu10-last-loader3ms-first"] = R(
        **L4, slow_rank=r4(1, 3, 2), slow_factor=1.10, slow_host_rank=r4(3, 0, 3), host_delay_us=3000
    )
    out["dp4pp4mp4-two-gpu10-stage1-stage2"] = R(**L4, slow_rank=(r4(0, 1, 3), r4(2, 2, 0)), slow_factor=1.10)
    # stages balanced by hand (the last holds one layer less for its head): a straggler on
    # any stage lengthens the pipeline
    B4 = dict(L4, stage_layers=(3, 3, 3, 2))
    out["dp4pp4mp4-balanced-control"] = R(**B4)
    out["dp4pp4mp4-balanced-gpu10-stage1"] = R(**B4, slow_rank=r4(2, 1, 1), slow_factor=1.10)
    out["dp4pp4mp4-balanced-gpu5-first"] = R(**B4, slow_rank=r4(1, 0, 0), slow_factor=1.05)
    # the other send/recv layouts, healthy
    out["dp4pp4mp4-per-peer-control"] = R(**L4, p2p_streams="per_peer")
    out["dp4pp4mp4-per-direction-control"] = R(**L4, p2p_streams="per_direction")

    # DP32 x PP1 x MP1: 32 ranks on 4 hosts, one-rank MP communicators
    L32 = dict(dp=32, pp=1, mp=1, steps=4, layers=2, micro_batches=2)
    out["dp32-control"] = R(**L32)
    out["dp32-gpu20"] = R(**L32, slow_rank=19, slow_factor=1.20)
    out["dp32-gpu5"] = R(**L32, slow_rank=6, slow_factor=1.05)
    out["dp32-loader3ms"] = R(**L32, slow_host_rank=27, host_delay_us=3000)

    # DP2 x PP8 x MP1, 16 micro-batches: 16 ranks on 2 hosts
    L28 = dict(dp=2, pp=8, mp=1, steps=4, layers=8, micro_batches=16)
    out["dp2pp8-mb16-control"] = R(**L28)
    out["dp2pp8-mb16-gpu10-middle"] = R(**L28, slow_rank=_rank(1, 4, 0, 8, 1), slow_factor=1.10)
    out["dp2pp8-mb16-loader3ms-first"] = R(**L28, slow_host_rank=_rank(0, 0, 0, 8, 1), host_delay_us=3000)

    # DP8 x PP4 x MP4: 128 ranks on 16 hosts
    L8 = dict(dp=8, pp=4, mp=4, steps=4, layers=4, micro_batches=4)
    out["dp8pp4mp4-control"] = R(**L8)
    out["dp8pp4mp4-gpu15-middle"] = R(**L8, slow_rank=_rank(5, 2, 1, 4, 4), slow_factor=1.15)

    # 8 rank-named ranks (rank{r}, no host in the name) on 2 hosts 1.73 ms apart
    L2 = dict(
        dp=2,
        pp=2,
        mp=2,
        steps=4,
        layers=4,
        micro_batches=4,
        gpus_per_node=4,
        names="rank",
        host_offsets_us=(412.0, 2142.0),
    )
    out["rank-named-2hosts-control"] = R(**L2)
    out["rank-named-2hosts-gpu10"] = R(**L2, slow_rank=5, slow_factor=1.10)

    # DP16 x PP8 x MP8: 1,024 ranks on 128 hosts, one layer per stage, 2 micro-batches and a
    # smaller vocabulary, so that it generates in about two minutes on one core
    out["dp16pp8mp8-loader6ms-first"] = R(
        dp=16,
        pp=8,
        mp=8,
        steps=4,
        layers=8,
        micro_batches=2,
        vocab=32000,
        slow_host_rank=_rank(7, 0, 5, 8, 8),
        host_delay_us=6000,
    )
    return out


def case(name: str, light: bool = False) -> SynthConfig:
    """One case of :func:`cases` by name."""
    all_ = cases(light)
    if name not in all_:
        raise KeyError("no matrix case %r (one of %s)" % (name, ", ".join(all_)))
    return all_[name]


def small_cases(light: bool = False) -> Dict[str, SynthConfig]:
    """:func:`cases` without the :data:`BIG` ones."""
    return OrderedDict((k, v) for k, v in cases(light).items() if k not in BIG)


def generate_case(name: str, out_dir: str, jobs: int = 1, ranks: Optional[list] = None, log=None, light: bool = False):
    """Write case ``name`` into ``out_dir`` (``generate``'s result)."""
    return generate(case(name, light), out_dir, jobs=jobs, ranks=ranks, log=log)


__all__ = ["BIG", "case", "cases", "generate_case", "small_cases"]
