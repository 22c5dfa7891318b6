"""`tb-paddle-profile diff` and the `diff` route against the generator's planted changes.

Each pair is two generated runs (tbp_synth) that differ by one planted change; the baseline and the
candidate go the way of a real comparison (the CLI's loading path: the cache, the per-file job, the
cross-rank analysis), and the decomposition of the step-time change is held to the generator's own
numbers (tbp_synth.truth: step times, compute-kernel time, waits of every collective member, the cost of
each planted change against the run simulated without it).
"""

import json
import shutil
import subprocess
import sys

import numpy as np
from pathlib import Path
import pytest

from tb_paddle_profile.cli import commands as cli
from tb_paddle_profile.cli.diff import load_diff
from tb_paddle_profile.present.display.export import records
from tb_paddle_profile.present.display.summary import find_table
from tb_paddle_profile.v1 import diff_pb2
from tbp_synth import SynthConfig, generate
from tbp_synth.truth import load_truth

from support.plugin_testlib import PREFIX, make_plugin, ready, settled, tree_digest

SMALL = dict(dp=2, mp=2, pp=2, steps=3, layers=2, micro_batches=2, names="rank")
WAIT_KINDS = ("all_reduce", "broadcast")  # the collectives whose waits are "waiting for late peers"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name -> folder: a control run and one run per planted change (same seed, same model)."""
    root = tmp_path_factory.mktemp("diff_runs")
    plan = {
        "base": {},
        "mb4": dict(micro_batches=4),
        "dp_slow": dict(comm_factor={"dp": 3.0}),
        "kernel_slow": dict(slow_kernel={"AdamW": 2.0}),
        "straggler": dict(slow_rank=1, slow_factor=1.5),
        "dp1_4steps": dict(dp=1, steps=4),
        "later_steps": dict(first_step=11),
    }
    out = {}
    for name, extra in plan.items():
        folder = root / name
        generate(SynthConfig(**{**SMALL, **extra}), str(folder))
        out[name] = folder
    return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("diff_cache"))


def _diff(cache, *argv) -> diff_pb2.RunDiff:
    args = cli.build_parser().parse_args(["diff", *map(str, argv), "--cache-dir", cache])
    return load_diff(args)


def _parts(result: diff_pb2.RunDiff):
    """{part: delta ns} and the step row of the decomposition table (what the CLI and the panel show)."""
    rows = records(find_table(result.display, "decomposition"))
    parts = {r["part"]: r for r in rows[:-1]}
    return parts, rows[-1]


def _largest(parts):
    return max(parts.values(), key=lambda r: abs(r["delta_ns"]))


def _job_step(t) -> float:
    return float(np.mean(t.step_time_ns))


def _check_sum(parts, step):
    # the parts add up to the change of the mean step time (to the last floating-point rounding)
    assert sum(r["delta_ns"] for r in parts.values()) == pytest.approx(step["delta_ns"], rel=1e-12, abs=1e-6)
    assert sum(r["baseline_ns"] for r in parts.values()) == pytest.approx(step["baseline_ns"], rel=1e-12, abs=1e-6)
    assert sum(r["candidate_ns"] for r in parts.values()) == pytest.approx(step["candidate_ns"], rel=1e-12, abs=1e-6)


def test_slower_dp_all_reduce(runs, cache):
    """comm_factor dp=3: each DP all-reduce transfers 3x longer. The part that grows is the exposed
    all-reduce; what it adds to the step is the planted change's cost minus the extra waiting it causes."""
    result = _diff(cache, runs["base"], runs["dp_slow"])
    parts, step = _parts(result)
    _check_sum(parts, step)
    b, c = load_truth(runs["base"]), load_truth(runs["dp_slow"])
    (change,) = c.changes
    assert step["delta_ns"] == pytest.approx(change["job_cost_ns_per_step"], rel=0.02)
    assert step["delta_ns"] == pytest.approx(_job_step(c) - _job_step(b), rel=1e-6)
    top = _largest(parts)
    assert top["part"] == "exposed all-reduce"
    waits = float(np.mean(c.waits_ns(WAIT_KINDS)) - np.mean(b.waits_ns(WAIT_KINDS)))
    assert parts["waiting for late peers"]["delta_ns"] == pytest.approx(waits, rel=0.02)
    assert top["delta_ns"] == pytest.approx(change["job_cost_ns_per_step"] - waits, rel=0.02)
    sentence = result.display.views[0].sentences[0]
    assert sentence.key == "diff.verdict"
    text = "".join(s.text if not s.is_value else "#" for s in sentence.spans)
    assert text.startswith("The step got # slower") and "exposed all-reduce +#" in text


def test_twice_the_micro_batches(runs, cache):
    result = _diff(cache, runs["base"], runs["mb4"])
    parts, step = _parts(result)
    _check_sum(parts, step)
    b, c = load_truth(runs["base"]), load_truth(runs["mb4"])
    assert step["delta_ns"] == pytest.approx(_job_step(c) - _job_step(b), rel=0.02)
    top = _largest(parts)
    assert top["part"] == "compute"
    assert top["delta_ns"] == pytest.approx(float(np.mean(c.compute_ns) - np.mean(b.compute_ns)), rel=0.02)
    # the second largest is the bubble: 1F1B's fill and drain grow with the micro-batches' count
    second = sorted(parts.values(), key=lambda r: -abs(r["delta_ns"]))[1]
    assert second["part"] == "pipeline bubble" and second["delta_ns"] > 0


def test_straggler_removed(runs, cache):
    """Baseline: rank 1 computes 1.5x slower; candidate: the same run without it."""
    result = _diff(cache, runs["straggler"], runs["base"])
    parts, step = _parts(result)
    _check_sum(parts, step)
    b, c = load_truth(runs["straggler"]), load_truth(runs["base"])
    (planted,) = b.planted
    assert step["delta_ns"] == pytest.approx(-planted["job_cost_ns_per_step"], rel=0.02)
    top = _largest(parts)
    assert top["part"] == "waiting for late peers"
    waits = float(np.mean(c.waits_ns(WAIT_KINDS)) - np.mean(b.waits_ns(WAIT_KINDS)))
    assert top["delta_ns"] == pytest.approx(waits, rel=0.02)
    # per rank: the slow rank's own compute is what it loses; aligned by role, every rank is matched
    ranks = records(find_table(result.display, "ranks"))
    assert len(ranks) == 8 and not any(r["status"] for r in ranks)
    slow = [r for r in ranks if r["name"].startswith("rank 1 ")]
    assert slow[0]["compute_delta_ns"] == pytest.approx(-planted["excess_ns_per_step"], rel=0.02)
    stages = records(find_table(result.display, "stages"))
    assert [r["name"] for r in stages] == ["stage 0", "stage 1"]


def test_slower_kernel_tops_the_kernel_table(runs, cache):
    """slow_kernel AdamW=2: on one rank, the AdamW kernel's time doubles; the kernel delta table puts it
    first with delta = (F - 1) x its baseline time, and the run's compute grows by the truth's compute."""
    b_file = next(runs["base"].glob("rank0_*.paddle_trace.json"))
    c_file = next(runs["kernel_slow"].glob("rank0_*.paddle_trace.json"))
    result = _diff(cache, b_file, c_file)
    assert result.mode == "rank"
    kernels = [r for r in records(find_table(result.display, "kernels")) if r["depth"] == 0]
    top = kernels[0]
    assert "AdamW" in top["name"] and top["status"] == ""
    assert top["gpu_total_ns_delta"] == pytest.approx(1.0 * top["gpu_total_ns_baseline"], rel=0.02)
    assert abs(top["gpu_total_ns_delta"]) > max(abs(k["gpu_total_ns_delta"]) for k in kernels[1:])
    # the row leads to both timelines, searching the kernel
    table = find_table(result.display, "kernels")
    row = next(r for r in table.rows if r.depth == 0)
    assert row.link.startswith("diff:b=rank0&c=rank0&q=") and "AdamW" in row.link
    pairs = [(p, r) for p, r in zip(table.rows, table.rows[1:]) if p.depth == 0 and r.depth == 1]
    assert pairs
    for parent, launch in pairs:  # a launch configuration leads to its kernel's search
        assert launch.link == parent.link

    run = _diff(cache, runs["base"], runs["kernel_slow"])
    parts, step = _parts(run)
    _check_sum(parts, step)
    b, c = load_truth(runs["base"]), load_truth(runs["kernel_slow"])
    assert _largest(parts)["part"] == "compute"
    assert parts["compute"]["delta_ns"] == pytest.approx(float(np.mean(c.compute_ns) - np.mean(b.compute_ns)), rel=0.02)
    (change,) = c.changes
    assert step["delta_ns"] == pytest.approx(change["job_cost_ns_per_step"], rel=0.02)


def test_rank_tables_match_by_name_and_mark_new_rows(runs, cache):
    """A stage-0 rank against a stage-1 rank of the same run: the operators only one side runs are new or
    removed, the others matched; the operator table is sorted by |delta|."""
    files = sorted(runs["base"].glob("rank*_*.paddle_trace.json"))
    r0 = next(f for f in files if f.name.startswith("rank0_"))
    r2 = next(f for f in files if f.name.startswith("rank2_"))
    result = _diff(cache, r0, r2)
    ops = find_table(result.display, "operators")
    top = [r for r in records(ops) if r["depth"] == 0]
    status = {r["name"]: r["status"] for r in top}
    assert "new" in status.values() or "removed" in status.values()
    deltas = [abs(r["cpu_total_ns_delta"]) for r in top]
    assert deltas == sorted(deltas, reverse=True)
    for r in top:  # a new row has no baseline, a removed one no candidate; delta counts the missing side as 0
        if r["status"] == "new":
            assert r["cpu_total_ns_baseline"] is None and r["cpu_total_ns_delta"] == r["cpu_total_ns_candidate"]
        elif r["status"] == "removed":
            assert r["cpu_total_ns_candidate"] is None and r["cpu_total_ns_delta"] == -r["cpu_total_ns_baseline"]
    # every data row carries both sides' timeline link (only the side where it exists)
    for row in ops.rows:
        if row.role == 0:
            assert row.link.startswith("diff:")
    # model stages per step: one row per step both have
    steps = records(find_table(result.display, "model_steps"))
    assert [r["step"] for r in steps] == [1, 2, 3]


def test_runs_of_other_topology_and_steps_align_by_role(runs, cache):
    """DP2 x MP2 x PP2, 3 steps, against DP1 x MP2 x PP2, 4 steps: per-step means, roles aligned, the
    replicas the candidate lacks removed, the step it adds new, and the output says how."""
    result = _diff(cache, runs["base"], runs["dp1_4steps"])
    parts, step = _parts(result)
    _check_sum(parts, step)
    b, c = load_truth(runs["base"]), load_truth(runs["dp1_4steps"])
    assert step["delta_ns"] == pytest.approx(_job_step(c) - _job_step(b), rel=1e-6)
    notes = " ".join(result.alignment)
    assert "different numbers of ranks (8 and 4)" in notes and "topologies differ" in notes
    assert "baseline 3, candidate 4 steps per rank" in notes
    ranks = records(find_table(result.display, "ranks"))
    assert sorted(r["status"] for r in ranks) == ["", "", "", "", "removed", "removed", "removed", "removed"]
    for r in ranks:  # rank r of dp0 is rank r in both runs (rank = (dp * PP + pp) * MP + mp)
        if r["status"] == "removed":
            assert r["candidate_ns"] is None and "dp1" in r["name"]
        else:
            assert "dp0" in r["name"] and r["ranks_baseline"] == r["ranks_candidate"] == 1
    steps = records(find_table(result.display, "steps"))
    assert [(r["name"], r["status"]) for r in steps] == [
        ("step 1", ""),
        ("step 2", ""),
        ("step 3", ""),
        ("step 4", "new"),
    ]
    for r, number in zip(steps[:3], (1, 2, 3)):  # each step: the mean over ranks of the truth's step time
        i, j = b.steps.index(number), c.steps.index(number)
        assert r["delta_ns"] == pytest.approx(float(c.step_time_ns[:, j].mean() - b.step_time_ns[:, i].mean()), abs=1.0)


def test_steps_of_other_numbers_align_by_order(runs, cache):
    """The same run profiled from step 11: no ProfileStep number in common, so steps pair by their order."""
    result = _diff(cache, runs["base"], runs["later_steps"])
    assert any("steps are compared by their order" in n for n in result.alignment)
    steps = records(find_table(result.display, "steps"))
    assert [(r["name"], r["status"]) for r in steps] == [("step 1 / 11", ""), ("step 2 / 12", ""), ("step 3 / 13", "")]
    b, c = load_truth(runs["base"]), load_truth(runs["later_steps"])
    for i, r in enumerate(steps):
        assert r["delta_ns"] == pytest.approx(float(c.step_time_ns[:, i].mean() - b.step_time_ns[:, i].mean()), abs=1.0)


def test_cli_text_json_csv(runs, cache, capsys):
    a, b = runs["base"], runs["mb4"]
    assert cli.main(["diff", str(a), str(b), "--cache-dir", cache]) == 0
    out = capsys.readouterr().out
    assert "The step got" in out and "Step time change by part" in out and "Step time change per rank" in out
    assert cli.main(["diff", f"{a}@0", f"{b}@0", "--cache-dir", cache, "--format", "json"]) == 0
    msg = json.loads(capsys.readouterr().out)
    assert msg["mode"] == "run" and msg["baseline"]["span"] == "0" and msg["display"]["views"][0]["key"] == "step"
    assert cli.main(["diff", str(a), str(b), "--cache-dir", cache, "--format", "csv", "--table", "decomposition"]) == 0
    csv_text = capsys.readouterr().out
    # --table: plain CSV, the header line first (pandas.read_csv reads it as it is)
    assert csv_text.startswith("part,baseline_ns,candidate_ns,delta_ns")


def test_bad_input_one_line(runs, cache, tmp_path, capsys):
    assert cli.main(["diff", str(tmp_path / "missing.paddle_trace.json"), str(runs["base"]), "--cache-dir", cache]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.paddle_trace.json" in err[0]
    bad = tmp_path / "bad.paddle_trace.json"
    bad.write_text('{"traceEvents": [{"name": ')
    good = next(runs["base"].glob("rank0_*.paddle_trace.json"))
    assert cli.main(["diff", str(good), str(bad), "--cache-dir", cache]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "bad.paddle_trace.json" in err[0]
    assert cli.main(["diff", str(good), str(runs["base"]), "--cache-dir", cache]) == 2
    assert "two trace files" in capsys.readouterr().err


def test_route(runs, tmp_path, monkeypatch):
    """The `diff` route over a logdir holding two runs: two runs, two ranks, CSV, bad parameters."""
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    logdir = tmp_path / "logdir"
    for name in ("base", "dp_slow"):
        shutil.copytree(runs[name], logdir / name, ignore=shutil.ignore_patterns("synth_*"))
    before = tree_digest(logdir)
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        q = "baseline_run=base&baseline_span=0&candidate_run=dp_slow&candidate_span=0"
        got = settled(client, f"{PREFIX}/diff?{q}", 200)  # the cross-rank analyses: computed on the first request
        assert got.status_code == 200, got.get_data(as_text=True)
        msg = diff_pb2.RunDiff.FromString(got.get_data())
        assert msg.mode == "run" and msg.baseline.run == "base" and msg.candidate.ranks == 8
        cli_msg = load_diff(
            cli.build_parser().parse_args(["diff", str(runs["base"]), str(runs["dp_slow"]), "--no-cache"])
        )
        assert records(find_table(msg.display, "decomposition")) == records(
            find_table(cli_msg.display, "decomposition")
        )
        got = client.get(f"{PREFIX}/diff?{q}&format=json")
        assert json.loads(got.get_data())["mode"] == "run"
        ranks = (
            "baseline_run=base&baseline_worker=rank0&baseline_span=0&candidate_run=dp_slow&"
            "candidate_worker=rank0&candidate_span=0"
        )
        got = client.get(f"{PREFIX}/diff?{ranks}")
        assert got.status_code == 200
        msg = diff_pb2.RunDiff.FromString(got.get_data())
        assert msg.mode == "rank" and [v.key for v in msg.display.views][:2] == ["step", "overview"]
        got = client.get(f"{PREFIX}/csv?view=diff&table=kernels&{ranks}")
        assert got.status_code == 200 and got.headers["Content-Type"].startswith("text/csv")
        assert got.get_data(as_text=True).splitlines()[0].startswith("depth,name,status,calls_baseline")
        bad = client.get(f"{PREFIX}/diff?{q}&baseline_worker=rank0")
        assert bad.status_code == 400
        assert client.get(f"{PREFIX}/diff?{q.replace('base&', 'nope&', 1)}").status_code == 404
        outside = client.get(f"{PREFIX}/diff?baseline_run=../x&baseline_span=0&candidate_run=base&candidate_span=0")
        assert outside.status_code == 404
        assert tree_digest(logdir) == before  # nothing written into the user's logdir
    finally:
        plugin.close()


def test_command_line_entry_point(runs, tmp_path):
    """The installed command, as a user runs it."""
    a = next(runs["base"].glob("rank0_*.paddle_trace.json"))
    b = next(runs["kernel_slow"].glob("rank0_*.paddle_trace.json"))
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "diff", str(a), str(b), "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Kernel Summary: baseline vs candidate" in proc.stdout


def test_route_answers_202_while_a_side_loads(runs, tmp_path):
    """The candidate's trace is held in its read (a gate): the route says what it waits for, with 202; once
    the file is read, the comparison."""
    from werkzeug.test import Client

    from support.plugin_testlib import OLD, GateFS, place, wait_for
    from tb_paddle_profile.store.cache import SummaryCache
    from tb_paddle_profile.pipeline.discovery import Discovery
    from tb_paddle_profile.pipeline.loader import LOADING, READY, Loader
    from tb_paddle_profile.plugin.routes import Routes

    gates = tmp_path / "gates"
    gates.mkdir()
    logdir = tmp_path / "logdir"
    srcs = {name: next(runs[name].glob("rank0_*.paddle_trace.json")) for name in ("base", "kernel_slow")}
    assert srcs["base"].name != srcs["kernel_slow"].name
    for name, src in srcs.items():
        place(src.read_bytes(), logdir / name / src.name, mtime=OLD)
    discovery = Discovery(str(logdir), interval=None)
    loader = Loader(GateFS(str(gates)), SummaryCache(tmp_path / "cache"), workers=2, root=discovery.root)
    discovery.subscribe(loader.update)
    try:
        files = {f.run: f for f in discovery.scan().files}
        (gates / srcs["base"].name).touch()
        wait_for(lambda: loader.state(files["base"]).state == READY, what="the baseline to load")
        wait_for(lambda: loader.state(files["kernel_slow"]).state == LOADING, what="the candidate's parse")
        client = Client(Routes(discovery, loader).apps()["/diff"])
        q = (
            "baseline_run=base&baseline_worker=rank0&baseline_span=0&candidate_run=kernel_slow&"
            "candidate_worker=rank0&candidate_span=0"
        )
        got = client.get(f"/?{q}")
        assert got.status_code == 202 and got.headers["Retry-After"] == "1"
        msg = diff_pb2.RunDiff.FromString(got.get_data())
        assert msg.mode == "rank" and msg.candidate.run == "kernel_slow" and not msg.display.views
        assert msg.alignment == [f"waiting for {srcs['kernel_slow'].name} to load"]
        (gates / srcs["kernel_slow"].name).touch()
        wait_for(lambda: loader.state(files["kernel_slow"]).state == READY, what="the candidate to load")
        got = client.get(f"/?{q}")
        assert got.status_code == 200
        kernels = find_table(diff_pb2.RunDiff.FromString(got.get_data()).display, "kernels")
        assert "AdamW" in kernels.rows[0].cells[0].text
    finally:
        for src in srcs.values():
            (gates / src.name).touch()
        discovery.stop()
        loader.close()


def _shaped(src: Path, dst: Path, first: int) -> Path:
    """A copy of a real trace whose operator events carry input shapes X: [[2, first + i % 2]] (Paddle 3.3.1
    writes them empty unless asked)."""
    parts = src.read_text().split('"input_shapes": {}')
    assert len(parts) > 5
    dst.write_text(
        parts[0] + "".join('"input_shapes": {"X": [[2, %d]]}' % (first + i % 2) + p for i, p in enumerate(parts[1:]))
    )
    return dst


def test_operators_match_by_name_and_input_shapes(shared_traces, tmp_path, cache):
    """Baseline shapes {1, 2}, candidate {2, 3} of the same operators: the groups match by their shapes (not by
    their position), [[2,1]] is removed, [[2,3]] new, and a matched group's delta is the two sides' own rows."""
    from support.plugin_testlib import GPU, trace_files
    from tb_paddle_profile.present.display.summary import summary_display
    from tb_paddle_profile.analysis.summarize import summarize_file

    src = trace_files(shared_traces, GPU)[0]
    (tmp_path / "b").mkdir()
    (tmp_path / "c").mkdir()
    b = _shaped(src, tmp_path / "b" / src.name, 1)
    c = _shaped(src, tmp_path / "c" / src.name, 2)
    result = _diff(cache, b, c)
    rows = [r for r in records(find_table(result.display, "operators_by_shape")) if r["kind"] == "shape"]
    assert rows
    own = {
        side: {
            (r["name"], r["input_shapes"]): r
            for r in records(find_table(summary_display(summarize_file(str(path))), "operators_by_shape"))
            if r["kind"] == "shape"
        }
        for side, path in (("b", b), ("c", c))
    }
    assert {(r["name"], r["input_shapes"]) for r in rows} == set(own["b"]) | set(own["c"])
    for r in rows:
        key = (r["name"], r["input_shapes"])
        assert (
            r["status"]
            == {(True, True): "", (True, False): "removed", (False, True): "new"}[(key in own["b"], key in own["c"])]
        )
        if not r["status"]:
            assert r["calls_baseline"] == own["b"][key]["calls"] and r["calls_candidate"] == own["c"][key]["calls"]
            assert r["cpu_total_ns_delta"] == own["c"][key]["cpu_total_ns"] - own["b"][key]["cpu_total_ns"]
    # [[2,1]] exists only in the baseline, [[2,3]] only in the candidate; [[2,2]] is matched where both have it
    assert all(r["status"] == "removed" for r in rows if "[[2,1]]" in r["input_shapes"])
    assert all(r["status"] == "new" for r in rows if "[[2,3]]" in r["input_shapes"])
    assert any(r["status"] == "" and "[[2,2]]" in r["input_shapes"] for r in rows)
    assert {r["status"] for r in rows} == {"", "new", "removed"}


def test_shares_of_a_change_near_zero_are_not_percentages():
    """Two parts that cancel (+3 ms compute, −2.99 ms waiting: the step 6.5 µs slower of 30 ms) gave "share of
    change 45925.7 %" (issue 26.5): below 1 % of the baseline step the shares are missing and a note says why;
    a real change keeps them (they add up to 100 %)."""
    from tb_paddle_profile.analysis.diff import Decomposition, Group
    from tb_paddle_profile.present.display.cells import format_cell, sentence_text
    from tb_paddle_profile.present.display.diff import decomposition_table

    keys = ["compute", "waiting"]

    def table(compute_delta, waiting_delta):
        g = Group(
            "job",
            "job",
            {"compute": 20e6, "waiting": 10e6},
            {"compute": 20e6 + compute_delta, "waiting": 10e6 + waiting_delta},
        )
        return decomposition_table(Decomposition(keys=keys, total=g))

    t = table(3e6, -2.9935e6)
    col = [c.key for c in t.columns].index("share")
    assert [r.cells[col].missing for r in t.rows] == [True, True, True]
    assert all("%" not in format_cell(t.columns[col], r.cells[col]) for r in t.rows)
    assert any("share" in sentence_text(n) for n in t.notes)
    t = table(3e6, -1e6)
    shares = [r.cells[col].number for r in t.rows]
    assert shares == pytest.approx([1.5, -0.5, 1.0]) and not any("share" in sentence_text(n) for n in t.notes)
