"""Fuzzing the reader and the engine: every input gives a Summary or a one-line TraceError.

Structure-aware mutations of real traces (excerpts of the traces in examples/profiler_log and of
a GPU-shaped trace from the project's generator): fields swapped for values of other types, big,
negative, NaN and infinite numbers, fields and events dropped or duplicated, objects and arrays
nested deep (closed or not), then byte-level damage (truncation, flipped or inserted bytes, a byte
order mark) and gzip layers, read by both reader paths (the native scanner and msgspec only).
Whatever the input, the engine must give a Summary or raise a TraceError whose message is one line
starting with the file's name: any other exception is a bug of ours.

Reproducible (derandomize, no example database) and bounded: a fixed number of small examples.
"""

import gzip
import json
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from support.paths import REPO  # noqa: E402
from tb_paddle_profile.trace import reader  # noqa: E402
from tb_paddle_profile.analysis.summarize import summarize_bytes  # noqa: E402
from tb_paddle_profile.core.errors import TraceError  # noqa: E402
from tb_paddle_profile.present.render.text import render  # noqa: E402

NAME = "rank0_time_2026_11_29_00_00_00_000000.paddle_trace.json"
PER_GROUP = 10  # events of each (category, phase) kept in an excerpt


def _excerpt(trace: dict) -> dict:
    """A small trace of the same layout: the first PER_GROUP events of each kind, in file order."""
    seen = {}
    kept = []
    for e in trace["traceEvents"]:
        key = (e.get("cat"), e.get("ph"))
        if seen.get(key, 0) < PER_GROUP:
            seen[key] = seen.get(key, 0) + 1
            kept.append(e)
    return dict(trace, traceEvents=kept)


def _bases():
    paths = sorted((REPO / "examples" / "profiler_log").rglob("*.paddle_trace.json"))
    assert paths, "the sample traces are part of the repository"
    bases = [_excerpt(json.loads(p.read_bytes())) for p in paths[:2]]
    from tbp_synth import SynthConfig, generate

    with tempfile.TemporaryDirectory() as out:
        generate(
            SynthConfig(
                dp=1, mp=2, pp=2, steps=2, layers=2, micro_batches=2, hidden=64, heads=2, seq_len=16, vocab=128
            ),
            out,
            ranks=[0],
        )
        gpu = next(Path(out).glob("*.paddle_trace.json"))
        bases.append(_excerpt(json.loads(gpu.read_bytes())))
    return bases


BASES = _bases()
RAW = "@@raw{}@@"  # a string value replaced by raw bytes after serialization

from tb_paddle_profile.trace import event_types as et  # noqa: E402

# Values put where the trace has others: numbers where it has numbers, strings where it has
# strings (most of the time, so that most inputs reach the analyses), anything anywhere.
NUMBERS = st.one_of(
    st.sampled_from(
        [
            0,
            -1,
            1,
            2,
            7,
            2**31,
            -(2**31) - 1,
            2**62,
            2**63,
            2**64,
            -(2**63) - 1,
            10**30,
            0.5,
            -0.0,
            -0.0004,
            1e-300,
            1e15,
            4.7e15,
            9.3e15,
            -1e15,
            1e300,
            -1e300,
            float("nan"),
            float("inf"),
            float("-inf"),
        ]
    ),
    st.integers(-(10**7), 10**7),
    st.floats(-1e7, 1e7),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
)
CATEGORIES = sorted(et.TYPE_ID) + sorted(et.MEM_TYPE_ID) + ["async", "", "Other"]
STRINGS = st.one_of(
    st.sampled_from(
        [
            "",
            "abc",
            "12(x)",
            "7(Python)",
            "7(C++)",
            " 12",
            "\u00b2",
            "1_0",
            "-0",
            "(7)",
            "1.000 us",
            "-5.000 us",
            "0.000 us",
            "nan us",
            "inf us",
            "1e400 us",
            "1e300 us",
            "1.0 ms",
            "us",
            "1 2 us",
            "Place(gpu:0)",
            "Place(cpu)",
            "Place(gpu_pinned)",
            "X",
            "i",
            "M",
            "s",
            "f",
            "\u0000",
            "[5.000 ms]",
            "matmul[1.0 us]",
            'a"b\\c\td',
            "x" * 3000,
            "ProfileStep#1",
            "nccl_allreduce",
            "c_allreduce_sum",
            "send_v2",
            "recv_v2",
            "ncclKernel_AllReduce",
        ]
    ),
    st.sampled_from(CATEGORIES),
    st.text(max_size=12),
)
HOSTILE = st.one_of(
    NUMBERS,
    STRINGS,
    st.sampled_from(
        [None, True, False, [], {}, [1], [1, 2, 3, 4], [-1, 2**40, 3], ["a"], {"a": 1}, [[1, 2], [3]], {"x": [1, 2]}]
    ),
)
NUMERIC = {
    "pid",
    "tid",
    "ts",
    "dur",
    "id",
    "correlation id",
    "registers per thread",
    "shared memory",
    "blocks per SM",
    "warps per SM",
    "theoretical achieved occupancy %",
    "bytes",
    "increase_bytes",
    "current_allocated",
    "current_reserved",
    "peak_allocated",
    "peak_reserved",
    "sort_index",
}

EVENT_FIELDS = ["name", "ph", "cat", "pid", "tid", "ts", "dur", "args", "id", "bp", "cname"]
ARG_FIELDS = [
    "start_time",
    "end_time",
    "correlation id",
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "blocks per SM",
    "warps per SM",
    "theoretical achieved occupancy %",
    "bytes",
    "place",
    "increase_bytes",
    "current_allocated",
    "current_reserved",
    "peak_allocated",
    "peak_reserved",
    "input_shapes",
    "input_dtypes",
    "name",
    "sort_index",
]
TOP_FIELDS = [
    "schemaVersion",
    "span_index",
    "span_indx",
    "displayTimeUnit",
    "deviceProperties",
    "ExtraInfo",
    "traceEvents",
]


def _nesting(kind: str, depth: int, closed: bool) -> bytes:
    if kind == "object":
        return b'{"a": ' * depth + (b"1" + b"}" * depth if closed else b"")
    return b"[" * depth + (b"]" * depth if closed else b"")


RAW_VALUES = st.one_of(
    st.builds(
        _nesting,
        st.sampled_from(["object", "array"]),
        st.sampled_from([1, 2, 8, 63, 64, 65, 200, 2000, 100_000, 100_000]),
        st.booleans(),
    ),
    st.sampled_from(
        [
            b"NaN",
            b"Infinity",
            b"-Infinity",
            b"1e400",
            b"-1e400",
            b"1" * 400,
            b"0" + b"1" * 30,
            b'"\\u0000"',
            b'"\\ud800"',
            b'"\xff\xfe"',
            b'"a\nb"',
            b"01",
            b"1.",
            b"--1",
            b"tru",
            b'"\\x"',
            b"[1,]",
            b"{,}",
            b'{"a" 1}',
        ]
    ),
)


@st.composite
def mutation(draw):
    what = draw(
        st.sampled_from(
            [
                "event",
                "event",
                "event",
                "args",
                "args",
                "args",
                "retime",
                "retime",
                "retime",
                "top",
                "device",
                "extra",
                "drop",
                "drop",
                "dup",
                "swap",
                "raw",
                "raw",
                "raw",
            ]
        )
    )
    field = draw(st.sampled_from(EVENT_FIELDS))
    arg = draw(st.sampled_from(ARG_FIELDS))
    key = arg if what == "args" else field
    typed = draw(st.integers(0, 3)) > 0  # mostly a value of the field's own kind
    value = draw((NUMBERS if key in NUMERIC else STRINGS) if typed and what in ("event", "args") else HOSTILE)
    return (
        what,
        draw(st.integers(0, 10**6)),
        field,
        arg,
        draw(st.sampled_from(TOP_FIELDS)),
        value,
        draw(st.integers(0, 5)) == 0,
        draw(RAW_VALUES),
        draw(st.floats(-2, 2)),
    )


def _apply(trace: dict, m, raws: list) -> None:
    what, n, field, arg, top, value, delete, raw, shift = m
    events = trace["traceEvents"] if isinstance(trace.get("traceEvents"), list) else None
    if what in ("event", "args", "retime", "drop", "dup", "swap", "raw") and not events:
        what = "top"
    if what == "retime":  # an event's times moved against another's: overlaps, equal times, zero length
        e, other = events[n % len(events)], events[(n // 13) % len(events)]
        if not (isinstance(e, dict) and isinstance(other, dict)):
            return
        ts, dur = other.get("ts"), other.get("dur")
        if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            return
        e["ts"] = ts + shift * dur
        e["dur"] = max(0.0, abs(shift) * dur) if n % 3 else 0.0
        args = e.get("args")
        start = other.get("args", {}).get("start_time") if isinstance(other.get("args"), dict) else None
        if isinstance(args, dict) and isinstance(start, str) and "start_time" in args:
            try:
                args["start_time"] = f"{float(start.split()[0]) + shift * dur:.3f} us"
            except ValueError:
                pass
        return
    if what == "event":
        e = events[n % len(events)]
        if isinstance(e, dict):
            if delete:
                e.pop(field, None)
            else:
                e[field] = value
    elif what == "args":
        e = events[n % len(events)]
        if isinstance(e, dict):
            if not isinstance(e.get("args"), dict):
                e["args"] = {}
            if delete:
                e["args"].pop(arg, None)
            else:
                e["args"][arg] = value
    elif what == "top":
        if delete:
            trace.pop(top, None)
        else:
            trace[top] = value
    elif what == "device":
        props = trace.setdefault("deviceProperties", [{"id": 0, "name": "GPU"}])
        if isinstance(props, list) and props and isinstance(props[0], dict):
            props[n % len(props)][
                ["id", "totalGlobalMem", "computeMajor", "smCount", "warpSize", "sharedMemPerBlock", "name"][n % 7]
            ] = value
    elif what == "extra":
        info = trace.setdefault("ExtraInfo", {})
        if isinstance(info, dict):
            info[str(value) if delete else str(n)] = value if not delete else "x"
    elif what == "drop":
        del events[n % len(events)]
    elif what == "dup":
        i = n % len(events)
        events.insert(i, json.loads(json.dumps(events[i])))
    elif what == "swap":
        i, j = n % len(events), (n // 7) % len(events)
        events[i], events[j] = events[j], events[i]
    elif what == "raw":  # raw bytes as a field's value (in an event, its args, or as an event)
        marker = RAW.format(len(raws))
        raws.append(raw)
        e = events[n % len(events)]
        if delete or not isinstance(e, dict):
            events.insert(n % len(events), marker)
        elif isinstance(e.get("args"), dict) and n % 2:
            e["args"][arg] = marker
        else:
            e[field] = marker


def _serialize(trace: dict, raws: list) -> bytes:
    data = json.dumps(trace, indent=1, allow_nan=True, ensure_ascii=len(trace) % 2 == 0).encode(
        "utf-8", "surrogatepass"
    )
    for i, raw in enumerate(raws):
        data = data.replace(json.dumps(RAW.format(i)).encode(), raw)
    return data


@st.composite
def byte_damage(draw):
    return (
        draw(st.sampled_from(["truncate", "flip", "insert", "delete", "bom"])),
        draw(st.floats(0, 1)),
        draw(st.integers(0, 255)),
        draw(st.integers(1, 64)),
    )


def _damage(data: bytes, d) -> bytes:
    kind, where, byte, length = d
    pos = int(where * len(data))
    if kind == "truncate":
        return data[:pos]
    if kind == "flip":
        return data[:pos] + bytes([byte]) + data[pos + 1 :]
    if kind == "insert":
        return data[:pos] + bytes([byte]) * length + data[pos:]
    if kind == "delete":
        return data[:pos] + data[pos + length :]
    if kind == "bom":
        return b"\xef\xbb\xbf" + data
    return data


def _compress(data: bytes, how: str, where: float) -> bytes:
    if how == "gzip":
        return gzip.compress(data, 1)
    if how == "gzip2":
        return gzip.compress(gzip.compress(data, 1), 1)
    if how == "gzip3":
        return gzip.compress(gzip.compress(gzip.compress(data, 1), 1), 1)
    if how == "gzip-truncated":
        packed = gzip.compress(data, 1)
        return packed[: max(2, int(where * len(packed)))]
    if how == "gzip-garbage":
        return gzip.compress(data, 1) + b"garbage"
    if how == "gzip-members":
        half = len(data) // 2
        return gzip.compress(data[:half], 1) + gzip.compress(data[half:], 1) + b"\0" * 8
    return data


def _check(data: bytes) -> str:
    """'summary' or 'error', after checking the outcome on both reader paths."""
    outcomes = []
    for native in (True, False):
        saved = reader.native.USE_NATIVE
        reader.native.USE_NATIVE = native
        try:
            s = summarize_bytes(data, "some/dir/" + NAME)
            render(s, time_unit="us")
            s.SerializeToString()
            outcomes.append("summary")
        except TraceError as err:
            message = str(err)
            assert message.startswith(NAME + ": ") and "\n" not in message, message
            outcomes.append("error")
        finally:
            reader.native.USE_NATIVE = saved
    assert outcomes[0] == outcomes[1], f"native: {outcomes[0]}, msgspec only: {outcomes[1]}"
    return outcomes[0]


FUZZ = dict(
    deadline=20_000,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
COMPRESSIONS = ["gzip", "gzip2", "gzip3", "gzip-truncated", "gzip-garbage", "gzip-members"]


def _mutated(base: int, mutations) -> bytes:
    trace = json.loads(json.dumps(BASES[base]))
    raws: list = []
    for m in mutations:
        _apply(trace, m, raws)
    return _serialize(trace, raws)


@settings(max_examples=600, **FUZZ)
@given(base=st.integers(0, len(BASES) - 1), mutations=st.lists(mutation(), min_size=1, max_size=4))
def test_mutated_traces_give_a_summary_or_a_one_line_error(base, mutations):
    _check(_mutated(base, mutations))


@settings(max_examples=60, **FUZZ)
@given(
    base=st.integers(0, len(BASES) - 1),
    n=st.integers(0, 10**6),
    where=st.sampled_from(["event", "args", "events", "head"]),
    kind=st.sampled_from(["object", "array"]),
    depth=st.sampled_from([65, 2000, 100_000]),
    closed=st.booleans(),
    compression=st.sampled_from([None, "gzip"]),
)
def test_deep_nesting_anywhere_gives_a_summary_or_a_one_line_error(base, n, where, kind, depth, closed, compression):
    """Objects and arrays inside each other, closed or not, in an event, in its args, among the
    events or in the head: never a RecursionError."""
    field = "deep" if n % 2 else EVENT_FIELDS[n % len(EVENT_FIELDS)]
    m = {
        "event": ("raw", n, field, "x", "x", None, False, None, 0.0),
        "args": ("raw", 2 * n + 1, field, ARG_FIELDS[n % len(ARG_FIELDS)], "x", None, False, None, 0.0),
        "events": ("raw", n, field, "x", "x", None, True, None, 0.0),
    }.get(where)
    raw = _nesting(kind, depth, closed)
    if m is None:  # a key of the document's head
        trace = json.loads(json.dumps(BASES[base]))
        trace = {"deep": RAW.format(0), **trace} if n % 2 else {**trace, "deep": RAW.format(0)}
        data = _serialize(trace, [raw])
    else:
        data = _mutated(base, [m[:7] + (raw,) + m[8:]])
    _check(_compress(data, compression, 0.5) if compression else data)


@settings(max_examples=200, **FUZZ)
@given(
    base=st.integers(0, len(BASES) - 1),
    mutations=st.lists(mutation(), max_size=1),
    damage=st.lists(byte_damage(), max_size=2),
    compression=st.sampled_from([None] + COMPRESSIONS),
    where=st.floats(0, 1),
)
def test_damaged_bytes_and_gzip_layers_give_a_summary_or_a_one_line_error(base, mutations, damage, compression, where):
    data = _mutated(base, mutations)
    for d in damage:
        data = _damage(data, d)
    _check(_compress(data, compression, where) if compression else data)


def test_the_bases_load_and_mutations_reach_both_outcomes():
    """The fuzzing starts from traces that load (so that mutations test more than the parse)."""
    for trace in BASES:
        assert _check(_serialize(json.loads(json.dumps(trace)), [])) == "summary"
    broken = json.loads(json.dumps(BASES[0]))
    broken["traceEvents"][3]["dur"] = "12"
    assert _check(_serialize(broken, [])) == "error"
