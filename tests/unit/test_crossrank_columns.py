"""The cross-rank analysis' columnar parts against the protobuf library: the loader's reading of the
digests' packed columns straight from their wire bytes, the matched instances kept as columns
(MatchedTable) and encoded only for what is asked (a page, or all of them for analyze_run), and
RunAnalyses storing both parts of an analysis as one blob that a restarted process pages through.

The references are the protobuf library's own parse of the same bytes and the matched instances the
analysis returns as messages (the generator's truth checks those in test_crossrank_truth.py)."""

import numpy as np
import pytest

from tb_paddle_profile.pipeline import runs
from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.crossrank import load
from tb_paddle_profile.analysis.crossrank.build import analyze
from tb_paddle_profile.analysis.crossrank.encode import MatchedTable
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.store.cache import SummaryCache
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.v1 import plugin_pb2
from tb_paddle_profile.v1 import summary_pb2 as pb
from tbp_synth import SynthConfig, generate

FIELDS = (
    "kind",
    "name",
    "op",
    "step",
    "ordinal",
    "start_ns",
    "duration_ns",
    "device_id",
    "stream",
    "bytes",
    "direction",
)


@pytest.fixture(scope="module")
def run8(tmp_path_factory):
    """DP2 x MP2 x PP2 on two hosts whose clocks differ by 3 ms (the generator's traces, parsed)."""
    out = str(tmp_path_factory.mktemp("columns"))
    res = generate(SynthConfig(dp=2, mp=2, pp=2, steps=2, names="default", clock_skew_us=3000), out)
    return [digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())]


def _instances(values):
    c = pb.CollectiveInstances()
    for f, v in values.items():
        getattr(c, f).extend(v)
    return c


@pytest.fixture(params=["native", "numpy"])
def wire(request, monkeypatch):
    """Either wire reader: the compiled one (trace/_scan.c ``packed``) or numpy's (TB_PADDLE_PROFILE_NATIVE=0)."""
    if request.param == "native":
        assert load.native_packed() is not None, "the compiled scanner is not built"
    else:
        monkeypatch.setenv("TB_PADDLE_PROFILE_NATIVE", "0")
        assert load.native_packed() is None
    return request.param


def test_the_wire_reader_gives_what_protobuf_parses(wire):
    big = [0, 1, 127, 128, 16_383, 16_384, 2**35, 2**62, -1, -(2**62), -(2**63)]
    msgs = [
        _instances(
            {
                "kind": [1, 7, 7],
                "name": [0, 300, 2**31],
                "op": [2, 2, 0],
                "step": [-1, 0, 2**40],
                "ordinal": [0, 1, 2],
                "start_ns": big[:3],
                "duration_ns": [5, 0, 2**33],
                "device_id": [-1, 3, 0],
                "stream": [-1, -2, 2**20],
                "bytes": [0, 2**50, 1],
                "direction": [0, 1, 2],
            }
        ),
        pb.CollectiveInstances(),  # a rank without collectives
        _instances(
            {
                "kind": [2] * len(big),
                "name": [1] * len(big),
                "step": [3] * len(big),
                "ordinal": list(range(len(big))),
                "start_ns": big,
                "duration_ns": [1] * len(big),
            }
        ),
        _instances({"kind": [4], "start_ns": [9], "duration_ns": [1], "stream": [1, 2]}),
    ]  # lengths disagree
    got = load._packed(msgs)
    for f in FIELDS:
        values, counts = got[f]
        expected = [list(getattr(m, f)) for m in msgs]
        assert counts.tolist() == [len(e) for e in expected], f
        assert values.tolist() == [x for e in expected for x in e], f
    # anything else in the bytes (a field this reader does not know): the protobuf API reads them
    extra = pb.CollectiveInstances.FromString(msgs[0].SerializeToString() + b"\xa2\x06\x01\x07")  # field 100
    assert load._packed([extra]) is None


def test_the_program_columns_read_from_the_wire_are_what_protobuf_parses(run8, wire):
    """The replay graph's ParallelProgram columns (fields 1-22, two-byte tags from 16 on, zigzag and
    plain int64 with negative values) through load.packed_columns, against the protobuf API, on the
    generator's programs and on hand-made ones."""
    from tb_paddle_profile.analysis.crossrank.replay import PROGRAM_FIELDS

    progs = [d.parallel.program for d in run8]
    odd = pb.ParallelProgram(
        kind=[1, 4],
        step=[-1, 2**40],
        stream=[-2, 7],
        start_ns=[-(2**63), 2**62],
        duration_ns=[0, 1],
        collective=[-1, 3],
        name=[0, 2**31],
        wait_pred=[-5, 0],
        wait_lag_ns=[-1, 9],
    )
    msgs = progs + [pb.ParallelProgram(), odd]
    got = load.packed_columns(msgs, PROGRAM_FIELDS)
    assert sum(len(m.kind) for m in progs) > 1000
    for _, (name, _) in PROGRAM_FIELDS.items():
        values, counts = got[name]
        expected = [list(getattr(m, name)) for m in msgs]
        assert counts.tolist() == [len(e) for e in expected], name
        assert values.tolist() == [x for e in expected for x in e], name
    extra = pb.ParallelProgram.FromString(odd.SerializeToString() + b"\xa2\x06\x01\x07")  # field 100
    assert load.packed_columns([extra], PROGRAM_FIELDS) is None


def test_damaged_wire_bytes_are_refused_or_read_as_protobuf_reads_them(run8):
    """The compiled reader on bytes it must refuse (a varint or a length running past its message, a
    field of another wire type, an unknown field, a varint of 11 bytes) and on a thousand random
    corruptions of real programs: None, or exactly what the protobuf library parses from the same
    bytes (field by field), never a crash or a read past the buffer."""
    from tb_paddle_profile.analysis.crossrank.replay import PROGRAM_FIELDS

    packed = load.native_packed()
    assert packed is not None
    known = sum(1 << f for f in PROGRAM_FIELDS)
    zigzag = sum(1 << f for f, (_, z) in PROGRAM_FIELDS.items() if z)

    def read(buf, lens):
        return packed(buf, np.asarray(lens, dtype=np.int64), known, zigzag)

    good = pb.ParallelProgram(kind=[1, 300], step=[-1, 2]).SerializeToString()
    assert read(good, [len(good)]) is not None
    for bad in (
        good[:-1],  # the last varint cut
        good[:3],  # a length past the message
        b"\x08\x01",  # field 1 as a plain varint (wire type 0)
        b"\xa2\x06\x01\x07",  # field 100
        b"\x0a\x0b" + b"\xff" * 10 + b"\x01",  # a varint of 11 bytes
        b"\x0a",
    ):  # a tag without its length
        assert read(bad, [len(bad)]) is None, bad
    assert read(good, [len(good) + 1]) is None  # lengths past the buffer
    assert read(good + good, [len(good)]) is None  # bytes left after the last message
    assert read(good, [-1, len(good) + 1]) is None
    rng = np.random.default_rng(7)
    progs = [d.parallel.program.SerializeToString() for d in run8]
    checked = 0
    for _ in range(1000):
        b = bytearray(progs[int(rng.integers(len(progs)))])
        for _ in range(int(rng.integers(1, 4))):
            b[int(rng.integers(len(b)))] = int(rng.integers(256))
        if rng.random() < 0.2:
            b = b[: int(rng.integers(len(b)))]
        got = read(bytes(b), [len(b)])
        if got is None:
            continue
        msg = pb.ParallelProgram.FromString(bytes(b))  # what was read must be what protobuf parses
        for f, (name, _) in PROGRAM_FIELDS.items():
            assert np.frombuffer(got[f][0], dtype=np.int64).tolist() == list(getattr(msg, name)), name
        checked += 1
    assert checked > 10


def test_loaded_columns_are_the_same_through_either_reader(run8, monkeypatch):
    digests = [pb.RankDigest.FromString(d.SerializeToString()) for d in run8]
    del digests[3].parallel.collectives.op[:]  # a rank whose digest lacks a column: zeros
    del digests[5].parallel.collectives.stream[:]  # ... and -1 for the stream
    fast, _ = load.load_ranks(digests)
    monkeypatch.setattr(load, "_packed", lambda msgs: None)
    slow, _ = load.load_ranks(digests)
    assert [r.rank for r in fast] == [r.rank for r in slow]
    for a, b in zip(fast, slow):
        for col in ("kind", "name", "op", "step", "ordinal", "start", "end", "direction", "nbytes", "stream"):
            assert np.array_equal(getattr(a, col), getattr(b, col)), (a.rank, col)
    assert not fast[3].op.any() and (fast[5].stream == -1).all() and fast[0].op.any()
    for r in fast:  # each rank's columns are its digest's, as protobuf parsed them
        c = r.digest.parallel.collectives
        assert r.kind.tolist() == list(c.kind) and r.step.tolist() == list(c.step)
        assert (r.end - r.start).tolist() == list(c.duration_ns)
        assert (r.start - r.digest.meta.origin_unix_ns).tolist() == list(c.start_ns)


def _reference_page(rp, rank, step, offset, limit):
    chosen = [
        m
        for m in rp.matched
        if (step is None or m.step == step) and (rank is None or any(x.rank == rank for x in m.members))
    ]
    return len(chosen), chosen[offset : offset + limit]


def test_matched_instances_are_columns_encoded_when_asked(run8):
    whole = analyze_run(run8, "r", "0")
    summary, table = analyze(run8, "r", "0")
    assert len(whole.matched) == whole.matched_total == summary.matched_total == table.n > 0
    assert not summary.matched
    # all of them, encoded: exactly the analysis with its matched instances
    summary.MergeFromString(table.encode())
    assert summary == whole
    # the stored bytes give the same table; the table of the messages gives the same bytes
    again = MatchedTable.from_bytes(table.to_bytes())
    assert again.encode() == table.encode() == MatchedTable.from_message(whole.matched).encode()
    ranks = sorted({x.rank for m in whole.matched for x in m.members})
    steps = sorted({m.step for m in whole.matched})
    for rank, step, offset, limit in [
        (None, None, 0, 1000),
        (None, None, 7, 5),
        (ranks[-1], None, 0, 3),
        (ranks[1], steps[-1], 2, 100),
        (None, steps[0], 0, 1),
        (ranks[0], steps[0], 10_000, 10),
        (99, None, 0, 10),
    ]:
        page = runs.matched_page(again, rank, step, offset, limit, run="r", span="0", analysis_key="k")
        total, expected = _reference_page(whole, rank, step, offset, limit)
        assert page.total == total and list(page.matched) == expected, (rank, step, offset, limit)
        assert (page.run, page.span, page.analysis_key, page.offset) == ("r", "0", "k", offset)
    # a RunParallel holding its instances pages the same
    page = runs.matched_page(whole, ranks[2], None, 1, 4)
    assert list(page.matched) == _reference_page(whole, ranks[2], None, 1, 4)[1] and page.run == "r"


def test_an_analysis_is_one_blob_computed_once_and_paged_after_a_restart(run8, tmp_path):
    cache = SummaryCache(tmp_path / "c")
    calls = []

    def compute():
        calls.append(1)
        return runs.analyze_split(run8, "r", "0")

    first = runs.RunAnalyses(cache)
    data = first.get("ab12", compute)
    assert first.matched("ab12", compute) and len(calls) == 1 and first.computed == 1
    stored = list((tmp_path / "c").glob("analysis-v*/*/*.ra"))
    assert [p.stem for p in stored] == ["ab12"]
    rp = plugin_pb2.RunParallel.FromString(data)
    whole = analyze_run(run8, "r", "0")
    assert rp.analysis_key == "ab12" and not rp.matched and rp.matched_total == len(whole.matched)
    assert runs.summary_first(rp).matched_total == rp.matched_total  # nothing to strip: the total stays

    restarted = runs.RunAnalyses(cache)
    table = restarted.matched("ab12", lambda: pytest.fail("read back, not computed"))
    rank = whole.matched[0].members[0].rank
    page = runs.matched_page(table, rank, None, 0, 1000)
    assert list(page.matched) == _reference_page(whole, rank, None, 0, 1000)[1]
    assert restarted.get("ab12", lambda: pytest.fail("read back")) == data and restarted.computed == 0

    # a blob of the earlier layout (one RunParallel holding its instances) is no analysis: computed again
    cache.put_analysis("cd34", whole.SerializeToString())
    cache.put_analysis("cd35", runs.pack(rp.SerializeToString(), b"PK\x03\x04 an npz, not a table"))
    other = runs.RunAnalyses(cache)
    assert other.peek("cd34") is None and other.peek("cd35") is None
    got = plugin_pb2.RunParallel.FromString(other.get("cd34", compute))
    assert len(calls) == 2 and got.matched_total == len(whole.matched) and not got.matched
    # a whole RunParallel from compute() is split the same way
    split = runs.RunAnalyses(None)
    assert plugin_pb2.RunParallel.FromString(split.get("ef", lambda: analyze_run(run8, "r", "0"))).ranks == rp.ranks
    assert (
        MatchedTable.from_bytes(split.matched("ef", pytest.fail)).encode()
        == MatchedTable.from_message(whole.matched).encode()
    )


def test_the_cli_json_holds_every_matched_instance_fresh_and_from_the_cache(tmp_path):
    """`parallel --format json` on Paddle's real 2-rank example: its matched instances are the
    analysis's own (analyze_run over the same traces), computed or read back from the cache."""
    import contextlib
    import io
    import json
    from pathlib import Path

    from google.protobuf import json_format

    from tb_paddle_profile.cli.commands import main

    example = Path(__file__).resolve().parents[2] / "examples" / "profiler_log" / "gpt-2rank"
    expected = analyze_run([summarize_file(str(p)) for p in sorted(example.glob("*.paddle_trace.json"))])
    assert len(expected.matched) == expected.matched_total > 0
    outs = []
    for _ in range(2):  # the first computes and stores; the second reads the analysis back
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert (
                main(["parallel", str(example), "--jobs", "1", "--cache-dir", str(tmp_path / "c"), "--format", "json"])
                == 0
            )
        outs.append(json_format.Parse(buf.getvalue(), plugin_pb2.RunParallel(), ignore_unknown_fields=True))
    assert json.loads(json_format.MessageToJson(outs[0])) == json.loads(json_format.MessageToJson(outs[1]))
    assert list(outs[1].matched) == list(expected.matched) and outs[1].matched_total == expected.matched_total


def test_an_analysis_in_a_cache_at_a_url_is_read_back_whole(run8):
    """The same blob through an fsspec cache (cache_store.UrlSummaryCache, here fsspec's memory://)."""
    from tb_paddle_profile.store.cache_store import UrlSummaryCache

    cache = UrlSummaryCache("memory://tbpp-columns-test/cache")
    first = runs.RunAnalyses(cache)
    data = first.get("0f9e", lambda: runs.analyze_split(run8, "r", "0"))
    again = runs.RunAnalyses(UrlSummaryCache("memory://tbpp-columns-test/cache"))
    assert again.get("0f9e", lambda: pytest.fail("read back")) == data
    whole = analyze_run(run8, "r", "0")
    page = runs.matched_page(again.matched("0f9e", pytest.fail), None, None, 0, 1000)
    assert page.total == len(whole.matched) and list(page.matched) == list(whole.matched)[:1000]
