"""The timeline's "Window JSON" export (trace_window, timeline/chrome.py) as Perfetto shows it: process
names, launch -> kernel flows and memory, checked against the source trace the window was cut from."""

import json
from collections import Counter

import pytest

from tb_paddle_profile import timeline

CFG = dict(dp=1, mp=1, pp=1, steps=2, layers=2, micro_batches=1)


@pytest.fixture(scope="module")
def rank(tmp_path_factory):
    from tbp_synth.config import SynthConfig
    from tbp_synth.driver import generate

    out = tmp_path_factory.mktemp("win")
    generate(SynthConfig(**CFG), str(out))
    path = next(out.glob("*.paddle_trace.json"))
    timeline.build_file_index(path.read_bytes, path.name, str(out / "r.tl"))
    return path, timeline.TimelineIndex(str(out / "r.tl"))


def test_the_whole_window_carries_the_sources_flows_memory_and_names(rank):
    path, idx = rank
    source = [e for e in json.loads(path.read_text())["traceEvents"] if isinstance(e, dict) and e]
    doc = json.loads(timeline.chrome_subset(idx, idx.start_ns, idx.end_ns, path.name))
    events = doc["traceEvents"]
    # flows: the same launch -> device pairs as Paddle wrote (its flow ids are the correlation ids)
    src_pairs = {i for i, n in Counter(e["id"] for e in source if e.get("ph") in ("s", "f")).items() if n == 2}
    ends = {}
    for e in events:
        if e["ph"] in ("s", "f"):
            ends.setdefault(e["id"], {})[e["ph"]] = e
    got_pairs = {i for i, v in ends.items() if set(v) == {"s", "f"}}
    assert got_pairs == src_pairs and src_pairs
    src_by_id = {(e["id"], e["ph"]): e for e in source if e.get("ph") in ("s", "f")}
    for i in got_pairs:  # each end on the source's process (the GPU number for the device end)
        assert ends[i]["f"]["pid"] == src_by_id[(i, "f")]["pid"]
        assert ends[i]["s"]["pid"] == src_by_id[(i, "s")]["pid"]
    # memory: one instant per source memory event, with its place and current bytes, and a counter sample
    src_mem = sorted(
        (e["args"]["place"], e["args"]["current_allocated"], e["args"]["current_reserved"])
        for e in source
        if e.get("name") == "[memory]"
    )
    got_mem = sorted(
        (e["args"]["place"], e["args"]["current_allocated"], e["args"]["current_reserved"])
        for e in events
        if e.get("name") == "[memory]"
    )
    assert got_mem == src_mem and src_mem
    assert sum(1 for e in events if e["ph"] == "C") == len(src_mem)
    # process names: the host process by its worker, each GPU by its number
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    host_pid = next(e["pid"] for e in source if e.get("cat") == "Operator")
    gpus = {e["pid"] for e in source if e.get("cat") == "Kernel"}
    assert names[host_pid].startswith(path.name.split("_time_")[0])
    assert all(names[g] == f"GPU {g}" for g in gpus) and gpus


def test_a_window_keeps_only_its_own_memory_events(rank):
    path, idx = rank
    source = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("name") == "[memory]"]
    local = sorted(
        round(e["ts"] * 1000) - idx.origin if isinstance(e["ts"], float) else e["ts"] * 1000 - idx.origin
        for e in source
    )  # the trace's microseconds as the index's ns
    ws, we = local[len(local) // 4] - 500, local[3 * len(local) // 4] + 500  # half a microsecond of margin
    doc = json.loads(timeline.chrome_subset(idx, ws, we, path.name))
    inside = [t for t in local if ws <= t <= we]
    got = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"]
    assert 0 < len(got) == len(inside) < len(source)
