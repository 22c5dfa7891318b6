"""Collectives by kind and the per-step time breakdown of one rank (analysis/collectives.py).

Checked against counts made by hand from the trace JSON (plain `json`, not our reader) and
against the ground truth the synthetic generator planted in its manifest.
"""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from support.paths import REPO, SHARED_TRACES
from tb_paddle_profile.analysis.collectives import KIND_LABELS, host_kind, is_communication_kernel, kind_of_name
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.trace import event_types as et
from tbp_synth import SynthConfig, generate
from tb_paddle_profile.v1 import summary_pb2 as pb

GPU_2RANK = SHARED_TRACES / "gpu-synthetic-2rank"
EXAMPLE_2RANK = REPO / "examples" / "profiler_log" / "gpt-2rank"


@pytest.mark.parametrize(
    "name, kind",
    [
        ("c_allreduce_sum dygraph", "all_reduce"),
        ("all_reduce dygraph", "all_reduce"),
        ("c_allgather dygraph", "all_gather"),
        ("all_gather", "all_gather"),
        ("reduce_scatter dygraph", "reduce_scatter"),
        ("c_reducescatter", "reduce_scatter"),
        ("c_broadcast dygraph", "broadcast"),
        ("send_v2 dygraph", "send_recv"),
        ("recv_v2 dygraph", "send_recv"),
        ("p_send", "send_recv"),
        ("partial_recv", "send_recv"),
        ("alltoall dygraph", "all_to_all"),
        ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_reduce"),
        ("ncclKernel_AllReduce_RING_LL_Sum_half(ncclWorkElem)", "all_reduce"),
        ("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "send_recv"),
        ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "send_recv"),
        ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "all_gather"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "reduce_scatter"),
        ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclWorkElem)", "broadcast"),
    ],
)
def test_kind_from_name(name, kind):
    assert KIND_LABELS[kind_of_name(name)] == kind


@pytest.mark.parametrize(
    "name",
    [
        "matmul dygraph",
        "broadcast_tensors dygraph",
        "gather dygraph",
        "scatter dygraph",
        "reduce_sum dygraph",
        "c_identity dygraph",
        "Global_MatmulGradNode",
    ],
)
def test_tensor_operators_are_not_communication(name):
    assert host_kind(name, et.OPERATOR) == pb.COLLECTIVE_KIND_UNSPECIFIED


def test_communication_events_without_a_kind_are_other():
    assert host_kind("allreduce_grads", et.COMMUNICATION) == pb.COLLECTIVE_KIND_ALL_REDUCE
    assert host_kind("my_sync_point", et.COMMUNICATION) == pb.COLLECTIVE_KIND_OTHER
    assert host_kind("c_reduce_sum dygraph", et.OPERATOR) == pb.COLLECTIVE_KIND_OTHER
    assert host_kind("barrier dygraph", et.OPERATOR) == pb.COLLECTIVE_KIND_OTHER
    assert is_communication_kernel("ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)")
    assert not is_communication_kernel("void phi::funcs::LayerNormForward<float>(float const*)")


# ------------------------------------------------------------ counted by hand from the JSON


def _name(e):
    return e["name"].rsplit("[", 1)[0]


def _start(e):
    return round(float(e["args"]["start_time"].split()[0]) * 1000)


def _dur(e):
    return round(e["dur"] * 1000)


def _union(iv):
    out = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _minus(a, b):
    """Length of union(a) not covered by union(b), by walking both lists."""
    total = 0
    for s, e in _union(a):
        cur = s
        for bs, be in _union(b):
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                total += bs - cur
            cur = max(cur, be)
        if cur < e:
            total += e - cur
    return total


def _hand_count(path: Path):
    """Per (step, kind): calls and summed durations of NCCL kernels (step of their launch),
    summed durations of the host communication events, and the exposed kernel time."""
    events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
    steps = {int(_name(e).split("#")[1]): (_start(e), _start(e) + _dur(e)) for e in events if e["cat"] == "ProfileStep"}
    launch = {e["args"]["correlation id"]: _start(e) for e in events if e["cat"] == "CudaRuntime"}

    def step_of(t):
        return next(n for n, (a, b) in steps.items() if a <= t < b)

    counts = defaultdict(lambda: {"calls": 0, "device_ns": 0, "host_ns": 0})
    comm, compute = defaultdict(list), []
    for e in events:
        n = _name(e)
        if e["cat"] == "Kernel" and n.startswith("nccl"):
            kind = "all_reduce" if "_AllReduce_" in n else "send_recv" if "_SendRecv" in n else "?"
            c = counts[(step_of(launch[e["args"]["correlation id"]]), kind)]
            c["calls"] += 1
            c["device_ns"] += _dur(e)
            comm[kind].append((_start(e), _start(e) + _dur(e)))
        elif e["cat"] == "Kernel":
            compute.append((_start(e), _start(e) + _dur(e)))
        if e["cat"] == "Communication" or n in ("c_allreduce_sum dygraph", "send_v2 dygraph"):
            kind = "send_recv" if n.startswith("send") else "all_reduce"
            counts[(step_of(_start(e)), kind)]["host_ns"] += _dur(e)
    for (step, kind), c in counts.items():
        lo, hi = steps[step]
        clip = [(max(s, lo), min(e, hi)) for s, e in comm[kind] if min(e, hi) > max(s, lo)]
        c["exposed_ns"] = _minus(clip, compute)
    return counts


@pytest.mark.parametrize("rank", [0, 1])
def test_shared_gpu_trace_collectives_match_a_count_by_hand(shared_traces, rank):
    path = next(GPU_2RANK.glob(f"rank{rank}_*.paddle_trace.json"))
    expected = _hand_count(path)
    s = summarize_file(str(path))
    got = {
        (st.step, KIND_LABELS[k.kind]): {
            "calls": k.calls,
            "device_ns": k.device_ns,
            "host_ns": k.host_ns,
            "exposed_ns": k.exposed_ns,
        }
        for st in s.parallel.steps
        for k in st.kinds
    }
    assert got == {k: dict(v) for k, v in expected.items()}
    # By hand: per step one c_allreduce_sum (MP), one send_v2 (PP), one allreduce_grads (DP) → 2 + 1.
    assert {k: v["calls"] for k, v in got.items()} == {
        (2, "all_reduce"): 2,
        (2, "send_recv"): 1,
        (3, "all_reduce"): 2,
        (3, "send_recv"): 1,
    }
    assert s.parallel.timeline == pb.TIMELINE_DEVICE


def test_shared_gpu_trace_instances_in_launch_order(shared_traces):
    s = summarize_file(str(next(GPU_2RANK.glob("rank0_*.paddle_trace.json"))))
    c, names = s.parallel.collectives, s.parallel.names
    rows = list(
        zip(c.step, [KIND_LABELS[k] for k in c.kind], c.ordinal, [names[i] for i in c.op], c.stream, c.direction)
    )
    assert rows == [
        (2, "all_reduce", 0, "c_allreduce_sum dygraph", 13, pb.P2P_DIRECTION_UNSPECIFIED),
        (2, "send_recv", 0, "send_v2 dygraph", 14, pb.P2P_DIRECTION_SEND),
        (2, "all_reduce", 1, "allreduce_grads", 13, pb.P2P_DIRECTION_UNSPECIFIED),
        (3, "all_reduce", 0, "c_allreduce_sum dygraph", 13, pb.P2P_DIRECTION_UNSPECIFIED),
        (3, "send_recv", 0, "send_v2 dygraph", 14, pb.P2P_DIRECTION_SEND),
        (3, "all_reduce", 1, "allreduce_grads", 13, pb.P2P_DIRECTION_UNSPECIFIED),
    ]
    # The step splits exactly: compute + exposed communication + exposed memcpy + idle.
    for st in s.parallel.steps:
        assert (
            st.compute_ns + st.exposed_communication_ns + st.exposed_memory_ns + st.idle_ns
            == st.range.end_ns - st.range.start_ns
        )


def test_cpu_trace_uses_the_host_timeline():
    """The real gloo run: one Communication event per step and no device events."""
    for path in sorted(EXAMPLE_2RANK.glob("*.paddle_trace.json")):
        events = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("ph") == "X"]
        steps = sorted((_start(e), _start(e) + _dur(e)) for e in events if e["cat"] == "ProfileStep")
        comm = sorted((_start(e), _dur(e)) for e in events if e["cat"] == "Communication")
        s = summarize_file(str(path))
        assert s.parallel.timeline == pb.TIMELINE_HOST
        assert len(s.parallel.steps) == len(steps) == len(comm) == 4
        for st, (lo, hi), (c_start, c_dur) in zip(s.parallel.steps, steps, comm):
            assert lo <= c_start < hi
            (k,) = st.kinds
            assert (KIND_LABELS[k.kind], k.calls, k.host_ns, k.device_ns) == ("all_reduce", 1, c_dur, 0)
            assert k.exposed_ns == st.exposed_communication_ns == c_dur  # it blocks the host
        assert list(s.parallel.collectives.device_id) == [-1] * 4  # host instances


# ------------------------------------------------------------ against the generator's manifest


def _within(got, planted, rel=0.01, abs_ns=0):
    return abs(got - planted) <= max(rel * abs(planted), abs_ns)


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory):
    cfg = SynthConfig(dp=2, mp=2, pp=2, steps=3, slow_rank=5, slow_factor=1.5, pp_group_collectives=False)
    res = generate(cfg, str(tmp_path_factory.mktemp("dp2mp2pp2")))
    return res, {r: summarize_file(p) for r, p in res.traces.items()}


def test_exposed_communication_matches_the_planted_truth(slow_run):
    res, summaries = slow_run
    for entry in res.manifest["ranks"]:
        s = summaries[entry["rank"]]
        assert len(s.parallel.steps) == len(entry["steps"])
        for st, truth in zip(s.parallel.steps, entry["steps"]):
            assert st.step == truth["step"]
            kinds = {KIND_LABELS[k.kind]: k for k in st.kinds}
            comm = truth["comm"]
            assert _within(st.range.end_ns - st.range.start_ns, truth["step_time_ns"])
            assert _within(st.exposed_communication_ns, truth["exposed_comm_ns"])
            assert _within(st.compute_ns, truth["compute_busy_ns"])
            assert _within(kinds["send_recv"].exposed_ns, comm["pp_sendrecv"]["exposed_ns"])
            assert kinds["send_recv"].calls == comm["pp_sendrecv"]["calls"]
            # all_reduce holds the model- and the data-parallel all-reduces: calls add up, and
            # its exposed time (one union) lies between the larger of the two and their sum.
            ar = kinds["all_reduce"]
            mp, dp = comm["mp_allreduce"], comm["dp_allreduce"]
            assert ar.calls == mp["calls"] + dp["calls"]
            assert _within(ar.device_ns, mp["kernel_ns"] + dp["kernel_ns"])
            assert ar.exposed_ns >= 0.99 * max(mp["exposed_ns"], dp["exposed_ns"])
            assert ar.exposed_ns <= 1.01 * (mp["exposed_ns"] + dp["exposed_ns"])


def test_data_parallel_all_reduce_alone_matches_exactly(tmp_path):
    """Without model parallelism every all-reduce is the data-parallel one."""
    res = generate(SynthConfig(dp=2, mp=1, pp=2, steps=2, pp_group_collectives=False), str(tmp_path))
    for entry in res.manifest["ranks"]:
        s = summarize_file(res.traces[entry["rank"]])
        for st, truth in zip(s.parallel.steps, entry["steps"]):
            kinds = {KIND_LABELS[k.kind]: k for k in st.kinds}
            dp = truth["comm"]["dp_allreduce"]
            assert truth["comm"]["mp_allreduce"]["calls"] == 0
            assert kinds["all_reduce"].calls == dp["calls"]
            assert _within(kinds["all_reduce"].exposed_ns, dp["exposed_ns"])
            assert _within(st.exposed_communication_ns, truth["exposed_comm_ns"])


def _device_cats():
    return ("Kernel", "Memcpy", "Memset")


@pytest.mark.parametrize("rank", [0, 5])
def test_dataloader_and_first_device_work_match_a_count_by_hand(slow_run, rank):
    """Per step: the union of the Dataloader events clipped to the step, and the time from the step's
    start to the first kernel/memcpy/memset that starts in it (from the JSON with plain `json`)."""
    res, summaries = slow_run
    events = [e for e in json.loads(Path(res.traces[rank]).read_text())["traceEvents"] if e.get("ph") == "X"]
    steps = {int(_name(e).split("#")[1]): (_start(e), _start(e) + _dur(e)) for e in events if e["cat"] == "ProfileStep"}
    loader = [(_start(e), _start(e) + _dur(e)) for e in events if e["cat"] == "Dataloader"]
    device = sorted(_start(e) for e in events if e["cat"] in _device_cats())
    got = {st.step: (st.dataloader_ns, st.first_device_ns) for st in summaries[rank].parallel.steps}
    expected = {}
    for n, (lo, hi) in steps.items():
        clip = [(max(s, lo), min(e, hi)) for s, e in loader if min(e, hi) > max(s, lo)]
        first = next((t for t in device if lo <= t < hi), None)
        expected[n] = (sum(e - s for s, e in _union(clip)), first - lo if first is not None else -1)
    assert got == expected
    assert all(d > 0 and f > 0 for d, f in got.values())  # every step loads a batch before its first kernel
