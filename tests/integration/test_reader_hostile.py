"""Hostile and damaged traces (issue 17): gzip bombs and layers, deep nesting, a byte order mark, a
traceEvents that is not an array, negative durations, exact byte offsets in the messages, values
beyond what the Summary holds; the engine and the CLI tell bad input (one line naming the file) from
a bug of ours. Each test failed before its fix."""

import gzip
import json
import os
import re
import subprocess
import sys
import zlib

import pytest

from support.paths import REPO
from test_reader_native import _HOST, _KERNEL, _MEMORY, _RUNTIME, _read, _trace
from tb_paddle_profile.analysis import summarize as engine
from tb_paddle_profile.trace import reader
from tb_paddle_profile.analysis.summarize import summarize_bytes

NAME = "rank0_time_2026_11_29_00_00_00_000000.paddle_trace.json"
EXAMPLE = sorted((REPO / "examples" / "profiler_log" / "gpt-single").glob("*.paddle_trace.json"))[0]
_STEP = (
    '{"name": "ProfileStep#1[20.000 us]", "pid": 7, "tid": "7(Python)", "ts": 999, "dur": 20.0, '
    '"ph": "X", "cat": "ProfileStep", "args": {"start_time": "0.000 us", "end_time": "20.000 us"}}'
)
PATHS = pytest.mark.parametrize("native", [True, False], ids=["native", "msgspec"])


@pytest.fixture(scope="module")
def example() -> bytes:
    return EXAMPLE.read_bytes()


def _error(data: bytes, native: bool = True, chunk: int = reader.chunks.CHUNK_BYTES) -> str:
    got = _read(data, native, chunk)
    assert isinstance(got, tuple), "it loaded"
    message = got[1]
    assert message.startswith(NAME + ": ") and "\n" not in message, message
    return message


def _summary_text(data: bytes, native: bool) -> str:
    saved = reader.native.USE_NATIVE
    reader.native.USE_NATIVE = native
    try:
        s = summarize_bytes(data, NAME)
    finally:
        reader.native.USE_NATIVE = saved
    s.meta.ClearField("file_size")
    return s.SerializeToString(deterministic=True)


# ---------------------------------------------------------------- gzip bombs and layers

_BOMB = r"""
import sys
sys.path.insert(0, sys.argv[1])
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.core.errors import TraceError
try:
    summarize_file(sys.argv[2])
    outcome = "summary"
except TraceError as err:
    outcome = "error: " + str(err)
print(outcome)
# The peak of this process's own memory (VmHWM: reset by exec, unlike ru_maxrss, which keeps the
# peak of the parent that forked it, the test runner), in MB.
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) // 1024)
"""


def _write_bomb(path, inflated_mb: int, layers: int = 1) -> None:
    """A trace with no events and `inflated_mb` MB of blanks in its traceEvents array, gzip'd
    `layers` times, streamed to `path` (the test never holds it inflated)."""
    head = b'{"schemaVersion": "1.0.2", "span_index": "0", "traceEvents": ['
    tail = b'], "ExtraInfo": {}}'
    blanks = b" " * (1 << 20)
    packers = [zlib.compressobj(9, zlib.DEFLATED, 31) for _ in range(layers)]

    def push(data: bytes, flush: bool = False) -> bytes:
        for p in packers:
            data = p.compress(data) + (p.flush() if flush else b"")
        return data

    with open(path, "wb") as out:
        out.write(push(head))
        for _ in range(inflated_mb):
            out.write(push(blanks))
        out.write(push(tail, flush=True))


def _run_bomb(path, env=None):
    proc = subprocess.run(
        [sys.executable, "-c", _BOMB, str(REPO), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    outcome, peak_mb = proc.stdout.strip().splitlines()
    return outcome, int(peak_mb)


@pytest.mark.parametrize("layers", [1, 2], ids=["gzip", "gzip-of-gzip"])
def test_a_gzip_bomb_is_refused_in_bounded_memory(tmp_path, layers):
    """300 MB of blanks in about 300 KB: was read as an empty trace, holding all of it (twice over
    for a gzip of a gzip); now refused by the ratio bound after at most 64 MB."""
    path = tmp_path / (NAME + ".gz")
    _write_bomb(path, 300, layers)
    assert path.stat().st_size < 2 << 20
    outcome, peak_mb = _run_bomb(path)
    assert peak_mb < 250, f"peak RSS {peak_mb} MB ({outcome})"  # the interpreter and imports ~100 MB, the bound 64
    assert outcome.startswith(f"error: {path.name}: inflates more than 200 x its size"), outcome


def test_the_inflate_bound_is_a_setting(tmp_path):
    path = tmp_path / (NAME + ".gz")
    _write_bomb(path, 40)
    assert _run_bomb(path)[0] == "summary"  # below the ratio bound's 64 MB: an empty trace it is
    outcome, _ = _run_bomb(path, {reader.MAX_INFLATE_ENV: "0.02"})
    assert outcome == (
        f"error: {path.name}: inflates beyond 0.02 GB (the bound for a .gz trace; {reader.MAX_INFLATE_ENV} sets it)"
    ), outcome


def test_max_inflate_setting(monkeypatch):
    monkeypatch.setenv(reader.MAX_INFLATE_ENV, "2.5")
    assert reader.max_inflate_bytes() == 2_500_000_000
    monkeypatch.setenv(reader.MAX_INFLATE_ENV, "0")
    assert reader.max_inflate_bytes() == 0
    for bad in ("x", "-1", "inf", "nan"):
        monkeypatch.setenv(reader.MAX_INFLATE_ENV, bad)
        assert 0 < reader.max_inflate_bytes() <= reader.DEFAULT_MAX_INFLATE_GB * 10**9


@PATHS
def test_gzip_layers_members_and_damage(example, native):
    plain = _summary_text(example, native)
    once = gzip.compress(example, 1)
    assert _summary_text(gzip.compress(once, 1), native) == plain  # a gzip of a gzip
    half = len(example) // 2
    members = gzip.compress(example[:half], 1) + gzip.compress(example[half:], 1) + b"\0" * 16
    assert _summary_text(members, native) == plain  # concatenated members, zero padding
    assert "compressed more than 2 times" in _error(gzip.compress(gzip.compress(once)), native)
    assert "truncated gzip stream" in _error(once[: len(once) // 2], native)
    assert "truncated gzip stream" in _error(gzip.compress(once)[:-9], native)
    assert "corrupt gzip data" in _error(once + b"garbage", native)
    assert "not JSON (inside the gzip)" in _error(gzip.compress(b"\0" * 100_000), native)


def test_a_gzip_of_a_gzip_is_inflated_once(monkeypatch, example):
    """It used to be inflated one layer, failed as JSON, then inflated again from the start and
    repaired (a copy of the whole file) before it loaded."""
    calls = []
    repair = reader.repair._repair
    for module in (reader.read, reader.document):  # where the reader looks _repair up
        monkeypatch.setattr(module, "_repair", lambda data: calls.append(len(data)) or repair(data))
    s = summarize_bytes(gzip.compress(gzip.compress(example, 1), 1), NAME)
    assert calls == [] and s.meta.repaired_lines == 0
    assert s.meta.counts.host == summarize_bytes(example, NAME).meta.counts.host


def test_inflated_size_for_memory_planning(monkeypatch, example):
    monkeypatch.setenv(reader.MAX_INFLATE_ENV, "100")
    packed = gzip.compress(example, 6)
    assert reader.inflated_size(packed[: 1 << 20], packed[-4:], len(packed)) == len(example)  # exact
    # A file too large for ISIZE (the size mod 2**32): the head's ratio picks the right multiple.
    ratio = len(example) / len(packed)
    size = 400 << 20
    real = int(size * ratio)
    got = reader.inflated_size(packed[: 1 << 20], (real % (1 << 32)).to_bytes(4, "little"), size)
    assert got == real % (1 << 32) + (real >> 32 << 32)
    # A gzip of a gzip: ISIZE is the inner layer's size; the head's ratio through both decides.
    twice = gzip.compress(packed, 6)
    got = reader.inflated_size(twice[: 1 << 20], twice[-4:], len(twice))
    assert abs(got - len(example)) < len(example) * 0.3
    # A bomb: never more than what the reader inflates before it refuses the file.
    bound, _ = reader._inflate_bound(1 << 20)
    assert reader.inflated_size(packed[: 1 << 20], (1 << 30).to_bytes(4, "little"), 1 << 20) == bound
    assert reader.inflated_size(example[:100], example[-4:], len(example)) == len(example)  # not gzip


# ---------------------------------------------------------------- nesting

_DEEP = 100_000


def _deep_object(depth: int = _DEEP, closed: bool = True) -> bytes:
    return b'{"a": ' * depth + (b"1" + b"}" * depth if closed else b"")


@PATHS
@pytest.mark.parametrize(
    "where", ["document", "head key", "event", "args", "array in args", "unclosed", "unclosed in events"]
)
def test_deep_nesting_is_a_one_line_error(where, native):
    event = _HOST
    if where == "document":
        data = _deep_object()
    elif where == "unclosed":
        data = _deep_object(closed=False)
    elif where == "head key":
        data = _trace(_HOST).replace(b'"span_index"', b'"deep": ' + _deep_object() + b', "span_index"')
    else:
        if where == "event":
            event = _HOST.replace('"ph"', '"deep": ' + _deep_object().decode() + ', "ph"')
        elif where == "args":
            event = _HOST.replace('"start_time"', '"deep": ' + _deep_object().decode() + ', "start_time"')
        elif where == "array in args":
            event = _HOST.replace('"start_time"', '"deep": ' + "[" * _DEEP + "]" * _DEEP + ', "start_time"')
        elif where == "unclosed in events":
            event = _HOST + ", " + "[" * _DEEP
        data = _trace(_HOST, event, _KERNEL)
    message = _error(data, native)
    assert "nested too deeply" in message, message


def test_the_cli_goes_on_after_a_deeply_nested_file(tmp_path, example):
    (tmp_path / "a_time_1.paddle_trace.json").write_bytes(_deep_object())
    (tmp_path / "b_time_1.paddle_trace.json").write_bytes(example)
    (tmp_path / "c_time_1.paddle_trace.json").write_bytes(
        _trace(_HOST).replace(b'"ExtraInfo": {}', b'"x": ' + _deep_object())
    )
    proc = subprocess.run(
        [sys.executable, "-m", "tb_paddle_profile", "summary", str(tmp_path), "--views", "overview"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Overview Summary" in proc.stdout and "b_time_1" in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert lines[0].startswith("error: a_time_1.paddle_trace.json: JSON nested too deeply")
    assert lines[1].startswith("error: c_time_1.paddle_trace.json: JSON nested too deeply")


# ---------------------------------------------------------------- the document's shape


@PATHS
def test_a_byte_order_mark_is_accepted(example, native):
    plain = _summary_text(example, native)
    assert _summary_text(b"\xef\xbb\xbf" + example, native) == plain
    assert _summary_text(gzip.compress(b"\xef\xbb\xbf" + example), native) == plain
    # and the offsets of what follows are still those of the file
    bad = b"\xef\xbb\xbf" + _trace(_HOST).replace(b'"ph": "X"', b'"ph": @X"')
    assert f"(byte {bad.index(b'@')})" in _error(bad, native)


@PATHS
@pytest.mark.parametrize(
    "value,kind",
    [
        ('"[]"', "a string"),
        ('"[{}]"', "a string"),
        ("{}", "an object"),
        ("5", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ],
)
def test_trace_events_must_be_an_array(native, value, kind):
    data = _trace(_HOST).replace(b"[\n" + _HOST.encode() + b"\n]", value.encode())
    assert value.encode() in data
    message = _error(data, native)
    assert f"not a Paddle trace: traceEvents is {kind}, not an array (byte {data.index(value.encode())})" in message


@PATHS
def test_another_key_after_the_events_still_loads(native):
    """The fast path cuts the events out up to the last "]" before ExtraInfo: a key between them
    made a valid file fail as invalid JSON; the whole document's decode now decides."""
    good = _trace(_STEP, _HOST, _KERNEL)
    other = good.replace(b'"ExtraInfo"', b'"other": [1, [2]], "ExtraInfo"')
    assert json.loads(other)["other"] == [1, [2]]
    assert _summary_text(other, native) == _summary_text(good, native)


# ---------------------------------------------------------------- values


@PATHS
@pytest.mark.parametrize("event", [_STEP, _HOST, _KERNEL, _RUNTIME])
def test_a_negative_duration_is_a_one_line_error(native, event):
    """A ProfileStep of negative length cancelled the others' time: the total became 0 and every
    table after the Device Summary was dropped, silently. Durations are refused below 0."""
    m = re.search(r'"dur": ([0-9.]+)', event)
    bad = event[: m.start(1)] + "-" + event[m.start(1) :]
    message = _error(_trace(*[bad if e == event else e for e in (_STEP, _HOST, _RUNTIME, _KERNEL, _MEMORY)]), native)
    name = json.loads(bad)["name"].rpartition("[")[0] or json.loads(bad)["name"]
    assert f"a negative duration (-{float(m.group(1)):.3f} µs) for the event {name!r}" in message, message


def test_zero_and_negative_zero_durations_load():
    for dur in ("0", "-0.0", "-0.0004"):
        data = _trace(_STEP, _HOST.replace('"dur": 12.345', f'"dur": {dur}'))
        assert _read(data, True) is not None and not isinstance(_read(data, True), tuple)
        assert not isinstance(_read(data, False), tuple)


@PATHS
def test_byte_offsets_are_those_of_the_file(example, native):
    """msgspec counts from the start of what it decodes: a chunk of events or the events' array;
    the offsets were off by where that began (about 570 bytes in the samples)."""
    at = example.index(b'"ph": "X"', len(example) // 3) + 6
    bad = example[:at] + b"@" + example[at + 1 :]
    for chunk in (reader.chunks.CHUNK_BYTES, 50_000):
        assert f"invalid JSON: JSON is malformed: invalid character (byte {at})" in _error(bad, native, chunk)
    # in a copy repaired for Paddle's unescaped names, still the offset in the file
    name_at = example.index(b'"name": "', 1000) + 9
    repaired = bad[:name_at] + b'un"escaped' + bad[name_at:]
    assert f"(byte {at + len(b'un' + bytes([34]) + b'escaped')})" in _error(repaired, native)
    # a value of the wrong type: the event's index in the file's traceEvents
    events = json.loads(example)["traceEvents"]
    i = next(i for i, e in enumerate(events) if i > len(events) // 2 and e.get("ph") == "X")
    typed = _trace(*[json.dumps(e) for e in events[:i]], json.dumps(dict(events[i], dur="12")))
    for chunk in (reader.chunks.CHUNK_BYTES, 20_000):
        assert f"at `$.traceEvents[{i}].dur`" in _error(typed, native, chunk)


@PATHS
def test_a_time_out_of_range_is_a_one_line_error(native):
    for event in (
        _HOST.replace('"dur": 12.345', '"dur": 4.7e15'),
        _HOST.replace('"start_time": "1.000 us"', '"start_time": "4.0e15 us"').replace('"dur": 12.345', '"dur": 1e15'),
    ):
        assert "time out of range" in _error(_trace(_STEP, event), native)


def test_thread_ids_beyond_any_index_keep_their_memory_events():
    """tid * events + position overflowed int64 for a large thread id: memory events were given
    to the wrong host event (or none)."""
    small = _trace(_STEP, _HOST.replace('"7(Python)"', '"7"'), _MEMORY.replace('"7(C++)"', '"7"'))
    big = small.replace(b'"tid": "7"', b'"tid": "%d"' % (1 << 61))
    a, b = reader.read_trace(small, NAME), reader.read_trace(big, NAME)
    assert a.memory.owner.tolist() == [1] and b.memory.owner.tolist() == [1]
    assert int(b.memory.tid[0]) == 1 << 61


def test_a_thread_name_key_that_only_looks_like_digits_is_not_a_thread():
    data = _trace(_STEP, _HOST).replace(b'"ExtraInfo": {}', '"ExtraInfo": {"\u00b2": "x", "7": "main"}'.encode())
    t = reader.read_trace(data, NAME)
    assert t.thread_names == {7: "main"}


@PATHS
def test_device_properties_beyond_the_summary_fields_are_refused(native):
    head = b'"deviceProperties": [{"id": 0, "name": "GPU", "computeMajor": %d}], "traceEvents"'
    for value in (1 << 31, -(1 << 40)):
        data = _trace(_STEP, _KERNEL).replace(b'"traceEvents"', head % value)
        message = _error(data, native)
        assert "not a Paddle trace" in message and "deviceProperties[0].computeMajor" in message, message
    ok = _trace(_STEP, _KERNEL).replace(b'"traceEvents"', head % 8)
    assert not isinstance(_read(ok, native), tuple)


@PATHS
@pytest.mark.parametrize("shapes", ['"abc"', "[1, 2]", "5", '{"X": 5}', '{"X": [[2, 3]]}'])
def test_input_shapes_of_any_shape_load(native, shapes):
    """The collectives' byte count read any JSON there as Paddle's {input: [shape]} (AttributeError)."""
    op = (
        '{"name": "c_allreduce_sum dygraph[5.000 us]", "pid": 7, "tid": "7(Python)", "ts": 1000, "dur": 5, '
        '"ph": "X", "cat": "Operator", "args": {"start_time": "1.000 us", "input_shapes": %s, '
        '"input_dtypes": {"X": ["float32"]}}}' % shapes
    )
    s = _summary_text(_trace(_STEP, op), native)
    assert s


# ---------------------------------------------------------------- ours, not the file's


def test_a_bug_in_the_analyses_is_not_blamed_on_the_file(monkeypatch, example):
    def broken(*args, **kwargs):
        raise IndexError("index 5 is out of bounds")

    monkeypatch.setattr(engine, "memory_view", broken)
    with pytest.raises(IndexError):
        summarize_bytes(example, NAME)


# The CLI with a bug of ours in the engine's Kernel view, in this process and in the worker processes
# its jobs run in (a folder's traces are parsed by the same WorkerPool the plugin uses).
_BROKEN_CLI = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, os.path.join(sys.argv[1], "tests"))
from support import plugin_testlib
from tb_paddle_profile.cli import commands as cli
from tb_paddle_profile.pipeline import loader_dispatch
plugin_testlib.break_kernel_view()
loader_dispatch._worker_init = plugin_testlib.break_kernel_view
sys.exit(cli.main(sys.argv[2:]))
"""


@pytest.mark.parametrize("debug", [False, True])
def test_the_cli_reports_our_bug_goes_on_and_exits_3(tmp_path, example, debug):
    for name in ("a_time_1.paddle_trace.json", "b_time_1.paddle_trace.json"):
        (tmp_path / name).write_bytes(example)
    (tmp_path / "c_time_1.paddle_trace.json").write_bytes(b"")
    proc = subprocess.run(
        [sys.executable, "-c", _BROKEN_CLI, str(REPO), "summary", str(tmp_path), "--no-cache"]
        + (["--debug"] if debug else []),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 3, proc.stderr
    for line, name in zip(errors[:2], ("a_time_1", "b_time_1")):
        assert line.startswith(f"error: {name}.paddle_trace.json: internal error in tb_paddle_profile")
        assert "not a fault of this file" in line and "KeyError: 'oops'" in line
    assert errors[2] == "error: c_time_1.paddle_trace.json: empty file"
    assert ("Traceback" in proc.stderr) == debug
    assert proc.stdout == ""


def test_column_values_that_do_not_fit_are_one_line_errors():
    for event, what in (
        (_KERNEL.replace('"correlation id": 5', '"correlation id": %d' % (1 << 64)), "correlation id"),
        (_KERNEL.replace('"pid": 0', '"pid": "x"'), "device id"),
        (_HOST.replace('"7(Python)"', '"x(Python)"'), "thread id"),
        (_HOST.replace('"1.000 us"', '"1.000 ms"'), "start_time"),
    ):
        for native in (True, False):
            assert what in _error(_trace(_STEP, event), native)


@PATHS
@pytest.mark.parametrize(
    "events",
    [
        (),
        (_KERNEL,),
        (_RUNTIME,),
        (_MEMORY,),
        (_RUNTIME, _KERNEL),
        (_STEP, _KERNEL),
        (_STEP, _RUNTIME),
        (_STEP, _MEMORY),
        (_HOST, _KERNEL),
        (_STEP, _RUNTIME, _KERNEL),
    ],
    ids=[
        "none",
        "kernel",
        "runtime",
        "memory",
        "runtime+kernel",
        "step+kernel",
        "step+runtime",
        "step+memory",
        "op+kernel",
        "step+runtime+kernel",
    ],
)
def test_traces_with_some_kinds_of_events_missing_summarize(native, events):
    """np.where(i >= 0, a[max(i, 0)], -1) read a[0] of an empty table (no runtime or host events):
    an IndexError that the engine used to pass off as an "inconsistent trace"."""
    s = _summary_text(_trace(*events), native)
    assert s is not None
