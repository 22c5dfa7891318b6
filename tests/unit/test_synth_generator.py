"""The synthetic GPU-trace generator (tbp_synth).

Its files must look like Paddle's writer output, byte for byte where we have a reference, its
trees must follow Paddle's C++ nesting rules, and the tables its oracle asks Paddle for must be
the ones a reader of the JSON alone can reproduce. Sizes are kept tiny (a few thousand events,
spans of a few milliseconds, where the JSON's float32 times are still nanosecond-exact).
"""

import collections
import json
import re
from pathlib import Path

import msgspec
import pytest

from tbp_synth import SynthConfig, build_node_trees, build_rank, generate
from tbp_synth.__main__ import main as synth_main
from tbp_synth.generator import DP_STREAM, MANIFEST_NAME, MP_STREAM, Topology, _Catalog, _simulate_together, size_for
from tbp_synth.model import ROOT, ULLONG_MAX

# small model dimensions keep every span short
TINY = dict(hidden=512, heads=8, seq_len=256, vocab=8192)
FILE_NAME = re.compile(r"rank(\d+)_time_\d{4}(_\d\d){5}_\d{6}\.paddle_trace\.json$")


@pytest.fixture(scope="module", params=["gpu", "host"], ids=["slow-gpu-rank3", "slow-host-rank3"])
def run8(request, tmp_path_factory):
    """Rank 3 a straggler: its compute kernels slowed, or its host stalled before every step."""
    slow = dict(slow_rank=3, slow_factor=2.0) if request.param == "gpu" else dict(slow_host_rank=3, host_delay_us=500)
    cfg = SynthConfig(dp=2, mp=2, pp=2, steps=2, layers=2, micro_batches=2, **slow, **TINY)
    return generate(cfg, str(tmp_path_factory.mktemp("synth8")))


@pytest.fixture(scope="module")
def layout2(tmp_path_factory):
    cfg = SynthConfig(steps=1, layers=2, micro_batches=2, **TINY)
    return generate(cfg, str(tmp_path_factory.mktemp("synth2")), layout=2, ranks=[0])


def _load(path):
    return msgspec.json.decode(Path(path).read_bytes())


# ----------------------------------------------------------------------------- text shapes

_STR = re.compile(r'"(?:[^"\\]|\\.)*"')
_NUM = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


def _mask(line):
    """Keep keys and punctuation; replace values (and the thread-id keys of ExtraInfo) by "S"
    for strings and N for numbers."""
    out, pos = [], 0
    for m in _STR.finditer(line):
        out.append(_NUM.sub("N", line[pos : m.start()]))
        is_key = line[m.end() : m.end() + 1] == ":" and not m.group(0)[1:-1].isdigit()
        out.append(m.group(0) if is_key else '"S"')
        pos = m.end()
    out.append(_NUM.sub("N", line[pos:]))
    return "".join(out)


def _shapes(path, strip):
    """{event kind: set of masked line sequences} plus the masked text around traceEvents."""
    text = Path(path).read_text()
    head, rest = text.split('"traceEvents": [', 1)
    body, tail = rest.rsplit("{}", 1)
    shapes = collections.defaultdict(set)
    chunk = []
    for line in body.split("\n"):
        if not chunk and re.match(r"^\s*\{\s*$", line):
            chunk = [line]
        elif chunk:
            chunk.append(line)
            if re.match(r"^  \},\s*$", line):
                ev = json.loads("\n".join(chunk).rstrip().rstrip(","))
                tid = ev.get("tid")
                kind = (
                    ev.get("ph"),
                    ev.get("cat"),
                    ev["name"] if ev.get("ph") == "M" else None,
                    tid.split("(")[-1] if isinstance(tid, str) else "int",
                    "bp" in ev,
                )
                lines = [_mask(x.strip() if strip else x) for x in chunk]
                shapes[kind].add(tuple(x for x in lines if x or not strip))
                chunk = []
    return shapes, _mask(head), _mask(tail)


def _one(directory, pattern="rank0_*.paddle_trace.json"):
    found = sorted(Path(directory).glob(pattern))
    assert found, (directory, pattern)
    return found[0]


# ----------------------------------------------------------------------------- format


def test_traces_are_json_with_paddle_331_structure(run8):
    assert sorted(run8.traces) == list(range(8))
    for rank, path in run8.traces.items():
        assert FILE_NAME.search(path) and FILE_NAME.search(path).group(1) == str(rank)
        d = _load(path)
        assert list(d) == [
            "displayTimeUnit",
            "schemaVersion",
            "span_index",
            "deviceProperties",
            "traceEvents",
            "ExtraInfo",
        ]
        assert (d["schemaVersion"], d["span_index"]) == ("1.0.2", "0")
        assert [p["id"] for p in d["deviceProperties"]] == [rank % 8]
        events = d["traceEvents"]
        assert events[-1] == {}
        for e in events[:-1]:
            if e["ph"] == "X":
                assert re.search(r"\[\d+\.\d{3} (ms|us)\]$", e["name"]), e["name"]
        assert all(isinstance(v, str) for v in d["ExtraInfo"].values())
        assert list(d["ExtraInfo"])[-2:] == ["Process Cpu Utilization", "System Cpu Utilization"]
        cats = {e.get("cat") for e in events}
        assert {
            "Kernel",
            "Memcpy",
            "Memset",
            "CudaRuntime",
            "Communication",
            "Operator",
            "OperatorInner",
            "DygraphKernelLaunch",
            "Forward",
            "Backward",
            "Optimization",
            "Dataloader",
            "UserDefined",
            "PythonUserDefined",
            "Allocate",
            "Free",
            "ReservedAllocate",
        } <= cats


def test_event_layout_matches_the_shared_gpu_trace(run8, shared_traces):
    ref, _, _ = _shapes(_one(shared_traces / "gpu-synthetic-2rank"), strip=True)
    ours, _, _ = _shapes(run8.traces[0], strip=True)
    assert set(ref) <= set(ours), set(ref) - set(ours)
    for kind in ref:
        assert ours[kind] == ref[kind], kind


def test_layout_3_is_byte_exact_with_a_real_paddle_331_trace(run8, shared_traces):
    ref, ref_head, ref_tail = _shapes(_one(shared_traces / "cpu-gpt-2rank-gloo"), strip=False)
    ours, head, tail = _shapes(run8.traces[0], strip=False)
    for kind in set(ref) & set(ours):
        assert ours[kind] == ref[kind], kind
    assert len(set(ref) & set(ours)) >= 15
    assert tail == ref_tail
    assert head.startswith(ref_head.rstrip(" \n"))  # the CPU build writes no deviceProperties


def test_layout_2_matches_the_shared_trace_events_and_the_2x_header(layout2, shared_traces):
    path = layout2.traces[0]
    d = _load(path)
    assert list(d)[:3] == ["schemaVersion", "displayTimeUnit", "span_indx"]
    assert (d["schemaVersion"], d["span_indx"]) == ("1.0.1", "0")
    assert any(e.get("args", {}).get("name", "").startswith("Deivce ") for e in d["traceEvents"] if e.get("ph") == "M")
    ref, _, _ = _shapes(_one(shared_traces / "gpu-synthetic-2rank"), strip=False)
    ours, _, _ = _shapes(path, strip=False)
    device_name = ("M", None, "process_name", "int", False)  # "Device" vs "Deivce" only
    for kind in set(ref) - {device_name}:
        assert ours[kind] == ref[kind], kind


# ----------------------------------------------------------------------------- content


def test_correlation_ids_link_every_device_event_to_one_runtime_event(run8):
    for path in run8.traces.values():
        events = _load(path)["traceEvents"][:-1]
        runtime = collections.Counter(e["args"]["correlation id"] for e in events if e.get("cat") == "CudaRuntime")
        device = [e for e in events if e.get("cat") in ("Kernel", "Memcpy", "Memset")]
        assert device and all(runtime[e["args"]["correlation id"]] == 1 for e in device)
        starts = collections.Counter(e["id"] for e in events if e["ph"] == "s")
        finishes = [e for e in events if e["ph"] == "f"]
        assert starts == runtime
        assert sorted(e["id"] for e in finishes) == sorted(e["args"]["correlation id"] for e in device)
        assert {e["pid"] for e in finishes} == {e["pid"] for e in device}
        assert any("bp" not in e for e in finishes) and any("bp" in e for e in finishes)


def _kernels(path, stream, prefix):
    return sum(
        1
        for e in _load(path)["traceEvents"][:-1]
        if e.get("cat") == "Kernel" and e["tid"] == stream and e["name"].startswith(prefix)
    )


def test_dp2_mp2_pp2_has_matching_collectives_in_every_group(run8):
    m = json.loads((Path(run8.out_dir) / MANIFEST_NAME).read_text())
    assert m["world_size"] == 8 and [r["rank"] for r in m["ranks"]] == list(range(8))
    assert m["groups"] == Topology(2, 2, 2).groups()
    assert [r["is_slow"] for r in m["ranks"]] == [r == m["slow_rank"] for r in range(8)]
    assert [r.get("is_slow_host", False) for r in m["ranks"]] == [r == m.get("slow_host_rank") for r in range(8)]
    assert (m["slow_rank"], m.get("slow_host_rank")) in ((3, None), (None, 3))
    assert len({_load(p)["traceEvents"][0]["pid"] for p in run8.traces.values()}) == 8
    for group in m["groups"]["mp"]:
        counts = {_kernels(run8.traces[r], MP_STREAM, "ncclDevKernel_AllReduce") for r in group}
        assert len(counts) == 1 and counts.pop() > 0
    for group in m["groups"]["dp"]:
        counts = {_kernels(run8.traces[r], DP_STREAM, "ncclDevKernel_AllReduce") for r in group}
        assert len(counts) == 1 and counts.pop() > 0
    for first, last in m["groups"]["pp"]:
        a, b = (_load(run8.traces[r])["traceEvents"] for r in (first, last))
        ops = lambda evs, n: sum(1 for e in evs if e.get("name", "").startswith(n + " dygraph["))
        # stage 0 sends activations and receives gradients; stage 1 the other way round
        assert ops(a, "send_v2") == ops(b, "recv_v2") == ops(a, "recv_v2") == ops(b, "send_v2") > 0
    by_rank = {r["rank"]: r for r in m["ranks"]}
    for r in by_rank.values():
        assert [s["step"] for s in r["steps"]] == [1, 2]
        for s in r["steps"]:
            # pp > 1: the clip all-reduce and loss broadcasts over the pipeline group too
            assert set(s["comm"]) == {"mp_allreduce", "pp_sendrecv", "dp_allreduce", "pp_group"}
            assert s["comm"]["pp_group"]["calls"] == 3
            assert 0 <= s["exposed_comm_ns"] <= s["step_time_ns"]


def test_a_slow_rank_makes_its_peers_wait(tmp_path):
    # default (GPU-bound) model size, so slower kernels show; rank 3 is dp 0, pp 1, mp 1
    cfg = SynthConfig(steps=1, layers=2, micro_batches=2, slow_rank=3, slow_factor=1.5)
    ranks = {r["rank"]: r for r in generate(cfg, str(tmp_path), ranks=[2, 3, 6, 7]).manifest["ranks"]}
    wait = lambda r, kind: ranks[r]["steps"][0]["comm"][kind]["wait_ns"]
    assert wait(2, "mp_allreduce") > 10 * max(wait(3, "mp_allreduce"), wait(6, "mp_allreduce"))
    assert wait(7, "dp_allreduce") > 10 * wait(3, "dp_allreduce")
    step = lambda r: ranks[r]["steps"][0]["step_time_ns"]
    assert max(map(step, ranks)) < 1.05 * min(map(step, ranks))  # collectives keep ranks in step


def _dataloader_us(path):
    return [
        e["dur"]
        for e in _load(path)["traceEvents"][:-1]
        if e.get("cat") == "Dataloader" and e["name"].startswith("_DataLoaderIterMultiProcess")
    ]


def test_a_slow_host_makes_its_peers_wait_with_normal_kernels(tmp_path):
    """--slow-host-rank: rank 3 (dp 1, mp 1) waits 5 ms longer in its data loader every step. Its
    kernels keep their durations (every rank computes exactly what it computes in the same run
    without the stall), its peers (rank 2 at the model-parallel all-reduces, rank 1 at the
    data-parallel ones) wait for it, and it hardly waits itself."""
    common = [
        "--dp",
        "2",
        "--mp",
        "2",
        "--pp",
        "1",
        "--steps",
        "2",
        "--layers",
        "2",
        "--micro-batches",
        "2",
    ]  # default (GPU-bound) model size
    assert synth_main(common + ["--out", str(tmp_path / "even")]) == 0
    assert (
        synth_main(common + ["--out", str(tmp_path / "host"), "--slow-host-rank", "3", "--host-delay-us", "5000"]) == 0
    )
    even, host = (json.loads((tmp_path / d / MANIFEST_NAME).read_text()) for d in ("even", "host"))
    assert (host["slow_host_rank"], host["host_delay_us"], host["slow_rank"]) == (3, 5000, None)
    assert host["config"]["slow_host_rank"] == 3 and "host_delay_ns" in host["definitions"]
    assert [(r["is_slow_host"], r["host_delay_ns"], r["is_slow"]) for r in host["ranks"]] == [
        (r == 3, 5_000_000 if r == 3 else 0, False) for r in range(4)
    ]
    assert "slow_host_rank" not in even and "slow_host_rank" not in even["config"]
    assert "is_slow_host" not in even["ranks"][0]
    for e, h in zip(even["ranks"], host["ranks"]):
        # the stall is on the host only: the data loader's event, on rank 3 alone
        loader_e = _dataloader_us(tmp_path / "even" / e["trace"])
        loader_h = _dataloader_us(tmp_path / "host" / h["trace"])
        extra = 5000 if h["rank"] == 3 else 0
        assert len(loader_h) == 2 and loader_h == pytest.approx([x + extra for x in loader_e], abs=0.002)
        for se, sh in zip(e["steps"], h["steps"]):
            assert sh["compute_busy_ns"] == se["compute_busy_ns"]  # identical kernel durations
    step = lambda m, r, i: m["ranks"][r]["steps"][i]["step_time_ns"]
    wait = lambda m, r, i, kind: m["ranks"][r]["steps"][i]["comm"][kind]["wait_ns"]
    for i in range(2):
        assert min(step(host, r, i) - step(even, r, i) for r in range(4)) > 4_000_000
        assert wait(host, 2, i, "mp_allreduce") - wait(even, 2, i, "mp_allreduce") > 4_000_000
        assert wait(host, 1, i, "dp_allreduce") - wait(even, 1, i, "dp_allreduce") > 4_000_000
        assert wait(host, 3, i, "mp_allreduce") + wait(host, 3, i, "dp_allreduce") < 1_000_000


def test_memory_counters_follow_the_events():
    cfg = SynthConfig(steps=2, layers=2, micro_batches=2, **TINY)
    trace, _ = build_rank(cfg, 0, None)
    last = {}
    for i in range(trace.n_mem):
        place, inc, mtype = trace.m_place[i], trace.m_inc[i], trace.m_type[i]
        cur, res = trace.m_cur_alloc[i], trace.m_cur_res[i]
        if place in last:
            pcur, pres, ppeak, ppeak_res = last[place]
            assert (cur - pcur, res - pres) == ((inc, 0) if mtype in (0, 1) else (0, inc))
            assert trace.m_peak_alloc[i] == max(ppeak, cur)
            assert trace.m_peak_res[i] == max(ppeak_res, res)
        assert 0 <= cur <= res
        last[place] = (cur, res, trace.m_peak_alloc[i], trace.m_peak_res[i])
    assert {trace.places[p] for p in last} == {"Place(gpu:0)", "Place(cpu)", "Place(gpu_pinned)"}


def test_deeper_pipelines_schedule_without_deadlock():
    cfg = SynthConfig(dp=1, mp=1, pp=4, steps=1, layers=4, micro_batches=6, **TINY)
    topo = Topology(1, 1, 4)
    book = _simulate_together(cfg, topo, _Catalog(cfg))
    assert not book.open
    # 6 micro-batches each way over every link, plus 2 loss broadcasts and 1 clip all-reduce
    assert all(len(book.times[r]) == 12 + 3 for r in (0, 3)) and len(book.times[1]) == 24 + 3


def test_events_per_rank_sets_the_size(tmp_path):
    cfg = size_for(SynthConfig(steps=2, events_per_rank=30_000, **TINY))
    res = generate(cfg, str(tmp_path), ranks=[0])
    n = res.manifest["ranks"][0]["trace_events"]
    assert 0.8 * 30_000 < n < 1.2 * 30_000
    assert n == len(_load(res.traces[0])["traceEvents"]) - 1


# ----------------------------------------------------------------------------- trees


def _paddle_cpp_trees(trace):
    """A literal transcription of NodeTrees::BuildTreeRelationship (event_node.cc): scans and
    erases included, to check the fast sweep in build_node_trees against."""
    hs, he, rs, re_, ms = trace.h_start, trace.h_end, trace.r_start, trace.r_end, trace.m_ts
    parent, rt_owner, mem_owner, bfs = {}, {}, {}, {}
    for tid in sorted(set(trace.h_tid) | set(trace.r_tid) | set(trace.m_tid)):
        start = lambda n: 0 if n == ROOT else hs[n]
        end = lambda n: ULLONG_MAX if n == ROOT else he[n]
        hosts = sorted((h for h in range(trace.n_host) if trace.h_tid[h] == tid), key=lambda h: (hs[h], -he[h]))
        rts = sorted((r for r in range(trace.n_runtime) if trace.r_tid[r] == tid), key=lambda r: (rs[r], -re_[r]))
        mems = sorted((m for m in range(trace.n_mem) if trace.m_tid[m] == tid), key=lambda m: ms[m])
        children = collections.defaultdict(list)

        def take_runtimes(node):
            first, last = None, len(rts)
            for i, r in enumerate(rts):
                if rs[r] >= start(node) and re_[r] <= end(node):
                    rt_owner[r] = node
                    first = i if first is None else first
                elif rs[r] > end(node):
                    last = i
                    break
            if first is not None:
                del rts[first:last]

        stack = [ROOT]
        for h in hosts:
            while True:
                top = stack[-1]
                if hs[h] < end(top):
                    assert he[h] <= end(top)
                    parent[h] = top
                    children[top].append(h)
                    stack.append(h)
                    break
                stack.pop()
                take_runtimes(top)
        while stack:
            take_runtimes(stack.pop())
        post, todo = [], [(ROOT, False)]
        while todo:
            node, seen = todo.pop()
            if seen:
                post.append(node)
            else:
                todo.append((node, True))
                todo.extend((c, False) for c in reversed(children[node]))
        for node in post:
            first, last = None, len(mems)
            for i, m in enumerate(mems):
                if start(node) <= ms[m] <= end(node):
                    mem_owner[m] = node
                    first = i if first is None else first
                elif ms[m] > end(node):
                    last = i
                    break
            if first is not None:
                del mems[first:last]
        order, queue = [], collections.deque(children[ROOT])
        while queue:
            n = queue.popleft()
            order.append(n)
            queue.extend(children[n])
        bfs[tid] = order
    return parent, rt_owner, mem_owner, bfs


@pytest.mark.parametrize("slow", [{}, dict(slow_host_rank=1, host_delay_us=300)], ids=["even", "slow-host"])
def test_trees_follow_paddle_cpp_nesting_rules(slow):
    cfg = SynthConfig(dp=1, mp=2, pp=2, steps=1, layers=2, micro_batches=2, **slow, **TINY)
    trace, _ = build_rank(cfg, 1, None)
    trees = build_node_trees(trace)
    parent, rt_owner, mem_owner, bfs = _paddle_cpp_trees(trace)
    assert trees.bfs == bfs
    assert {h: trees.host_parent[h] for h in range(trace.n_host)} == parent
    assert {r: o for o, rows in trees.rt_by_owner.items() for r in rows} == {
        r: o for r, o in rt_owner.items() if o != ROOT
    }
    assert {m: o for o, rows in trees.mem_by_owner.items() for m in rows} == {
        m: o for m, o in mem_owner.items() if o != ROOT
    }
    assert sorted(m for rows in trees.root_mem.values() for m in rows) == sorted(
        m for m, o in mem_owner.items() if o == ROOT
    )


# ----------------------------------------------------------------------------- oracle

_SUFFIX = re.compile(r"\[[^\[\]]*\]$")


def _statistic_data_from_json(path):
    """Paddle's StatisticData on a tree rebuilt from the JSON alone, by the reconstruction
    rules of the format notes: float32 start + dur, stack nesting, runtime nodes under the
    innermost host node, device nodes by correlation id, memory nodes under the nearest
    preceding host event of their thread in file order."""
    from tbp_synth import oracle

    _, core, _, statistic = oracle._paddle()
    T, M = core.TracerEventType, core.TracerMemEventType
    d = _load(path)
    hosts, runtimes, by_corr, order = collections.defaultdict(list), collections.defaultdict(list), {}, []
    devices = []
    for e in d["traceEvents"][:-1]:
        tid = int(e["tid"].split("(")[0]) if isinstance(e["tid"], str) else None
        if e["ph"] == "X":
            start = round(float(e["args"]["start_time"].split()[0]) * 1000)
            end = start + round(e["dur"] * 1000)
            if e["cat"] in ("Kernel", "Memcpy", "Memset"):
                n = oracle.DeviceNode()
                n.name, n.type, n.start_ns, n.end_ns = _SUFFIX.sub("", e["name"]), getattr(T, e["cat"]), start, end
                n.device_id, n.stream_id = e["pid"], e["tid"]
                devices.append((e["args"]["correlation id"], n))
                continue
            n = oracle.HostNode(_SUFFIX.sub("", e["name"]), getattr(T, e["cat"]), start, end, e["pid"], tid)
            if e["cat"] == "CudaRuntime":
                runtimes[tid].append(n)
                by_corr[e["args"]["correlation id"]] = n
            else:
                hosts[tid].append(n)
                order.append((tid, n))
        elif e["ph"] == "i":
            n = oracle.MemNode()
            a = e["args"]
            n.type, n.place, n.increase_bytes = getattr(M, e["cat"]), a["place"], a["increase_bytes"]
            n.peak_allocated, n.peak_reserved = a["peak_allocated"], a["peak_reserved"]
            order.append((tid, n))
    for corr, n in devices:
        by_corr[corr].device_node.append(n)
    roots = {}
    for tid in sorted({t for t, _ in order} | set(runtimes)):
        root = roots[tid] = oracle.HostNode("root node", T.UserDefined, 0, ULLONG_MAX, 0, 0)
        stack = [root]
        for h in sorted(hosts[tid], key=lambda n: (n.start_ns, -n.end_ns)):
            while not (h.start_ns < stack[-1].end_ns and h.end_ns <= stack[-1].end_ns):
                stack.pop()
            stack[-1].children_node.append(h)
            stack.append(h)
        for r in runtimes[tid]:
            node = root
            while True:
                inner = [c for c in node.children_node if c.start_ns <= r.start_ns and r.end_ns <= c.end_ns]
                if not inner:
                    break
                node = inner[0]
            node.runtime_node.append(r)
    owner = {}
    for tid, n in order:
        if isinstance(n, oracle.HostNode):
            owner[tid] = n
        else:
            owner.get(tid, roots[tid]).mem_node.append(n)
    return statistic.StatisticData(roots, d["ExtraInfo"])


def test_oracle_tables_are_what_the_json_alone_reproduces(run8):
    pytest.importorskip("paddle")
    from tbp_synth import oracle

    cfg = run8.config
    topo = Topology(cfg.dp, cfg.mp, cfg.pp)
    cat = _Catalog(cfg)
    book = _simulate_together(cfg, topo, cat)
    for rank in (0, 3):
        trace, _ = build_rank(cfg, rank, book.times[rank], topo, cat)
        expected = oracle.statistic_data(trace, build_node_trees(trace))
        rebuilt = _statistic_data_from_json(run8.traces[rank])
        for sorted_by, unit in (("CPUTotal", "ms"), ("GPUTotal", "us")):
            text = oracle.summary_text(expected, sorted_by, unit)
            for title in (
                "Device Summary",
                "Overview Summary",
                "Model Summary",
                "Distribution Summary",
                "Operator Summary",
                "Kernel Summary",
                "Memory Manipulation Summary",
                "UserDefined Summary",
                "Memory Summary",
            ):
                assert title in text, title
            assert text == oracle.summary_text(rebuilt, sorted_by, unit), (rank, sorted_by, unit)


def test_cli_writes_traces_tables_and_manifests(tmp_path):
    pytest.importorskip("paddle")
    assert (
        synth_main(
            [
                "--dp",
                "1",
                "--mp",
                "2",
                "--pp",
                "1",
                "--steps",
                "1",
                "--layers",
                "1",
                "--micro-batches",
                "1",
                "--hidden",
                "256",
                "--heads",
                "4",
                "--seq-len",
                "128",
                "--out",
                str(tmp_path),
                "--tables",
            ]
        )
        == 0
    )
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert [r["rank"] for r in manifest["ranks"]] == [0, 1]
    for entry in manifest["ranks"]:
        trace = tmp_path / entry["trace"]
        stem = entry["trace"][: -len(".paddle_trace.json")]
        listing = json.loads((tmp_path / (stem + ".summaries.json")).read_text())
        assert listing["trace"] == entry["trace"]
        assert [(s["sorted_by"], s["time_unit"]) for s in listing["summaries"]] == [
            ("CPUTotal", "ms"),
            ("CPUTotal", "us"),
            ("GPUTotal", "ms"),
            ("GPUTotal", "us"),
        ]
        for s in listing["summaries"]:
            assert set(s) == {"file", "sorted_by", "time_unit", "op_detail", "thread_sep", "views"}
            assert s["file"] == "%s.summary.%s.%s.txt" % (stem, s["sorted_by"], s["time_unit"])
            assert (tmp_path / s["file"]).read_text().startswith("-" * 19 + "Device Summary")
        assert trace.exists()


def test_parallel_writers_write_the_same_files(tmp_path):
    """--jobs: ranks written by forked processes are byte for byte the serial ones."""
    cfg = SynthConfig(
        dp=2,
        mp=2,
        pp=2,
        steps=1,
        layers=2,
        micro_batches=2,
        names="default",
        gpus_per_node=4,
        clock_skew_us=500,
        **TINY,
    )
    one = generate(cfg, str(tmp_path / "one"), jobs=1)
    two = generate(cfg, str(tmp_path / "two"), jobs=2)
    assert sorted(one.traces) == sorted(two.traces) == list(range(8))
    for r in range(8):
        a, b = Path(one.traces[r]), Path(two.traces[r])
        assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert one.manifest["ranks"] == two.manifest["ranks"]
