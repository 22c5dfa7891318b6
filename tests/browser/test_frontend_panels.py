"""The Paddle Profile tab in a real browser: Debian's Chromium driven by Playwright, against a real
``tensorboard`` process serving the example logdir and the shared GPU-shaped traces.

Every panel must show the numbers the CLI prints for the same file (``tb-paddle-profile summary``, run
here on the very file TensorBoard serves); expanding, sorting, searching, grouping and switching rank
must change what they should; the page must log no console error and make no request outside
127.0.0.1. Each test saves a screenshot of its panel to docs/screenshots/. The panels draw the display
model's tables (data-col = the model's column keys); tests/browser/test_display_browser.py checks every cell of
them against the Python formatter.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple
from urllib.parse import quote

import pytest

from support.report import ran
from support.browser_util import (
    REPO,
    show_all_columns,
    PageLog,
    new_page,
    read_virtual_table,
    save_screenshot,
    tensorboard,
    wait_all_loaded,
)

pytestmark = [pytest.mark.browser]


from tb_paddle_profile.present.render.text import display_kernel_name  # noqa: E402
from tb_paddle_profile.v1 import summary_pb2  # noqa: E402

EXAMPLES = REPO / "examples" / "profiler_log"
from support.paths import trace_folders  # noqa: E402  (the committed traces, tests/data/traces, and any extra)

GPU_RUN = "shared/gpu-synthetic-2rank"
GLOO_RUN = "shared/cpu-gpt-2rank-gloo"
BROKEN_RUN = "broken"
GROWING_RUN = "growing"
NOT_PADDLE = '{"traceEvents": [{"name": "x", "ph": "X"}], "note": "a Chrome trace, but not one of Paddle"}'


# ---------------------------------------------------------------- the logdir, TensorBoard, the browser


@pytest.fixture(scope="session")
def logdir(tmp_path_factory) -> Path:
    """The example runs, the shared traces under shared/, and one file that is not a Paddle trace."""
    root = tmp_path_factory.mktemp("frontend_logdir")
    found = False
    if EXAMPLES.is_dir():
        for trace in EXAMPLES.rglob("*.paddle_trace.json"):
            dst = root / trace.parent.relative_to(EXAMPLES) / trace.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, dst)
            found = True
    for folder in trace_folders():
        for trace in folder.glob("*.paddle_trace.json"):
            dst = root / "shared" / trace.parent.name / trace.name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trace, dst)
            found = True
    if not found:
        pytest.skip("neither examples/profiler_log nor the shared traces are here")
    broken = root / BROKEN_RUN / "rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json"
    broken.parent.mkdir(parents=True)
    broken.write_text(NOT_PADDLE)
    # A trace still being written: cut in the middle, just modified (the plugin retries it later).
    source = next(iter(sorted(root.rglob("*.paddle_trace.json"))))
    growing = root / GROWING_RUN / "rank0_time_2026_01_02_00_00_00_000000.paddle_trace.json"
    growing.parent.mkdir(parents=True)
    data = source.read_bytes()
    growing.write_bytes(data[: len(data) // 2])
    return root


@pytest.fixture(scope="session")
def tb(logdir, tmp_path_factory):
    work = tmp_path_factory.mktemp("frontend_tb")
    with tensorboard(logdir, work) as server:
        wait_all_loaded(server)
        yield server


@pytest.fixture
def page_and_log(browser, request):
    """A fresh page; after the test, no console error, no page error and no request outside 127.0.0.1."""
    log = PageLog()
    page = new_page(browser, log)
    yield page, log
    page.context.close()
    if not ran(request):  # skipped (its data is not here): nothing was asked of the page
        return
    assert log.page_errors == [], log.page_errors
    assert log.console_errors == [], log.console_errors
    assert log.outside_requests() == [], log.outside_requests()
    assert log.requests, "the page made no request at all"


def tb_link(tb, **keys) -> str:
    """A TensorBoard URL that opens the Paddle Profile tab with a selection (what the plugin puts in the URL)."""
    parts = ["paddle_profile"] + [f"{quote('p.paddle_profile.' + k)}={quote(v, safe='')}" for k, v in keys.items()]
    return f"{tb.url}/#{'&'.join(parts)}"


def open_panel(page, tb, run: str, worker: str, view: str, unit: str = "ms", span: str = "0"):
    """Opens TensorBoard on our tab through a shared link; returns the plugin's frame once the panel is drawn."""
    page.goto(tb_link(tb, run=run, worker=worker, span=span, unit=unit, view=view))
    handle = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    )
    frame = handle.content_frame()
    try:
        frame.wait_for_selector(f'[data-testid="panel-{view}"]', timeout=60_000)
    except Exception as err:
        shown = frame.evaluate("() => document.body.innerText.slice(0, 2000)")
        raise AssertionError(f"the {view} panel did not appear; the plugin showed:\n{shown}") from err
    frame.wait_for_function(
        "([run, worker]) => { const c = document.querySelector('[data-testid=crumbs]'); return c && c.textContent.includes(run); }",
        arg=[run, worker],
    )
    return frame


def screenshot(page, name: str) -> Path:
    return save_screenshot(page, name)


# ---------------------------------------------------------------- what the CLI prints


def trace_path(logdir: Path, run: str, worker: str) -> Path:
    found = sorted((logdir / run).glob(f"{worker}_time_*.paddle_trace.json"))
    assert found, f"no trace of {worker} in {run}"
    return found[0]


def worker_of(logdir: Path, run: str, index: int = 0) -> str:
    names = sorted(p.name.split("_time_")[0] for p in (logdir / run).glob("*.paddle_trace.json"))
    return names[index]


@functools.lru_cache(maxsize=None)
def cli_text(path: str, unit: str, sorted_by: str = "CPUTotal") -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", path, "--time-unit", unit, "--sorted-by", sorted_by],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


Row = Tuple[int, List[str]]  # indentation, cells


def cli_tables(text: str) -> Dict[str, dict]:
    """Each titled table of the CLI's text: its rows (indent, cells) and extra header lines."""
    tables: Dict[str, dict] = {}
    current: Optional[dict] = None
    for line in text.splitlines():
        bare = line.rstrip()
        if not bare:
            continue
        if set(bare) <= {"-", " "}:
            continue  # a separator
        if bare.startswith("-") and bare.endswith("-"):
            title = bare.strip("-")
            if title.startswith("Thread:"):
                continue
            current = tables.setdefault(title, {"rows": [], "gpu_rows": [], "extra": {}, "done": False})
            continue
        if current is None or current["done"]:
            continue
        if bare.startswith("Note:"):
            current["done"] = True
            continue
        if bare.startswith("Time unit:"):
            continue
        if bare.startswith("Peak "):
            key, value = bare.split(":", 1)
            current["extra"][key] = value.strip()
            continue
        cells = re.split(r"\s{2,}", bare.strip())
        if cells[0] in ("Name", "Device", "Event Type"):
            continue
        if cells[0] == "Calls":  # the GPU half of the Overview table
            current["in_gpu"] = True
            continue
        indent = len(bare) - len(bare.lstrip(" "))
        (current["gpu_rows"] if current.get("in_gpu") else current["rows"]).append((indent, cells))
    return tables


STATS = ("total_ns", "avg_ns", "max_ns", "min_ns", "ratio")


def five(cells: Dict[str, str], side: str) -> str:
    """The UI's five time cells of one side (the model's columns cpu_total_ns ... cpu_ratio) joined the way the CLI prints them."""
    return " / ".join(cells[f"{side}_{p}"] for p in STATS)


def data_rows(rows: List[dict]) -> List[dict]:
    """Rows of a drawn display table without its section rows ("Thread: All threads merged")."""
    return [r for r in rows if not r["id"].startswith("section:")]


def overview_halves(frame) -> Tuple[List[List[str]], List[List[str]]]:
    """The Overview Summary as drawn: its CPU rows, then (after the repeated header row) its GPU rows."""
    rows = read_virtual_table(frame, "dt-overview")
    cut = next(i for i, r in enumerate(rows) if r["id"] == "gpu")
    line = lambda r: [r["cells"][k] for k in ("event_type", "calls", "time_ns", "ratio")]  # noqa: E731
    return [line(r) for r in rows[:cut]], [line(r) for r in rows[cut + 1 :]]


def fetch_summary(tb, run: str, worker: str, span: str = "0") -> summary_pb2.Summary:
    data = tb.get(f"/data/plugin/paddle_profile/summary?run={quote(run)}&worker={quote(worker)}&span={span}")
    return summary_pb2.Summary.FromString(data)


# ---------------------------------------------------------------- cases


def cases(logdir: Path):
    """(run, worker, unit) for the example runs and the shared traces that are present."""
    out = []
    if (logdir / GPU_RUN).is_dir():
        out.append((GPU_RUN, "rank0", "us"))
    for run in ("gpt-single", "gpt-2rank"):
        if (logdir / run).is_dir():
            out.append((run, worker_of(logdir, run), "ms"))
    if (logdir / "shared/cpu-gpt-single").is_dir():
        out.append(("shared/cpu-gpt-single", worker_of(logdir, "shared/cpu-gpt-single"), "ms"))
    return out


def pick(logdir: Path, gpu: bool):
    for run, worker, unit in cases(logdir):
        if (run == GPU_RUN) == gpu:
            return run, worker, unit
    pytest.skip("no GPU-shaped trace here" if gpu else "no CPU trace here")


CASE_IDS = ["gpu", "cpu"]


# ---------------------------------------------------------------- overview


@pytest.mark.parametrize("gpu", [True, False], ids=CASE_IDS)
def test_overview_shows_the_cli_numbers(tb, logdir, page_and_log, gpu):
    page, _ = page_and_log
    run, worker, unit = pick(logdir, gpu)
    frame = open_panel(page, tb, run, worker, "overview", unit)
    cli = cli_tables(cli_text(str(trace_path(logdir, run, worker)), unit))

    # Device utilization
    shown = {
        r["_key"]: r
        for r in frame.evaluate(
            "() => Array.from(document.querySelectorAll('[data-testid=dt-device] .util-row')).map("
            "r => ({_key: r.dataset.key, v: r.querySelector('[data-col=utilization]').textContent}))"
        )
    }
    expected = {cells[0]: cells[1] for _, cells in cli["Device Summary"]["rows"]}
    assert {k: v["v"] for k, v in shown.items()} == expected

    # Event types, CPU and GPU: same rows, same order, same numbers
    table = cli["Overview Summary"]
    cpu, gpu_rows = overview_halves(frame)
    assert cpu == [cells for _, cells in table["rows"]]
    assert gpu_rows == [cells for _, cells in table["gpu_rows"]]
    assert bool(gpu_rows) == gpu, "a GPU trace has GPU event types, a CPU trace none"
    assert frame.locator('[data-testid="overview-cpu-chart"][data-drawn]').count() == 1
    assert frame.locator('[data-testid="overview-gpu-chart"][data-drawn]').count() == (1 if gpu else 0)

    # Model perspective
    # (a rank without GPU events: the panel leaves out the GPU columns the CLI prints as zeros)
    rows = read_virtual_table(frame, "dt-model")
    assert all(("gpu_total_ns" in r["cells"]) == gpu for r in rows)
    model = [
        [r["name"], r["cells"]["calls"], five(r["cells"], "cpu")] + ([five(r["cells"], "gpu")] if gpu else [])
        for r in rows
    ]
    assert model == [cells if gpu else cells[:3] for _, cells in cli["Model Summary"]["rows"]]
    assert frame.locator('[data-testid="model-steps-chart"][data-drawn]').count() == 1
    assert frame.locator('[data-testid="model-pie-chart"][data-drawn]').count() == 1

    # Distribution summary, when Paddle prints one
    if "Distribution Summary" in cli:
        dist = [
            [r["name"], r["cells"]["time_ns"], r["cells"]["ratio"]] for r in read_virtual_table(frame, "dt-distributed")
        ]
        assert dist == [cells for _, cells in cli["Distribution Summary"]["rows"]]
    else:
        assert frame.locator('[data-testid="dt-distributed"]').count() == 0

    # Top operators: the CLI's operators, in its order (by CPU total)
    ops = [(cells[0], cells[1], cells[2]) for indent, cells in cli["Operator Summary"]["rows"] if indent == 0]
    top = read_virtual_table(frame, "dt-top-operators")
    assert len(top) == len(ops)
    for r, (name, calls, cpu5) in zip(top, ops):
        total, avg, _, _, ratio = cpu5.split(" / ")
        assert cli_name_matches(name, r["name"])
        assert (r["cells"]["calls"], r["cells"]["cpu_total_ns"], r["cells"]["cpu_avg_ns"], r["cells"]["cpu_ratio"]) == (
            calls,
            total,
            avg,
            ratio,
        )

    # Top kernels (Paddle's display names; the full name on hover)
    if gpu:
        kernels = [cells for _, cells in cli["Kernel Summary"]["rows"]]
        top_k = read_virtual_table(frame, "dt-top-kernels")
        assert len(top_k) == len(kernels)
        for r, k in zip(top_k, kernels):
            assert cli_name_matches(k[0], r["name"])
            assert display_kernel_name(r["id"][len("k:") :]) == r["name"]
            total, avg, _, _, ratio = k[2].split(" / ")
            assert (
                r["cells"]["calls"],
                r["cells"]["gpu_total_ns"],
                r["cells"]["gpu_avg_ns"],
                r["cells"]["gpu_ratio"],
            ) == (k[1], total, avg, ratio)
        title = frame.locator('[data-testid="dt-top-kernels"] .vt-row[data-index="0"] .vt-td.name').get_attribute(
            "title"
        )
        assert title == top_k[0]["id"][len("k:") :], "the full kernel name on hover"
    screenshot(page, "overview" if gpu else "overview-cpu")


def test_overview_draws_communication_launches_and_stalls(tb, logdir, page_and_log):
    """Issue 30's tables of one rank in the Overview: every cell of the communicator, overlap, launch and
    host-stall cards is the Python formatter's string, and the launch queue chart draws the model's points,
    one step line per stream, in the unit chosen."""
    from tb_paddle_profile.analysis.summarize import summarize_file
    from tb_paddle_profile.present.display.cells import format_cell
    from tb_paddle_profile.present.display.summary import summary_display

    page, _ = page_and_log
    run, worker, unit = pick(logdir, True)
    s = summarize_file(str(trace_path(logdir, run, worker)))
    (view,) = [v for v in summary_display(s).views if v.key == "overview"]
    tables = {t.key: t for t in view.tables}
    assert {"comm_bandwidth", "comm_instances", "comm_overlap", "launch_latency", "host_stalls", "launch_queue"} <= set(
        tables
    )
    frame = open_panel(page, tb, run, worker, "overview", unit)
    for key in ("comm_bandwidth", "comm_instances", "comm_overlap", "launch_latency", "host_stalls"):
        t = tables[key]
        shown = [i for i, c in enumerate(t.columns) if not c.panel_hidden]
        want = [{t.columns[i].key: format_cell(t.columns[i], r.cells[i], unit) for i in shown} for r in t.rows]
        got = [r["cells"] for r in read_virtual_table(frame, f"dt-{key.replace('_', '-')}")]
        assert got == want, key
    frame.wait_for_selector('[data-testid="launch-queue-chart"][data-drawn]', timeout=30_000)
    series = frame.evaluate("""() => document.querySelector('[data-testid="launch-queue-chart"]').__tbppChart
        .getOption().series.map((x) => [x.name, x.data])""")
    t = tables["launch_queue"]
    keys = [c.key for c in t.columns]
    want: Dict[str, list] = {}
    for r in t.rows:
        dev, stream, time_ns, depth = (r.cells[keys.index(k)].number for k in ("device", "stream", "time_ns", "depth"))
        want.setdefault(f"GPU{dev:g} stream {stream:g}", []).append([time_ns / 1e3, depth])  # unit "us"
    assert unit == "us" and [name for name, _ in series] == list(want)
    for name, data in series:
        assert [d[1] for d in data] == [w[1] for w in want[name]], name
        assert [d[0] for d in data] == pytest.approx([w[0] for w in want[name]], rel=1e-12), name
    assert len(want) == len(s.comm.launch) and sum(len(v) for v in want.values()) == sum(
        len(ls.queue_time_ns) for ls in s.comm.launch
    )


# ---------------------------------------------------------------- operator tree


def tree_of(rows: List[dict]) -> List[dict]:
    """Nests flattened rows by depth."""
    roots: List[dict] = []
    stack: List[dict] = []
    for r in rows:
        node = dict(r, children=[])
        del stack[r["depth"] :]
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)
    return roots


def cli_tree(rows: List[Row]) -> List[dict]:
    roots: List[dict] = []
    stack: List[dict] = []
    for indent, cells in rows:
        depth = indent // 2
        node = {"cells": cells, "children": []}
        del stack[depth:]
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)
    return roots


def cli_name_matches(cli_name: str, ui_name: str) -> bool:
    return cli_name == ui_name or (cli_name.endswith("...") and ui_name.startswith(cli_name[:-3]))


def compare_operator_rows(ui: List[dict], cli: List[dict], gpu: bool, path: str = "") -> int:
    """Every CLI row has a UI row with the same name and numbers (the UI may show deeper levels). Returns rows compared."""
    count = 0
    for c in cli:
        name = c["cells"][0]
        match = [u for u in ui if cli_name_matches(name, u["name"])]
        assert match, f"{path}/{name}: not in the UI"
        u = match[0]
        cells = u["cells"]
        assert cells["calls"] == c["cells"][1], f"{path}/{name} calls"
        assert five(cells, "cpu") == c["cells"][2], f"{path}/{name} CPU"
        if gpu:
            assert five(cells, "gpu") == c["cells"][3], f"{path}/{name} GPU"
        count += 1 + compare_operator_rows(u["children"], c["children"], gpu, f"{path}/{name}")
    return count


@pytest.mark.parametrize("gpu", [True, False], ids=CASE_IDS)
def test_operator_tree_shows_the_cli_numbers(tb, logdir, page_and_log, gpu):
    page, _ = page_and_log
    run, worker, unit = pick(logdir, gpu)
    frame = open_panel(page, tb, run, worker, "operators", unit)
    cli = cli_tables(cli_text(str(trace_path(logdir, run, worker)), unit))
    cli_rows = cli["Operator Summary"]["rows"]

    # Collapsed: the operators only, in the CLI's order (both sort by CPU total)
    top = data_rows(read_virtual_table(frame, "operator-table"))
    assert all(r["depth"] == 0 for r in top)
    names = [cells[0] for indent, cells in cli_rows if indent == 0]
    assert len(top) == len(names) and all(cli_name_matches(n, r["name"]) for n, r in zip(names, top))

    # Expanded: operator → inner events → kernels, every number as the CLI prints it
    frame.click('[data-testid="operator-table-expand-all"]')
    rows = data_rows(read_virtual_table(frame, "operator-table"))
    assert len(rows) > len(top)
    compared = compare_operator_rows(tree_of(rows), cli_tree(cli_rows), gpu)
    assert compared == len(cli_rows)
    assert frame.locator('[data-testid="operators-top-chart"][data-drawn]').count() == 1
    screenshot(page, "operators" if gpu else "operators-cpu")


def test_operator_tree_sorts_searches_expands_and_groups(tb, logdir, page_and_log):
    page, _ = page_and_log
    run, worker, unit = pick(logdir, gpu=True)
    frame = open_panel(page, tb, run, worker, "operators", unit)
    summary = fetch_summary(tb, run, worker)
    ops = {o.stats.name: o for o in summary.operators.operators}

    def top_names():
        return [r["name"] for r in data_rows(read_virtual_table(frame, "operator-table")) if r["depth"] == 0]

    # The default order is the model's: Paddle's, by CPU total (ties as Paddle leaves them)
    model_order = top_names()
    assert sorted(model_order) == sorted(ops)
    assert [ops[n].stats.cpu.total_ns for n in model_order] == sorted(
        (o.stats.cpu.total_ns for o in ops.values()), reverse=True
    )

    def by(value, reverse):
        keyed = sorted(range(len(model_order)), key=lambda i: ((-1 if reverse else 1) * value(ops[model_order[i]]), i))
        return [model_order[i] for i in keyed]

    # Sort by calls: descending, ties in the model's order; a second click ascending; a third the model's order
    header = '[data-testid="operator-table"] .vt-th[data-col="{}"]'
    frame.click(header.format("calls"))
    assert top_names() == by(lambda o: o.stats.calls, True)
    frame.click(header.format("calls"))
    assert top_names() == by(lambda o: o.stats.calls, False)
    frame.click(header.format("calls"))
    assert top_names() == model_order
    # Sort by GPU max, by name
    frame.click(header.format("gpu_max_ns"))
    assert top_names() == by(lambda o: o.stats.general_gpu.max_ns, True)
    frame.click(header.format("name"))
    assert top_names() == sorted(ops, key=lambda n: (n.lower(), n))
    frame.click(header.format("name"))
    frame.click(header.format("name"))
    assert top_names() == model_order

    # Expanding one operator shows its inner events and device events, collapsing hides them
    name = "matmul dygraph"
    op = ops[name]
    frame.click(f'[data-testid="operator-table"] .vt-row[data-id="op:{name}"] .vt-toggle')
    rows = read_virtual_table(frame, "operator-table")
    i = next(k for k, r in enumerate(rows) if r["id"] == f"op:{name}")
    children = [r["name"] for r in rows[i + 1 :] if r["depth"] >= 1][: len(op.inners) + len(op.devices)]
    assert set(children) == {n.stats.name for n in op.inners} | {d.name for d in op.devices}
    frame.click(f'[data-testid="operator-table"] .vt-row[data-id="op:{name}"] .vt-toggle')
    assert len(data_rows(read_virtual_table(frame, "operator-table"))) == len(ops)

    # Search for a kernel: the branch down to it stays, opened; other operators go
    kernel = next(k.name for k in summary.kernels.kernels if k.name.startswith("void cutlass"))
    search = '[data-testid="operators-search"]'
    frame.fill(search, "cutlass")
    rows = data_rows(read_virtual_table(frame, "operator-table"))
    assert {r["name"] for r in rows if r["depth"] == 0} == {n for n, o in ops.items() if _has_device(o, kernel)}
    assert any(r["name"] == kernel for r in rows), "the matching kernel is shown"
    assert all(r["name"] == kernel or r["expandable"] for r in rows), "only the path to the match is kept"
    # A search that matches an operator keeps it (closed, with its whole branch)
    frame.fill(search, "softmax")
    rows = data_rows(read_virtual_table(frame, "operator-table"))
    assert [r["name"] for r in rows if r["depth"] == 0] == ["softmax dygraph"]
    frame.fill(search, "no such operator anywhere")
    assert read_virtual_table(frame, "operator-table") == [], "no row, not even the section's title"
    frame.fill(search, "")

    # Grouping by input shape: shapes are recorded or not; without them the operator row stays
    frame.click('[data-testid="operators-grouping"] button[data-value="shape"]')
    if any(o.shapes for o in ops.values()):
        frame.wait_for_selector('[data-testid="operator-table-wrap"][data-table="operators_by_shape"]')
        rows = data_rows(read_virtual_table(frame, "operator-table"))
        expected = sum(max(1, len(o.shapes)) for o in ops.values())
        assert len([r for r in rows if r["depth"] == 0]) == expected
    else:  # no shapes recorded: the grouping says so and the table stays by name
        button = frame.locator('[data-testid="operators-grouping"] button[data-value="shape"]')
        assert button.get_attribute("title") == "This trace recorded no input shapes"
        assert frame.locator('[data-testid="operator-table-wrap"]').get_attribute("data-table") == "operators"

    # Kernel names hold < > & : they are text, never markup
    frame.click('[data-testid="operators-grouping"] button[data-value="name"]')
    frame.click('[data-testid="operator-table-expand-all"]')
    rows = read_virtual_table(frame, "operator-table")
    assert kernel in [r["name"] for r in rows]
    tags = frame.evaluate(
        "() => Array.from(document.querySelectorAll('[data-testid=operator-table] *'), (e) => e.localName)"
    )
    assert set(tags) <= {"div", "span", "button"}, set(tags)

    # A row leads to the timeline: click it, then "Show in timeline"
    frame.click(f'[data-testid="operator-table"] .vt-row[data-id="op:{name}"] .vt-name')
    frame.click('[data-testid="operators-to-timeline"]')
    frame.wait_for_selector('[data-testid="panel-timeline"]', timeout=60_000)
    frame.wait_for_function("(n) => decodeURIComponent(location.hash).includes('tlq=' + n)", arg=name)


def _has_device(node, name: str) -> bool:
    return any(d.name == name for d in node.devices) or any(_has_device(i, name) for i in node.inners)


# ---------------------------------------------------------------- kernels


def test_kernel_table_shows_the_cli_numbers_and_launch_configs(tb, logdir, page_and_log):
    page, _ = page_and_log
    run, worker, unit = pick(logdir, gpu=True)
    frame = open_panel(page, tb, run, worker, "kernels", unit)
    cli = cli_tables(cli_text(str(trace_path(logdir, run, worker)), unit))["Kernel Summary"]["rows"]
    summary = fetch_summary(tb, run, worker)
    by_name = {k.name: k for k in summary.kernels.kernels}
    full = lambda r: r["id"][len("k:") :]  # noqa: E731  (row ids carry the full name)

    show_all_columns(frame, "kernel-table")  # the launch configuration is hidden to fit at 1,280 px
    rows = read_virtual_table(frame, "kernel-table")
    assert len(rows) == len(cli)
    for r, (_, c) in zip(rows, cli):
        assert r["name"] == display_kernel_name(full(r)) and cli_name_matches(c[0], r["name"])
        assert r["cells"]["calls"] == c[1]
        assert five(r["cells"], "gpu") == c[2]
        k = by_name[full(r)]
        if len(k.configs) == 1:
            cfg = k.configs[0]
            assert r["cells"]["grid"] == "[" + ", ".join(map(str, cfg.grid)) + "]"
            assert r["cells"]["block"] == "[" + ", ".join(map(str, cfg.block)) + "]"
            assert r["cells"]["registers"] == str(cfg.registers_per_thread)
            assert r["cells"]["shared_memory_bytes"] == str(cfg.shared_memory)
            assert r["cells"]["blocks_per_sm"] == "%.2f" % cfg.blocks_per_sm
            assert r["cells"]["warps_per_sm"] == "%.2f" % cfg.warps_per_sm
            assert r["cells"]["occupancy_pct"] == "%.2f" % cfg.occupancy_pct
        else:
            assert r["expandable"], "a kernel with several launch configurations expands into them"
    multi = [r for r in rows if r["expandable"]]
    if multi:
        frame.click(f'[data-testid="kernel-table"] .vt-row[data-id="{multi[0]["id"]}"] .vt-toggle')
        configs = [r for r in read_virtual_table(frame, "kernel-table") if r["depth"] == 1]
        k = by_name[full(multi[0])]
        assert [c["cells"]["calls"] for c in configs] == [str(c.calls) for c in k.configs]
        assert [c["cells"]["grid"] for c in configs] == ["[" + ", ".join(map(str, c.grid)) + "]" for c in k.configs]
    assert frame.locator('[data-testid="kernels-top-chart"][data-drawn]').count() == 1
    screenshot(page, "kernels")

    # Grouped by kernel and operator: one row per pair, same denominator as the CLI's ratio
    frame.click('[data-testid="kernels-grouping"] button[data-value="operator"]')
    frame.wait_for_selector('[data-testid="kernel-table-wrap"][data-table="kernels_by_operator"]')
    rows = read_virtual_table(frame, "kernel-table")
    total = sum(k.gpu.total_ns for k in summary.kernels.kernels)
    pairs = {(k.name, o.operator or "(thread root)"): o for k in summary.kernels.kernels for o in k.operators}
    assert len(rows) == len(pairs)
    for r in rows:
        name, operator = r["id"][len("k:") :].split("\u0001o:")
        o = pairs[(name, r["cells"]["operator"])]
        assert operator in (o.operator, "(thread root)")
        assert r["cells"]["calls"] == str(o.calls)
        assert r["cells"]["gpu_ratio"] == "{:.2f}".format(float(o.gpu.total_ns) / total * 100)

    # Sorting by a column, and the search
    frame.click('[data-testid="kernels-grouping"] button[data-value="kernel"]')
    frame.wait_for_selector('[data-testid="kernel-table-wrap"][data-table="kernels"]')
    model_order = [full(r) for r in read_virtual_table(frame, "kernel-table") if r["depth"] == 0]
    frame.click('[data-testid="kernel-table"] .vt-th[data-col="calls"]')
    rows = read_virtual_table(frame, "kernel-table")
    expected = sorted(range(len(model_order)), key=lambda i: (-by_name[model_order[i]].calls, i))
    assert [full(r) for r in rows if r["depth"] == 0] == [model_order[i] for i in expected]
    frame.fill('[data-testid="kernels-search"]', "nccl")
    rows = read_virtual_table(frame, "kernel-table")
    assert rows and all("nccl" in r["name"].lower() for r in rows if r["depth"] == 0)


def test_cpu_trace_has_no_kernels(tb, logdir, page_and_log):
    page, _ = page_and_log
    run, worker, unit = pick(logdir, gpu=False)
    frame = open_panel(page, tb, run, worker, "kernels", unit)
    assert frame.locator('[data-testid="no-kernels"]').count() == 1


# ---------------------------------------------------------------- distributed


def pick_worker(frame, worker: str) -> None:
    """Chooses a worker with the sidebar's searchable picker: open it, type the name, click the option."""
    frame.click('[data-testid="select-worker-button"]')
    frame.fill('[data-testid="select-worker-search"]', worker)
    frame.click(f'[data-testid="select-worker-option"][data-value="{worker}"]')
    frame.wait_for_function(
        "(w) => document.querySelector('[data-testid=select-worker]').dataset.value === w", arg=worker
    )


def test_distributed_shows_every_rank_and_opens_one(tb, logdir, page_and_log):
    page, _ = page_and_log
    run = GPU_RUN if (logdir / GPU_RUN).is_dir() else "gpt-2rank"
    if not (logdir / run).is_dir():
        pytest.skip("no multi-rank run here")
    unit = "us" if run == GPU_RUN else "ms"
    frame = open_panel(page, tb, run, worker_of(logdir, run, 0), "distributed", unit)
    frame.wait_for_selector('[data-testid="dist-ranks"]')
    rows = [{"_key": r["id"], **r["cells"]} for r in read_virtual_table(frame, "dist-ranks")]
    workers = sorted(p.name.split("_time_")[0] for p in (logdir / run).glob("*.paddle_trace.json"))
    assert sorted(r["_key"] for r in rows) == workers
    for r in rows:
        r["worker"] = r["_key"]
    for r in rows:
        dist = cli_tables(cli_text(str(trace_path(logdir, run, r["worker"])), unit)).get("Distribution Summary")
        assert r["state"] == "ready"
        if dist is None:
            continue
        values = {cells[0]: cells[1:] for _, cells in dist["rows"]}
        assert r["total_ns"] == values["ProfileStep"][0]  # column keys of display/parallel.py's "ranks" table
        assert [r["comm_ns"], r["comm_ratio"]] == values["Communication"]
        assert [r["comp_ns"], r["comp_ratio"]] == values["Computation"]
        assert [r["overlap_ns"], r["overlap_ratio"]] == values["Overlap"]
    assert frame.locator('[data-testid="dist-steps-chart"][data-drawn]').count() == 1
    assert frame.locator('[data-testid="dist-ranks-chart"][data-drawn]').count() == 1
    screenshot(page, "distributed")

    # Clicking a rank opens its panels
    other = workers[-1]
    frame.click(f'[data-testid="dist-ranks"] .vt-row[data-id="{other}"]')
    frame.wait_for_selector('[data-testid="panel-overview"]')
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == other
    frame.wait_for_function("(w) => location.hash.includes('worker=' + w)", arg=other)
    cli = cli_tables(cli_text(str(trace_path(logdir, run, other)), unit))
    frame.wait_for_selector('[data-testid="dt-overview"]')
    cpu, _ = overview_halves(frame)
    assert cpu == [cells for _, cells in cli["Overview Summary"]["rows"]]


# ---------------------------------------------------------------- memory


@pytest.mark.parametrize("gpu", [True, False], ids=CASE_IDS)
def test_memory_tables_show_the_cli_numbers(tb, logdir, page_and_log, gpu):
    page, _ = page_and_log
    run, worker, unit = pick(logdir, gpu)
    frame = open_panel(page, tb, run, worker, "memory", unit)
    cli = cli_tables(cli_text(str(trace_path(logdir, run, worker)), unit))
    summary = fetch_summary(tb, run, worker)
    places = [p for p in summary.memory.places if p.allocated]
    assert places, "the test traces record memory"
    for place in places:
        if len(summary.memory.places) > 1:
            frame.click(f'[data-testid="memory-place"] button[data-value="{place.place}"]')
        table = cli[f"Memory Summary - {place.place}"]
        assert (
            frame.locator('[data-testid="peak-allocated"] .stat-value').text_content()
            == table["extra"]["Peak Allocated Memory"]
        )
        assert (
            frame.locator('[data-testid="peak-reserved"] .stat-value').text_content()
            == table["extra"]["Peak Reserved Memory"]
        )
        frame.wait_for_selector(f'[data-testid="memory-table-wrap"][data-table="memory.{place.place}"]')
        rows = read_virtual_table(frame, "memory-table")
        shown = [
            [r["name"]]
            + [
                r["cells"][k]
                for k in ("type", "allocation_count", "free_count", "allocation_size", "free_size", "increased_size")
            ]
            for r in rows
        ]
        # reserved rows too by size, as Paddle sorts them; the panel prints Paddle's byte counts humanised
        # (the columns' panel_format): "1.50 MB" of the integer the CLI prints
        from tb_paddle_profile.present.display.cells import human_bytes

        assert shown == [c[:4] + [human_bytes(int(b)) for b in c[4:]] for _, c in table["rows"]]
        assert frame.locator('[data-testid="memory-curve"][data-drawn]').count() == 1

    for test_id, title in (("memmanip-table", "Memory Manipulation Summary"), ("udf-table", "UserDefined Summary")):
        expected = [[c[0], c[1], c[2]] + ([c[3]] if gpu else []) for _, c in cli.get(title, {"rows": []})["rows"]]
        rows = (
            data_rows(read_virtual_table(frame, test_id)) if frame.locator(f'[data-testid="{test_id}"]').count() else []
        )
        shown = [
            [r["name"], r["cells"]["calls"], five(r["cells"], "cpu")] + ([five(r["cells"], "gpu")] if gpu else [])
            for r in rows
        ]
        assert shown == expected, title
    if gpu:
        frame.locator('[data-testid="memory-curve-card"]').scroll_into_view_if_needed()
        screenshot(page, "memory")


# ---------------------------------------------------------------- navigation


def test_navigation_unit_link_hash_and_failed_files(tb, logdir, page_and_log):
    page, _ = page_and_log
    run, worker, _ = pick(logdir, gpu=True)
    frame = open_panel(page, tb, run, worker, "overview", "ms")
    path = str(trace_path(logdir, run, worker))

    def cpu_times():
        return [line[2] for line in overview_halves(frame)[0]]

    # The time unit changes every time on the page, to what the CLI prints in that unit
    for unit in ("us", "ns", "s", "ms"):
        frame.click(f'[data-testid="select-unit"] button[data-value="{unit}"]')
        expected = [cells[2] for _, cells in cli_tables(cli_text(path, unit))["Overview Summary"]["rows"]]
        frame.wait_for_function(
            "(t) => document.querySelector('[data-testid=dt-overview] .vt-row[data-index=\"0\"] .vt-td[data-col=time_ns]').textContent === t",
            arg=expected[0],
        )
        assert cpu_times() == expected

    # The selection is in the iframe's hash and, for sharing, in TensorBoard's URL
    frame.click('[data-testid="views"] button[data-view="kernels"]')
    frame.wait_for_selector('[data-testid="panel-kernels"]')
    other = worker_of(logdir, run, 1)
    pick_worker(frame, other)
    frame.wait_for_function(
        "(w) => location.hash.includes('worker=' + w) && location.hash.includes('view=kernels')", arg=other
    )
    page.wait_for_function("(w) => location.hash.includes('p.paddle_profile.worker=' + w)", arg=other)
    shared = page.url
    assert "#paddle_profile&" in shared and "p.paddle_profile.view=kernels" in shared

    # Opening that link (a colleague, or a reload) restores the selection
    page.goto("about:blank")
    page.goto(shared)
    frame = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached"
    ).content_frame()
    frame.wait_for_selector('[data-testid="panel-kernels"]', timeout=60_000)
    assert frame.locator('[data-testid="select-worker"]').get_attribute("data-value") == other
    assert frame.locator('[data-testid="select-run"]').input_value() == run
    # the run picker cuts a long name and its worker count at 1,280 px: the whole line on hover
    shown = frame.evaluate(
        "() => { const s = document.querySelector('[data-testid=select-run]'); return s.options[s.selectedIndex].text; }"
    )
    assert frame.locator('[data-testid="select-run"]').get_attribute("title") == shown and shown.startswith(run)

    # Files: progress and the failed file with its one-line reason, the other runs still usable
    frame.select_option('[data-testid="select-run"]', BROKEN_RUN)
    frame.wait_for_selector('[data-testid="panel-error"]')
    status = json.loads(tb.get("/data/plugin/paddle_profile/status"))
    failed = [f for f in status["files"] if f["run"] == BROKEN_RUN]
    assert failed and failed[0]["state"] == "FAILED" and failed[0]["error"]
    item = frame.locator(f'.file-item[data-file="{failed[0]["file_name"]}"]')
    assert item.get_attribute("data-state") == "failed"
    assert item.locator('[data-testid="file-error"]').text_content() == failed[0]["error"]
    assert failed[0]["error"] in frame.locator('[data-testid="panel-error"]').text_content()
    ready = sum(1 for f in status["files"] if f["state"] == "READY")
    progress = frame.locator('[data-testid="files-progress"]').text_content()
    assert progress.startswith(f"{ready}/{len(status['files'])} ready") and "1 failed" in progress
    screenshot(page, "failed-file")

    # A file still being written is shown as such, with the progress bar, and the page waits for it
    growing = [f for f in status["files"] if f["run"] == GROWING_RUN]
    assert growing and growing[0]["state"] in ("GROWING", "QUEUED", "LOADING"), growing
    frame.select_option('[data-testid="select-run"]', GROWING_RUN)
    item = frame.locator(f'.file-item[data-file="{growing[0]["file_name"]}"]')
    assert item.get_attribute("data-state") in ("growing", "queued", "loading")
    assert frame.locator('.files [role="progressbar"]').count() == 1
    frame.wait_for_selector('[data-testid="panel-pending"]')
    frame.select_option('[data-testid="select-run"]', run)
    frame.wait_for_selector('[data-testid="panel-kernels"]')


@pytest.mark.parametrize("view", ["distributed", "whatif", "compare"])
def test_a_link_naming_only_the_run_opens_its_run_view_without_an_error(tb, logdir, page_and_log, view):
    """A shared link that names the run and a run view, no worker and no span (what a colleague types):
    the view opens and the page asks no route for span "" (Distributed asked `distributed?span=` before
    the selection had its span and logged a 404 on every such link); the fixture asserts no console error."""
    page, log = page_and_log
    if not (logdir / GLOO_RUN).is_dir():
        pytest.skip("the 2-rank gloo traces are not here")
    page.goto(tb_link(tb, run=GLOO_RUN, view=view))
    frame = page.wait_for_selector(
        'iframe[src*="plugin_entry.html?name=paddle_profile"]', state="attached", timeout=60_000
    ).content_frame()
    frame.wait_for_selector(f'[data-testid="panel-{view}"]', timeout=60_000)
    page.wait_for_timeout(1500)
    assert not [u for u in log.requests if "span=&" in u or u.endswith("span=")], log.requests
