"""Paddle's default worker names (``host_<host>pid_<pid>``) tell no rank: every route gives such a worker
the rank that the generator planted for it (its synth_manifest.json, Fleet's order: hosts in natural
order, then the GPU), before the run's cross-rank analysis exists and after, and lists the workers in
that order (gpunode2 before gpunode10)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest

from support.plugin_testlib import PREFIX, make_plugin, ready
from tb_paddle_profile.v1 import plugin_pb2, timeline_pb2

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("rank_identity")
    logdir, cache = root / "logdir", root / "cache"
    # 24 ranks on 12 hosts, two GPUs each: the pids are random, so only the GPU orders a host's ranks
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "tbp_synth",
            "--dp",
            "6",
            "--mp",
            "2",
            "--pp",
            "2",
            "--layers",
            "2",
            "--micro-batches",
            "1",
            "--steps",
            "2",
            "--names",
            "default",
            "--gpus-per-node",
            "2",
            "--slow-host-rank",
            "13",
            "--quiet",
            "--out",
            str(logdir / "job"),
        ],
        capture_output=True,
        text=True,
        cwd=str(REPO),
    )
    assert gen.returncode == 0, gen.stderr[-2000:]
    manifest = json.loads((logdir / "job" / "synth_manifest.json").read_text())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TB_PADDLE_PROFILE_CACHE", str(cache))
        mp.setenv("TB_PADDLE_PROFILE_WORKERS", "2")
        mp.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
        plugin, client = make_plugin(str(logdir))
        ready(plugin)
        yield {"client": client, "manifest": manifest}
        plugin.close()


def get(env, route, **params):
    r = env["client"].get(f"{PREFIX}/{route}?{urlencode(params)}")
    assert r.status_code == 200, r.get_data()[:300]
    return r.get_data()


def planted(env):
    return {r["worker"]: r["rank"] for r in env["manifest"]["ranks"]}


def run_workers(env):
    rl = plugin_pb2.RunList.FromString(get(env, "runs"))
    (run,) = [r for r in rl.runs if r.run == "job"]
    return list(run.workers)


def check_run_list(env):
    truth = planted(env)
    workers = run_workers(env)
    assert all(w.worker.startswith("host_") for w in workers)
    assert {w.worker: w.rank for w in workers} == truth
    assert [w.rank for w in workers] == sorted(truth.values())  # listed in rank order
    for w in workers:
        assert w.label.startswith(f"rank {truth[w.worker]} "), w.label
    hosts = list(dict.fromkeys(w.hostname for w in workers))
    assert hosts.index("gpunode2") < hosts.index("gpunode10")


def test_default_names_get_their_planted_rank_before_the_analysis(env):
    check_run_list(env)
    truth = planted(env)
    rd = plugin_pb2.RunDistributed.FromString(get(env, "distributed", run="job", span="0"))
    assert {r.worker: r.rank for r in rd.ranks} == truth
    # the Distributed table's Rank column (the display model's): every rank's number, no "-"
    (view,) = [v for v in rd.display.views if v.key == "distributed"]
    (table,) = [t for t in view.tables if t.key == "ranks"]
    col = [c.key for c in table.columns].index("rank")
    wcol = [c.key for c in table.columns].index("worker")
    assert {r.cells[wcol].text: int(r.cells[col].number) for r in table.rows if not r.cells[col].missing} == truth
    # the timeline's window names each rank by its number, in rank order
    some = [w for w, r in sorted(truth.items(), key=lambda kv: kv[1])][9:13]
    win = timeline_pb2.TimelineWindow.FromString(
        get(env, "timeline", run="job", span="0", workers=",".join(reversed(some)))
    )
    assert [(r.worker, r.rank) for r in win.ranks] == [(w, truth[w]) for w in some]


def test_default_names_keep_the_same_rank_after_the_analysis(env):
    truth = planted(env)
    rp = plugin_pb2.RunParallel.FromString(get(env, "parallel", run="job", span="0"))
    assert {r.worker: r.rank for r in rp.ranks} == truth
    check_run_list(env)
    rd = plugin_pb2.RunDistributed.FromString(get(env, "distributed", run="job", span="0"))
    assert {r.worker: r.rank for r in rd.ranks} == truth
