"""The display model of one rank (tb_paddle_profile/present/display/summary.py) against the tables Paddle printed.

Every table of the model that has a Paddle view is laid out alone and must be, line for line, one of
the tables Paddle 3.3.1 printed for the committed traces (tests/data/traces/*/paddle_summary.*.txt), and
every table Paddle printed must be one of the model's. The CSV of `tb-paddle-profile summary --format csv`
(raw values) and of the plugin's `csv` route, converted to the printed unit, must give the numbers of
Paddle's printed rows. The routes are asked of a real TensorBoard process.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.paths import REPO, SHARED_TRACES
from support.parity import normalise
from support.plugin_testlib import GPU, PREFIX, SINGLE, tensorboard_process, trace_files, tree_digest
from test_parity_shared import _NAME
from tb_paddle_profile.present.display import cells
from tb_paddle_profile.present.display.export import records, to_csv
from tb_paddle_profile.present.display.summary import find_table, summary_display
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.render.text import render_display, render_table
from tb_paddle_profile.v1 import display_pb2 as dpb

_TITLE = re.compile(
    r"^-+((?:Device|Overview|Model|Distribution|Operator|Kernel|Memory Manipulation|UserDefined)"
    r" Summary|Memory Summary - .+?)-+$"
)
_DIV = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1}


def _cases():
    out = []
    for printed in sorted(SHARED_TRACES.glob("*/paddle_summary.*.txt")):
        m = _NAME.match(printed.name)
        traces = sorted(printed.parent.glob("*.paddle_trace.json"))
        if m["rank"]:
            traces = [t for t in traces if t.name.startswith(m["rank"] + "_")]
        opts = dict(
            sorted_by=m["key"] or "CPUTotal",
            unit=m["unit"],
            op_detail=not m["nodetail"],
            thread_sep=bool(m["sep"]),
            views=("OperatorView", "UDFView") if m["op_udf"] else None,
        )
        out.append(pytest.param(traces[0], printed, opts, id=f"{printed.parent.name}/{printed.name}"))
    return out


CASES = _cases()
_SUMMARIES: dict = {}


def _summary(trace: Path):
    if trace not in _SUMMARIES:
        _SUMMARIES[trace] = summarize_file(str(trace))
    return _SUMMARIES[trace]


def paddle_blocks(text: str) -> dict:
    """Paddle's printed tables by title: the lines from the title to the next table's title."""
    lines = normalise(text)
    starts = [i for i, line in enumerate(lines) if _TITLE.match(line)]
    blocks = {}
    for a, b in zip(starts, starts[1:] + [len(lines)]):
        blocks[_TITLE.match(lines[a]).group(1)] = normalise("\n".join(lines[a:b]))
    return blocks


def _display(trace, opts):
    return summary_display(
        _summary(trace),
        sorted_by=opts["sorted_by"],
        op_detail=opts["op_detail"],
        thread_sep=opts["thread_sep"],
        time_unit=opts["unit"],
    )


def _paddle_tables(display, views=None):
    return [
        (v.key, t)
        for v in display.views
        for t in v.tables
        if not t.text_hidden and t.paddle_view and (not views or t.paddle_view in views)
    ]


def test_every_committed_printout_is_checked():
    assert len(CASES) >= 9


@pytest.mark.parametrize("trace, printed, opts", CASES)
def test_each_table_of_the_model_is_one_paddle_printed(trace, printed, opts):
    blocks = paddle_blocks(printed.read_text())
    display = _display(trace, opts)
    tables = _paddle_tables(display, opts["views"])
    assert sorted(t.title for _, t in tables) == sorted(blocks), "the model has exactly Paddle's tables"
    for _, table in tables:
        out: list = []
        render_table(table, opts["unit"], out)
        assert normalise("\n".join(out)) == blocks[table.title], table.key
    # and all of them together, in Paddle's order, are Paddle's whole printout
    assert normalise(render_display(display, opts["unit"], opts["views"])) == normalise(printed.read_text())


# ------------------------------------------------------------------ raw values against Paddle's digits


def _data_lines(block: list) -> list:
    """The fields of a printed table's data rows (header, separators, sections, notes left out)."""
    rows, seps = [], 0
    for line in block[1:]:
        if line.startswith("Note:"):
            break
        if not line.strip() or line.startswith(("Time unit:", "Peak Allocated Memory:", "Peak Reserved Memory:")):
            continue
        if set(line.strip()) <= {"-", " "} or re.match(r"^-+Thread: .*-+$", line):
            seps += 1
            continue
        if seps == 1:  # the column header
            continue
        fields = re.split(r"\s{2,}", line.strip())
        if fields == ["Calls", "GPU Time", "Ratio (%)"]:  # the GPU half of the Overview Summary
            continue
        rows.append(fields)
    return rows


def _printed(record: dict, table: dpb.Table, unit: str) -> list:
    """A CSV record's raw values as Paddle prints them, computed here from the values alone."""

    def one(c: dpb.Column):
        v = record[c.key]
        if v in ("", None):
            return "-"
        kind = c.format.kind
        if kind == cells.DURATION:
            return "{:.2f}".format(float(v) / _DIV[unit]) if unit != "ns" else "{:.2f}".format(float(v))
        if kind == cells.RATIO:
            return "{:.2f}".format(float(v) * 100)
        if kind in (cells.COUNT, cells.BYTES):
            return str(int(v))
        return str(v)

    out, group = [], None
    for c in table.columns:
        if c.text_hidden:
            continue
        if c.group and c.group == group:
            out[-1] += " / " + one(c)
        else:
            out.append(one(c))
        group = c.group
    return out


def _same(ours: list, paddle: list) -> bool:
    if len(ours) != len(paddle) or ours[1:] != paddle[1:]:
        return False
    name = paddle[0]
    return (
        ours[0] == name or (name.endswith("...") and ours[0].startswith(name[:-3])) or ours[0].startswith(name)
    )  # a kernel's full name (CSV) starts with Paddle's display name


def _csv_blocks(text: str) -> dict:
    out, key = {}, None
    for line in text.splitlines(keepends=True):
        m = re.match(r"^# (\S+?)/(.+?): ", line)
        if m:
            key = m.group(2)
            out[key] = ""
        elif key is not None:
            out[key] += line
    return {k: list(csv.DictReader(io.StringIO(v.strip("\n") + "\n"))) for k, v in out.items()}


def _check_numbers(table: dpb.Table, recs: list, block: list, unit: str) -> int:
    if table.tree:
        recs = [r for r in recs if not (table.key == "kernels" and int(r["depth"]) > 0)]  # launch rows: ours only
    paddle = _data_lines(block)
    ours = [_printed(r, table, unit) for r in recs]
    assert len(ours) == len(paddle), table.key
    for a, b in zip(ours, paddle):
        assert _same(a, b), (table.key, a, b)
    return len(ours)


@pytest.mark.parametrize("trace, printed, opts", [c for c in CASES if not c.values[2]["views"]])
def test_summary_csv_values_are_the_printed_numbers(trace, printed, opts, tmp_path):
    args = [
        sys.executable,
        "-m",
        "tb_paddle_profile",
        "summary",
        str(trace),
        "--format",
        "csv",
        "--no-cache",
        "--sorted-by",
        opts["sorted_by"],
        "--time-unit",
        opts["unit"],
    ]
    proc = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    blocks = paddle_blocks(printed.read_text())
    by_key = _csv_blocks(proc.stdout)
    display = _display(trace, opts)
    checked = 0
    for _, table in _paddle_tables(display):
        checked += _check_numbers(table, by_key[table.key], blocks[table.title], opts["unit"])
    assert checked > 20
    # the panels' own tables are in the CSV too, with their raw values
    assert "model_steps" in by_key
    assert ("kernels" in by_key) == ("kernels_by_operator" in by_key)
    assert all(len(recs) == len(records(find_table(display, key))) for key, recs in by_key.items())


def test_csv_table_option_and_unknown_table(tmp_path):
    trace = trace_files(SHARED_TRACES, GPU)[0]
    base = [sys.executable, "-m", "tb_paddle_profile", "summary", str(trace), "--format", "csv", "--no-cache"]
    one = subprocess.run(base + ["--table", "kernels"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert one.returncode == 0, one.stderr
    # --table: plain CSV, the header line first; the same table as in the all-tables CSV
    assert not one.stdout.startswith("#") and one.stdout.count("\n# ") == 0
    every = subprocess.run(base, cwd=REPO, capture_output=True, text=True, timeout=120).stdout
    block = every.split("# kernels/kernels: Kernel Summary\n", 1)[1].split("\n\n", 1)[0] + "\n"
    assert one.stdout == block and "," in block.split("\n", 1)[0]
    bad = subprocess.run(base + ["--table", "nope"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert len(bad.stderr.strip().splitlines()) == 1 and trace.name in bad.stderr and "kernels/kernels" in bad.stderr
    # --views keeps Paddle's tables of those views only
    views = subprocess.run(
        base + ["--views", "KernelView", "MemoryView"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert re.findall(r"^# (\S+):", views.stdout, re.M) == ["kernels/kernels", "memory/memory.Place(gpu:0)"]


# ------------------------------------------------------------------ the rules the panels used to derive


def test_memory_rows_in_paddles_order_reserved_by_size_too():
    """Paddle sorts both kinds by increased size (the panel used to leave reserved rows as met). The
    committed traces' reserved rows happen to be met in that order already, so the sizes of a real
    summary's rows are rewritten here to be met smallest first."""
    s = type(_summary(trace_files(SHARED_TRACES, GPU)[0]))()
    s.CopyFrom(_summary(trace_files(SHARED_TRACES, GPU)[0]))
    place = s.memory.places[0]
    for kind in (place.allocated, place.reserved):
        assert len(kind) >= 2
        for i, it in enumerate(kind):
            it.allocation_size, it.free_size = 1000 * (i + 1), 10 * i
    display = summary_display(s)
    recs = records(find_table(display, f"memory.{place.place}", "memory"))
    for kind, items in (("Allocated", place.allocated), ("Reserved", place.reserved)):
        got = [(r["name"], r["increased_size"]) for r in recs if r["type"] == kind]
        assert got == [(it.name, it.allocation_size - it.free_size) for it in reversed(items)]
    assert [r["type"] for r in recs] == ["Allocated"] * len(place.allocated) + ["Reserved"] * len(place.reserved)


def test_operators_by_shape_split_each_operator_into_its_shape_groups(tmp_path):
    """A real trace with input shapes written into its operator events (Paddle 3.3.1 writes them empty):
    the shape groups of an operator add up to its row; the ratios share the operators' denominator."""
    src = trace_files(SHARED_TRACES, GPU)[0]
    data = src.read_text()
    n = data.count('"input_shapes": {}')
    assert n > 4
    parts = data.split('"input_shapes": {}')
    shaped = parts[0] + "".join(
        ('"input_shapes": {"X": [[2, %d]], "Y": [[%d, 4]]}' % (i % 2 + 1, i % 2 + 1)) + p
        for i, p in enumerate(parts[1:])
    )
    shaped = shaped.replace('"input_dtypes": {}', '"input_dtypes": {"X": "float32", "Y": "float32"}')
    path = tmp_path / src.name
    path.write_text(shaped)
    s = summarize_file(str(path))
    display = summary_display(s)
    by_name = {r["name"]: r for r in records(find_table(display, "operators")) if r["depth"] == 0}
    shape_rows = [r for r in records(find_table(display, "operators_by_shape")) if r["kind"] == "shape"]
    assert shape_rows
    for name in {r["name"] for r in shape_rows}:
        mine = [r for r in shape_rows if r["name"] == name]
        assert sum(r["calls"] for r in mine) == by_name[name]["calls"]
        assert sum(r["cpu_total_ns"] for r in mine) == by_name[name]["cpu_total_ns"]
        assert sum(r["cpu_ratio"] for r in mine) == pytest.approx(by_name[name]["cpu_ratio"])
    assert any(r["input_shapes"].startswith('X: [[2,1]] "float32", Y: [[1,4]] "float32"') for r in shape_rows)
    # the text layout (Paddle's) does not print the panels' table
    assert "input shape" not in render_display(display, "ms")


def test_no_steps_means_only_the_device_table_like_paddle():
    s = _summary(trace_files(SHARED_TRACES, SINGLE)[0])
    empty = type(s)()
    empty.CopyFrom(s)
    empty.meta.total_time_ns = 0
    display = summary_display(empty)
    overview = display.views[0]
    assert [t.key for t in overview.tables] == ["device"] and overview.sentences[0].key == "no_steps"
    text = render_display(display, "ms")
    assert paddle_blocks(text).keys() == {"Device Summary"}
    # the operators need no total step time: their table is still in the model
    assert find_table(display, "operators") is not None


def test_every_cell_matches_its_column_and_row_ids_are_unique():
    for trace in sorted(SHARED_TRACES.glob("*/*.paddle_trace.json")):
        display = summary_display(_summary(trace))
        for view in display.views:
            assert len({t.key for t in view.tables}) == len(view.tables)
            for t in view.tables:
                groups = {g.key for g in t.groups}
                assert all(not c.group or c.group in groups for c in t.columns), t.key
                ids = [r.id for r in t.rows]
                assert len(set(ids)) == len(ids), t.key
                for r in t.rows:
                    assert len(r.cells) == len(t.columns), (t.key, r.id)
                header = to_csv(t).splitlines()[0].split(",")
                assert all(re.fullmatch(r"[a-z][a-z0-9_]*", k) for k in header), header


# ------------------------------------------------------------------ routes, through a real TensorBoard


@pytest.fixture(scope="module")
def tb(tmp_path_factory):
    root = tmp_path_factory.mktemp("display_routes")
    logdir = root / "logdir"
    for src in trace_files(SHARED_TRACES, GPU):
        (logdir / "gpu").mkdir(parents=True, exist_ok=True)
        shutil.copy(src, logdir / "gpu" / src.name)
    single = trace_files(SHARED_TRACES, SINGLE)[0]
    (logdir / "single").mkdir()
    shutil.copy(single, logdir / "single" / single.name)
    before = tree_digest(logdir)
    env = {"TB_PADDLE_PROFILE_CACHE": str(root / "cache"), "TB_PADDLE_PROFILE_WORKERS": "1"}
    with tensorboard_process(logdir, env, root) as (base, _, _):
        yield {"base": base, "logdir": logdir}
    assert tree_digest(logdir) == before, "nothing in the logdir is written"


def _get(tb, route, **params):
    url = f"{tb['base']}{PREFIX}/{route}?{urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def _ready(tb, route, **params):
    """Ask until the rank is loaded; every answer before that is a 202 with the file's SpanEntry."""
    deadline = time.monotonic() + 120
    while True:
        status, headers, body = _get(tb, route, **params)
        if status != 202:
            return status, headers, body
        assert headers.get("Retry-After") == "1"
        assert time.monotonic() < deadline, body[:300]
        time.sleep(0.3)


def _worker(tb, run):
    from tb_paddle_profile.v1 import plugin_pb2

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, _, body = _get(tb, "runs")
        rl = plugin_pb2.RunList.FromString(body)
        for r in rl.runs:
            if r.run == run and r.workers:
                return [(w.worker, w.spans[0].span, w.spans[0].file_name) for w in r.workers]
        time.sleep(0.3)
    raise AssertionError(f"run {run} not listed")


def test_display_route_is_the_model_and_csv_route_gives_paddles_numbers(tb):
    workers = _worker(tb, "gpu")
    worker, span, file_name = workers[0]
    trace = tb["logdir"] / "gpu" / file_name
    status, headers, body = _ready(tb, "display", run="gpu", worker=worker, span=span)
    assert status == 200 and headers["Content-Type"].startswith("application/x-protobuf")
    served = dpb.Display.FromString(body)
    assert served == summary_display(summarize_file(str(trace)))
    status, _, body = _ready(tb, "display", run="gpu", worker=worker, span=span, sorted_by="GPUTotal", format="json")
    assert status == 200
    as_json = json.loads(body)
    assert [v["key"] for v in as_json["views"]] == ["overview", "operators", "kernels", "memory"]
    # the csv route: the values, in Paddle's printed unit, are Paddle's digits
    rank = file_name.split("_")[0]
    printed = paddle_blocks((SHARED_TRACES / GPU / f"paddle_summary.{rank}.GPUTotal.us.txt").read_text())
    display = summary_display(summarize_file(str(trace)), sorted_by="GPUTotal")
    for view, key in (
        ("kernels", "kernels"),
        ("operators", "operators"),
        ("overview", "model"),
        ("memory", "user_defined"),
        ("memory", "memory.Place(gpu:0)" if rank == "rank0" else "memory.Place(gpu:1)"),
    ):
        status, headers, body = _ready(
            tb, "csv", run="gpu", worker=worker, span=span, view=view, table=key, sorted_by="GPUTotal"
        )
        assert status == 200 and headers["Content-Type"].startswith("text/csv"), body[:200]
        assert "attachment" in headers["Content-Disposition"]
        table = find_table(display, key, view)
        assert body.decode() == to_csv(table)
        recs = list(csv.DictReader(io.StringIO(body.decode())))
        _check_numbers(table, recs, printed[table.title], "us")
    # bad requests: one line naming what is wrong
    status, _, body = _get(tb, "csv", run="gpu", worker=worker, span=span, view="kernels", table="nope")
    assert status == 404 and b"nope" in body and file_name.encode() in body and body.count(b"\n") == 1
    status, _, body = _get(tb, "display", run="gpu", worker=worker, span=span, sorted_by="Fastest")
    assert status == 400 and b"sorted_by" in body


def test_csv_route_of_the_run_views(tb):
    pytest.importorskip("tb_paddle_profile.present.display.parallel")
    workers = _worker(tb, "gpu")
    span = workers[0][1]
    for w, s, _ in workers:  # both ranks loaded
        assert _ready(tb, "summary", run="gpu", worker=w, span=s)[0] == 200
    status, _, body = _ready(tb, "distributed", run="gpu", span=span)
    assert status == 200
    from tb_paddle_profile.v1 import plugin_pb2

    rd = plugin_pb2.RunDistributed.FromString(body)
    assert rd.HasField("display") and rd.display.views
    table = rd.display.views[0].tables[0]
    status, headers, body = _ready(tb, "csv", run="gpu", span=span, view="distributed", table=table.key)
    assert status == 200 and headers["Content-Type"].startswith("text/csv")
    assert body.decode() == to_csv(table)
    status, _, body = _ready(tb, "parallel", run="gpu", span=span)
    assert status == 200
    rp = plugin_pb2.RunParallel.FromString(body)
    ptable = rp.display.views[0].tables[0]
    status, _, body = _ready(tb, "csv", run="gpu", span=span, view="parallel", table=ptable.key)
    assert status == 200 and body.decode() == to_csv(ptable)
    status, _, body = _get(tb, "csv", run="gpu", span=span, view="parallel", table="nope")
    assert status == 404 and b"nope" in body
