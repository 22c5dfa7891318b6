"""The Python API (tb_paddle_profile.api): frames against the tables Paddle printed, text against the
CLI, a run's frames against the generator's planted truth, loading through the CLI's cache.

The frames are the display model's tables (raw values: ns, fractions, integers). Formatted with
Paddle's rules ('%.2f' of the time in the unit, ratios x 100), they give Paddle's printed cells:
the reference is Paddle's own output beside each trace (tests/data/traces, examples/profiler_log).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys

import pytest

from support.paths import REPO, trace_folders

pd = pytest.importorskip("pandas", reason="pandas is a dependency of the API (pip install -e .)")

import numpy as np  # noqa: E402

import tb_paddle_profile as tbp  # noqa: E402

UNIT = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
EXAMPLE_SINGLE = next((REPO / "examples/profiler_log/gpt-single").glob("*.paddle_trace.json"))
EXAMPLE_RUN = REPO / "examples/profiler_log/gpt-2rank"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """The default cache of these tests: a folder of their own, not the user's ~/.cache."""
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))


# ------------------------------------------------------------------ Paddle's printed tables


def paddle_rows(text: str, title: str):
    """(depth, cells) of the data rows of the table titled `title` in Paddle's printed summary: the
    lines between the header's closing separator and the table's closing separator, section lines
    ("Thread: ...") left out; cells split on runs of 2+ spaces, depth = leading spaces / 2."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if re.fullmatch(rf"-+{re.escape(title)}-+", ln))
    seps = [i for i in range(start + 1, len(lines)) if re.fullmatch(r"(-+  )+", lines[i])]
    sep = re.compile(r"(-+  )+")
    i, rows = seps[1] + 1, []
    while i < len(lines):
        ln = lines[i]
        if sep.fullmatch(ln):
            # a header repeated inside the table (the GPU half of the Overview): header line between separators
            if i + 2 < len(lines) and lines[i + 1].strip() and sep.fullmatch(lines[i + 2]):
                i += 3
                continue
            break
        if not ln.strip():
            break
        if not re.fullmatch(r"-+Thread: .*-+", ln):
            depth = (len(ln) - len(ln.lstrip(" "))) // 2
            rows.append((depth, re.split(r"\s{2,}", ln.strip())))
        i += 1
    return rows


def t(ns, unit: str) -> str:
    """Paddle's format_time: '%.2f' of the time in the unit; no value prints '-'."""
    return "-" if _none(ns) is None else "%.2f" % (ns / UNIT[unit])


def r(x) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else "%.2f" % (x * 100)


def stats(row, side: str, unit: str) -> str:
    return " / ".join(
        [
            t(row[f"{side}_total_ns"], unit),
            t(row[f"{side}_avg_ns"], unit),
            t(row[f"{side}_max_ns"], unit),
            t(row[f"{side}_min_ns"], unit),
            r(row[f"{side}_ratio"]),
        ]
    )


def _none(v):
    return None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v


def _printed_sets():
    """(trace, Paddle's printed summary, sorted_by, unit) of every trace set with a full printed summary."""
    name = re.compile(r"paddle_summary\.(?:(rank\d+)\.)?(CPU\w+|GPU\w+)\.(s|ms|us|ns)\.txt$")
    out = []
    for folder in trace_folders():
        for summary in sorted(folder.glob("paddle_summary.*.txt")):
            m = name.match(summary.name)
            if not m:
                continue  # the op_udf.* files: other options, checked by the CLI's parity test
            traces = sorted(p for p in folder.glob("*.paddle_trace.json") if not m[1] or p.name.startswith(m[1] + "_"))
            out.append(pytest.param(traces[0], summary, m[2], m[3], id=f"{folder.name}-{summary.name}"))
    return out


@pytest.mark.parametrize("trace, printed, sorted_by, unit", _printed_sets())
def test_operator_frame_is_paddles_operator_summary(trace, printed, sorted_by, unit):
    p = tbp.load(trace, sorted_by=sorted_by)
    want = paddle_rows(printed.read_text(), "Operator Summary")
    ops = p.table("operators")  # the display table: every row Paddle prints, trees by depth
    assert len(ops) == len(want) > 0
    for (depth, cells), (_, row) in zip(want, ops.iterrows()):
        name = cells[0]
        assert row["depth"] == depth
        assert row["name"] == name or (name.endswith("...") and row["name"].startswith(name[:-3])), (name, row["name"])
        flops = _none(row["flops"])
        assert cells[1:] == [
            str(int(row["calls"])),
            stats(row, "cpu", unit),
            stats(row, "gpu", unit),
            "-" if flops is None else str(int(flops)),
        ], name


@pytest.mark.parametrize("trace, printed, sorted_by, unit", _printed_sets())
def test_operator_data_is_one_row_per_operator_with_typed_columns(trace, printed, sorted_by, unit):
    p = tbp.load(trace, sorted_by=sorted_by)
    want = paddle_rows(printed.read_text(), "Operator Summary")
    ops, inner = p.operators, p.operator_details
    top = [cells for depth, cells in want if depth == 0]
    assert len(ops) == len(top) > 0 and len(inner) == len(want) - len(top)
    for cells, (_, row) in zip(top, ops.iterrows()):
        assert row["name"] == cells[0] or (cells[0].endswith("...") and row["name"].startswith(cells[0][:-3]))
        assert cells[1:3] == [str(row["calls"]), stats(row, "cpu", unit)]
    assert ops["cpu_total_ns"].dtype == ops["gpu_total_ns"].dtype == np.int64 and ops["calls"].dtype == np.int64
    assert ops["cpu_ratio"].dtype == np.float64 and ops["cpu_avg_ns"].dtype == np.float64
    # the tree as Paddle printed it: each inner row's parent is the nearest shallower row above it
    stack, parents = [], []
    for i, (depth, _) in enumerate(want):
        while stack and want[stack[-1]][0] >= depth:
            stack.pop()
        if depth:
            parents.append(stack[-1])
        stack.append(i)
    assert list(inner["parent_id"]) == parents
    assert list(inner["depth"]) == [d for d, _ in want if d]
    assert set(inner["top"]) <= set(ops["name"])
    assert ops["cpu_total_ns"].sum() <= p.table("operators")["cpu_total_ns"].sum()


@pytest.mark.parametrize("trace, printed, sorted_by, unit", _printed_sets())
def test_overview_and_model_frames_are_paddles(trace, printed, sorted_by, unit):
    p = tbp.load(trace, sorted_by=sorted_by)
    text = printed.read_text()
    want = [cells for _, cells in paddle_rows(text, "Overview Summary")]
    got = [
        [row["event_type"], str(int(row["calls"])), t(row["time_ns"], unit), r(row["ratio"])]
        for _, row in p.overview.iterrows()
    ]
    assert want == got  # the CPU rows, then (after Paddle's repeated header) the GPU rows
    gpu = [c[0] for d, c in paddle_rows(text, "Overview Summary")][len(p.overview[p.overview["side"] == "CPU"]) :]
    assert list(p.overview.loc[p.overview["side"] == "GPU", "event_type"]) == gpu
    if "Model Summary" in text:
        want = [cells for _, cells in paddle_rows(text, "Model Summary")]
        got = [
            [
                row["name"],
                "-" if _none(row["calls"]) is None else str(int(row["calls"])),
                stats(row, "cpu", unit),
                stats(row, "gpu", unit),
            ]
            for _, row in p.model.iterrows()
        ]
        assert want == got


@pytest.mark.parametrize("trace, printed, sorted_by, unit", [s for s in _printed_sets() if "GPU" in s.values[2]])
def test_kernel_frame_is_paddles_kernel_summary(trace, printed, sorted_by, unit):
    p = tbp.load(trace, sorted_by=sorted_by)
    want = paddle_rows(printed.read_text(), "Kernel Summary")
    kernels = p.kernels[p.kernels["depth"] == 0] if "depth" in p.kernels else p.kernels
    assert len(kernels) == len(want) > 0
    for (_, cells), (_, row) in zip(want, kernels.iterrows()):
        shown = cells[0][:-3] if cells[0].endswith("...") else cells[0]
        assert row["name"].startswith(shown.split("(")[0])  # the frame keeps the full name
        assert cells[1:] == [str(int(row["calls"])), stats(row, "gpu", unit)]


@pytest.mark.parametrize("trace, printed, sorted_by, unit", _printed_sets())
def test_memory_frame_is_paddles_memory_summary(trace, printed, sorted_by, unit):
    p = tbp.load(trace, sorted_by=sorted_by)
    text = printed.read_text()
    places = re.findall(r"-+Memory Summary - (Place\([^)]*\))-+", text)
    assert places
    mem = p.memory
    for place in places:
        want = [cells for _, cells in paddle_rows(text, f"Memory Summary - {place}")]
        rows = mem[mem["place"] == place]
        got = [
            [
                row["name"],
                row["type"],
                *(
                    str(int(row[c]))
                    for c in ("allocation_count", "free_count", "allocation_size", "free_size", "increased_size")
                ),
            ]
            for _, row in rows.iterrows()
        ]
        assert got == want, place
        peak = re.search(rf"Memory Summary - {re.escape(place)}-+\nPeak Allocated Memory: (\d+)", text)
        place_pb = next(pl for pl in p.summary.memory.places if pl.place == place)
        assert place_pb.peak_allocated == int(peak[1])
        curve = p.memory_curve[p.memory_curve["place"] == place]
        assert len(curve) > 0 and curve["allocated"].max() <= int(peak[1])


def test_text_is_what_the_cli_prints(tmp_path):
    p = tbp.load(EXAMPLE_SINGLE)
    for opts, args in [
        ({}, []),
        (
            {"sorted_by": "GPUTotal", "time_unit": "us", "thread_sep": True},
            ["--sorted-by", "GPUTotal", "--time-unit", "us", "--thread-sep"],
        ),
        ({"views": ["OperatorView"], "op_detail": False}, ["--views", "OperatorView", "--no-op-detail"]),
    ]:
        cli = subprocess.run(
            [sys.executable, "-m", "tb_paddle_profile", "summary", str(EXAMPLE_SINGLE), *args],
            capture_output=True,
            text=True,
            check=True,
            cwd=str(tmp_path),
        )
        assert p.text(**opts) + "\n" == cli.stdout
    # and Paddle's own printed table for the default options
    printed = next(EXAMPLE_SINGLE.parent.glob("*.summary.CPUTotal.ms.txt")).read_text()
    assert paddle_rows(p.text(), "Operator Summary") == paddle_rows(printed, "Operator Summary")


def test_sorted_by_orders_the_frames_as_paddle_does():
    p = tbp.load(EXAMPLE_SINGLE)
    q = p.with_options(sorted_by="CPUAvg", op_detail=False)
    printed = next(EXAMPLE_SINGLE.parent.glob("*.summary.CPUAvg.us.txt")).read_text()
    names = [cells[0] for depth, cells in paddle_rows(printed, "Operator Summary") if depth == 0]
    assert list(q.operators["name"]) == names
    assert q.summary is p.summary  # the same Summary; only the display is built again
    assert set(p.views) >= {"device", "overview", "operators", "memory_manipulation", "user_defined"}


def test_a_run_has_its_cross_rank_frames_and_the_clis_text(tmp_path):
    run = tbp.load_run(EXAMPLE_RUN)
    cli = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "distributed", str(EXAMPLE_RUN)],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(REPO),
    )
    assert run.text() == cli.stdout
    assert [r.rank for r in run.parallel.ranks] == [0, 1]
    for name in ("ranks", "steps", "collectives", "waits", "verdict"):
        frame = getattr(run, name)
        assert isinstance(frame, pd.DataFrame), name
    assert len(run.ranks) == 2
    # steps x ranks: each rank's mean step time is the mean of its column
    st = run.step_times
    assert list(st.columns) == [0, 1] and list(st.index) == list(run.parallel.steps)
    for rp in run.parallel.ranks:
        assert abs(st[rp.rank][st[rp.rank] > 0].mean() - rp.step_time_ns) <= 1
    prof = run.profile(1)
    assert prof.rank == 1 and prof.worker == "rank1"


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    """DP4 with rank 2's GPU computing 50 % slower (the generator's planted truth beside the traces)."""
    out = tmp_path_factory.mktemp("planted") / "run"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "4",
            "--mp",
            "1",
            "--pp",
            "1",
            "--steps",
            "3",
            "--layers",
            "1",
            "--micro-batches",
            "2",
            "--slow-rank",
            "2",
            "--out",
            str(out),
        ],
        cwd=str(REPO),
        check=True,
        capture_output=True,
        timeout=300,
    )
    manifest = json.loads((out / "synth_manifest.json").read_text())
    (out / "synth_manifest.json").unlink()
    return out, manifest


def test_a_runs_frames_hold_the_planted_truth(planted_run, tmp_path):
    out, manifest = planted_run
    run = tbp.load_run(out, cache_dir=str(tmp_path / "c"))
    assert manifest["slow_rank"] == 2
    verdict = run.verdict
    assert list(verdict["rank"]) == [2]
    # each rank's step times and exposed communication are the generator's (the trace keeps ns to 1 ns,
    # times as float32 µs: within a microsecond)
    for rank in manifest["ranks"]:
        for step in rank["steps"]:
            assert abs(int(run.step_times.loc[step["step"], rank["rank"]]) - step["step_time_ns"]) <= 1_000
            assert (
                abs(int(run.exposed_communication.loc[step["step"], rank["rank"]]) - step["exposed_comm_ns"]) <= 1_000
            )
    ranks = run.ranks
    assert sorted(ranks["rank"]) == [0, 1, 2, 3]
    slow = manifest["ranks"][2]["steps"]
    assert any(s.key.startswith("verdict") for v in run.display.views for s in v.sentences)
    assert (run.sentences["text"].str.contains("rank 2") | run.sentences["text"].str.contains("rank2")).any()
    assert len(slow) == 3


def test_load_reads_the_cache_the_cli_fills_and_writes_nothing_in_the_logdir(tmp_path):
    logdir = tmp_path / "logdir"
    shutil.copytree(EXAMPLE_RUN, logdir, ignore=shutil.ignore_patterns("*.txt", "*.json.gz"))
    before = sorted(p.name for p in logdir.iterdir())
    cache = tmp_path / "cache2"
    trace = next(logdir.glob("rank0_*.paddle_trace.json"))
    p = tbp.load(trace, cache_dir=str(cache))
    cli = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", str(trace), "--cache-dir", str(cache), "-v"],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(tmp_path),
    )
    assert "0 parsed, 1 from the cache" in cli.stderr
    assert p.text() + "\n" == cli.stdout
    run = tbp.load_run(logdir, cache_dir=str(cache))
    assert len(run.parallel.ranks) == 2
    assert sorted(p.name for p in logdir.iterdir()) == before
    nothing = tmp_path / "nocache"
    tbp.load(trace, cache=False, cache_dir=str(nothing))
    assert not nothing.exists()


def test_bad_input_is_one_line_naming_the_file(tmp_path):
    bad = tmp_path / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json"
    bad.write_text('{"traceEvents": [')
    with pytest.raises(tbp.LoadError) as err:
        tbp.load(bad)
    message = str(err.value)
    assert "\n" not in message and message.startswith(bad.name)
    with pytest.raises(tbp.LoadError, match="no \\*.paddle_trace.json files found"):
        tbp.load(tmp_path / "missing.paddle_trace.json")
    with pytest.raises(tbp.LoadError, match="3 traces here"):
        tbp.load(REPO / "examples/profiler_log")
    with pytest.raises(tbp.LoadError, match="not a folder"):
        tbp.load_run(EXAMPLE_SINGLE)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        tbp.load(EXAMPLE_SINGLE).nope


def test_import_is_light():
    """`import tb_paddle_profile` (the plugin, the CLI) does not import the API or pandas."""
    code = "import sys, tb_paddle_profile; print('pandas' in sys.modules, 'tb_paddle_profile.api' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(REPO))
    assert out.stdout.split() == ["False", "False"]
    assert callable(tbp.load) and tbp.Profile.__module__ == "tb_paddle_profile.api"


# ------------------------------------------------------------------ the example notebook

NOTEBOOK = REPO / "examples" / "api.ipynb"


def test_the_example_notebook_runs_and_shows_paddles_numbers(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat", reason="the test extra installs nbclient and ipykernel")
    nbclient = pytest.importorskip("nbclient", reason="the test extra installs nbclient and ipykernel")
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "nbcache"))
    client = nbclient.NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()

    def output(tag: str) -> str:
        cell = next(c for c in nb.cells if tag in c.metadata.get("tags", []))
        parts = []
        for o in cell.outputs:
            assert o.output_type != "error", o
            parts.append(o.get("text", "") or o.get("data", {}).get("text/plain", ""))
        return "".join(parts)

    printed = next(EXAMPLE_SINGLE.parent.glob("*.summary.CPUTotal.ms.txt")).read_text()
    want = [c for d, c in paddle_rows(printed, "Operator Summary") if d == 0]
    # the notebook's top operators: names, calls and CPU totals (ms) as Paddle printed them
    top = output("top-operators")
    for cells in want[:5]:
        name, calls, cpu_total = cells[0], cells[1], cells[2].split(" / ")[0]
        line = next(ln for ln in top.splitlines() if name in ln)
        assert calls in line.split() and cpu_total in line.split(), (line, cells)
    # the text cell prints Paddle's own Operator Summary
    assert paddle_rows(output("operator-text"), "Operator Summary") == paddle_rows(printed, "Operator Summary")
    # the run: both ranks and the CLI's distributed text
    cli = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "distributed", "profiler_log/gpt-2rank"],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(NOTEBOOK.parent),
    )
    assert cli.stdout.strip() in output("run-text")
    steps = output("step-times")
    run = tbp.load_run(EXAMPLE_RUN)
    for s in run.parallel.steps:
        assert re.search(rf"^\s*{s}\s", steps, re.M), steps
