"""``tensorboard --logdir_spec name:folder,...``: the tab lists each folder's runs under its group name,
the spec parsed by TensorBoard's rules (checked against TensorBoard's own parser), each folder the
boundary of its files' path policy, and a real ``tensorboard`` process serving the runs of a spec."""

from __future__ import annotations

import json
import os
import time
import urllib.request
from urllib.parse import urlencode

import pytest

from support.paths import REPO
from support.plugin_testlib import place, tensorboard_process, tree_digest
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.pipeline.discovery import Discovery, parse_logdir_spec
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

EXAMPLES = REPO / "examples" / "profiler_log"
DEADLINE_S = 120


def test_the_spec_is_read_as_tensorboard_reads_it(tmp_path):
    data_ingester = pytest.importorskip("tensorboard.backend.event_processing.data_ingester")
    specs = [
        f"a:{tmp_path}/x,b:{tmp_path}/y",
        f"{tmp_path}/only",
        f"/abs:with/colon,train:{tmp_path}/t",
        "s3://bucket/logs,gs:gs://other/run",
        f"rel:some/relative,~/{tmp_path.name}",
        "run:path:with/a/colon",
    ]
    for spec in specs:
        theirs = data_ingester._parse_event_files_spec(spec)  # {folder: name or None}
        ours = parse_logdir_spec(spec)
        assert [folder for _, folder in ours] == list(theirs), spec
        for name, folder in ours:
            if theirs[folder] is not None:
                assert name == theirs[folder], spec
            elif len(ours) == 1:
                assert name == "", spec  # a single unnamed folder: its runs named as with --logdir
            else:
                assert name == os.path.basename(folder.rstrip("/")), spec
    assert [n for n, _ in parse_logdir_spec(f"a:{tmp_path}/1,a:{tmp_path}/2,{tmp_path}/a")] == ["a", "a (2)", "a (3)"]
    assert parse_logdir_spec(" , ") == []
    with pytest.raises(ValueError, match="names no folder"):
        Discovery.from_spec(",")


def _two_folders(tmp_path, shared_traces):
    src = sorted((shared_traces / "cpu-gpt-2rank-gloo").glob("*.paddle_trace.json"))
    first, second = tmp_path / "team-a", tmp_path / "team-b"
    for f in src:
        place(f.read_bytes(), first / f.name)  # traces in the folder itself: run "<group>"
        place(f.read_bytes(), second / "night" / f.name)  # in a sub-folder: run "<group>/night"
    return src, first, second


def test_each_folder_is_a_group_of_runs_with_its_own_boundary(tmp_path, shared_traces):
    src, first, second = _two_folders(tmp_path, shared_traces)
    # A link in team-a to a trace of team-b: inside the spec, but outside its own folder.
    (first / "sub").mkdir()
    os.symlink(second / "night" / src[0].name, first / "sub" / src[0].name)
    d = Discovery.from_spec(f"a:{first},b:{second}", interval=None)
    snap = d.scan()
    assert sorted(snap.runs) == ["a", "a/sub", "b/night"]
    assert snap.logdir == f"a:{first},b:{second}"
    assert {w for w in snap.runs["a"]} == {w for w in snap.runs["b/night"]} and len(snap.runs["a"]) == len(src)
    for run, workers in snap.runs.items():
        for spans in workers.values():
            for f in spans.values():
                assert f.root == str(first if run.startswith("a") else second)
                if run == "a/sub":
                    assert f.refused and "outside" in f.refused
                else:
                    assert not f.refused and f.span != "?"
    # One folder, unnamed: the same runs as --logdir on it.
    alone = Discovery.from_spec(str(second), interval=None).scan()
    assert sorted(alone.runs) == sorted(Discovery(str(second), interval=None).scan().runs) == ["night"]


def test_a_folder_on_another_filesystem_is_left_out_and_named(tmp_path, shared_traces):
    src, first, _ = _two_folders(tmp_path, shared_traces)
    d = Discovery.from_spec(f"a:{first},mem:memory://elsewhere", interval=None)
    assert sorted(d.scan().runs) == ["a"]
    assert len(d.problems) == 1 and "memory://elsewhere" in d.problems[0] and "left out" in d.problems[0]


def fetch(url: str):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.status, r.read()


@pytest.mark.skipif(not any(EXAMPLES.rglob("*.paddle_trace.json")), reason="examples/profiler_log has no traces")
def test_tensorboard_with_a_logdir_spec_serves_every_group(tmp_path):
    pytest.importorskip("tensorboard")
    spec = f"two:{EXAMPLES / 'gpt-2rank'},one:{EXAMPLES / 'gpt-single'}"
    before = tree_digest(EXAMPLES)
    env = {"TB_PADDLE_PROFILE_CACHE": str(tmp_path / "cache"), "TB_PADDLE_PROFILE_WORKERS": "1"}
    with tensorboard_process(spec, env, tmp_path, DEADLINE_S, flag="--logdir_spec") as (base, proc, _):
        deadline = time.monotonic() + DEADLINE_S
        while True:
            _, body = fetch(f"{base}/data/plugins_listing")
            if json.loads(body)["paddle_profile"]["enabled"]:
                break
            assert time.monotonic() < deadline, "the tab stayed disabled with --logdir_spec"
            time.sleep(0.5)
        api = f"{base}/data/plugin/paddle_profile"
        while True:
            runs = plugin_pb2.RunList.FromString(fetch(f"{api}/runs")[1])
            states = [s.state for r in runs.runs for w in r.workers for s in w.spans]
            if states and all(s in (plugin_pb2.READY, plugin_pb2.FAILED) for s in states):
                break
            assert time.monotonic() < deadline, f"not loaded in time: {states}"
            time.sleep(0.3)
        assert runs.logdir == spec
        assert sorted(r.run for r in runs.runs) == ["one", "two"]
        folders = {"two": EXAMPLES / "gpt-2rank", "one": EXAMPLES / "gpt-single"}
        for run in runs.runs:
            assert len(run.workers) == len(list(folders[run.run].glob("*.paddle_trace.json")))
            for w in run.workers:
                for s in w.spans:
                    assert s.state == plugin_pb2.READY, s
                    path = folders[run.run] / s.file_name
                    q = urlencode({"run": run.run, "worker": w.worker, "span": s.span})
                    status, body = fetch(f"{api}/summary?{q}")
                    assert status == 200
                    assert summary_pb2.Summary.FromString(body) == summarize_bytes(path.read_bytes(), path.name)
                    assert fetch(f"{api}/trace?{q}")[1] == path.read_bytes()
        status, body = fetch(f"{api}/status?files=0")
        assert status == 200 and json.loads(body)["logdir"] == spec and not json.loads(body)["scan_error"]
        assert proc.poll() is None
    assert tree_digest(EXAMPLES) == before, "the logdir changed"
