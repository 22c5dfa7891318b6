"""Launch latency, launch queue and starvation per stream (issue 30.2): against the trace JSON (the
GPU-shaped trace and generated runs) and against the generator's planted slow launch path
(SynthConfig.launch_overhead: the host's time and the launch latency scaled)."""

import collections
import math

import pytest

from support.comm_json import by_cat, events, runtime_by_corr, span
from support.paths import SHARED_TRACES
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tbp_synth.config import COMPUTE_STREAM, SynthConfig
from tbp_synth.driver import generate
from tbp_synth.truth import load_truth

SMALL = dict(dp=1, mp=1, pp=1, steps=3, layers=2, micro_batches=1, hidden=512, heads=8, seq_len=256, vocab=1024)


def _expected(path):
    """(device (the event's pid), stream) → (sorted latencies, max queue, starved ns, gaps over 10 us), from the JSON."""
    evs = events(path)
    rt = runtime_by_corr(evs)
    streams = collections.defaultdict(list)
    for e in by_cat(evs, "Kernel", "Memcpy", "Memset"):
        launch = rt.get(e["args"].get("correlation id"))
        if launch is not None:
            streams[(e["pid"], e["args"]["stream"])].append((span(launch)[0],) + span(e))
    out = {}
    for key, rows in streams.items():
        lat = sorted(s - la for la, s, _ in rows)
        # queue: +1 at each launch, -1 at each start, starts first at one moment
        depth = best = 0
        for _, d in sorted([(la, 1) for la, _, _ in rows] + [(s, -1) for _, s, _ in rows], key=lambda x: (x[0], x[1])):
            depth += d
            best = max(best, depth)
        rows.sort(key=lambda x: x[1])
        reach, starved, gaps = rows[0][2], 0, 0
        for la, s, e in rows[1:]:
            part = max(0, min(la, s) - reach)
            starved += part
            gaps += part > 10_000
            reach = max(reach, e)
        out[key] = (lat, best, starved, gaps)
    return out


def _rank(sorted_values, q):
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def _check(path):
    s = summarize_file(str(path))
    exp = _expected(path)
    got = {(ls.device_id, ls.stream): ls for ls in s.comm.launch}
    assert set(got) == set(exp)
    for key, (lat, best, starved, gaps) in exp.items():
        ls = got[key]
        assert ls.launched == len(lat)
        tol = 2
        assert abs(ls.p50_ns - _rank(lat, 0.5)) <= tol and abs(ls.p90_ns - _rank(lat, 0.9)) <= tol
        assert abs(ls.max_ns - lat[-1]) <= tol
        assert ls.max_queue == best
        assert abs(ls.starved_ns - starved) <= 2 * len(lat) and ls.starved_gaps == gaps
        assert len(ls.queue_time_ns) == len(ls.queue_depth) and max(ls.queue_depth) == best
    return s


def test_the_gpu_shaped_trace_against_its_json():
    for path in sorted((SHARED_TRACES / "gpu-synthetic-2rank").glob("*.paddle_trace.json")):
        s = _check(path)
        t = find_table(summary_display(s), "launch_latency")
        assert len(t.rows) == len(s.comm.launch)
        # the queue over time (the panel's chart, the CSV's and the API's rows): each stream's points, whose
        # largest depth is the JSON's largest queue
        q = find_table(summary_display(s), "launch_queue")
        keys = [c.key for c in q.columns]
        points = collections.defaultdict(list)
        for r in q.rows:
            dev, stream, time_ns, depth = (
                int(r.cells[keys.index(k)].number) for k in ("device", "stream", "time_ns", "depth")
            )
            points[(dev, stream)].append((time_ns, depth))
        exp = _expected(path)
        for ls in s.comm.launch:
            got = points[(ls.device_id, ls.stream)]
            assert got == list(zip(ls.queue_time_ns, ls.queue_depth))
            assert max(d for _, d in got) == exp[(ls.device_id, ls.stream)][1]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = {}
    for name, cfg in (
        ("plain", SynthConfig(**SMALL)),
        ("slow_launch", SynthConfig(**SMALL, launch_overhead=3.0)),
        ("gpu_bound", SynthConfig(dp=1, mp=1, pp=1, steps=2, layers=2, micro_batches=1)),
    ):
        d = tmp_path_factory.mktemp(name)
        generate(cfg, str(d))
        truth = load_truth(str(d))
        path = d / truth.ranks[0]["file"]
        out[name] = (truth, path, _check(path))
    return out


def _compute(s):
    return next(ls for ls in s.comm.launch if ls.stream == COMPUTE_STREAM)


def _findings(s):
    return [x.key for x in summary_display(s).views[0].sentences]


def test_a_slow_launch_path_starves_the_gpu(runs):
    _, _, plain = runs["plain"]
    truth, _, slow = runs["slow_launch"]
    change = next(c for c in truth.changes if c["type"] == "launch_overhead")
    extra = change["job_cost_ns_per_step"] * len(truth.steps)  # the time the planted factor added
    a, b = _compute(plain), _compute(slow)
    # the extra host time shows as the GPU waiting for launches: most of it, never more
    assert 0.5 * extra <= b.starved_ns - a.starved_ns <= 1.05 * extra
    # and the latency from each call to its kernel scales with the factor (the kernels wait for nothing else)
    assert 2.5 <= b.p50_ns / a.p50_ns <= 3.05
    assert "finding.launch_starved" in _findings(slow)


def test_a_gpu_bound_run_queues_and_does_not_starve(runs):
    _, _, gpu = runs["gpu_bound"]
    _, _, small = runs["plain"]
    c = _compute(gpu)
    assert c.max_queue > _compute(small).max_queue and c.starved_ns < 0.1 * c.span_ns
    assert "finding.launch_starved" not in _findings(gpu)
