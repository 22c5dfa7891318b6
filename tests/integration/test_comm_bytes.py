"""Bytes and bus bandwidth per collective and communicator (issue 30.6), against the trace JSON.

Paddle 3.3.1 writes empty input_shapes, so the GPU-shaped trace gets shapes written into its
communication operators here, in Paddle's format; the expected bytes are the products of those dims
times the dtype sizes, and the bandwidths those bytes over the NCCL kernels' durations in the JSON.
"""

import json
import math
import subprocess
import sys

import pytest

from support.paths import REPO, SHARED_TRACES
from tb_paddle_profile.analysis.comm_bandwidth import bus_factor
from tb_paddle_profile.analysis.collectives import ALL_GATHER, ALL_REDUCE, ALL_TO_ALL, BROADCAST, REDUCE_SCATTER
from tb_paddle_profile.analysis.collectives import KIND_LABELS, SEND_RECV
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tb_paddle_profile.v1 import summary_pb2 as pb

GPU = SHARED_TRACES / "gpu-synthetic-2rank"
SIZES = {"bfloat16": 2, "float32": 4, "float16": 2}
# what is written into each operator: its inputs' shapes and dtypes
SHAPES = {
    "c_allreduce_sum dygraph": ({"X": [[4, 1024, 512]]}, {"X": ["bfloat16"]}),
    "send_v2 dygraph": ({"X": [[2, 1024, 768]], "Y": [[16]]}, {"X": ["float32"], "Y": ["float16"]}),
}


def _with_shapes(tmp_path):
    src = sorted(GPU.glob("rank0_*.paddle_trace.json"))[0]
    doc = json.loads(src.read_text())
    for e in doc["traceEvents"]:
        name = e.get("name", "").split("[")[0]
        if e.get("cat") == "Operator" and name in SHAPES:
            e["args"]["input_shapes"], e["args"]["input_dtypes"] = SHAPES[name]
    out = tmp_path / src.name
    out.write_text(json.dumps(doc))
    return doc, out


def _expected(doc):
    """Per operator name: its bytes, and the durations (ns) of the NCCL kernels its launches started."""
    ev = doc["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "Operator" and e["name"].split("[")[0] in SHAPES]
    launches = {e["args"]["correlation id"]: e for e in ev if e.get("cat") == "CudaRuntime"}
    kernels = [e for e in ev if e.get("cat") == "Kernel" and "nccl" in e["name"].lower()]
    out = {}
    for name, (shapes, dtypes) in SHAPES.items():
        nbytes = sum(math.prod(shape) * SIZES[dtypes[k][i]] for k, lst in shapes.items() for i, shape in enumerate(lst))
        durs = []
        for k in kernels:
            rt = launches[k["args"]["correlation id"]]
            if any(o["name"].split("[")[0] == name and o["ts"] <= rt["ts"] <= o["ts"] + o["dur"] for o in ops):
                durs.append(round(k["dur"] * 1000))
        out[name] = (nbytes, durs)
    return out


def test_bytes_and_bandwidth_from_the_shapes(tmp_path):
    doc, path = _with_shapes(tmp_path)
    exp = _expected(doc)
    s = summarize_file(str(path))
    rows = {(b.axis, b.kind): b for b in s.comm.bandwidth}
    ar_bytes, ar_durs = exp["c_allreduce_sum dygraph"]
    p2p_bytes, p2p_durs = exp["send_v2 dygraph"]
    assert ar_bytes == 4 * 1024 * 512 * 2 and len(ar_durs) == 2 and len(p2p_durs) == 2
    mp = rows[(pb.COMM_AXIS_MP, ALL_REDUCE)]
    assert (mp.calls, mp.calls_with_bytes, mp.bytes) == (2, 2, 2 * ar_bytes)
    assert abs(mp.duration_ns - sum(ar_durs)) <= 4
    assert mp.max_algbw == pytest.approx(ar_bytes / (min(ar_durs) * 1e-9), rel=1e-4)
    pp = rows[(pb.COMM_AXIS_PP, SEND_RECV)]
    assert (pp.calls_with_bytes, pp.bytes) == (2, 2 * p2p_bytes)
    # the DP all-reduce is a Communication event: Paddle writes no shapes for those
    dp = rows[(pb.COMM_AXIS_DP, ALL_REDUCE)]
    assert (dp.calls, dp.calls_with_bytes, dp.bytes) == (2, 0, 0)

    t = find_table(summary_display(s), "comm_bandwidth")
    keys = [c.key for c in t.columns]
    by_kind = {(r.cells[0].text, r.cells[1].text): r.cells for r in t.rows}
    p2p = by_kind[("PP", "send_recv")]
    algbw = 2 * p2p_bytes / (sum(p2p_durs) * 1e-9) / 1e9
    assert p2p[keys.index("algbw_gbps")].number == pytest.approx(algbw, rel=1e-4)
    assert p2p[keys.index("busbw_gbps")].number == pytest.approx(algbw, rel=1e-4)  # send/recv: x 1
    assert p2p[keys.index("of_nvlink")].number == pytest.approx(algbw / 450, rel=1e-4)
    assert p2p[keys.index("of_network")].number == pytest.approx(algbw / 50, rel=1e-4)
    ar = by_kind[("MP", "all_reduce")]
    assert ar[keys.index("algbw_gbps")].number == pytest.approx(2 * ar_bytes / (sum(ar_durs) * 1e-9) / 1e9, rel=1e-4)
    assert ar[keys.index("busbw_gbps")].missing  # needs the group size, which one trace does not tell
    assert by_kind[("DP", "all_reduce")][keys.index("bytes")].number == 0


def test_the_csv_of_the_table(tmp_path):
    doc, path = _with_shapes(tmp_path)
    exp = _expected(doc)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tb_paddle_profile",
            "summary",
            str(path),
            "--format",
            "csv",
            "--table",
            "comm_bandwidth",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    head = lines[0].split(",")
    rows = {tuple(line.split(",")[:2]): dict(zip(head, line.split(","))) for line in lines[1:]}
    assert int(rows[("PP", "send_recv")]["bytes"]) == 2 * exp["send_v2 dygraph"][0]
    assert int(rows[("MP", "all_reduce")]["bytes"]) == 2 * exp["c_allreduce_sum dygraph"][0]


def test_a_trace_without_shapes_has_no_bytes():
    s = summarize_file(str(sorted(GPU.glob("rank0_*.paddle_trace.json"))[0]))
    assert s.comm.bandwidth and all(b.bytes == 0 and b.calls_with_bytes == 0 for b in s.comm.bandwidth)
    t = find_table(summary_display(s), "comm_bandwidth")
    col = [c.key for c in t.columns].index("algbw_gbps")
    assert all(r.cells[col].missing for r in t.rows)


def test_nccl_bus_factors():
    # nccl-tests PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather / reduce-scatter (n-1)/n, broadcast 1
    assert bus_factor(ALL_REDUCE, 8) == 1.75 and bus_factor(ALL_REDUCE, 2) == 1.0
    assert bus_factor(ALL_GATHER, 4) == 0.75 and bus_factor(REDUCE_SCATTER, 8) == 0.875
    assert bus_factor(ALL_TO_ALL, 2) == 0.5
    assert bus_factor(BROADCAST) == 1.0 and bus_factor(SEND_RECV) == 1.0
    assert bus_factor(ALL_REDUCE) is None


# ---------------------------------------------------------------- against the generator's planted bytes

PLANTED_SEQ = (1024, 512)  # the two replicas' activations differ: so do their MP and PP bytes


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """DP2 x MP2 x PP2 with record_shapes: the communication operators record their inputs (tbp_synth),
    each instance's payload is the truth's inst_bytes and its members' durations the truth's."""
    from tbp_synth.config import SynthConfig
    from tbp_synth.driver import generate
    from tbp_synth.truth import load_truth

    out = tmp_path_factory.mktemp("planted_bytes")
    generate(
        SynthConfig(dp=2, mp=2, pp=2, layers=2, micro_batches=2, steps=2, record_shapes=True, dp_seq_lens=PLANTED_SEQ),
        str(out),
    )
    truth = load_truth(str(out))
    summaries = {r["rank"]: summarize_file(str(out / r["file"])) for r in truth.ranks}
    return out, truth, summaries


def _planted_members(truth):
    """(rank, step, kind, ordinal) → (axis, planted bytes, member duration ns, sender?) of every member."""
    c = truth.columns
    kinds, axes = list(c["kind_names"]), list(c["axis_names"])
    out = {}
    for i in range(len(c["inst_step"])):
        a, b = c["inst_ptr"][i], c["inst_ptr"][i + 1]
        for j in range(a, b):
            key = (int(c["mem_rank"][j]), int(c["inst_step"][i]), kinds[c["inst_kind"][i]], int(c["mem_ordinal"][j]))
            out[key] = (
                axes[c["inst_axis"][i]],
                int(c["inst_bytes"][i]),
                int(c["mem_end_ns"][j] - c["mem_start_ns"][j]),
                j == a,
            )
    return out


def test_each_instances_bytes_are_the_planted_ones(planted):
    _, truth, summaries = planted
    members = _planted_members(truth)
    seen = {"mp": 0, "pp": 0, "pp_group": 0}
    by_seq = {}
    for rank, s in summaries.items():
        col = s.parallel.collectives
        for i in range(len(col.kind)):
            axis, nbytes, _, first = members[(rank, col.step[i], KIND_LABELS[col.kind[i]], col.ordinal[i])]
            if col.bytes[i]:
                assert col.bytes[i] == nbytes, (rank, i)
                seen[axis] += 1
                if axis == "mp":
                    by_seq.setdefault(truth.ranks[rank]["dp"], set()).add(nbytes)
            elif axis == "pp":  # a send records its activation, a receive nothing (recv_v2 has no input)
                assert not first, (rank, i)
            elif axis == "pp_group":
                raise AssertionError(f"rank {rank}: a pipeline-group collective without its 4 bytes")
            # dp: the reducer's Communication events record no shapes; mp: the grad nodes' and the
            # cross-entropy's all-reduces neither
    assert all(seen.values()), seen
    # the activation bytes follow each replica's sequence length (b * s * H * 2 bytes of bf16)
    h, b = truth.config["hidden"], truth.config["micro_batch_size"]
    assert by_seq == {dp: {b * s * h * 2} for dp, s in enumerate(PLANTED_SEQ)}


def test_bytes_and_bandwidth_per_communicator_are_the_planted_ones(planted):
    _, truth, summaries = planted
    members = _planted_members(truth)
    axes = {pb.COMM_AXIS_MP: "mp", pb.COMM_AXIS_PP: "pp", pb.COMM_AXIS_PP_GROUP: "pp_group", pb.COMM_AXIS_DP: "dp"}
    for rank, s in summaries.items():
        col = s.parallel.collectives
        want = {}
        for i in range(len(col.kind)):
            axis, nbytes, dur, _ = members[(rank, col.step[i], KIND_LABELS[col.kind[i]], col.ordinal[i])]
            acc = want.setdefault((axis, KIND_LABELS[col.kind[i]]), [0, 0, 0])
            if col.bytes[i]:
                acc[0] += 1
                acc[1] += nbytes
                acc[2] += dur
        for b in s.comm.bandwidth:
            calls, nbytes, dur = want[(axes[b.axis], KIND_LABELS[b.kind])]
            assert (b.calls_with_bytes, b.bytes) == (calls, nbytes), (rank, b)
            assert b.duration_ns == dur, (rank, b)  # the planted durations: waits included


def test_bus_bandwidth_per_communicator_across_ranks_is_the_planted_one(planted):
    from tb_paddle_profile.analysis.crossrank import analyze_run

    _, truth, summaries = planted
    rp = analyze_run(list(summaries.values()))
    assert (rp.topology.dp, rp.topology.mp, rp.topology.pp) == (2, 2, 2)
    factor = {"all_reduce": 2 * (2 - 1) / 2, "broadcast": 1.0, "send_recv": 1.0}  # groups of 2 ranks
    sums = {}
    members = _planted_members(truth)
    for rank, s in summaries.items():
        col = s.parallel.collectives
        for i in range(len(col.kind)):
            if not col.bytes[i]:
                continue
            kind = KIND_LABELS[col.kind[i]]
            axis, nbytes, dur, _ = members[(rank, col.step[i], kind, col.ordinal[i])]
            acc = sums.setdefault(axis, [0, 0.0, 0])
            acc[0] += nbytes
            acc[1] += nbytes * factor[kind]
            acc[2] += dur
    by_axis = {pb.COMM_AXIS_MP: "mp", pb.COMM_AXIS_PP: "pp", pb.COMM_AXIS_PP_GROUP: "pp_group"}
    assert {by_axis.get(a.axis) for a in rp.comm.axes if a.busbw} == set(sums)
    for a in rp.comm.axes:
        if a.axis in by_axis:
            nbytes, bus, dur = sums[by_axis[a.axis]]
            assert a.algbw == pytest.approx(nbytes / (dur * 1e-9), rel=1e-9)
            assert a.busbw == pytest.approx(bus / (dur * 1e-9), rel=1e-9)
        else:
            assert a.busbw == 0 and a.algbw == 0  # DP: no bytes recorded


def test_the_api_frames_of_bytes_and_bus_bandwidth(planted):
    """tbp.load's comm_bandwidth frame of a rank and tbp.load_run's comm_axes frame hold the planted bytes and
    the bus bandwidth of the run's communicators, in GB/s."""
    from tb_paddle_profile import api as tbp

    out, truth, summaries = planted
    members = _planted_members(truth)
    rank = 2  # dp0, the stage that sends its activations forward
    frame = tbp.load(str(out / truth.ranks[rank]["file"]), cache=False).table("comm_bandwidth")
    s = summaries[rank]
    col = s.parallel.collectives
    want = {}
    for i in range(len(col.kind)):
        axis, nbytes, _, _ = members[(rank, col.step[i], KIND_LABELS[col.kind[i]], col.ordinal[i])]
        if col.bytes[i]:
            want[(axis, KIND_LABELS[col.kind[i]])] = want.get((axis, KIND_LABELS[col.kind[i]]), 0) + nbytes
    names = {"MP": "mp", "PP": "pp", "PP group": "pp_group", "DP": "dp"}
    got = {(names[a], k): int(b) for a, k, b in zip(frame["axis"], frame["kind"], frame["bytes"]) if b}
    assert got == want and want
    run = tbp.load_run(str(out), cache=False).table("comm_axes")
    rp_axes = {}
    from tb_paddle_profile.analysis.crossrank import analyze_run

    for a in analyze_run(list(summaries.values())).comm.axes:
        rp_axes[a.axis] = a.busbw / 1e9
    labels = {pb.COMM_AXIS_MP: "MP", pb.COMM_AXIS_PP: "PP", pb.COMM_AXIS_PP_GROUP: "PP group"}
    for axis, label in labels.items():
        rows = run[run["axis"] == label]
        assert len(rows) and rows["busbw_gbps"].tolist() == pytest.approx([rp_axes[axis]] * len(rows), rel=1e-12)


def test_each_instance_in_the_table_with_its_planted_bytes_and_bandwidth(planted):
    """The Overview's comm_instances table, one row per collective instance: its communicator, the planted
    bytes where the trace records them, algbw = those bytes over the planted kernel duration, busbw the same
    for send/recv and broadcast (factor 1) and left to the view across ranks for all-reduces."""
    _, truth, summaries = planted
    members = _planted_members(truth)
    names = {"MP": "mp", "PP": "pp", "PP group": "pp_group", "DP": "dp"}
    checked = 0
    for rank, s in summaries.items():
        t = find_table(summary_display(s), "comm_instances")
        keys = [c.key for c in t.columns]
        col = s.parallel.collectives
        assert len(t.rows) == len(col.kind)
        for i, row in enumerate(t.rows):
            cell = dict(zip(keys, row.cells))
            axis, nbytes, dur, _ = members[(rank, col.step[i], KIND_LABELS[col.kind[i]], col.ordinal[i])]
            assert names[cell["axis"].text] == axis
            if cell["bytes"].missing:
                assert cell["algbw_gbps"].missing and cell["busbw_gbps"].missing
                continue
            assert cell["bytes"].number == nbytes
            alg = nbytes / (dur * 1e-9) / 1e9
            assert cell["algbw_gbps"].number == pytest.approx(alg, rel=1e-9)
            if cell["kind"].text in ("send_recv", "broadcast"):
                assert cell["busbw_gbps"].number == pytest.approx(alg, rel=1e-9)
                assert cell["of_nvlink"].number == pytest.approx(alg / 450, rel=1e-9)
            else:
                assert cell["busbw_gbps"].missing
            checked += 1
    assert checked
