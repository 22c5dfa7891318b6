"""The code's shape (issue 18, part 4): typed tables, the tree's derived columns, the timeline
package, the `parallel` command and its `distributed` alias, the advice rules as data.

The tables are checked against the trace JSON itself (read here with the json module), the tree's
columns against a walk up `host_parent` one row at a time, the CLI's two names against each other
and against the example run's files, the advice table against thresholds.py and docs/distributed.md.
"""

import contextlib
import io
import json
from collections import Counter

import numpy as np
import pytest

from support.paths import REPO, SHARED_TRACES
from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile.cli.commands import main
from tb_paddle_profile.trace.event_tree import build_tree
from tb_paddle_profile.trace.reader import DeviceTable, HostTable, MemoryTable, RuntimeTable, read_trace

EXAMPLE_2RANK = REPO / "examples" / "profiler_log" / "gpt-2rank"
GPU_2RANK = SHARED_TRACES / "gpu-synthetic-2rank"


def _traces():
    return sorted(EXAMPLE_2RANK.glob("*.paddle_trace.json")) + sorted(GPU_2RANK.glob("*.paddle_trace.json"))


def _json_events(path):
    """The trace's events by table, as the JSON has them: (host, runtime, device, memory)."""
    host, rt, dev, mem = [], [], [], []
    for e in json.loads(path.read_text())["traceEvents"]:
        cat, ph = e.get("cat", ""), e.get("ph", "")
        if cat in et.DEVICE_CATS:
            dev.append(e)
        elif cat in et.RUNTIME_CATS:
            rt.append(e)
        elif cat in et.MEM_TYPE_ID:
            if ph == "i":
                mem.append(e)
        elif cat not in ("", "async") and ph == "X":
            host.append(e)
    return host, rt, dev, mem


@pytest.mark.parametrize("path", _traces(), ids=lambda p: f"{p.parent.name}/{p.name[:5]}")
def test_the_typed_tables_hold_the_files_events(path):
    t = read_trace(path.read_bytes(), path.name)
    assert isinstance(t.host, HostTable) and isinstance(t.runtime, RuntimeTable)
    assert isinstance(t.device, DeviceTable) and isinstance(t.memory, MemoryTable)
    host, rt, dev, mem = _json_events(path)
    assert (len(t.host), len(t.runtime), len(t.device), len(t.memory)) == (len(host), len(rt), len(dev), len(mem))
    assert len(host)
    # every column of a table has one row per event (grid and block: 3 values per row)
    for table in (t.host, t.runtime, t.device, t.memory):
        for name, col in vars(table).items():
            if isinstance(col, np.ndarray):
                assert len(col) == len(table), name
    assert Counter(t.names[i] for i in t.host.name) == Counter(
        e["name"].rpartition("[")[0] if e["name"].endswith("]") else e["name"] for e in host
    )
    assert t.runtime.corr.tolist() == [e["args"].get("correlation id", -1) for e in rt]
    assert t.device.corr.tolist() == [e["args"].get("correlation id", -1) for e in dev]
    assert t.device.stream.tolist() == [int(e["tid"]) for e in dev]
    # durations: ns of the JSON's µs
    assert (t.runtime.end - t.runtime.start).tolist() == [round(e["dur"] * 1000) for e in rt]
    assert t.memory.increase.tolist() == [e["args"].get("increase_bytes", 0) for e in mem]

    # the device ↔ runtime join by correlation id: the first runtime event with the device's id
    first = {}
    for i, e in enumerate(rt):
        first.setdefault(e["args"].get("correlation id"), i)
    want = [
        first.get(e["args"].get("correlation id"), -1) if e["args"].get("correlation id", -1) >= 0 else -1 for e in dev
    ]
    assert t.launches().tolist() == want
    assert build_tree(t).dev_rt.tolist() == want


def _climb(parent, start, pred):
    """Walk up from `start` through `parent` until pred(row) holds: the row, or -1."""
    r = start
    while r >= 0:
        if pred(r):
            return r
        r = int(parent[r])
    return -1


@pytest.mark.parametrize("path", _traces(), ids=lambda p: f"{p.parent.name}/{p.name[:5]}")
def test_the_trees_derived_columns_match_a_walk_up_the_parents(path):
    t = read_trace(path.read_bytes(), path.name)
    tree = build_tree(t)
    parent = tree.host_parent
    is_op = t.host.type == et.OPERATOR
    assert is_op.any()
    rows = range(len(t.host))
    assert tree.nearest_operator.tolist() == [_climb(parent, r, lambda x: is_op[x]) for r in rows]

    def outermost(r):
        found = -1
        while r >= 0:
            found = r if is_op[r] else found
            r = int(parent[r])
        return found

    assert tree.outermost_operator.tolist() == [outermost(r) for r in rows]
    for r in rows:
        kids = tree.children(r)
        assert tree.child_pos[kids].tolist() == list(range(tree.child_ptr[r], tree.child_ptr[r] + len(kids)))
        assert t.host.start[kids].tolist() == sorted(t.host.start[kids].tolist())
        rts = tree.runtimes(r)
        assert tree.rt_pos[rts].tolist() == list(range(tree.host_rt_ptr[r], tree.host_rt_ptr[r] + len(rts)))
    for d in range(len(t.device)):
        rt = int(tree.dev_rt[d])
        assert int(tree.dev_host[d]) == (int(tree.rt_host[rt]) if rt >= 0 else -1)
        if rt >= 0:
            assert tree.rt_dev_idx[tree.dev_pos[d]] == d and d in tree.devices(rt)


def test_the_timeline_package_keeps_its_names_and_names_its_track_kinds():
    import tb_paddle_profile.timeline as timeline
    from tb_paddle_profile.v1 import timeline_pb2 as tpb

    for name in timeline.__all__:
        assert getattr(timeline, name) is not None
    path = sorted(GPU_2RANK.glob("*.paddle_trace.json"))[0]
    t = read_trace(path.read_bytes(), path.name)
    header, arrays = timeline.build_index(t, build_tree(t))
    host, rt, dev, _ = _json_events(path)
    threads = {int(str(e["tid"]).split("(")[0]) for e in host + rt}
    streams = {(int(e["pid"]), int(e["tid"])) for e in dev}
    kinds = Counter(tr["kind"] for tr in header["tracks"])
    assert kinds == {tpb.HOST_THREAD: len(threads), tpb.GPU_STREAM: len(streams)}
    assert {tr["tid"] for tr in header["tracks"] if tr["kind"] == tpb.HOST_THREAD} == threads
    assert {(tr["device"], tr["stream"]) for tr in header["tracks"] if tr["kind"] == tpb.GPU_STREAM} == streams
    assert Counter(arrays["ev_kind"].tolist()) == {
        timeline.EVENT_HOST: len(host),
        timeline.EVENT_RUNTIME: len(rt),
        timeline.EVENT_DEVICE: len(dev),
    }


def _cli(*argv) -> "tuple[int, str]":
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


def test_parallel_is_the_command_and_distributed_its_alias(tmp_path):
    code, text = _cli("parallel", str(EXAMPLE_2RANK), "--cache-dir", str(tmp_path))
    code_alias, text_alias = _cli("distributed", str(EXAMPLE_2RANK), "--cache-dir", str(tmp_path))
    assert code == code_alias == 0
    assert text == text_alias
    ranks = len(list(EXAMPLE_2RANK.glob("*.paddle_trace.json")))
    assert text.startswith("Hybrid-parallel analysis of ") and f": {ranks} ranks" in text.splitlines()[0]
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), pytest.raises(SystemExit):
        main(["--help"])
    assert "parallel (distributed)" in help_text.getvalue()


def test_the_advice_rules_are_a_table_of_thresholds_and_templates():
    from tb_paddle_profile.analysis.crossrank import advice, thresholds

    constants = {v for k, v in vars(thresholds).items() if k.isupper()}
    docs = (REPO / "docs" / "distributed.md").read_text()
    for rule in advice.RULES:
        assert rule.scope in ("straggler", "rank", "stage", "pipeline_rank"), rule.rule
        assert rule.threshold in constants, rule.rule
        assert f"| `{rule.rule}` |" in docs, rule.rule
        assert "{" in rule.template and 'f"' not in rule.template
        if rule.also is not None:
            assert rule.also.threshold in constants
    assert [r.rule for r in advice.RULES][0] == "straggler"  # the verdict's rule comes first


def _rank(rank, **fields):
    from tb_paddle_profile.v1 import plugin_pb2 as ppb, summary_pb2 as pb

    m = ppb.RankParallel(rank=rank, steps=1, step_time_ns=1_000_000, timeline=pb.TIMELINE_DEVICE)
    for k, v in fields.items():
        setattr(m, k, v)
    return m


@pytest.mark.parametrize(
    "rule, field, threshold_name",
    [
        ("memcpy", "memory_ns", "MEMCPY_FRACTION"),
        ("gpu_idle", "idle_ns", "GPU_IDLE_FRACTION"),
        ("launch_bound", "runtime_ns", "LAUNCH_BOUND_RUNTIME_FRACTION"),
    ],
)
def test_a_rank_rule_fires_at_its_threshold_on_the_rank_with_the_largest_value(rule, field, threshold_name):
    from tb_paddle_profile.analysis.crossrank import advice, thresholds
    from tb_paddle_profile.v1 import plugin_pb2 as ppb

    at = int(getattr(thresholds, threshold_name) * 1_000_000)
    for value, fires in ((at, True), (at - 1, False)):
        out = ppb.RunParallel()
        out.ranks.extend([_rank(0, **{field: value // 2}), _rank(1, **{field: value})])
        advice.advise(out, {m.rank: m for m in out.ranks}, 1_000_000)
        got = [a for a in out.advice if a.rule == rule]
        assert bool(got) == fires, (rule, value)
        if fires:
            assert list(got[0].ranks) == [1] and got[0].triggers[0].threshold == getattr(thresholds, threshold_name)
            assert got[0].text.startswith("On rank 1 ") and "{ns:" in got[0].text


# ---------------------------------------------------------------- no file over 600 lines

MAX_LINES = 600


def _source_files():
    """The package's Python and the frontend's TypeScript, generated code left out (v1/, frontend/src/gen/)."""
    pkg = REPO / "tb_paddle_profile"
    py = [p for p in pkg.rglob("*.py") if "v1" not in p.relative_to(pkg).parts]
    src = REPO / "frontend" / "src"
    ts = [p for p in list(src.rglob("*.ts")) + list(src.rglob("*.tsx")) if "gen" not in p.relative_to(src).parts]
    return py + ts


def test_no_source_file_is_over_600_lines():
    files = _source_files()
    names = {p.relative_to(REPO).as_posix() for p in files}
    assert "tb_paddle_profile/api.py" in names and "frontend/src/App.tsx" in names  # both trees are looked at
    assert not any("/v1/" in n or "/gen/" in n for n in names)
    lines = {p.relative_to(REPO).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    over = {n: k for n, k in lines.items() if k > MAX_LINES}
    assert not over, f"split these by concern (at most {MAX_LINES} lines a file): {over}"
