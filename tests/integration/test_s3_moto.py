"""An S3 logdir: a real S3-compatible server (moto in server mode) on 127.0.0.1; the plugin reads
``s3://bucket/prefix`` read-only, with the credentials and endpoint of the usual AWS environment, and
serves the same summaries as from disk."""

from __future__ import annotations

import gzip
import subprocess
import sys
from urllib.parse import urlencode

import pytest

from support.plugin_testlib import GLOO, GPU, PREFIX, free_port, make_plugin, ready, stop, trace_files, wait_http
from tb_paddle_profile.store.cache import SIDECAR_SUFFIX
from tb_paddle_profile.analysis.summarize import summarize_bytes
from tb_paddle_profile.v1 import plugin_pb2, summary_pb2

boto3 = pytest.importorskip("boto3")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")
BUCKET = "shared-profiles"
LOGDIR = f"s3://{BUCKET}/team-a/profiler_log"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/", proc, 60)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


@pytest.fixture
def aws(endpoint, monkeypatch, tmp_path):
    """The usual AWS environment, pointing at the local server; nothing read from ~/.aws."""
    for name, value in {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "TB_PADDLE_PROFILE_WORKERS": "2",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("TB_PADDLE_PROFILE_SIDECAR", raising=False)
    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "cache"))
    import fsspec

    fsspec.filesystem("s3").clear_instance_cache()  # a fresh client reads this environment
    s3 = boto3.client("s3")
    try:
        s3.create_bucket(Bucket=BUCKET)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    return s3


@pytest.fixture
def uploaded(aws, shared_traces):
    """team-a's logdir: two ranks, a gzipped rank pair, a non-Paddle file; team-b's traces beside it."""
    local = {}

    def put(key, data):
        aws.put_object(Bucket=BUCKET, Key=key, Body=data)
        local[key] = data

    for src in trace_files(shared_traces, GLOO):
        put(f"team-a/profiler_log/gloo/{src.name}", src.read_bytes())
    for src in trace_files(shared_traces, GPU):
        put(f"team-a/profiler_log/gpu-gz/{src.name}.gz", gzip.compress(src.read_bytes()))
    put("team-a/profiler_log/junk/rank0_time_2026_01_01_00_00_00_000000.paddle_trace.json", b'{"x": 1}')
    src = trace_files(shared_traces, GPU)[0]
    put(f"team-b/profiler_log/other/{src.name}", src.read_bytes())
    yield local
    for obj in aws.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        aws.delete_object(Bucket=BUCKET, Key=obj["Key"])


def bucket_state(s3):
    return {o["Key"]: o["ETag"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


def test_s3_logdir_serves_the_same_summaries_as_disk(aws, uploaded):
    before = bucket_state(aws)
    plugin, client = make_plugin(LOGDIR)
    try:
        ready(plugin)
        runs = plugin_pb2.RunList.FromString(client.get(f"{PREFIX}/runs").get_data())
        assert runs.logdir == LOGDIR
        assert [r.run for r in runs.runs] == ["gloo", "gpu-gz", "junk"]  # team-b's traces are not ours
        served = 0
        for run in runs.runs:
            for w in run.workers:
                for s in w.spans:
                    key = f"team-a/profiler_log/{run.run}/{s.file_name}"
                    q = urlencode({"run": run.run, "worker": w.worker, "span": s.span})
                    r = client.get(f"{PREFIX}/summary?{q}")
                    if run.run == "junk":
                        assert s.state == plugin_pb2.FAILED and r.status_code == 422
                        assert "not a Paddle trace" in r.get_data(as_text=True)
                        continue
                    assert s.state == plugin_pb2.READY and r.status_code == 200
                    local = summarize_bytes(uploaded[key], s.file_name)
                    assert summary_pb2.Summary.FromString(r.get_data()) == local
                    assert client.get(f"{PREFIX}/trace?{q}").get_data() == uploaded[key]
                    served += 1
        assert served == 4
        dist = plugin_pb2.RunDistributed.FromString(client.get(f"{PREFIX}/distributed?run=gpu-gz&span=0").get_data())
        assert [(r.worker, r.state) for r in dist.ranks] == [("rank0", plugin_pb2.READY), ("rank1", plugin_pb2.READY)]
        # Versions are the store's ETags.
        etags = {k.split("/")[-1]: v.strip('"') for k, v in before.items()}
        assert all(f.version == etags[f.file_name] for f in plugin.discovery.snapshot().files)

        # A span uploaded during training appears at the next scan.
        src = uploaded[next(k for k in uploaded if k.startswith("team-a/profiler_log/gloo/rank1"))]
        new_key = "team-a/profiler_log/gloo/rank1_time_2026_11_29_07_30_00_000000.paddle_trace.json"
        aws.put_object(Bucket=BUCKET, Key=new_key, Body=src.replace(b'"span_index": "0"', b'"span_index": "1"', 1))
        before[new_key] = bucket_state(aws)[new_key]
        plugin.discovery.scan()
        ready(plugin)
        r = client.get(f"{PREFIX}/summary?run=gloo&worker=rank1&span=1")
        assert r.status_code == 200 and summary_pb2.Summary.FromString(r.get_data()).meta.span == "1"
    finally:
        plugin.close()
    assert bucket_state(aws) == before  # read-only: nothing was written into the bucket


def test_sidecars_on_s3_are_shared_between_users(aws, uploaded, monkeypatch, tmp_path):
    monkeypatch.setenv("TB_PADDLE_PROFILE_SIDECAR", "1")
    first, _ = make_plugin(LOGDIR)
    try:
        ready(first)
        assert first.loader.stats["parsed"] == 5
    finally:
        first.close()
    sidecars = [k for k in bucket_state(aws) if k.endswith(SIDECAR_SUFFIX)]
    assert len(sidecars) == 5 and all(k.startswith("team-a/") for k in sidecars)

    monkeypatch.setenv("TB_PADDLE_PROFILE_CACHE", str(tmp_path / "someone-elses-cache"))
    second, client = make_plugin(LOGDIR)
    try:
        ready(second)
        assert second.loader.stats["parsed"] == 0 and second.loader.stats["sidecar_hits"] == 5
        r = client.get(f"{PREFIX}/summary?run=gpu-gz&worker=rank1&span=0")
        key = next(k for k in uploaded if k.startswith("team-a/profiler_log/gpu-gz/rank1"))
        assert summary_pb2.Summary.FromString(r.get_data()) == summarize_bytes(uploaded[key], key.split("/")[-1])
    finally:
        second.close()
