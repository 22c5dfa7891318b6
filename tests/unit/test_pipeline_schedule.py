"""The pipeline schedule reconstructed across ranks (analysis/phases.py, crossrank/schedule.py) against the
generator's planted schedule (tbp_synth.truth: Truth.schedule) and Paddle's own printed Model Summary."""

import re
from pathlib import Path

import numpy as np
import pytest

from tb_paddle_profile.analysis.crossrank.replay import prepare
from tb_paddle_profile.analysis.crossrank.schedule import PIPELINES_DRAWN, build_schedule, expected
from tb_paddle_profile.present.display.cells import sentence_text
from tb_paddle_profile.present.display.schedule import schedule_view
from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.v1 import schedule_pb2 as spb
from tbp_synth.generator import SynthConfig, generate, pipeline_order
from tbp_synth.truth import load_truth

KIND = {"1f1b": spb.SCHEDULE_KIND_1F1B, "gpipe": spb.SCHEDULE_KIND_GPIPE, "interleaved": spb.SCHEDULE_KIND_INTERLEAVED}
SMALL = dict(steps=2, hidden=1024, heads=8, seq_len=512, vocab=512)


def _run(root: Path, name: str, **cfg):
    out = root / name
    generate(SynthConfig(**{**SMALL, **cfg}), str(out))
    prep = prepare([summarize_file(str(f)) for f in sorted(out.glob("*.paddle_trace.json"))])
    return build_schedule(prep.ranks, prep.topo, prep.flat), load_truth(str(out)), prep


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("sched")


def _key(slot):
    return ("FB"[slot.phase - 1], slot.micro_batch, slot.chunk)


CASES = [
    dict(schedule="1f1b", pp=2, micro_batches=3, layers=2, dp=1, mp=1),
    dict(schedule="1f1b", pp=4, micro_batches=6, layers=4, dp=1, mp=1),
    # replicas, tensor-parallel partners, hosts with skewed clocks and Paddle's default worker names
    dict(
        schedule="1f1b",
        pp=2,
        micro_batches=4,
        layers=2,
        dp=2,
        mp=2,
        gpus_per_node=2,
        clock_skew_us=400,
        names="default",
    ),
    dict(schedule="gpipe", pp=2, micro_batches=3, layers=2, dp=1, mp=1),
    dict(schedule="gpipe", pp=4, micro_batches=5, layers=4, dp=1, mp=1),
    dict(schedule="interleaved", virtual_stages=2, pp=2, micro_batches=4, layers=4, dp=1, mp=1),
    dict(schedule="interleaved", virtual_stages=2, pp=4, micro_batches=8, layers=8, dp=1, mp=1),
    dict(schedule="interleaved", virtual_stages=3, pp=2, micro_batches=2, layers=6, dp=1, mp=1),
]


@pytest.mark.parametrize(
    "cfg",
    CASES,
    ids=lambda c: (
        f"{c['schedule']}-pp{c['pp']}-m{c['micro_batches']}"
        + (f"-v{c.get('virtual_stages')}" if c.get("virtual_stages") else "")
        + (f"-dp{c['dp']}mp{c['mp']}" if c["dp"] * c["mp"] > 1 else "")
    ),
)
def test_schedule_equals_the_generators(root, cfg):
    name = "-".join(f"{k}{v}" for k, v in cfg.items())
    s, t, prep = _run(root, name, **cfg)
    pp, m, v = cfg["pp"], cfg["micro_batches"], cfg.get("virtual_stages", 1)
    assert t.schedule_name == cfg["schedule"]
    assert s.kind == KIND[cfg["schedule"]], s.why
    assert (s.stages, s.micro_batches, s.chunks) == (pp, m, v)
    assert s.pipelines_total == cfg["dp"] * cfg["mp"] == len(s.pipelines)
    assert s.identity.startswith("send/recv pairing")
    assert list(s.steps) == list(t.steps)
    # every rank of every pipeline, every step: the truth's slots in the truth's order
    seen = set()
    diffs = []
    for p in s.pipelines:
        assert p.matches_schedule
        assert [t.ranks[r]["pp"] for r in p.ranks] == list(range(pp))
        for st in p.stage_steps:
            truth = t.schedule(st.rank, st.step)
            assert [_key(x) for x in st.slots] == [(x["phase"], x["micro_batch"], x["chunk"]) for x in truth]
            assert t.ranks[st.rank]["pp"] == st.stage
            for x, y in zip(st.slots, truth):
                assert abs((x.end_unix_ns - x.start_unix_ns) - (y["device_end_ns"] - y["device_start_ns"])) < 1000
                diffs.append(x.start_unix_ns - y["device_start_ns"])
            seen.add(st.rank)
    assert seen == {r["rank"] for r in t.ranks}
    # one clock for all: the slots' corrected times and the truth's global ones differ by one constant
    assert max(diffs) - min(diffs) < 1000
    # the generator's own order function and ours agree (the truth above is what the traces ran)
    for stage in range(pp):
        gen = [("FB"[a], b, c) for a, b, c in pipeline_order(cfg["schedule"], pp, stage, m, v)]
        ours = [("FB"[a - 1], b, c) for a, b, c in expected(KIND[cfg["schedule"]], pp, stage, m, v)]
        assert ours == gen


def _theory(t, pp):
    """From the truth: (tf, tb, x) = the mean forward slot, backward slot and pipeline send/recv transfer."""
    f, b = [], []
    for r in t.ranks:
        for step in t.steps:
            for x in t.schedule(r["rank"], step):
                (f if x["phase"] == "F" else b).append(x["device_end_ns"] - x["device_start_ns"])
    c = t.columns
    pp_axis = list(c["axis_names"]).index("pp")
    x = c["inst_transfer_ns"][c["inst_axis"] == pp_axis]
    return np.mean(f), np.mean(b), np.mean(x)


@pytest.mark.parametrize("pp,m,v", [(2, 4, 1), (4, 6, 1), (4, 8, 2)])
def test_balanced_run_idles_the_textbook_bubble(root, pp, m, v):
    # GPU-bound sizes (small ones leave the first stage launch-bound), a vocabulary too small for the
    # last stage's head to weigh: equal layers make equal stages
    cfg = dict(
        pp=pp,
        micro_batches=m,
        layers=pp * v * 2,
        dp=1,
        mp=1,
        hidden=4096,
        heads=32,
        seq_len=2048,
        schedule="interleaved" if v > 1 else "1f1b",
        virtual_stages=v,
    )
    s, t, _ = _run(root, f"balanced-{pp}-{m}-{v}", **cfg)
    tf, tb, x = _theory(t, pp)
    # the textbook bubble, (pp - 1)(tf + tb) (slots of one chunk when interleaved: the textbook's / V)
    assert s.theory_fill_drain_ns == pytest.approx((pp - 1) * (tf + tb), rel=0.01)
    for st in s.stage_totals:
        # each stage of a balanced pipeline idles that per step, plus a transfer each way per stage it
        # waits across: all of it fill/drain ...
        assert st.fill_drain_ns == pytest.approx((pp - 1) * (tf + tb + 2 * x), rel=0.03)
        # ... and little waiting (receives the host posted late, its gaps between slots: more of them with
        # the interleaved schedule's V times as many slots)
        assert st.wait_ns < (0.15 if v > 1 else 0.08) * st.fill_drain_ns
        assert (
            st.span_ns == st.slots_ns + st.fill_drain_ns + st.wait_ns
            or abs(st.span_ns - st.slots_ns - st.fill_drain_ns - st.wait_ns) <= 2
        )
    for p in s.pipelines:
        for st in p.stage_steps:
            idle = sum(b.duration_ns for b in st.bubbles)
            assert idle == st.fill_drain_ns + st.wait_ns == st.span_ns - st.slots_ns
            assert {b.kind for b in st.bubbles} <= {spb.BUBBLE_KIND_FILL_DRAIN, spb.BUBBLE_KIND_WAIT}
            assert all(st.start_unix_ns <= b.start_unix_ns < b.end_unix_ns <= st.end_unix_ns for b in st.bubbles)


def test_imbalanced_stages_wait_on_the_fast_stage(root):
    s, t, _ = _run(root, "imbalanced", pp=2, micro_batches=4, stage_layers=(4, 1), dp=1, mp=1)
    compute = list(t.stage_compute_ns)
    fast, slow = int(np.argmin(compute)), int(np.argmax(compute))
    assert fast != slow
    tot = {st.stage: st for st in s.stage_totals}
    # the fast stage waits for its slow neighbour: a large share of its span, far more than the slow one
    assert tot[fast].wait_ns > 0.2 * tot[fast].span_ns
    assert tot[fast].wait_ns > 10 * tot[slow].wait_ns
    assert tot[fast].worst_wait_ns >= tot[fast].wait_ns
    # the slow stage's idle is fill/drain only (it never waits longer than the schedule makes it)
    assert tot[slow].wait_ns < 0.05 * tot[slow].span_ns
    text = [sentence_text(x) for x in schedule_view(s, None).sentences]
    assert any(f"most waiting at stage {fast}" in x for x in text), text


def test_many_pipelines_are_summarised(root):
    dp = PIPELINES_DRAWN + 1
    # rank 11 = dp 5, stage 1 (rank = dp · pp + stage) computes 1.6 × longer (GPU-bound sizes)
    s, t, _ = _run(
        root,
        "many",
        pp=2,
        micro_batches=2,
        layers=2,
        dp=dp,
        mp=1,
        slow_rank=(2 * 5 + 1,),
        slow_factor=1.6,
        hidden=4096,
        heads=32,
        seq_len=2048,
    )
    assert s.pipelines_total == dp
    assert len(s.pipelines) == 2
    assert s.pipelines[0].index == 0
    # the pipeline holding the slowed rank makes its stage 0 wait the most: it is drawn and named worst
    worst = max(s.pipelines, key=lambda p: p.wait_ns)
    assert 11 in worst.ranks
    assert {st.stage: st.worst_rank for st in s.stage_totals}[0] == 10
    assert all(len(p.stage_steps) == 2 * len(t.steps) for p in s.pipelines)


def _paddle_model_rows(path: Path):
    """{stage: (calls, CPU total ms)} of the Model Summary Paddle printed."""
    rows = {}
    for line in path.read_text().splitlines():
        m = re.match(r"\s+(Forward|Backward)\s+(\d+)\s+([0-9.]+) /", line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), float(m.group(3)))
    return rows


@pytest.mark.parametrize("folder", ["cpu-gpt-single", "cpu-gpt-2rank-gloo", "gpu-synthetic-2rank"])
def test_real_traces(shared_traces, folder):
    files = sorted((shared_traces / folder).glob("*.paddle_trace.json"))
    summaries = [summarize_file(str(f)) for f in files]
    for f, sm in zip(files, summaries):
        printed = sorted((shared_traces / folder).glob("paddle_summary*CPUTotal.ms.txt"))
        printed = [p for p in printed if len(files) == 1 or f.name.split("_")[0] in p.name] or printed
        paddle = _paddle_model_rows(printed[0])
        ph = sm.parallel.phases
        for code, name in ((1, "Forward"), (2, "Backward")):
            sel = [i for i in range(len(ph.phase)) if ph.phase[i] == code]
            # one Forward / Backward event per step in these runs: Paddle's calls and CPU total
            assert len(sel) == paddle[name][0]
            total = sum(ph.host_end_ns[i] - ph.host_start_ns[i] for i in sel) / 1e6
            assert "%.2f" % total == "%.2f" % paddle[name][1]
    prep = prepare(summaries)
    s = build_schedule(prep.ranks, prep.topo, prep.flat)
    assert s.kind == spb.SCHEDULE_KIND_NOT_PIPELINED
    assert s.stages == 1 and not s.pipelines
    text = " ".join(sentence_text(x) for x in schedule_view(s, None).sentences)
    assert "not pipelined" in text


def test_order_alone_and_an_unknown_order(root):
    from tb_paddle_profile.analysis.crossrank.match import Flat

    s, t, prep = _run(root, "order", pp=4, micro_batches=5, layers=4, dp=1, mp=1)
    assert s.kind == spb.SCHEDULE_KIND_1F1B
    # without the send/recv pairing the order alone identifies 1F1B's micro-batches (one chunk)
    none = Flat(
        *(np.zeros(0, np.int64) for _ in range(2)), np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    )
    alone = build_schedule(prep.ranks, prep.topo, none)
    assert alone.identity.startswith("the order") and alone.kind == spb.SCHEDULE_KIND_1F1B
    for p in alone.pipelines:
        for st in p.stage_steps:
            assert [_key(x) for x in st.slots] == [
                (x["phase"], x["micro_batch"], x["chunk"]) for x in t.schedule(st.rank, st.step)
            ]
    # stage 0's second and third forwards of the first step swapped in its host order: stage 0 numbers its
    # forwards in order, so the next stages receive micro-batch 2 before 1 and no schedule fits
    ph = prep.ranks[0].digest.parallel.phases
    first = [i for i in range(len(ph.phase)) if ph.step[i] == t.steps[0]]
    a, b = first[1], first[2]
    ph.host_start_ns[a], ph.host_start_ns[b] = ph.host_start_ns[b], ph.host_start_ns[a]
    odd = build_schedule(prep.ranks, prep.topo, prep.flat)
    assert odd.kind == spb.SCHEDULE_KIND_UNKNOWN and odd.name == "unknown"
    n = len(t.steps) * 4
    assert odd.why == (
        f"{n - 3} of {n} stage-steps follow 1F1B's order; first difference: pipeline 0 stage 1 "
        f"(rank 1) step {t.steps[0]}, slot 2 is F2 where it would be F1."
    ), odd.why
    assert not odd.pipelines[0].matches_schedule
    # that step cannot be replayed in its order (stage 1 would wait for a forward stage 0 runs later)
    assert any("could not be replayed" in x for x in odd.notes)
    bad = [st for st in odd.pipelines[0].stage_steps if st.step == t.steps[0]]
    assert all(b.kind == spb.BUBBLE_KIND_UNSPECIFIED for st in bad for b in st.bubbles)
