"""The native scanner (tb_paddle_profile/trace/_scan.c) against the msgspec reader.

The scanner is only a fast path: for every input, the tables it gives must be exactly the msgspec
reader's, and where msgspec fails (or would, later in the Python code) it must decline the chunk
so that the same one-line error comes out. Checked on every trace we have, on hand-written edge
cases and on a few thousand damaged copies of real traces.
"""

import random
import subprocess
import sys

import pytest

from support.paths import REPO
from tb_paddle_profile.trace import reader
from tb_paddle_profile.core.errors import TraceError
from test_reader import NAME, _tables_equal


def _read(data: bytes, native: bool, chunk: int = reader.chunks.CHUNK_BYTES, workers: int = 1):
    """The reader's result with or without the scanner: its tables, or ("error", message).
    workers > 1 with the scanner: that many threads scan chunks at once."""
    saved = reader.native.USE_NATIVE, reader.chunks.CHUNK_BYTES
    reader.native.USE_NATIVE, reader.chunks.CHUNK_BYTES = native, chunk
    try:
        return reader.read_trace(data, NAME, workers=workers if native else 1)
    except TraceError as exc:
        return ("error", str(exc))
    finally:
        reader.native.USE_NATIVE, reader.chunks.CHUNK_BYTES = saved


def _same_result(data: bytes, chunk: int = reader.chunks.CHUNK_BYTES, workers: int = 1) -> str:
    """'' when both paths agree, else what differs."""
    a, b = _read(data, False, chunk), _read(data, True, chunk, workers)
    if isinstance(a, tuple) or isinstance(b, tuple):
        return "" if a == b else f"msgspec: {str(a)[:300]} / native: {str(b)[:300]}"
    diff = _tables_equal(a, b)
    return f"columns differ: {diff}" if diff else ""


def _scan_all(data: bytes):
    """The native path's columns of a whole trace's events as one chunk (None: it declined)."""
    trace, _ = reader.decode(data, NAME)
    mv, start, end = reader._event_bounds(trace.traceEvents)
    return reader._native_chunk_columns(reader.native_scanner()(mv, start, end), mv, reader._Interner(), 0)


def test_the_scanner_is_built():
    """pip install builds it (setup.py, optional only for machines without a C compiler)."""
    assert reader.native_scanner() is not None, (
        "tb_paddle_profile/trace/_scan.c is not built: pip install -e . with a C compiler"
    )


def _all_traces(shared_traces):
    paths = sorted(shared_traces.rglob("*.paddle_trace.json"))
    paths += sorted((REPO / "examples").rglob("*.paddle_trace.json"))
    assert len(paths) >= 8
    return paths


def test_same_tables_on_every_trace_and_the_scanner_takes_them(shared_traces):
    for path in _all_traces(shared_traces):
        data = path.read_bytes()
        assert _scan_all(data) is not None, f"{path.name}: the scanner declined a real trace"
        assert _same_result(data) == "", path.name
        assert _same_result(data, chunk=5000) == "", path.name
        assert _same_result(data, chunk=5000, workers=3) == "", path.name  # threads scanning at once


def test_same_tables_on_generated_gpu_traces(tmp_path):
    """Kernels, memcpy, memory events, NCCL streams, both layouts (2.x and 3.x)."""
    from tbp_synth.__main__ import main

    for layout in (2, 3):
        out = tmp_path / f"v{layout}"
        main(
            [
                "--out",
                str(out),
                "--dp",
                "2",
                "--mp",
                "2",
                "--pp",
                "1",
                "--steps",
                "2",
                "--events-per-rank",
                "6000",
                "--layout",
                str(layout),
            ]
        )
        for path in sorted(out.glob("*.paddle_trace.json")):
            data = path.read_bytes()
            assert _scan_all(data) is not None
            assert _same_result(data) == "", path.name
            assert _same_result(data, chunk=20000) == "", path.name
            assert _same_result(data, chunk=20000, workers=2) == "", path.name


_HEAD = (
    b'{"schemaVersion": "1.0.2", "span_index": "0", "displayTimeUnit": "ms", "traceEvents": [\n%s\n], "ExtraInfo": {}}'
)
_HOST = (
    '{"name": "matmul dygraph[12.345 us]", "pid": 7, "tid": "7(Python)", "ts": 1000, "dur": 12.345, '
    '"ph": "X", "cat": "Operator", "args": {"start_time": "1.000 us", "end_time": "13.345 us"}}'
)
_KERNEL = (
    '{"name": "gemm", "pid": 0, "tid": 7, "ts": 1002, "dur": 3.5, "ph": "X", "cat": "Kernel", '
    '"args": {"start_time": "2.000 us", "correlation id": 5, "grid": [4, 2, 1], "block": [128, 1, 1], '
    '"registers per thread": 32, "shared memory": 0, "blocks per SM": 1.5, "warps per SM": 12.0, '
    '"theoretical achieved occupancy %": 50.000}}'
)
_RUNTIME = (
    '{"name": "cudaLaunchKernel", "pid": 7, "tid": "7(C++)", "ts": 1001, "dur": 1.25, "ph": "X", '
    '"cat": "CudaRuntime", "args": {"start_time": "1.500 us", "correlation id": 5}}'
)
_MEMORY = (
    '{"name": "[memory]", "pid": 7, "tid": "7(C++)", "ts": 1003, "ph": "i", "cat": "Allocate", '
    '"args": {"place": "Place(gpu:0)", "addr": "1", "increase_bytes": 256, "current_allocated": 256, '
    '"current_reserved": 512, "peak_allocated": 256, "peak_reserved": 512}}'
)


def _trace(*events: str) -> bytes:
    """A trace of these events (a lone surrogate \\udcXX stands for the raw, invalid byte XX)."""
    return _HEAD % ",\n".join(events).encode("utf-8", "surrogateescape")


# Each case: (why, events); both readers must agree; "native" says whether the scanner must take
# it (True), must decline it (False) or may do either (None).
_CASES = [
    ("the four kinds", (_HOST, _RUNTIME, _KERNEL, _MEMORY), True),
    ("escaped quote and backslash in a name", (_HOST.replace("matmul", 'mat\\"m\\\\ul'),), True),
    ("a \\u escape (left to msgspec)", (_HOST.replace("matmul", "mat\\u00e9mul"),), False),
    ("a \\u surrogate pair", (_HOST.replace("matmul", "\\ud83d\\ude00"),), False),
    ("non-ASCII UTF-8 name", (_HOST.replace("matmul", "matmül"),), True),
    ("invalid UTF-8 in the cut duration", (_HOST.replace("12.345 us]", "12.3\udcff45 us]"),), False),
    ("invalid UTF-8 in a thread suffix", (_HOST.replace("7(Python)", "7(Pyth\udcffon)"),), False),
    ("name without a duration", (_HOST.replace("[12.345 us]", ""),), True),
    ("name that is only brackets", (_HOST.replace("matmul dygraph[12.345 us]", "[x]"),), True),
    ("brackets twice", (_HOST.replace("dygraph[", "a[1] dygraph["),), True),
    ("duplicate key", (_HOST.replace('"ph": "X"', '"ph": "i", "ph": "X"'),), False),
    ("args null", (_HOST.replace('{"start_time": "1.000 us", "end_time": "13.345 us"}', "null"),), True),
    ("no args at all", (_HOST.replace(', "args": {"start_time": "1.000 us", "end_time": "13.345 us"}', ""),), True),
    ("start_time null in one event", (_HOST, _HOST.replace('"1.000 us"', "null")), True),
    ("start_time in ms", (_HOST.replace('"1.000 us"', '"1.000 ms"'),), False),
    ("start_time without unit", (_HOST.replace('"1.000 us"', '"1.000"'),), False),
    ("start_time with exponent", (_HOST.replace('"1.000 us"', '"1e3 us"'),), None),
    ("integer start_time", (_HOST.replace('"1.000 us"', '"5 us"'),), True),
    ("pid as a string", (_HOST.replace('"pid": 7', '"pid": "7"'),), True),
    ("pid as a word", (_HOST.replace('"pid": 7', '"pid": "main"'),), False),
    ("device pid as a string", (_KERNEL.replace('"pid": 0', '"pid": "0"'),), True),
    ("device tid with a suffix", (_KERNEL.replace('"tid": 7', '"tid": "7(x)"'),), False),
    ("device tid as digits", (_KERNEL.replace('"tid": 7', '"tid": "7"'),), True),
    ("host tid as a number", (_HOST.replace('"tid": "7(Python)"', '"tid": 7'),), True),
    ("host tid with a space", (_HOST.replace('"tid": "7(Python)"', '"tid": "7 (Python)"'),), False),
    ("negative tid", (_HOST.replace('"tid": "7(Python)"', '"tid": "-7(Python)"'),), True),
    ("tid with no digits", (_HOST.replace('"tid": "7(Python)"', '"tid": "(Python)"'),), False),
    ("float pid", (_HOST.replace('"pid": 7', '"pid": 7.5'),), False),
    ("correlation id as float", (_KERNEL.replace('"correlation id": 5', '"correlation id": 5.0'),), False),
    ("correlation id null", (_KERNEL.replace('"correlation id": 5', '"correlation id": null'),), True),
    (
        "huge correlation id",
        (_KERNEL.replace('"correlation id": 5', '"correlation id": 99999999999999999999999'),),
        False,
    ),
    (
        "19-digit correlation id",
        (_KERNEL.replace('"correlation id": 5', '"correlation id": 1234567890123456789'),),
        False,
    ),
    ("grid longer than three", (_KERNEL.replace("[4, 2, 1]", "[4, 2, 1, 9]"),), True),
    ("grid shorter", (_KERNEL.replace("[4, 2, 1]", "[4]"),), True),
    ("grid empty", (_KERNEL.replace("[4, 2, 1]", "[]"),), True),
    ("grid null", (_KERNEL.replace("[4, 2, 1]", "null"),), True),
    ("grid beyond int32", (_KERNEL.replace("[4, 2, 1]", "[4294967296, 1, 1]"),), False),
    ("grid of floats", (_KERNEL.replace("[4, 2, 1]", "[4.0, 2, 1]"),), False),
    (
        "registers beyond int32",
        (_KERNEL.replace('"registers per thread": 32', '"registers per thread": 3000000000'),),
        False,
    ),
    ("occupancy as an integer", (_KERNEL.replace("50.000", "50"),), True),
    ("blocks per SM null", (_KERNEL.replace('"blocks per SM": 1.5', '"blocks per SM": null'),), True),
    ("ts with exponent", (_HOST.replace('"ts": 1000', '"ts": 1.0e3'),), True),
    ("ts beyond 2^53", (_HOST.replace('"ts": 1000', '"ts": 9007199254740993'),), False),
    ("ts negative zero", (_HOST.replace('"ts": 1000', '"ts": -0'),), True),
    ("dur with many digits", (_HOST.replace('"dur": 12.345', '"dur": 12.34500000000000000001'),), False),
    ("dur 1e400", (_HOST.replace('"dur": 12.345', '"dur": 1e400'),), False),
    ("leading zero", (_HOST.replace('"dur": 12.345', '"dur": 012.345'),), False),
    ("ts as a string", (_HOST.replace('"ts": 1000', '"ts": "1000"'),), False),
    ("ts true", (_HOST.replace('"ts": 1000', '"ts": true'),), False),
    ("name null", (_HOST.replace('"matmul dygraph[12.345 us]"', "null"),), False),
    ("name a number", (_HOST.replace('"matmul dygraph[12.345 us]"', "5"),), False),
    (
        "unknown nested field",
        (_HOST.replace('"ph": "X"', '"ph": "X", "extra": {"a": [1, {"b": null}], "c": "d"}'),),
        True,
    ),
    ("unknown field with \\u", (_HOST.replace('"ph": "X"', '"ph": "X", "extra": "\\u0041"'),), False),
    ("unknown field with invalid UTF-8", (_HOST.replace('"ph": "X"', '"ph": "X", "extra": "\udcff"'),), True),
    ("deep nesting", (_HOST.replace('"ph": "X"', '"ph": "X", "deep": ' + "[" * 100 + "]" * 100),), False),
    ("key with an escape", (_HOST.replace('"ph": "X"', '"p\\u0068": "X"'),), False),
    ("raw tab in a name", (_HOST.replace("matmul", "mat\tmul"),), False),
    (
        "input shapes",
        (
            _HOST.replace(
                '"end_time"', '"input_shapes":  {"X": [[2, 3]]} , "input_dtypes": {"X": "float32"}, "end_time"'
            ),
        ),
        True,
    ),
    ("input shapes empty", (_HOST.replace('"end_time"', '"input_shapes": {}, "end_time"'),), True),
    ("input shapes null", (_HOST.replace('"end_time"', '"input_shapes": null, "end_time"'),), True),
    ("input shapes without dtypes", (_HOST.replace('"end_time"', '"input_shapes": {"X": [[1]]}, "end_time"'),), True),
    (
        "metadata and flow events",
        (
            _HOST,
            '{"name": "process_name", "pid": 7, "tid": 0, "ph": "M", "args": {"name": "p"}}',
            '{"name": "launch", "id": 5, "pid": 0, "tid": 7, "ts": 1, "ph": "f", "cat": "async", "bp": "e"}',
            "{}",
        ),
        True,
    ),
    (
        "a host category with another phase",
        (_HOST.replace('"ph": "X"', '"ph": "B"'), _MEMORY.replace('"ph": "i"', '"ph": "X"')),
        True,
    ),
    ("unknown category", (_HOST.replace('"cat": "Operator"', '"cat": "Mystery"'),), True),
    ("place null", (_MEMORY.replace('"Place(gpu:0)"', "null"),), True),
    ("place a number", (_MEMORY.replace('"Place(gpu:0)"', "3"),), False),
    ("an event that is not an object", (_HOST, "5"), False),
    ("trailing comma", (_HOST + ",",), False),
    ("empty array", (), True),
    ("whitespace everywhere", (_HOST.replace(": ", " \n\t:\r\n ").replace(", ", " ,\n "),), True),
    ("no whitespace", (_HOST.replace(": ", ":").replace(", ", ","),), True),
]


@pytest.mark.parametrize("why,events,native", _CASES, ids=[c[0] for c in _CASES])
def test_edge_case(why, events, native):
    data = _trace(*events)
    assert _same_result(data) == ""
    if native is not None:
        try:
            got = _scan_all(data)
        except TraceError:  # msgspec cannot even read the head: the scanner is not asked
            assert native is False
            return
        assert (got is not None) == native, "the scanner " + ("declined" if native else "took") + " it"


def test_the_scanner_reads_the_fields_it_takes():
    """Not only the same as msgspec: the values themselves, read back from a hand-written trace."""
    tables = _read(_trace(_HOST, _RUNTIME, _KERNEL, _MEMORY), True)
    assert [tables.names[i] for i in tables.host.name] == ["matmul dygraph"]
    assert tables.host.tid.tolist() == [7] and tables.host.start.tolist() == [1000]
    assert tables.host.end.tolist() == [1000 + 12345]
    assert tables.runtime.corr.tolist() == [5] and tables.runtime.end.tolist() == [1500 + 1250]
    assert tables.device.grid.tolist() == [[4, 2, 1]] and tables.device.block.tolist() == [[128, 1, 1]]
    assert tables.device.registers.tolist() == [32] and tables.device.occupancy.tolist() == [50.0]
    assert tables.device.blocks_per_sm.tolist() == [1.5] and tables.device.stream.tolist() == [7]
    assert [tables.names[i] for i in tables.memory.place] == ["Place(gpu:0)"]
    assert tables.memory.current_reserved.tolist() == [512] and tables.pid == 7
    # each event bounds the origin from below by ts·1000 − start; the kernel's bound is the largest
    assert tables.origin_unix_ns == max(1000_000 - 1000, 1001_000 - 1500, 1002_000 - 2000)


_SNIPPETS = [
    b'"',
    b"\\",
    b"\t",
    b"}, {",
    b"null",
    b"1e400",
    b"-0",
    b"01",
    b",",
    b"]",
    b"[",
    b"{",
    b"}",
    b"99999999999999999999",
    b"true",
    b'"(Python)"',
    b"\xff",
    b"1.5",
    b"-",
    b" us",
    b"\\u0041",
    b'"x": [1, {"y": null}], ',
    b"\n",
    b":",
    b"0.000000000000000000001",
    b'"7(C++)"',
    b"\\n",
]


def _damaged(data: bytes, rng: random.Random) -> bytes:
    lo, hi = data.index(b"traceEvents"), data.rindex(b"ExtraInfo")
    pos = rng.randrange(lo, hi)
    what = rng.randrange(5)
    if what == 0:  # delete a few bytes
        return data[:pos] + data[pos + rng.randint(1, 12) :]
    if what == 1:  # insert something tricky
        return data[:pos] + rng.choice(_SNIPPETS) + data[pos:]
    if what == 2:  # replace the value after a key
        k = data.find(b'": ', pos, hi)
        if k < 0:
            return data[:pos]
        k += 3
        stop = k
        while stop < len(data) and data[stop : stop + 1] not in b",}\n":
            stop += 1
        return data[:k] + rng.choice(_SNIPPETS) + data[stop:]
    if what == 3:  # duplicate a key with its value
        k = data.find(b'"ts": ', pos, hi)
        if k < 0:
            return data[:pos]
        stop = data.index(b",", k)
        return data[:stop] + b", " + data[k:stop] + data[stop:]
    return data[:pos]  # truncated


def test_damaged_traces_give_what_msgspec_gives(shared_traces):
    """Deleted bytes, tricky insertions, values of the wrong type, duplicate keys, truncations:
    same tables or the same one-line error, whole-file chunks and small chunks alike."""
    rng = random.Random(20261129)
    sources = [
        sorted((shared_traces / "gpu-synthetic-2rank").glob("rank0_*.json"))[0].read_bytes(),
        sorted((shared_traces / "cpu-gpt-single").glob("*.paddle_trace.json"))[0].read_bytes()[:200_000],
    ]
    # the CPU trace cut down to its first events, closed again so that it stays a valid trace
    cpu = sources[1]
    cut = cpu.rindex(b"},", 0, len(cpu))
    sources[1] = cpu[: cut + 1] + b'\n], "ExtraInfo": {}}'
    assert not isinstance(_read(sources[1], True), tuple)
    outcomes = {"tables": 0, "error": 0}
    for i in range(1200):
        src = sources[i % 2]
        data = _damaged(src, rng)
        chunk = rng.choice((reader.chunks.CHUNK_BYTES, 4000))
        workers = rng.choice((1, 3))
        assert _same_result(data, chunk, workers) == "", f"case {i}"
        outcomes["error" if isinstance(_read(data, True, chunk), tuple) else "tables"] += 1
    assert outcomes["tables"] > 100 and outcomes["error"] > 100, outcomes


def test_scan_rejects_ranges_outside_the_buffer():
    scan = reader.native_scanner()
    with pytest.raises(ValueError):
        scan(b"[]", 0, 3)
    with pytest.raises(ValueError):
        scan(b"[]", 2, 1)
    assert scan(b"[ ]", 1, 2) == (0, [""], b"")


_PARALLEL_NATIVE = r"""
import os, sys
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "integration")]  # support, test_reader
from test_reader import NAME, _tables_equal
from tb_paddle_profile.trace import reader
reader.chunks.CHUNK_BYTES = 4000
reader.parallel.PARALLEL_MIN_BYTES = 1
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    reader.native.USE_NATIVE = False
    pure = reader.read_trace(data, NAME)
    reader.native.USE_NATIVE = True
    trace, _ = reader.decode(data, NAME)
    direct = reader._parallel_tabulate(trace, 0, 3)
    assert direct is not None and _tables_equal(pure, direct) == [], "parallel native differs"
print("parallel native == msgspec")
"""


def test_parallel_native_decode_gives_the_msgspec_tables(tmp_path, shared_traces):
    paths = [str(p) for p in _all_traces(shared_traces)[:3]]
    proc = subprocess.run(
        [sys.executable, "-c", _PARALLEL_NATIVE, str(REPO / "tests"), *paths], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0 and "parallel native == msgspec" in proc.stdout, proc.stderr[-3000:]


def test_switched_off_by_the_environment():
    code = "from tb_paddle_profile.trace import reader; print(reader.native_scanner() is None)"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**__import__("os").environ, "TB_PADDLE_PROFILE_NATIVE": "0"},
    )
    assert proc.stdout.strip() == "True", proc.stderr


@pytest.mark.parametrize("native", [False, True], ids=["msgspec", "native"])
def test_values_out_of_range_give_the_one_line_error(native):
    """A time beyond int64 nanoseconds, infinite or not a number, or a grid beyond int32 is a broken
    trace, not a crash nor a silently wrapped number."""
    cases = [
        (_HOST.replace('"dur": 12.345', '"dur": 1e400'), "Number out of range"),  # msgspec's words
        (_HOST.replace('"dur": 12.345', '"dur": 1e300'), "time out of range"),
        (_HOST.replace('"start_time": "1.000 us"', '"start_time": "1e300 us"'), "time out of range"),
        (_HOST.replace('"start_time": "1.000 us"', '"start_time": "nan us"'), "time out of range"),
        (_KERNEL.replace("[4, 2, 1]", "[4294967296, 1, 1]"), "out of bounds"),
    ]
    for event, reason in cases:
        got = _read(_trace(event), native)
        assert isinstance(got, tuple), f"{reason}: it loaded"
        message = got[1]
        assert message.startswith(NAME + ": ") and reason in message and "\n" not in message, message


def test_special_bytes_at_every_position_of_a_long_name():
    """The scanner looks at 16 bytes at a time where it can: an escape, a quote or a control
    character at any offset of a name (and a name ending at any offset) must still be seen."""
    for length in range(0, 40):
        for special in ('\\"', "\\\\", "\t", "\\n", ""):
            name = "k" * length + special + "x" * (length % 7)
            assert _same_result(_trace(_HOST.replace("matmul", name), _KERNEL.replace("gemm", name))) == "", (
                length,
                special,
            )


def test_bytes_given_in_a_box_are_dropped_once_the_events_are_read(shared_traces):
    """read_trace([data]) takes the bytes out of the list and lets them go before the columns are
    joined (peak memory: the file or the columns, not both); the tables are the same."""
    import weakref

    path = sorted((shared_traces / "cpu-gpt-single").glob("*.paddle_trace.json"))[0]

    class Bytes(bytearray):  # bytes cannot be weakly referenced, not even a subclass; this can
        pass

    data = Bytes(path.read_bytes())
    gone = weakref.ref(data)
    seen = {}
    join = reader.read._concat

    def spy(parts):
        seen["alive at the join"] = gone() is not None
        return join(parts)

    box = [data]
    del data
    expected = reader.read_trace(path.read_bytes(), NAME)
    try:
        reader.read._concat = spy
        tables = reader.read_trace(box, NAME, workers=2)
    finally:
        reader.read._concat = join
    assert box == [] and seen == {"alive at the join": False} and gone() is None
    assert _tables_equal(tables, expected) == []
