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
from tb_paddle_profile.analysis.collectives import SEND_RECV
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tb_paddle_profile.v1 import summary_pb2 as pb

GPU = SHARED_TRACES / "gpu-synthetic-2rank"
SIZES = {"bfloat16": 2, "float32": 4, "float16": 2}
# what is written into each operator: its inputs' shapes and dtypes
SHAPES = {"c_allreduce_sum dygraph": ({"X": [[4, 1024, 512]]}, {"X": ["bfloat16"]}),
          "send_v2 dygraph": ({"X": [[2, 1024, 768]], "Y": [[16]]}, {"X": ["float32"], "Y": ["float16"]})}


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
    assert p2p[keys.index("busbw_gbps")].number == pytest.approx(algbw, rel=1e-4)   # send/recv: x 1
    assert p2p[keys.index("of_nvlink")].number == pytest.approx(algbw / 450, rel=1e-4)
    assert p2p[keys.index("of_network")].number == pytest.approx(algbw / 50, rel=1e-4)
    ar = by_kind[("MP", "all_reduce")]
    assert ar[keys.index("algbw_gbps")].number == pytest.approx(2 * ar_bytes / (sum(ar_durs) * 1e-9) / 1e9, rel=1e-4)
    assert ar[keys.index("busbw_gbps")].missing   # needs the group size, which one trace does not tell
    assert by_kind[("DP", "all_reduce")][keys.index("bytes")].number == 0


def test_the_csv_of_the_table(tmp_path):
    doc, path = _with_shapes(tmp_path)
    exp = _expected(doc)
    out = subprocess.run([sys.executable, "-m", "tb_paddle_profile", "summary", str(path), "--format", "csv",
                          "--table", "comm_bandwidth"], cwd=REPO, capture_output=True, text=True, timeout=120)
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
