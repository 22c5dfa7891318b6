"""RunParallel protobuf → terminal tables for ``tb-paddle-profile distributed``.

Same data the plugin's panels draw: per-rank step times and breakdown, the rank × step
heatmaps as tables, collectives by kind, waits, each rank against its role peers, the topology,
the host clocks, the straggler verdict, the findings, pipeline bubbles and the advice with the
thresholds that triggered it. Ranks are shown by their one label (analysis/crossrank/labels.py).
"""
from __future__ import annotations

import re
import textwrap
from typing import List, Sequence

from ..analysis.collectives import KIND_LABELS
from ..v1 import plugin_pb2 as ppb
from ..v1 import summary_pb2 as pb
from .text import format_time

WIDTH = 100


def _table(title: str, header: Sequence[str], rows: List[Sequence[str]], note: str = "") -> List[str]:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]
    line = "  ".join("-" * w for w in widths)
    out = [title.center(max(len(line), len(title)), "-")]
    out.append("  ".join(str(h).ljust(w) for h, w in zip(header, widths)).rstrip())
    out.append(line)
    for r in rows:
        out.append("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())
    out.append(line)
    if note:
        out.extend(textwrap.wrap(note, WIDTH))
    out.append("")
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _bytes(n: int) -> str:
    if not n:
        return "-"
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} B"


_TIME_TOKEN = re.compile(r"\{ns:(-?[0-9]+)\}")


def fill_times(text: str, unit: str) -> str:
    """A sentence of the analysis with its "{ns:N}" time tokens printed in `unit`."""
    return _TIME_TOKEN.sub(lambda m: f"{format_time(int(m.group(1)), unit)} {unit}", text)


def _short(ranks, limit: int = 16) -> str:
    ranks = list(ranks)
    if not ranks:
        return "-"
    text = ",".join(map(str, ranks[:limit]))
    return text + (f",… ({len(ranks)})" if len(ranks) > limit else "")


def render(rp: ppb.RunParallel, time_unit: str = "ms") -> str:
    t = lambda ns: format_time(ns, time_unit)  # noqa: E731
    out: List[str] = []
    steps = list(rp.steps)
    span = f", span {rp.span}" if rp.span else ""
    step_txt = (f"steps {steps[0]}..{steps[-1]}" if len(steps) > 1 else f"step {steps[0]}") if steps else "no steps"
    out.append(f"Hybrid-parallel analysis of {rp.run or 'the run'}{span}: {len(rp.ranks)} ranks, {step_txt}. "
               f"Times in {time_unit}, per step (means over the rank's steps).")
    out.append("")

    host_only = all(r.timeline == pb.TIMELINE_HOST for r in rp.ranks)
    rows = []
    for r in rp.ranks:
        share = (lambda ns: _pct(ns / r.step_time_ns) if r.step_time_ns else "-")
        rows.append([r.rank, r.label or r.worker, r.steps, t(r.step_time_ns), t(r.compute_ns), t(r.exposed_communication_ns),
                     share(r.exposed_communication_ns), t(r.hidden_communication_ns), t(r.exposed_memory_ns),
                     t(r.idle_ns), "host" if r.timeline == pb.TIMELINE_HOST else "GPU"])
    out += _table("Per-rank step breakdown",
                  ["Rank", "Label", "Steps", "Step", "Compute", "Exposed comm", "(of step)", "Hidden comm",
                   "Exposed memcpy", "Idle", "Timeline"], rows,
                  "Step = Compute + Exposed comm + Exposed memcpy + Idle. GPU timeline: Compute = some non-"
                  "communication kernel runs; Exposed comm = a communication kernel runs and no computation; "
                  "Hidden comm = communication overlapped by computation; Idle = nothing runs on the GPU."
                  + (" Host timeline (no device events): communication = host communication events, which block "
                     "the host; Compute = other operators; Idle = the rest."
                     if any(r.timeline == pb.TIMELINE_HOST for r in rp.ranks) else ""))

    for title, matrix in (("Step time by rank and step", rp.step_time),
                          ("Exposed communication by rank and step", rp.exposed_communication)):
        vals = list(matrix.values_ns)
        rows = []
        for i, r in enumerate(rp.ranks):
            row = vals[i * len(steps):(i + 1) * len(steps)]
            rows.append([r.rank] + [t(v) if v >= 0 else "-" for v in row])
        out += _table(title, ["Rank"] + [f"#{s}" for s in steps], rows)

    rows = []
    for k in rp.kinds:
        rows.append([KIND_LABELS.get(k.kind, "other"), k.calls, t(k.device_ns), t(k.host_ns), t(k.exposed_ns),
                     k.matched, t(k.wait_ns), t(k.transfer_ns), _bytes(k.bytes), _short(k.ranks)])
    out += _table("Collectives by kind (all ranks, all steps)",
                  ["Kind", "Calls", "Device time", "Host time", "Exposed", "Matched", "Wait", "Transfer", "Bytes",
                   "Ranks"], rows,
                  "Totals over ranks and steps. Wait = duration − transfer of matched instances (transfer ≈ the "
                  "shortest duration of the instance across its ranks).")

    rows = []
    for r in rp.ranks:
        n = max(1, r.steps)
        for k in r.kinds:
            rows.append([r.rank, KIND_LABELS.get(k.kind, "other"), f"{k.calls / n:.1f}", t(k.device_ns / n),
                         t(k.exposed_ns / n), t(k.wait_ns / n), f"{k.matched}/{k.calls}"])
    out += _table("Collectives by rank and kind (per step)",
                  ["Rank", "Kind", "Calls", "Device time", "Exposed", "Wait", "Matched"], rows)

    if not host_only:
        rows = []
        for r in rp.ranks:
            rows.append([r.rank, t(r.runtime_ns), _pct(r.runtime_ns / r.step_time_ns) if r.step_time_ns else "-",
                         r.launches, t(r.sync_ns), t(r.kernel_ns)])
        out += _table("Host side: CUDA runtime against kernels (per step)",
                      ["Rank", "CUDA runtime", "(of step)", "Launches", "Synchronising", "Kernel time"], rows,
                      "Kernel time is the plain sum of kernel durations (streams overlap).")

    rows = []
    for r in rp.ranks:
        rows.append([r.rank, t(r.wait_ns), t(r.caused_wait_ns), f"{r.last_arrivals}/{r.matched}", t(r.compute_ns),
                     t(r.peer_compute_ns) if r.peer_compute_ns else "-", t(r.dataloader_ns),
                     t(r.first_device_ns) if r.first_device_ns >= 0 else "-", _pct(r.coverage), _pct(r.deviation),
                     _short(r.peers)])
    out += _table("Waits at collectives other than send/recv, and each rank against its role peers (per step)",
                  ["Rank", "Waited", "Made peers wait", "Arrived last", "Compute", "Role peers' compute",
                   "Data loader", "First work", "Matched", "Deviation", "Peers"], rows,
                  "Role peers: the ranks of the same pipeline stage and mp index (other replicas). First work = "
                  "from the step's start to its first device event. Matched = matched instances of all its "
                  "collectives. Deviation = its largest excess over its role peers' median, as a share of the "
                  "median step.")

    tv = rp.topology
    if tv.groups or tv.dp or tv.pp or tv.mp:
        by_axis = {}
        for g in tv.groups:
            by_axis.setdefault(g.axis, []).append(g)
        rows = [[axis, len(gs), sorted({len(g.ranks) for g in gs}), sum(g.instances for g in gs),
                 "; ".join(_short(g.ranks, 8) for g in gs[:3]) + (" …" if len(gs) > 3 else "")]
                for axis, gs in sorted(by_axis.items())]
        head = (f"DP {tv.dp} x PP {tv.pp} x MP {tv.mp}" + (" (complete" if tv.complete else " (incomplete")
                + (", Fleet's rank order)" if tv.matches_fleet_order else ")"))
        out += _table(f"Topology: {head}", ["Axis", "Groups", "Sizes", "Instances", "Examples"], rows,
                      tv.method + ("" if not tv.notes else " " + " ".join(tv.notes)))
    if rp.clocks:
        rows = [[c.hostname or "-", t(c.offset_ns), t(c.spread_ns), c.samples, "reference" if c.reference else "",
                 _short(c.ranks, 8)] for c in rp.clocks]
        out += _table("Host clocks", ["Host", "Offset", "Spread (IQR)", "Samples", "", "Ranks"], rows,
                      "Offset of each host's clock from the reference host's, found from collectives spanning "
                      "hosts (their members end together); subtracted from its times before matching.")

    v = rp.straggler
    out.append("Straggler verdict".center(WIDTH, "-"))
    out.extend(textwrap.wrap(fill_times(v.summary, time_unit), WIDTH))
    for s in v.stragglers:
        out.extend(textwrap.wrap(fill_times(s.reason, time_unit), WIDTH, initial_indent="  - ",
                                 subsequent_indent="    "))
    out.extend(textwrap.wrap(
        f"({v.rule} Evidence: {_pct(v.coverage)} of the instances matched, the "
        f"least covered rank {_pct(v.min_rank_coverage)}{'; UNCERTAIN' if v.uncertain else ''}.)", WIDTH))
    out.append("")

    if rp.findings:
        out.append("Findings".center(WIDTH, "-"))
        for f in rp.findings:
            tag = f"[{f.category}: {f.rule}{', ' + f.cause if f.cause else ''}]"
            out.extend(textwrap.wrap(f"{tag} {fill_times(f.text, time_unit)}", WIDTH, subsequent_indent="   "))
        out.append("")

    pv = rp.pipeline
    if pv.present:
        if pv.stages:
            rows = [[s.stage, _short(s.ranks), t(s.step_time_ns), t(s.compute_ns), t(s.bubble_ns),
                     _pct(s.bubble_ratio)] for s in pv.stages]
            out += _table(f"Pipeline ({pv.pipelines} pipelines)",
                          ["Stage", "Ranks", "Step", "Compute", "Bubble", "Bubble ratio"], rows, pv.definition)
        else:
            rows = [[r.rank, t(r.step_time_ns), t(r.bubble_ns), _pct(r.bubble_ratio)]
                    for r in rp.ranks if r.bubble_ns or r.pipeline_stage >= 0]
            out += _table("Pipeline (stages unknown)", ["Rank", "Step", "Bubble", "Bubble ratio"], rows,
                          pv.definition)

    out.append("Advice".center(WIDTH, "-"))
    if not rp.advice:
        out.append("No rule fired.")
    for i, a in enumerate(rp.advice, 1):
        out.extend(textwrap.wrap(f"{i}. {a.title}. {fill_times(a.text, time_unit)}", WIDTH, subsequent_indent="   "))
        for tr in a.triggers:
            who = f"rank {tr.rank}" if tr.rank >= 0 else "all ranks"
            val = _pct(tr.value) if "fraction" in tr.unit else f"{tr.value:g}"
            thr = _pct(tr.threshold) if "fraction" in tr.unit else f"{tr.threshold:g}"
            out.append(f"   [{a.rule}] {tr.metric} ({who}): {val} >= threshold {thr}")
    out.append("")

    m = rp.matching
    out.extend(textwrap.wrap(f"Matching: {m.matched_instances} of {m.instances} communication instances matched "
                             f"across ranks ({m.method}).", WIDTH))
    for note in rp.notes:
        out.extend(textwrap.wrap(f"Note: {note}", WIDTH))
    return "\n".join(out).rstrip() + "\n"
