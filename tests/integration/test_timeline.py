"""The timeline's index and level-of-detail queries (tb_paddle_profile.timeline) and its routes.

The index is built from the real shared GPU-shaped traces and from a generated 1M-event rank; the routes
are driven through TensorBoard's own WSGI routing of the plugin (werkzeug test client)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from support.plugin_testlib import GPU, PREFIX, generate_rank, make_plugin, ready, trace_files
from tb_paddle_profile.trace import event_types as et
from tb_paddle_profile import timeline
from tb_paddle_profile.trace.reader import read_trace
from tb_paddle_profile.v1 import timeline_pb2 as tpb


class _File:
    def __init__(self, worker="rank0", rank=0, file_name="x.paddle_trace.json"):
        self.worker, self.rank, self.file_name = worker, rank, file_name


def _index(path: Path, out: Path) -> timeline.TimelineIndex:
    timeline.build_file_index(path.read_bytes, path.name, str(out))
    return timeline.TimelineIndex(str(out))


@pytest.fixture(scope="module")
def gpu_index(shared_traces, tmp_path_factory):
    path = trace_files(shared_traces, GPU)[0]
    idx = _index(path, tmp_path_factory.mktemp("tl") / "gpu.tl")
    tables = read_trace(path.read_bytes(), path.name)
    return path, idx, tables


@pytest.fixture(scope="module")
def big_index(tmp_path_factory):
    """A generated rank of about a million events."""
    out = tmp_path_factory.mktemp("big")
    return _index(generate_rank(out, 1_000_000, steps=4), out / "big.tl")


def _decode_lane(lane, ws):
    starts = np.cumsum(np.array(lane.start_deltas, dtype=np.int64)) + ws
    ids = np.cumsum(np.array(lane.id_deltas, dtype=np.int64))
    return starts, np.array(lane.durations, dtype=np.int64), np.array(lane.counts), ids


# ------------------------------------------------------------------ merging


def test_merge_lane_merges_short_neighbours_and_keeps_long_slices():
    start = np.array([0, 2, 4, 100, 300, 302], dtype=np.int64)
    end = np.array([1, 3, 5, 250, 301, 303], dtype=np.int64)
    name = np.array([7, 7, 7, 8, 9, 10], dtype=np.int32)
    first, count, s, e, nm = timeline.merge_lane(start, end, name, pixel=10)
    assert first.tolist() == [0, 3, 4]
    assert count.tolist() == [3, 1, 2]
    assert s.tolist() == [0, 100, 300] and e.tolist() == [5, 250, 303]
    assert nm.tolist() == [7, 8, -1]  # one name kept; different names: -1 (mixed)
    # at a fine resolution nothing merges
    first, count, *_ = timeline.merge_lane(start, end, name, pixel=0.5)
    assert count.tolist() == [1] * 6


def test_index_columns_are_consistent(gpu_index):
    _, idx, t = gpu_index
    a = idx.a
    n_h, n_r, n_d = len(t.host.tid), len(t.runtime.tid), len(t.device.id)
    assert len(a["ev_start"]) == n_h + n_r + n_d
    assert np.array_equal(a["ev_start"][a["host_pos"]], t.host.start)
    assert np.array_equal(a["ev_start"][a["dev_pos"]], t.device.start)
    assert np.array_equal(a["ev_name"][a["rt_pos"]], t.runtime.name)
    ptr = a["lane_ptr"]
    assert ptr[0] == 0 and ptr[-1] == len(a["ev_start"])
    for lane in range(idx.n_lanes):
        st = a["ev_start"][ptr[lane] : ptr[lane + 1]]
        assert np.all(np.diff(st) >= 0), "a lane is sorted by start"
        assert a["lane_maxdur"][lane] == (a["ev_end"] - a["ev_start"])[ptr[lane] : ptr[lane + 1]].max()
    kinds = {tr["kind"] for tr in idx.tracks}
    assert kinds == {1, 2}
    # every device event is on a GPU stream track, every host event on a thread track
    dev_lanes = np.searchsorted(ptr, a["dev_pos"], "right") - 1
    assert all(idx.tracks[int(a["lane_track"][ln])]["kind"] == 2 for ln in set(dev_lanes.tolist()))
    assert sum(tr["events"] for tr in idx.tracks) == len(a["ev_start"])


def test_window_items_cover_exactly_the_events_in_the_window(gpu_index):
    _, idx, _ = gpu_index
    lo, hi = idx.start_ns, idx.end_ns
    for ws, we, px in [(lo, hi, 1000), (lo + (hi - lo) // 3, lo + (hi - lo) // 2, 800), (lo, lo + 50_000, 50)]:
        msg = timeline.window_message("r", "0", [(_File(), idx, "")], ws, we, px, base=idx.origin)
        rank = msg.ranks[0]
        total = 0
        for lane in rank.lanes:
            starts, durs, counts, ids = _decode_lane(lane, ws)
            assert len(starts) == len(durs) == len(counts) == len(ids) == len(lane.names) == len(lane.types)
            assert np.all(starts + durs >= ws) and np.all(starts <= we), "items overlap the window"
            assert np.all(np.diff(starts) >= 0)
            # the items' first ids belong to this lane, and their starts are those events' starts
            a = idx.a
            assert np.array_equal(a["ev_start"][ids] + 0, starts)
            single = counts == 1
            assert np.array_equal(a["ev_end"][ids[single]] - a["ev_start"][ids[single]], durs[single])
            for i in np.nonzero(single)[0]:
                assert msg.names[lane.names[i]] == idx.names[int(a["ev_name"][ids[i]])]
            total += int(counts.sum()) + lane.dropped
        # every event overlapping the window is counted once
        a = idx.a
        expected = int(((a["ev_end"] >= ws) & (a["ev_start"] <= we)).sum())
        assert total == expected == rank.events_in_window


def test_lane_cap_coarsens_and_counts_everything(gpu_index):
    _, idx, _ = gpu_index
    busiest = int(np.argmax(np.diff(idx.a["lane_ptr"])))
    n = int(np.diff(idx.a["lane_ptr"])[busiest])
    q = timeline.query_lane(idx, busiest, idx.start_ns, idx.end_ns, pixel=1.0, cap=3)
    assert len(q["ids"]) <= 3
    assert int(q["count"].sum()) + q["dropped"] == n


def test_search_and_details_carry_the_kernels_real_arguments(gpu_index):
    _, idx, t = gpu_index
    kernel_rows = np.nonzero(t.device.type == et.KERNEL)[0]
    row = int(kernel_rows[0])
    name = t.names[int(t.device.name[row])]
    total, ids = timeline.search(idx, name, exact=True)
    assert total == int((t.device.name[kernel_rows] == t.device.name[row]).sum())
    ev = int(idx.a["dev_pos"][row])
    assert ev in ids.tolist()
    d = timeline.event_details(idx, ev)
    args = {a["key"]: a["value"] for a in d["args"]}
    assert d["name"] == name and d["type"] == "Kernel" and d["corr"] == int(t.device.corr[row])
    assert args["grid"] == ", ".join(map(str, t.device.grid[row].tolist()))
    assert args["block"] == ", ".join(map(str, t.device.block[row].tolist()))
    assert args["registers per thread"] == str(int(t.device.registers[row]))
    assert any(r["relation"] == "launch" and r["type"] == "CudaRuntime" for r in d["related"])


def test_range_sums_count_the_slices_of_the_tracks(gpu_index):
    _, idx, t = gpu_index
    gpu_tracks = [tr["id"] for tr in idx.tracks if tr["kind"] == 2]
    sums = timeline.range_sums(idx, idx.start_ns, idx.end_ns, gpu_tracks)
    assert sum(v[0] for v in sums.values()) == len(t.device.id)
    assert sum(v[1] for v in sums.values()) == int((t.device.end - t.device.start).sum())


def test_trimmed_window_is_a_valid_chrome_trace_with_only_that_window(gpu_index):
    path, idx, t = gpu_index
    ws = idx.start_ns + (idx.end_ns - idx.start_ns) // 4
    we = idx.start_ns + (idx.end_ns - idx.start_ns) // 2
    body = timeline.chrome_subset(idx, ws, we, path.name)
    doc = json.loads(body)
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    a = idx.a
    assert len(xs) == int(((a["ev_end"] >= ws) & (a["ev_start"] <= we)).sum()) > 0
    # our own reader reads it back
    back = read_trace(body, "window.paddle_trace.json")
    assert len(back.device.id) == sum(1 for e in xs if e["cat"] in et.DEVICE_CATS)


def test_million_event_rank_windows_stay_under_2_mb(big_index):
    idx = big_index
    assert len(idx.a["ev_start"]) > 500_000
    lo, hi = idx.start_ns, idx.end_ns
    windows = [
        (lo, hi),
        (lo, lo + (hi - lo) // 10),
        (lo + (hi - lo) // 2, lo + (hi - lo) // 2 + 1_000_000),
        (lo + (hi - lo) // 3, lo + (hi - lo) // 3 + 20_000),
    ]
    for ws, we in windows:
        for px in (1000, 4000):
            msg = timeline.window_message(
                "r", "0", [(_File(), idx, "")], ws, we, px, base=idx.origin, query="gemm", flows=True
            )
            size = len(msg.SerializeToString())
            assert size < 2 * 1024 * 1024, (ws, we, px, size)
            assert msg.ranks[0].events_in_window > 0


# ------------------------------------------------------------------ routes


@pytest.fixture(scope="module")
def plugin_client(shared_traces, tmp_path_factory):
    import os

    root = tmp_path_factory.mktemp("tl_logdir")
    for f in trace_files(shared_traces, GPU):
        dst = root / "gpu" / f.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(f.read_bytes())
    old = os.environ.get("TB_PADDLE_PROFILE_CACHE")
    os.environ["TB_PADDLE_PROFILE_CACHE"] = str(tmp_path_factory.mktemp("tl_cache"))
    plugin, client = make_plugin(root)
    try:
        ready(plugin)
        yield plugin, client
    finally:
        plugin.close()
        store = getattr(plugin._routes, "_timeline_store", None)
        if store is not None:
            store.close()
        if old is None:
            os.environ.pop("TB_PADDLE_PROFILE_CACHE", None)
        else:
            os.environ["TB_PADDLE_PROFILE_CACHE"] = old


def _get_ready(client, url, timeout=120.0):
    deadline = time.monotonic() + timeout
    while True:
        r = client.get(url)
        if r.status_code != 202 or time.monotonic() > deadline:
            return r
        time.sleep(0.3)


def test_timeline_route_answers_both_ranks_aligned(plugin_client):
    _, client = plugin_client
    r = _get_ready(client, f"{PREFIX}/timeline?run=gpu&span=0&px=1200")
    assert r.status_code == 200
    msg = tpb.TimelineWindow.FromString(r.data)
    assert [x.worker for x in msg.ranks] == ["rank0", "rank1"]
    assert all(x.state == "" for x in msg.ranks)
    assert min(x.offset_ns for x in msg.ranks) == 0
    assert msg.base_unix_ns > 0 and msg.window_end_ns > msg.window_start_ns
    for x in msg.ranks:
        kinds = [t.kind for t in x.tracks]
        assert tpb.HOST_THREAD in kinds and tpb.GPU_STREAM in kinds
        assert x.lanes
    # one worker only, and a window
    ws = msg.window_start_ns + (msg.window_end_ns - msg.window_start_ns) // 3
    r = client.get(
        f"{PREFIX}/timeline?run=gpu&span=0&workers=rank1&start_ns={ws}&end_ns={ws + 100000}"
        f"&base_unix_ns={msg.base_unix_ns}&format=json"
    )
    assert r.status_code == 200
    doc = json.loads(r.data)
    assert [x["worker"] for x in doc["ranks"]] == ["rank1"]
    assert int(doc["windowStartNs"]) == ws


@pytest.mark.parametrize(
    "query,code",
    [
        ("run=nope&span=0", 404),
        ("run=gpu&span=9", 404),
        ("run=gpu&span=0&workers=../../etc/passwd", 404),
        ("run=gpu&span=0&workers=rank0,%2Fetc%2Fpasswd", 404),
        ("run=gpu&span=0&start_ns=abc&end_ns=10", 400),
        ("span=0", 400),
        ("run=gpu&span=0&format=xml", 400),
    ],
)
def test_timeline_route_refuses_unknown_and_malformed(plugin_client, query, code):
    _, client = plugin_client
    assert client.get(f"{PREFIX}/timeline?{query}").status_code == code


def test_event_search_range_and_window_routes(plugin_client, shared_traces):
    _, client = plugin_client
    _get_ready(client, f"{PREFIX}/timeline?run=gpu&span=0")
    path = trace_files(shared_traces, GPU)[0]
    t = read_trace(path.read_bytes(), path.name)
    row = int(np.nonzero(t.device.type == et.KERNEL)[0][0])
    name = t.names[int(t.device.name[row])]
    r = client.get(f"{PREFIX}/timeline_search?run=gpu&span=0&workers=rank0&q={name}&exact=1")
    assert r.status_code == 200, r.data
    found = tpb.TimelineSearch.FromString(r.data)
    assert found.total >= 1 and all(m.name == name for m in found.matches)
    m = found.matches[0]
    r = client.get(f"{PREFIX}/timeline_event?run=gpu&worker=rank0&span=0&id={m.id}")
    assert r.status_code == 200
    ev = tpb.TimelineEvent.FromString(r.data)
    assert ev.name == name and ev.type == "Kernel"
    assert {a.key for a in ev.args} >= {"grid", "block", "registers per thread"}
    assert client.get(f"{PREFIX}/timeline_event?run=gpu&worker=rank0&span=0&id=999999999").status_code == 404
    assert client.get(f"{PREFIX}/timeline_event?run=gpu&worker=..%2Frank0&span=0&id=1").status_code == 404
    assert client.get(f"{PREFIX}/timeline_event?run=gpu&worker=rank0&span=0&id=x").status_code == 400
    r = client.get(f"{PREFIX}/timeline_range?run=gpu&span=0&start_ns=0&end_ns=100000000000&tracks=rank0:0")
    assert r.status_code == 200
    rng = tpb.TimelineRange.FromString(r.data)
    assert rng.events == int((t.host.tid == t.host.tid[0]).sum() + (t.runtime.tid == t.host.tid[0]).sum())
    assert client.get(f"{PREFIX}/timeline_range?run=gpu&span=0&start_ns=0&end_ns=1&tracks=evil:0").status_code == 400
    r = client.get(f"{PREFIX}/trace_window?run=gpu&worker=rank0&span=0&start_ns=0&end_ns=100000000000")
    assert r.status_code == 200
    assert "attachment" in r.headers["Content-Disposition"]
    doc = json.loads(r.data)
    assert sum(1 for e in doc["traceEvents"] if e["ph"] == "X") == len(t.host.tid) + len(t.runtime.tid) + len(
        t.device.id
    )


def test_preprocess_builds_the_timeline_indexes(shared_traces, tmp_path, monkeypatch):
    """After `tb-paddle-profile preprocess`, the first timeline request is answered at once (200, no 202)."""
    import subprocess
    import sys

    from support.paths import REPO

    logdir, cache = tmp_path / "logdir", tmp_path / "cache"
    (logdir / "gpu").mkdir(parents=True)
    for f in trace_files(shared_traces, GPU):
        (logdir / "gpu" / f.name).write_bytes(f.read_bytes())
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "preprocess", str(logdir), "--cache-dir", str(cache)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list(cache.glob("timeline-v*/*/*.tl"))) == 2
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(cache))
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        r = client.get(f"{PREFIX}/timeline?run=gpu&span=0&px=800")
        assert r.status_code == 200
        window = tpb.TimelineWindow.FromString(r.get_data())
        assert len(window.ranks) == 2
    finally:
        plugin.close()


def test_a_window_of_many_ranks_is_paged_within_its_byte_bound(gpu_index):
    """Ranks whose slices would take a window past its bound are left to the next page, whose
    rank_offset continues where this one stopped; the first rank of a page is always answered."""
    idx = gpu_index[1]
    ranks = [(_File(f"rank{i}", i), idx, "") for i in range(5)]
    one = timeline.window_message("r", "0", ranks[:1], None, None, 1500, None)
    size = len(one.SerializeToString())
    full = timeline.window_message("r", "0", ranks, None, None, 1500, None, ranks_total=5)
    assert [r.rank for r in full.ranks] == [0, 1, 2, 3, 4] and full.ranks_total == 5 and full.rank_offset == 0
    bound = int(size * 2.5)  # room for two ranks, not three
    seen, offset = [], 0
    while offset < 5:
        page = timeline.window_message(
            "r", "0", ranks[offset:], None, None, 1500, None, ranks_total=5, rank_offset=offset, max_bytes=bound
        )
        assert page.rank_offset == offset and page.ranks_total == 5 and 1 <= len(page.ranks) <= 2
        assert len(page.SerializeToString()) <= bound
        # what a page holds of a rank is what the unbounded window holds of it
        for r in page.ranks:
            assert [list(lane.durations) for lane in r.lanes] == [
                list(lane.durations) for lane in full.ranks[r.rank].lanes
            ]
        seen += [r.rank for r in page.ranks]
        offset += len(page.ranks)
    assert seen == [0, 1, 2, 3, 4]
    tiny = timeline.window_message("r", "0", ranks, None, None, 1500, None, max_bytes=1)
    assert len(tiny.ranks) == 1  # the first rank always


def test_the_timeline_draws_skewed_hosts_on_the_corrected_clock(tmp_path, monkeypatch):
    """Two hosts whose clocks differ by milliseconds (the generator's planted offsets): the first timeline
    answer already puts each rank on the common clock (the route makes the span's cross-rank analysis when
    none is stored): its origin less its host's offset, the offset as the analysis estimated it (within
    1 µs of the planted one)."""
    from support.plugin_testlib import PREFIX, make_plugin, ready
    from tbp_synth import SynthConfig, generate
    from tbp_synth.truth import load_truth
    from tb_paddle_profile.v1 import plugin_pb2, timeline_pb2

    out = tmp_path / "logdir" / "skew"
    generate(
        SynthConfig(
            dp=2, mp=2, pp=1, steps=2, layers=1, micro_batches=1, names="default", gpus_per_node=2, clock_skew_us=3000
        ),
        str(out),
    )
    truth = load_truth(str(out))
    planted = {r["worker"]: r["clock_offset_ns"] for r in truth.ranks}
    assert len(set(planted.values())) == 2 and max(abs(v) for v in planted.values()) > 100_000
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    plugin, client = make_plugin(str(tmp_path / "logdir"))
    try:
        ready(plugin)
        first = timeline_pb2.TimelineWindow.FromString(client.get(f"{PREFIX}/timeline?run=skew&span=0").data)
        par = plugin_pb2.RunParallel.FromString(client.get(f"{PREFIX}/parallel?run=skew&span=0").data)
        estimated = {r.worker: r.clock_offset_ns for r in par.ranks}
        reference = next(w for w, v in planted.items() if v == 0)
        for w, v in planted.items():  # offsets relative to the reference host, which is host 0 here
            assert abs(estimated[w] - (v - planted[reference])) <= 1_000, (w, estimated[w], v)
        assert {r.worker: r.clock_offset_ns for r in first.ranks} == estimated
        again = timeline_pb2.TimelineWindow.FromString(client.get(f"{PREFIX}/timeline?run=skew&span=0").data)
        assert [(r.worker, r.offset_ns, r.start_ns) for r in again.ranks] == [
            (r.worker, r.offset_ns, r.start_ns) for r in first.ranks
        ]
        assert any(r.clock_offset_ns for r in first.ranks)  # the other host's ranks moved
    finally:
        plugin.close()
