"""The straggler verdict in the run views: a named rank's cause in words, the banner over a rank's own
views (``rank_banner``) and the table of the named ranks."""

from __future__ import annotations

from typing import Dict, List

from tb_paddle_profile.analysis.peers import role
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import plugin_pb2 as ppb
from tb_paddle_profile.present.display.cells import rank
from tb_paddle_profile.present.display.parallel_common import (
    cause_text,
    duration,
    _sentence,
    col,
    dur,
    pct,
    count,
    _table,
    _row,
    _rank_link,
)


def straggler_cause(s: ppb.Straggler) -> str:
    """A named rank's cause as the panel tags it ("host: its data loader")."""
    return (
        cause_text(s.cause)
        if s.cause
        else "longer compute: check its GPU"
        if s.longer_compute
        else "late arrival, normal compute: check its host"
    )


# The banner's words for a cause: what of the rank is slower than its role peers' (the part a figure measures).
BANNER_SUBJECT = {
    "host_dataloader": "its data loader",
    "host": "its CPU side",
    "host_stall": "its host's stalls mid-step",
    "device_compute": "its GPU compute",
    "launch_overhead": "its kernel launches",
    "memcpy": "its memory copies",
}
BANNER_PHRASE = {
    "pipeline": "held up by the pipeline",
    "sequence_lengths": "its sequences are longer than its DP peers'",
}


def banner_cause(rp: ppb.RunParallel, s: ppb.Straggler) -> List:
    """A named rank's cause as a sentence's clause: "its data loader takes 6.10 ms more per step than its role
    peers'" (the excess of the finding of that cause on that rank alone, where there is one)."""
    cause = s.cause or ("device_compute" if s.longer_compute else "")
    subject = BANNER_SUBJECT.get(cause)
    if subject is None:
        return [
            BANNER_PHRASE.get(
                cause, cause_text(cause) if cause else "it arrives late with a normal compute time (check its host)"
            )
        ]
    excess = next(
        (f.excess_ns for f in rp.findings if list(f.ranks) == [s.rank] and f.cause == cause and f.excess_ns > 0), 0
    )
    if not excess and cause == "device_compute" and s.compute_ns > s.peer_compute_ns:
        excess = s.compute_ns - s.peer_compute_ns
    if excess:
        return [f"{subject} takes ", duration(excess), " more per step than its role peers'"]
    return [f"{subject} is slower than its role peers'"]


def _named(v: ppb.StragglerVerdict, i: int) -> bool:
    """Whether the verdict names its i-th straggler in bold: not an uncertain verdict, nor an absorbed
    stall (but the costliest rank of a verdict that found one: what the job pays most for)."""
    s = v.stragglers[i]
    return not v.uncertain and (not s.absorbed or (v.found and i == 0))


def rank_banner(rp: ppb.RunParallel, worker: str) -> dpb.View:
    """View "rank_banner": what the run's cross-rank analysis says of one rank, for the top of its pages
    (Overview, Operators, Kernels, Memory): at most one sentence.

    * a straggler the verdict names: "The straggler of this run (span S): <cause (banner_cause)>; it costs
      the job <t> per step" (level warning);
    * a rank the verdict lists without naming it (an uncertain verdict, a stall the pipeline absorbs): the
      same facts at level note;
    * a role peer of a named straggler (the same pipeline stage and MP index, both known, another rank):
      "A role peer of rank N, the straggler of this run: ..." with rank N a rank span (a link);
    * else nothing (no sentence)."""
    view = dpb.View(key="rank_banner", title="This rank in the run's analysis")
    v = rp.straggler
    me = next((r for r in rp.ranks if r.worker == worker), None)
    if me is None:
        return view
    span = f" (span {rp.span})" if rp.span else ""

    def cost(s: ppb.Straggler) -> List:
        parts = banner_cause(rp, s) + ["; it costs the job ", duration(s.job_cost_ns), " per step"]
        return parts + [" (mostly absorbed by the pipeline)" if s.absorbed else "", "."]

    for i, s in enumerate(v.stragglers):
        if s.worker == worker or (not s.worker and s.rank == me.rank):
            if _named(v, i):
                view.sentences.append(
                    _sentence(
                        "rank_banner.straggler",
                        [f"The straggler of this run{span}: "] + cost(s),
                        "warning",
                        "Straggler",
                    )
                )
            else:
                why = "an uncertain verdict" if v.uncertain else "not the run's straggler"
                view.sentences.append(
                    _sentence(
                        "rank_banner.named",
                        [f"Named by this run's verdict{span} ({why}): "] + cost(s),
                        "note",
                        "Unlike its role peers",
                    )
                )
            return view
    by_rank = {r.rank: r for r in rp.ranks}
    for i, s in enumerate(v.stragglers):
        it = by_rank.get(s.rank)
        if it is None or not _named(v, i) or it.rank == me.rank:
            continue
        if role(it) is not None and role(it) == role(me):
            where = (f"stage {me.pipeline_stage}, " if me.pipeline_stage >= 0 else "") + f"MP index {me.mp}"
            view.sentences.append(
                _sentence(
                    "rank_banner.peer",
                    [
                        "A role peer of ",
                        rank(s.rank, f"rank {s.rank}"),
                        f" ({where}), the straggler of this run{span}: ",
                    ]
                    + cost(s),
                    "info",
                    "Role peer",
                )
            )
            return view
    return view


def _stragglers_table(rp: ppb.RunParallel, labels: Dict[int, str]) -> dpb.Table:
    t = _table(
        "stragglers",
        "Named ranks",
        [
            count("rank", "Rank"),
            col("label", "Label"),
            col("cause", "Cause"),
            col("gpu", "GPU cause"),
            dur("job_cost_ns", "Costs the job"),
            col("absorbed", "Absorbed"),
            dur("compute_ns", "Compute"),
            dur("peer_compute_ns", "Role peers' compute"),
            pct("compute_excess", "(more)", 0),
            count("last_arrivals", "Arrived last"),
            count("matched", "Matched"),
        ],
        text_hidden=True,
    )
    for s in rp.straggler.stragglers:
        gpu = s.cause == "device_compute" if s.cause else s.longer_compute
        tag = straggler_cause(s)
        _row(
            t,
            [
                s.rank,
                (s.label or labels.get(s.rank, f"rank {s.rank}")),
                tag,
                ("1" if gpu else ""),
                s.job_cost_ns,
                ("mostly absorbed" if s.absorbed else ""),
                s.compute_ns,
                s.peer_compute_ns,
                s.compute_excess,
                s.last_arrivals,
                s.matched,
            ],
            s.worker or str(s.rank),
            _rank_link(s.rank),
        )
    return t
