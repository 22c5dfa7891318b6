"""A rank against the median of its role peers (issue 26.3; analysis/peers.py, the `diff` route with
baseline_worker=~peers): a generated DP4 x PP2 x MP2 run with one GPU straggler planted (tbp_synth slow_rank,
its kernels 1.5x longer). The peers (same stage and MP index, from the generator's manifest) and their median
are computed here from the peers' own trace JSON (kernels: the sum of each name's Kernel event durations over
the ProfileSteps) and from each peer's own Summary (operators: the top-level operators' CPU total per step).
The straggler's banner names its cause in words, its GPU compute excess about its kernels' deltas."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from statistics import median

import pytest

from tb_paddle_profile.analysis.summarize import summarize_file
from tb_paddle_profile.present.display.summary import find_table
from tb_paddle_profile.v1 import diff_pb2
from tbp_synth import SynthConfig, generate

from support.plugin_testlib import PREFIX, make_plugin, ready, settled

SLOW = 5
RUN = "job"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("peers_run") / RUN
    generate(
        SynthConfig(
            dp=4, mp=2, pp=2, steps=3, layers=2, micro_batches=2, names="rank", slow_rank=SLOW, slow_factor=1.5
        ),
        str(folder),
    )
    return folder


def _kernel_name(name: str) -> str:
    """A kernel event's name without its "[12.3 us]" duration (the Summary's kernel name)."""
    return re.sub(r"\[[^\]]*\]$", "", name)


def _kernels_per_step(trace: Path) -> dict:
    events = json.loads(trace.read_text())["traceEvents"]
    steps = sum(1 for e in events if e.get("cat") == "ProfileStep")
    out: dict = {}
    for e in events:
        if e.get("cat") == "Kernel":
            out[_kernel_name(e["name"])] = out.get(_kernel_name(e["name"]), 0.0) + e["dur"] * 1e3 / steps
    return out


def _operators_per_step(trace: Path) -> dict:
    s = summarize_file(str(trace))
    steps = len(s.parallel.steps)
    return {n.stats.name: n.stats.cpu.total_ns / steps for n in s.operators.operators}


def _column(table, key: str) -> int:
    return [c.key for c in table.columns].index(key)


def test_the_straggler_against_its_role_peers_median(run, tmp_path, monkeypatch):
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    manifest = json.loads((run / "synth_manifest.json").read_text())
    ranks = {r["rank"]: r for r in manifest["ranks"]}
    role = lambda r: (r["coords"]["pp"], r["coords"]["mp"])  # noqa: E731
    peers = sorted(n for n, r in ranks.items() if n != SLOW and role(r) == role(ranks[SLOW]))
    assert len(peers) == 3
    logdir = tmp_path / "logdir"
    shutil.copytree(run, logdir / RUN, ignore=shutil.ignore_patterns("synth_*"))
    plugin, client = make_plugin(str(logdir))
    try:
        ready(plugin)
        q = (
            f"baseline_run={RUN}&baseline_worker=~peers&baseline_span=0&candidate_run={RUN}"
            f"&candidate_worker={ranks[SLOW]['worker']}&candidate_span=0"
        )
        got = settled(client, f"{PREFIX}/diff?{q}")
        assert got.status_code == 200, got.get_data(as_text=True)
        msg = diff_pb2.RunDiff.FromString(got.get_data())
        assert msg.mode == "peers" and msg.baseline.ranks == len(peers)
        assert msg.candidate.worker == ranks[SLOW]["worker"]
        assert "median of 3 role peers" in msg.baseline.label and "stage 0" in msg.baseline.label
        assert [v.key for v in msg.display.views] == ["operators", "kernels"]

        traces = {n: logdir / RUN / ranks[n]["trace"] for n in [SLOW] + peers}
        for key, per_rank, column in (
            ("kernels", _kernels_per_step, "gpu_total_ns"),
            ("operators", _operators_per_step, "cpu_total_ns"),
        ):
            table = find_table(msg.display, key)
            mine = per_rank(traces[SLOW])
            theirs = [per_rank(traces[n]) for n in peers]
            names = set(mine) | {n for t in theirs for n in t}
            want = {n: median(t.get(n, 0.0) for t in theirs) for n in names}
            name_i, b_i, c_i = (_column(table, k) for k in ("name", f"{column}_baseline", f"{column}_candidate"))
            rows = {r.cells[name_i].text: r for r in table.rows}
            assert set(rows) == names, key
            for n in names:
                base, cand = rows[n].cells[b_i], rows[n].cells[c_i]
                assert (base.number if not base.missing else 0.0) == pytest.approx(want[n], rel=1e-6, abs=2), (key, n)
                assert (cand.number if not cand.missing else 0.0) == pytest.approx(mine.get(n, 0.0), rel=1e-6, abs=2), (
                    key,
                    n,
                )
        # the planted straggler's kernels are slower than its peers': the compute kernels top the table
        kernels = find_table(msg.display, "kernels")
        d_i = _column(kernels, "gpu_total_ns_delta")
        compute = [r for r in kernels.rows if not r.cells[0].text.startswith("nccl")]
        assert compute and all(r.cells[d_i].number > 0 for r in compute[:3])

        # the banner (the analysis is stored now): the GPU straggler's cause as a sentence with its excess
        banner = json.loads(
            client.get(f"{PREFIX}/rank_banner?run={RUN}&worker={ranks[SLOW]['worker']}&span=0&format=json").get_data()
        )
        words = "".join(sp.get("text", "") for sp in banner["sentences"][0]["spans"])
        excess = next(sp["value"]["number"] for sp in banner["sentences"][0]["spans"] if sp.get("isValue"))
        # ... the rank's compute excess over its peers' median, about the sum of its compute kernels' deltas
        # (a sum of medians is not the median of the sums: within 2 %)
        assert excess == pytest.approx(sum(r.cells[d_i].number for r in compute), rel=0.02)
        assert "its GPU compute takes" in words and "more per step than its role peers'" in words, words

        # a rank of no known role, a missing worker: a 4xx
        bad = client.get(f"{PREFIX}/diff?{q.replace('&candidate_worker=' + ranks[SLOW]['worker'], '')}")
        assert bad.status_code == 400
    finally:
        plugin.close()
