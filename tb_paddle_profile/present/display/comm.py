"""One rank's communication, launch and host-stall tables (ours, not Paddle's): docs/communication.md.

Built from Summary.comm (analysis/comm_*.py, launch_latency.py, host_stalls.py) and appended to the
Overview by summary_display. They carry no paddle_view, so Paddle's printed summary is unchanged; the
CSV (``summary --format csv --table KEY``), the API frames and the panel read them like any table.
"""

from __future__ import annotations

from typing import List, Tuple

from tb_paddle_profile.analysis.comm_axes import AXIS_LABELS, PHASE_LABELS
from tb_paddle_profile.analysis.comm_bandwidth import NETWORK_GBPS, NVLINK_GBPS, bus_factor
from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.host_stalls import recurring
from tb_paddle_profile.analysis.launch_latency import STARVE_MIN_NS, STARVE_SHARE, starving
from tb_paddle_profile.core import settings
from tb_paddle_profile.v1 import display_pb2 as dpb
from tb_paddle_profile.v1 import summary_pb2 as pb
from tb_paddle_profile.present.display.cells import (
    BYTES,
    COUNT,
    DURATION,
    MISSING,
    NUMBER,
    PERCENT,
    TEXT,
    fmt,
    num,
    sentence,
    text,
    val,
)

BANDWIDTH_NOTE = (
    "Bytes: the input tensors of the issuing operator (input_shapes x dtypes; '-' when the trace "
    "records no shapes). Algbw = bytes / time; busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n "
    "for all-gather / reduce-scatter / all-to-all, x 1 for broadcast and send/recv ('-' where the "
    "group size n is needed: one trace does not tell it). Nominal links per direction: NVLink "
    "{nv:g} GB/s, network {net:g} GB/s."
)
OVERLAP_NOTE = (
    "Communicator by rule (docs/communication.md): send/recv PP, reduce-scatter / all-gather sharding, "
    "all-reduces of a stream with forward all-reduces MP, backward gradient all-reduces DP, the "
    "rest of a pipelined rank PP group. Hidden: while a compute kernel runs."
)
LAUNCH_NOTE = (
    "Latency: kernel (memcpy, memset) start - its runtime call's start, nearest-rank percentiles. "
    "Queue: launched, not yet started. Starved: the stream idle while its next event was not "
    "launched yet (the GPU waits for the host)."
)
INSTANCES_NOTE = (
    "Each collective instance of the rank (a communication kernel, or a host communication event that "
    "launched none), in launch order: its communicator and phase by rule, the bytes of its issuing "
    "operator's inputs ('-' without shapes), algbw = bytes / its duration (waits included), busbw = "
    "algbw x NCCL's factor where it needs no group size (broadcast, send/recv x 1; all-reduce and the "
    "like: the view across ranks, which knows the group, gives them per communicator)."
)
QUEUE_NOTE = (
    "Per stream, the launch queue's depth from each time on (launched, not yet started), as points: the "
    "largest depth of each of at most 512 time bins; times from the trace's start."
)
STALLS_NOTE = "Stretches of a step over the threshold where the main thread makes no CUDA runtime call."


def nominal_gbps() -> Tuple[float, float]:
    """NVLink and network nominal bandwidths (GB/s per direction), the settings or the defaults."""

    def read(name: str, default: float) -> float:
        try:
            v = float(settings.text(name) or default)
        except ValueError:
            return default
        return v if v > 0 else default

    return read(settings.NVLINK_GBPS, NVLINK_GBPS), read(settings.NETWORK_GBPS, NETWORK_GBPS)


def _col(key: str, header: str, kind: int, digits: int = 0, style: str = "", description: str = "") -> dpb.Column:
    return dpb.Column(key=key, header=header, format=fmt(kind, digits=digits, style=style), description=description)


def _table(key: str, title: str, cols, rows, note: str) -> dpb.Table:
    return dpb.Table(key=key, title=title, columns=cols, rows=rows, note=note, text_hidden=True)


def _bandwidth_table(c: pb.CommView) -> dpb.Table:
    nv, net = nominal_gbps()
    cols = [
        _col("axis", "Communicator", TEXT),
        _col("kind", "Kind", TEXT),
        _col("calls", "Calls", COUNT),
        _col("calls_with_bytes", "With bytes", COUNT),
        _col("bytes", "Bytes", BYTES, style="human"),
        _col("time_ns", "Time", DURATION, description="Sum of the durations of the calls with bytes"),
        _col("algbw_gbps", "Algbw GB/s", NUMBER, 2),
        _col("busbw_gbps", "Busbw GB/s", NUMBER, 2),
        _col("of_nvlink", "Of NVLink", PERCENT, 1),
        _col("of_network", "Of network", PERCENT, 1),
        _col("max_algbw_gbps", "Fastest call GB/s", NUMBER, 2),
    ]
    rows = []
    for b in c.bandwidth:
        alg = b.bytes / (b.duration_ns * 1e-9) / 1e9 if b.bytes and b.duration_ns else None
        f = bus_factor(b.kind)
        bus = alg * f if alg is not None and f is not None else None
        rows.append(
            dpb.Row(
                cells=[
                    text(AXIS_LABELS.get(b.axis, "-")),
                    text(KIND_LABELS.get(b.kind, "other")),
                    num(b.calls),
                    num(b.calls_with_bytes),
                    num(b.bytes),
                    num(b.duration_ns) if b.calls_with_bytes else MISSING,
                    num(alg),
                    num(bus),
                    num(bus / nv) if bus is not None else MISSING,
                    num(bus / net) if bus is not None else MISSING,
                    num(b.max_algbw / 1e9) if b.max_algbw else MISSING,
                ],
                id=f"{b.axis}:{b.kind}",
            )
        )
    return _table(
        "comm_bandwidth",
        "Communication bytes and bandwidth by communicator",
        cols,
        rows,
        BANDWIDTH_NOTE.format(nv=nv, net=net),
    )


def _overlap_table(c: pb.CommView) -> dpb.Table:
    cols = [
        _col("stream", "Stream", COUNT),
        _col("axis", "Communicator", TEXT),
        _col("phase", "Phase", TEXT),
        _col("calls", "Calls", COUNT),
        _col("time_ns", "Time", DURATION),
        _col("hidden_ns", "Hidden", DURATION),
        _col("exposed_ns", "Exposed", DURATION),
        _col("hidden_share", "Hidden share", PERCENT, 1),
    ]
    rows = [
        dpb.Row(
            cells=[
                num(o.stream) if o.stream >= 0 else MISSING,
                text(AXIS_LABELS.get(o.axis, "-")),
                text(PHASE_LABELS.get(o.phase, "other")),
                num(o.calls),
                num(o.time_ns),
                num(o.hidden_ns),
                num(o.exposed_ns),
                num(o.hidden_ns / o.time_ns) if o.time_ns else MISSING,
            ],
            id=f"{o.stream}:{o.axis}:{o.phase}",
        )
        for o in c.overlap
    ]
    return _table(
        "comm_overlap", "Compute/communication overlap by stream, communicator and phase", cols, rows, OVERLAP_NOTE
    )


def _launch_table(c: pb.CommView) -> dpb.Table:
    cols = [
        _col("device", "Device", COUNT),
        _col("stream", "Stream", COUNT),
        _col("launched", "Launched", COUNT),
        _col("p50_ns", "Latency p50", DURATION),
        _col("p90_ns", "p90", DURATION),
        _col("max_ns", "Max", DURATION),
        _col("max_queue", "Max queue", COUNT),
        _col("mean_queue", "Mean queue", NUMBER, 2),
        _col("starved_ns", "Starved", DURATION),
        _col("starved_share", "(of span)", PERCENT, 1),
        _col("starved_gaps", f"Gaps > {STARVE_MIN_NS // 1000} us", COUNT),
    ]
    rows = [
        dpb.Row(
            cells=[
                num(ls.device_id),
                num(ls.stream),
                num(ls.launched),
                num(ls.p50_ns),
                num(ls.p90_ns),
                num(ls.max_ns),
                num(ls.max_queue),
                num(ls.mean_queue),
                num(ls.starved_ns),
                num(ls.starved_ns / ls.span_ns) if ls.span_ns else MISSING,
                num(ls.starved_gaps),
            ],
            id=f"{ls.device_id}:{ls.stream}",
        )
        for ls in c.launch
    ]
    return _table("launch_latency", "Launch latency and queue by stream", cols, rows, LAUNCH_NOTE)


def _instances_table(s: pb.Summary) -> dpb.Table:
    """Every collective instance with its communicator, phase, bytes and bandwidths (Summary.parallel.collectives
    and Summary.comm.instances, which are parallel)."""
    col, ci, names = s.parallel.collectives, s.comm.instances, list(s.parallel.names)
    nv, net = nominal_gbps()
    cols = [
        _col("step", "Step", COUNT),
        _col("kind", "Kind", TEXT),
        _col("axis", "Communicator", TEXT),
        _col("phase", "Phase", TEXT),
        _col("op", "Operator", TEXT),
        _col("stream", "Stream", COUNT),
        _col("start_ns", "Start", DURATION),
        _col("duration_ns", "Duration", DURATION),
        _col("bytes", "Bytes", BYTES, style="human"),
        _col("algbw_gbps", "Algbw GB/s", NUMBER, 2),
        _col("busbw_gbps", "Busbw GB/s", NUMBER, 2),
        _col("of_nvlink", "Of NVLink", PERCENT, 1),
        _col("of_network", "Of network", PERCENT, 1),
    ]
    rows = []
    for i in range(len(col.kind)):
        nbytes, dur = col.bytes[i], col.duration_ns[i]
        alg = nbytes / (dur * 1e-9) / 1e9 if nbytes and dur > 0 else None
        f = bus_factor(col.kind[i])
        bus = alg * f if alg is not None and f is not None else None
        rows.append(
            dpb.Row(
                cells=[
                    num(col.step[i]),
                    text(KIND_LABELS.get(col.kind[i], "other")),
                    text(AXIS_LABELS.get(ci.axis[i], "-")),
                    text(PHASE_LABELS.get(ci.phase[i], "other")),
                    text(names[col.op[i]] if col.op[i] < len(names) else ""),
                    num(col.stream[i]) if col.stream[i] >= 0 else MISSING,
                    num(col.start_ns[i]),
                    num(dur),
                    num(nbytes) if nbytes else MISSING,
                    num(alg),
                    num(bus),
                    num(bus / nv) if bus is not None else MISSING,
                    num(bus / net) if bus is not None else MISSING,
                ],
                id=str(i),
            )
        )
    return _table("comm_instances", "Collective instances: bytes and bandwidth", cols, rows, INSTANCES_NOTE)


def _queue_table(c: pb.CommView) -> dpb.Table:
    """The launch queue of each stream over time (LaunchStream.queue_time_ns / queue_depth): the panel draws
    it as a chart, a line per `series` (its name), the CSV and the API give its points."""
    cols = [
        _col("series", "Series", TEXT, description="The chart's line: GPU<device> stream <stream>"),
        _col("device", "Device", COUNT),
        _col("stream", "Stream", COUNT),
        _col("time_ns", "Time", DURATION),
        _col("depth", "Queue", COUNT),
    ]
    rows = [
        dpb.Row(
            cells=[text(f"GPU{ls.device_id} stream {ls.stream}"), num(ls.device_id), num(ls.stream), num(t), num(q)],
            id=f"{ls.device_id}:{ls.stream}:{i}",
        )
        for ls in c.launch
        for i, (t, q) in enumerate(zip(ls.queue_time_ns, ls.queue_depth))
    ]
    return _table("launch_queue", "Launch queue over time by stream", cols, rows, QUEUE_NOTE)


def _stalls_table(c: pb.CommView) -> dpb.Table:
    hs = c.host_stalls
    names = list(hs.names)
    cols = [
        _col("step", "Step", COUNT),
        _col("start_ns", "Start", DURATION),
        _col("duration_ns", "Stall", DURATION),
        _col("within", "Within", TEXT),
        _col("before", "Before", TEXT),
        _col("after", "After", TEXT),
    ]
    rows = [
        dpb.Row(
            cells=[
                num(st.step),
                num(st.start_ns),
                num(st.duration_ns),
                text(names[st.within]),
                text(names[st.before]),
                text(names[st.after]),
            ],
            id=f"{st.step}:{st.start_ns}",
        )
        for st in hs.stalls
    ]
    return _table(
        "host_stalls", f"Host stalls (main thread, over {hs.threshold_ns / 1e6:g} ms)", cols, rows, STALLS_NOTE
    )


def _sentences(s: pb.Summary) -> List[dpb.Sentence]:
    c = s.comm
    out = []
    comm_streams = set(s.parallel.collectives.stream)
    for ls in c.launch:
        if ls.stream in comm_streams or not starving(ls):
            continue
        out.append(
            sentence(
                [
                    f"GPU starved behind the host: stream {ls.stream} of device {ls.device_id} sat idle for ",
                    val(ls.starved_ns, DURATION, style="unit"),
                    " of its ",
                    val(ls.span_ns, DURATION, style="unit"),
                    " span (",
                    val(ls.starved_ns / ls.span_ns, PERCENT, digits=1),
                    "; threshold ",
                    val(STARVE_SHARE, PERCENT, digits=1),
                    ") waiting for launches. Reduce host work between launches (fuse operators, CUDA Graphs).",
                ],
                key="finding.launch_starved",
                level="warning",
            )
        )
    hs = c.host_stalls
    if recurring(hs):
        longest = max(hs.stalls, key=lambda st: st.duration_ns)
        out.append(
            sentence(
                [
                    f"Recurring host stalls: {hs.steps_with_stall} of {hs.steps} steps hold a stretch over ",
                    val(hs.threshold_ns, DURATION, style="unit"),
                    " with no CUDA call on the main thread, ",
                    val(hs.stalled_ns, DURATION, style="unit"),
                    " in all; the longest, ",
                    val(longest.duration_ns, DURATION, style="unit"),
                    f", within {hs.names[longest.within] or 'no event'}. "
                    "Look for garbage collection, checkpointing, logging or a slow data loader there.",
                ],
                key="finding.host_stalls",
                level="warning",
            )
        )
    return out


def comm_tables(s: pb.Summary) -> Tuple[List[dpb.Table], List[dpb.Sentence]]:
    """The tables and findings of Summary.comm (none for a Summary without it)."""
    c = s.comm
    tables = []
    if c.bandwidth:
        tables.append(_bandwidth_table(c))
    if len(c.instances.axis) and len(c.instances.axis) == len(s.parallel.collectives.kind):
        tables.append(_instances_table(s))
    if c.overlap:
        tables.append(_overlap_table(c))
    if c.launch:
        tables.append(_launch_table(c))
        if any(ls.queue_time_ns for ls in c.launch):
            tables.append(_queue_table(c))
    if c.host_stalls.steps and c.host_stalls.main_tid >= 0 and (c.launch or c.host_stalls.stalls):
        tables.append(_stalls_table(c))
    return tables, _sentences(s)
