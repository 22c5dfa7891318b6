"""The reader: Paddle's layouts and quirks load; wrong input fails with one line naming the file."""

import gzip
import json
import re
import subprocess
import sys

import pytest

from support.paths import REPO
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.core.errors import TraceError
from tb_paddle_profile.trace.reader import peek_span, read_trace
from tb_paddle_profile.present.render.text import render

NAME = "rank0_time_2026_11_29_00_00_00_000000.paddle_trace.json"


@pytest.fixture(scope="module")
def gpu_trace(shared_traces):
    return sorted((shared_traces / "gpu-synthetic-2rank").glob("rank0_*.paddle_trace.json"))[0].read_bytes()


@pytest.fixture(scope="module")
def cpu_trace(shared_traces):
    return sorted((shared_traces / "cpu-gpt-single").glob("*.paddle_trace.json"))[0].read_bytes()


def _text(data: bytes, name=NAME) -> str:
    return render(summarize_bytes(data, name), time_unit="us")


def test_gzip_gives_the_same_summary(gpu_trace):
    plain = summarize_bytes(gpu_trace, NAME)
    packed = summarize_bytes(gzip.compress(gpu_trace), NAME + ".gz")
    assert packed.meta.file_size < plain.meta.file_size
    for s in (plain, packed):
        s.meta.ClearField("file_size")
        s.meta.ClearField("file_name")
    assert packed == plain
    assert _text(gzip.compress(gpu_trace)) == _text(gpu_trace)


def test_paddle2_layout_loads_like_paddle3(gpu_trace):
    """2.x files: "span_indx", schemaVersion 1.0.1 and the "Deivce" typo in process names."""
    old = gpu_trace.replace(b'"span_index"', b'"span_indx"').replace(
        b'"schemaVersion": "1.0.2"', b'"schemaVersion": "1.0.1"'
    )
    old = old.replace(b'"Device ', b'"Deivce ')
    assert old != gpu_trace
    s = summarize_bytes(old, NAME)
    assert s.meta.schema_version == "1.0.1" and s.meta.span == "0"
    assert _text(old) == _text(gpu_trace)


def test_unescaped_quote_backslash_and_tab_in_names_are_repaired(cpu_trace):
    """Paddle writes names with printf and no escaping (docs/trace-format.md §2)."""
    data = cpu_trace.decode()
    assert '"name": "train_step[' in data
    broken = data.replace('"name": "train_step[', '"name": "train "step"\\ \tx[')
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    s = summarize_bytes(broken.encode(), NAME)
    names = [it.name for it in s.user_defined.items]
    assert 'train "step"\\ \tx' in names and "train_step" not in names
    assert s.meta.repaired_lines > 0
    ok = summarize_bytes(cpu_trace, NAME)
    assert [it.calls for it in s.user_defined.items] == [it.calls for it in ok.user_defined.items]


def test_span_is_read_from_the_head_only(gpu_trace):
    assert peek_span(gpu_trace[:300]) == "0"
    assert peek_span(gpu_trace[:300].replace(b"span_index", b"span_indx")) == "0"
    assert peek_span(b'{"traceEvents": [') is None


def test_columns_are_numpy_with_interned_names(cpu_trace):
    t = read_trace(cpu_trace, NAME)
    assert t.host.start.dtype.kind == "i" and len(t.host.start) == len(t.host.name)
    assert len(set(t.names)) == len(t.names)
    assert len(t.names) < len(t.host.name) / 5


def _half(data: bytes) -> bytes:
    return data[: len(data) // 2]


BROKEN = {
    "empty": (lambda d: b"", "empty file"),
    "whitespace": (lambda d: b"  \n\n", "empty file"),
    "truncated": (_half, "truncated JSON"),
    "truncated-gzip": (lambda d: _half(gzip.compress(d)), "truncated gzip"),
    "not-json": (lambda d: b"step,time\n1,2\n", "not JSON"),
    "json-array": (lambda d: b"[1, 2, 3]", "not a Paddle trace"),
    "kineto-like": (lambda d: json.dumps({"schemaVersion": 1, "traceEvents": []}).encode(), "not a Paddle trace"),
    "chrome-trace": (
        lambda d: json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}]}).encode(),
        "not a Paddle trace",
    ),
    "garbage": (lambda d: bytes(range(256)) * 4, "JSON"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_bad_input_raises_one_line_naming_the_file(cpu_trace, kind):
    make, reason = BROKEN[kind]
    with pytest.raises(TraceError) as err:
        summarize_bytes(make(cpu_trace), "dir/" + NAME)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(NAME + ": ")
    assert reason in message


@pytest.mark.parametrize("kind", ["empty", "truncated", "not-json", "kineto-like"])
def test_cli_prints_one_line_and_exits_2(tmp_path, cpu_trace, kind):
    path = tmp_path / NAME
    path.write_bytes(BROKEN[kind][0](cpu_trace))
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and NAME in lines[0] and "Traceback" not in proc.stderr


def test_cli_folder_summarizes_good_files_and_reports_bad_ones(tmp_path, cpu_trace, gpu_trace):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / NAME).write_bytes(gpu_trace)
    (tmp_path / "b_time_x.paddle_trace.json").write_bytes(_half(cpu_trace))
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", str(tmp_path), "--views", "overview"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout.count("Overview Summary") == 1
    assert re.search(r"b_time_x\.paddle_trace\.json: truncated JSON", proc.stderr)


def test_cli_json_is_the_summary_message(tmp_path, gpu_trace):
    path = tmp_path / NAME
    path.write_bytes(gpu_trace)
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", str(path), "--format", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert doc["meta"]["worker"] == "rank0" and doc["meta"]["rank"] == 0
    assert int(doc["meta"]["totalTimeNs"]) == 10_000_000
    assert {k["name"] for k in doc["kernels"]["kernels"]} >= {
        "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
    }


def test_chunked_decoding_gives_the_same_tables(monkeypatch, cpu_trace, gpu_trace):
    """Events are decoded a few MB at a time; tiny chunks must not change any result."""
    from tb_paddle_profile.trace import reader

    whole = [summarize_bytes(d, NAME) for d in (cpu_trace, gpu_trace)]
    monkeypatch.setattr(reader.chunks, "CHUNK_BYTES", 3000)
    chunked = [summarize_bytes(d, NAME) for d in (cpu_trace, gpu_trace)]
    assert chunked == whole


def test_a_name_that_looks_like_an_event_boundary_still_loads(monkeypatch, cpu_trace):
    from tb_paddle_profile.trace import reader

    monkeypatch.setattr(reader.chunks, "CHUNK_BYTES", 3000)
    odd = cpu_trace.replace(b'"name": "train_step[', b'"name": "train}, {step[')
    s = summarize_bytes(odd, NAME)
    assert "train}, {step" in [it.name for it in s.user_defined.items]


def test_operators_are_grouped_by_input_shape_where_recorded(gpu_trace):
    """Paddle 3.3.1 writes empty input_shapes; a trace that has them gets one group per shape."""
    assert b'"input_shapes": {}' in gpu_trace
    shaped = gpu_trace.replace(b'"input_shapes": {}', b'"input_shapes": {"X": [[2, 3]]}')
    plain, grouped = summarize_bytes(gpu_trace, NAME), summarize_bytes(shaped, NAME)
    assert all(not node.shapes for node in plain.operators.operators)
    for node in grouped.operators.operators:
        assert len(node.shapes) == 1
        group = node.shapes[0]
        assert json.loads(group.input_shapes) == {"X": [[2, 3]]}
        assert group.stats.calls == node.stats.calls
        assert group.stats.cpu == node.stats.cpu and group.stats.general_gpu == node.stats.general_gpu


def _tables_equal(a, b) -> list:
    """Names of the EventTables fields that differ."""
    import numpy as np

    from dataclasses import is_dataclass

    diff = []
    for k, v in vars(a).items():
        w = getattr(b, k)
        if is_dataclass(v) and not isinstance(v, type):  # a typed table: compare its columns
            diff += [f"{k}.{c}" for c in _tables_equal(v, w)]
            continue
        same = (
            (v.dtype == w.dtype and v.shape == w.shape and np.array_equal(v, w))
            if isinstance(v, np.ndarray)
            else v == w
        )
        if not same:
            diff.append(k)
    return diff


_PARALLEL_CHILD = r"""
import os, sys
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "integration")]  # support, test_reader
from test_reader import NAME, _tables_equal
from tb_paddle_profile.trace import reader
from tb_paddle_profile.analysis.summarize import summarize_bytes
reader.chunks.CHUNK_BYTES = 4000
reader.parallel.PARALLEL_MIN_BYTES = 1
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    serial = reader.read_trace(data, NAME, workers=1)
    trace, _ = reader.decode(data, NAME)
    direct = reader._parallel_tabulate(trace, 0, 3)
    assert direct is not None, "the parallel path fell back"
    assert _tables_equal(serial, direct) == [], _tables_equal(serial, direct)
    assert _tables_equal(serial, reader.read_trace(data, NAME, workers=3)) == []
    assert summarize_bytes(data, NAME, workers=3) == summarize_bytes(data, NAME)
print("parallel == serial")
"""


def test_parallel_decode_gives_the_same_tables(tmp_path, cpu_trace, gpu_trace):
    """Several forked processes decoding one file's chunks give exactly the serial tables
    (names numbered in the same order), and the parallel path really ran. In a fresh interpreter:
    this test process has other tests' threads, and the reader never forks a threaded process."""
    paths = []
    for i, data in enumerate((cpu_trace, gpu_trace)):
        paths.append(tmp_path / f"{i}.json")
        paths[-1].write_bytes(data)
    proc = subprocess.run(
        [sys.executable, "-c", _PARALLEL_CHILD, str(REPO / "tests"), *map(str, paths)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 0 and "parallel == serial" in proc.stdout, proc.stderr[-3000:]


def test_parallel_decode_is_not_used_while_other_threads_run(monkeypatch, gpu_trace):
    import threading

    from tb_paddle_profile.trace import reader

    monkeypatch.setattr(reader.chunks, "CHUNK_BYTES", 4000)
    monkeypatch.setattr(reader.parallel, "PARALLEL_MIN_BYTES", 1)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        trace, _ = reader.decode(gpu_trace, NAME)
        assert reader._parallel_tabulate(trace, 0, 3) is None  # serial instead: forking now could deadlock
        assert _tables_equal(read_trace(gpu_trace, NAME, workers=3), read_trace(gpu_trace, NAME)) == []
    finally:
        stop.set()
        other.join()


_CUT_CHILD = r"""
import sys
from tb_paddle_profile.trace import reader
from tb_paddle_profile.analysis.summarize import summarize_bytes
NAME = "rank0_time_2026_11_29_00_00_00_000000.paddle_trace.json"
reader.parallel.PARALLEL_MIN_BYTES = 1
odd = open(sys.argv[1], "rb").read().replace(b'"name": "train_step[', b'"name": "train}, {step[')
ran = []

def cut_inside_the_name(mv, start, end):  # a chunk boundary the separator search could pick
    ran.append(1)
    j = bytes(mv).index(b"train}, {step") + len(b"train")
    return [(start, j + 1), (j + 3, end)]

reader.parallel._chunk_ranges = reader.read._chunk_ranges = cut_inside_the_name
trace, _ = reader.decode(odd, NAME)
assert reader._parallel_tabulate(trace, 0, 2) is None and ran, "the parallel path did not try"
s = summarize_bytes(odd, NAME, workers=2)
assert "train}, {step" in [it.name for it in s.user_defined.items]
assert s == summarize_bytes(odd, NAME)
print("fell back")
"""


def test_parallel_decode_falls_back_on_a_chunk_cut_inside_a_name(tmp_path, cpu_trace):
    """Workers whose chunk was cut inside a string fail to decode it; the read falls back to the
    serial path (whose whole-array decode handles it). In a fresh, single-threaded interpreter."""
    path = tmp_path / NAME
    path.write_bytes(cpu_trace)
    proc = subprocess.run([sys.executable, "-c", _CUT_CHILD, str(path)], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and "fell back" in proc.stdout, proc.stderr[-3000:]


def test_cli_summary_jobs_do_not_change_the_tables(tmp_path, gpu_trace):
    path = tmp_path / NAME
    path.write_bytes(gpu_trace)
    out = [
        subprocess.run(
            [sys.executable, "-m", "tb_paddle_profile", "summary", str(path), "--jobs", j],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout
        for j in ("1", "3")
    ]
    assert out[0] == out[1] and "Kernel Summary" in out[0]
