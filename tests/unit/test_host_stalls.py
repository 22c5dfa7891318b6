"""Host stalls on the main thread (issue 30.4): against the generator's planted data-loader stall
(SynthConfig.slow_host_rank / host_delay_us, tbp_synth.truth's planted host_stall) and against the
gaps between CUDA runtime calls recomputed from the trace JSON."""

import pytest

from support.comm_json import by_cat, events, span, tid_of, union
from tb_paddle_profile.analysis.host_stalls import HOST_STALL_NS
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tbp_synth.config import SynthConfig
from tbp_synth.driver import generate
from tbp_synth.truth import load_truth

CFG = SynthConfig(
    dp=2,
    mp=1,
    pp=1,
    steps=4,
    layers=2,
    micro_batches=1,
    hidden=512,
    heads=8,
    seq_len=256,
    vocab=1024,
    slow_host_rank=1,
    host_delay_us=3000,
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("stalls")
    generate(CFG, str(d))
    truth = load_truth(str(d))
    return truth, {r["rank"]: (d / r["file"], summarize_file(str(d / r["file"]))) for r in truth.ranks}


def _expected(path):
    """Per step: the stretches over HOST_STALL_NS without a runtime call of the ProfileStep thread, each
    with the innermost host event (not the step) holding its middle, from the JSON."""
    evs = events(path)
    steps = by_cat(evs, "ProfileStep")
    tid = tid_of(steps[0])
    calls = union([span(e) for e in by_cat(evs, "CudaRuntime") if tid_of(e) == tid])
    host = [
        (span(e), e["name"].rsplit("[", 1)[0])
        for e in evs
        if e.get("ph") == "X"
        and isinstance(e.get("tid"), str)
        and tid_of(e) == tid
        and e.get("cat") not in ("ProfileStep", "CudaRuntime")
    ]
    out = []
    for st in steps:
        lo, hi = span(st)
        inside = [(max(s, lo), min(e, hi)) for s, e in calls if e > lo and s < hi]
        edges = [lo] + [x for c in inside for x in c] + [hi]
        for a, b in zip(edges[0::2], edges[1::2]):
            if b - a > HOST_STALL_NS:
                mid = (a + b) // 2
                cover = [(s, -e, n) for (s, e), n in host if s <= mid < e]
                out.append((int(st["name"].split("#")[1].split("[")[0]), a, b - a, max(cover)[2] if cover else ""))
    return out


def test_the_planted_stall_in_every_step(run):
    truth, ranks = run
    planted = next(p for p in truth.planted if p["type"] == "host_stall")
    path, s = ranks[planted["rank"]]
    hs = s.comm.host_stalls
    assert hs.threshold_ns == HOST_STALL_NS and hs.steps == len(truth.steps) == hs.steps_with_stall
    by_step = {}
    for st in hs.stalls:
        by_step.setdefault(st.step, []).append(st)
    assert sorted(by_step) == list(truth.steps)
    for step, stalls in by_step.items():
        longest = max(stalls, key=lambda x: x.duration_ns)
        # the delay, plus the data loader's own work and the host's gaps around it (tens of us)
        assert planted["delay_ns"] <= longest.duration_ns <= planted["delay_ns"] + 200_000
        assert hs.names[longest.within] == "_DataLoaderIterMultiProcess"
    display = summary_display(s)
    assert "finding.host_stalls" in [x.key for x in display.views[0].sentences]
    assert len(find_table(display, "host_stalls").rows) == len(hs.stalls)


def test_stalls_against_the_json(run):
    truth, ranks = run
    for r, (path, s) in ranks.items():
        got = [
            (x.step, x.start_ns, x.duration_ns, s.comm.host_stalls.names[x.within]) for x in s.comm.host_stalls.stalls
        ]
        exp = _expected(path)
        assert len(got) == len(exp), r
        for g, e in zip(got, exp):
            assert g[0] == e[0] and abs(g[1] - e[1]) <= 2 and abs(g[2] - e[2]) <= 4 and g[3] == e[3], (r, g, e)


def test_no_finding_without_a_planted_stall(run):
    truth, ranks = run
    slow = {p["rank"] for p in truth.planted}
    for r, (_, s) in ranks.items():
        if r not in slow:
            assert "finding.host_stalls" not in [x.key for x in summary_display(s).views[0].sentences]
            assert s.comm.host_stalls.steps_with_stall < s.comm.host_stalls.steps


def test_the_cli_prints_the_stalls_as_text_and_csv(run):
    """`summary --format text --table host_stalls` lays the table out as text (Paddle's own text stays as it
    is): one line per stall, the planted one in every step of its rank, its duration in the unit asked;
    `--table` alone is the same table as CSV; with --format json it is still an error."""
    import csv
    import io
    import subprocess
    import sys

    truth, ranks = run
    planted = next(p for p in truth.planted if p["type"] == "host_stall")
    path, s = ranks[planted["rank"]]
    base = [sys.executable, "-m", "tb_paddle_profile", "summary", str(path), "--no-cache", "--table", "host_stalls"]
    text = subprocess.run(base + ["--format", "text", "--time-unit", "ms"], capture_output=True, text=True, check=True)
    lines = text.stdout.splitlines()
    assert "Host stalls (main thread, over 1 ms)" in lines[0]
    rows = [line.split() for line in lines if line[:1].isdigit()]
    assert [int(r[0]) for r in rows] == [x.step for x in s.comm.host_stalls.stalls]
    assert {int(r[0]) for r in rows} == set(truth.steps)
    for r, x in zip(rows, s.comm.host_stalls.stalls):
        assert r[2] == f"{x.duration_ns / 1e6:.2f}"
    assert max(float(r[2]) for r in rows) >= planted["delay_ns"] / 1e6
    got = subprocess.run(base, capture_output=True, text=True, check=True).stdout
    assert [int(r["duration_ns"]) for r in csv.DictReader(io.StringIO(got))] == [
        x.duration_ns for x in s.comm.host_stalls.stalls
    ]
    clash = subprocess.run(base + ["--format", "json"], capture_output=True, text=True)
    assert clash.returncode == 2 and "--table" in clash.stderr and clash.stdout == ""


def test_the_api_frames_of_stalls_launches_and_overlap(run):
    """tbp.load's frames of the rank with the planted stall: host_stalls one row per stall (the planted one in
    every step), launch_latency and launch_queue per stream, comm_overlap per stream, communicator and phase."""
    from tb_paddle_profile import api as tbp

    truth, ranks = run
    planted = next(p for p in truth.planted if p["type"] == "host_stall")
    path, s = ranks[planted["rank"]]
    prof = tbp.load(str(path), cache=False)
    stalls = prof.table("host_stalls")
    assert stalls["duration_ns"].tolist() == [x.duration_ns for x in s.comm.host_stalls.stalls]
    assert set(stalls["step"]) == set(truth.steps) and stalls["duration_ns"].max() >= planted["delay_ns"]
    assert prof.table("launch_latency")["p50_ns"].tolist() == [ls.p50_ns for ls in s.comm.launch]
    assert len(prof.table("launch_queue")) == sum(len(ls.queue_time_ns) for ls in s.comm.launch)
    assert prof.table("comm_overlap")["exposed_ns"].tolist() == [o.exposed_ns for o in s.comm.overlap]
