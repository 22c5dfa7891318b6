"""Communicator of each collective and compute/communication overlap per stream, communicator and
phase (issue 30.1): against the generator's planted axis of every instance (tbp_synth.truth) and
against intervals recomputed from the trace JSON."""

import collections

import pytest

from support.comm_json import by_cat, events, is_nccl, overlap, runtime_by_corr, span, tid_of, union
from support.paths import EXTRA_TRACES, SHARED_TRACES
from tb_paddle_profile.analysis.collectives import KIND_LABELS
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tb_paddle_profile.v1 import summary_pb2 as pb
from tbp_synth.config import (
    COMPUTE_STREAM,
    DP_STREAM,
    MP_STREAM,
    PP_BWD_STREAM,
    PP_FWD_STREAM,
    PP_GROUP_STREAM,
    SynthConfig,
)
from tbp_synth.driver import generate
from tbp_synth.truth import load_truth

AXES = {"mp": pb.COMM_AXIS_MP, "dp": pb.COMM_AXIS_DP, "pp": pb.COMM_AXIS_PP, "pp_group": pb.COMM_AXIS_PP_GROUP}
# the generator's streams (tbp_synth/config.py); the cross-entropy all-reduces of MP run on the compute stream
STREAM_AXIS = {
    MP_STREAM: pb.COMM_AXIS_MP,
    COMPUTE_STREAM: pb.COMM_AXIS_MP,
    DP_STREAM: pb.COMM_AXIS_DP,
    PP_FWD_STREAM: pb.COMM_AXIS_PP,
    PP_BWD_STREAM: pb.COMM_AXIS_PP,
    PP_GROUP_STREAM: pb.COMM_AXIS_PP_GROUP,
}
PHASES = {"Forward": 1, "Backward": 2, "Optimization": 3}
RANKS = [0, 3, 5, 6]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("overlap")
    generate(SynthConfig(dp=2, mp=2, pp=2, steps=2, layers=4, micro_batches=2, vocab=8192), str(out), ranks=RANKS)
    truth = load_truth(str(out))
    files = {r["rank"]: out / r["file"] for r in truth.ranks if r["written"]}
    return truth, {r: (f, summarize_file(str(f))) for r, f in files.items()}


def test_each_instance_has_its_planted_communicator(run):
    truth, ranks = run
    c = truth.columns
    kinds, axes = list(c["kind_names"]), list(c["axis_names"])
    planted = {}
    for i in range(len(c["inst_step"])):
        for m in range(c["inst_ptr"][i], c["inst_ptr"][i + 1]):
            key = (int(c["mem_rank"][m]), int(c["inst_step"][i]), kinds[c["inst_kind"][i]], int(c["mem_ordinal"][m]))
            planted[key] = AXES[axes[c["inst_axis"][i]]]
    checked = collections.Counter()
    for r, (_, s) in ranks.items():
        col = s.parallel.collectives
        assert len(s.comm.instances.axis) == len(col.kind)
        for i in range(len(col.kind)):
            key = (r, col.step[i], KIND_LABELS[col.kind[i]], col.ordinal[i])
            assert s.comm.instances.axis[i] == planted[key], key
            checked[s.comm.instances.axis[i]] += 1
    assert set(checked) == set(AXES.values())  # every communicator kind met


def _expected(path):
    """(stream, axis, phase) → [calls, time, hidden] from the JSON, the axis from the generator's streams."""
    evs = events(path)
    kernels = by_cat(evs, "Kernel")
    compute = [span(k) for k in kernels if not is_nccl(k)]
    rt = runtime_by_corr(evs)
    phases = [(tid_of(e), span(e), PHASES[e["cat"]]) for e in by_cat(evs, *PHASES)]
    groups = collections.defaultdict(list)
    for k in kernels:
        if not is_nccl(k):
            continue
        launch = rt[k["args"]["correlation id"]]
        t0, tid = span(launch)[0], tid_of(launch)
        around = [(s, ph) for t, s, ph in phases if t == tid and s[0] <= t0 < s[1]]
        phase = min(around)[1] if around else 0  # the outermost: the earliest start
        groups[(k["args"]["stream"], STREAM_AXIS[k["args"]["stream"]], phase)].append(span(k))
    return {key: [len(v), sum(e - s for s, e in union(v)), overlap(v, compute)] for key, v in groups.items()}


def test_overlap_against_the_json(run):
    _, ranks = run
    hidden_somewhere = 0
    for r, (path, s) in ranks.items():
        exp = _expected(path)
        got = {(o.stream, o.axis, o.phase): [o.calls, o.time_ns, o.hidden_ns] for o in s.comm.overlap}
        assert set(got) == set(exp), r
        for key, (calls, time_ns, hidden) in exp.items():
            assert got[key][0] == calls, (r, key)
            assert abs(got[key][1] - time_ns) <= 2 * calls and abs(got[key][2] - hidden) <= 4 * calls, (r, key)
            hidden_somewhere += hidden
        for o in s.comm.overlap:
            assert o.exposed_ns == o.time_ns - o.hidden_ns
        # the table: one row per entry, the hidden share of each
        t = find_table(summary_display(s), "comm_overlap")
        share = [c.key for c in t.columns].index("hidden_share")
        assert len(t.rows) == len(s.comm.overlap)
        for row, o in zip(t.rows, s.comm.overlap):
            assert row.cells[share].number == pytest.approx(o.hidden_ns / o.time_ns)
    assert hidden_somewhere > 0  # the run has communication under compute


def test_hidden_time_is_the_overlap_counted_nanosecond_by_nanosecond():
    """ranges.intersect_measure (the hidden time of each row) against a brute-force count over a
    boolean timeline, one cell per nanosecond, on random unions (touching, nested, empty and
    zero-length ranges included)."""
    import numpy as np

    from tb_paddle_profile.analysis import ranges

    rng = np.random.default_rng(5)
    for _ in range(500):
        span = int(rng.choice([8, 60, 400]))
        parts = []
        for n in rng.integers(0, 25, 2).tolist():
            s = rng.integers(0, span, n)
            parts.append((s, s + rng.integers(0, span // 4 + 1, n)))
        cells = []
        for s, e in parts:
            c = np.zeros(2 * span, dtype=bool)
            for x, y in zip(s.tolist(), e.tolist()):
                c[x:y] = True
            cells.append(c)
        a, b = (ranges.union(s, e) for s, e in parts)
        assert ranges.intersect_measure(a, b) == int((cells[0] & cells[1]).sum())


def _printed_communication(path):
    """(Communication, Overlap) in ns from Paddle's printed Distribution Summary beside a real trace, and the
    half unit of its rounding; None without one."""
    import re

    base = path.name.split(".paddle_trace")[0]
    for txt in [
        path.parent / f"{base}.summary.CPUTotal.us.txt",
        path.parent / f"paddle_summary.{base.split('_')[0]}.CPUTotal.ms.txt",
    ]:
        if txt.is_file():
            text = txt.read_text()
            if "Distribution Summary" not in text:
                return None
            part = text[text.index("Distribution Summary") :]
            scale = {"us": 1e3, "ms": 1e6}[re.search(r"Time unit: (\w+)", part).group(1)]
            comm, ov = (float(re.search(rf"\n  {k}\s+([\d.]+)", part).group(1)) for k in ("Communication", "Overlap"))
            return comm * scale, ov * scale, 0.005 * scale
    return None


def _real_traces():
    out = sorted((SHARED_TRACES / "cpu-gpt-2rank-gloo").glob("*.paddle_trace.json"))
    fleet = EXTRA_TRACES / "real-fleet-cpu-gloo"
    if fleet.is_dir():
        out += sorted(fleet.glob("*/*.paddle_trace.json.gz"))
    return out


@pytest.mark.parametrize("path", _real_traces(), ids=lambda p: f"{p.parent.name}/{p.name[:5]}")
def test_real_traces_communication_is_paddles_printed_one(path):
    """On Paddle's own CPU traces the time of the communicators (the union of each one's instances, summed)
    is the Communication Paddle printed for the same profile, and none of it is hidden, as Paddle's Overlap
    says. Paddle's table also counts, by name, operators holding "allreduce": in the *_shim runs that is only
    Fleet's PyLayer grad node Global_GradNodePyLayer_mp_allreduce_eager, which communicates nothing (the
    shim routes MP's all-reduce around it) and which the collectives do not count: there the communicators'
    time is 0 and Paddle's Communication is those grad nodes' time."""
    printed = _printed_communication(path)
    if printed is None:
        pytest.skip("Paddle printed no Distribution Summary for this rank (no communication event)")
    comm, overlap_ns, tol = printed
    s = summarize_file(str(path))
    assert s.parallel.timeline == pb.TIMELINE_HOST
    time_ns = sum(s.comm.axes.time_ns)
    assert sum(s.comm.axes.hidden_ns) == 0 and overlap_ns == 0
    import gzip
    import json

    evs = json.loads(gzip.open(path).read())["traceEvents"] if path.suffix == ".gz" else events(path)
    names = {e["name"].split("[")[0] for e in by_cat(evs, "Operator") if "allreduce" in e["name"].lower()}
    if names:
        assert names == {"Global_GradNodePyLayer_mp_allreduce_eager"} and time_ns == 0
        grads = union([span(e) for e in by_cat(evs, "Operator") if e["name"].startswith(tuple(names))])
        assert abs(sum(e - s_ for s_, e in grads) - comm) <= tol + 1
    else:
        assert comm > 0 and abs(time_ns - comm) <= tol
