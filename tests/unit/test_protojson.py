"""core/protojson.py against protobuf's own proto3 JSON encoder (json_format.MessageToJson with
always_print_fields_with_no_presence): the same JSON values for every kind of message we send — the
Summary and digest of real Paddle traces and a GPU-shaped run, the cross-rank analysis with its matched
instances, the what-if answer, the display model — and for the edge values of the mapping (64-bit
integers, NaN and the infinities, enums unknown to the schema, unset messages and optionals)."""

import json
import math

import pytest
from google.protobuf import json_format

from support.paths import REPO
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.core.protojson import to_json, to_json_bytes, to_value
from tb_paddle_profile.pipeline import batch
from tb_paddle_profile.present.display.summary import summary_display
from tb_paddle_profile.present.display.whatif import whatif_answer
from tb_paddle_profile.v1 import display_pb2, plugin_pb2, summary_pb2, timeline_pb2, whatif_pb2

TRACES = REPO / "tests" / "data" / "traces"


def _theirs(message) -> object:
    return json.loads(json_format.MessageToJson(message, indent=2, always_print_fields_with_no_presence=True))


def _same(message) -> None:
    ours = json.loads(to_json(message))
    assert ours == _theirs(message)
    assert json.loads(to_json_bytes(message, indent=None)) == ours
    assert to_value(message) == ours or json.loads(json.dumps(to_value(message))) == ours


def _summaries():
    out = []
    for folder in ("cpu-gpt-single", "cpu-gpt-2rank-gloo", "gpu-synthetic-2rank"):
        loaded = batch.load_summaries(str(TRACES / folder), batch.LoadOptions(cache=False, jobs=1))
        assert loaded and all(data is not None for _, data, _, _ in loaded), [e for _, _, e, _ in loaded]
        out.extend(summary_pb2.Summary.FromString(data) for _, data, _, _ in loaded)
    return out


@pytest.fixture(scope="module")
def summaries():
    return _summaries()


def test_summaries_digests_and_their_display(summaries):
    for s in summaries:
        _same(s)
        _same(digest_of(s))
        _same(summary_display(s))


def test_the_cross_rank_analysis_with_its_matched_instances_and_the_whatif(tmp_path):
    run = batch.load_run(str(TRACES / "gpu-synthetic-2rank"), None, batch.LoadOptions(cache=False, jobs=1))
    assert run.result is not None
    columns = run.json_value()  # `parallel --format json`: the matched instances from their columns
    parallel = run.with_matched()
    assert len(parallel.matched) > 0
    _same(parallel)
    assert json.loads(json.dumps(columns)) == _theirs(parallel)
    assert list(columns) == list(to_value(parallel))  # the keys in the same order
    digests = batch.load_run(
        str(TRACES / "gpu-synthetic-2rank"), None, batch.LoadOptions(cache=False, jobs=1), analyze=False
    ).digests
    _same(whatif_answer(digests, "r", "0"))


def test_edge_values_of_the_mapping():
    m = summary_pb2.Summary()
    _same(m)  # every field without presence written with its default
    w = whatif_pb2.WhatIf(new_step_ns=2**62 + 1, saving_ns=-(2**63), saving_fraction=float("nan"))
    _same(w)
    assert json.loads(to_json(w))["newStepNs"] == str(2**62 + 1)
    w2 = whatif_pb2.WhatIf(saving_fraction=-math.inf, kind=77)  # an enum number the schema does not name
    _same(w2)
    _same(whatif_pb2.WhatIf(saving_fraction=math.inf))
    assert json.loads(to_json(w2))["kind"] == 77
    d = display_pb2.Display()
    d.views.add(key="k").sentences.add()
    _same(d)
    p = plugin_pb2.RunParallel()
    _same(p)
    for name in timeline_pb2.DESCRIPTOR.message_types_by_name:
        _same(getattr(timeline_pb2, name)())


def test_del_and_c1_in_strings_are_escaped_to_the_same_values():
    """terminal.visible_json, what the CLI prints: DEL and C1 in a string written as \\u escapes (raw, the
    CLI's SafeStream turned them into \\x.., invalid JSON), C0 escaped by the encoder, µ and other Latin-1
    letters (also \\xc2 in UTF-8) kept as they are; the same JSON values as protobuf's encoder."""
    import re

    from tb_paddle_profile.core import terminal

    names = ["a\x7fb", "\x85line", "csi\x9b[2J", "µs ÿ\xa0", "esc\x1b\x00", "\u0100\x9f", "é" * 3 + "\x80"]
    d = display_pb2.Display()
    for n in names:
        d.views.add(key=n, title="µ" + n)
    data = terminal.visible_json(to_json_bytes(d))
    text = data.decode("utf-8")
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", text)
    assert "µs ÿ\xa0" in text
    assert json.loads(text) == _theirs(d)
    plain = to_json_bytes(display_pb2.Display(views=[display_pb2.View(key="µs ÿ")]))
    assert terminal.visible_json(plain) is plain  # nothing to escape: the same bytes
