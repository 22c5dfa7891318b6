"""What the panels draw is carried by the display model (issue 25: the frontend only draws).

Each derivation the panels once made from the analysis' raw values now lives in the display model, and is
held here to the analysis' own values: a generated DP2 x MP2 x PP2 run with a slow rank (tbp_synth),
parsed, digested and analysed in process, its RunParallel and the RunDistributed the route assembles
from the same digests.
"""
import pytest

from tb_paddle_profile.analysis.crossrank import analyze_run
from tb_paddle_profile.analysis.digest import digest_of
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.present.display.parallel import parallel_display
from tb_paddle_profile.present.render.parallel_text import render
from tb_paddle_profile.v1 import plugin_pb2
from tbp_synth import SynthConfig, generate

SLOW_RANK = 5


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("display_carries") / "synth"
    res = generate(SynthConfig(dp=2, mp=2, pp=2, steps=3, layers=2, micro_batches=2, slow_rank=SLOW_RANK,
                               slow_factor=1.5), str(out))
    digests = [digest_of(summarize_file(p)) for _, p in sorted(res.traces.items())]
    rp = analyze_run(digests, run="synth", span="0")
    rd = plugin_pb2.RunDistributed(run="synth", span="0")
    for (rank, _), d in zip(sorted(res.traces.items()), digests):
        r = rd.ranks.add(worker=f"rank{rank}", rank=rank, state=plugin_pb2.READY, total_time_ns=d.meta.total_time_ns)
        r.distributed.CopyFrom(d.distributed)
        r.steps.extend(d.steps)
    return rp, rd


def _view(display, key="parallel"):
    (v,) = [v for v in display.views if v.key == key]
    return v


def _groups(view, section):
    """Each head of `section` with the parts the model places under it."""
    out = []
    for s in view.sentences:
        if s.section != section:
            continue
        if not s.part:
            out.append((s, []))
        else:
            out[-1][1].append(s)
    return out


def test_findings_and_advice_are_placed_by_the_model(run):
    rp, _ = run
    view = _view(parallel_display(rp))
    assert rp.findings and rp.advice, "the planted slow rank fires no finding or advice"
    findings = _groups(view, "findings")
    assert [h.rule for h, _ in findings] == [f.rule for f in rp.findings]
    for (head, parts), f in zip(findings, rp.findings):
        assert head.key == f"finding.{f.rule}" and all(p.rule == f.rule for p in parts)
        assert [p.part for p in parts if p.part == "excess"] == (["excess"] if f.excess_ns > 0 else [])
        chips = [p for p in parts if p.part == "ranks"]
        assert [[s.rank for s in p.spans if s.is_rank] for p in chips] == ([list(f.ranks)] if f.ranks else [])
        cost = [p for p in parts if p.part == "cost"]
        if f.cost_ns > 0:
            assert [s.value.number for s in cost[0].spans if s.is_value] == [f.cost_ns]
    advice = [(h, parts) for h, parts in _groups(view, "advice") if h.rule]
    assert [h.rule for h, _ in advice] == [a.rule for a in rp.advice]
    for (head, parts), a in zip(advice, rp.advice):
        assert head.title == a.title
        triggers = [p for p in parts if p.part == "trigger"]
        assert [[s.rank for s in p.spans if s.is_rank] for p in triggers] == [
            [t.rank] if t.rank >= 0 else [] for t in a.triggers]
    # the text layout prints the same sections: each finding's tag and text, each advice numbered by its title
    text = render(rp)
    for (head, _), f in zip(findings, rp.findings):
        assert f"[{f.category}: {f.rule}" in text and sentence_text(head)[:60] in text.replace("\n   ", " ")
    for i, a in enumerate(rp.advice, 1):
        assert f"{i}. {a.title}." in text
