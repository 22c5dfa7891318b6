"""The CLI as a user meets it (issue 27): feedback and errors, plain CSV, the CI gate, the merged Perfetto
trace and the HTML report, on generated runs (tbp_synth's planted truth) and the sample logdir (the
tables Paddle printed)."""

from __future__ import annotations

import gzip
import html.parser
import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter, defaultdict

import pytest

from support.paths import REPO
from tb_paddle_profile.core.version import __version__

EXAMPLES = REPO / "examples" / "profiler_log"
SINGLE = EXAMPLES / "gpt-single"
CFG = dict(dp=2, mp=1, pp=2, steps=3, layers=2, micro_batches=2)


def _cli(*args, cwd=REPO, stderr=subprocess.PIPE, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", *map(str, args)],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from tbp_synth.config import SynthConfig
    from tbp_synth.driver import generate

    root = tmp_path_factory.mktemp("day")
    generate(SynthConfig(**CFG), str(root / "base"))
    generate(SynthConfig(**CFG), str(root / "same"))  # the same config: the same run again
    generate(SynthConfig(**CFG, slow_rank=1, slow_factor=1.5), str(root / "slow"))
    generate(SynthConfig(**CFG, names="default", gpus_per_node=2, host_offsets_us=(0.0, 1500.0)), str(root / "skew"))
    return {k: root / k for k in ("base", "same", "slow", "skew")} | {"cache": root / "cache"}


# ------------------------------------------------------------------ feedback and errors


def test_version_help_and_a_mistyped_command():
    got = _cli("--version")
    assert got.returncode == 0 and got.stdout.strip() == f"tb-paddle-profile {__version__}"
    bare = _cli()
    assert bare.returncode == 2 and "examples:" in bare.stderr and "tb-paddle-profile report" in bare.stderr
    helped = _cli("--help")
    assert helped.returncode == 0 and "examples:" in helped.stdout and "--fail-if-slower" in helped.stdout
    typo = _cli("paralel", "x")
    assert typo.returncode == 2 and "did you mean 'parallel'?" in typo.stderr
    assert len(typo.stderr.strip().splitlines()) == 1
    for cmd in ("summary", "parallel", "whatif", "diff", "export", "report", "preprocess"):
        sub = _cli(cmd, "--help")
        assert sub.returncode == 0 and "--debug" in sub.stdout and "examples:" in sub.stdout, cmd


@pytest.mark.parametrize("jobs", ["0", "-3", "two"])
def test_jobs_must_be_a_positive_number(jobs):
    got = _cli("summary", SINGLE, "--jobs", jobs, "--no-cache")
    assert got.returncode == 2 and "--jobs" in got.stderr and got.stdout == ""


def test_missing_and_empty_inputs_exit_2_with_one_line(tmp_path):
    for args in (
        ("preprocess", tmp_path / "nonexistent"),
        ("preprocess", tmp_path),
        ("summary", tmp_path / "nonexistent"),
        ("parallel", tmp_path),
    ):
        got = _cli(*args, "--cache-dir", tmp_path / "cache")
        lines = got.stderr.strip().splitlines()
        assert got.returncode == 2 and len(lines) == 1 and str(args[1]) in lines[0], (args, got.stderr)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_folder_of_two_runs_is_not_merged(tmp_path):
    got = _cli("parallel", EXAMPLES, "--cache-dir", tmp_path)
    assert got.returncode == 2 and got.stdout == ""
    (line,) = got.stderr.strip().splitlines()
    # the two runs the tab lists, each with its number of traces (counted from the folder itself)
    for run in ("gpt-2rank", "gpt-single"):
        n = len(list((EXAMPLES / run).glob("*.paddle_trace.json")))
        assert f"{run} ({n} trace" in line


def test_table_implies_csv_and_conflicts_with_another_format(tmp_path):
    implied = _cli("summary", SINGLE, "--table", "operators", "--no-cache")
    assert implied.returncode == 0 and implied.stdout.startswith("section,depth,name,")
    clash = _cli("summary", SINGLE, "--table", "operators", "--format", "json", "--no-cache")
    assert clash.returncode == 2 and "--table" in clash.stderr and clash.stdout == ""


def _paddle_operators(printed: str):
    """(name, calls, CPU total) of the top-level rows of Paddle's printed Operator Summary."""
    lines = printed.splitlines()
    start = next(i for i, line in enumerate(lines) if "Operator Summary" in line)
    rows, seen_thread = [], False
    for line in lines[start + 1 :]:
        if "Thread:" in line:
            seen_thread = True
            continue
        if not seen_thread:
            continue
        if line.startswith("---") or not line.strip():
            break
        if not line.startswith(" "):
            name, calls, cpu = re.match(r"(.+?)\s{2,}(\d+)\s+([\d.]+) /", line).groups()
            rows.append((name.strip(), int(calls), float(cpu)))
    return rows


def test_one_table_csv_is_what_pandas_reads_and_matches_paddles_table(tmp_path):
    import pandas as pd

    got = _cli("summary", SINGLE, "--format", "csv", "--table", "operators", "--no-cache")
    assert got.returncode == 0, got.stderr
    frame = pd.read_csv(io.StringIO(got.stdout))
    top = frame[frame["depth"] == 0]
    printed = next(SINGLE.glob("*.summary.CPUTotal.ms.txt")).read_text()
    paddle = _paddle_operators(printed)
    assert [(n, int(c)) for n, c in zip(top["name"], top["calls"])] == [(n, c) for n, c, _ in paddle]
    assert [round(v / 1e6, 2) for v in top["cpu_total_ns"]] == [cpu for _, _, cpu in paddle]
    # every table as its own plain file
    out = tmp_path / "tables"
    every = _cli("summary", SINGLE, "--csv-dir", out, "--no-cache")
    assert every.returncode == 0, every.stderr
    files = sorted(p.name for p in out.iterdir())
    assert "operators.operators.csv" in files and len(files) > 5
    again = pd.read_csv(out / "operators.operators.csv")
    assert again.shape == frame.shape
    for f in out.iterdir():
        assert len(pd.read_csv(f).columns) > 1, f.name


# ------------------------------------------------------------------ progress, in a real terminal


def _run_with_tty_stderr(args):
    master, slave = pty.openpty()
    seen = []

    def read():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            seen.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", *map(str, args)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=slave,
        timeout=300,
    )
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return proc, b"".join(seen).decode("utf-8", "replace")


def test_progress_is_drawn_on_a_terminal_and_never_mixed_with_output(runs, tmp_path):
    n = len(list(runs["base"].glob("*.paddle_trace.json")))
    total = sum(p.stat().st_size for p in runs["base"].glob("*.paddle_trace.json"))
    proc, tty = _run_with_tty_stderr(["parallel", runs["base"], "--no-cache", "--format", "json"])
    assert proc.returncode == 0
    json.loads(proc.stdout)  # stdout is the JSON alone
    assert f"{n}/{n} traces" in tty and "\r" in tty
    mb = f"{total / (1 << 20):.2f} MiB"
    assert f"of {mb}" in tty, tty[-400:]
    assert "analysing" in tty
    # not a terminal: nothing on stderr; --progress draws it anyway
    quiet = _cli("parallel", runs["base"], "--no-cache", "--format", "json")
    assert quiet.returncode == 0 and quiet.stderr == ""
    forced = _cli("preprocess", runs["base"], "--cache-dir", tmp_path / "c", "--progress")
    assert forced.returncode == 0 and f"{n}/{n} traces" in forced.stderr
    assert forced.stdout.strip() == f"{n} of {n} traces summarized and indexed into the cache"


# ------------------------------------------------------------------ the CI gate


def test_gate_fails_a_slower_candidate_and_passes_an_equal_one(runs):
    from tbp_synth.truth import load_truth

    slower = load_truth(str(runs["slow"])).job_step_ns / load_truth(str(runs["base"])).job_step_ns - 1
    assert slower > 0.10  # the planted slow-down, far above the threshold
    cache = ["--cache-dir", runs["cache"]]
    failed = _cli("diff", runs["base"], runs["slow"], "--fail-if-slower", "5%", *cache)
    assert failed.returncode == 1, failed.stderr
    line = failed.stderr.strip().splitlines()[-1]
    assert line.startswith("gate: FAIL") and "5% allowed" in line
    said = float(re.search(r"\(([+-][\d.]+)%\)", line).group(1)) / 100
    assert abs(said - slower) < 0.005  # the change the gate measured is the planted one
    loose = _cli("diff", runs["base"], runs["slow"], "--fail-if-slower", f"{slower * 100 + 5:.0f}", *cache)
    assert loose.returncode == 0 and "gate: ok" in loose.stderr
    equal = _cli("diff", runs["base"], runs["same"], "--fail-if-slower", "0.1%", "--format", "json", *cache)
    assert equal.returncode == 0 and "(+0.0%)" in equal.stderr
    json.loads(equal.stdout)
    bad = _cli("diff", runs["base"], runs["same"], "--fail-if-slower", "five", *cache)
    assert bad.returncode == 2 and "--fail-if-slower" in bad.stderr


# ------------------------------------------------------------------ one merged Perfetto trace


def _source_events(path):
    data = json.loads(path.read_text())
    return [e for e in data["traceEvents"] if isinstance(e, dict) and e and e.get("ph") != "M"]


def test_export_merges_the_ranks_on_the_analysis_clock(runs, tmp_path):
    import tb_paddle_profile as tbp
    from tbp_synth.truth import load_truth

    out = tmp_path / "merged.json.gz"
    got = _cli("export", runs["skew"], "-o", out, "--cache-dir", runs["cache"])
    assert got.returncode == 0, got.stderr
    merged = json.load(gzip.open(out, "rt"))
    events = merged["traceEvents"]
    run = tbp.load_run(runs["skew"], cache_dir=str(runs["cache"]))
    truth = load_truth(str(runs["skew"]))
    offsets = {r.file_name: r.clock_offset_ns for r in run.parallel.ranks}
    assert any(offsets.values())  # the hosts' clocks differ: there is something to correct
    for r in truth.ranks:  # the analysis measured the planted offsets (within a microsecond)
        name = next(f for f in offsets if f"pid_{r['pid']}_" in f)
        assert abs(offsets[name] - r["clock_offset_ns"]) < 1000
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    by_pid = defaultdict(list)
    for e in events:
        if e.get("ph") not in ("M", "C") and e.get("cat") != "collective":  # the arrows: below
            by_pid[e["pid"]].append(e)
    assert len(names) == len(run.parallel.ranks) == truth.world
    for r in run.parallel.ranks:
        pid = merged["otherData"]["ranks"][str(r.rank)]["pid"]
        assert names[pid] == r.label and r.label.startswith(f"rank {r.rank} ")
        source = _source_events(runs["skew"] / r.file_name)
        mine = by_pid[pid]
        assert Counter(e["ph"] for e in mine) == Counter(e["ph"] for e in source)  # every event, once
        src_x = sorted(e["ts"] for e in source if e["ph"] == "X")
        got_x = sorted(e["ts"] for e in mine if e["ph"] == "X")
        base = merged["otherData"]["ts_base_unix_us"]
        shift = {round((s - base) - g, 3) for s, g in zip(src_x, got_x)}
        assert shift == {round(r.clock_offset_ns / 1000, 3)}  # the analysis' offset, applied to each event
        # launch -> kernel flows pair up: one start on a host thread and one end on a GPU stream per id
        ends = defaultdict(dict)
        for e in mine:
            if e["ph"] in ("s", "f"):
                ends[e["id"]][e["ph"]] = e
        paired = [v for v in ends.values() if set(v) == {"s", "f"}]
        src_pairs = Counter(e["id"] for e in source if e["ph"] in ("s", "f"))
        assert len(paired) == sum(1 for c in src_pairs.values() if c == 2) > 0
        thread_names = {
            e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name" and e["pid"] == pid
        }
        assert all(thread_names[v["f"]["tid"]].startswith("GPU ") for v in paired)
        assert all(not thread_names[v["s"]["tid"]].startswith("GPU ") for v in paired)
        # memory: Paddle's instants kept, and one counter sample per instant
        n_mem = sum(1 for e in source if e.get("name") == "[memory]")
        assert sum(1 for e in events if e.get("ph") == "C" and e["pid"] == pid) == n_mem
    ids = [e["id"] for e in events if e.get("ph") == "s" and e.get("cat") != "collective"]
    assert len(ids) == len(set(ids))  # flow ids do not collide across ranks
    _assert_collective_arrows(merged, truth)
    some = _cli("export", runs["skew"], "-o", tmp_path / "two.json", "--ranks", "0,3", "--cache-dir", runs["cache"])
    assert some.returncode == 0
    two = json.loads((tmp_path / "two.json").read_text())
    assert sorted(two["otherData"]["ranks"]) == ["0", "3"]
    none = _cli("export", runs["skew"], "-o", tmp_path / "x.json", "--ranks", "99", "--cache-dir", runs["cache"])
    assert none.returncode == 2 and len(none.stderr.strip().splitlines()) == 1


def _assert_collective_arrows(merged, truth):
    """Every planted collective instance is one chain of flow events through its members' slices: the
    same members (the sender first for send/recv), each bound to a slice that starts where the
    generator started that member's NCCL kernel (its global clock: within 2 us of the merged clock)."""
    events = merged["traceEvents"]
    base = merged["otherData"]["ts_base_unix_us"]
    slices = defaultdict(list)
    for e in events:
        if e.get("ph") == "X":
            slices[(e["pid"], e["tid"])].append(e)
    chains = defaultdict(list)
    for e in events:
        if e.get("cat") == "collective":
            chains[e["id"]].append(e)
    got = defaultdict(list)
    for points in chains.values():
        assert [p["ph"] for p in points] == ["s"] + ["t"] * (len(points) - 2) + ["f"]
        members = []
        for p in points:  # the slice each point lies in, on its own track
            inside = [x for x in slices[(p["pid"], p["tid"])] if x["ts"] <= p["ts"] <= x["ts"] + x["dur"]]
            assert len(inside) == 1, p
            members.append((p["args"]["rank"], (inside[0]["ts"] + base) * 1000))
        sender = members[0][0] if points[0]["name"].startswith("send_recv") else None  # the arrow leaves it
        got[(points[0]["name"], frozenset(r for r, _ in members), sender)].append(members)
    want = defaultdict(list)
    for inst in truth.instances:
        if len(inst["members"]) < 2:
            continue
        members = [(m["rank"], m["start_ns"]) for m in inst["members"]]
        sender = members[0][0] if inst["kind"] == "send_recv" else None  # the truth lists the sender first
        want[(f"{inst['kind']} step {inst['step']}", frozenset(r for r, _ in members), sender)].append(members)
    assert sum(map(len, want.values())) > 0
    assert {k: len(v) for k, v in got.items()} == {k: len(v) for k, v in want.items()}
    for key, planted in want.items():
        drawn = sorted(got[key], key=lambda ms: min(t for _, t in ms))
        for ms, truth_ms in zip(drawn, sorted(planted, key=lambda ms: min(t for _, t in ms))):
            starts = dict(truth_ms)
            assert all(abs(t - starts[r]) < 2000 for r, t in ms), (key, ms, truth_ms)


# ------------------------------------------------------------------ the HTML report


class _Cells(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self._table, self._cell, self.refs, self.tags = {}, None, None, [], Counter()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags[tag] += 1
        self.refs += [v for k, v in attrs if k in ("src", "href") and v and not v.startswith("#")]
        if tag == "table":
            self._table = self.tables.setdefault(a.get("data-key"), [])
        elif tag == "tr" and self._table is not None:
            self._table.append([])
        elif tag in ("td",) and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._table[-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def test_report_is_one_offline_page_of_the_display_model(runs, tmp_path):
    import tb_paddle_profile as tbp
    from tb_paddle_profile.present.display.cells import format_cell, sentence_text
    from tbp_synth.truth import load_truth

    out = tmp_path / "report.html"
    got = _cli("report", runs["slow"], "-o", out, "--cache-dir", runs["cache"])
    assert got.returncode == 0, got.stderr
    page = out.read_text()
    parsed = _Cells()
    parsed.feed(page)
    assert parsed.refs == [] and parsed.tags["script"] == 0 and parsed.tags["link"] == 0 and parsed.tags["img"] == 0
    run = tbp.load_run(runs["slow"], cache_dir=str(runs["cache"]))
    view = run.display.views[0]
    ranks = next(t for t in view.tables if t.key == "ranks")
    assert len(parsed.tables["ranks"]) - 1 == len(ranks.rows) == load_truth(str(runs["slow"])).world
    for row, shown in zip(ranks.rows, parsed.tables["ranks"][1:]):
        want = [
            c.text if col.format.kind == 0 else format_cell(col, c, "ms") for col, c in zip(ranks.columns, row.cells)
        ]
        assert shown == want
    verdict = next(s for s in view.sentences if s.key == "verdict")
    assert html.unescape(re.sub(r"<[^>]+>", "", page)).count(sentence_text(verdict)) >= 1
    headings = re.findall(r"<h2>(.*?)</h2>", page)
    assert any(h.startswith("Across ranks") for h in headings) and any(h.startswith("What-if") for h in headings)
    # the rank with the longest mean step (the planted slow one's pipeline: by the truth's step times)
    # gets its top operators, as its own Profile has them
    truth = load_truth(str(runs["slow"]))
    slowest = int(truth.step_time_ns.mean(axis=1).argmax())
    label = next(r.label for r in run.parallel.ranks if r.rank == slowest)
    assert any(html.escape(label) in h and h.startswith("Slowest rank") for h in headings)
    ops = run.profile(slowest).operators
    shown = [row[0] for row in parsed.tables["operators"][1:] if row and not row[0].startswith("Thread:")]
    assert shown[0] == ops["name"].iloc[0] and set(ops["name"].head(25)) <= set(shown)


@pytest.mark.browser
def test_report_opens_from_disk_in_chromium_without_network(runs, tmp_path, browser):
    out = tmp_path / "report.html"
    assert _cli("report", runs["base"], "-o", out, "--cache-dir", runs["cache"]).returncode == 0
    page = browser.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    assert page.locator("table[data-key=ranks] tbody tr").count() == len(list(runs["base"].glob("*.paddle_trace.json")))
    page.close()
    assert all(u.startswith("file://") for u in requests), requests


def test_workers_ignore_the_current_folder_in_the_cli(runs, tmp_path):
    """A cwd inspect.py (numpy imports inspect) once broke every worker process of the CLI."""
    work = tmp_path / "cwd"
    work.mkdir()
    (work / "inspect.py").write_text("raise ImportError('imported from the current folder')\n")
    run = shutil.copytree(runs["base"], tmp_path / "run")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    got = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.remove('') if '' in sys.path else None; "
            "from tb_paddle_profile.cli.commands import main; sys.exit(main(sys.argv[1:]))",
            "preprocess",
            str(run),
            "--cache-dir",
            str(tmp_path / "c"),
            "--jobs",
            "2",
        ],
        cwd=work,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert got.returncode == 0, got.stderr[-2000:]
    n = len(list(run.glob("*.paddle_trace.json")))
    assert got.stdout.strip() == f"{n} of {n} traces summarized and indexed into the cache"


# ------------------------------------------------------------------ tidy frames of the API


def test_run_ranks_have_integer_coordinates_of_the_planted_topology(runs):
    import tb_paddle_profile as tbp
    from tbp_synth.truth import load_truth

    run = tbp.load_run(runs["skew"], cache_dir=str(runs["cache"]))
    ranks = run.ranks
    for col in ("rank", "dp", "pp", "mp", "stage", "device_id"):
        assert str(ranks[col].dtype) == "int64", col
    truth = {r["rank"]: r for r in load_truth(str(runs["skew"])).ranks}
    for _, row in ranks.iterrows():
        t = truth[row["rank"]]
        assert (row["dp"], row["pp"], row["mp"]) == (t["dp"], t["pp"], t["mp"])
        assert row["host"] == f"gpunode{row['rank'] // 2}"  # gpus_per_node=2
    for col, dtype in ranks.dtypes.items():  # no column of mixed Python objects
        assert str(dtype) != "object" or col in ("label", "worker", "host", "timeline"), (col, dtype)
    kinds = run.collectives
    assert all(isinstance(v, list) and all(isinstance(x, int) for x in v) for v in kinds["ranks"])
    assert set().union(*map(set, kinds["ranks"])) == set(truth)


# ------------------------------------------------------------------ our views within 120 columns


def test_our_views_fit_120_columns_and_keep_the_numbers(runs):
    cache = ["--cache-dir", runs["cache"]]
    ranks = sorted(runs["skew"].glob("*.paddle_trace.json"))
    outputs = {
        "parallel": _cli("parallel", runs["skew"], *cache),
        "whatif": _cli("whatif", runs["skew"], *cache),
        "diff runs": _cli("diff", runs["base"], runs["slow"], *cache),
        "diff ranks": _cli("diff", ranks[0], ranks[-1], *cache),
    }
    for what, got in outputs.items():
        assert got.returncode == 0, (what, got.stderr)
        widest = max(len(line.rstrip()) for line in got.stdout.splitlines())
        assert widest <= 120, (what, widest)
    # the per-rank table still has one row per rank, its label shortened to what the Rank column lacks
    import tb_paddle_profile as tbp

    run = tbp.load_run(runs["skew"], cache_dir=str(runs["cache"]))
    text = outputs["parallel"].stdout
    for r in run.parallel.ranks:
        coords = r.label.split(" · ")[1]  # "dp1 pp0 mp0"
        assert re.search(rf"^{r.rank}\s+{re.escape(coords)} · ", text, re.M), r.label
