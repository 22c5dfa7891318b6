"""Memory insights (issue 16, point 7): growth per step and leak suspicion, reserved − allocated, what is
alive at the allocated peak, and the peak per pipeline stage across ranks (analysis/memory.py).

Every value is recomputed here from the raw memory events of the trace's JSON (tests/data/traces: real
Paddle CPU traces and the GPU-shaped synthetic set), with the rules of docs/trace-format.md written out
again in plain Python (a memory event belongs to the nearest preceding host event of its thread in file
order; operators and layers are the host events around it in time; frees match allocations by address),
and from generated runs with the generator's planted leak and fragmentation (tbp_synth.truth): the slope
is the planted bytes per step and the leak is suspected, the control run shows none.

Alive at the peak: the allocations of the trace alive at the event of the highest current allocated, plus
what was allocated before the trace and not freed by then (the allocated before the first event, taken
from its counter minus its own increase, less the frees of blocks the trace never saw allocated), sum to
the allocated at that moment.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from support.paths import REPO, SHARED_TRACES
from tb_paddle_profile.analysis import memory as M
from tb_paddle_profile.analysis.crossrank.build import analyze_run
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.present.display.cells import format_cell, sentence_text
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tb_paddle_profile.analysis.summarize import summarize_file
from test_reader_native import _MEMORY, _read, _trace

TRACES = sorted(SHARED_TRACES.glob("*/*.paddle_trace.json"))
HOST_CATS = {
    "Operator",
    "Dataloader",
    "ProfileStep",
    "UserDefined",
    "OperatorInner",
    "Forward",
    "Backward",
    "Optimization",
    "Communication",
    "PythonOp",
    "PythonUserDefined",
    "DygraphKernelLaunch",
    "StaticKernelLaunch",
}
ALLOC_CATS = {"Allocate", "Free"}
MEM_CATS = ALLOC_CATS | {"ReservedAllocate", "ReservedFree"}
LEAK = 256 << 20
FRAGMENT = 64 << 20


def _tid(t) -> int:
    return int(str(t).split("(")[0])


def _name(n: str) -> str:
    return n.rpartition("[")[0] if n.endswith("]") and "[" in n else n


def raw(path: Path) -> dict:
    """The trace's host events, ProfileSteps and memory events (with their owner) from its JSON."""
    events = json.loads(path.read_bytes())["traceEvents"]
    hosts, mems, last = [], [], {}
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            continue
        cat = e.get("cat")
        if e.get("ph") == "X" and cat in HOST_CATS:
            h = {
                "i": i,
                "tid": _tid(e["tid"]),
                "ts": e["ts"],
                "end": e["ts"] + e["dur"],
                "cat": cat,
                "name": _name(e["name"]),
            }
            hosts.append(h)
            last[h["tid"]] = h
        elif e.get("ph") == "i" and cat in MEM_CATS:
            a = e["args"]
            mems.append(
                {
                    "i": i,
                    "ts": e["ts"],
                    "cat": cat,
                    "place": a["place"],
                    "addr": int(a["addr"]),
                    "inc": a["increase_bytes"],
                    "cur": a["current_allocated"],
                    "res": a["current_reserved"],
                    "owner": last.get(_tid(e["tid"])),
                }
            )
    steps = sorted((h for h in hosts if h["cat"] == "ProfileStep"), key=lambda h: h["ts"])
    return {"hosts": hosts, "mems": mems, "steps": steps}


def _around(hosts, owner, cats, innermost: bool):
    """The host event of one of `cats` at or around `owner` (same thread, its time range inside):
    the innermost or the outermost."""
    tol = 1e-3
    found = [
        h
        for h in hosts
        if h["cat"] in cats
        and h["tid"] == owner["tid"]
        and h["ts"] <= owner["ts"] + tol
        and owner["end"] <= h["end"] + tol
    ]
    if not found:
        return None
    return (min if innermost else max)(found, key=lambda h: h["end"] - h["ts"])


def reference(path: Path) -> dict:
    """Per place, the insights recomputed from the raw events."""
    r = raw(path)
    out = {}
    by_place = defaultdict(list)
    for m in r["mems"]:
        by_place[m["place"]].append(m)
    for place, ms in by_place.items():
        ms.sort(key=lambda m: (m["ts"], m["i"]))
        first = ms[0]
        base_a = first["cur"] - (first["inc"] if first["cat"] in ALLOC_CATS else 0)
        base_r = first["res"] - (0 if first["cat"] in ALLOC_CATS else first["inc"])
        steps = []
        for s in r["steps"]:
            before = [m for m in ms if m["ts"] < s["ts"]]  # whole µs: the same µs as the start is in it
            upto = [m for m in ms if m["ts"] <= s["end"]]
            inside = [m for m in ms if s["ts"] <= m["ts"] <= s["end"]]
            enter_a = before[-1]["cur"] if before else base_a
            enter_r = before[-1]["res"] if before else base_r
            steps.append(
                {
                    "end_a": upto[-1]["cur"] if upto else base_a,
                    "end_r": upto[-1]["res"] if upto else base_r,
                    "peak_a": max([enter_a] + [m["cur"] for m in inside]),
                    "floor_a": min([enter_a] + [m["cur"] for m in inside]),
                    "peak_r": max([enter_r] + [m["res"] for m in inside]),
                    "events": len(inside),
                }
            )
        cur = [m["cur"] for m in ms]
        k = cur.index(max(cur))
        frag = [m["res"] - m["cur"] for m in ms]
        j = frag.index(max(frag))
        alive, unseen = {}, 0
        for m in ms[: k + 1]:
            if m["cat"] == "Allocate":
                alive[m["addr"]] = m
            elif m["cat"] == "Free":
                if m["addr"] in alive:
                    del alive[m["addr"]]
                else:
                    unseen += -m["inc"]
        groups = defaultdict(lambda: [0, 0])
        for m in alive.values():
            o = m["owner"]
            if o is None:
                key = (M.THREAD_ROOT, "")
            else:
                op = _around(r["hosts"], o, {"Operator"}, innermost=True)
                layer = _around(r["hosts"], o, {"Forward", "Backward"}, innermost=False)
                key = ((op or o)["name"], layer["name"] if layer else "")
            groups[key][0] += m["inc"]
            groups[key][1] += 1
        out[place] = {
            "steps": steps,
            "peak": ms[k],
            "frag_at_peak": frag[k],
            "frag_max": frag[j],
            "frag_max_after_peak_us": ms[j]["ts"] - ms[k]["ts"],
            "groups": {key: tuple(v) for key, v in groups.items()},
            "before_trace": base_a - unseen,
            "peak_allocated_field": max(m2["cur"] for m2 in ms),
        }
    return out


@pytest.fixture(scope="module", params=TRACES, ids=lambda p: f"{p.parent.name}/{p.name[:5]}")
def trace(request):
    return request.param, summarize_file(str(request.param)), reference(request.param)


def test_growth_per_step_is_recomputed_from_the_raw_events(trace):
    _, s, ref = trace
    assert s.memory.places
    for pl in s.memory.places:
        want = ref[pl.place]["steps"]
        g = pl.growth
        assert len(g.steps) == len(want) > 1
        for got, w in zip(g.steps, want):
            assert (
                got.allocated_end,
                got.reserved_end,
                got.allocated_peak,
                got.allocated_floor,
                got.reserved_peak,
                got.events,
            ) == (w["end_a"], w["end_r"], w["peak_a"], w["floor_a"], w["peak_r"], w["events"])
        ends = [w["end_a"] for w in want]
        assert g.allocated_slope == pytest.approx(np.polyfit(np.arange(len(ends)), ends, 1)[0], abs=1e-6)
        floors = [w["floor_a"] for w in want]
        assert g.floor_growth_min == min(np.diff(floors))
        # the real and synthetic committed traces keep their floor: no leak
        assert not g.leak_suspected
        assert g.leak_threshold_bytes == max(
            M.LEAK_MIN_GROWTH_BYTES, int(M.LEAK_MIN_GROWTH_OF_PEAK * pl.peak_allocated)
        )


def test_fragmentation_at_the_peak_and_its_largest(trace):
    _, s, ref = trace
    for pl in s.memory.places:
        r, f = ref[pl.place], pl.fragmentation
        assert f.peak_allocated == r["peak"]["cur"] == r["peak_allocated_field"]
        assert f.peak_reserved == r["peak"]["res"]
        assert f.at_peak_bytes == r["frag_at_peak"] and f.max_bytes == r["frag_max"]
        assert f.max_time_ns - f.peak_time_ns == pytest.approx(r["frag_max_after_peak_us"] * 1000, abs=500)  # µs stamps


def test_alive_at_the_peak_by_operator_and_layer(trace):
    path, s, ref = trace
    for pl in s.memory.places:
        r, al = ref[pl.place], pl.alive_at_peak
        got = {(g.operator, g.layer): (g.bytes, g.count) for g in al.groups}
        assert al.others_count == 0 and got == r["groups"], path.name
        assert al.before_trace == r["before_trace"] and al.unaddressed == 0
        # the bytes alive at the peak = the allocated peak minus what was alive before the trace
        assert sum(g.bytes for g in al.groups) == al.allocated - al.before_trace
        assert al.allocated == r["peak"]["cur"]
        # largest first
        sizes = [g.bytes for g in al.groups]
        assert sizes == sorted(sizes, reverse=True)
    if path.parent.name.startswith("cpu-gpt"):
        # the real CPU traces: the forward's activations (layer: the model's outermost Forward event)
        top = s.memory.places[0].alive_at_peak.groups[0]
        assert top.layer == "TinyGPT" and top.operator.endswith(" dygraph")


def test_the_display_lays_the_insights_out_and_the_cli_stays_paddles(trace):
    _, s, _ = trace
    d = summary_display(s)
    view = next(v for v in d.views if v.key == "memory")
    ins = find_table(d, "memory_insights", "memory")
    assert ins.text_hidden and [r.id for r in ins.rows] == [pl.place for pl in s.memory.places]
    for pl in s.memory.places:
        steps = find_table(d, f"memory_steps.{pl.place}", "memory")
        assert [int(r.cells[0].number) for r in steps.rows] == [st.step for st in pl.growth.steps]
        alive = find_table(d, f"memory_alive.{pl.place}", "memory")
        total = [r for r in alive.rows if r.id == "alive:total"][0]
        parts = [r for r in alive.rows if r.id != "alive:total"]
        col = [c.key for c in alive.columns].index("bytes")
        assert (
            sum(int(r.cells[col].number) for r in parts) == int(total.cells[col].number) == pl.alive_at_peak.allocated
        )
        assert any(x.key == f"memory.growth.{pl.place}" for x in view.sentences)
        assert all(t.text_hidden for t in (steps, alive))


# ---------------------------------------------------------------- generated runs with a planted change


def _generate(out: Path, *extra: str) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--out",
            str(out),
            "--dp",
            "1",
            "--mp",
            "1",
            "--pp",
            "2",
            "--steps",
            "4",
            "--layers",
            "2",
            "--micro-batches",
            "2",
            "--control",
            *extra,
        ],
        check=True,
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory_runs")
    return {
        "leak": _generate(root / "leak", "--leak-bytes-per-step", str(LEAK)),
        "control": _generate(root / "control"),
        "fragment": _generate(root / "fragment", "--fragment-bytes-per-step", str(FRAGMENT)),
    }


def _summaries(run: Path):
    return [summarize_file(str(p)) for p in sorted(run.glob("*.paddle_trace.json"))]


def _gpu(s):
    (pl,) = [pl for pl in s.memory.places if re.match(r"Place\(gpu:\d+\)$", pl.place)]
    return pl


def test_a_planted_leak_is_suspected_with_its_bytes_per_step(runs):
    from tbp_synth.truth import load_truth

    truth = load_truth(str(runs["leak"]))
    assert [c["type"] for c in truth.changes] == ["leak"] and truth.changes[0]["bytes_per_step"] == LEAK
    for rank, s in enumerate(_summaries(runs["leak"])):
        pl = _gpu(s)
        g = pl.growth
        assert [st.allocated_end for st in g.steps] == truth.gpu_allocated_end_bytes[rank].tolist()
        assert g.allocated_slope == pytest.approx(LEAK, rel=0.01)
        assert g.floor_slope == pytest.approx(LEAK, rel=0.01)
        assert g.leak_suspected and g.floor_growth_min > g.leak_threshold_bytes
        d = summary_display(s)
        view = next(v for v in d.views if v.key == "memory")
        (leak,) = [x for x in view.sentences if x.key == f"memory.leak.{pl.place}"]
        assert leak.level == "warning" and "Leak suspected" in sentence_text(leak)
        ins = find_table(d, "memory_insights", "memory")
        row = next(r for r in ins.rows if r.id == pl.place)
        assert format_cell(ins.columns[5], row.cells[5]) == "Yes"
        assert format_cell(ins.columns[2], row.cells[2]) == "256.00 MiB"
        al = pl.alive_at_peak
        assert sum(x.bytes for x in al.groups) + al.others_bytes + al.before_trace == al.allocated


def test_the_control_run_shows_no_leak(runs):
    from tbp_synth.truth import load_truth

    truth = load_truth(str(runs["control"]))
    for rank, s in enumerate(_summaries(runs["control"])):
        pl = _gpu(s)
        g = pl.growth
        assert [st.allocated_end for st in g.steps] == truth.gpu_allocated_end_bytes[rank].tolist()
        assert abs(g.allocated_slope) < g.leak_threshold_bytes and not g.leak_suspected
        view = next(v for v in summary_display(s).views if v.key == "memory")
        assert not [x for x in view.sentences if x.key.startswith("memory.leak.")]
        assert [x for x in view.sentences if x.key == f"memory.growth.{pl.place}"]


def test_planted_fragmentation_grows_reserved_minus_allocated(runs):
    from tbp_synth.truth import load_truth

    truth = load_truth(str(runs["fragment"]))
    for rank, s in enumerate(_summaries(runs["fragment"])):
        g = _gpu(s).growth
        frag = [st.reserved_end - st.allocated_end for st in g.steps]
        want = (truth.gpu_reserved_end_bytes[rank] - truth.gpu_allocated_end_bytes[rank]).tolist()
        assert frag == want
        assert g.reserved_slope - g.allocated_slope == pytest.approx(FRAGMENT, rel=0.05)
        assert not g.leak_suspected


# ---------------------------------------------------------------- across ranks


def _raw_peak(path: Path, place: str) -> int:
    """The allocator's running peak of a place: the largest peak_allocated any of its events carries."""
    events = json.loads(path.read_bytes())["traceEvents"]
    return max(
        e["args"]["peak_allocated"]
        for e in events
        if isinstance(e, dict) and e.get("ph") == "i" and e.get("args", {}).get("place") == place
    )


def test_peak_memory_per_pipeline_stage_and_rank(runs):
    from tbp_synth.truth import load_truth

    run = runs["leak"]
    truth = load_truth(str(run))
    paths = sorted(run.glob("*.paddle_trace.json"))
    rp = analyze_run([digest_of(s) for s in _summaries(run)])
    mem = rp.memory
    stage_of = {r["rank"]: r["pp"] for r in truth.ranks}
    assert [(r.rank, r.stage) for r in mem.ranks] == sorted(stage_of.items())
    peaks = {}
    for r, path in zip(mem.ranks, paths):
        assert r.place == f"Place(gpu:{truth.ranks[r.rank]['gpu']})"
        assert r.peak_allocated == _raw_peak(path, r.place)
        peaks[r.rank] = r.peak_allocated
    assert [st.stage for st in mem.stages] == sorted(set(stage_of.values()))
    for st in mem.stages:
        members = [x for x, pp in stage_of.items() if pp == st.stage]
        assert list(st.ranks) == members
        assert st.max_peak_allocated == max(peaks[x] for x in members) == peaks[st.max_allocated_rank]
        assert st.min_peak_allocated == min(peaks[x] for x in members)
    # the Parallel view's display and the CLI print them
    d = parallel_display(rp)
    (view,) = d.views
    stages = next(t for t in view.tables if t.key == "memory_stages")
    ranks = next(t for t in view.tables if t.key == "memory_ranks")
    assert len(stages.rows) == len(mem.stages) and len(ranks.rows) == len(mem.ranks)
    cli = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "parallel", str(run), "--no-cache"],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(REPO),
    ).stdout
    assert "Peak memory by pipeline stage" in cli and "Peak memory by rank" in cli
    for r, row in zip(mem.ranks, ranks.rows):
        shown = format_cell(ranks.columns[3], row.cells[3])
        assert shown.endswith("GiB") and re.search(
            rf"^{r.rank}\s+{r.stage}\s+Place\(gpu:\d\)\s+{re.escape(shown)}\s", cli, re.M
        )


def test_a_cpu_run_uses_its_cpu_place_for_the_stage_table():
    run = SHARED_TRACES / "cpu-gpt-2rank-gloo"
    paths = sorted(run.glob("*.paddle_trace.json"))
    rp = analyze_run([digest_of(summarize_file(str(p))) for p in paths])
    assert [(r.rank, r.place) for r in rp.memory.ranks] == [(0, "Place(cpu)"), (1, "Place(cpu)")]
    assert [r.peak_allocated for r in rp.memory.ranks] == [_raw_peak(p, "Place(cpu)") for p in paths]
    (st,) = rp.memory.stages
    assert st.stage == -1 and list(st.ranks) == [0, 1]


# ---------------------------------------------------------------- the reader's addr column


def test_the_reader_keeps_every_memory_events_address(shared_traces):
    for path in TRACES:
        data = path.read_bytes()
        want = [m["addr"] for m in raw(path)["mems"]]
        for native in (True, False):
            t = _read(data, native)
            assert t.memory.addr.tolist() == want, (path.name, native)


@pytest.mark.parametrize("native", [True, False], ids=["native", "msgspec"])
def test_addresses_in_other_forms_never_reject_the_file(native):
    forms = [
        ('"addr": "1"', 1),
        ('"addr": "123456789012345678"', 123456789012345678),
        ('"addr": 77', 77),
        ('"addr": null', -1),
        ('"addr": "0x1f"', -1),
        ('"addr": ""', -1),
        ('"addr": "18446744073709551615"', -1),
        ('"addr": "99999999999999999999"', -1),
        ('"addr": "9223372036854775808"', -(1 << 63)),
        ('"addr": 1.5', -1),
        ('"addr": {"a": 1}', -1),
    ]
    for form, want in forms:
        events = [_MEMORY.replace('"addr": "1"', form)]
        t = _read(_trace(*events), native)
        assert not isinstance(t, tuple), (form, t)
        assert t.memory.addr.tolist() == [want], form
    t = _read(_trace(_MEMORY.replace('"addr": "1", ', "")), native)
    assert t.memory.addr.tolist() == [-1]
