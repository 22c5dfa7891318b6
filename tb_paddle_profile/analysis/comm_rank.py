"""One rank's communication, launches and host stalls per step: its row of the view across ranks
(``CommView.rank``; crossrank/comm_ranks.py puts the ranks' rows side by side; docs/communication.md,
"Across ranks").

Computed with the rank's Summary, from its other CommView fields, so that the analysis across ranks
copies a row per rank instead of deriving it from every rank's streams and communicators:

- per communicator and phase (CommView.axes: the union over its streams), its calls, time, hidden and
  exposed time divided by the rank's steps (its distinct ProfileStep numbers, ParallelView.steps);
- the stream that starved most and its share of that stream's span, the median of its streams' median
  launch latencies, its largest launch queue (streams with a span);
- its steps with a host stall, its steps, and its stalled time per step.

No row (the field unset) for a rank without overlap, launches or steps.
"""

from __future__ import annotations

import statistics

from ..v1 import summary_pb2 as pb


def steps_of(numbers) -> int:
    """The rank's steps from its distinct step numbers (ParallelView.steps'): those of at least 0, else all
    of them (at least 1)."""
    return max(1, sum(1 for s in numbers if s >= 0) or len(numbers))


def rank_view(c: pb.CommView, parallel: pb.ParallelView) -> None:
    """Fill ``c.rank`` from ``c``'s axes, launch streams and host stalls."""
    if not (c.overlap or c.launch or c.host_stalls.steps):
        return
    n = steps_of({st.step for st in parallel.steps})
    m = c.rank
    m.starved_stream = -1
    x = c.axes  # one row per (axis, phase), in that order (comm_overlap.overlap_view)
    for axis, phase, calls, time_ns, hidden, exposed in zip(
        x.axis, x.phase, x.calls, x.time_ns, x.hidden_ns, x.exposed_ns
    ):
        m.axes.add(
            axis=axis,
            phase=phase,
            calls=calls / n,
            time_ns=int(round(time_ns / n)),
            hidden_ns=int(round(hidden / n)),
            exposed_ns=int(round(exposed / n)),
        )
    streams = [ls for ls in c.launch if ls.span_ns > 0]
    if streams:
        worst = max(streams, key=lambda ls: ls.starved_ns / ls.span_ns)
        m.starved_stream, m.starved_share = worst.stream, worst.starved_ns / worst.span_ns
        m.launch_p50_ns = int(statistics.median([ls.p50_ns for ls in streams]))
        m.max_queue = max(ls.max_queue for ls in streams)
    hs = c.host_stalls
    m.stall_steps, m.steps = hs.steps_with_stall, hs.steps
    m.stalled_ns_per_step = int(round(hs.stalled_ns / max(1, hs.steps)))
